//! `Sleep`: a future woken by the driver, under any executor, whose timer
//! is made by its first poll.

use core::fmt;
use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use crate::action::Wake;
use crate::entry::{EntryRef, ABANDONED, FIRED, PENDING};
use crate::lane::Lane;
use crate::shared::Message;
use crate::sync::Arc;

/// A future that completes at its deadline; made by
/// [`TimerService::sleep`](crate::TimerService::sleep) or
/// [`TimerService::sleep_until`](crate::TimerService::sleep_until).
///
/// Its timer is made when it is first polled, as tokio's is: a `Sleep`
/// that is never polled (a [`Timeout`](crate::Timeout) whose future was
/// ready at once) costs no timer. While it waits it counts in
/// [`TimerService::pending`](crate::TimerService::pending), and dropping it
/// cancels its timer. It wakes the waker it was last polled with, so it
/// works under any executor. A deadline that has passed when the sleep is
/// made completes it at its first poll, with no timer, and so does one a
/// [manual clock](crate::Builder::manual_clock) has passed by its first
/// poll (as tokio's paused clock does); one passed when it is
/// [`reset`](Self::reset) completes it at its next poll, and a task already
/// waiting on it is woken.
///
/// # Panics
/// Polling a `Sleep` whose timer the driver had not fired when its service
/// shut down panics (as tokio's does): it can neither complete honestly nor
/// ever be woken. (One whose deadline had passed when it was made, reset
/// or, on a manual clock, first polled completes instead: it has no
/// timer.) Check [`Sleep::is_shut_down`] first to avoid that.
///
/// # Examples
/// ```
/// use std::time::{Duration, Instant};
/// use wheel_sync::TimerService;
///
/// let timers = TimerService::new();
/// let start = Instant::now();
/// # let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
/// rt.block_on(timers.sleep(Duration::from_millis(5)));
/// assert!(start.elapsed() >= Duration::from_millis(5));
/// ```
#[must_use = "futures do nothing unless polled"]
pub struct Sleep {
    lane: Arc<Lane>,
    deadline: Instant,
    /// The timer, once a poll has made it.
    entry: Option<EntryRef<Wake>>,
    /// Its deadline had passed when it was made or last reset: it completes
    /// with no timer.
    passed: bool,
}

impl Sleep {
    /// A sleep `delay` from now.
    pub(crate) fn after(lane: Arc<Lane>, delay: Duration) -> Self {
        let deadline = lane.shared.clock.instant_after(delay);
        Self {
            passed: delay.is_zero(),
            lane,
            deadline,
            entry: None,
        }
    }

    /// A sleep until `deadline`.
    pub(crate) fn until(lane: Arc<Lane>, deadline: Instant) -> Self {
        Self {
            passed: deadline <= lane.shared.clock.now(),
            lane,
            deadline,
            entry: None,
        }
    }

    /// Now, by the service's clock.
    pub(crate) fn now(&self) -> Instant {
        self.lane.shared.clock.now()
    }

    /// A deadline that never comes, for a [`reset`](Self::reset).
    pub(crate) fn never(&self) -> Instant {
        self.lane.shared.clock.never_instant()
    }

    /// When this sleep completes.
    ///
    /// # Examples
    /// ```
    /// use std::time::{Duration, Instant};
    ///
    /// let timers = wheel_sync::TimerService::new();
    /// let at = Instant::now() + Duration::from_secs(1);
    /// assert_eq!(timers.sleep_until(at).deadline(), at);
    /// ```
    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    /// Whether this sleep has completed: its deadline had passed when it
    /// was made or reset (or, on a manual clock, at its first poll), or the
    /// driver fired its timer.
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    ///
    /// let timers = wheel_sync::TimerService::new();
    /// let sleep = timers.sleep(Duration::from_secs(60));
    /// assert!(!sleep.is_elapsed());
    /// assert!(timers.sleep(Duration::ZERO).is_elapsed());
    /// ```
    pub fn is_elapsed(&self) -> bool {
        self.passed || self.entry.as_ref().is_some_and(|e| e.state() == FIRED)
    }

    /// Whether polling this sleep would panic: the service shut down before
    /// its timer fired, or before its first poll made one.
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    ///
    /// let timers = wheel_sync::TimerService::new();
    /// let sleep = timers.sleep(Duration::from_secs(60));
    /// timers.shutdown().unwrap();
    /// assert!(sleep.is_shut_down());
    /// ```
    pub fn is_shut_down(&self) -> bool {
        match &self.entry {
            _ if self.passed => false,
            Some(entry) => entry.state() == ABANDONED,
            // As its first poll will find: on a manual clock past the
            // deadline, it completes (see `register`).
            None => self.lane.shared.is_stopping() && !self.passed_on_manual_clock(),
        }
    }

    /// Whether a manual clock has reached the deadline: a sleep first
    /// polled then completes at once, as tokio's does on its paused clock.
    fn passed_on_manual_clock(&self) -> bool {
        let clock = &self.lane.shared.clock;
        clock.manual_ns().is_some() && self.deadline <= clock.now()
    }

    /// Moves the deadline, whether or not the sleep has completed, reusing
    /// its timer (no allocation). Like tokio's `Sleep::reset`: a deadline
    /// that has already passed completes the sleep at its next poll, and a
    /// task waiting on it (the sleep may be shared, behind a lock) is woken,
    /// by the driver, which fires its timer at once: never inside this
    /// call.
    ///
    /// # Examples
    /// ```
    /// use std::time::{Duration, Instant};
    ///
    /// let timers = wheel_sync::TimerService::new();
    /// let mut sleep = timers.sleep(Duration::from_secs(3600));
    /// let soon = Instant::now() + Duration::from_millis(2);
    /// sleep.reset(soon);
    /// # let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    /// rt.block_on(&mut sleep);
    /// assert!(Instant::now() >= soon);
    /// ```
    pub fn reset(&mut self, deadline: Instant) {
        self.deadline = deadline;
        let lane = &*self.lane;
        // Before the shutdown's check: a deadline passed completes the
        // sleep whether or not its timer was abandoned.
        self.passed = deadline <= lane.shared.clock.now();
        if self.entry.as_ref().is_some_and(|e| e.state() == ABANDONED) {
            return; // abandoned by a shutdown, for good
        }
        let Some(entry) = &self.entry else {
            return; // its first poll makes the timer
        };
        // A passed deadline's timer is due now: at the tick begun, not the
        // deadline's own (rounded up, it may be ahead still; far back, its
        // lateness would be the caller's choice, not the driver's).
        let tick = if self.passed {
            lane.shared.clock.now_tick()
        } else {
            lane.shared.clock.tick_for(deadline)
        };
        if entry.is_pending_at(tick) {
            return; // nothing for the driver to do
        }
        if self.passed {
            // Complete for its next poll; and a task already waiting on it
            // (the sleep may be held by another than its waiter) is woken,
            // as tokio's is: moved to the tick begun, a pending timer is
            // fired by the driver at once, on the driver's thread, never
            // here in the caller's code, which may hold a lock the waker
            // takes. One fired meanwhile is left so.
            if let Ok(must_push) = entry.rearm_from(PENDING, tick) {
                hand_over(lane, entry, PENDING, must_push, tick);
            }
        } else {
            rearm(lane, entry, tick);
        }
    }

    /// Makes the timer, registering `waker`, and hands it to the driver;
    /// on a manual clock already past the deadline, completes instead, as
    /// tokio's sleep does on its paused clock. (A real clock is not read
    /// again here: a request's one poll would pay for it.)
    #[cold]
    fn register(&mut self, waker: &Waker) -> Poll<Result<(), ShutDown>> {
        if self.passed_on_manual_clock() {
            self.passed = true;
            return Poll::Ready(Ok(()));
        }
        let lane = &*self.lane;
        let tick = lane.shared.clock.tick_for(self.deadline);
        let (entry, message) = EntryRef::new(tick, Wake::new(waker));
        let entry = self.entry.insert(entry);
        // Never refused by the limit; counted in, then refused only after
        // shutdown: abandoned, for good.
        let _ = lane.shared.admit(lane.spot, false);
        if !lane.shared.park(lane.spot, message, tick) {
            let _ = lane.shared.refuse(lane.spot);
            entry.abandon();
            return Poll::Ready(Err(ShutDown));
        }
        Poll::Pending
    }

    /// [`poll`](Future::poll), reporting a shutdown before the deadline
    /// rather than panicking: for a [`DelayQueue`](crate::DelayQueue),
    /// which still has items to hand out then.
    pub(crate) fn poll_unless_shut_down(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Result<(), ShutDown>> {
        if self.passed {
            return Poll::Ready(Ok(()));
        }
        let Some(entry) = &self.entry else {
            return self.register(cx.waker());
        };
        let poll_state = |state| match state {
            FIRED => Poll::Ready(Ok(())),
            ABANDONED => Poll::Ready(Err(ShutDown)),
            _ => Poll::Pending,
        };
        let first = poll_state(entry.state());
        if first.is_ready() {
            return first;
        }
        self.register_again(entry, cx.waker());
        // The driver sets the state before it takes the waker: look again,
        // so a fire between the first look and the registration is not lost.
        poll_state(entry.state())
    }

    /// Stores `waker` for a pending timer polled again. Out of line: a
    /// first poll (`register`) or a completed one never comes here, and
    /// the request paths ran measurably slower with it inlined.
    #[inline(never)]
    fn register_again(&self, entry: &EntryRef<Wake>, waker: &Waker) {
        entry.action().register(waker);
    }
}

/// A sleep's service shut down before its deadline: it can neither
/// complete honestly nor ever be woken.
pub(crate) struct ShutDown;

/// Moves `entry` to `tick` for its owner (a reset), from whatever state it
/// is in but `ABANDONED` (rule 1 of `shared`).
///
/// A timer that is not pending is counted in before it is armed again:
/// armed first, the driver could fire it and count it out before it was
/// counted in, and `pending` would wrap below zero meanwhile.
pub(crate) fn rearm(lane: &Lane, entry: &EntryRef<Wake>, tick: u64) {
    let (shared, spot) = (&*lane.shared, lane.spot);
    let (from, must_push) = loop {
        let from = entry.state();
        if from == ABANDONED {
            return; // shut down: poll reports it
        }
        if from != PENDING {
            // Only this owner moves the timer out of `FIRED` or `CANCELLED`,
            // so the re-arm below cannot fail. (A future is never refused by
            // the limit.)
            let _ = shared.admit(spot, false);
        }
        match entry.rearm_from(from, tick) {
            Ok(must_push) => break (from, must_push),
            // Fired or abandoned by the driver meanwhile: look again.
            Err(_) => debug_assert_eq!(from, PENDING),
        }
    };
    hand_over(lane, entry, from, must_push, tick);
}

/// Tells the driver that `entry`, moved by its owner from state `from`, is
/// now pending at `tick`: `must_push`, with a message; else its message,
/// still on its way, carries the new tick, but a driver asleep past `tick`
/// must be told to look sooner.
///
/// A message the closed queue refuses (rule 7 of `shared`) is a change the
/// driver never sees, and no message is on its way: `QUEUED` is cleared, so
/// that a later re-arm sends one again (and is refused in turn, below),
/// rather than count on a message that will never come. A timer that was
/// pending is left to the shutdown, which abandons it, wakes its task and
/// counts it through the copy the driver keeps while a move is on its way
/// (rule 4). A re-arm from `FIRED`
/// or `CANCELLED` is refused: the owner abandons the timer, unless the
/// shutdown took it first through an older copy, and undoes its count in.
/// No task waits on such a timer (a fire takes the waker; a cancel is a
/// drop), and `poll` reports the shutdown.
pub(crate) fn hand_over(
    lane: &Lane,
    entry: &EntryRef<Wake>,
    from: u64,
    must_push: bool,
    tick: u64,
) {
    let (shared, spot) = (&*lane.shared, lane.spot);
    if !must_push {
        shared.hurry(spot, entry, tick);
        return;
    }
    if shared
        .submit(spot, Message::Entry(entry.erased()), tick)
        .is_ok()
    {
        return;
    }
    entry.take_queued();
    if from != PENDING && entry.abandon() {
        let _ = shared.refuse(spot);
    }
}

#[cold]
fn shut_down() -> ! {
    panic!("wheel-sync: the timer service shut down before this Sleep's deadline")
}

impl Future for Sleep {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        match self.get_mut().poll_unless_shut_down(cx) {
            Poll::Ready(Err(ShutDown)) => shut_down(),
            Poll::Ready(Ok(())) => Poll::Ready(()),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl Drop for Sleep {
    fn drop(&mut self) {
        let Some(entry) = self.entry.take() else {
            return;
        };
        let lane = &*self.lane;
        lane.shared.cancel(lane.spot, &entry);
        // The waker goes now, here, whoever holds the entry: it holds its
        // task's memory, and its drop is user code, which unwinds into
        // this drop's caller (the timer is counted out already), never
        // into the driver. A copy in the driver's wheel, or a message, may
        // hold the entry a while yet: then it is taken out first. If not,
        // none can be made, and this is the entry's last reference.
        if entry.is_shared() {
            entry.action().release();
        }
        drop(entry);
    }
}

impl fmt::Debug for Sleep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sleep")
            .field("deadline", &self.deadline)
            .field("elapsed", &self.is_elapsed())
            .field("registered", &self.entry.is_some())
            .finish()
    }
}

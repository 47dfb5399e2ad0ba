//! `Sleep` and `Timeout`: futures woken by the driver, under any executor.

use core::fmt;
use core::future::Future;
use core::mem::ManuallyDrop;
use core::pin::Pin;
use core::task::{Context, Poll};
use std::time::Instant;

use crate::action::Wake;
use crate::clock::NEVER;
use crate::entry::{EntryRef, ABANDONED, CANCELLED, FIRED};
use crate::TimerService;

/// A future that completes at its deadline; made by
/// [`TimerService::sleep`] or [`TimerService::sleep_until`].
///
/// It is registered with the driver when created, counts in
/// [`TimerService::pending`] until it fires, and dropping it before then
/// cancels its timer. It wakes the waker it was last polled with, so it
/// works under any executor.
///
/// # Panics
/// Polling a `Sleep` whose deadline had not come when its service was shut
/// down panics (as tokio's does): it can neither complete honestly nor ever
/// be woken. Check [`Sleep::is_shut_down`] first to avoid that.
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
    service: TimerService,
    /// Dropped by `Drop` itself, before the count of what its drop caught.
    entry: ManuallyDrop<EntryRef<Wake>>,
    deadline: Instant,
}

impl Sleep {
    /// A sleep due at `tick`, which is `deadline`'s (or `NEVER` for one
    /// that never comes). `far`: the deadline is at least
    /// `parked::PARK_MIN` away, so the timer is parked rather than queued
    /// (a request timeout dropped in time then never reaches the driver).
    pub(crate) fn new(service: TimerService, deadline: Instant, tick: u64, far: bool) -> Self {
        let state = service.state();
        let (entry, message) = EntryRef::new(tick, Wake::default());
        // A refused admission means shutdown: the entry is abandoned, and
        // poll reports it.
        if state.admit(false).is_err() {
            entry.abandon();
        } else {
            state.hand_over(message, tick, far);
        }
        Self {
            service,
            entry: ManuallyDrop::new(entry),
            deadline,
        }
    }

    /// Now, by the service's clock.
    pub(crate) fn now(&self) -> Instant {
        self.service.state().clock.now()
    }

    /// Wakes the sleeps whose wakers a round handed over (see "Wakes" in the
    /// crate docs): what polling this sleep does first.
    pub(crate) fn wake_handed(&self) {
        self.service.state().relay.wake_handed();
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

    /// Whether the driver has fired this sleep's timer.
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    ///
    /// let timers = wheel_sync::TimerService::new();
    /// let sleep = timers.sleep(Duration::from_secs(60));
    /// assert!(!sleep.is_elapsed());
    /// ```
    pub fn is_elapsed(&self) -> bool {
        self.entry.state() == FIRED
    }

    /// Whether the service shut down before this sleep's deadline (polling
    /// it would panic).
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
        self.entry.state() == ABANDONED
    }

    /// Moves the deadline, whether or not the sleep has completed, reusing
    /// its timer (no allocation). Like tokio's `Sleep::reset`.
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
        let tick = self.service.state().clock.tick_for(deadline);
        self.reset_tick(deadline, tick);
    }

    /// [`reset`](Self::reset) to a deadline that never comes.
    pub(crate) fn reset_never(&mut self) {
        let clock = &self.service.state().clock;
        let deadline = clock.never_instant();
        self.reset_tick(deadline, NEVER);
    }

    /// [`reset`](Self::reset) to `deadline`, whose tick is `tick`.
    ///
    /// A fired sleep is counted in before it is armed again: armed first,
    /// the driver could fire it and count it out before it was counted in,
    /// and `pending` would wrap below zero meanwhile.
    pub(crate) fn reset_tick(&mut self, deadline: Instant, tick: u64) {
        self.deadline = deadline;
        let state = self.service.state();
        let must_push = loop {
            let from = self.entry.state();
            if matches!(from, ABANDONED | CANCELLED) {
                return; // abandoned at shutdown: poll reports it
            }
            // A fired sleep is live again. Not refused: futures never are.
            if from == FIRED && state.admit(false).is_err() {
                // Shut down: nothing was counted in, so nothing is counted
                // out. Only this owner moves it out of `FIRED`.
                let _ = self.entry.rearm_from(FIRED, tick);
                self.entry.abandon();
                return;
            }
            match self.entry.rearm_from(from, tick) {
                Ok(must_push) => break must_push,
                // Abandoned at shutdown (poll reports it), or cancelled.
                Err(ABANDONED | CANCELLED) => {
                    if from == FIRED {
                        state.release(); // counted in above, never armed
                    }
                    return;
                }
                // Fired meanwhile: count it in again, then arm it.
                Err(_) => {
                    if from == FIRED {
                        state.release();
                    }
                }
            }
        };
        if must_push {
            state.submit(self.entry.erased(), tick);
        } else {
            // Its message is still queued or parked and carries the new tick,
            // but a driver asleep past `tick` must be told to look sooner
            // (and to sweep the parking spots, for a parked one).
            state.hurry(tick);
        }
    }
}

impl Future for Sleep {
    type Output = ();

    /// Also wakes the sleeps that fired in one round with this one, if the
    /// driver handed their wakers over (see "Wakes" in the crate docs).
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        self.wake_handed();
        let poll_state = |state| match state {
            FIRED => Poll::Ready(()),
            ABANDONED => {
                panic!("wheel-sync: the timer service shut down before this Sleep's deadline")
            }
            _ => Poll::Pending,
        };
        if let Poll::Ready(()) = poll_state(self.entry.state()) {
            return Poll::Ready(());
        }
        self.entry.action().register(cx.waker());
        // The driver sets the state before it takes the waker: re-check so a
        // fire between the first check and the registration is not lost.
        poll_state(self.entry.state())
    }
}

impl Drop for Sleep {
    fn drop(&mut self) {
        self.wake_handed();
        let state = self.service.state();
        let entry = &self.entry;
        state.cancel(entry, || entry.erased());
        // SAFETY: the field is never used again: this is `Drop`.
        unsafe { ManuallyDrop::drop(&mut self.entry) };
        // If that was the last reference, its waker went with it: a panic
        // of the waker's drop was caught there and is counted here.
        state.count_uncounted();
    }
}

impl fmt::Debug for Sleep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sleep")
            .field("deadline", &self.deadline)
            .field("state", &self.entry.state())
            .finish()
    }
}

/// The error of a [`Timeout`] whose deadline came first.
///
/// # Examples
/// ```
/// let e = wheel_sync::Elapsed::default();
/// assert_eq!(e.to_string(), "deadline has elapsed");
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Elapsed(());

impl fmt::Display for Elapsed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("deadline has elapsed")
    }
}

impl std::error::Error for Elapsed {}

/// A future with a deadline; made by [`TimerService::timeout`]. Resolves to
/// `Ok(output)` if the inner future finishes first, `Err(Elapsed)` if the
/// deadline comes first. Dropping it cancels its timer.
///
/// # Panics
/// As [`Sleep`]: polling it after its service was shut down before the
/// deadline panics, unless the inner future is ready.
///
/// # Examples
/// ```
/// use std::time::Duration;
///
/// let timers = wheel_sync::TimerService::new();
/// # let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
/// let fast = rt.block_on(timers.timeout(Duration::from_secs(5), async { 7 }));
/// assert_eq!(fast, Ok(7));
/// let slow = rt.block_on(timers.timeout(Duration::from_millis(1), std::future::pending::<()>()));
/// assert!(slow.is_err());
/// ```
#[must_use = "futures do nothing unless polled"]
pub struct Timeout<F> {
    future: F,
    sleep: Sleep,
}

impl<F> Timeout<F> {
    pub(crate) fn new(future: F, sleep: Sleep) -> Self {
        Self { future, sleep }
    }

    /// The inner future.
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    ///
    /// let timers = wheel_sync::TimerService::new();
    /// let t = timers.timeout(Duration::from_secs(1), std::future::ready(3));
    /// let _inner: &std::future::Ready<i32> = t.get_ref();
    /// ```
    pub fn get_ref(&self) -> &F {
        &self.future
    }

    /// The inner future, mutably (it is not pinned through this).
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    ///
    /// let timers = wheel_sync::TimerService::new();
    /// let mut t = timers.timeout(Duration::from_secs(1), std::future::ready(3));
    /// let _inner: &mut std::future::Ready<i32> = t.get_mut();
    /// ```
    pub fn get_mut(&mut self) -> &mut F {
        &mut self.future
    }

    /// Drops the deadline and returns the inner future.
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    ///
    /// let timers = wheel_sync::TimerService::new();
    /// let t = timers.timeout(Duration::from_secs(1), std::future::ready(3));
    /// assert_eq!(timers.pending(), 1);
    /// let _inner = t.into_inner();
    /// assert_eq!(timers.pending(), 0);
    /// ```
    pub fn into_inner(self) -> F {
        self.future
    }

    /// The deadline.
    ///
    /// # Examples
    /// ```
    /// use std::time::{Duration, Instant};
    ///
    /// let timers = wheel_sync::TimerService::new();
    /// let t = timers.timeout(Duration::from_secs(1), std::future::ready(3));
    /// assert!(t.deadline() > Instant::now());
    /// ```
    pub fn deadline(&self) -> Instant {
        self.sleep.deadline()
    }
}

impl<F: Future> Future for Timeout<F> {
    type Output = Result<F::Output, Elapsed>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // SAFETY: `future` is structurally pinned: nothing moves it while the
        // `Timeout` is pinned (`into_inner` needs an unpinned `Timeout`, and
        // there is no `Drop` impl). `sleep` is `Unpin`, so handing out a plain
        // `&mut` to it moves nothing that is pinned.
        let (future, sleep) = unsafe {
            let this = self.get_unchecked_mut();
            (Pin::new_unchecked(&mut this.future), &mut this.sleep)
        };
        if let Poll::Ready(output) = future.poll(cx) {
            return Poll::Ready(Ok(output));
        }
        let sleep = Pin::new(sleep);
        sleep.poll(cx).map(|()| Err(Elapsed(())))
    }
}

impl<F: fmt::Debug> fmt::Debug for Timeout<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Timeout")
            .field("future", &self.future)
            .field("sleep", &self.sleep)
            .finish()
    }
}

// The one `unsafe` outside the queue is `Timeout`'s pin projection: these run
// it under miri (`cargo +nightly miri test -p wheel-sync --lib`).
#[cfg(all(test, not(loom)))]
mod tests {
    use core::future::Future;
    use core::pin::pin;
    use core::task::{Context, Poll, Waker};
    use std::time::Duration;

    use crate::TimerService;

    const HOUR: Duration = Duration::from_secs(3600);

    #[test]
    fn timeout_projects_a_pinned_inner_future() {
        let timers = TimerService::new();
        let mut cx = Context::from_waker(Waker::noop());
        // An async block that borrows across an await is !Unpin.
        let inner = async {
            let local = [1_u8, 2, 3];
            let borrowed = &local;
            core::future::ready(()).await;
            borrowed.iter().map(|&b| u32::from(b)).sum::<u32>()
        };
        let mut timeout = pin!(timers.timeout(HOUR, inner));
        assert_eq!(timeout.as_mut().poll(&mut cx), Poll::Ready(Ok(6)));
        assert_eq!(
            timers.pending(),
            1,
            "the timer lives until the Timeout drops"
        );
    }

    #[test]
    fn timeout_polls_its_sleep_while_the_future_waits() {
        let timers = TimerService::new();
        let mut cx = Context::from_waker(Waker::noop());
        let mut timeout = pin!(timers.timeout(HOUR, core::future::pending::<()>()));
        assert!(timeout.as_mut().poll(&mut cx).is_pending());
        assert!(timeout.as_mut().poll(&mut cx).is_pending());
        assert_eq!(timers.pending(), 1);
    }
}

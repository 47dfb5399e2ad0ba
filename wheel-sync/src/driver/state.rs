//! What producers and the driver share: admission counting, submission
//! and the park handshake, cancel, shutdown and the manual clock's
//! `advance` (see the ground rules in the driver's module docs).

use crossbeam_utils::CachePadded;
use std::time::Duration;

use super::{Message, AWAKE, BACKLOG_CHECK_EVERY, BACKLOG_HIGH, THROTTLE_YIELDS, WAKE_EVERY};
use crate::caught::take_uncounted;
use crate::clock::Clock;
use crate::entry::{self, EntryRef};
use crate::executor::Executor;
use crate::holders::Holders;
use crate::job::Job;
use crate::lateness::Histogram;
use crate::parked::Spots;
use crate::queue::{Consumer, Producer};
use crate::relay::Relay;
use crate::sync::atomic::{fence, AtomicBool, AtomicU64, AtomicUsize, Ordering};
use crate::sync::{thread, Arc, Backoff, Mutex};
use crate::{AdvanceError, ScheduleError, ShutdownReport};

/// What producers and the driver share.
pub(crate) struct ServiceState {
    pub(super) producer: Producer<Message>,
    /// Far-off timers waiting next to the queue (see `parked`).
    pub(super) parked: Spots,
    pub(crate) clock: Clock,
    /// Live timers: callbacks, sleeps and timeouts.
    pending: CachePadded<AtomicUsize>,
    /// What `schedule` admits; `usize::MAX` for no limit.
    max_pending: usize,
    pub(super) sleeping_until: CachePadded<AtomicU64>,
    /// A parked message may need the driver sooner than its next sweep (a
    /// `Sleep` reset earlier): sweep in the next round.
    pub(super) sweep_asked: AtomicBool,
    pub(super) shutdown: AtomicBool,
    /// Set by the spawner as it starts the driver.
    driver: Mutex<Option<thread::Thread>>,
    /// Taken by whoever waits for the driver to end (a shutdown, or the
    /// last holder's drop).
    join: Mutex<Option<thread::JoinHandle<usize>>>,
    /// Who holds the service, thread by thread (see `holders`).
    pub(crate) holders: Holders,
    /// On a line of its own: the driver writes it as it files and fires,
    /// and every `schedule` reads the fields above (a shared line cost 5–8 %
    /// of a producer's time in a 4M-timer burst).
    pub(super) stats: CachePadded<DriverStats>,
    /// Fired sleeps' wakers handed to a woken task (see `relay`).
    pub(crate) relay: Relay,
    /// Under a manual clock: the clock's time (ns past the origin) as of the
    /// start of the driver's last round that drained the queue, so
    /// everything due by then has fired. Untouched under the monotonic clock.
    pub(super) caught_up: AtomicU64,
    /// Panics of user code caught outside a driver round: the drop of a
    /// cancelled callback's closure, or of a sleep's waker with its entry.
    panicked: AtomicU64,
    /// Where due callbacks run, if not on the driver.
    pub(super) executor: Option<Executor>,
    /// The driver's last word: how many timers its shutdown abandoned.
    /// Read after joining it, so no panic after it can lose the count.
    pub(super) unfired: AtomicUsize,
    /// For the driver's tests: its next round panics, as a bug would.
    #[cfg(all(test, not(loom)))]
    pub(crate) fail_next_round: AtomicBool,
}

/// Counters only the driver writes.
#[derive(Default)]
pub(crate) struct DriverStats {
    pub(crate) scheduled: AtomicU64,
    pub(crate) fired: AtomicU64,
    pub(crate) cancelled: AtomicU64,
    pub(crate) panicked: AtomicU64,
    pub(crate) lateness_sum_ns: AtomicU64,
    pub(crate) lateness_max_ns: AtomicU64,
    /// Every fired timer's lateness, in buckets.
    pub(crate) lateness: Histogram,
    pub(crate) wakeups: AtomicU64,
    pub(crate) rounds: AtomicU64,
    /// The most submissions filed in one round.
    pub(crate) max_filed: AtomicU64,
    /// The most timers taken out of the wheels in one round.
    pub(crate) max_fired: AtomicU64,
}

impl DriverStats {
    pub(super) fn bump(counter: &AtomicU64, by: u64) {
        // Single writer: a load and a store, no read-modify-write needed.
        counter.store(counter.load(Ordering::Relaxed) + by, Ordering::Relaxed);
    }

    /// Raises a single-writer maximum to `to`.
    pub(super) fn raise(counter: &AtomicU64, to: u64) {
        if to > counter.load(Ordering::Relaxed) {
            counter.store(to, Ordering::Relaxed);
        }
    }
}

impl ServiceState {
    pub(crate) fn new(
        clock: Clock,
        max_pending: usize,
        executor: Option<Executor>,
    ) -> (Arc<Self>, Consumer<Message>) {
        let (producer, consumer) = crate::queue::channel();
        let state = Arc::new(Self {
            producer,
            parked: Spots::new(),
            clock,
            pending: CachePadded::new(AtomicUsize::new(0)),
            max_pending,
            sleeping_until: CachePadded::new(AtomicU64::new(AWAKE)),
            sweep_asked: AtomicBool::new(false),
            shutdown: AtomicBool::new(false),
            driver: Mutex::new(None),
            join: Mutex::new(None),
            holders: Holders::new(),
            stats: CachePadded::default(),
            relay: Relay::new(),
            caught_up: AtomicU64::new(0),
            panicked: AtomicU64::new(0),
            executor,
            unfired: AtomicUsize::new(0),
            #[cfg(all(test, not(loom)))]
            fail_next_round: AtomicBool::new(false),
        });
        (state, consumer)
    }

    pub(crate) fn set_driver(&self, driver: thread::Thread) {
        *self.driver.lock().unwrap_or_else(|e| e.into_inner()) = Some(driver);
    }

    /// The driver thread, to wait for it to end.
    pub(crate) fn set_join(&self, join: thread::JoinHandle<usize>) {
        *self.join.lock().unwrap_or_else(|e| e.into_inner()) = Some(join);
    }

    /// The driver thread, for the one caller that waits for it to end.
    pub(crate) fn take_join(&self) -> Option<thread::JoinHandle<usize>> {
        self.join.lock().unwrap_or_else(|e| e.into_inner()).take()
    }

    /// Ends the service once it has no holder left: shuts it down and,
    /// off the driver thread (where a callback dropped the last holder, and
    /// the driver is already on its way out), waits for the driver to end.
    pub(crate) fn stop(&self) {
        self.begin_shutdown();
        if self.on_driver_thread() {
            return;
        }
        if let Some(join) = self.take_join() {
            let _ = join.join();
        }
    }

    pub(crate) fn stats(&self) -> &DriverStats {
        &self.stats
    }

    /// Live timers. Without a `max_pending` limit the count is kept per
    /// parking spot (each thread counts in and out on its own cache line, as
    /// one shared counter made threads contend on every schedule and
    /// cancel), and this sums the spots.
    pub(crate) fn pending(&self) -> usize {
        if self.unlimited() {
            return self.parked.live();
        }
        self.pending.load(Ordering::Acquire)
    }

    pub(crate) fn max_pending(&self) -> Option<usize> {
        (!self.unlimited()).then_some(self.max_pending)
    }

    /// No `max_pending` limit: `pending` is counted per parking spot.
    #[inline]
    fn unlimited(&self) -> bool {
        self.max_pending == usize::MAX
    }

    pub(crate) fn is_shutdown(&self) -> bool {
        self.shutdown.load(Ordering::Acquire)
    }

    /// Counts a new timer in, or refuses it. Futures pass `limited = false`:
    /// they count in `pending` but are never refused.
    ///
    /// Count first, fence, then read the flag: the producer's half of the
    /// shutdown handshake (see the ground rules). An `Ok` obliges the
    /// caller to hand the timer over, or to count it out itself.
    pub(crate) fn admit(&self, limited: bool) -> Result<(), ScheduleError> {
        if self.unlimited() {
            self.parked.count(1);
        } else if !limited {
            self.pending.fetch_add(1, Ordering::AcqRel);
        } else {
            let limit = self.max_pending;
            self.pending
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |p| {
                    (p < limit).then_some(p + 1)
                })
                .map_err(|_| ScheduleError::TooManyPending { limit })?;
        }
        fence(Ordering::SeqCst);
        if self.shutdown.load(Ordering::Relaxed) {
            self.release();
            return Err(ScheduleError::Shutdown);
        }
        Ok(())
    }

    /// A timer left `PENDING` by a transition this thread won.
    pub(crate) fn release(&self) {
        self.release_n(1);
    }

    /// `n` timers left `PENDING` (or detached callbacks are about to run).
    pub(super) fn release_n(&self, n: usize) {
        if self.unlimited() {
            self.parked.count(-(n as i64));
        } else {
            self.pending.fetch_sub(n, Ordering::AcqRel);
        }
    }

    /// Hands an entry's `message` to the driver, which must have seen it by
    /// tick `look_by`: a sleeping driver planning to wake later is unparked.
    /// Never refused: an admitted timer's message, or a change to one the
    /// driver knows, is one the driver waits for even at shutdown.
    pub(crate) fn submit(&self, message: EntryRef, look_by: u64) {
        self.push(Message::Entry(message), look_by);
    }

    /// A new timer's message to the driver: [`park`](Self::park)ed if it is
    /// `far` (due at least [`parked::PARK_MIN`] from now), else
    /// [`submit`](Self::submit)ted.
    pub(crate) fn hand_over(&self, message: EntryRef, tick: u64, far: bool) {
        if far {
            self.park(message, tick);
        } else {
            self.submit(message, tick);
        }
    }

    /// Hands an admitted detached callback due at `tick` to the driver. It
    /// is the driver's from here on: it runs at its tick, or is dropped
    /// unrun and counted if the service shuts down first.
    #[inline]
    pub(crate) fn submit_job(&self, tick: u64, job: Job) {
        self.push(Message::Job(tick, job), tick);
    }

    /// Pushes `message`, which the driver must have seen by tick `look_by`,
    /// and does a producer's part of the park handshake.
    #[inline]
    fn push(&self, message: Message, look_by: u64) {
        let seq = self.producer.push(message);
        fence(Ordering::SeqCst);
        let wake_anyway = seq % WAKE_EVERY == 0;
        self.wake_driver_if(|planned| look_by < planned || wake_anyway);
        if seq % BACKLOG_CHECK_EVERY == 0 {
            self.throttle();
        }
    }

    /// Like [`submit`](Self::submit), but parks the message in this
    /// thread's parking spot (see `parked`) for a timer due at least
    /// [`parked::PARK_MIN`] from now: a cancel from this thread then takes it
    /// back before the driver sees it. A message it displaces is submitted.
    pub(crate) fn park(&self, message: EntryRef, look_by: u64) {
        let displaced = self.parked.park(message);
        fence(Ordering::SeqCst);
        self.wake_driver_if(|planned| look_by < planned);
        if let Some(other) = displaced {
            let tick = entry::tick_of(other.word_relaxed());
            self.submit(other, tick);
        }
    }

    /// Timers cancelled while parked, which the driver never saw.
    pub(crate) fn retracted(&self) -> u64 {
        self.parked.retracted()
    }

    /// An entry whose message is still queued or parked now wants the
    /// driver by tick `look_by` (a `Sleep` reset earlier): asks for a sweep
    /// of the parking spots and unparks a driver planning to wake later. The
    /// fence pairs with `park`'s, as in `submit`: either the driver sees the
    /// queued message or the request before it sleeps, or this sees its plan.
    pub(crate) fn hurry(&self, look_by: u64) {
        // Release, with the driver's Acquire in `sweep_asked`: a driver that
        // takes the request sees the parked message it is about.
        self.sweep_asked.store(true, Ordering::Release);
        fence(Ordering::SeqCst);
        self.wake_driver_if(|planned| look_by < planned);
    }

    /// Takes back a request for a sweep: whether there was one.
    pub(super) fn sweep_asked(&self) -> bool {
        self.sweep_asked.load(Ordering::Relaxed) && self.sweep_asked.swap(false, Ordering::Acquire)
    }

    /// Cancels `entry` if it is still pending, for its owner: counts it out
    /// and, unless a message for it is already queued, queues `message()` (a
    /// reference to it) so the driver frees it in its next round. Returns
    /// whether it was pending.
    pub(crate) fn cancel<A>(
        &self,
        entry: &EntryRef<A>,
        message: impl FnOnce() -> EntryRef,
    ) -> bool {
        let Some(finished) = entry.cancel() else {
            return false;
        };
        self.release();
        // SAFETY: `cancel` won the move to `CANCELLED`.
        if !unsafe { entry.cancel_action() } {
            self.panicked.fetch_add(1, Ordering::Relaxed);
        }
        if finished.must_push {
            // By the round before its deadline: it never needs the driver sooner.
            let look_by = finished.tick.saturating_sub(1);
            self.submit(message(), look_by);
        } else {
            // Its message is queued or parked; if parked by this thread,
            // take it back so the driver never sees the timer.
            self.parked.retract(entry.as_ptr());
        }
        true
    }

    /// Adds the panics caught on this thread where nothing could count them
    /// (see `caught`) to the service's count.
    pub(crate) fn count_uncounted(&self) {
        let n = take_uncounted();
        if n > 0 {
            self.panicked.fetch_add(n, Ordering::Relaxed);
        }
    }

    /// Unparks a sleeping driver if `needed(planned wake-up tick)`. The
    /// wake-up is claimed by CAS, so a sleeping driver is unparked once, not
    /// once per producer that notices it sleeping.
    #[inline]
    fn wake_driver_if(&self, needed: impl Fn(u64) -> bool) {
        let mut planned = self.sleeping_until.load(Ordering::Relaxed);
        while planned != AWAKE && needed(planned) {
            match self.sleeping_until.compare_exchange(
                planned,
                AWAKE,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => {
                    self.unpark_driver();
                    return;
                }
                Err(now) => planned = now,
            }
        }
    }

    /// Unparks the driver if it sleeps (see [`Self::wake_driver_if`]).
    pub(crate) fn wake_sleeping_driver(&self) {
        self.wake_driver_if(|_| true);
    }

    /// Backpressure: when more than [`BACKLOG_HIGH`] submissions wait, the
    /// producer wakes the driver and yields to it until half are filed (or
    /// it has yielded [`THROTTLE_YIELDS`] times, should the driver be stuck
    /// in a slow callback). Without it, producers that outnumber the cores
    /// starve the driver and the queue grows without bound.
    #[cold]
    fn throttle(&self) {
        if self.producer.len() <= BACKLOG_HIGH || self.on_driver_thread() {
            return;
        }
        for _ in 0..THROTTLE_YIELDS {
            if self.producer.len() <= BACKLOG_HIGH / 2 || self.is_shutdown() {
                return;
            }
            self.wake_driver_if(|_| true);
            thread::yield_now();
        }
    }

    pub(crate) fn on_driver_thread(&self) -> bool {
        let driver = self.driver.lock().unwrap_or_else(|e| e.into_inner());
        driver
            .as_ref()
            .is_some_and(|d| d.id() == thread::current().id())
    }

    /// Sets the shutdown flag and wakes the driver.
    pub(crate) fn begin_shutdown(&self) {
        // SeqCst: with `submit`'s fence, a producer either sees the flag or
        // its push is seen by the driver's last round.
        self.shutdown.store(true, Ordering::SeqCst);
        self.unpark_driver();
    }

    /// Moves a pending timer to `ABANDONED` at shutdown: counts it out and
    /// wakes a waiting task (or drops the callback). Returns whether it was
    /// pending, and whether user code panicked meanwhile.
    pub(super) fn abandon(&self, entry: &EntryRef) -> (bool, bool) {
        if !entry.abandon() {
            return (false, false);
        }
        self.release();
        // SAFETY: this thread won the move to `ABANDONED`.
        (true, !unsafe { entry.abandon_action() })
    }

    /// Panics of user code caught so far, wherever they ran.
    pub(crate) fn panicked(&self) -> u64 {
        let executor =
            (self.executor.as_ref()).map_or(0, |e| e.counts().panicked.load(Ordering::Relaxed));
        self.stats.panicked.load(Ordering::Relaxed)
            + self.relay.panicked()
            + self.panicked.load(Ordering::Relaxed)
            + executor
    }

    /// What the driver's shutdown left undone; read after joining it.
    pub(crate) fn shutdown_report(&self) -> ShutdownReport {
        let unrun =
            (self.executor.as_ref()).map_or(0, |e| e.counts().unrun.load(Ordering::Relaxed));
        ShutdownReport {
            unfired: self.unfired.load(Ordering::Acquire),
            unrun: usize::try_from(unrun).unwrap_or(usize::MAX),
        }
    }

    /// Moves a manual clock forward by `by`, wakes the driver, and waits
    /// until it has fired everything due by the new time; from the driver
    /// thread (a callback), returns at once.
    pub(crate) fn advance(&self, by: Duration) -> Result<(), AdvanceError> {
        let target = self.clock.advance(by).ok_or(AdvanceError::NotManual)?;
        self.sleeping_until.store(AWAKE, Ordering::Relaxed);
        self.unpark_driver();
        let shut_down = || {
            if self.is_shutdown() {
                Err(AdvanceError::Shutdown)
            } else {
                Ok(())
            }
        };
        if self.on_driver_thread() {
            return shut_down();
        }
        let backoff = Backoff::new();
        while self.caught_up.load(Ordering::Acquire) < target {
            shut_down()?;
            backoff.snooze();
        }
        Ok(())
    }

    pub(crate) fn unpark_driver(&self) {
        if let Some(driver) = &*self.driver.lock().unwrap_or_else(|e| e.into_inner()) {
            driver.unpark();
        }
    }
}

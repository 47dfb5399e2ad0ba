//! The driver thread and the state it shares with producers.
//!
//! # Ground rules
//!
//! - The driver alone owns the wheel and pops the submission queue. A round:
//!   pop at most [`BATCH`] submissions and make the wheel agree with each;
//!   advance to the current tick, firing what is due; if the batch was full,
//!   go again; else cascade ahead while there is time, then park (below).
//! - While the wheel holds timers the driver sleeps at most
//!   [`RECLAIM_EVERY`], so cancelled entries are freed promptly without the
//!   cancelling thread paying for a wake-up. With an empty wheel it naps
//!   that long after a round that filed submissions (so a schedule-cancel
//!   loop does not need a wake-up per timer), and otherwise parks
//!   indefinitely (zero CPU when idle).
//! - Park/unpark handshake (a Dekker pair, so both sides use a SeqCst fence):
//!   the driver stores its planned wake-up tick in `sleeping_until`, fences,
//!   and parks only if the queue is still empty; a producer pushes, fences,
//!   and reads `sleeping_until`. Either the driver sees the submission or the
//!   producer sees the plan. The producer unparks only if the tick by which
//!   the driver must see its message is earlier than the plan, or every
//!   [`WAKE_EVERY`]th submission so that a backlog (cancellations to
//!   reclaim, far timers) never piles up while it sleeps. A `Sleep` reset
//!   earlier while its message is still queued pushes nothing, but makes the
//!   same fence-and-compare ([`Shared::hurry`]).
//! - Parked timers (see `parked`) are the queue's too: the driver takes
//!   every parked message each round once [`parked::SWEEP_EVERY`] has
//!   passed since the last sweep, and before any longer sleep; the check of
//!   the slots joins the queue's in the handshake above, and a parking
//!   producer makes the same fence-and-compare as a pushing one. Being
//!   woken by a producer counts as a busy round, so a thread whose timers
//!   are all parked and retracted costs a wake-up per nap, not per timer.
//!   A `Sleep` reset earlier while its message is parked sets
//!   `sweep_asked` before its fence-and-compare; the driver sweeps in the
//!   round after it sees the flag, and does not sleep while it is set.
//! - Detached callbacks come through the queue by value and go into a
//!   second wheel, a `BucketWheel` (no ids, no cancel, slots in chunks);
//!   each round fires both together in deadline order.
//! - Backpressure: a producer that finds more than [`BACKLOG_HIGH`]
//!   submissions queued yields to the driver until half are filed, so the
//!   queue (and memory) stays bounded when producers outnumber cores.
//! - Shutdown is a Dekker pair on the flag and the `pending` count, each
//!   side with a SeqCst fence: a producer counts its timer in, fences, then
//!   reads the flag, and backs out if it is set; the driver, once it sees
//!   the flag, stores it again itself, fences, then files, sweeps and
//!   abandons until the count reads zero. So a timer whose producer did not
//!   see the flag is counted where the driver looks, and the driver waits
//!   for its message (however late its producer writes it); every other
//!   producer gets `Err(Shutdown)`. No timer admitted `Ok` is stranded, and
//!   the driver's count of the abandoned is exact.
//! - User code never unwinds into the driver: callbacks, wakers and the
//!   drops of closures are caught and counted where they run, and a
//!   cancelled timer's closure is dropped by the cancelling thread.

use core::fmt;
use core::task::Waker;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::{Duration, Instant};

use crossbeam_utils::CachePadded;
use wheel_core::{BucketWheel, Wheel};

use crate::clock::Clock;
use crate::entry::{self, EntryRef, Firing, CANCELLED, PENDING, SLOT_NEW, SLOT_OUT};
use crate::executor::Executor;
use crate::job::Job;
use crate::parked::{self, Slots};
use crate::queue::{Consumer, Producer};
use crate::relay::Relay;
use crate::sync::atomic::{fence, AtomicBool, AtomicU64, AtomicUsize, Ordering};
use crate::sync::{thread, Arc, Backoff, Mutex};
use crate::{AdvanceError, ScheduleError, ShutdownReport};

#[cfg(all(test, not(loom)))]
mod tests;

/// Submissions filed per round before the driver fires what is due, and
/// timers fired per round at most: a round's work is bounded, so a burst
/// never holds off what is due, nor a flood of due timers the submissions.
pub(crate) const BATCH: usize = if cfg!(loom) { 2 } else { 4096 };
/// Due timers taken out of the wheel at a time before any of them fires
/// (see [`Driver::fire_due`]).
const FIRE_BATCH: usize = if cfg!(loom) { 2 } else { 32 };
/// Fired sleeps' wakers collected before they are woken, at the latest (a
/// round wakes what it collected when it ends).
const WAKE_BATCH: usize = 1024;
/// A sleeping driver is woken at least once per this many submissions.
pub(crate) const WAKE_EVERY: u64 = if cfg!(loom) { 2 } else { 1024 };
/// Producers check the backlog once per this many submissions.
const BACKLOG_CHECK_EVERY: u64 = 256;
/// The backlog at which producers start yielding to the driver.
pub(crate) const BACKLOG_HIGH: usize = 1 << 16;
/// How often a throttled producer yields before it carries on regardless.
const THROTTLE_YIELDS: usize = 10_000;
/// The longest a driver with pending timers sleeps: the bound on how long
/// a cancelled timer's memory outlives its cancel when nothing else happens.
pub(crate) const RECLAIM_EVERY: Duration = Duration::from_millis(100);
/// Timers filed ahead per [`Wheel::cascade_ahead`] call between clock checks.
const AHEAD_CHUNK: usize = 1024;
/// Cascading ahead stops this close to the next expiration.
const AHEAD_MARGIN: Duration = Duration::from_micros(200);
/// Rounds that yield to a producer whose submission is claimed but not
/// yet written, before the driver naps between looks instead.
const STALL_YIELDS: u32 = 16;
/// The longest such nap.
const STALL_NAP: Duration = Duration::from_millis(1);
/// How long a shutting-down driver waits for an admitted timer's message
/// while none arrives.
const SHUTDOWN_PATIENCE: Duration = Duration::from_secs(10);
/// Wheel storage (in timers) that is never given back.
const SHRINK_FLOOR: usize = 4096;
/// `sleeping_until` while the driver is awake.
const AWAKE: u64 = 0;
/// `sleeping_until` while it sleeps with an empty wheel.
const FOREVER: u64 = u64::MAX;

/// What travels through the queue to the driver.
pub(crate) enum Message {
    /// A shared entry whose state word the driver makes the wheel agree with.
    Entry(EntryRef),
    /// A detached callback, due at the tick: the driver's alone from now on.
    Job(u64, Job),
}

/// What producers and the driver share.
pub(crate) struct Shared {
    producer: Producer<Message>,
    /// Far-off timers waiting next to the queue (see `parked`).
    parked: Slots,
    pub(crate) clock: Clock,
    /// Live timers: callbacks, sleeps and timeouts.
    pending: CachePadded<AtomicUsize>,
    /// What `schedule` admits; `usize::MAX` for no limit.
    max_pending: usize,
    sleeping_until: CachePadded<AtomicU64>,
    /// A parked message may need the driver sooner than its next sweep (a
    /// `Sleep` reset earlier): sweep in the next round.
    sweep_asked: AtomicBool,
    shutdown: AtomicBool,
    /// Set by the spawner before any handle exists.
    driver: Mutex<Option<thread::Thread>>,
    /// On a line of its own: the driver writes it as it files and fires,
    /// and every `schedule` reads the fields above (a shared line cost 5–8 %
    /// of a producer's time in a 4M-timer burst).
    stats: CachePadded<DriverStats>,
    /// Fired sleeps' wakers handed to a woken task (see `relay`).
    pub(crate) relay: Relay,
    /// Under a manual clock: the clock's time (ns past the origin) as of the
    /// start of the driver's last round that drained the queue, so
    /// everything due by then has fired. Untouched under the monotonic clock.
    caught_up: AtomicU64,
    /// Panics of user code caught on threads other than the driver: the
    /// drop of a cancelled callback's closure or of a sleep's waker.
    panicked: AtomicU64,
    /// Where due callbacks run, if not on the driver.
    executor: Option<Executor>,
    /// The driver's last word: how many timers its shutdown abandoned.
    /// Read after joining it, so no panic after it can lose the count.
    unfired: AtomicUsize,
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
    pub(crate) wakeups: AtomicU64,
    pub(crate) rounds: AtomicU64,
    /// The most submissions filed in one round.
    pub(crate) max_filed: AtomicU64,
    /// The most timers taken out of the wheels in one round.
    pub(crate) max_fired: AtomicU64,
}

impl DriverStats {
    fn bump(counter: &AtomicU64, by: u64) {
        // Single writer: a load and a store, no read-modify-write needed.
        counter.store(counter.load(Ordering::Relaxed) + by, Ordering::Relaxed);
    }

    /// Raises a single-writer maximum to `to`.
    fn raise(counter: &AtomicU64, to: u64) {
        if to > counter.load(Ordering::Relaxed) {
            counter.store(to, Ordering::Relaxed);
        }
    }
}

impl Shared {
    pub(crate) fn new(
        clock: Clock,
        max_pending: usize,
        executor: Option<Executor>,
    ) -> (Arc<Self>, Consumer<Message>) {
        let (producer, consumer) = crate::queue::channel();
        let shared = Arc::new(Self {
            producer,
            parked: Slots::new(),
            clock,
            pending: CachePadded::new(AtomicUsize::new(0)),
            max_pending,
            sleeping_until: CachePadded::new(AtomicU64::new(AWAKE)),
            sweep_asked: AtomicBool::new(false),
            shutdown: AtomicBool::new(false),
            driver: Mutex::new(None),
            stats: CachePadded::default(),
            relay: Relay::new(),
            caught_up: AtomicU64::new(0),
            panicked: AtomicU64::new(0),
            executor,
            unfired: AtomicUsize::new(0),
            #[cfg(all(test, not(loom)))]
            fail_next_round: AtomicBool::new(false),
        });
        (shared, consumer)
    }

    pub(crate) fn set_driver(&self, driver: thread::Thread) {
        *self.driver.lock().unwrap_or_else(|e| e.into_inner()) = Some(driver);
    }

    pub(crate) fn stats(&self) -> &DriverStats {
        &self.stats
    }

    /// Live timers. Without a `max_pending` limit the count is kept per
    /// parking slot (each thread counts in and out on its own cache line, as
    /// one shared counter made threads contend on every schedule and
    /// cancel), and this sums the slots.
    pub(crate) fn pending(&self) -> usize {
        if self.unlimited() {
            return self.parked.live();
        }
        self.pending.load(Ordering::Acquire)
    }

    pub(crate) fn max_pending(&self) -> Option<usize> {
        (!self.unlimited()).then_some(self.max_pending)
    }

    /// No `max_pending` limit: `pending` is counted per parking slot.
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
    fn release_n(&self, n: usize) {
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
    /// thread's slot (see `parked`) for a timer due at least
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
    /// of the parking slots and unparks a driver planning to wake later. The
    /// fence pairs with `park`'s, as in `submit`: either the driver sees the
    /// queued message or the request before it sleeps, or this sees its plan.
    pub(crate) fn hurry(&self, look_by: u64) {
        self.sweep_asked.store(true, Ordering::Relaxed);
        fence(Ordering::SeqCst);
        self.wake_driver_if(|planned| look_by < planned);
    }

    /// Takes back a request for a sweep: whether there was one.
    fn sweep_asked(&self) -> bool {
        self.sweep_asked.load(Ordering::Relaxed) && self.sweep_asked.swap(false, Ordering::Relaxed)
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
    fn abandon(&self, entry: &EntryRef) -> (bool, bool) {
        if !entry.abandon() {
            return (false, false);
        }
        self.release();
        // SAFETY: this thread won the move to `ABANDONED`.
        (true, !unsafe { entry.abandon_action() })
    }

    /// Drops a sleep's stored waker on this thread, counting a panic.
    pub(crate) fn drop_waker(&self, wake: &crate::entry::Wake) {
        if !wake.clear() {
            self.panicked.fetch_add(1, Ordering::Relaxed);
        }
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

    fn unpark_driver(&self) {
        if let Some(driver) = &*self.driver.lock().unwrap_or_else(|e| e.into_inner()) {
            driver.unpark();
        }
    }
}

/// What one round's firing did, for [`DriverStats`].
#[derive(Default)]
struct Tally {
    /// Timers taken out of the wheels, whatever became of them.
    taken: usize,
    fired: u64,
    panicked: u64,
    cancelled: u64,
    late_sum_ns: u64,
    late_max_ns: u64,
}

impl Tally {
    /// One timer fired `late_ns` past its deadline.
    fn fired(&mut self, late_ns: u64) {
        self.fired += 1;
        self.late_sum_ns = self.late_sum_ns.saturating_add(late_ns);
        self.late_max_ns = self.late_max_ns.max(late_ns);
    }

    fn record(&self, stats: &DriverStats) {
        DriverStats::raise(&stats.max_fired, self.taken as u64);
        DriverStats::bump(&stats.cancelled, self.cancelled);
        if self.fired > 0 {
            DriverStats::bump(&stats.fired, self.fired);
            DriverStats::bump(&stats.panicked, self.panicked);
            let sum = stats.lateness_sum_ns.load(Ordering::Relaxed);
            stats
                .lateness_sum_ns
                .store(sum.saturating_add(self.late_sum_ns), Ordering::Relaxed);
            if self.late_max_ns > stats.lateness_max_ns.load(Ordering::Relaxed) {
                stats
                    .lateness_max_ns
                    .store(self.late_max_ns, Ordering::Relaxed);
            }
        }
    }
}

/// The driver thread's state: the wheel and the consuming end of the queue.
pub(crate) struct Driver {
    shared: Arc<Shared>,
    consumer: Consumer<Message>,
    /// Boxed: its level tables are about 11 KiB, too much to move around on
    /// small thread stacks (loom's among them).
    wheel: Box<Wheel<EntryRef>>,
    /// Detached callbacks, by value, in a wheel for timers that are never
    /// cancelled (no ids, no links), while the entries' wheel stays one
    /// pointer per timer.
    jobs: BucketWheel<Job>,
    /// Due timers on their way out of the wheel: entry, deadline tick, and
    /// the state word as first read. Empty between calls of `fire_due`.
    batch: Vec<(EntryRef, u64, u64)>,
    /// Wakers of the sleeps fired this round, woken through the relay.
    /// Empty between calls of `fire_due`.
    wakers: Vec<Waker>,
    /// Due detached callbacks on their way out, each after its deadline tick.
    /// Empty between calls of `fire_jobs`.
    job_batch: Vec<(u64, Job)>,
    /// When the parked messages were last taken.
    last_sweep: Instant,
    /// Rounds in a row that found a submission claimed but not yet written.
    stalled: u32,
    /// The wheel's capacity and length when it was last shrunk.
    shrunk: (usize, usize),
}

impl fmt::Debug for Driver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Driver")
            .field("wheel", &self.wheel)
            .finish()
    }
}

impl Driver {
    pub(crate) fn new(shared: Arc<Shared>, consumer: Consumer<Message>) -> Self {
        let now = shared.clock.now_tick();
        let last_sweep = shared.clock.now();
        Self {
            shared,
            consumer,
            wheel: Box::new(Wheel::starting_at(now)),
            jobs: BucketWheel::starting_at(now),
            batch: Vec::with_capacity(FIRE_BATCH),
            wakers: Vec::new(),
            job_batch: Vec::with_capacity(FIRE_BATCH),
            last_sweep,
            stalled: 0,
            shrunk: (0, 0),
        }
    }

    /// Runs rounds until shutdown, then abandons what is left; returns how
    /// many timers never fired.
    ///
    /// User code cannot unwind into it (see the ground rules); should the
    /// driver's own code panic, the service is shut down, so that every
    /// call reports it rather than wait on a driver that is gone, and what
    /// is pending is abandoned as at any shutdown.
    pub(crate) fn run(mut self) -> usize {
        crate::entry_cache::give_to_depot();
        let rounds = catch_unwind(AssertUnwindSafe(|| {
            // Whether the last sleep was ended by a producer.
            let mut woken = false;
            while !self.shared.is_shutdown() {
                woken = self.round(woken);
            }
        }));
        if rounds.is_err() {
            self.shared.begin_shutdown();
        }
        catch_unwind(AssertUnwindSafe(|| self.abandon_all())).unwrap_or(0)
    }

    /// One round: files a batch of submissions, fires what is due (at most
    /// [`BATCH`]), and parks if nothing is left to do. Returns whether a
    /// producer ended the sleep, if there was one.
    fn round(&mut self, woken: bool) -> bool {
        #[cfg(all(test, not(loom)))]
        if self.shared.fail_next_round.swap(false, Ordering::Relaxed) {
            panic!("the driver's own code panics");
        }
        // Read first: what was submitted before the clock got here is
        // then filed, and fired if due, by this round.
        let manual_ns = self.shared.clock.manual_ns();
        let mut filed = self.file_submissions(BATCH);
        let now = self.shared.clock.now();
        if now.saturating_duration_since(self.last_sweep) >= parked::SWEEP_EVERY
            || self.shared.sweep_asked()
        {
            filed += self.sweep(now);
        }
        DriverStats::bump(&self.shared.stats.rounds, 1);
        DriverStats::raise(&self.shared.stats.max_filed, filed as u64);
        if filed >= BATCH && manual_ns.is_some() {
            // A manual clock files everything before it fires, so what one
            // `advance` makes due fires in deadline order; only a real clock
            // has due timers that a burst must not hold up.
            return woken;
        }
        let all_fired = self.fire_due(now);
        if filed >= BATCH || !all_fired {
            return woken;
        }
        if filed == 0 && !self.consumer.is_empty() {
            // A producer claimed a place but has not written it yet: let it
            // run rather than spin, or sleep past its submission.
            self.stalled += 1;
            if self.stalled <= STALL_YIELDS {
                thread::yield_now();
            } else {
                // Preempted, most likely: nap a tick at a time meanwhile.
                // What is already in the wheel still fires on time.
                thread::park_timeout(self.shared.clock.tick().min(STALL_NAP));
            }
            return woken;
        }
        self.stalled = 0;
        if let Some(ns) = manual_ns {
            // `advance` promises every due sleep woken when it returns:
            // no batch is left waiting for a task to take it.
            self.shared.relay.wake_handed();
            self.shared.caught_up.store(ns, Ordering::Release);
        }
        self.cascade_ahead();
        self.give_memory_back();
        self.park(filed > 0 || woken)
    }

    /// Before a sleep: once a burst has drained, shrinks the wheel's
    /// storage back (see [`Wheel::shrink_to_fit`]), when it is four times
    /// what the pending timers need, and unless it was tried at this size
    /// and the wheel has not since halved.
    fn give_memory_back(&mut self) {
        let (capacity, len) = (self.wheel.capacity(), self.wheel.len());
        if capacity <= 4 * len.max(SHRINK_FLOOR)
            || (capacity == self.shrunk.0 && 2 * len > self.shrunk.1)
        {
            return;
        }
        self.wheel.shrink_to_fit();
        self.shrunk = (self.wheel.capacity(), len);
    }

    /// Files every parked message; returns how many.
    fn sweep(&mut self, now: Instant) -> usize {
        self.last_sweep = now;
        let shared = Arc::clone(&self.shared);
        shared.parked.sweep(|message| self.file(message))
    }

    /// Pops up to `limit` submissions; returns how many.
    fn file_submissions(&mut self, limit: usize) -> usize {
        let mut filed = 0;
        let mut jobs = 0;
        while filed < limit {
            match self.consumer.pop() {
                Some(Message::Entry(entry)) => self.file(entry),
                Some(Message::Job(tick, job)) => {
                    self.jobs.insert(tick, job);
                    jobs += 1;
                }
                None => break,
            }
            filed += 1;
        }
        DriverStats::bump(&self.shared.stats.scheduled, jobs);
        filed
    }

    /// Makes the wheel agree with the entry's state word.
    fn file(&mut self, entry: EntryRef) {
        let stats = &self.shared.stats;
        let word = entry.take_queued();
        let slot = entry.slot();
        // The driver keeps `slot` right, so the index names this entry.
        let in_wheel = if slot < SLOT_OUT {
            self.wheel.id_at(slot)
        } else {
            None
        };
        if entry::state_of(word) == PENDING {
            let tick = entry::tick_of(word);
            if in_wheel.is_some_and(|id| self.wheel.reschedule(id, tick)) {
                return;
            }
            DriverStats::bump(&stats.scheduled, 1);
            let id = self.wheel.insert(tick, entry);
            if let Some(entry) = self.wheel.get(id) {
                entry.set_slot(id.index());
            }
            return;
        }
        if let Some(id) = in_wheel {
            self.wheel.cancel(id);
        } else if slot == SLOT_NEW {
            // Cancelled (or abandoned) before the driver ever saw it.
            DriverStats::bump(&stats.scheduled, 1);
        } else {
            return;
        }
        entry.set_slot(SLOT_OUT);
        if entry::state_of(word) == CANCELLED {
            DriverStats::bump(&stats.cancelled, 1);
        }
    }

    /// Fires the timers due at or before the tick of `started`, in deadline
    /// order across both wheels, [`BATCH`] at most; lateness is measured
    /// from `started`. Returns whether it fired all that was due.
    ///
    /// Each step is one wheel's next expiration, so every timer a step takes
    /// out has the same deadline (all earlier ones came out in earlier
    /// steps): stopping anywhere, even mid-step, keeps deadline order, as
    /// what is left comes out first next time.
    ///
    /// The sleeps' wakers are woken through the relay; one the last round
    /// handed over that no task took is woken here.
    fn fire_due(&mut self, started: Instant) -> bool {
        self.shared.relay.wake_handed();
        let now = self.shared.clock.tick_at(started);
        let mut tally = Tally::default();
        let all_fired = loop {
            if tally.taken >= BATCH {
                break false;
            }
            let a = self.wheel.next_expiration().filter(|&t| t <= now);
            let b = self.jobs.next_expiration().filter(|&t| t <= now);
            let step = match (a, b) {
                (Some(a), Some(b)) => a.min(b),
                (Some(t), None) | (None, Some(t)) => t,
                (None, None) => break true,
            };
            self.fire_entries(step, started, &mut tally);
            self.fire_jobs(step, started, &mut tally);
        };
        // Counted before the wakes, so that a woken task sees its own fire.
        tally.record(&self.shared.stats);
        self.shared.relay.dispatch(&mut self.wakers);
        all_fired
    }

    /// Advances the detached callbacks' wheel to `tick`, running what is
    /// due until the round's budget is spent.
    ///
    /// It takes them out [`FIRE_BATCH`] at a time and counts each batch out
    /// of `pending` with one atomic add before running it.
    fn fire_jobs(&mut self, tick: u64, started: Instant, tally: &mut Tally) {
        let shared = &*self.shared;
        let mut advance = self.jobs.advance(tick);
        while tally.taken < BATCH {
            self.job_batch.extend(advance.by_ref().take(FIRE_BATCH));
            if self.job_batch.is_empty() {
                break;
            }
            tally.taken += self.job_batch.len();
            shared.release_n(self.job_batch.len());
            for (deadline, job) in self.job_batch.drain(..) {
                tally.fired(shared.clock.ns_past(started, deadline));
                let ran = match &shared.executor {
                    Some(executor) => executor.hand(move || job.call()),
                    None => job.run(),
                };
                if !ran {
                    tally.panicked += 1;
                }
            }
        }
    }

    /// Advances the entries' wheel to `tick`, firing what is due.
    ///
    /// Due timers come out of the wheel [`FIRE_BATCH`] at a time, then
    /// each one's state word is read in a tight pass with no locked
    /// instruction, so the cache misses on the entries of the whole batch
    /// (each a separate allocation, untouched since it was filed) overlap;
    /// firing one at a time, each miss would wait behind the previous
    /// timer's compare-exchange.
    fn fire_entries(&mut self, tick: u64, started: Instant, tally: &mut Tally) {
        let shared = &*self.shared;
        let mut advance = self.wheel.advance(tick);
        while tally.taken < BATCH {
            self.batch.extend(
                (advance.by_ref().take(FIRE_BATCH))
                    .map(|expired| (expired.value, expired.deadline, 0)),
            );
            if self.batch.is_empty() {
                break;
            }
            tally.taken += self.batch.len();
            // Independent loads a few instructions apart: read while taking
            // each timer out of the wheel, the wheel's work between two reads
            // left room for only a few misses in flight (perf put ~75 % of
            // the taking at the entry's load).
            for (entry, _, word) in &mut self.batch {
                *word = entry.word_relaxed();
            }
            for (entry, deadline, word) in self.batch.drain(..) {
                entry.set_slot(SLOT_OUT);
                if !entry.try_fire(word, deadline) {
                    // Cancelled after it was filed (its message, when popped,
                    // finds it out of the wheel and counts nothing), or reset
                    // to another tick (its message re-files it).
                    if entry.state() == CANCELLED {
                        tally.cancelled += 1;
                    }
                    continue;
                }
                shared.release();
                tally.fired(shared.clock.ns_past(started, deadline));
                let mut firing = Firing {
                    wakers: &mut self.wakers,
                    executor: shared.executor.as_ref(),
                };
                // SAFETY: `try_fire` won this arming's move to `FIRED`.
                if !unsafe { entry.fire(&mut firing) } {
                    tally.panicked += 1;
                }
            }
            if self.wakers.len() >= WAKE_BATCH {
                shared.relay.dispatch(&mut self.wakers);
            }
        }
    }

    /// Uses idle time before the next expiration to file the next big slot's
    /// timers ahead (see [`Wheel::cascade_ahead`]), in chunks, so that when
    /// its time comes the cascade does not hold up the timers due then.
    /// Stops for submissions, and [`AHEAD_MARGIN`] before the next timer.
    fn cascade_ahead(&mut self) {
        if cfg!(loom) {
            // Wheel bookkeeping only, no concurrency; not worth model states.
            return;
        }
        while self.consumer.is_empty() {
            let Some(next) = self.next_expiration() else {
                return;
            };
            let Some(due) = self.shared.clock.instant_of(next) else {
                return;
            };
            if due.saturating_duration_since(self.shared.clock.now()) < AHEAD_MARGIN {
                return;
            }
            if self.wheel.cascade_ahead(AHEAD_CHUNK) == 0
                && self.jobs.cascade_ahead(AHEAD_CHUNK) == 0
            {
                return;
            }
        }
    }

    /// The earlier of the two wheels' next expirations.
    fn next_expiration(&self) -> Option<u64> {
        match (self.wheel.next_expiration(), self.jobs.next_expiration()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Sleeps until the next expiration unless a submission or shutdown
    /// arrived meanwhile (see the module's ground rules). Returns whether a
    /// producer ended the sleep.
    ///
    /// An empty wheel after a `busy` round (one that filed submissions, or
    /// followed a wake-up by a producer) naps [`RECLAIM_EVERY`] as if a
    /// timer were due then, rather than parking for good: parked for good,
    /// the driver must be woken by the very next submission, and a thread
    /// that schedules and cancels in a loop (every cancel empties the wheel
    /// again) would pay for a wake-up every few submissions. A nap in which
    /// nothing arrives ends in parking for good, so an idle service still
    /// costs no CPU.
    ///
    /// A sleep longer than [`parked::SWEEP_EVERY`] first files the parked
    /// messages, and if there were any, goes back to a round instead; one
    /// parked after that check, with a deadline before the planned wake-up,
    /// makes its producer wake the driver (the same handshake as a
    /// submission).
    fn park(&mut self, busy: bool) -> bool {
        let now = self.shared.clock.now();
        let plan = self.plan(busy);
        let long = self.sleeps_long(plan, now);
        if long && self.sweep(now) > 0 {
            // What the sweep filed may be due (a parked sleep reset to now):
            // a round fires it, where a plan made before it could sleep past
            // it (for good, on a manual clock). Counted as a busy round.
            return true;
        }
        let shared = &*self.shared;
        shared
            .sleeping_until
            .store(plan.unwrap_or(FOREVER), Ordering::Relaxed);
        fence(Ordering::SeqCst);
        let parked_since = long && shared.parked.any();
        if self.consumer.is_empty()
            && !parked_since
            && !shared.sweep_asked.load(Ordering::Relaxed)
            && !shared.shutdown.load(Ordering::Relaxed)
        {
            DriverStats::bump(&shared.stats.wakeups, 1);
            match plan {
                // Idle: nothing can come due, so nothing to reclaim either;
                // or a manual clock, which only `advance` moves (waking the
                // driver as it does).
                None => thread::park(),
                Some(_) if self.shared.clock.manual_ns().is_some() => thread::park(),
                Some(tick) => {
                    // Timers pending: wake at least every RECLAIM_EVERY, so a
                    // cancelled timer is freed then, with no wake-up paid by
                    // the thread that cancelled it.
                    let now = self.shared.clock.now();
                    let cap = now + RECLAIM_EVERY;
                    let at = shared
                        .clock
                        .instant_of(tick)
                        .map_or(cap, |due| due.min(cap));
                    if at > now {
                        thread::park_timeout(at - now);
                    }
                }
            }
        }
        // A producer that wakes the driver sets `AWAKE` before unparking it.
        shared.sleeping_until.swap(AWAKE, Ordering::Relaxed) == AWAKE
    }

    /// The tick to wake at: the next expiration, or a nap's end after a
    /// busy round on an empty wheel; `None` to sleep until woken.
    ///
    /// A batch of wakers handed to a task that has not taken it brings the
    /// plan forward to the next tick, when the driver wakes them itself.
    fn plan(&self, busy: bool) -> Option<u64> {
        let plan = match self.next_expiration() {
            None if busy => Some(self.shared.clock.tick_after(RECLAIM_EVERY)),
            next => next,
        };
        if !self.shared.relay.is_handed() {
            return plan;
        }
        let soon = self.shared.clock.now_tick().saturating_add(1);
        Some(plan.map_or(soon, |tick| tick.min(soon)))
    }

    /// Whether sleeping from `now` until `plan` outlasts [`parked::SWEEP_EVERY`].
    fn sleeps_long(&self, plan: Option<u64>, now: Instant) -> bool {
        let horizon = now + parked::SWEEP_EVERY;
        plan.is_none_or(|tick| {
            self.shared
                .clock
                .instant_of(tick)
                .is_none_or(|due| due > horizon)
        })
    }

    /// The driver's half of the shutdown handshake (see the ground rules):
    /// files what is parked and queued and abandons every pending timer,
    /// until no admitted timer is left. Returns how many it abandoned.
    ///
    /// A producer that saw no flag is counted in `pending`, and its message
    /// comes however late its thread writes it; the wait gives up only
    /// after [`SHUTDOWN_PATIENCE`] without a single timer coming in, which
    /// only a lost count (a bug) could cause.
    pub(crate) fn abandon_all(&mut self) -> usize {
        // The driver's half of the handshake: its own store of the flag,
        // before the fence, is what a producer after it is sure to see.
        self.shared.shutdown.store(true, Ordering::Relaxed);
        fence(Ordering::SeqCst);
        let mut unfired = 0;
        let mut patience = Instant::now() + SHUTDOWN_PATIENCE;
        loop {
            self.shared.relay.wake_handed();
            self.sweep(self.shared.clock.now());
            while self.file_submissions(BATCH) > 0 {}
            let abandoned = self.abandon_filed();
            unfired += abandoned;
            if self.shared.pending() == 0 || Instant::now() > patience {
                break;
            }
            if abandoned > 0 {
                patience = Instant::now() + SHUTDOWN_PATIENCE;
            }
            thread::yield_now();
        }
        self.shared.unfired.store(unfired, Ordering::Release);
        unfired
    }

    /// Abandons every timer in the wheels; returns how many.
    fn abandon_filed(&mut self) -> usize {
        let shared = &*self.shared;
        let mut unfired = 0;
        let mut panicked = 0;
        for expired in self.wheel.drain() {
            let entry = expired.value;
            entry.set_slot(SLOT_OUT);
            let (abandoned, panic) = shared.abandon(&entry);
            unfired += usize::from(abandoned);
            panicked += u64::from(panic);
        }
        for (_, job) in self.jobs.drain() {
            shared.release();
            panicked += u64::from(!job.discard());
            unfired += 1;
        }
        DriverStats::bump(&shared.stats.panicked, panicked);
        unfired
    }
}

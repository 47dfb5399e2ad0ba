//! The driver thread: its rounds, its sleeps and its shutdown. What it
//! shares with producers is in `state`, its two wheels in `wheels`, its
//! filing and firing in `fire`; the rules below are the protocol they keep.
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
//!   same fence-and-compare ([`ServiceState::hurry`]).
//! - Parked timers (see `parked`) are the queue's too: the driver takes
//!   every parked message each round once [`parked::SWEEP_EVERY`] has
//!   passed since the last sweep, and before any longer sleep; the check of
//!   the spots joins the queue's in the handshake above, and a parking
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
//! - Holders (see `holders`): every [`DISARM_EVERY`] the driver disarms
//!   the threads' idle holder counts, and stops the service when it takes
//!   the last; it never sleeps untimed while the holders' idle flag is set
//!   (but at most a RECLAIM_EVERY, or to its nap or plan if sooner), and
//!   disarms what is idle once more after its shutdown fence.
//! - User code never unwinds into the driver: callbacks, wakers and the
//!   drops of closures are caught and counted where they run, and a
//!   cancelled timer's closure is dropped by the cancelling thread.

use core::fmt;
use core::task::Waker;
use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::caught::drop_payload;
use std::time::{Duration, Instant};

use crate::entry::{EntryRef, CANCELLED, INDEX_OUT};
use crate::holders::DISARM_EVERY;
use crate::job::Job;
use crate::parked;
use crate::queue::Consumer;
use crate::sync::atomic::{fence, Ordering};
use crate::sync::{thread, Arc};
use wheels::Wheels;

mod fire;
mod state;
#[cfg(all(test, not(loom)))]
mod tests;
mod wheels;

pub(crate) use state::{DriverStats, ServiceState};

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
/// Timers filed ahead per [`wheel_core::Wheel::cascade_ahead`] call between clock checks.
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
/// How long after a sweep the driver may sleep while messages parked since
/// then wait: they are due a `PARK_MIN` after the sweep at the soonest, and
/// are filed a `SWEEP_EVERY` before that.
const PARKED_NAP: Duration = parked::PARK_MIN.saturating_sub(parked::SWEEP_EVERY);
/// Wheel storage (in timers) made with the driver.
const FIRST_TIMERS: usize = 256;
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

/// The driver thread's state: the wheels and the consuming end of the queue.
pub(crate) struct Driver {
    state: Arc<ServiceState>,
    consumer: Consumer<Message>,
    wheels: Wheels,
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
    /// When the idle holder counts were last disarmed (by the real clock,
    /// whatever the service's).
    last_disarm: Instant,
    /// Rounds in a row that found a submission claimed but not yet written.
    stalled: u32,
    /// The wheel's capacity and length when it was last shrunk.
    shrunk: (usize, usize),
}

impl fmt::Debug for Driver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Driver")
            .field("wheels", &self.wheels)
            .finish()
    }
}

impl Driver {
    pub(crate) fn new(state: Arc<ServiceState>, consumer: Consumer<Message>) -> Self {
        let now = state.clock.now_tick();
        let last_sweep = state.clock.now();
        Self {
            state,
            consumer,
            wheels: Wheels::starting_at(now, FIRST_TIMERS),
            batch: Vec::with_capacity(FIRE_BATCH),
            wakers: Vec::new(),
            job_batch: Vec::with_capacity(FIRE_BATCH),
            last_sweep,
            last_disarm: Instant::now(),
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
            while !self.state.is_shutdown() {
                woken = self.round(woken);
            }
        }));
        if let Err(payload) = rounds {
            drop_payload(payload);
            self.state.begin_shutdown();
        }
        let unfired =
            catch_unwind(AssertUnwindSafe(|| self.abandon_all())).unwrap_or_else(|payload| {
                drop_payload(payload);
                0
            });
        // After `abandon_all`'s fence: with the holders' own look at the
        // flag, no idle count stays armed (see `holders`).
        while self.state.holders.disarm_idle().is_none() {
            thread::yield_now();
        }
        self.state.count_uncounted();
        unfired
    }

    /// One round: files a batch of submissions, fires what is due (at most
    /// [`BATCH`]), and parks if nothing is left to do. Returns whether a
    /// producer ended the sleep, if there was one.
    fn round(&mut self, woken: bool) -> bool {
        #[cfg(all(test, not(loom)))]
        if self.state.fail_next_round.swap(false, Ordering::Relaxed) {
            panic!("the driver's own code panics");
        }
        // Read first: what was submitted before the clock got here is
        // then filed, and fired if due, by this round.
        let manual_ns = self.state.clock.manual_ns();
        let mut filed = self.file_submissions(BATCH);
        let now = self.state.clock.now();
        // A manual clock sweeps every round: its time jumps, so a timer
        // parked just before an `advance` may be due in the very round
        // `advance` waits for.
        if manual_ns.is_some()
            || now.saturating_duration_since(self.last_sweep) >= parked::SWEEP_EVERY
            || self.state.sweep_asked()
        {
            filed += self.sweep(now);
        }
        if self.disarm_idle_holders() {
            return woken;
        }
        DriverStats::bump(&self.state.stats.rounds, 1);
        DriverStats::raise(&self.state.stats.max_filed, filed as u64);
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
                thread::park_timeout(self.state.clock.tick().min(STALL_NAP));
            }
            return woken;
        }
        self.stalled = 0;
        if let Some(ns) = manual_ns {
            // `advance` promises every due sleep woken when it returns:
            // no batch is left waiting for a task to take it.
            self.state.relay.wake_handed();
            self.state.caught_up.store(ns, Ordering::Release);
        }
        self.cascade_ahead();
        self.give_memory_back();
        self.park(filed > 0 || woken)
    }

    /// Before a sleep: once a burst has drained, shrinks the wheel's
    /// storage back (see [`wheel_core::Wheel::shrink_to_fit`]), when it is four times
    /// what the pending timers need, and unless it was tried at this size
    /// and the wheel has not since halved.
    fn give_memory_back(&mut self) {
        let (capacity, len) = (self.wheels.entries.capacity(), self.wheels.entries.len());
        if capacity <= 4 * len.max(SHRINK_FLOOR)
            || (capacity == self.shrunk.0 && 2 * len > self.shrunk.1)
        {
            return;
        }
        self.wheels.entries.shrink_to_fit();
        self.shrunk = (self.wheels.entries.capacity(), len);
    }

    /// Every [`DISARM_EVERY`], disarms the threads' idle holder counts
    /// (see `holders`); returns whether that took the last one, and so
    /// began the shutdown. Under loom, which has no clock, only a driver
    /// about to sleep with idle counts does (see [`Self::park`]).
    fn disarm_idle_holders(&mut self) -> bool {
        let now = Instant::now();
        if cfg!(loom) || now.saturating_duration_since(self.last_disarm) < DISARM_EVERY {
            return false;
        }
        self.disarm_now().inspect(|_| self.last_disarm = now) == Some(true)
    }

    /// One sweep of the holder counts, unless another disarmer has them
    /// (`None`); whether it took the last armed one (and began the shutdown).
    fn disarm_now(&self) -> Option<bool> {
        let stopped = self.state.holders.disarm_idle()?;
        if stopped {
            self.state.begin_shutdown();
        }
        Some(stopped)
    }

    /// Files every parked message; returns how many.
    fn sweep(&mut self, now: Instant) -> usize {
        self.last_sweep = now;
        let state = Arc::clone(&self.state);
        state.parked.sweep(|message| self.file(message))
    }

    /// Uses idle time before the next expiration to file the next big slot's
    /// timers ahead (see [`wheel_core::Wheel::cascade_ahead`]), in chunks, so that when
    /// its time comes the cascade does not hold up the timers due then.
    /// Stops for submissions, and [`AHEAD_MARGIN`] before the next timer.
    fn cascade_ahead(&mut self) {
        if cfg!(loom) {
            // Wheel bookkeeping only, no concurrency; not worth model states.
            return;
        }
        while self.consumer.is_empty() {
            let Some(next) = self.wheels.next_expiration() else {
                return;
            };
            let Some(due) = self.state.clock.instant_of(next) else {
                return;
            };
            if due.saturating_duration_since(self.state.clock.now()) < AHEAD_MARGIN {
                return;
            }
            if !self.wheels.cascade_ahead(AHEAD_CHUNK) {
                return;
            }
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
    /// messages, unless the last sweep was more recent than that (and on a
    /// manual clock, always), and goes back to a round if one of them is
    /// due. A message parked since the last sweep, at `S`, is due at
    /// `S + PARK_MIN` at the soonest: if the check after the fence finds
    /// one, the driver sleeps no later than [`PARKED_NAP`] past `S` and
    /// files it then, and a message parked after the check, with a deadline
    /// before the planned wake-up, makes its producer wake the driver (the
    /// same handshake as a submission). Going back to a round instead
    /// would take, and free on the driver, every timer that a thread parks
    /// and cancels in a loop while the driver is awake.
    fn park(&mut self, busy: bool) -> bool {
        // What the rounds since the last sleep freed may have held a waker
        // whose drop panicked (see `caught`).
        self.state.count_uncounted();
        let now = self.state.clock.now();
        let manual = self.state.clock.manual_ns().is_some();
        let mut plan = self.plan(busy);
        let mut long = self.sleeps_long(plan, now);
        let stale = manual || now.saturating_duration_since(self.last_sweep) >= parked::SWEEP_EVERY;
        if long && stale && self.sweep(now) > 0 {
            // What the sweep filed may be due (a parked sleep reset to now):
            // then a round fires it, where the old plan could sleep past it
            // (for good, on a manual clock). Otherwise the plan takes it in.
            plan = self.plan(true);
            if plan.is_some_and(|tick| tick <= self.state.clock.now_tick()) {
                return true;
            }
            long = self.sleeps_long(plan, now);
        }
        let state = &*self.state;
        // With timers pending, a real clock's sleep ends a RECLAIM_EVERY
        // from now at the latest, and says so: a producer compares its
        // timer with the wake-up it can count on, and need not wake a
        // driver that will be up before its timer anyway.
        let cap = now + RECLAIM_EVERY;
        let wake = match plan {
            Some(tick) if !manual => Some(tick.min(state.clock.tick_for(cap))),
            plan => plan,
        };
        state
            .sleeping_until
            .store(wake.unwrap_or(FOREVER), Ordering::Relaxed);
        // Every sleep but these ends within a RECLAIM_EVERY, and the first
        // round a DISARM_EVERY after the last sweep disarms; under loom
        // every sleep is untimed (no clock).
        let untimed = manual || plan.is_none() || cfg!(loom);
        fence(Ordering::SeqCst);
        let nap = (long && state.parked.any()).then(|| self.last_sweep + PARKED_NAP);
        // A thread's holders all gone while others are held: come back to
        // disarm its count, or the last drop could leave the driver asleep.
        let holders_idle = untimed && state.holders.any_idle();
        if self.consumer.is_empty()
            && !state.sweep_asked.load(Ordering::Relaxed)
            && !state.shutdown.load(Ordering::Relaxed)
        {
            DriverStats::bump(&state.stats.wakeups, 1);
            match plan {
                // Loom has no clock to nap by: disarm now, then a round.
                _ if holders_idle && cfg!(loom) => {
                    if self.disarm_now().is_none() {
                        thread::yield_now();
                    }
                }
                // A manual clock only `advance` moves (waking the driver as
                // it does, and every round sweeps there); with idle holder
                // counts, a real DISARM_EVERY (its own times are virtual).
                _ if manual && holders_idle => thread::park_timeout(DISARM_EVERY),
                _ if manual => thread::park(),
                // Idle: nothing can come due, so nothing to reclaim either.
                None if nap.is_none() && !holders_idle => thread::park(),
                _ => {
                    // Timers pending, a nap for parked ones, or idle holder
                    // counts to disarm (a RECLAIM_EVERY): wake by then.
                    let at = (wake.and_then(|tick| state.clock.instant_of(tick)))
                        .map_or(cap, |due| due.min(cap));
                    let at = nap.map_or(at, |nap| nap.min(at));
                    let now = self.state.clock.now();
                    if at > now {
                        thread::park_timeout(at - now);
                    }
                }
            }
        }
        // A producer that wakes the driver sets `AWAKE` before unparking it.
        state.sleeping_until.swap(AWAKE, Ordering::Relaxed) == AWAKE
    }

    /// The tick to wake at: the next expiration, or a nap's end after a
    /// busy round on an empty wheel; `None` to sleep until woken.
    ///
    /// A batch of wakers handed to a task that has not taken it brings the
    /// plan forward to the next tick, when the driver wakes them itself.
    fn plan(&self, busy: bool) -> Option<u64> {
        let plan = match self.wheels.next_expiration() {
            None if busy => Some(self.state.clock.tick_after(RECLAIM_EVERY)),
            next => next,
        };
        if !self.state.relay.is_handed() {
            return plan;
        }
        let soon = self.state.clock.now_tick().saturating_add(1);
        Some(plan.map_or(soon, |tick| tick.min(soon)))
    }

    /// Whether sleeping from `now` until `plan` outlasts [`parked::SWEEP_EVERY`].
    fn sleeps_long(&self, plan: Option<u64>, now: Instant) -> bool {
        let horizon = now + parked::SWEEP_EVERY;
        plan.is_none_or(|tick| {
            self.state
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
    /// after [`SHUTDOWN_PATIENCE`] without a single timer coming in (a
    /// producer descheduled that long, or a lost count, a bug), napping
    /// between looks once a few yields have not been enough.
    pub(crate) fn abandon_all(&mut self) -> usize {
        // The driver's half of the handshake: its own store of the flag,
        // before the fence, is what a producer after it is sure to see.
        self.state.shutdown.store(true, Ordering::Relaxed);
        fence(Ordering::SeqCst);
        let mut unfired = 0;
        let mut patience = Instant::now() + SHUTDOWN_PATIENCE;
        let mut looks = 0;
        loop {
            self.state.relay.wake_handed();
            self.sweep(self.state.clock.now());
            while self.file_submissions(BATCH) > 0 {}
            let abandoned = self.abandon_filed();
            unfired += abandoned;
            if self.state.pending() == 0 || Instant::now() > patience {
                break;
            }
            if abandoned > 0 {
                patience = Instant::now() + SHUTDOWN_PATIENCE;
                looks = 0;
            }
            looks += 1;
            if looks <= STALL_YIELDS {
                thread::yield_now();
            } else {
                thread::park_timeout(STALL_NAP);
            }
        }
        self.state.unfired.store(unfired, Ordering::Release);
        unfired
    }

    /// Abandons every timer in the wheels; returns how many.
    fn abandon_filed(&mut self) -> usize {
        let state = &*self.state;
        let mut unfired = 0;
        let mut panicked = 0;
        let mut cancelled = 0;
        for expired in self.wheels.entries.drain() {
            let entry = expired.value;
            entry.set_wheel_index(INDEX_OUT);
            let (abandoned, panic) = state.abandon(&entry);
            unfired += usize::from(abandoned);
            // Cancelled while filed, its message not yet seen: it is
            // counted here, as its message, filed later, finds it out.
            cancelled += u64::from(!abandoned && entry.state() == CANCELLED);
            panicked += u64::from(panic);
        }
        for (_, job) in self.wheels.jobs.drain() {
            state.release();
            panicked += u64::from(!job.discard());
            unfired += 1;
        }
        DriverStats::bump(&state.stats.panicked, panicked);
        DriverStats::bump(&state.stats.cancelled, cancelled);
        unfired
    }
}

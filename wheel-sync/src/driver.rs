//! The driver thread: its rounds, its sleep and its shutdown, by the rules
//! in `shared` (filing and firing are in `driver/fire.rs`).
//!
//! A round: note the advances asked for; file at most a batch of queued
//! messages, and the parked ones due by its horizon;
//! fire what is due, at most a batch, in deadline order (callbacks run,
//! sleeps' tasks woken); if a batch was full, go again; else cascade ahead
//! while there is time, and sleep until the next expiration.

use core::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Instant;

use wheel_core::BucketWheel;

use crate::caught::{drop_payload, take_uncounted};
use crate::entry::EntryRef;
use crate::executor::Executor;
use crate::job::Job;
use crate::shared::{DriverStats, Shared, ANY, BATCH, FOREVER, RECLAIM_EVERY};
use crate::sync::{thread, Arc, Backoff};

mod fire;
mod inbox;

pub(crate) use inbox::Inbox;

/// Cascading ahead stops this close to the next expiration.
const AHEAD_MARGIN: core::time::Duration = core::time::Duration::from_micros(200);

/// The driver thread's state: the wheels and the consuming ends of the
/// queues.
pub(crate) struct Driver {
    shared: Arc<Shared>,
    inbox: Inbox,
    /// Timers with entries, filed by pointer: a copy for each pending word
    /// the driver filed; a copy fires only if the word is still pending at
    /// its tick.
    entries: BucketWheel<EntryRef>,
    /// Copies in `entries` that can fire no more, as counted by filing,
    /// firing and the spots: an estimate, which errs high (a cancel summed
    /// after `keep_live` dropped its copy), and low only for a moment (a
    /// copy left dead while a message for its timer is on its way is
    /// counted when the driver takes that message), reset by `keep_live`.
    dead: usize,
    /// The spots' sum of copies cancels left dead, when last read.
    dead_seen: u64,
    /// Detached callbacks, by value, in a wheel for timers that are never
    /// cancelled (no ids, no links).
    jobs: BucketWheel<Job>,
    /// Due timers on their way out of the wheel: entry, deadline tick, and
    /// the state word as first read. Empty between rounds.
    batch: Vec<(EntryRef, u64, u64)>,
    /// Where due callbacks run, if not here; the user's, so dropped as the
    /// driver ends, whoever still holds the service.
    executor: Option<Executor>,
    /// The driver thread's spot, where it counts out what it fires.
    spot: usize,
    /// The tick by which this round takes parked messages: a
    /// [`RECLAIM_EVERY`] from the round's start on a real clock, where it
    /// also caps the sleep that follows; every tick on a manual one.
    horizon: u64,
    /// Whether this round's sweep left a parked message, due after
    /// `horizon`, on its spot.
    left_parked: bool,
}

impl fmt::Debug for Driver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Driver")
            .field("entries", &self.entries.len())
            .field("jobs", &self.jobs.len())
            .finish_non_exhaustive()
    }
}

impl Driver {
    /// A driver whose wheels start at tick `now`: the service's time when
    /// it was built, so that timers scheduled before the driver thread
    /// starts are filed by deadline, not all as already due.
    pub(crate) fn new(
        shared: Arc<Shared>,
        inbox: Inbox,
        executor: Option<Executor>,
        now: u64,
    ) -> Self {
        let mut entries = BucketWheel::starting_at(now);
        let mut jobs = BucketWheel::starting_at(now);
        // Made now, the staging areas and the first storage are the build's
        // allocations, not ones in the middle of a steady load.
        entries.cascade_ahead(0);
        jobs.cascade_ahead(0);
        Self {
            shared,
            inbox,
            entries,
            jobs,
            dead: 0,
            dead_seen: 0,
            batch: Vec::with_capacity(BATCH),
            executor,
            spot: 0,
            horizon: u64::MAX,
            left_parked: false,
        }
    }

    /// Runs rounds until shutdown, then abandons what is left.
    ///
    /// User code cannot unwind into it (rule 5); should the driver's own
    /// code panic, the service is shut down, so that every call reports it
    /// rather than wait on a driver that is gone.
    pub(crate) fn run(mut self) {
        self.spot = crate::lane::spot();
        crate::lane::set_drives(&self.shared);
        let rounds = catch_unwind(AssertUnwindSafe(|| {
            let mut woken = false;
            while !self.shared.is_stopping() {
                woken = self.round(woken);
            }
        }));
        if let Err(payload) = rounds {
            drop_payload(payload);
            self.shared.begin_shutdown();
        }
        let unfired =
            catch_unwind(AssertUnwindSafe(|| self.abandon_all())).unwrap_or_else(|payload| {
                drop_payload(payload);
                0
            });
        self.shared.add_unfired(unfired);
        self.shared.count_panics(take_uncounted());
    }

    /// One round; returns whether a producer ended its sleep, if it slept.
    fn round(&mut self, woken: bool) -> bool {
        #[cfg(all(test, not(loom)))]
        tests::maybe_fail();
        // Read first: what was submitted before an advance is then filed,
        // and fired if due, by this round (rule 6).
        let advances = self.shared.advances();
        // A manual clock's time is read before filing too: read after, it
        // could be one an advance made while this round filed, and what the
        // caller submitted just before that advance, not filed yet, would
        // fire after later timers. Read first, any time it shows was reached
        // after those submissions were published. A real clock is read after
        // filing, so that what came due meanwhile fires now and its lateness
        // counts the filing.
        let manual_now = self
            .shared
            .clock
            .manual_ns()
            .map(|_| self.shared.clock.now());
        // A manual clock takes every parked message: its `advance_to_next`
        // needs every deadline in the wheels.
        self.horizon = match manual_now {
            Some(_) => u64::MAX,
            None => self.shared.clock.tick_after(RECLAIM_EVERY),
        };
        let filed = self.file_messages(BATCH) + self.sweep();
        self.drop_dead();
        DriverStats::bump(&self.shared.stats.rounds, 1);
        DriverStats::raise(&self.shared.stats.max_filed, filed as u64);
        // A producer that claimed a place in a queue and has not written
        // it yet holds up whatever is behind it (rule 3): what was submitted
        // before an advance may be there, and the driver waits for it.
        let stalled = filed < BATCH && !self.inbox.is_empty();
        match manual_now {
            // A manual clock files everything before it fires, so what one
            // advance makes due fires in deadline order.
            Some(_) if filed >= BATCH => return woken,
            Some(_) if stalled => {}
            Some(now) => {
                // Found before firing (rule 6).
                let shared = Arc::clone(&self.shared);
                shared.publish_next(advances, || self.earliest());
                if !self.fire_due(now) {
                    return woken;
                }
                self.shared.serve(advances);
            }
            None => {
                let all_fired = self.fire_due(self.shared.clock.now());
                if filed >= BATCH || !all_fired {
                    return woken;
                }
            }
        }
        self.cascade_ahead();
        self.sleep(filed > 0 || woken)
    }

    /// Sleeps until the next expiration unless a message, an advance or a
    /// shutdown came meanwhile (rule 3). Returns whether a producer ended
    /// the sleep.
    ///
    /// An empty wheel after a `busy` round (one that filed messages, or
    /// followed a wake-up by a producer) naps [`RECLAIM_EVERY`] rather than
    /// sleeping for good: asleep for good, the driver would be woken by the
    /// very next submission, and a thread that schedules and cancels in a
    /// loop would pay for a wake-up every few timers. A nap in which
    /// nothing arrives ends in a sleep for good: an idle service costs no
    /// CPU. An empty wheel beside parked timers the round left (due after
    /// its horizon) naps too, and keeps napping: those timers are pending,
    /// and the driver looks at them again by the horizon, as it looks every
    /// [`RECLAIM_EVERY`] while the wheel holds timers.
    ///
    /// A producer that has claimed a place in a queue and not written it
    /// holds up whatever is queued behind it there: the driver then asks to be
    /// woken by any message (`ANY`), the one that producer writes among
    /// them. After its fence it sleeps only if nothing can be taken now and
    /// any place claimed meanwhile will wake it: with places claimed but
    /// no `ANY` in its word, it goes back to a round, which asks for it.
    fn sleep(&mut self, busy: bool) -> bool {
        // What the rounds since the last sleep freed may have held a
        // closure whose drop panicked (see `caught`).
        self.shared.count_panics(take_uncounted());
        let clock = &self.shared.clock;
        let manual = clock.manual_ns().is_some();
        // With timers pending, a real clock's sleep ends at the round's
        // horizon at the latest (a nap ends there), and the plan says so: a
        // producer need not wake a driver that will be up before its timer
        // anyway, and a message left parked, due after the horizon, is
        // looked at again before it is due.
        let plan = match self.next_expiration() {
            None if (busy || self.left_parked) && !manual => Some(self.horizon),
            next => next,
        };
        let wake = match plan {
            Some(tick) if !manual => tick.min(self.horizon),
            Some(tick) => tick,
            None => FOREVER,
        };
        let stalled = !self.inbox.is_empty();
        let word = if stalled { wake | ANY } else { wake };
        if !self.shared.plan_sleep(word) {
            return false; // shut down
        }
        crate::sync::atomic::fence(crate::sync::atomic::Ordering::SeqCst);
        let held_up = stalled && !self.inbox.has_ready();
        let queue_quiet = self.inbox.is_empty() || held_up;
        // An advance waiting on a held-up queue cannot be served before the
        // held push lands, and that push wakes the driver (`ANY`).
        let advance_due = !held_up && self.shared.advance_waiting();
        // A parked message due after the horizon may stay parked through a
        // sleep that ends by the horizon; any other keeps the driver up.
        let due_by = if wake <= self.horizon {
            self.horizon
        } else {
            u64::MAX
        };
        if queue_quiet && !self.shared.spots.any_parked(due_by) && !advance_due {
            DriverStats::bump(&self.shared.stats.wakeups, 1);
            // Time moves a manual clock only by `advance`, which wakes the
            // driver; but with timers pending it still looks every
            // RECLAIM_EVERY, as a real clock's driver does, for the dead
            // copies the cancels it was not woken for counted on their
            // spots. Under loom, which has no clock, a timed park is a park.
            let at = if wake == FOREVER {
                None
            } else if manual {
                Some(Instant::now() + RECLAIM_EVERY)
            } else {
                clock.instant_of(wake)
            };
            match at {
                Some(at) => {
                    let now = Instant::now();
                    if at > now {
                        thread::park_timeout(at - now);
                    }
                }
                None => thread::park(),
            }
        }
        self.shared.end_sleep(word)
    }

    /// The earliest deadline in the two wheels, exactly (not the start of
    /// a higher level's slot, as [`Self::next_expiration`] may give, nor a
    /// dead copy's).
    fn earliest(&mut self) -> Option<u64> {
        let first = self.entries.peek();
        if first.is_some_and(|(deadline, entry)| !entry.is_pending_at(deadline)) {
            self.keep_live();
        }
        let entries = self.entries.peek().map(|(deadline, _)| deadline);
        let jobs = self.jobs.peek().map(|(deadline, _)| deadline);
        match (entries, jobs) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The earlier of the two wheels' next expirations.
    fn next_expiration(&self) -> Option<u64> {
        match (self.entries.next_expiration(), self.jobs.next_expiration()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Uses idle time before the next expiration to file the next big
    /// slot's timers ahead (see [`wheel_core::Wheel::cascade_ahead`]), a
    /// batch at a time, so that when its time comes the cascade does not
    /// hold up the timers due then. Stops for messages, and
    /// [`AHEAD_MARGIN`] before the next timer.
    fn cascade_ahead(&mut self) {
        if cfg!(loom) {
            // Wheel bookkeeping only, no concurrency: not worth model states.
            return;
        }
        while self.inbox.is_empty() {
            let Some(due) = (self.next_expiration()).and_then(|t| self.shared.clock.instant_of(t))
            else {
                return;
            };
            if due.saturating_duration_since(self.shared.clock.now()) < AHEAD_MARGIN {
                return;
            }
            if self.entries.cascade_ahead(BATCH) == 0 && self.jobs.cascade_ahead(BATCH) == 0 {
                return;
            }
        }
    }

    /// The driver's half of the shutdown (rule 7): closes the spots and
    /// the queues, then files what they held and abandons every pending
    /// timer, until every place claimed in a queue is taken. Returns how
    /// many it abandoned.
    ///
    /// A producer that claimed its place before the close writes it however
    /// late, and the wait has no end of its own: between its claim and its
    /// write a push runs no user code, takes no lock and cannot panic (a
    /// block it cannot allocate aborts the process), so the write comes, as
    /// a channel's receiver waits for a claimed slot's.
    fn abandon_all(&mut self) -> usize {
        // The doors close before any filing code runs: should it panic,
        // every schedule after is still refused.
        let mut parked = Vec::new();
        self.shared.spots.close(|entry| parked.push(entry));
        self.inbox.close();
        self.shared.doors_closed();
        for entry in parked {
            self.file(entry);
        }
        let mut unfired = 0;
        let backoff = Backoff::new();
        loop {
            self.file_messages(usize::MAX);
            unfired += self.abandon_filed();
            if self.inbox.is_empty() {
                return unfired;
            }
            // A producer is between its claim and its write: let it run.
            backoff.snooze();
        }
    }

    /// Abandons every timer in the wheels; returns how many.
    fn abandon_filed(&mut self) -> usize {
        let shared = &*self.shared;
        let (mut unfired, mut panicked) = (0, 0);
        self.dead = 0;
        for (_, entry) in self.entries.drain() {
            if entry.abandon() {
                unfired += 1;
                shared.release(self.spot, 1);
                // SAFETY: `abandon` won the move to `ABANDONED`.
                panicked += u64::from(!unsafe { entry.abandon_action() });
            }
        }
        for (_, job) in self.jobs.drain() {
            shared.release(self.spot, 1);
            panicked += u64::from(!job.discard());
            unfired += 1;
        }
        shared.count_panics(panicked);
        unfired
    }
}

#[cfg(all(test, not(loom)))]
mod tests;

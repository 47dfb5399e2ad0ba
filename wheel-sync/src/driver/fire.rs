//! Filing and firing: the driver's half of a round that makes the wheels
//! agree with the submissions, and takes out and fires what is due.

use std::time::Instant;

use super::DriverStats;
use super::{Driver, Message, BATCH, FIRE_BATCH, WAKE_BATCH};
use crate::action::Firing;
use crate::entry::{self, EntryRef, CANCELLED, INDEX_NEW, INDEX_OUT, PENDING};
use crate::lateness::Histogram;
use crate::sync::atomic::Ordering;

/// What one round's firing did, for [`DriverStats`].
#[derive(Default)]
struct FireCount {
    /// Timers taken out of the wheels, whatever became of them.
    taken: usize,
    fired: u64,
    panicked: u64,
    cancelled: u64,
    late_sum_ns: u64,
    late_max_ns: u64,
}

impl FireCount {
    /// One timer fired `late_ns` past its deadline.
    fn fired(&mut self, late_ns: u64, histogram: &Histogram) {
        histogram.record(late_ns);
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

impl Driver {
    /// Pops up to `limit` submissions; returns how many.
    pub(super) fn file_submissions(&mut self, limit: usize) -> usize {
        let mut filed = 0;
        let mut jobs = 0;
        while filed < limit {
            match self.consumer.pop() {
                Some(Message::Entry(entry)) => self.file(entry),
                Some(Message::Job(tick, job)) => {
                    self.wheels.jobs.insert(tick, job);
                    jobs += 1;
                }
                None => break,
            }
            filed += 1;
        }
        DriverStats::bump(&self.state.stats.scheduled, jobs);
        filed
    }

    /// Makes the wheel agree with the entry's state word.
    pub(super) fn file(&mut self, entry: EntryRef) {
        let stats = &self.state.stats;
        let word = entry.take_queued();
        let index = entry.wheel_index();
        // The driver keeps `wheel_index` right, so the index names this entry.
        let in_wheel = if index < INDEX_OUT {
            self.wheels.entries.id_at(index)
        } else {
            None
        };
        if entry::state_of(word) == PENDING {
            let tick = entry::tick_of(word);
            if in_wheel.is_some_and(|id| self.wheels.entries.reschedule(id, tick)) {
                return;
            }
            DriverStats::bump(&stats.scheduled, 1);
            let id = self.wheels.entries.insert(tick, entry);
            if let Some(entry) = self.wheels.entries.get(id) {
                entry.set_wheel_index(id.index());
            }
            return;
        }
        if let Some(id) = in_wheel {
            self.wheels.entries.cancel(id);
        } else if index == INDEX_NEW {
            // Cancelled (or abandoned) before the driver ever saw it.
            DriverStats::bump(&stats.scheduled, 1);
        } else {
            return;
        }
        entry.set_wheel_index(INDEX_OUT);
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
    pub(super) fn fire_due(&mut self, started: Instant) -> bool {
        self.state.relay.wake_handed();
        let now = self.state.clock.tick_at(started);
        let mut count = FireCount::default();
        let all_fired = loop {
            if count.taken >= BATCH {
                break false;
            }
            let Some(step) = self.wheels.next_expiration().filter(|&t| t <= now) else {
                break true;
            };
            self.fire_entries(step, started, &mut count);
            self.fire_jobs(step, started, &mut count);
        };
        // Counted before the wakes, so that a woken task sees its own fire.
        count.record(&self.state.stats);
        self.state.relay.dispatch(&mut self.wakers);
        all_fired
    }

    /// Advances the detached callbacks' wheel to `tick`, running what is
    /// due until the round's budget is spent.
    ///
    /// It takes them out [`FIRE_BATCH`] at a time and counts each batch out
    /// of `pending` with one atomic add before running it.
    fn fire_jobs(&mut self, tick: u64, started: Instant, count: &mut FireCount) {
        let state = &*self.state;
        let mut advance = self.wheels.jobs.advance(tick);
        while count.taken < BATCH {
            self.job_batch
                .extend(advance.by_ref().take(FIRE_BATCH.min(BATCH - count.taken)));
            if self.job_batch.is_empty() {
                break;
            }
            count.taken += self.job_batch.len();
            state.release_n(self.job_batch.len());
            for (deadline, job) in self.job_batch.drain(..) {
                count.fired(
                    state.clock.ns_past(started, deadline),
                    &state.stats.lateness,
                );
                let ran = match &state.executor {
                    Some(executor) => executor.hand(move || job.call()),
                    None => job.run(),
                };
                if !ran {
                    count.panicked += 1;
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
    fn fire_entries(&mut self, tick: u64, started: Instant, count: &mut FireCount) {
        let state = &*self.state;
        let mut advance = self.wheels.entries.advance(tick);
        while count.taken < BATCH {
            self.batch.extend(
                (advance.by_ref().take(FIRE_BATCH.min(BATCH - count.taken)))
                    .map(|expired| (expired.value, expired.deadline, 0)),
            );
            if self.batch.is_empty() {
                break;
            }
            count.taken += self.batch.len();
            // Independent loads a few instructions apart: read while taking
            // each timer out of the wheel, the wheel's work between two reads
            // left room for only a few misses in flight (perf put ~75 % of
            // the taking at the entry's load).
            for (entry, _, word) in &mut self.batch {
                *word = entry.word_relaxed();
            }
            // Each timer is claimed just before it runs, not the batch first:
            // until then a callback earlier in the batch, or another thread,
            // can still cancel it, as `TimerHandle::cancel` promises.
            for (entry, deadline, word) in self.batch.drain(..) {
                entry.set_wheel_index(INDEX_OUT);
                if !entry.try_fire(word, deadline) {
                    // Cancelled after it was filed (its message, when popped,
                    // finds it out of the wheel and counts nothing), or reset
                    // to another tick (its message re-files it).
                    if entry.state() == CANCELLED {
                        count.cancelled += 1;
                    }
                    continue;
                }
                state.release();
                count.fired(
                    state.clock.ns_past(started, deadline),
                    &state.stats.lateness,
                );
                let mut firing = Firing {
                    wakers: &mut self.wakers,
                    executor: state.executor.as_ref(),
                };
                // SAFETY: `try_fire` won this arming's move to `FIRED`.
                if !unsafe { entry.fire(&mut firing) } {
                    count.panicked += 1;
                }
            }
            if self.wakers.len() >= WAKE_BATCH {
                state.relay.dispatch(&mut self.wakers);
            }
        }
    }
}

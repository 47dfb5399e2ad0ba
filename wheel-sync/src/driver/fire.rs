//! Filing and firing: the half of a round that makes the wheels agree with
//! the messages, and the half that takes out and fires what is due.

use std::time::Instant;

use super::Driver;
use crate::entry::{self, EntryRef, PENDING};
use crate::shared::{DriverStats, Message, BATCH};
use crate::spot::Count;
use crate::sync::atomic::Ordering;
use crate::sync::Arc;

/// What one round's firing did so far.
#[derive(Default)]
struct FireCount {
    /// Timers taken out of the wheels, whatever became of them.
    taken: usize,
    panicked: u64,
}

/// Counts one timer fired `late_ns` past its deadline in `stats`, before
/// its action runs: a task it wakes sees its own fire there.
fn count_fired(stats: &DriverStats, late_ns: u64) {
    stats.lateness.record(late_ns);
    DriverStats::bump(&stats.fired, 1);
    let sum = stats.lateness_sum_ns.load(Ordering::Relaxed);
    (stats.lateness_sum_ns).store(sum.saturating_add(late_ns), Ordering::Relaxed);
    DriverStats::raise(&stats.lateness_max_ns, late_ns);
}

impl Driver {
    /// Pops up to `limit` messages and files each; returns how many.
    pub(super) fn file_messages(&mut self, limit: usize) -> usize {
        self.inbox.next_round();
        let mut filed = 0;
        while filed < limit {
            match self.inbox.pop() {
                Some(Message::Entry(entry)) => self.file(entry),
                Some(Message::Job(tick, job)) => self.jobs.insert(tick, job),
                None => break,
            }
            filed += 1;
        }
        filed
    }

    /// Takes every parked message due by the round's horizon and files
    /// it, and counts the copies that cancels left dead since the last
    /// sweep; returns how many messages it took.
    pub(super) fn sweep(&mut self) -> usize {
        let shared = Arc::clone(&self.shared);
        let (taken, left) = shared.spots.sweep(self.horizon, |entry| self.file(entry));
        self.left_parked = left;
        let dead = shared.spots.total(Count::Dead);
        self.dead += dead.wrapping_sub(self.dead_seen) as usize;
        self.dead_seen = dead;
        taken
    }

    /// Makes the wheel agree with the entry's state word (rule 2): a
    /// pending word gets a copy filed at its tick. The copy filed before,
    /// if any, is counted dead, as the word has moved on (a move back to its
    /// tick makes two copies there, of which one fires and one is dead); it
    /// stays where it is and is skipped when it comes due.
    pub(super) fn file(&mut self, entry: EntryRef) {
        let word = entry.take_queued();
        let pending = entry::state_of(word) == PENDING;
        if entry.set_filed(pending) {
            self.dead += 1;
        }
        if pending {
            self.entries.insert(entry::tick_of(word), entry);
        }
    }

    /// Drops the wheel's dead copies once they outnumber the live ones, so
    /// that what the wheel holds stays within twice what can fire.
    pub(super) fn drop_dead(&mut self) {
        if 2 * self.dead > self.entries.len() {
            self.keep_live();
        }
    }

    /// Drops every copy that can fire no more, but one of a timer whose
    /// move is on its way, filed again at the new tick (rule 4). A timer
    /// moved away and back before its old copy came due has two copies at
    /// its tick, both pending there: the first one met stays. So what is
    /// left is one copy per live timer, at its deadline.
    pub(super) fn keep_live(&mut self) {
        self.entries.retain(|_, entry| {
            entry.clear_seen();
            true
        });
        let mut moving = Vec::new();
        self.entries.retain(|deadline, entry| {
            if entry.is_pending_at(deadline) {
                return !entry.mark_seen();
            }
            if let Some(tick) = entry.moving_to() {
                if !entry.mark_seen() {
                    moving.push((tick, entry.clone()));
                }
            }
            false
        });
        for (tick, entry) in moving {
            self.entries.insert(tick, entry);
        }
        self.dead = 0;
    }

    /// Fires the timers due at or before the tick of `started`, in deadline
    /// order across both wheels, [`BATCH`] at most; lateness is measured
    /// from `started`. Returns whether it fired all that was due.
    ///
    /// Each step is one wheel's next expiration, so every timer a step takes
    /// out has the same deadline (all earlier ones came out in earlier
    /// steps): stopping anywhere, even mid-step, keeps deadline order, as
    /// what is left comes out first next time.
    pub(super) fn fire_due(&mut self, started: Instant) -> bool {
        let now = self.shared.clock.tick_at(started);
        let mut count = FireCount::default();
        let all_fired = loop {
            if count.taken >= BATCH {
                break false;
            }
            let Some(step) = self.next_expiration().filter(|&t| t <= now) else {
                break true;
            };
            self.fire_entries(step, started, &mut count);
            self.fire_jobs(step, started, &mut count);
        };
        DriverStats::raise(&self.shared.stats.max_fired, count.taken as u64);
        self.shared.count_panics(count.panicked);
        all_fired
    }

    /// Advances the entries' wheel to `tick`, firing what is due until the
    /// round's budget is spent.
    ///
    /// The due timers, up to what is left of the round's batch, come out of
    /// the wheel first; then each one's state word is read in a tight pass,
    /// so that the cache misses on a batch's entries (each a separate allocation, untouched since it
    /// was filed) overlap; fired one at a time, each miss would wait behind
    /// the previous timer's compare-exchange. Each is still claimed just
    /// before it fires, so a callback earlier in the batch can cancel it.
    fn fire_entries(&mut self, tick: u64, started: Instant, count: &mut FireCount) {
        let shared = &*self.shared;
        let budget = BATCH - count.taken;
        let due = self.entries.advance(tick).take(budget);
        self.batch
            .extend(due.map(|(deadline, entry)| (entry, deadline, 0)));
        count.taken += self.batch.len();
        for (entry, _, word) in &mut self.batch {
            *word = entry.word_relaxed();
        }
        for (entry, deadline, word) in self.batch.drain(..) {
            if !entry.try_fire(word, deadline) {
                match entry.moving_to() {
                    // Its move's message is on its way: kept, at the new
                    // tick, so that a shutdown refusing the message still
                    // finds the timer (rule 4); that message will count it
                    // dead.
                    Some(tick) => self.entries.insert(tick, entry),
                    None => self.dead = self.dead.saturating_sub(1),
                }
                continue;
            }
            entry.set_filed(false);
            shared.release(self.spot, 1);
            count_fired(&shared.stats, shared.clock.ns_past(started, deadline));
            // SAFETY: `try_fire` won this arming's move to `FIRED`.
            let fired = unsafe { entry.fire(self.executor.as_ref()) };
            drop(entry);
            count.panicked += u64::from(!fired.finish());
        }
    }

    /// Advances the detached callbacks' wheel to `tick`, running what is
    /// due until the round's budget is spent.
    fn fire_jobs(&mut self, tick: u64, started: Instant, count: &mut FireCount) {
        let shared = &*self.shared;
        let budget = BATCH - count.taken;
        for (deadline, job) in self.jobs.advance(tick).take(budget) {
            count.taken += 1;
            shared.release(self.spot, 1);
            count_fired(&shared.stats, shared.clock.ns_past(started, deadline));
            let ran = match &self.executor {
                Some(executor) => executor.hand(move || job.call()),
                None => job.run(),
            };
            count.panicked += u64::from(!ran);
        }
    }
}

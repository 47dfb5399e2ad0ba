//! The driver's two wheels as one: timers with entries (cancellable,
//! filed by pointer) and detached callbacks (by value, never cancelled),
//! filed apart and fired together in deadline order.

use wheel_core::{BucketWheel, Wheel};

use crate::entry::EntryRef;
use crate::job::Job;

#[derive(Debug)]
pub(super) struct Wheels {
    /// Boxed: its level tables are about 11 KiB, too much to move around on
    /// small thread stacks (loom's among them).
    pub(super) entries: Box<Wheel<EntryRef>>,
    /// Detached callbacks, by value, in a wheel for timers that are never
    /// cancelled (no ids, no links), while the entries' wheel stays one
    /// pointer per timer.
    pub(super) jobs: BucketWheel<Job>,
}

impl Wheels {
    /// Both wheels at tick `now`, with room for `reserve` entries.
    ///
    /// Each wheel makes its staging area on its first cascade ahead and
    /// keeps it, and the storage for the first timers filed is kept too:
    /// made now, these allocations are the build's, not ones in the middle
    /// of a steady load that first left a timer filed.
    pub(super) fn starting_at(now: u64, reserve: usize) -> Self {
        let mut entries = Box::new(Wheel::starting_at(now));
        let mut jobs = BucketWheel::starting_at(now);
        entries.reserve(reserve);
        entries.cascade_ahead(0);
        jobs.cascade_ahead(0);
        Self { entries, jobs }
    }

    /// The earlier of the two wheels' next expirations.
    pub(super) fn next_expiration(&self) -> Option<u64> {
        match (self.entries.next_expiration(), self.jobs.next_expiration()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Files up to `chunk` timers of the next big slot ahead of time, the
    /// entries' first; whether there was any to file.
    pub(super) fn cascade_ahead(&mut self, chunk: usize) -> bool {
        self.entries.cascade_ahead(chunk) != 0 || self.jobs.cascade_ahead(chunk) != 0
    }
}

//! Backpressure: a producer that outruns the driver waits for it.
//!
//! Producers that outnumber the cores take the driver's core too: on two
//! cores, eight threads each with more timers in flight than their spot has
//! places leave the driver a ninth of the CPU, and their queues would grow
//! by hundreds of MiB a second, every message a cancelled timer the driver
//! has yet to take. So the push that ends each [`BATCH`] pushes to a queue
//! (where the pusher wakes the driver anyway, rule 3) waits until the
//! driver has taken the queue up to `BATCH` messages before it: the
//! pusher's own backlog, fixed as it starts to wait, so later pushes by
//! other threads do not hold it. It gives up once the driver has taken
//! nothing for [`RECLAIM_EVERY`], the longest the driver sleeps with
//! timers pending: a driver that takes nothing for that long with a batch
//! waiting is stuck (in a slow callback, or behind a push another thread
//! claimed and has not written), and the producer carries on. It reads
//! how far the driver has taken the queue, and orders nothing the protocol
//! relies on.

use core::time::Duration;
use std::time::Instant;

use super::{Shared, BATCH, RECLAIM_EVERY};
use crate::spot::{Count, SPOTS};
use crate::sync::Backoff;

impl Shared {
    /// After the push at `seq` to spot `spot`'s queue that ends a batch: waits for the driver (see the module's docs), unless the
    /// service is shutting down or this is the driver's own thread (a
    /// callback that schedules). Under loom, nothing: the wait reads the
    /// real clock and yields to the OS, which loom cannot schedule around,
    /// and leaving it out takes no ordering from the models.
    #[cold]
    pub(super) fn keep_up(&self, spot: usize, seq: u64) {
        if !cfg!(loom) {
            self.keep_up_for(spot, seq, RECLAIM_EVERY);
        }
    }

    /// [`keep_up`](Self::keep_up), giving up after `patience` without
    /// progress.
    fn keep_up_for(&self, spot: usize, seq: u64, patience: Duration) {
        let queue = &self.queues[spot % SPOTS];
        let target = (seq + 1).saturating_sub(BATCH as u64);
        if queue.taken() >= target || self.is_stopping() || self.on_driver_thread() {
            return;
        }
        self.spots.count(spot, Count::Waits, 1);
        let backoff = Backoff::new();
        let (mut taken, mut since) = (queue.taken(), Instant::now());
        while taken < target && !self.is_stopping() {
            backoff.snooze();
            let now = queue.taken();
            if now != taken {
                (taken, since) = (now, Instant::now());
            } else if since.elapsed() >= patience {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests;

//! Backpressure: a producer that outruns the driver waits for it.
//!
//! Producers that outnumber the cores take the driver's core too: on two
//! cores, eight threads each with more timers in flight than their spot has
//! places leave the driver a ninth of the CPU, and their queues would grow
//! by hundreds of MiB a second, every message a cancelled timer the driver
//! has yet to take. So a producer whose queue holds more than a round's
//! worth ([`BATCH`]) yields its core until the driver is back within it,
//! looking only every `BATCH` pushes, where it wakes the driver anyway
//! (rule 3). It orders nothing: it reads how far the driver has taken its
//! queue, and yields.

use std::time::{Duration, Instant};

use super::{Message, Shared, BATCH};
use crate::queue::Producer;
use crate::sync::atomic::Ordering;

/// How long a producer waits for a driver that takes nothing from its
/// queue (stuck in a slow callback, or behind a push another thread
/// claimed and has not written) before it carries on regardless.
pub(crate) const KEEP_UP_PATIENCE: Duration = Duration::from_millis(10);

impl Shared {
    /// Yields while `queue` holds more than [`BATCH`] messages and the
    /// driver keeps taking from it (within [`KEEP_UP_PATIENCE`]), unless the
    /// service is shutting down or this is the driver's own thread (a
    /// callback that schedules). Under loom, a no-op: it orders nothing,
    /// and a model's queue never holds a batch.
    #[cold]
    pub(super) fn keep_up(&self, queue: &Producer<Message>) {
        if cfg!(loom) || queue.len() <= BATCH || self.on_driver_thread() {
            return;
        }
        self.stats.waits.fetch_add(1, Ordering::Relaxed);
        let mut taken = queue.taken();
        let mut since = Instant::now();
        while queue.len() > BATCH && !self.is_stopping() {
            std::thread::yield_now();
            let now = queue.taken();
            if now != taken {
                (taken, since) = (now, Instant::now());
            } else if since.elapsed() >= KEEP_UP_PATIENCE {
                return;
            }
        }
    }
}

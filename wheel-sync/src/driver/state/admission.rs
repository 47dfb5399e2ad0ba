//! Admission counting: every live timer is counted in `pending` before it
//! is handed over and counted out when it leaves `PENDING`, on one shared
//! count under a `max_pending` limit, else on this thread's parking spot's.

use crate::sync::atomic::{fence, Ordering};
use crate::ScheduleError;

use super::ServiceState;

impl ServiceState {
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
    pub(in crate::driver) fn release_n(&self, n: usize) {
        if self.unlimited() {
            self.parked.count(-(n as i64));
        } else {
            self.pending.fetch_sub(n, Ordering::AcqRel);
        }
    }
}

//! A manual clock's `advance`, `advance_to_next`'s question and the
//! driver's answers: rule 6 of the ground rules in `shared`.

use core::time::Duration;

use super::Shared;
use crate::clock::{Clock, NEVER};
use crate::sync::atomic::{fence, Ordering};
use crate::sync::Backoff;
use crate::AdvanceError;

impl Shared {
    /// Moves a manual clock forward by `by` and waits until the driver has
    /// served a round begun after it; from the driver thread (a callback),
    /// returns at once.
    pub(crate) fn advance(&self, by: Duration) -> Result<(), AdvanceError> {
        self.advance_served(|clock| clock.advance(by)).map(drop)
    }

    /// Moves a manual clock to the start of `tick` (if it is not past it)
    /// and waits as [`Self::advance`] does; returns how far it moved.
    pub(crate) fn advance_to_tick(&self, tick: u64) -> Result<Duration, AdvanceError> {
        self.advance_served(|clock| clock.advance_to_tick(tick))
            .map(|(_, moved)| moved)
    }

    /// [`Self::advance`], the clock moved by `step` (which says how far)
    /// unless the service is already down; returns its bump of `advances`
    /// and that distance.
    fn advance_served(
        &self,
        step: impl FnOnce(&Clock) -> Option<Duration>,
    ) -> Result<(u64, Duration), AdvanceError> {
        if self.clock.manual_ns().is_none() {
            return Err(AdvanceError::NotManual);
        }
        self.refuse_if_shut_down()?;
        let moved = step(&self.clock).unwrap_or_default();
        let mine = self.advances.fetch_add(1, Ordering::AcqRel) + 1;
        fence(Ordering::SeqCst);
        self.wake_driver_if(|_| true);
        if self.on_driver_thread() {
            return self.refuse_if_shut_down().map(|()| (mine, moved));
        }
        let backoff = Backoff::new();
        while self.served.load(Ordering::Acquire) < mine {
            self.refuse_if_shut_down()?;
            backoff.snooze();
        }
        Ok((mine, moved))
    }

    /// The tick of the earliest deadline pending once every timer
    /// submitted before the call is filed; `None` if none can come due.
    pub(crate) fn next_deadline(&self) -> Result<Option<u64>, AdvanceError> {
        if self.on_driver_thread() {
            return Err(AdvanceError::FromCallback);
        }
        loop {
            self.next_wanted.store(true, Ordering::Relaxed);
            let (mine, _) = self.advance_served(|clock| clock.advance(Duration::ZERO))?;
            // A round that read `advances` before this bump may have taken
            // the request: its answer is too old, and this one asks again.
            // With callers on two threads the count read may be a later
            // round's than the one `advance_served` saw: `Acquire` brings
            // that round's `next_due` with it.
            if self.next_for.load(Ordering::Acquire) >= mine {
                let tick = self.next_due.load(Ordering::Relaxed);
                return Ok((tick < NEVER).then_some(tick));
            }
        }
    }

    /// Driver, in a round about to serve `advances`: publishes its earliest
    /// deadline if asked (rule 6).
    pub(crate) fn publish_next(&self, advances: u64, earliest: impl FnOnce() -> Option<u64>) {
        if self.next_wanted.swap(false, Ordering::Relaxed) {
            let tick = earliest().unwrap_or(NEVER);
            self.next_due.store(tick, Ordering::Relaxed);
            self.next_for.store(advances, Ordering::Release);
        }
    }

    fn refuse_if_shut_down(&self) -> Result<(), AdvanceError> {
        if self.is_stopping() {
            Err(AdvanceError::Shutdown)
        } else {
            Ok(())
        }
    }

    /// Driver: the advances asked for so far, read as a round begins.
    pub(crate) fn advances(&self) -> u64 {
        self.advances.load(Ordering::Acquire)
    }

    /// Driver: every advance up to `advances` is served.
    pub(crate) fn serve(&self, advances: u64) {
        self.served.store(advances, Ordering::Release);
    }

    /// Driver, after its fence: an advance is waiting for a round.
    pub(crate) fn advance_waiting(&self) -> bool {
        self.advances.load(Ordering::Relaxed) != self.served.load(Ordering::Relaxed)
    }
}

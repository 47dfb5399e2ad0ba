//! Parking: a thread's newest far-off callback waits in a spot next to the
//! submission queue instead of in it, so that a cancel from the same thread
//! (a request answered in time) takes it back before the driver ever sees it.
//!
//! # Ground rules
//!
//! - Every service has [`SPOTS`] spots; a thread uses spot `n % SPOTS`,
//!   where `n` is a number it draws once. Threads may share a spot.
//! - A spot holds at most one message: an `EntryRef` given up by
//!   `into_raw`. Whoever swaps or compare-exchanges a pointer out of the spot
//!   owns that reference. Parking swaps the new message in; a message it
//!   displaces is pushed to the queue by the parking thread, as a submission.
//! - Only a timer due at least [`PARK_MIN`] after it is scheduled is parked,
//!   and the driver takes every parked message at least every
//!   [`SWEEP_EVERY`] while awake, and before any sleep longer than that.
//!   A producer that parks a timer makes the same fence-and-compare as a
//!   submission, so a driver that checked the spots just before the park
//!   and planned to sleep past the timer's deadline is woken. So a parked
//!   timer reaches the wheel in time, as a queued one does.
//! - A parked message is marked `QUEUED` like a queued one: cancelling a
//!   parked timer pushes nothing. The thread that parked it retracts it with
//!   a compare-exchange on its own spot; the driver then never sees it, and
//!   the spot's `retracted` count stands in for the driver's `scheduled`
//!   and `cancelled` counts.

use core::ptr;

use crossbeam_utils::CachePadded;
use std::cell::Cell;
use std::time::Duration;

use crate::entry::{Entry, EntryRef};
use crate::sync::atomic::{AtomicPtr, AtomicU64, Ordering};

/// Spots per service; under loom, two (all model threads share one OS
/// thread, and so one spot: the shared case).
pub(crate) const SPOTS: usize = if cfg!(loom) { 2 } else { 64 };
/// Timers due sooner than this after scheduling are queued, never parked.
pub(crate) const PARK_MIN: Duration = Duration::from_millis(50);
/// The longest an awake driver goes without taking the parked messages.
pub(crate) const SWEEP_EVERY: Duration = Duration::from_millis(10);

/// The parking spots of one service.
pub(crate) struct Spots {
    spots: Box<[CachePadded<Spot>]>,
}

#[derive(Default)]
struct Spot {
    message: AtomicPtr<Entry>,
    /// Timers taken back from this spot: scheduled and cancelled without
    /// the driver seeing them.
    retracted: AtomicU64,
    /// Timers counted in minus timers counted out by the threads using
    /// this spot (wrapping: a timer may be counted out on another thread).
    live: AtomicU64,
}

/// Hands out thread numbers; only their spread matters, so it is a plain
/// `std` counter even under loom.
static NEXT_THREAD: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

std::thread_local! {
    /// This thread's number plus one; 0 until drawn.
    static THREAD: Cell<usize> = const { Cell::new(0) };
}

/// This thread's spot index.
#[inline]
fn my_index() -> usize {
    THREAD
        .try_with(|n| {
            if n.get() == 0 {
                n.set(NEXT_THREAD.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1);
            }
            (n.get() - 1) % SPOTS
        })
        // During thread teardown: any spot will do.
        .unwrap_or(0)
}

impl Spots {
    pub(crate) fn new() -> Self {
        Self {
            spots: (0..SPOTS)
                .map(|_| CachePadded::new(Spot::default()))
                .collect(),
        }
    }

    /// Parks `message` in this thread's spot; returns the message it
    /// displaced, which the caller must push.
    #[inline]
    pub(crate) fn park(&self, message: EntryRef) -> Option<EntryRef> {
        let old = self.spots[my_index()]
            .message
            .swap(message.into_raw(), Ordering::AcqRel);
        // SAFETY: a non-null pointer in a spot is a reference given up by
        // `into_raw`, and the swap made this thread its only taker.
        (!old.is_null()).then(|| unsafe { EntryRef::from_raw(old) })
    }

    /// Takes a cancelled `entry`'s message back if it is still parked in
    /// this thread's spot: the driver will never see it, and the spot counts
    /// it. Returns whether it did.
    #[inline]
    pub(crate) fn retract(&self, entry: *mut Entry) -> bool {
        let taken = self.take_back(entry);
        if taken {
            self.spots[my_index()]
                .retracted
                .fetch_add(1, Ordering::Relaxed);
        }
        taken
    }

    /// Takes `entry`'s message back if it is still parked in this thread's
    /// spot, without counting it. Returns whether it did.
    #[inline]
    pub(crate) fn take_back(&self, entry: *mut Entry) -> bool {
        let spot = &self.spots[my_index()];
        // A plain load first: most cancels find another message or none.
        if spot.message.load(Ordering::Relaxed) != entry {
            return false;
        }
        if spot
            .message
            .compare_exchange(entry, ptr::null_mut(), Ordering::AcqRel, Ordering::Relaxed)
            .is_err()
        {
            return false;
        }
        // SAFETY: as in `park`: the exchange made this thread the taker of
        // the reference the spot held.
        drop(unsafe { EntryRef::from_raw(entry) });
        true
    }

    /// Driver: takes every parked message, in spot order; returns how many.
    pub(crate) fn sweep(&self, mut take: impl FnMut(EntryRef)) -> usize {
        let mut taken = 0;
        for spot in self.spots.iter() {
            if spot.message.load(Ordering::Relaxed).is_null() {
                continue;
            }
            let ptr = spot.message.swap(ptr::null_mut(), Ordering::AcqRel);
            if !ptr.is_null() {
                // SAFETY: as in `park`.
                take(unsafe { EntryRef::from_raw(ptr) });
                taken += 1;
            }
        }
        taken
    }

    /// Whether any message is parked (a snapshot).
    pub(crate) fn any(&self) -> bool {
        self.spots
            .iter()
            .any(|spot| !spot.message.load(Ordering::Relaxed).is_null())
    }

    /// Counts `delta` live timers in (or out) on this thread's spot.
    #[inline]
    pub(crate) fn count(&self, delta: i64) {
        self.spots[my_index()]
            .live
            .fetch_add(delta as u64, Ordering::AcqRel);
    }

    /// Live timers: the sum of every spot's count. Exact when no count is
    /// moving; while some are, a sum taken spot by spot may miss a timer
    /// counted in on one spot and out on another, and it never goes below 0.
    pub(crate) fn live(&self) -> usize {
        let sum = (self.spots.iter()).fold(0u64, |sum, spot| {
            sum.wrapping_add(spot.live.load(Ordering::Acquire))
        });
        usize::try_from(sum as i64).unwrap_or(0)
    }

    /// Timers taken back by the threads that parked them, all told.
    pub(crate) fn retracted(&self) -> u64 {
        self.spots
            .iter()
            .map(|spot| spot.retracted.load(Ordering::Relaxed))
            .sum()
    }
}

impl Drop for Spots {
    fn drop(&mut self) {
        // The driver's last sweep took what was parked before shutdown; a
        // producer that parked during it took its own back. Anything else
        // is released here.
        self.sweep(drop);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::action::Callback;

    fn message(tick: u64) -> (EntryRef, EntryRef) {
        let (owner, message) = EntryRef::new(tick, Callback::new(|| ()));
        (owner.erase(), message)
    }

    #[test]
    fn park_displace_retract_and_sweep_hand_each_reference_over_once() {
        let spots = Spots::new();
        let (a, a_msg) = message(1);
        let (b, b_msg) = message(2);
        assert!(spots.park(a_msg).is_none());
        assert!(spots.any());
        let displaced = spots.park(b_msg).expect("a is displaced");
        assert_eq!(displaced.as_ptr(), a.as_ptr());
        assert!(!spots.retract(a.as_ptr()), "a is no longer parked");
        assert!(spots.retract(b.as_ptr()));
        assert!(!spots.retract(b.as_ptr()), "taken back once");
        assert!(!spots.any());
        assert_eq!(spots.retracted(), 1);
        assert!(spots.park(displaced).is_none());
        let mut swept = Vec::new();
        assert_eq!(spots.sweep(|m| swept.push(m)), 1);
        assert_eq!(swept[0].as_ptr(), a.as_ptr());
        assert_eq!(spots.sweep(drop), 0);
    }

    #[test]
    fn dropping_the_spots_releases_what_is_parked() {
        let spots = Spots::new();
        let (a, a_msg) = message(1);
        assert!(spots.park(a_msg).is_none());
        drop(spots);
        // `a` is now the last reference: dropping it frees the entry (miri
        // reports a leak or a double free otherwise).
        drop(a);
    }

    #[test]
    fn counts_sum_across_spots_and_threads() {
        let spots = Spots::new();
        spots.count(1);
        spots.count(1);
        assert_eq!(spots.live(), 2);
        std::thread::scope(|s| {
            s.spawn(|| spots.count(-1));
        });
        assert_eq!(spots.live(), 1, "a timer counted out on another thread");
        spots.count(-1);
        assert_eq!(spots.live(), 0);
    }
}

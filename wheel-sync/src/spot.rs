//! A parking spot: one per lane index, next to the queue, holding the
//! newest timer its threads made and their counts, on a cache line of its
//! own.
//!
//! # Ground rules
//!
//! - A spot holds at most one message: an `EntryRef` given up by
//!   `into_raw`. Whoever swaps or compare-exchanges a pointer out of the
//!   spot owns that reference. Parking swaps the new message in; the
//!   message it displaces goes to the queue, pushed by the parking thread.
//! - A parked message is as good as a queued one (rule 3 of `shared`): the
//!   driver takes every parked message each round, and looks at the spots
//!   after its fence before it sleeps.
//! - The thread that cancels a parked timer takes its message back with a
//!   compare-exchange on the spot it was parked in: the driver never sees
//!   that timer.
//! - `owners` counts the `TimerService` clones made on the spot's threads,
//!   each counted out where it was counted in, with a version above the
//!   count that every change bumps. A clone is made only from a clone, so
//!   once every spot's count is zero none is made again: the service has
//!   no owner left. Whoever takes a spot's count to zero then reads every
//!   spot's word twice (all of it `SeqCst`); the same words twice, all with a zero count,
//!   were all true at once between the two reads (a change in between
//!   changes a version), and the service is over. The last drop anywhere
//!   comes after every other change, so it is the one that finds that.
//! - The timers' counts are the one place each fact is counted: timers admitted
//!   (`scheduled`), cancelled by their owners, and otherwise counted out
//!   (fired, abandoned, refused after admission). They wrap, and a timer
//!   may be counted in on one spot and out on another: only their sums
//!   across the spots mean anything, and the live timers are the first
//!   sum less the other two.

use core::ptr;

use crossbeam_utils::CachePadded;

use crate::entry::{Entry, EntryRef};
use crate::sync::atomic::{AtomicPtr, AtomicU64, Ordering};

/// Spots per service; under loom, two (its model threads share one OS
/// thread, and so may share a spot: the shared case).
pub(crate) const SPOTS: usize = if cfg!(loom) { 2 } else { 64 };

/// An owner count's low half: the count.
const COUNT: u64 = (1 << 32) - 1;
/// One step of an owner count's high half: the version.
const VERSION: u64 = 1 << 32;

/// One spot: a parked message and its threads' counts.
#[derive(Default)]
pub(crate) struct Spot {
    message: AtomicPtr<Entry>,
    /// `TimerService` clones counted here, below a version (ground rules).
    owners: AtomicU64,
    scheduled: AtomicU64,
    cancelled: AtomicU64,
    released: AtomicU64,
}

/// Which of a spot's counts.
#[derive(Clone, Copy)]
pub(crate) enum Count {
    /// Timers admitted (less those refused after admission).
    Scheduled,
    /// Timers their owners cancelled.
    Cancelled,
    /// Timers counted out otherwise: fired, or abandoned at shutdown.
    Released,
}

/// A service's spots.
pub(crate) struct Spots(Box<[CachePadded<Spot>]>);

impl Spots {
    pub(crate) fn new() -> Self {
        Self((0..SPOTS).map(|_| CachePadded::default()).collect())
    }

    /// Parks `message` in spot `index`; returns the message it displaced,
    /// which the caller must push.
    #[inline]
    pub(crate) fn park(&self, index: usize, message: EntryRef) -> Option<EntryRef> {
        let old = self
            .spot(index)
            .message
            .swap(message.into_raw(), Ordering::AcqRel);
        // SAFETY: a non-null pointer in a spot is a reference given up by
        // `into_raw`, and the swap made this thread its only taker.
        (!old.is_null()).then(|| unsafe { EntryRef::from_raw(old) })
    }

    /// Takes `entry`'s message back if it is still parked in spot `index`;
    /// returns whether it did.
    #[inline]
    pub(crate) fn retract(&self, index: usize, entry: *mut Entry) -> bool {
        let spot = &self.spot(index).message;
        // A plain load first: most cancels find another message, or none.
        if spot.load(Ordering::Relaxed) != entry
            || spot
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
        for spot in self.0.iter() {
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
    pub(crate) fn any_parked(&self) -> bool {
        (self.0.iter()).any(|spot| !spot.message.load(Ordering::Relaxed).is_null())
    }

    /// Counts a `TimerService` clone in on spot `index`.
    #[inline]
    pub(crate) fn own(&self, index: usize) {
        self.spot(index)
            .owners
            .fetch_add(VERSION + 1, Ordering::SeqCst);
    }

    /// Counts a `TimerService` clone out of spot `index`, where it was
    /// counted in; whether that left the service with no owner anywhere.
    #[inline]
    pub(crate) fn disown(&self, index: usize) -> bool {
        let before = self
            .spot(index)
            .owners
            .fetch_add(VERSION - 1, Ordering::SeqCst);
        before & COUNT == 1 && self.unowned()
    }

    /// Whether no spot counts an owner: two reads of every word, the same
    /// both times, with no count (see the ground rules).
    ///
    /// Every access is `SeqCst`, so the caller's own count and these reads
    /// take their places in one order with every other thread's: the
    /// thread that counts the last owner out reads after every other change.
    #[cold]
    fn unowned(&self) -> bool {
        let mut first = [0; SPOTS];
        for (seen, spot) in first.iter_mut().zip(self.0.iter()) {
            *seen = spot.owners.load(Ordering::SeqCst);
            if *seen & COUNT != 0 {
                return false;
            }
        }
        (self.0.iter())
            .zip(first)
            .all(|(spot, seen)| spot.owners.load(Ordering::SeqCst) == seen)
    }

    /// Adds `delta` to count `which` of spot `index`.
    #[inline]
    pub(crate) fn count(&self, index: usize, which: Count, delta: i64) {
        let spot = self.spot(index);
        let counter = match which {
            Count::Scheduled => &spot.scheduled,
            Count::Cancelled => &spot.cancelled,
            Count::Released => &spot.released,
        };
        counter.fetch_add(delta as u64, Ordering::AcqRel);
    }

    /// The sum of count `which` across the spots.
    pub(crate) fn total(&self, which: Count) -> u64 {
        (self.0.iter()).fold(0u64, |sum, spot| {
            let counter = match which {
                Count::Scheduled => &spot.scheduled,
                Count::Cancelled => &spot.cancelled,
                Count::Released => &spot.released,
            };
            sum.wrapping_add(counter.load(Ordering::Acquire))
        })
    }

    /// Live timers: admitted, less cancelled and otherwise counted out.
    /// Exact when no count is moving; never below zero.
    pub(crate) fn live(&self) -> usize {
        let (mut live, mut out) = (0u64, 0u64);
        for spot in self.0.iter() {
            live = live.wrapping_add(spot.scheduled.load(Ordering::Acquire));
            out = out.wrapping_add(spot.cancelled.load(Ordering::Acquire));
            out = out.wrapping_add(spot.released.load(Ordering::Acquire));
        }
        usize::try_from(live.wrapping_sub(out) as i64).unwrap_or(0)
    }

    #[inline]
    fn spot(&self, index: usize) -> &Spot {
        &self.0[index % SPOTS]
    }
}

impl Drop for Spots {
    fn drop(&mut self) {
        // What a producer parked after the driver's last sweep: its own
        // message, whose timer it then took back or found shut down.
        self.sweep(drop);
    }
}

#[cfg(all(test, not(loom)))]
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
        assert!(spots.park(3, a_msg).is_none());
        assert!(spots.any_parked());
        let displaced = spots.park(3, b_msg).expect("a is displaced");
        assert_eq!(displaced.as_ptr(), a.as_ptr());
        assert!(!spots.retract(3, a.as_ptr()), "a is no longer parked");
        assert!(!spots.retract(4, b.as_ptr()), "b is parked in spot 3");
        assert!(spots.retract(3, b.as_ptr()));
        assert!(!spots.retract(3, b.as_ptr()), "taken back once");
        assert!(!spots.any_parked());
        assert!(spots.park(5, displaced).is_none());
        let mut swept = Vec::new();
        assert_eq!(spots.sweep(|m| swept.push(m)), 1);
        assert_eq!(swept[0].as_ptr(), a.as_ptr());
        assert_eq!(spots.sweep(drop), 0);
    }

    #[test]
    fn dropping_the_spots_releases_what_is_parked() {
        let spots = Spots::new();
        let (a, a_msg) = message(1);
        assert!(spots.park(0, a_msg).is_none());
        drop(spots);
        // `a` is now the last reference: dropping it frees the entry (miri
        // reports a leak or a double free otherwise).
        drop(a);
    }

    #[test]
    fn the_service_is_unowned_once_every_spot_has_counted_its_owners_out() {
        let spots = Spots::new();
        spots.own(0);
        spots.own(5);
        spots.own(5);
        assert!(!spots.disown(5));
        assert!(!spots.disown(5), "spot 0 still counts one");
        spots.own(7);
        assert!(!spots.disown(0), "spot 7 counts one");
        assert!(spots.disown(7));
    }

    #[test]
    fn counts_sum_across_spots() {
        let spots = Spots::new();
        spots.count(0, Count::Scheduled, 1);
        spots.count(1, Count::Scheduled, 1);
        assert_eq!(spots.live(), 2);
        spots.count(2, Count::Cancelled, 1);
        assert_eq!(spots.live(), 1, "counted out on another spot");
        spots.count(0, Count::Released, 1);
        assert_eq!(spots.live(), 0);
        spots.count(0, Count::Scheduled, -1);
        assert_eq!(spots.live(), 0, "never below zero");
        assert_eq!(spots.total(Count::Scheduled), 1);
        assert_eq!(spots.total(Count::Cancelled), 1);
    }
}

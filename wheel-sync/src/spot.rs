//! A parking spot: one per lane index, next to its queue, holding a few
//! parked timers (a cache line of places) and its threads' counts, on
//! lines of its own.
//!
//! # Ground rules
//!
//! - Each of a spot's [`PLACES`] holds at most one message: an `EntryRef`
//!   given up by `into_raw`. Whoever compare-exchanges or swaps a pointer
//!   out of a place owns that reference. Parking puts a message into an
//!   empty place only; a spot with none empty leaves the new message to the
//!   spot's queue, so a message is always parked or queued, never in a
//!   thread's hands. Each place keeps these rules on its own; the places
//!   are only looked at in turn.
//! - A parked message is as good as a queued one (rules 2 and 3 of
//!   `shared`): the driver takes every parked message each round, and
//!   looks at the spots after its fence before it sleeps.
//! - At shutdown the driver closes every spot: it swaps in a sentinel
//!   (`closed()`), taking what was parked, and no park succeeds after (the message goes
//!   to the spot's queue, which the driver closes too, and is refused there).
//! - A cancel takes a parked timer's message back with a compare-exchange
//!   on its place in the spot of its handle's lane (the spot it was parked
//!   in): the driver never sees that timer. So a thread with up to
//!   `PLACES` requests in flight, each cancelled before the driver's next
//!   round, hands the driver none of them.
//! - `owners` counts the `TimerService` clones made on the spot's threads,
//!   each counted out where it was counted in, with a version above the
//!   count that every change bumps. A clone is made only from a clone, so
//!   once every spot's count is zero none is made again: the service has
//!   no owner left. Whoever takes a spot's count to zero then reads every
//!   spot's word twice (all of it `SeqCst`); the same words twice, all with a zero count,
//!   were all true at once between the two reads (a change in between
//!   changes a version), and the service is over. The last drop anywhere
//!   comes after every other change, so it is the one that finds that;
//!   should two find it, the `unowned` flag picks one. The clones share one
//!   strong reference to the service, which that one drops: so a clone
//!   that takes its spot's count to zero holds the memory through its
//!   thread's lane while it reads, and one that leaves the count above zero
//!   touches nothing after.
//! - The timers' counts are the one place each fact is counted: timers
//!   counted in (`scheduled`, less those a closed door refused), cancelled
//!   by their owners, and otherwise counted out (fired, abandoned). They
//!   wrap, and a timer may be counted in on one spot and out on another:
//!   only their sums
//!   across the spots mean anything, and the live timers are the first
//!   sum less the other two. `dead` counts something else: the copies in
//!   the driver's wheel that its threads' cancels left dead, summed by the
//!   driver each round.

use core::ptr;

use crossbeam_utils::CachePadded;

use crate::entry::{Entry, EntryRef};
use crate::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, Ordering};

/// Spots per service; under loom, two (its model threads share one OS
/// thread, and so may share a spot: the shared case).
pub(crate) const SPOTS: usize = if cfg!(loom) { 2 } else { 64 };

/// Places in a spot for parked messages: a cache line of pointers (under
/// loom, two, so that its models meet a spot with one place taken).
pub(crate) const PLACES: usize = if cfg!(loom) {
    2
} else {
    64 / core::mem::size_of::<usize>()
};

/// A closed place's message: no entry's address (an entry is a heap
/// allocation of more than one byte, never at address 1).
fn closed() -> *mut Entry {
    ptr::without_provenance_mut(1)
}

/// Whether a place's word holds a parked message: neither empty nor closed.
fn is_message(word: *mut Entry) -> bool {
    !word.is_null() && word != closed()
}

/// An owner count's low half: the count.
const COUNT: u64 = (1 << 32) - 1;
/// One step of an owner count's high half: the version.
const VERSION: u64 = 1 << 32;

/// One spot: its parked messages and its threads' counts.
#[derive(Default)]
pub(crate) struct Spot {
    places: [AtomicPtr<Entry>; PLACES],
    /// `TimerService` clones counted here, below a version (ground rules).
    owners: AtomicU64,
    scheduled: AtomicU64,
    cancelled: AtomicU64,
    released: AtomicU64,
    dead: AtomicU64,
    waits: AtomicU64,
}

impl Spot {
    fn counter(&self, which: Count) -> &AtomicU64 {
        match which {
            Count::Scheduled => &self.scheduled,
            Count::Cancelled => &self.cancelled,
            Count::Released => &self.released,
            Count::Dead => &self.dead,
            Count::Waits => &self.waits,
        }
    }
}

/// Which of a spot's counts.
#[derive(Clone, Copy)]
pub(crate) enum Count {
    /// Timers counted in (less those a closed door refused: `shared`, rule 7).
    Scheduled,
    /// Timers their owners cancelled.
    Cancelled,
    /// Timers counted out otherwise: fired, or abandoned at shutdown.
    Released,
    /// Copies in the driver's wheel that cancels left dead (see `shared`,
    /// rule 4); not a count of timers.
    Dead,
    /// Waits of its threads for the driver to catch up (`keep_up`); not a
    /// count of timers.
    Waits,
}

/// A service's spots.
pub(crate) struct Spots {
    spots: Box<[CachePadded<Spot>]>,
    /// Set by the one `disown` that finds no owner left (ground rules).
    unowned: AtomicBool,
}

impl Spots {
    pub(crate) fn new() -> Self {
        Self {
            spots: (0..SPOTS).map(|_| CachePadded::default()).collect(),
            unowned: AtomicBool::new(false),
        }
    }

    /// Parks `message` in an empty place of spot `index`; if there is none
    /// (all taken, or closed), hands it back, for the caller to queue.
    #[inline]
    pub(crate) fn park(&self, index: usize, message: EntryRef) -> Result<(), EntryRef> {
        let ptr = message.into_raw();
        for place in &self.spot(index).places {
            // A plain load first: a taken place costs no locked instruction.
            if place.load(Ordering::Relaxed).is_null()
                && (place.compare_exchange(
                    ptr::null_mut(),
                    ptr,
                    Ordering::AcqRel,
                    Ordering::Relaxed,
                ))
                .is_ok()
            {
                return Ok(());
            }
            // Taken, or lost to another thread of the spot or to a close:
            // the next place.
        }
        // SAFETY: `ptr` came from `into_raw` above and no place took it:
        // this thread still owns the reference.
        Err(unsafe { EntryRef::from_raw(ptr) })
    }

    /// Takes `entry`'s message back if it is still parked in spot `index`;
    /// returns whether it did.
    #[inline]
    pub(crate) fn retract(&self, index: usize, entry: *mut Entry) -> bool {
        let places = &self.spot(index).places;
        // Plain loads first: a locked instruction only on the place that
        // holds it, if any (the spot was full, or the driver swept it).
        let Some(place) = places.iter().find(|p| p.load(Ordering::Relaxed) == entry) else {
            return false;
        };
        if place
            .compare_exchange(entry, ptr::null_mut(), Ordering::AcqRel, Ordering::Relaxed)
            .is_err()
        {
            // The driver took it meanwhile (an entry has one message on its
            // way at most, so it is in no other place).
            return false;
        }
        // SAFETY: as in `park`: the exchange made this thread the taker of
        // the reference the place held.
        drop(unsafe { EntryRef::from_raw(entry) });
        true
    }

    /// Driver: takes every parked message, in spot order; returns how many.
    pub(crate) fn sweep(&self, mut take: impl FnMut(EntryRef)) -> usize {
        let mut taken = 0;
        for place in self.places() {
            // Only the driver closes a place, so a closed one stays closed.
            if !is_message(place.load(Ordering::Relaxed)) {
                continue;
            }
            let ptr = place.swap(ptr::null_mut(), Ordering::AcqRel);
            if !ptr.is_null() {
                // SAFETY: as in `park`.
                take(unsafe { EntryRef::from_raw(ptr) });
                taken += 1;
            }
        }
        taken
    }

    /// Driver, at shutdown: closes every place, taking what was parked.
    pub(crate) fn close(&self, mut take: impl FnMut(EntryRef)) {
        for place in self.places() {
            let ptr = place.swap(closed(), Ordering::AcqRel);
            if is_message(ptr) {
                // SAFETY: as in `park`.
                take(unsafe { EntryRef::from_raw(ptr) });
            }
        }
    }

    /// Whether any message is parked (a snapshot).
    pub(crate) fn any_parked(&self) -> bool {
        self.places()
            .any(|place| is_message(place.load(Ordering::Relaxed)))
    }

    /// Every place of every spot.
    fn places(&self) -> impl Iterator<Item = &AtomicPtr<Entry>> {
        self.spots.iter().flat_map(|spot| spot.places.iter())
    }

    /// Counts a `TimerService` clone in on spot `index`.
    #[inline]
    pub(crate) fn own(&self, index: usize) {
        self.spot(index)
            .owners
            .fetch_add(VERSION + 1, Ordering::SeqCst);
    }

    /// Counts a `TimerService` clone out of spot `index` if another is
    /// counted there, so that the spot's count stays above zero; whether it
    /// did. The caller then touches the service no more.
    #[inline]
    pub(crate) fn disown_unless_last(&self, index: usize) -> bool {
        let owners = &self.spot(index).owners;
        let mut word = owners.load(Ordering::Relaxed);
        while word & COUNT > 1 {
            match owners.compare_exchange_weak(
                word,
                word + VERSION - 1,
                Ordering::SeqCst,
                Ordering::Relaxed,
            ) {
                Ok(_) => return true,
                Err(now) => word = now,
            }
        }
        false
    }

    /// Counts a `TimerService` clone out of spot `index`, where it was
    /// counted in; whether that left the service with no owner anywhere.
    /// Only one call returns true, should two find no owner at once.
    #[inline]
    pub(crate) fn disown(&self, index: usize) -> bool {
        let before = self
            .spot(index)
            .owners
            .fetch_add(VERSION - 1, Ordering::SeqCst);
        before & COUNT == 1 && self.unowned() && !self.unowned.swap(true, Ordering::AcqRel)
    }

    /// Whether no spot counts an owner: two reads of every word, the same
    /// both times, with no count (see the ground rules).
    ///
    /// Every access is `SeqCst`, so the caller's own count and these reads
    /// take their places in one order with every other thread's: the
    /// thread that counts the last owner out reads after every other change.
    ///
    /// A first look for any count ends the usual case early (a clone left
    /// elsewhere), before the two reads that decide.
    #[cold]
    fn unowned(&self) -> bool {
        let owned = |word: u64| word & COUNT != 0;
        if (self.spots.iter()).any(|spot| owned(spot.owners.load(Ordering::SeqCst))) {
            return false;
        }
        let mut first = [0; SPOTS];
        for (seen, spot) in first.iter_mut().zip(self.spots.iter()) {
            *seen = spot.owners.load(Ordering::SeqCst);
            if owned(*seen) {
                return false;
            }
        }
        (self.spots.iter())
            .zip(first)
            .all(|(spot, seen)| spot.owners.load(Ordering::SeqCst) == seen)
    }

    /// Adds `delta` to count `which` of spot `index`.
    #[inline]
    pub(crate) fn count(&self, index: usize, which: Count, delta: i64) {
        (self.spot(index).counter(which)).fetch_add(delta as u64, Ordering::AcqRel);
    }

    /// The sum of count `which` across the spots.
    pub(crate) fn total(&self, which: Count) -> u64 {
        (self.spots.iter()).fold(0, |sum, spot| {
            sum.wrapping_add(spot.counter(which).load(Ordering::Acquire))
        })
    }

    /// Live timers: counted in, less cancelled and otherwise counted out.
    /// Exact when no count is moving, and never below the truth: the counts
    /// out are read first, and every timer counted out was counted in
    /// before, so the later read of the counts in sees it. (Read the other
    /// way, a timer counted in and out between the two reads would hide a
    /// live one.)
    pub(crate) fn live(&self) -> usize {
        let out = self
            .total(Count::Cancelled)
            .wrapping_add(self.total(Count::Released));
        let live = self.total(Count::Scheduled).wrapping_sub(out);
        usize::try_from(live as i64).unwrap_or(0)
    }

    #[inline]
    fn spot(&self, index: usize) -> &Spot {
        &self.spots[index % SPOTS]
    }
}

impl Drop for Spots {
    fn drop(&mut self) {
        // Parked messages outlive the driver only if it died before it
        // closed the spots.
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
    fn park_refuse_retract_and_sweep_hand_each_reference_over_once() {
        let spots = Spots::new();
        let (a, a_msg) = message(1);
        let (b, b_msg) = message(2);
        assert!(spots.park(3, a_msg).is_ok());
        assert!(spots.any_parked());
        // Fill the spot's other places: then it refuses.
        let others: Vec<EntryRef> = (1..PLACES)
            .map(|i| {
                let (owner, msg) = message(10 + i as u64);
                assert!(spots.park(3, msg).is_ok(), "place {i} is free");
                owner
            })
            .collect();
        let refused = spots.park(3, b_msg).expect_err("spot 3 is full");
        assert_eq!(refused.as_ptr(), b.as_ptr());
        assert!(!spots.retract(3, b.as_ptr()), "b was never parked");
        assert!(!spots.retract(4, a.as_ptr()), "a is parked in spot 3");
        assert!(spots.retract(3, a.as_ptr()));
        assert!(!spots.retract(3, a.as_ptr()), "taken back once");
        // a's place is free again, and only it.
        let (c, c_msg) = message(3);
        assert!(spots.park(3, c_msg).is_ok());
        assert!(spots.retract(3, c.as_ptr()));
        for other in &others {
            assert!(spots.retract(3, other.as_ptr()));
        }
        assert!(!spots.any_parked());
        assert!(spots.park(5, refused).is_ok());
        let mut swept = Vec::new();
        assert_eq!(spots.sweep(|m| swept.push(m)), 1);
        assert_eq!(swept[0].as_ptr(), b.as_ptr());
        assert_eq!(spots.sweep(drop), 0);
    }

    #[test]
    fn a_sweep_takes_every_place_of_every_spot() {
        let spots = Spots::new();
        let owners: Vec<EntryRef> = (0..PLACES + 1)
            .map(|i| {
                let (owner, msg) = message(i as u64);
                // The last one goes to another spot: this one is full.
                let spot = if i < PLACES { 7 } else { 8 };
                assert!(spots.park(spot, msg).is_ok());
                owner
            })
            .collect();
        let mut swept = Vec::new();
        assert_eq!(spots.sweep(|m| swept.push(m.as_ptr())), PLACES + 1);
        let mut expected: Vec<_> = owners.iter().map(EntryRef::as_ptr).collect();
        expected.sort();
        swept.sort();
        assert_eq!(swept, expected);
        assert!(!spots.any_parked());
    }

    #[test]
    fn a_closed_spot_gives_up_what_it_held_and_takes_nothing_after() {
        let spots = Spots::new();
        let (a, a_msg) = message(1);
        let (b, b_msg) = message(2);
        assert!(spots.park(2, a_msg).is_ok());
        let mut closed_on = Vec::new();
        spots.close(|m| closed_on.push(m));
        assert_eq!(closed_on.len(), 1, "the parked message, once");
        // Every place of spot 2 is closed, not only the one a was in.
        assert_eq!(closed_on[0].as_ptr(), a.as_ptr());
        assert!(!spots.any_parked());
        let refused = spots.park(2, b_msg).expect_err("spot 2 is closed");
        assert_eq!(refused.as_ptr(), b.as_ptr());
        assert!(spots.park(9, refused).is_err(), "every spot is closed");
        assert!(!spots.retract(2, a.as_ptr()));
        assert_eq!(spots.sweep(drop), 0, "a sweep neither takes nor reopens");
        spots.close(|_| panic!("closed twice: nothing to take"));
    }

    #[test]
    fn dropping_the_spots_releases_what_is_parked() {
        let spots = Spots::new();
        let (a, a_msg) = message(1);
        assert!(spots.park(0, a_msg).is_ok());
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

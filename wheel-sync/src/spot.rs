//! A parking spot: one per lane index, next to its queue, holding its
//! threads' parked timers (as many places as a thread keeps requests in
//! flight) and their counts, on lines of their own.
//!
//! # Ground rules
//!
//! - Each of a spot's [`PLACES`] holds at most one message: an `EntryRef`
//!   given up by `into_raw`. Whoever compare-exchanges a pointer
//!   out of a place owns that reference. Parking puts a message into an
//!   empty place only; a spot with none empty leaves the new message to the
//!   spot's queue, so a message is always parked or queued, never in a
//!   thread's hands. Each place keeps these rules on its own; the places
//!   are only looked at in turn. A park looks at [`PROBES`] places (a
//!   cache line's worth) from the spot's cursor: the place after the one
//!   last parked in, or the place a cancel last emptied, whichever came
//!   last (a hint its threads race on harmlessly). So a thread that makes
//!   a request as it ends one finds the place the ended one left, in
//!   whatever order its requests are answered, and a full spot costs a
//!   park eight loads, not 64. Only a new timer's message is parked, once: its entry
//!   records the place, for its owner's cancel or move.
//! - A parked message is as good as a queued one (rules 2 and 3 of
//!   `shared`): the driver takes each parked message due by its round's
//!   horizon, and looks at the spots after its fence before it sleeps.
//!   Beside each place is a tick. A park reserves an empty place (a
//!   compare-exchange to `reserved()`), writes its timer's tick, and only
//!   then shows its message there (a `Release` store), so no other park
//!   writes the place or its tick meanwhile, and a park's tick cannot
//!   land on a later message (two threads may park in one spot); only a
//!   lowering meant for a message taken before may (below). A move of
//!   a timer still parked lowers the tick (`fetch_min`). Both come before
//!   the wake-up's fence. The driver reads the tick without owning the
//!   message, after an `Acquire` load that shows the message: the tick is
//!   that message's, or lower (a move, or a lowering meant for a message
//!   taken before), which only takes a message early. A reserved place is
//!   no message to the driver: if its look after its fence sees it
//!   reserved, the park's fence comes after the driver's, and the parker
//!   sees the driver's plan and wakes it. The close waits for a reserved
//!   place to show its message: a park runs no user code in between.
//! - At shutdown the driver closes every spot: it exchanges in a sentinel
//!   (`closed()`), taking what was parked, and no park succeeds after (the message goes
//!   to the spot's queue, which the driver closes too, and is refused there).
//! - A cancel takes a parked timer's message back with a compare-exchange
//!   on the place it records, in the spot of its handle's lane (the spot
//!   it was parked in): the driver never sees that timer. The record is a
//!   hint: the exchange succeeds only if that place holds this entry's
//!   message, and an entry has at most one message on its way. So a
//!   thread with up to `PLACES` requests in flight, each made as another
//!   ends (or up to `PROBES` made at once), each ended before its deadline
//!   comes within the driver's horizon, hands the driver none of them.
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
use crate::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicU8, Ordering};
use crate::sync::Backoff;

/// Spots per service; under loom, two (its model threads share one OS
/// thread, and so may share a spot: the shared case).
pub(crate) const SPOTS: usize = if cfg!(loom) { 2 } else { 64 };

/// Places in a spot for parked messages: enough for the requests its
/// threads keep in flight, so that those cancelled before they are due
/// within the driver's horizon never reach it. Under loom, two, so that its models meet a
/// spot with one place taken; under miri, a line's worth, as the driver
/// looks at every place each round. At most 256: an entry records its
/// place in a byte.
pub(crate) const PLACES: usize = if cfg!(loom) {
    2
} else if cfg!(miri) {
    PROBES
} else {
    64
};
const _: () = assert!(PLACES <= 256);

/// How many places a park looks at, from the spot's cursor: a cache line
/// of them, so that a full spot (a burst of timers) costs a park a line's
/// loads, not every place's.
const PROBES: usize = if cfg!(loom) {
    2
} else {
    64 / core::mem::size_of::<usize>()
};

/// A closed place's message: no entry's address (an entry is a heap
/// allocation of more than one byte, never at address 1).
fn closed() -> *mut Entry {
    ptr::without_provenance_mut(1)
}

/// A place a park has reserved and not yet shown its message in: no
/// entry's address either (entries are aligned to more than two bytes).
fn reserved() -> *mut Entry {
    ptr::without_provenance_mut(2)
}

/// Whether a place's word holds a parked message: neither empty, closed
/// nor reserved.
fn is_message(word: *mut Entry) -> bool {
    !word.is_null() && word != closed() && word != reserved()
}

/// An owner count's low half: the count.
const COUNT: u64 = (1 << 32) - 1;
/// One step of an owner count's high half: the version.
const VERSION: u64 = 1 << 32;

/// One spot: its parked messages and its threads' counts.
pub(crate) struct Spot {
    places: [AtomicPtr<Entry>; PLACES],
    /// Each place's message's tick, or an earlier one (ground rules).
    ticks: [AtomicU64; PLACES],
    /// The place after the one last parked in: where a park starts to look.
    next: AtomicU8,
    /// `TimerService` clones counted here, below a version (ground rules).
    owners: AtomicU64,
    scheduled: AtomicU64,
    cancelled: AtomicU64,
    released: AtomicU64,
    dead: AtomicU64,
    waits: AtomicU64,
}

impl Default for Spot {
    fn default() -> Self {
        Self {
            places: core::array::from_fn(|_| AtomicPtr::default()),
            ticks: core::array::from_fn(|_| AtomicU64::default()),
            next: AtomicU8::default(),
            owners: AtomicU64::default(),
            scheduled: AtomicU64::default(),
            cancelled: AtomicU64::default(),
            released: AtomicU64::default(),
            dead: AtomicU64::default(),
            waits: AtomicU64::default(),
        }
    }
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

    /// Parks `message`, a new timer's due at `tick`, on its owner's thread,
    /// in an empty place of spot `index`, looking at [`PROBES`] places from
    /// the one after the place last parked in; if none is empty (taken, or
    /// closed), hands it back, for the caller to queue.
    #[inline]
    pub(crate) fn park(&self, index: usize, message: EntryRef, tick: u64) -> Result<(), EntryRef> {
        let spot = self.spot(index);
        let ptr = message.as_ptr();
        let start = usize::from(spot.next.load(Ordering::Relaxed));
        for i in (start..start + PROBES).map(|i| i % PLACES) {
            let place = &spot.places[i];
            // A plain load first: a taken place costs no locked instruction.
            if !place.load(Ordering::Relaxed).is_null() {
                continue;
            }
            // Recorded while this thread alone holds the message; only the
            // entry's owner reads it, in a cancel or a move after this call.
            message.set_place(i as u8);
            if place
                .compare_exchange(
                    ptr::null_mut(),
                    reserved(),
                    Ordering::AcqRel,
                    Ordering::Relaxed,
                )
                .is_ok()
            {
                // Reserved: no other park writes the place or its tick until
                // the message shows, after its tick (ground rules).
                spot.ticks[i].store(tick, Ordering::Relaxed);
                let _ = message.into_raw();
                place.store(ptr, Ordering::Release);
                spot.next.store(((i + 1) % PLACES) as u8, Ordering::Relaxed);
                return Ok(());
            }
            // Lost to another thread of the spot or to a close: the next place.
        }
        Err(message)
    }

    /// Takes `entry`'s message back if it is still parked in spot `index`
    /// (in the place it records); returns whether it did.
    #[inline]
    pub(crate) fn retract(&self, index: usize, entry: &Entry) -> bool {
        let ptr = ptr::from_ref(entry).cast_mut();
        let spot = self.spot(index);
        let i = entry.place();
        let place = &spot.places[i];
        // A plain load first: a locked instruction only if the place holds
        // it (it does unless the spot was full or the driver took it).
        if place.load(Ordering::Relaxed) != ptr {
            return false;
        }
        // Lost, the driver took it meanwhile: an entry has one message on
        // its way at most, so it is in no other place.
        let Ok(taken) =
            place.compare_exchange(ptr, ptr::null_mut(), Ordering::AcqRel, Ordering::Relaxed)
        else {
            return false;
        };
        // The next park starts at the place just emptied, whatever order
        // the requests are answered in.
        spot.next.store(i as u8, Ordering::Relaxed);
        // SAFETY: the exchange made this thread the taker of the reference
        // the place held, which `park` gave up by `into_raw`. `taken`, not
        // `ptr`: it is the pointer `into_raw` gave, to the whole allocation.
        drop(unsafe { EntryRef::from_raw(taken) });
        true
    }

    /// The owner of `entry`, whose message may be parked in spot `index`,
    /// moved it to `tick`: lowers the place's tick to it if the place still
    /// holds the message, so that the driver does not leave it parked past
    /// `tick`. A lower tick left on a message parked there since is harmless:
    /// the driver takes that one early.
    pub(crate) fn lower(&self, index: usize, entry: &Entry, tick: u64) {
        let spot = self.spot(index);
        let i = entry.place();
        if spot.places[i].load(Ordering::Relaxed) == ptr::from_ref(entry).cast_mut() {
            spot.ticks[i].fetch_min(tick, Ordering::Relaxed);
        }
    }

    /// Driver: takes every parked message whose place's tick is at most
    /// `due_by`, in spot order; returns how many it took, and whether it
    /// left any.
    pub(crate) fn sweep(&self, due_by: u64, mut take: impl FnMut(EntryRef)) -> (usize, bool) {
        let (mut taken, mut left) = (0, false);
        for (place, tick) in self.places() {
            // Acquire: the tick read next is this message's or lower, or,
            // should this one have left since, a later message's.
            let seen = place.load(Ordering::Acquire);
            if !is_message(seen) {
                continue;
            }
            if tick.load(Ordering::Relaxed) > due_by {
                left = true;
                continue;
            }
            // An exchange, not a swap: the place may have been taken back
            // and reserved by another park since (left to that park), or
            // taken back and given a new message (left to the next round,
            // unless its entry has the address of the one seen: then taken
            // now, early, which is harmless).
            let exchanged =
                place.compare_exchange(seen, ptr::null_mut(), Ordering::AcqRel, Ordering::Relaxed);
            if let Ok(ptr) = exchanged {
                // SAFETY: as in `retract`: the exchange took the reference
                // the place held (ground rules). `ptr`, not `seen`: the
                // pointer the place holds now, whatever was freed since.
                take(unsafe { EntryRef::from_raw(ptr) });
                taken += 1;
            }
        }
        (taken, left)
    }

    /// Driver, at shutdown: closes every place, taking what was parked.
    /// A place reserved by a park is closed once its message shows: between
    /// the two a park runs no user code, takes no lock and cannot panic.
    pub(crate) fn close(&self, mut take: impl FnMut(EntryRef)) {
        for (place, _) in self.places() {
            let backoff = Backoff::new();
            let ptr = loop {
                let word = place.load(Ordering::Acquire);
                if word == reserved() {
                    backoff.snooze();
                    continue;
                }
                if (place.compare_exchange(word, closed(), Ordering::AcqRel, Ordering::Acquire))
                    .is_ok()
                {
                    break word;
                }
            };
            if is_message(ptr) {
                // SAFETY: as in `retract`: the exchange took the reference
                // the place held (ground rules).
                take(unsafe { EntryRef::from_raw(ptr) });
            }
        }
    }

    /// Whether any message is parked whose place's tick is at most
    /// `due_by` (a snapshot).
    pub(crate) fn any_parked(&self, due_by: u64) -> bool {
        self.places().any(|(place, tick)| {
            is_message(place.load(Ordering::Acquire)) && tick.load(Ordering::Relaxed) <= due_by
        })
    }

    /// Every place of every spot, with its tick.
    fn places(&self) -> impl Iterator<Item = (&AtomicPtr<Entry>, &AtomicU64)> {
        (self.spots.iter()).flat_map(|spot| spot.places.iter().zip(spot.ticks.iter()))
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
        self.sweep(u64::MAX, drop);
    }
}

#[cfg(all(test, not(loom)))]
mod tests;

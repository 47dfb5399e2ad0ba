//! The cascading wheel: insert, cancel, reschedule, advance and drain over a
//! [`Storage`] of entries linked into per-slot lists.
//!
//! # Ground rules
//!
//! - A pending timer is on exactly one list, and which one is a function of
//!   the clock and its deadline (`Geometry::place`): a due list iff its
//!   deadline is ≤ `now`; else on level `k`, the most significant digit in
//!   which its deadline differs from `now`, in the slot of its deadline's
//!   digit there. Within a slot (and among the due lists) it is on list
//!   `index % STRIPES` (four lists a slot for a growable wheel, one for a
//!   fixed one: `Heads`). Nothing records where an entry is: `unlink`
//!   computes it again, so every move of the clock must keep each
//!   placement true.
//! - The clock only moves forward, and never past the start of an occupied
//!   slot: `step` stops there, takes the whole slot, then files each of its
//!   timers again relative to the new clock, onto a due list or a strictly
//!   lower level. Every occupied slot lies after the clock's slot on its
//!   level, so the lowest occupied level's first slot is the earliest, and
//!   moving the clock up to its start leaves every other placement true.
//!   Once that slot is taken, nothing is filed before its end, so a caller
//!   that fires what is due in any order (`pop_expired`) lets the clock go
//!   on within it to the target at once.
//! - Bits: a slot's occupied bit is set iff one of its lists is not empty,
//!   and a level's bit in `occupied_levels` iff one of its slots is
//!   occupied; the one exception is the slot being staged, which stays
//!   occupied while it holds staged timers (see `stage`).
//! - Links: the lists run through the slab's links by `u32` index, doubly
//!   linked, ending in `NIL`, a head's `prev` being `NIL`; only taking off
//!   a head touches the tables.
//! - Counts: the live and the staged tables hold `len()` timers between
//!   them, and every other slab entry is on the free list.
//!
//! [`TimerWheel::validate`] checks each of these.

use core::fmt;

use crate::geometry::Geometry;
use crate::level::{stripe_of, Heads};
use crate::slab::{Link, Sealed, Slab, Storage, TimerId, NIL};
use crate::stage::Stage;
use crate::tables::Tables;
use crate::ArrayStorage;
use crate::Full;
#[cfg(feature = "alloc")]
use crate::VecStorage;

/// The heads of a slot's lists in a wheel over storage `S`.
type HeadsOf<T, S> = <S as Sealed<T>>::Heads;

/// A timer that came due, as yielded by [`advance`](TimerWheel::advance) and
/// [`drain`](TimerWheel::drain).
///
/// # Examples
/// ```
/// use wheel_core::Wheel;
///
/// let mut wheel = Wheel::new();
/// let id = wheel.insert(3, 'x');
/// let expired = wheel.advance(3).next().unwrap();
/// assert_eq!((expired.id, expired.deadline, expired.value), (id, 3, 'x'));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Expired<T> {
    /// The timer's id, stale from now on.
    pub id: TimerId,
    /// The tick it was due at.
    pub deadline: u64,
    /// What was stored with it.
    pub value: T,
}

/// Where a wheel's earliest pending deadline lies (see `TimerWheel::earliest`).
pub(crate) enum Earliest<H> {
    /// No timer is pending.
    Empty,
    /// Timers are due: the least deadline is on the due lists, these.
    Due(H),
    /// The earliest timers are all due at this tick.
    At(u64),
    /// The earliest timer is in the slot spanning `start ..= last`, on
    /// these lists.
    InSlot { start: u64, last: u64, heads: H },
}

/// A hierarchical timing wheel over a [`Storage`] `S`, with `SLOTS` slots
/// per level and `LEVELS` levels. Use it through [`Wheel`] (growable) or
/// [`FixedWheel`] (fixed capacity, no allocation).
///
/// See the [crate docs](crate) for the design and the promises.
///
/// # Examples
/// ```
/// use wheel_core::Wheel;
///
/// let mut wheel = Wheel::new();
/// wheel.insert(100, "late");
/// wheel.insert(10, "early");
/// let fired: Vec<_> = wheel.advance(100).map(|e| e.value).collect();
/// assert_eq!(fired, ["early", "late"]);
/// ```
pub struct TimerWheel<T, S: Storage<T>, const SLOTS: usize = 64, const LEVELS: usize = 11> {
    now: u64,
    /// The slots of every level, and the due lists: timers whose deadline
    /// is ≤ `now`, which the next `advance` yields first.
    tables: Tables<SLOTS, LEVELS, HeadsOf<T, S>>,
    /// The due list `pop_due` tries first.
    due_cursor: usize,
    /// The next slot to cascade, filed ahead of time (see `cascade_ahead`).
    stage: Stage<SLOTS, LEVELS, HeadsOf<T, S>>,
    slab: Slab<T, S>,
}

/// A growable wheel: entries live in a `Vec`, so [`insert`](Wheel::insert)
/// never fails. The default geometry is 64 slots × 11 levels.
///
/// # Examples
/// ```
/// use wheel_core::Wheel;
///
/// let mut wheel = Wheel::starting_at(1_000);
/// let id = wheel.insert(1_500, "retry");
/// assert_eq!(wheel.deadline(id), Some(1_500));
/// assert!(wheel.advance(1_499).next().is_none());
/// assert_eq!(wheel.advance(1_500).next().unwrap().value, "retry");
/// ```
#[cfg(feature = "alloc")]
#[cfg_attr(docsrs, doc(cfg(feature = "alloc")))]
pub type Wheel<T, const SLOTS: usize = 64, const LEVELS: usize = 11> =
    TimerWheel<T, VecStorage<T>, SLOTS, LEVELS>;

/// A wheel with room for exactly `N` timers, stored inline: it never
/// allocates, and [`try_insert`](TimerWheel::try_insert) hands the value back
/// in [`Full`] when all `N` are pending.
///
/// **Memory.** With `P` the pointer size (4 or 8 bytes),
/// `size_of::<FixedWheel<T, N, SLOTS, LEVELS>>()` is, rounded up to the
/// alignment of a `u64` (8; 4 on i686):
///
/// - per wheel: `LEVELS × (8 + 4 × SLOTS)` for the level tables (a word
///   of occupied bits and one 4-byte list head a slot), plus 72 bytes on a
///   64-bit target, 64 on a 32-bit ARM core (Cortex-M) and 56 on i686,
///   whose `u64` is aligned to 4 (the clock, the word of occupied
///   levels, the due list, the due cursor, the staging pointer, the slab's
///   counts and padding; one pointer less without the `alloc` feature);
/// - per timer: `16 + E`: the deadline and two links, then the entry,
///   `E` = `size_of::<T>() + 8` (a tag and a generation) rounded up to
///   `T`'s alignment (at least 4), and at least 12; for a `T` with a niche
///   the tag can use (a reference, a [`Waker`](core::task::Waker)),
///   `size_of::<T>() + 4` rounded up. (A `T` aligned to less than 4 may
///   pack tighter than this.)
///
/// | 64 slots × 11 levels | per wheel | per `u32` timer | per `u64` timer | per `Waker` |
/// |----------------------|-----------|-----------------|-----------------|-------------|
/// | 64-bit target        | 2 976 B   | 28 B            | 32 B            | 40 B        |
/// | Cortex-M (32-bit)    | 2 968 B   | 28 B            | 32 B            | 28 B        |
/// | i686                 | 2 960 B   | 28 B            | 32 B            | 28 B        |
///
/// A smaller geometry shrinks the tables: 8 slots × 22 levels take 880 B
/// instead of 2 904 B. A growable [`Wheel`] keeps four lists a slot (its
/// cascades walk them in lockstep, so that cache misses overlap); a fixed
/// wheel keeps one, as it is small enough to stay in cache or runs on a
/// core without one: a quarter of the tables, and fewer lists to look at.
/// `tests/memory.rs` pins these figures on the host and on i686, and
/// `ci/qemu.sh` on a Cortex-M4.
///
/// # Examples
/// ```
/// use wheel_core::FixedWheel;
///
/// let mut wheel: FixedWheel<u8, 1> = FixedWheel::new();
/// let id = wheel.try_insert(5, 1).unwrap();
/// assert_eq!(wheel.try_insert(6, 2).unwrap_err().into_inner(), 2);
/// wheel.cancel(id);
/// assert!(wheel.try_insert(6, 2).is_ok());
/// ```
pub type FixedWheel<T, const N: usize, const SLOTS: usize = 64, const LEVELS: usize = 11> =
    TimerWheel<T, ArrayStorage<T, N>, SLOTS, LEVELS>;

#[cfg(feature = "alloc")]
#[cfg_attr(docsrs, doc(cfg(feature = "alloc")))]
impl<T> TimerWheel<T, VecStorage<T>> {
    /// An empty growable wheel whose clock starts at tick 0.
    ///
    /// # Examples
    /// ```
    /// let wheel = wheel_core::Wheel::<()>::new();
    /// assert_eq!((wheel.now(), wheel.len()), (0, 0));
    /// ```
    pub fn new() -> Self {
        Self::with_geometry(0)
    }

    /// An empty wheel at tick 0 with room for `capacity` timers before it
    /// reallocates.
    ///
    /// # Examples
    /// ```
    /// let mut wheel = wheel_core::Wheel::with_capacity(1024);
    /// wheel.insert(1, ());
    /// assert_eq!(wheel.len(), 1);
    /// ```
    pub fn with_capacity(capacity: usize) -> Self {
        Self::with_storage(VecStorage::with_capacity(capacity), 0)
    }

    /// An empty wheel whose clock starts at `now`.
    ///
    /// # Examples
    /// ```
    /// let wheel = wheel_core::Wheel::<()>::starting_at(u64::MAX - 5);
    /// assert_eq!(wheel.now(), u64::MAX - 5);
    /// ```
    pub fn starting_at(now: u64) -> Self {
        Self::with_geometry(now)
    }
}

#[cfg(feature = "alloc")]
#[cfg_attr(docsrs, doc(cfg(feature = "alloc")))]
impl<T> Default for TimerWheel<T, VecStorage<T>> {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(feature = "alloc")]
#[cfg_attr(docsrs, doc(cfg(feature = "alloc")))]
impl<T, const SLOTS: usize, const LEVELS: usize> TimerWheel<T, VecStorage<T>, SLOTS, LEVELS> {
    /// Inserts a timer due at `deadline` (a deadline ≤ [`now`](Self::now) is
    /// due at once) and returns its id.
    ///
    /// # Panics
    /// If the wheel already holds `u32::MAX - 1` timers (about 4 billion);
    /// use [`try_insert`](Self::try_insert) to get [`Full`] instead.
    ///
    /// # Examples
    /// ```
    /// let mut wheel = wheel_core::Wheel::new();
    /// let id = wheel.insert(u64::MAX, "never, practically");
    /// assert_eq!(wheel.get(id), Some(&"never, practically"));
    /// ```
    #[track_caller]
    pub fn insert(&mut self, deadline: u64, value: T) -> TimerId {
        match self.try_insert(deadline, value) {
            Ok(id) => id,
            Err(_) => panic!("timer wheel holds u32::MAX - 1 timers"),
        }
    }

    /// Reserves room for at least `additional` more timers.
    ///
    /// # Examples
    /// ```
    /// let mut wheel = wheel_core::Wheel::<u8>::new();
    /// wheel.reserve(100);
    /// assert!(wheel.capacity() >= 100);
    /// ```
    pub fn reserve(&mut self, additional: usize) {
        self.slab.storage_mut().reserve(additional);
    }

    /// Gives back the memory of the entries freed past the last pending
    /// timer: after a burst has drained, the storage shrinks to what the
    /// timers still pending need. Ids of pending timers are unchanged and
    /// stale ids stay inert. A timer pending at a high index keeps the
    /// storage up to it, and so does a vacant stretch past the last pending
    /// timer shorter than what is kept (only the spare capacity goes then):
    /// a call costs O(the vacant stretch), plus O(capacity) only when it
    /// gives back at least half or reallocates to drop spare capacity (once
    /// per growth), so trying it often while timers drain stays cheap.
    ///
    /// # Examples
    /// ```
    /// let mut wheel = wheel_core::Wheel::new();
    /// let keep = wheel.insert(1_000, "keep");
    /// let burst: Vec<_> = (0..10_000).map(|t| wheel.insert(t, "burst")).collect();
    /// for id in burst {
    ///     wheel.cancel(id);
    /// }
    /// wheel.shrink_to_fit();
    /// assert!(wheel.capacity() < 100);
    /// assert_eq!(wheel.cancel(keep), Some("keep"));
    /// ```
    pub fn shrink_to_fit(&mut self) {
        self.slab.shrink_to_fit();
    }
}

impl<T, const N: usize> TimerWheel<T, ArrayStorage<T, N>> {
    /// An empty fixed wheel whose clock starts at tick 0. `const`, so a
    /// wheel can be a `static`.
    ///
    /// # Examples
    /// ```
    /// let wheel = wheel_core::FixedWheel::<u8, 16>::new();
    /// assert_eq!(wheel.capacity(), 16);
    /// ```
    pub const fn new() -> Self {
        Self::fixed(0)
    }

    /// An empty fixed wheel whose clock starts at `now`.
    ///
    /// # Examples
    /// ```
    /// let wheel = wheel_core::FixedWheel::<u8, 16>::starting_at(42);
    /// assert_eq!(wheel.now(), 42);
    /// ```
    pub const fn starting_at(now: u64) -> Self {
        Self::fixed(now)
    }
}

impl<T, const N: usize, const SLOTS: usize, const LEVELS: usize>
    TimerWheel<T, ArrayStorage<T, N>, SLOTS, LEVELS>
{
    /// An empty fixed wheel of any geometry at `now`, in a `const` context.
    pub(crate) const fn fixed(now: u64) -> Self {
        let () = Geometry::<SLOTS, LEVELS>::CHECK;
        Self {
            now,
            tables: Tables::EMPTY,
            due_cursor: 0,
            stage: Stage::NONE,
            slab: Slab::new(ArrayStorage::new()),
        }
    }
}

impl<T, const N: usize> Default for TimerWheel<T, ArrayStorage<T, N>> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T, S: Storage<T> + Default, const SLOTS: usize, const LEVELS: usize>
    TimerWheel<T, S, SLOTS, LEVELS>
{
    /// An empty wheel of any geometry, its clock at `now`. `SLOTS` must be a
    /// power of two from 2 to 64 and `LEVELS` = ⌈64 / log2(SLOTS)⌉, checked at
    /// compile time.
    ///
    /// # Examples
    /// ```
    /// use wheel_core::{FixedWheel, Wheel};
    ///
    /// let small: Wheel<u32, 8, 22> = Wheel::with_geometry(0);
    /// let tiny: FixedWheel<u32, 4, 2, 64> = FixedWheel::with_geometry(7);
    /// assert_eq!((small.now(), tiny.now()), (0, 7));
    /// ```
    pub fn with_geometry(now: u64) -> Self {
        Self::with_storage(S::default(), now)
    }
}

impl<T, S: Storage<T>, const SLOTS: usize, const LEVELS: usize> TimerWheel<T, S, SLOTS, LEVELS> {
    fn with_storage(storage: S, now: u64) -> Self {
        let () = Geometry::<SLOTS, LEVELS>::CHECK;
        Self {
            now,
            tables: Tables::EMPTY,
            due_cursor: 0,
            stage: Stage::NONE,
            slab: Slab::new(storage),
        }
    }

    /// The wheel's current tick: the largest `now` passed to
    /// [`advance`](Self::advance), or where it started.
    ///
    /// # Examples
    /// ```
    /// let mut wheel = wheel_core::Wheel::<()>::new();
    /// wheel.advance(10);
    /// wheel.advance(5); // time never goes backwards
    /// assert_eq!(wheel.now(), 10);
    /// ```
    #[inline]
    pub fn now(&self) -> u64 {
        self.now
    }

    /// How many timers are pending.
    ///
    /// # Examples
    /// ```
    /// let mut wheel = wheel_core::Wheel::new();
    /// wheel.insert(1, ());
    /// assert_eq!(wheel.len(), 1);
    /// ```
    #[inline]
    pub fn len(&self) -> usize {
        self.slab.len()
    }

    /// Whether no timer is pending.
    ///
    /// # Examples
    /// ```
    /// assert!(wheel_core::Wheel::<()>::new().is_empty());
    /// ```
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.slab.len() == 0
    }

    /// How many timers fit without the storage growing (for a
    /// [`FixedWheel`], exactly `N`).
    ///
    /// # Examples
    /// ```
    /// assert_eq!(wheel_core::FixedWheel::<(), 3>::new().capacity(), 3);
    /// ```
    pub fn capacity(&self) -> usize {
        self.slab.storage().capacity()
    }

    /// Inserts a timer due at `deadline`, or hands `value` back in [`Full`]
    /// when there is no room. A deadline ≤ [`now`](Self::now) is due at once:
    /// the next [`advance`](Self::advance) yields it. Any `u64` is a valid
    /// deadline; none is clamped. O(1).
    ///
    /// # Examples
    /// ```
    /// let mut wheel = wheel_core::FixedWheel::<&str, 1>::starting_at(50);
    /// wheel.try_insert(10, "in the past").unwrap();
    /// assert_eq!(wheel.advance(50).next().unwrap().value, "in the past");
    /// ```
    #[inline]
    pub fn try_insert(&mut self, deadline: u64, value: T) -> Result<TimerId, Full<T>> {
        let id = self.slab.insert(deadline, value).map_err(Full)?;
        self.link(id.index, deadline);
        Ok(id)
    }

    /// Cancels a pending timer and returns its value; `None` if `id` is stale
    /// (fired, cancelled or drained). O(1).
    ///
    /// # Examples
    /// ```
    /// let mut wheel = wheel_core::Wheel::new();
    /// let id = wheel.insert(9, "req-1 timeout");
    /// assert_eq!(wheel.cancel(id), Some("req-1 timeout"));
    /// assert!(wheel.advance(100).next().is_none());
    /// ```
    #[inline]
    pub fn cancel(&mut self, id: TimerId) -> Option<T> {
        let index = self.slab.index_of(id)?;
        self.unlink(index);
        Some(self.slab.remove(index)?.value)
    }

    /// Moves a pending timer to a new deadline (≤ [`now`](Self::now): due at
    /// once), keeping its id; `false` if `id` is stale. O(1).
    ///
    /// # Examples
    /// ```
    /// let mut wheel = wheel_core::Wheel::new();
    /// let id = wheel.insert(10, ());
    /// assert!(wheel.reschedule(id, 20));
    /// assert!(wheel.advance(19).next().is_none());
    /// assert_eq!(wheel.advance(20).next().unwrap().id, id);
    /// ```
    #[inline]
    pub fn reschedule(&mut self, id: TimerId, deadline: u64) -> bool {
        let Some(index) = self.slab.index_of(id) else {
            return false;
        };
        self.unlink(index);
        self.slab.link_mut(index).deadline = deadline;
        self.link(index, deadline);
        true
    }

    /// A pending timer's deadline; `None` if `id` is stale.
    ///
    /// # Examples
    /// ```
    /// let mut wheel = wheel_core::Wheel::new();
    /// let id = wheel.insert(77, ());
    /// assert_eq!(wheel.deadline(id), Some(77));
    /// ```
    #[inline]
    pub fn deadline(&self, id: TimerId) -> Option<u64> {
        let index = self.slab.index_of(id)?;
        Some(self.slab.link(index).deadline)
    }

    /// A pending timer's value; `None` if `id` is stale.
    ///
    /// # Examples
    /// ```
    /// let mut wheel = wheel_core::Wheel::new();
    /// let id = wheel.insert(1, "v");
    /// assert_eq!(wheel.get(id), Some(&"v"));
    /// ```
    #[inline]
    pub fn get(&self, id: TimerId) -> Option<&T> {
        self.slab.get(id)
    }

    /// The id of the timer pending at slab index `index` (see
    /// [`TimerId::index`]), or `None` if no timer is kept there. The id
    /// names whichever timer is there now: an index kept past its timer's
    /// end may name a newer one, which the full id never does.
    ///
    /// # Examples
    /// ```
    /// let mut wheel = wheel_core::Wheel::new();
    /// let id = wheel.insert(1, "v");
    /// assert_eq!(wheel.id_at(id.index()), Some(id));
    /// wheel.cancel(id);
    /// assert_eq!(wheel.id_at(id.index()), None);
    /// ```
    #[inline]
    pub fn id_at(&self, index: u32) -> Option<TimerId> {
        self.slab.id_at(index)
    }

    /// A pending timer's value, mutably; `None` if `id` is stale.
    ///
    /// # Examples
    /// ```
    /// let mut wheel = wheel_core::Wheel::new();
    /// let id = wheel.insert(1, 1);
    /// *wheel.get_mut(id).unwrap() += 1;
    /// assert_eq!(wheel.cancel(id), Some(2));
    /// ```
    #[inline]
    pub fn get_mut(&mut self, id: TimerId) -> Option<&mut T> {
        self.slab.get_mut(id)
    }

    /// Moves the clock to `max(now, self.now())` and yields every timer with
    /// deadline ≤ that: first those already due (in any order), then the rest
    /// in non-decreasing deadline order. Never early.
    ///
    /// The work is lazy and O(1) per step: each `next()` cascades at most one
    /// slot. Dropping the iterator early loses nothing: the clock still moves
    /// to `now`, and the timers it did not yield stay pending, already due,
    /// and come out first from the next `advance`.
    ///
    /// # Examples
    /// ```
    /// let mut wheel = wheel_core::Wheel::new();
    /// for t in [30, 10, 20] {
    ///     wheel.insert(t, t);
    /// }
    /// let mut fired = wheel.advance(25);
    /// assert_eq!(fired.next().map(|e| e.deadline), Some(10));
    /// drop(fired); // 20 stays pending, already due
    /// assert_eq!(wheel.now(), 25);
    /// let rest: Vec<_> = wheel.advance(30).map(|e| e.deadline).collect();
    /// assert_eq!(rest, [20, 30]);
    /// ```
    pub fn advance(&mut self, now: u64) -> Advance<'_, T, S, SLOTS, LEVELS> {
        Advance {
            wheel: self,
            target: now,
        }
    }

    /// When to call [`advance`](Self::advance) next: `None` iff the wheel is
    /// empty; otherwise a tick `t` with `now() ≤ t ≤ max(now(), earliest
    /// deadline)` at which `advance(t)` makes progress. It is exactly the
    /// earliest deadline unless that timer sits on a higher level, in which
    /// case it is the start of its slot, where it cascades down. O(1).
    ///
    /// A driver that loops `advance(next_expiration())` sees every timer come
    /// out of the call whose argument equals its deadline, and wakes at most
    /// `LEVELS + 1` times per timer.
    ///
    /// # Examples
    /// ```
    /// let mut wheel = wheel_core::Wheel::new();
    /// assert_eq!(wheel.next_expiration(), None);
    /// wheel.insert(40, ());
    /// assert_eq!(wheel.next_expiration(), Some(40));
    /// ```
    #[inline]
    pub fn next_expiration(&self) -> Option<u64> {
        if self.tables.due != Heads::EMPTY {
            return Some(self.now);
        }
        self.next_slot().map(|(_, _, start)| start)
    }

    /// Removes every pending timer, yielding each (in no particular order).
    /// The wheel is empty afterwards, even if the iterator is dropped early;
    /// the clock does not move.
    ///
    /// # Examples
    /// ```
    /// let mut wheel = wheel_core::Wheel::new();
    /// wheel.insert(1, 'a');
    /// wheel.insert(u64::MAX, 'b');
    /// let mut values: Vec<_> = wheel.drain().map(|e| e.value).collect();
    /// values.sort();
    /// assert_eq!(values, ['a', 'b']);
    /// assert!(wheel.is_empty());
    /// ```
    pub fn drain(&mut self) -> Drain<'_, T, S, SLOTS, LEVELS> {
        // Unhook every list first: the entries are then only slab entries.
        self.tables = Tables::EMPTY;
        self.stage.reset();
        Drain {
            wheel: self,
            index: 0,
        }
    }

    /// Cascades ahead: files up to `max` timers of the next slot to cascade
    /// (on level 1 or above) where they will go when the clock reaches the
    /// slot's start, and returns how many it moved; 0 once that slot is
    /// done or when there is none. When the slot's time comes, `advance`
    /// then swaps the prepared levels in at O(levels × slots) cost instead
    /// of walking every timer in it: a slot holding a million timers stalls
    /// a driver for tens of milliseconds, a prepared one for microseconds.
    ///
    /// A driver calls this with small `max` while it would otherwise be idle;
    /// nothing else changes: every promise holds whether or not, and however
    /// far, it cascaded ahead. The staging tables (the size of the wheel's
    /// own level tables, about 11 KiB for a growable 64 × 11 wheel) are
    /// allocated on first use.
    ///
    /// # Examples
    /// ```
    /// let mut wheel = wheel_core::Wheel::new();
    /// for t in 5_000..5_100 {
    ///     wheel.insert(t, t); // all on level 2, in the slot starting at 4096
    /// }
    /// assert_eq!(wheel.cascade_ahead(60), 60);
    /// assert_eq!(wheel.cascade_ahead(1_000), 40);
    /// assert_eq!(wheel.cascade_ahead(1_000), 0); // that slot is ready
    /// assert_eq!(wheel.next_expiration(), Some(4_096));
    /// let fired: Vec<u64> = wheel.advance(5_099).map(|e| e.deadline).collect();
    /// assert_eq!(fired, (5_000..5_100).collect::<Vec<_>>());
    /// ```
    #[cfg(feature = "alloc")]
    #[cfg_attr(docsrs, doc(cfg(feature = "alloc")))]
    pub fn cascade_ahead(&mut self, max: usize) -> usize {
        let now = self.now;
        let area = self.stage.area();
        if area.level == 0 {
            let Some((level, slot)) = self.tables.first_slot(!1) else {
                return 0;
            };
            area.level = level;
            area.slot = slot;
            area.start = Geometry::<SLOTS, LEVELS>::slot_start(now, level, slot);
        }
        let heads = self.tables.level_mut(area.level).slot_mut(area.slot);
        let mut moved = 0;
        while moved < max && *heads != Heads::EMPTY {
            for head in heads.lists_mut() {
                let index = *head;
                if index != NIL && moved < max {
                    Self::pop_front(&mut self.slab, head);
                    let deadline = self.slab.link(index).deadline;
                    Self::push_front(&mut self.slab, area.head_for(index, deadline), index);
                    moved += 1;
                }
            }
        }
        moved
    }

    /// Removes every pending timer, dropping the values.
    ///
    /// # Examples
    /// ```
    /// let mut wheel = wheel_core::Wheel::new();
    /// wheel.insert(1, ());
    /// wheel.clear();
    /// assert!(wheel.is_empty());
    /// ```
    pub fn clear(&mut self) {
        self.drain();
    }

    /// Checks every internal invariant (the ground rules of the wheel's
    /// source, `wheel.rs`). O(capacity); for tests and fuzzing.
    ///
    /// # Panics
    /// If an invariant is broken, with a message naming it and the state.
    ///
    /// # Examples
    /// ```
    /// let mut wheel = wheel_core::Wheel::new();
    /// wheel.insert(1 << 40, ());
    /// wheel.validate();
    /// ```
    pub fn validate(&self) {
        let staged = self.stage.active();
        // The staged slot stays occupied while it holds staged timers.
        let kept = staged
            .filter(|st| !st.is_empty())
            .map(|st| (st.level, st.slot));
        let mut linked = self.validate_tables(&self.tables, self.now, kept, "live");
        if let Some(st) = staged {
            assert!(
                st.start > self.now && self.tables.is_occupied(st.level, st.slot),
                "staging for level {} slot {} (start {}) at now {}, slot occupied: {}",
                st.level,
                st.slot,
                st.start,
                self.now,
                self.tables.is_occupied(st.level, st.slot)
            );
            assert!(
                st.tables.occupied_levels >> st.level == 0,
                "staged levels {:#b} at or above the staged slot's level {}",
                st.tables.occupied_levels,
                st.level
            );
            linked += self.validate_tables(&st.tables, st.start, None, "staged");
        }
        assert_eq!(
            linked,
            self.len(),
            "lists hold {linked}, len is {}",
            self.len()
        );
        assert_eq!(
            self.slab.free_count() + self.len(),
            self.slab.entries_len(),
            "free list + pending != entries"
        );
    }

    /// Checks one set of tables placed relative to clock `at`: bitmaps match
    /// the heads (slot `kept` may be occupied with empty lists), occupied
    /// slots lie after `at`'s, and every list holds what belongs there.
    /// Returns how many timers they hold.
    fn validate_tables(
        &self,
        tables: &Tables<SLOTS, LEVELS, HeadsOf<T, S>>,
        at: u64,
        kept: Option<(usize, usize)>,
        what: &str,
    ) -> usize {
        let mut linked = 0;
        for (stripe, &head) in tables.due.lists().iter().enumerate() {
            linked += self.validate_list(head, at, None, stripe);
        }
        for (level, lvl) in tables.levels.iter().enumerate() {
            assert_eq!(
                tables.occupied_levels & (1 << level) != 0,
                lvl.occupied != 0,
                "{what}: occupied_levels {:#b} disagrees with level {level} bitmap {:#x}",
                tables.occupied_levels,
                lvl.occupied
            );
            let at_slot = Geometry::<SLOTS, LEVELS>::slot_for(at, level);
            for (slot, heads) in lvl.heads.iter().enumerate() {
                let occupied = *heads != Heads::EMPTY || kept == Some((level, slot));
                assert_eq!(
                    lvl.occupied & (1 << slot) != 0,
                    occupied,
                    "{what}: level {level} slot {slot}: bitmap {:#x} vs heads {heads:?}",
                    lvl.occupied
                );
                assert!(
                    !occupied || slot > at_slot,
                    "{what}: level {level} slot {slot} occupied at or behind clock {at} (slot {at_slot})"
                );
                for (stripe, &head) in heads.lists().iter().enumerate() {
                    linked += self.validate_list(head, at, Some((level, slot)), stripe);
                }
            }
        }
        linked
    }

    /// Checks one list's links and placement (relative to clock `at`);
    /// returns its length.
    fn validate_list(
        &self,
        head: u32,
        at: u64,
        place: Option<(usize, usize)>,
        stripe: usize,
    ) -> usize {
        let mut count = 0;
        let mut prev = NIL;
        let mut index = head;
        while index != NIL {
            assert!(
                self.slab.is_occupied(index as usize),
                "entry {index} is linked but vacant"
            );
            let node = self.slab.link(index);
            assert_eq!(node.prev, prev, "entry {index}: prev link broken");
            assert_eq!(
                stripe_of::<HeadsOf<T, S>>(index),
                stripe,
                "entry {index} is on list {stripe} of {place:?}"
            );
            assert_eq!(
                Geometry::<SLOTS, LEVELS>::place(at, node.deadline),
                place,
                "entry {index} (deadline {}) is in list {place:?} at clock {at}",
                node.deadline,
            );
            count += 1;
            assert!(count <= self.len(), "list at {place:?} loops");
            prev = index;
            index = node.next;
        }
        count
    }

    /// The list a deadline belongs on: `None` for the due list, else (level, slot).
    #[inline(always)]
    fn place_of(&self, deadline: u64) -> Option<(usize, usize)> {
        Geometry::<SLOTS, LEVELS>::place(self.now, deadline)
    }

    /// The earliest occupied slot: the lowest occupied level's first slot
    /// (every occupied slot lies strictly after `now`'s slot on its level, and
    /// a lower level's slots all end before a higher level's next one starts).
    #[inline]
    fn next_slot(&self) -> Option<(usize, usize, u64)> {
        let (level, slot) = self.tables.first_slot(u64::MAX)?;
        Some((
            level,
            slot,
            Geometry::<SLOTS, LEVELS>::slot_start(self.now, level, slot),
        ))
    }

    /// The value pending at slab index `index`, for a caller that keeps
    /// indexes of pending timers (as `id_at` then `get`, in one lookup).
    #[inline]
    pub(crate) fn value_at(&self, index: u32) -> Option<&T> {
        self.slab.value_at(index)
    }

    /// The deadline of the timer pending at slab index `index` (any value
    /// if none is).
    #[inline]
    pub(crate) fn deadline_at(&self, index: u32) -> u64 {
        self.slab.link(index).deadline
    }

    /// The last tick of the level-`level` slot that starts at `start`.
    #[inline]
    fn slot_last(start: u64, level: usize) -> u64 {
        start | ((1 << Geometry::<SLOTS, LEVELS>::shift(level)) - 1)
    }

    /// The timers [`advance`](Self::advance)`(now)` would yield, one at a
    /// time without an iterator to drop, and in no particular order: for
    /// a caller that does more between timers and fires them all. Once
    /// none is left, where the earliest pending deadline lies (as
    /// [`Self::earliest`] says), from the look that found no slot due.
    /// Only for a wheel that never cascades ahead.
    #[inline]
    pub(crate) fn pop_expired(&mut self, now: u64) -> Result<Expired<T>, Earliest<HeadsOf<T, S>>> {
        loop {
            if let Some(expired) = self.pop_due() {
                return Ok(expired);
            }
            if let Err(next) = self.try_step(now, false) {
                // The clock stays short of the next slot, which keeps its
                // start.
                return Err(self.earliest_of(next));
            }
        }
    }

    /// Where the earliest pending deadline lies, for a caller that needs it
    /// exactly ([`WakerQueue`](crate::WakerQueue)): a level-0 slot holds one
    /// deadline, its start; any other list needs [`Self::least_on`].
    /// Only for a wheel that never cascades ahead.
    #[inline]
    pub(crate) fn earliest(&self) -> Earliest<HeadsOf<T, S>> {
        if self.tables.due != Heads::EMPTY {
            return Earliest::Due(self.tables.due);
        }
        self.earliest_of(self.next_slot())
    }

    /// [`Self::earliest`] with nothing due and `next` the next slot.
    #[inline(always)]
    fn earliest_of(&self, next: Option<(usize, usize, u64)>) -> Earliest<HeadsOf<T, S>> {
        match next {
            None => Earliest::Empty,
            Some((0, _, start)) => Earliest::At(start),
            Some((level, slot, start)) => Earliest::InSlot {
                start,
                last: Self::slot_last(start, level),
                heads: *self.tables.level(level).slot(slot),
            },
        }
    }

    /// The least deadline on the lists `heads` starts (as [`Self::earliest`]
    /// names them): a walk, `u64::MAX` if they are empty.
    pub(crate) fn least_on(&self, heads: HeadsOf<T, S>) -> u64 {
        let mut least = u64::MAX;
        for &head in heads.lists() {
            let mut index = head;
            while index != NIL {
                let link = self.slab.link(index);
                least = least.min(link.deadline);
                index = link.next;
            }
        }
        least
    }

    /// Some pending timers of the latest occupied slot (the due lists if no
    /// slot is occupied), as (index, deadline): the first eight of one
    /// list, the first two of each of four (the rest are `NIL`). A full
    /// [`WakerQueue`](crate::WakerQueue) wakes one of them early.
    pub(crate) fn latest(&self) -> [(u32, u64); 8] {
        let heads = match self.tables.occupied_levels {
            0 => self.tables.due,
            levels => {
                let level = self.tables.level(63 - levels.leading_zeros() as usize);
                *level.slot(63 - level.occupied.leading_zeros() as usize)
            }
        };
        let mut latest = [(NIL, 0); 8];
        // As many from each list as fit: a full queue then has as many to
        // choose from whatever its lists a slot.
        let per_list = (latest.len() / heads.lists().len().max(1)).max(1);
        for (some, &head) in latest.chunks_mut(per_list).zip(heads.lists()) {
            let mut index = head;
            for found in some {
                if index == NIL {
                    break;
                }
                let link = self.slab.link(index);
                *found = (index, link.deadline);
                index = link.next;
            }
        }
        latest
    }

    /// Pushes a linked-out entry onto the list its deadline belongs on.
    #[inline(always)]
    fn link(&mut self, index: u32, deadline: u64) {
        let place = self.place_of(deadline);
        let head = self
            .tables
            .head_for(place, stripe_of::<HeadsOf<T, S>>(index));
        Self::push_front(&mut self.slab, head, index);
    }

    /// Takes the first entry off the non-empty list `head` starts.
    #[inline(always)]
    fn pop_front(slab: &mut Slab<T, S>, head: &mut u32) -> u32 {
        let index = *head;
        let next = slab.link(index).next;
        *head = next;
        if next != NIL {
            slab.link_mut(next).prev = NIL;
        }
        index
    }

    /// Makes `index` the first entry of the list `head` starts.
    #[inline(always)]
    fn push_front(slab: &mut Slab<T, S>, head: &mut u32, index: u32) {
        let old = core::mem::replace(head, index);
        let link = slab.link_mut(index);
        link.prev = NIL;
        link.next = old;
        if old != NIL {
            slab.link_mut(old).prev = index;
        }
    }

    /// Takes a live entry out of whatever list holds it.
    #[inline(always)]
    fn unlink(&mut self, index: u32) {
        let link = *self.slab.link(index);
        let (prev, next) = (link.prev, link.next);
        if next != NIL {
            self.slab.link_mut(next).prev = prev;
        }
        if prev != NIL {
            self.slab.link_mut(prev).next = next;
            return;
        }
        let stripe = stripe_of::<HeadsOf<T, S>>(index);
        let place = self.place_of(link.deadline);
        if let (Some((level, slot)), Some(st)) = (place, self.stage.active_mut()) {
            if st.covers(level, slot) {
                let own = self.tables.level_mut(level).slot_mut(slot).head(stripe);
                if *own == index {
                    *own = next;
                } else {
                    // It heads a staged list, not the slot's own.
                    st.pop_head(index, link.deadline, next);
                }
                // The slot stays occupied while it has timers staged, and
                // staging ends when the slot empties.
                if st.is_empty() {
                    self.tables.clear_if_empty(level, slot);
                    if !self.tables.is_occupied(level, slot) {
                        st.finish();
                    }
                }
                return;
            }
        }
        self.tables.pop_head(place, stripe, next);
    }

    /// Pops one due timer, freeing its entry.
    #[inline]
    fn pop_due(&mut self) -> Option<Expired<T>> {
        // Round-robin over the due lists, so that consecutive pops follow
        // independent chains and their link loads overlap.
        let stripes = HeadsOf::<T, S>::STRIPES;
        let stripe = (0..stripes)
            .map(|k| (self.due_cursor + k) % stripes)
            .find(|&stripe| self.tables.due.at(stripe) != NIL)?;
        self.due_cursor = stripe + 1;
        let index = Self::pop_front(&mut self.slab, self.tables.due.head(stripe));
        self.slab.remove(index)
    }

    /// Appends timers due at the clock (a level-0 slot's, or those staged
    /// for this tick) to the due lists, stripe by stripe.
    fn splice_due(&mut self, lists: HeadsOf<T, S>) {
        // List `s` holds only entries of stripe `s`, so lists pair up.
        for (due, &head) in self.tables.due.lists_mut().iter_mut().zip(lists.lists()) {
            let mut index = head;
            if *due == NIL {
                *due = index;
                continue;
            }
            while index != NIL {
                let next = self.slab.link(index).next;
                Self::push_front(&mut self.slab, due, index);
                index = next;
            }
        }
    }

    /// Processes the earliest occupied slot if it starts at or before
    /// `target`, in deadline order (see [`Self::process_slot`]). Returns
    /// whether a slot was processed; if none was, the clock moves to
    /// `max(now, target)`.
    #[inline]
    fn step(&mut self, target: u64) -> bool {
        self.try_step(target, true).is_ok()
    }

    /// Processes the earliest occupied slot if it starts at or before
    /// `target` (see [`Self::process_slot`]); if none does, moves the clock
    /// to `max(now, target)` and hands back the next occupied slot, as
    /// (level, slot, start), if any.
    #[inline(always)]
    fn try_step(&mut self, target: u64, in_order: bool) -> Result<(), Option<(usize, usize, u64)>> {
        match self.next_slot() {
            Some((level, slot, start)) if start <= target => {
                self.process_slot(level, slot, start, target, in_order);
                Ok(())
            }
            next => {
                self.now = self.now.max(target);
                Err(next)
            }
        }
    }

    /// Processes the earliest occupied slot, `slot` of `level`, which
    /// starts at `start`, no later than `target`: moves the clock to its
    /// start, then takes the whole slot and re-files each timer relative to
    /// the new clock — onto the due list if its deadline has come, else
    /// onto a strictly lower level.
    ///
    /// Unless `in_order`, a slot above level 0 that is not staged moves the
    /// clock on to `target` if that lies within it: nothing is filed below
    /// the earliest slot and nothing above it starts before it ends, so
    /// every placement stays true, and its timers due by `target` go onto
    /// the due list at once instead of through a level-0 slot each. The
    /// due list then holds several ticks' timers, in no order.
    #[inline(always)]
    fn process_slot(&mut self, level: usize, slot: usize, start: u64, target: u64, in_order: bool) {
        self.now = start;
        let mut cursors = self.tables.take_slot(level, slot);
        if level == 0 {
            // Every timer in a level-0 slot is due exactly at its start.
            self.splice_due(cursors);
            return;
        }
        if let Some(st) = self.stage.active_mut().filter(|st| st.covers(level, slot)) {
            // The levels below are empty now; the staged ones take their
            // place, and only what was not staged yet is walked below.
            for (live, staged) in self
                .tables
                .levels
                .iter_mut()
                .take(level)
                .zip(&mut st.tables.levels)
            {
                debug_assert_eq!(live.occupied, 0, "live level below a cascading slot");
                core::mem::swap(live, staged);
            }
            self.tables.occupied_levels |= core::mem::take(&mut st.tables.occupied_levels);
            let due = core::mem::replace(&mut st.tables.due, Heads::EMPTY);
            st.finish();
            self.splice_due(due);
        } else if !in_order {
            self.now = target.min(Self::slot_last(start, level));
        }
        // The lists are walked in lockstep: each one's next link is a load
        // that does not wait for the others', so their misses overlap.
        while cursors != Heads::EMPTY {
            for cursor in cursors.lists_mut() {
                let index = *cursor;
                if index != NIL {
                    let Link { next, deadline, .. } = *self.slab.link(index);
                    *cursor = next;
                    self.link(index, deadline);
                }
            }
        }
    }
}

impl<T, S: Storage<T>, const SLOTS: usize, const LEVELS: usize> fmt::Debug
    for TimerWheel<T, S, SLOTS, LEVELS>
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TimerWheel")
            .field("now", &self.now)
            .field("len", &self.len())
            .field("next_expiration", &self.next_expiration())
            .finish_non_exhaustive()
    }
}

/// The iterator [`TimerWheel::advance`] returns: yields expired timers,
/// cascading lazily. Dropping it early loses nothing (see `advance`).
///
/// # Examples
/// ```
/// let mut wheel = wheel_core::Wheel::new();
/// wheel.insert(5, ());
/// let advance = wheel.advance(5);
/// assert_eq!(advance.count(), 1);
/// ```
pub struct Advance<'a, T, S: Storage<T>, const SLOTS: usize, const LEVELS: usize> {
    wheel: &'a mut TimerWheel<T, S, SLOTS, LEVELS>,
    target: u64,
}

impl<T, S: Storage<T>, const SLOTS: usize, const LEVELS: usize> Iterator
    for Advance<'_, T, S, SLOTS, LEVELS>
{
    type Item = Expired<T>;

    #[inline]
    fn next(&mut self) -> Option<Expired<T>> {
        loop {
            if let Some(expired) = self.wheel.pop_due() {
                return Some(expired);
            }
            if !self.wheel.step(self.target) {
                return None;
            }
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (0, Some(self.wheel.len()))
    }
}

impl<T, S: Storage<T>, const SLOTS: usize, const LEVELS: usize> Drop
    for Advance<'_, T, S, SLOTS, LEVELS>
{
    fn drop(&mut self) {
        // Cascade what is left up to the target without yielding: every timer
        // with deadline ≤ target lands on the due list, and the clock moves.
        while self.wheel.step(self.target) {}
    }
}

impl<T, S: Storage<T>, const SLOTS: usize, const LEVELS: usize> fmt::Debug
    for Advance<'_, T, S, SLOTS, LEVELS>
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Advance")
            .field("target", &self.target)
            .finish_non_exhaustive()
    }
}

/// The iterator [`TimerWheel::drain`] returns.
///
/// # Examples
/// ```
/// let mut wheel = wheel_core::Wheel::new();
/// wheel.insert(5, ());
/// assert_eq!(wheel.drain().count(), 1);
/// ```
pub struct Drain<'a, T, S: Storage<T>, const SLOTS: usize, const LEVELS: usize> {
    wheel: &'a mut TimerWheel<T, S, SLOTS, LEVELS>,
    index: usize,
}

impl<T, S: Storage<T>, const SLOTS: usize, const LEVELS: usize> Iterator
    for Drain<'_, T, S, SLOTS, LEVELS>
{
    type Item = Expired<T>;

    fn next(&mut self) -> Option<Expired<T>> {
        while self.index < self.wheel.slab.entries_len() {
            let index = self.index;
            self.index += 1;
            if let Some(expired) = self.wheel.slab.remove(index as u32) {
                return Some(expired);
            }
        }
        None
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.wheel.len(), Some(self.wheel.len()))
    }
}

impl<T, S: Storage<T>, const SLOTS: usize, const LEVELS: usize> ExactSizeIterator
    for Drain<'_, T, S, SLOTS, LEVELS>
{
}

impl<T, S: Storage<T>, const SLOTS: usize, const LEVELS: usize> Drop
    for Drain<'_, T, S, SLOTS, LEVELS>
{
    fn drop(&mut self) {
        self.for_each(drop);
    }
}

impl<T, S: Storage<T>, const SLOTS: usize, const LEVELS: usize> fmt::Debug
    for Drain<'_, T, S, SLOTS, LEVELS>
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Drain")
            .field("remaining", &self.wheel.len())
            .finish_non_exhaustive()
    }
}

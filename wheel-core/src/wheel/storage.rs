//! What depends on the storage: constructors, and for a growable wheel
//! an `insert` that cannot fail, `reserve` and giving memory back.

use crate::geometry::Geometry;
#[cfg(feature = "alloc")]
use crate::slab::TimerId;
use crate::slab::{Slab, Storage};
use crate::stage::Stage;
use crate::tables::Tables;
use crate::ArrayStorage;
#[cfg(feature = "alloc")]
use crate::VecStorage;

use super::TimerWheel;

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
    /// use [`try_insert`](Self::try_insert) to get [`Full`](crate::Full) instead.
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

    /// Moves the pending timers down into the lowest entries and gives back
    /// all the memory past them, so that the storage holds just `len()`
    /// timers, wherever they were; [`shrink_to_fit`](Self::shrink_to_fit)
    /// gives back only what lies past the last pending timer. A moved timer
    /// gets a new id, and `renamed(old, new)` is told each one; its old id
    /// is stale from then on, and stays so. Other ids are unchanged. Order
    /// among timers due at the same tick may change. O(capacity).
    ///
    /// If `renamed` panics, the timers moved so far stay moved and the wheel
    /// stays whole.
    ///
    /// # Examples
    /// ```
    /// let mut wheel = wheel_core::Wheel::new();
    /// let first = wheel.insert(10, "first");
    /// let last = wheel.insert(20, "last");
    /// wheel.cancel(first);
    /// let mut moves = Vec::new();
    /// wheel.compact(|old, new| moves.push((old, new)));
    /// assert_eq!(wheel.capacity(), 1);
    /// let [(old, new)] = moves[..] else { panic!("one move") };
    /// assert_eq!(old, last);
    /// assert_eq!((wheel.get(last), wheel.get(new)), (None, Some(&"last")));
    /// ```
    pub fn compact(&mut self, mut renamed: impl FnMut(TimerId, TimerId)) {
        /// Threads the free list again however the moves end.
        struct Whole<'a, T, const SLOTS: usize, const LEVELS: usize>(
            &'a mut TimerWheel<T, VecStorage<T>, SLOTS, LEVELS>,
        );
        impl<T, const SLOTS: usize, const LEVELS: usize> Drop for Whole<'_, T, SLOTS, LEVELS> {
            fn drop(&mut self) {
                // Past the last pending timer: after a panic, timers not
                // yet moved are still up there.
                let keep = self.0.slab.occupied_len();
                self.0.slab.truncate(keep);
            }
        }
        let wheel = Whole(self);
        // `hole` walks up through vacant entries, `end` down past occupied
        // ones; each pending timer above a hole moves into it.
        let (mut hole, mut end) = (0, wheel.0.slab.entries_len() as u32);
        loop {
            while hole < end && wheel.0.slab.is_occupied(hole as usize) {
                hole += 1;
            }
            while end > hole && !wheel.0.slab.is_occupied(end as usize - 1) {
                end -= 1;
            }
            if hole >= end {
                return;
            }
            let from = end - 1;
            let deadline = wheel.0.slab.link(from).deadline;
            wheel.0.unlink(from);
            let Some((old, new)) = wheel.0.slab.move_entry(from, hole) else {
                return; // both were checked: never taken
            };
            wheel.0.link(hole, deadline);
            renamed(old, new);
        }
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
        Self::with_storage(ArrayStorage::new(), now)
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
    /// An empty wheel over `storage`, its clock at `now`.
    const fn with_storage(storage: S, now: u64) -> Self {
        let () = Geometry::<SLOTS, LEVELS>::CHECK;
        Self {
            now,
            tables: Tables::EMPTY,
            due_cursor: 0,
            stage: Stage::NONE,
            slab: Slab::new(storage),
        }
    }
}

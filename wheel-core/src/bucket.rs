//! A wheel for timers that are never cancelled: each slot keeps its timers
//! by value in chunks, so filing one is an append and cascading a slot reads
//! its timers in memory order.
//!
//! # Ground rules
//!
//! - The geometry and placement are [`Wheel`](crate::Wheel)'s default ones
//!   (64 slots × 11 levels): a timer sits on the level of the most
//!   significant digit in which its deadline differs from `now`, in the slot
//!   of its deadline's digit there; one whose deadline is ≤ `now` sits in
//!   the due bucket.
//! - A bucket is a list of chunks, each a `Vec` that is never grown: a push
//!   goes to the last one, or to a new one if that is full. A bucket's first
//!   chunk holds [`BucketWheel::CHUNK`] timers and each new one twice the
//!   last, up to `CHUNK << MAX_GROWTH`, so that a slot of a million timers
//!   takes a few hundred allocations rather than thousands (each of which may
//!   grow the allocator's heap by a system call). A bucket holds no empty
//!   chunk, so it is empty iff it has no chunk. Emptied chunks go to a pool
//!   with room for at most [`SPARE_UNITS`] `× CHUNK` timers, for reuse by
//!   any bucket; the rest are freed.
//! - A slot's occupied bit is set iff its bucket holds a timer, except for
//!   the slot being staged (see `cascade_ahead`): its bit stays set while
//!   its own bucket or the staged tables hold one.
//! - The tables (due bucket, levels, occupied bits) are
//!   [`Wheel`](crate::Wheel)'s, with a bucket where it keeps list heads.
//! - Staging files a slot's timers early, relative to the slot's start, into
//!   a second set of tables, as [`Wheel`](crate::Wheel) does. When the clock
//!   reaches that start every lower level is empty (their slots all lie
//!   before it and slots are processed in order), so the staged tables are
//!   swapped in whole; timers inserted into the slot meanwhile are still in
//!   its own bucket and are filed then.

use alloc::boxed::Box;
use alloc::vec::Vec;
use core::fmt;

use crate::geometry::Geometry;
use crate::level::Slot;

mod cascade;
mod chunks;
mod iter;
mod peek;
mod retain;
mod validate;

use chunks::{Bucket, Spare, MAX_GROWTH};
pub use iter::BucketAdvance;

const SLOTS: usize = 64;
const LEVELS: usize = 11;
type Geo = Geometry<SLOTS, LEVELS>;
/// A bucket wheel's tables: a bucket in every slot.
type Tables<T> = crate::tables::Tables<SLOTS, LEVELS, Bucket<T>>;
type Stage<T> = crate::stage::Stage<SLOTS, LEVELS, Bucket<T>>;

/// A hierarchical timing wheel for timers that are never cancelled: no ids,
/// no links, each timer stored once by value next to its deadline (a 24-byte
/// value costs 32 bytes a timer). Filing is an append to the slot's last
/// chunk, and a cascade or a firing reads a slot's timers in memory order,
/// where [`Wheel`](crate::Wheel) follows a linked list through the slab.
///
/// It keeps [`Wheel`](crate::Wheel)'s promises for what it has:
/// [`advance`](Self::advance) yields the timers due by then, those already
/// due first, then the rest in non-decreasing deadline order, never one
/// early; [`next_expiration`](Self::next_expiration) and
/// [`cascade_ahead`](Self::cascade_ahead) work the same way. Timers due at
/// the same tick come out in no particular order.
///
/// # Examples
/// ```
/// use wheel_core::BucketWheel;
///
/// let mut wheel = BucketWheel::new();
/// wheel.insert(100, "late");
/// wheel.insert(10, "early");
/// let fired: Vec<_> = wheel.advance(100).collect();
/// assert_eq!(fired, [(10, "early"), (100, "late")]);
/// assert!(wheel.is_empty());
/// ```
#[cfg_attr(docsrs, doc(cfg(feature = "alloc")))]
pub struct BucketWheel<T> {
    now: u64,
    len: usize,
    /// The due bucket and the slots of every level; boxed, as they take
    /// 17 KiB.
    tables: Box<Tables<T>>,
    /// The next slot to cascade, filed ahead of time; allocated on first use.
    stage: Stage<T>,
    spare: Spare<T>,
}

impl<T> Default for BucketWheel<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> fmt::Debug for BucketWheel<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BucketWheel")
            .field("now", &self.now)
            .field("len", &self.len)
            .finish_non_exhaustive()
    }
}

impl<T> BucketWheel<T> {
    /// Timers in a bucket's first chunk: about 4 KiB of them, and at least
    /// 8. Each further chunk of the bucket holds twice as many as the last,
    /// up to 16 × `CHUNK`.
    pub const CHUNK: usize = {
        let per = 4096 / core::mem::size_of::<(u64, T)>();
        if per < 8 {
            8
        } else {
            per
        }
    };

    /// An empty wheel whose clock starts at tick 0.
    ///
    /// # Examples
    /// ```
    /// let wheel = wheel_core::BucketWheel::<()>::new();
    /// assert_eq!((wheel.now(), wheel.len()), (0, 0));
    /// ```
    pub fn new() -> Self {
        Self::starting_at(0)
    }

    /// An empty wheel whose clock starts at tick `now`.
    ///
    /// # Examples
    /// ```
    /// let wheel = wheel_core::BucketWheel::<()>::starting_at(7);
    /// assert_eq!(wheel.now(), 7);
    /// ```
    pub fn starting_at(now: u64) -> Self {
        Self {
            now,
            len: 0,
            tables: Box::new(Tables::EMPTY),
            stage: Stage::NONE,
            spare: Spare::EMPTY,
        }
    }

    /// The current tick: the last one passed to [`advance`](Self::advance).
    ///
    /// # Examples
    /// ```
    /// let mut wheel = wheel_core::BucketWheel::<()>::new();
    /// wheel.advance(9);
    /// assert_eq!(wheel.now(), 9);
    /// ```
    pub fn now(&self) -> u64 {
        self.now
    }

    /// Timers pending.
    ///
    /// # Examples
    /// ```
    /// let mut wheel = wheel_core::BucketWheel::new();
    /// wheel.insert(5, ());
    /// assert_eq!(wheel.len(), 1);
    /// ```
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no timer is pending.
    ///
    /// # Examples
    /// ```
    /// let wheel = wheel_core::BucketWheel::<()>::new();
    /// assert!(wheel.is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Adds a timer due at tick `deadline`; one due at or before
    /// [`now`](Self::now) comes out of the next [`advance`](Self::advance).
    ///
    /// # Panics
    /// Only if memory runs out, like `Vec::push`.
    ///
    /// # Examples
    /// ```
    /// let mut wheel = wheel_core::BucketWheel::starting_at(10);
    /// wheel.insert(3, "overdue");
    /// assert_eq!(wheel.advance(10).next(), Some((3, "overdue")));
    /// ```
    #[inline]
    pub fn insert(&mut self, deadline: u64, value: T) {
        Self::file(
            &mut self.tables,
            &mut self.spare,
            self.now,
            (deadline, value),
        );
        self.len += 1;
    }

    /// Files `item` in `tables` where its deadline belongs with their clock
    /// at `now`: appended to its bucket's last chunk, or to a new one (from
    /// the pool if it has one) when that is full.
    #[inline(always)]
    fn file(tables: &mut Tables<T>, spare: &mut Spare<T>, now: u64, item: (u64, T)) {
        let bucket = tables.slot_for(Geo::place(now, item.0));
        if let Some(last) = bucket.chunks.last_mut() {
            if last.len() < last.capacity() {
                last.push(item);
                return;
            }
        }
        let growth = bucket.chunks.len().min(MAX_GROWTH);
        let mut chunk = spare.take(Self::CHUNK << growth);
        chunk.push(item);
        bucket.chunks.push(chunk);
    }

    /// When to call [`advance`](Self::advance) next: `None` iff the wheel is
    /// empty; otherwise a tick `t` with `now() ≤ t ≤ max(now(), earliest
    /// deadline)` at which `advance(t)` makes progress: exactly the earliest
    /// deadline unless that timer sits on a higher level, in which case it is
    /// the start of its slot, where it cascades down.
    ///
    /// # Examples
    /// ```
    /// let mut wheel = wheel_core::BucketWheel::new();
    /// assert_eq!(wheel.next_expiration(), None);
    /// wheel.insert(40, ());
    /// assert_eq!(wheel.next_expiration(), Some(40));
    /// wheel.insert(5_000, ());
    /// assert_eq!(wheel.advance(40).count(), 1);
    /// assert_eq!(wheel.next_expiration(), Some(4_096)); // its slot's start
    /// ```
    #[inline]
    pub fn next_expiration(&self) -> Option<u64> {
        if !self.tables.due.is_empty() {
            return Some(self.now);
        }
        let (level, slot) = self.tables.first_slot(!0)?;
        Some(Geo::slot_start(self.now, level, slot))
    }

    /// Moves the clock to `now` (if later) and yields `(deadline, value)` of
    /// every timer due by then: first those already due, in no particular
    /// order, then the rest in non-decreasing deadline order. Never early.
    ///
    /// Each `next()` cascades at most one slot. Dropping the iterator early
    /// loses nothing: the clock still moves to `now`, and the timers it did
    /// not yield stay pending, already due, and come out first from the next
    /// `advance`.
    ///
    /// # Examples
    /// ```
    /// let mut wheel = wheel_core::BucketWheel::new();
    /// for t in [30, 10, 20] {
    ///     wheel.insert(t, t);
    /// }
    /// let mut fired = wheel.advance(25);
    /// assert_eq!(fired.next(), Some((10, 10)));
    /// drop(fired); // 20 stays pending, already due
    /// assert_eq!(wheel.now(), 25);
    /// let rest: Vec<_> = wheel.advance(30).map(|(deadline, _)| deadline).collect();
    /// assert_eq!(rest, [20, 30]);
    /// ```
    pub fn advance(&mut self, now: u64) -> BucketAdvance<'_, T> {
        BucketAdvance {
            wheel: self,
            target: now,
        }
    }

    /// Takes one due timer, if any.
    #[inline]
    fn pop_due(&mut self) -> Option<(u64, T)> {
        let chunks = &mut self.tables.due.chunks;
        let item = chunks.last_mut()?.pop();
        self.spare.reclaim_last(chunks);
        self.len -= usize::from(item.is_some());
        item
    }

    /// Removes every pending timer, yielding `(deadline, value)` of each in
    /// no particular order. The wheel is empty afterwards, even if the
    /// iterator is dropped early; the clock does not move.
    ///
    /// # Examples
    /// ```
    /// let mut wheel = wheel_core::BucketWheel::new();
    /// wheel.insert(1, 'a');
    /// wheel.insert(u64::MAX, 'b');
    /// let mut values: Vec<_> = wheel.drain().map(|(_, v)| v).collect();
    /// values.sort();
    /// assert_eq!(values, ['a', 'b']);
    /// assert!(wheel.is_empty());
    /// ```
    pub fn drain(&mut self) -> impl Iterator<Item = (u64, T)> {
        let mut chunks = Vec::new();
        let staged = self.stage.active_mut().map(|s| {
            s.level = 0;
            &mut s.tables
        });
        for tables in core::iter::once(&mut *self.tables).chain(staged) {
            chunks.append(&mut tables.due.chunks);
            for level in &mut tables.levels {
                for bucket in &mut level.slots {
                    chunks.append(&mut bucket.chunks);
                }
                level.occupied = 0;
            }
            tables.occupied_levels = 0;
        }
        self.len = 0;
        chunks.into_iter().flatten()
    }

    /// Removes every pending timer, dropping the values; the clock stays.
    ///
    /// # Examples
    /// ```
    /// let mut wheel = wheel_core::BucketWheel::new();
    /// wheel.insert(1, ());
    /// wheel.clear();
    /// assert!(wheel.is_empty());
    /// ```
    pub fn clear(&mut self) {
        self.drain().for_each(drop);
    }
}

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
//! - Staging files a slot's timers early, relative to the slot's start, into
//!   a second set of tables. When the clock reaches that start every lower
//!   level is empty (their slots all lie before it and slots are processed
//!   in order), so the staged tables are swapped in whole; timers inserted
//!   into the slot meanwhile are still in its own bucket and are filed then.

use alloc::boxed::Box;
use alloc::vec::Vec;
use core::fmt;

use crate::geometry::Geometry;

const SLOTS: usize = 64;
const LEVELS: usize = 11;
type Geo = Geometry<SLOTS, LEVELS>;

/// A bucket's chunks double in size up to `CHUNK << MAX_GROWTH` timers
/// (64 KiB for a 24-byte value).
const MAX_GROWTH: usize = 4;

/// Room, in first-chunk units, that emptied chunks kept for reuse may hold
/// together (about 1 MiB); beyond it they are freed, so a wheel that has
/// fired a burst gives the memory back.
const SPARE_UNITS: usize = 256;

/// Emptied chunks kept for reuse.
struct Spare<T> {
    chunks: Vec<Vec<(u64, T)>>,
    /// The sum of their capacities.
    room: usize,
}

impl<T> Spare<T> {
    const EMPTY: Self = Self {
        chunks: Vec::new(),
        room: 0,
    };

    /// A chunk from the pool, whatever its size, or a new one of `capacity`.
    #[inline]
    fn take(&mut self, capacity: usize) -> Vec<(u64, T)> {
        match self.chunks.pop() {
            Some(chunk) => {
                self.room -= chunk.capacity();
                chunk
            }
            None => Vec::with_capacity(capacity),
        }
    }

    /// Takes the last of `chunks` into the pool if it has been emptied, so
    /// that no bucket holds an empty chunk.
    #[inline]
    fn reclaim_last(&mut self, chunks: &mut Vec<Vec<(u64, T)>>) {
        if chunks.last().is_some_and(Vec::is_empty) {
            if let Some(chunk) = chunks.pop() {
                self.give(chunk);
            }
        }
    }

    /// Keeps an emptied chunk if the pool has room for it, or frees it.
    #[inline]
    fn give(&mut self, chunk: Vec<(u64, T)>) {
        debug_assert!(chunk.is_empty());
        if self.room + chunk.capacity() <= SPARE_UNITS * BucketWheel::<T>::CHUNK {
            self.room += chunk.capacity();
            self.chunks.push(chunk);
        }
    }
}

/// One slot's timers, `(deadline, value)`, in chunks.
struct Bucket<T> {
    chunks: Vec<Vec<(u64, T)>>,
}

impl<T> Bucket<T> {
    const EMPTY: Self = Self { chunks: Vec::new() };

    fn is_empty(&self) -> bool {
        self.chunks.is_empty()
    }
}

/// A wheel's tables: the due bucket and every level's slots, with each
/// level's occupied bits. A wheel has one set; cascading ahead builds
/// another.
struct Tables<T> {
    due: Bucket<T>,
    occupied: [u64; LEVELS],
    /// Slot `s` of level `l` at `l * SLOTS + s`.
    buckets: Box<[Bucket<T>]>,
}

impl<T> Tables<T> {
    fn new() -> Self {
        Self {
            due: Bucket::EMPTY,
            occupied: [0; LEVELS],
            buckets: (0..SLOTS * LEVELS).map(|_| Bucket::EMPTY).collect(),
        }
    }

    /// The bucket for `place` (`None`: the due bucket), marked occupied.
    #[inline(always)]
    fn bucket_for(&mut self, place: Option<(usize, usize)>) -> &mut Bucket<T> {
        match place {
            None => &mut self.due,
            Some((level, slot)) => {
                self.occupied[level] |= 1 << slot;
                &mut self.buckets[level * SLOTS + slot]
            }
        }
    }

    /// Files `item` where its deadline belongs with the clock at `now`.
    #[inline(always)]
    fn file(&mut self, spare: &mut Spare<T>, now: u64, item: (u64, T)) {
        let bucket = self.bucket_for(Geo::place(now, item.0));
        BucketWheel::push(spare, bucket, item);
    }

    /// The first occupied slot of the lowest level at or above `from` that
    /// has one: (level, slot).
    #[inline]
    fn first_slot(&self, from: usize) -> Option<(usize, usize)> {
        (from..LEVELS).find_map(|level| {
            let bits = self.occupied[level];
            (bits != 0).then(|| (level, bits.trailing_zeros() as usize))
        })
    }

    /// Takes a slot's bucket whole, clearing its bit.
    fn take_slot(&mut self, level: usize, slot: usize) -> Bucket<T> {
        self.occupied[level] &= !(1 << slot);
        core::mem::replace(&mut self.buckets[level * SLOTS + slot], Bucket::EMPTY)
    }

    fn is_empty(&self) -> bool {
        self.due.is_empty() && self.occupied.iter().all(|&bits| bits == 0)
    }
}

/// The staged lower levels of one slot.
struct Staged<T> {
    level: usize,
    slot: usize,
    /// The slot's first tick: the staged placements are relative to it.
    start: u64,
    tables: Tables<T>,
}

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
    /// The due bucket and the slots of every level.
    tables: Tables<T>,
    /// The next slot to cascade, filed ahead of time; allocated on first use.
    staged: Option<Box<Staged<T>>>,
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
            tables: Tables::new(),
            staged: None,
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
        self.tables
            .file(&mut self.spare, self.now, (deadline, value));
        self.len += 1;
    }

    /// Appends `item` to `bucket`'s last chunk, or to a new one (from the
    /// pool if it has one) when that is full.
    #[inline(always)]
    fn push(spare: &mut Spare<T>, bucket: &mut Bucket<T>, item: (u64, T)) {
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
        let (level, slot) = self.tables.first_slot(0)?;
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

    /// Processes the next slot whose start is at most `target`, with the
    /// due bucket empty: the clock moves to its start and its timers move
    /// to the due bucket or lower levels. Returns false if there is none.
    fn step(&mut self, target: u64) -> bool {
        debug_assert!(self.tables.due.is_empty());
        let Some((level, slot)) = self.tables.first_slot(0) else {
            return false;
        };
        let start = Geo::slot_start(self.now, level, slot);
        if start > target {
            return false;
        }
        self.now = start;
        let bucket = self.tables.take_slot(level, slot);
        if level == 0 {
            self.tables.due = bucket;
            return true;
        }
        if let Some(staged) = self.staged.as_deref_mut() {
            if staged.level == level && staged.slot == slot {
                debug_assert_eq!(staged.start, start);
                // Every lower level is empty now: the staged ones take
                // their place.
                core::mem::swap(&mut self.tables.due, &mut staged.tables.due);
                for l in 0..level {
                    debug_assert_eq!(self.tables.occupied[l], 0);
                    self.tables.occupied[l] = core::mem::take(&mut staged.tables.occupied[l]);
                    let range = l * SLOTS..(l + 1) * SLOTS;
                    self.tables.buckets[range.clone()]
                        .swap_with_slice(&mut staged.tables.buckets[range]);
                }
                staged.level = 0;
            }
        }
        self.refile(bucket);
        true
    }

    /// Files every timer of `bucket` afresh, relative to `now`.
    fn refile(&mut self, bucket: Bucket<T>) {
        for mut chunk in bucket.chunks {
            for item in chunk.drain(..) {
                self.tables.file(&mut self.spare, self.now, item);
            }
            self.spare.give(chunk);
        }
    }

    /// Cascades ahead: files up to `max` timers of the next slot to cascade
    /// (on level 1 or above) where they will go when the clock reaches the
    /// slot's start, and returns how many it moved; 0 once that slot is done
    /// or when there is none. When the slot's time comes, `advance` then
    /// swaps the prepared levels in instead of walking every timer in it.
    ///
    /// A driver calls this with small `max` while it would otherwise be idle;
    /// every promise holds whether or not, and however far, it cascaded ahead.
    ///
    /// # Examples
    /// ```
    /// let mut wheel = wheel_core::BucketWheel::new();
    /// for t in 5_000..5_100 {
    ///     wheel.insert(t, t); // all on level 2, in the slot starting at 4096
    /// }
    /// assert_eq!(wheel.cascade_ahead(60), 60);
    /// assert_eq!(wheel.cascade_ahead(1_000), 40);
    /// assert_eq!(wheel.cascade_ahead(1_000), 0); // that slot is ready
    /// assert_eq!(wheel.next_expiration(), Some(4_096));
    /// let fired: Vec<u64> = wheel.advance(5_099).map(|(deadline, _)| deadline).collect();
    /// assert_eq!(fired, (5_000..5_100).collect::<Vec<_>>());
    /// ```
    pub fn cascade_ahead(&mut self, max: usize) -> usize {
        let staged = self.staged.get_or_insert_with(|| {
            Box::new(Staged {
                level: 0,
                slot: 0,
                start: 0,
                tables: Tables::new(),
            })
        });
        if staged.level == 0 {
            let Some((level, slot)) = self.tables.first_slot(1) else {
                return 0;
            };
            debug_assert!(staged.tables.is_empty());
            staged.level = level;
            staged.slot = slot;
            staged.start = Geo::slot_start(self.now, level, slot);
        }
        let bucket = &mut self.tables.buckets[staged.level * SLOTS + staged.slot];
        let mut moved = 0;
        while moved < max {
            let Some(chunk) = bucket.chunks.last_mut() else {
                break;
            };
            let take = (max - moved).min(chunk.len());
            for item in chunk.drain(chunk.len() - take..) {
                staged.tables.file(&mut self.spare, staged.start, item);
            }
            moved += take;
            self.spare.reclaim_last(&mut bucket.chunks);
        }
        moved
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
        let staged = self.staged.as_deref_mut().map(|s| {
            s.level = 0;
            &mut s.tables
        });
        for tables in core::iter::once(&mut self.tables).chain(staged) {
            chunks.append(&mut tables.due.chunks);
            for bucket in tables.buckets.iter_mut() {
                chunks.append(&mut bucket.chunks);
            }
            tables.occupied = [0; LEVELS];
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

    /// Checks every internal invariant: bits match the buckets, each timer
    /// sits where its deadline calls for, no bucket holds an empty chunk,
    /// the pool of spare chunks is within bounds, and the count adds up.
    /// O(timers); for tests and fuzzing.
    ///
    /// # Panics
    /// If an invariant is broken, with a message naming it.
    ///
    /// # Examples
    /// ```
    /// let mut wheel = wheel_core::BucketWheel::new();
    /// wheel.insert(70, ());
    /// wheel.validate();
    /// ```
    pub fn validate(&self) {
        let staged = self.staged.as_deref().filter(|s| s.level != 0);
        let mut count =
            Self::validate_tables(&self.tables, self.now, staged.map(|s| (s.level, s.slot)));
        if let Some(s) = staged {
            assert!(
                s.start > self.now,
                "staged slot starts at {} ≤ now {}",
                s.start,
                self.now
            );
            assert_eq!(
                Geo::slot_start(self.now, s.level, s.slot),
                s.start,
                "staged start is not its slot's"
            );
            assert!(
                self.tables.occupied[s.level] & (1 << s.slot) != 0,
                "staged slot {}/{} not marked occupied",
                s.level,
                s.slot
            );
            assert!(
                s.tables.occupied[s.level..].iter().all(|&b| b == 0),
                "staged timers at or above the staged level"
            );
            count += Self::validate_tables(&s.tables, s.start, None);
        } else if let Some(s) = self.staged.as_deref() {
            assert!(s.tables.is_empty(), "idle staging area holds timers");
        }
        assert_eq!(
            count, self.len,
            "len is {} but {} timers are filed",
            self.len, count
        );
        let room: usize = self.spare.chunks.iter().map(Vec::capacity).sum();
        assert_eq!(room, self.spare.room, "spare room miscounted");
        assert!(
            room <= SPARE_UNITS * Self::CHUNK,
            "{room} timers' room kept spare, over {SPARE_UNITS} × {}",
            Self::CHUNK
        );
        assert!(
            self.spare.chunks.iter().all(Vec::is_empty),
            "spare chunk holds timers"
        );
    }

    /// Checks one set of tables placed relative to `now`; `kept` is a slot
    /// whose bit may stay set while empty. Returns the timers in them.
    fn validate_tables(tables: &Tables<T>, now: u64, kept: Option<(usize, usize)>) -> usize {
        let mut count = 0;
        let mut check = |bucket: &Bucket<T>, place: Option<(usize, usize)>| {
            for chunk in &bucket.chunks {
                assert!(!chunk.is_empty(), "empty chunk in {place:?}");
                for &(deadline, _) in chunk {
                    assert_eq!(
                        Geo::place(now, deadline),
                        place,
                        "deadline {deadline} filed at {place:?} with now {now}"
                    );
                }
                count += chunk.len();
            }
        };
        check(&tables.due, None);
        for level in 0..LEVELS {
            for slot in 0..SLOTS {
                let bucket = &tables.buckets[level * SLOTS + slot];
                let bit = tables.occupied[level] & (1 << slot) != 0;
                if kept == Some((level, slot)) {
                    assert!(bit, "staged slot not occupied");
                } else {
                    assert_eq!(bit, !bucket.is_empty(), "bit of {level}/{slot} is {bit}");
                }
                check(bucket, Some((level, slot)));
            }
        }
        count
    }
}

/// The iterator of [`BucketWheel::advance`]: `(deadline, value)` of each
/// timer due.
///
/// # Examples
/// ```
/// let mut wheel = wheel_core::BucketWheel::new();
/// wheel.insert(2, 'b');
/// wheel.insert(1, 'a');
/// let fired: wheel_core::BucketAdvance<'_, char> = wheel.advance(2);
/// assert_eq!(fired.map(|(_, v)| v).collect::<String>(), "ab");
/// ```
#[cfg_attr(docsrs, doc(cfg(feature = "alloc")))]
pub struct BucketAdvance<'a, T> {
    wheel: &'a mut BucketWheel<T>,
    target: u64,
}

impl<T> Iterator for BucketAdvance<'_, T> {
    type Item = (u64, T);

    #[inline]
    fn next(&mut self) -> Option<(u64, T)> {
        loop {
            if let Some(item) = self.wheel.pop_due() {
                return Some(item);
            }
            if !self.wheel.step(self.target) {
                self.wheel.now = self.wheel.now.max(self.target);
                return None;
            }
        }
    }
}

impl<T> Drop for BucketAdvance<'_, T> {
    /// Moves every timer due by the target to the due bucket, unyielded, and
    /// the clock to the target.
    fn drop(&mut self) {
        let wheel = &mut *self.wheel;
        let mut due = core::mem::replace(&mut wheel.tables.due, Bucket::EMPTY);
        while wheel.step(self.target) {
            due.chunks.append(&mut wheel.tables.due.chunks);
        }
        wheel.tables.due = due;
        wheel.now = wheel.now.max(self.target);
    }
}

impl<T> fmt::Debug for BucketAdvance<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BucketAdvance")
            .field("target", &self.target)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bucket_s_chunks_double_up_to_the_cap() {
        type W = BucketWheel<u64>;
        let mut wheel = W::new();
        let n = 100 * W::CHUNK as u64;
        for value in 0..n {
            wheel.insert(5_000 + value % 64, value); // all in one level-2 slot
        }
        let bucket = &wheel.tables.buckets[2 * SLOTS + 1];
        let capacities: Vec<usize> = bucket.chunks.iter().map(Vec::capacity).collect();
        let cap = W::CHUNK << MAX_GROWTH;
        assert_eq!(capacities[..6], [1, 2, 4, 8, 16, 16].map(|k| k * W::CHUNK));
        assert!(capacities[5..].iter().all(|&c| c == cap), "{capacities:?}");
        // 100 first-chunk units: 1+2+4+8 = 15, then ceil(85 / 16) = 6 more.
        assert_eq!(capacities.len(), 4 + 6);
        wheel.validate();
        assert_eq!(wheel.advance(6_000).count() as u64, n);
        wheel.validate();
    }
}

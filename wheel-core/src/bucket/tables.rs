//! A bucket wheel's tables (the due bucket and every level's slots) and
//! the staged copy that cascading ahead fills.

use alloc::boxed::Box;

use super::chunks::{Bucket, Spare};
use super::{BucketWheel, Geo, LEVELS, SLOTS};

/// A wheel's tables: the due bucket and every level's slots, with each
/// level's occupied bits. A wheel has one set; cascading ahead builds
/// another.
pub(super) struct Tables<T> {
    pub(super) due: Bucket<T>,
    pub(super) occupied: [u64; LEVELS],
    /// Slot `s` of level `l` at `l * SLOTS + s`.
    pub(super) buckets: Box<[Bucket<T>]>,
}

impl<T> Tables<T> {
    pub(super) fn new() -> Self {
        Self {
            due: Bucket::EMPTY,
            occupied: [0; LEVELS],
            buckets: (0..SLOTS * LEVELS).map(|_| Bucket::EMPTY).collect(),
        }
    }

    /// The bucket for `place` (`None`: the due bucket), marked occupied.
    #[inline(always)]
    pub(super) fn bucket_for(&mut self, place: Option<(usize, usize)>) -> &mut Bucket<T> {
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
    pub(super) fn file(&mut self, spare: &mut Spare<T>, now: u64, item: (u64, T)) {
        let bucket = self.bucket_for(Geo::place(now, item.0));
        BucketWheel::push(spare, bucket, item);
    }

    /// The first occupied slot of the lowest level at or above `from` that
    /// has one: (level, slot).
    #[inline]
    pub(super) fn first_slot(&self, from: usize) -> Option<(usize, usize)> {
        (from..LEVELS).find_map(|level| {
            let bits = self.occupied[level];
            (bits != 0).then(|| (level, bits.trailing_zeros() as usize))
        })
    }

    /// Takes a slot's bucket whole, clearing its bit.
    pub(super) fn take_slot(&mut self, level: usize, slot: usize) -> Bucket<T> {
        self.occupied[level] &= !(1 << slot);
        core::mem::replace(&mut self.buckets[level * SLOTS + slot], Bucket::EMPTY)
    }

    pub(super) fn is_empty(&self) -> bool {
        self.due.is_empty() && self.occupied.iter().all(|&bits| bits == 0)
    }
}

/// The staged lower levels of one slot.
pub(super) struct Staged<T> {
    pub(super) level: usize,
    pub(super) slot: usize,
    /// The slot's first tick: the staged placements are relative to it.
    pub(super) start: u64,
    pub(super) tables: Tables<T>,
}

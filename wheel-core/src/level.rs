//! One level of the wheel: `SLOTS` slots, each the heads of `STRIPES`
//! lists, and the bitmap of which are occupied.

use crate::slab::NIL;

/// How many lists make up one slot (and the due list). An entry with index
/// `i` goes on list `i % STRIPES`, so a slot's timers form `STRIPES`
/// independent chains, and a cascade walks them interleaved: its cache
/// misses overlap instead of queueing behind one another.
pub(crate) const STRIPES: usize = 4;

/// The first entries of one slot's lists.
pub(crate) type Heads = [u32; STRIPES];

/// Every list of a slot empty.
pub(crate) const NO_HEADS: Heads = [NIL; STRIPES];

/// The list within a slot that entry `index` goes on.
#[inline(always)]
pub(crate) fn stripe_of(index: u32) -> usize {
    index as usize % STRIPES
}

/// A level: slot `s` holds the timers whose deadline has digit `s` at this
/// level and agrees with `now` on every higher digit.
pub(crate) struct Level<const SLOTS: usize> {
    /// Bit `s` is set iff some list of `heads[s]` is not [`NIL`].
    pub(crate) occupied: u64,
    /// First entry of each of the slot's doubly-linked lists.
    pub(crate) heads: [Heads; SLOTS],
}

impl<const SLOTS: usize> Level<SLOTS> {
    pub(crate) const EMPTY: Self = Self {
        occupied: 0,
        heads: [NO_HEADS; SLOTS],
    };

    /// Slot `slot`'s lists. Slots come from a digit or a bitmap of
    /// `SLOTS` bits, so the mask (one AND) changes none and leaves the
    /// lookup without a panic path.
    #[inline(always)]
    pub(crate) fn slot(&self, slot: usize) -> &Heads {
        &self.heads[slot % SLOTS]
    }

    /// Slot `slot`'s lists, mutably.
    #[inline(always)]
    pub(crate) fn slot_mut(&mut self, slot: usize) -> &mut Heads {
        &mut self.heads[slot % SLOTS]
    }
}

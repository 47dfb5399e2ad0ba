//! One level of the wheel: `SLOTS` slots, each the heads of a few lists,
//! and the bitmap of which are occupied.

use crate::slab::NIL;

/// The first entries of one slot's lists (and of the due lists): an array
/// of `STRIPES` heads. An entry with index `i` goes on list
/// `i % STRIPES`, so a slot's timers form `STRIPES` independent chains,
/// and a cascade walks them interleaved: in a wheel too big for the
/// cache, its misses overlap instead of queueing behind one another. Where
/// every link is in cache (a fixed wheel's), one list is cheaper: a
/// quarter of the tables, and no empty lists to look at. The storage
/// chooses (see `Sealed::Heads`).
///
/// Public only inside this private module, so that the sealed storage
/// trait can name it.
pub trait Heads: Copy + Eq + core::fmt::Debug + 'static {
    /// Lists per slot.
    const STRIPES: usize;
    /// Every list empty.
    const EMPTY: Self;

    /// The heads, list by list.
    fn lists(&self) -> &[u32];

    /// The heads, mutably.
    fn lists_mut(&mut self) -> &mut [u32];

    /// The head of list `stripe % STRIPES`: the mask leaves the lookup
    /// without a panic path.
    fn head(&mut self, stripe: usize) -> &mut u32;

    /// The head of list `stripe % STRIPES`, read.
    fn at(&self, stripe: usize) -> u32;
}

impl<const STRIPES: usize> Heads for [u32; STRIPES] {
    const STRIPES: usize = STRIPES;
    const EMPTY: Self = [NIL; STRIPES];

    #[inline(always)]
    fn lists(&self) -> &[u32] {
        self
    }

    #[inline(always)]
    fn lists_mut(&mut self) -> &mut [u32] {
        self
    }

    #[inline(always)]
    fn head(&mut self, stripe: usize) -> &mut u32 {
        &mut self[stripe % STRIPES]
    }

    #[inline(always)]
    fn at(&self, stripe: usize) -> u32 {
        self[stripe % STRIPES]
    }
}

/// The list within a slot that entry `index` goes on.
#[inline(always)]
pub(crate) fn stripe_of<H: Heads>(index: u32) -> usize {
    index as usize % H::STRIPES
}

/// A level: slot `s` holds the timers whose deadline has digit `s` at this
/// level and agrees with `now` on every higher digit.
pub(crate) struct Level<const SLOTS: usize, H> {
    /// Bit `s` is set iff some list of `heads[s]` is not [`NIL`].
    pub(crate) occupied: u64,
    /// First entry of each of the slot's doubly-linked lists.
    pub(crate) heads: [H; SLOTS],
}

impl<const SLOTS: usize, H: Heads> Level<SLOTS, H> {
    pub(crate) const EMPTY: Self = Self {
        occupied: 0,
        heads: [H::EMPTY; SLOTS],
    };

    /// Slot `slot`'s lists. Slots come from a digit or a bitmap of
    /// `SLOTS` bits, so the mask (one AND) changes none and leaves the
    /// lookup without a panic path.
    #[inline(always)]
    pub(crate) fn slot(&self, slot: usize) -> &H {
        &self.heads[slot % SLOTS]
    }

    /// Slot `slot`'s lists, mutably.
    #[inline(always)]
    pub(crate) fn slot_mut(&mut self, slot: usize) -> &mut H {
        &mut self.heads[slot % SLOTS]
    }
}

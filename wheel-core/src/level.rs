//! One level of a wheel: `SLOTS` slots and the bitmap of which are
//! occupied. What a slot holds is the wheel's: the heads of a few lists
//! ([`Heads`], in [`Wheel`](crate::Wheel)), or a bucket of timers by value
//! (in [`BucketWheel`](crate::BucketWheel)).

use crate::slab::NIL;

/// What one slot (or a wheel's due slot) holds. Public only inside this
/// private module, as [`Heads`] is.
pub trait Slot {
    /// A slot with no timer.
    const EMPTY: Self;

    /// Whether it holds no timer.
    fn is_empty(&self) -> bool;
}

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
pub trait Heads: Slot + Copy + Eq + core::fmt::Debug + 'static {
    /// Lists per slot.
    const STRIPES: usize;

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

/// Every list empty.
impl<const STRIPES: usize> Slot for [u32; STRIPES] {
    const EMPTY: Self = [NIL; STRIPES];

    #[inline(always)]
    fn is_empty(&self) -> bool {
        *self == Self::EMPTY
    }
}

impl<const STRIPES: usize> Heads for [u32; STRIPES] {
    const STRIPES: usize = STRIPES;

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
pub(crate) struct Level<const SLOTS: usize, S> {
    /// Bit `s` is set iff `slots[s]` holds a timer.
    pub(crate) occupied: u64,
    pub(crate) slots: [S; SLOTS],
}

impl<const SLOTS: usize, S: Slot> Level<SLOTS, S> {
    pub(crate) const EMPTY: Self = Self {
        occupied: 0,
        slots: [const { S::EMPTY }; SLOTS],
    };

    /// Slot `slot`. Slots come from a digit or a bitmap of `SLOTS` bits, so
    /// the mask (one AND) changes none and leaves the lookup without a
    /// panic path.
    #[inline(always)]
    pub(crate) fn slot(&self, slot: usize) -> &S {
        &self.slots[slot % SLOTS]
    }

    /// Slot `slot`, mutably.
    #[inline(always)]
    pub(crate) fn slot_mut(&mut self, slot: usize) -> &mut S {
        &mut self.slots[slot % SLOTS]
    }
}

//! Cascading ahead: the timers of the next slot to cascade, filed early into
//! a copy of the lower levels as they will be when the clock reaches the
//! slot's start. Both wheels stage this way; the rules about lists are
//! [`Wheel`](crate::Wheel)'s (a bucket holds its timers by value).
//!
//! # Ground rules
//!
//! - When the clock reaches the start of a level-`k` slot, every level below
//!   `k` is empty: their slots all lie before that start, and slots are
//!   processed in order. So the lower levels can be built ahead of time,
//!   apart, and swapped in whole when the slot comes up.
//! - A staged timer stays filed under the slot it came from: the slot's
//!   occupied bit stays set while the slot's own lists or the staged tables
//!   hold a timer, so `next_expiration` and `advance` treat the slot as they
//!   would without staging.
//! - A staged timer is told apart from one still in the slot's own lists
//!   only when it heads a list (the only time unlinking needs to know which
//!   list): it is staged iff the slot's own list head for its stripe is not
//!   that timer.
//! - Staging ends when its slot is processed or empties (its last timer
//!   cancelled or moved away), so a staging in progress always has its slot
//!   occupied and a start after the clock.

use crate::geometry::Geometry;
use crate::level::{stripe_of, Heads, Slot};
use crate::tables::Tables;

/// The staged lower levels for one slot.
pub(crate) struct Staged<const SLOTS: usize, const LEVELS: usize, S> {
    /// The level of the slot being staged; 0 when none is (level-0 slots
    /// are never staged: they are spliced whole onto the due list).
    pub(crate) level: usize,
    /// Its slot.
    pub(crate) slot: usize,
    /// Its first tick: where the staged placements are relative to.
    pub(crate) start: u64,
    /// Levels below `level` as they will be at `start`, and the timers due
    /// exactly then.
    pub(crate) tables: Tables<SLOTS, LEVELS, S>,
}

impl<const SLOTS: usize, const LEVELS: usize, S: Slot> Staged<SLOTS, LEVELS, S> {
    #[cfg(feature = "alloc")]
    pub(crate) const IDLE: Self = Self {
        level: 0,
        slot: 0,
        start: 0,
        tables: Tables::EMPTY,
    };

    /// Whether no timer is staged.
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.tables.is_empty()
    }

    /// Whether level `level`'s slot `slot` is the one being staged (callers
    /// reach a `Staged` through `Stage::active`, so one is).
    #[inline]
    pub(crate) fn covers(&self, level: usize, slot: usize) -> bool {
        self.level == level && self.slot == slot
    }

    /// Where a timer of the staged slot goes: `None` for the staged due
    /// list, else (level, slot) relative to `start`.
    #[inline]
    pub(crate) fn place_of(&self, deadline: u64) -> Option<(usize, usize)> {
        Geometry::<SLOTS, LEVELS>::place(self.start, deadline)
    }

    /// Stops staging; the tables must be empty or already swapped out.
    #[inline]
    pub(crate) fn finish(&mut self) {
        debug_assert!(self.is_empty(), "staging finished with timers staged");
        self.level = 0;
    }
}

impl<const SLOTS: usize, const LEVELS: usize, H: Heads> Staged<SLOTS, LEVELS, H> {
    /// The list head a staged timer belongs under, marking it occupied.
    #[cfg(feature = "alloc")]
    #[inline]
    pub(crate) fn head_for(&mut self, index: u32, deadline: u64) -> &mut u32 {
        let place = self.place_of(deadline);
        self.tables.head_for(place, stripe_of::<H>(index))
    }

    /// Replaces the head of the staged list that `index` (due at `deadline`)
    /// heads with `next`, clearing bitmaps that empty.
    #[inline]
    pub(crate) fn pop_head(&mut self, index: u32, deadline: u64, next: u32) {
        let place = self.place_of(deadline);
        self.tables.pop_head(place, stripe_of::<H>(index), next);
    }
}

/// The staging area of a wheel: boxed on first use with the `alloc`
/// feature; without it, nothing is ever staged.
#[cfg(feature = "alloc")]
pub(crate) struct Stage<const SLOTS: usize, const LEVELS: usize, S>(
    Option<alloc::boxed::Box<Staged<SLOTS, LEVELS, S>>>,
);

/// The staging area of a wheel: boxed on first use with the `alloc`
/// feature; without it, nothing is ever staged.
#[cfg(not(feature = "alloc"))]
pub(crate) struct Stage<const SLOTS: usize, const LEVELS: usize, S>(core::marker::PhantomData<S>);

impl<const SLOTS: usize, const LEVELS: usize, S: Slot> Stage<SLOTS, LEVELS, S> {
    /// Nothing staged and nothing allocated.
    pub(crate) const NONE: Self = {
        #[cfg(feature = "alloc")]
        {
            Self(None)
        }
        #[cfg(not(feature = "alloc"))]
        {
            Self(core::marker::PhantomData)
        }
    };

    /// The staging in progress, if a slot is being staged.
    #[inline]
    pub(crate) fn active(&self) -> Option<&Staged<SLOTS, LEVELS, S>> {
        #[cfg(feature = "alloc")]
        {
            self.0.as_deref().filter(|staged| staged.level != 0)
        }
        #[cfg(not(feature = "alloc"))]
        {
            None
        }
    }

    /// The staging in progress, mutably.
    #[inline]
    pub(crate) fn active_mut(&mut self) -> Option<&mut Staged<SLOTS, LEVELS, S>> {
        #[cfg(feature = "alloc")]
        {
            self.0.as_deref_mut().filter(|staged| staged.level != 0)
        }
        #[cfg(not(feature = "alloc"))]
        {
            None
        }
    }

    /// The staging area, allocated if need be.
    #[cfg(feature = "alloc")]
    pub(crate) fn area(&mut self) -> &mut Staged<SLOTS, LEVELS, S> {
        self.0
            .get_or_insert_with(|| alloc::boxed::Box::new(Staged::IDLE))
    }

    /// Drops whatever is staged (the timers themselves stay in the slab).
    pub(crate) fn reset(&mut self) {
        #[cfg(feature = "alloc")]
        if let Some(staged) = self.0.as_deref_mut() {
            *staged = Staged::IDLE;
        }
    }
}

//! A wheel's tables, and the bookkeeping that keeps their occupied bits
//! true as lists are filed and emptied, so that the next occupied slot is
//! two `trailing_zeros` away.

use crate::level::{Heads, Level};

/// A wheel's tables: the due lists and every level's slots, with a bitmap
/// of the occupied levels. A wheel has one set; cascading ahead builds
/// another.
pub(crate) struct Tables<const SLOTS: usize, const LEVELS: usize, H> {
    /// Bit `k` is set iff `levels[k]` has an occupied slot.
    pub(crate) occupied_levels: u64,
    /// Timers due now.
    pub(crate) due: H,
    pub(crate) levels: [Level<SLOTS, H>; LEVELS],
}

impl<const SLOTS: usize, const LEVELS: usize, H: Heads> Tables<SLOTS, LEVELS, H> {
    pub(crate) const EMPTY: Self = Self {
        occupied_levels: 0,
        due: H::EMPTY,
        levels: [const { Level::EMPTY }; LEVELS],
    };

    /// Level `level`. Levels come from placing a deadline or from the
    /// level bitmap, both below `LEVELS`, so the clamp (one compare and
    /// select) changes none and leaves the lookup without a panic path.
    #[inline(always)]
    pub(crate) fn level(&self, level: usize) -> &Level<SLOTS, H> {
        &self.levels[level.min(LEVELS - 1)]
    }

    /// Level `level`, mutably.
    #[inline(always)]
    pub(crate) fn level_mut(&mut self, level: usize) -> &mut Level<SLOTS, H> {
        &mut self.levels[level.min(LEVELS - 1)]
    }

    /// The head of list `stripe` at `place` (`None`: the due lists, else
    /// (level, slot)), its slot marked occupied.
    #[inline(always)]
    pub(crate) fn head_for(&mut self, place: Option<(usize, usize)>, stripe: usize) -> &mut u32 {
        match place {
            None => self.due.head(stripe),
            Some((level, slot)) => {
                self.occupied_levels |= 1 << level;
                let lvl = self.level_mut(level);
                lvl.occupied |= 1 << slot;
                lvl.slot_mut(slot).head(stripe)
            }
        }
    }

    /// Replaces the head of list `stripe` at `place` with `next`, clearing
    /// the bits of a slot that empties.
    #[inline(always)]
    pub(crate) fn pop_head(&mut self, place: Option<(usize, usize)>, stripe: usize, next: u32) {
        match place {
            None => *self.due.head(stripe) = next,
            Some((level, slot)) => {
                *self.level_mut(level).slot_mut(slot).head(stripe) = next;
                self.clear_if_empty(level, slot);
            }
        }
    }

    /// Clears the bits of a slot whose lists are all empty.
    #[inline(always)]
    pub(crate) fn clear_if_empty(&mut self, level: usize, slot: usize) {
        if *self.level(level).slot(slot) == H::EMPTY {
            self.clear_slot(level, slot);
        }
    }

    /// Clears a slot's bit, and its level's if that was the last.
    #[inline(always)]
    fn clear_slot(&mut self, level: usize, slot: usize) {
        let lvl = self.level_mut(level);
        lvl.occupied &= !(1 << slot);
        if lvl.occupied == 0 {
            self.occupied_levels &= !(1 << level);
        }
    }

    /// Whether a slot's bit is set.
    #[inline(always)]
    pub(crate) fn is_occupied(&self, level: usize, slot: usize) -> bool {
        self.level(level).occupied & (1 << slot) != 0
    }

    /// The first occupied slot of the lowest level in `levels` (a mask of
    /// level bits) that has one: (level, slot).
    #[inline(always)]
    pub(crate) fn first_slot(&self, levels: u64) -> Option<(usize, usize)> {
        let levels = self.occupied_levels & levels;
        if levels == 0 {
            return None;
        }
        let level = levels.trailing_zeros() as usize;
        Some((level, self.level(level).occupied.trailing_zeros() as usize))
    }

    /// Takes a slot's lists whole, clearing its bits.
    #[inline(always)]
    pub(crate) fn take_slot(&mut self, level: usize, slot: usize) -> H {
        let heads = core::mem::replace(self.level_mut(level).slot_mut(slot), H::EMPTY);
        self.clear_slot(level, slot);
        heads
    }
}

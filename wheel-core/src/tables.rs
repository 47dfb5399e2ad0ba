//! A wheel's tables, and the bookkeeping that keeps their occupied bits
//! true as slots fill and empty, so that the next occupied slot is two
//! `trailing_zeros` away. Both wheels keep theirs in these: list heads in
//! [`Wheel`](crate::Wheel), buckets of timers in
//! [`BucketWheel`](crate::BucketWheel).

use crate::level::{Heads, Level, Slot};

/// A wheel's tables: the due slot and every level's slots, with a bitmap
/// of the occupied levels. A wheel has one set; cascading ahead builds
/// another.
pub(crate) struct Tables<const SLOTS: usize, const LEVELS: usize, S> {
    /// Bit `k` is set iff `levels[k]` has an occupied slot.
    pub(crate) occupied_levels: u64,
    /// Timers due now.
    pub(crate) due: S,
    pub(crate) levels: [Level<SLOTS, S>; LEVELS],
}

impl<const SLOTS: usize, const LEVELS: usize, S: Slot> Tables<SLOTS, LEVELS, S> {
    pub(crate) const EMPTY: Self = Self {
        occupied_levels: 0,
        due: S::EMPTY,
        levels: [const { Level::EMPTY }; LEVELS],
    };

    /// Level `level`. Levels come from placing a deadline or from the
    /// level bitmap, both below `LEVELS`, so the clamp (one compare and
    /// select) changes none and leaves the lookup without a panic path.
    #[inline(always)]
    pub(crate) fn level(&self, level: usize) -> &Level<SLOTS, S> {
        &self.levels[level.min(LEVELS - 1)]
    }

    /// Level `level`, mutably.
    #[inline(always)]
    pub(crate) fn level_mut(&mut self, level: usize) -> &mut Level<SLOTS, S> {
        &mut self.levels[level.min(LEVELS - 1)]
    }

    /// The slot at `place` (`None`: the due slot, else (level, slot)),
    /// marked occupied: the caller files a timer there.
    #[inline(always)]
    pub(crate) fn slot_for(&mut self, place: Option<(usize, usize)>) -> &mut S {
        match place {
            None => &mut self.due,
            Some((level, slot)) => {
                self.occupied_levels |= 1 << level;
                let lvl = self.level_mut(level);
                lvl.occupied |= 1 << slot;
                lvl.slot_mut(slot)
            }
        }
    }

    /// Clears the bits of a slot that holds no timer.
    #[inline(always)]
    pub(crate) fn clear_if_empty(&mut self, level: usize, slot: usize) {
        if self.level(level).slot(slot).is_empty() {
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

    /// Takes a slot's timers whole, clearing its bits.
    #[inline(always)]
    pub(crate) fn take_slot(&mut self, level: usize, slot: usize) -> S {
        let taken = core::mem::replace(self.level_mut(level).slot_mut(slot), S::EMPTY);
        self.clear_slot(level, slot);
        taken
    }

    /// With the clock at the start of a level-`level` slot, where every
    /// lower level is empty: takes `staged`'s lower levels in their place,
    /// leaving `staged` with none (its due slot is the caller's).
    #[inline]
    pub(crate) fn swap_in_below(&mut self, staged: &mut Self, level: usize) {
        for (live, staged) in self.levels.iter_mut().take(level).zip(&mut staged.levels) {
            debug_assert_eq!(live.occupied, 0, "live level below a cascading slot");
            core::mem::swap(live, staged);
        }
        self.occupied_levels |= core::mem::take(&mut staged.occupied_levels);
    }

    /// Whether no slot holds a timer.
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.occupied_levels == 0 && self.due.is_empty()
    }
}

impl<const SLOTS: usize, const LEVELS: usize, H: Heads> Tables<SLOTS, LEVELS, H> {
    /// The head of list `stripe` at `place` (`None`: the due lists, else
    /// (level, slot)), its slot marked occupied.
    #[inline(always)]
    pub(crate) fn head_for(&mut self, place: Option<(usize, usize)>, stripe: usize) -> &mut u32 {
        self.slot_for(place).head(stripe)
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
}

//! One level of the wheel: `SLOTS` list heads and the bitmap of which are
//! occupied, plus the arithmetic that places a deadline on a level and slot.

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

/// The geometry of a wheel with `SLOTS` slots per level and `LEVELS` levels.
pub(crate) struct Geometry<const SLOTS: usize, const LEVELS: usize>;

impl<const SLOTS: usize, const LEVELS: usize> Geometry<SLOTS, LEVELS> {
    /// Bits of the deadline each level resolves: log2(SLOTS).
    pub(crate) const BITS: u32 = SLOTS.trailing_zeros();
    /// Picks a deadline's digit on one level, once shifted down.
    pub(crate) const MASK: u64 = SLOTS as u64 - 1;
    /// Levels needed so the top level spans all of `u64`: ⌈64 / BITS⌉.
    pub(crate) const NEEDED_LEVELS: usize = 64_usize.div_ceil(Self::BITS as usize);

    /// Evaluated by every constructor: rejects geometries at compile time.
    pub(crate) const CHECK: () = {
        assert!(
            SLOTS.is_power_of_two() && SLOTS >= 2 && SLOTS <= 64,
            "SLOTS must be a power of two from 2 to 64"
        );
        assert!(
            LEVELS == Self::NEEDED_LEVELS,
            "LEVELS must be ceil(64 / log2(SLOTS)): 11 for 64 slots, 13 for 32, 16 for 16, 22 for 8, 32 for 4, 64 for 2"
        );
    };

    /// How far right a deadline shifts to bring `level`'s digit to the bottom.
    #[inline(always)]
    pub(crate) fn shift(level: usize) -> u32 {
        level as u32 * Self::BITS
    }

    /// The level for a deadline later than `now`: the level of the most
    /// significant digit in which they differ.
    #[inline(always)]
    pub(crate) fn level_for(now: u64, deadline: u64) -> usize {
        debug_assert!(deadline > now, "level_for({now}, {deadline})");
        let significant = 63 - ((now ^ deadline) | Self::MASK).leading_zeros();
        (significant / Self::BITS) as usize
    }

    /// A tick's digit on `level`.
    #[inline(always)]
    pub(crate) fn slot_for(tick: u64, level: usize) -> usize {
        ((tick >> Self::shift(level)) & Self::MASK) as usize
    }

    /// The list a deadline belongs on with the clock at `now`: `None` for
    /// the due lists, else (level, slot).
    #[inline(always)]
    pub(crate) fn place(now: u64, deadline: u64) -> Option<(usize, usize)> {
        if deadline <= now {
            return None;
        }
        let level = Self::level_for(now, deadline);
        Some((level, Self::slot_for(deadline, level)))
    }

    /// The first tick of `slot` on `level` in the rotation that contains `now`.
    #[inline(always)]
    pub(crate) fn slot_start(now: u64, level: usize, slot: usize) -> u64 {
        let shift = Self::shift(level);
        let above = shift + Self::BITS;
        let rotation = if above >= 64 {
            0
        } else {
            now & (u64::MAX << above)
        };
        rotation | ((slot as u64) << shift)
    }
}

/// A wheel's tables: the due lists and every level's slots, with a bitmap
/// of the occupied levels. A wheel has one set; cascading ahead builds
/// another.
pub(crate) struct Tables<const SLOTS: usize, const LEVELS: usize> {
    /// Bit `k` is set iff `levels[k]` has an occupied slot.
    pub(crate) occupied_levels: u64,
    /// Timers due now.
    pub(crate) due: Heads,
    pub(crate) levels: [Level<SLOTS>; LEVELS],
}

impl<const SLOTS: usize, const LEVELS: usize> Tables<SLOTS, LEVELS> {
    pub(crate) const EMPTY: Self = Self {
        occupied_levels: 0,
        due: NO_HEADS,
        levels: [const { Level::EMPTY }; LEVELS],
    };

    /// Level `level`. Levels come from placing a deadline or from the
    /// level bitmap, both below `LEVELS`, so the clamp (one compare and
    /// select) changes none and leaves the lookup without a panic path.
    #[inline(always)]
    pub(crate) fn level(&self, level: usize) -> &Level<SLOTS> {
        &self.levels[level.min(LEVELS - 1)]
    }

    /// Level `level`, mutably.
    #[inline(always)]
    pub(crate) fn level_mut(&mut self, level: usize) -> &mut Level<SLOTS> {
        &mut self.levels[level.min(LEVELS - 1)]
    }

    /// The head of list `stripe` at `place` (`None`: the due lists, else
    /// (level, slot)), its slot marked occupied.
    #[inline(always)]
    pub(crate) fn head_for(&mut self, place: Option<(usize, usize)>, stripe: usize) -> &mut u32 {
        match place {
            None => &mut self.due[stripe % STRIPES],
            Some((level, slot)) => {
                self.occupied_levels |= 1 << level;
                let lvl = self.level_mut(level);
                lvl.occupied |= 1 << slot;
                &mut lvl.slot_mut(slot)[stripe % STRIPES]
            }
        }
    }

    /// Replaces the head of list `stripe` at `place` with `next`, clearing
    /// the bits of a slot that empties.
    #[inline(always)]
    pub(crate) fn pop_head(&mut self, place: Option<(usize, usize)>, stripe: usize, next: u32) {
        match place {
            None => self.due[stripe % STRIPES] = next,
            Some((level, slot)) => {
                self.level_mut(level).slot_mut(slot)[stripe % STRIPES] = next;
                self.clear_if_empty(level, slot);
            }
        }
    }

    /// Clears the bits of a slot whose lists are all empty.
    #[inline(always)]
    pub(crate) fn clear_if_empty(&mut self, level: usize, slot: usize) {
        if *self.level(level).slot(slot) == NO_HEADS {
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
    pub(crate) fn take_slot(&mut self, level: usize, slot: usize) -> Heads {
        let heads = core::mem::replace(self.level_mut(level).slot_mut(slot), NO_HEADS);
        self.clear_slot(level, slot);
        heads
    }
}

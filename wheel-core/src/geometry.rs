//! The arithmetic of a wheel's shape: which level and slot a deadline is
//! filed under with the clock at `now`, and where a slot starts.

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
        // `now`'s bits above the level's, with `slot` for the level's own:
        // both shifts are by less than 64 on every level, so the top
        // level, whose rotation is the whole clock, needs no branch.
        let shift = Self::shift(level);
        (((now >> shift) & !Self::MASK) | slot as u64) << shift
    }
}

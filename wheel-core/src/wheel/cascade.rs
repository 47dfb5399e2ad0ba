//! Moving the clock: the next occupied slot, stepping to it and filing
//! its timers again (the cascade), and filing a slot ahead of time.

use crate::geometry::Geometry;
use crate::level::{Heads, Slot};
use crate::slab::{Link, Storage, NIL};

use super::TimerWheel;

impl<T, S: Storage<T>, const SLOTS: usize, const LEVELS: usize> TimerWheel<T, S, SLOTS, LEVELS> {
    /// Cascades ahead: files up to `max` timers of the next slot to cascade
    /// (on level 1 or above) where they will go when the clock reaches the
    /// slot's start, and returns how many it moved; 0 once that slot is
    /// done or when there is none. When the slot's time comes, `advance`
    /// then swaps the prepared levels in at O(levels × slots) cost instead
    /// of walking every timer in it: a slot holding a million timers stalls
    /// a driver for tens of milliseconds, a prepared one for microseconds.
    ///
    /// A driver calls this with small `max` while it would otherwise be idle;
    /// nothing else changes: every promise holds whether or not, and however
    /// far, it cascaded ahead. The staging tables (the size of the wheel's
    /// own level tables, about 11 KiB for a growable 64 × 11 wheel) are
    /// allocated on first use.
    ///
    /// # Examples
    /// ```
    /// let mut wheel = wheel_core::Wheel::new();
    /// for t in 5_000..5_100 {
    ///     wheel.insert(t, t); // all on level 2, in the slot starting at 4096
    /// }
    /// assert_eq!(wheel.cascade_ahead(60), 60);
    /// assert_eq!(wheel.cascade_ahead(1_000), 40);
    /// assert_eq!(wheel.cascade_ahead(1_000), 0); // that slot is ready
    /// assert_eq!(wheel.next_expiration(), Some(4_096));
    /// let fired: Vec<u64> = wheel.advance(5_099).map(|e| e.deadline).collect();
    /// assert_eq!(fired, (5_000..5_100).collect::<Vec<_>>());
    /// ```
    #[cfg(feature = "alloc")]
    #[cfg_attr(docsrs, doc(cfg(feature = "alloc")))]
    pub fn cascade_ahead(&mut self, max: usize) -> usize {
        let now = self.now;
        let area = self.stage.area();
        if area.level == 0 {
            let Some((level, slot)) = self.tables.first_slot(!1) else {
                return 0;
            };
            area.level = level;
            area.slot = slot;
            area.start = Geometry::<SLOTS, LEVELS>::slot_start(now, level, slot);
        }
        let heads = self.tables.level_mut(area.level).slot_mut(area.slot);
        let mut moved = 0;
        while moved < max && !heads.is_empty() {
            for head in heads.lists_mut() {
                let index = *head;
                if index != NIL && moved < max {
                    Self::pop_front(&mut self.slab, head);
                    let deadline = self.slab.link(index).deadline;
                    Self::push_front(&mut self.slab, area.head_for(index, deadline), index);
                    moved += 1;
                }
            }
        }
        moved
    }

    /// The earliest occupied slot: the lowest occupied level's first slot
    /// (every occupied slot lies strictly after `now`'s slot on its level, and
    /// a lower level's slots all end before a higher level's next one starts).
    #[inline]
    pub(super) fn next_slot(&self) -> Option<(usize, usize, u64)> {
        let (level, slot) = self.tables.first_slot(u64::MAX)?;
        Some((
            level,
            slot,
            Geometry::<SLOTS, LEVELS>::slot_start(self.now, level, slot),
        ))
    }

    /// The last tick of the level-`level` slot that starts at `start`.
    #[inline]
    pub(super) fn slot_last(start: u64, level: usize) -> u64 {
        start | ((1 << Geometry::<SLOTS, LEVELS>::shift(level)) - 1)
    }

    /// Processes the earliest occupied slot if it starts at or before
    /// `target`, in deadline order (see [`Self::process_slot`]). Returns
    /// whether a slot was processed; if none was, the clock moves to
    /// `max(now, target)`.
    #[inline]
    pub(super) fn step(&mut self, target: u64) -> bool {
        self.try_step(target, true).is_ok()
    }

    /// Processes the earliest occupied slot if it starts at or before
    /// `target` (see [`Self::process_slot`]); if none does, moves the clock
    /// to `max(now, target)` and hands back the next occupied slot, as
    /// (level, slot, start), if any.
    #[inline(always)]
    pub(super) fn try_step(
        &mut self,
        target: u64,
        in_order: bool,
    ) -> Result<(), Option<(usize, usize, u64)>> {
        match self.next_slot() {
            Some((level, slot, start)) if start <= target => {
                self.process_slot(level, slot, start, target, in_order);
                Ok(())
            }
            next => {
                self.now = self.now.max(target);
                Err(next)
            }
        }
    }

    /// Processes the earliest occupied slot, `slot` of `level`, which
    /// starts at `start`, no later than `target`: moves the clock to its
    /// start, then takes the whole slot and re-files each timer relative to
    /// the new clock — onto the due list if its deadline has come, else
    /// onto a strictly lower level.
    ///
    /// Unless `in_order`, a slot above level 0 that is not staged moves the
    /// clock on to `target` if that lies within it: nothing is filed below
    /// the earliest slot and nothing above it starts before it ends, so
    /// every placement stays true, and its timers due by `target` go onto
    /// the due list at once instead of through a level-0 slot each. The
    /// due list then holds several ticks' timers, in no order.
    #[inline(always)]
    fn process_slot(&mut self, level: usize, slot: usize, start: u64, target: u64, in_order: bool) {
        self.now = start;
        let mut cursors = self.tables.take_slot(level, slot);
        if level == 0 {
            // Every timer in a level-0 slot is due exactly at its start.
            self.splice_due(cursors);
            return;
        }
        if let Some(st) = self.stage.active_mut().filter(|st| st.covers(level, slot)) {
            // The levels below are empty now; the staged ones take their
            // place, and only what was not staged yet is walked below.
            self.tables.swap_in_below(&mut st.tables, level);
            let due = core::mem::replace(&mut st.tables.due, Slot::EMPTY);
            st.finish();
            self.splice_due(due);
        } else if !in_order {
            self.now = target.min(Self::slot_last(start, level));
        }
        // The lists are walked in lockstep: each one's next link is a load
        // that does not wait for the others', so their misses overlap.
        while !cursors.is_empty() {
            for cursor in cursors.lists_mut() {
                let index = *cursor;
                if index != NIL {
                    let Link { next, deadline, .. } = *self.slab.link(index);
                    *cursor = next;
                    self.link(index, deadline);
                }
            }
        }
    }
}

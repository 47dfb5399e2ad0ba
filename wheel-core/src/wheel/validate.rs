//! `validate`: every ground rule of the wheel (see `wheel.rs`), checked.

use crate::geometry::Geometry;
use crate::level::{stripe_of, Heads, Slot};
use crate::slab::{Storage, NIL};
use crate::tables::Tables;

use super::{HeadsOf, TimerWheel};

impl<T, S: Storage<T>, const SLOTS: usize, const LEVELS: usize> TimerWheel<T, S, SLOTS, LEVELS> {
    /// Checks every internal invariant (the ground rules of the wheel's
    /// source, `wheel.rs`). O(capacity); for tests and fuzzing.
    ///
    /// # Panics
    /// If an invariant is broken, with a message naming it and the state.
    ///
    /// # Examples
    /// ```
    /// let mut wheel = wheel_core::Wheel::new();
    /// wheel.insert(1 << 40, ());
    /// wheel.validate();
    /// ```
    pub fn validate(&self) {
        let staged = self.stage.active();
        // The staged slot stays occupied while it holds staged timers.
        let kept = staged
            .filter(|st| !st.is_empty())
            .map(|st| (st.level, st.slot));
        let mut linked = self.validate_tables(&self.tables, self.now, kept, "live");
        if let Some(st) = staged {
            assert!(
                st.start > self.now && self.tables.is_occupied(st.level, st.slot),
                "staging for level {} slot {} (start {}) at now {}, slot occupied: {}",
                st.level,
                st.slot,
                st.start,
                self.now,
                self.tables.is_occupied(st.level, st.slot)
            );
            assert!(
                st.tables.occupied_levels >> st.level == 0,
                "staged levels {:#b} at or above the staged slot's level {}",
                st.tables.occupied_levels,
                st.level
            );
            linked += self.validate_tables(&st.tables, st.start, None, "staged");
        }
        assert_eq!(
            linked,
            self.len(),
            "lists hold {linked}, len is {}",
            self.len()
        );
        assert_eq!(
            self.slab.free_count() + self.len(),
            self.slab.entries_len(),
            "free list + pending != entries"
        );
    }

    /// Checks one set of tables placed relative to clock `at`: bitmaps match
    /// the heads (slot `kept` may be occupied with empty lists), occupied
    /// slots lie after `at`'s, and every list holds what belongs there.
    /// Returns how many timers they hold.
    pub(super) fn validate_tables(
        &self,
        tables: &Tables<SLOTS, LEVELS, HeadsOf<T, S>>,
        at: u64,
        kept: Option<(usize, usize)>,
        what: &str,
    ) -> usize {
        let mut linked = 0;
        for (stripe, &head) in tables.due.lists().iter().enumerate() {
            linked += self.validate_list(head, at, None, stripe);
        }
        for (level, lvl) in tables.levels.iter().enumerate() {
            assert_eq!(
                tables.occupied_levels & (1 << level) != 0,
                lvl.occupied != 0,
                "{what}: occupied_levels {:#b} disagrees with level {level} bitmap {:#x}",
                tables.occupied_levels,
                lvl.occupied
            );
            let at_slot = Geometry::<SLOTS, LEVELS>::slot_for(at, level);
            for (slot, heads) in lvl.slots.iter().enumerate() {
                let occupied = !heads.is_empty() || kept == Some((level, slot));
                assert_eq!(
                    lvl.occupied & (1 << slot) != 0,
                    occupied,
                    "{what}: level {level} slot {slot}: bitmap {:#x} vs heads {heads:?}",
                    lvl.occupied
                );
                assert!(
                    !occupied || slot > at_slot,
                    "{what}: level {level} slot {slot} occupied at or behind clock {at} (slot {at_slot})"
                );
                for (stripe, &head) in heads.lists().iter().enumerate() {
                    linked += self.validate_list(head, at, Some((level, slot)), stripe);
                }
            }
        }
        linked
    }

    /// Checks one list's links and placement (relative to clock `at`);
    /// returns its length.
    fn validate_list(
        &self,
        head: u32,
        at: u64,
        place: Option<(usize, usize)>,
        stripe: usize,
    ) -> usize {
        let mut count = 0;
        let mut prev = NIL;
        let mut index = head;
        while index != NIL {
            assert!(
                self.slab.is_occupied(index as usize),
                "entry {index} is linked but vacant"
            );
            let node = self.slab.link(index);
            assert_eq!(node.prev, prev, "entry {index}: prev link broken");
            assert_eq!(
                stripe_of::<HeadsOf<T, S>>(index),
                stripe,
                "entry {index} is on list {stripe} of {place:?}"
            );
            assert_eq!(
                Geometry::<SLOTS, LEVELS>::place(at, node.deadline),
                place,
                "entry {index} (deadline {}) is in list {place:?} at clock {at}",
                node.deadline,
            );
            count += 1;
            assert!(count <= self.len(), "list at {place:?} loops");
            prev = index;
            index = node.next;
        }
        count
    }
}

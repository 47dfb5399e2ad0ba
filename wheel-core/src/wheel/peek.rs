//! `peek`: the timer `advance` yields next, found without moving the clock.
//!
//! Which of several timers due at the same tick comes out first depends on
//! how they reach the due lists, so `peek` follows them there: a timer
//! filed again from a slot above level 0 is pushed onto the front of its
//! new list, which reverses the order of those timers within each list; a
//! level-0 slot's lists become the due lists as they are; and `pop_due`
//! takes the head of the first non-empty due list from its cursor.

use crate::geometry::Geometry;
use crate::level::{Heads, Slot};
use crate::slab::{Storage, TimerId, NIL};

use super::{HeadsOf, TimerWheel};

impl<T, S: Storage<T>, const SLOTS: usize, const LEVELS: usize> TimerWheel<T, S, SLOTS, LEVELS> {
    /// The pending timer that [`advance`](Self::advance)`(t)` yields first,
    /// for any `t` at or past its deadline, with that deadline; `None` iff
    /// the wheel is empty. Timers already due (deadline ≤ [`now`](Self::now))
    /// come out first, in no particular order, so with one of them pending
    /// it is one of them; otherwise its deadline is the least pending one.
    ///
    /// O(1) unless the earliest timers sit in a slot above level 0: then
    /// O(the timers in that slot). After [`cascade_ahead`](Self::cascade_ahead)
    /// has begun on that slot it is a timer with the least deadline, not
    /// necessarily the one `advance` yields first among several due at it.
    ///
    /// # Examples
    /// ```
    /// let mut wheel = wheel_core::Wheel::new();
    /// let later = wheel.insert(5_000, "later");
    /// let sooner = wheel.insert(4_200, "sooner"); // same level-2 slot
    /// assert_eq!(wheel.peek(), Some((sooner, 4_200)));
    /// assert_eq!(wheel.advance(9_999).next().map(|e| e.id), Some(sooner));
    /// assert_eq!(wheel.peek(), Some((later, 5_000)));
    /// ```
    pub fn peek(&self) -> Option<(TimerId, u64)> {
        let index = if !self.tables.due.is_empty() {
            self.due_head(&self.tables.due)?
        } else {
            let (level, slot, start) = self.next_slot()?;
            let heads = *self.tables.level(level).slot(slot);
            match self.stage.active().filter(|st| st.covers(level, slot)) {
                _ if level == 0 => self.due_head(&heads)?,
                None => self.first_of_least(heads, start)?,
                Some(st) => {
                    let staged = core::iter::once(&st.tables.due)
                        .chain(st.tables.levels.iter().flat_map(|level| level.slots.iter()));
                    let least = |heads: &HeadsOf<T, S>| self.least_index(heads);
                    core::iter::once(&heads)
                        .chain(staged)
                        .filter_map(least)
                        .min_by_key(|&(_, deadline)| deadline)?
                        .0
                }
            }
        };
        Some((self.slab.id_at(index)?, self.slab.link(index).deadline))
    }

    /// The head `pop_due` would take were `lists` the due lists: the first
    /// non-empty list from the due cursor.
    fn due_head(&self, lists: &HeadsOf<T, S>) -> Option<u32> {
        let stripes = HeadsOf::<T, S>::STRIPES;
        (0..stripes)
            .map(|k| lists.at((self.due_cursor + k) % stripes))
            .find(|&head| head != NIL)
    }

    /// Of the timers in the slot above level 0 that starts at `start` and
    /// holds the lists `heads`, the first `advance` yields: one with the
    /// least deadline, chosen as the cascades will order them.
    fn first_of_least(&self, heads: HeadsOf<T, S>, start: u64) -> Option<u32> {
        let least = self.least_on(heads);
        // Each filing from a slot above level 0 reverses their order in a
        // list; count them down to the due lists or a level-0 slot.
        let mut reversed = false;
        let mut clock = start;
        loop {
            reversed = !reversed;
            match Geometry::<SLOTS, LEVELS>::place(clock, least) {
                Some((level, slot)) if level > 0 => {
                    clock = Geometry::<SLOTS, LEVELS>::slot_start(clock, level, slot);
                }
                _ => break,
            }
        }
        let stripes = HeadsOf::<T, S>::STRIPES;
        (0..stripes).find_map(|k| {
            let mut index = heads.at((self.due_cursor + k) % stripes);
            let mut chosen = None;
            while index != NIL {
                let link = self.slab.link(index);
                if link.deadline == least {
                    chosen = Some(index);
                    if !reversed {
                        break;
                    }
                }
                index = link.next;
            }
            chosen
        })
    }

    /// A timer with the least deadline on the lists `heads`, and that
    /// deadline.
    fn least_index(&self, heads: &HeadsOf<T, S>) -> Option<(u32, u64)> {
        let mut least: Option<(u32, u64)> = None;
        for &head in heads.lists() {
            let mut index = head;
            while index != NIL {
                let link = self.slab.link(index);
                if least.is_none_or(|(_, deadline)| link.deadline < deadline) {
                    least = Some((index, link.deadline));
                }
                index = link.next;
            }
        }
        least
    }
}

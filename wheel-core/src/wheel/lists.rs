//! The slot lists: filing a timer where its deadline belongs, taking it
//! off again, and the due lists `advance` pops from.

use crate::geometry::Geometry;
use crate::level::{stripe_of, Heads};
use crate::slab::{Slab, Storage, NIL};
use crate::Expired;

use super::{HeadsOf, TimerWheel};

impl<T, S: Storage<T>, const SLOTS: usize, const LEVELS: usize> TimerWheel<T, S, SLOTS, LEVELS> {
    /// The list a deadline belongs on: `None` for the due list, else (level, slot).
    #[inline(always)]
    pub(super) fn place_of(&self, deadline: u64) -> Option<(usize, usize)> {
        Geometry::<SLOTS, LEVELS>::place(self.now, deadline)
    }

    /// Pushes a linked-out entry onto the list its deadline belongs on.
    #[inline(always)]
    pub(super) fn link(&mut self, index: u32, deadline: u64) {
        let place = self.place_of(deadline);
        let head = self
            .tables
            .head_for(place, stripe_of::<HeadsOf<T, S>>(index));
        Self::push_front(&mut self.slab, head, index);
    }

    /// Takes the first entry off the non-empty list `head` starts.
    #[inline(always)]
    pub(super) fn pop_front(slab: &mut Slab<T, S>, head: &mut u32) -> u32 {
        let index = *head;
        let next = slab.link(index).next;
        *head = next;
        if next != NIL {
            slab.link_mut(next).prev = NIL;
        }
        index
    }

    /// Makes `index` the first entry of the list `head` starts.
    #[inline(always)]
    pub(super) fn push_front(slab: &mut Slab<T, S>, head: &mut u32, index: u32) {
        let old = core::mem::replace(head, index);
        let link = slab.link_mut(index);
        link.prev = NIL;
        link.next = old;
        if old != NIL {
            slab.link_mut(old).prev = index;
        }
    }

    /// Takes a live entry out of whatever list holds it.
    #[inline(always)]
    pub(super) fn unlink(&mut self, index: u32) {
        let link = *self.slab.link(index);
        let (prev, next) = (link.prev, link.next);
        if next != NIL {
            self.slab.link_mut(next).prev = prev;
        }
        if prev != NIL {
            self.slab.link_mut(prev).next = next;
            return;
        }
        let stripe = stripe_of::<HeadsOf<T, S>>(index);
        let place = self.place_of(link.deadline);
        if let (Some((level, slot)), Some(st)) = (place, self.stage.active_mut()) {
            if st.covers(level, slot) {
                let own = self.tables.level_mut(level).slot_mut(slot).head(stripe);
                if *own == index {
                    *own = next;
                } else {
                    // It heads a staged list, not the slot's own.
                    st.pop_head(index, link.deadline, next);
                }
                // The slot stays occupied while it has timers staged, and
                // staging ends when the slot empties.
                if st.is_empty() {
                    self.tables.clear_if_empty(level, slot);
                    if !self.tables.is_occupied(level, slot) {
                        st.finish();
                    }
                }
                return;
            }
        }
        self.tables.pop_head(place, stripe, next);
    }

    /// Pops one due timer, freeing its entry.
    #[inline]
    pub(super) fn pop_due(&mut self) -> Option<Expired<T>> {
        // Round-robin over the due lists, so that consecutive pops follow
        // independent chains and their link loads overlap.
        let stripes = HeadsOf::<T, S>::STRIPES;
        let stripe = (0..stripes)
            .map(|k| (self.due_cursor + k) % stripes)
            .find(|&stripe| self.tables.due.at(stripe) != NIL)?;
        self.due_cursor = stripe + 1;
        let index = Self::pop_front(&mut self.slab, self.tables.due.head(stripe));
        self.slab.remove(index)
    }

    /// Appends timers due at the clock (a level-0 slot's, or those staged
    /// for this tick) to the due lists, stripe by stripe.
    pub(super) fn splice_due(&mut self, lists: HeadsOf<T, S>) {
        // List `s` holds only entries of stripe `s`, so lists pair up.
        for (due, &head) in self.tables.due.lists_mut().iter_mut().zip(lists.lists()) {
            let mut index = head;
            if *due == NIL {
                *due = index;
                continue;
            }
            while index != NIL {
                let next = self.slab.link(index).next;
                Self::push_front(&mut self.slab, due, index);
                index = next;
            }
        }
    }
}

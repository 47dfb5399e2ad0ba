//! What `WakerQueue` and the driver ask of a wheel beyond the public API:
//! values by slab index, timers popped one at a time, and where the
//! earliest deadline lies.

use crate::level::{Heads, Slot};
use crate::slab::{Storage, NIL};
use crate::Expired;

use super::{Earliest, HeadsOf, TimerWheel};

impl<T, S: Storage<T>, const SLOTS: usize, const LEVELS: usize> TimerWheel<T, S, SLOTS, LEVELS> {
    /// The value pending at slab index `index`, for a caller that keeps
    /// indexes of pending timers (as `id_at` then `get`, in one lookup).
    #[inline]
    pub(crate) fn value_at(&self, index: u32) -> Option<&T> {
        self.slab.value_at(index)
    }

    /// The deadline of the timer pending at slab index `index` (any value
    /// if none is).
    #[inline]
    pub(crate) fn deadline_at(&self, index: u32) -> u64 {
        self.slab.link(index).deadline
    }

    /// The timers [`advance`](Self::advance)`(now)` would yield, one at a
    /// time without an iterator to drop, and in no particular order: for
    /// a caller that does more between timers and fires them all. Once
    /// none is left, where the earliest pending deadline lies (as
    /// [`Self::earliest`] says), from the look that found no slot due.
    /// Only for a wheel that never cascades ahead.
    #[inline]
    pub(crate) fn pop_expired(&mut self, now: u64) -> Result<Expired<T>, Earliest<HeadsOf<T, S>>> {
        loop {
            if let Some(expired) = self.pop_due() {
                return Ok(expired);
            }
            if let Err(next) = self.try_step(now, false) {
                // The clock stays short of the next slot, which keeps its
                // start.
                return Err(self.earliest_of(next));
            }
        }
    }

    /// Where the earliest pending deadline lies, for a caller that needs it
    /// exactly ([`WakerQueue`](crate::WakerQueue)): a level-0 slot holds one
    /// deadline, its start; any other list needs [`Self::least_on`].
    /// Only for a wheel that never cascades ahead.
    #[inline]
    pub(crate) fn earliest(&self) -> Earliest<HeadsOf<T, S>> {
        if !self.tables.due.is_empty() {
            return Earliest::Due(self.tables.due);
        }
        self.earliest_of(self.next_slot())
    }

    /// [`Self::earliest`] with nothing due and `next` the next slot.
    #[inline(always)]
    pub(super) fn earliest_of(&self, next: Option<(usize, usize, u64)>) -> Earliest<HeadsOf<T, S>> {
        match next {
            None => Earliest::Empty,
            Some((0, _, start)) => Earliest::At(start),
            Some((level, slot, start)) => Earliest::InSlot {
                start,
                last: Self::slot_last(start, level),
                heads: *self.tables.level(level).slot(slot),
            },
        }
    }

    /// The least deadline on the lists `heads` starts (as [`Self::earliest`]
    /// names them): a walk, `u64::MAX` if they are empty.
    pub(crate) fn least_on(&self, heads: HeadsOf<T, S>) -> u64 {
        let mut least = u64::MAX;
        for &head in heads.lists() {
            let mut index = head;
            while index != NIL {
                let link = self.slab.link(index);
                least = least.min(link.deadline);
                index = link.next;
            }
        }
        least
    }

    /// Some pending timers of the latest occupied slot (the due lists if no
    /// slot is occupied), as (index, deadline): the first eight of one
    /// list, the first two of each of four (the rest are `NIL`). A full
    /// [`WakerQueue`](crate::WakerQueue) wakes one of them early.
    pub(crate) fn latest(&self) -> [(u32, u64); 8] {
        let heads = match self.tables.occupied_levels {
            0 => self.tables.due,
            levels => {
                let level = self.tables.level(63 - levels.leading_zeros() as usize);
                *level.slot(63 - level.occupied.leading_zeros() as usize)
            }
        };
        let mut latest = [(NIL, 0); 8];
        // As many from each list as fit: a full queue then has as many to
        // choose from whatever its lists a slot.
        let per_list = (latest.len() / heads.lists().len().max(1)).max(1);
        for (some, &head) in latest.chunks_mut(per_list).zip(heads.lists()) {
            let mut index = head;
            for found in some {
                if index == NIL {
                    break;
                }
                let link = self.slab.link(index);
                *found = (index, link.deadline);
                index = link.next;
            }
        }
        latest
    }
}

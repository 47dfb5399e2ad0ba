//! `peek`: the timer `advance` yields next, found without moving the clock.
//!
//! A bucket keeps its timers in the order they were filed, a cascade files
//! them again in that order, and the due bucket is popped from the back:
//! so of the timers due at the same tick, the last filed comes out first.

use super::chunks::Bucket;
use super::BucketWheel;
use crate::level::Slot;

impl<T> BucketWheel<T> {
    /// The timer that [`advance`](Self::advance)`(t)` yields first, for any
    /// `t` at or past its deadline, as `(deadline, &value)`; `None` iff the
    /// wheel is empty. Timers already due (deadline ≤ [`now`](Self::now))
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
    /// let mut wheel = wheel_core::BucketWheel::new();
    /// wheel.insert(5_000, "later");
    /// wheel.insert(4_200, "sooner"); // same level-2 slot
    /// assert_eq!(wheel.peek(), Some((4_200, &"sooner")));
    /// assert_eq!(wheel.advance(9_999).next(), Some((4_200, "sooner")));
    /// ```
    pub fn peek(&self) -> Option<(u64, &T)> {
        if !self.tables.due.is_empty() {
            return Self::last(&self.tables.due);
        }
        let (level, slot) = self.tables.first_slot(!0)?;
        let own = self.tables.level(level).slot(slot);
        if level == 0 {
            return Self::last(own);
        }
        let staged = self.stage.active().filter(|st| st.covers(level, slot));
        let Some(staged) = staged else {
            return Self::last_of_least(own);
        };
        core::iter::once(own)
            .chain(core::iter::once(&staged.tables.due))
            .chain(staged.tables.levels.iter().flat_map(|l| l.slots.iter()))
            .filter_map(Self::last_of_least)
            .min_by_key(|&(deadline, _)| deadline)
    }

    /// The timer popped first from `bucket` were it the due bucket: its last.
    fn last(bucket: &Bucket<T>) -> Option<(u64, &T)> {
        let (deadline, value) = bucket.chunks.last()?.last()?;
        Some((*deadline, value))
    }

    /// The last timer filed in `bucket` with its least deadline.
    fn last_of_least(bucket: &Bucket<T>) -> Option<(u64, &T)> {
        let mut least: Option<(u64, &T)> = None;
        for (deadline, value) in bucket.chunks.iter().flatten() {
            if least.is_none_or(|(at, _)| *deadline <= at) {
                least = Some((*deadline, value));
            }
        }
        least
    }
}

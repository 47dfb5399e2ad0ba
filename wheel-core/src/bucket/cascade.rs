//! Moving a bucket wheel's clock: stepping to the next slot and filing its
//! timers again, and filing a slot ahead of time.

use super::chunks::Bucket;
use super::{BucketWheel, Geo};
use crate::level::Slot;

impl<T> BucketWheel<T> {
    /// Processes the next slot whose start is at most `target`, with the
    /// due bucket empty: the clock moves to its start and its timers move
    /// to the due bucket or lower levels. Returns false if there is none.
    pub(super) fn step(&mut self, target: u64) -> bool {
        debug_assert!(self.tables.due.is_empty());
        let Some((level, slot)) = self.tables.first_slot(!0) else {
            return false;
        };
        let start = Geo::slot_start(self.now, level, slot);
        if start > target {
            return false;
        }
        self.now = start;
        let bucket = self.tables.take_slot(level, slot);
        if level == 0 {
            self.tables.due = bucket;
            return true;
        }
        if let Some(staged) = self.stage.active_mut().filter(|st| st.covers(level, slot)) {
            debug_assert_eq!(staged.start, start);
            // Every lower level is empty now: the staged ones take their
            // place.
            core::mem::swap(&mut self.tables.due, &mut staged.tables.due);
            self.tables.swap_in_below(&mut staged.tables, level);
            staged.finish();
        }
        self.refile(bucket);
        true
    }

    /// Files every timer of `bucket` afresh, relative to `now`.
    pub(super) fn refile(&mut self, bucket: Bucket<T>) {
        for mut chunk in bucket.chunks {
            for item in chunk.drain(..) {
                Self::file(&mut self.tables, &mut self.spare, self.now, item);
            }
            self.spare.give(chunk);
        }
    }

    /// Cascades ahead: files up to `max` timers of the next slot to cascade
    /// (on level 1 or above) where they will go when the clock reaches the
    /// slot's start, and returns how many it moved; 0 once that slot is done
    /// or when there is none. When the slot's time comes, `advance` then
    /// swaps the prepared levels in instead of walking every timer in it.
    ///
    /// A driver calls this with small `max` while it would otherwise be idle;
    /// every promise holds whether or not, and however far, it cascaded ahead.
    ///
    /// # Examples
    /// ```
    /// let mut wheel = wheel_core::BucketWheel::new();
    /// for t in 5_000..5_100 {
    ///     wheel.insert(t, t); // all on level 2, in the slot starting at 4096
    /// }
    /// assert_eq!(wheel.cascade_ahead(60), 60);
    /// assert_eq!(wheel.cascade_ahead(1_000), 40);
    /// assert_eq!(wheel.cascade_ahead(1_000), 0); // that slot is ready
    /// assert_eq!(wheel.next_expiration(), Some(4_096));
    /// let fired: Vec<u64> = wheel.advance(5_099).map(|(deadline, _)| deadline).collect();
    /// assert_eq!(fired, (5_000..5_100).collect::<Vec<_>>());
    /// ```
    pub fn cascade_ahead(&mut self, max: usize) -> usize {
        let staged = self.stage.area();
        if staged.level == 0 {
            let Some((level, slot)) = self.tables.first_slot(!1) else {
                return 0;
            };
            debug_assert!(staged.tables.is_empty());
            staged.level = level;
            staged.slot = slot;
            staged.start = Geo::slot_start(self.now, level, slot);
        }
        let bucket = self.tables.level_mut(staged.level).slot_mut(staged.slot);
        let mut moved = 0;
        while moved < max {
            let Some(chunk) = bucket.chunks.last_mut() else {
                break;
            };
            let take = (max - moved).min(chunk.len());
            for item in chunk.drain(chunk.len() - take..) {
                Self::file(&mut staged.tables, &mut self.spare, staged.start, item);
            }
            moved += take;
            self.spare.reclaim_last(&mut bucket.chunks);
        }
        moved
    }
}

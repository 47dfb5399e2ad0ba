//! `validate`: every ground rule of the bucket wheel, checked.

use alloc::vec::Vec;

use super::chunks::{Bucket, SPARE_UNITS};
use super::{BucketWheel, Geo, Tables, LEVELS, SLOTS};
use crate::level::Slot;

impl<T> BucketWheel<T> {
    /// Checks every internal invariant: bits match the buckets, each timer
    /// sits where its deadline calls for, no bucket holds an empty chunk,
    /// the pool of spare chunks is within bounds, and the count adds up.
    /// O(timers); for tests and fuzzing.
    ///
    /// # Panics
    /// If an invariant is broken, with a message naming it.
    ///
    /// # Examples
    /// ```
    /// let mut wheel = wheel_core::BucketWheel::new();
    /// wheel.insert(70, ());
    /// wheel.validate();
    /// ```
    pub fn validate(&self) {
        let staged = self.stage.active();
        let mut count =
            Self::validate_tables(&self.tables, self.now, staged.map(|s| (s.level, s.slot)));
        if let Some(s) = staged {
            assert!(
                s.start > self.now,
                "staged slot starts at {} ≤ now {}",
                s.start,
                self.now
            );
            assert_eq!(
                Geo::slot_start(self.now, s.level, s.slot),
                s.start,
                "staged start is not its slot's"
            );
            assert!(
                self.tables.is_occupied(s.level, s.slot),
                "staged slot {}/{} not marked occupied",
                s.level,
                s.slot
            );
            assert!(
                s.tables.occupied_levels >> s.level == 0,
                "staged timers at or above the staged level"
            );
            count += Self::validate_tables(&s.tables, s.start, None);
        }
        assert_eq!(
            count, self.len,
            "len is {} but {} timers are filed",
            self.len, count
        );
        let room: usize = self.spare.chunks.iter().map(Vec::capacity).sum();
        assert_eq!(room, self.spare.room, "spare room miscounted");
        assert!(
            room <= SPARE_UNITS * Self::CHUNK,
            "{room} timers' room kept spare, over {SPARE_UNITS} × {}",
            Self::CHUNK
        );
        assert!(
            self.spare.chunks.iter().all(Vec::is_empty),
            "spare chunk holds timers"
        );
    }

    /// Checks one set of tables placed relative to `now`; `kept` is a slot
    /// whose bit may stay set while empty. Returns the timers in them.
    fn validate_tables(tables: &Tables<T>, now: u64, kept: Option<(usize, usize)>) -> usize {
        let mut count = 0;
        let mut check = |bucket: &Bucket<T>, place: Option<(usize, usize)>| {
            for chunk in &bucket.chunks {
                assert!(!chunk.is_empty(), "empty chunk in {place:?}");
                for &(deadline, _) in chunk {
                    assert_eq!(
                        Geo::place(now, deadline),
                        place,
                        "deadline {deadline} filed at {place:?} with now {now}"
                    );
                }
                count += chunk.len();
            }
        };
        check(&tables.due, None);
        for level in 0..LEVELS {
            let level_bit = tables.occupied_levels & (1 << level) != 0;
            assert_eq!(
                level_bit,
                tables.level(level).occupied != 0,
                "level {level}'s bit is {level_bit}"
            );
            for slot in 0..SLOTS {
                let bucket = tables.level(level).slot(slot);
                let bit = tables.is_occupied(level, slot);
                if kept == Some((level, slot)) {
                    assert!(bit, "staged slot not occupied");
                } else {
                    assert_eq!(bit, !bucket.is_empty(), "bit of {level}/{slot} is {bit}");
                }
                check(bucket, Some((level, slot)));
            }
        }
        count
    }
}

//! Dropping the timers a caller no longer wants, wherever they are filed:
//! how a wheel without ids lets its owner cancel lazily and still bound
//! what it holds.

use super::chunks::{Bucket, Spare};
use super::{BucketWheel, Tables, LEVELS};

impl<T> BucketWheel<T> {
    /// Keeps only the timers for which `keep(deadline, &value)` is true,
    /// dropping the others, and returns how many it dropped. The clock does
    /// not move, and every promise of [`advance`](Self::advance) and
    /// [`next_expiration`](Self::next_expiration) holds for what is kept.
    /// O(timers) plus the occupied slots.
    ///
    /// A wheel of timers that are cancelled rarely can leave a cancelled
    /// one in place, skip it when it comes due, and call this once such
    /// leftovers outnumber the live ones.
    ///
    /// # Examples
    /// ```
    /// let mut wheel = wheel_core::BucketWheel::new();
    /// for t in [5, 70, 5_000] {
    ///     wheel.insert(t, t);
    /// }
    /// assert_eq!(wheel.retain(|_, &v| v != 70), 1);
    /// let fired: Vec<u64> = wheel.advance(10_000).map(|(_, v)| v).collect();
    /// assert_eq!(fired, [5, 5_000]);
    /// ```
    ///
    /// Should `keep` (or a value's drop) panic, the wheel stays whole: what
    /// was dropped so far is gone, everything else is still pending.
    pub fn retain(&mut self, mut keep: impl FnMut(u64, &T) -> bool) -> usize {
        let before = self.len;
        let mut repair = Repair {
            wheel: self,
            armed: true,
        };
        repair.wheel.filter(&mut keep);
        repair.armed = false;
        before - repair.wheel.len
    }

    /// `retain`'s pass: drops what `keep` rejects, then makes the bits,
    /// the staging and `len` agree with what is left.
    fn filter(&mut self, keep: &mut impl FnMut(u64, &T) -> bool) {
        let mut kept = Self::retain_in(&mut self.tables, &mut self.spare, keep);
        if let Some(staged) = self.stage.active_mut() {
            kept += Self::retain_in(&mut staged.tables, &mut self.spare, keep);
            let (level, slot) = (staged.level, staged.slot);
            if staged.is_empty() {
                // Staging ends when its slot empties (see `stage`).
                staged.finish();
            } else {
                // The staged slot stays occupied while its timers are staged,
                // though its own bucket may have emptied above.
                let _ = self.tables.slot_for(Some((level, slot)));
            }
        }
        self.len = kept;
    }

    /// Retains in one set of tables; returns how many timers they keep.
    fn retain_in(
        tables: &mut Tables<T>,
        spare: &mut Spare<T>,
        keep: &mut impl FnMut(u64, &T) -> bool,
    ) -> usize {
        let mut kept = Self::retain_bucket(&mut tables.due, spare, keep);
        for level in 0..LEVELS {
            let mut occupied = tables.level(level).occupied;
            while occupied != 0 {
                let slot = occupied.trailing_zeros() as usize;
                occupied &= occupied - 1;
                let bucket = tables.level_mut(level).slot_mut(slot);
                kept += Self::retain_bucket(bucket, spare, keep);
                tables.clear_if_empty(level, slot);
            }
        }
        kept
    }

    /// Retains in one bucket, giving emptied chunks to the pool; returns
    /// how many timers it keeps.
    fn retain_bucket(
        bucket: &mut Bucket<T>,
        spare: &mut Spare<T>,
        keep: &mut impl FnMut(u64, &T) -> bool,
    ) -> usize {
        let mut kept = 0;
        for chunk in &mut bucket.chunks {
            chunk.retain(|(deadline, value)| keep(*deadline, value));
            kept += chunk.len();
        }
        // Chunks are in no order but for growth (their number), so an
        // emptied one is swapped out in place, allocating nothing.
        let mut i = 0;
        while i < bucket.chunks.len() {
            if bucket.chunks[i].is_empty() {
                spare.give(bucket.chunks.swap_remove(i));
            } else {
                i += 1;
            }
        }
        kept
    }
}

/// Runs a pass that keeps everything if `retain`'s own pass unwinds, so
/// that no bucket is left with an empty chunk, no bit or count stale.
struct Repair<'a, T> {
    wheel: &'a mut BucketWheel<T>,
    armed: bool,
}

impl<T> Drop for Repair<'_, T> {
    fn drop(&mut self) {
        if self.armed {
            self.wheel.filter(&mut |_, _| true);
        }
    }
}

#[cfg(test)]
mod tests {
    extern crate std;

    use super::*;
    use alloc::vec::Vec;

    #[test]
    fn retain_keeps_what_it_is_told_on_every_level_and_in_the_staged_slot() {
        let mut wheel = BucketWheel::new();
        let deadlines: Vec<u64> = (0..2_000u64).map(|i| i * i * 37 % 3_000_000).collect();
        for &t in &deadlines {
            wheel.insert(t, t);
        }
        wheel.advance(3); // some due, the rest on many levels
        assert!(wheel.cascade_ahead(7) > 0); // a slot part staged
        wheel.validate();
        let dropped = wheel.retain(|deadline, &value| {
            assert_eq!(deadline, value);
            value % 3 != 0
        });
        wheel.validate();
        let mut want: Vec<u64> = deadlines.iter().copied().filter(|v| v % 3 != 0).collect();
        assert_eq!(dropped, deadlines.len() - want.len());
        assert_eq!(wheel.len(), want.len());
        let mut fired: Vec<u64> = wheel.advance(u64::MAX).map(|(_, v)| v).collect();
        fired.sort_unstable();
        want.sort_unstable();
        assert_eq!(fired, want);
    }

    #[test]
    fn retaining_nothing_of_a_staged_slot_ends_its_staging() {
        let mut wheel = BucketWheel::new();
        for t in 5_000..5_100u64 {
            wheel.insert(t, t); // one level-2 slot
        }
        wheel.insert(100_000, 0);
        assert_eq!(wheel.cascade_ahead(60), 60);
        assert_eq!(wheel.retain(|_, &v| v == 0), 100);
        wheel.validate();
        assert_eq!(wheel.next_expiration(), Some(98_304)); // the survivor's slot
        assert_eq!(wheel.advance(200_000).count(), 1);
    }

    #[test]
    fn a_predicate_that_panics_leaves_the_wheel_whole() {
        let mut wheel = BucketWheel::new();
        for t in 0..3_000u64 {
            wheel.insert(t * 7 % 20_000, t);
        }
        assert!(wheel.cascade_ahead(50) > 0);
        let mut calls = 0;
        let unwound = std::panic::catch_unwind(core::panic::AssertUnwindSafe(|| {
            wheel.retain(|_, _| {
                calls += 1;
                assert!(calls < 1_000, "the user's predicate panics");
                false
            })
        }));
        assert!(unwound.is_err());
        wheel.validate();
        let left = wheel.len();
        assert!(left > 0 && left < 3_000, "{left}");
        assert_eq!(wheel.advance(u64::MAX).count(), left);
    }
}

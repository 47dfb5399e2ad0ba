//! [`WakerQueue::validate`]: the ground rules in `waker_queue.rs`,
//! checked entry by entry, for tests.

use super::index::{hash, Index};
use super::near::tag;
use super::WakerQueue;

impl<const N: usize> WakerQueue<N> {
    /// Checks the invariants: every entry is indexed once, in its own
    /// bucket, the index holds nothing else, the near cells are what they
    /// claim, and the earliest deadline and the walked slot's minimum are
    /// what they claim. O(N); for tests.
    ///
    /// # Panics
    /// If an invariant is broken, naming it.
    ///
    /// # Examples
    /// ```
    /// let mut queue = wheel_core::WakerQueue::<4>::new();
    /// queue.schedule_wake(3, core::task::Waker::noop());
    /// queue.validate();
    /// ```
    pub fn validate(&self) {
        self.wheel.validate();
        self.near.validate(tag, Self::PAST_NEAR);
        let indexed = self.index.each(|bucket, index| {
            let waker = self.wheel.value_at(index);
            let waker = waker.unwrap_or_else(|| panic!("bucket {bucket} holds vacant {index}"));
            assert_eq!(
                Index::<N>::home(hash(waker)),
                bucket,
                "entry {index} is chained in another bucket than its own"
            );
            assert_eq!(
                self.find(hash(waker), waker),
                Some(index),
                "entry {index} is not found from its bucket"
            );
            assert!(
                self.near.find(tag(waker), waker).is_none(),
                "entry {index}'s task is near too"
            );
        });
        assert_eq!(indexed, self.wheel.len(), "index holds {indexed} entries");
        let least_in = |range: core::ops::RangeInclusive<u64>| {
            (0..N as u32)
                .filter_map(|index| {
                    self.wheel
                        .id_at(index)
                        .and_then(|id| self.wheel.deadline(id))
                })
                .filter(|deadline| range.contains(deadline))
                .min()
                .unwrap_or(u64::MAX)
        };
        if !self.stale {
            let least = least_in(0..=u64::MAX).min(self.near.least());
            assert_eq!(
                self.earliest, least,
                "earliest is {} not {least}",
                self.earliest
            );
        }
        if let Some(walked) = self.walked {
            let least = least_in(walked.start..=walked.last);
            assert!(
                self.wheel.now() < walked.start,
                "{walked:?} behind {}",
                self.wheel.now()
            );
            assert_eq!(walked.least, least, "{walked:?}: least is {least}");
        }
    }
}

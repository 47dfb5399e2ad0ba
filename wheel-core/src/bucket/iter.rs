//! The iterator `BucketWheel::advance` returns.

use core::fmt;

use super::chunks::Bucket;
use super::BucketWheel;
use crate::level::Slot;

/// The iterator of [`BucketWheel::advance`]: `(deadline, value)` of each
/// timer due.
///
/// # Examples
/// ```
/// let mut wheel = wheel_core::BucketWheel::new();
/// wheel.insert(2, 'b');
/// wheel.insert(1, 'a');
/// let fired: wheel_core::BucketAdvance<'_, char> = wheel.advance(2);
/// assert_eq!(fired.map(|(_, v)| v).collect::<String>(), "ab");
/// ```
#[cfg_attr(docsrs, doc(cfg(feature = "alloc")))]
pub struct BucketAdvance<'a, T> {
    pub(super) wheel: &'a mut BucketWheel<T>,
    pub(super) target: u64,
}

impl<T> Iterator for BucketAdvance<'_, T> {
    type Item = (u64, T);

    #[inline]
    fn next(&mut self) -> Option<(u64, T)> {
        loop {
            if let Some(item) = self.wheel.pop_due() {
                return Some(item);
            }
            if !self.wheel.step(self.target) {
                self.wheel.now = self.wheel.now.max(self.target);
                return None;
            }
        }
    }
}

impl<T> Drop for BucketAdvance<'_, T> {
    /// Moves every timer due by the target to the due bucket, unyielded, and
    /// the clock to the target.
    fn drop(&mut self) {
        let wheel = &mut *self.wheel;
        let mut due = core::mem::replace(&mut wheel.tables.due, Bucket::EMPTY);
        while wheel.step(self.target) {
            due.chunks.append(&mut wheel.tables.due.chunks);
        }
        wheel.tables.due = due;
        wheel.now = wheel.now.max(self.target);
    }
}

impl<T> fmt::Debug for BucketAdvance<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BucketAdvance")
            .field("target", &self.target)
            .finish_non_exhaustive()
    }
}

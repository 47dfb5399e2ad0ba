//! The iterators `advance` and `drain` return.

use core::fmt;

use crate::slab::Storage;
use crate::Expired;

use super::TimerWheel;

/// The iterator [`TimerWheel::advance`] returns: yields expired timers,
/// cascading lazily. Dropping it early loses nothing (see `advance`).
///
/// # Examples
/// ```
/// let mut wheel = wheel_core::Wheel::new();
/// wheel.insert(5, ());
/// let advance = wheel.advance(5);
/// assert_eq!(advance.count(), 1);
/// ```
pub struct Advance<'a, T, S: Storage<T>, const SLOTS: usize, const LEVELS: usize> {
    pub(super) wheel: &'a mut TimerWheel<T, S, SLOTS, LEVELS>,
    pub(super) target: u64,
}

impl<T, S: Storage<T>, const SLOTS: usize, const LEVELS: usize> Iterator
    for Advance<'_, T, S, SLOTS, LEVELS>
{
    type Item = Expired<T>;

    #[inline]
    fn next(&mut self) -> Option<Expired<T>> {
        loop {
            if let Some(expired) = self.wheel.pop_due() {
                return Some(expired);
            }
            if !self.wheel.step(self.target) {
                return None;
            }
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (0, Some(self.wheel.len()))
    }
}

impl<T, S: Storage<T>, const SLOTS: usize, const LEVELS: usize> Drop
    for Advance<'_, T, S, SLOTS, LEVELS>
{
    fn drop(&mut self) {
        // Cascade what is left up to the target without yielding: every timer
        // with deadline ≤ target lands on the due list, and the clock moves.
        while self.wheel.step(self.target) {}
    }
}

impl<T, S: Storage<T>, const SLOTS: usize, const LEVELS: usize> fmt::Debug
    for Advance<'_, T, S, SLOTS, LEVELS>
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Advance")
            .field("target", &self.target)
            .finish_non_exhaustive()
    }
}

/// The iterator [`TimerWheel::drain`] returns.
///
/// # Examples
/// ```
/// let mut wheel = wheel_core::Wheel::new();
/// wheel.insert(5, ());
/// assert_eq!(wheel.drain().count(), 1);
/// ```
pub struct Drain<'a, T, S: Storage<T>, const SLOTS: usize, const LEVELS: usize> {
    pub(super) wheel: &'a mut TimerWheel<T, S, SLOTS, LEVELS>,
    pub(super) index: usize,
}

impl<T, S: Storage<T>, const SLOTS: usize, const LEVELS: usize> Iterator
    for Drain<'_, T, S, SLOTS, LEVELS>
{
    type Item = Expired<T>;

    fn next(&mut self) -> Option<Expired<T>> {
        while self.index < self.wheel.slab.entries_len() {
            let index = self.index;
            self.index += 1;
            if let Some(expired) = self.wheel.slab.remove(index as u32) {
                return Some(expired);
            }
        }
        None
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.wheel.len(), Some(self.wheel.len()))
    }
}

impl<T, S: Storage<T>, const SLOTS: usize, const LEVELS: usize> ExactSizeIterator
    for Drain<'_, T, S, SLOTS, LEVELS>
{
}

impl<T, S: Storage<T>, const SLOTS: usize, const LEVELS: usize> Drop
    for Drain<'_, T, S, SLOTS, LEVELS>
{
    fn drop(&mut self) {
        /// Removes what is left if a value's drop unwinds, as std's
        /// `vec::Drain` does: the lists are already gone, so an entry left
        /// in the slab would be pending yet in no list. A second panicking
        /// value then aborts, as it would in a `Vec`.
        struct Rest<'r, 'a, T, S: Storage<T>, const SLOTS: usize, const LEVELS: usize>(
            &'r mut Drain<'a, T, S, SLOTS, LEVELS>,
        );
        impl<T, S: Storage<T>, const SLOTS: usize, const LEVELS: usize> Drop
            for Rest<'_, '_, T, S, SLOTS, LEVELS>
        {
            fn drop(&mut self) {
                self.0.for_each(drop);
            }
        }
        // Without a panic the guard finds nothing left: one bounds check.
        let rest = Rest(self);
        rest.0.for_each(drop);
    }
}

impl<T, S: Storage<T>, const SLOTS: usize, const LEVELS: usize> fmt::Debug
    for Drain<'_, T, S, SLOTS, LEVELS>
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Drain")
            .field("remaining", &self.wheel.len())
            .finish_non_exhaustive()
    }
}

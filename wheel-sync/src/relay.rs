//! Wakes a round's fired sleeps from an executor thread rather than from the
//! driver.
//!
//! Woken from the driver, every task is a remote wake: a work-stealing
//! executor takes it through its shared injection queue and, often, unparks
//! a worker for it, and a worker that has run that one task may park again
//! before the driver's next wake. So the driver wakes one task of the round
//! and hands it the round's other wakers: the next `Sleep` polled or
//! dropped, usually that task's, wakes them from its own thread, which an
//! executor such as tokio takes as local wakes into that worker's queue.
//!
//! # Ground rules
//!
//! - The driver adds wakers under the lock, then sets `handed`; a taker
//!   clears `handed`, then takes every waker under the lock. A waker added
//!   after a take is followed by another `handed = true`, so none is left
//!   behind with the flag clear.
//! - Nothing waits on a task that is never polled: the driver takes a
//!   handed batch itself at its next round, and plans that round no later
//!   than the next tick.
//! - A waker that panics when woken, by the driver or by a taker, is
//!   counted and the panic caught: it neither stops the driver nor fails
//!   the task whose poll took the batch, and the rest are still woken.

use crate::caught::run_caught;
use core::task::Waker;

use crossbeam_utils::CachePadded;

use crate::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use crate::sync::Mutex;

/// The wakers the driver handed to a woken task.
pub(crate) struct Relay {
    /// Read by every `Sleep` poll and drop: a line of its own.
    handed: CachePadded<AtomicBool>,
    wakers: Mutex<Vec<Waker>>,
    /// Wakers that panicked when woken.
    panicked: AtomicU64,
}

impl Relay {
    pub(crate) fn new() -> Self {
        Self {
            handed: CachePadded::new(AtomicBool::new(false)),
            wakers: Mutex::new(Vec::new()),
            panicked: AtomicU64::new(0),
        }
    }

    /// Driver: wakes `fired` (empty after), one of them now and the rest
    /// through the relay when there are more than one.
    pub(crate) fn dispatch(&self, fired: &mut Vec<Waker>) {
        if fired.len() < 2 {
            fired.drain(..).for_each(|waker| self.wake(waker));
            return;
        }
        let Some(first) = fired.pop() else { return };
        {
            let mut wakers = self.lock();
            if wakers.is_empty() {
                // Swap rather than copy: `fired` gets back the capacity a
                // taker returned.
                core::mem::swap(&mut *wakers, fired);
            } else {
                wakers.append(fired);
            }
        }
        self.handed.store(true, Ordering::Release);
        self.wake(first);
    }

    /// Wakes what was handed and not yet woken; cheap when nothing is.
    #[inline]
    pub(crate) fn wake_handed(&self) {
        if self.handed.load(Ordering::Relaxed) {
            self.take_and_wake();
        }
    }

    /// Whether a handed batch waits for a taker.
    pub(crate) fn is_handed(&self) -> bool {
        self.handed.load(Ordering::Relaxed)
    }

    /// Wakers that panicked when woken (each was counted and carried on from).
    pub(crate) fn panicked(&self) -> u64 {
        self.panicked.load(Ordering::Relaxed)
    }

    #[cold]
    fn take_and_wake(&self) {
        if !self.handed.swap(false, Ordering::Acquire) {
            return; // another thread took it
        }
        let mut taken = core::mem::take(&mut *self.lock());
        taken.drain(..).for_each(|waker| self.wake(waker));
        // Give the capacity back for the driver's next batch.
        let mut wakers = self.lock();
        if wakers.capacity() == 0 {
            *wakers = taken;
        }
    }

    /// Wakes `waker`, catching and counting a panic.
    fn wake(&self, waker: Waker) {
        if !run_caught(|| waker.wake()) {
            self.panicked.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn lock(&self) -> crate::sync::MutexGuard<'_, Vec<Waker>> {
        self.wakers.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Counting wakers, for this module's tests and the entry's.
#[cfg(all(test, not(loom)))]
pub(crate) mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::sync::Arc;
    use std::task::Wake;

    /// Counts its wakes.
    pub(crate) struct Count(AtomicUsize);

    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// `n` wakers, and the counts of their wakes.
    pub(crate) fn wakers(n: usize) -> (Vec<Arc<Count>>, Vec<Waker>) {
        let counts: Vec<_> = (0..n)
            .map(|_| Arc::new(Count(AtomicUsize::new(0))))
            .collect();
        let wakers = counts.iter().map(|c| Waker::from(c.clone())).collect();
        (counts, wakers)
    }

    /// How many times each was woken.
    pub(crate) fn woken(counts: &[Arc<Count>]) -> Vec<usize> {
        counts.iter().map(|c| c.0.load(Ordering::SeqCst)).collect()
    }

    #[test]
    fn a_lone_waker_is_woken_at_once() {
        let relay = Relay::new();
        let (counts, mut fired) = wakers(1);
        relay.dispatch(&mut fired);
        assert!(fired.is_empty());
        assert_eq!(woken(&counts), [1]);
        assert!(!relay.is_handed());
    }

    #[test]
    fn one_is_woken_and_the_rest_wait_for_a_taker() {
        let relay = Relay::new();
        let (counts, mut fired) = wakers(4);
        relay.dispatch(&mut fired);
        assert!(fired.is_empty());
        assert_eq!(woken(&counts), [0, 0, 0, 1]);
        assert!(relay.is_handed());
        relay.wake_handed();
        assert_eq!(woken(&counts), [1, 1, 1, 1]);
        assert!(!relay.is_handed());
        // Taken once: a second taker finds nothing.
        relay.wake_handed();
        assert_eq!(woken(&counts), [1, 1, 1, 1]);
    }

    #[test]
    fn batches_handed_before_a_take_are_all_woken() {
        let relay = Relay::new();
        let (first, mut fired) = wakers(3);
        relay.dispatch(&mut fired);
        let (second, mut fired) = wakers(2);
        relay.dispatch(&mut fired);
        relay.wake_handed();
        assert_eq!(woken(&first), [1, 1, 1]);
        assert_eq!(woken(&second), [1, 1]);
    }

    /// Panics when woken.
    struct Panics;

    impl Wake for Panics {
        fn wake(self: Arc<Self>) {
            panic!("a waker panics");
        }
    }

    #[test]
    fn a_panicking_waker_is_counted_and_the_rest_are_woken() {
        let relay = Relay::new();
        let (counts, mut fired) = wakers(4);
        fired.insert(2, Waker::from(Arc::new(Panics)));
        relay.dispatch(&mut fired);
        assert_eq!(woken(&counts), [0, 0, 0, 1], "the last is the first woken");
        relay.wake_handed();
        assert_eq!(woken(&counts), [1, 1, 1, 1]);
        assert_eq!(relay.panicked(), 1);
        // Woken directly by the driver, too.
        relay.dispatch(&mut vec![Waker::from(Arc::new(Panics))]);
        assert_eq!(relay.panicked(), 2);
    }

    #[test]
    fn the_taken_capacity_comes_back_to_the_driver() {
        let relay = Relay::new();
        let (_, mut fired) = wakers(8);
        relay.dispatch(&mut fired);
        relay.wake_handed();
        let mut next = Vec::new();
        let (_, mut more) = wakers(2);
        next.append(&mut more);
        relay.dispatch(&mut next);
        assert!(next.capacity() >= 7, "{}", next.capacity());
    }
}

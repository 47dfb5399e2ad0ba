//! The timer queues `wheel-core` is measured against, behind one small
//! trait so each benchmark body is written once and run on every peer.
//!
//! | peer | structure | insert | cancel | fire |
//! |------|-----------|--------|--------|------|
//! | [`WheelTimers`] | `wheel_core::Wheel<u64, SLOTS, LEVELS>`, 64 × 11 by default | O(1) | O(1) unlink | O(1) + cascades |
//! | [`DelayQueueTimers`] | `tokio_util::time::DelayQueue<u64>` on a paused tokio clock | O(1) | O(1) unlink | O(1) + cascades + a tokio `Sleep` |
//! | [`LazyHeap`] | `BinaryHeap` + slab of generations | O(log n) | O(1) mark; the entry leaves when popped | O(log n) |
//! | [`IndexedHeap`] | binary heap with a heap position per timer | O(log n) | O(log n), eager | O(log n) |
//! | [`BTreeTimers`] | `BTreeMap<(deadline, seq), value>` | O(log n) | O(log n) | O(log n) |
//!
//! Measured numbers are in docs/benchmarks.md; `cargo bench -p wheel-bench
//! --bench core` reproduces them.
//!
//! Time is a `u64` tick everywhere (a millisecond for the DelayQueue peer,
//! whose wheel counts milliseconds). Every peer fires exactly the timers
//! whose deadline is ≤ the clock, never early, and its clock never goes
//! backwards.

mod btree;
mod delay_queue;
mod heap_scheduler;
mod indexed_heap;
mod lazy_heap;
mod wheel;

pub use btree::{BTreeKey, BTreeTimers};
pub use delay_queue::DelayQueueTimers;
pub use heap_scheduler::{HeapHandle, HeapScheduler};
pub use indexed_heap::{HeapKey, IndexedHeap};
pub use lazy_heap::{LazyHeap, LazyKey};
pub use wheel::WheelTimers;

/// A queue of timers carrying `u64` values, as the benchmarks drive it.
///
/// # Examples
/// ```
/// use wheel_bench::peers::{IndexedHeap, TimerQueue, WheelTimers};
///
/// // One body, every peer: what the benchmarks do.
/// fn fired_by_20<Q: TimerQueue>(mut queue: Q) -> Vec<u64> {
///     let late = queue.insert(30, 3);
///     let mut early = queue.insert(25, 2);
///     queue.insert(10, 1);
///     assert_eq!(queue.cancel(late), Some(3));
///     assert!(queue.reschedule(&mut early, 15));
///     let mut fired = Vec::new();
///     queue.advance(20, |value| fired.push(value));
///     fired
/// }
/// assert_eq!(fired_by_20(WheelTimers::new()), [1, 2]);
/// assert_eq!(fired_by_20(IndexedHeap::new()), [1, 2]);
/// ```
pub trait TimerQueue {
    /// Names one pending timer.
    type Key: Copy;

    /// A short name for tables and benchmark ids.
    const NAME: &'static str;

    /// Whether [`cancel`](Self::cancel) and [`reschedule`](Self::reschedule)
    /// recognise the key of a timer that already fired or was cancelled
    /// (returning `None` / `false`). Where this is `false` such a key may name
    /// a newer timer, or make `reschedule` panic; see the peer.
    const DETECTS_STALE_KEYS: bool = true;

    /// Adds a timer due at tick `deadline` (≤ the clock: due at the next
    /// [`advance`](Self::advance)) carrying `value`.
    fn insert(&mut self, deadline: u64, value: u64) -> Self::Key;

    /// Removes a pending timer and returns its value; `None` if it already
    /// fired or was cancelled (given [`DETECTS_STALE_KEYS`](Self::DETECTS_STALE_KEYS)).
    fn cancel(&mut self, key: Self::Key) -> Option<u64>;

    /// Moves a pending timer to `deadline`; `false` if `key` is not pending.
    /// Peers that re-file the timer under a new key (the lazy heap, the
    /// B-tree) update `key` in place, as their users would have to.
    fn reschedule(&mut self, key: &mut Self::Key, deadline: u64) -> bool;

    /// Moves the clock to `now` (never backwards) and calls `fire` with the
    /// value of every pending timer whose deadline is ≤ the clock, in
    /// non-decreasing deadline order; returns how many fired.
    fn advance(&mut self, now: u64, fire: impl FnMut(u64)) -> usize;

    /// How many timers are pending.
    fn len(&self) -> usize;

    /// Whether no timer is pending.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    /// The scripted behaviour every peer must show.
    fn scripted<Q: TimerQueue>(mut queue: Q) {
        let a = queue.insert(30, 30);
        let b = queue.insert(10, 10);
        let mut c = queue.insert(20, 20);
        queue.insert(10, 11);
        assert_eq!(queue.len(), 4);

        assert_eq!(queue.cancel(a), Some(30));
        assert_eq!(queue.len(), 3);
        assert!(queue.reschedule(&mut c, 40));

        let mut fired = Vec::new();
        assert_eq!(
            queue.advance(9, |v| fired.push(v)),
            0,
            "{} fired early",
            Q::NAME
        );
        assert_eq!(queue.advance(39, |v| fired.push(v)), 2);
        fired.sort_unstable();
        assert_eq!(fired, [10, 11], "{}", Q::NAME);
        if Q::DETECTS_STALE_KEYS {
            assert_eq!(
                queue.cancel(b),
                None,
                "{}: fired key still cancels",
                Q::NAME
            );
        }

        // The clock never goes backwards: an earlier `now` fires what is due at 39.
        queue.insert(39, 39);
        fired.clear();
        assert_eq!(queue.advance(5, |v| fired.push(v)), 1);
        assert_eq!(fired, [39], "{}", Q::NAME);

        fired.clear();
        assert_eq!(queue.advance(40, |v| fired.push(v)), 1);
        assert_eq!(fired, [20], "{}", Q::NAME);
        assert!(queue.is_empty(), "{}", Q::NAME);
        if Q::DETECTS_STALE_KEYS {
            assert!(
                !queue.reschedule(&mut c, 50),
                "{}: fired key reschedules",
                Q::NAME
            );
        }
    }

    /// Random insert / cancel / reschedule / advance against a `BTreeMap`
    /// model, checking each advance fires exactly the due timers in deadline
    /// order. Only live keys are used, which every peer supports.
    fn against_model<Q: TimerQueue>(mut queue: Q, seed: u64) {
        let mut rng = crate::rng::SplitMix64(seed);
        // value -> (deadline, key)
        let mut live: BTreeMap<u64, (u64, Q::Key)> = BTreeMap::new();
        let mut now = 0;
        let mut next_value = 0;
        for _ in 0..20_000 {
            match rng.below(10) {
                0..=4 => {
                    let deadline = now + 1 + rng.below(5_000);
                    let key = queue.insert(deadline, next_value);
                    live.insert(next_value, (deadline, key));
                    next_value += 1;
                }
                5 | 6 if !live.is_empty() => {
                    let nth = rng.below(live.len() as u64) as usize;
                    let value = *live.keys().nth(nth).unwrap();
                    let (_, key) = live.remove(&value).unwrap();
                    assert_eq!(queue.cancel(key), Some(value), "{}", Q::NAME);
                }
                7 if !live.is_empty() => {
                    let nth = rng.below(live.len() as u64) as usize;
                    let (_, (deadline, key)) = live.iter_mut().nth(nth).unwrap();
                    *deadline = now + 1 + rng.below(5_000);
                    assert!(queue.reschedule(key, *deadline), "{}", Q::NAME);
                }
                _ => {
                    now += rng.below(300);
                    let mut fired = Vec::new();
                    let count = queue.advance(now, |v| fired.push(v));
                    assert_eq!(count, fired.len(), "{}", Q::NAME);
                    let deadlines: Vec<u64> = fired
                        .iter()
                        .map(|v| live.remove(v).expect("fired a timer not pending").0)
                        .collect();
                    assert!(
                        deadlines.windows(2).all(|w| w[0] <= w[1]),
                        "{} fired out of order: {deadlines:?}",
                        Q::NAME
                    );
                    assert!(
                        deadlines.iter().all(|&d| d <= now),
                        "{} fired early",
                        Q::NAME
                    );
                    assert!(
                        live.values().all(|&(d, _)| d > now),
                        "{} left a due timer pending at {now}",
                        Q::NAME
                    );
                }
            }
            assert_eq!(queue.len(), live.len(), "{}", Q::NAME);
        }
    }

    #[test]
    fn wheel_behaves() {
        scripted(WheelTimers::new());
        against_model(WheelTimers::new(), 1);
    }

    #[test]
    fn delay_queue_behaves() {
        scripted(DelayQueueTimers::new().unwrap());
        against_model(DelayQueueTimers::new().unwrap(), 2);
    }

    #[test]
    fn lazy_heap_behaves() {
        scripted(LazyHeap::new());
        against_model(LazyHeap::new(), 3);
    }

    #[test]
    fn indexed_heap_behaves() {
        scripted(IndexedHeap::new());
        against_model(IndexedHeap::new(), 4);
    }

    #[test]
    fn btree_behaves() {
        scripted(BTreeTimers::new());
        against_model(BTreeTimers::new(), 5);
    }
}

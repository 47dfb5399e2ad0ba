//! An ordered map as a timer queue: what one reaches for first in std.

use std::collections::BTreeMap;

use super::TimerQueue;

/// Names one timer in a [`BTreeTimers`]: its map key, `(deadline, seq)`.
/// Sequence numbers are never reused, so a stale key never matches.
///
/// # Examples
/// ```
/// use wheel_bench::peers::{BTreeKey, BTreeTimers, TimerQueue};
///
/// let mut timers = BTreeTimers::new();
/// let key: BTreeKey = timers.insert(7, 70);
/// assert_eq!(timers.cancel(key), Some(70));
/// assert_eq!(timers.cancel(key), None);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BTreeKey {
    deadline: u64,
    seq: u64,
}

/// `BTreeMap<(deadline, seq), value>`: the sequence number keeps equal
/// deadlines apart and fires them in insertion order. Reschedule moves the
/// entry to a new map key, so it updates the key in place.
///
/// # Examples
/// ```
/// use wheel_bench::peers::{BTreeTimers, TimerQueue};
///
/// let mut timers = BTreeTimers::new();
/// let mut key = timers.insert(10, 1);
/// timers.insert(20, 2);
/// assert!(timers.reschedule(&mut key, 30));
/// let mut fired = Vec::new();
/// timers.advance(30, |v| fired.push(v));
/// assert_eq!(fired, [2, 1]);
/// ```
#[derive(Debug, Default)]
pub struct BTreeTimers {
    map: BTreeMap<(u64, u64), u64>,
    next_seq: u64,
    now: u64,
}

impl BTreeTimers {
    /// An empty map whose clock is at tick 0.
    ///
    /// # Examples
    /// ```
    /// use wheel_bench::peers::{BTreeTimers, TimerQueue};
    ///
    /// assert!(BTreeTimers::new().is_empty());
    /// ```
    pub fn new() -> Self {
        Self::default()
    }
}

impl TimerQueue for BTreeTimers {
    type Key = BTreeKey;

    const NAME: &'static str = "btree";

    #[inline]
    fn insert(&mut self, deadline: u64, value: u64) -> BTreeKey {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.map.insert((deadline, seq), value);
        BTreeKey { deadline, seq }
    }

    #[inline]
    fn cancel(&mut self, key: BTreeKey) -> Option<u64> {
        self.map.remove(&(key.deadline, key.seq))
    }

    #[inline]
    fn reschedule(&mut self, key: &mut BTreeKey, deadline: u64) -> bool {
        let Some(value) = self.map.remove(&(key.deadline, key.seq)) else {
            return false;
        };
        self.map.insert((deadline, key.seq), value);
        key.deadline = deadline;
        true
    }

    #[inline]
    fn advance(&mut self, now: u64, mut fire: impl FnMut(u64)) -> usize {
        self.now = self.now.max(now);
        let mut fired = 0;
        while let Some(entry) = self.map.first_entry() {
            if entry.key().0 > self.now {
                break;
            }
            fire(entry.remove());
            fired += 1;
        }
        fired
    }

    #[inline]
    fn len(&self) -> usize {
        self.map.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_deadlines_fire_in_insertion_order() {
        let mut timers = BTreeTimers::new();
        for value in [3, 1, 2] {
            timers.insert(5, value);
        }
        let mut fired = Vec::new();
        timers.advance(5, |v| fired.push(v));
        assert_eq!(fired, [3, 1, 2]);
    }
}

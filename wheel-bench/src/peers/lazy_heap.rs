//! A `BinaryHeap` with lazy cancellation: the classic "mark it dead and skip
//! it when it surfaces" timer queue.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::TimerQueue;

/// Compaction never runs below this many dead entries: rebuilding a small
/// heap often costs more than carrying a few corpses.
const COMPACT_MIN: usize = 1024;

/// Names one timer in a [`LazyHeap`]: a slot and the generation the slot had
/// when this timer was filed.
///
/// # Examples
/// ```
/// use wheel_bench::peers::{LazyHeap, LazyKey, TimerQueue};
///
/// let mut heap = LazyHeap::new();
/// let key: LazyKey = heap.insert(7, 70);
/// assert_eq!(heap.cancel(key), Some(70));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LazyKey {
    slot: u32,
    generation: u32,
}

#[derive(Debug)]
struct Slot {
    value: u64,
    /// Odd while a timer is pending here. Bumped on every cancel, fire and
    /// reschedule, so heap entries carrying an older generation are dead.
    generation: u32,
}

/// `BinaryHeap<Reverse<(deadline, slot, generation)>>` plus a slab of slots.
/// Cancel and reschedule are O(1) marks: the dead heap entry stays until it
/// is popped, or until dead entries outnumber live ones and the heap is
/// rebuilt without them (amortised O(1) per cancel), which bounds the heap at
/// about twice the pending count.
///
/// Reschedule files a new heap entry, so it updates the key in place.
///
/// # Examples
/// ```
/// use wheel_bench::peers::{LazyHeap, TimerQueue};
///
/// let mut heap = LazyHeap::new();
/// let mut key = heap.insert(10, 1);
/// heap.insert(20, 2);
/// assert!(heap.reschedule(&mut key, 30));
/// let mut fired = Vec::new();
/// heap.advance(30, |v| fired.push(v));
/// assert_eq!(fired, [2, 1]);
/// ```
#[derive(Debug, Default)]
pub struct LazyHeap {
    heap: BinaryHeap<Reverse<(u64, u32, u32)>>,
    slots: Vec<Slot>,
    free: Vec<u32>,
    len: usize,
    /// Heap entries whose generation no longer matches their slot.
    dead: usize,
    now: u64,
}

impl LazyHeap {
    /// An empty heap whose clock is at tick 0.
    ///
    /// # Examples
    /// ```
    /// use wheel_bench::peers::{LazyHeap, TimerQueue};
    ///
    /// assert!(LazyHeap::new().is_empty());
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// How many entries the heap holds, dead ones included.
    ///
    /// # Examples
    /// ```
    /// use wheel_bench::peers::{LazyHeap, TimerQueue};
    ///
    /// let mut heap = LazyHeap::new();
    /// let key = heap.insert(10, 1);
    /// heap.cancel(key);
    /// assert_eq!((heap.len(), heap.heap_len()), (0, 1));
    /// ```
    pub fn heap_len(&self) -> usize {
        self.heap.len()
    }

    #[inline]
    fn is_live(&self, key: LazyKey) -> bool {
        self.slots
            .get(key.slot as usize)
            .is_some_and(|slot| slot.generation == key.generation)
    }

    /// Frees a slot whose timer just left (cancelled or fired).
    #[inline]
    fn release(&mut self, slot: u32) -> u64 {
        let entry = &mut self.slots[slot as usize];
        entry.generation = entry.generation.wrapping_add(1);
        self.free.push(slot);
        self.len -= 1;
        entry.value
    }

    /// Counts one more dead heap entry and drops them all once they
    /// outnumber the live ones.
    #[inline]
    fn bury(&mut self) {
        self.dead += 1;
        if self.dead > self.len.max(COMPACT_MIN) {
            let slots = &self.slots;
            self.heap.retain(|Reverse((_, slot, generation))| {
                slots[*slot as usize].generation == *generation
            });
            self.dead = 0;
        }
    }
}

impl TimerQueue for LazyHeap {
    type Key = LazyKey;

    const NAME: &'static str = "lazy-heap";

    #[inline]
    fn insert(&mut self, deadline: u64, value: u64) -> LazyKey {
        let slot = match self.free.pop() {
            Some(slot) => {
                let entry = &mut self.slots[slot as usize];
                entry.generation = entry.generation.wrapping_add(1);
                entry.value = value;
                slot
            }
            None => {
                self.slots.push(Slot {
                    value,
                    generation: 1,
                });
                (self.slots.len() - 1) as u32
            }
        };
        let generation = self.slots[slot as usize].generation;
        self.heap.push(Reverse((deadline, slot, generation)));
        self.len += 1;
        LazyKey { slot, generation }
    }

    #[inline]
    fn cancel(&mut self, key: LazyKey) -> Option<u64> {
        if !self.is_live(key) {
            return None;
        }
        let value = self.release(key.slot);
        self.bury();
        Some(value)
    }

    #[inline]
    fn reschedule(&mut self, key: &mut LazyKey, deadline: u64) -> bool {
        if !self.is_live(*key) {
            return false;
        }
        // Step by two: the slot stays odd (occupied) and the old entry dies.
        let entry = &mut self.slots[key.slot as usize];
        entry.generation = entry.generation.wrapping_add(2);
        key.generation = entry.generation;
        self.heap
            .push(Reverse((deadline, key.slot, key.generation)));
        self.bury();
        true
    }

    #[inline]
    fn advance(&mut self, now: u64, mut fire: impl FnMut(u64)) -> usize {
        self.now = self.now.max(now);
        let mut fired = 0;
        while let Some(&Reverse((deadline, slot, generation))) = self.heap.peek() {
            if deadline > self.now {
                break;
            }
            self.heap.pop();
            if self.slots[slot as usize].generation == generation {
                fire(self.release(slot));
                fired += 1;
            } else {
                self.dead -= 1;
            }
        }
        fired
    }

    #[inline]
    fn len(&self) -> usize {
        self.len
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dead_entries_are_compacted_once_they_outnumber_live_ones() {
        let mut heap = LazyHeap::new();
        for deadline in 0..10 {
            heap.insert(1_000_000 + deadline, deadline);
        }
        for i in 0..COMPACT_MIN as u64 {
            let key = heap.insert(100 + i, i);
            heap.cancel(key);
        }
        assert_eq!(heap.heap_len(), 10 + COMPACT_MIN);
        let key = heap.insert(5, 5);
        heap.cancel(key);
        assert_eq!(heap.heap_len(), 10, "dead entries survived compaction");
        assert_eq!(heap.len(), 10);
    }

    #[test]
    fn a_reused_slot_does_not_revive_its_dead_entry() {
        let mut heap = LazyHeap::new();
        let old = heap.insert(10, 1);
        heap.cancel(old);
        let new = heap.insert(50, 2);
        assert_eq!(new.slot, old.slot);
        assert_eq!(heap.cancel(old), None);
        let mut fired = Vec::new();
        assert_eq!(heap.advance(10, |v| fired.push(v)), 0);
        assert_eq!(heap.advance(50, |v| fired.push(v)), 1);
        assert_eq!(fired, [2]);
    }
}

//! A binary heap that knows where each timer sits, so cancel and reschedule
//! remove or move the entry at once (eager, O(log n)) instead of leaving a
//! corpse behind.

use super::TimerQueue;

/// Names one timer in an [`IndexedHeap`]: a slot and its generation.
///
/// # Examples
/// ```
/// use wheel_bench::peers::{HeapKey, IndexedHeap, TimerQueue};
///
/// let mut heap = IndexedHeap::new();
/// let key: HeapKey = heap.insert(7, 70);
/// assert_eq!(heap.cancel(key), Some(70));
/// assert_eq!(heap.cancel(key), None);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HeapKey {
    slot: u32,
    generation: u32,
}

#[derive(Clone, Copy, Debug)]
struct Node {
    deadline: u64,
    slot: u32,
}

#[derive(Debug)]
struct Slot {
    value: u64,
    /// Odd while a timer is pending here; bumped when it leaves.
    generation: u32,
    /// Where the timer sits in `heap` while pending.
    position: u32,
}

/// A min-heap of `(deadline, slot)` in a `Vec`, plus a slab of slots that
/// record each timer's heap position. Keys stay valid across reschedule.
///
/// # Examples
/// ```
/// use wheel_bench::peers::{IndexedHeap, TimerQueue};
///
/// let mut heap = IndexedHeap::new();
/// let mut key = heap.insert(10, 1);
/// heap.insert(20, 2);
/// assert!(heap.reschedule(&mut key, 30));
/// let mut fired = Vec::new();
/// heap.advance(30, |v| fired.push(v));
/// assert_eq!(fired, [2, 1]);
/// ```
#[derive(Debug, Default)]
pub struct IndexedHeap {
    heap: Vec<Node>,
    slots: Vec<Slot>,
    free: Vec<u32>,
    now: u64,
}

impl IndexedHeap {
    /// An empty heap whose clock is at tick 0.
    ///
    /// # Examples
    /// ```
    /// use wheel_bench::peers::{IndexedHeap, TimerQueue};
    ///
    /// assert!(IndexedHeap::new().is_empty());
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// The heap position of a live key.
    #[inline]
    fn position(&self, key: HeapKey) -> Option<usize> {
        match self.slots.get(key.slot as usize) {
            Some(slot) if slot.generation == key.generation => Some(slot.position as usize),
            _ => None,
        }
    }

    #[inline]
    fn place(&mut self, position: usize, node: Node) {
        self.heap[position] = node;
        self.slots[node.slot as usize].position = position as u32;
    }

    /// Moves the node at `position` towards the root until its parent is no
    /// later; returns where it stopped.
    #[inline]
    fn sift_up(&mut self, mut position: usize) -> usize {
        let node = self.heap[position];
        while position > 0 {
            let parent = (position - 1) / 2;
            if self.heap[parent].deadline <= node.deadline {
                break;
            }
            self.place(position, self.heap[parent]);
            position = parent;
        }
        self.place(position, node);
        position
    }

    /// Moves the node at `position` towards the leaves until no child is
    /// earlier.
    #[inline]
    fn sift_down(&mut self, mut position: usize) {
        let node = self.heap[position];
        let len = self.heap.len();
        loop {
            let left = 2 * position + 1;
            if left >= len {
                break;
            }
            let right = left + 1;
            let child = if right < len && self.heap[right].deadline < self.heap[left].deadline {
                right
            } else {
                left
            };
            if self.heap[child].deadline >= node.deadline {
                break;
            }
            self.place(position, self.heap[child]);
            position = child;
        }
        self.place(position, node);
    }

    /// Restores heap order around a node whose deadline just changed.
    #[inline]
    fn fix(&mut self, position: usize) {
        if self.sift_up(position) == position {
            self.sift_down(position);
        }
    }

    /// Takes the node at `position` out of the heap and frees its slot.
    #[inline]
    fn remove_at(&mut self, position: usize) -> u64 {
        let removed = self.heap.swap_remove(position);
        if position < self.heap.len() {
            let moved = self.heap[position];
            self.slots[moved.slot as usize].position = position as u32;
            self.fix(position);
        }
        let slot = &mut self.slots[removed.slot as usize];
        slot.generation = slot.generation.wrapping_add(1);
        self.free.push(removed.slot);
        slot.value
    }
}

impl TimerQueue for IndexedHeap {
    type Key = HeapKey;

    const NAME: &'static str = "indexed-heap";

    #[inline]
    fn insert(&mut self, deadline: u64, value: u64) -> HeapKey {
        let position = self.heap.len() as u32;
        let slot = match self.free.pop() {
            Some(slot) => {
                let entry = &mut self.slots[slot as usize];
                entry.generation = entry.generation.wrapping_add(1);
                entry.value = value;
                entry.position = position;
                slot
            }
            None => {
                self.slots.push(Slot {
                    value,
                    generation: 1,
                    position,
                });
                (self.slots.len() - 1) as u32
            }
        };
        self.heap.push(Node { deadline, slot });
        self.sift_up(position as usize);
        HeapKey {
            slot,
            generation: self.slots[slot as usize].generation,
        }
    }

    #[inline]
    fn cancel(&mut self, key: HeapKey) -> Option<u64> {
        let position = self.position(key)?;
        Some(self.remove_at(position))
    }

    #[inline]
    fn reschedule(&mut self, key: &mut HeapKey, deadline: u64) -> bool {
        let Some(position) = self.position(*key) else {
            return false;
        };
        self.heap[position].deadline = deadline;
        self.fix(position);
        true
    }

    #[inline]
    fn advance(&mut self, now: u64, mut fire: impl FnMut(u64)) -> usize {
        self.now = self.now.max(now);
        let mut fired = 0;
        while self
            .heap
            .first()
            .is_some_and(|root| root.deadline <= self.now)
        {
            fire(self.remove_at(0));
            fired += 1;
        }
        fired
    }

    #[inline]
    fn len(&self) -> usize {
        self.heap.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Heap order holds and every slot points at its node.
    fn assert_consistent(heap: &IndexedHeap) {
        for (position, node) in heap.heap.iter().enumerate() {
            if position > 0 {
                let parent = heap.heap[(position - 1) / 2];
                assert!(
                    parent.deadline <= node.deadline,
                    "heap order broken at {position}"
                );
            }
            let slot = &heap.slots[node.slot as usize];
            assert_eq!(
                slot.position as usize, position,
                "slot {} misplaced",
                node.slot
            );
            assert_eq!(
                slot.generation % 2,
                1,
                "slot {} pending but even",
                node.slot
            );
        }
        assert_eq!(heap.heap.len() + heap.free.len(), heap.slots.len());
    }

    #[test]
    fn positions_track_every_move() {
        let mut heap = IndexedHeap::new();
        let mut deadlines: Vec<u64> = (0..200).map(|i| (i * 7919) % 1000).collect();
        let mut keys: Vec<HeapKey> = deadlines
            .iter()
            .enumerate()
            .map(|(i, &deadline)| heap.insert(deadline, i as u64))
            .collect();
        assert_consistent(&heap);
        for i in (0..200).step_by(3) {
            deadlines[i] = (i as u64 * 104_729) % 1000;
            assert!(heap.reschedule(&mut keys[i], deadlines[i]));
        }
        assert_consistent(&heap);
        let mut pending = [true; 200];
        for i in (1..200).step_by(4) {
            assert_eq!(heap.cancel(keys[i]), Some(i as u64));
            pending[i] = false;
        }
        assert_consistent(&heap);
        let mut fired = Vec::new();
        heap.advance(500, |value| fired.push(deadlines[value as usize]));
        assert_consistent(&heap);
        assert!(
            fired.windows(2).all(|w| w[0] <= w[1]),
            "out of order: {fired:?}"
        );
        let due = (0..200)
            .filter(|&i| pending[i] && deadlines[i] <= 500)
            .count();
        assert_eq!(fired.len(), due);
        assert!(heap.heap.iter().all(|node| node.deadline > 500));
    }
}

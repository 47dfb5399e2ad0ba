//! A bucket: one slot's timers by value in chunks that never grow, and the
//! pool of emptied chunks kept for reuse.

use alloc::vec::Vec;

use super::BucketWheel;
use crate::level::Slot;

/// A bucket's chunks double in size up to `CHUNK << MAX_GROWTH` timers
/// (64 KiB for a 24-byte value).
pub(super) const MAX_GROWTH: usize = 4;

/// Room, in first-chunk units, that emptied chunks kept for reuse may hold
/// together (about 1 MiB); beyond it they are freed, so a wheel that has
/// fired a burst gives the memory back.
pub(super) const SPARE_UNITS: usize = 256;

/// Emptied chunks kept for reuse.
pub(super) struct Spare<T> {
    pub(super) chunks: Vec<Vec<(u64, T)>>,
    /// The sum of their capacities.
    pub(super) room: usize,
}

impl<T> Spare<T> {
    pub(super) const EMPTY: Self = Self {
        chunks: Vec::new(),
        room: 0,
    };

    /// A chunk from the pool, whatever its size, or a new one of `capacity`.
    #[inline]
    pub(super) fn take(&mut self, capacity: usize) -> Vec<(u64, T)> {
        match self.chunks.pop() {
            Some(chunk) => {
                self.room -= chunk.capacity();
                chunk
            }
            None => Vec::with_capacity(capacity),
        }
    }

    /// Takes the last of `chunks` into the pool if it has been emptied, so
    /// that no bucket holds an empty chunk.
    #[inline]
    pub(super) fn reclaim_last(&mut self, chunks: &mut Vec<Vec<(u64, T)>>) {
        if chunks.last().is_some_and(Vec::is_empty) {
            if let Some(chunk) = chunks.pop() {
                self.give(chunk);
            }
        }
    }

    /// Keeps an emptied chunk if the pool has room for it, or frees it.
    #[inline]
    pub(super) fn give(&mut self, chunk: Vec<(u64, T)>) {
        debug_assert!(chunk.is_empty());
        if self.room + chunk.capacity() <= SPARE_UNITS * BucketWheel::<T>::CHUNK {
            self.room += chunk.capacity();
            self.chunks.push(chunk);
        }
    }
}

/// One slot's timers, `(deadline, value)`, in chunks.
pub(super) struct Bucket<T> {
    pub(super) chunks: Vec<Vec<(u64, T)>>,
}

impl<T> Slot for Bucket<T> {
    const EMPTY: Self = Self { chunks: Vec::new() };

    /// A bucket holds no empty chunk, so it is empty iff it has none.
    #[inline(always)]
    fn is_empty(&self) -> bool {
        self.chunks.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bucket_s_chunks_double_up_to_the_cap() {
        type W = BucketWheel<u64>;
        let mut wheel = W::new();
        let n = 100 * W::CHUNK as u64;
        for value in 0..n {
            wheel.insert(5_000 + value % 64, value); // all in one level-2 slot
        }
        let bucket = wheel.tables.level(2).slot(1);
        let capacities: Vec<usize> = bucket.chunks.iter().map(Vec::capacity).collect();
        let cap = W::CHUNK << MAX_GROWTH;
        assert_eq!(capacities[..6], [1, 2, 4, 8, 16, 16].map(|k| k * W::CHUNK));
        assert!(capacities[5..].iter().all(|&c| c == cap), "{capacities:?}");
        // 100 first-chunk units: 1+2+4+8 = 15, then ceil(85 / 16) = 6 more.
        assert_eq!(capacities.len(), 4 + 6);
        wheel.validate();
        assert_eq!(wheel.advance(6_000).count() as u64, n);
        wheel.validate();
    }
}

//! The task index of a [`WakerQueue`](super::WakerQueue)'s wheel: from a
//! waker to the wheel index of its task's entry, by separate chaining.
//!
//! It has one bucket per entry, each the head of a chain of wheel indexes
//! linked through a table beside the wheel's (`chain[index]`), so that
//! filing is a push onto its bucket and forgetting an entry unlinks it
//! from its own bucket's chain: neither reads any waker. (Open addressing
//! in the same eight bytes an entry, twice the entries' positions, had to
//! hash the wakers after a removed one to shift them back.) A lookup
//! compares the chained wakers with [`will_wake`](Waker::will_wake).

use core::task::Waker;

/// No entry: an empty bucket, or the end of a chain.
pub(super) const VACANT: u32 = u32::MAX;

/// A waker's hash: of its data pointer, which wakers that
/// [`will_wake`](Waker::will_wake) each other share. An entry is indexed
/// and forgotten by the hash of the waker it keeps (the caller's clone,
/// which may carry another data pointer, or another copy of the vtable: a
/// promoted constant the compiler need not merge, and miri never does),
/// and looked up by the hash of the caller's, which finds only wakers that
/// will_wake it (and, for a caller's waker that does not will_wake its own
/// clone, by the hash of that clone). Tasks that share a data pointer but
/// not a vtable share a bucket: correct, as `will_wake` decides, but their
/// lookups walk further.
#[inline]
pub(super) fn hash(waker: &Waker) -> u32 {
    let data = waker.data().addr() as u64;
    // Fibonacci hashing: the high bits mix every input bit, and pointers'
    // low bits are mostly zero.
    (data.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 32) as u32
}

/// `N` buckets and a chain link per wheel index, each a wheel index or
/// [`VACANT`].
pub(super) struct Index<const N: usize> {
    /// Per bucket, the first wheel index of its chain.
    buckets: [u32; N],
    /// Per wheel index, the next one in its bucket's chain (any value for
    /// an index not indexed).
    chain: [u32; N],
}

impl<const N: usize> Index<N> {
    pub(super) const EMPTY: Self = Self {
        buckets: [VACANT; N],
        chain: [VACANT; N],
    };

    /// The bucket of a waker with hash `hash`: the hash scaled to the
    /// buckets, so its high bits choose.
    pub(super) fn home(hash: u32) -> usize {
        ((u64::from(hash) * N as u64) >> 32) as usize
    }

    /// The first wheel index in bucket `home`.
    pub(super) fn first(&self, home: usize) -> u32 {
        self.buckets.get(home).copied().unwrap_or(VACANT)
    }

    /// The wheel index after `index` in its chain.
    pub(super) fn after(&self, index: u32) -> u32 {
        self.chain.get(index as usize).copied().unwrap_or(VACANT)
    }

    /// The wheel index of the task `waker` belongs to, if indexed in bucket
    /// `home`; `waker_at` reads the waker at a wheel index.
    pub(super) fn find<'a>(
        &self,
        home: usize,
        waker: &Waker,
        waker_at: impl Fn(u32) -> Option<&'a Waker>,
    ) -> Option<u32> {
        let mut index = self.first(home);
        // A chain holds each entry once; the bound only keeps a broken
        // index from looping.
        for _ in 0..N {
            if index == VACANT {
                return None;
            }
            if waker_at(index).is_some_and(|queued| queued.will_wake(waker)) {
                return Some(index);
            }
            index = self.after(index);
        }
        None
    }

    /// Indexes wheel index `index`, not indexed yet, in bucket `home`.
    pub(super) fn insert(&mut self, home: usize, index: u32) {
        let (Some(first), Some(link)) = (
            self.buckets.get_mut(home),
            self.chain.get_mut(index as usize),
        ) else {
            return;
        };
        *link = core::mem::replace(first, index);
    }

    /// Removes wheel index `index` from bucket `home`'s chain.
    pub(super) fn forget(&mut self, home: usize, index: u32) {
        let next = self.after(index);
        let Some(first) = self.buckets.get_mut(home) else {
            return;
        };
        if *first == index {
            *first = next;
            return;
        }
        let mut at = *first;
        for _ in 0..N {
            let Some(link) = self.chain.get_mut(at as usize) else {
                return;
            };
            if *link == index {
                *link = next;
                return;
            }
            at = *link;
        }
    }

    /// Calls `visit(bucket, index)` for every indexed wheel index, and
    /// returns how many there are.
    ///
    /// # Panics
    /// If a chain is longer than `N` (a loop). For tests.
    pub(super) fn each(&self, mut visit: impl FnMut(usize, u32)) -> usize {
        let mut count = 0;
        for bucket in 0..N {
            let mut index = self.first(bucket);
            while index != VACANT {
                count += 1;
                assert!(count <= N, "the index's chains hold more than {N}");
                visit(bucket, index);
                index = self.after(index);
            }
        }
        count
    }
}

#[cfg(test)]
mod tests {
    use super::{Index, VACANT};

    fn chain(index: &Index<4>, home: usize) -> [u32; 4] {
        let mut found = [VACANT; 4];
        let mut at = index.first(home);
        for slot in &mut found {
            if at == VACANT {
                break;
            }
            *slot = at;
            at = index.after(at);
        }
        found
    }

    #[test]
    fn forgetting_unlinks_from_the_head_the_middle_and_the_end_of_a_chain() {
        let mut index = Index::<4>::EMPTY;
        for entry in 0..4 {
            index.insert(1, entry);
        }
        assert_eq!(chain(&index, 1), [3, 2, 1, 0]);
        index.forget(1, 2);
        assert_eq!(chain(&index, 1), [3, 1, 0, VACANT]);
        index.forget(1, 0);
        assert_eq!(chain(&index, 1), [3, 1, VACANT, VACANT]);
        index.forget(1, 3);
        assert_eq!(chain(&index, 1), [1, VACANT, VACANT, VACANT]);
        index.insert(1, 2);
        assert_eq!(chain(&index, 1), [2, 1, VACANT, VACANT]);
        index.forget(1, 1);
        index.forget(1, 2);
        assert_eq!(chain(&index, 1), [VACANT; 4]);
        assert_eq!(index.each(|_, _| {}), 0);
    }

    #[test]
    fn an_index_not_in_the_chain_or_out_of_range_changes_nothing() {
        let mut index = Index::<4>::EMPTY;
        index.insert(0, 1);
        index.insert(0, 3);
        index.forget(0, 2);
        index.forget(9, 1);
        index.insert(9, 2);
        index.insert(0, 7);
        assert_eq!(chain(&index, 0), [3, 1, VACANT, VACANT]);
        assert_eq!(index.each(|bucket, _| assert_eq!(bucket, 0)), 2);
    }
}

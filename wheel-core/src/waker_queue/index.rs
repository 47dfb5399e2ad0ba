//! The task index of a [`WakerQueue`](super::WakerQueue)'s wheel: from a
//! waker to the wheel index of its task's entry, by open addressing.
//!
//! It has `2N` positions for `N` entries, so it is at most half full and
//! probes are short; removal shifts later positions back (no tombstones),
//! so no probe sequence is ever broken. A lookup compares the stored waker
//! with [`will_wake`](Waker::will_wake).

use core::task::Waker;

/// An index position that holds no entry.
pub(super) const VACANT: u32 = u32::MAX;

/// A waker's hash: of its data pointer, which wakers that
/// [`will_wake`](Waker::will_wake) each other share. An entry is indexed
/// and forgotten by the hash of the waker it keeps (the caller's clone,
/// which may carry another data pointer, or another copy of the vtable: a
/// promoted constant the compiler need not merge, and miri never does),
/// and looked up by the hash of the caller's, which finds only wakers that
/// will_wake it (and, for a caller's waker that does not will_wake its own
/// clone, by the hash of that clone). Tasks that share a data pointer but not a vtable share a home:
/// correct, as `will_wake` decides, but their lookups probe further.
#[inline]
pub(super) fn hash(waker: &Waker) -> u32 {
    let data = waker.data().addr() as u64;
    // Fibonacci hashing: the high bits mix every input bit, and pointers'
    // low bits are mostly zero.
    (data.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 32) as u32
}

/// `2N` positions, each a wheel index or [`VACANT`].
pub(super) struct Index<const N: usize> {
    /// Pairs, as `[u32; 2 * N]` is not a stable type.
    positions: [[u32; 2]; N],
}

impl<const N: usize> Index<N> {
    /// Index positions: twice the entries.
    pub(super) const POSITIONS: usize = 2 * N;

    pub(super) const EMPTY: Self = Self {
        positions: [[VACANT; 2]; N],
    };

    /// The position the probe sequence of a waker with hash `hash` starts
    /// at: the hash scaled to the positions, so its high bits choose.
    pub(super) fn home(hash: u32) -> usize {
        ((u64::from(hash) * Self::POSITIONS as u64) >> 32) as usize
    }

    /// The position after `position`, wrapping.
    fn next(position: usize) -> usize {
        if position + 1 == Self::POSITIONS {
            0
        } else {
            position + 1
        }
    }

    /// What position `position` holds ([`VACANT`] past the end).
    pub(super) fn at(&self, position: usize) -> u32 {
        self.positions
            .get(position / 2)
            .map_or(VACANT, |pair| pair[position % 2])
    }

    fn set(&mut self, position: usize, index: u32) {
        if let Some(pair) = self.positions.get_mut(position / 2) {
            pair[position % 2] = index;
        }
    }

    /// The wheel index of the task `waker` belongs to, if indexed;
    /// `waker_at` reads the waker at a wheel index.
    pub(super) fn find<'a>(
        &self,
        home: usize,
        waker: &Waker,
        waker_at: impl Fn(u32) -> Option<&'a Waker>,
    ) -> Option<u32> {
        let mut position = home;
        // The index is at most half full, so a vacancy ends every probe;
        // the bound only keeps a broken index from looping.
        for _ in 0..Self::POSITIONS {
            let index = self.at(position);
            if index == VACANT {
                return None;
            }
            if waker_at(index).is_some_and(|queued| queued.will_wake(waker)) {
                return Some(index);
            }
            position = Self::next(position);
        }
        None
    }

    /// Indexes wheel index `index`, whose waker's probe sequence starts at
    /// `home` and which is not indexed yet, at the first vacancy.
    pub(super) fn insert(&mut self, home: usize, index: u32) {
        let mut position = home;
        for _ in 0..Self::POSITIONS {
            if self.at(position) == VACANT {
                self.set(position, index);
                return;
            }
            position = Self::next(position);
        }
    }

    /// Removes wheel index `index` (its waker's probe sequence starts at
    /// `home`), shifting later positions back so that no probe sequence is
    /// broken; `waker_at` reads the wakers of the positions it shifts.
    pub(super) fn forget<'a>(
        &mut self,
        home: usize,
        index: u32,
        waker_at: impl Fn(u32) -> Option<&'a Waker>,
    ) {
        let mut hole = home;
        let mut found = false;
        for _ in 0..Self::POSITIONS {
            match self.at(hole) {
                VACANT => break,
                at if at == index => {
                    found = true;
                    break;
                }
                _ => hole = Self::next(hole),
            }
        }
        if !found {
            return;
        }
        let mut position = Self::next(hole);
        for _ in 0..Self::POSITIONS {
            let moved = self.at(position);
            if moved == VACANT {
                break;
            }
            let home = waker_at(moved).map_or(position, |waker| Self::home(hash(waker)));
            // It stays if its home lies cyclically in (hole, position].
            let stays = if hole <= position {
                hole < home && home <= position
            } else {
                hole < home || home <= position
            };
            if !stays {
                self.set(hole, moved);
                hole = position;
            }
            position = Self::next(position);
        }
        self.set(hole, VACANT);
    }
}

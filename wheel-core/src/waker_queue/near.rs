//! The near set of a [`WakerQueue`](super::WakerQueue): a few entries held
//! flat beside the wheel, each a deadline, a waker and a tag of the
//! waker's hash in a numbered cell.
//!
//! A scan of a few packed deadlines costs less than a wheel's cascades and
//! the walk that finds its earliest deadline, and a scan of a few packed
//! tags less than probing an index, so a queue keeps its entries here
//! while they fit. Nothing orders the cells: finding a task, what is due,
//! the least or the latest deadline is a scan, which the compiler turns
//! into a few wide compares.

use core::task::Waker;

/// Cells of the near set: a scan of their deadlines spans two cache lines,
/// and their tags fit one vector register.
pub(super) const CELLS: usize = 16;
/// Every cell taken.
const ALL: u32 = (1 << CELLS) - 1;

/// The tag of a waker with hash `hash`: its low bits, which the index's
/// home (the high bits) does not use.
#[inline]
pub(super) fn tag(hash: u32) -> u8 {
    hash as u8
}

/// Bit `c` set iff byte `c % 8` of word `c / 8` of `tags` is `tag`, in a
/// few word operations.
#[inline]
fn tags_equal(tags: [u64; CELLS / 8], tag: u8) -> u32 {
    const LOW: u64 = u64::from_ne_bytes([0x7f; 8]);
    let pattern = u64::from_ne_bytes([tag; 8]);
    let mut matches = 0;
    for (half, word) in tags.into_iter().enumerate() {
        let differ = word ^ pattern;
        // A byte's high bit ends up set iff the byte of `differ` is zero,
        // with no carry between bytes.
        let zero = !(((differ & LOW) + LOW) | differ | LOW);
        // Gathers the eight high bits into one byte.
        let bits = ((zero >> 7).wrapping_mul(0x0102_0408_1020_4080) >> 56) as u32;
        matches |= bits << (8 * half);
    }
    matches
}

/// `CELLS` entries, each taken or vacant.
pub(super) struct Near {
    /// Each cell's deadline; `u64::MAX` when vacant, so that a scan for the
    /// least needs no mask.
    deadlines: [u64; CELLS],
    wakers: [Option<Waker>; CELLS],
    /// Each taken cell's [`tag`], byte `c % 8` of word `c / 8`, so that a
    /// lookup compares few wakers. Written a word at a time: a byte store
    /// would stall the next lookup's word load until it retires.
    tags: [u64; CELLS / 8],
    /// Bit `c` is set while cell `c` holds an entry.
    taken: u32,
}

impl Near {
    pub(super) const EMPTY: Self = Self {
        deadlines: [u64::MAX; CELLS],
        wakers: [const { None }; CELLS],
        tags: [0; CELLS / 8],
        taken: 0,
    };

    /// How many cells hold an entry.
    #[inline]
    pub(super) fn len(&self) -> usize {
        self.taken.count_ones() as usize
    }

    #[inline]
    pub(super) fn is_empty(&self) -> bool {
        self.taken == 0
    }

    /// Whether every cell is taken.
    #[inline]
    pub(super) fn is_full(&self) -> bool {
        self.taken == ALL
    }

    /// The cell holding the task `waker` (whose tag is `tag`) belongs to.
    #[inline]
    pub(super) fn find(&self, tag: u8, waker: &Waker) -> Option<usize> {
        let mut matches = tags_equal(self.tags, tag) & self.taken;
        while matches != 0 {
            let cell = matches.trailing_zeros() as usize;
            if self.waker(cell).is_some_and(|held| held.will_wake(waker)) {
                return Some(cell);
            }
            matches &= matches - 1;
        }
        None
    }

    /// Puts an entry in a vacant cell and returns the cell, or hands the
    /// waker back when every cell is taken.
    #[inline]
    pub(super) fn insert(&mut self, deadline: u64, waker: Waker, tag: u8) -> Result<usize, Waker> {
        if self.taken == ALL {
            return Err(waker);
        }
        let cell = (!self.taken).trailing_zeros() as usize;
        let slots = (
            self.deadlines.get_mut(cell),
            self.wakers.get_mut(cell),
            self.tags.get_mut(cell / 8),
        );
        let (Some(at), Some(held), Some(tags)) = slots else {
            return Err(waker);
        };
        *at = deadline;
        *held = Some(waker);
        let shift = 8 * (cell % 8);
        *tags = (*tags & !(0xff << shift)) | u64::from(tag) << shift;
        self.taken |= 1 << cell;
        Ok(cell)
    }

    /// The waker cell `cell` holds.
    #[inline]
    pub(super) fn waker(&self, cell: usize) -> Option<&Waker> {
        self.wakers.get(cell)?.as_ref()
    }

    /// The deadline of the entry in cell `cell` (`u64::MAX` if vacant).
    #[inline]
    pub(super) fn deadline(&self, cell: usize) -> u64 {
        self.deadlines.get(cell).copied().unwrap_or(u64::MAX)
    }

    /// Moves the entry in the taken cell `cell` to `deadline`.
    #[inline]
    pub(super) fn set_deadline(&mut self, cell: usize, deadline: u64) {
        if self.taken & (1 << cell) != 0 {
            if let Some(at) = self.deadlines.get_mut(cell) {
                *at = deadline;
            }
        }
    }

    /// Empties cell `cell`, returning its waker.
    #[inline]
    pub(super) fn take(&mut self, cell: usize) -> Option<Waker> {
        let waker = self.wakers.get_mut(cell)?.take()?;
        self.taken &= !(1 << cell);
        if let Some(at) = self.deadlines.get_mut(cell) {
            *at = u64::MAX;
        }
        Some(waker)
    }

    /// In one pass: the cells whose entries are due by `now`, as bits, and
    /// the least deadline of the others (`u64::MAX` if none).
    #[inline]
    pub(super) fn split(&self, now: u64) -> (u32, u64) {
        let Some(after) = now.checked_add(1) else {
            return (self.taken, u64::MAX);
        };
        // Ticks past `after`, wrapping: every due deadline comes out above
        // every later one, so one `min` finds the least later deadline and
        // one compare tells the due. Four running minima, so that the
        // compares do not wait on each other.
        let due_from = u64::MAX - now;
        let (mut due, mut least) = (0, [u64::MAX; 4]);
        for (group, deadlines) in self.deadlines.chunks_exact(4).enumerate() {
            for (lane, (&deadline, least)) in deadlines.iter().zip(&mut least).enumerate() {
                let past = deadline.wrapping_sub(after);
                due |= u32::from(past >= due_from) << (group * 4 + lane);
                *least = (*least).min(past);
            }
        }
        let least = least[0].min(least[1]).min(least[2].min(least[3]));
        // A vacant cell's `u64::MAX` is never due here (`now < u64::MAX`),
        // and it stands for no later deadline.
        let later = if least < due_from {
            least + after
        } else {
            u64::MAX
        };
        (due & self.taken, later)
    }

    /// The least deadline held, `u64::MAX` if none.
    #[inline]
    pub(super) fn least(&self) -> u64 {
        self.deadlines.iter().copied().min().unwrap_or(u64::MAX)
    }

    /// A cell holding the latest deadline, and that deadline.
    pub(super) fn latest(&self) -> Option<(usize, u64)> {
        (0..CELLS)
            .filter(|&cell| self.taken & (1 << cell) != 0)
            .map(|cell| (cell, self.deadline(cell)))
            .max_by_key(|&(_, deadline)| deadline)
    }

    /// Checks that a cell holds a waker iff it is taken, with that waker's
    /// tag, that a vacant cell's deadline is `u64::MAX`, and that no two
    /// cells hold one task. `tag_of` is the tag of a waker.
    ///
    /// # Panics
    /// If any is broken, naming the cell.
    pub(super) fn validate(&self, tag_of: impl Fn(&Waker) -> u8) {
        for cell in 0..CELLS {
            let taken = self.taken & (1 << cell) != 0;
            assert_eq!(
                self.waker(cell).is_some(),
                taken,
                "cell {cell}: taken {taken}"
            );
            match self.waker(cell) {
                None => assert_eq!(self.deadline(cell), u64::MAX, "vacant cell {cell}"),
                Some(waker) => {
                    let held = (self.tags[cell / 8] >> (8 * (cell % 8))) as u8;
                    assert_eq!(held, tag_of(waker), "cell {cell}'s tag");
                    assert_eq!(
                        self.find(tag_of(waker), waker),
                        Some(cell),
                        "cell {cell}'s task is in an earlier cell too"
                    );
                }
            }
        }
        assert_eq!(self.taken & !ALL, 0, "cells past {CELLS} taken");
    }
}

#[cfg(test)]
mod tests {
    use super::tags_equal;

    #[test]
    fn tags_equal_marks_exactly_the_equal_bytes() {
        let tags: [u8; 16] = [
            0, 1, 0x80, 0x7f, 0xff, 1, 0, 0xfe, 1, 1, 0x81, 0, 2, 0xff, 1, 0x01,
        ];
        for tag in [0u8, 1, 0x7f, 0x80, 0x81, 0xfe, 0xff, 2, 3] {
            let want = (0..16)
                .filter(|&c| tags[c] == tag)
                .fold(0, |m, c| m | 1 << c);
            let words = [0, 8].map(|at| {
                (0..8).fold(0u64, |word, byte| {
                    word | u64::from(tags[at + byte]) << (8 * byte)
                })
            });
            assert_eq!(tags_equal(words, tag), want, "tag {tag:#x}");
        }
    }
}

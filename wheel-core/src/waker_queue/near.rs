//! The near set of a [`WakerQueue`](super::WakerQueue): a few entries held
//! flat beside the wheel, each a deadline, a waker and a tag of the
//! waker's data pointer in a numbered cell.
//!
//! A scan of a few packed deadlines costs less than a wheel's cascades and
//! the walk that finds its earliest deadline, and a scan of a few packed
//! tags less than a hash lookup in the index, so a queue keeps its
//! entries here while they fit. Nothing orders the cells: finding a task,
//! the least or the latest deadline is a scan without branches (a few
//! words of tags; the deadlines with four running minima on a 64-bit core,
//! one on a 32-bit one); the least deadline's cell is kept, so firing the
//! earliest entry is a take and one scan for the next.

use core::task::Waker;

/// Cells of the near set: a scan of their deadlines spans two cache lines,
/// and their tags fit two 64-bit words or four 32-bit ones.
pub(super) const CELLS: usize = 16;
/// Running minima of a scan of the cells: four on a 64-bit core, whose
/// compares then do not wait on each other; one on a 32-bit core, where a
/// deadline and its cell take three registers a minimum and four would
/// spill.
const LANES: usize = if usize::BITS == 64 { 4 } else { 1 };
// The scans take the cells a word of tags and `LANES` deadlines at a
// time, and the taken cells are bits of a `u32`: none may be left over.
const _: () = assert!(CELLS % PER_WORD == 0 && CELLS % LANES == 0 && CELLS <= 32);

/// Every cell taken.
const ALL: u32 = (1 << CELLS) - 1;

/// The tag no waker has: a vacant cell's, so that a lookup needs no mask
/// of the taken cells.
const VACANT_TAG: u8 = u8::MAX;

/// A waker's tag: the top 7 bits of its data pointer times a Fibonacci
/// constant, which mix every bit of it (a task number in the low bits, for
/// an executor whose wakers carry one, as well as those above a task's
/// alignment), and never [`VACANT_TAG`]: a multiply and a shift. Wakers
/// that [`will_wake`](Waker::will_wake) each other share their data
/// pointer, so a task has one tag; tasks whose tags collide (one lookup in
/// eight, with 16 cells taken) cost a compare of their wakers more.
#[inline]
pub(super) fn tag(waker: &Waker) -> u8 {
    /// ⌊2^BITS / φ⌋, odd, for the pointer's width.
    const FIBONACCI: usize = (0x9e37_79b9_7f4a_7c15_u64 >> (64 - usize::BITS)) as usize;
    let data = waker.data().addr();
    (data.wrapping_mul(FIBONACCI) >> (usize::BITS - 7)) as u8
}

/// Tags in a word of [`Near::tags`]: a word is a register, so that a
/// 32-bit core scans four native words rather than two halved ones.
const PER_WORD: usize = core::mem::size_of::<usize>();

/// The high bit of every byte of `tags` that is `tag`, and perhaps of
/// bytes above one that is (a borrow runs into them): few operations, and
/// the caller compares the wakers anyway.
#[inline]
fn tag_candidates(tags: usize, tag: u8) -> usize {
    const ONES: usize = usize::MAX / 0xff;
    const HIGH: usize = ONES * 0x80;
    let differ = tags ^ (ONES * usize::from(tag));
    differ.wrapping_sub(ONES) & !differ & HIGH
}

/// `CELLS` entries, each taken or vacant.
pub(super) struct Near {
    /// Each cell's deadline; `u64::MAX` when vacant, so that a scan for the
    /// least needs no mask.
    deadlines: [u64; CELLS],
    wakers: [Option<Waker>; CELLS],
    /// Each cell's [`tag`] ([`VACANT_TAG`] if vacant), byte `c %
    /// PER_WORD` of word `c / PER_WORD`, so that a lookup compares few
    /// wakers. Written a word at a time: a byte store would stall the next
    /// lookup's word load until it retires.
    tags: [usize; CELLS / PER_WORD],
    /// The least deadline held (`u64::MAX` if none), so that a call with
    /// nothing near due need not scan.
    least: u64,
    /// A cell holding `least` while it is below `u64::MAX`: firing the
    /// earliest entry takes it without a scan for what is due.
    least_cell: u8,
    /// Bit `c` is set while cell `c` holds an entry.
    taken: u32,
    /// At least the latest deadline held, in a queue that asks
    /// [`Self::latest_after`]: exact after a scan for it, then raised by
    /// every entry filed, so that a new entry later than it (a task
    /// waiting again, most often) goes past the cells unscanned.
    latest_bound: u64,
}

impl Near {
    pub(super) const EMPTY: Self = Self {
        deadlines: [u64::MAX; CELLS],
        wakers: [const { None }; CELLS],
        tags: [usize::MAX; CELLS / PER_WORD],
        least: u64::MAX,
        least_cell: 0,
        taken: 0,
        latest_bound: 0,
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

    /// The cell holding the task `waker` (whose tag is `tag`) belongs to.
    /// Inlined always: with four words of tags (a 32-bit core) the compiler
    /// made it a call from every `schedule_wake`.
    #[inline(always)]
    pub(super) fn find(&self, tag: u8, waker: &Waker) -> Option<usize> {
        for (word, &tags) in self.tags.iter().enumerate() {
            let mut matches = tag_candidates(tags, tag);
            while matches != 0 {
                let cell = word * PER_WORD + (matches.trailing_zeros() / 8) as usize;
                if self.waker(cell).is_some_and(|held| held.will_wake(waker)) {
                    return Some(cell);
                }
                matches &= matches - 1;
            }
        }
        None
    }

    /// Puts an entry in a vacant cell and returns the cell, or hands the
    /// waker back when every cell is taken. `bound_latest` raises the
    /// latest bound to the new deadline: a queue whose entries all fit
    /// the cells never asks for [`Self::latest_after`], and skips it.
    #[inline]
    pub(super) fn insert(
        &mut self,
        deadline: u64,
        waker: Waker,
        tag: u8,
        bound_latest: bool,
    ) -> Result<usize, Waker> {
        if self.taken == ALL {
            return Err(waker);
        }
        let cell = (!self.taken).trailing_zeros() as usize;
        let slots = (
            self.deadlines.get_mut(cell),
            self.wakers.get_mut(cell),
            self.tags.get_mut(cell / PER_WORD),
        );
        let (Some(at), Some(held), Some(tags)) = slots else {
            return Err(waker);
        };
        *at = deadline;
        // The cell is vacant (its bit is clear), so nothing is dropped.
        core::mem::forget(held.replace(waker));
        // A vacant cell's tag is all ones: clearing the bits `tag` lacks
        // writes it.
        *tags &= !(usize::from(VACANT_TAG ^ tag) << (8 * (cell % PER_WORD)));
        self.taken |= 1 << cell;
        self.lower_least(cell, deadline);
        if bound_latest {
            self.latest_bound = self.latest_bound.max(deadline);
        }
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

    /// Moves the entry in the taken cell `cell` to `deadline`, earlier than
    /// its own (the latest bound then stays above it).
    #[inline]
    pub(super) fn set_deadline(&mut self, cell: usize, deadline: u64) {
        if self.taken & (1 << cell) != 0 {
            if let Some(at) = self.deadlines.get_mut(cell) {
                debug_assert!(deadline <= *at, "a near deadline only comes earlier");
                *at = deadline;
                self.lower_least(cell, deadline);
            }
        }
    }

    /// Makes `least` `deadline`, held by `cell`, if that is lower.
    #[inline]
    fn lower_least(&mut self, cell: usize, deadline: u64) {
        if deadline < self.least {
            self.least = deadline;
            self.least_cell = cell as u8;
        }
    }

    /// Empties cell `cell`, returning its waker; `least` is left to the
    /// caller.
    #[inline]
    fn take(&mut self, cell: usize) -> Option<Waker> {
        let waker = self.wakers.get_mut(cell)?.take()?;
        self.taken &= !(1 << cell);
        if let Some(at) = self.deadlines.get_mut(cell) {
            *at = u64::MAX;
        }
        // Not the tag of the task that left (often the very task asking
        // again), which a lookup would then compare for nothing.
        if let Some(tags) = self.tags.get_mut(cell / PER_WORD) {
            *tags |= usize::from(VACANT_TAG) << (8 * (cell % PER_WORD));
        }
        Some(waker)
    }

    /// Empties cell `cell`, returning its waker, and keeps `least` exact
    /// (with a scan if it held it).
    #[inline]
    pub(super) fn take_one(&mut self, cell: usize) -> Option<Waker> {
        let deadline = self.deadline(cell);
        let waker = self.take(cell)?;
        if deadline == self.least {
            self.find_least();
        }
        Some(waker)
    }

    /// Takes out every entry due by `now`, each before its waker is handed
    /// to `wake`, with `least` and its cell exact at every hand-over (so a
    /// `wake` that unwinds leaves the cells consistent).
    #[inline]
    pub(super) fn fire_due(&mut self, now: u64, mut wake: impl FnMut(Waker)) {
        if self.least > now {
            return;
        }
        // Most often only the earliest is due: it is the kept cell, and
        // the scan after taking it finds the next least. (When the least
        // is `u64::MAX`, so is `now`, and the kept cell may be vacant: an
        // entry filed at `u64::MAX` does not move it. Then nothing is
        // taken here, and the pass below takes every taken cell.)
        if let Some(waker) = self.take_least() {
            wake(waker);
        }
        if self.least > now {
            return;
        }
        // More are due (a late call, or tasks waiting for one tick): one
        // pass finds them all, rather than a scan each. The earliest of
        // them (the kept cell) goes last, so that `least` stays exact while
        // the others leave, and one scan after it finds the next least.
        let last = usize::from(self.least_cell);
        let mut others = self.due_cells(now) & !(1 << last);
        while others != 0 {
            let cell = others.trailing_zeros() as usize;
            others &= others - 1;
            if let Some(waker) = self.take(cell) {
                wake(waker);
            }
        }
        if let Some(waker) = self.take_least() {
            wake(waker);
        }
    }

    /// Empties the kept cell of the least deadline, returning its waker
    /// (none if it is vacant, as it may be when `least` is `u64::MAX`),
    /// and finds the next least: `take_one` without asking whether the
    /// cell held the least.
    #[inline(always)]
    fn take_least(&mut self) -> Option<Waker> {
        // Below `CELLS` always: the modulo only spares the bounds checks.
        let waker = self.take(usize::from(self.least_cell) % CELLS)?;
        self.find_least();
        Some(waker)
    }

    /// The taken cells due by `now`.
    fn due_cells(&self, now: u64) -> u32 {
        let mut due = 0;
        for (cell, &deadline) in self.deadlines.iter().enumerate() {
            due |= u32::from(deadline <= now) << cell;
        }
        due & self.taken
    }

    /// Sets `least` and its cell with a scan: inlined, as a call's saved
    /// registers cost a due task as much as a tenth of its time.
    #[inline(always)]
    fn find_least(&mut self) {
        // All vacant or at `u64::MAX`: cell 0, which `fire_due` may find
        // vacant.
        let (least, cell) = self.least_by(0, |_, deadline| deadline);
        self.least = least;
        self.least_cell = cell as u8;
    }

    /// The least deadline held, `u64::MAX` if none.
    #[inline]
    pub(super) fn least(&self) -> u64 {
        self.least
    }

    /// A cell holding the latest deadline and that deadline, if it is later
    /// than `at`: without a scan when `at` is at or past the latest found by
    /// the last scan and every deadline filed since.
    pub(super) fn latest_after(&mut self, at: u64) -> Option<(usize, u64)> {
        if at >= self.latest_bound {
            return None;
        }
        let latest = self.latest();
        self.latest_bound = latest.map_or(0, |(_, deadline)| deadline);
        latest.filter(|&(_, deadline)| at < deadline)
    }

    /// A cell holding the latest deadline, and that deadline.
    pub(super) fn latest(&self) -> Option<(usize, u64)> {
        if self.taken == 0 {
            return None;
        }
        // The least of the deadlines' complements, vacant cells' reading
        // as the largest, so that they never win.
        let first = self.taken.trailing_zeros() as usize;
        let (key, cell) = self.least_by(first, |cell, deadline| {
            let vacant = u64::from(self.taken >> cell & 1 == 0);
            !deadline | vacant.wrapping_neg()
        });
        Some((cell, !key))
    }

    /// The least `key(cell, deadline)` over the cells and a cell holding
    /// it, `otherwise` if every key is `u64::MAX`; `key` must read
    /// `u64::MAX` for every vacant cell. A branch-free scan with
    /// [`LANES`] running minima.
    #[inline(always)]
    fn least_by(&self, otherwise: usize, key: impl Fn(usize, u64) -> u64) -> (u64, usize) {
        let mut lanes = [(u64::MAX, otherwise); LANES];
        // New entries take the lowest vacant cell, so the taken ones sit
        // low: the groups above the highest are all vacant.
        let groups = (u32::BITS - self.taken.leading_zeros()).div_ceil(LANES as u32) as usize;
        for (group, deadlines) in self.deadlines.chunks_exact(LANES).enumerate().take(groups) {
            for (lane, (&deadline, best)) in deadlines.iter().zip(&mut lanes).enumerate() {
                let cell = group * LANES + lane;
                let key = key(cell, deadline);
                if key < best.0 {
                    *best = (key, cell);
                }
            }
        }
        lanes
            .into_iter()
            .reduce(|a, b| if b.0 < a.0 { b } else { a })
            .unwrap_or((u64::MAX, otherwise))
    }

    /// Checks that a cell holds a waker iff it is taken, with that waker's
    /// tag, that a vacant cell's deadline is `u64::MAX`, that no two cells
    /// hold one task, and that the kept least is the least, held by its
    /// cell, and, if `bound_latest` (as every insert was asked), that no
    /// deadline is past the latest bound. `tag_of` is the tag of a waker.
    ///
    /// # Panics
    /// If any is broken, naming the cell.
    pub(super) fn validate(&self, tag_of: impl Fn(&Waker) -> u8, bound_latest: bool) {
        for cell in 0..CELLS {
            let taken = self.taken & (1 << cell) != 0;
            assert_eq!(
                self.waker(cell).is_some(),
                taken,
                "cell {cell}: taken {taken}"
            );
            let held = (self.tags[cell / PER_WORD] >> (8 * (cell % PER_WORD))) as u8;
            match self.waker(cell) {
                None => {
                    assert_eq!(self.deadline(cell), u64::MAX, "vacant cell {cell}");
                    assert_eq!(held, VACANT_TAG, "vacant cell {cell}'s tag");
                }
                Some(waker) => {
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
        let least = self.deadlines.iter().copied().min().unwrap_or(u64::MAX);
        assert_eq!(self.least, least, "kept least");
        for cell in 0..CELLS {
            if bound_latest && self.waker(cell).is_some() {
                assert!(
                    self.deadline(cell) <= self.latest_bound,
                    "cell {cell} is past the latest bound {}",
                    self.latest_bound
                );
            }
        }
        if least < u64::MAX {
            assert_eq!(
                self.deadline(usize::from(self.least_cell)),
                least,
                "least's cell"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::tag_candidates;

    /// Tasks' wakers from a real allocator: none has the vacant cells' tag,
    /// and their tags spread.
    #[cfg(feature = "alloc")]
    #[test]
    fn no_waker_has_the_vacant_tag_and_tags_spread() {
        use super::{tag, VACANT_TAG};
        use alloc::sync::Arc;
        use alloc::task::Wake;
        use alloc::vec::Vec;
        use core::task::Waker;

        struct Task;
        impl Wake for Task {
            fn wake(self: Arc<Self>) {}
        }
        let wakers: Vec<Waker> = (0..4096).map(|_| Waker::from(Arc::new(Task))).collect();
        let mut seen = [false; 256];
        for waker in &wakers {
            seen[usize::from(tag(waker))] = true;
        }
        assert!(!seen[usize::from(VACANT_TAG)], "a waker has the vacant tag");
        let distinct = seen.iter().filter(|&&seen| seen).count();
        assert!(distinct >= 64, "4096 tasks have {distinct} tags");
    }

    #[test]
    fn tag_candidates_include_every_equal_byte_and_none_below_it() {
        use super::PER_WORD;

        let all: [u8; 16] = [
            0, 1, 0x80, 0x7f, 0xff, 1, 0xfe, 0x81, 2, 2, 0xff, 0, 0x7f, 0x80, 1, 0xff,
        ];
        // A word's worth at a time, whatever the word's width.
        for tags in all.chunks_exact(PER_WORD) {
            let mut bytes = [0; PER_WORD];
            bytes.copy_from_slice(tags);
            let word = usize::from_le_bytes(bytes);
            for tag in [0u8, 1, 2, 0x7f, 0x80, 0x81, 0xfe, 0xff, 3] {
                let found = tag_candidates(word, tag);
                let first = tags.iter().position(|&t| t == tag);
                for (byte, &t) in tags.iter().enumerate() {
                    let marked = found & (0x80 << (8 * byte)) != 0;
                    if t == tag {
                        assert!(marked, "tag {tag:#x}: byte {byte} of {tags:?} not marked");
                    } else if first.is_none_or(|first| byte < first) {
                        assert!(!marked, "tag {tag:#x}: byte {byte} of {tags:?} marked");
                    }
                }
            }
        }
    }

    /// The latest and least deadlines, scanned branch-free, against a plain
    /// look at every cell: deadlines at both ends of the range, cells
    /// vacated in the middle, and one entry alone.
    #[test]
    fn the_scans_find_the_latest_and_least_of_the_taken_cells() {
        use super::{Near, CELLS};
        use core::task::Waker;

        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let mut draw = move |bound: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % bound
        };
        for _ in 0..2_000 {
            let mut near = Near::EMPTY;
            let filled = 1 + draw(CELLS as u64) as usize;
            for _ in 0..filled {
                let deadline = match draw(4) {
                    0 => 0,
                    1 => u64::MAX,
                    _ => draw(1_000),
                };
                // Any tag, and one task for every cell: only the deadline
                // scans are under test (`validate` would refuse the cells).
                let _ = near.insert(deadline, Waker::noop().clone(), 0, true);
            }
            for cell in 0..CELLS {
                if draw(3) == 0 && near.len() > 1 {
                    let _ = near.take_one(cell);
                }
            }
            let taken = || (0..CELLS).filter(|&cell| near.waker(cell).is_some());
            let deadlines = near.deadlines;
            let latest = taken().map(|cell| near.deadline(cell)).max();
            let (cell, deadline) = near.latest().expect("a taken cell");
            assert_eq!(Some(deadline), latest, "latest of {deadlines:?}");
            assert_eq!(
                near.deadline(cell),
                deadline,
                "latest's cell in {deadlines:?}"
            );
            assert!(near.waker(cell).is_some(), "latest names vacant {cell}");
            let least = taken().map(|cell| near.deadline(cell)).min();
            assert_eq!(Some(near.least()), least, "least of {deadlines:?}");
        }
        assert_eq!(Near::EMPTY.latest(), None);
    }
}

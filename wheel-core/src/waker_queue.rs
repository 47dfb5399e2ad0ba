//! An embassy-style timer queue of wakers: each task's earliest deadline,
//! held in a near set of a few cells or in a [`FixedWheel`], and found
//! again through an index keyed by the waker.
//!
//! # Ground rules
//!
//! - One entry per task: wakers that [`will_wake`](Waker::will_wake) each
//!   other are one task: a near cell is found by a tag of the waker's data
//!   pointer (`near.rs`), a wheel entry through the index (`index.rs`, a
//!   hash of the same pointer), which holds wheel entries only. Both are
//!   taken from the clone an entry keeps; a caller's waker that does not
//!   `will_wake` its own clone is looked up again by that clone before a
//!   new entry is filed.
//! - A new entry takes a vacant near cell; when none is vacant, one earlier
//!   than the latest near entry takes that entry's cell and the latest moves
//!   to the wheel; any other goes to the wheel. An entry keeps its place
//!   when its deadline is lowered. Which entries are near is only for
//!   speed: every call looks at both, and, with a clock that never goes
//!   back, nothing depends on the split (a clock read earlier than before
//!   is held at the wheel's time for the wheel's entries only).
//! - `earliest` is the least pending deadline, exactly, unless `stale`:
//!   `schedule_wake` only lowers deadlines or adds entries, so it keeps
//!   `earliest` with one `min`; only taking entries out (firing, or waking
//!   one early when full) can raise it, and then it is found again from the
//!   near cells and the wheel's earliest list.
//! - Finding the wheel's least walks a slot above level 0, so the least
//!   deadline of the slot last walked is kept in `walked` while the wheel's
//!   clock has not reached that slot: deadlines filed into it lower the
//!   kept minimum, and it is forgotten only if the entry holding it leaves
//!   the slot early. A task that fires again and again below a crowded
//!   slot then does not walk the crowd each time.
//! - A full queue wakes a late entry early: one of the wheel's latest slot,
//!   whose deadline is neither `earliest` nor the walked slot's minimum
//!   when it can (so that making room moves neither), or the latest near
//!   entry when the wheel holds none.
//! - Every entry leaves its place and the index before its waker is woken:
//!   a waker that panics leaves a consistent queue behind.

mod index;
mod near;
mod validate;

use core::task::Waker;

use crate::slab::NIL;
use crate::wheel::Earliest;
use crate::FixedWheel;
use index::{hash, Index};
use near::{tag, Near, CELLS};

/// Slots per level of the wheel inside: with 64 slots × 11 levels (2.9 KiB
/// of tables, one list a slot) a deadline up to 2^18 ticks ahead is
/// cascaded at most twice on its way down; 16 × 16 take 1.1 KiB, but
/// cascade once more per factor of 16, and fired 512 tasks' entries 1.4×
/// slower.
const SLOTS: usize = 64;
/// Levels of the wheel inside: ⌈64 / log2 `SLOTS`⌉.
const LEVELS: usize = 11;

/// A timer queue of wakers with `N` entries, for an async executor's time
/// driver: the contract of embassy's `embassy-time-queue-utils` queues,
/// with O(1) amortised calls where they scan every entry.
///
/// A driver calls [`schedule_wake`](Self::schedule_wake) when a task waits
/// for a tick and [`next_expiration`](Self::next_expiration) when its alarm
/// fires, and sets the alarm to what `next_expiration` returns. A task
/// (wakers that [`will_wake`](Waker::will_wake) each other) holds at most
/// one entry, at the earliest tick it asked for; a waker whose clone does
/// not `will_wake` it (another data pointer, or another copy of the
/// vtable) is the task its clone is, since the clone is what the queue
/// keeps and compares later calls with. When all `N` entries are
/// taken, a new task's call wakes one pending task early (it polls, finds
/// its time not come, and asks again) rather than lose it. Nothing
/// allocates; [`new`](Self::new) is `const`, so the queue can be a
/// `static` behind the driver's critical section.
///
/// **Memory:** per queue, the wheel's tables, 16 near cells and the rest,
/// 3 308 bytes on a 32-bit ARM core (Cortex-M), 3 296 on i686 (where a
/// `u64` is aligned to 4) and 3 448 on a 64-bit target; per entry, 36, 36
/// and 48 bytes (the deadline and two links, the waker with a generation,
/// and the index's bucket and chain link); the total rounded up to a
/// `u64`'s alignment, and on i686 and 64-bit targets one pointer less per
/// queue without the `alloc` feature. `tests/memory.rs` pins these
/// figures on the host and on i686, and `ci/qemu.sh` on a Cortex-M4.
///
/// **Cost:** up to 16 entries are held flat beside the wheel (mostly the
/// earliest, when there are more): finding a task among them is a scan of
/// 16 packed tags; the cell of their least deadline is kept, so firing
/// one takes it at once and finds the next least with a scan of 16 packed
/// deadlines, with no cascade and no index (several due at once take one
/// more pass between them, not a scan each). A task in the
/// wheel is found by a hash lookup after the tag scan. Adding one to the wheel
/// is a wheel insert; each wheel entry is cascaded at most once per level
/// on its way down, and firing it is O(1). Finding the wheel's exact
/// earliest deadline after entries leave walks its earliest slot when that
/// lies on a level above 0, and each slot's walk is remembered until the
/// clock reaches it; it is walked again only if the entry holding its
/// minimum leaves it early (a task asking again for an earlier tick, or
/// woken early by a full queue).
///
/// **Panics:** none of its methods panic. A waker whose `wake` panics
/// unwinds out of the call that woke it (`next_expiration`, or
/// `schedule_wake` when full); that entry is gone, every entry not woken
/// yet stays pending and is woken by the next call, and the queue stays
/// consistent. A `schedule_wake` that unwinds so has queued its task, but
/// its answer is lost: a driver that catches the panic should set its
/// alarm from `next_expiration`. A waker whose `clone` panics unwinds out
/// of `schedule_wake` before any entry moves: that task is not queued, and
/// no other is lost. One whose `drop` panics when `schedule_wake` drops a
/// spare clone (a waker that does not `will_wake` its own clone) unwinds
/// with the task's deadline lowered but the answer lost, as for `wake`.
///
/// # Examples
/// ```
/// use core::task::Waker;
/// use wheel_core::WakerQueue;
///
/// let mut queue: WakerQueue<8> = WakerQueue::new();
/// let task = Waker::noop();
/// assert!(queue.schedule_wake(100, task)); // empty queue: arm the alarm
/// assert!(!queue.schedule_wake(150, task)); // same task, later: keeps 100
/// assert!(queue.schedule_wake(90, task)); // earlier: move the alarm
/// assert_eq!(queue.next_expiration(50), 90); // nothing due yet
/// assert_eq!(queue.next_expiration(90), u64::MAX); // woken; none left
/// ```
pub struct WakerQueue<const N: usize> {
    near: Near,
    wheel: FixedWheel<Waker, N, SLOTS, LEVELS>,
    index: Index<N>,
    /// The least pending deadline, `u64::MAX` if none; exact unless `stale`.
    earliest: u64,
    /// Set while entries are being taken out, so that a waker that panics
    /// leaves `earliest` to be found again.
    stale: bool,
    /// The least deadline in the wheel slot last walked for it, while the
    /// wheel's clock is short of that slot.
    walked: Option<Walked>,
}

/// Whether a task is queued, as [`WakerQueue::lower_queued`] found it.
enum Queued {
    /// Not queued.
    Not,
    /// Queued, at a deadline no later than the one asked for.
    Kept,
    /// Queued, and moved to the earlier deadline asked for.
    Lowered,
}

/// A wheel slot's least deadline, kept after walking the slot.
#[derive(Clone, Copy, Debug)]
struct Walked {
    start: u64,
    last: u64,
    least: u64,
}

impl Walked {
    fn covers(&self, deadline: u64) -> bool {
        (self.start..=self.last).contains(&deadline)
    }
}

impl<const N: usize> WakerQueue<N> {
    /// An empty queue with room for `N` tasks (`N` from 1 to 2³⁰, checked
    /// at compile time).
    ///
    /// # Examples
    /// ```
    /// use std::sync::Mutex;
    /// use wheel_core::WakerQueue;
    ///
    /// // A driver keeps it in a static, behind its critical section.
    /// static QUEUE: Mutex<WakerQueue<16>> = Mutex::new(WakerQueue::new());
    /// assert!(QUEUE.lock().unwrap().is_empty());
    /// ```
    pub const fn new() -> Self {
        const { assert!(N >= 1 && N <= 1 << 30, "WakerQueue holds 1 to 2^30 tasks") };
        Self {
            near: Near::EMPTY,
            wheel: FixedWheel::fixed(0),
            index: Index::EMPTY,
            earliest: u64::MAX,
            stale: false,
            walked: None,
        }
    }

    /// How many tasks are queued.
    ///
    /// # Examples
    /// ```
    /// let mut queue = wheel_core::WakerQueue::<4>::new();
    /// queue.schedule_wake(7, core::task::Waker::noop());
    /// assert_eq!(queue.len(), 1);
    /// ```
    pub fn len(&self) -> usize {
        self.near.len() + self.wheel.len()
    }

    /// Whether no task is queued.
    ///
    /// # Examples
    /// ```
    /// assert!(wheel_core::WakerQueue::<4>::new().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.near.is_empty() && self.wheel_is_empty()
    }

    /// Whether entries can go past the near cells into the wheel: not in a
    /// queue whose `N` entries all fit the cells, which then never looks
    /// for the latest near entry to move, nor keeps a bound on it.
    const PAST_NEAR: bool = N > CELLS;

    /// Whether the wheel holds no entry: always, for a queue whose `N`
    /// entries all fit the near cells (a new entry makes room first when
    /// `N` are queued), so that the compiler drops the wheel from the
    /// common calls of such a queue. `file_in_wheel` checks it in tests.
    #[inline(always)]
    fn wheel_is_empty(&self) -> bool {
        !Self::PAST_NEAR || self.wheel.is_empty()
    }

    /// Asks for `waker` to be woken once the clock reaches `at`. Returns
    /// `true` iff this call made the earliest pending deadline earlier, or
    /// the queue was empty: then the driver must move its alarm (to what
    /// [`next_expiration`](Self::next_expiration) returns). A task already
    /// queued keeps the earlier of its deadline and `at`. A new task when
    /// all `N` entries are taken first wakes another pending task early.
    ///
    /// O(1) amortised. A deadline already passed is woken by the next
    /// `next_expiration`.
    ///
    /// # Examples
    /// ```
    /// use std::sync::Arc;
    /// use std::task::{Wake, Waker};
    /// use wheel_core::WakerQueue;
    ///
    /// struct Task;
    /// impl Wake for Task {
    ///     fn wake(self: Arc<Self>) {}
    /// }
    /// let (a, b) = (Waker::from(Arc::new(Task)), Waker::from(Arc::new(Task)));
    ///
    /// let mut queue: WakerQueue<4> = WakerQueue::new();
    /// assert!(queue.schedule_wake(500, &a));
    /// assert!(!queue.schedule_wake(600, &b)); // the alarm at 500 stays
    /// assert!(queue.schedule_wake(400, &b)); // b moves to 400: re-arm
    /// assert_eq!(queue.len(), 2);
    /// ```
    pub fn schedule_wake(&mut self, at: u64, waker: &Waker) -> bool {
        // The common calls, kept small: a near task's deadline lowered, or
        // a new task into a vacant cell while the wheel holds none.
        if !self.stale && self.wheel_is_empty() {
            let tag = tag(waker);
            let before = self.earliest;
            if let Some(cell) = self.near.find(tag, waker) {
                if at >= self.near.deadline(cell) {
                    return false;
                }
                self.near.set_deadline(cell, at);
                self.earliest = before.min(at);
                return self.earliest < before;
            }
            let was_empty = self.near.is_empty();
            // `insert` checks the cells; the queue's own room matters only
            // when it holds fewer entries than there are cells.
            let room = N >= CELLS || self.near.len() < N;
            if room {
                // The clone it keeps is what later calls' wakers are
                // compared with. One that does not `will_wake` the caller's
                // (another data pointer, another copy of the vtable) may
                // find this task queued under an earlier clone: the slow
                // path looks. Else it shares the caller's tag.
                let kept = waker.clone();
                if kept.will_wake(waker) && self.near.insert(at, kept, tag, Self::PAST_NEAR).is_ok()
                {
                    self.earliest = before.min(at);
                    return self.earliest < before || was_empty;
                }
            }
        }
        self.schedule_wake_slow(at, waker)
    }

    /// [`schedule_wake`](Self::schedule_wake) past its common calls.
    #[inline(never)]
    fn schedule_wake_slow(&mut self, at: u64, waker: &Waker) -> bool {
        if self.stale {
            self.find_earliest();
        }
        let before = self.earliest;
        let was_empty = self.is_empty();
        let mut early = None;
        // A clone not kept: dropped once the queue is consistent again, as
        // its drop is the caller's code.
        let mut spare = None;
        match self.lower_queued(hash(waker), at, waker) {
            Queued::Kept => return false,
            Queued::Lowered => {}
            Queued::Not => {
                // The clone is the caller's code and may panic: before any
                // entry leaves to make room, so that none is lost with it.
                let kept = waker.clone();
                // What the queue keeps and compares later calls with: a
                // clone that does not `will_wake` the caller's waker may
                // find the task queued under an earlier clone.
                let again = if kept.will_wake(waker) {
                    Queued::Not
                } else {
                    self.lower_queued(hash(&kept), at, &kept)
                };
                match again {
                    Queued::Kept => return false,
                    Queued::Lowered => spare = Some(kept),
                    Queued::Not => {
                        if self.len() == N {
                            early = self.make_room();
                        }
                        // Unreachable with room made; never lose a wake.
                        if let Some(back) = self.file(at, kept) {
                            early = Some(back);
                        }
                    }
                }
            }
        }
        if self.stale {
            self.find_earliest();
        }
        self.earliest = self.earliest.min(at);
        if let Some(waker) = early {
            waker.wake();
        }
        drop(spare);
        self.earliest < before || was_empty
    }

    /// Lowers the deadline of the task `waker` (hash `hash`) belongs to, if
    /// it is queued, to `at` if that is earlier; says which.
    #[inline(always)]
    fn lower_queued(&mut self, hash: u32, at: u64, waker: &Waker) -> Queued {
        // The wheel first: here it holds entries, and most of them when
        // there are many.
        if let Some(index) = self.find(hash, waker) {
            let old = self.wheel.deadline_at(index);
            let Some(id) = self.wheel.id_at(index).filter(|_| at < old) else {
                return Queued::Kept;
            };
            self.wheel.reschedule(id, at);
            self.refiled(Some(old), Some(at));
            Queued::Lowered
        } else if let Some(cell) = self.near.find(tag(waker), waker) {
            if at >= self.near.deadline(cell) {
                return Queued::Kept;
            }
            self.near.set_deadline(cell, at);
            Queued::Lowered
        } else {
            Queued::Not
        }
    }

    /// Wakes every task due by `now` and returns the next deadline, or
    /// `u64::MAX` if none is pending: where the driver sets its alarm.
    /// O(1) amortised; a call with nothing due returns at once.
    ///
    /// `now` is the driver's clock, which never goes back (embassy's time
    /// driver promises as much). Should it read earlier than at a call
    /// before, no task due after the latest reading is woken, but one due
    /// between the two readings may be: the wheel inside does not move its
    /// clock back, and takes what it holds due by its own clock, as
    /// tokio's time driver does.
    ///
    /// # Examples
    /// ```
    /// use core::task::Waker;
    /// use wheel_core::WakerQueue;
    ///
    /// let mut queue: WakerQueue<2> = WakerQueue::new();
    /// queue.schedule_wake(1_000, Waker::noop());
    /// assert_eq!(queue.next_expiration(999), 1_000);
    /// assert_eq!(queue.next_expiration(5_000), u64::MAX);
    /// assert!(queue.is_empty());
    /// ```
    pub fn next_expiration(&mut self, now: u64) -> u64 {
        if now < self.earliest && !self.stale {
            return self.earliest;
        }
        self.stale = true;
        // Most calls at many tasks fire wheel entries only: the near cells'
        // kept least says at once that none of theirs is due, here rather
        // than in a call.
        if self.near.least() <= now {
            self.near.fire_due(now, Waker::wake);
        }
        // An empty wheel's clock may lag: it only files later deadlines a
        // level higher.
        let wheel_least = if self.wheel_is_empty() {
            u64::MAX
        } else {
            self.expire_wheel(now)
        };
        self.earliest = wheel_least.min(self.near.least());
        self.stale = false;
        self.earliest
    }

    /// Wakes every wheel entry due by `now` and returns the wheel's least
    /// deadline: out of line, so that a queue whose entries fit the near
    /// cells runs a small `next_expiration`.
    #[inline(never)]
    fn expire_wheel(&mut self, now: u64) -> u64 {
        if self.walked.is_some_and(|walked| walked.start <= now) {
            self.walked = None;
        }
        // One expired entry at a time, each out of the wheel and the index
        // before it is woken; the look that finds none due says where the
        // next lies.
        let earliest = loop {
            match self.wheel.pop_expired(now) {
                Ok(expired) => {
                    self.forget(hash(&expired.value), expired.id.index());
                    expired.value.wake();
                }
                Err(earliest) => break earliest,
            }
        };
        self.least_of(earliest)
    }

    /// Files a new entry, `waker` the clone it keeps: near if a cell is
    /// vacant or it is earlier than the latest near entry (which then
    /// moves to the wheel), else in the wheel. Returns a waker to wake
    /// early if there was no room (never, with room made).
    fn file(&mut self, at: u64, waker: Waker) -> Option<Waker> {
        let tag = tag(&waker);
        match self.near.insert(at, waker, tag, Self::PAST_NEAR) {
            Ok(_) => None,
            Err(waker) => self.file_past_near(at, waker),
        }
    }

    /// [`file`](Self::file) when every near cell is taken: kept out of
    /// line, so that the common calls stay small.
    #[inline(never)]
    fn file_past_near(&mut self, at: u64, waker: Waker) -> Option<Waker> {
        let Some((cell, latest)) = self.near.latest_after(at) else {
            return self.file_in_wheel(at, waker);
        };
        // The latest near entry makes way: it moves to the wheel.
        let moving = self.near.take_one(cell)?;
        let early = self.file_in_wheel(latest, moving);
        let tag = tag(&waker);
        match self.near.insert(at, waker, tag, Self::PAST_NEAR) {
            Ok(_) => early,
            Err(waker) => Some(waker),
        }
    }

    /// Files a new entry in the wheel and indexes it by the hash of the
    /// waker it keeps, which is what taking it out hashes; hands the waker
    /// back if the wheel is full.
    fn file_in_wheel(&mut self, at: u64, waker: Waker) -> Option<Waker> {
        debug_assert!(Self::PAST_NEAR, "a queue of {N} filed past its near cells");
        let home = Index::<N>::home(hash(&waker));
        match self.wheel.try_insert(at, waker) {
            Ok(id) => {
                self.index.insert(home, id.index());
                self.refiled(None, Some(at));
                None
            }
            Err(full) => Some(full.into_inner()),
        }
    }

    /// Sets `earliest` from the near cells and the wheel.
    fn find_earliest(&mut self) {
        self.earliest = self.wheel_earliest().min(self.near.least());
        self.stale = false;
    }

    /// The wheel's least deadline, walking its earliest list if need be.
    fn wheel_earliest(&mut self) -> u64 {
        self.least_of(self.wheel.earliest())
    }

    /// The least deadline where the wheel said its earliest lies, walking
    /// that slot unless `walked` holds its minimum.
    #[inline(always)]
    fn least_of(&mut self, earliest: Earliest<[u32; 1]>) -> u64 {
        match earliest {
            Earliest::Empty => u64::MAX,
            Earliest::At(tick) => tick,
            Earliest::Due(heads) => self.wheel.least_on(heads),
            Earliest::InSlot { start, last, heads } => match self.walked {
                Some(walked) if (walked.start, walked.last) == (start, last) => walked.least,
                _ => {
                    let least = self.wheel.least_on(heads);
                    self.walked = Some(Walked { start, last, least });
                    least
                }
            },
        }
    }

    /// Keeps `walked` true when a wheel entry's deadline goes from `old`
    /// (`None`: a new entry) to `new` (`None`: it left), never later.
    fn refiled(&mut self, old: Option<u64>, new: Option<u64>) {
        let Some(walked) = &mut self.walked else {
            return;
        };
        if let Some(new) = new.filter(|&new| walked.covers(new)) {
            walked.least = walked.least.min(new);
        } else if old.is_some_and(|old| walked.covers(old) && old == walked.least) {
            self.walked = None;
        }
    }

    /// Takes a late entry out to make room: from the wheel's latest slot,
    /// preferring one whose leaving moves no kept minimum, or the latest
    /// near entry if the wheel holds none; returns its waker to wake.
    #[inline(never)]
    fn make_room(&mut self) -> Option<Waker> {
        if self.wheel_is_empty() {
            let (cell, deadline) = self.near.latest()?;
            let waker = self.near.take_one(cell)?;
            // The latest is the earliest only if every entry has its deadline.
            if deadline == self.earliest {
                self.stale = true;
            }
            return Some(waker);
        }
        let kept = self.walked.map_or(u64::MAX, |walked| walked.least);
        let latest = self.wheel.latest();
        let candidates = latest.iter().filter(|&&(index, _)| index != NIL);
        let mut chosen = None;
        for &(index, deadline) in candidates {
            if chosen.is_none() || (deadline != self.earliest && deadline != kept) {
                chosen = Some((index, deadline));
                if deadline != self.earliest && deadline != kept {
                    break;
                }
            }
        }
        let (index, deadline) = chosen?;
        let id = self.wheel.id_at(index)?;
        let waker = self.wheel.cancel(id)?;
        self.forget(hash(&waker), index);
        self.refiled(Some(deadline), None);
        // Another entry may hold the same deadline, but only a walk can tell.
        if deadline == self.earliest {
            self.stale = true;
        }
        Some(waker)
    }

    /// The wheel index of the task `waker` (hash `hash`) belongs to, if
    /// it is in the wheel.
    fn find(&self, hash: u32, waker: &Waker) -> Option<u32> {
        if self.wheel_is_empty() {
            return None;
        }
        self.index.find(Index::<N>::home(hash), waker, |index| {
            self.wheel.value_at(index)
        })
    }

    /// Removes wheel index `index`, whose waker has hash `hash`, from the
    /// index.
    fn forget(&mut self, hash: u32, index: u32) {
        self.index.forget(Index::<N>::home(hash), index);
    }
}

impl<const N: usize> Default for WakerQueue<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> core::fmt::Debug for WakerQueue<N> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("WakerQueue")
            .field("len", &self.len())
            .field("earliest", &self.earliest)
            .finish_non_exhaustive()
    }
}

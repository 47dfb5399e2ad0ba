//! An embassy-style timer queue of wakers: each task's earliest deadline in
//! a [`FixedWheel`], found again through an index keyed by the waker.
//!
//! # Ground rules
//!
//! - One entry per task: wakers that [`will_wake`](Waker::will_wake) each
//!   other are one task. The index hashes a waker's data and vtable pointers,
//!   the two that `will_wake` compares, and holds the wheel index of that
//!   task's entry; a lookup compares the stored waker with `will_wake`.
//! - `earliest` is the least pending deadline, exactly, unless `stale`:
//!   `schedule_wake` only lowers deadlines or adds entries, so it keeps
//!   `earliest` with one `min`; only taking entries out (firing, or waking
//!   one early when full) can raise it, and then it is found again from the
//!   wheel's earliest list.
//! - Finding it walks a slot above level 0, so the least deadline of the
//!   slot last walked is kept in `walked` while the wheel's clock has not
//!   reached that slot: deadlines filed into it lower the kept minimum, and
//!   it is forgotten only if the entry holding it leaves the slot early.
//!   A task that fires again and again below a crowded slot then does not
//!   walk the crowd each time.
//! - A full queue wakes an entry of its latest slot early, one whose
//!   deadline is neither `earliest` nor the walked slot's minimum when it
//!   can, so that making room moves neither.
//! - Every entry leaves the wheel and the index before its waker is woken:
//!   a waker that panics leaves a consistent queue behind.

use core::task::{RawWakerVTable, Waker};

use crate::wheel::Earliest;
use crate::FixedWheel;

/// Slots per level of the wheel inside: 16 slots × 16 levels keep its
/// tables at about 4 KiB (64 × 11 take 11 KiB, for as fast a queue; 8 × 22
/// take 3 KiB, for a cascade more per timer).
const SLOTS: usize = 16;
/// Levels of the wheel inside: ⌈64 / log2 `SLOTS`⌉.
const LEVELS: usize = 16;
/// An index position that holds no entry.
const VACANT: u32 = u32::MAX;

/// A timer queue of wakers with `N` entries, for an async executor's time
/// driver: the contract of embassy's `embassy-time-queue-utils` queues,
/// with O(1) amortised calls where they scan every entry.
///
/// A driver calls [`schedule_wake`](Self::schedule_wake) when a task waits
/// for a tick and [`next_expiration`](Self::next_expiration) when its alarm
/// fires, and sets the alarm to what `next_expiration` returns. A task
/// (wakers that [`will_wake`](Waker::will_wake) each other) holds at most
/// one entry, at the earliest tick it asked for. When all `N` entries are
/// taken, a new task's call wakes one pending task early (it polls, finds
/// its time not come, and asks again) rather than lose it. Nothing
/// allocates; [`new`](Self::new) is `const`, so the queue can be a
/// `static` behind the driver's critical section.
///
/// **Memory:** per queue, the wheel's tables and the rest, 4 340 bytes on a
/// 32-bit target and 4 352 on a 64-bit one; per entry, 36 and 48 bytes (the
/// deadline and two links, the waker with a generation, and two index
/// positions); one pointer less per queue without the `alloc` feature.
/// `tests/memory.rs` pins these figures on the host and on i686.
///
/// **Cost:** a call on a task already queued is a hash lookup; adding one
/// is a wheel insert; each entry is cascaded at most once per level on its
/// way down, and firing it is O(1). Finding the exact earliest deadline
/// after entries leave walks the wheel's earliest slot when that lies on a
/// level above 0, and each slot's walk is remembered until the clock
/// reaches it; it is walked again only if the entry holding its minimum
/// leaves it early (a task asking again for an earlier tick, or woken
/// early by a full queue).
///
/// **Panics:** none of its methods panic. A waker whose `wake` panics
/// unwinds out of the call that woke it (`next_expiration`, or
/// `schedule_wake` when full); that entry is gone, every entry not woken
/// yet stays pending and is woken by the next call, and the queue stays
/// consistent.
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
    wheel: FixedWheel<Waker, N, SLOTS, LEVELS>,
    /// `2N` positions (pairs, as `[u32; 2 * N]` is not a stable type), by
    /// linear probing from the waker's hash: the wheel index of each
    /// task's entry, or [`VACANT`]. At most half full, so probes are short.
    index: [[u32; 2]; N],
    /// The least pending deadline, `u64::MAX` if none; exact unless `stale`.
    earliest: u64,
    /// Set while entries are being taken out, so that a waker that panics
    /// leaves `earliest` to be found again.
    stale: bool,
    /// The least deadline in the slot last walked for it, while the wheel's
    /// clock is short of that slot.
    walked: Option<Walked>,
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
    /// Index positions: twice the entries.
    const POSITIONS: usize = 2 * N;

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
            wheel: FixedWheel::fixed(0),
            index: [[VACANT; 2]; N],
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
        self.wheel.len()
    }

    /// Whether no task is queued.
    ///
    /// # Examples
    /// ```
    /// assert!(wheel_core::WakerQueue::<4>::new().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.wheel.is_empty()
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
        if self.stale {
            self.find_earliest();
        }
        let before = self.earliest;
        let was_empty = self.wheel.is_empty();
        let home = Self::home(waker);
        let mut early = None;
        match self.find(home, waker) {
            Ok(index) => {
                let old = self.wheel.deadline_at(index);
                if at >= old {
                    return false;
                }
                let Some(id) = self.wheel.id_at(index) else {
                    return false;
                };
                self.wheel.reschedule(id, at);
                self.refiled(Some(old), Some(at));
            }
            Err(mut position) => {
                if self.wheel.len() == N {
                    early = self.make_room();
                    // Making room shifted index positions: probe again.
                    position = match self.find(home, waker) {
                        Ok(_) => return false,
                        Err(position) => position,
                    };
                }
                match self.wheel.try_insert(at, waker.clone()) {
                    Ok(id) => {
                        self.set(position, id.index());
                        self.refiled(None, Some(at));
                    }
                    // Unreachable with room made; never lose a wake.
                    Err(full) => early = Some(full.into_inner()),
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
        self.earliest < before || was_empty
    }

    /// Wakes every task due by `now` and returns the next deadline, or
    /// `u64::MAX` if none is pending: where the driver sets its alarm.
    /// O(1) amortised; a call with nothing due returns at once.
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
        if self.walked.is_some_and(|walked| walked.start <= now) {
            self.walked = None;
        }
        // One expired entry at a time: the wheel is free between them for
        // the index to read other wakers.
        while let Some(expired) = self.wheel.pop_expired(now) {
            self.forget(Self::home(&expired.value), expired.id.index());
            expired.value.wake();
        }
        self.find_earliest();
        self.earliest
    }

    /// Checks the invariants: every entry is indexed once, from where its
    /// probe sequence reaches it, the index holds nothing else, and the
    /// earliest deadline and the walked slot's minimum are what they claim.
    /// O(N); for tests.
    ///
    /// # Panics
    /// If an invariant is broken, naming it.
    ///
    /// # Examples
    /// ```
    /// let mut queue = wheel_core::WakerQueue::<4>::new();
    /// queue.schedule_wake(3, core::task::Waker::noop());
    /// queue.validate();
    /// ```
    pub fn validate(&self) {
        self.wheel.validate();
        let mut indexed = 0;
        for position in 0..Self::POSITIONS {
            let index = self.at(position);
            if index == VACANT {
                continue;
            }
            indexed += 1;
            let id = self.wheel.id_at(index);
            let waker = id.and_then(|id| self.wheel.get(id));
            let waker = waker.unwrap_or_else(|| panic!("position {position} holds vacant {index}"));
            let home = Self::home(waker);
            assert_eq!(
                self.find(home, waker),
                Ok(index),
                "entry {index} at position {position} is not found from home {home}"
            );
        }
        assert_eq!(indexed, self.wheel.len(), "index holds {indexed} entries");
        let least_in = |range: core::ops::RangeInclusive<u64>| {
            (0..N as u32)
                .filter_map(|index| {
                    self.wheel
                        .id_at(index)
                        .and_then(|id| self.wheel.deadline(id))
                })
                .filter(|deadline| range.contains(deadline))
                .min()
                .unwrap_or(u64::MAX)
        };
        if !self.stale {
            let least = least_in(0..=u64::MAX);
            assert_eq!(
                self.earliest, least,
                "earliest is {} not {least}",
                self.earliest
            );
        }
        if let Some(walked) = self.walked {
            let least = least_in(walked.start..=walked.last);
            assert!(
                self.wheel.now() < walked.start,
                "{walked:?} behind {}",
                self.wheel.now()
            );
            assert_eq!(walked.least, least, "{walked:?}: least is {least}");
        }
    }

    /// Sets `earliest` from the wheel, walking its earliest list if need be.
    fn find_earliest(&mut self) {
        self.earliest = match self.wheel.earliest() {
            Earliest::Empty => u64::MAX,
            Earliest::At(tick) => tick,
            Earliest::Due => self.wheel.least_deadline(),
            Earliest::InSlot { start, last } => match self.walked {
                Some(walked) if (walked.start, walked.last) == (start, last) => walked.least,
                _ => {
                    let least = self.wheel.least_deadline();
                    self.walked = Some(Walked { start, last, least });
                    least
                }
            },
        };
        self.stale = false;
    }

    /// Keeps `walked` true when an entry's deadline goes from `old`
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

    /// Takes an entry of the latest slot out to make room, preferring one
    /// whose leaving moves no kept minimum; returns its waker to wake.
    fn make_room(&mut self) -> Option<Waker> {
        let kept = self.walked.map_or(u64::MAX, |walked| walked.least);
        let latest = self.wheel.latest();
        let candidates = latest.iter().filter(|&&(index, _)| index != VACANT);
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
        self.forget(Self::home(&waker), index);
        self.refiled(Some(deadline), None);
        // Another entry may hold the same deadline, but only a walk can tell.
        if deadline == self.earliest {
            self.stale = true;
        }
        Some(waker)
    }

    /// The index position a waker's probe sequence starts at.
    fn home(waker: &Waker) -> usize {
        let data = waker.data().addr() as u64;
        let vtable = core::ptr::from_ref::<RawWakerVTable>(waker.vtable()).addr() as u64;
        // Fibonacci hashing: the high bits mix every input bit, and pointers'
        // low bits are mostly zero.
        let hash = (data ^ vtable.rotate_left(32)).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 32;
        ((hash * Self::POSITIONS as u64) >> 32) as usize
    }

    /// The position after `position`, wrapping.
    fn next(position: usize) -> usize {
        if position + 1 == Self::POSITIONS {
            0
        } else {
            position + 1
        }
    }

    /// What index position `position` holds ([`VACANT`] past the end).
    fn at(&self, position: usize) -> u32 {
        self.index
            .get(position / 2)
            .map_or(VACANT, |pair| pair[position % 2])
    }

    fn set(&mut self, position: usize, index: u32) {
        if let Some(pair) = self.index.get_mut(position / 2) {
            pair[position % 2] = index;
        }
    }

    /// The wheel index of the task `waker` belongs to, or the vacant
    /// position where its probe sequence ends.
    fn find(&self, home: usize, waker: &Waker) -> Result<u32, usize> {
        let mut position = home;
        // The index is at most half full, so a vacancy ends every probe;
        // the bound only keeps a broken index from looping.
        for _ in 0..Self::POSITIONS {
            let index = self.at(position);
            if index == VACANT {
                return Err(position);
            }
            let queued = self.wheel.value_at(index);
            if queued.is_some_and(|queued| queued.will_wake(waker)) {
                return Ok(index);
            }
            position = Self::next(position);
        }
        Err(position)
    }

    /// Removes wheel index `index` from the index (its waker's probe
    /// sequence starts at `home`), shifting later positions back so that
    /// no probe sequence is broken (no tombstones).
    fn forget(&mut self, home: usize, index: u32) {
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
            let home = self.wheel.value_at(moved).map_or(position, Self::home);
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

//! One timer as every thread sees it: a state word that decides, once,
//! whether the timer fires, is cancelled or is abandoned at shutdown.
//!
//! # Ground rules
//!
//! - `word` packs the deadline tick, a `QUEUED` bit and the state:
//!   `tick << 3 | queued << 2 | state`. A timer leaves `PENDING` by one
//!   successful compare-exchange; whoever wins owns the consequences
//!   (running the callback, or not, and the `pending` count). That single
//!   CAS is what makes cancel-vs-fire exactly-once.
//! - Only the owner of a `Sleep` moves a timer back to `PENDING` (reset),
//!   and only by CAS, so a concurrent fire at the old tick fails its CAS.
//! - `QUEUED` is set while a message for the entry sits in the submission
//!   queue. A producer that changes the word sets it in the same CAS and
//!   pushes the entry only if it was clear; the driver clears it when it pops
//!   the entry and acts on the word it cleared it in. So each entry is in the
//!   queue at most once, and a cancel that lands while the schedule is still
//!   queued costs no second message: the driver never files that timer.
//! - `slot` is touched by the driver thread alone: where the timer is in the
//!   driver's wheel. Producers never read it; it is atomic only so that the
//!   entry is `Sync` without `unsafe`.

use core::task::Waker;
use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::sync::atomic::{AtomicU64, Ordering};
use crate::sync::{ErasedArc, Mutex};

pub(crate) const PENDING: u64 = 0;
pub(crate) const FIRED: u64 = 1;
pub(crate) const CANCELLED: u64 = 2;
/// The service shut down before the deadline.
pub(crate) const ABANDONED: u64 = 3;
const STATE: u64 = 0b011;
const QUEUED: u64 = 0b100;
const TICK_SHIFT: u32 = 3;
/// The latest tick a word can hold.
pub(crate) const MAX_TICK: u64 = u64::MAX >> TICK_SHIFT;

/// `slot` before the driver has seen the entry.
pub(crate) const SLOT_NEW: u64 = u64::MAX;
/// `slot` once the driver has seen it and it is not in the wheel.
pub(crate) const SLOT_OUT: u64 = u64::MAX - 1;

/// What a producer's `finish` tells it.
pub(crate) struct Finished {
    /// The tick the timer was due at.
    pub(crate) tick: u64,
    /// No message for the entry is queued: push one.
    pub(crate) must_push: bool,
}

/// What happens when a timer fires.
pub(crate) trait Action: Send + Sync {
    /// Runs the callback or wakes the task. Called at most once, by the
    /// thread that won `PENDING -> FIRED`. Returns `false` if it panicked.
    fn fire(&self) -> bool;
    /// The timer will never fire: wake a waiting task so it can see that.
    fn abandon(&self);
}

pub(crate) struct Entry<A: ?Sized> {
    word: AtomicU64,
    /// Driver-only: `SLOT_NEW`, `SLOT_OUT` or the wheel's `TimerId` bits.
    slot: AtomicU64,
    pub(crate) action: A,
}

/// A type-erased entry, as the queue and the wheel hold it.
pub(crate) type EntryRef = ErasedArc<Entry<dyn Action>>;

#[inline]
pub(crate) fn state_of(word: u64) -> u64 {
    word & STATE
}

#[inline]
pub(crate) fn tick_of(word: u64) -> u64 {
    word >> TICK_SHIFT
}

/// The word of a timer pending at `tick` with a message on its way.
#[inline]
fn queued_pending(tick: u64) -> u64 {
    tick.min(MAX_TICK) << TICK_SHIFT | QUEUED | PENDING
}

impl<A> Entry<A> {
    /// A pending entry, marked `QUEUED`: its creator pushes it next.
    pub(crate) fn new(tick: u64, action: A) -> Self {
        Self {
            word: AtomicU64::new(queued_pending(tick)),
            slot: AtomicU64::new(SLOT_NEW),
            action,
        }
    }
}

impl<A: ?Sized> Entry<A> {
    #[inline]
    fn word(&self) -> u64 {
        self.word.load(Ordering::Acquire)
    }

    #[inline]
    pub(crate) fn state(&self) -> u64 {
        state_of(self.word())
    }

    /// CAS loop: applies `f` to the word until it sticks or `f` declines.
    #[inline]
    fn update(&self, f: impl FnMut(u64) -> Option<u64>) -> Option<u64> {
        self.word
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, f)
            .ok()
    }

    /// A producer's `PENDING -> CANCELLED`. `None` if no longer pending; else
    /// the timer's tick, and whether the caller must push the entry so the
    /// driver sees the change (`false` when a message is already queued).
    pub(crate) fn cancel(&self) -> Option<Finished> {
        let old =
            self.update(|w| (state_of(w) == PENDING).then_some((w & !STATE) | CANCELLED | QUEUED))?;
        Some(Finished {
            tick: tick_of(old),
            must_push: old & QUEUED == 0,
        })
    }

    /// The driver's `PENDING -> ABANDONED` at shutdown; no message follows.
    pub(crate) fn abandon(&self) -> bool {
        self.update(|w| (state_of(w) == PENDING).then_some((w & !STATE) | ABANDONED))
            .is_some()
    }

    /// The word as last seen by this thread or later: a first guess for a
    /// compare-exchange, never a basis for a decision on its own.
    #[inline]
    pub(crate) fn word_relaxed(&self) -> u64 {
        self.word.load(Ordering::Relaxed)
    }

    /// The driver's fire: `PENDING -> FIRED` only if still due at `tick`
    /// (a reset to another tick makes this fail; its message re-files it).
    /// `word` is a guess at the current word, e.g. from
    /// [`word_relaxed`](Self::word_relaxed): a wrong guess costs a retry.
    /// A guess that says "not pending at `tick`" is trusted, which is sound
    /// for the driver: it filed the entry at `tick` after an RMW on the
    /// word (`take_queued`), so it cannot read a word older than that, and
    /// the word leaves "pending at `tick`" only for good or by a reset
    /// whose message re-files it.
    #[inline]
    pub(crate) fn try_fire(&self, mut word: u64, tick: u64) -> bool {
        loop {
            if state_of(word) != PENDING || tick_of(word) != tick {
                return false;
            }
            match self.word.compare_exchange_weak(
                word,
                (word & !STATE) | FIRED,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return true,
                Err(actual) => word = actual,
            }
        }
    }

    /// The owner's reset: a pending or fired timer becomes pending at `tick`.
    /// Returns the state it left and whether the caller must push the entry,
    /// or `None` if it was cancelled or abandoned.
    pub(crate) fn rearm(&self, tick: u64) -> Option<(u64, bool)> {
        let new = queued_pending(tick);
        let old = self.update(|w| matches!(state_of(w), PENDING | FIRED).then_some(new))?;
        Some((state_of(old), old & QUEUED == 0))
    }

    /// The driver, on popping the entry: clears `QUEUED` and returns the word
    /// it cleared it in, which is what the driver acts on. Any later change
    /// finds `QUEUED` clear and pushes a new message.
    #[inline]
    pub(crate) fn take_queued(&self) -> u64 {
        self.word.fetch_and(!QUEUED, Ordering::AcqRel)
    }

    /// Driver-only: where the timer is in the wheel.
    #[inline]
    pub(crate) fn slot(&self) -> u64 {
        self.slot.load(Ordering::Relaxed)
    }

    /// Driver-only.
    #[inline]
    pub(crate) fn set_slot(&self, slot: u64) {
        self.slot.store(slot, Ordering::Relaxed);
    }
}

/// A callback, taken and run once by the winner of `PENDING -> FIRED`.
pub(crate) struct Callback<F>(Mutex<Option<F>>);

impl<F> Callback<F> {
    pub(crate) fn new(f: F) -> Self {
        Self(Mutex::new(Some(f)))
    }
}

impl<F: FnOnce() + Send + 'static> Action for Callback<F> {
    fn fire(&self) -> bool {
        let f = self.0.lock().unwrap_or_else(|e| e.into_inner()).take();
        match f {
            Some(f) => catch_unwind(AssertUnwindSafe(f)).is_ok(),
            None => true,
        }
    }

    fn abandon(&self) {
        // Drop the closure now: what it captured is released at shutdown.
        drop(self.0.lock().unwrap_or_else(|e| e.into_inner()).take());
    }
}

/// A task waiting on a `Sleep`: the latest waker it was polled with.
#[derive(Default)]
pub(crate) struct Wake(Mutex<Option<Waker>>);

impl Wake {
    /// Stores `waker` unless the stored one already wakes the same task.
    pub(crate) fn register(&self, waker: &Waker) {
        let mut slot = self.0.lock().unwrap_or_else(|e| e.into_inner());
        match &mut *slot {
            Some(old) if old.will_wake(waker) => {}
            _ => *slot = Some(waker.clone()),
        }
    }

    fn wake(&self) {
        let waker = self.0.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(waker) = waker {
            waker.wake();
        }
    }
}

impl Action for Wake {
    fn fire(&self) -> bool {
        self.wake();
        true
    }

    fn abandon(&self) {
        self.wake();
    }
}

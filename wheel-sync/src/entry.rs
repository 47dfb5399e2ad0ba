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
//! - Only the owner of a `Sleep` moves a timer back to `PENDING` (a reset,
//!   from `FIRED` or `CANCELLED`, or a move while pending), and only by
//!   CAS, so a concurrent fire at the old tick fails its CAS. `ABANDONED`
//!   is final.
//! - `QUEUED` is set while a message for the entry is on its way to the
//!   driver: queued, or parked in a spot (see `shared`, rule 2). A producer
//!   that changes the word sets it in the same CAS and sends a message only
//!   if it was clear; the driver clears it when it takes the message and
//!   acts on the word it cleared it in; an owner whose message a closed
//!   queue refused clears it too (none is on its way). A cancel that takes
//!   its parked message back leaves it set: a cancel is final. So each
//!   entry has at most one message on its way. A cancel sends none: the driver's copy of a filed timer
//!   simply fails to fire, and the canceller counts it dead (`shared`,
//!   rule 4).
//! - `marks` are touched by the driver thread alone: whether the newest
//!   copy of the entry in its wheel was live when filed, and a mark for its
//!   pass over the copies (see `shared`, rule 4). Producers never read
//!   them; they are atomic only so that the entry is `Sync` without
//!   `unsafe`.
//! - `place` is written only by the park of a new timer's message on its
//!   owner's thread (only a new timer is parked; a re-arm is queued),
//!   before the owner's reference leaves that thread, and read only by the
//!   owner's cancel or move: a hint of where the message is parked, which
//!   the exchange (or the comparison) on that place checks (see `spot`).

use core::marker::PhantomData;
use core::ptr::NonNull;

use crate::action::{Action, Fired, Wake};
use crate::executor::Executor;
use crate::sync::atomic::{fence, AtomicU32, AtomicU64, AtomicU8, Ordering};

pub(crate) const PENDING: u64 = 0;
pub(crate) const FIRED: u64 = 1;
pub(crate) const CANCELLED: u64 = 2;
/// The service shut down before the deadline.
pub(crate) const ABANDONED: u64 = 3;
const STATE: u64 = 0b011;
const QUEUED: u64 = 0b100;
const TICK_SHIFT: u32 = 3;
/// An entry's mark: the last word the driver filed was pending.
const FILED: u8 = 1;
/// An entry's mark: the driver's pass over its copies has met one.
const SEEN: u8 = 2;
/// The latest tick a word can hold.
pub(crate) const MAX_TICK: u64 = u64::MAX >> TICK_SHIFT;

/// The operations on an entry whose action type has been erased: one table
/// per action type, pointed at by every entry of that type.
struct VTable {
    fire: unsafe fn(NonNull<Entry>, Option<&Executor>) -> Fired,
    cancel: unsafe fn(NonNull<Entry>) -> bool,
    abandon: unsafe fn(NonNull<Entry>) -> bool,
    free: unsafe fn(NonNull<Entry>),
}

/// The shared part of one timer: what the driver, the queue and the owner
/// all use. It heads an allocation of a [`Timer`], whose action follows it,
/// and is reached through one-pointer references (no fat pointers in the
/// wheel or the queue, no weak count).
pub(crate) struct Entry {
    word: AtomicU64,
    /// References: the owner's, a queued message's, the wheel's copies
    /// (below twice the driver's live timers, see its `drop_dead`), so 32
    /// bits are plenty: 2^32 copies would take 64 GiB.
    refs: AtomicU32,
    /// Driver-only marks: `FILED` while the last word the driver filed was
    /// pending (its newest copy was live then), `SEEN` during the driver's
    /// pass over its copies. Producers never read it; it is atomic only so
    /// that the entry is `Sync` without `unsafe`.
    marks: AtomicU8,
    /// The spot's place its message was parked in (ground rules): where
    /// its owner's cancel or move looks. A hint only: each acts on the
    /// place only if it holds this entry.
    place: AtomicU8,
    vtable: &'static VTable,
}

/// An entry and its action in one allocation. `repr(C)` puts the header
/// first, so a pointer to a `Timer<A>` is a pointer to its `Entry`.
#[repr(C)]
struct Timer<A> {
    entry: Entry,
    action: A,
}

impl<A: Action> Timer<A> {
    const VTABLE: &'static VTable = &VTable {
        fire: Self::fire,
        cancel: Self::cancel,
        abandon: Self::abandon,
        free: Self::free,
    };

    /// # Safety
    /// `entry` heads a live `Timer<A>`, and [`Action::fire`]'s contract holds.
    unsafe fn fire(entry: NonNull<Entry>, executor: Option<&Executor>) -> Fired {
        // SAFETY: the caller promises a `Timer<A>` behind the pointer, and
        // the header is its first field (`repr(C)`); fire's contract is passed on.
        unsafe { entry.cast::<Self>().as_ref().action.fire(executor) }
    }

    /// # Safety
    /// As for [`fire`](Self::fire), with [`Action::cancel`]'s contract.
    unsafe fn cancel(entry: NonNull<Entry>) -> bool {
        // SAFETY: as in `fire`.
        unsafe { entry.cast::<Self>().as_ref().action.cancel() }
    }

    /// # Safety
    /// As for [`fire`](Self::fire), with [`Action::abandon`]'s contract.
    unsafe fn abandon(entry: NonNull<Entry>) -> bool {
        // SAFETY: as in `fire`.
        unsafe { entry.cast::<Self>().as_ref().action.abandon() }
    }

    /// # Safety
    /// `entry` heads a `Timer<A>` made by [`EntryRef::new`] whose last
    /// reference is being dropped: no other thread can reach it.
    unsafe fn free(entry: NonNull<Entry>) {
        // SAFETY: it was made by `EntryRef::new` from a `Box<Timer<A>>` and
        // is unreachable now: ours to drop and free.
        drop(unsafe { Box::from_raw(entry.cast::<Self>().as_ptr()) });
    }
}

/// A counted reference to an entry, one pointer wide. `EntryRef<A>` knows
/// its action type; `EntryRef` (`A = ()`) is the erased kind the queue and
/// the wheel hold. Clone and drop work like `Arc`'s.
pub(crate) struct EntryRef<A = ()> {
    ptr: NonNull<Entry>,
    _action: PhantomData<A>,
}

// SAFETY: an `EntryRef` gives shared access to an `Entry` (atomics and a
// `'static` table) and to its action, and the allocation is freed by
// whichever thread drops the last reference. So it may move to another
// thread when the action may be shared (`Sync`) and dropped there (`Send`).
// The erased `EntryRef<()>` is made only from an `EntryRef<A: Action>`,
// and `Action` requires both.
unsafe impl<A: Send + Sync> Send for EntryRef<A> {}
// SAFETY: as for `Send`: every access through `&EntryRef` is to the
// entry's atomics or to the `Sync` action.
unsafe impl<A: Send + Sync> Sync for EntryRef<A> {}

impl<A: Action> EntryRef<A> {
    /// A pending entry marked `QUEUED`, and its two references: the
    /// owner's, and the message its creator pushes next. Counted at once
    /// rather than cloned: one locked instruction fewer per timer.
    pub(crate) fn new(tick: u64, action: A) -> (Self, EntryRef) {
        let timer = Timer {
            entry: Entry {
                word: AtomicU64::new(queued_pending(tick)),
                refs: AtomicU32::new(2),
                marks: AtomicU8::new(0),
                place: AtomicU8::new(0),
                vtable: Timer::<A>::VTABLE,
            },
            action,
        };
        let ptr = NonNull::from(Box::leak(Box::new(timer))).cast();
        let owner = Self {
            ptr,
            _action: PhantomData,
        };
        let message = EntryRef {
            ptr,
            _action: PhantomData,
        };
        (owner, message)
    }

    /// The action, for its owner.
    pub(crate) fn action(&self) -> &A {
        // SAFETY: an `EntryRef<A>` with `A: Action` is only made by `new`,
        // which allocated a `Timer<A>`; the reference keeps it alive.
        unsafe { &self.ptr.cast::<Timer<A>>().as_ref().action }
    }
}

impl<A> EntryRef<A> {
    /// Another reference to the same entry, with its type erased.
    pub(crate) fn erased(&self) -> EntryRef {
        self.clone().erase()
    }

    /// This reference with its type erased.
    pub(crate) fn erase(self) -> EntryRef {
        let ptr = self.ptr;
        core::mem::forget(self);
        EntryRef {
            ptr,
            _action: PhantomData,
        }
    }

    /// Runs the action's [`Action::fire`].
    ///
    /// # Safety
    /// [`Action::fire`]'s contract: the caller won this arming's move to `FIRED`.
    #[inline]
    pub(crate) unsafe fn fire(&self, executor: Option<&Executor>) -> Fired {
        // SAFETY: `vtable` is the table of the action this entry heads; the
        // pointer is the allocation's own, valid for all of it; the caller
        // keeps fire's contract.
        unsafe { (self.vtable.fire)(self.ptr, executor) }
    }

    /// Runs the action's [`Action::cancel`].
    ///
    /// # Safety
    /// [`Action::cancel`]'s contract: the caller won the move to `CANCELLED`.
    #[inline]
    pub(crate) unsafe fn cancel_action(&self) -> bool {
        // SAFETY: as in `fire`.
        unsafe { (self.vtable.cancel)(self.ptr) }
    }

    /// Runs the action's [`Action::abandon`].
    ///
    /// # Safety
    /// [`Action::abandon`]'s contract: the caller won the move to `ABANDONED`.
    #[inline]
    pub(crate) unsafe fn abandon_action(&self) -> bool {
        // SAFETY: as in `fire`.
        unsafe { (self.vtable.abandon)(self.ptr) }
    }
}

impl EntryRef {
    /// The reference as a raw pointer, for a parking spot; the count is not
    /// touched, so the pointer owns this reference until [`from_raw`](Self::from_raw).
    pub(crate) fn into_raw(self) -> *mut Entry {
        let ptr = self.ptr.as_ptr();
        core::mem::forget(self);
        ptr
    }

    /// Takes back a reference given up by [`into_raw`](Self::into_raw).
    ///
    /// # Safety
    /// `ptr` came from `into_raw`, and its reference is taken back once.
    pub(crate) unsafe fn from_raw(ptr: *mut Entry) -> Self {
        Self {
            // SAFETY: `into_raw` gave out a pointer from a `NonNull`.
            ptr: unsafe { NonNull::new_unchecked(ptr) },
            _action: PhantomData,
        }
    }
}

impl<A> EntryRef<A> {
    /// Where the entry lives: what [`into_raw`](EntryRef::into_raw) gives
    /// for a reference to it.
    pub(crate) fn as_ptr(&self) -> *mut Entry {
        self.ptr.as_ptr()
    }
}

impl<A> core::ops::Deref for EntryRef<A> {
    type Target = Entry;

    #[inline]
    fn deref(&self) -> &Entry {
        // SAFETY: the entry lives while any reference does, and this is one.
        unsafe { self.ptr.as_ref() }
    }
}

impl<A> Clone for EntryRef<A> {
    #[inline]
    fn clone(&self) -> Self {
        // Relaxed, as `Arc::clone`: the new reference is made from a live
        // one, so the count cannot reach zero meanwhile. Overflow would need
        // billions of live references: the owner's, a message's, and the
        // driver's copies, which it keeps below twice its live timers.
        self.refs.fetch_add(1, Ordering::Relaxed);
        Self {
            ptr: self.ptr,
            _action: PhantomData,
        }
    }
}

impl<A> Drop for EntryRef<A> {
    #[inline]
    fn drop(&mut self) {
        // Release, then Acquire by the last: as `Arc`'s drop, so every use
        // of the entry through other references happens before it is freed.
        if self.refs.fetch_sub(1, Ordering::Release) != 1 {
            return;
        }
        fence(Ordering::Acquire);
        let free = self.vtable.free;
        // SAFETY: this was the last reference, so nothing else can reach the
        // entry; `free` is the function for its action type.
        unsafe { free(self.ptr) }
    }
}

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

impl Entry {
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

    /// A producer's `PENDING -> CANCELLED`, which sends no message. `None`
    /// if no longer pending; else whether the driver has filed the timer:
    /// `QUEUED` was clear, so the driver took the last message, and the
    /// word, pending since, was pending then (its copy is now dead).
    #[inline]
    pub(crate) fn cancel(&self) -> Option<bool> {
        let old = self.update(|w| (state_of(w) == PENDING).then_some((w & !STATE) | CANCELLED))?;
        Some(old & QUEUED == 0)
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
    /// once the word leaves "pending at `tick`" (fired, abandoned, cancelled
    /// or moved), only the owner's re-arm brings it back, and a re-arm is
    /// always filed again: it sends a message, or finds one on its way
    /// (or, at shutdown, has its message refused and is abandoned).
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

    /// The driver, on popping the entry (or an owner whose message a closed
    /// queue refused): clears `QUEUED` and returns the word it cleared it
    /// in, which is what the driver acts on. Any later change finds
    /// `QUEUED` clear and pushes a new message.
    #[inline]
    pub(crate) fn take_queued(&self) -> u64 {
        self.word.fetch_and(!QUEUED, Ordering::AcqRel)
    }

    /// Whether a copy filed at `tick` can still fire: the word, as the
    /// driver last saw it or later, is pending at `tick`.
    #[inline]
    pub(crate) fn is_pending_at(&self, tick: u64) -> bool {
        let word = self.word_relaxed();
        state_of(word) == PENDING && tick_of(word) == tick
    }

    /// The tick the timer is moving to, if it is pending there with the
    /// move's message still on its way (`QUEUED`), as the driver last saw
    /// the word or later. The driver keeps a copy of such a timer rather
    /// than drop it as dead (`shared`, rule 4).
    #[inline]
    pub(crate) fn moving_to(&self) -> Option<u64> {
        let word = self.word_relaxed();
        (state_of(word) == PENDING && word & QUEUED != 0).then(|| tick_of(word))
    }

    /// Whether a reference besides this one is live (a message, a copy in
    /// the driver's wheel): a snapshot.
    #[inline]
    pub(crate) fn is_shared(&self) -> bool {
        self.refs.load(Ordering::Relaxed) > 1
    }

    /// The spot's place its message was last parked in (a hint: see the
    /// field).
    #[inline]
    pub(crate) fn place(&self) -> usize {
        usize::from(self.place.load(Ordering::Relaxed))
    }

    /// Records the place its message is about to be parked in.
    #[inline]
    pub(crate) fn set_place(&self, place: u8) {
        self.place.store(place, Ordering::Relaxed);
    }

    /// Driver-only: records whether its newest copy is live, and returns
    /// whether the one before was.
    #[inline]
    pub(crate) fn set_filed(&self, live: bool) -> bool {
        self.set_mark(FILED, live)
    }

    /// Driver-only: sets the mark of its pass over the copies, and returns
    /// whether it was set.
    #[inline]
    pub(crate) fn mark_seen(&self) -> bool {
        self.set_mark(SEEN, true)
    }

    /// Driver-only: clears the mark of its pass over the copies, writing
    /// only if it is set (the line is left clean for its owner).
    #[inline]
    pub(crate) fn clear_seen(&self) {
        if self.marks.load(Ordering::Relaxed) & SEEN != 0 {
            self.set_mark(SEEN, false);
        }
    }

    /// A plain load and store: no other thread touches the marks.
    #[inline]
    fn set_mark(&self, mark: u8, on: bool) -> bool {
        let marks = self.marks.load(Ordering::Relaxed);
        let new = if on { marks | mark } else { marks & !mark };
        self.marks.store(new, Ordering::Relaxed);
        marks & mark != 0
    }

    /// Driver-only: whether its newest copy is live.
    #[cfg(all(test, not(loom)))]
    pub(crate) fn is_filed(&self) -> bool {
        self.marks.load(Ordering::Relaxed) & FILED != 0
    }
}

impl EntryRef<Wake> {
    /// The owner's re-arm: a timer in state `from` (`PENDING`, `FIRED` or
    /// `CANCELLED`) becomes pending at `tick`. `Ok(must_push)`: whether the
    /// caller must push the entry (no message is queued); `Err(state)` if
    /// the timer was no longer in `from`.
    ///
    /// Only a `Sleep`'s entry has this, and only its owner calls it: a
    /// callback's entry leaves `PENDING` once in its life, which is what
    /// lets [`Callback`](crate::action::Callback)'s cell go unlocked.
    /// `ABANDONED` is final for every entry.
    pub(crate) fn rearm_from(&self, from: u64, tick: u64) -> Result<bool, u64> {
        debug_assert!(from != ABANDONED, "re-armed after shutdown");
        let new = queued_pending(tick);
        let mut seen = from;
        self.update(|w| {
            seen = state_of(w);
            (seen == from).then_some(new)
        })
        .map(|old| old & QUEUED == 0)
        .ok_or(seen)
    }
}

#[cfg(test)]
mod tests;

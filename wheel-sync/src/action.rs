//! What happens when a timer leaves `PENDING`: the [`Action`] an entry
//! carries after its header, and the two there are. A [`Callback`] runs
//! (or is dropped) once; a [`Wake`] wakes the task a `Sleep` was last
//! polled in, and may fire again after a reset.
//!
//! # Ground rules
//!
//! - Each [`Action`] method runs user code (a closure, a waker, the drop of
//!   what they captured) and catches its panic: it returns `false` if there
//!   was one, for the caller to count. User code never unwinds into the
//!   driver. The one exception is a `Sleep`'s waker in [`Wake::register`],
//!   [`Wake::release`] and `Wake`'s drop, which only the `Sleep`'s owner
//!   calls, on its thread: there a panic is the owner's, as in any future.
//! - Only the thread that won an arming's move out of `PENDING` calls the
//!   method for that move (see `entry`), so a callback's cell is taken at
//!   most once and needs no lock; a sleep's waker sits behind one, since
//!   its owner registers wakers while the driver may be firing.

use core::task::Waker;

use crate::caught::{drop_caught, drop_uncounted, run_caught};
use crate::executor::Executor;
use crate::sync::{Mutex, UnsafeCell};

/// What firing a timer's action leaves the driver to finish.
#[must_use]
pub(crate) enum Fired {
    /// Done: `false` if user code panicked (caught).
    Done(bool),
    /// A task to wake once the driver has let go of its reference to the
    /// entry, so that, as a rule, the woken task's drop of its `Sleep`
    /// frees it, on the thread that made it (not if the driver holds a
    /// second copy, from a move away and back).
    Wake(Waker),
}

impl Fired {
    /// Wakes the task, if any; `false` if user code panicked (caught).
    pub(crate) fn finish(self) -> bool {
        match self {
            Fired::Done(ok) => ok,
            Fired::Wake(waker) => run_caught(|| waker.wake()),
        }
    }
}

/// What happens when a timer leaves `PENDING`. Each method runs user code
/// (a callback, a waker, the drop of a closure's captures) and catches its
/// panic: it returns `false` if there was one, for the caller to count.
pub(crate) trait Action: Send + Sync + 'static {
    /// Runs the callback (or hands it to `executor`, where callbacks run if
    /// not on the driver), or takes the task's waker for the driver to wake.
    ///
    /// # Safety
    /// Only the thread that won this arming's move out of `PENDING` (to
    /// `FIRED`) calls it, so calls for one arming never overlap and no two
    /// of `fire`, `cancel` and `abandon` are called for it.
    unsafe fn fire(&self, executor: Option<&Executor>) -> Fired;
    /// The timer was cancelled: drops the closure and its captures on the
    /// cancelling thread (a task's waker stays: see [`Wake::release`]).
    ///
    /// # Safety
    /// As for [`fire`](Self::fire), for the move to `CANCELLED`.
    unsafe fn cancel(&self) -> bool;
    /// The timer will never fire (shutdown): drops the closure, or wakes a
    /// waiting task so it can see that.
    ///
    /// # Safety
    /// As for [`fire`](Self::fire), for the move to `ABANDONED`.
    unsafe fn abandon(&self) -> bool;
}

/// A callback, taken once by the winner of the entry's one move out of
/// `PENDING`: run on `FIRED`, dropped on `CANCELLED` or `ABANDONED`.
/// Callback entries are never re-armed (only an `EntryRef<Wake>` has
/// `rearm_from`), so the move, and the take, happen at most once: the cell
/// needs no lock.
pub(crate) struct Callback<F>(UnsafeCell<Option<F>>);

impl<F> Callback<F> {
    pub(crate) fn new(f: F) -> Self {
        Self(UnsafeCell::new(Some(f)))
    }

    /// # Safety
    /// Called at most once in the callback's life: by the winner of the
    /// entry's one move out of `PENDING`.
    unsafe fn take(&self) -> Option<F> {
        // SAFETY: the caller is the only thread that ever touches the cell
        // before the entry is freed (see `Sync` below).
        let taken = self.0.with_mut(|f| unsafe { (*f).take() });
        debug_assert!(taken.is_some(), "a callback taken twice");
        taken
    }
}

// SAFETY: the cell is touched through `&self` only by `take`, which one
// thread calls at most once (the winner of the entry's one move out of
// `PENDING`, ordered by that compare-exchange), and otherwise only when
// the entry is dropped, by the thread that dropped its last reference. The
// closure is `Send`, so it may run or drop on any thread.
unsafe impl<F: Send> Sync for Callback<F> {}

impl<F> Drop for Callback<F> {
    fn drop(&mut self) {
        // Only a timer that never left `PENDING` still holds its closure
        // here; its drop is user code and must not unwind into the driver.
        // SAFETY: `&mut self`: no other thread can reach the cell.
        if let Some(f) = self.0.with_mut(|f| unsafe { (*f).take() }) {
            drop_uncounted(f);
        }
    }
}

impl<F: FnOnce() + Send + 'static> Action for Callback<F> {
    unsafe fn fire(&self, executor: Option<&Executor>) -> Fired {
        // SAFETY: `Action::fire`'s contract is this one's.
        let Some(f) = (unsafe { self.take() }) else {
            return Fired::Done(true);
        };
        Fired::Done(match executor {
            Some(executor) => executor.hand(f),
            None => run_caught(f),
        })
    }

    unsafe fn cancel(&self) -> bool {
        // Released by the thread that cancels, at once: not later, on the
        // driver, where a panicking drop would have been the driver's.
        // SAFETY: as in `fire`.
        unsafe { self.take() }.is_none_or(drop_caught)
    }

    unsafe fn abandon(&self) -> bool {
        // What it captured is released at shutdown.
        // SAFETY: as in `fire`.
        unsafe { self.take() }.is_none_or(drop_caught)
    }
}

/// A task waiting on a `Sleep`: the latest waker it was polled with.
pub(crate) struct Wake(Mutex<Option<Waker>>);

impl Wake {
    /// Holds `waker`'s task from the start: the entry is the registering
    /// poll's own until it is submitted, so its first waker takes no lock.
    pub(crate) fn new(waker: &Waker) -> Self {
        Self(Mutex::new(Some(waker.clone())))
    }

    /// Stores `waker` unless the stored one already wakes the same task.
    /// Called by the `Sleep`'s owner only, on its own thread. The clone and
    /// the drop of the one it replaces, user code, run outside the lock
    /// (the driver takes it to fire or abandon), uncaught: as in any
    /// future, a panic there is the poll's, after the new waker is stored.
    pub(crate) fn register(&self, waker: &Waker) {
        let same = |stored: &Option<Waker>| stored.as_ref().is_some_and(|old| old.will_wake(waker));
        if same(&self.lock()) {
            return;
        }
        let new = waker.clone();
        let old = self.lock().replace(new);
        drop(old);
    }

    fn lock(&self) -> crate::sync::MutexGuard<'_, Option<Waker>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn take(&self) -> Option<Waker> {
        self.lock().take()
    }

    /// Drops the stored waker now, on the owner's thread, as its `Sleep` is
    /// dropped while the entry is still held elsewhere (a copy in the
    /// driver's wheel, a message): so the driver never drops a waker when
    /// it lets go of the entry. Its drop, user code, runs outside the lock,
    /// uncaught, as in `register`.
    pub(crate) fn release(&self) {
        drop(self.take());
    }
}

impl Drop for Wake {
    fn drop(&mut self) {
        // A waker still here is dropped by its `Sleep`'s own drop, on the
        // owner's thread: only the owner stores one, and an owner that
        // lets go while another holds the entry takes it out first
        // (`release`); the driver takes it to fire or abandon. Uncaught,
        // as in `register`: and on the driver's thread (a `Sleep` dropped
        // by a callback or a waker) inside the catch of that user code.
        // `&mut self`: no lock to take.
        let stored = self.0.get_mut().unwrap_or_else(|e| e.into_inner());
        drop(stored.take());
    }
}

impl Action for Wake {
    // Safe to call at any time: the waker sits behind a lock, and is woken
    // outside it.
    unsafe fn fire(&self, _: Option<&Executor>) -> Fired {
        self.take().map_or(Fired::Done(true), Fired::Wake)
    }

    unsafe fn cancel(&self) -> bool {
        // The waker stays for the `Sleep`'s drop, which follows: taking it
        // here would cost every cancelled sleep a lock, and the drop takes
        // it out only if another holds the entry (`release`), else drops
        // it with the entry.
        true
    }

    unsafe fn abandon(&self) -> bool {
        // At shutdown: a waker that panics must not stop the driver from
        // abandoning the other timers (nor a racing producer's schedule).
        self.take().is_none_or(|waker| run_caught(|| waker.wake()))
    }
}

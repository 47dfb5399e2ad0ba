//! One command between its write and its completion: the place where the
//! reply, the timeout and a failed connection race, and only the first wins.
//!
//! # Ground rules
//! - The state is behind a mutex held only to read or swap it (and, in
//!   [`InFlight::complete_after`], to run the caller's `first`, which must
//!   not panic); wakes happen after the lock is released.
//! - [`InFlight::complete`] moves `Waiting` to `Done` once; every later call
//!   finds `Done` (or `Taken`) and returns `false`, so a timeout that fires
//!   after the reply, or a reply after the timeout, changes nothing.
//! - The caller takes the result out once (`Taken`); the command is then
//!   finished for it, whatever else still holds the `Arc` (the timer's
//!   closure, or the connection's FIFO waiting for a late reply).

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};
use std::thread::{self, Thread};

use redis_protocol::resp2::types::BytesFrame;

use super::CommandError;

/// What a completed command yields.
pub type Outcome = Result<BytesFrame, CommandError>;

enum State {
    /// No result yet; whom to wake when it comes.
    Waiting(Option<Waiter>),
    Done(Outcome),
    Taken,
}

enum Waiter {
    Thread(Thread),
    Task(Waker),
}

/// A written command awaiting its outcome.
pub struct InFlight {
    state: Mutex<State>,
}

impl InFlight {
    /// A command about to be written.
    pub fn new() -> Arc<InFlight> {
        Arc::new(InFlight {
            state: Mutex::new(State::Waiting(None)),
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // Nothing panics while holding it, so a poisoned state is intact.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Completes the command with `outcome` if nothing has yet; `true` if
    /// this call did.
    pub fn complete(&self, outcome: Outcome) -> bool {
        self.complete_after(outcome, || {})
    }

    /// As [`InFlight::complete`], running `first` under the lock just before
    /// the outcome is stored, if this call completes the command: whoever
    /// then takes the outcome sees what `first` did.
    pub fn complete_after(&self, outcome: Outcome, first: impl FnOnce()) -> bool {
        let mut state = self.lock();
        let State::Waiting(waiter) = &mut *state else {
            return false;
        };
        first();
        let waiter = waiter.take();
        *state = State::Done(outcome);
        drop(state);
        match waiter {
            Some(Waiter::Thread(t)) => t.unpark(),
            Some(Waiter::Task(w)) => w.wake(),
            None => {}
        }
        true
    }

    /// Blocks this thread until the command completes; takes the outcome.
    pub fn wait(&self) -> Outcome {
        loop {
            let mut state = self.lock();
            match &mut *state {
                State::Done(_) => return take(&mut state),
                State::Waiting(waiter @ None) => *waiter = Some(Waiter::Thread(thread::current())),
                State::Waiting(Some(_)) => {}
                State::Taken => return taken_twice(),
            }
            drop(state);
            // Spurious unparks (a token left by an earlier command) only loop.
            thread::park();
        }
    }

    /// Completes the command as timed out if nothing else has, then takes
    /// the outcome: [`CommandError::Timeout`], or the reply that won the race.
    pub fn expire(&self) -> Outcome {
        self.complete(Err(CommandError::Timeout));
        take(&mut self.lock())
    }

    /// A future of the outcome, for async callers.
    pub fn reply(self: &Arc<Self>) -> Reply {
        Reply(Arc::clone(self))
    }
}

/// Takes a `Done` outcome.
fn take(state: &mut State) -> Outcome {
    match std::mem::replace(state, State::Taken) {
        State::Done(outcome) => outcome,
        other => {
            *state = other;
            taken_twice()
        }
    }
}

/// Only the caller takes the outcome, once (the client's calls consume
/// themselves), so this is never reached.
fn taken_twice() -> Outcome {
    debug_assert!(false, "an in-flight command's outcome was taken twice");
    Err(CommandError::Timeout)
}

/// Resolves to the outcome of an [`InFlight`] command; made by
/// [`InFlight::reply`].
pub struct Reply(Arc<InFlight>);

impl Future for Reply {
    type Output = Outcome;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Outcome> {
        let mut state = self.0.lock();
        match &mut *state {
            State::Done(_) => Poll::Ready(take(&mut state)),
            State::Waiting(Some(Waiter::Task(w))) if w.will_wake(cx.waker()) => Poll::Pending,
            State::Waiting(waiter) => {
                *waiter = Some(Waiter::Task(cx.waker().clone()));
                Poll::Pending
            }
            State::Taken => Poll::Ready(taken_twice()),
        }
    }
}

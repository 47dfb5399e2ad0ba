//! The callback executor ([`Builder::callback_executor`](crate::Builder::callback_executor)):
//! where due callbacks run when not on the driver thread.
//!
//! The driver hands each due callback over boxed, wrapped so that whatever
//! the executor does with it is accounted for: run (its panic caught and
//! counted), or dropped unrun (counted, its drop's panic caught). A panic
//! of the executor's own is caught on the driver and counted.

use core::fmt;

use crate::caught::{drop_caught, run_caught, take_uncounted};
use crate::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// A callback as the executor receives it.
pub(crate) type Task = Box<dyn FnOnce() + Send + 'static>;

/// The user's executor, shared by a builder's clones.
pub(crate) type Run = Arc<dyn Fn(Task) + Send + Sync + 'static>;

/// The user's executor and what became of the callbacks handed to it.
pub(crate) struct Executor {
    run: Option<Run>,
    counts: Arc<Counts>,
}

/// What became of user code, one per service: the one place its panics are
/// counted, wherever they were caught, and the callbacks the executor
/// dropped unrun. Apart from the service, as callbacks handed to the
/// executor may outlive it.
#[derive(Default)]
pub(crate) struct Counts {
    /// Panics of user code caught: callbacks, wakes, closures' drops, the
    /// executor itself.
    pub(crate) panicked: AtomicU64,
    /// Callbacks the executor dropped without running.
    pub(crate) unrun: AtomicU64,
}

impl Executor {
    pub(crate) fn new(run: Run, counts: Arc<Counts>) -> Self {
        Self {
            run: Some(run),
            counts,
        }
    }

    /// Hands `f` to the executor; `false` if the executor panicked (then
    /// `f`, if it never ran, is counted unrun as it is dropped).
    pub(crate) fn hand(&self, f: impl FnOnce() + Send + 'static) -> bool {
        let Some(run) = &self.run else { return false };
        let handed = Handed {
            f: Some(f),
            counts: Arc::clone(&self.counts),
        };
        let task: Task = Box::new(move || handed.run());
        run_caught(|| run(task))
    }
}

impl Drop for Executor {
    fn drop(&mut self) {
        // The executor is the user's: its drop must not unwind into
        // whichever thread lets the service go (perhaps the driver).
        if let Some(run) = self.run.take() {
            drop_caught(run);
        }
    }
}

impl fmt::Debug for Executor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Executor").finish_non_exhaustive()
    }
}

/// A callback on its way through the executor.
struct Handed<F> {
    f: Option<F>,
    counts: Arc<Counts>,
}

impl<F: FnOnce()> Handed<F> {
    fn run(mut self) {
        if let Some(f) = self.f.take() {
            if !run_caught(f) {
                self.counts.panicked.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

impl<F> Drop for Handed<F> {
    fn drop(&mut self) {
        if let Some(f) = self.f.take() {
            self.counts.unrun.fetch_add(1, Ordering::Relaxed);
            // A detached callback's closure catches its own drop's panic
            // and leaves it uncounted: counted here with the rest.
            let panicked = u64::from(!drop_caught(f)) + take_uncounted();
            if panicked > 0 {
                self.counts.panicked.fetch_add(panicked, Ordering::Relaxed);
            }
        }
    }
}

//! Tasks as embassy's executor hands them to a time driver, their wakers,
//! and the executor's run queue, for the queue benchmarks.

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{RawWaker, RawWakerVTable, Waker};

/// A task as embassy's executor hands it to a time driver: a header at a
/// fixed address, whose waker is that address. Cloning or dropping such a
/// waker touches nothing and waking it queues the task to run, once, so
/// the queues' own work is what the figures show (an `Arc` waker would add
/// a locked increment to every clone and a decrement to every wake, the
/// same for both queues).
struct Task {
    /// Its place in the bench's list of tasks.
    id: usize,
    /// Woken and not yet run (only the bench's thread touches it).
    run_queued: AtomicBool,
}

thread_local! {
    /// The tasks woken and not yet run, as an executor's run queue.
    static RUN_QUEUE: RefCell<Vec<&'static Task>> = const { RefCell::new(Vec::new()) };
}

/// The next task to run, if any is woken: the executor polls it.
pub fn run_next() -> Option<usize> {
    let task = RUN_QUEUE.with_borrow_mut(Vec::pop)?;
    task.run_queued.store(false, Ordering::Relaxed);
    Some(task.id)
}

/// Empties the run queue: tasks woken so far are not to be run.
pub fn forget_woken() {
    RUN_QUEUE.with_borrow_mut(Vec::clear);
}

/// The vtable of a [`Task`]'s waker.
static TASK_WAKER: RawWakerVTable =
    RawWakerVTable::new(clone_task, wake_task, wake_task, drop_task);

fn clone_task(task: *const ()) -> RawWaker {
    RawWaker::new(task, &TASK_WAKER)
}

fn wake_task(task: *const ()) {
    // SAFETY: every `Task` waker's data is a `&'static Task` (see `wakers`).
    let task: &'static Task = unsafe { &*task.cast::<Task>() };
    // Queued once until it runs, as embassy's executor does: the shapes
    // that never run their tasks queue each one once.
    if !task.run_queued.load(Ordering::Relaxed) {
        task.run_queued.store(true, Ordering::Relaxed);
        RUN_QUEUE.with_borrow_mut(|queue| queue.push(task));
    }
}

fn drop_task(_: *const ()) {}

/// `n` distinct tasks' wakers.
pub fn wakers(n: usize) -> Vec<Waker> {
    (0..n)
        .map(|id| {
            let task: &'static Task = Box::leak(Box::new(Task {
                id,
                run_queued: AtomicBool::new(false),
            }));
            let raw = RawWaker::new(core::ptr::from_ref(task).cast(), &TASK_WAKER);
            // SAFETY: the vtable's functions keep `RawWaker`'s contract: the
            // data is a `Task` that lives for ever, which they touch only
            // through a shared reference (a wake stores to its atomic flag),
            // and a clone is the same pointer.
            unsafe { Waker::from_raw(raw) }
        })
        .collect()
}

//! Tasks whose wakers count their wakes, for the `WakerQueue` tests.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Wake, Waker};

/// A task that counts its wakes, and panics on them when told to.
#[derive(Default)]
pub struct Task {
    pub woken: AtomicUsize,
    pub panics: bool,
}

impl Wake for Task {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.woken.fetch_add(1, Ordering::Relaxed);
        assert!(!self.panics, "this waker panics");
    }
}

/// `n` tasks and a waker for each.
pub fn tasks(n: usize) -> (Vec<Arc<Task>>, Vec<Waker>) {
    let tasks: Vec<Arc<Task>> = (0..n).map(|_| Arc::new(Task::default())).collect();
    let wakers = tasks.iter().map(|task| Waker::from(task.clone())).collect();
    (tasks, wakers)
}

/// How many times each task has been woken.
pub fn woken(tasks: &[Arc<Task>]) -> Vec<usize> {
    tasks
        .iter()
        .map(|task| task.woken.load(Ordering::Relaxed))
        .collect()
}

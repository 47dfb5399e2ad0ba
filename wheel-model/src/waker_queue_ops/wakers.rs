//! The tasks of a `waker_queue_ops` run and the kinds of waker they make:
//! std's `Arc` wakers, whose clones are the same waker, and two hand-made
//! kinds whose clones are not (another copy of the vtable, or another data
//! pointer), as some executors' and miri's are. The queue keeps a clone, so
//! with those it must find a task again from the caller's waker through the
//! clone it would keep, and still hold one entry a task.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{RawWaker, RawWakerVTable, Wake, Waker};

use arbitrary::Arbitrary;

/// How a run's tasks make their wakers.
///
/// # Examples
/// ```
/// use wheel_model::waker_queue_ops::WakerKind;
///
/// assert_eq!(WakerKind::ALL.len(), 3);
/// ```
#[derive(Arbitrary, Clone, Copy, Debug, PartialEq, Eq)]
pub enum WakerKind {
    /// std's `Arc` wakers: a clone `will_wake` the waker it came from.
    Std,
    /// A clone carries another copy of the vtable, which its own clones
    /// keep: it does not `will_wake` the waker it came from.
    AnotherVtable,
    /// A clone carries another data pointer (the task's address with its
    /// low bit set) and the other vtable.
    AnotherData,
}

impl WakerKind {
    /// Every kind.
    pub const ALL: [WakerKind; 3] = [
        WakerKind::Std,
        WakerKind::AnotherVtable,
        WakerKind::AnotherData,
    ];

    /// A waker of this kind for `task`.
    pub(super) fn waker(self, task: &Arc<Task>) -> Waker {
        let vtable = match self {
            WakerKind::Std => return Waker::from(task.clone()),
            WakerKind::AnotherVtable => &CLONES_TO_KEPT,
            WakerKind::AnotherData => &CLONES_MOVED,
        };
        let data = Arc::into_raw(task.clone()).cast::<()>();
        // SAFETY: `data` is a strong reference to a `Task`, given up by
        // `into_raw`; the vtables below keep `RawWaker`'s contract for it
        // (see `task_of`).
        unsafe { Waker::from_raw(RawWaker::new(data, vtable)) }
    }

    /// Whether a clone of a waker of this kind `will_wake` it.
    pub(super) fn clones_will_wake(self) -> bool {
        self == WakerKind::Std
    }
}

/// A task that counts its wakes, and panics on them when told to.
#[derive(Default)]
pub(super) struct Task {
    pub(super) woken: AtomicUsize,
    pub(super) panics: AtomicBool,
}

impl Task {
    fn count_wake(&self) {
        self.woken.fetch_add(1, Ordering::Relaxed);
        assert!(!self.panics.load(Ordering::Relaxed), "this waker panics");
    }
}

impl Wake for Task {
    fn wake(self: Arc<Self>) {
        self.count_wake();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.count_wake();
    }
}

/// A hand-made waker as made: its clone has the [`KEPT`] vtable.
static CLONES_TO_KEPT: RawWakerVTable =
    RawWakerVTable::new(clone_kept, wake, wake_by_ref, drop_waker);
/// A hand-made waker as made: its clone has the [`KEPT`] vtable and the
/// tagged data pointer.
static CLONES_MOVED: RawWakerVTable =
    RawWakerVTable::new(clone_moved, wake, wake_by_ref, drop_waker);
/// A clone, and its clones.
static KEPT: RawWakerVTable = RawWakerVTable::new(clone_kept, wake, wake_by_ref, drop_waker);

/// The task behind a hand-made waker's data: the data pointer with its low
/// bit cleared (a `Task` holds atomics, so it is aligned to at least 4 and
/// the bit is free for the tag).
/// Every hand-made waker holds one strong reference to its task, taken by
/// `waker` or a clone and given back by a wake by value or a drop.
fn task_of(data: *const ()) -> *const Task {
    data.map_addr(|addr| addr & !1).cast()
}

fn clone_kept(data: *const ()) -> RawWaker {
    // SAFETY: `data` holds a strong reference to a live `Task` (see
    // `task_of`); the new waker takes one more.
    unsafe { Arc::increment_strong_count(task_of(data)) };
    RawWaker::new(data, &KEPT)
}

fn clone_moved(data: *const ()) -> RawWaker {
    // SAFETY: as in `clone_kept`.
    unsafe { Arc::increment_strong_count(task_of(data)) };
    RawWaker::new(data.map_addr(|addr| addr | 1), &KEPT)
}

fn wake(data: *const ()) {
    // SAFETY: a wake by value consumes the waker's strong reference (see
    // `task_of`); the `Arc` gives it back, unwinding included.
    let task = unsafe { Arc::from_raw(task_of(data)) };
    task.count_wake();
}

fn wake_by_ref(data: *const ()) {
    // SAFETY: the waker's strong reference keeps the task alive while it
    // is borrowed here.
    let task = unsafe { &*task_of(data) };
    task.count_wake();
}

fn drop_waker(data: *const ()) {
    // SAFETY: the waker's strong reference, given back once as it drops.
    unsafe { Arc::decrement_strong_count(task_of(data)) };
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each hand-made kind's clones are one task with the original as the
    /// queue needs them to be: a clone does not `will_wake` the original
    /// but clones of a clone do each other, wakes reach the task, and every
    /// reference comes back. (std's kind is left out: under miri, which
    /// runs this test, its clones do not `will_wake` the original either.)
    #[test]
    fn hand_made_wakers_count_their_wakes_and_give_back_their_references() {
        for kind in [WakerKind::AnotherVtable, WakerKind::AnotherData] {
            let task = Arc::new(Task::default());
            let waker = kind.waker(&task);
            let clone = waker.clone();
            assert_eq!(clone.will_wake(&waker), kind.clones_will_wake(), "{kind:?}");
            assert!(clone.clone().will_wake(&clone), "{kind:?}");
            clone.wake_by_ref();
            clone.wake();
            let spare = waker.clone().clone();
            waker.wake();
            assert_eq!(task.woken.load(Ordering::Relaxed), 3, "{kind:?}");
            drop(spare);
            assert_eq!(Arc::strong_count(&task), 1, "{kind:?}: a reference kept");
        }
    }
}

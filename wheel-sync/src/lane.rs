//! A thread's lane to a service: what every handle the thread makes (a
//! callback's [`TimerHandle`](crate::TimerHandle), a [`Sleep`](crate::Sleep))
//! holds of the service, so that making and dropping handles writes only
//! lines the thread owns, however the service is held (by reference, a clone
//! per task, the global functions).
//!
//! A lane is the service's memory, counted: handles count on their
//! thread's lane, and each lane holds the service once. It names the
//! thread's spot (see `spot`): where the thread parks a new timer (in an empty place) and
//! counts its live ones. A thread keeps its lanes until it ends; one whose
//! service has shut down is forgotten when the thread next needs a new one.
//! Lanes do not keep the service running: its `TimerService` clones do.

use core::cell::{Cell, RefCell};
use core::ptr;

use crate::shared::Shared;
use crate::sync::Arc;

/// A thread's reference to a service, and its spot there.
pub(crate) struct Lane {
    pub(crate) shared: Arc<Shared>,
    /// The thread's spot index (see `spot`).
    pub(crate) spot: usize,
}

/// This thread's lanes and number.
struct ThisThread {
    /// This thread's number plus one; 0 until drawn.
    number: Cell<usize>,
    lanes: RefCell<Vec<Arc<Lane>>>,
    /// The address of the service this thread drives, if it is a driver
    /// thread; 0 otherwise.
    drives: Cell<usize>,
}

impl ThisThread {
    const fn new() -> Self {
        Self {
            number: Cell::new(0),
            lanes: RefCell::new(Vec::new()),
            drives: Cell::new(0),
        }
    }

    fn spot(&self) -> usize {
        if self.number.get() == 0 {
            self.number.set(draw().wrapping_add(1).max(1));
        }
        self.number.get() - 1
    }
}

/// A new thread number: only their spread matters.
#[cfg(not(loom))]
fn draw() -> usize {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// A new thread number, counted afresh in each execution of a model: loom
/// replays an interleaving exactly, so a thread must get the same spot.
#[cfg(loom)]
fn draw() -> usize {
    loom::lazy_static! {
        static ref NEXT: crate::sync::atomic::AtomicUsize = crate::sync::atomic::AtomicUsize::new(0);
    }
    NEXT.fetch_add(1, crate::sync::atomic::Ordering::Relaxed)
}

#[cfg(not(loom))]
std::thread_local! {
    static THIS_THREAD: ThisThread = const { ThisThread::new() };
}

#[cfg(loom)]
loom::thread_local! {
    static THIS_THREAD: ThisThread = ThisThread::new();
}

/// This thread's spot index; 0 during the thread's teardown.
#[inline]
pub(crate) fn spot() -> usize {
    THIS_THREAD.try_with(ThisThread::spot).unwrap_or(0)
}

/// Marks this thread as `shared`'s driver, for the rest of its life.
pub(crate) fn set_drives(shared: &Shared) {
    let _ = THIS_THREAD.try_with(|this| this.drives.set(ptr::from_ref(shared).addr()));
}

/// Whether this thread drives `shared` (see [`set_drives`]); `None` in
/// the thread's teardown, once its mark is gone.
#[inline]
pub(crate) fn drives(shared: &Shared) -> Option<bool> {
    THIS_THREAD
        .try_with(|this| this.drives.get() == ptr::from_ref(shared).addr())
        .ok()
}

/// This thread's lane to `shared`, made on first use.
#[inline]
pub(crate) fn lane(shared: &Arc<Shared>) -> Arc<Lane> {
    let found = THIS_THREAD.try_with(|this| {
        let lanes = this.lanes.try_borrow().ok()?;
        let found = lanes.iter().find(|lane| Arc::ptr_eq(&lane.shared, shared));
        found.map(Arc::clone)
    });
    match found {
        Ok(Some(lane)) => lane,
        _ => new_lane(shared),
    }
}

/// Runs `f` while this thread's lane to `shared` holds the service's
/// memory: borrowed in place if the thread has one (no count written), else
/// one made for it.
#[inline]
pub(crate) fn holding<R>(shared: &Arc<Shared>, f: impl Fn() -> R) -> R {
    let ran = THIS_THREAD.try_with(|this| {
        let lanes = this.lanes.try_borrow().ok()?;
        // `f` runs while `lanes` is borrowed: the lane cannot go meanwhile.
        (lanes.iter().any(|lane| Arc::ptr_eq(&lane.shared, shared))).then(&f)
    });
    match ran {
        Ok(Some(done)) => done,
        _ => {
            let _lane = lane(shared);
            f()
        }
    }
}

/// A lane for this thread, kept for its next handles: the first it makes
/// on the service. Lanes of services that have shut down are forgotten
/// meanwhile (dropped after the borrow, as a lane's drop may drop the
/// service, and with it user code).
#[cold]
fn new_lane(shared: &Arc<Shared>) -> Arc<Lane> {
    let made = THIS_THREAD.try_with(|this| {
        let lane = Arc::new(Lane {
            shared: Arc::clone(shared),
            spot: this.spot(),
        });
        let mut lanes = this.lanes.try_borrow_mut().ok()?;
        let (live, gone) = lanes.drain(..).partition(|l| !l.shared.is_shut_down());
        *lanes = live;
        lanes.push(Arc::clone(&lane));
        Some((lane, gone))
    });
    match made {
        Ok(Some((lane, gone))) => {
            drop::<Vec<Arc<Lane>>>(gone);
            lane
        }
        // In the thread's teardown, or from a drop run inside a look-up:
        // a lane of its own, kept by its handles alone.
        _ => Arc::new(Lane {
            shared: Arc::clone(shared),
            spot: spot(),
        }),
    }
}

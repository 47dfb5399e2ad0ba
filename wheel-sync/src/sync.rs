//! The crate's one door to threads and atomics: `std` in a normal build, `loom` under
//! `cfg(loom)`, so the loom models in `tests/` explore the code that ships.
//!
//! The protocol's atomics, locks and threads come from here, never from `std::sync`,
//! `std::thread` or `loom` directly; what loom need not explore (statistics, `run_paused`'s
//! wait, the thread-locals' own declarations) names `std` or loom itself. A producer's wait
//! for the driver (`keep_up`) uses this door but is skipped under loom (see there). The shim is gated on `cfg(loom)` alone (not `cfg(all(test, loom))`)
//! because the models are integration tests, which build this crate without `cfg(test)`.

#[cfg(not(loom))]
pub(crate) use std::sync::{Arc, Mutex, MutexGuard};

#[cfg(loom)]
pub(crate) use loom::sync::{Arc, Mutex, MutexGuard};

/// Atomic integers, pointers and fences.
pub(crate) mod atomic {
    #[cfg(not(loom))]
    pub(crate) use std::sync::atomic::{
        fence, AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering,
    };

    #[cfg(loom)]
    pub(crate) use loom::sync::atomic::{
        fence, AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering,
    };
}

/// Spawning, parking and yielding.
pub(crate) mod thread {
    #[cfg(not(loom))]
    pub(crate) use std::thread::{current, park, JoinHandle, Thread};

    #[cfg(loom)]
    pub(crate) use loom::thread::{current, park, JoinHandle, Thread};

    #[cfg(not(loom))]
    pub(crate) use std::thread::park_timeout;

    /// For the unit tests' producer threads.
    #[cfg(all(test, not(loom)))]
    pub(crate) use std::thread::spawn;

    /// Loom has no clock: a timed park is a plain park, which loom may end
    /// spuriously like the real one.
    #[cfg(loom)]
    pub(crate) fn park_timeout(_: core::time::Duration) {
        loom::thread::park();
    }

    #[cfg(not(loom))]
    use std::thread::Builder;

    #[cfg(loom)]
    use loom::thread::Builder;

    /// Spawns a named thread; under loom, with a real thread's stack:
    /// loom's threads get 32 KiB unless told otherwise, less than building
    /// the driver's wheel may take in an unoptimised build.
    pub(crate) fn spawn_named<T: Send + 'static>(
        name: String,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> std::io::Result<JoinHandle<T>> {
        let builder = Builder::new().name(name);
        // In machine words.
        #[cfg(loom)]
        let builder = builder.stack_size(1 << 18);
        builder.spawn(f)
    }
}

/// Exponential backoff for CAS retries and waits on another thread's progress.
#[cfg(not(loom))]
pub(crate) use crossbeam_utils::Backoff;

/// Loom stand-in for `crossbeam_utils::Backoff`: loom cannot see crossbeam's spinning,
/// so every step yields to the scheduler instead.
#[cfg(loom)]
#[derive(Debug, Default)]
pub(crate) struct Backoff;

#[cfg(loom)]
impl Backoff {
    pub(crate) fn new() -> Self {
        Backoff
    }

    pub(crate) fn spin(&self) {
        loom::thread::yield_now();
    }

    pub(crate) fn snooze(&self) {
        loom::thread::yield_now();
    }
}

#[cfg(loom)]
pub(crate) use loom::cell::UnsafeCell;

/// `core::cell::UnsafeCell` behind loom's closure API, so code that touches a cell is
/// written once and loom can check every access in the models.
#[cfg(not(loom))]
#[derive(Debug, Default)]
pub(crate) struct UnsafeCell<T>(core::cell::UnsafeCell<T>);

#[cfg(not(loom))]
impl<T> UnsafeCell<T> {
    pub(crate) const fn new(data: T) -> Self {
        UnsafeCell(core::cell::UnsafeCell::new(data))
    }

    /// Gives `f` a shared pointer to the contents; the caller upholds aliasing rules.
    #[inline]
    pub(crate) fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
        f(self.0.get())
    }

    /// Gives `f` a unique pointer to the contents; the caller upholds aliasing rules.
    #[inline]
    pub(crate) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
        f(self.0.get())
    }
}

//! What a timer costs the allocator, counted by a global allocator (this
//! binary holds this one test, so no other test allocates meanwhile): one
//! allocation for a timer with a handle (a callback's, or a `Sleep` that
//! waits), its closure or waker inside it; none for a `Timeout` whose
//! future is ready at once; none of its own for a detached callback whose
//! closure fits two words (the queue's blocks and the driver's bucket
//! chunks each hold hundreds); and none for the service itself, a clone
//! per request included, once warm.
#![cfg(not(loom))]

use std::alloc::{GlobalAlloc, Layout, System};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use wheel_sync::TimerService;

/// The system allocator, counting its calls.
struct Counting;

static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is passed straight to `System`, which keeps the
// `GlobalAlloc` contract; the count is only bookkeeping.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, SeqCst);
        // SAFETY: the caller's contract is `System`'s.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as in `alloc`.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// How many allocations the process makes while `f` runs.
fn allocations_in(f: impl FnOnce()) -> usize {
    let before = ALLOCATIONS.load(SeqCst);
    f();
    ALLOCATIONS.load(SeqCst) - before
}

/// `n` requests, each through a fresh clone of the service (as a handle
/// cloned into each task): a callback a second out, cancelled, and a sleep
/// a second out, polled and dropped.
fn requests(timers: &TimerService, n: usize) {
    let second = Duration::from_secs(1);
    let mut cx = Context::from_waker(Waker::noop());
    for i in 0..n {
        let timers = timers.clone();
        let handle = timers.schedule(second, move || assert!(i < n)).unwrap();
        assert!(handle.cancel());
        let mut sleep = timers.sleep(second);
        assert!(Pin::new(&mut sleep).poll(&mut cx).is_pending());
    }
}

#[test]
fn a_timer_costs_one_allocation_or_none() {
    let n = if cfg!(miri) { 100 } else { 100_000 };
    // A manual clock never comes due: the loop alone.
    let timers = TimerService::builder().manual_clock().build().unwrap();
    requests(&timers, 1_000); // warm: this thread's lane, the driver's rounds
    let allocated = allocations_in(|| requests(&timers, n));
    // The driver, woken now and then, may grow a buffer of its own.
    assert!(
        (2 * n..2 * n + 16).contains(&allocated),
        "{allocated} in {n} requests of two timers"
    );

    let mut cx = Context::from_waker(Waker::noop());
    let allocated = allocations_in(|| {
        for _ in 0..n {
            let mut reply = timers.timeout(Duration::from_secs(1), std::future::ready(7));
            assert_eq!(Pin::new(&mut reply).poll(&mut cx), Poll::Ready(Ok(7)));
        }
    });
    assert_eq!(allocated, 0, "in {n} timeouts around a ready future");

    let captured = (&ALLOCATIONS, 7_u64);
    let allocated = allocations_in(|| {
        for _ in 0..n {
            let job = move || assert_eq!(captured.1, 7);
            timers
                .schedule_detached(Duration::from_secs(1), job)
                .unwrap();
        }
    });
    // The queue's blocks and the driver's bucket chunks, each shared by
    // hundreds of timers: none of the timer's own.
    assert!(
        allocated <= n / 100,
        "{allocated} in {n} detached callbacks"
    );
}

//! A steady request-timeout loop — schedule a callback a second out, the
//! reply comes, cancel it; or a `Sleep` made, polled and dropped; each
//! through a fresh clone of the service — allocates nothing once warm, on the calling thread or the driver: the
//! entry's block is recycled by the thread that frees it, and the timer
//! never leaves its parking spot. Counted by a global allocator; this
//! binary holds this one test, so no other test allocates meanwhile.
#![cfg(not(loom))]

use std::alloc::{GlobalAlloc, Layout, System};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::task::{Context, Waker};
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

/// Requests `n` times, each a callback scheduled a second out and
/// cancelled, and a sleep a second out, polled and dropped; returns how
/// many allocations the process made meanwhile.
fn allocations_in(timers: &TimerService, n: usize) -> usize {
    let second = Duration::from_secs(1);
    let mut cx = Context::from_waker(Waker::noop());
    let before = ALLOCATIONS.load(SeqCst);
    for i in 0..n {
        // Through a fresh clone, as a handle cloned into each task: a
        // clone counts on this thread's line, allocating nothing.
        let timers = timers.clone();
        let handle = timers.schedule(second, move || assert!(i < n)).unwrap();
        assert!(handle.cancel());
        let mut sleep = timers.sleep(second);
        assert!(Pin::new(&mut sleep).poll(&mut cx).is_pending());
    }
    ALLOCATIONS.load(SeqCst) - before
}

#[test]
fn a_steady_schedule_and_cancel_loop_allocates_nothing() {
    let n = if cfg!(miri) { 100 } else { 200_000 };
    // A manual clock never comes due and never sweeps: the loop alone.
    let manual = TimerService::builder().manual_clock().build().unwrap();
    allocations_in(&manual, 10_000); // warm: the caches, the first rounds
    let allocated = allocations_in(&manual, n);
    assert_eq!(allocated, 0, "{allocated} allocations in {n} requests");
    drop(manual);
    // On the real clock the driver sweeps the parking spots, and a timer
    // it has taken may be freed on its thread: the block then comes back
    // to this one through the depot. Warm that path too, by handing timers
    // of both kinds to the driver and cancelling them while it sleeps.
    let real = TimerService::new();
    for _ in 0..3 {
        hand_to_the_driver(&real);
    }
    allocations_in(&real, 10_000);
    let allocated = allocations_in(&real, n);
    assert_eq!(allocated, 0, "{allocated} allocations in {n} requests");
}

/// A callback and a sleep of the loop's kinds, a second out, left until the
/// driver has filed them, then cancelled.
fn hand_to_the_driver(timers: &TimerService) {
    let second = Duration::from_secs(1);
    let n = 1;
    let handle = timers.schedule(second, move || assert!(n > 0)).unwrap();
    let mut sleep = timers.sleep(second);
    let mut cx = Context::from_waker(Waker::noop());
    assert!(Pin::new(&mut sleep).poll(&mut cx).is_pending());
    // Past the driver's longest wait between sweeps.
    std::thread::sleep(Duration::from_millis(100));
    assert!(handle.cancel());
    drop(sleep);
}

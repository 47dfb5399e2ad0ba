//! Memory: after a burst of timers drains, the driver gives back what the
//! burst made it hold (its wheel's storage shrinks), counted by a global
//! allocator that tracks the bytes live in the whole process.
#![cfg(not(loom))]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::time::Duration;

mod common;
use common::{manual, wait_until, PATIENCE};

/// The system allocator, counting the bytes live.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is passed straight to `System`, which keeps the
// `GlobalAlloc` contract; the counts are only bookkeeping.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size(), SeqCst);
        // SAFETY: the caller's contract is `System`'s.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), SeqCst);
        // SAFETY: as in `alloc`.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

#[test]
fn after_a_burst_drains_the_driver_gives_its_memory_back() {
    let timers = manual();
    let hour = Duration::from_secs(3600);
    // Warm up what is allocated once, on first use (staging tables, the
    // relay's batch, queue blocks), and keep a few timers pending.
    for _ in 0..10_000 {
        drop(timers.schedule(Duration::from_millis(1), || ()).unwrap());
    }
    timers.advance(Duration::from_millis(2)).unwrap();
    let kept: Vec<_> = (0..100)
        .map(|_| timers.schedule(hour, || ()).unwrap())
        .collect();
    timers.advance(Duration::from_millis(1)).unwrap();
    let before = LIVE.load(SeqCst);

    let burst = if cfg!(miri) { 1_000 } else { 4_000_000 };
    for i in 0..burst {
        let ms = 1 + (i % 1000) as u64;
        drop(timers.schedule(Duration::from_millis(ms), || ()).unwrap());
    }
    timers.advance(Duration::from_secs(2)).unwrap();
    let peak = LIVE.load(SeqCst);
    assert!(peak > before + burst * 32, "the burst was not held: {peak}");
    let settled = wait_until(PATIENCE, || LIVE.load(SeqCst) <= before + before / 10);
    assert!(
        settled,
        "held {} bytes after the burst, {before} before it",
        LIVE.load(SeqCst)
    );
    assert_eq!(timers.pending(), kept.len());
}

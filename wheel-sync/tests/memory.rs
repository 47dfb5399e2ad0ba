//! Memory: after a burst of timers drains, the driver gives back what the
//! burst made it hold (its wheel's buckets free their chunks as they
//! empty), and threads that came
//! and went leave nothing behind, counted by a global allocator that tracks
//! the bytes live in the whole process. The tests take turns (`ALONE`), as
//! each reads the process's total.
#![cfg(not(loom))]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::Mutex;
use std::time::Duration;

use wheel_sync::TimerService;

mod common;
use common::{manual, wait_until, HOUR, PATIENCE};

/// Held by each test for its whole run.
static ALONE: Mutex<()> = Mutex::new(());

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
    let _alone = ALONE.lock().unwrap_or_else(|e| e.into_inner());
    let timers = manual();
    let hour = Duration::from_secs(3600);
    // Warm up what is allocated once, on first use (staging tables, queue
    // blocks, this thread's lane), and keep a few timers pending.
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
    let peak = LIVE.load(SeqCst);
    assert!(peak > before + burst * 32, "the burst was not held: {peak}");
    timers.advance(Duration::from_secs(2)).unwrap();
    // The wheel keeps up to about 1 MiB of emptied chunks for reuse
    // (wheel-core's `BucketWheel`); the burst held over a hundred times that.
    let pool = 1 << 20;
    let settled = wait_until(PATIENCE, || {
        LIVE.load(SeqCst) <= before + before / 10 + pool
    });
    assert!(
        settled,
        "held {} bytes after the burst, {before} before it",
        LIVE.load(SeqCst)
    );
    assert_eq!(timers.pending(), kept.len());
}

/// A client sets a timeout on every request and cancels almost every one,
/// often after the driver has filed it. A cancelled timer must not be held
/// until its deadline (an hour here): a million of them would be tens of
/// MiB.
#[test]
fn timers_cancelled_after_they_were_filed_are_not_held_until_their_deadline() {
    let _alone = ALONE.lock().unwrap_or_else(|e| e.into_inner());
    let timers = manual();
    let requests = |batches: usize| {
        for _ in 0..batches {
            let handles: Vec<_> = (0..1_000)
                .map(|_| timers.schedule(HOUR, || ()).unwrap())
                .collect();
            timers.advance(Duration::ZERO).unwrap(); // filed
            for handle in handles {
                assert!(handle.cancel());
            }
        }
        timers.advance(Duration::ZERO).unwrap(); // the dead copies counted
    };
    requests(2); // warm: the wheel's tables, the queue's blocks
    let before = LIVE.load(SeqCst);
    requests(if cfg!(miri) { 3 } else { 1_000 });
    // As in the burst above: the wheel's pool of emptied chunks.
    let pool = 1 << 20;
    let settled = wait_until(PATIENCE, || LIVE.load(SeqCst) <= before + pool);
    assert!(
        settled,
        "held {} bytes after a million cancelled timers, {before} before",
        LIVE.load(SeqCst)
    );
    assert_eq!(timers.pending(), 0);
}

/// On a manual clock too, the driver looks every 100 ms of real time while
/// timers are pending, so the copies that cancels left dead in its wheel
/// are freed without anyone advancing the clock. (The closures, 1 KiB
/// each, are dropped by the cancels, but their memory is inside the
/// entries, which the dead copies hold.)
#[test]
fn a_manual_clocks_driver_frees_cancelled_filed_timers_without_an_advance() {
    const TIMERS: usize = 10_000;
    const PAD: usize = 1024;
    let _alone = ALONE.lock().unwrap_or_else(|e| e.into_inner());
    let timers = manual();
    let _kept = timers.schedule(HOUR, || ()).unwrap();
    let handles: Vec<_> = (0..TIMERS)
        .map(|_| {
            let pad = [0_u8; PAD];
            timers
                .schedule(HOUR, move || {
                    std::hint::black_box(pad);
                })
                .unwrap()
        })
        .collect();
    timers.advance(Duration::ZERO).unwrap(); // filed
    let held = LIVE.load(SeqCst);
    for handle in handles {
        assert!(handle.cancel());
    }
    let settled = wait_until(PATIENCE, || LIVE.load(SeqCst) + TIMERS * PAD <= held);
    assert!(
        settled,
        "{} bytes live, {held} with the timers filed",
        LIVE.load(SeqCst)
    );
    assert_eq!(timers.pending(), 1);
}

/// A server with a thread per connection: each thread makes a timer on the
/// shared service, cancels it and ends. Each thread makes a lane to the
/// service, kept by its thread-locals; once the thread has gone, its lane
/// must go with it, or memory grows by one for every thread the process
/// ever ran.
#[test]
fn threads_that_come_and_go_leave_no_count_behind() {
    let _alone = ALONE.lock().unwrap_or_else(|e| e.into_inner());
    let timers = TimerService::new();
    let one_connection = || {
        std::thread::scope(|s| {
            s.spawn(|| {
                let handle = timers.schedule(HOUR, || ()).unwrap();
                assert!(handle.cancel());
            });
        });
    };
    // Warm up what is allocated once (the driver's tables).
    for _ in 0..200 {
        one_connection();
    }
    let threads = if cfg!(miri) { 20 } else { 5_000 };
    // Whatever the warm-up left settles within a round or two.
    std::thread::sleep(Duration::from_millis(500));
    let before = LIVE.load(SeqCst);
    for _ in 0..threads {
        one_connection();
    }
    // A lane is a few words, its allocation more: 5 000 left behind would
    // be over 128 KiB.
    let slack = 128 * 1024;
    let settled = wait_until(PATIENCE, || LIVE.load(SeqCst) <= before + slack);
    assert!(
        settled,
        "{} bytes live after {threads} threads came and went, {before} before",
        LIVE.load(SeqCst)
    );
}

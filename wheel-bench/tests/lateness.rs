//! wheel-sync's lateness percentiles come from a histogram of its own (its
//! driver may not allocate or lock, see `wheel-sync/src/lateness.rs`); the
//! bench's come from HdrHistogram. On the same values the two agree within
//! one of wheel-sync's buckets.

use std::thread;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use wheel_sync::TimerService;

/// Timers in the test, one due at each millisecond.
const TIMERS: u64 = 2000;

#[test]
fn wheel_sync_lateness_agrees_with_hdrhistogram_within_a_bucket() {
    let timers = TimerService::builder().manual_clock().build().unwrap();
    for k in 1..=TIMERS {
        timers.schedule(Duration::from_millis(k), || ()).unwrap();
    }
    // One jump past the last: the timer due at k ms fires (TIMERS + 1 - k)
    // ms past its tick.
    timers.advance(Duration::from_millis(TIMERS + 1)).unwrap();
    let start = Instant::now();
    while timers.stats().fired < TIMERS {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "timers not fired"
        );
        thread::sleep(Duration::from_millis(1));
    }
    let late = timers.stats().lateness;

    let mut hdr = Histogram::<u64>::new(3).unwrap();
    for k in 1..=TIMERS {
        hdr.record((TIMERS + 1 - k) * 1_000_000).unwrap();
    }
    assert_eq!(late.max, Duration::from_millis(TIMERS));
    for (q, got) in [(0.5, late.p50), (0.99, late.p99), (0.999, late.p999)] {
        let got = got.as_nanos() as f64;
        // HdrHistogram's figure is within 0.1 % above the value at that
        // rank, wheel-sync's is the top of its bucket: at most an eighth
        // above it.
        let hdr_ns = hdr.value_at_quantile(q) as f64;
        assert!(
            (hdr_ns / 1.001..=hdr_ns * 1.125).contains(&got),
            "p{q}: wheel-sync {got} ns, HdrHistogram {hdr_ns} ns"
        );
    }
}

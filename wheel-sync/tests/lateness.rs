//! The service's own lateness percentiles agree, within a bucket of its
//! histogram, with lateness measured outside it: on a manual clock, where
//! the lateness of every timer is known exactly.
#![cfg(not(loom))]

use std::time::Duration;

use wheel_sync::TimerService;

mod common;
use common::{wait_until, PATIENCE};

/// The exact lateness that a fraction `q` of `sorted` did not exceed, by
/// the same rank rule as the service (the `ceil(q * n)`th smallest).
fn quantile(sorted: &[u64], q: f64) -> u64 {
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

#[test]
fn the_reported_percentiles_are_the_exact_ones_within_a_bucket() {
    let timers = TimerService::builder().manual_clock().build().unwrap();
    let ms = Duration::from_millis(1);
    // Timer i is due at i ms. The clock moves 7 ms at a time up to 994 ms,
    // so timers up to there fire at the first multiple of 7 at or past
    // their deadline (0 to 6 ms late); then it jumps a second, and the last
    // six make a tail, 994 to 999 ms late.
    let mut late_ns = Vec::new();
    for i in 1..=1_000u64 {
        timers.schedule(ms * i as u32, || ()).unwrap();
        let fired_at = if i <= 994 {
            i.div_ceil(7) * 7
        } else {
            994 + 1_000
        };
        late_ns.push((fired_at - i) * 1_000_000);
    }
    for _ in 0..994 / 7 {
        timers.advance(ms * 7).unwrap();
    }
    timers.advance(Duration::from_secs(1)).unwrap();
    assert!(wait_until(PATIENCE, || timers.stats().fired == 1_000));
    late_ns.sort_unstable();
    let late = timers.stats().lateness;
    for (q, reported) in [(0.5, late.p50), (0.99, late.p99), (0.999, late.p999)] {
        let exact = quantile(&late_ns, q);
        let reported = reported.as_nanos() as u64;
        assert!(
            reported >= exact && reported - exact <= exact / 8,
            "p{q}: reported {reported} ns, exact {exact} ns"
        );
    }
    assert_eq!(late.max.as_nanos() as u64, *late_ns.last().unwrap());
}

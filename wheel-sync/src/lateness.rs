//! How late timers fire: a fixed log-bucket histogram that the driver
//! updates as it fires, without allocating or locking, and
//! [`Lateness`], the percentiles [`Stats`](crate::Stats) reads from it.
//!
//! # Ground rules
//!
//! - Lateness is measured in nanoseconds past the start of a timer's due
//!   tick, as the driver's round saw the clock when it began.
//! - Values below [`EXACT`] have a bucket each; above, every power of two
//!   is split into [`SPLITS`] buckets, so a bucket's top is within 1/8
//!   (12.5 %) of any value it counts. Every `u64` has a bucket.
//! - Only the driver writes (a load and a store per fired timer: no
//!   read-modify-write); a reader copies the counts once and takes the
//!   total and every percentile from its copy, which may be a round old,
//!   as every other driver counter is. The driver publishes a round's
//!   maximum after its counts (`Release`), so a reader that sees the
//!   maximum sees the timer that set it counted. The counters are plain
//!   `std` atomics even under loom: statistics, not part of any protocol.
//!
//! # Why not HdrHistogram
//!
//! The benchmarks record their own latencies with the `hdrhistogram`
//! crate; the driver cannot. Its `record` takes `&mut self`, so the driver
//! would need a lock to let [`Stats`](crate::Stats) read from another
//! thread, or a copy to hand over, and it grows (allocates) when a value
//! exceeds its range; its `sync` recorders allocate a fresh histogram at
//! each hand-over. The driver may neither lock nor allocate while it
//! fires, and its readers must never wait for it, so it keeps this fixed
//! array of atomics, with coarser buckets (an eighth) than a service's
//! statistics need finer. `wheel-bench`'s `tests/lateness.rs` checks that
//! the two agree within one of these buckets on the same values.

use core::time::Duration;
use std::sync::atomic::{AtomicU64, Ordering};

/// Buckets per power of two, as a shift.
const SPLIT_BITS: u32 = 3;
/// Buckets per power of two.
const SPLITS: u64 = 1 << SPLIT_BITS;
/// Values below this are counted exactly.
const EXACT: u64 = 2 * SPLITS;
/// Buckets for every `u64`: the exact ones, then `SPLITS` per power of two
/// from `EXACT` up.
const BUCKETS: usize = ((65 - SPLIT_BITS) as usize) * SPLITS as usize;

/// The bucket that counts `ns`.
fn bucket_of(ns: u64) -> usize {
    if ns < EXACT {
        return ns as usize;
    }
    // `ns` is `1xxx…` in binary: the power of two picks the group, the
    // SPLIT_BITS after the leading one pick the bucket within it.
    let shift = 63 - ns.leading_zeros() - SPLIT_BITS;
    (u64::from(shift) * SPLITS + (ns >> shift)) as usize
}

/// The largest value bucket `i` counts.
fn bucket_top(i: usize) -> u64 {
    let i = i as u64;
    if i < EXACT {
        return i;
    }
    let shift = i / SPLITS - 1;
    let low = (SPLITS + i % SPLITS) << shift;
    low + ((1u64 << shift) - 1)
}

/// The driver's lateness counts: one per bucket.
pub(crate) struct Histogram {
    counts: Box<[AtomicU64]>,
}

impl Default for Histogram {
    fn default() -> Self {
        Self::new()
    }
}

impl Histogram {
    pub(crate) fn new() -> Self {
        Self {
            counts: (0..BUCKETS).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    /// Counts one timer fired `ns` late. Driver only.
    #[inline]
    pub(crate) fn record(&self, ns: u64) {
        let count = &self.counts[bucket_of(ns)];
        count.store(count.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
    }

    /// The percentiles of what has been recorded; `max` is the exact
    /// largest lateness, which the driver keeps apart.
    pub(crate) fn lateness(&self, max: Duration) -> Lateness {
        // One copy of the counts (on the stack), which the total and every
        // walk read: walks over the live counts, each after the total,
        // would meet timers the driver counted meanwhile, and a timer on
        // time counted between two walks put p99 below p50.
        let counts: [u64; BUCKETS] =
            core::array::from_fn(|i| self.counts[i].load(Ordering::Relaxed));
        let total: u64 = counts.iter().sum();
        let quantile = |q: f64| {
            if total == 0 {
                return Duration::ZERO;
            }
            // The rank of the timer at fraction `q`, 1-based.
            let rank = ((q * total as f64).ceil() as u64).clamp(1, total);
            let mut seen = 0;
            let bucket = (counts.iter())
                .position(|&count| {
                    seen += count;
                    seen >= rank
                })
                .unwrap_or(BUCKETS - 1);
            Duration::from_nanos(bucket_top(bucket)).min(max)
        };
        Lateness {
            p50: quantile(0.50),
            p99: quantile(0.99),
            p999: quantile(0.999),
            max,
        }
    }
}

/// How late fired timers were, past the start of their due tick: the
/// percentiles of the driver's histogram, each the top of its bucket
/// (within 12.5 % above the true value, and never above `max`), and the
/// exact maximum. Zero before anything fires.
///
/// # Examples
/// ```
/// use std::time::Duration;
///
/// let timers = wheel_sync::TimerService::builder().manual_clock().build().unwrap();
/// for _ in 0..100 {
///     timers.schedule(Duration::from_millis(1), || ()).unwrap();
/// }
/// // The clock jumps 3 ms: every timer fires 2 ms past its tick.
/// timers.advance(Duration::from_millis(3)).unwrap();
/// while timers.stats().fired < 100 {
///     std::thread::yield_now();
/// }
/// let late = timers.stats().lateness;
/// assert_eq!(late.max, Duration::from_millis(2));
/// assert!(late.p50 <= late.max && late.p50 >= Duration::from_micros(1750));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Lateness {
    /// Half the fired timers were at most this late.
    pub p50: Duration,
    /// 99 % were at most this late.
    pub p99: Duration,
    /// 99.9 % were at most this late.
    pub p999: Duration,
    /// The latest any timer fired.
    pub max: Duration,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_value_falls_in_a_bucket_whose_top_is_within_an_eighth_above_it() {
        let mut values: Vec<u64> = (0..5_000).collect();
        values.extend((0..64).map(|bit| 1u64 << bit));
        values.extend((1..64).map(|bit| (1u64 << bit) - 1));
        values.extend([u64::MAX, 1_000_000, 999_999, 123_456_789]);
        for v in values {
            let bucket = bucket_of(v);
            assert!(bucket < BUCKETS, "{v}");
            let top = bucket_top(bucket);
            assert!(top >= v, "{v}: top {top}");
            assert!(top - v <= v / 8, "{v}: top {top}");
            if bucket > 0 {
                assert!(
                    bucket_top(bucket - 1) < v,
                    "{v} also fits bucket {}",
                    bucket - 1
                );
            }
        }
        assert_eq!(bucket_of(u64::MAX), BUCKETS - 1);
    }

    #[test]
    fn percentiles_are_the_tops_of_the_buckets_at_their_ranks() {
        let histogram = Histogram::new();
        assert_eq!(histogram.lateness(Duration::ZERO), Lateness::default());
        // 990 timers 1 µs late, 9 at 1 ms, 1 at 1 s.
        for _ in 0..990 {
            histogram.record(1_000);
        }
        for _ in 0..9 {
            histogram.record(1_000_000);
        }
        histogram.record(1_000_000_000);
        let max = Duration::from_secs(1);
        let late = histogram.lateness(max);
        let top = |ns| Duration::from_nanos(bucket_top(bucket_of(ns)));
        assert_eq!(late.p50, top(1_000));
        assert_eq!(late.p99, top(1_000));
        assert_eq!(late.p999, top(1_000_000));
        assert_eq!(late.max, max);
        // A top above the exact maximum is cut to it.
        assert_eq!(
            histogram.lateness(Duration::from_nanos(1_001)).p50,
            Duration::from_nanos(1_001)
        );
    }
}

//! What each fired timer records in the `delay` experiment: its lateness past
//! its own deadline in a log-linear histogram and its fire time in a
//! per-100 ms series. Callbacks record from any thread with a few relaxed
//! atomics; the child reads the result once, after the last timer.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::thread::{self, Thread};
use std::time::{Duration, Instant};

/// Width of one slot of the fired-per-slot series.
pub const SLOT: Duration = Duration::from_millis(100);

/// Each power of two is split into `2^SUB_BITS` buckets, so a reported
/// percentile is within 1/32 (3 %) of the true value.
const SUB_BITS: u32 = 5;
/// Values below this have a bucket each.
const LINEAR: u64 = 1 << (SUB_BITS + 1);
/// Buckets needed to cover every `u64`: the linear ones, then `2^SUB_BITS`
/// per remaining power of two.
pub const BUCKETS: usize = ((65 - SUB_BITS) as usize) << SUB_BITS;

/// The histogram bucket that counts `v`.
pub fn bucket_of(v: u64) -> usize {
    if v < LINEAR {
        return v as usize;
    }
    let shift = 63 - v.leading_zeros() - SUB_BITS;
    ((shift as usize) << SUB_BITS) + (v >> shift) as usize
}

/// The largest value bucket `i` counts.
pub fn bucket_high(i: usize) -> u64 {
    let i = i as u64;
    if i < LINEAR {
        return i;
    }
    let shift = (i >> SUB_BITS) - 1;
    let low = ((i & ((1 << SUB_BITS) - 1)) + (1 << SUB_BITS)) << shift;
    low + ((1 << shift) - 1)
}

/// A lateness histogram in nanoseconds, as read at the end of a run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Lateness {
    /// Count per bucket (see [`bucket_of`]); shorter than [`BUCKETS`] when the
    /// top buckets are empty.
    pub counts: Vec<u64>,
    /// The exact largest lateness.
    pub max_ns: u64,
}

impl Lateness {
    /// Timers counted.
    pub fn total(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// The lateness that a fraction `q` of timers did not exceed, rounded up to
    /// its bucket's top (never above the exact max); 0 when empty.
    pub fn quantile_ns(&self, q: f64) -> u64 {
        let total = self.total();
        if total == 0 {
            return 0;
        }
        let rank = ((q.clamp(0.0, 1.0) * total as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return bucket_high(i).min(self.max_ns);
            }
        }
        self.max_ns
    }

    /// `(lateness ns, fraction of timers at or below it)` at each non-empty
    /// bucket's top: the cumulative distribution.
    pub fn cdf(&self) -> Vec<(u64, f64)> {
        let total = self.total() as f64;
        let mut seen = 0;
        let mut points = Vec::new();
        for (i, &c) in self.counts.iter().enumerate() {
            if c > 0 {
                seen += c;
                points.push((bucket_high(i).min(self.max_ns), seen as f64 / total));
            }
        }
        points
    }
}

/// Shared by every timer of one `delay` run.
pub struct Recorder {
    start: Instant,
    total: u64,
    fired: AtomicU64,
    early: AtomicU64,
    max_late_ns: AtomicU64,
    wall_ns: AtomicU64,
    done: AtomicBool,
    lateness: Box<[AtomicU32]>,
    per_slot: Box<[AtomicU32]>,
    /// Woken by the last timer.
    waiter: Thread,
}

/// Everything a [`Recorder`] saw.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Recorded {
    /// From start to the last timer's fire.
    pub wall_ns: u64,
    /// Timers that fired before their deadline.
    pub early: u64,
    /// Lateness of every timer; early ones count as 0.
    pub lateness: Lateness,
    /// Timers fired in each [`SLOT`] since start; trailing empty slots dropped.
    pub per_slot: Vec<u32>,
}

impl Recorder {
    /// A recorder for `total` timers that fire within `horizon` of now; the
    /// run's clock starts when this returns. The calling thread is the one
    /// [`Recorder::wait`] wakes.
    pub fn new(total: u64, horizon: Duration) -> Recorder {
        let slots = (horizon.as_nanos() / SLOT.as_nanos()) as usize + 1;
        Recorder {
            total,
            fired: AtomicU64::new(0),
            early: AtomicU64::new(0),
            max_late_ns: AtomicU64::new(0),
            wall_ns: AtomicU64::new(0),
            done: AtomicBool::new(false),
            lateness: (0..BUCKETS).map(|_| AtomicU32::new(0)).collect(),
            per_slot: (0..slots).map(|_| AtomicU32::new(0)).collect(),
            waiter: thread::current(),
            start: Instant::now(),
        }
    }

    /// Time since start, saturating at ~584 years.
    pub fn elapsed_ns(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    /// The instant `offset_ns` after start.
    pub fn at(&self, offset_ns: u64) -> Instant {
        self.start + Duration::from_nanos(offset_ns)
    }

    /// Records one timer whose deadline was `deadline_ns` after start firing now.
    pub fn fire(&self, deadline_ns: u64) {
        let now_ns = self.elapsed_ns();
        if now_ns < deadline_ns {
            self.early.fetch_add(1, Ordering::Relaxed);
        }
        let late = now_ns.saturating_sub(deadline_ns);
        self.lateness[bucket_of(late)].fetch_add(1, Ordering::Relaxed);
        let slot = ((now_ns / SLOT.as_nanos() as u64) as usize).min(self.per_slot.len() - 1);
        self.per_slot[slot].fetch_add(1, Ordering::Relaxed);
        // A plain load first: a new maximum is rare, and it keeps the line shared.
        if late > self.max_late_ns.load(Ordering::Relaxed) {
            self.max_late_ns.fetch_max(late, Ordering::Relaxed);
        }
        // AcqRel chains every fire's relaxed writes into the last one's release.
        // Every fire, not just the last to count: on a multi-thread runtime
        // the last to count need not be the last to fire.
        self.wall_ns.fetch_max(now_ns, Ordering::Relaxed);
        if self.fired.fetch_add(1, Ordering::AcqRel) + 1 == self.total {
            self.done.store(true, Ordering::Release);
            self.waiter.unpark();
        }
    }

    /// Timers fired so far.
    pub fn fired(&self) -> u64 {
        self.fired.load(Ordering::Relaxed)
    }

    /// Whether every timer has fired.
    pub fn is_done(&self) -> bool {
        self.done.load(Ordering::Acquire)
    }

    /// Blocks the thread that created the recorder until every timer has fired.
    pub fn wait(&self) {
        while !self.is_done() {
            thread::park_timeout(Duration::from_millis(100));
        }
    }

    /// What was recorded; complete once [`Recorder::is_done`].
    pub fn recorded(&self) -> Recorded {
        let load = |a: &AtomicU32| a.load(Ordering::Relaxed);
        let mut counts: Vec<u64> = self.lateness.iter().map(|a| u64::from(load(a))).collect();
        let mut per_slot: Vec<u32> = self.per_slot.iter().map(load).collect();
        while counts.last() == Some(&0) {
            counts.pop();
        }
        while per_slot.last() == Some(&0) {
            per_slot.pop();
        }
        Recorded {
            wall_ns: self.wall_ns.load(Ordering::Relaxed),
            early: self.early.load(Ordering::Relaxed),
            lateness: Lateness {
                counts,
                max_ns: self.max_late_ns.load(Ordering::Relaxed),
            },
            per_slot,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_cover_every_value_in_order() {
        let mut probes = vec![
            0,
            1,
            63,
            64,
            65,
            127,
            128,
            1_000_000,
            u64::MAX - 1,
            u64::MAX,
        ];
        probes.extend((0..64).map(|s| 1u64 << s));
        probes.extend((1..64).map(|s| (1u64 << s) - 1));
        for v in probes {
            let i = bucket_of(v);
            assert!(i < BUCKETS, "{v} -> {i}");
            assert!(v <= bucket_high(i), "{v} above its bucket {i}");
            assert!(i == 0 || v > bucket_high(i - 1), "{v} belongs below {i}");
        }
        assert_eq!(bucket_of(u64::MAX), BUCKETS - 1);
        assert_eq!(bucket_high(BUCKETS - 1), u64::MAX);
    }

    #[test]
    fn bucket_error_is_within_a_thirty_second() {
        for v in [100, 1_000, 999_999, 1_500_000, 15_000_000_000] {
            let high = bucket_high(bucket_of(v));
            assert!((high - v) as f64 <= v as f64 / 32.0, "{v} -> {high}");
        }
    }

    #[test]
    fn quantiles_of_a_known_distribution() {
        let mut lateness = Lateness {
            counts: vec![0; BUCKETS],
            max_ns: 2_000_000,
        };
        // 98 timers 10 ns late, one 1 ms late, one 2 ms late.
        lateness.counts[bucket_of(10)] = 98;
        lateness.counts[bucket_of(1_000_000)] += 1;
        lateness.counts[bucket_of(2_000_000)] += 1;
        assert_eq!(lateness.quantile_ns(0.5), 10);
        assert_eq!(lateness.quantile_ns(0.98), 10);
        let p99 = lateness.quantile_ns(0.99);
        assert!((1_000_000..=1_031_250).contains(&p99), "{p99}");
        assert_eq!(lateness.quantile_ns(1.0), 2_000_000);
        let cdf = lateness.cdf();
        assert_eq!(cdf.len(), 3);
        assert_eq!(cdf[0], (10, 0.98));
        assert_eq!(cdf[2], (2_000_000, 1.0));
        assert_eq!(Lateness::default().quantile_ns(0.99), 0);
    }

    #[test]
    fn recorder_counts_early_late_and_finishes() {
        let recorder = Recorder::new(3, Duration::from_secs(1));
        let far_future = u64::MAX / 2;
        recorder.fire(far_future);
        recorder.fire(0);
        assert!(!recorder.is_done());
        recorder.fire(0);
        recorder.wait();
        let recorded = recorder.recorded();
        assert_eq!(recorded.early, 1);
        assert_eq!(recorded.lateness.total(), 3);
        assert_eq!(recorded.per_slot.iter().sum::<u32>(), 3);
        assert!(recorded.wall_ns > 0);
        assert!(recorded.lateness.max_ns >= recorded.lateness.quantile_ns(0.5));
    }
}

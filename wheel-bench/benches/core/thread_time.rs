//! The benchmark thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`) as a
//! criterion measurement, and for the spans the benchmarks time themselves.

use std::sync::OnceLock;
use std::time::Duration;

use criterion::measurement::{Measurement, ValueFormatter};
use criterion::Throughput;

/// CPU time this thread has used.
pub fn thread_time() -> Duration {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `now` is a live, writable timespec for the duration of the call.
    let status = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) };
    assert_eq!(status, 0, "CLOCK_THREAD_CPUTIME_ID is unavailable");
    Duration::new(now.tv_sec as u64, now.tv_nsec as u32)
}

/// What one clock reading adds to a timed span (a system call, about half a
/// microsecond here): the median of many back-to-back pairs. Subtracted from
/// each batch the benchmarks time themselves, where it would otherwise add a
/// nanosecond or more per operation at 1K.
fn clock_cost() -> Duration {
    static COST: OnceLock<Duration> = OnceLock::new();
    *COST.get_or_init(|| {
        let mut pairs: Vec<Duration> = (0..1001)
            .map(|_| {
                let start = thread_time();
                thread_time() - start
            })
            .collect();
        pairs.sort_unstable();
        pairs[pairs.len() / 2]
    })
}

/// Thread CPU time of `f`, less the cost of reading the clock.
#[inline]
pub fn measure(f: impl FnOnce()) -> Duration {
    let start = thread_time();
    f();
    (thread_time() - start).saturating_sub(clock_cost())
}

/// Criterion measured in [`thread_time`].
pub struct ThreadTime;

impl Measurement for ThreadTime {
    type Intermediate = Duration;
    type Value = Duration;

    fn start(&self) -> Duration {
        thread_time()
    }
    fn end(&self, start: Duration) -> Duration {
        thread_time().saturating_sub(start)
    }
    fn add(&self, a: &Duration, b: &Duration) -> Duration {
        *a + *b
    }
    fn zero(&self) -> Duration {
        Duration::ZERO
    }
    fn to_f64(&self, value: &Duration) -> f64 {
        value.as_nanos() as f64
    }
    fn formatter(&self) -> &dyn ValueFormatter {
        &Nanoseconds
    }
}

/// Formats nanoseconds as criterion's wall-time formatter does (which it
/// does not export).
struct Nanoseconds;

impl Nanoseconds {
    fn unit(typical: f64) -> (f64, &'static str) {
        match typical {
            t if t < 1e3 => (1.0, "ns"),
            t if t < 1e6 => (1e-3, "µs"),
            t if t < 1e9 => (1e-6, "ms"),
            _ => (1e-9, "s"),
        }
    }
}

impl ValueFormatter for Nanoseconds {
    fn scale_values(&self, typical: f64, values: &mut [f64]) -> &'static str {
        let (factor, unit) = Self::unit(typical);
        values.iter_mut().for_each(|v| *v *= factor);
        unit
    }

    fn scale_throughputs(
        &self,
        _typical: f64,
        throughput: &Throughput,
        values: &mut [f64],
    ) -> &'static str {
        // Values are ns per iteration; turn them into elements per second.
        let per_iteration = match *throughput {
            Throughput::Bytes(n) | Throughput::BytesDecimal(n) | Throughput::Elements(n) => n,
        } as f64;
        values
            .iter_mut()
            .for_each(|v| *v = per_iteration * 1e9 / *v);
        "elem/s"
    }

    fn scale_for_machines(&self, _values: &mut [f64]) -> &'static str {
        "ns"
    }
}

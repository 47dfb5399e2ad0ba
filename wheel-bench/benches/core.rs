//! wheel-core against its peers, side by side in one criterion group per
//! operation, at 1K / 100K / 1M pending timers; then a table of heap bytes per
//! pending timer.
//!
//! ```text
//! cargo bench -p wheel-bench --bench core                      # everything, under 10 minutes
//! cargo bench -p wheel-bench --bench core -- 'insert_cancel/'  # one group
//! cargo bench -p wheel-bench --bench core -- '/1000$' --quick  # smoke run at 1K
//! cargo bench -p wheel-bench --bench core -- memory            # only the memory table
//! cargo bench -p wheel-bench --bench core -- geometry_          # only the geometry groups
//! ```
//!
//! Every benchmark runs on a population of `n` pending timers with deadlines
//! uniform in `now + 1 ..= now + 2^20` ticks (17.5 minutes of milliseconds),
//! kept at `n` while it is measured, so each operation meets a realistically
//! large and shuffled structure. Inputs come from a seeded SplitMix64, so every
//! peer sees the same stream. `insert_cancel` cancels a random old timer
//! (a connection's idle timeout replaced); `insert_then_cancel` cancels the
//! timer it just armed (a request answered in time). Times are per operation (`fire`: per timer
//! fired; `churn`: per tick of the mix).
//!
//! Time is the benchmark thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`), not
//! wall time: every peer runs on this one thread (DelayQueue's runtime is
//! current-thread), so on an idle machine the two agree, and on a shared one
//! the CPU time leaves out the slices other processes take. Cache pollution
//! from neighbours still shows, so quote ratios from one run.
//!
//! `fire_and_forget` (at 100K and 1M) is the seed's game-server load: timers
//! due 500–15 000 ticks out, filed at once and never cancelled, then fired a
//! tick at a time; it adds `BucketWheel`, wheel-core's wheel for timers that
//! are never cancelled, next to the peers.
//!
//! The `geometry_insert_cancel`, `geometry_fire` and `geometry_churn` groups
//! are for choosing wheel-core's default geometry: they run those three
//! bodies on wheel-core alone at 64 × 11 (the default, id `wheel-core`),
//! 32 × 13, 16 × 16 and 8 × 22 slots × levels, at 1M pending only, where the
//! geometry decides how many cascades and cache misses a timer costs.
//!
//! The memory table counts live heap bytes with a counting global allocator:
//! after filling `n` timers, minus the empty queue, divided by `n`.

use std::hint::black_box;
use std::time::Duration;

use criterion::{BenchmarkGroup, BenchmarkId, Criterion};
use wheel_bench::peers::{
    BTreeTimers, DelayQueueTimers, IndexedHeap, LazyHeap, TimerQueue, WheelTimers,
};
use wheel_bench::rng::SplitMix64;
use wheel_core::BucketWheel;

// Timing by the thread's CPU time, as a criterion measurement.
#[path = "core/thread_time.rs"]
mod thread_time;
use thread_time::{measure, ThreadTime};

// Heap bytes per pending timer, by a counting allocator.
#[path = "core/memory.rs"]
mod memory;
use memory::memory_table;

/// Pending timers per benchmark.
const SIZES: [usize; 3] = [1_000, 100_000, 1_000_000];
/// Pending timers in the `geometry_*` groups.
const GEOMETRY_SIZE: usize = 1_000_000;
/// Deadlines fall uniformly in `now + 1 ..= now + SPREAD`.
const SPREAD: u64 = 1 << 20;
/// The same input stream for every peer.
const SEED: u64 = 0x5EED_0F71_3E75;
/// The `fire` benchmark refills from scratch past this tick, far below the
/// DelayQueue peer's last tick.
const REBUILD_AT: u64 = 1 << 32;
/// `fire_and_forget` delays, in ticks: the seed's 0.5–15 s in milliseconds.
const FORGET_MIN: u64 = 500;
const FORGET_MAX: u64 = 15_000;
/// Insert + cancel pairs per tick in the `churn` mix.
const CHURN_PAIRS: usize = 4;

/// A queue, the keys of its pending timers and the input stream.
struct Bed<Q: TimerQueue> {
    queue: Q,
    /// In the groups that fire, `keys[v]` names the pending timer carrying
    /// value `v`: each value is one "connection" that always has one timer.
    keys: Vec<Q::Key>,
    fired: Vec<u64>,
    rng: SplitMix64,
    now: u64,
}

impl<Q: TimerQueue> Bed<Q> {
    fn new(mut queue: Q, n: usize) -> Self {
        let mut rng = SplitMix64(SEED);
        let keys = (0..n as u64)
            .map(|value| queue.insert(1 + rng.below(SPREAD), value))
            .collect();
        Self {
            queue,
            keys,
            fired: Vec::new(),
            rng,
            now: 0,
        }
    }

    #[inline]
    fn deadline(&mut self) -> u64 {
        self.now + 1 + self.rng.below(SPREAD)
    }

    #[inline]
    fn pick(&mut self) -> usize {
        self.rng.below(self.keys.len() as u64) as usize
    }

    /// One more pending timer (the value–index pairing is not kept up: the
    /// groups that grow and shrink the population never fire).
    #[inline]
    fn push(&mut self) {
        let deadline = self.deadline();
        let key = self.queue.insert(deadline, self.keys.len() as u64);
        self.keys.push(key);
    }

    /// Cancels a random pending timer and forgets its key.
    #[inline]
    fn cancel_random(&mut self) {
        let index = self.pick();
        let key = self.keys.swap_remove(index);
        black_box(self.queue.cancel(key));
    }

    /// A random connection's timer is cancelled and a new one armed: an
    /// insert and a cancel at a steady `n`.
    #[inline]
    fn replace_random(&mut self) {
        let value = self.pick();
        let deadline = self.deadline();
        let key = self.queue.insert(deadline, value as u64);
        let old = std::mem::replace(&mut self.keys[value], key);
        black_box(self.queue.cancel(old));
    }

    /// Arms a timer and cancels it again: `n` is unchanged.
    #[inline]
    fn arm_and_cancel(&mut self) {
        let deadline = self.deadline();
        let key = self.queue.insert(deadline, u64::MAX);
        black_box(self.queue.cancel(key));
    }

    #[inline]
    fn reschedule_random(&mut self) {
        let value = self.pick();
        let deadline = self.deadline();
        black_box(self.queue.reschedule(&mut self.keys[value], deadline));
    }

    /// Moves the clock to `now`, collecting what fired; returns the count.
    #[inline]
    fn advance_to(&mut self, now: u64) -> usize {
        self.now = now;
        let fired = &mut self.fired;
        self.queue.advance(now, |value| fired.push(value))
    }

    /// Arms a new timer for each connection whose timer just fired.
    #[inline]
    fn rearm_fired(&mut self) {
        while let Some(value) = self.fired.pop() {
            let deadline = self.deadline();
            self.keys[value as usize] = self.queue.insert(deadline, value);
        }
    }
}

/// The population is built the first time criterion runs the benchmark, so
/// benchmarks a filter skips cost nothing.
fn bed<Q: TimerQueue>(slot: &mut Option<Bed<Q>>, make: fn() -> Q, n: usize) -> &mut Bed<Q> {
    slot.get_or_insert_with(|| Bed::new(make(), n))
}

/// Timed operations between untimed refills in `insert` and `cancel`: small
/// enough that the population stays within 1/8 of `n`, large enough that
/// the clock's cost, subtracted as it is, leaves little noise behind.
fn batch_for(n: usize) -> u64 {
    (n as u64 / 8).clamp(1, 4096)
}

/// Insert alone, at `n` pending. Each batch of timed inserts is followed by
/// as many untimed cancels of random timers, so `n` holds within a batch.
fn insert<Q: TimerQueue>(group: &mut BenchmarkGroup<'_, ThreadTime>, n: usize, make: fn() -> Q) {
    batched(group, n, make, true);
}

/// Cancel alone, of a random pending timer, at `n` pending: the mirror of
/// `insert`, with the refilling inserts untimed.
fn cancel<Q: TimerQueue>(group: &mut BenchmarkGroup<'_, ThreadTime>, n: usize, make: fn() -> Q) {
    batched(group, n, make, false);
}

/// Batches of inserts, each followed by as many cancels of random timers;
/// only the inserts are timed if `time_inserts`, else only the cancels.
fn batched<Q: TimerQueue>(
    group: &mut BenchmarkGroup<'_, ThreadTime>,
    n: usize,
    make: fn() -> Q,
    time_inserts: bool,
) {
    let mut slot = None;
    group.bench_function(BenchmarkId::new(Q::NAME, n), |b| {
        let bed = bed(&mut slot, make, n);
        b.iter_custom(|iters| {
            let mut timed = Duration::ZERO;
            let mut left = iters;
            while left > 0 {
                let batch = left.min(batch_for(n));
                let inserts = |bed: &mut Bed<Q>| (0..batch).for_each(|_| bed.push());
                let cancels = |bed: &mut Bed<Q>| (0..batch).for_each(|_| bed.cancel_random());
                if time_inserts {
                    timed += measure(|| inserts(bed));
                    cancels(bed);
                } else {
                    inserts(bed);
                    timed += measure(|| cancels(bed));
                }
                left -= batch;
            }
            timed
        });
    });
}

/// Times `op` alone, once per iteration, on a population of `n`.
fn each<Q: TimerQueue>(
    group: &mut BenchmarkGroup<'_, ThreadTime>,
    n: usize,
    make: fn() -> Q,
    op: impl Fn(&mut Bed<Q>),
) {
    let mut slot = None;
    group.bench_function(BenchmarkId::new(Q::NAME, n), |b| {
        let bed = bed(&mut slot, make, n);
        b.iter(|| op(bed));
    });
}

/// Arm a timer and cancel a random old one (a connection's idle timeout
/// replaced), exactly at `n`.
fn insert_cancel<Q: TimerQueue>(
    group: &mut BenchmarkGroup<'_, ThreadTime>,
    n: usize,
    make: fn() -> Q,
) {
    each(group, n, make, Bed::replace_random);
}

/// A request's timeout: arm a timer, then cancel that same timer because the
/// reply came in time, with `n` others pending. This is the pattern behind
/// the issue's DelayQueue figures (insert, then remove what was inserted);
/// `insert_cancel` is the colder one where the cancelled timer is a random
/// old one.
fn insert_then_cancel<Q: TimerQueue>(
    group: &mut BenchmarkGroup<'_, ThreadTime>,
    n: usize,
    make: fn() -> Q,
) {
    each(group, n, make, Bed::arm_and_cancel);
}

/// Move a random pending timer to a new random deadline (an idle timeout
/// pushed back by traffic).
fn reschedule<Q: TimerQueue>(
    group: &mut BenchmarkGroup<'_, ThreadTime>,
    n: usize,
    make: fn() -> Q,
) {
    each(group, n, make, Bed::reschedule_random);
}

/// Advance with fire, per timer fired. The clock moves in steps that fire
/// about a thousand timers each (half a second of ticks at 1M), so per-call
/// costs, DelayQueue's tokio clock step among them, are spread as they are in a
/// busy driver. Each fired timer is re-armed untimed, keeping `n` pending, so
/// cascades of the live population are part of what is timed.
fn fire<Q: TimerQueue>(group: &mut BenchmarkGroup<'_, ThreadTime>, n: usize, make: fn() -> Q) {
    // Steady state fires n / (SPREAD / 2) timers a tick.
    let step = (SPREAD * 512 / n as u64).max(1);
    let mut slot = None;
    group.bench_function(BenchmarkId::new(Q::NAME, n), |b| {
        let bed = bed(&mut slot, make, n);
        b.iter_custom(|iters| {
            let mut timed = Duration::ZERO;
            let mut fired = 0;
            while fired < iters {
                if bed.now > REBUILD_AT {
                    *bed = Bed::new(make(), n);
                }
                let target = bed.now + step;
                timed += measure(|| fired += bed.advance_to(target) as u64);
                bed.rearm_fired();
            }
            timed.mul_f64(iters as f64 / fired as f64)
        });
    });
}

/// One millisecond of a busy service, all timed: `CHURN_PAIRS` timers armed
/// and as many random ones cancelled, the clock advanced one tick, and each
/// timer that fired re-armed (about two a tick at 1M).
fn churn<Q: TimerQueue>(group: &mut BenchmarkGroup<'_, ThreadTime>, n: usize, make: fn() -> Q) {
    let mut slot = None;
    group.bench_function(BenchmarkId::new(Q::NAME, n), |b| {
        let bed = bed(&mut slot, make, n);
        b.iter(|| {
            for _ in 0..CHURN_PAIRS {
                bed.replace_random();
            }
            bed.advance_to(bed.now + 1);
            bed.rearm_fired();
        });
    });
}

/// The seed's fire-and-forget delays: `n` timers due uniformly in
/// `FORGET_MIN..=FORGET_MAX` ticks, filed at once, then the clock advanced a
/// tick at a time until the last has fired. One iteration is one timer,
/// filing and firing together; a new queue each round, so the filing meets
/// fresh memory as a real burst does.
fn forget<Q>(
    group: &mut BenchmarkGroup<'_, ThreadTime>,
    name: &str,
    n: usize,
    make: impl Fn() -> Q,
    insert: impl Fn(&mut Q, u64, u64),
    advance: impl Fn(&mut Q, u64) -> usize,
) {
    group.bench_function(BenchmarkId::new(name, n), |b| {
        b.iter_custom(|iters| {
            let mut timed = Duration::ZERO;
            let mut fired = 0;
            let mut rng = SplitMix64(SEED);
            while fired < iters {
                let mut queue = make();
                timed += measure(|| {
                    for value in 0..n as u64 {
                        let delay = FORGET_MIN + rng.below(FORGET_MAX - FORGET_MIN + 1);
                        insert(&mut queue, delay, value);
                    }
                    for tick in 1..=FORGET_MAX {
                        fired += advance(&mut queue, tick) as u64;
                    }
                });
                drop(queue);
            }
            timed.mul_f64(iters as f64 / fired as f64)
        });
    });
}

/// [`forget`] for a [`TimerQueue`] peer.
fn forget_peer<Q: TimerQueue>(
    group: &mut BenchmarkGroup<'_, ThreadTime>,
    n: usize,
    make: fn() -> Q,
) {
    forget(
        group,
        Q::NAME,
        n,
        make,
        |q, deadline, value| {
            black_box(q.insert(deadline, value));
        },
        |q, now| {
            q.advance(now, |value| {
                black_box(value);
            })
        },
    );
}

fn fire_and_forget(criterion: &mut Criterion<ThreadTime>, sizes: &[usize]) {
    let mut group = criterion.benchmark_group("fire_and_forget");
    for &n in sizes {
        configure(&mut group, n);
        forget(
            &mut group,
            "bucket-wheel",
            n,
            BucketWheel::<u64>::new,
            |w, deadline, value| w.insert(deadline, value),
            |w, now| {
                w.advance(now).fold(0, |count, fired| {
                    black_box(fired);
                    count + 1
                })
            },
        );
        forget_peer(&mut group, n, WheelTimers::new);
        forget_peer(&mut group, n, delay_queue);
        forget_peer(&mut group, n, LazyHeap::new);
    }
    group.finish();
}

fn delay_queue() -> DelayQueueTimers {
    DelayQueueTimers::new().expect("tokio builds a current-thread runtime")
}

/// Modest sampling so the whole run stays under ten minutes; 1M setups and
/// iterations are slow, and their samples are long enough to be stable.
fn configure(group: &mut BenchmarkGroup<'_, ThreadTime>, n: usize) {
    if n >= 1_000_000 {
        group.sample_size(10);
        group.warm_up_time(Duration::from_secs(1));
        group.measurement_time(Duration::from_secs(3));
    } else {
        group.sample_size(20);
        group.warm_up_time(Duration::from_millis(500));
        group.measurement_time(Duration::from_secs(2));
    }
}

/// One criterion group running `$body` on every peer at every size.
macro_rules! group {
    ($criterion:expr, $sizes:expr, $body:ident) => {{
        let mut group = $criterion.benchmark_group(stringify!($body));
        for &n in $sizes {
            configure(&mut group, n);
            $body(&mut group, n, WheelTimers::new);
            $body(&mut group, n, delay_queue);
            $body(&mut group, n, LazyHeap::new);
            $body(&mut group, n, IndexedHeap::new);
            $body(&mut group, n, BTreeTimers::new);
        }
        group.finish();
    }};
}

/// One criterion group, `geometry_$body`, running `$body` on wheel-core at
/// each candidate geometry.
macro_rules! geometry_group {
    ($criterion:expr, $sizes:expr, $body:ident) => {{
        let mut group = $criterion.benchmark_group(concat!("geometry_", stringify!($body)));
        for &n in $sizes {
            configure(&mut group, n);
            $body(&mut group, n, WheelTimers::<64, 11>::with_geometry);
            $body(&mut group, n, WheelTimers::<32, 13>::with_geometry);
            $body(&mut group, n, WheelTimers::<16, 16>::with_geometry);
            $body(&mut group, n, WheelTimers::<8, 22>::with_geometry);
        }
        group.finish();
    }};
}

/// What one `advance` by a tick with nothing due costs the DelayQueue peer:
/// the paused tokio clock step and timer-driver turn every advance pays, as a
/// real program pays a runtime wake-up. Printed so `churn`, which advances
/// every tick, can be read with it in mind.
fn delay_queue_step() {
    const STEPS: u64 = 20_000;
    let mut queue = delay_queue();
    let per_step = measure(|| {
        for tick in 1..=STEPS {
            black_box(queue.advance(tick, |_| {}));
        }
    }) / STEPS as u32;
    println!("delay-queue: one advance by a tick with nothing due takes {per_step:?}\n");
}

fn main() {
    // `cargo test --benches` runs each benchmark once (criterion's test
    // mode) to prove it works; 1K pending is enough for that.
    let args: Vec<String> = std::env::args().collect();
    let flag = |name: &str| args.iter().any(|arg| arg == name);
    let full = flag("--bench") && !flag("--test");
    let (sizes, geometry_sizes, forget_sizes): (&[usize], &[usize], &[usize]) = if full {
        (&SIZES, &[GEOMETRY_SIZE], &SIZES[1..])
    } else {
        (&SIZES[..1], &SIZES[..1], &SIZES[..1])
    };
    if !flag("--list") {
        memory_table(sizes);
        delay_queue_step();
    }
    let mut criterion = Criterion::default()
        .with_measurement(ThreadTime)
        .configure_from_args();
    group!(criterion, sizes, insert);
    group!(criterion, sizes, cancel);
    group!(criterion, sizes, insert_cancel);
    group!(criterion, sizes, insert_then_cancel);
    group!(criterion, sizes, reschedule);
    group!(criterion, sizes, fire);
    group!(criterion, sizes, churn);
    fire_and_forget(&mut criterion, forget_sizes);
    geometry_group!(criterion, geometry_sizes, insert_cancel);
    geometry_group!(criterion, geometry_sizes, fire);
    geometry_group!(criterion, geometry_sizes, churn);
    criterion.final_summary();
}

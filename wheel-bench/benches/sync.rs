//! Criterion benchmarks of the `wheel-sync` timer service against its peers.
//!
//! - `timeouts`: seed 001's request-timeout pattern. Each of T threads loops
//!   "schedule a 1 s timeout, then cancel it" (the reply always comes first),
//!   against one long-lived service: `wheel` (wheel-sync's service), `heap`
//!   (a `Mutex<BinaryHeap>` + `Condvar` scheduler thread, which is what a
//!   scheduled executor is) and `tokio` (a `Sleep` polled once so it really
//!   enters the runtime's wheel, then dropped, from plain threads that entered
//!   the runtime, as the seed's clients call from their own threads).
//!   Throughput is per schedule+cancel pair.
//! - `sleep`: one thread creating a `Sleep`, polling it once and dropping it,
//!   `wheel` vs `tokio`.
//! - `through`: one thread schedules timers due at once, as fast as it can,
//!   then waits for the last to fire: the whole way through per timer
//!   (schedule, hand over, file, fire). `wheel` with a handle (dropped at
//!   once) and `wheel-detached` (no handle), `heap`, and `tokio` (a spawned
//!   task sleeping until the deadline, the seed's shape).
//!
//! Run with `cargo bench -p wheel-bench --bench sync`.

use std::future::Future;
use std::hint::black_box;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Barrier;
use std::task::{Context, Waker};
use std::thread;
use std::time::{Duration, Instant};

use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, BenchmarkId, Criterion, Throughput};
use wheel_bench::peers::HeapScheduler;
use wheel_sync::TimerService;

/// The request timeout: long enough that it never fires, being cancelled first.
const TIMEOUT: Duration = Duration::from_secs(1);
/// Client thread counts, as in the issue.
const THREADS: [usize; 3] = [1, 2, 8];

fn timeouts(c: &mut Criterion) {
    let mut group = c.benchmark_group("timeouts");
    group.throughput(Throughput::Elements(1));
    for threads in THREADS {
        let timers = TimerService::new();
        bench_crew(&mut group, "wheel", threads, |n| {
            // A clone per thread (per run here), as each client thread would hold.
            let timers = timers.clone();
            for _ in 0..n {
                let handle = timers
                    .schedule(TIMEOUT, || {})
                    .expect("an unlimited, running service admits every timer");
                black_box(handle.cancel());
            }
        });
        drop(timers);

        let heap = HeapScheduler::new().expect("the benchmark needs its scheduler thread");
        bench_crew(&mut group, "heap", threads, |n| {
            for _ in 0..n {
                heap.schedule_cancellable(Instant::now() + TIMEOUT, || {})
                    .cancel();
            }
        });
        drop(heap);

        let rt = wheel_bench::tokio_runtime().expect("the benchmark needs a tokio runtime");
        bench_crew(&mut group, "tokio", threads, |n| {
            let _runtime = rt.enter();
            let mut cx = Context::from_waker(Waker::noop());
            for _ in 0..n {
                // tokio registers a sleep with its driver on first poll, not on creation.
                let mut sleep = pin!(tokio::time::sleep(TIMEOUT));
                black_box(sleep.as_mut().poll(&mut cx).is_pending());
            }
        });
        drop(rt);
    }
    group.finish();
}

fn sleep(c: &mut Criterion) {
    let mut group = c.benchmark_group("sleep");
    group.throughput(Throughput::Elements(1));
    let timers = TimerService::new();
    group.bench_function("wheel", |b| {
        let mut cx = Context::from_waker(Waker::noop());
        b.iter(|| {
            let mut sleep = pin!(timers.sleep(TIMEOUT));
            black_box(sleep.as_mut().poll(&mut cx).is_pending());
        });
    });
    drop(timers);
    let rt = wheel_bench::tokio_runtime().expect("the benchmark needs a tokio runtime");
    group.bench_function("tokio", |b| {
        let _runtime = rt.enter();
        let mut cx = Context::from_waker(Waker::noop());
        b.iter(|| {
            let mut sleep = pin!(tokio::time::sleep(TIMEOUT));
            black_box(sleep.as_mut().poll(&mut cx).is_pending());
        });
    });
    group.finish();
}

/// Callbacks the `through` group's timers have run.
static FIRED: AtomicU64 = AtomicU64::new(0);

/// A `through` callback.
fn count_fire() {
    FIRED.fetch_add(1, Ordering::Relaxed);
}

fn through(c: &mut Criterion) {
    let mut group = c.benchmark_group("through");
    group.throughput(Throughput::Elements(1));
    let timers = TimerService::new();
    group.bench_function("wheel", |b| {
        b.iter_custom(|n| {
            schedule_and_wait(n, || drop(timers.schedule_at(Instant::now(), count_fire)))
        });
    });
    group.bench_function("wheel-detached", |b| {
        b.iter_custom(|n| {
            schedule_and_wait(n, || {
                timers
                    .schedule_detached_at(Instant::now(), count_fire)
                    .expect("an unlimited, running service admits every timer");
            })
        });
    });
    drop(timers);
    let heap = HeapScheduler::new().expect("the benchmark needs its scheduler thread");
    group.bench_function("heap", |b| {
        b.iter_custom(|n| schedule_and_wait(n, || heap.schedule_at(Instant::now(), count_fire)));
    });
    drop(heap);
    let rt = wheel_bench::tokio_runtime().expect("the benchmark needs a tokio runtime");
    group.bench_function("tokio", |b| {
        let _runtime = rt.enter();
        b.iter_custom(|n| {
            schedule_and_wait(n, || {
                let deadline = tokio::time::Instant::now();
                rt.spawn(async move {
                    tokio::time::sleep_until(deadline).await;
                    count_fire();
                });
            })
        });
    });
    group.finish();
}

/// Runs `schedule` `n` times, then waits for `n` more fires: the time from
/// the first schedule to the last fire.
fn schedule_and_wait(n: u64, schedule: impl Fn()) -> Duration {
    let target = FIRED.load(Ordering::Relaxed) + n;
    let start = Instant::now();
    for _ in 0..n {
        schedule();
    }
    while FIRED.load(Ordering::Relaxed) < target {
        // Leaves the core to the driver (2 cores here), at some cost in precision.
        thread::sleep(Duration::from_micros(20));
    }
    start.elapsed()
}

/// Benchmarks `lane` as `name/threads`: `lane(n)` runs `n` operations, on
/// each of `threads` client threads that live as long as the benchmark (as a
/// client's do), so thread start-up and first-touch costs stay out of it.
fn bench_crew(
    group: &mut BenchmarkGroup<'_, WallTime>,
    name: &str,
    threads: usize,
    lane: impl Fn(u64) + Sync,
) {
    let crew = Crew::new(threads);
    thread::scope(|scope| {
        for index in 0..threads {
            let (crew, lane) = (&crew, &lane);
            scope.spawn(move || crew.work(index, lane));
        }
        let _dismiss = Dismiss(&crew);
        group.bench_function(BenchmarkId::new(name, threads), |b| {
            b.iter_custom(|iters| crew.run(iters));
        });
    });
}

/// Client threads that start each run together.
struct Crew {
    threads: usize,
    /// Operations in the coming run, split evenly; `u64::MAX` dismisses the crew.
    iters: AtomicU64,
    start_line: Barrier,
    finish_line: Barrier,
    /// A lane panicked: the run's time means nothing.
    failed: AtomicBool,
}

impl Crew {
    fn new(threads: usize) -> Self {
        Self {
            threads,
            iters: AtomicU64::new(0),
            start_line: Barrier::new(threads + 1),
            finish_line: Barrier::new(threads + 1),
            failed: AtomicBool::new(false),
        }
    }

    /// Runs `iters` operations over the crew; returns the wall time from
    /// the common start to the last finish.
    fn run(&self, iters: u64) -> Duration {
        self.iters.store(iters, Ordering::Relaxed);
        self.start_line.wait();
        let start = Instant::now();
        self.finish_line.wait();
        let elapsed = start.elapsed();
        assert!(
            !self.failed.load(Ordering::Relaxed),
            "a client thread panicked"
        );
        elapsed
    }

    /// Client thread `index`: its share of each run until dismissed.
    fn work(&self, index: usize, lane: &(impl Fn(u64) + Sync)) {
        loop {
            self.start_line.wait();
            let iters = self.iters.load(Ordering::Relaxed);
            if iters == u64::MAX {
                return;
            }
            let (share, rest) = (iters / self.threads as u64, iters % self.threads as u64);
            let n = share + u64::from((index as u64) < rest);
            // Caught so that the other threads and the timer still meet at the finish line.
            if catch_unwind(AssertUnwindSafe(|| lane(n))).is_err() {
                self.failed.store(true, Ordering::Relaxed);
            }
            self.finish_line.wait();
        }
    }
}

/// Dismisses the crew however the benchmark ends, so that its scope can join it.
struct Dismiss<'a>(&'a Crew);

impl Drop for Dismiss<'_> {
    fn drop(&mut self) {
        self.0.iters.store(u64::MAX, Ordering::Relaxed);
        self.0.start_line.wait();
    }
}

// By hand rather than `criterion_group!`, whose generated `pub fn` has no docs.
fn main() {
    // 15 benchmarks at about 8 s each keep a full run near two minutes. The
    // warm-up outlasts TIMEOUT, so the peers that keep cancelled timers
    // until their deadline are measured with a full backlog.
    let mut c = Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_secs(2))
        .measurement_time(Duration::from_secs(5))
        .configure_from_args();
    timeouts(&mut c);
    sleep(&mut c);
    through(&mut c);
    c.final_summary();
}

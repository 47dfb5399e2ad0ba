//! wheel-core's `WakerQueue` against embassy's `ConstGenericQueue` (from
//! `embassy-time-queue-utils`, the queue embassy's generic time drivers
//! keep), side by side in one criterion group per call, at 8, 64 and 512
//! pending tasks.
//!
//! ```text
//! cargo bench -p wheel-bench --bench embassy                     # everything, about a minute
//! cargo bench -p wheel-bench --bench embassy -- 'repoll/'         # one group
//! ```
//!
//! The shapes, per call:
//!
//! - `new_task`: `schedule_wake` for a task not queued (a task starting to
//!   wait), deadlines earlier than the pending ones'. Timed in batches of
//!   8 around `n` pending (`n - 4` to `n + 4`); each batch is then fired
//!   untimed.
//! - `repoll`: `schedule_wake` for a queued task at a later deadline than
//!   its own (a task polled again, or two timers in one task): no change.
//! - `expire`: `next_expiration` when one task is due (the alarm fired):
//!   it is woken, and the next deadline is returned. Timed in batches of
//!   8 around `n` pending (`n + 4` to `n - 4`); each batch's tasks are then
//!   queued again untimed.
//! - `idle`: `next_expiration` with nothing due (the driver's call after a
//!   `schedule_wake` that asked for a re-arm).
//! - `driver`: what an embassy time driver does per alarm, all of it timed:
//!   the alarm fires at the earliest deadline, `next_expiration` wakes the
//!   due task (about one per alarm), the task runs and waits again 1 to
//!   `2 n × 97` ticks on (`schedule_wake`), and the driver calls
//!   `next_expiration` again whenever `schedule_wake` says the alarm must
//!   move: on every new entry for embassy's queue, only when the earliest
//!   deadline moved for `WakerQueue`. Per alarm, `n` always pending.
//!
//! The tasks' wakers are of the kind embassy's executor makes (a task's
//! address; clone and drop do nothing, a wake queues the task to run,
//! once), so neither queue's figures carry a reference count's locked
//! operations.
//!
//! Only the batches are timed, each with two readings of the monotonic
//! clock less what a reading costs: a batch takes well under a
//! microsecond, so another process's time slice seldom lands in one (the
//! whole loop would be timed by `iter`, slices and all). Their cache
//! pollution still shows on a shared machine: quote ratios from one run.

use std::cell::RefCell;
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;
use std::task::{RawWaker, RawWakerVTable, Waker};
use std::time::{Duration, Instant};

use criterion::measurement::WallTime;
use criterion::{Bencher, BenchmarkGroup, BenchmarkId, Criterion};
use embassy_time_queue_utils::queue_generic::ConstGenericQueue;
use wheel_core::WakerQueue;

/// Calls timed together in `new_task` and `expire`.
const BATCH: u64 = 8;
/// Calls timed together in `repoll` and `idle`.
const RUN: u64 = 256;
/// Far deadlines of the pending tasks: the clock never gets there.
const FAR: u64 = 1 << 40;

/// What one clock reading adds to a timed span: the median of many
/// back-to-back pairs, subtracted from every timed batch.
fn clock_cost() -> Duration {
    static COST: OnceLock<Duration> = OnceLock::new();
    *COST.get_or_init(|| {
        let mut pairs: Vec<Duration> = (0..10_001)
            .map(|_| {
                let start = Instant::now();
                start.elapsed()
            })
            .collect();
        pairs.sort_unstable();
        pairs[pairs.len() / 2]
    })
}

/// Time of `f`, less the cost of reading the clock.
fn measure(f: impl FnOnce()) -> Duration {
    let start = Instant::now();
    f();
    start.elapsed().saturating_sub(clock_cost())
}

/// Per-call time of `batches` batches of `per_batch` calls, `iters` asked.
fn per_iteration(timed: Duration, iters: u64, batches: u64, per_batch: u64) -> Duration {
    timed.mul_f64(iters as f64 / (batches * per_batch) as f64)
}

/// Runs `iters` calls for criterion in batches of `per_batch`: `batch`
/// runs one batch and returns how long its timed part took.
fn in_batches(b: &mut Bencher<'_>, per_batch: u64, mut batch: impl FnMut() -> Duration) {
    b.iter_custom(|iters| {
        let batches = iters.div_ceil(per_batch);
        let timed = (0..batches).map(|_| batch()).sum();
        per_iteration(timed, iters, batches, per_batch)
    });
}

/// The two queues' shared calls.
trait Queue {
    const NAME: &'static str;
    fn new() -> Self;
    fn schedule_wake(&mut self, at: u64, waker: &Waker) -> bool;
    fn next_expiration(&mut self, now: u64) -> u64;
}

impl<const N: usize> Queue for WakerQueue<N> {
    const NAME: &'static str = "wheel-core";
    fn new() -> Self {
        WakerQueue::new()
    }
    fn schedule_wake(&mut self, at: u64, waker: &Waker) -> bool {
        WakerQueue::schedule_wake(self, at, waker)
    }
    fn next_expiration(&mut self, now: u64) -> u64 {
        WakerQueue::next_expiration(self, now)
    }
}

impl<const N: usize> Queue for ConstGenericQueue<N> {
    const NAME: &'static str = "embassy";
    fn new() -> Self {
        ConstGenericQueue::new()
    }
    fn schedule_wake(&mut self, at: u64, waker: &Waker) -> bool {
        ConstGenericQueue::schedule_wake(self, at, waker)
    }
    fn next_expiration(&mut self, now: u64) -> u64 {
        ConstGenericQueue::next_expiration(self, now)
    }
}

/// A task as embassy's executor hands it to a time driver: a header at a
/// fixed address, whose waker is that address. Cloning or dropping such a
/// waker touches nothing and waking it queues the task to run, once, so
/// the queues' own work is what the figures show (an `Arc` waker would add
/// a locked increment to every clone and a decrement to every wake, the
/// same for both queues).
struct Task {
    /// Its place in the bench's list of tasks.
    id: usize,
    /// Woken and not yet run (only the bench's thread touches it).
    run_queued: AtomicBool,
}

thread_local! {
    /// The tasks woken and not yet run, as an executor's run queue.
    static RUN_QUEUE: RefCell<Vec<&'static Task>> = const { RefCell::new(Vec::new()) };
}

/// The next task to run, if any is woken: the executor polls it.
fn run_next() -> Option<usize> {
    let task = RUN_QUEUE.with_borrow_mut(Vec::pop)?;
    task.run_queued.store(false, Ordering::Relaxed);
    Some(task.id)
}

/// The vtable of a [`Task`]'s waker.
static TASK_WAKER: RawWakerVTable =
    RawWakerVTable::new(clone_task, wake_task, wake_task, drop_task);

fn clone_task(task: *const ()) -> RawWaker {
    RawWaker::new(task, &TASK_WAKER)
}

fn wake_task(task: *const ()) {
    // SAFETY: every `Task` waker's data is a `&'static Task` (see `wakers`).
    let task: &'static Task = unsafe { &*task.cast::<Task>() };
    // Queued once until it runs, as embassy's executor does: the shapes
    // that never run their tasks queue each one once.
    if !task.run_queued.load(Ordering::Relaxed) {
        task.run_queued.store(true, Ordering::Relaxed);
        RUN_QUEUE.with_borrow_mut(|queue| queue.push(task));
    }
}

fn drop_task(_: *const ()) {}

/// `n` distinct tasks' wakers.
fn wakers(n: usize) -> Vec<Waker> {
    (0..n)
        .map(|id| {
            let task: &'static Task = Box::leak(Box::new(Task {
                id,
                run_queued: AtomicBool::new(false),
            }));
            let raw = RawWaker::new(core::ptr::from_ref(task).cast(), &TASK_WAKER);
            // SAFETY: the vtable's functions keep `RawWaker`'s contract: the
            // data is a `Task` that lives for ever, which they touch only
            // through a shared reference (a wake stores to its atomic flag),
            // and a clone is the same pointer.
            unsafe { Waker::from_raw(raw) }
        })
        .collect()
}

/// A queue with `n` tasks pending at far, distinct deadlines.
fn filled<Q: Queue>(wakers: &[Waker]) -> Q {
    let mut queue = Q::new();
    for (k, waker) in wakers.iter().enumerate() {
        queue.schedule_wake(FAR + k as u64 * 7_919, waker);
    }
    queue
}

fn new_task<Q: Queue>(group: &mut BenchmarkGroup<'_, WallTime>, n: usize) {
    let pending = wakers(n - BATCH as usize / 2);
    let fresh = wakers(BATCH as usize);
    let mut queue: Q = filled(&pending);
    let mut now = 0;
    group.bench_function(BenchmarkId::new(Q::NAME, n), |b| {
        in_batches(b, BATCH, || {
            let timed = measure(|| {
                for (k, waker) in fresh.iter().enumerate() {
                    // Spread over 1 000 ticks, all before the pending ones.
                    let at = now + 1 + (k as u64 * 383) % 1_000;
                    black_box(queue.schedule_wake(black_box(at), waker));
                }
            });
            now += 1_000;
            black_box(queue.next_expiration(now));
            timed
        });
    });
}

fn repoll<Q: Queue>(group: &mut BenchmarkGroup<'_, WallTime>, n: usize) {
    let pending = wakers(n);
    let mut queue: Q = filled(&pending);
    let mut k = 0;
    group.bench_function(BenchmarkId::new(Q::NAME, n), |b| {
        in_batches(b, RUN, || {
            measure(|| {
                for _ in 0..RUN {
                    // Tasks in turn, so a scan meets them at every depth.
                    // A compare, not `%`: a division's latency would
                    // chain the calls and time the bench, not the queue.
                    k = if k + 1 == n { 0 } else { k + 1 };
                    black_box(queue.schedule_wake(black_box(FAR * 2), &pending[k]));
                }
            })
        });
    });
}

fn expire<Q: Queue>(group: &mut BenchmarkGroup<'_, WallTime>, n: usize) {
    // `n + 4` tasks due one after another, `STEP` ticks apart.
    const STEP: u64 = 97;
    let tasks = wakers(n + BATCH as usize / 2);
    let mut queue = Q::new();
    let mut due: Vec<u64> = (1..=tasks.len() as u64).map(|k| k * STEP).collect();
    for (waker, &at) in tasks.iter().zip(&due) {
        queue.schedule_wake(at, waker);
    }
    let period = tasks.len() as u64 * STEP;
    let mut next = 0;
    group.bench_function(BenchmarkId::new(Q::NAME, n), |b| {
        in_batches(b, BATCH, || {
            let first = next;
            let timed = measure(|| {
                for k in 0..BATCH as usize {
                    let task = first + k;
                    let task = if task >= due.len() {
                        task - due.len()
                    } else {
                        task
                    };
                    let now = due[task];
                    black_box(queue.next_expiration(black_box(now)));
                }
            });
            // The batch's tasks wait again, one period on.
            for k in 0..BATCH as usize {
                let task = (first + k) % due.len();
                due[task] += period;
                queue.schedule_wake(due[task], &tasks[task]);
            }
            next = (first + BATCH as usize) % due.len();
            timed
        });
    });
}

fn driver<Q: Queue>(group: &mut BenchmarkGroup<'_, WallTime>, n: usize) {
    // Each task waits 1 to `span` ticks, so deadlines lie about `STEP`
    // ticks apart, as in `expire`.
    const STEP: u64 = 97;
    let span = 2 * n as u64 * STEP;
    let mut state = 0x9e37_79b9_7f4a_7c15_u64;
    let mut delay = move || {
        // xorshift64, scaled by a multiply: a division would time the bench.
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        1 + (((state >> 32) * span) >> 32)
    };
    // Tasks the other shapes woke are not this shape's to run.
    RUN_QUEUE.with_borrow_mut(Vec::clear);
    let tasks = wakers(n);
    let mut queue = Q::new();
    let mut now = 0;
    for waker in &tasks {
        queue.schedule_wake(now + delay(), waker);
    }
    let mut alarm = queue.next_expiration(now);
    group.bench_function(BenchmarkId::new(Q::NAME, n), |b| {
        in_batches(b, BATCH, || {
            measure(|| {
                for _ in 0..BATCH {
                    // The alarm fires: the driver wakes what is due and
                    // sets the alarm again.
                    now = alarm;
                    alarm = queue.next_expiration(black_box(now));
                    // Each woken task runs and waits again; the driver
                    // moves the alarm when the queue asks it to.
                    while let Some(task) = run_next() {
                        if queue.schedule_wake(now + delay(), &tasks[task]) {
                            alarm = queue.next_expiration(now);
                        }
                    }
                }
            })
        });
    });
}

fn idle<Q: Queue>(group: &mut BenchmarkGroup<'_, WallTime>, n: usize) {
    let pending = wakers(n);
    let mut queue: Q = filled(&pending);
    group.bench_function(BenchmarkId::new(Q::NAME, n), |b| {
        in_batches(b, RUN, || {
            measure(|| {
                for _ in 0..RUN {
                    black_box(queue.next_expiration(black_box(FAR - 1)));
                }
            })
        });
    });
}

/// Each shape on both queues at every size; the queues hold 8 more tasks
/// than `n`, room for the batches.
macro_rules! group {
    ($criterion:expr, $body:ident) => {{
        let mut group = $criterion.benchmark_group(stringify!($body));
        group.warm_up_time(Duration::from_millis(300));
        group.measurement_time(Duration::from_millis(1_200));
        group.sample_size(30);
        $body::<WakerQueue<16>>(&mut group, 8);
        $body::<ConstGenericQueue<16>>(&mut group, 8);
        $body::<WakerQueue<72>>(&mut group, 64);
        $body::<ConstGenericQueue<72>>(&mut group, 64);
        $body::<WakerQueue<520>>(&mut group, 512);
        $body::<ConstGenericQueue<520>>(&mut group, 512);
        group.finish();
    }};
}

fn main() {
    let mut criterion = Criterion::default().configure_from_args();
    group!(criterion, new_task);
    group!(criterion, repoll);
    group!(criterion, expire);
    group!(criterion, idle);
    group!(criterion, driver);
    criterion.final_summary();
}

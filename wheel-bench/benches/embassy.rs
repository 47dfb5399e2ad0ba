//! wheel-core's `WakerQueue` against embassy's `ConstGenericQueue` (from
//! `embassy-time-queue-utils`, the queue embassy's generic time drivers
//! keep), side by side in one criterion group per call, at 8, 64 and 512
//! pending tasks.
//!
//! ```text
//! cargo bench -p wheel-bench --bench embassy                     # everything, about a minute
//! cargo bench -p wheel-bench --bench embassy -- 'repoll/'         # one group
//! cargo bench -p wheel-bench --bench embassy -- --alternate       # the two in turn, 10 s
//! cargo bench -p wheel-bench --bench embassy -- --alternate expire  # one shape in turn
//! ```
//!
//! criterion times each queue for a second or so, one after the other, so
//! a shared machine's load can fall on one and not the other (embassy's
//! own figures moved 1.6× between runs). `--alternate` skips criterion:
//! per shape and size it takes 21 samples of each queue in turn, each a few
//! milliseconds of batches, and prints the median ns per call and the
//! median of the per-sample ratios with its second lowest and second
//! highest. Its medians moved by up to a fifth between runs, against
//! criterion's two-fold swings.
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
//! - `burst`: `next_expiration` when 8 tasks are due at once (an alarm
//!   served late, or tasks waiting for one tick): it wakes all 8 and
//!   returns the next deadline. `n - 4` tasks stay pending; the 8 are
//!   queued again, untimed, before each call. Per call, not per task.
//! - `mixed`: `next_expiration` when one task is due, as in `expire`, but
//!   the tasks wait at random as in `driver` below, so which pending task
//!   is due next follows no pattern. Only `next_expiration` is timed.
//!   (In `expire` the tasks come due in one fixed rotation, which a
//!   branch predictor learns: embassy's scan, a branch per entry, gains
//!   from that; here it mispredicts as it would under most loads.)
//! - `idle`: `next_expiration` with nothing due (the driver's call after a
//!   `schedule_wake` that asked for a re-arm).
//! - `driver`: what an embassy time driver does per alarm, all of it timed:
//!   the alarm fires at the earliest deadline, `next_expiration` wakes the
//!   due task (about one per alarm), the task runs and waits again 1 to
//!   `2 n × 97` ticks on (`schedule_wake`), and the driver calls
//!   `next_expiration` again whenever `schedule_wake` says the alarm must
//!   move: on every new entry for embassy's queue, only when the earliest
//!   deadline moved for `WakerQueue`. Per alarm, `n` always pending.
//! - `ticker`: `driver` with tasks that each wait one period, `n × 97`
//!   ticks (embassy's `Ticker`), from random phases: once the first
//!   deadlines (spread over two periods) have passed, every wait is later
//!   than the pending deadlines.
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

use std::hint::black_box;
use std::sync::OnceLock;
use std::task::Waker;
use std::time::{Duration, Instant};

use criterion::measurement::WallTime;
use criterion::{Bencher, BenchmarkGroup, BenchmarkId, Criterion};
use embassy_time_queue_utils::queue_generic::ConstGenericQueue;
use wheel_core::WakerQueue;

// `--alternate`: the two queues sampled in turn.
#[path = "embassy/alternate.rs"]
mod alternate;
// The queues' shared calls, which ci/qemu-tests' count includes too.
#[path = "embassy/queues.rs"]
mod queues;
// The executor's side: tasks, their wakers and its run queue.
#[path = "embassy/tasks.rs"]
mod tasks;
use alternate::row;
use queues::Queue;
use tasks::{run_next, wakers};

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

/// A queue with `n` tasks pending at far, distinct deadlines.
fn filled<Q: Queue>(wakers: &[Waker]) -> Q {
    let mut queue = Q::new();
    for (k, waker) in wakers.iter().enumerate() {
        queue.schedule_wake(FAR + k as u64 * 7_919, waker);
    }
    queue
}

/// One shape on one queue: its state, kept from batch to batch.
trait Shape {
    /// Calls in a batch.
    const PER_BATCH: u64;
    /// Runs one batch, and whatever must happen between batches untimed;
    /// returns the batch's timed span.
    fn batch(&mut self) -> Duration;

    /// [`Self::PER_BATCH`], for a shape held as a value.
    fn per_batch(&self) -> u64 {
        Self::PER_BATCH
    }
}

/// A wave of 8 tasks not queued, around `n` pending: each batch files
/// them (`schedule_wake`, deadlines spread over 1 000 ticks before the
/// pending ones), then fires them together (one `next_expiration`), and
/// the woken tasks run. `FIRE` says which half is timed: the filing
/// (`new_task`, 8 calls) or the firing (`burst`, 1 call).
struct Wave<Q, const FIRE: bool> {
    fresh: Vec<Waker>,
    queue: Q,
    now: u64,
}

/// `schedule_wake` for tasks not queued, earlier than the pending ones.
type NewTask<Q> = Wave<Q, false>;
/// `next_expiration` waking 8 tasks at once.
type Burst<Q> = Wave<Q, true>;

impl<Q: Queue, const FIRE: bool> Wave<Q, FIRE> {
    fn new(n: usize) -> Self {
        Self {
            fresh: wakers(BATCH as usize),
            queue: filled(&wakers(n - BATCH as usize / 2)),
            now: 0,
        }
    }
}

impl<Q: Queue, const FIRE: bool> Shape for Wave<Q, FIRE> {
    const PER_BATCH: u64 = if FIRE { 1 } else { BATCH };
    fn batch(&mut self) -> Duration {
        let Self { fresh, queue, now } = self;
        let filing = measure(|| {
            for (k, waker) in fresh.iter().enumerate() {
                // Spread over 1 000 ticks, all before the pending ones.
                let at = *now + 1 + (k as u64 * 383) % 1_000;
                black_box(queue.schedule_wake(black_box(at), waker));
            }
        });
        *now += 1_000;
        let firing = measure(|| {
            black_box(queue.next_expiration(black_box(*now)));
        });
        // The tasks run (the bench's run queue is the executor's).
        while run_next().is_some() {}
        if FIRE {
            firing
        } else {
            filing
        }
    }
}

/// `schedule_wake` for queued tasks at a later deadline than their own.
struct Repoll<Q> {
    pending: Vec<Waker>,
    queue: Q,
    k: usize,
}

impl<Q: Queue> Repoll<Q> {
    fn new(n: usize) -> Self {
        let pending = wakers(n);
        let queue = filled(&pending);
        Self {
            pending,
            queue,
            k: 0,
        }
    }
}

impl<Q: Queue> Shape for Repoll<Q> {
    const PER_BATCH: u64 = RUN;
    fn batch(&mut self) -> Duration {
        let Self { pending, queue, k } = self;
        let n = pending.len();
        measure(|| {
            for _ in 0..RUN {
                // Tasks in turn, so a scan meets them at every depth. A
                // compare, not `%`: a division's latency would chain the
                // calls and time the bench, not the queue.
                *k = if *k + 1 == n { 0 } else { *k + 1 };
                black_box(queue.schedule_wake(black_box(FAR * 2), &pending[*k]));
            }
        })
    }
}

/// `next_expiration` with one task due, `n + 4` tasks due one after
/// another, `STEP` ticks apart.
struct Expire<Q> {
    tasks: Vec<Waker>,
    queue: Q,
    due: Vec<u64>,
    next: usize,
}

impl<Q: Queue> Expire<Q> {
    const STEP: u64 = 97;

    fn new(n: usize) -> Self {
        let tasks = wakers(n + BATCH as usize / 2);
        let mut queue = Q::new();
        let due: Vec<u64> = (1..=tasks.len() as u64).map(|k| k * Self::STEP).collect();
        for (waker, &at) in tasks.iter().zip(&due) {
            queue.schedule_wake(at, waker);
        }
        Self {
            tasks,
            queue,
            due,
            next: 0,
        }
    }
}

impl<Q: Queue> Shape for Expire<Q> {
    const PER_BATCH: u64 = BATCH;
    fn batch(&mut self) -> Duration {
        let Self {
            tasks,
            queue,
            due,
            next,
        } = self;
        let first = *next;
        let timed = measure(|| {
            for k in 0..BATCH as usize {
                let task = first + k;
                let task = if task >= due.len() {
                    task - due.len()
                } else {
                    task
                };
                black_box(queue.next_expiration(black_box(due[task])));
            }
        });
        // The batch's tasks wait again, one period on.
        let period = tasks.len() as u64 * Self::STEP;
        for k in 0..BATCH as usize {
            let task = (first + k) % due.len();
            due[task] += period;
            queue.schedule_wake(due[task], &tasks[task]);
        }
        *next = (first + BATCH as usize) % due.len();
        timed
    }
}

/// `next_expiration` with nothing due.
struct Idle<Q> {
    queue: Q,
}

impl<Q: Queue> Idle<Q> {
    fn new(n: usize) -> Self {
        Self {
            queue: filled(&wakers(n)),
        }
    }
}

impl<Q: Queue> Shape for Idle<Q> {
    const PER_BATCH: u64 = RUN;
    fn batch(&mut self) -> Duration {
        let queue = &mut self.queue;
        measure(|| {
            for _ in 0..RUN {
                black_box(queue.next_expiration(black_box(FAR - 1)));
            }
        })
    }
}

/// An embassy time driver's work per alarm, `n` tasks always pending,
/// each waiting 1 to `span` ticks, so deadlines lie about `STEP` apart.
struct Driver<Q> {
    tasks: Vec<Waker>,
    queue: Q,
    now: u64,
    alarm: u64,
    span: u64,
    state: u64,
    /// Every wait, for a task that waits one period (`ticker`); else
    /// 1 to `span` ticks at random.
    period: Option<u64>,
}

impl<Q: Queue> Driver<Q> {
    const STEP: u64 = 97;

    fn new(n: usize) -> Self {
        // Tasks the other shapes woke are not this shape's to run.
        tasks::forget_woken();
        let mut driver = Self {
            tasks: wakers(n),
            queue: Q::new(),
            now: 0,
            alarm: 0,
            span: 2 * n as u64 * Self::STEP,
            state: 0x9e37_79b9_7f4a_7c15,
            period: None,
        };
        for task in 0..n {
            let at = driver.delay();
            driver.queue.schedule_wake(at, &driver.tasks[task]);
        }
        driver.alarm = driver.queue.next_expiration(0);
        driver
    }

    /// 1 to `span` ticks: xorshift64, scaled by a multiply (a division
    /// would time the bench); or the period.
    fn delay(&mut self) -> u64 {
        if let Some(period) = self.period {
            return period;
        }
        self.state ^= self.state << 13;
        self.state ^= self.state >> 7;
        self.state ^= self.state << 17;
        1 + (((self.state >> 32) * self.span) >> 32)
    }
}

impl<Q: Queue> Shape for Driver<Q> {
    const PER_BATCH: u64 = BATCH;
    fn batch(&mut self) -> Duration {
        measure(|| {
            for _ in 0..BATCH {
                // The alarm fires: the driver wakes what is due and sets
                // the alarm again.
                self.now = self.alarm;
                self.alarm = self.queue.next_expiration(black_box(self.now));
                self.run_woken();
            }
        })
    }
}

impl<Q: Queue> Driver<Q> {
    /// Each woken task runs and waits again; the driver moves the alarm
    /// when the queue asks it to.
    fn run_woken(&mut self) {
        while let Some(task) = run_next() {
            let at = self.now + self.delay();
            if self.queue.schedule_wake(at, &self.tasks[task]) {
                self.alarm = self.queue.next_expiration(self.now);
            }
        }
    }
}

/// `next_expiration` alone, in the `driver` shape: one task due (about),
/// which of the pending ones at random.
struct Mixed<Q>(Driver<Q>);

impl<Q: Queue> Mixed<Q> {
    fn new(n: usize) -> Self {
        Self(Driver::new(n))
    }
}

impl<Q: Queue> Shape for Mixed<Q> {
    const PER_BATCH: u64 = BATCH;
    fn batch(&mut self) -> Duration {
        let driver = &mut self.0;
        let mut timed = Duration::ZERO;
        for _ in 0..BATCH {
            driver.now = driver.alarm;
            let (queue, now) = (&mut driver.queue, driver.now);
            let mut alarm = 0;
            timed += measure(|| alarm = queue.next_expiration(black_box(now)));
            driver.alarm = alarm;
            driver.run_woken();
        }
        timed
    }
}

/// The driver's work per alarm for tasks that each wait one period, `n`
/// × 97 ticks (embassy's `Ticker`), started at random phases: once the
/// first deadlines have passed, each wait is later than every pending one.
struct Ticker<Q>(Driver<Q>);

impl<Q: Queue> Ticker<Q> {
    fn new(n: usize) -> Self {
        let mut driver = Driver::new(n);
        driver.period = Some(n as u64 * Driver::<Q>::STEP);
        Self(driver)
    }
}

impl<Q: Queue> Shape for Ticker<Q> {
    const PER_BATCH: u64 = BATCH;
    fn batch(&mut self) -> Duration {
        self.0.batch()
    }
}

/// Benches `shape` under criterion as `name/n`.
fn bench(group: &mut BenchmarkGroup<'_, WallTime>, name: &str, n: usize, mut shape: impl Shape) {
    group.bench_function(BenchmarkId::new(name, n), |b| {
        in_batches(b, shape.per_batch(), || shape.batch());
    });
}

/// Both queues in one criterion group, as `wheel-core/n` and `embassy/n`.
fn pair(
    group: &mut BenchmarkGroup<'_, WallTime>,
    _shape: &str,
    n: usize,
    ours: impl Shape,
    theirs: impl Shape,
) {
    bench(group, "wheel-core", n, ours);
    bench(group, "embassy", n, theirs);
}

/// Calls `$f` with the shape on both queues at every size; the queues hold
/// 8 more tasks than `n`, room for the batches.
macro_rules! sizes {
    ($f:ident ($($arg:expr),*), $name:literal, $shape:ident) => {
        $f($($arg,)* $name, 8, $shape::<WakerQueue<16>>::new(8), $shape::<ConstGenericQueue<16>>::new(8));
        $f($($arg,)* $name, 64, $shape::<WakerQueue<72>>::new(64), $shape::<ConstGenericQueue<72>>::new(64));
        $f($($arg,)* $name, 512, $shape::<WakerQueue<520>>::new(512), $shape::<ConstGenericQueue<520>>::new(512));
    };
}

/// Every shape, each as `sizes!` runs it.
macro_rules! shapes {
    ($each:ident) => {
        $each!("new_task", NewTask);
        $each!("repoll", Repoll);
        $each!("expire", Expire);
        $each!("burst", Burst);
        $each!("mixed", Mixed);
        $each!("idle", Idle);
        $each!("driver", Driver);
        $each!("ticker", Ticker);
    };
}

fn main() {
    if std::env::args().any(|arg| arg == "--alternate") {
        let mut table = alternate::Table::new();
        // Shape names after `--alternate` pick those shapes; none, all.
        let picked: Vec<String> = std::env::args()
            .skip_while(|arg| arg != "--alternate")
            .skip(1)
            .filter(|arg| !arg.starts_with('-'))
            .collect();
        let runs = |name: &str| picked.is_empty() || picked.iter().any(|p| p == name);
        let mut known = Vec::new();
        macro_rules! named {
            ($name:literal, $shape:ident) => {
                known.push($name)
            };
        }
        shapes!(named);
        if let Some(unknown) = picked.iter().find(|p| !known.contains(&p.as_str())) {
            eprintln!("no shape named {unknown}; the shapes: {}", known.join(", "));
            std::process::exit(2);
        }
        macro_rules! alternated {
            ($name:literal, $shape:ident) => {
                if runs($name) {
                    sizes!(row(&mut table), $name, $shape);
                }
            };
        }
        shapes!(alternated);
        table.print();
        return;
    }
    let mut criterion = Criterion::default().configure_from_args();
    macro_rules! grouped {
        ($name:literal, $shape:ident) => {{
            let mut group = criterion.benchmark_group($name);
            group.warm_up_time(Duration::from_millis(300));
            group.measurement_time(Duration::from_millis(1_200));
            group.sample_size(30);
            sizes!(pair(&mut group), $name, $shape);
            group.finish();
        }};
    }
    shapes!(grouped);
    criterion.final_summary();
}

//! Seed 000 inside a child: schedule N timers with random delays as fast as
//! possible, wait for the last, and report what the [`Recorder`] saw.
//!
//! Every implementation gets the same deadlines and an "at" API, so lateness
//! is measured against the exact deadline the timer was given.

use std::future::{poll_fn, Future};
use std::io;
use std::time::Duration;

use std::borrow::Borrow;
use std::sync::Arc;
use tokio::runtime::Runtime;
use tokio_util::time::DelayQueue;

use wheel_sync::TimerService;

use indicatif::ProgressBar;

use super::child;
use super::delay_recorder::Recorder;
use super::experiment::DelayArgs;
use super::impls::Impl;
use super::outcome::DelayOutcome;
use super::progress_bar;
use super::RunError;
use wheel_bench::peers::HeapScheduler;
use wheel_bench::rng::SplitMix64;
use wheel_bench::smol_executor::SmolExecutor;

/// Room past the longest delay for slow implementations to finish.
const SLACK: Duration = Duration::from_secs(60);
/// Deadlines are taken from a clock read this often, not once per timer, so
/// that reading the clock does not slow scheduling down; a timer's deadline is
/// then up to this many schedule calls earlier than "now + delay".
const CLOCK_EVERY: u32 = 64;

/// A wheel-sync service with the run's tick.
fn service_for(args: &DelayArgs) -> Result<TimerService, RunError> {
    Ok(TimerService::builder()
        .tick(Duration::from_micros(args.tick_us))
        .build()?)
}

/// Runs `imp` through the experiment in this process.
pub fn run(args: &DelayArgs, imp: Impl) -> Result<DelayOutcome, RunError> {
    match imp {
        Impl::Tokio => tokio_tasks(args, false),
        Impl::TokioAlt => tokio_tasks(args, true),
        Impl::DelayQueue => delay_queue(args),
        Impl::Heap => heap(args),
        Impl::Wheel => wheel(args),
        Impl::WheelAsync => wheel_tasks(args),
        Impl::WheelQueue => wheel_queue(args),
        Impl::WheelHandles => wheel_handles(args, true),
        Impl::WheelHandleDropped => wheel_handles(args, false),
        Impl::WheelAsyncCloneEach => wheel_tasks_holding(args, imp, Executor::tokio()?, false),
        Impl::WheelAsyncArc => wheel_tasks_holding(args, imp, Executor::tokio()?, true),
        Impl::WheelAsyncSmol => wheel_tasks_holding(args, imp, Executor::smol()?, false),
        Impl::Smol => smol_tasks(args),
        Impl::None
        | Impl::NoneAsync
        | Impl::Executor2
        | Impl::Executor8
        | Impl::WheelShared
        | Impl::WheelCloneEach
        | Impl::WheelAsyncShared
        | Impl::WheelAsyncGlobal
        | Impl::WheelTimeout => Err(RunError::NotIn {
            imp,
            experiment: "delay",
        }),
    }
}

/// No timer here is ever cancelled, so each is detached: no handle, and
/// the two-word closure travels inline, with no allocation per timer.
fn wheel(args: &DelayArgs) -> Result<DelayOutcome, RunError> {
    let service = service_for(args)?;
    let mut run = Run::start(args, Impl::Wheel)?;
    let rec = run.rec;
    for d in run.draws() {
        service.schedule_detached_at(rec.at(d), move || rec.fire(d))?;
    }
    run.scheduled();
    Ok(run.finish_with(Some(&service))?)
}

fn wheel_tasks(args: &DelayArgs) -> Result<DelayOutcome, RunError> {
    // Started before the clock, as the tokio peer's runtime is built before it.
    TimerService::global();
    let executor = Executor::tokio()?;
    let mut run = Run::start(args, Impl::WheelAsync)?;
    let rec = run.rec;
    // The same task as the tokio peer's, with the global service in place of
    // the runtime's timer.
    executor.spawn_each(run.draws(), move |d| async move {
        wheel_sync::sleep_until(rec.at(d)).await;
        rec.fire(d);
    })?;
    run.scheduled();
    Ok(run.finish_with(Some(TimerService::global()))?)
}

/// Callbacks with handles, as a caller that might cancel holds them:
/// `keep`, all kept until the run ends; else each dropped at once.
fn wheel_handles(args: &DelayArgs, keep: bool) -> Result<DelayOutcome, RunError> {
    let service = service_for(args)?;
    let imp = if keep {
        Impl::WheelHandles
    } else {
        Impl::WheelHandleDropped
    };
    let mut run = Run::start(args, imp)?;
    let rec = run.rec;
    let mut handles = Vec::with_capacity(if keep { args.timers as usize } else { 0 });
    for d in run.draws() {
        let handle = service.schedule_at(rec.at(d), move || rec.fire(d))?;
        if keep {
            handles.push(handle);
        }
    }
    run.scheduled();
    Ok(run.finish_releasing(Some(&service), move || drop(handles))?)
}

/// The task peers' tasks (tokio's, smol's) on `executor`, each holding the
/// service as a task would be handed it: `arc`, an `Arc<TimerService>`
/// cloned into it; else a clone of the service itself moved into it.
fn wheel_tasks_holding(
    args: &DelayArgs,
    imp: Impl,
    executor: Executor,
    arc: bool,
) -> Result<DelayOutcome, RunError> {
    let service = Arc::new(service_for(args)?);
    let mut run = Run::start(args, imp)?;
    let rec = run.rec;
    let draws = run.draws();
    let spawning = Arc::clone(&service);
    if arc {
        executor.spawn_each(draws, move |d| sleeper(Arc::clone(&spawning), rec, d))?;
    } else {
        executor.spawn_each(draws, move |d| {
            sleeper(TimerService::clone(&spawning), rec, d)
        })?;
    }
    run.scheduled();
    Ok(run.finish_with(Some(&service))?)
}

/// A task's body: hold `service` while sleeping until draw `d`'s deadline.
async fn sleeper(service: impl Borrow<TimerService>, rec: &'static Recorder, d: u64) {
    service.borrow().sleep_until(rec.at(d)).await;
    rec.fire(d);
}

/// `delayqueue`'s shape on wheel-sync: one task owns every deadline, and
/// the service holds one timer for the whole queue.
fn wheel_queue(args: &DelayArgs) -> Result<DelayOutcome, RunError> {
    let service = service_for(args)?;
    let rt = tokio::runtime::Builder::new_current_thread().build()?;
    let mut run = Run::start(args, Impl::WheelQueue)?;
    let rec = run.rec;
    let mut queue = wheel_sync::DelayQueue::with_service(&service);
    queue.reserve(usize::try_from(args.timers).unwrap_or(0));
    for d in run.draws() {
        queue.insert_at(d, rec.at(d));
    }
    run.scheduled();
    rt.block_on(async {
        while let Some(expired) = queue.next_expired().await {
            rec.fire(expired.into_inner());
        }
    });
    Ok(run.finish_releasing(None, move || drop(queue))?)
}

fn heap(args: &DelayArgs) -> Result<DelayOutcome, RunError> {
    let heap = HeapScheduler::new()?;
    let mut run = Run::start(args, Impl::Heap)?;
    let rec = run.rec;
    for d in run.draws() {
        heap.schedule_at(rec.at(d), move || rec.fire(d));
    }
    run.scheduled();
    Ok(run.finish()?)
}

/// Tokio tasks on tokio's timer: its default one, or (`alt`) its
/// alternative, per-worker one.
fn tokio_tasks(args: &DelayArgs, alt: bool) -> Result<DelayOutcome, RunError> {
    let (rt, imp) = if alt {
        (wheel_bench::tokio_alt_runtime()?, Impl::TokioAlt)
    } else {
        (wheel_bench::tokio_runtime()?, Impl::Tokio)
    };
    let executor = Executor::Tokio(rt);
    let mut run = Run::start(args, imp)?;
    let rec = run.rec;
    executor.spawn_each(run.draws(), move |d| async move {
        tokio::time::sleep_until(rec.at(d).into()).await;
        rec.fire(d);
    })?;
    run.scheduled();
    Ok(run.finish()?)
}

/// The tokio peer on smol: smol tasks on smol's timer (async-io's).
fn smol_tasks(args: &DelayArgs) -> Result<DelayOutcome, RunError> {
    let executor = Executor::smol()?;
    let mut run = Run::start(args, Impl::Smol)?;
    let rec = run.rec;
    executor.spawn_each(run.draws(), move |d| async move {
        smol::Timer::at(rec.at(d)).await;
        rec.fire(d);
    })?;
    run.scheduled();
    Ok(run.finish()?)
}

/// The multi-threaded executor a task row runs its tasks on; each has
/// [`wheel_bench::worker_threads`] workers, so the rows compare. Built
/// before the clock starts, and dropped after the last fire.
enum Executor {
    Tokio(Runtime),
    Smol(SmolExecutor),
}

impl Executor {
    /// A tokio multi-thread runtime without tokio's timer, which the
    /// wheel-sync rows do not use.
    fn tokio() -> io::Result<Executor> {
        Ok(Executor::Tokio(
            tokio::runtime::Builder::new_multi_thread().build()?,
        ))
    }

    /// smol's executor on its threads.
    fn smol() -> io::Result<Executor> {
        Ok(Executor::Smol(SmolExecutor::new()?))
    }

    /// Spawns the task `task(d)` for each draw `d`, and returns once all
    /// are spawned. They are spawned from a task on a worker, as the
    /// seed's tasks spawn theirs.
    fn spawn_each<F>(
        &self,
        draws: Draws,
        task: impl Fn(u64) -> F + Send + 'static,
    ) -> Result<(), RunError>
    where
        F: Future<Output = ()> + Send + 'static,
    {
        match self {
            Executor::Tokio(rt) => {
                let spawner = rt.spawn(async move {
                    for d in draws {
                        tokio::spawn(task(d));
                    }
                });
                rt.block_on(spawner)?;
            }
            Executor::Smol(smol) => {
                let executor = Arc::clone(smol.executor());
                let spawner = smol.executor().spawn(async move {
                    for d in draws {
                        executor.spawn(task(d)).detach();
                    }
                });
                smol::block_on(spawner);
            }
        }
        Ok(())
    }
}

fn delay_queue(args: &DelayArgs) -> Result<DelayOutcome, RunError> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()?;
    let mut run = Run::start(args, Impl::DelayQueue)?;
    let rec = run.rec;
    let mut queue = DelayQueue::with_capacity(usize::try_from(args.timers).unwrap_or(0));
    {
        let _runtime = rt.enter();
        for d in run.draws() {
            queue.insert_at(d, rec.at(d).into());
        }
    }
    run.scheduled();
    rt.block_on(async {
        while let Some(expired) = poll_fn(|cx| queue.poll_expired(cx)).await {
            rec.fire(expired.into_inner());
        }
    });
    Ok(run.finish_releasing(None, move || drop(queue))?)
}

/// One run in progress: the recorder, the memory baseline, the progress bar.
struct Run {
    rec: &'static Recorder,
    args: DelayArgs,
    baseline_rss_kib: u64,
    cpu_start_ns: u64,
    sched_ns: u64,
    bar: ProgressBar,
}

impl Run {
    /// Starts the clock; call once the implementation is set up, so the
    /// baseline memory holds everything but the timers.
    fn start(args: &DelayArgs, imp: Impl) -> io::Result<Run> {
        let horizon = Duration::from_millis(args.max_ms) + SLACK;
        // Leaked: the callbacks need it for as long as the child lives, and
        // a `'static` reference keeps each closure at two words.
        let rec: &'static Recorder = Box::leak(Box::new(Recorder::new(args.timers, horizon)));
        let bar = progress_bar::bar(format!("delay {imp:<11}"), args.timers);
        let baseline_rss_kib = rss_kib()?;
        Ok(Run {
            rec,
            args: args.clone(),
            baseline_rss_kib,
            cpu_start_ns: child::cpu_ns()?,
            sched_ns: 0,
            bar,
        })
    }

    /// The deadlines to schedule, as nanoseconds after start.
    fn draws(&self) -> Draws {
        Draws {
            rec: self.rec,
            rng: SplitMix64(self.args.seed),
            left: self.args.timers,
            min_us: self.args.min_ms * 1000,
            span_us: (self.args.max_ms - self.args.min_ms) * 1000 + 1,
            base_ns: 0,
            until_clock: 0,
        }
    }

    /// Marks the end of scheduling.
    fn scheduled(&mut self) {
        self.sched_ns = self.rec.elapsed_ns();
    }

    /// Waits for the last timer; the CPU time is taken then, before the
    /// statistics are worked out and the process tears down.
    fn finish(self) -> io::Result<DelayOutcome> {
        self.finish_with(None)
    }

    /// As [`finish`](Self::finish), with a wheel-sync `service`'s own view
    /// of the lateness beside the recorder's.
    fn finish_with(self, service: Option<&TimerService>) -> io::Result<DelayOutcome> {
        self.finish_releasing(service, || ())
    }

    /// As [`finish_with`](Self::finish_with), and then the release of the
    /// timers, measured apart: `release` drops whatever still holds them
    /// (handles, a queue), and the allocator settles what was freed. A
    /// row whose timers are freed as they fire pays for that inside the
    /// first window; one whose frees come after its last fire pays here.
    fn finish_releasing(
        self,
        service: Option<&TimerService>,
        release: impl FnOnce(),
    ) -> io::Result<DelayOutcome> {
        self.rec.wait(&self.bar);
        let cpu_ns = child::cpu_ns()?.saturating_sub(self.cpu_start_ns);
        release();
        settle_allocator();
        let release_cpu_ns = child::cpu_ns()?.saturating_sub(self.cpu_start_ns);
        let service_lateness = service.map(|service| {
            let late = service.stats().lateness;
            [late.p50, late.p99].map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
        });
        Ok(DelayOutcome {
            recorded: self.rec.recorded(),
            sched_ns: self.sched_ns,
            baseline_rss_kib: self.baseline_rss_kib,
            cpu_ns,
            release_cpu_ns,
            service_lateness,
        })
    }
}

/// Big enough that glibc's `malloc` serves it from its large bins, which
/// it does only after merging the small chunks freed into the calling
/// thread's arena.
const SETTLE_BYTES: usize = 4096;

/// Has the allocator settle what was freed, on this thread (the one that
/// scheduled the callbacks and made their entries). glibc keeps small freed
/// chunks, from any thread, unmerged in the arena they came from until
/// that arena serves a large allocation; such a deferred merge would
/// otherwise fall outside every window, charged to whatever allocates
/// next. Other allocators do no such work here, and this costs them one
/// allocation.
fn settle_allocator() {
    drop(std::hint::black_box(Vec::<u8>::with_capacity(SETTLE_BYTES)));
}

/// Deadlines `now + uniform[min, max]` in microsecond steps, in nanoseconds
/// after the run's start.
struct Draws {
    rec: &'static Recorder,
    rng: SplitMix64,
    left: u64,
    min_us: u64,
    span_us: u64,
    base_ns: u64,
    until_clock: u32,
}

impl Iterator for Draws {
    type Item = u64;

    fn next(&mut self) -> Option<u64> {
        self.left = self.left.checked_sub(1)?;
        if self.until_clock == 0 {
            self.base_ns = self.rec.elapsed_ns();
            self.until_clock = CLOCK_EVERY;
        }
        self.until_clock -= 1;
        let delay_us = self.min_us + self.rng.below(self.span_us);
        Some(self.base_ns + delay_us * 1000)
    }
}

/// This process's resident set size, from `/proc/self/status`.
fn rss_kib() -> io::Result<u64> {
    let status = std::fs::read_to_string("/proc/self/status")?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .ok_or_else(|| io::Error::other("no VmRSS line in /proc/self/status"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_stay_in_range() {
        let args = DelayArgs {
            timers: 10_000,
            min_ms: 5,
            max_ms: 7,
            seed: 1,
            tick_us: 1_000,
        };
        let run = Run::start(&args, Impl::Heap).unwrap();
        let draws: Vec<u64> = run.draws().collect();
        let elapsed = run.rec.elapsed_ns();
        assert_eq!(draws.len(), 10_000);
        for &d in &draws {
            assert!((5_000_000..=elapsed + 7_000_000).contains(&d), "{d}");
        }
    }

    #[test]
    fn rss_is_read() {
        assert!(rss_kib().unwrap() > 0);
    }
}

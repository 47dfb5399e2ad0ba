//! Seed 001 inside a child: each thread loops schedule(1 s) + cancel, as a
//! client does around every request, until the time is up.

use std::future::Future;
use std::pin::pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Barrier;
use std::task::{Context, Poll, Waker};
use std::thread;
use std::time::{Duration, Instant};

use tokio_util::time::DelayQueue;
use wheel_sync::TimerService;

use super::child;
use super::experiment::TimeoutsArgs;
use super::impls::Impl;
use super::outcome::TimeoutsOutcome;
use super::progress_bar::{self, Published};
use super::RunError;
use wheel_bench::peers::HeapScheduler;

/// The timeout every request schedules; it never fires, being cancelled first.
const TIMEOUT: Duration = Duration::from_secs(1);
/// Operations between two looks at the stop flag.
const BATCH: u64 = 256;

/// Runs `imp` with `args.threads[0]` threads in this process.
pub fn run(args: &TimeoutsArgs, imp: Impl) -> Result<TimeoutsOutcome, RunError> {
    let threads = args.threads.first().copied().unwrap_or(1);
    let bench = Bench {
        threads,
        secs: args.secs,
        label: format!("timeouts {imp:<11} x{threads:<3}"),
    };
    match imp {
        Impl::Heap => {
            let heap = HeapScheduler::new()?;
            bench.drive(|lane| {
                lane.count(|| {
                    heap.schedule_cancellable(Instant::now() + TIMEOUT, || {})
                        .cancel();
                    Ok(())
                })
            })
        }
        Impl::Tokio | Impl::TokioAlt => {
            let rt = if imp == Impl::TokioAlt {
                wheel_bench::tokio_alt_runtime()?
            } else {
                wheel_bench::tokio_runtime()?
            };
            bench.drive(|lane| {
                let _runtime = rt.enter();
                // Polled once so the entry really goes into the driver's wheel.
                polled_once(lane, || tokio::time::sleep(TIMEOUT))
            })
        }
        Impl::DelayQueue => {
            let rt = wheel_bench::tokio_runtime()?;
            bench.drive(|lane| {
                let _runtime = rt.enter();
                let mut cx = Context::from_waker(Waker::noop());
                // One queue per thread, as each connection task would own one.
                let mut queue = DelayQueue::new();
                lane.count(|| {
                    let key = queue.insert((), TIMEOUT);
                    // The owning task polls it while it waits for the reply.
                    let _ = queue.poll_expired(&mut cx);
                    queue.remove(&key);
                    Ok(())
                })
            })
        }
        Impl::WheelQueue => {
            let service = TimerService::builder().build()?;
            bench.drive(|lane| {
                let mut cx = Context::from_waker(Waker::noop());
                // One queue per thread, as for `delayqueue`.
                let mut queue = wheel_sync::DelayQueue::with_service(&service);
                lane.count(|| {
                    let key = queue.insert((), TIMEOUT);
                    let _ = queue.poll_expired(&mut cx);
                    queue.remove(&key);
                    Ok(())
                })
            })
        }
        Impl::Wheel => {
            let service = TimerService::builder().build()?;
            bench.drive(|lane| {
                // A clone per thread, as each client thread would hold.
                let service = service.clone();
                lane.count(|| {
                    service.schedule(TIMEOUT, || {})?.cancel();
                    Ok(())
                })
            })
        }
        Impl::WheelShared => {
            let service = TimerService::builder().build()?;
            // One service, shared by reference by every thread.
            bench.drive(|lane| {
                lane.count(|| {
                    service.schedule(TIMEOUT, || {})?.cancel();
                    Ok(())
                })
            })
        }
        Impl::WheelCloneEach => {
            let service = TimerService::builder().build()?;
            bench.drive(|lane| {
                lane.count(|| {
                    // A handle cloned for the request, as into a task.
                    let service = service.clone();
                    service.schedule(TIMEOUT, || {})?.cancel();
                    Ok(())
                })
            })
        }
        Impl::WheelAsync => {
            let service = TimerService::builder().build()?;
            bench.drive(|lane| {
                let service = service.clone();
                // Polled once, as tokio's is, though it registers on creation.
                polled_once(lane, || service.sleep(TIMEOUT))
            })
        }
        Impl::WheelAsyncShared => {
            let service = TimerService::builder().build()?;
            bench.drive(|lane| polled_once(lane, || service.sleep(TIMEOUT)))
        }
        Impl::WheelAsyncGlobal => {
            // Started before the clock, as the tokio peer's runtime is.
            TimerService::global();
            bench.drive(|lane| polled_once(lane, || wheel_sync::sleep(TIMEOUT)))
        }
        Impl::WheelTimeout => {
            TimerService::global();
            bench.drive(|lane| {
                let mut cx = Context::from_waker(Waker::noop());
                lane.count(|| {
                    // The request: pending once, then its reply is there.
                    let mut call = pin!(wheel_sync::timeout(TIMEOUT, PendingOnce(false)));
                    let _ = call.as_mut().poll(&mut cx);
                    match call.as_mut().poll(&mut cx) {
                        Poll::Ready(Ok(())) => Ok(()),
                        _ => Err(RunError::Io(std::io::Error::other(
                            "wheel_sync::timeout did not complete",
                        ))),
                    }
                })
            })
        }
        Impl::None
        | Impl::NoneAsync
        | Impl::Executor2
        | Impl::Executor8
        | Impl::WheelHandles
        | Impl::WheelHandleDropped
        | Impl::WheelAsyncCloneEach
        | Impl::WheelAsyncArc => Err(RunError::NotIn {
            imp,
            experiment: "timeouts",
        }),
    }
}

/// Counts requests whose timeout is the future `make` returns, polled once
/// and dropped (the reply came before it was due).
fn polled_once<F: Future>(lane: &Lane<'_>, make: impl Fn() -> F) -> Result<u64, RunError> {
    let mut cx = Context::from_waker(Waker::noop());
    lane.count(|| {
        let _ = pin!(make()).poll(&mut cx);
        Ok(())
    })
}

/// A request whose reply comes at its second poll.
struct PendingOnce(bool);

impl Future for PendingOnce {
    type Output = ();

    fn poll(mut self: std::pin::Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
        if std::mem::replace(&mut self.0, true) {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }
}

struct Bench {
    threads: usize,
    secs: f64,
    label: String,
}

impl Bench {
    /// Runs `body` on every thread at once for `secs`; `body` returns its
    /// operation count.
    fn drive<F>(self, body: F) -> Result<TimeoutsOutcome, RunError>
    where
        F: Fn(&Lane<'_>) -> Result<u64, RunError> + Sync,
    {
        let stop = AtomicBool::new(false);
        let published: Vec<Published> = (0..self.threads).map(|_| Published::default()).collect();
        let bar = progress_bar::spinner(self.label, "ops");
        let start_line = Barrier::new(self.threads + 1);
        thread::scope(|scope| {
            let workers: Vec<_> = (published.iter())
                .map(|slot| {
                    let lane = Lane {
                        stop: &stop,
                        published: &slot.0,
                    };
                    let (body, start_line) = (&body, &start_line);
                    scope.spawn(move || {
                        start_line.wait();
                        body(&lane)
                    })
                })
                .collect();
            start_line.wait();
            let start = Instant::now();
            let cpu_start_ns = child::cpu_ns()?;
            progress_bar::wait_for(&bar, Duration::from_secs_f64(self.secs), &published);
            stop.store(true, Ordering::Relaxed);
            let mut ops = 0;
            for worker in workers {
                ops += worker.join().map_err(|_| RunError::Panicked)??;
            }
            // After the joins: each worker finishes its batch after `stop`,
            // and those operations are counted.
            let elapsed_ns = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
            let cpu_ns = child::cpu_ns()?.saturating_sub(cpu_start_ns);
            Ok(TimeoutsOutcome {
                ops,
                elapsed_ns,
                cpu_ns,
            })
        })
    }
}

/// One thread's view: when to stop and where to publish its count.
struct Lane<'a> {
    stop: &'a AtomicBool,
    published: &'a AtomicU64,
}

impl Lane<'_> {
    /// Repeats `op` until stopped; returns how many times it ran.
    fn count(&self, mut op: impl FnMut() -> Result<(), RunError>) -> Result<u64, RunError> {
        let mut ops = 0;
        while !self.stop.load(Ordering::Relaxed) {
            for _ in 0..BATCH {
                op()?;
            }
            ops += BATCH;
            self.published.store(ops, Ordering::Relaxed);
        }
        Ok(ops)
    }
}

//! Seed 001 inside a child: each thread loops schedule(1 s) + cancel, as a
//! client does around every request, until the time is up; with
//! `--in-flight K` above 1, each thread keeps K requests in flight,
//! cancelling the oldest as it schedules another (with `--any-order`, one
//! of them picked at random).

use std::cell::RefCell;
use std::collections::VecDeque;
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
    // K = 1 keeps the loops measured before `--in-flight`, unchanged, so
    // their numbers stay comparable; each arm's `else` is the K > 1 loop.
    let k = args.in_flight;
    let bench = Bench {
        threads,
        secs: args.secs,
        any_order: args.any_order,
        label: format!("timeouts {imp:<11} x{threads:<3}"),
        service: None,
    };
    match imp {
        Impl::Heap => {
            let heap = HeapScheduler::new()?;
            bench.drive(|lane| {
                if k == 1 {
                    lane.count(|| {
                        heap.schedule_cancellable(Instant::now() + TIMEOUT, || {})
                            .cancel();
                        Ok(())
                    })
                } else {
                    in_flight(
                        lane,
                        k,
                        || Ok(heap.schedule_cancellable(Instant::now() + TIMEOUT, || {})),
                        |timer| {
                            timer.cancel();
                            Ok(())
                        },
                    )
                }
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
                if k == 1 {
                    polled_once(lane, || tokio::time::sleep(TIMEOUT))
                } else {
                    boxed_in_flight(lane, k, || tokio::time::sleep(TIMEOUT))
                }
            })
        }
        Impl::DelayQueue => {
            let rt = wheel_bench::tokio_runtime()?;
            bench.drive(|lane| {
                let _runtime = rt.enter();
                // One queue per thread, as each connection task would own one.
                queue_requests(lane, k, DelayQueue::new())
            })
        }
        Impl::WheelQueue => {
            let service = TimerService::builder().build()?;
            // One queue per thread, as for `delayqueue`.
            bench.on(&service).drive(|lane| {
                queue_requests(lane, k, wheel_sync::DelayQueue::with_service(&service))
            })
        }
        Impl::Wheel => {
            let service = TimerService::builder().build()?;
            bench.on(&service).drive(|lane| {
                // A clone per thread, as each client thread would hold.
                let service = service.clone();
                if k == 1 {
                    lane.count(|| {
                        service.schedule(TIMEOUT, || {})?.cancel();
                        Ok(())
                    })
                } else {
                    timers_in_flight(lane, k, &service)
                }
            })
        }
        Impl::WheelShared => {
            let service = TimerService::builder().build()?;
            // One service, shared by reference by every thread.
            bench.on(&service).drive(|lane| {
                if k == 1 {
                    lane.count(|| {
                        service.schedule(TIMEOUT, || {})?.cancel();
                        Ok(())
                    })
                } else {
                    timers_in_flight(lane, k, &service)
                }
            })
        }
        Impl::WheelCloneEach => {
            let service = TimerService::builder().build()?;
            bench.on(&service).drive(|lane| {
                if k == 1 {
                    lane.count(|| {
                        // A handle cloned for the request, as into a task.
                        let service = service.clone();
                        service.schedule(TIMEOUT, || {})?.cancel();
                        Ok(())
                    })
                } else {
                    in_flight(
                        lane,
                        k,
                        || {
                            // The request's clone lives as long as it does.
                            let service = service.clone();
                            let timer = service.schedule(TIMEOUT, || {})?;
                            Ok((service, timer))
                        },
                        |(service, timer)| {
                            timer.cancel();
                            drop(timer);
                            drop(service);
                            Ok(())
                        },
                    )
                }
            })
        }
        Impl::WheelAsync => {
            let service = TimerService::builder().build()?;
            bench.on(&service).drive(|lane| {
                let service = service.clone();
                // Polled once, as tokio's is, though it registers on creation.
                if k == 1 {
                    polled_once(lane, || service.sleep(TIMEOUT))
                } else {
                    boxed_in_flight(lane, k, || service.sleep(TIMEOUT))
                }
            })
        }
        Impl::WheelAsyncShared => {
            let service = TimerService::builder().build()?;
            bench.on(&service).drive(|lane| {
                if k == 1 {
                    polled_once(lane, || service.sleep(TIMEOUT))
                } else {
                    boxed_in_flight(lane, k, || service.sleep(TIMEOUT))
                }
            })
        }
        Impl::WheelAsyncGlobal => {
            // Started before the clock (by `on`), as the tokio peer's
            // runtime is.
            bench.on(TimerService::global()).drive(|lane| {
                if k == 1 {
                    polled_once(lane, || wheel_sync::sleep(TIMEOUT))
                } else {
                    boxed_in_flight(lane, k, || wheel_sync::sleep(TIMEOUT))
                }
            })
        }
        Impl::WheelTimeout => {
            bench.on(TimerService::global()).drive(|lane| {
                let mut cx = Context::from_waker(Waker::noop());
                if k == 1 {
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
                } else {
                    // Its reply comes at the second poll, when it is the
                    // oldest in flight.
                    let mut reply_cx = Context::from_waker(Waker::noop());
                    in_flight(
                        lane,
                        k,
                        || {
                            let mut call =
                                Box::pin(wheel_sync::timeout(TIMEOUT, PendingOnce(false)));
                            let _ = call.as_mut().poll(&mut cx);
                            Ok(call)
                        },
                        |mut call| match call.as_mut().poll(&mut reply_cx) {
                            Poll::Ready(Ok(())) => Ok(()),
                            _ => Err(RunError::Io(std::io::Error::other(
                                "wheel_sync::timeout did not complete",
                            ))),
                        },
                    )
                }
            })
        }
        Impl::None
        | Impl::NoneAsync
        | Impl::Executor2
        | Impl::Executor8
        | Impl::WheelHandles
        | Impl::WheelHandleDropped
        | Impl::WheelAsyncCloneEach
        | Impl::WheelAsyncArc
        | Impl::WheelAsyncSmol
        | Impl::Smol => Err(RunError::NotIn {
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

/// Counts requests with `k` in flight: each operation `start`s one and,
/// once `k` are in flight, `finish`es the oldest, as the K = 1 loops do at
/// once. Those still in flight at the stop are finished then, within the
/// measured time (each op is one start and one finish) but not counted.
///
/// A request must end well inside its timeout, or the row would measure
/// timeouts firing (and a `DelayQueue`'s `remove` of a fired key panics):
/// one that lived more than half of it fails the run, asking for fewer
/// requests in flight or fewer threads. Its age is read from the clock
/// once every [`BATCH`] starts, not per request.
fn in_flight<R>(
    lane: &Lane<'_>,
    k: usize,
    mut start: impl FnMut() -> Result<R, RunError>,
    mut finish: impl FnMut(R) -> Result<(), RunError>,
) -> Result<u64, RunError> {
    // Never grows: it holds k - 1 between operations, k at most.
    let mut requests = VecDeque::with_capacity(k);
    // Which request ends, with `any_order` (xorshift64; any fixed seed).
    let mut random = 0x9E37_79B9_7F4A_7C15_u64;
    let mut since = Instant::now();
    let mut starts = 0u64;
    let ops = lane.count(|| {
        starts += 1;
        if starts % BATCH == 0 {
            since = Instant::now();
        }
        requests.push_back((since, start()?));
        if requests.len() == k {
            let ended = if lane.any_order {
                random ^= random << 13;
                random ^= random >> 7;
                random ^= random << 17;
                requests.swap_remove_back((random % k as u64) as usize)
            } else {
                requests.pop_front()
            };
            if let Some((started, oldest)) = ended {
                if since.duration_since(started) > TIMEOUT / 2 {
                    return Err(RunError::Io(std::io::Error::other(format!(
                        "a request stayed in flight over {:?} of its {TIMEOUT:?} timeout: \
                         lower --in-flight or --threads",
                        TIMEOUT / 2
                    ))));
                }
                finish(oldest)?;
            }
        }
        Ok(())
    })?;
    requests
        .into_iter()
        .try_for_each(|(_, request)| finish(request))?;
    Ok(ops)
}

/// [`in_flight`] of the futures `make` returns, each boxed (tokio's `Sleep`
/// must not move once polled, and every row is boxed alike), polled once
/// when made and dropped when it is the oldest of `k`.
fn boxed_in_flight<F: Future>(
    lane: &Lane<'_>,
    k: usize,
    make: impl Fn() -> F,
) -> Result<u64, RunError> {
    let mut cx = Context::from_waker(Waker::noop());
    in_flight(
        lane,
        k,
        || {
            let mut future = Box::pin(make());
            let _ = future.as_mut().poll(&mut cx);
            Ok(future)
        },
        |future| {
            drop(future);
            Ok(())
        },
    )
}

/// [`in_flight`] of wheel-sync callbacks on `service`: schedule, then
/// cancel when it is the oldest of `k`.
fn timers_in_flight(lane: &Lane<'_>, k: usize, service: &TimerService) -> Result<u64, RunError> {
    in_flight(
        lane,
        k,
        || service.schedule(TIMEOUT, || {}).map_err(RunError::from),
        |timer| {
            timer.cancel();
            Ok(())
        },
    )
}

/// What a request does with a delay queue its thread owns; tokio-util's
/// `DelayQueue` and ours share the calls.
trait RequestQueue {
    type Key;
    /// Inserts the request's timeout; the owning task polls the queue
    /// while it waits for the reply.
    fn start(&mut self, cx: &mut Context<'_>) -> Self::Key;
    /// The reply came: removes the timeout.
    fn finish(&mut self, key: &Self::Key);
}

/// Both queues' calls have the same names and shapes.
macro_rules! request_queue {
    ($queue:ty, $key:ty) => {
        impl RequestQueue for $queue {
            type Key = $key;

            fn start(&mut self, cx: &mut Context<'_>) -> Self::Key {
                let key = self.insert((), TIMEOUT);
                let _ = self.poll_expired(cx);
                key
            }

            fn finish(&mut self, key: &Self::Key) {
                self.remove(key);
            }
        }
    };
}

request_queue!(DelayQueue<()>, tokio_util::time::delay_queue::Key);
request_queue!(wheel_sync::DelayQueue<()>, wheel_sync::delay_queue::Key);

/// Counts requests on `queue`, one at a time (`k` = 1) or `k` in flight.
fn queue_requests<Q: RequestQueue>(lane: &Lane<'_>, k: usize, queue: Q) -> Result<u64, RunError> {
    let mut cx = Context::from_waker(Waker::noop());
    if k == 1 {
        let mut queue = queue;
        lane.count(|| {
            let key = queue.start(&mut cx);
            queue.finish(&key);
            Ok(())
        })
    } else {
        queue_in_flight(
            lane,
            k,
            queue,
            |queue| queue.start(&mut cx),
            |queue, key| queue.finish(&key),
        )
    }
}

/// [`in_flight`] of requests in a `queue` the thread owns: `start` inserts
/// one, `finish` removes it.
fn queue_in_flight<Q, R>(
    lane: &Lane<'_>,
    k: usize,
    queue: Q,
    mut start: impl FnMut(&mut Q) -> R,
    mut finish: impl FnMut(&mut Q, R),
) -> Result<u64, RunError> {
    // Both ends need the queue; `in_flight` calls one at a time, so neither
    // borrow ever fails.
    let queue = RefCell::new(queue);
    in_flight(
        lane,
        k,
        || Ok(start(&mut queue.borrow_mut())),
        |key| {
            finish(&mut queue.borrow_mut(), key);
            Ok(())
        },
    )
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
    any_order: bool,
    label: String,
    /// The wheel-sync service under test, whose driver's rounds the run
    /// counts; `None` for the peers.
    service: Option<TimerService>,
}

impl Bench {
    /// The same bench, counting `service`'s driver rounds over the run.
    fn on(self, service: &TimerService) -> Self {
        Self {
            service: Some(service.clone()),
            ..self
        }
    }

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
                        any_order: self.any_order,
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
            let rounds_start = self.service.as_ref().map(|s| s.stats().rounds);
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
            let rounds_end = self.service.as_ref().map(|s| s.stats().rounds);
            Ok(TimeoutsOutcome {
                ops,
                elapsed_ns,
                cpu_ns,
                driver_rounds: rounds_start.zip(rounds_end).map(|(a, b)| b - a),
            })
        })
    }
}

/// One thread's view: when to stop and where to publish its count.
struct Lane<'a> {
    stop: &'a AtomicBool,
    published: &'a AtomicU64,
    /// Requests in flight end in any order, not the oldest first.
    any_order: bool,
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

#[cfg(test)]
mod tests;

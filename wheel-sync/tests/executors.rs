//! Every future of the crate under every executor we know users reach for:
//! tokio's two runtimes, smol's `block_on` and `Executor`, the `futures`
//! crate's `block_on`, `LocalPool` and `ThreadPool`, and a park/unpark
//! `block_on` of ten lines. The futures need no runtime context: their
//! wake-ups come from the service's driver thread, through the waker of
//! whichever executor polled them.
//!
//! Each executor runs the same four scenarios (spawned as tasks where it
//! can spawn, joined in one task where it only blocks): `Sleep` never early,
//! `Timeout` elapsed on a pending future and not on a ready one, `Interval`
//! ticking on schedule, `DelayQueue` handing items out by deadline. A
//! scenario that is never woken fails at `PATIENCE`, not by hanging.
#![cfg(not(loom))]

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::thread;
use std::time::Instant;

use futures::future::{join_all, BoxFuture};
use futures::task::{LocalSpawnExt, SpawnExt};
use futures::FutureExt;
use wheel_sync::{DelayQueue, Elapsed, TimerService};

mod common;
use common::{assert_in_deadline_order, ms, within_patience, HOUR};

/// The scenarios' names, in the order [`scenarios`] makes them.
const NAMES: [&str; 4] = ["sleep", "timeout", "interval", "delay queue"];

/// Sleeps, alone and several at once: none ends before its deadline.
async fn sleeps(timers: TimerService) -> &'static str {
    let start = Instant::now();
    timers.sleep(ms(3)).await;
    assert!(start.elapsed() >= ms(3), "a sleep ended early");
    let deadlines: Vec<Instant> = [4, 1, 3, 2].map(|n| Instant::now() + ms(n)).into();
    let ended = join_all(deadlines.iter().map(|&deadline| {
        let sleep = timers.sleep_until(deadline);
        async move {
            sleep.await;
            Instant::now()
        }
    }))
    .await;
    for (deadline, ended) in deadlines.iter().zip(ended) {
        assert!(ended >= *deadline, "a sleep ended early");
    }
    timers.sleep(ms(0)).await; // due at once: still completes
    "sleep"
}

/// A timeout elapses, not early, on a future that stays pending; a future
/// that is ready, at once or before the deadline, wins.
async fn timeouts(timers: TimerService) -> &'static str {
    let start = Instant::now();
    let lost: Result<(), Elapsed> = timers.timeout(ms(3), std::future::pending()).await;
    assert!(lost.is_err(), "a pending future beat its timeout");
    assert!(start.elapsed() >= ms(3), "a timeout elapsed early");
    assert_eq!(timers.timeout(HOUR, async { 7 }).await, Ok(7));
    let start = Instant::now();
    assert_eq!(timers.timeout(HOUR, timers.sleep(ms(2))).await, Ok(()));
    assert!(start.elapsed() >= ms(2), "the inner sleep ended early");
    "timeout"
}

/// Five ticks, a period apart on the schedule, none delivered early.
async fn interval(timers: TimerService) -> &'static str {
    let period = ms(2);
    let mut every = timers.interval(period);
    let first = every.tick().await;
    for n in 1..5 {
        let due = every.tick().await;
        assert_eq!(due, first + period * n, "tick {n} off the schedule");
        assert!(Instant::now() >= due, "tick {n} delivered early");
    }
    "interval"
}

/// Items inserted out of order come out by deadline, none early, and the
/// queue says when it is empty.
async fn delay_queue(timers: TimerService) -> &'static str {
    let mut queue = DelayQueue::with_service(&timers);
    for n in [5, 1, 4, 2, 3] {
        queue.insert(n, ms(2 * n));
    }
    let mut out = Vec::new();
    while let Some(expired) = queue.next_expired().await {
        out.push((expired.deadline(), Instant::now()));
    }
    assert_eq!(out.len(), 5, "items were lost");
    assert_in_deadline_order(&out);
    "delay queue"
}

/// The four scenarios on `timers`, as tasks any executor can spawn.
fn scenarios(timers: &TimerService) -> Vec<BoxFuture<'static, &'static str>> {
    vec![
        sleeps(timers.clone()).boxed(),
        timeouts(timers.clone()).boxed(),
        interval(timers.clone()).boxed(),
        delay_queue(timers.clone()).boxed(),
    ]
}

/// Runs the scenarios on a fresh service with `run`, which gets them and
/// returns the names of those that completed, under the watchdog; then every
/// timer is gone.
fn under(
    run: impl FnOnce(Vec<BoxFuture<'static, &'static str>>) -> Vec<&'static str> + Send + 'static,
) {
    let timers = TimerService::new();
    let tasks = scenarios(&timers);
    let service = timers.clone();
    within_patience(move || {
        let completed = run(tasks);
        assert_eq!(completed, NAMES, "not every scenario completed");
        assert_eq!(service.pending(), 0, "timers outlived their futures");
    });
    drop(timers);
}

/// Wakes the thread that [`park_block_on`] parked.
struct ThreadWaker(thread::Thread);

impl Wake for ThreadWaker {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
}

/// The whole executor a thread needs to wait on these futures: poll, park
/// until the waker unparks it, poll again.
fn park_block_on<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    let waker = Waker::from(Arc::new(ThreadWaker(thread::current())));
    let mut cx = Context::from_waker(&waker);
    loop {
        if let Poll::Ready(output) = future.as_mut().poll(&mut cx) {
            return output;
        }
        thread::park();
    }
}

#[test]
fn under_tokio_current_thread() {
    under(|tasks| {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        rt.block_on(async {
            let handles: Vec<_> = tasks.into_iter().map(tokio::spawn).collect();
            let mut names = Vec::new();
            for handle in handles {
                names.push(handle.await.expect("the task panicked"));
            }
            names
        })
    });
}

#[test]
fn under_tokio_multi_thread() {
    under(|tasks| {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .build()
            .unwrap();
        let handles: Vec<_> = tasks.into_iter().map(|task| rt.spawn(task)).collect();
        rt.block_on(async {
            let mut names = Vec::new();
            for handle in handles {
                names.push(handle.await.expect("the task panicked"));
            }
            names
        })
    });
}

#[test]
fn under_smol_block_on() {
    under(|tasks| smol::block_on(join_all(tasks)));
}

#[test]
fn under_a_smol_executor() {
    under(|tasks| {
        let executor = smol::Executor::new();
        let spawned: Vec<_> = tasks.into_iter().map(|task| executor.spawn(task)).collect();
        smol::block_on(executor.run(join_all(spawned)))
    });
}

#[test]
fn under_futures_block_on() {
    under(|tasks| futures::executor::block_on(join_all(tasks)));
}

#[test]
fn under_a_futures_local_pool() {
    under(|tasks| {
        let mut pool = futures::executor::LocalPool::new();
        let spawner = pool.spawner();
        let handles: Vec<_> = tasks
            .into_iter()
            .map(|task| spawner.spawn_local_with_handle(task).unwrap())
            .collect();
        pool.run_until(join_all(handles))
    });
}

#[test]
fn under_a_futures_thread_pool() {
    under(|tasks| {
        let pool = futures::executor::ThreadPool::builder()
            .pool_size(2)
            .create()
            .unwrap();
        // A task's panic reaches the handle, so it fails this test.
        let handles: Vec<_> = tasks
            .into_iter()
            .map(|task| pool.spawn_with_handle(task).unwrap())
            .collect();
        futures::executor::block_on(join_all(handles))
    });
}

#[test]
fn under_a_park_unpark_block_on() {
    under(|tasks| park_block_on(join_all(tasks)));
}

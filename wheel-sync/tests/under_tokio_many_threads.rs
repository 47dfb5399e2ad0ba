//! More tokio threads than the service has parking spots (64): a blocking
//! pool of 150 threads, alive at once, so two or three threads share each
//! spot, its places for parked timers and its counts. Timers parked, taken back, reset
//! and fired from threads that share a spot settle once each; service
//! clones made, moved and dropped across them never end the service while
//! one is left, and the last one does.
#![cfg(not(loom))]

use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use tokio::runtime::{Builder, Runtime};
use tokio::task::spawn_blocking;
use wheel_sync::TimerService;

mod common;
use common::patiently::wait_until;
use common::{assert_adds_up, block_on, ms, poll_once, polled, within_patience, XorShift, HOUR};

/// Threads alive at once: more than twice the spots.
const THREADS: usize = 150;

/// A runtime whose blocking pool can hold every thread at once.
fn runtime() -> Runtime {
    Builder::new_multi_thread()
        .worker_threads(2)
        .max_blocking_threads(THREADS + 10)
        .enable_time()
        .build()
        .unwrap()
}

/// Each thread, once all are up, makes sleeps and callbacks and settles
/// them every way: waited on (never early), polled then dropped (a cancel
/// that takes back the timer parked in the shared spot, beside other
/// threads' timers there, or finds it swept), reset and waited on, and callbacks cancelled or
/// left to run. Each callback runs or is cancelled, exactly once; nothing
/// stays pending; the counts add up.
#[test]
fn timers_on_threads_that_share_parking_spots_settle_once_each() {
    const PER_THREAD: usize = 24;
    within_patience(|| {
        let timers = TimerService::new();
        let rt = runtime();
        let barrier = Arc::new(Barrier::new(THREADS));
        let ran = Arc::new(AtomicUsize::new(0));
        let threads: Vec<_> = (0..THREADS)
            .map(|t| {
                let (timers, barrier, ran) = (timers.clone(), barrier.clone(), ran.clone());
                rt.spawn_blocking(move || {
                    let mut rng = XorShift::new(t as u64 + 1);
                    barrier.wait();
                    let mut cancelled = 0;
                    for k in 0..PER_THREAD {
                        let delay = Duration::from_micros(rng.below(3000));
                        match k % 4 {
                            0 => {
                                let sleep = timers.sleep(delay);
                                let deadline = sleep.deadline();
                                block_on(sleep);
                                assert!(Instant::now() >= deadline, "thread {t}: early");
                            }
                            1 => drop(polled(timers.sleep(delay + ms(1)))),
                            2 => {
                                let mut sleep = polled(timers.sleep(HOUR));
                                let deadline = Instant::now() + delay;
                                sleep.reset(deadline);
                                block_on(&mut sleep);
                                assert!(Instant::now() >= deadline, "thread {t}: reset, early");
                            }
                            _ => {
                                let ran = ran.clone();
                                let handle = timers
                                    .schedule(delay, move || {
                                        ran.fetch_add(1, SeqCst);
                                    })
                                    .unwrap();
                                if rng.below(2) == 0 {
                                    cancelled += usize::from(handle.cancel());
                                }
                            }
                        }
                    }
                    cancelled
                })
            })
            .collect();
        let cancelled: usize = rt.block_on(async {
            let mut cancelled = 0;
            for thread in threads {
                cancelled += thread.await.unwrap();
            }
            cancelled
        });
        let callbacks = THREADS * PER_THREAD / 4;
        assert!(
            wait_until(|| ran.load(SeqCst) + cancelled == callbacks),
            "ran {} + cancelled {cancelled} != {callbacks}",
            ran.load(SeqCst)
        );
        assert_eq!(timers.pending(), 0);
        wait_until(|| {
            let s = timers.stats();
            s.scheduled == s.fired + s.cancelled
        });
        assert_adds_up(&timers.stats(), "shared spots");
        drop(rt);
    });
}

/// Every thread holds a clone of the service (made on another thread, so
/// counted on another spot, and cloned again on its own), while the test's
/// own clone is dropped first: the service must run while any is left, so
/// every thread's sleeps complete, none panics. Once the last clone is
/// dropped, on whichever thread, the service ends: a sleep kept aside is
/// told so.
#[test]
fn clones_dropped_across_threads_that_share_spots_end_the_service_only_at_the_last() {
    within_patience(|| {
        let timers = TimerService::new();
        let mut watch = polled(timers.sleep(HOUR));
        let rt = runtime();
        let barrier = Arc::new(Barrier::new(THREADS));
        let clones: Vec<_> = (0..THREADS).map(|_| timers.clone()).collect();
        drop(timers);
        let threads: Vec<_> = clones
            .into_iter()
            .enumerate()
            .map(|(t, given)| {
                let barrier = barrier.clone();
                spawn_on(&rt, move || {
                    let mut rng = XorShift::new(t as u64 + 7);
                    let own = given.clone();
                    barrier.wait();
                    drop(given);
                    for _ in 0..4 {
                        let sleep = own.sleep(Duration::from_micros(rng.below(2000)));
                        assert!(!sleep.is_shut_down(), "thread {t}: shut down early");
                        block_on(sleep);
                    }
                    drop(own);
                })
            })
            .collect();
        rt.block_on(async {
            for thread in threads {
                thread.await.unwrap();
            }
        });
        assert!(
            wait_until(|| watch.is_shut_down()),
            "the last clone is gone, yet the service runs"
        );
        let poll = std::panic::AssertUnwindSafe(|| poll_once(&mut watch, std::task::Waker::noop()));
        assert!(
            std::panic::catch_unwind(poll).is_err(),
            "polled after shutdown: a panic"
        );
        drop(rt);
    });
}

/// `spawn_blocking` on `rt`, from outside it.
fn spawn_on<R: Send + 'static>(
    rt: &Runtime,
    f: impl FnOnce() -> R + Send + 'static,
) -> tokio::task::JoinHandle<R> {
    let _inside = rt.enter();
    spawn_blocking(f)
}

//! `pending()` counts every live timer and counts each out the moment it is
//! cancelled, dropped or due; `max_pending` is exact under concurrency and
//! never refuses below the limit.
#![cfg(not(loom))]

use std::sync::{mpsc, Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use wheel_sync::{ScheduleError, TimerHandle, TimerService};

mod common;
use common::patiently::wait_until;
use common::{polled, XorShift, HOUR, PATIENCE};

#[test]
fn pending_counts_every_live_timer() {
    let timers = TimerService::new();
    assert_eq!(timers.pending(), 0);
    let callback = timers.schedule(HOUR, || ()).unwrap();
    let at = timers.schedule_at(Instant::now() + HOUR, || ()).unwrap();
    let sleep = timers.sleep(HOUR);
    assert_eq!(
        timers.pending(),
        2,
        "a Sleep's timer is made by its first poll"
    );
    let sleep = polled(sleep);
    let sleep_until = polled(timers.sleep_until(Instant::now() + HOUR));
    let timeout = polled(timers.timeout(HOUR, std::future::pending::<()>()));
    assert_eq!(timers.pending(), 5);
    assert_eq!(timers.stats().pending, 5);

    assert!(callback.cancel());
    assert_eq!(timers.pending(), 4, "cancel must count out at once");
    drop(at); // dropping a TimerHandle does not cancel
    assert_eq!(timers.pending(), 4);
    drop(sleep);
    assert_eq!(
        timers.pending(),
        3,
        "dropping a Sleep must count out at once"
    );
    drop(sleep_until);
    assert_eq!(timers.pending(), 2);
    let _inner = timeout.into_inner();
    assert_eq!(
        timers.pending(),
        1,
        "dropping a Timeout's deadline must count out at once"
    );
}

#[test]
fn pending_falls_before_the_callback_runs() {
    let timers = TimerService::new();
    let (tx, rx) = mpsc::channel();
    let inner = timers.clone();
    timers
        .schedule(Duration::from_millis(1), move || {
            tx.send(inner.pending()).unwrap()
        })
        .unwrap();
    assert_eq!(
        rx.recv_timeout(PATIENCE).unwrap(),
        0,
        "a firing timer still counted"
    );
}

#[test]
fn max_pending_is_exact_under_concurrency() {
    const LIMIT: usize = 1_000;
    const THREADS: usize = 4;
    let timers = TimerService::builder().max_pending(LIMIT).build().unwrap();
    let attempt_all = |per_thread: usize| -> Vec<TimerHandle> {
        let barrier = Arc::new(Barrier::new(THREADS));
        let workers: Vec<_> = (0..THREADS)
            .map(|t| {
                let timers = timers.clone();
                let barrier = barrier.clone();
                thread::spawn(move || {
                    barrier.wait();
                    let mut admitted = Vec::new();
                    for i in 0..per_thread {
                        let result = if i % 2 == 0 {
                            timers.schedule(HOUR, || ())
                        } else {
                            timers.schedule_at(Instant::now() + HOUR, || ())
                        };
                        match result {
                            Ok(handle) => admitted.push(handle),
                            Err(e) => assert_eq!(
                                e,
                                ScheduleError::TooManyPending { limit: LIMIT },
                                "thread {t}"
                            ),
                        }
                    }
                    admitted
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().unwrap())
            .collect()
    };

    let mut admitted = attempt_all(LIMIT / 2);
    assert_eq!(
        admitted.len(),
        LIMIT,
        "admitted beyond, or refused below, the limit"
    );
    assert_eq!(timers.pending(), LIMIT);

    let k = 100;
    for handle in admitted.drain(..k) {
        assert!(handle.cancel());
    }
    assert_eq!(timers.pending(), LIMIT - k);
    let more = attempt_all(k);
    assert_eq!(more.len(), k, "cancelling {k} must admit exactly {k} more");
    assert_eq!(timers.pending(), LIMIT);

    for handle in admitted.iter().chain(&more) {
        assert!(handle.cancel());
    }
    assert_eq!(timers.pending(), 0);
}

#[test]
fn max_pending_never_refuses_below_the_limit() {
    // Each thread keeps at most its quota live, so the total never reaches
    // the limit while a thread below its quota schedules: every such
    // schedule must be admitted, however the threads interleave.
    const THREADS: usize = 4;
    const QUOTA: usize = 16;
    const ROUNDS: usize = if cfg!(miri) { 50 } else { 4_000 };
    let timers = TimerService::builder()
        .max_pending(THREADS * QUOTA)
        .build()
        .unwrap();
    let barrier = Arc::new(Barrier::new(THREADS));
    let workers: Vec<_> = (0..THREADS)
        .map(|t| {
            let timers = timers.clone();
            let barrier = barrier.clone();
            thread::spawn(move || {
                let mut rng = XorShift::new(100 + t as u64);
                let mut live = Vec::new();
                barrier.wait();
                for round in 0..ROUNDS {
                    if live.len() < QUOTA && rng.below(3) != 0 {
                        let handle = timers.schedule(HOUR, || ()).unwrap_or_else(|e| {
                            panic!(
                                "thread {t} round {round}: refused with {} live: {e}",
                                live.len()
                            )
                        });
                        live.push(handle);
                    } else if !live.is_empty() {
                        let index = rng.below(live.len() as u64) as usize;
                        assert!(live.swap_remove(index).cancel());
                    }
                }
                live
            })
        })
        .collect();
    let live: usize = workers.into_iter().map(|w| w.join().unwrap().len()).sum();
    assert_eq!(timers.pending(), live);
}

#[test]
fn futures_count_toward_the_limit_but_are_never_refused() {
    let timers = TimerService::builder().max_pending(2).build().unwrap();
    let first = polled(timers.sleep(HOUR));
    let second = polled(timers.timeout(HOUR, std::future::pending::<()>()));
    assert_eq!(timers.pending(), 2);
    assert_eq!(
        timers.schedule(HOUR, || ()).unwrap_err(),
        ScheduleError::TooManyPending { limit: 2 }
    );
    let third = polled(timers.sleep(HOUR));
    assert_eq!(
        timers.pending(),
        3,
        "a Sleep is never refused, even over the limit"
    );
    drop(third);
    drop(first);
    assert_eq!(timers.pending(), 1);
    let handle = timers
        .schedule(HOUR, || ())
        .expect("a dropped Sleep frees its place");
    assert!(timers.schedule(HOUR, || ()).is_err());
    drop(second);
    assert!(handle.cancel());
    assert_eq!(timers.pending(), 0);
}

#[test]
fn max_pending_frees_up_as_timers_fire_or_cancel() {
    let timers = TimerService::builder().max_pending(2).build().unwrap();
    let soon = timers.schedule(Duration::from_millis(2), || ()).unwrap();
    let far = timers.schedule(HOUR, || ()).unwrap();
    assert!(timers.schedule(HOUR, || ()).is_err());
    assert!(wait_until(|| soon.is_fired()));
    let replacement = timers
        .schedule(HOUR, || ())
        .expect("a fired timer frees its place");
    assert!(timers.schedule(HOUR, || ()).is_err());
    assert!(far.cancel());
    let _ = timers
        .schedule(HOUR, || ())
        .expect("a cancelled timer frees its place");
    assert!(replacement.cancel());
}

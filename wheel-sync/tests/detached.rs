//! Detached callbacks, fire and forget: never early, each once, with closures
//! of any size; they count toward `pending()` and the limit, their panics are
//! caught, and shutdown drops them unrun.
#![cfg(not(loom))]

use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use wheel_sync::{ScheduleError, TimerService};

mod common;
use common::patiently::wait_until;
use common::{drop_flag, report_to, XorShift, HOUR, LATE_BOUND, PATIENCE};

#[test]
fn detached_callbacks_never_fire_early_and_each_fires_once() {
    let timers = TimerService::new();
    let (tx, rx) = mpsc::channel();
    let mut rng = XorShift::new(0xde7a);
    let start = Instant::now();
    const N: usize = 200;
    for id in 0..N {
        let deadline = start + Duration::from_micros(rng.below(40_000));
        if id % 2 == 0 {
            timers
                .schedule_detached_at(deadline, report_to(&tx, id, deadline))
                .unwrap();
        } else {
            let delay = deadline.saturating_duration_since(Instant::now());
            let deadline = Instant::now() + delay;
            timers
                .schedule_detached(delay, report_to(&tx, id, deadline))
                .unwrap();
        }
    }
    let mut seen = [false; N];
    for _ in 0..N {
        let (id, deadline, fired_at) = rx
            .recv_timeout(PATIENCE)
            .expect("a detached callback never fired");
        assert!(!seen[id], "detached callback {id} fired twice");
        seen[id] = true;
        assert!(
            fired_at >= deadline,
            "detached callback {id} fired {:?} early",
            deadline - fired_at
        );
        assert!(
            fired_at - deadline < LATE_BOUND,
            "detached callback {id} {:?} late",
            fired_at - deadline
        );
    }
    assert!(
        wait_until(|| timers.stats().fired == N as u64),
        "{:?}",
        timers.stats()
    );
    let stats = timers.stats();
    assert_eq!(
        (stats.scheduled, stats.pending, stats.cancelled),
        (N as u64, 0, 0),
        "{stats:?}"
    );
}

#[test]
fn detached_closures_of_any_size_run_with_what_they_captured() {
    let timers = TimerService::new();
    let (tx, rx) = mpsc::channel();
    let small = 7_u8;
    let big = [3_u64; 16];
    let tx2 = tx.clone();
    timers
        .schedule_detached(Duration::ZERO, move || tx.send(u64::from(small)).unwrap())
        .unwrap();
    timers
        .schedule_detached(Duration::from_millis(2), move || {
            tx2.send(big.iter().sum()).unwrap()
        })
        .unwrap();
    assert_eq!(rx.recv_timeout(PATIENCE).unwrap(), 7);
    assert_eq!(rx.recv_timeout(PATIENCE).unwrap(), 48);
}

#[test]
fn detached_callbacks_count_toward_pending_and_the_limit() {
    let timers = TimerService::builder().max_pending(2).build().unwrap();
    timers.schedule_detached(HOUR, || ()).unwrap();
    let handle = timers.schedule(HOUR, || ()).unwrap();
    assert_eq!(timers.pending(), 2);
    let (guard, dropped) = drop_flag();
    assert_eq!(
        timers
            .schedule_detached(HOUR, move || drop(guard))
            .unwrap_err(),
        ScheduleError::TooManyPending { limit: 2 }
    );
    assert!(dropped.load(SeqCst), "a refused closure was kept");
    assert!(handle.cancel());
    timers.schedule_detached(Duration::ZERO, || ()).unwrap();
    assert!(wait_until(|| timers.pending() == 1), "{:?}", timers.stats());
}

#[test]
fn panicking_detached_callback_is_caught_and_counted() {
    let timers = TimerService::new();
    let (tx, rx) = mpsc::channel();
    timers
        .schedule_detached(Duration::from_millis(1), || {
            panic!("expected test panic: a detached callback")
        })
        .unwrap();
    timers
        .schedule_detached(Duration::from_millis(10), move || tx.send(()).unwrap())
        .unwrap();
    rx.recv_timeout(PATIENCE)
        .expect("the driver stopped after a detached callback panicked");
    assert!(
        wait_until(|| timers.stats().fired == 2),
        "{:?}",
        timers.stats()
    );
    assert_eq!(timers.stats().panicked, 1);
}

#[test]
fn shutdown_drops_pending_detached_callbacks_unrun() {
    let timers = TimerService::new();
    let ran = Arc::new(AtomicBool::new(false));
    let mut dropped = Vec::new();
    for delay in [Duration::from_secs(2), HOUR] {
        let (guard, flag) = drop_flag();
        let ran = ran.clone();
        timers
            .schedule_detached(delay, move || {
                let _guard = guard;
                ran.store(true, SeqCst);
            })
            .unwrap();
        dropped.push(flag);
    }
    let _handle = timers.schedule(HOUR, || ()).unwrap();
    let report = timers.shutdown().unwrap();
    assert_eq!(report.unfired, 3, "{report:?}");
    for (i, flag) in dropped.iter().enumerate() {
        assert!(
            flag.load(SeqCst),
            "detached callback {i} was not dropped by shutdown"
        );
    }
    assert!(!ran.load(SeqCst), "shutdown ran a detached callback");
    assert_eq!(timers.pending(), 0);
    let (guard, flag) = drop_flag();
    assert_eq!(
        timers
            .schedule_detached(Duration::ZERO, move || drop(guard))
            .unwrap_err(),
        ScheduleError::Shutdown
    );
    assert!(flag.load(SeqCst), "a closure refused at shutdown was kept");
}

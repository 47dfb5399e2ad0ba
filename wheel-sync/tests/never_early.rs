//! Timers never fire early and are late by about a tick under light load; a
//! driver stalled in a callback catches up in deadline order, and delays and
//! ticks at `Duration`'s limits neither panic nor overflow.
//!
//! The machine is shared and noisy: "never early" is checked strictly against
//! an `Instant` taken before the timer was scheduled; lateness has a loose bound.
#![cfg(not(loom))]

use std::sync::{mpsc, Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use wheel_sync::TimerService;

mod common;
use common::patiently::wait_until;
use common::{block_on, report_to, LATE_BOUND, PATIENCE};

#[test]
fn callbacks_never_fire_early() {
    let delays_us = [0, 50, 300, 999, 1_000, 1_500, 3_300, 7_000, 13_000, 25_000];
    for tick in [
        Duration::from_nanos(1),
        Duration::from_micros(100),
        Duration::from_millis(1),
        Duration::from_millis(10),
    ] {
        let timers = TimerService::builder().tick(tick).build().unwrap();
        let (tx, rx) = mpsc::channel();
        let mut expected = 0;
        for &us in &delays_us {
            let delay = Duration::from_micros(us);
            // Taken before `schedule` reads the clock: a lower bound on its deadline.
            let deadline = Instant::now() + delay;
            timers
                .schedule(delay, report_to(&tx, expected, deadline))
                .unwrap();
            let deadline = Instant::now() + delay;
            timers
                .schedule_at(deadline, report_to(&tx, expected + 1, deadline))
                .unwrap();
            expected += 2;
        }
        let past = Instant::now();
        timers
            .schedule_at(past, report_to(&tx, expected, past))
            .unwrap();
        expected += 1;

        let mut seen = vec![false; expected];
        for _ in 0..expected {
            let (id, deadline, fired_at) = rx
                .recv_timeout(PATIENCE)
                .unwrap_or_else(|_| panic!("tick {tick:?}: a timer never fired; seen {seen:?}"));
            assert!(!seen[id], "tick {tick:?}: timer {id} fired twice");
            seen[id] = true;
            assert!(
                fired_at >= deadline,
                "tick {tick:?}: timer {id} fired {:?} early",
                deadline - fired_at
            );
            let late = fired_at - deadline;
            assert!(
                late < LATE_BOUND + tick,
                "tick {tick:?}: timer {id} {late:?} late"
            );
        }
        assert!(wait_until(|| timers.stats().fired == expected as u64));
        let stats = timers.stats();
        assert!(
            stats.max_lateness < LATE_BOUND + tick,
            "tick {tick:?}: {stats:?}"
        );
        assert!(stats.mean_lateness <= stats.max_lateness, "{stats:?}");
        assert_eq!(stats.pending, 0, "{stats:?}");
    }
}

#[test]
fn sleeps_never_complete_early() {
    let timers = TimerService::builder()
        .tick(Duration::from_millis(2))
        .build()
        .unwrap();
    for us in [0, 100, 1_000, 2_500, 9_000] {
        let delay = Duration::from_micros(us);
        let deadline = Instant::now() + delay;
        block_on(timers.sleep(delay));
        let done = Instant::now();
        assert!(done >= deadline, "sleep({delay:?}) ended early");
        assert!(
            done - deadline < LATE_BOUND,
            "sleep({delay:?}) ended {:?} late",
            done - deadline
        );

        let deadline = Instant::now() + delay;
        let sleep = timers.sleep_until(deadline);
        assert_eq!(sleep.deadline(), deadline);
        block_on(sleep);
        assert!(
            Instant::now() >= deadline,
            "sleep_until({delay:?}) ended early"
        );
    }
    assert_eq!(timers.pending(), 0);
}

#[test]
fn a_stalled_driver_catches_up_in_deadline_order() {
    stalled_driver_catches_up_in_deadline_order(false);
}

/// Every other timer detached: detached callbacks sit in a wheel of their
/// own, and the driver must interleave the two.
#[test]
fn a_stalled_driver_catches_up_in_deadline_order_across_detached_callbacks() {
    stalled_driver_catches_up_in_deadline_order(true);
}

fn stalled_driver_catches_up_in_deadline_order(mixed: bool) {
    const STALL: Duration = Duration::from_millis(200);
    let timers = TimerService::new();
    let schedule_at = |deadline: Instant, f: Box<dyn FnOnce() + Send>, id: usize| {
        if mixed && id % 2 == 1 {
            timers.schedule_detached_at(deadline, f).unwrap();
        } else {
            drop(timers.schedule_at(deadline, f).unwrap());
        }
    };
    let (tx, rx) = mpsc::channel();
    let order = Arc::new(Mutex::new(Vec::new()));
    let mut deadlines = Vec::new();
    let record = |id: usize, deadline: Instant| {
        let order = order.clone();
        move || {
            let now = Instant::now();
            order.lock().unwrap().push((id, deadline, now));
        }
    };

    // Far enough ahead that a descheduled test thread still submits every
    // deadline before it comes due.
    let base = Instant::now() + Duration::from_millis(100);
    // Due while the driver sleeps in the slow callback below. Submitted
    // first, so the driver has filed them by the time it runs that callback.
    for k in 0..10 {
        let deadline = base + Duration::from_millis(10 + 19 * k);
        let id = deadlines.len();
        schedule_at(deadline, Box::new(record(id, deadline)), id);
        deadlines.push(deadline);
    }
    let (stall_tx, stall_rx) = mpsc::channel();
    timers
        .schedule_at(base + Duration::from_millis(5), move || {
            stall_tx.send(Instant::now()).unwrap();
            thread::sleep(STALL);
            tx.send(Instant::now()).unwrap();
        })
        .unwrap();
    let stall_start = stall_rx.recv_timeout(PATIENCE).unwrap();
    // Submitted during the stall, due during it (some already past), and after it.
    for k in [150, 10, 100, 40, 70, 400] {
        let deadline = stall_start + Duration::from_millis(k);
        let id = deadlines.len();
        schedule_at(deadline, Box::new(record(id, deadline)), id);
        deadlines.push(deadline);
    }
    let stall_end = rx.recv_timeout(PATIENCE).unwrap();
    assert!(
        wait_until(|| order.lock().unwrap().len() >= deadlines.len()),
        "only {} of {} fired",
        order.lock().unwrap().len(),
        deadlines.len()
    );
    let order = order.lock().unwrap().clone();
    assert_eq!(
        order.len(),
        deadlines.len(),
        "a timer fired twice: {order:?}"
    );
    let mut seen = vec![false; deadlines.len()];
    for &(id, deadline, fired_at) in &order {
        assert!(!seen[id], "timer {id} fired twice");
        seen[id] = true;
        assert!(fired_at >= deadline, "timer {id} fired early");
        if deadline < stall_end {
            assert!(
                fired_at - deadline < STALL + LATE_BOUND,
                "timer {id} {:?} late",
                fired_at - deadline
            );
        }
    }
    for pair in order.windows(2) {
        let ((a, a_deadline, _), (b, b_deadline, _)) = (pair[0], pair[1]);
        // Deadlines less than a tick apart may share a tick and fire either way round.
        assert!(
            b_deadline + Duration::from_millis(1) > a_deadline,
            "timer {b} fired after timer {a}, though due {:?} earlier",
            a_deadline - b_deadline
        );
    }
    let stats = timers.stats();
    assert!(stats.max_lateness < STALL + LATE_BOUND, "{stats:?}");
}

#[test]
fn extreme_delays_and_ticks_do_not_panic() {
    let timers = TimerService::new();
    let handle = timers.schedule(Duration::MAX, || ()).unwrap();
    let sleep = common::polled(timers.sleep(Duration::MAX));
    assert!(!sleep.is_elapsed());
    assert_eq!(timers.pending(), 2);
    assert!(handle.cancel());
    drop(sleep);
    assert_eq!(timers.pending(), 0);

    for tick in [Duration::ZERO, Duration::MAX] {
        let err = TimerService::builder().tick(tick).build().unwrap_err();
        assert_eq!(
            err.kind(),
            std::io::ErrorKind::InvalidInput,
            "tick {tick:?}"
        );
    }
    let coarse = TimerService::builder()
        .tick(Duration::from_secs(3600))
        .build()
        .unwrap();
    assert!(coarse
        .schedule(Duration::from_millis(1), || ())
        .unwrap()
        .cancel());
}

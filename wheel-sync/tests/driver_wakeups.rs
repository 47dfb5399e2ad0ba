//! When the driver wakes: rarely for timers scheduled and cancelled in a loop,
//! never once idle, and at once for a `Sleep` reset earlier than its nap.
#![cfg(not(loom))]

use std::thread;
use std::time::{Duration, Instant};

use wheel_sync::TimerService;

mod common;
use common::patiently::wait_until;
use common::{block_on, HOUR};

/// A client that arms and cancels a timeout per request keeps the wheel
/// empty between requests; the driver must not be woken for each one.
#[test]
fn scheduling_and_cancelling_in_a_loop_rarely_wakes_the_driver() {
    const PAIRS: u64 = 200_000;
    let timers = TimerService::new();
    let before = timers.stats().wakeups;
    let started = Instant::now();
    for _ in 0..PAIRS {
        assert!(timers
            .schedule(Duration::from_secs(1), || ())
            .unwrap()
            .cancel());
    }
    let woken = timers.stats().wakeups - before;
    // Each is parked and taken back: the driver sees none of them, and is
    // woken only around its naps (a few per 100 ms nap; more on a loaded
    // machine, where a preempted caller leaves a timer parked for the
    // driver to take). So the bound grows with the time the loop took: a
    // wake-up per 10 ms at most, against 200 000 timers.
    let allowed = 20 + started.elapsed().as_millis() as u64 / 10;
    assert!(woken <= allowed, "{woken} wake-ups, {allowed} allowed");
}

/// After activity the driver naps, then parks for good: no CPU when idle.
#[test]
fn an_idle_service_stops_waking_up() {
    // The default tick, and a 1 ns one on the real clock, whose timers
    // (fired and cancelled) must leave no nap shorter than the idle one.
    for tick in [Duration::from_millis(1), Duration::from_nanos(1)] {
        let timers = TimerService::builder().tick(tick).build().unwrap();
        for _ in 0..100 {
            timers.schedule(HOUR, || ()).unwrap().cancel();
        }
        let mut sleeps: Vec<_> = (1..=100)
            .map(|i| common::polled(timers.sleep(Duration::from_micros(i * 200))))
            .collect();
        for sleep in &mut sleeps {
            block_on(sleep);
        }
        let settled = || {
            let before = timers.stats().wakeups;
            thread::sleep(Duration::from_millis(300));
            timers.stats().wakeups == before
        };
        assert!(
            wait_until(settled),
            "tick {tick:?}: the driver kept waking up"
        );
    }
}

/// A `Sleep` reset to an earlier deadline while its first message is still
/// on its way (parked) must wake a driver that sleeps past the new
/// deadline; otherwise it fires only when the driver's nap ends (up to
/// 100 ms late). The fastest of three tries is compared, so one slow
/// scheduling of this thread cannot fail it.
#[test]
fn reset_earlier_wakes_a_sleeping_driver() {
    let timers = TimerService::new();
    let _far = timers.schedule(HOUR, || ()).unwrap();
    let fastest = (0..3)
        .map(|_| {
            // Let the driver file everything and go to sleep.
            thread::sleep(Duration::from_millis(20));
            let mut sleep = common::polled(timers.sleep(HOUR));
            let start = Instant::now();
            sleep.reset(start + Duration::from_millis(1));
            block_on(&mut sleep);
            start.elapsed()
        })
        .min()
        .unwrap();
    assert!(
        fastest < Duration::from_millis(50),
        "a reset 1 ms ahead took {fastest:?}"
    );
}

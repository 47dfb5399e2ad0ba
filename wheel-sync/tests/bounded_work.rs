//! Bounded work: however many timers arrive or come due at once, a driver
//! round files and fires at most a batch of them, on a real clock and on a
//! manual one (where `advance` still fires everything due, in order); and
//! `pending` never wraps, even while a sleep is re-armed as fast as it fires.
#![cfg(not(loom))]

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::task::{Context, Waker};
use std::thread;
use std::time::Duration;

use wheel_sync::TimerService;

mod common;
use common::{manual, wait_until, PATIENCE};

/// The most a round may file or fire (the driver's batch), with room for a
/// sweep of the parking spots (64, of 64 places each).
const ROUND_BOUND: u64 = 4096 + 64 * 64;

#[test]
fn a_manual_advance_over_a_flood_fires_it_all_in_order_a_batch_per_round() {
    let timers = manual();
    let order = Arc::new(Mutex::new(Vec::new()));
    let n: u64 = if cfg!(miri) { 100 } else { 50_000 };
    for i in 0..n {
        let order = order.clone();
        // Two deadlines, many timers each: order across them must hold.
        let ms = if i % 2 == 0 { 2 } else { 1 };
        timers
            .schedule_detached(Duration::from_millis(ms), move || {
                order.lock().unwrap().push(ms);
            })
            .unwrap();
    }
    timers.advance(Duration::from_millis(5)).unwrap();
    let order = order.lock().unwrap();
    assert_eq!(order.len() as u64, n, "advance returned before all fired");
    assert!(
        order.windows(2).all(|w| w[0] <= w[1]),
        "out of deadline order"
    );
    let stats = timers.stats();
    assert!(stats.max_filed_per_round <= ROUND_BOUND, "{stats:?}");
    assert!(stats.max_fired_per_round <= ROUND_BOUND, "{stats:?}");
    assert!(stats.rounds >= n / 4096, "{stats:?}");
}

#[test]
fn on_the_real_clock_a_burst_due_at_once_is_fired_a_batch_per_round() {
    let timers = TimerService::new();
    let fired = Arc::new(AtomicU64::new(0));
    let n: u64 = if cfg!(miri) { 100 } else { 50_000 };
    for _ in 0..n {
        let fired = fired.clone();
        timers
            .schedule_detached(Duration::ZERO, move || {
                fired.fetch_add(1, SeqCst);
            })
            .unwrap();
    }
    assert!(wait_until(PATIENCE, || fired.load(SeqCst) == n));
    let stats = timers.stats();
    assert!(stats.max_filed_per_round <= ROUND_BOUND, "{stats:?}");
    assert!(stats.max_fired_per_round <= ROUND_BOUND, "{stats:?}");
}

#[test]
fn pending_never_wraps_while_a_sleep_is_re_armed_as_fast_as_it_fires() {
    // An interval whose period is below the tick re-arms its sleep at the
    // same tick again and again, often while the driver fires it.
    let timers = TimerService::builder().max_pending(1000).build().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let highest = Arc::new(AtomicUsize::new(0));
    let watcher = {
        let (timers, stop, highest) = (timers.clone(), stop.clone(), highest.clone());
        thread::spawn(move || {
            while !stop.load(SeqCst) {
                highest.fetch_max(timers.pending(), SeqCst);
            }
        })
    };
    let mut interval = timers.interval(Duration::from_micros(10));
    let mut cx = Context::from_waker(Waker::noop());
    let ticks = if cfg!(miri) { 100 } else { 200_000 };
    let mut ready = 0;
    while ready < ticks {
        if interval.poll_tick(&mut cx).is_ready() {
            ready += 1;
        } else {
            thread::yield_now();
        }
    }
    stop.store(true, SeqCst);
    watcher.join().unwrap();
    assert!(
        highest.load(SeqCst) <= 1,
        "pending read {} with one interval",
        highest.load(SeqCst)
    );
}

//! Exactly once: `cancel()` is true iff the callback never runs, also when it
//! races the driver or lands in the round that fires; a cancelled timer is
//! counted, and its closure freed long before its deadline.
#![cfg(not(loom))]

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::{mpsc, Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use wheel_sync::TimerService;

mod common;
use common::patiently::wait_until;
use common::{drop_flag, XorShift, HOUR, PATIENCE};

/// Holds the driver inside a callback until the returned sender is used or
/// dropped (dropping it on a failed assertion frees the driver, so a failing
/// test cannot hang the others). Returns once the callback is running.
fn stall_driver(timers: &TimerService) -> mpsc::Sender<()> {
    let (started_tx, started_rx) = mpsc::channel();
    let (release_tx, release_rx) = mpsc::channel::<()>();
    timers
        .schedule(Duration::ZERO, move || {
            started_tx.send(()).unwrap();
            let _ = release_rx.recv_timeout(PATIENCE);
        })
        .unwrap();
    started_rx
        .recv_timeout(PATIENCE)
        .expect("the stalling callback never ran");
    release_tx
}

#[test]
fn cancel_races_fire_exactly_once() {
    const THREADS: usize = 4;
    const PER_THREAD: usize = if cfg!(miri) { 40 } else { 1_500 };
    let timers = TimerService::new();
    let barrier = Arc::new(Barrier::new(THREADS));
    let workers: Vec<_> = (0..THREADS)
        .map(|t| {
            let timers = timers.clone();
            let barrier = barrier.clone();
            thread::spawn(move || {
                let mut rng = XorShift::new(t as u64 + 1);
                barrier.wait();
                (0..PER_THREAD)
                    .map(|i| {
                        let runs = Arc::new(AtomicUsize::new(0));
                        let counted = runs.clone();
                        // One in eight is let fire, one in eight is cancelled
                        // long before its deadline, the rest race the driver.
                        let mode = i % 8;
                        let delay = if mode == 1 {
                            HOUR
                        } else {
                            Duration::from_micros(rng.below(300))
                        };
                        let handle = timers
                            .schedule(delay, move || {
                                counted.fetch_add(1, SeqCst);
                            })
                            .unwrap();
                        match mode {
                            0 => assert!(wait_until(|| handle.is_fired()), "timer never fired"),
                            1 => {}
                            _ => (0..rng.below(3_000)).for_each(|_| std::hint::spin_loop()),
                        }
                        let cancelled = handle.cancel();
                        assert!(!handle.cancel(), "second cancel returned true");
                        assert_eq!(handle.is_cancelled(), cancelled, "{handle:?}");
                        assert_eq!(handle.is_fired(), !cancelled, "{handle:?}");
                        (runs, cancelled, mode)
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let outcomes: Vec<_> = workers
        .into_iter()
        .flat_map(|w| w.join().unwrap())
        .collect();
    // Joins the driver: every callback that started has finished.
    let report = timers.shutdown().unwrap();
    assert_eq!(
        report.unfired, 0,
        "every timer was either fired or cancelled"
    );

    let (mut ran, mut cancelled) = (0, 0);
    for (i, (runs, cancel_won, mode)) in outcomes.iter().enumerate() {
        let runs = runs.load(SeqCst);
        assert!(runs <= 1, "timer {i} ran {runs} times");
        assert_eq!(
            runs == 1,
            !cancel_won,
            "timer {i}: ran {runs}, cancel() = {cancel_won}"
        );
        match mode {
            0 => assert!(!cancel_won, "timer {i} had fired, yet cancel() won"),
            1 => assert!(cancel_won, "timer {i} an hour away, yet cancel() lost"),
            _ => {}
        }
        if *cancel_won {
            cancelled += 1;
        } else {
            ran += 1;
        }
    }
    assert_eq!(ran + cancelled, THREADS * PER_THREAD);
}

#[test]
fn cancel_reports_each_outcome_once() {
    let timers = TimerService::new();
    let fired = timers.schedule(Duration::ZERO, || ()).unwrap();
    let far = timers.schedule(HOUR, || ()).unwrap();
    assert!(wait_until(|| fired.is_fired()));
    assert!(!fired.cancel(), "cancel after fire returned true");
    assert!(!fired.is_cancelled());
    assert!(far.cancel());
    assert!(far.is_cancelled() && !far.is_fired(), "{far:?}");
    assert!(!far.cancel(), "second cancel returned true");
    assert_eq!(timers.pending(), 0);
}

#[test]
fn cancel_during_the_firing_round_is_counted() {
    let timers = TimerService::new();
    let release = stall_driver(&timers);
    // Both come due while the driver is held, so one round fires them both,
    // and the first cancels the second in that round.
    let now = Instant::now();
    let victim_ran = Arc::new(AtomicBool::new(false));
    let ran = victim_ran.clone();
    let victim = timers
        .schedule_at(now + Duration::from_millis(5), move || {
            ran.store(true, SeqCst)
        })
        .unwrap();
    let (tx, rx) = mpsc::channel();
    timers
        .schedule_at(now + Duration::from_millis(2), move || {
            tx.send(victim.cancel()).unwrap();
        })
        .unwrap();
    thread::sleep(Duration::from_millis(10));
    drop(release);
    assert!(
        rx.recv_timeout(PATIENCE).unwrap(),
        "cancel of a pending timer lost"
    );
    let (tx, rx) = mpsc::channel();
    timers
        .schedule(Duration::from_millis(2), move || tx.send(()).unwrap())
        .unwrap();
    rx.recv_timeout(PATIENCE).unwrap();
    assert!(!victim_ran.load(SeqCst), "a cancelled timer fired");
    // stall, canceller, victim, sentinel: three fired and one cancelled.
    assert!(
        wait_until(|| {
            let s = timers.stats();
            s.fired == 3 && s.cancelled == 1
        }),
        "cancelled timer not counted: {:?}",
        timers.stats()
    );
}

#[test]
fn cancelled_far_timer_is_freed_before_its_deadline() {
    let timers = TimerService::new();
    let (guard, dropped) = drop_flag();
    let handle = timers.schedule(HOUR, move || drop(guard)).unwrap();
    // Let the driver file it and plan to sleep until it is due.
    assert!(wait_until(|| timers.stats().scheduled == 1));
    thread::sleep(Duration::from_millis(5));
    assert!(handle.cancel());
    // The cancelling thread drops the closure, at once.
    assert!(dropped.load(SeqCst), "a cancelled callback is still held");
    drop(handle);
    assert!(
        wait_until(|| timers.stats().cancelled == 1),
        "the driver has not counted the cancel: {:?}",
        timers.stats()
    );
}

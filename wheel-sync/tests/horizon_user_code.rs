//! Trying to break the driver's horizon from user code: callbacks that
//! schedule and cancel from the driver, wakers that re-enter the service,
//! closures whose drops panic, sleep or call back, all with timers parked
//! far beyond the horizon.
#![cfg(not(loom))]

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::{mpsc, Arc, Mutex};
use std::task::Waker;
use std::thread;
use std::time::Instant;

use wheel_sync::{Sleep, TimerHandle, TimerService};

mod common;
use common::horizon::*;
use common::patiently::wait_until;
use common::{counting_waker, drop_flag, ms, on_wake, poll_once, report_to, HOUR, LATE_BOUND};

/// Callbacks that schedule the next from the driver: a chain 250 ms a hop
/// (each parked beyond the horizon, in the driver's own spot), and one
/// 15 ms a hop beside it. Every hop fires on time, never early. A callback
/// also cancels a far timer parked by a thread that exited, and schedules
/// its replacement beyond the horizon: the cancelled one never runs, its
/// closure is dropped then, and the replacement fires on time.
#[test]
fn callbacks_scheduling_and_cancelling_from_the_driver_beyond_the_horizon() {
    let timers = TimerService::new();
    let (tx, rx) = mpsc::channel();
    let (victim_guard, victim_dropped) = drop_flag();
    let victim_ran = Arc::new(AtomicBool::new(false));
    let victim = thread::spawn({
        let (timers, ran) = (timers.clone(), victim_ran.clone());
        move || {
            timers
                .schedule(HOUR, move || {
                    drop(victim_guard);
                    ran.store(true, SeqCst);
                })
                .unwrap()
        }
    })
    .join()
    .unwrap();
    let cancelled = Arc::new(Mutex::new(None));
    {
        let (next, tx, cancelled) = (timers.clone(), tx.clone(), cancelled.clone());
        timers
            .schedule(ms(30), move || {
                *cancelled.lock().unwrap() = Some(victim.cancel());
                let deadline = Instant::now() + HORIZON + ms(150);
                next.schedule_at(deadline, report_to(&tx, 1000, deadline))
                    .unwrap();
            })
            .unwrap();
    }
    chain(&timers, 0, 4, HORIZON + ms(150), tx.clone());
    chain(&timers, 100, 10, ms(15), tx.clone());
    drop(tx);
    let seen = collect_on_time(&rx, 15, LATE_BOUND);
    let expected: HashSet<usize> = (0..4).chain(100..110).chain([1000]).collect();
    assert_eq!(seen, expected);
    assert_eq!(*cancelled.lock().unwrap(), Some(true));
    assert!(victim_dropped.load(SeqCst));
    assert!(!victim_ran.load(SeqCst));
    assert!(wait_until(|| timers.pending() == 0));
    let s = timers.stats();
    assert_eq!((s.scheduled, s.fired, s.cancelled), (17, 16, 1), "{s:?}");
}

/// A waker the driver wakes (a sleep reset from another thread to a passed
/// deadline) calls back into the service from the driver's thread: it drops
/// a sleep parked an hour out by another thread, moves a second (also
/// parked an hour out) to 250 ms ahead, schedules a callback beyond the
/// horizon, and makes and polls a new sleep beyond it. Each takes effect on
/// time, and the counts add up.
#[test]
fn a_waker_reentering_the_service_with_parked_sleeps_beyond_the_horizon() {
    let timers = TimerService::new();
    let (tx, rx) = mpsc::channel();
    // Made and parked on a thread that exits.
    let (dropped_sleep, moved_sleep) = thread::spawn({
        let timers = timers.clone();
        move || {
            let mut a = timers.sleep(HOUR);
            let b = timers.sleep(HOUR);
            assert!(poll_once(&mut a, Waker::noop()).is_pending());
            (a, b)
        }
    })
    .join()
    .unwrap();
    let (moved_wakes, moved_waker) = counting_waker();
    let moved = Arc::new(Mutex::new(moved_sleep));
    assert!(poll_once(&mut *moved.lock().unwrap(), &moved_waker).is_pending());
    assert_eq!(timers.pending(), 2);
    let made: Arc<Mutex<Option<(Instant, Sleep)>>> = Arc::default();
    let (made_wakes, made_waker) = counting_waker();
    let moved_to = Arc::new(Mutex::new(None));
    let waker = {
        let (timers, moved, made, moved_to) = (
            timers.clone(),
            moved.clone(),
            made.clone(),
            moved_to.clone(),
        );
        let dropped_sleep = Mutex::new(Some(dropped_sleep));
        on_wake(move || {
            drop(dropped_sleep.lock().unwrap().take());
            let to = Instant::now() + HORIZON + ms(150);
            moved.lock().unwrap().reset(to);
            *moved_to.lock().unwrap() = Some(to);
            let deadline = Instant::now() + HORIZON + ms(200);
            timers
                .schedule_at(deadline, report_to(&tx, 7, deadline))
                .unwrap();
            let at = Instant::now() + HORIZON + ms(250);
            let mut sleep = timers.sleep_until(at);
            assert!(poll_once(&mut sleep, &made_waker).is_pending());
            *made.lock().unwrap() = Some((at, sleep));
        })
    };
    let mut trigger = timers.sleep(HOUR);
    assert!(poll_once(&mut trigger, &waker).is_pending());
    let trigger = thread::spawn(move || {
        thread::sleep(ms(10));
        trigger.reset(Instant::now());
        trigger
    })
    .join()
    .unwrap();
    assert!(wait_until(|| made.lock().unwrap().is_some()), "not woken");
    assert!(trigger.is_elapsed());
    let to = moved_to.lock().unwrap().unwrap();
    assert!(wait_until(|| moved_wakes.count() == 1), "the moved sleep");
    let now = Instant::now();
    assert!(now >= to && now <= to + LATE_BOUND, "{now:?} vs {to:?}");
    assert!(moved.lock().unwrap().is_elapsed());
    collect_on_time(&rx, 1, LATE_BOUND);
    assert!(wait_until(|| made_wakes.count() == 1), "the sleep made");
    let (at, sleep) = made.lock().unwrap().take().unwrap();
    let now = Instant::now();
    assert!(now >= at && now <= at + LATE_BOUND);
    assert!(sleep.is_elapsed());
    drop(sleep);
    drop(trigger);
    assert_eq!(timers.pending(), 0);
    let s = timers.stats();
    // trigger, the dropped one, the moved one, the callback, the sleep made.
    assert_eq!((s.scheduled, s.fired, s.cancelled), (5, 4, 1), "{s:?}");
}

/// Closures parked an hour out whose captures misbehave as they are
/// dropped: one panics when cancelled on another thread (the cancel wins,
/// the panic is counted, nothing unwinds); one, cancelled on another
/// thread, cancels a second parked timer of the same spot and schedules a
/// new one beyond the horizon from inside its drop (both take effect); and
/// at shutdown, captures that sleep or panic as they are dropped are each
/// waited for, counted unfired, and the panics counted.
#[test]
fn closures_whose_drops_panic_sleep_or_call_back_while_parked_far() {
    let timers = TimerService::new();
    let (tx, rx) = mpsc::channel();
    let bomb = PanicOnDrop;
    let h1 = timers.schedule(HOUR, move || drop(bomb)).unwrap();
    let (victim_guard, victim_dropped) = drop_flag();
    let victim = timers.schedule(HOUR, move || drop(victim_guard)).unwrap();
    let victim_cancelled = Arc::new(AtomicBool::new(false));
    let replacement: Arc<Mutex<Option<TimerHandle>>> = Arc::default();
    let on_drop = OnDrop(Some(Box::new({
        let (timers, victim_cancelled, replacement) = (
            timers.clone(),
            victim_cancelled.clone(),
            replacement.clone(),
        );
        move || {
            victim_cancelled.store(victim.cancel(), SeqCst);
            let deadline = Instant::now() + HORIZON + ms(150);
            let handle = timers
                .schedule_at(deadline, report_to(&tx, 1, deadline))
                .unwrap();
            *replacement.lock().unwrap() = Some(handle);
        }
    })));
    let h2 = timers.schedule(HOUR, move || drop(on_drop)).unwrap();
    thread::spawn(move || {
        assert!(h1.cancel(), "the cancel of a closure that panics on drop");
        assert!(h2.cancel());
    })
    .join()
    .unwrap();
    assert_eq!(timers.stats().panicked, 1);
    assert!(
        victim_cancelled.load(SeqCst),
        "cancelled from inside a drop"
    );
    assert!(victim_dropped.load(SeqCst));
    collect_on_time(&rx, 1, LATE_BOUND);
    assert!(replacement.lock().unwrap().as_ref().unwrap().is_fired());
    assert_eq!(timers.pending(), 0);

    let slow = Arc::new(AtomicUsize::new(0));
    for _ in 0..3 {
        let counted = OnDrop(Some(Box::new({
            let slow = slow.clone();
            move || {
                thread::sleep(ms(30));
                slow.fetch_add(1, SeqCst);
            }
        })));
        timers.schedule(HOUR, move || drop(counted)).unwrap();
        let bomb = PanicOnDrop;
        timers.schedule(HOUR, move || drop(bomb)).unwrap();
    }
    let report = timers.shutdown().unwrap();
    assert_eq!(report.unfired, 6);
    assert_eq!(slow.load(SeqCst), 3);
    let s = timers.stats();
    assert_eq!(s.panicked, 4, "{s:?}");
    assert_eq!(s.scheduled, s.fired + s.cancelled + report.unfired as u64);
    assert_eq!(timers.pending(), 0);
}

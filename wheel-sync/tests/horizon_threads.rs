//! Trying to break the driver's horizon (100 ms on a real clock) with
//! timers parked far beyond it by threads that exit, block, or hand the
//! handle or `Sleep` to another thread that cancels, resets or awaits it;
//! cancels and resets racing the driver's sweep at the horizon.
#![cfg(not(loom))]

use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{mpsc, Arc, Mutex};
use std::task::Waker;
use std::thread;
use std::time::{Duration, Instant};

use wheel_sync::{TimerHandle, TimerService};

mod common;
use common::horizon::*;
use common::patiently::wait_until;
use common::{
    assert_adds_up, block_on, counting_waker, drop_flag, ms, poll_once, report_to, HOUR, LATE_BOUND,
};

/// Callbacks parked beyond the horizon by threads that then exit, never to
/// touch the service again: each still fires, not early and on time.
#[test]
fn callbacks_parked_beyond_the_horizon_by_threads_that_exit_fire_on_time() {
    let timers = TimerService::new();
    // An idle driver, asleep for good.
    thread::sleep(ms(20));
    let (tx, rx) = mpsc::channel();
    let handles: Vec<TimerHandle> = (0..3)
        .map(|t| {
            let (timers, tx) = (timers.clone(), tx.clone());
            thread::spawn(move || {
                (0..5)
                    .map(|k| {
                        let deadline = Instant::now() + HORIZON + ms(150 + 60 * k + 7 * t);
                        let id = 5 * t as usize + k as usize;
                        timers
                            .schedule_at(deadline, report_to(&tx, id, deadline))
                            .unwrap()
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect::<Vec<_>>()
        .into_iter()
        .flat_map(|t| t.join().unwrap())
        .collect();
    drop(tx);
    let seen = collect_on_time(&rx, 15, LATE_BOUND);
    assert_eq!(seen.len(), 15);
    assert!(handles.iter().all(TimerHandle::is_fired));
    assert!(rx.recv_timeout(ms(50)).is_err(), "a timer fired twice");
    assert_eq!(timers.pending(), 0);
    let s = timers.stats();
    assert_eq!((s.scheduled, s.fired, s.cancelled), (15, 15, 0), "{s:?}");
}

/// A thread parks callbacks beyond the horizon, hands its far ones to the
/// main thread and blocks: the near ones fire on time while it is blocked,
/// and the far ones, cancelled from the main thread, are taken back there
/// (their closures dropped at once) and never run.
#[test]
fn a_blocked_threads_parked_timers_fire_on_time_and_its_far_ones_are_cancelled_elsewhere() {
    let timers = TimerService::new();
    let (tx, rx) = mpsc::channel();
    let (far_tx, far_rx) = mpsc::channel();
    let (go_tx, go_rx) = mpsc::channel::<()>();
    let mut flags = Vec::new();
    let mut guards = Vec::new();
    for _ in 0..4 {
        let (guard, flag) = drop_flag();
        flags.push(flag);
        guards.push(guard);
    }
    let parker = thread::spawn({
        let timers = timers.clone();
        move || {
            let near: Vec<_> = (0..6)
                .map(|k| {
                    let deadline = Instant::now() + HORIZON + ms(120 + 50 * k);
                    timers
                        .schedule_at(deadline, report_to(&tx, k as usize, deadline))
                        .unwrap()
                })
                .collect();
            drop(tx);
            let ran = Arc::new(AtomicUsize::new(0));
            for guard in guards {
                let ran = ran.clone();
                let far = timers
                    .schedule(HOUR, move || {
                        drop(guard);
                        ran.fetch_add(1, SeqCst);
                    })
                    .unwrap();
                far_tx.send(far).unwrap();
            }
            drop(far_tx);
            // Blocked until the main thread has seen everything fire.
            go_rx.recv().unwrap();
            assert!(near.iter().all(TimerHandle::is_fired));
            assert_eq!(ran.load(SeqCst), 0, "a cancelled far timer ran");
        }
    });
    let far: Vec<TimerHandle> = far_rx.iter().collect();
    assert_eq!(far.len(), 4);
    for (handle, flag) in far.iter().zip(&flags) {
        assert!(handle.cancel(), "a far parked timer could not be cancelled");
        assert!(flag.load(SeqCst), "the closure was not dropped at once");
        assert!(handle.is_cancelled());
    }
    assert!(timers.pending() <= 6, "{}", timers.pending());
    collect_on_time(&rx, 6, LATE_BOUND);
    go_tx.send(()).unwrap();
    parker.join().unwrap();
    assert_eq!(timers.pending(), 0);
    let s = timers.stats();
    assert_eq!((s.scheduled, s.fired, s.cancelled), (10, 6, 4), "{s:?}");
}

/// Handles of timers parked beyond the horizon, moved to another thread
/// after their thread exited: that thread cancels every other one (each
/// due at the same deadline as a kept one), and drops the rest of the
/// handles. The kept ones fire on time; the cancelled ones never run.
#[test]
fn parked_handles_moved_to_another_thread_are_cancelled_there_beside_kept_ones() {
    let timers = TimerService::new();
    let (tx, rx) = mpsc::channel();
    let dropped = Arc::new(AtomicUsize::new(0));
    let victims_ran = Arc::new(AtomicUsize::new(0));
    let handles: Vec<(bool, TimerHandle)> = thread::spawn({
        let timers = timers.clone();
        let (dropped, victims_ran) = (dropped.clone(), victims_ran.clone());
        move || {
            let mut handles = Vec::new();
            for k in 0..10u64 {
                let deadline = Instant::now() + HORIZON + ms(200 + 10 * k);
                let keep = timers
                    .schedule_at(deadline, report_to(&tx, k as usize, deadline))
                    .unwrap();
                let counted = Counted(dropped.clone());
                let ran = victims_ran.clone();
                let victim = timers
                    .schedule_at(deadline, move || {
                        let _counted = counted;
                        ran.fetch_add(1, SeqCst);
                    })
                    .unwrap();
                handles.push((true, keep));
                handles.push((false, victim));
            }
            handles
        }
    })
    .join()
    .unwrap();
    thread::spawn({
        let dropped = dropped.clone();
        move || {
            for (n, (keep, handle)) in handles.into_iter().enumerate() {
                if !keep {
                    assert!(handle.cancel(), "victim {n} could not be cancelled");
                    assert_eq!(dropped.load(SeqCst), n / 2 + 1, "dropped at once");
                }
            }
        }
    })
    .join()
    .unwrap();
    collect_on_time(&rx, 10, LATE_BOUND);
    thread::sleep(ms(30));
    assert_eq!(victims_ran.load(SeqCst), 0, "a cancelled timer ran");
    assert_eq!(dropped.load(SeqCst), 10);
    assert_eq!(timers.pending(), 0);
    let s = timers.stats();
    assert_eq!((s.scheduled, s.fired, s.cancelled), (20, 10, 10), "{s:?}");
}

/// A sleep parked an hour out on a thread that then exits, moved to another
/// thread that resets it again and again: far, to a deadline passed, a few
/// milliseconds ahead, farther still. After each far reset it is waiting;
/// after each reset to a passed deadline it is complete. At last it is
/// reset far, stays waiting through several horizons, then is reset 300 ms
/// ahead and completes then, never before, woken by the driver.
#[test]
fn a_parked_sleep_reset_back_and_forth_on_another_thread_ends_at_its_last_deadline() {
    let timers = TimerService::new();
    let (_wakes, waker) = counting_waker();
    let sleep = thread::spawn({
        let timers = timers.clone();
        move || {
            let mut sleep = timers.sleep(HOUR);
            assert!(poll_once(&mut sleep, &waker).is_pending());
            sleep
        }
    })
    .join()
    .unwrap();
    assert_eq!(timers.pending(), 1);
    let mover = thread::spawn(move || {
        let mut sleep = sleep;
        for i in 0..400 {
            match i % 4 {
                0 => {
                    sleep.reset(Instant::now() + HOUR);
                    assert!(
                        !sleep.is_elapsed(),
                        "reset {i}: complete though an hour out"
                    );
                }
                1 => {
                    sleep.reset(Instant::now());
                    assert!(sleep.is_elapsed(), "reset {i}: passed, yet not complete");
                }
                2 => sleep.reset(Instant::now() + ms(3)),
                _ => {
                    sleep.reset(Instant::now() + 24 * HOUR);
                    assert!(!sleep.is_elapsed(), "reset {i}: complete though a day out");
                }
            }
            if i % 16 == 0 {
                // Let the driver fire some of the passed ones.
                thread::sleep(ms(1));
            }
        }
        sleep.reset(Instant::now() + HOUR);
        for _ in 0..3 {
            thread::sleep(HORIZON);
            assert!(!sleep.is_elapsed(), "complete though an hour out");
        }
        let deadline = Instant::now() + HORIZON + ms(200);
        sleep.reset(deadline);
        let done = wait_out(&mut sleep, deadline);
        assert!(done <= deadline + LATE_BOUND, "{:?} late", done - deadline);
        sleep
    });
    let sleep = mover.join().unwrap();
    assert!(sleep.is_elapsed());
    assert_eq!(timers.pending(), 0);
    drop(sleep);
    assert_eq!(timers.pending(), 0);
    assert!(wait_until(|| {
        let s = timers.stats();
        s.scheduled == s.fired + s.cancelled
    }));
    assert_adds_up(&timers.stats(), "after the resets");
}

/// A sleep made on a thread that exits before it is ever polled; another
/// thread polls it first (it parks in its maker's spot, through the
/// maker's lane), moves it later, then a few milliseconds ahead: it wakes
/// that task on time. Re-armed an hour out after it fired, then reset to a
/// deadline passed, it is fired again at once and the task woken again.
#[test]
fn a_sleep_first_polled_after_its_maker_exited_is_moved_and_woken_on_time() {
    let timers = TimerService::new();
    let sleep = thread::spawn({
        let timers = timers.clone();
        move || timers.sleep(HOUR)
    })
    .join()
    .unwrap();
    thread::spawn({
        let timers = timers.clone();
        move || {
            let mut sleep = sleep;
            let (wakes, waker) = counting_waker();
            assert!(poll_once(&mut sleep, &waker).is_pending());
            assert_eq!(timers.pending(), 1);
            sleep.reset(Instant::now() + 2 * HOUR);
            thread::sleep(HORIZON + ms(20));
            let deadline = Instant::now() + ms(20);
            sleep.reset(deadline);
            assert!(wait_until(|| wakes.count() == 1), "never woken");
            let woken = Instant::now();
            assert!(woken >= deadline, "woken {:?} early", deadline - woken);
            assert!(
                woken <= deadline + LATE_BOUND,
                "{:?} late",
                woken - deadline
            );
            assert!(poll_once(&mut sleep, &waker).is_ready());
            // Re-armed after it fired: counted again, then fired at once.
            sleep.reset(Instant::now() + HOUR);
            assert!(poll_once(&mut sleep, &waker).is_pending());
            assert_eq!(timers.pending(), 1);
            sleep.reset(Instant::now());
            assert!(sleep.is_elapsed());
            assert!(wait_until(|| wakes.count() == 2), "not woken again");
            assert!(poll_once(&mut sleep, &waker).is_ready());
            assert_eq!(timers.pending(), 0);
        }
    })
    .join()
    .unwrap();
    assert_eq!(timers.pending(), 0);
    let s = timers.stats();
    assert_eq!((s.scheduled, s.fired, s.cancelled), (2, 2, 0), "{s:?}");
}

/// Callbacks due just past the horizon (100 to 110 ms out), when the
/// driver's sweep takes them, cancelled 0 to 3 ms after they are made, on
/// four threads at once: each cancel that wins means the callback never
/// ran, each that loses means it ran, once, never early; and the counts add
/// up exactly.
#[test]
fn cancels_racing_the_sweep_at_the_horizon_settle_each_timer_once() {
    const THREADS: usize = 4;
    const EACH: usize = 150;
    let timers = TimerService::new();
    let early = Arc::new(AtomicUsize::new(0));
    let threads: Vec<_> = (0..THREADS)
        .map(|t| {
            let (timers, early) = (timers.clone(), early.clone());
            thread::spawn(move || {
                let mut rng = common::XorShift::new(t as u64 + 1);
                let mut settled = Vec::new();
                for _ in 0..EACH {
                    let deadline = Instant::now() + HORIZON + ms(rng.below(11));
                    let ran = Arc::new(AtomicUsize::new(0));
                    let handle = timers
                        .schedule_at(deadline, {
                            let (ran, early) = (ran.clone(), early.clone());
                            move || {
                                if Instant::now() < deadline {
                                    early.fetch_add(1, SeqCst);
                                }
                                ran.fetch_add(1, SeqCst);
                            }
                        })
                        .unwrap();
                    match rng.below(4) {
                        0 => {}
                        1 => thread::yield_now(),
                        n => thread::sleep(Duration::from_micros(700 * n)),
                    }
                    let won = rng.below(10) < 9 && handle.cancel();
                    settled.push((won, ran, handle));
                }
                settled
            })
        })
        .collect();
    let settled: Vec<_> = threads
        .into_iter()
        .flat_map(|t| t.join().unwrap())
        .collect();
    let cancelled = settled.iter().filter(|(won, _, _)| *won).count();
    assert!(
        wait_until(|| settled.iter().all(|(won, _, h)| *won || h.is_fired())),
        "a timer neither cancelled nor fired"
    );
    // Let any wrongly fired cancelled callback show itself.
    thread::sleep(ms(30));
    for (won, ran, handle) in &settled {
        let ran = ran.load(SeqCst);
        if *won {
            assert_eq!(ran, 0, "a cancelled callback ran");
            assert!(handle.is_cancelled());
        } else {
            assert!(wait_until(|| ran == 1), "ran {ran} times");
        }
    }
    assert_eq!(early.load(SeqCst), 0, "callbacks fired early");
    assert!(wait_until(|| timers.pending() == 0), "{}", timers.pending());
    let s = timers.stats();
    let total = (THREADS * EACH) as u64;
    assert_eq!(
        (s.scheduled, s.cancelled, s.fired),
        (total, cancelled as u64, total - cancelled as u64),
        "{s:?}"
    );
}

/// Sleeps parked an hour out, each thread keeping a ring of them, reset
/// again and again at random, on the thread they were moved to: to a
/// deadline passed, 1 to 150 ms ahead (around the horizon), or an hour
/// ahead. No sleep is ever complete before its last deadline; at the end
/// those due soon complete on time, woken by the driver; those an hour out
/// stay waiting; and the counts add up.
#[test]
fn sleeps_reset_at_random_around_the_horizon_on_other_threads_are_never_early() {
    const THREADS: usize = 3;
    const RING: usize = 8;
    const RESETS: usize = 600;
    let timers = TimerService::new();
    let rings = sleep_rings(&timers, THREADS, RING);
    let movers: Vec<_> = rings
        .into_iter()
        .enumerate()
        .map(|(t, mut ring)| {
            thread::spawn(move || {
                let mut rng = common::XorShift::new(100 + t as u64);
                let mut last: Vec<Instant> = vec![Instant::now() + HOUR; RING];
                for n in 0..RESETS {
                    let i = rng.below(RING as u64) as usize;
                    let now = Instant::now();
                    let deadline = match rng.below(5) {
                        0 => now,
                        1 => now + HOUR,
                        _ => now + ms(1 + rng.below(150)),
                    };
                    ring[i].reset(deadline);
                    last[i] = deadline;
                    if deadline <= now {
                        assert!(ring[i].is_elapsed());
                    }
                    for (sleep, due) in ring.iter().zip(&last) {
                        if sleep.is_elapsed() {
                            let now = Instant::now();
                            assert!(now >= *due, "complete {:?} early", *due - now);
                        }
                    }
                    if n % 8 == 0 {
                        thread::sleep(Duration::from_micros(300));
                    }
                }
                let mut waited = 0;
                for (sleep, due) in ring.iter_mut().zip(&last) {
                    if *due > Instant::now() + HOUR / 2 {
                        assert!(!sleep.is_elapsed(), "complete an hour early");
                        continue;
                    }
                    let done = wait_out(sleep, *due);
                    assert!(done <= *due + LATE_BOUND, "{:?} late", done - *due);
                    waited += 1;
                }
                (ring, waited)
            })
        })
        .collect();
    let mut kept = Vec::new();
    for mover in movers {
        let (ring, _) = mover.join().unwrap();
        kept.extend(ring);
    }
    let waiting = kept.iter().filter(|s| !s.is_elapsed()).count();
    assert_eq!(timers.pending(), waiting);
    drop(kept);
    assert_eq!(timers.pending(), 0);
    assert!(wait_until(|| {
        let s = timers.stats();
        s.scheduled == s.fired + s.cancelled
    }));
    assert_adds_up(&timers.stats(), "random resets");
}

/// Callbacks run on a new thread each (a callback executor), and each
/// schedules the next hop beyond the horizon before its thread exits: every
/// hop is parked in the spot of a thread that is gone by the time it is
/// due, and still fires on time, never early. Beside the chain, a callback
/// drops a handle without cancelling it: its timer, parked with no handle
/// left, fires all the same.
#[test]
fn hops_parked_by_short_lived_executor_threads_fire_on_time() {
    let timers = TimerService::builder()
        .callback_executor(|task| drop(thread::spawn(task)))
        .build()
        .unwrap();
    let (tx, rx) = mpsc::channel();
    chain(&timers, 0, 4, HORIZON + ms(120), tx.clone());
    {
        let (next, tx) = (timers.clone(), tx.clone());
        timers
            .schedule(ms(10), move || {
                let deadline = Instant::now() + HORIZON + ms(200);
                drop(next.schedule_at(deadline, report_to(&tx, 50, deadline)));
            })
            .unwrap();
    }
    drop(tx);
    let seen = collect_on_time(&rx, 5, LATE_BOUND);
    assert_eq!(seen, (0..4).chain([50]).collect());
    assert!(wait_until(|| timers.pending() == 0));
    let s = timers.stats();
    assert_eq!((s.scheduled, s.fired, s.cancelled), (6, 6, 0), "{s:?}");
}

/// A callback holds the driver for 300 ms. Meanwhile another thread parks
/// callbacks due inside the round's horizon, past it but before the
/// callback lets go, and long after; and resets a sleep parked an hour out
/// to a deadline passed. None is lost to the driver's being awake (nobody
/// wakes it) with a horizon gone stale: each fires, never early, the ones
/// due during the block as soon as it ends, the later one on time, and the
/// sleep's task is woken once the callback lets go.
#[test]
fn timers_parked_while_a_callback_holds_the_driver_are_not_lost() {
    let timers = TimerService::new();
    let (blocking_tx, blocking) = mpsc::channel();
    let released = Arc::new(Mutex::new(None));
    {
        let released = released.clone();
        timers
            .schedule(ms(10), move || {
                blocking_tx.send(()).unwrap();
                thread::sleep(ms(300));
                *released.lock().unwrap() = Some(Instant::now());
            })
            .unwrap();
    }
    let (wakes, waker) = counting_waker();
    let mut sleep = timers.sleep(HOUR);
    assert!(poll_once(&mut sleep, &waker).is_pending());
    blocking.recv_timeout(REPORT_PATIENCE).unwrap();
    let (tx, rx) = mpsc::channel();
    let mut sleep = thread::spawn({
        let timers = timers.clone();
        move || {
            for (id, after) in [(0, 40), (1, 150), (2, 600)] {
                let deadline = Instant::now() + ms(after);
                timers
                    .schedule_at(deadline, report_to(&tx, id, deadline))
                    .unwrap();
            }
            sleep.reset(Instant::now());
            sleep
        }
    })
    .join()
    .unwrap();
    let mut reports: Vec<_> = (0..3)
        .map(|_| rx.recv_timeout(REPORT_PATIENCE).expect("a timer was lost"))
        .collect();
    reports.sort_by_key(|r| r.0);
    let released = released.lock().unwrap().expect("the callback ended");
    for (id, deadline, at) in reports {
        assert!(at >= deadline, "timer {id} fired early");
        let due = deadline.max(released);
        assert!(at <= due + LATE_BOUND, "timer {id}: {:?} late", at - due);
    }
    assert!(wait_until(|| wakes.count() == 1), "the sleep's task");
    assert!(poll_once(&mut sleep, &waker).is_ready());
    assert_eq!(timers.pending(), 0);
}

/// A `DelayQueue` made on a thread that exits, moved to another: its one
/// sleep is armed (and parked) 450 ms out, beyond the horizon; items
/// inserted earlier afterwards move that parked sleep earlier, twice. Every
/// item comes out on time, in deadline order, never early.
#[test]
fn a_delay_queue_moves_its_parked_sleep_earlier_on_another_thread() {
    let timers = TimerService::new();
    let queue = thread::spawn({
        let timers = timers.clone();
        move || wheel_sync::DelayQueue::<usize>::with_service(&timers)
    })
    .join()
    .unwrap();
    thread::spawn(move || {
        let mut queue = queue;
        let start = Instant::now();
        let mut deadlines = vec![start + HORIZON + ms(350)];
        queue.insert_at(0, deadlines[0]);
        assert!(poll_once(&mut std::pin::pin!(queue.next_expired()), Waker::noop()).is_pending());
        for (id, after) in [(1, 250), (2, 180), (3, 300)] {
            let deadline = start + ms(after);
            queue.insert_at(id, deadline);
            deadlines.push(deadline);
            let polled = poll_once(&mut std::pin::pin!(queue.next_expired()), Waker::noop());
            assert!(polled.is_pending());
        }
        let mut out = Vec::new();
        while out.len() < deadlines.len() {
            let expired = block_on(queue.next_expired()).expect("an item");
            let at = Instant::now();
            let id = expired.into_inner();
            assert!(at >= deadlines[id], "item {id} came out early");
            assert!(at <= deadlines[id] + LATE_BOUND, "item {id}: late");
            out.push(id);
        }
        assert_eq!(out, [2, 1, 3, 0]);
        assert!(block_on(queue.next_expired()).is_none());
    })
    .join()
    .unwrap();
    assert_eq!(timers.pending(), 0);
}

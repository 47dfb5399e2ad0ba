//! Trying to break the driver's horizon at shutdown: explicit or by the
//! last clone's drop, with timers parked far out by many threads, some
//! racing it; every timer fired, cancelled or counted unfired.
#![cfg(not(loom))]

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::{mpsc, Arc, Barrier, Mutex};
use std::task::Waker;
use std::thread;
use std::time::{Duration, Instant};

use wheel_sync::{ScheduleError, ShutdownError, Sleep, TimerHandle, TimerService};

mod common;
use common::horizon::*;
use common::patiently::wait_until;
use common::{counting_waker, ms, poll_once, CountingWaker, HOUR};

/// A thread's share of `shutdown_with_far_parked_timers_from_many_threads`.
struct Parked {
    handles: Vec<TimerHandle>,
    sleeps: Vec<(Sleep, Arc<CountingWaker>)>,
    unpolled: Sleep,
}

/// Twelve threads park far callbacks (some cancelled at once), far sleeps
/// and detached callbacks; half exit, half block. The shutdown accounts for
/// every one: `unfired` is exactly what was pending, every closure is
/// dropped, every handle says cancelled, every waiting task is woken, and
/// `Stats` adds up. Then the sleeps behave as documented: one that was
/// waiting, or never polled, panics when polled; one reset to a deadline
/// passed completes; and the blocked threads, released, are refused.
#[test]
fn shutdown_with_far_parked_timers_from_many_threads_accounts_for_each() {
    const THREADS: usize = 12;
    const KEPT: usize = 20;
    const CANCELLED: usize = 5;
    const SLEEPS: usize = 3;
    const DETACHED: usize = 2;
    let timers = TimerService::new();
    let dropped = Arc::new(AtomicUsize::new(0));
    let (tx, rx) = mpsc::channel();
    let (go_tx, go_rx) = mpsc::channel::<()>();
    let go_rx = Arc::new(Mutex::new(go_rx));
    let threads: Vec<_> = (0..THREADS)
        .map(|i| {
            let (timers, dropped, tx, go) =
                (timers.clone(), dropped.clone(), tx.clone(), go_rx.clone());
            thread::spawn(move || {
                let callback = |delay| {
                    let counted = Counted(dropped.clone());
                    timers.schedule(delay, move || drop(counted)).unwrap()
                };
                let handles: Vec<_> = (0..KEPT).map(|k| callback(HOUR + ms(k as u64))).collect();
                for k in 0..CANCELLED {
                    assert!(callback(Duration::from_secs(2 + k as u64)).cancel());
                }
                for _ in 0..DETACHED {
                    let counted = Counted(dropped.clone());
                    timers
                        .schedule_detached(HOUR, move || drop(counted))
                        .unwrap();
                }
                let sleeps = (0..SLEEPS)
                    .map(|k| {
                        let (wakes, waker) = counting_waker();
                        let mut sleep = timers.sleep(Duration::from_secs(5 + k as u64));
                        assert!(poll_once(&mut sleep, &waker).is_pending());
                        (sleep, wakes)
                    })
                    .collect();
                let unpolled = timers.sleep(HOUR);
                tx.send(Parked {
                    handles,
                    sleeps,
                    unpolled,
                })
                .unwrap();
                if i % 2 == 1 {
                    // Blocked until after the shutdown.
                    go.lock().unwrap().recv().unwrap();
                    let refused = timers.schedule(ms(1), || ());
                    assert_eq!(refused.unwrap_err(), ScheduleError::Shutdown);
                    let detached = timers.schedule_detached(ms(1), || ());
                    assert_eq!(detached.unwrap_err(), ScheduleError::Shutdown);
                    assert!(timers.sleep(HOUR).is_shut_down());
                    let mut done = timers.sleep(Duration::ZERO);
                    assert!(poll_once(&mut done, Waker::noop()).is_ready());
                }
            })
        })
        .collect();
    drop(tx);
    let parked: Vec<Parked> = rx.iter().take(THREADS).collect();
    let pending = THREADS * (KEPT + SLEEPS + DETACHED);
    assert_eq!(timers.pending(), pending);
    assert_eq!(dropped.load(SeqCst), THREADS * CANCELLED);
    let report = timers.shutdown().unwrap();
    assert_eq!(report.unfired, pending, "{report:?}");
    assert_eq!(
        dropped.load(SeqCst),
        THREADS * (KEPT + CANCELLED + DETACHED),
        "closures outlived the shutdown"
    );
    assert_eq!(timers.pending(), 0);
    let s = timers.stats();
    let scheduled = (THREADS * (KEPT + CANCELLED + SLEEPS + DETACHED)) as u64;
    assert_eq!(
        (s.scheduled, s.fired, s.cancelled),
        (scheduled, 0, (THREADS * CANCELLED) as u64),
        "{s:?}"
    );
    assert_eq!(s.scheduled, s.fired + s.cancelled + report.unfired as u64);
    for _ in 0..THREADS / 2 {
        go_tx.send(()).unwrap();
    }
    for thread in threads {
        thread.join().unwrap();
    }
    for (t, mut p) in parked.into_iter().enumerate() {
        for handle in &p.handles {
            assert!(handle.is_cancelled() && !handle.is_fired());
            assert!(!handle.cancel());
        }
        for (k, (sleep, wakes)) in p.sleeps.iter_mut().enumerate() {
            assert!(wakes.count() >= 1, "thread {t} sleep {k}: not woken");
            assert!(sleep.is_shut_down() && !sleep.is_elapsed());
            if k == 0 {
                // Reset to a deadline passed: it completes.
                sleep.reset(Instant::now());
                assert!(!sleep.is_shut_down());
                assert!(poll_once(sleep, Waker::noop()).is_ready());
            } else {
                let polled = catch_unwind(AssertUnwindSafe(|| poll_once(sleep, Waker::noop())));
                assert!(
                    polled.is_err(),
                    "thread {t} sleep {k}: polled without a panic"
                );
            }
        }
        assert!(p.unpolled.is_shut_down());
        let polled = catch_unwind(AssertUnwindSafe(|| {
            poll_once(&mut p.unpolled, Waker::noop())
        }));
        assert!(polled.is_err(), "thread {t}: the unpolled sleep completed");
    }
    assert_eq!(timers.pending(), 0);
    assert_eq!(
        timers.stats().scheduled,
        scheduled,
        "a refusal stayed counted"
    );
    assert_eq!(
        timers.shutdown().unwrap_err(),
        ShutdownError::AlreadyShutDown
    );
}

/// Threads each park far callbacks and sleeps, drop their clone of the
/// service and exit; the last clone, moved to yet another thread, is
/// dropped there. Once that drop returns, every closure is dropped, every
/// handle says cancelled, every sleep is shut down and its task woken.
/// Then a callback drops the last clone of a second service, from the
/// driver, with far timers parked by exited threads: they are abandoned too.
#[test]
fn dropping_the_last_clone_with_far_parked_timers_from_exited_threads_ends_each() {
    let dropped = Arc::new(AtomicUsize::new(0));
    let timers = TimerService::new();
    type Share = (Vec<TimerHandle>, Vec<(Sleep, Arc<CountingWaker>)>);
    let shares: Vec<Share> = (0..6)
        .map(|_| {
            let (timers, dropped) = (timers.clone(), dropped.clone());
            thread::spawn(move || {
                let handles = (0..10)
                    .map(|k| {
                        let counted = Counted(dropped.clone());
                        let delay = Duration::from_secs(2 + k);
                        timers.schedule(delay, move || drop(counted)).unwrap()
                    })
                    .collect();
                let sleeps = (0..2)
                    .map(|_| {
                        let (wakes, waker) = counting_waker();
                        let mut sleep = timers.sleep(HOUR);
                        assert!(poll_once(&mut sleep, &waker).is_pending());
                        (sleep, wakes)
                    })
                    .collect();
                drop(timers);
                (handles, sleeps)
            })
        })
        .collect::<Vec<_>>()
        .into_iter()
        .map(|t| t.join().unwrap())
        .collect();
    assert_eq!(timers.pending(), 6 * 12);
    thread::spawn(move || drop(timers)).join().unwrap();
    assert_eq!(dropped.load(SeqCst), 60, "closures outlived the last clone");
    for (handles, sleeps) in &shares {
        assert!(handles.iter().all(|h| h.is_cancelled() && !h.cancel()));
        for (sleep, wakes) in sleeps {
            assert!(sleep.is_shut_down());
            assert!(wakes.count() >= 1, "a waiting task was not woken");
        }
    }
    drop(shares);

    // The last clone dropped by a callback, on the driver's thread.
    let dropped = Arc::new(AtomicUsize::new(0));
    let timers = TimerService::new();
    let handles: Vec<TimerHandle> = thread::spawn({
        let (timers, dropped) = (timers.clone(), dropped.clone());
        move || {
            (0..10)
                .map(|_| {
                    let counted = Counted(dropped.clone());
                    timers.schedule(HOUR, move || drop(counted)).unwrap()
                })
                .collect()
        }
    })
    .join()
    .unwrap();
    let last = Mutex::new(Some(timers.clone()));
    let ender = timers
        .schedule(HORIZON + ms(50), move || drop(last.lock().unwrap().take()))
        .unwrap();
    drop(timers);
    assert!(
        wait_until(|| dropped.load(SeqCst) == 10),
        "far parked closures outlived a service ended from a callback: {} dropped",
        dropped.load(SeqCst)
    );
    assert!(ender.is_fired());
    assert!(handles.iter().all(|h| h.is_cancelled() && !h.cancel()));
}

/// More threads than spots (80) park far callbacks and sleeps in a loop,
/// cancelling some, while the main thread shuts the service down: every
/// schedule is refused or accounted for (fired never, cancelled by its
/// thread, or unfired), every closure accepted is dropped by the time the
/// shutdown returns, and every sleep left waiting is shut down and woken.
#[test]
fn a_shutdown_racing_more_threads_than_spots_parking_far_timers_loses_nothing() {
    const THREADS: usize = 80;
    let timers = TimerService::new();
    let dropped = Arc::new(AtomicUsize::new(0));
    let started = Arc::new(Barrier::new(THREADS + 1));
    let threads: Vec<_> = (0..THREADS)
        .map(|i| {
            let (timers, dropped, started) = (timers.clone(), dropped.clone(), started.clone());
            thread::spawn(move || {
                let (mut accepted, mut cancelled) = (0usize, 0usize);
                let mut sleeps = Vec::new();
                let mut refused_sleeps = 0usize;
                let mut handles = Vec::new();
                started.wait();
                for n in 0.. {
                    let counted = Counted(dropped.clone());
                    match timers.schedule(HOUR + ms(n), move || drop(counted)) {
                        Ok(handle) => {
                            accepted += 1;
                            if (n + i as u64) % 3 == 0 {
                                if handle.cancel() {
                                    cancelled += 1;
                                }
                            } else {
                                handles.push(handle);
                            }
                        }
                        Err(e) => {
                            assert_eq!(e, ScheduleError::Shutdown);
                            break;
                        }
                    }
                    if n % 4 == 0 && sleeps.len() < 16 {
                        let (wakes, waker) = counting_waker();
                        let mut sleep = timers.sleep(HOUR);
                        match catch_unwind(AssertUnwindSafe(|| poll_once(&mut sleep, &waker))) {
                            Ok(polled) => {
                                assert!(polled.is_pending());
                                sleeps.push((sleep, wakes));
                            }
                            Err(_) => refused_sleeps += 1,
                        }
                    }
                    if n % 64 == 63 {
                        thread::yield_now();
                    }
                }
                (accepted, cancelled, handles, sleeps, refused_sleeps)
            })
        })
        .collect();
    started.wait();
    thread::sleep(ms(150));
    let report = timers.shutdown().unwrap();
    let closures_at_shutdown = dropped.load(SeqCst);
    let (mut accepted, mut cancelled, mut waiting, mut refused) = (0, 0, 0, 0);
    let mut results = Vec::new();
    for thread in threads {
        let (a, c, handles, sleeps, r) = thread.join().unwrap();
        accepted += a;
        cancelled += c;
        waiting += sleeps.len();
        refused += r;
        results.push((handles, sleeps));
    }
    // Each thread's one refused closure is dropped too, perhaps before the
    // read at shutdown.
    assert!(
        closures_at_shutdown >= accepted,
        "closures outlived the shutdown: {closures_at_shutdown} of {accepted}"
    );
    assert_eq!(dropped.load(SeqCst), accepted + THREADS);
    assert_eq!(
        report.unfired,
        accepted - cancelled + waiting,
        "{report:?}, accepted {accepted}, cancelled {cancelled}, sleeps {waiting}, refused {refused}"
    );
    for (handles, sleeps) in &results {
        assert!(handles.iter().all(|h| h.is_cancelled() && !h.is_fired()));
        for (sleep, wakes) in sleeps {
            assert!(sleep.is_shut_down());
            assert!(wakes.count() >= 1, "a waiting task was not woken");
        }
    }
    assert_eq!(timers.pending(), 0);
    let s = timers.stats();
    assert_eq!(s.fired, 0);
    assert_eq!(s.scheduled, (accepted + waiting) as u64, "{s:?}");
    assert_eq!(s.scheduled, s.cancelled + report.unfired as u64, "{s:?}");
}

/// Sleeps parked an hour out by threads that exit, then reset again and
/// again (a deadline passed, a few ms ahead, an hour ahead) on other
/// threads while the main thread shuts the service down: afterwards each
/// sleep is either complete or shut down (and then panics when polled),
/// none is left waiting, and `scheduled` is exactly what fired, was
/// cancelled or went unfired.
#[test]
fn a_shutdown_while_parked_sleeps_are_reset_on_other_threads_accounts_for_each() {
    const THREADS: usize = 4;
    const RING: usize = 8;
    let timers = TimerService::new();
    let rings = sleep_rings(&timers, THREADS, RING);
    let stop = Arc::new(AtomicBool::new(false));
    let movers: Vec<_> = rings
        .into_iter()
        .enumerate()
        .map(|(t, mut ring)| {
            let stop = stop.clone();
            thread::spawn(move || {
                let mut rng = common::XorShift::new(300 + t as u64);
                while !stop.load(SeqCst) {
                    let i = rng.below(RING as u64) as usize;
                    let now = Instant::now();
                    ring[i].reset(match rng.below(3) {
                        0 => now,
                        1 => now + ms(1 + rng.below(5)),
                        _ => now + HOUR,
                    });
                    if rng.below(16) == 0 {
                        thread::sleep(Duration::from_micros(200));
                    }
                }
                // Away from the passed deadlines: a sleep reset to one is
                // complete, whatever the shutdown did.
                for sleep in &mut ring {
                    sleep.reset(Instant::now() + HOUR);
                }
                ring
            })
        })
        .collect();
    thread::sleep(ms(120));
    let report = timers.shutdown().unwrap();
    stop.store(true, SeqCst);
    let sleeps: Vec<Sleep> = movers.into_iter().flat_map(|m| m.join().unwrap()).collect();
    assert_eq!(timers.pending(), 0);
    for mut sleep in sleeps {
        assert!(sleep.is_shut_down(), "{sleep:?}");
        let polled = catch_unwind(AssertUnwindSafe(|| poll_once(&mut sleep, Waker::noop())));
        assert!(
            polled.is_err(),
            "a shut-down sleep was polled without a panic"
        );
    }
    let s = timers.stats();
    assert_eq!(
        s.scheduled,
        s.fired + s.cancelled + report.unfired as u64,
        "{s:?} {report:?}"
    );
    assert_eq!(s.cancelled, 0);
    assert!(report.unfired <= THREADS * RING, "{report:?}");
}

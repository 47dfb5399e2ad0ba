//! Trying to break the horizon: timers parked in their thread's spot far
//! beyond the driver's horizon (100 ms on a real clock), by threads that
//! exit, block, or hand the handle or `Sleep` to another thread that
//! cancels or resets it; more threads than spots; shutdowns with such
//! timers parked; a manual clock stepped over timers parked by several
//! threads; and user code (callbacks, wakers, closures' drops) calling back
//! into the service from the driver or from a cancel.
#![cfg(not(loom))]

use std::collections::HashSet;
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::{mpsc, Arc, Barrier, Mutex};
use std::task::Waker;
use std::thread;
use std::time::{Duration, Instant};

use wheel_sync::{ScheduleError, ShutdownError, Sleep, TimerHandle, TimerService};

mod common;
use common::patiently::wait_until;
use common::{
    assert_adds_up, block_on, counting_waker, drop_flag, manual, ms, on_wake, poll_once, report_to,
    CountingWaker, HOUR, LATE_BOUND,
};

/// The driver's horizon on a real clock (`RECLAIM_EVERY`).
const HORIZON: Duration = Duration::from_millis(100);
/// How long a test waits for one report before it calls the timer lost.
const REPORT_PATIENCE: Duration = Duration::from_secs(3);
const YEAR: Duration = Duration::from_secs(365 * 24 * 3600);

/// Receives `n` reports `(id, deadline, fired_at)`, each never early and at
/// most `slack` late, each id once; returns the ids.
fn collect_on_time(
    rx: &mpsc::Receiver<(usize, Instant, Instant)>,
    n: usize,
    slack: Duration,
) -> HashSet<usize> {
    let mut seen = HashSet::new();
    for i in 0..n {
        let (id, deadline, at) = rx
            .recv_timeout(REPORT_PATIENCE)
            .unwrap_or_else(|e| panic!("report {i} of {n} never came: {e:?}"));
        assert!(at >= deadline, "timer {id} fired {:?} early", deadline - at);
        assert!(
            at <= deadline + slack,
            "timer {id} fired {:?} late",
            at - deadline
        );
        assert!(seen.insert(id), "timer {id} fired twice");
    }
    seen
}

/// Counts its drops.
struct Counted(Arc<AtomicUsize>);

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_add(1, SeqCst);
    }
}

/// Runs a closure as it is dropped.
struct OnDrop(Option<Box<dyn FnOnce() + Send>>);

impl Drop for OnDrop {
    fn drop(&mut self) {
        if let Some(f) = self.0.take() {
            f();
        }
    }
}

/// Panics as it is dropped.
struct PanicOnDrop;

impl Drop for PanicOnDrop {
    fn drop(&mut self) {
        panic!("PanicOnDrop");
    }
}

/// Polls `sleep` until it completes, woken by the driver (never by a busy
/// loop), and checks it never completes before `deadline`; returns when.
fn wait_out(sleep: &mut Sleep, deadline: Instant) -> Instant {
    block_on(std::future::poll_fn(|cx| {
        let polled = std::pin::Pin::new(&mut *sleep).poll(cx);
        if polled.is_ready() {
            let now = Instant::now();
            assert!(now >= deadline, "completed {:?} early", deadline - now);
        }
        polled
    }));
    Instant::now()
}

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

/// More threads than spots (100 on 64), all at once: each parks far
/// callbacks and sleeps and near callbacks, cancels half its far callbacks,
/// and cancels the other half of those of the thread 64 after it (which
/// shares its spot), while its own are cancelled by the thread 64 before.
/// Afterwards the counts are exact: every far callback's closure dropped
/// by its cancel, the near ones fired once on time, the sleeps kept still
/// pending, and `Stats` adds up before and after they go.
#[test]
fn more_threads_than_spots_park_and_cancel_with_exact_accounting() {
    const THREADS: usize = 100;
    const FAR: usize = 8;
    const NEAR: usize = 2;
    const SLEEPS: usize = 4;
    let timers = TimerService::new();
    let barrier = Arc::new(Barrier::new(THREADS));
    let exchange: Arc<Vec<Mutex<Vec<TimerHandle>>>> =
        Arc::new((0..THREADS).map(|_| Mutex::new(Vec::new())).collect());
    let dropped = Arc::new(AtomicUsize::new(0));
    let (tx, rx) = mpsc::channel();
    let threads: Vec<_> = (0..THREADS)
        .map(|i| {
            let (timers, barrier, exchange) = (timers.clone(), barrier.clone(), exchange.clone());
            let (dropped, tx) = (dropped.clone(), tx.clone());
            thread::spawn(move || {
                barrier.wait();
                let mut far: Vec<TimerHandle> = (0..FAR)
                    .map(|_| {
                        let counted = Counted(dropped.clone());
                        timers.schedule(HOUR, move || drop(counted)).unwrap()
                    })
                    .collect();
                let near: Vec<TimerHandle> = (0..NEAR)
                    .map(|k| {
                        let deadline = Instant::now() + HORIZON + ms(100 + (i % 50) as u64);
                        let id = i * NEAR + k;
                        timers
                            .schedule_at(deadline, report_to(&tx, id, deadline))
                            .unwrap()
                    })
                    .collect();
                let mut sleeps: Vec<Sleep> = (0..SLEEPS)
                    .map(|_| {
                        let mut sleep = timers.sleep(HOUR);
                        assert!(poll_once(&mut sleep, Waker::noop()).is_pending());
                        sleep
                    })
                    .collect();
                for handle in far.drain(..FAR / 2) {
                    assert!(handle.cancel(), "thread {i}: own cancel lost");
                }
                *exchange[i].lock().unwrap() = far;
                barrier.wait();
                let theirs = std::mem::take(&mut *exchange[(i + 64) % THREADS].lock().unwrap());
                assert_eq!(theirs.len(), FAR / 2);
                for handle in theirs {
                    assert!(handle.cancel(), "thread {i}: a neighbour's cancel lost");
                    assert!(!handle.cancel());
                }
                sleeps.truncate(SLEEPS / 2);
                (near, sleeps)
            })
        })
        .collect();
    drop(tx);
    let mut kept_sleeps = Vec::new();
    let mut near = Vec::new();
    for thread in threads {
        let (n, s) = thread.join().unwrap();
        near.extend(n);
        kept_sleeps.extend(s);
    }
    assert_eq!(
        dropped.load(SeqCst),
        THREADS * FAR,
        "closures left undropped"
    );
    let seen = collect_on_time(&rx, THREADS * NEAR, LATE_BOUND);
    assert_eq!(seen.len(), THREADS * NEAR);
    assert!(near.iter().all(TimerHandle::is_fired));
    let kept = THREADS * SLEEPS / 2;
    assert_eq!(timers.pending(), kept, "{:?}", timers.stats());
    let s = timers.stats();
    let total = (THREADS * (FAR + NEAR + SLEEPS)) as u64;
    let cancelled = (THREADS * (FAR + SLEEPS / 2)) as u64;
    assert_eq!(
        (s.scheduled, s.fired, s.cancelled, s.pending),
        (total, (THREADS * NEAR) as u64, cancelled, kept),
        "{s:?}"
    );
    assert!(kept_sleeps.iter().all(|s| !s.is_elapsed()));
    drop(kept_sleeps);
    assert_eq!(timers.pending(), 0);
    let s = timers.stats();
    assert_eq!(s.cancelled, cancelled + kept as u64, "{s:?}");
    assert_adds_up(&s, "more threads than spots");
}

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

/// A manual clock stepped over timers parked by several threads that then
/// exited: `advance` by zero and by less than a tick fires nothing not due;
/// each `advance_to_next` lands on a deadline and, when it returns, exactly
/// the timers due by then have fired, in deadline order, and the sleeps due
/// by then are complete; years-long timers fire at their year; a deadline
/// the clock cannot count stays pending through a 200-year advance.
#[test]
fn a_manual_clock_steps_over_timers_parked_by_several_threads() {
    let timers = manual();
    let start = timers.now();
    let fired = Arc::new(Mutex::new(Vec::<(usize, Instant)>::new()));
    let (sleep_tx, sleep_rx) = mpsc::channel();
    let mut deadlines = Vec::new();
    for t in 0..4usize {
        for k in 0..6usize {
            deadlines.push((t * 100 + k, start + ms(1 + 7 * k as u64 + t as u64)));
        }
        deadlines.push((t * 100 + 50, start + YEAR * (t as u32 + 1)));
    }
    let threads: Vec<_> = (0..4usize)
        .map(|t| {
            let (timers, fired, sleep_tx) = (timers.clone(), fired.clone(), sleep_tx.clone());
            let mine: Vec<_> = deadlines
                .iter()
                .copied()
                .filter(|(id, _)| id / 100 == t)
                .collect();
            thread::spawn(move || {
                for (id, deadline) in mine {
                    let fired = fired.clone();
                    timers
                        .schedule_at(deadline, move || {
                            fired.lock().unwrap().push((id, deadline));
                        })
                        .unwrap();
                }
                timers.schedule(Duration::MAX, || panic!("never")).unwrap();
                let deadline = start + ms(3 + 10 * t as u64);
                let (wakes, waker) = counting_waker();
                let mut sleep = timers.sleep_until(deadline);
                assert!(poll_once(&mut sleep, &waker).is_pending());
                sleep_tx.send((deadline, sleep, wakes)).unwrap();
            })
        })
        .collect();
    drop(sleep_tx);
    threads.into_iter().for_each(|t| t.join().unwrap());
    let mut sleeps: Vec<_> = sleep_rx.iter().collect();
    let total = deadlines.len() + 4 + sleeps.len();
    assert_eq!(timers.pending(), total);

    let check = |sleeps: &mut Vec<(Instant, Sleep, Arc<CountingWaker>)>, what: &str| {
        let now = timers.now();
        let fired = fired.lock().unwrap();
        let due: HashSet<usize> = deadlines
            .iter()
            .filter(|(_, d)| *d <= now)
            .map(|(id, _)| *id)
            .collect();
        let got: HashSet<usize> = fired.iter().map(|(id, _)| *id).collect();
        assert_eq!(got.len(), fired.len(), "{what}: a timer fired twice");
        assert_eq!(got, due, "{what}: at {:?}", now - start);
        assert!(
            fired.windows(2).all(|w| w[0].1 <= w[1].1),
            "{what}: out of deadline order: {fired:?}"
        );
        for (deadline, sleep, wakes) in sleeps.iter_mut() {
            let passed = *deadline <= now;
            assert_eq!(sleep.is_elapsed(), passed, "{what}: a sleep");
            assert_eq!(wakes.count() == 1, passed, "{what}: a sleep's wakes");
            let waker = Waker::from(wakes.clone());
            assert_eq!(poll_once(sleep, &waker).is_ready(), passed);
        }
    };
    timers.advance(Duration::ZERO).unwrap();
    check(&mut sleeps, "advance(0)");
    timers.advance(Duration::from_nanos(1)).unwrap();
    check(&mut sleeps, "advance(1 ns)");
    timers.advance(Duration::from_nanos(999_998)).unwrap();
    check(&mut sleeps, "advance to 1 ms less 1 ns");
    timers.advance(Duration::from_nanos(1)).unwrap();
    assert_eq!(timers.now() - start, ms(1));
    check(&mut sleeps, "advance to 1 ms");
    let mut steps = 0;
    while let Some(moved) = timers.advance_to_next().unwrap() {
        steps += 1;
        assert!(steps < 100, "advance_to_next does not end");
        let now = timers.now();
        assert!(
            deadlines.iter().any(|(_, d)| *d == now) || sleeps.iter().any(|(d, _, _)| *d == now),
            "moved {moved:?} to {:?}, no deadline",
            now - start
        );
        check(&mut sleeps, "advance_to_next");
    }
    assert_eq!(timers.now() - start, YEAR * 4);
    assert_eq!(fired.lock().unwrap().len(), deadlines.len());
    assert_eq!(timers.pending(), 4, "only the four that never come");
    timers.advance(YEAR * 200).unwrap();
    assert_eq!(timers.pending(), 4);
    assert_eq!(timers.advance_to_next().unwrap(), None);
    let s = timers.stats();
    assert_eq!(s.fired, (total - 4) as u64, "{s:?}");
    assert_eq!(s.panicked, 0);
    assert_adds_up(&s, "manual clock");
}

/// On a manual clock, callbacks parked by several threads due now fire in
/// an `advance` by zero; those a nanosecond out (a tick out, rounded up)
/// fire neither then nor in an advance to a nanosecond short of that tick,
/// only in the one that reaches it.
#[test]
fn advances_by_zero_and_by_less_than_a_tick_fire_exactly_what_is_due() {
    let timers = manual();
    let now_count = Arc::new(AtomicUsize::new(0));
    let later_count = Arc::new(AtomicUsize::new(0));
    let threads: Vec<_> = (0..3)
        .map(|_| {
            let timers = timers.clone();
            let (now_count, later_count) = (now_count.clone(), later_count.clone());
            thread::spawn(move || {
                for _ in 0..3 {
                    let c = now_count.clone();
                    timers
                        .schedule(Duration::ZERO, move || {
                            c.fetch_add(1, SeqCst);
                        })
                        .unwrap();
                    let c = later_count.clone();
                    timers
                        .schedule(Duration::from_nanos(1), move || {
                            c.fetch_add(1, SeqCst);
                        })
                        .unwrap();
                }
                let (wakes, waker) = counting_waker();
                let mut sleep = timers.sleep(Duration::from_nanos(1));
                assert!(poll_once(&mut sleep, &waker).is_pending());
                (sleep, wakes)
            })
        })
        .collect();
    let sleeps: Vec<_> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    timers.advance(Duration::ZERO).unwrap();
    assert_eq!(now_count.load(SeqCst), 9);
    assert_eq!(later_count.load(SeqCst), 0);
    timers.advance(Duration::from_nanos(999_999)).unwrap();
    assert_eq!(later_count.load(SeqCst), 0, "fired before its tick");
    assert!(sleeps
        .iter()
        .all(|(s, w)| !s.is_elapsed() && w.count() == 0));
    timers.advance(Duration::from_nanos(1)).unwrap();
    assert_eq!(later_count.load(SeqCst), 9);
    assert!(sleeps.iter().all(|(s, w)| s.is_elapsed() && w.count() == 1));
    assert_eq!(timers.pending(), 0);
    assert_eq!(timers.stats().fired, 21);
}

/// Schedules `hops` callbacks one after another, each `delay` after the
/// one before ran, from inside it (on the driver thread, parked in the
/// driver's own spot, with no other timer pending); each reports its id,
/// deadline and when it ran.
fn chain(
    timers: &TimerService,
    base: usize,
    hops: usize,
    delay: Duration,
    tx: mpsc::Sender<(usize, Instant, Instant)>,
) {
    if hops == 0 {
        return;
    }
    let deadline = Instant::now() + delay;
    let next = timers.clone();
    timers
        .schedule_at(deadline, move || {
            let _ = tx.send((base, deadline, Instant::now()));
            chain(&next, base + 1, hops - 1, delay, tx);
        })
        .unwrap();
}

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

/// A coarse tick (250 ms, longer than the horizon) and a fine one (1 µs):
/// callbacks parked beyond the horizon by a thread that exits fire never
/// early, and no later than a tick plus the usual slack.
#[test]
fn parked_timers_beyond_the_horizon_on_coarse_and_fine_ticks() {
    for tick in [ms(250), Duration::from_micros(1)] {
        let timers = TimerService::builder().tick(tick).build().unwrap();
        let (tx, rx) = mpsc::channel();
        thread::spawn({
            let timers = timers.clone();
            move || {
                for (k, after) in [260, 330, 470, 610].into_iter().enumerate() {
                    let deadline = Instant::now() + ms(after);
                    timers
                        .schedule_at(deadline, report_to(&tx, k, deadline))
                        .unwrap();
                }
            }
        })
        .join()
        .unwrap();
        collect_on_time(&rx, 4, tick + LATE_BOUND);
        assert_eq!(timers.pending(), 0, "tick {tick:?}");
    }
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

/// More threads than spots (130) each hold a clone of the service, make
/// and drop clones of it in a loop and park a far timer, while a clone on
/// the main thread is kept: the service never ends early (every schedule is
/// accepted, every far timer still pending); once the kept clone goes too,
/// it ends, and every parked closure is dropped.
#[test]
fn clone_churn_on_more_threads_than_spots_never_ends_the_service_early() {
    const THREADS: usize = 130;
    let dropped = Arc::new(AtomicUsize::new(0));
    let keeper = TimerService::new();
    let barrier = Arc::new(Barrier::new(THREADS));
    let threads: Vec<_> = (0..THREADS)
        .map(|_| {
            let (timers, dropped, barrier) = (keeper.clone(), dropped.clone(), barrier.clone());
            thread::spawn(move || {
                barrier.wait();
                let counted = Counted(dropped.clone());
                let handle = timers.schedule(HOUR, move || drop(counted)).unwrap();
                for _ in 0..50 {
                    let a = timers.clone();
                    let b = a.clone();
                    drop(a);
                    let counted = Counted(dropped.clone());
                    assert!(b.schedule(HOUR, move || drop(counted)).unwrap().cancel());
                    drop(b);
                }
                drop(timers);
                handle
            })
        })
        .collect();
    let handles: Vec<TimerHandle> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    assert_eq!(dropped.load(SeqCst), THREADS * 50, "only the cancelled");
    assert!(handles.iter().all(|h| !h.is_cancelled() && !h.is_fired()));
    assert_eq!(keeper.pending(), THREADS);
    let probe = keeper.schedule(ms(1), || ());
    assert!(probe.is_ok(), "the service ended with a clone left");
    drop(keeper);
    assert_eq!(dropped.load(SeqCst), THREADS * 51);
    assert!(handles.iter().all(|h| h.is_cancelled()));
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

/// Requests answered in any order on more threads than spots (100 threads,
/// so spots are shared): each thread keeps two in flight, an hour out, and
/// ends one at random as it makes the next. The driver is handed next to
/// none of them (a spot's threads keep few places taken, and a park looks
/// at eight); the counts are exact.
#[test]
fn requests_answered_in_any_order_on_shared_spots_stay_off_the_driver() {
    const THREADS: usize = 100;
    const REQUESTS: usize = 200;
    let timers = TimerService::new();
    let barrier = Arc::new(Barrier::new(THREADS));
    let threads: Vec<_> = (0..THREADS)
        .map(|t| {
            let (timers, barrier) = (timers.clone(), barrier.clone());
            thread::spawn(move || {
                let mut rng = common::XorShift::new(7 + t as u64);
                barrier.wait();
                let mut in_flight: Vec<TimerHandle> = Vec::new();
                let mut sleeps: Vec<Sleep> = Vec::new();
                for n in 0..REQUESTS {
                    if n % 2 == 0 {
                        in_flight.push(timers.schedule(HOUR, || unreachable!()).unwrap());
                    } else {
                        let mut sleep = timers.sleep(HOUR);
                        assert!(poll_once(&mut sleep, Waker::noop()).is_pending());
                        sleeps.push(sleep);
                    }
                    if in_flight.len() + sleeps.len() > 2 {
                        let i = rng.below(3) as usize;
                        if i < in_flight.len() {
                            assert!(in_flight.swap_remove(i).cancel());
                        } else {
                            drop(sleeps.swap_remove(i - in_flight.len()));
                        }
                    }
                }
                for handle in in_flight {
                    assert!(handle.cancel());
                }
            })
        })
        .collect();
    threads.into_iter().for_each(|t| t.join().unwrap());
    assert_eq!(timers.pending(), 0);
    let s = timers.stats();
    let total = (THREADS * REQUESTS) as u64;
    assert_eq!(
        (s.scheduled, s.cancelled, s.fired),
        (total, total, 0),
        "{s:?}"
    );
    assert!(
        s.max_filed_per_round <= 16,
        "the driver filed {} in a round: {s:?}",
        s.max_filed_per_round
    );
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

/// `threads` rings of `ring` sleeps an hour out, each ring made and first
/// polled (parked) on a thread of its own that has ended since.
fn sleep_rings(timers: &TimerService, threads: usize, ring: usize) -> Vec<Vec<Sleep>> {
    let makers: Vec<_> = (0..threads)
        .map(|_| {
            let timers = timers.clone();
            thread::spawn(move || {
                (0..ring)
                    .map(|_| {
                        let mut sleep = timers.sleep(HOUR);
                        assert!(poll_once(&mut sleep, Waker::noop()).is_pending());
                        sleep
                    })
                    .collect()
            })
        })
        .collect();
    makers.into_iter().map(|t| t.join().unwrap()).collect()
}

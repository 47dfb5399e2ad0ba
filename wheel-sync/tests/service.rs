//! The promises of wheel-sync's `TimerService`, one group of tests each:
//! never early, exactly once, `pending()` and `max_pending`, caught panics,
//! re-entrant callbacks, shutdown, no stray threads, stalls, the
//! `Sleep`/`Timeout` futures under three executors, parking, and detached
//! callbacks.
//!
//! The machine is shared and noisy: tests wait on conditions with generous
//! bounded timeouts, never on fixed sleeps, and only lateness has (loose)
//! upper bounds. "Never early" is checked strictly against an `Instant`
//! taken before the timer was scheduled.
#![cfg(not(loom))]

use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::{pin, Pin};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::{mpsc, Arc, Barrier, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::thread;
use std::time::{Duration, Instant};

use wheel_sync::{ScheduleError, ShutdownError, TimerHandle, TimerService};

mod common;
use common::{counting_waker, CountingWaker, XorShift};

/// How long any condition may take to come true before a test gives up.
const PATIENCE: Duration = Duration::from_secs(10);
/// Lateness that still counts as sane on a loaded two-core machine.
const LATE_BOUND: Duration = Duration::from_millis(500);
/// "Never", as far as a test is concerned.
const HOUR: Duration = Duration::from_secs(3600);

/// Polls `cond` until it holds or `PATIENCE` runs out; returns whether it held.
fn wait_until(cond: impl FnMut() -> bool) -> bool {
    common::wait_until(PATIENCE, cond)
}

/// Sets its flag when dropped: proves a callback's closure was released.
struct DropFlag(Arc<AtomicBool>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, SeqCst);
    }
}

fn drop_flag() -> (DropFlag, Arc<AtomicBool>) {
    let flag = Arc::new(AtomicBool::new(false));
    (DropFlag(flag.clone()), flag)
}

fn poll_once<F: Future + Unpin>(future: &mut F, waker: &Waker) -> Poll<F::Output> {
    Pin::new(future).poll(&mut Context::from_waker(waker))
}

/// Wakes a thread parked in [`block_on`].
struct Unparker(thread::Thread);

impl Wake for Unparker {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
}

/// The smallest executor: poll, park until woken. It never polls without a
/// wake-up (bar spurious unparks), so a lost wake-up hangs until `PATIENCE`
/// and fails instead of being papered over by busy polling.
fn block_on<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    let waker = Waker::from(Arc::new(Unparker(thread::current())));
    let mut cx = Context::from_waker(&waker);
    let give_up = Instant::now() + PATIENCE;
    loop {
        if let Poll::Ready(output) = future.as_mut().poll(&mut cx) {
            return output;
        }
        let now = Instant::now();
        assert!(now < give_up, "block_on: not woken within {PATIENCE:?}");
        thread::park_timeout(give_up - now);
    }
}

/// A driver thread name no other test uses (Linux keeps 15 bytes of it).
fn unique_thread_name() -> String {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    format!("ws-svc-{}", NEXT.fetch_add(1, SeqCst))
}

/// A service whose driver thread has a name no other test uses, and the name.
fn named_service() -> (String, TimerService) {
    let name = unique_thread_name();
    let timers = TimerService::builder()
        .thread_name(name.clone())
        .build()
        .unwrap();
    (name, timers)
}

/// Threads of this process named `name`.
#[cfg(target_os = "linux")]
fn threads_named(name: &str) -> usize {
    std::fs::read_dir("/proc/self/task")
        .expect("/proc/self/task")
        .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("comm")).ok())
        .filter(|comm| comm.trim_end() == name)
        .count()
}

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

/// A callback that records when it ran, for never-early checks.
fn report_to(
    tx: &mpsc::Sender<(usize, Instant, Instant)>,
    id: usize,
    deadline: Instant,
) -> impl FnOnce() + Send + 'static {
    let tx = tx.clone();
    move || {
        let now = Instant::now();
        let _ = tx.send((id, deadline, now));
    }
}

// ---------------------------------------------------------------------------
// 1. Never early; late by about a tick under light load.
// ---------------------------------------------------------------------------

#[test]
fn callbacks_never_fire_early() {
    let delays_us = [0, 50, 300, 999, 1_000, 1_500, 3_300, 7_000, 13_000, 25_000];
    for tick in [
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

/// `n` sleeps until `deadline`, each polled once (pending) with a counting
/// waker of its own.
fn polled_once(
    timers: &TimerService,
    deadline: Instant,
    n: usize,
) -> Vec<(Pin<Box<wheel_sync::Sleep>>, Arc<CountingWaker>)> {
    (0..n)
        .map(|_| {
            let (count, waker) = counting_waker();
            let mut sleep = Box::pin(timers.sleep_until(deadline));
            assert!(poll_once(&mut sleep, &waker).is_pending());
            (sleep, count)
        })
        .collect()
}

#[test]
fn sleeps_fired_in_one_round_are_all_woken_though_none_is_polled_again() {
    // One deadline, so one round fires them all: the driver wakes one and
    // hands the others to it. Polled once each and never again, none can
    // take the batch: the driver must wake them itself.
    let timers = TimerService::new();
    let deadline = Instant::now() + Duration::from_millis(20);
    let mut sleeps = polled_once(&timers, deadline, 64);
    assert!(
        wait_until(|| sleeps.iter().all(|(_, count)| count.count() == 1)),
        "woken: {} of 64",
        sleeps.iter().filter(|(_, count)| count.count() > 0).count()
    );
    assert!(Instant::now() >= deadline);
    for (sleep, count) in &mut sleeps {
        let waker = Waker::from(count.clone());
        assert!(poll_once(sleep, &waker).is_ready());
    }
    assert_eq!(timers.pending(), 0);
}

/// Panics when woken.
struct PanicsOnWake;

impl Wake for PanicsOnWake {
    fn wake(self: Arc<Self>) {
        panic!("this waker panics");
    }
}

#[test]
fn a_panicking_waker_is_counted_and_the_driver_carries_on() {
    let timers = TimerService::new();
    let bad = Waker::from(Arc::new(PanicsOnWake));
    let mut alone = Box::pin(timers.sleep(Duration::from_millis(1)));
    assert!(poll_once(&mut alone, &bad).is_pending());
    assert!(wait_until(|| timers.stats().panicked == 1));
    // In a round with others, whoever wakes it: they are all still woken.
    let deadline = Instant::now() + Duration::from_millis(20);
    let mut with_others = Box::pin(timers.sleep_until(deadline));
    assert!(poll_once(&mut with_others, &bad).is_pending());
    let others = polled_once(&timers, deadline, 8);
    assert!(wait_until(|| others
        .iter()
        .all(|(_, count)| count.count() == 1)));
    assert!(wait_until(|| timers.stats().panicked == 2));
    block_on(timers.sleep(Duration::from_millis(1)));
    assert_eq!(timers.stats().fired, 11);
}

// ---------------------------------------------------------------------------
// 2. Exactly once: cancel() is true iff the callback never runs.
// ---------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------
// 3. pending() and max_pending.
// ---------------------------------------------------------------------------

#[test]
fn pending_counts_every_live_timer() {
    let timers = TimerService::new();
    assert_eq!(timers.pending(), 0);
    let callback = timers.schedule(HOUR, || ()).unwrap();
    let at = timers.schedule_at(Instant::now() + HOUR, || ()).unwrap();
    let sleep = timers.sleep(HOUR);
    let sleep_until = timers.sleep_until(Instant::now() + HOUR);
    let timeout = timers.timeout(HOUR, std::future::pending::<()>());
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
    let first = timers.sleep(HOUR);
    let second = timers.timeout(HOUR, std::future::pending::<()>());
    assert_eq!(timers.pending(), 2);
    assert_eq!(
        timers.schedule(HOUR, || ()).unwrap_err(),
        ScheduleError::TooManyPending { limit: 2 }
    );
    let third = timers.sleep(HOUR);
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

// ---------------------------------------------------------------------------
// 4. Panicking callbacks.
// ---------------------------------------------------------------------------

#[test]
fn panicking_callback_is_caught_and_counted() {
    let timers = TimerService::new();
    let (tx, rx) = mpsc::channel();
    timers
        .schedule(Duration::from_millis(1), || {
            panic!("expected test panic: a timer callback")
        })
        .unwrap();
    timers
        .schedule(Duration::from_millis(2), || std::panic::panic_any(42_u32))
        .unwrap();
    timers
        .schedule(Duration::from_millis(20), move || tx.send(()).unwrap())
        .unwrap();
    rx.recv_timeout(PATIENCE)
        .expect("the driver stopped after a callback panicked");
    assert!(
        wait_until(|| timers.stats().fired == 3),
        "{:?}",
        timers.stats()
    );
    let stats = timers.stats();
    assert_eq!(stats.panicked, 2, "{stats:?}");
    // And it keeps going.
    let (tx, rx) = mpsc::channel();
    timers
        .schedule(Duration::ZERO, move || tx.send(()).unwrap())
        .unwrap();
    rx.recv_timeout(PATIENCE).unwrap();
}

// ---------------------------------------------------------------------------
// 5. Re-entrant callbacks.
// ---------------------------------------------------------------------------

#[test]
fn callback_schedules_a_timer_that_fires() {
    let timers = TimerService::new();
    let (tx, rx) = mpsc::channel();
    let inner = timers.clone();
    let start = Instant::now();
    timers
        .schedule(Duration::from_millis(1), move || {
            let deadline = Instant::now() + Duration::from_millis(5);
            inner
                .schedule_at(deadline, move || {
                    tx.send((deadline, Instant::now())).unwrap()
                })
                .unwrap();
        })
        .unwrap();
    let (deadline, fired_at) = rx
        .recv_timeout(PATIENCE)
        .expect("a timer scheduled from a callback never fired");
    assert!(fired_at >= deadline && deadline >= start + Duration::from_millis(6));
}

#[test]
fn callback_cancels_a_pending_timer() {
    let timers = TimerService::new();
    let victim_ran = Arc::new(AtomicBool::new(false));
    let ran = victim_ran.clone();
    let victim = timers
        .schedule(Duration::from_millis(100), move || ran.store(true, SeqCst))
        .unwrap();
    let (tx, rx) = mpsc::channel();
    timers
        .schedule(Duration::from_millis(1), move || {
            let won = victim.cancel();
            tx.send((won, victim.is_cancelled())).unwrap();
        })
        .unwrap();
    let (sentinel_tx, sentinel_rx) = mpsc::channel();
    timers
        .schedule(Duration::from_millis(150), move || {
            sentinel_tx.send(()).unwrap()
        })
        .unwrap();
    assert_eq!(rx.recv_timeout(PATIENCE).unwrap(), (true, true));
    // The sentinel's deadline is after the victim's: once it fires, the victim had its chance.
    sentinel_rx.recv_timeout(PATIENCE).unwrap();
    assert!(!victim_ran.load(SeqCst), "a cancelled timer fired");
}

#[test]
fn shutdown_from_a_callback_is_refused() {
    let timers = TimerService::new();
    let (tx, rx) = mpsc::channel();
    let inner = timers.clone();
    timers
        .schedule(Duration::ZERO, move || tx.send(inner.shutdown()).unwrap())
        .unwrap();
    let result = rx
        .recv_timeout(PATIENCE)
        .expect("shutdown from a callback deadlocked");
    assert_eq!(result.unwrap_err(), ShutdownError::FromCallback);
    // The service is untouched.
    let (tx, rx) = mpsc::channel();
    timers
        .schedule(Duration::ZERO, move || tx.send(()).unwrap())
        .unwrap();
    rx.recv_timeout(PATIENCE).unwrap();
    assert!(timers.shutdown().is_ok());
}

#[test]
fn callback_dropping_the_last_handle_ends_the_driver() {
    let (name, timers) = named_service();
    let (guard, far_dropped) = drop_flag();
    drop(timers.schedule(HOUR, move || drop(guard)).unwrap());

    let (go_tx, go_rx) = mpsc::channel::<()>();
    let (done_tx, done_rx) = mpsc::channel();
    let last = timers.clone();
    let handle = timers
        .schedule(Duration::ZERO, move || {
            // Wait until every other handle is gone, so this one is the last.
            let _ = go_rx.recv_timeout(PATIENCE);
            drop(last);
            done_tx.send(()).unwrap();
        })
        .unwrap();
    drop(handle);
    drop(timers);
    go_tx.send(()).unwrap();
    done_rx
        .recv_timeout(PATIENCE)
        .expect("dropping the last handle in a callback deadlocked");
    assert!(
        wait_until(|| far_dropped.load(SeqCst)),
        "the driver did not end: an unfired callback was never dropped"
    );
    #[cfg(target_os = "linux")]
    assert!(
        wait_until(|| threads_named(&name) == 0),
        "driver thread {name} still alive"
    );
}

// ---------------------------------------------------------------------------
// 6. Shutdown.
// ---------------------------------------------------------------------------

#[test]
fn shutdown_drops_pending_callbacks_unrun() {
    let timers = TimerService::new();
    let (tx, rx) = mpsc::channel();
    timers
        .schedule(Duration::ZERO, move || tx.send(()).unwrap())
        .unwrap();
    rx.recv_timeout(PATIENCE).unwrap();

    let ran = Arc::new(AtomicBool::new(false));
    let mut dropped = Vec::new();
    let mut handles = Vec::new();
    for delay in [Duration::from_secs(2), Duration::from_secs(20), HOUR] {
        let (guard, flag) = drop_flag();
        let ran = ran.clone();
        handles.push(
            timers
                .schedule(delay, move || {
                    let _guard = guard;
                    ran.store(true, SeqCst);
                })
                .unwrap(),
        );
        dropped.push(flag);
    }
    let report = timers.shutdown().unwrap();
    assert_eq!(report.unfired, 3, "{report:?}");
    for (i, flag) in dropped.iter().enumerate() {
        assert!(
            flag.load(SeqCst),
            "callback {i} was not dropped by shutdown"
        );
    }
    for handle in &handles {
        assert!(handle.is_cancelled() && !handle.is_fired(), "{handle:?}");
        assert!(!handle.cancel(), "cancel after shutdown returned true");
    }
    assert_eq!(timers.pending(), 0);
    assert_eq!(timers.stats().fired, 1);
    // The driver is joined: had shutdown run any of them, it ran early.
    assert!(
        !ran.load(SeqCst),
        "shutdown ran a callback before its deadline"
    );

    assert_eq!(
        timers.schedule(Duration::ZERO, || ()).unwrap_err(),
        ScheduleError::Shutdown
    );
    assert_eq!(
        timers.schedule_at(Instant::now(), || ()).unwrap_err(),
        ScheduleError::Shutdown
    );
    assert_eq!(
        timers.shutdown().unwrap_err(),
        ShutdownError::AlreadyShutDown
    );
    assert_eq!(
        timers.clone().shutdown().unwrap_err(),
        ShutdownError::AlreadyShutDown
    );
}

#[test]
fn sleep_pending_at_shutdown_is_woken_and_panics_when_polled() {
    let timers = TimerService::new();
    let mut sleep = timers.sleep(HOUR);
    let mut timeout = timers.timeout(HOUR, std::future::pending::<()>());
    let mut ready_timeout = timers.timeout(HOUR, std::future::ready(5));
    let (sleep_wakes, sleep_waker) = counting_waker();
    let (timeout_wakes, timeout_waker) = counting_waker();
    assert!(poll_once(&mut sleep, &sleep_waker).is_pending());
    assert!(poll_once(&mut timeout, &timeout_waker).is_pending());

    let report = timers.shutdown().unwrap();
    assert_eq!(report.unfired, 3, "{report:?}");
    assert_eq!(
        sleep_wakes.count(),
        1,
        "the Sleep's task was not woken by shutdown"
    );
    assert_eq!(
        timeout_wakes.count(),
        1,
        "the Timeout's task was not woken by shutdown"
    );
    assert!(sleep.is_shut_down() && !sleep.is_elapsed(), "{sleep:?}");
    assert_eq!(timers.pending(), 0);

    let polled = catch_unwind(AssertUnwindSafe(|| poll_once(&mut sleep, Waker::noop())));
    assert!(polled.is_err(), "polling a shut-down Sleep must panic");
    let polled = catch_unwind(AssertUnwindSafe(|| poll_once(&mut timeout, Waker::noop())));
    assert!(polled.is_err(), "polling a shut-down Timeout must panic");
    // Its inner future is ready, so it has an honest answer.
    assert_eq!(
        poll_once(&mut ready_timeout, Waker::noop()),
        Poll::Ready(Ok(5))
    );
}

#[test]
fn sleep_made_after_shutdown_reports_it() {
    let timers = TimerService::new();
    timers.shutdown().unwrap();
    let mut sleep = timers.sleep(Duration::from_millis(1));
    assert!(sleep.is_shut_down());
    assert_eq!(timers.pending(), 0);
    let polled = catch_unwind(AssertUnwindSafe(|| poll_once(&mut sleep, Waker::noop())));
    assert!(
        polled.is_err(),
        "polling a Sleep made after shutdown must panic"
    );
}

#[test]
fn reset_after_shutdown_keeps_pending_at_zero() {
    let timers = TimerService::new();
    let mut sleep = timers.sleep(Duration::ZERO);
    block_on(&mut sleep);
    assert!(sleep.is_elapsed());
    assert_eq!(timers.pending(), 0);
    timers.shutdown().unwrap();
    sleep.reset(Instant::now() + Duration::from_secs(1));
    assert!(sleep.is_shut_down(), "{sleep:?}");
    assert_eq!(timers.pending(), 0, "reset of a fired Sleep after shutdown");
}

// ---------------------------------------------------------------------------
// 7. No thread outlives the service.
// ---------------------------------------------------------------------------

#[cfg(target_os = "linux")]
#[test]
fn no_driver_thread_outlives_the_service() {
    let name = unique_thread_name();
    assert_eq!(threads_named(&name), 0);
    let timers = TimerService::builder()
        .thread_name(name.clone())
        .build()
        .unwrap();
    assert!(wait_until(|| threads_named(&name) == 1));
    let handle = timers.schedule(HOUR, || ()).unwrap();
    let sleep = timers.sleep(HOUR);
    drop(timers.clone());
    drop(timers);
    drop(handle);
    // The Sleep still holds the service.
    assert_eq!(threads_named(&name), 1);
    let started = Instant::now();
    drop(sleep);
    let took = started.elapsed();
    assert!(
        took < Duration::from_secs(2),
        "dropping the last handle took {took:?}"
    );
    assert!(
        wait_until(|| threads_named(&name) == 0),
        "driver thread {name} outlived the service"
    );

    let (name, timers) = named_service();
    assert!(wait_until(|| threads_named(&name) == 1));
    timers.shutdown().unwrap();
    assert!(
        wait_until(|| threads_named(&name) == 0),
        "driver thread {name} outlived shutdown"
    );
}

#[test]
fn dropping_the_last_handle_is_prompt_and_drops_unfired_callbacks() {
    let timers = TimerService::new();
    let (guard, dropped) = drop_flag();
    let handle = timers.schedule(HOUR, move || drop(guard)).unwrap();
    let other = timers.clone();
    drop(timers);
    drop(handle);
    assert!(!dropped.load(SeqCst), "dropped while a handle was left");
    let started = Instant::now();
    drop(other);
    let took = started.elapsed();
    assert!(
        took < Duration::from_secs(2),
        "dropping the last handle took {took:?}"
    );
    assert!(
        dropped.load(SeqCst),
        "the unfired callback outlived the service"
    );
}

/// Each clone counts its own handles; a handle made through a clone keeps
/// the service running after every `TimerService` value is gone.
#[cfg(target_os = "linux")]
#[test]
fn a_handle_made_through_a_clone_keeps_the_service_alive() {
    let (name, timers) = named_service();
    let clone = timers.clone();
    let (tx, rx) = mpsc::channel();
    let handle = clone
        .schedule(Duration::from_millis(20), move || tx.send(()).unwrap())
        .unwrap();
    let sleep = timers.clone().sleep(Duration::from_millis(40));
    drop(clone);
    drop(timers);
    rx.recv_timeout(PATIENCE)
        .expect("the handle alone did not keep the driver running");
    assert!(handle.is_fired());
    block_on(sleep);
    assert_eq!(threads_named(&name), 1);
    drop(handle);
    assert!(
        wait_until(|| threads_named(&name) == 0),
        "the driver outlived its last handle"
    );
}

/// A pending `Sleep` is a handle: its entry sits in the driver's wheel,
/// but only the `Sleep` holds the service, so the driver runs while the
/// `Sleep` lives and ends when it drops.
#[cfg(target_os = "linux")]
#[test]
fn a_pending_sleep_is_a_handle_until_it_drops() {
    let (name, timers) = named_service();
    let sleep = timers.sleep(HOUR);
    // Filed in the wheel, so the driver holds the entry too.
    assert!(wait_until(|| timers.stats().scheduled == 1));
    drop(timers);
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(threads_named(&name), 1, "the sleep alone keeps it running");
    assert!(!sleep.is_shut_down());
    drop(sleep);
    assert!(
        wait_until(|| threads_named(&name) == 0),
        "the driver outlived the last Sleep"
    );
}

// ---------------------------------------------------------------------------
// 8. Clock robustness: a stalled driver catches up.
// ---------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------
// 9. Sleep and Timeout.
// ---------------------------------------------------------------------------

#[test]
fn sleep_wakes_only_the_latest_waker() {
    let timers = TimerService::new();
    let mut sleep = timers.sleep(HOUR);
    let (a, waker_a) = counting_waker();
    let (b, waker_b) = counting_waker();
    assert!(poll_once(&mut sleep, &waker_a).is_pending());
    assert!(poll_once(&mut sleep, &waker_b).is_pending());
    sleep.reset(Instant::now() + Duration::from_millis(2));
    assert!(
        wait_until(|| b.count() > 0),
        "the latest waker was never woken"
    );
    assert!(sleep.is_elapsed());
    assert_eq!(a.count(), 0, "a replaced waker was woken");
    assert_eq!(b.count(), 1);
    assert_eq!(poll_once(&mut sleep, &waker_a), Poll::Ready(()));
}

#[test]
fn reset_moves_a_sleep_earlier_and_later() {
    let timers = TimerService::new();

    let mut sleep = timers.sleep(HOUR);
    let soon = Instant::now() + Duration::from_millis(10);
    sleep.reset(soon);
    assert_eq!(sleep.deadline(), soon);
    block_on(&mut sleep);
    assert!(Instant::now() >= soon, "reset earlier: done early");

    let mut sleep = timers.sleep(Duration::from_millis(20));
    let later = Instant::now() + Duration::from_millis(120);
    sleep.reset(later);
    block_on(&mut sleep);
    assert!(
        Instant::now() >= later,
        "reset later: done at the old deadline"
    );
    assert_eq!(timers.pending(), 0);
}

#[test]
fn reset_after_fire_rearms() {
    let timers = TimerService::new();
    let mut sleep = timers.sleep(Duration::from_millis(1));
    block_on(&mut sleep);
    assert!(sleep.is_elapsed());
    assert_eq!(timers.pending(), 0);

    sleep.reset(Instant::now() + HOUR);
    assert!(!sleep.is_elapsed(), "reset must re-arm a fired Sleep");
    assert_eq!(timers.pending(), 1, "a re-armed Sleep counts again");
    assert!(poll_once(&mut sleep, Waker::noop()).is_pending());

    let again = Instant::now() + Duration::from_millis(5);
    sleep.reset(again);
    block_on(&mut sleep);
    assert!(Instant::now() >= again, "the re-armed Sleep fired early");
    assert_eq!(timers.pending(), 0);
    assert!(
        wait_until(|| timers.stats().fired == 2),
        "{:?}",
        timers.stats()
    );
}

#[test]
fn timeout_ok_when_the_future_wins_err_when_time_wins() {
    let timers = TimerService::new();
    assert_eq!(block_on(timers.timeout(HOUR, async { 7 })), Ok(7));
    let inner = timers.sleep(Duration::from_millis(5));
    assert_eq!(block_on(timers.timeout(HOUR, inner)), Ok(()));

    let deadline = Instant::now() + Duration::from_millis(20);
    let timeout = timers.timeout(Duration::from_millis(20), std::future::pending::<()>());
    assert!(timeout.deadline() >= deadline);
    let elapsed = block_on(timeout).unwrap_err();
    assert!(Instant::now() >= deadline, "the timeout elapsed early");
    assert_eq!(elapsed.to_string(), "deadline has elapsed");

    // A ready future wins even over a deadline that has passed.
    assert_eq!(block_on(timers.timeout(Duration::ZERO, async { 1 })), Ok(1));
    assert_eq!(timers.pending(), 0);
}

#[test]
fn timeout_at_keeps_its_deadline_and_lets_a_ready_future_win() {
    let timers = TimerService::new();
    let deadline = Instant::now() + Duration::from_millis(15);
    let timeout = timers.timeout_at(deadline, std::future::pending::<()>());
    assert_eq!(timeout.deadline(), deadline);
    assert_eq!(timers.pending(), 1);
    assert!(block_on(timeout).is_err());
    assert!(Instant::now() >= deadline, "the timeout elapsed early");

    let past = Instant::now() - Duration::from_millis(1);
    assert_eq!(block_on(timers.timeout_at(past, async { 2 })), Ok(2));
    assert!(block_on(timers.timeout_at(past, std::future::pending::<()>())).is_err());

    let mut timeout = timers.timeout_at(Instant::now() + HOUR, std::future::ready(5));
    *timeout.get_mut() = std::future::ready(6);
    assert_eq!(block_on(timeout), Ok(6), "get_mut reaches the inner future");
    assert_eq!(timers.pending(), 0);
}

#[test]
fn dropping_sleep_and_timeout_cancels_them() {
    let timers = TimerService::new();
    let mut sleep = timers.sleep(HOUR);
    let mut timeout = timers.timeout(HOUR, std::future::pending::<()>());
    assert!(poll_once(&mut sleep, Waker::noop()).is_pending());
    assert!(poll_once(&mut timeout, Waker::noop()).is_pending());
    assert!(wait_until(|| timers.stats().scheduled == 2));
    assert_eq!(timers.pending(), 2);
    drop(sleep);
    drop(timeout);
    assert_eq!(timers.pending(), 0, "dropping must count out at once");
    assert!(
        wait_until(|| timers.stats().cancelled == 2),
        "dropped futures never counted as cancelled: {:?}",
        timers.stats()
    );
}

#[test]
fn futures_work_under_a_hand_rolled_executor() {
    let timers = TimerService::new();
    let deadline = Instant::now() + Duration::from_millis(3);
    block_on(async {
        timers.sleep_until(deadline).await;
        assert!(Instant::now() >= deadline);
        let slow = timers.timeout(Duration::from_millis(2), timers.sleep(HOUR));
        assert!(slow.await.is_err());
        let fast = timers.timeout(HOUR, timers.sleep(Duration::from_millis(2)));
        assert_eq!(fast.await, Ok(()));
    });
    assert_eq!(timers.pending(), 0);
}

#[test]
fn futures_work_under_tokio_current_thread() {
    let timers = TimerService::new();
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    rt.block_on(async {
        let tasks: Vec<_> = (0..20_u64)
            .map(|i| {
                let timers = timers.clone();
                tokio::spawn(async move {
                    let deadline = Instant::now() + Duration::from_micros(i * 700);
                    timers.sleep_until(deadline).await;
                    (deadline, Instant::now())
                })
            })
            .collect();
        for task in tasks {
            let (deadline, done) = task.await.unwrap();
            assert!(done >= deadline, "a sleep ended early");
        }
        let timed_out = timers.timeout(Duration::from_millis(3), std::future::pending::<()>());
        assert!(timed_out.await.is_err());
    });
    assert_eq!(timers.pending(), 0);
}

#[test]
fn futures_work_under_tokio_multi_thread() {
    let timers = TimerService::new();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .unwrap();
    let mut rng = XorShift::new(7);
    let tasks: Vec<_> = (0..500)
        .map(|i| {
            let timers = timers.clone();
            let delay = Duration::from_micros(rng.below(30_000));
            rt.spawn(async move {
                let deadline = Instant::now() + delay;
                if i % 3 == 0 {
                    let lost = timers.timeout(delay, std::future::pending::<()>()).await;
                    assert!(lost.is_err());
                } else {
                    timers.sleep(delay).await;
                }
                (deadline, Instant::now())
            })
        })
        .collect();
    rt.block_on(async {
        for task in tasks {
            let (deadline, done) = tokio::time::timeout(PATIENCE, task)
                .await
                .expect("a task was never woken")
                .unwrap();
            assert!(done >= deadline, "a sleep ended early");
        }
    });
    assert_eq!(timers.pending(), 0);
}

// ---------------------------------------------------------------------------
// Accounting: cancelled timers are counted and freed promptly.
// ---------------------------------------------------------------------------

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

#[test]
fn extreme_delays_and_ticks_do_not_panic() {
    let timers = TimerService::new();
    let handle = timers.schedule(Duration::MAX, || ()).unwrap();
    let sleep = timers.sleep(Duration::MAX);
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

/// A client that arms and cancels a timeout per request keeps the wheel
/// empty between requests; the driver must not be woken for each one.
#[test]
fn scheduling_and_cancelling_in_a_loop_rarely_wakes_the_driver() {
    const PAIRS: u64 = 200_000;
    let timers = TimerService::new();
    let before = timers.stats().wakeups;
    for _ in 0..PAIRS {
        assert!(timers
            .schedule(Duration::from_secs(1), || ())
            .unwrap()
            .cancel());
    }
    let woken = timers.stats().wakeups - before;
    // One wake-up per 1024 submissions reclaims memory; naps add a few.
    assert!(woken <= 2 * PAIRS / 1024 + 20, "{woken} wake-ups");
}

/// After activity the driver naps, then parks for good: no CPU when idle.
#[test]
fn an_idle_service_stops_waking_up() {
    let timers = TimerService::new();
    for _ in 0..100 {
        timers.schedule(HOUR, || ()).unwrap().cancel();
    }
    let settled = || {
        let before = timers.stats().wakeups;
        thread::sleep(Duration::from_millis(300));
        timers.stats().wakeups == before
    };
    assert!(wait_until(settled), "the driver kept waking up");
}

/// A `Sleep` reset to an earlier deadline while its first message is still
/// queued must wake a driver that sleeps past the new deadline; otherwise it
/// fires only when the driver's nap ends (up to 100 ms late). The fastest of
/// three tries is compared, so one slow scheduling of this thread cannot fail
/// it.
#[test]
fn reset_earlier_wakes_a_sleeping_driver() {
    let timers = TimerService::new();
    let _far = timers.schedule(HOUR, || ()).unwrap();
    let fastest = (0..3)
        .map(|_| {
            // Let the driver file everything and go to sleep.
            thread::sleep(Duration::from_millis(20));
            let mut sleep = timers.sleep(HOUR);
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

// Parking: a callback due at least 50 ms out waits in its thread's slot
// next to the queue; a cancel from that thread takes it back unseen.

/// A parked timer whose thread never touches the service again still fires,
/// on time: the driver, idle before, is woken for it or sweeps it.
#[test]
fn a_parked_timer_fires_although_its_thread_goes_quiet() {
    let timers = TimerService::new();
    // Let the driver settle into sleeping with nothing to do.
    thread::sleep(Duration::from_millis(20));
    let delay = Duration::from_millis(80);
    let (tx, rx) = mpsc::channel();
    let start = Instant::now();
    let handle = thread::spawn({
        let timers = timers.clone();
        move || {
            timers
                .schedule(delay, move || tx.send(Instant::now()).unwrap())
                .unwrap()
        }
    })
    .join()
    .unwrap();
    let fired_at = rx
        .recv_timeout(PATIENCE)
        .expect("the parked timer never fired");
    assert!(fired_at >= start + delay, "fired early");
    assert!(
        fired_at <= start + delay + LATE_BOUND,
        "fired {:?} late",
        fired_at - start - delay
    );
    assert!(handle.is_fired());
}

/// Two timers from one thread: the second displaces the first from the slot
/// into the queue; both fire, in deadline order, neither early.
#[test]
fn a_displaced_parked_timer_still_fires_in_order() {
    let timers = TimerService::new();
    let order = Arc::new(Mutex::new(Vec::new()));
    let start = Instant::now();
    let mut handles = Vec::new();
    for (name, ms) in [("second", 120), ("first", 60)] {
        let order = order.clone();
        let delay = Duration::from_millis(ms);
        handles.push(
            timers
                .schedule(delay, move || {
                    order.lock().unwrap().push((name, Instant::now()))
                })
                .unwrap(),
        );
    }
    assert!(wait_until(|| order.lock().unwrap().len() == 2));
    let order = order.lock().unwrap();
    assert_eq!(
        order.iter().map(|(n, _)| *n).collect::<Vec<_>>(),
        ["first", "second"]
    );
    assert!(order[0].1 >= start + Duration::from_millis(60));
    assert!(order[1].1 >= start + Duration::from_millis(120));
    assert_eq!(timers.pending(), 0);
}

/// Cancelled by another thread, a parked timer stays in its slot until the
/// driver sweeps it: it is freed then, well before its deadline, and counted.
#[test]
fn a_parked_timer_cancelled_elsewhere_is_swept_and_freed() {
    let timers = TimerService::new();
    let (guard, dropped) = drop_flag();
    let handle = timers.schedule(HOUR, move || drop(guard)).unwrap();
    assert_eq!(timers.pending(), 1);
    let cancelled = thread::spawn(move || {
        let won = handle.cancel();
        drop(handle);
        won
    })
    .join()
    .unwrap();
    assert!(cancelled);
    assert_eq!(timers.pending(), 0, "counted out at once");
    assert!(
        wait_until(|| dropped.load(SeqCst)),
        "a cancelled parked timer is held until its deadline"
    );
    assert!(wait_until(|| {
        let s = timers.stats();
        (s.scheduled, s.cancelled) == (1, 1)
    }));
}

/// Retracted timers never reach the driver, yet the counters see them and
/// the closures are released as the handles go.
#[test]
fn retracted_timers_are_counted_and_freed_at_once() {
    const PAIRS: u64 = 10_000;
    let timers = TimerService::new();
    let drops = Arc::new(AtomicUsize::new(0));
    let mut freed_at_once = 0;
    for _ in 0..PAIRS {
        let (guard, dropped) = drop_flag();
        let drops = drops.clone();
        let handle = timers
            .schedule(Duration::from_secs(1), move || {
                drop(guard);
                drops.fetch_add(1, SeqCst);
            })
            .unwrap();
        assert!(handle.cancel());
        drop(handle);
        freed_at_once += u64::from(dropped.load(SeqCst));
    }
    assert_eq!(drops.load(SeqCst), 0, "no cancelled callback ran");
    assert_eq!(timers.pending(), 0);
    // Only a sweep that happens to land between a schedule and its cancel
    // leaves a timer for the driver to free.
    assert!(
        freed_at_once > PAIRS / 2,
        "only {freed_at_once} freed at cancel"
    );
    assert!(
        wait_until(|| {
            let s = timers.stats();
            (s.scheduled, s.cancelled, s.fired) == (PAIRS, PAIRS, 0)
        }),
        "{:?}",
        timers.stats()
    );
}

/// Shutdown abandons a parked timer like a queued one: reported, closure
/// dropped unrun, the handle sees it.
#[test]
fn shutdown_abandons_parked_timers() {
    let timers = TimerService::new();
    let (guard, dropped) = drop_flag();
    let handle = timers.schedule(HOUR, move || drop(guard)).unwrap();
    let report = timers.shutdown().unwrap();
    assert_eq!(report.unfired, 1);
    assert!(dropped.load(SeqCst), "the closure outlived shutdown");
    assert!(handle.is_cancelled());
    assert!(!handle.cancel());
    assert_eq!(timers.pending(), 0);
}

// ---------------------------------------------------------------------------
// Detached callbacks: fire and forget.
// ---------------------------------------------------------------------------

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

#[test]
fn a_request_timeout_future_dropped_in_time_never_reaches_the_driver() {
    let timers = TimerService::new();
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    for _ in 0..1_000 {
        let reply = rt.block_on(timers.timeout(Duration::from_secs(1), async { "pong" }));
        assert_eq!(reply, Ok("pong"));
    }
    assert_eq!(timers.pending(), 0);
    // Taken back by this thread, each is counted at once. Queued, they
    // would be counted only in the driver's next round, which a driver
    // napping between rare wake-ups has not run yet; one it happened to
    // sweep before its request ended is counted in its next round too.
    let stats = timers.stats();
    assert!(stats.cancelled >= 900, "few taken back: {stats:?}");
    assert!(stats.wakeups < 100, "woken per request: {stats:?}");
    assert!(
        wait_until(|| {
            let s = timers.stats();
            (s.scheduled, s.cancelled) == (1_000, 1_000)
        }),
        "{:?}",
        timers.stats()
    );
}

#[test]
fn a_parked_sleep_reset_earlier_completes_on_time() {
    let timers = TimerService::new();
    let mut sleep = timers.sleep(HOUR);
    let (waker_count, waker) = counting_waker();
    assert!(poll_once(&mut sleep, &waker).is_pending());
    let soon = Instant::now() + Duration::from_millis(3);
    sleep.reset(soon);
    assert!(
        wait_until(|| waker_count.count() > 0),
        "a parked sleep reset earlier was never woken"
    );
    assert!(poll_once(&mut sleep, &waker).is_ready());
    let late = Instant::now() - soon;
    assert!(late < LATE_BOUND, "{late:?} late");
    // And one reset later than parked still waits for its new deadline.
    let mut later = timers.sleep(Duration::from_millis(60));
    later.reset(Instant::now() + HOUR);
    thread::sleep(Duration::from_millis(120));
    assert!(!later.is_elapsed(), "fired at its old deadline");
}

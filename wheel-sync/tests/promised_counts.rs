//! What the service promises to account for, attacked: shutdowns crossed
//! by sleeps, intervals, queues and `run_paused`; the `max_pending` limit
//! under contention and resets; callback executors that keep, or run and
//! panic; and `Stats` after a mixed load on several threads. Each asserts
//! a promise of the crate docs. `races.rs` attacks the manual clock
//! and handles.
#![cfg(not(loom))]

use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::{mpsc, Arc, Barrier, Mutex};
use std::task::{Context, Poll, Waker};
use std::thread;
use std::time::Duration;

use wheel_sync::{AdvanceError, ScheduleError, Sleep, TimerService};

mod common;
use common::{assert_adds_up, counter, manual, ms, poll_once, polled, XorShift, HOUR};

/// Rounds of each racy scenario.
const ROUNDS: usize = 200;

// ---- Across a shutdown ----

/// `Sleep::reset`: "a deadline that has already passed completes the
/// sleep at its next poll", and the type's panic is for a sleep whose
/// deadline had not come when the service shut down. A sleep waiting at
/// shutdown, then reset to a deadline that came before it, completes; so
/// does one that was never polled (it has no timer), and the two agree.
#[test]
fn a_sleep_reset_after_shutdown_to_a_deadline_that_had_passed_completes() {
    let timers = manual();
    let start = timers.now();
    let mut waited = Box::pin(timers.sleep(HOUR));
    let mut never_polled = Box::pin(timers.sleep(HOUR));
    assert!(poll_once(&mut waited, Waker::noop()).is_pending());
    timers.advance(ms(10)).unwrap();
    timers.shutdown().unwrap();
    never_polled.as_mut().reset(start + ms(5));
    assert_eq!(poll_once(&mut never_polled, Waker::noop()), Poll::Ready(()));
    waited.as_mut().reset(start + ms(5));
    let polled = catch_unwind(AssertUnwindSafe(|| poll_once(&mut waited, Waker::noop())));
    assert!(
        matches!(polled, Ok(Poll::Ready(()))),
        "a sleep reset to a passed deadline panicked or waited"
    );
    assert!(!waited.is_shut_down(), "{waited:?}");
}

/// A sleep that fired, then reset to a later deadline after the shutdown:
/// the closed queue refuses its new timer, which is counted neither in
/// `Stats::scheduled` (as a schedule the shutdown refuses is not) nor in
/// `pending`, and the sleep reports the shutdown. (Counted in and then
/// out as a timer released, it raised `scheduled` for good.)
#[test]
fn a_fired_sleep_reset_after_shutdown_is_refused_and_counted_nowhere() {
    let timers = manual();
    let mut sleep = Box::pin(timers.sleep(ms(5)));
    assert!(poll_once(&mut sleep, Waker::noop()).is_pending());
    timers.advance(ms(10)).unwrap();
    assert_eq!(poll_once(&mut sleep, Waker::noop()), Poll::Ready(()));
    timers.shutdown().unwrap();
    let before = timers.stats();
    sleep.as_mut().reset(timers.now() + HOUR);
    let after = timers.stats();
    assert_eq!(after.scheduled, before.scheduled, "{after:?}");
    assert_eq!(
        after.fired + after.cancelled,
        before.fired + before.cancelled
    );
    assert_eq!(timers.pending(), 0);
    assert!(sleep.is_shut_down(), "{sleep:?}");
}

/// An interval across a shutdown: the ticks that were due before it are
/// still handed out (at once, no timer needed), then waiting for one that
/// was not is reported beforehand and panics; nothing stays counted.
#[test]
fn an_interval_hands_out_the_ticks_due_before_a_shutdown_then_reports_it() {
    let timers = manual();
    let start = timers.now();
    let mut every = timers.interval(ms(10));
    let mut cx = Context::from_waker(Waker::noop());
    assert_eq!(every.poll_tick(&mut cx), Poll::Ready(start));
    assert!(every.poll_tick(&mut cx).is_pending());
    timers.advance(ms(25)).unwrap();
    timers.shutdown().unwrap();
    assert_eq!(every.poll_tick(&mut cx), Poll::Ready(start + ms(10)));
    assert_eq!(every.poll_tick(&mut cx), Poll::Ready(start + ms(20)));
    assert!(every.is_shut_down());
    assert_eq!(timers.pending(), 0);
    let waited = catch_unwind(AssertUnwindSafe(|| every.poll_tick(&mut cx)));
    assert!(waited.is_err(), "a tick not due at shutdown must panic");
}

/// A `DelayQueue` across a shutdown: "still hands out every item already
/// due", then panics if it would have to wait; an emptied queue answers
/// `None`.
#[test]
fn a_delay_queue_hands_out_what_was_due_across_a_shutdown() {
    let timers = manual();
    let mut queue = wheel_sync::DelayQueue::with_service(&timers);
    let mut cx = Context::from_waker(Waker::noop());
    queue.insert(1, ms(10));
    queue.insert(2, ms(20));
    queue.insert(3, ms(30));
    assert!(queue.poll_expired(&mut cx).is_pending());
    timers.advance(ms(25)).unwrap();
    timers.shutdown().unwrap();
    let mut out = Vec::new();
    for _ in 0..2 {
        match queue.poll_expired(&mut cx) {
            Poll::Ready(Some(item)) => out.push(item.into_inner()),
            other => panic!("expected an item, got {:?}", other.map(|o| o.is_some())),
        }
    }
    out.sort_unstable();
    assert_eq!(out, [1, 2]);
    let waited = catch_unwind(AssertUnwindSafe(|| queue.poll_expired(&mut cx).is_ready()));
    assert!(waited.is_err(), "waiting after the shutdown must panic");
    assert_eq!(timers.pending(), 0);
}

/// The error type says why `advance` "did not move the clock": after a
/// shutdown it reports `Shutdown`, and the clock must not have moved.
#[test]
fn advance_refused_after_shutdown_leaves_the_clock_where_it_was() {
    let timers = manual();
    let start = timers.now();
    timers.shutdown().unwrap();
    assert_eq!(timers.advance(HOUR), Err(AdvanceError::Shutdown));
    assert_eq!(timers.now(), start, "a refused advance moved the clock");
}

/// `run_paused`'s errors: "a shutdown while the future waits on a timer"
/// is `AdvanceError::Shutdown`. Here the future waits on a sleep that never
/// comes due (so `run_paused` idles, looking every millisecond), and
/// another thread shuts the service down: `run_paused` must return the
/// error, not poll the abandoned sleep into its panic.
#[test]
fn run_paused_reports_a_shutdown_while_its_future_waits_rather_than_panicking() {
    for round in 0..10 {
        let timers = manual();
        let stopper = {
            let timers = timers.clone();
            thread::spawn(move || {
                thread::sleep(ms(5 + round));
                timers.shutdown().unwrap();
            })
        };
        let sleep = timers.sleep(Duration::MAX);
        let outcome = catch_unwind(AssertUnwindSafe(|| timers.run_paused(sleep)));
        stopper.join().unwrap();
        assert!(
            matches!(outcome, Ok(Err(AdvanceError::Shutdown))),
            "round {round}: run_paused {}",
            if outcome.is_err() {
                "panicked"
            } else {
                "returned Ok"
            }
        );
    }
}

// ---- `max_pending` ----

/// Futures count toward the limit and are never refused: a sleep reset to
/// a passed deadline frees its place once the driver fires it (at once),
/// a reset to a future one takes it again even at the limit, and its drop
/// frees it.
#[test]
fn a_sleep_takes_and_frees_its_place_under_the_limit_as_it_is_reset() {
    let timers = TimerService::builder()
        .manual_clock()
        .max_pending(1)
        .build()
        .unwrap();
    let refused = Err(ScheduleError::TooManyPending { limit: 1 });
    let mut sleep = polled(Box::pin(timers.sleep(HOUR)));
    assert_eq!(timers.pending(), 1);
    assert_eq!(timers.schedule(HOUR, || ()).map(drop), refused);
    sleep.as_mut().reset(timers.now()); // passed: its timer fires at once
    assert!(sleep.is_elapsed());
    assert!(common::patiently::wait_until(|| timers.pending() == 0));
    let handle = timers.schedule(HOUR, || ()).unwrap();
    sleep.as_mut().reset(timers.now() + HOUR); // at the limit: not refused
    assert_eq!(timers.pending(), 2);
    assert_eq!(timers.schedule_detached(HOUR, || ()), refused);
    drop(sleep);
    assert_eq!(timers.pending(), 1);
    assert_eq!(timers.schedule(HOUR, || ()).map(drop), refused);
    assert!(handle.cancel());
    assert_eq!(timers.pending(), 0);
    timers.schedule_detached(ms(1), || ()).unwrap();
    timers.advance(ms(1)).unwrap();
    assert_eq!(timers.pending(), 0, "freed by the fire");
    assert_adds_up(&timers.stats(), "at the end");
}

/// Callbacks, detached callbacks and sleeps made at once on four threads,
/// nothing freed meanwhile: callbacks are admitted while the total is
/// below the limit and never beyond it, and a refusal means the total had
/// reached it; sleeps are always admitted.
#[test]
fn the_limit_counts_futures_and_detached_callbacks_exactly_under_contention() {
    const LIMIT: usize = 100;
    for round in 0..ROUNDS / 10 {
        let timers = TimerService::builder()
            .manual_clock()
            .max_pending(LIMIT)
            .build()
            .unwrap();
        let barrier = Arc::new(Barrier::new(4));
        let workers: Vec<_> = (0..4)
            .map(|w| {
                let (timers, barrier) = (timers.clone(), Arc::clone(&barrier));
                thread::spawn(move || {
                    let (mut ok, mut refused) = (0_usize, 0_usize);
                    let mut sleeps = Vec::new();
                    let mut handles = Vec::new();
                    barrier.wait();
                    for i in 0..60 {
                        let result = match (w + i) % 3 {
                            0 => timers.schedule(HOUR, || ()).map(|h| handles.push(h)),
                            1 => timers.schedule_detached(HOUR, || ()),
                            _ => {
                                sleeps.push(polled(Box::pin(timers.sleep(HOUR))));
                                continue;
                            }
                        };
                        match result {
                            Ok(()) => ok += 1,
                            Err(ScheduleError::TooManyPending { limit: LIMIT }) => refused += 1,
                            Err(e) => panic!("{e}"),
                        }
                    }
                    (ok, refused, sleeps, handles)
                })
            })
            .collect();
        let results: Vec<_> = workers.into_iter().map(|w| w.join().unwrap()).collect();
        let ok: usize = results.iter().map(|r| r.0).sum();
        let refused: usize = results.iter().map(|r| r.1).sum();
        let sleeps: usize = results.iter().map(|r| r.2.len()).sum();
        assert!(ok <= LIMIT, "round {round}: {ok} callbacks admitted");
        assert_eq!(timers.pending(), ok + sleeps, "round {round}");
        if refused > 0 {
            assert!(
                ok + sleeps >= LIMIT,
                "round {round}: refused below the limit ({ok} + {sleeps})"
            );
        }
        // Dropped sleeps go; dropped handles leave their callbacks pending.
        drop(results);
        assert_eq!(timers.pending(), ok, "round {round}");
    }
}

// ---- The callback executor ----

/// An executor that keeps the callbacks it is handed and never runs them
/// is the user's, dropped as the service ends: the callbacks it held go
/// with it, counted unrun in the report, their closures dropped.
#[test]
fn callbacks_an_executor_keeps_unrun_until_the_end_are_counted_unrun() {
    let kept: Mutex<Vec<Box<dyn FnOnce() + Send>>> = Mutex::default();
    let handed = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&handed);
    let timers = TimerService::builder()
        .manual_clock()
        .callback_executor(move |task| {
            seen.fetch_add(1, SeqCst);
            kept.lock().unwrap().push(task);
        })
        .build()
        .unwrap();
    let mut flags = Vec::new();
    for i in 0..5 {
        let (guard, flag) = common::drop_flag();
        flags.push(flag);
        let f = move || drop(guard);
        if i % 2 == 0 {
            timers.schedule(ms(1), f).unwrap();
        } else {
            timers.schedule_detached(ms(1), f).unwrap();
        }
    }
    timers.schedule(HOUR, || ()).unwrap();
    timers.advance(ms(1)).unwrap();
    assert_eq!(handed.load(SeqCst), 5);
    assert_eq!(timers.stats().fired, 5);
    let report = timers.shutdown().unwrap();
    assert_eq!((report.unfired, report.unrun), (1, 5));
    assert!(flags.iter().all(|f| f.load(SeqCst)), "closures dropped");
}

/// An executor that runs the callback where it is called, then panics:
/// the callback ran once (nothing counts it unrun), the panic is counted,
/// and the other timers still fire.
#[test]
fn an_executor_that_runs_the_callback_then_panics_is_counted_once() {
    let timers = TimerService::builder()
        .manual_clock()
        .callback_executor(|task| {
            task();
            panic!("the executor panics after running it");
        })
        .build()
        .unwrap();
    let (ran, make) = counter();
    let handles: Vec<_> = (1..=3)
        .map(|i| timers.schedule(ms(i), make()).unwrap())
        .collect();
    timers.schedule_detached(ms(2), make()).unwrap();
    timers.advance(ms(3)).unwrap();
    assert_eq!(ran.load(SeqCst), 4);
    assert!(handles.iter().all(|h| h.is_fired() && !h.cancel()));
    let stats = timers.stats();
    assert_eq!((stats.fired, stats.panicked), (4, 4), "{stats:?}");
    assert_adds_up(&stats, "after the advance");
    let report = timers.shutdown().unwrap();
    assert_eq!((report.unfired, report.unrun), (0, 0));
}

/// A callback that the executor runs on a thread of its own is not on the
/// driver thread: it may move the manual clock to the next deadline and
/// wait for what comes due there.
#[test]
fn a_callback_on_the_executor_may_advance_the_manual_clock_and_wait() {
    let timers = TimerService::builder()
        .manual_clock()
        .callback_executor(|task| drop(thread::spawn(task)))
        .build()
        .unwrap();
    let start = timers.now();
    let (tx, rx) = mpsc::channel();
    let second = timers.schedule(ms(2000), || ()).unwrap();
    let inner = timers.clone();
    timers
        .schedule(ms(1000), move || {
            tx.send(inner.advance_to_next()).unwrap();
        })
        .unwrap();
    timers.advance(ms(1000)).unwrap();
    let answer = rx.recv_timeout(common::PATIENCE).expect("the callback ran");
    assert_eq!(answer, Ok(Some(ms(1000))));
    assert!(second.is_fired());
    assert_eq!(timers.now() - start, ms(2000));
}

// ---- `Stats` after a mixed load ----

/// Callbacks (kept, cancelled, dropped), detached callbacks, sleeps (reset
/// later, earlier, past, after firing, dropped) and timeouts, made on four
/// threads while the clock moves: whenever nothing moves, every timer
/// admitted fired, was cancelled or is pending; after the shutdown, every
/// one fired, was cancelled or is in `unfired`.
#[test]
fn every_counter_adds_up_after_a_mixed_load_on_four_threads() {
    let timers = manual();
    let stop = Arc::new(AtomicBool::new(false));
    let workers: Vec<_> = (0..4_u64)
        .map(|w| {
            let (timers, stop) = (timers.clone(), Arc::clone(&stop));
            thread::spawn(move || {
                let mut rng = XorShift::new(w + 11);
                let mut kept = Vec::new();
                let mut sleeps: Vec<Pin<Box<Sleep>>> = Vec::new();
                let mut timeouts = Vec::new();
                for _ in 0..400 {
                    let delay = ms(rng.below(50));
                    match rng.below(9) {
                        0 => kept.push(timers.schedule(delay, || ()).unwrap()),
                        1 => drop(timers.schedule(delay, || ()).unwrap()),
                        2 => {
                            let _ = timers.schedule(delay, || ()).unwrap().cancel();
                        }
                        3 => timers.schedule_detached(delay, || ()).unwrap(),
                        4 => {
                            let mut sleep = Box::pin(timers.sleep(delay));
                            let _ = poll_once(&mut sleep, Waker::noop());
                            sleeps.push(sleep);
                        }
                        5 if !sleeps.is_empty() => {
                            let i = rng.below(sleeps.len() as u64) as usize;
                            let to = match rng.below(3) {
                                0 => timers.now(), // passed
                                _ => timers.now() + ms(rng.below(50)),
                            };
                            sleeps[i].as_mut().reset(to);
                            let _ = poll_once(&mut sleeps[i], Waker::noop());
                        }
                        6 if !sleeps.is_empty() => {
                            let i = rng.below(sleeps.len() as u64) as usize;
                            drop(sleeps.swap_remove(i));
                        }
                        7 => {
                            let mut t =
                                Box::pin(timers.timeout(delay, std::future::pending::<()>()));
                            let _ = t.as_mut().poll(&mut Context::from_waker(Waker::noop()));
                            timeouts.push(t);
                        }
                        _ => {
                            drop(timers.schedule(Duration::MAX, || ()).unwrap());
                        }
                    }
                }
                while !stop.load(SeqCst) {
                    thread::yield_now();
                }
                (kept, sleeps, timeouts)
            })
        })
        .collect();
    for _ in 0..40 {
        timers.advance(ms(1)).unwrap();
    }
    stop.store(true, SeqCst);
    let held: Vec<_> = workers.into_iter().map(|w| w.join().unwrap()).collect();
    timers.advance(Duration::ZERO).unwrap();
    assert_adds_up(&timers.stats(), "after the load");
    while timers.advance_to_next().unwrap().is_some() {}
    let stats = timers.stats();
    assert_adds_up(&stats, "after the last deadline");
    assert_eq!(stats.panicked, 0);
    let never = stats.pending;
    drop(held); // sleeps and timeouts cancelled; handles leave theirs
    let stats = timers.stats();
    assert_adds_up(&stats, "after the drops");
    assert_eq!(stats.pending, never, "only the endless callbacks are left");
    let report = timers.shutdown().unwrap();
    let stats = timers.stats();
    assert_eq!(stats.pending, 0);
    assert_eq!(report.unfired, never);
    assert_eq!(
        stats.scheduled,
        stats.fired + stats.cancelled + report.unfired as u64,
        "{stats:?} {report:?}"
    );
}

//! A manual clock: nothing fires until `advance` moves the clock past its
//! deadline, and everything due has fired (callbacks run, sleeps woken) by
//! the time `advance` returns, and the clock moves by exactly what `advance`
//! is given, to the nanosecond. The main test is a differential one: ten
//! thousand timers of every kind, advanced in random steps, compared after
//! each step with what should have fired by then.
#![cfg(not(loom))]

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::thread;
use std::time::Duration;

use wheel_sync::{AdvanceError, TimerService};

mod common;
use common::{counting_waker, manual, ms, XorShift};

#[test]
fn every_timer_fires_in_the_advance_that_passes_its_deadline_in_deadline_order() {
    const TIMERS: u64 = 10_000;
    const HORIZON_MS: u64 = 2_000;
    let timers = manual();
    let start = timers.now();
    // (deadline in ms, id) in the order the callbacks ran.
    let fired = Arc::new(Mutex::new(Vec::new()));
    let mut rng = XorShift::new(7);
    let mut due_ms = Vec::new();
    let mut cancelled = vec![false; TIMERS as usize];
    for id in 0..TIMERS {
        let at = rng.below(HORIZON_MS);
        let log = fired.clone();
        let record = move || log.lock().unwrap().push((at, id));
        // Each kind takes its own path: queued or parked (50 ms and more
        // out), detached into the second wheel, or cancelled.
        match id % 4 {
            0 => drop(timers.schedule(ms(at), record).unwrap()),
            1 => timers.schedule_detached(ms(at), record).unwrap(),
            2 => drop(timers.schedule_at(start + ms(at), record).unwrap()),
            _ => {
                let handle = timers.schedule(ms(at), record).unwrap();
                if rng.below(2) == 0 {
                    assert!(handle.cancel());
                    cancelled[id as usize] = true;
                }
            }
        }
        due_ms.push(at);
    }

    let mut now_ms = 0;
    while now_ms <= HORIZON_MS {
        let step = 1 + rng.below(40);
        timers.advance(ms(step)).unwrap();
        now_ms += step;
        assert_eq!(timers.now(), start + ms(now_ms));
        let log = fired.lock().unwrap();
        let expected = (0..TIMERS)
            .filter(|&id| due_ms[id as usize] <= now_ms && !cancelled[id as usize])
            .count();
        assert_eq!(log.len(), expected, "fired by {now_ms} ms");
        assert!(log.iter().all(|&(at, _)| at <= now_ms), "fired early");
    }
    let log = fired.lock().unwrap();
    assert!(
        log.windows(2).all(|w| w[0].0 <= w[1].0),
        "out of deadline order"
    );
    assert_eq!(timers.pending(), 0);
}

/// A round already under way when the caller schedules and then advances
/// must not fire by the new time what it filed before the caller's last
/// timers arrived: those are due too, and earlier ones among them would
/// come out after later ones.
#[test]
fn timers_scheduled_while_the_driver_runs_fire_in_deadline_order_in_the_next_advance() {
    let timers = manual();
    let mut rng = XorShift::new(11);
    let fired = Arc::new(Mutex::new(Vec::new()));
    for round in 0..300u64 {
        let count = 1 + rng.below(200);
        for _ in 0..count {
            let at = 1 + rng.below(10);
            let log = fired.clone();
            drop(
                timers
                    .schedule(ms(at), move || log.lock().unwrap().push(at))
                    .unwrap(),
            );
        }
        timers.advance(ms(10)).unwrap();
        let mut log = fired.lock().unwrap();
        assert_eq!(log.len() as u64, count, "round {round}: all due fired");
        assert!(
            log.windows(2).all(|w| w[0] <= w[1]),
            "round {round}: out of deadline order: {log:?}"
        );
        log.clear();
    }
}

#[test]
fn the_clock_stands_still_between_advances() {
    let timers = manual();
    let start = timers.now();
    let fired = Arc::new(AtomicUsize::new(0));
    let count = fired.clone();
    timers
        .schedule(ms(1), move || {
            count.fetch_add(1, SeqCst);
        })
        .unwrap();
    thread::sleep(ms(30));
    assert_eq!(timers.now(), start);
    assert_eq!(fired.load(SeqCst), 0);
    timers.advance(ms(1)).unwrap();
    assert_eq!(fired.load(SeqCst), 1);
}

#[test]
fn a_timer_scheduled_on_another_thread_before_the_advance_fires_in_it() {
    let timers = manual();
    let fired = Arc::new(AtomicUsize::new(0));
    let (other, count) = (timers.clone(), fired.clone());
    thread::spawn(move || {
        other
            .schedule_detached(ms(5), move || {
                count.fetch_add(1, SeqCst);
            })
            .unwrap();
    })
    .join()
    .unwrap();
    timers.advance(ms(5)).unwrap();
    assert_eq!(fired.load(SeqCst), 1);
}

#[test]
fn sleeps_fired_together_are_all_woken_when_advance_returns() {
    let timers = manual();
    let wakers: Vec<_> = (0..16).map(|_| counting_waker()).collect();
    let mut sleeps: Vec<_> = (0..16).map(|_| Box::pin(timers.sleep(ms(10)))).collect();
    for (sleep, (_, waker)) in sleeps.iter_mut().zip(&wakers) {
        assert!(sleep
            .as_mut()
            .poll(&mut Context::from_waker(waker))
            .is_pending());
    }
    timers.advance(ms(10)).unwrap();
    // None was polled again: the driver woke them all, not one task.
    for (count, _) in &wakers {
        assert_eq!(count.count(), 1);
    }
    for sleep in &mut sleeps {
        assert!(sleep
            .as_mut()
            .poll(&mut Context::from_waker(Waker::noop()))
            .is_ready());
    }
}

/// tokio's `drop_after_reschedule_at_new_scheduled_time`, on both paths of
/// a move: sleeps moved to a later tick, one after the driver filed it and
/// one (most likely) before, fire once, at their new tick, with a sleep
/// that was there from the start; their old copies wake no one.
#[test]
fn sleeps_moved_later_fire_once_at_their_new_tick() {
    let timers = manual();
    let start = timers.now();
    let (count, waker) = counting_waker();
    let mut cx = Context::from_waker(&waker);
    let mut filed = Box::pin(timers.sleep_until(start + ms(5)));
    let mut there = Box::pin(timers.sleep_until(start + ms(10)));
    assert!(filed.as_mut().poll(&mut cx).is_pending());
    assert!(there.as_mut().poll(&mut cx).is_pending());
    // A round that files everything sent so far.
    timers.advance(Duration::ZERO).unwrap();
    let mut unfiled = Box::pin(timers.sleep_until(start + ms(5)));
    assert!(unfiled.as_mut().poll(&mut cx).is_pending());
    filed.reset(start + ms(10));
    unfiled.reset(start + ms(10));
    timers.advance(ms(5)).unwrap();
    assert_eq!(
        count.count(),
        0,
        "a copy left at the old tick woke its sleep"
    );
    assert!(filed.as_mut().poll(&mut cx).is_pending());
    assert!(unfiled.as_mut().poll(&mut cx).is_pending());
    timers.advance(ms(5)).unwrap();
    assert_eq!(count.count(), 3, "each sleep woken once");
    drop(filed);
    drop(unfiled);
    assert!(there.as_mut().poll(&mut cx).is_ready());
    assert_eq!(timers.pending(), 0);
}

#[test]
fn an_interval_ticks_on_the_manual_clock() {
    let timers = manual();
    let start = timers.now();
    let mut every = timers.interval(ms(10));
    let mut cx = Context::from_waker(Waker::noop());
    assert_eq!(every.poll_tick(&mut cx), Poll::Ready(start));
    assert_eq!(every.poll_tick(&mut cx), Poll::Pending);
    timers.advance(ms(9)).unwrap();
    assert_eq!(every.poll_tick(&mut cx), Poll::Pending);
    timers.advance(ms(1)).unwrap();
    assert_eq!(every.poll_tick(&mut cx), Poll::Ready(start + ms(10)));
    // Three periods at once: Burst delivers each missed tick.
    timers.advance(ms(30)).unwrap();
    for k in 2..=4 {
        assert_eq!(every.poll_tick(&mut cx), Poll::Ready(start + ms(10 * k)));
    }
    assert_eq!(every.poll_tick(&mut cx), Poll::Pending);
}

#[test]
fn advance_from_a_callback_moves_the_clock_without_waiting_for_itself() {
    let timers = manual();
    let start = timers.now();
    let result = Arc::new(Mutex::new(None));
    let later = Arc::new(AtomicUsize::new(0));
    let (inner, outcome) = (timers.clone(), result.clone());
    timers
        .schedule(ms(10), move || {
            *outcome.lock().unwrap() = Some(inner.advance(ms(10)));
        })
        .unwrap();
    let count = later.clone();
    timers
        .schedule(ms(15), move || {
            count.fetch_add(1, SeqCst);
        })
        .unwrap();
    timers.advance(ms(10)).unwrap();
    assert_eq!(*result.lock().unwrap(), Some(Ok(())));
    assert_eq!(timers.now(), start + ms(20));
    // Due at 15 ms by the callback's advance: fired by the time a second
    // advance (of nothing) returns.
    timers.advance(Duration::ZERO).unwrap();
    assert_eq!(later.load(SeqCst), 1);
}

#[test]
fn advance_is_refused_on_the_monotonic_clock_and_after_shutdown() {
    let real = TimerService::new();
    assert_eq!(real.advance(ms(1)), Err(AdvanceError::NotManual));

    let timers = manual();
    timers.shutdown().unwrap();
    assert_eq!(timers.advance(ms(1)), Err(AdvanceError::Shutdown));
    assert_eq!(
        AdvanceError::Shutdown.to_string(),
        "timer service has shut down"
    );
}

#[test]
fn advancing_as_far_as_the_clock_goes_saturates_and_fires_all_but_never() {
    let timers = manual();
    let fired = Arc::new(AtomicUsize::new(0));
    for delay in [ms(1), Duration::from_secs(3600), Duration::MAX] {
        let count = fired.clone();
        timers
            .schedule(delay, move || {
                count.fetch_add(1, SeqCst);
            })
            .unwrap();
    }
    timers.advance(Duration::MAX).unwrap();
    // Saturated: no overflow.
    timers.advance(Duration::MAX).unwrap();
    // 584 years on: a delay past what `Instant` holds means never.
    assert_eq!(fired.load(SeqCst), 2);
    assert_eq!(timers.pending(), 1);
}

/// `advance` returns once what was due by then has fired, even when it
/// moves the clock by nothing (the timer was due already) or cannot move
/// it at all (saturated).
#[test]
fn advance_fires_what_is_already_due_even_when_the_clock_does_not_move() {
    let timers = manual();
    let fired = Arc::new(AtomicUsize::new(0));
    // Due a millisecond ago: on a saturated clock, "now" itself is past
    // what it counts, and a deadline there never comes.
    let schedule_due_now = |timers: &TimerService| {
        let count = fired.clone();
        timers
            .schedule_at(timers.now() - ms(1), move || {
                count.fetch_add(1, SeqCst);
            })
            .unwrap();
    };
    timers.advance(ms(1)).unwrap();
    for round in 1..=100 {
        schedule_due_now(&timers);
        timers.advance(Duration::ZERO).unwrap();
        assert_eq!(fired.load(SeqCst), round, "advance(0) returned first");
    }
    timers.advance(Duration::MAX).unwrap();
    for round in 101..=150 {
        schedule_due_now(&timers);
        timers.advance(ms(1)).unwrap();
        assert_eq!(
            fired.load(SeqCst),
            round,
            "a saturated clock's advance returned first"
        );
    }
}

/// tokio's `test_time_advance_sub_ms`, `test_time_advance_3ms_and_change`,
/// `exact_1ms_advance` and `regression_3710_with_submillis_advance`: the
/// clock moves by exactly what `advance` is given, to the nanosecond, though
/// the tick is a millisecond; a sleep a minute out stays asleep meanwhile.
#[test]
fn advance_moves_the_clock_by_exactly_what_it_is_given_to_the_nanosecond() {
    let timers = manual();
    let start = timers.now();
    let (wakes, waker) = counting_waker();
    let mut minute = Box::pin(timers.sleep_until(start + Duration::from_secs(60)));
    assert!(minute
        .as_mut()
        .poll(&mut Context::from_waker(&waker))
        .is_pending());
    let mut moved = Duration::ZERO;
    for by in [
        Duration::from_micros(51_592),
        Duration::from_micros(1),
        Duration::from_nanos(1),
        Duration::from_micros(3_141_592),
        Duration::from_micros(3_123_456),
        ms(1),
        ms(1),
    ] {
        let before = timers.now();
        timers.advance(by).unwrap();
        moved += by;
        assert_eq!(timers.now() - before, by);
        assert_eq!(timers.now(), start + moved);
    }
    assert_eq!(wakes.count(), 0);
    assert!(minute
        .as_mut()
        .poll(&mut Context::from_waker(&waker))
        .is_pending());
}

/// tokio's `advance_once_with_timer` and `advance_multi_with_timer`:
/// advances shorter than a tick add up, and the one that reaches the
/// sleep's deadline wakes it, once; none before it does.
#[test]
fn advances_shorter_than_a_tick_add_up_to_wake_a_sleep_at_its_deadline() {
    for steps in [&[250, 250, 250, 250][..], &[250, 1500][..], &[999, 1][..]] {
        let timers = manual();
        let (wakes, waker) = counting_waker();
        let mut cx = Context::from_waker(&waker);
        let mut sleep = Box::pin(timers.sleep(ms(1)));
        assert!(sleep.as_mut().poll(&mut cx).is_pending());
        let (last, before) = steps.split_last().unwrap();
        for &us in before {
            timers.advance(Duration::from_micros(us)).unwrap();
            assert_eq!(wakes.count(), 0, "{steps:?}: woken early");
            assert!(sleep.as_mut().poll(&mut cx).is_pending(), "{steps:?}");
        }
        timers.advance(Duration::from_micros(*last)).unwrap();
        assert_eq!(wakes.count(), 1, "{steps:?}: not woken at its deadline");
        assert!(sleep.as_mut().poll(&mut cx).is_ready(), "{steps:?}");
    }
}

/// An `advance` and an `advance_to_next` waiting on a round (a callback
/// holds the driver up) while another thread shuts the service down each
/// return, `Err(Shutdown)` or served, before the callback lets go: neither
/// waits on a driver that will serve no more rounds.
#[test]
fn advances_waiting_as_another_thread_shuts_down_return() {
    common::within_patience(|| {
        let timers = TimerService::builder().manual_clock().build().unwrap();
        let (entered, held) = std::sync::mpsc::channel();
        let (release, wait) = std::sync::mpsc::channel::<()>();
        timers
            .schedule(Duration::from_millis(1), move || {
                entered.send(()).unwrap();
                let _ = wait.recv();
            })
            .unwrap();
        let advancing = {
            let timers = timers.clone();
            std::thread::spawn(move || timers.advance(Duration::from_millis(1)))
        };
        held.recv().unwrap();
        let asking = {
            let timers = timers.clone();
            std::thread::spawn(move || timers.advance_to_next())
        };
        let stopping = {
            let timers = timers.clone();
            std::thread::spawn(move || timers.shutdown())
        };
        let done = || advancing.is_finished() && asking.is_finished();
        assert!(
            common::patiently::wait_until(done),
            "an advance waits on a stopped driver"
        );
        release.send(()).unwrap();
        let advanced = advancing.join().unwrap();
        assert!(
            matches!(advanced, Ok(()) | Err(AdvanceError::Shutdown)),
            "{advanced:?}"
        );
        let asked = asking.join().unwrap();
        assert!(
            matches!(asked, Ok(_) | Err(AdvanceError::Shutdown)),
            "{asked:?}"
        );
        let report = stopping.join().unwrap().unwrap();
        assert_eq!(report.unfired, 0);
        assert_eq!(timers.stats().fired, 1);
    });
}

/// A sleep or a timeout first polled after the manual clock passed its
/// deadline is ready at that poll, as tokio's are on its paused clock: a
/// test that advances, then polls once, needs no second look.
#[test]
fn a_sleep_first_polled_after_the_clock_passed_its_deadline_is_ready_at_once() {
    let timers = manual();
    let mut sleep = std::pin::pin!(timers.sleep(ms(10)));
    let mut timeout = std::pin::pin!(timers.timeout(ms(10), std::future::pending::<()>()));
    let mut not_yet = std::pin::pin!(timers.sleep(ms(11)));
    timers.advance(ms(10)).unwrap();
    let mut cx = Context::from_waker(Waker::noop());
    assert!(sleep.as_mut().poll(&mut cx).is_ready());
    assert!(matches!(
        timeout.as_mut().poll(&mut cx),
        Poll::Ready(Err(_))
    ));
    assert!(not_yet.as_mut().poll(&mut cx).is_pending());
    assert_eq!(
        timers.pending(),
        1,
        "only the sleep not yet due has a timer"
    );
}

/// A sleep never polled, whose deadline the manual clock passed before the
/// service shut down, is not reported shut down: its first poll completes
/// it, as `is_shut_down` must then say.
#[test]
fn a_sleep_the_clock_passed_before_a_shutdown_is_not_reported_shut_down() {
    let timers = manual();
    let mut passed = std::pin::pin!(timers.sleep(ms(10)));
    let mut ahead = std::pin::pin!(timers.sleep(ms(11)));
    timers.advance(ms(10)).unwrap();
    timers.shutdown().unwrap();
    assert!(!passed.is_shut_down(), "its first poll completes it");
    assert!(ahead.is_shut_down());
    let mut cx = Context::from_waker(Waker::noop());
    assert!(passed.as_mut().poll(&mut cx).is_ready());
    let polled = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        ahead.as_mut().poll(&mut cx)
    }));
    assert!(
        polled.is_err(),
        "a deadline not reached before the shutdown panics"
    );
}

//! The paused clock: `advance_to_next` moves a manual clock exactly to the
//! next deadline, and `run_paused` drives a future, moving the clock
//! whenever it waits on nothing else. tokio's `time::pause` scenarios (a
//! sleep, a timeout, an interval with missed ticks, a `DelayQueue`
//! draining, `Interval::reset_immediately` and `reset_after`), written with
//! it: no test below chooses a step.
#![cfg(not(loom))]

use std::future::{pending, poll_fn, Future};
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{mpsc, Arc};
use std::task::Poll;
use std::thread;
use std::time::{Duration, Instant};

use wheel_sync::{AdvanceError, DelayQueue, MissedTickBehavior, TimerService};

mod common;
use common::{manual, ms, HOUR};

/// Runs `future` paused on `timers`, with a wall-clock bound: a paused
/// clock waits for no time.
fn paused<F: Future>(timers: &TimerService, future: F) -> F::Output {
    let wall = Instant::now();
    let output = timers.run_paused(future).expect("a manual clock");
    assert!(
        wall.elapsed() < Duration::from_secs(5),
        "the paused run waited"
    );
    output
}

#[test]
fn a_sleep_of_a_day_takes_a_day_of_the_clock_and_no_time() {
    let timers = manual();
    let start = timers.now();
    let woke = paused(&timers, async {
        timers.sleep(24 * HOUR).await;
        timers.now()
    });
    assert_eq!(woke - start, 24 * HOUR);
}

#[test]
fn a_timeout_elapses_exactly_at_its_deadline_unless_its_future_is_sooner() {
    let timers = manual();
    let start = timers.now();
    let out = paused(&timers, timers.timeout(ms(1000), pending::<()>()));
    assert!(out.is_err(), "a future that never completes timed out");
    assert_eq!(timers.now() - start, ms(1000));

    let start = timers.now();
    let out = paused(&timers, timers.timeout(ms(1000), timers.sleep(ms(500))));
    assert!(out.is_ok(), "the sleep came first");
    assert_eq!(timers.now() - start, ms(500));
}

/// An interval of 300 ms whose task works 650 ms (a sleep) after its
/// second tick: each tick's deadline and when it came, since the start,
/// as tokio's `burst`, `delay` and `skip` tests draw them.
fn ticks_after_a_stall(missed: MissedTickBehavior) -> Vec<(Duration, Duration)> {
    let timers = manual();
    let start = timers.now();
    let mut every = timers.interval_at(start, ms(300));
    every.set_missed_tick_behavior(missed);
    paused(&timers, async {
        let mut seen = Vec::new();
        for n in 0..6 {
            let due = every.tick().await;
            seen.push((due - start, timers.now() - start));
            if n == 1 {
                timers.sleep(ms(650)).await;
            }
        }
        seen
    })
}

#[test]
fn an_interval_with_missed_ticks_bursts_delays_or_skips_as_tokio_s() {
    let at = |due: u64, seen: u64| (ms(due), ms(seen));
    assert_eq!(
        ticks_after_a_stall(MissedTickBehavior::Burst),
        [
            at(0, 0),
            at(300, 300),
            at(600, 950),
            at(900, 950),
            at(1200, 1200),
            at(1500, 1500)
        ]
    );
    assert_eq!(
        ticks_after_a_stall(MissedTickBehavior::Delay),
        [
            at(0, 0),
            at(300, 300),
            at(600, 950),
            at(1250, 1250),
            at(1550, 1550),
            at(1850, 1850)
        ]
    );
    assert_eq!(
        ticks_after_a_stall(MissedTickBehavior::Skip),
        [
            at(0, 0),
            at(300, 300),
            at(600, 950),
            at(1200, 1200),
            at(1500, 1500),
            at(1800, 1800)
        ]
    );
}

#[test]
fn reset_immediately_and_reset_after_restart_the_schedule_as_tokio_s() {
    let timers = manual();
    let start = timers.now();
    let mut every = timers.interval_at(start, ms(300));
    let since = |t: Instant| t - start;
    let seen = paused(&timers, async {
        let mut seen = vec![since(every.tick().await), since(every.tick().await)];
        timers.sleep(ms(100)).await; // 400 ms
        every.reset_immediately();
        seen.push(since(every.tick().await)); // at once
        seen.push(since(every.tick().await)); // a period on
        timers.sleep(ms(100)).await; // 800 ms
        every.reset_after(ms(20));
        seen.push(since(every.tick().await));
        seen.push(since(every.tick().await));
        seen
    });
    assert_eq!(seen, [ms(0), ms(300), ms(400), ms(700), ms(820), ms(1120)]);
}

#[test]
fn a_delay_queue_drains_each_item_exactly_at_its_deadline() {
    let timers = manual();
    let start = timers.now();
    let mut queue = DelayQueue::with_service(&timers);
    for (value, hours) in [(3, 5), (1, 1), (2, 3), (4, 7 * 24)] {
        queue.insert(value, hours * HOUR);
    }
    let drained = paused(&timers, async {
        let mut drained = Vec::new();
        while let Some(expired) = queue.next_expired().await {
            assert_eq!(timers.now(), expired.deadline(), "came out at its deadline");
            drained.push((expired.into_inner(), expired_at(&timers, start)));
        }
        drained
    });
    let h = |n: u64| HOUR * u32::try_from(n).unwrap();
    assert_eq!(drained, [(1, h(1)), (2, h(3)), (3, h(5)), (4, h(7 * 24))]);
}

fn expired_at(timers: &TimerService, start: Instant) -> Duration {
    timers.now() - start
}

#[test]
fn advance_to_next_moves_exactly_to_the_next_deadline_and_fires_only_it() {
    let timers = manual();
    let fired = Arc::new(AtomicUsize::new(0));
    let count = |fired: &Arc<AtomicUsize>| {
        let fired = Arc::clone(fired);
        move || {
            fired.fetch_add(1, SeqCst);
        }
    };
    // A day and 7 ms sits on a high level: the answer is its deadline, not
    // the start of its slot.
    let far = timers.schedule(24 * HOUR + ms(7), count(&fired)).unwrap();
    let two = timers.schedule(ms(2), count(&fired)).unwrap();
    timers.schedule_detached(ms(2), count(&fired)).unwrap();
    timers.schedule_detached(ms(3), count(&fired)).unwrap();
    assert_eq!(timers.advance_to_next(), Ok(Some(ms(2))));
    assert!(two.is_fired());
    assert_eq!(fired.load(SeqCst), 2, "both due at 2 ms, nothing else");
    assert_eq!(timers.advance_to_next(), Ok(Some(ms(1))));
    assert_eq!(fired.load(SeqCst), 3);
    assert_eq!(timers.advance_to_next(), Ok(Some(24 * HOUR + ms(4))));
    assert!(far.is_fired());
    assert_eq!(timers.advance_to_next(), Ok(None), "nothing left");
}

/// A timer cancelled once the driver has filed it is not a deadline to
/// move to, even while the wheel still holds it (a cancel leaves it in
/// place until it is due or the wheel drops what can fire no more).
#[test]
fn advance_to_next_passes_over_a_timer_cancelled_after_it_was_filed() {
    let timers = manual();
    let cancelled = timers.schedule(ms(1), || ()).unwrap();
    let five = timers.schedule(ms(5), || ()).unwrap();
    let six = timers.schedule(ms(6), || ()).unwrap();
    timers.advance(Duration::ZERO).unwrap(); // all three filed
    assert!(cancelled.cancel());
    assert_eq!(timers.advance_to_next(), Ok(Some(ms(5))));
    assert!(five.is_fired() && !six.is_fired());
    assert_eq!(timers.advance_to_next(), Ok(Some(ms(1))));
    assert!(six.is_fired());
    assert_eq!(timers.advance_to_next(), Ok(None));
}

#[test]
fn advance_to_next_never_moves_toward_a_deadline_that_never_comes() {
    let timers = manual();
    let start = timers.now();
    let _never = common::polled(Box::pin(timers.sleep(Duration::MAX)));
    let _late = common::polled(Box::pin(timers.sleep(HOUR)));
    assert_eq!(timers.advance_to_next(), Ok(Some(HOUR)));
    assert_eq!(timers.advance_to_next(), Ok(None));
    assert_eq!(timers.now() - start, HOUR, "the clock stayed");
    assert_eq!(timers.pending(), 1, "the endless sleep waits on");
}

#[test]
fn advance_to_next_refuses_a_real_clock_a_callback_and_a_shut_down_service() {
    assert_eq!(
        TimerService::new().advance_to_next(),
        Err(AdvanceError::NotManual)
    );
    assert_eq!(
        TimerService::new().run_paused(async {}),
        Err(AdvanceError::NotManual)
    );
    let timers = manual();
    let (tx, rx) = mpsc::channel();
    let inner = timers.clone();
    timers
        .schedule(ms(1), move || tx.send(inner.advance_to_next()).unwrap())
        .unwrap();
    timers.advance(ms(1)).unwrap();
    assert_eq!(rx.recv().unwrap(), Err(AdvanceError::FromCallback));
    timers.shutdown().unwrap();
    assert_eq!(timers.advance_to_next(), Err(AdvanceError::Shutdown));
}

/// `run_paused` from a callback is refused whatever the future: before,
/// one ready at its first poll (polled on the driver's thread) was answered
/// `Ok`, and only one that had to wait got `FromCallback`.
#[test]
fn run_paused_from_a_callback_is_refused_ready_or_not() {
    let timers = manual();
    let (tx, rx) = mpsc::channel();
    let inner = timers.clone();
    timers
        .schedule(ms(1), move || {
            let ready = inner.run_paused(async { "ready" });
            let waiting = inner.run_paused(inner.sleep(ms(5)));
            tx.send((ready, waiting)).unwrap();
        })
        .unwrap();
    timers.advance(ms(1)).unwrap();
    let (ready, waiting) = rx.recv().unwrap();
    assert_eq!(ready, Err(AdvanceError::FromCallback));
    assert_eq!(waiting, Err(AdvanceError::FromCallback));
}

#[test]
fn run_paused_waits_for_another_thread_when_no_timer_can_come_due() {
    let timers = manual();
    let start = timers.now();
    // What a channel from a worker thread does: the value, and the waker
    // of whoever waits for it.
    let shared = Arc::new(std::sync::Mutex::new((None, None::<std::task::Waker>)));
    let worker = {
        let shared = Arc::clone(&shared);
        thread::spawn(move || {
            thread::sleep(ms(20));
            let mut guard = shared.lock().unwrap();
            guard.0 = Some(42);
            if let Some(waker) = guard.1.take() {
                waker.wake();
            }
        })
    };
    let got = paused(
        &timers,
        poll_fn(|cx| {
            let mut guard = shared.lock().unwrap();
            match guard.0 {
                Some(value) => Poll::Ready(value),
                None => {
                    guard.1 = Some(cx.waker().clone());
                    Poll::Pending
                }
            }
        }),
    );
    worker.join().unwrap();
    assert_eq!(got, 42);
    assert_eq!(timers.now(), start, "no timer, so the clock stayed");
}

#[test]
fn a_future_that_wakes_itself_is_polled_again_before_the_clock_moves() {
    let timers = manual();
    let start = timers.now();
    // An hour's sleep is pending meanwhile: yielding must not jump to it.
    let _hour = common::polled(Box::pin(timers.sleep(HOUR)));
    let mut yields = 0;
    timers
        .run_paused(poll_fn(|cx| {
            yields += 1;
            if yields == 100 {
                return Poll::Ready(());
            }
            cx.waker().wake_by_ref();
            Poll::Pending
        }))
        .unwrap();
    assert_eq!(timers.now(), start);
}

#[test]
fn other_timers_fire_on_the_way_in_deadline_order() {
    let timers = manual();
    let order = Arc::new(std::sync::Mutex::new(Vec::new()));
    for (name, at) in [("b", 20), ("a", 10), ("c", 30)] {
        let order = Arc::clone(&order);
        timers
            .schedule_detached(ms(at), move || order.lock().unwrap().push(name))
            .unwrap();
    }
    paused(&timers, timers.sleep(ms(25)));
    assert_eq!(*order.lock().unwrap(), ["a", "b"]);
    assert_eq!(timers.advance_to_next(), Ok(Some(ms(5))));
    assert_eq!(*order.lock().unwrap(), ["a", "b", "c"]);
}

/// Where a deadline lands on a manual clock of 1 ms ticks that started at
/// `start`: the first tick at or after it (rounded up, never down).
fn on_tick(start: Instant, deadline: Instant) -> Instant {
    let tick = ms(1).as_nanos();
    let ticks = (deadline - start).as_nanos().div_ceil(tick);
    start + Duration::from_nanos(u64::try_from(ticks * tick).unwrap())
}

/// tokio's `delayed_sleep_level_0`, `sub_ms_delayed_sleep`,
/// `delayed_sleep_wrapping_level_0`, `greater_than_max`, `long_sleeps` and
/// `multi_long_sleeps`, one after another: each sleep ends on the first
/// tick at or after its deadline, not a tick later, from a few milliseconds
/// to a decade (the wheel's every level, and past its top).
#[test]
fn sleeps_of_every_length_end_on_the_first_tick_at_or_after_their_deadline() {
    const YEAR: Duration = Duration::from_secs(365 * 24 * 3600);
    let timers = manual();
    let start = timers.now();
    let delays = [
        ms(1),
        ms(10),
        ms(60),
        ms(5),
        ms(60),
        ms(1) + Duration::from_nanos(1), // off the tick: rounds up to 2 ms
        Duration::from_micros(1),
        5 * YEAR,
        YEAR,
        YEAR,
        YEAR,
        10 * YEAR,
    ];
    let woke = paused(&timers, async {
        let mut woke = Vec::new();
        for delay in delays {
            let deadline = timers.now() + delay;
            timers.sleep_until(deadline).await;
            woke.push((deadline, timers.now()));
        }
        woke
    });
    for (deadline, at) in woke {
        assert_eq!(
            at,
            on_tick(start, deadline),
            "deadline {:?}",
            deadline - start
        );
    }
}

/// tokio's `paused_time_is_deterministic`: thousands of random sleeps in a
/// row, each ending exactly on its deadline's tick, and a second run with
/// the same sleeps sees the same times.
#[test]
fn random_sleeps_in_a_row_end_on_their_ticks_and_a_second_run_sees_the_same() {
    let run = || {
        let timers = manual();
        let start = timers.now();
        let mut rng = common::XorShift::new(1);
        paused(&timers, async {
            let mut seen = Vec::new();
            for _ in 0..2_000 {
                let deadline = timers.now() + Duration::from_nanos(rng.below(1_000_000_000));
                timers.sleep_until(deadline).await;
                assert_eq!(timers.now(), on_tick(start, deadline));
                seen.push(timers.now() - start);
            }
            seen
        })
    };
    assert_eq!(run(), run());
}

/// tokio's `sleep_no_poll`, and past it: a sleep's timer is made by its
/// first poll, so a sleep made and not polled while the clock moves waits
/// for its deadline as usual; one whose deadline the clock passed before
/// its first poll completes without the clock moving again, though a later
/// timer is pending (`run_paused` moves to the earliest deadline pending,
/// and this one is earlier than the clock). Twenty services: whether the
/// driver fires the passed timer before `run_paused` looks for the next
/// deadline is a race, and each way must come out the same.
#[test]
fn a_sleep_first_polled_after_the_clock_passed_its_deadline_does_not_move_the_clock() {
    for round in 0..20 {
        let timers = manual();
        let start = timers.now();
        let mut short_of = timers.sleep_until(start + ms(300));
        let mut passed = timers.sleep_until(start + ms(50));
        timers.advance(ms(100)).unwrap();
        assert!(common::poll_once(&mut short_of, std::task::Waker::noop()).is_pending());
        paused(&timers, &mut passed);
        assert_eq!(
            timers.now() - start,
            ms(100),
            "round {round}: the clock moved past a deadline it had passed"
        );
        assert!(!short_of.is_elapsed(), "round {round}: fired on the way");
        paused(&timers, &mut short_of);
        assert_eq!(timers.now() - start, ms(300));
        assert_eq!(timers.pending(), 0);
    }
}

/// The tick count after each fourth tick of `every`, taken by a task that,
/// after each other tick, wakes itself and returns `Pending`.
async fn every_fourth_tick(every: &mut wheel_sync::Interval, ticks: &mut u32) -> u32 {
    poll_fn(|cx| {
        if every.poll_tick(cx).is_pending() {
            return Poll::Pending;
        }
        *ticks += 1;
        if *ticks % 4 == 0 {
            return Poll::Ready(*ticks);
        }
        cx.waker().wake_by_ref();
        Poll::Pending
    })
    .await
}

/// tokio's `stream_with_interval_poll_tick_self_waking`: a task that takes
/// a tick, wakes itself and returns `Pending` is polled again and keeps
/// ticking on schedule, well within a timeout.
#[test]
fn an_interval_polled_again_by_its_own_wake_keeps_its_schedule() {
    let timers = manual();
    let start = timers.now();
    let mut every = timers.interval(ms(10));
    let mut ticks = 0;
    let out = paused(&timers, async {
        let handed_out = async {
            let mut out = Vec::new();
            for _ in 0..3 {
                out.push(every_fourth_tick(&mut every, &mut ticks).await);
            }
            out
        };
        let out = timers.timeout(ms(150), handed_out).await;
        (out, timers.now() - start)
    });
    // The twelfth tick is due at 110 ms: eleven periods after the first.
    assert_eq!(out, (Ok(vec![4, 8, 12]), ms(110)));
}

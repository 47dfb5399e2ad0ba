//! `Interval` and `Timeout` at their edges, on a manual clock: a
//! `MissedTickBehavior` switched mid-burst, `reset_at` to the past, the
//! latest waker is the one woken, a tick future or an interval dropped
//! while its tick fires; nested timeouts, `into_inner` of a waiting
//! timeout, and a timeout whose inner future becomes ready after a
//! shutdown.
#![cfg(not(loom))]

use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::{Arc, Barrier};
use std::task::{Context, Poll, Waker};
use std::thread;
use std::time::Instant;

use wheel_sync::{Elapsed, Interval, MissedTickBehavior, TimerService};

mod common;
use common::{assert_adds_up, counting_waker, manual, ms, poll_once, HOUR};

fn poll_tick(interval: &mut Interval) -> Poll<Instant> {
    interval.poll_tick(&mut Context::from_waker(Waker::noop()))
}

/// The ticks ready now, in order, until the interval waits.
fn ready_ticks(interval: &mut Interval) -> Vec<Instant> {
    let mut ticks = Vec::new();
    while let Poll::Ready(at) = poll_tick(interval) {
        ticks.push(at);
        assert!(ticks.len() < 1000, "an interval that never waits");
    }
    ticks
}

/// `set_missed_tick_behavior` applies "from the next one on": a burst
/// switched to `Skip` halfway drops what is left of it; `Delay` then
/// starts a new schedule a period after the late tick; `Burst` again
/// delivers every missed tick.
#[test]
fn a_behavior_switched_mid_stream_decides_from_the_next_late_tick_on() {
    let timers = manual();
    let t0 = timers.now();
    let at = |n: u64| t0 + ms(n);
    let mut every = timers.interval(ms(10));
    assert_eq!(every.missed_tick_behavior(), MissedTickBehavior::Burst);
    assert_eq!(poll_tick(&mut every), Poll::Ready(at(0)));

    timers.advance(ms(35)).unwrap();
    assert_eq!(poll_tick(&mut every), Poll::Ready(at(10)), "burst: 10");
    every.set_missed_tick_behavior(MissedTickBehavior::Skip);
    // 20 is observed at 35: late, so Skip decides the next: 40, not 30.
    assert_eq!(ready_ticks(&mut every), [at(20)]);
    timers.advance(ms(4)).unwrap();
    assert!(poll_tick(&mut every).is_pending(), "at 39");
    timers.advance(ms(1)).unwrap();
    assert_eq!(ready_ticks(&mut every), [at(40)]);

    every.set_missed_tick_behavior(MissedTickBehavior::Delay);
    timers.advance(ms(25)).unwrap(); // 65
                                     // 50 is observed at 65: a new schedule from 65 + 10.
    assert_eq!(ready_ticks(&mut every), [at(50)]);
    timers.advance(ms(9)).unwrap();
    assert!(poll_tick(&mut every).is_pending(), "at 74");
    timers.advance(ms(1)).unwrap();
    assert_eq!(ready_ticks(&mut every), [at(75)]);

    every.set_missed_tick_behavior(MissedTickBehavior::Burst);
    timers.advance(ms(30)).unwrap(); // 105
    assert_eq!(ready_ticks(&mut every), [at(85), at(95), at(105)]);
    timers.advance(ms(10)).unwrap();
    assert_eq!(ready_ticks(&mut every), [at(115)]);
    assert_eq!(every.period(), ms(10), "no switch changes the period");
}

/// `reset_at` a deadline that has passed: that tick is due at once, and
/// the ones after it follow the missed-tick behavior, as a late tick's do.
#[test]
fn reset_at_a_passed_deadline_delivers_it_at_once_then_follows_the_behavior() {
    let cases = [
        // (behavior, ready at once after reset_at(75) at 100, next tick)
        (MissedTickBehavior::Burst, vec![75, 85, 95], 105),
        (MissedTickBehavior::Delay, vec![75], 110),
        (MissedTickBehavior::Skip, vec![75], 105),
    ];
    for (behavior, at_once, next) in cases {
        let timers = manual();
        let t0 = timers.now();
        let at = |n: u64| t0 + ms(n);
        let mut every = timers.interval_at(at(200), ms(10));
        every.set_missed_tick_behavior(behavior);
        assert!(poll_tick(&mut every).is_pending());
        timers.advance(ms(100)).unwrap();
        every.reset_at(at(75));
        let want: Vec<Instant> = at_once.iter().map(|&n| at(n)).collect();
        assert_eq!(ready_ticks(&mut every), want, "{behavior:?}");
        timers.advance(ms(next - 100 - 1)).unwrap();
        assert!(poll_tick(&mut every).is_pending(), "{behavior:?}: early");
        timers.advance(ms(1)).unwrap();
        assert_eq!(ready_ticks(&mut every), [at(next)], "{behavior:?}");
        assert_eq!(every.period(), ms(10));
    }
}

/// `poll_tick`: "the latest one polled with is woken"; the tick a dropped
/// `tick()` future was waiting for is not lost.
#[test]
fn the_latest_waker_is_woken_and_a_dropped_tick_future_loses_no_tick() {
    let timers = manual();
    let t0 = timers.now();
    let mut every = timers.interval(ms(10));
    assert_eq!(poll_tick(&mut every), Poll::Ready(t0));
    let (first, first_waker) = counting_waker();
    let (second, second_waker) = counting_waker();
    assert!(every
        .poll_tick(&mut Context::from_waker(&first_waker))
        .is_pending());
    // Polled by another task on another thread.
    let mut every = thread::spawn(move || {
        assert!(every
            .poll_tick(&mut Context::from_waker(&second_waker))
            .is_pending());
        every
    })
    .join()
    .unwrap();
    timers.advance(ms(10)).unwrap();
    assert_eq!((first.count(), second.count()), (0, 1));
    assert_eq!(poll_tick(&mut every), Poll::Ready(t0 + ms(10)));

    // A `tick()` future polled into waiting, then dropped.
    {
        let mut tick = Box::pin(every.tick());
        assert!(poll_once(&mut tick, Waker::noop()).is_pending());
    }
    timers.advance(ms(10)).unwrap();
    assert_eq!(poll_tick(&mut every), Poll::Ready(t0 + ms(20)));
    assert!(poll_tick(&mut every).is_pending());
}

/// An interval dropped on one thread while another's `advance` fires its
/// tick: no panic, nothing left pending, and the account adds up.
#[test]
fn an_interval_dropped_while_its_tick_fires_leaves_nothing_pending() {
    let timers = manual();
    for round in 0..200 {
        let mut every = timers.interval(ms(1));
        assert!(poll_tick(&mut every).is_ready());
        assert!(poll_tick(&mut every).is_pending());
        assert_eq!(timers.pending(), 1, "round {round}");
        let start = Arc::new(Barrier::new(2));
        let dropper = {
            let start = Arc::clone(&start);
            thread::spawn(move || {
                start.wait();
                drop(every);
            })
        };
        start.wait();
        timers.advance(ms(1)).unwrap();
        dropper.join().unwrap();
        assert_eq!(timers.pending(), 0, "round {round}");
    }
    let stats = timers.stats();
    assert_eq!(stats.pending, 0);
    assert_adds_up(&stats, "intervals dropped while firing");
}

/// A future that is ready once its gate is opened through `get_mut`.
struct Gate(bool);

impl Future for Gate {
    type Output = &'static str;

    fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<&'static str> {
        if self.0 {
            Poll::Ready("opened")
        } else {
            Poll::Pending
        }
    }
}

/// Nested timeouts: the nearer deadline decides, and at equal deadlines
/// the inner one (polled first) does. Each ends exactly at its deadline.
#[test]
fn nested_timeouts_end_at_the_nearer_deadline() {
    let timers = manual();
    type Nested = Result<Result<(), Elapsed>, Elapsed>;
    let cases: [(u64, u64, Nested); 3] = [
        (10, 20, Err(Elapsed::default())),
        (20, 10, Ok(Err(Elapsed::default()))),
        (15, 15, Ok(Err(Elapsed::default()))),
    ];
    for (outer, inner, want) in cases {
        let start = timers.now();
        let nested = timers.timeout(
            ms(outer),
            timers.timeout(ms(inner), std::future::pending::<()>()),
        );
        assert_eq!(nested.deadline(), start + ms(outer));
        assert_eq!(nested.get_ref().deadline(), start + ms(inner));
        let got = timers.run_paused(nested).unwrap();
        assert_eq!(got, want, "outer {outer} ms, inner {inner} ms");
        assert_eq!(timers.now() - start, ms(outer.min(inner)));
        assert_eq!(timers.pending(), 0);
    }
}

/// `into_inner` of a timeout that is waiting drops its deadline at once
/// (its timer no longer counts), and the inner future runs on unbounded;
/// `get_mut` reaches the inner future, and a ready one wins over a
/// deadline that has passed.
#[test]
fn into_inner_frees_the_deadline_and_get_mut_reaches_the_future() {
    let timers = manual();
    let start = timers.now();
    let mut timeout = timers.timeout(ms(10), timers.sleep(ms(30)));
    assert!(poll_once(&mut timeout, Waker::noop()).is_pending());
    assert_eq!(timers.pending(), 2, "the inner sleep and the deadline");
    let mut inner = timeout.into_inner();
    assert_eq!(timers.pending(), 1, "the deadline went with into_inner");
    timers.advance(ms(10)).unwrap();
    assert!(poll_once(&mut inner, Waker::noop()).is_pending());
    timers.advance(ms(20)).unwrap();
    assert!(poll_once(&mut inner, Waker::noop()).is_ready());
    assert_eq!(timers.now() - start, ms(30));

    let mut gated = timers.timeout(ms(10), Gate(false));
    assert!(poll_once(&mut gated, Waker::noop()).is_pending());
    timers.advance(ms(10)).unwrap();
    gated.get_mut().0 = true;
    assert_eq!(
        poll_once(&mut gated, Waker::noop()),
        Poll::Ready(Ok("opened"))
    );
}

/// "Polling it after its service was shut down before the deadline panics,
/// unless the inner future is ready": a timeout that waited, whose inner
/// future became ready after the shutdown, resolves `Ok`.
#[test]
fn a_timeout_whose_future_is_ready_after_a_shutdown_resolves_ok() {
    let timers = TimerService::builder().manual_clock().build().unwrap();
    let mut ready_later = timers.timeout(HOUR, Gate(false));
    let mut never_ready = timers.timeout(HOUR, Gate(false));
    assert!(poll_once(&mut ready_later, Waker::noop()).is_pending());
    assert!(poll_once(&mut never_ready, Waker::noop()).is_pending());
    let report = timers.shutdown().unwrap();
    assert_eq!(report.unfired, 2);
    ready_later.get_mut().0 = true;
    assert_eq!(
        poll_once(&mut ready_later, Waker::noop()),
        Poll::Ready(Ok("opened"))
    );
    let polled = catch_unwind(AssertUnwindSafe(|| {
        poll_once(&mut never_ready, Waker::noop())
    }));
    assert!(
        polled.is_err(),
        "a timeout that must wait after shutdown panics"
    );
    assert_eq!(timers.pending(), 0);
}

/// An interval whose next tick was pending when its service shut down
/// reports `is_shut_down`, and waiting for that tick panics, as a `Sleep`'s
/// wait does, even once the tick's time has passed: it is not delivered as
/// if the driver had fired it.
#[test]
fn an_interval_tick_abandoned_by_a_shutdown_panics_after_its_time_too() {
    let timers = TimerService::new();
    let mut every = timers.interval(ms(20));
    assert!(
        poll_tick(&mut every).is_ready(),
        "the first tick is at once"
    );
    assert!(poll_tick(&mut every).is_pending());
    timers.shutdown().unwrap();
    assert!(every.is_shut_down());
    thread::sleep(ms(40));
    let polled = catch_unwind(AssertUnwindSafe(|| poll_tick(&mut every)));
    assert!(
        polled.is_err(),
        "is_shut_down said waiting would panic; poll_tick gave {polled:?}"
    );
}

//! `Interval`: ticks on the schedule and never early, what each
//! `MissedTickBehavior` does after a stall, reset, one timer for a whole
//! life, a period of one nanosecond, and shutdown.
//!
//! Stalls are real sleeps of the test thread; what is asserted is the
//! deadlines the interval returns, which follow from the stall's lower bound
//! alone, so a slow machine cannot fail these tests.
#![cfg(not(loom))]

use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::task::{Context, Poll, Waker};
use std::thread;
use std::time::{Duration, Instant};

use wheel_sync::{Interval, MissedTickBehavior, TimerService};

mod common;
use common::{counting_waker, manual, ms};

/// How long a tick may take before a test gives up on it.
const PATIENCE: Duration = Duration::from_secs(10);
const PERIOD: Duration = Duration::from_millis(10);
/// Longer than three periods: the ticks due at 10, 20 and 30 ms are missed.
const STALL: Duration = Duration::from_millis(35);

/// Runs `future` to completion, failing the test if it takes longer than
/// `PATIENCE` (tokio's own timer keeps the watch).
fn block_on<F: Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap()
        .block_on(async { tokio::time::timeout(PATIENCE, future).await })
        .expect("the interval never ticked")
}

/// The next tick, awaited; checks it did not come before its deadline.
fn tick(interval: &mut Interval) -> Instant {
    let due = block_on(interval.tick());
    assert!(Instant::now() >= due, "a tick came early");
    due
}

/// Polls once, without waiting.
fn poll_now(interval: &mut Interval) -> Poll<Instant> {
    interval.poll_tick(&mut Context::from_waker(Waker::noop()))
}

/// An interval started now whose first tick has been taken, then a stall.
/// Returns it, its start, and when the stall ended.
fn stalled(timers: &TimerService, missed: MissedTickBehavior) -> (Interval, Instant, Instant) {
    let start = Instant::now();
    let mut interval = timers.interval_at(start, PERIOD);
    interval.set_missed_tick_behavior(missed);
    assert_eq!(poll_now(&mut interval), Poll::Ready(start));
    thread::sleep(STALL);
    (interval, start, Instant::now())
}

#[test]
fn ticks_come_at_start_plus_whole_periods_and_never_early() {
    let timers = TimerService::new();
    let start = Instant::now() + Duration::from_millis(2);
    let mut interval = timers.interval_at(start, Duration::from_millis(3));
    for k in 0..8u32 {
        assert_eq!(tick(&mut interval), start + Duration::from_millis(3) * k);
    }
}

#[test]
fn the_first_tick_of_interval_is_due_at_once() {
    let timers = TimerService::new();
    let before = Instant::now();
    let mut interval = timers.interval(Duration::from_secs(3600));
    let Poll::Ready(first) = poll_now(&mut interval) else {
        panic!("the first tick was not ready at once");
    };
    assert!(before <= first && first <= Instant::now());
    assert_eq!(poll_now(&mut interval), Poll::Pending);
}

#[test]
fn by_default_a_stall_bursts_the_missed_ticks_then_keeps_the_schedule() {
    let timers = TimerService::new();
    let (mut interval, start, _) = stalled(&timers, MissedTickBehavior::Burst);
    // All three are past: delivered at once, without waiting for the driver.
    for k in 1..=3u32 {
        assert_eq!(poll_now(&mut interval), Poll::Ready(start + PERIOD * k));
    }
    assert_eq!(tick(&mut interval), start + PERIOD * 4);
    assert_eq!(tick(&mut interval), start + PERIOD * 5);
}

#[test]
fn delay_starts_a_new_schedule_a_period_after_the_late_tick() {
    let timers = TimerService::new();
    let (mut interval, start, stall_end) = stalled(&timers, MissedTickBehavior::Delay);
    assert_eq!(poll_now(&mut interval), Poll::Ready(start + PERIOD));
    let observed_by = Instant::now();
    let next = tick(&mut interval);
    assert!(
        stall_end + PERIOD <= next && next <= observed_by + PERIOD,
        "{:?} after the stall's end",
        next - stall_end
    );
    assert_eq!(tick(&mut interval), next + PERIOD);
}

#[test]
fn skip_drops_the_ticks_whose_time_has_passed_and_stays_on_the_grid() {
    let timers = TimerService::new();
    let (mut interval, start, stall_end) = stalled(&timers, MissedTickBehavior::Skip);
    assert_eq!(poll_now(&mut interval), Poll::Ready(start + PERIOD));
    let observed_by = Instant::now();
    let next = tick(&mut interval);
    let since_start = (next - start).as_nanos();
    assert_eq!(since_start % PERIOD.as_nanos(), 0, "off the grid");
    assert!(next > stall_end && next <= observed_by + PERIOD);
    assert!(next >= start + PERIOD * 4, "a missed tick was delivered");
    assert_eq!(tick(&mut interval), next + PERIOD);
}

#[test]
fn reset_starts_the_schedule_again_a_period_from_now() {
    let timers = TimerService::new();
    let mut interval = timers.interval(PERIOD);
    tick(&mut interval);
    let before = Instant::now();
    interval.reset();
    let next = tick(&mut interval);
    assert!(next >= before + PERIOD);
    assert_eq!(tick(&mut interval), next + PERIOD);

    let at = Instant::now() + Duration::from_millis(3);
    interval.reset_at(at);
    assert_eq!(tick(&mut interval), at);
    assert_eq!(tick(&mut interval), at + PERIOD);
}

#[test]
fn an_interval_is_one_pending_timer_for_its_whole_life() {
    let timers = TimerService::new();
    let mut later = timers.interval_at(Instant::now() + Duration::from_secs(3600), PERIOD);
    assert_eq!(poll_now(&mut later), Poll::Pending);
    assert_eq!(timers.pending(), 1);
    drop(later);
    assert_eq!(timers.pending(), 0);

    let mut interval = timers.interval(Duration::from_millis(1));
    for _ in 0..20 {
        tick(&mut interval);
        assert!(timers.pending() <= 1, "{} pending", timers.pending());
    }
    drop(interval);
    assert_eq!(timers.pending(), 0);
}

#[test]
fn a_period_past_what_instant_holds_ticks_once_and_then_waits() {
    let timers = TimerService::new();
    let mut interval = timers.interval(Duration::MAX);
    assert!(poll_now(&mut interval).is_ready());
    assert_eq!(poll_now(&mut interval), Poll::Pending);
    assert_eq!(timers.pending(), 1);
}

#[test]
#[should_panic(expected = "period must be non-zero")]
fn a_zero_period_panics() {
    let _ = TimerService::new().interval(Duration::ZERO);
}

#[test]
fn after_shutdown_a_tick_not_yet_due_is_reported_and_panics_when_polled() {
    let timers = TimerService::new();
    let start = Instant::now();
    let mut interval = timers.interval_at(start, Duration::from_secs(3600));
    assert_eq!(poll_now(&mut interval), Poll::Ready(start));
    assert!(!interval.is_shut_down());
    timers.shutdown().unwrap();
    assert!(interval.is_shut_down());
    let polled = catch_unwind(AssertUnwindSafe(|| poll_now(&mut interval)));
    assert!(polled.is_err(), "polled {polled:?}");
}

/// tokio's `reset_at_bigger_than_interval`, on a manual clock: moved
/// further out than a period, the schedule holds every tick until the new
/// start (the waiting task is not woken meanwhile), then runs a period
/// apart from it.
#[test]
fn reset_at_beyond_a_period_holds_every_tick_until_then() {
    let timers = manual();
    let start = timers.now();
    let (wakes, waker) = counting_waker();
    let mut cx = Context::from_waker(&waker);
    let mut every = timers.interval_at(start, ms(300));
    assert_eq!(every.poll_tick(&mut cx), Poll::Ready(start));
    timers.advance(ms(300)).unwrap();
    assert_eq!(every.poll_tick(&mut cx), Poll::Ready(start + ms(300)));
    timers.advance(ms(100)).unwrap();
    assert_eq!(every.poll_tick(&mut cx), Poll::Pending);
    every.reset_at(timers.now() + ms(1000));
    for _ in 0..3 {
        timers.advance(ms(300)).unwrap();
        assert_eq!(every.poll_tick(&mut cx), Poll::Pending);
    }
    assert_eq!(wakes.count(), 0, "woken at a tick the reset dropped");
    timers.advance(ms(100)).unwrap();
    assert_eq!(wakes.count(), 1);
    assert_eq!(every.poll_tick(&mut cx), Poll::Ready(start + ms(1400)));
    timers.advance(ms(300)).unwrap();
    assert_eq!(every.poll_tick(&mut cx), Poll::Ready(start + ms(1700)));
    assert_eq!(every.poll_tick(&mut cx), Poll::Pending);
}

/// A period of 1 ns on a 1 ms tick: a clock moved 10 µs owes ten thousand
/// ticks, and `Burst` hands out each, on its own nanosecond, none early,
/// without the driver; then the interval waits, as one timer, for the next
/// tick the service can count. `Skip` and `Delay` then stay a nanosecond
/// past the late tick's observation.
#[test]
fn a_one_nanosecond_period_owes_every_nanosecond_s_tick_and_none_early() {
    let timers = manual();
    let start = timers.now();
    let ns = Duration::from_nanos;
    let (wakes, waker) = counting_waker();
    let mut cx = Context::from_waker(&waker);
    let mut every = timers.interval_at(start, ns(1));
    assert_eq!(every.poll_tick(&mut cx), Poll::Ready(start));
    timers.advance(Duration::from_micros(10)).unwrap();
    for k in 1..=10_000u32 {
        assert_eq!(every.poll_tick(&mut cx), Poll::Ready(start + ns(1) * k));
    }
    assert_eq!(every.poll_tick(&mut cx), Poll::Pending);
    assert_eq!(timers.pending(), 1);

    // The next tick, at 10 001 ns, rounds up to the 1 ms tick.
    timers.advance(ms(1) - Duration::from_micros(10)).unwrap();
    assert_eq!(wakes.count(), 1);
    every.set_missed_tick_behavior(MissedTickBehavior::Skip);
    assert_eq!(every.poll_tick(&mut cx), Poll::Ready(start + ns(10_001)));
    assert_eq!(
        every.poll_tick(&mut cx),
        Poll::Pending,
        "skip left a past tick"
    );
    timers.advance(ms(1)).unwrap();
    every.set_missed_tick_behavior(MissedTickBehavior::Delay);
    assert_eq!(every.poll_tick(&mut cx), Poll::Ready(start + ms(1) + ns(1)));
    assert_eq!(every.poll_tick(&mut cx), Poll::Pending);
    timers.advance(ms(1)).unwrap();
    assert_eq!(every.poll_tick(&mut cx), Poll::Ready(start + ms(2) + ns(1)));
    assert_eq!(timers.pending(), 1);
}

/// On a service whose tick is 1 ns, a 1 ns interval is woken by the driver
/// for each tick as the clock moves a nanosecond at a time, and each tick
/// comes exactly at its deadline.
#[test]
fn at_a_one_nanosecond_tick_a_one_nanosecond_interval_is_woken_for_every_tick() {
    let timers = common::manual_ticking(Duration::from_nanos(1));
    let start = timers.now();
    let (wakes, waker) = counting_waker();
    let mut cx = Context::from_waker(&waker);
    let mut every = timers.interval_at(start, Duration::from_nanos(1));
    assert_eq!(every.poll_tick(&mut cx), Poll::Ready(start));
    for k in 1..=1_000u32 {
        assert_eq!(every.poll_tick(&mut cx), Poll::Pending, "tick {k}");
        timers.advance(Duration::from_nanos(1)).unwrap();
        assert_eq!(wakes.count(), k as usize, "tick {k}: not woken");
        let due = start + Duration::from_nanos(1) * k;
        assert_eq!(timers.now(), due);
        assert_eq!(every.poll_tick(&mut cx), Poll::Ready(due));
    }
    assert!(timers.pending() <= 1);
}

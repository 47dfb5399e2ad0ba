//! Never early, at the edges: a 1 ns tick, `Duration::MAX`, deadlines past
//! what a tick can count or an `Instant` can hold, and a manual clock moved
//! two centuries; and bad configuration is an `Err` from `build`, never a
//! panic.
#![cfg(not(loom))]

use std::future::Future;
use std::io::ErrorKind;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use wheel_sync::{DelayQueue, TimerService};

const YEAR: Duration = Duration::from_secs(365 * 24 * 3600);

fn manual(tick: Duration) -> TimerService {
    TimerService::builder()
        .tick(tick)
        .manual_clock()
        .build()
        .unwrap()
}

/// A callback that sets a flag, scheduled `delay` out.
fn flag_after(timers: &TimerService, delay: Duration) -> Arc<AtomicBool> {
    let fired = Arc::new(AtomicBool::new(false));
    let flag = fired.clone();
    timers
        .schedule(delay, move || flag.store(true, SeqCst))
        .unwrap();
    fired
}

#[test]
fn at_a_one_nanosecond_tick_a_century_is_not_cut_short() {
    let timers = manual(Duration::from_nanos(1));
    // 2^61 ns is 73 years: past that, a deadline used to be clamped there.
    let century = flag_after(&timers, 100 * YEAR);
    let sleep = timers.sleep(100 * YEAR);
    let decade = flag_after(&timers, 10 * YEAR);
    timers.advance(80 * YEAR).unwrap();
    assert!(decade.load(SeqCst), "a deadline in range fires");
    assert!(!century.load(SeqCst), "fired 20 years early");
    assert!(!sleep.is_elapsed(), "elapsed 20 years early");
    timers.advance(200 * YEAR).unwrap();
    // Past the tick range: never, rather than early.
    assert!(!century.load(SeqCst));
    assert!(!sleep.is_elapsed());
}

#[test]
fn duration_max_never_comes_however_far_the_clock_moves() {
    for tick in [
        Duration::from_nanos(1),
        Duration::from_millis(1),
        Duration::from_secs(3600),
    ] {
        let timers = manual(tick);
        let callback = flag_after(&timers, Duration::MAX);
        let detached = Arc::new(AtomicBool::new(false));
        let flag = detached.clone();
        timers
            .schedule_detached(Duration::MAX, move || flag.store(true, SeqCst))
            .unwrap();
        let mut cx = Context::from_waker(Waker::noop());
        let mut sleep = timers.sleep(Duration::MAX);
        assert!(Pin::new(&mut sleep).poll(&mut cx).is_pending());
        let mut queue = DelayQueue::with_service(&timers);
        queue.insert("never", Duration::MAX);
        let mut interval = timers.interval(Duration::MAX);
        assert!(
            interval.poll_tick(&mut cx).is_ready(),
            "the first tick is at once"
        );
        for _ in 0..3 {
            timers.advance(200 * YEAR).unwrap();
            assert!(!callback.load(SeqCst), "tick {tick:?}");
            assert!(!detached.load(SeqCst), "tick {tick:?}");
            assert!(!sleep.is_elapsed(), "tick {tick:?}");
            assert_eq!(queue.poll_expired(&mut cx), Poll::Pending, "tick {tick:?}");
            assert!(interval.poll_tick(&mut cx).is_pending(), "tick {tick:?}");
        }
        assert_eq!(timers.pending(), 5);
    }
}

#[test]
fn a_deadline_past_what_the_clock_counts_is_never_due_on_any_tick() {
    // A clock saturates at 584 years of nanoseconds: a deadline beyond that
    // maps to "never" rather than to the saturated, earlier, tick.
    for tick in [Duration::from_millis(1), Duration::from_secs(1)] {
        let timers = manual(tick);
        let far = timers.now() + 600 * YEAR;
        let fired = Arc::new(AtomicBool::new(false));
        let flag = fired.clone();
        timers
            .schedule_at(far, move || flag.store(true, SeqCst))
            .unwrap();
        timers.advance(590 * YEAR).unwrap();
        assert!(
            !fired.load(SeqCst),
            "fired 10 years early at a {tick:?} tick"
        );
    }
}

#[test]
fn five_centuries_are_still_in_range_and_fire_on_time() {
    // The clock counts 584 years of nanoseconds, whatever the tick.
    let timers = manual(Duration::from_millis(1));
    let fired = flag_after(&timers, 500 * YEAR);
    timers.advance(499 * YEAR).unwrap();
    assert!(!fired.load(SeqCst));
    timers.advance(YEAR).unwrap();
    assert!(fired.load(SeqCst), "500 years is within the clock's range");
}

#[test]
fn bad_configuration_is_an_error_from_build() {
    let builder = TimerService::builder;
    let kind = |b: wheel_sync::Builder| b.build().map(drop).unwrap_err().kind();
    assert_eq!(
        kind(builder().tick(Duration::ZERO)),
        ErrorKind::InvalidInput
    );
    assert_eq!(kind(builder().tick(Duration::MAX)), ErrorKind::InvalidInput);
    assert_eq!(
        kind(builder().thread_name("timer\0")),
        ErrorKind::InvalidInput
    );
    // The largest tick the clock can count builds, and is exact.
    let timers = manual(Duration::from_nanos(u64::MAX));
    let fired = flag_after(&timers, Duration::from_secs(1));
    timers.advance(Duration::from_secs(3600)).unwrap();
    assert!(!fired.load(SeqCst), "rounded up to the one tick, 584 years");
}

//! Never early, at the edges: a 1 ns tick, `Duration::MAX`, deadlines past
//! what a tick can count or an `Instant` can hold (and at the last one it
//! holds), and a manual clock moved two centuries; and bad configuration is
//! an `Err` from `build`, never a panic.
#![cfg(not(loom))]

use std::future::Future;
use std::io::ErrorKind;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use wheel_sync::{DelayQueue, TimerService};

mod common;

const YEAR: Duration = Duration::from_secs(365 * 24 * 3600);

use common::manual_ticking as manual;

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

/// tokio's `very_large_timeout`: a timeout of `Duration::MAX` never
/// elapses, however far the clock moves, and its future still wins when it
/// is ready; the inner future's own wake reaches the task.
#[test]
fn a_timeout_of_duration_max_never_elapses_and_its_future_still_wins() {
    use std::sync::Mutex;
    let timers = manual(Duration::from_millis(1));
    // A one-shot channel: the value, and the waker of whoever waits for it.
    let slot = Arc::new(Mutex::new((None, None::<Waker>)));
    let rx = std::future::poll_fn(|cx| {
        let mut slot = slot.lock().unwrap();
        match slot.0.take() {
            Some(value) => Poll::Ready(value),
            None => {
                slot.1 = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    });
    let mut timeout = Box::pin(timers.timeout(Duration::MAX, rx));
    let (wakes, waker) = common::counting_waker();
    let mut cx = Context::from_waker(&waker);
    assert!(timeout.as_mut().poll(&mut cx).is_pending());
    timers.advance(10 * YEAR).unwrap();
    timers.advance(200 * YEAR).unwrap();
    assert_eq!(wakes.count(), 0, "the timeout's timer fired");
    assert!(timeout.as_mut().poll(&mut cx).is_pending());
    let mut sent = slot.lock().unwrap();
    sent.0 = Some("reply");
    sent.1.take().expect("the task waits").wake();
    drop(sent);
    assert_eq!(wakes.count(), 1);
    assert_eq!(timeout.as_mut().poll(&mut cx), Poll::Ready(Ok("reply")));
    drop(timeout);
    assert_eq!(timers.pending(), 0);
}

/// tokio's `issue_5183` and `no_out_of_bounds_close_to_max`: sleeps whose
/// deadlines `Instant` cannot hold (`u64::MAX / 10` seconds, `Duration::MAX`
/// less a millisecond) are made and polled without a panic, never come,
/// and do not stop a 1 ns sleep raced against them from ending a tick on.
#[test]
fn sleeps_too_long_for_instant_never_come_and_a_short_one_beside_them_ends_on_time() {
    let timers = manual(Duration::from_millis(1));
    let start = timers.now();
    let mut huge = timers.sleep(Duration::from_secs(u64::MAX / 10));
    let mut near_max = timers.sleep(Duration::MAX - Duration::from_millis(1));
    let mut tiny = timers.sleep(Duration::from_nanos(1));
    assert!(huge.deadline() > start && near_max.deadline() > start);
    let first = timers
        .run_paused(std::future::poll_fn(|cx| {
            for (name, sleep) in [
                ("huge", &mut huge),
                ("near max", &mut near_max),
                ("tiny", &mut tiny),
            ] {
                if Pin::new(sleep).poll(cx).is_ready() {
                    return Poll::Ready(name);
                }
            }
            Poll::Pending
        }))
        .unwrap();
    assert_eq!(first, "tiny");
    assert_eq!(timers.now() - start, Duration::from_millis(1));
    assert_eq!(
        timers.advance_to_next(),
        Ok(None),
        "they can never come due"
    );
    timers.advance(600 * YEAR).unwrap();
    assert!(!huge.is_elapsed() && !near_max.is_elapsed());
    assert_eq!(timers.pending(), 2);
}

/// The latest `Instant` this platform can hold (`Instant` has no `MAX`).
fn last_instant() -> std::time::Instant {
    let now = std::time::Instant::now();
    // The largest `Duration` that `now` can be moved by, found by halving.
    let (mut fits, mut step) = (Duration::ZERO, Duration::MAX);
    while step > Duration::ZERO {
        if let Some(further) = fits.checked_add(step) {
            if now.checked_add(further).is_some() {
                fits = further;
                continue;
            }
        }
        step /= 2;
    }
    now + fits
}

/// Deadlines at the very last `Instant` the platform holds, given to every
/// kind of timer (callbacks with and without a handle, a sleep, a timeout,
/// a `DelayQueue` item and its reset, an interval's start): nothing panics,
/// nothing comes, however far the clock moves, and each keeps its deadline.
#[test]
fn deadlines_at_the_last_instant_the_platform_holds_never_come_and_panic_nowhere() {
    let timers = manual(Duration::from_millis(1));
    let last = last_instant();
    assert!(last.checked_add(Duration::from_nanos(1)).is_none());
    let fired = Arc::new(AtomicBool::new(false));
    let flag = fired.clone();
    let handle = timers
        .schedule_at(last, move || flag.store(true, SeqCst))
        .unwrap();
    let flag = fired.clone();
    timers
        .schedule_detached_at(last, move || flag.store(true, SeqCst))
        .unwrap();
    let mut cx = Context::from_waker(Waker::noop());
    let mut sleep = timers.sleep_until(last);
    let mut timeout = timers.timeout_at(last, std::future::pending::<()>());
    let mut queue = DelayQueue::with_service(&timers);
    let key = queue.insert_at("last", last);
    let moved = queue.insert("moved", Duration::from_millis(1));
    queue.reset_at(&moved, last);
    let mut interval = timers.interval_at(last, Duration::from_nanos(1));
    assert_eq!((sleep.deadline(), timeout.deadline()), (last, last));
    assert_eq!((queue.deadline(&key), queue.deadline(&moved)), (last, last));
    for _ in 0..3 {
        assert!(Pin::new(&mut sleep).poll(&mut cx).is_pending());
        assert!(Pin::new(&mut timeout).poll(&mut cx).is_pending());
        assert!(queue.poll_expired(&mut cx).is_pending());
        assert!(interval.poll_tick(&mut cx).is_pending());
        timers.advance(200 * YEAR).unwrap();
    }
    assert!(!fired.load(SeqCst) && !handle.is_fired());
    assert!(!sleep.is_elapsed());
    // Two callbacks, the sleep, the timeout, the queue and the interval.
    assert_eq!(timers.pending(), 6);
}

/// The resets whose new deadline is past what an `Instant` holds: an
/// interval reset `Duration::MAX` after now, or reset with such a period,
/// and a `DelayQueue` item reset `Duration::MAX` out. None panics, and none
/// ticks or comes out however far the clock moves.
#[test]
fn resets_to_duration_max_never_come_and_panic_nowhere() {
    let timers = manual(Duration::from_millis(1));
    let mut cx = Context::from_waker(Waker::noop());
    let mut after = timers.interval(Duration::from_millis(1));
    assert!(
        after.poll_tick(&mut cx).is_ready(),
        "the first tick is at once"
    );
    after.reset_after(Duration::MAX);
    let mut long = timers.interval(Duration::MAX);
    assert!(long.poll_tick(&mut cx).is_ready());
    long.reset();
    let mut queue = DelayQueue::with_service(&timers);
    let key = queue.insert("soon", Duration::from_millis(1));
    queue.reset(&key, Duration::MAX);
    assert!(queue.poll_expired(&mut cx).is_pending());
    timers.advance(200 * YEAR).unwrap();
    assert!(after.poll_tick(&mut cx).is_pending());
    assert!(long.poll_tick(&mut cx).is_pending());
    assert!(queue.poll_expired(&mut cx).is_pending());
    assert_eq!(queue.len(), 1);
}

/// A deadline in the manual clock's last partial tick: rounded up, its
/// tick begins past the `u64::MAX` ns where the clock stops, so the clock
/// never reaches it. Such a timer never comes due, and `advance_to_next`
/// says so rather than naming it, again and again, without moving.
#[test]
fn a_deadline_in_the_clocks_last_partial_tick_never_comes_due() {
    let timers = manual(Duration::from_millis(1));
    let handle = timers
        .schedule(Duration::from_nanos(u64::MAX - 1), || ())
        .unwrap();
    timers.advance(Duration::MAX).unwrap();
    assert!(!handle.is_fired());
    for _ in 0..3 {
        assert_eq!(timers.advance_to_next().unwrap(), None);
    }
    assert!(!handle.is_fired());
    assert_eq!(timers.pending(), 1);
}

/// `run_paused` on a sleep that can never come due waits for a wake like
/// any `block_on`, looking again every millisecond: the driver, asked for
/// the next deadline, finds none, and neither spins.
#[test]
fn run_paused_on_a_sleep_in_the_clocks_last_partial_tick_waits_without_spinning() {
    let timers = manual(Duration::from_millis(1));
    let waiter = timers.clone();
    std::thread::spawn(move || {
        let _ = waiter.run_paused(waiter.sleep(Duration::from_nanos(u64::MAX - 1)));
    });
    std::thread::sleep(Duration::from_millis(100));
    let before = timers.stats().rounds;
    std::thread::sleep(Duration::from_millis(300));
    let rounds = timers.stats().rounds - before;
    // `run_paused` looks again every millisecond, each look a round;
    // spinning, the driver made about a million rounds in that time.
    assert!(rounds < 3_000, "{rounds} driver rounds in 300 ms");
}

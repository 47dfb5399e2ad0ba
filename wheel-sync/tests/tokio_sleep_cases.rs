//! The nastiest cases of tokio's `tests/time_sleep.rs` (and
//! `time_pause.rs`), ported to wheel-sync's public API: mostly on a manual
//! clock (tokio's paused one), with a counting waker for tokio-test's
//! `is_woken`. Where wheel-sync's promise differs from tokio's (no 1 ms
//! jitter to add, a sleep whose deadline has passed when it is made is
//! already elapsed), the test checks wheel-sync's.
#![cfg(not(loom))]

use std::sync::{Arc, Mutex};
use std::task::{Wake, Waker};
use std::thread;
use std::time::{Duration, Instant};

use wheel_sync::{Sleep, TimerService};

mod common;
use common::tokio_cases::*;

/// tokio's `is_elapsed`: pending, not elapsed; once the driver fired it, it
/// is elapsed before it is polled again, and stays so.
#[test]
fn is_elapsed_turns_true_when_fired_before_the_next_poll() {
    let timers = manual();
    let mut sleep = timers.sleep(ms(10));
    assert!(!sleep.is_elapsed());
    assert!(poll(&mut sleep, Waker::noop()).is_pending());
    assert!(!sleep.is_elapsed());
    timers.advance(ms(9)).unwrap();
    assert!(!sleep.is_elapsed());
    timers.advance(ms(1)).unwrap();
    assert!(sleep.is_elapsed(), "fired, not yet polled");
    assert!(poll(&mut sleep, Waker::noop()).is_ready());
    assert!(sleep.is_elapsed());
    assert!(poll(&mut sleep, Waker::noop()).is_ready(), "ready again");
}

/// tokio's `delayed_sleep_level_0`, `sub_ms_delayed_sleep` and
/// `delayed_sleep_wrapping_level_0` on the paused clock: each ends on the
/// first tick at or after its deadline (1 ms + 1 ns rounds up to 2 ms).
#[test]
fn paused_sleeps_end_on_their_tick_and_sub_ms_deadlines_round_up() {
    let timers = manual();
    let t = &timers;
    let elapsed = timers
        .run_paused(async move {
            let mut seen = Vec::new();
            for i in [1, 10, 60] {
                let now = t.now();
                t.sleep_until(now + ms(i)).await;
                seen.push(t.now() - now);
            }
            for _ in 0..5 {
                let now = t.now();
                t.sleep_until(now + ms(1) + Duration::from_nanos(1)).await;
                seen.push(t.now() - now);
            }
            t.sleep(ms(5)).await;
            let now = t.now();
            t.sleep_until(now + ms(60)).await;
            seen.push(t.now() - now);
            seen
        })
        .unwrap();
    let mut want = vec![ms(1), ms(10), ms(60)];
    want.extend([ms(2); 5]);
    want.push(ms(60));
    assert_eq!(elapsed, want);
}

/// tokio's `reset_future_sleep_before_fire`, `reset_past_sleep_before_turn`,
/// `reset_past_sleep_before_fire` and `reset_future_sleep_after_fire`, on
/// the paused clock: each sleep ends exactly at its last deadline.
#[test]
fn resets_before_and_after_fire_end_exactly_at_the_new_deadline() {
    let timers = manual();
    let t = &timers;
    let seen = timers
        .run_paused(async move {
            let mut seen = Vec::new();

            // reset_future_sleep_before_fire
            let now = t.now();
            let mut sleep = t.sleep_until(now + ms(100));
            assert!(poll_in_task(&mut sleep).await.is_pending());
            sleep.reset(t.now() + ms(200));
            (&mut sleep).await;
            seen.push(t.now() - now);

            // reset_past_sleep_before_turn
            let now = t.now();
            let mut sleep = t.sleep_until(now + ms(100));
            assert!(poll_in_task(&mut sleep).await.is_pending());
            sleep.reset(now + ms(80));
            (&mut sleep).await;
            seen.push(t.now() - now);

            // reset_past_sleep_before_fire
            let now = t.now();
            let mut sleep = t.sleep_until(now + ms(100));
            assert!(poll_in_task(&mut sleep).await.is_pending());
            t.sleep(ms(10)).await;
            sleep.reset(now + ms(80));
            (&mut sleep).await;
            seen.push(t.now() - now);

            // reset_future_sleep_after_fire
            let now = t.now();
            let mut sleep = t.sleep_until(now + ms(100));
            (&mut sleep).await;
            seen.push(t.now() - now);
            sleep.reset(now + ms(110));
            assert!(!sleep.is_elapsed());
            (&mut sleep).await;
            seen.push(t.now() - now);
            seen
        })
        .unwrap();
    assert_eq!(seen, [ms(200), ms(80), ms(80), ms(100), ms(110)]);
    assert_eq!(timers.pending(), 0);
}

/// tokio's `reset_sleep_to_past`: a sleep waiting since 0 for 100 ms,
/// reset at 50 ms to 40 ms, was not woken by the 50 ms advance, is ready at
/// its next poll, and (wheel-sync's promise) its task is woken by the
/// driver without the clock moving.
#[test]
fn reset_sleep_to_past_is_ready_and_wakes_its_task() {
    let timers = manual();
    let start = timers.now();
    let (woken, waker) = counter();
    let mut sleep = timers.sleep_until(start + ms(100));
    assert!(poll(&mut sleep, &waker).is_pending());
    timers.advance(ms(50)).unwrap();
    assert_eq!(woken.count(), 0);
    sleep.reset(start + ms(40));
    assert!(sleep.is_elapsed());
    let give_up = Instant::now() + PATIENCE;
    while woken.count() == 0 {
        assert!(Instant::now() < give_up, "the waiting task was never woken");
        thread::sleep(ms(1));
    }
    assert!(poll(&mut sleep, &waker).is_ready());
    assert_eq!(timers.now() - start, ms(50), "the clock did not move");
    drop(sleep);
    assert_eq!(timers.pending(), 0);
}

/// tokio's `reset_after_firing` on the real clock: a fired sleep stays
/// ready; reset ten minutes out it is pending again, at every poll, with a
/// new deadline, and counts as a live timer until dropped.
#[test]
fn reset_after_firing_is_pending_again_on_the_real_clock() {
    let timers = TimerService::new();
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let mut sleep = timers.sleep(ms(1));
    let deadline = sleep.deadline();
    rt.block_on(&mut sleep);
    assert!(Instant::now() >= deadline);
    assert!(poll(&mut sleep, Waker::noop()).is_ready());
    sleep.reset(Instant::now() + Duration::from_secs(600));
    assert_ne!(deadline, sleep.deadline());
    assert!(!sleep.is_elapsed());
    assert!(poll(&mut sleep, Waker::noop()).is_pending());
    assert!(poll(&mut sleep, Waker::noop()).is_pending());
    assert_eq!(timers.pending(), 1);
    drop(sleep);
    assert_eq!(timers.pending(), 0);
}

/// tokio's `drop_after_reschedule_at_new_scheduled_time`: a and b at 5 ms,
/// c at 10 ms, all polled; b moved to 10 ms; a fires; b is dropped; c fires
/// at 10 ms. b's waker is never woken and nothing is left pending.
#[test]
fn drop_after_reschedule_at_new_scheduled_time() {
    let timers = manual();
    let start = timers.now();
    let (wa, a_waker) = counter();
    let (wb, b_waker) = counter();
    let (wc, c_waker) = counter();
    let mut a = timers.sleep(ms(5));
    let mut b = timers.sleep(ms(5));
    let mut c = timers.sleep(ms(10));
    assert!(poll(&mut a, &a_waker).is_pending());
    assert!(poll(&mut b, &b_waker).is_pending());
    assert!(poll(&mut c, &c_waker).is_pending());
    b.reset(start + ms(10));
    timers.advance(ms(5)).unwrap();
    assert_eq!((wa.count(), wb.count(), wc.count()), (1, 0, 0));
    assert!(poll(&mut a, &a_waker).is_ready());
    assert!(
        poll(&mut b, &b_waker).is_pending(),
        "b fired at its old deadline"
    );
    drop(b);
    timers.advance(ms(5)).unwrap();
    assert_eq!((wb.count(), wc.count()), (0, 1));
    assert!(poll(&mut c, &c_waker).is_ready());
    drop((a, c));
    assert_eq!(timers.pending(), 0);
    assert_eq!(timers.stats().panicked, 0);
}

/// The waker of tokio's `drop_from_waker_drop`: its drop drops another
/// sleep, and records on which thread it ran.
struct TimerOwner {
    secondary: Mutex<Option<Sleep>>,
    dropped_on: Arc<Mutex<Option<String>>>,
}

impl Wake for TimerOwner {
    fn wake(self: Arc<Self>) {}
}

impl Drop for TimerOwner {
    fn drop(&mut self) {
        let name = thread::current().name().unwrap_or("<unnamed>").to_owned();
        *self.dropped_on.lock().unwrap() = Some(name);
        drop(self.secondary.lock().unwrap().take());
    }
}

/// tokio's `drop_from_waker_drop`: a pending sleep holds the last
/// reference to a waker whose drop drops a second pending sleep; dropping
/// the first drops both, with no deadlock, nothing left pending, on the
/// dropping thread.
#[test]
fn drop_from_waker_drop() {
    within_patience("drop_from_waker_drop", || {
        let timers = manual();
        let mut secondary = timers.sleep(Duration::from_secs(3600));
        assert!(poll(&mut secondary, Waker::noop()).is_pending());
        let dropped_on = Arc::new(Mutex::new(None));
        let waker = Waker::from(Arc::new(TimerOwner {
            secondary: Mutex::new(Some(secondary)),
            dropped_on: dropped_on.clone(),
        }));
        let mut primary = timers.sleep(Duration::from_secs(3600));
        assert!(poll(&mut primary, &waker).is_pending());
        assert_eq!(timers.pending(), 2);
        drop(waker);
        assert!(dropped_on.lock().unwrap().is_none(), "the sleep holds it");
        drop(primary);
        assert!(dropped_on.lock().unwrap().is_some());
        assert_eq!(timers.pending(), 0);
        assert_eq!(timers.stats().panicked, 0);
    });
}

/// `drop_from_waker_drop` again, but the first sleep fires while it holds
/// the last reference to that waker. The driver's wake consumes the waker,
/// as tokio's does, so its drop runs inside that wake, on the driver's
/// thread (lib.rs, "User code and the driver"). Whatever that drop does
/// (here, drop another sleep), the driver carries on, and the second sleep
/// ends cancelled.
#[test]
fn a_fired_sleep_holding_the_last_waker_reference_has_it_dropped_by_its_wake() {
    within_patience("fired drop_from_waker_drop", || {
        let timers = manual();
        let mut secondary = timers.sleep(Duration::from_secs(3600));
        assert!(poll(&mut secondary, Waker::noop()).is_pending());
        let dropped_on = Arc::new(Mutex::new(None));
        let waker = Waker::from(Arc::new(TimerOwner {
            secondary: Mutex::new(Some(secondary)),
            dropped_on: dropped_on.clone(),
        }));
        let mut primary = timers.sleep(ms(10));
        assert!(poll(&mut primary, &waker).is_pending());
        drop(waker);
        timers.advance(ms(10)).unwrap();
        assert!(poll(&mut primary, Waker::noop()).is_ready());
        drop(primary);
        let on = dropped_on.lock().unwrap().clone();
        assert_eq!(timers.pending(), 0, "the second sleep was dropped");
        assert_eq!(timers.stats().panicked, 0);
        assert_eq!(on.as_deref(), Some("wheel-timer"), "dropped by the wake");
        // The driver carries on.
        let mut later = timers.sleep(ms(5));
        let (woken, later_waker) = counter();
        assert!(poll(&mut later, &later_waker).is_pending());
        timers.advance(ms(5)).unwrap();
        assert_eq!(woken.count(), 1);
    });
}

/// A waker whose last reference a fired sleep holds, and whose drop
/// panics: the wake that consumes it on the driver is caught, the panic
/// counted, and every later timer still fires.
#[test]
fn a_waker_whose_drop_panics_inside_the_drivers_wake_is_caught_and_counted() {
    struct Bomb;
    impl Wake for Bomb {
        fn wake(self: Arc<Self>) {}
    }
    impl Drop for Bomb {
        fn drop(&mut self) {
            panic!("a waker's drop");
        }
    }
    within_patience("waker drop panics in the wake", || {
        let timers = manual();
        let waker = Waker::from(Arc::new(Bomb));
        let mut first = timers.sleep(ms(10));
        assert!(poll(&mut first, &waker).is_pending());
        drop(waker);
        let (woken, counting) = counter();
        let mut second = timers.sleep(ms(10));
        assert!(poll(&mut second, &counting).is_pending());
        timers.advance(ms(10)).unwrap();
        assert_eq!(timers.stats().panicked, 1);
        assert_eq!(woken.count(), 1, "the timer after it still fired");
        assert!(poll(&mut first, Waker::noop()).is_ready());
        assert_eq!(timers.pending(), 0);
    });
}

/// tokio's `long_wait_sleep_does_not_break_other_timers` and
/// `long_wait_sleep_does_not_corrupt_wheel`: a sleep of 10 << 36 ms
/// (about 22 years) waits on a high level while the clock moves a quarter
/// of a year; sleeps of 10 and 20 ms then end exactly on time, the clock
/// moves 2^31 ms more with the first dropped, and the long one still ends
/// exactly at its own deadline, not before.
#[test]
fn long_wait_sleep_does_not_break_or_corrupt_the_wheel() {
    let timers = manual();
    let start = timers.now();
    let (long_woken, long_waker) = counter();
    let mut long = timers.sleep(ms(10 << 36));
    assert!(poll(&mut long, &long_waker).is_pending());
    timers.advance(ms((1 << 30) - 1)).unwrap();

    let t = &timers;
    let took = timers
        .run_paused(async move {
            let now = t.now();
            t.sleep(ms(10)).await;
            t.now() - now
        })
        .unwrap();
    assert_eq!(took, ms(10));

    let (w1, waker1) = counter();
    let (w2, waker2) = counter();
    let mut first = timers.sleep(ms(10));
    let mut second = timers.sleep(ms(20));
    assert!(poll(&mut first, &waker1).is_pending());
    assert!(poll(&mut second, &waker2).is_pending());
    timers.advance(ms(9)).unwrap();
    assert_eq!((w1.count(), w2.count()), (0, 0));
    timers.advance(ms(21)).unwrap();
    assert_eq!((w1.count(), w2.count()), (1, 1));
    assert!(poll(&mut first, &waker1).is_ready());
    assert!(poll(&mut second, &waker2).is_ready());
    drop(first);
    timers.advance(ms(1 << 31)).unwrap();
    drop(second);
    assert_eq!(long_woken.count(), 0, "the long sleep fired early");
    assert!(poll(&mut long, &long_waker).is_pending());
    assert_eq!(timers.pending(), 1);

    let moved = timers.advance_to_next().unwrap();
    assert!(moved.is_some());
    assert_eq!(long_woken.count(), 1);
    assert_eq!(timers.now() - start, ms(10 << 36), "not at its deadline");
    assert!(poll(&mut long, &long_waker).is_ready());
    assert_eq!(timers.pending(), 0);
}

/// tokio's `multi_long_sleeps` and `long_sleeps`: five sleeps of a year,
/// then one of ten years, each ends exactly at its deadline.
#[test]
fn multi_long_sleeps_end_exactly_at_their_deadlines() {
    let timers = manual();
    let t = &timers;
    let year = Duration::from_secs(365 * 24 * 3600);
    let start = timers.now();
    let seen = timers
        .run_paused(async move {
            let mut seen = Vec::new();
            for _ in 0..5u32 {
                t.sleep(year).await;
                seen.push(t.now() - start);
            }
            let deadline = t.now() + 10 * year;
            t.sleep_until(deadline).await;
            seen.push(t.now() - start);
            seen
        })
        .unwrap();
    let want: Vec<_> = [1, 2, 3, 4, 5, 15].iter().map(|&n| n * year).collect();
    assert_eq!(seen, want);
}

/// tokio's `short_sleeps` on the real clock: a thousand zero sleeps make no
/// timer; two hundred 1 ms and two hundred 1 ns sleeps in a row each end no
/// earlier than their deadline, and the loop is not slowed to a crawl.
#[test]
fn short_sleeps_in_a_loop_never_end_early() {
    let timers = TimerService::new();
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let started = Instant::now();
    rt.block_on(async {
        for _ in 0..1000 {
            timers.sleep(Duration::ZERO).await;
        }
        assert_eq!(timers.stats().scheduled, 0, "a zero sleep needs no timer");
        for d in [ms(1), Duration::from_nanos(1)] {
            for _ in 0..200 {
                let sleep = timers.sleep(d);
                let deadline = sleep.deadline();
                sleep.await;
                assert!(Instant::now() >= deadline, "ended early");
            }
        }
    });
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(timers.pending(), 0);
}

/// tokio's `sleep_no_poll`, `regression_3710_with_submillis_advance` and
/// `advance_once_with_timer`: a sleep made at 0 for 300 ms and first
/// polled at 100 ms keeps its deadline (not 400 ms); sub-millisecond
/// advances move the clock exactly and fire nothing early; a 1 ms sleep is
/// woken by an advance that jumps past its tick.
#[test]
fn sleeps_keep_their_deadline_across_partial_and_sub_ms_advances() {
    let timers = manual();
    let start = timers.now();
    let (woken, waker) = counter();
    let mut sleep = timers.sleep_until(start + ms(300));
    timers.advance(ms(100)).unwrap();
    assert!(poll(&mut sleep, &waker).is_pending());
    timers.advance(us(51_592)).unwrap();
    assert_eq!(timers.now() - start, ms(100) + us(51_592));
    assert!(poll(&mut sleep, &waker).is_pending());
    timers
        .advance(ms(300) - ms(100) - us(51_592) - Duration::from_nanos(1))
        .unwrap();
    assert_eq!(woken.count(), 0);
    assert!(poll(&mut sleep, &waker).is_pending());
    timers.advance(Duration::from_nanos(1)).unwrap();
    assert_eq!(woken.count(), 1);
    assert!(poll(&mut sleep, &waker).is_ready());

    let (woken, waker) = counter();
    let mut one = timers.sleep(ms(1));
    assert!(poll(&mut one, &waker).is_pending());
    timers.advance(us(250)).unwrap();
    assert!(poll(&mut one, &waker).is_pending());
    timers.advance(us(1500)).unwrap();
    assert_eq!(woken.count(), 1);
    assert!(poll(&mut one, &waker).is_ready());
}

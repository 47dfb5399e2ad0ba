//! The nastiest cases of tokio's own timer tests (`tests/time_sleep.rs`,
//! `time_timeout.rs`, `time_interval.rs`, `time_pause.rs`, `time_rt.rs`)
//! and tokio-util's `tests/time_delay_queue.rs`, ported to wheel-sync's
//! public API: mostly on a manual clock (tokio's paused one), with a
//! counting waker for tokio-test's `is_woken`. Where wheel-sync's promise
//! differs from tokio's (no 1 ms jitter to add, a sleep whose deadline has
//! passed when it is made is already elapsed, a `DelayQueue` may wake its
//! task at a wheel slot's start), the test checks wheel-sync's.
#![cfg(not(loom))]

use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::thread;
use std::time::{Duration, Instant};

use wheel_sync::delay_queue::Expired;
use wheel_sync::{DelayQueue, Interval, MissedTickBehavior, Sleep, TimerService};

const PATIENCE: Duration = Duration::from_secs(10);

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn us(n: u64) -> Duration {
    Duration::from_micros(n)
}

fn manual() -> TimerService {
    TimerService::builder().manual_clock().build().unwrap()
}

/// A waker that counts its wakes: tokio-test's `is_woken`.
#[derive(Default)]
struct Counter(AtomicUsize);

impl Counter {
    fn count(&self) -> usize {
        self.0.load(SeqCst)
    }
}

impl Wake for Counter {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.0.fetch_add(1, SeqCst);
    }
}

fn counter() -> (Arc<Counter>, Waker) {
    let c = Arc::new(Counter::default());
    (c.clone(), Waker::from(c))
}

fn poll<F: Future + Unpin>(f: &mut F, waker: &Waker) -> Poll<F::Output> {
    Pin::new(f).poll(&mut Context::from_waker(waker))
}

/// Polls `f` once from inside an async block, with the block's context.
async fn poll_in_task<F: Future + Unpin>(f: &mut F) -> Poll<F::Output> {
    poll_fn(|cx| Poll::Ready(Pin::new(&mut *f).poll(cx))).await
}

fn tick_now(interval: &mut Interval) -> Poll<Instant> {
    interval.poll_tick(&mut Context::from_waker(Waker::noop()))
}

fn dq<T>(queue: &mut DelayQueue<T>, waker: &Waker) -> Poll<Option<Expired<T>>> {
    queue.poll_expired(&mut Context::from_waker(waker))
}

/// The item that must be ready now.
#[track_caller]
fn dq_ready<T>(queue: &mut DelayQueue<T>, waker: &Waker) -> T {
    match dq(queue, waker) {
        Poll::Ready(Some(e)) => e.into_inner(),
        Poll::Ready(None) => panic!("queue empty, an item was due"),
        Poll::Pending => panic!("pending, an item was due"),
    }
}

#[track_caller]
fn dq_pending<T>(queue: &mut DelayQueue<T>, waker: &Waker) {
    assert!(dq(queue, waker).is_pending(), "an item came out early");
}

#[track_caller]
fn dq_none<T>(queue: &mut DelayQueue<T>, waker: &Waker) {
    assert!(matches!(dq(queue, waker), Poll::Ready(None)));
}

/// Runs `f` on a thread of its own and fails, rather than hangs, if it
/// does not finish within `PATIENCE` (a deadlock).
fn within_patience<R: Send + 'static>(what: &str, f: impl FnOnce() -> R + Send + 'static) -> R {
    let handle = thread::spawn(f);
    let give_up = Instant::now() + PATIENCE;
    while !handle.is_finished() {
        assert!(Instant::now() < give_up, "{what}: hung (deadlock?)");
        thread::sleep(ms(1));
    }
    handle.join().unwrap()
}

// ---------------------------------------------------------------------------
// time_sleep.rs
// ---------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------
// time_timeout.rs and time_rt.rs
// ---------------------------------------------------------------------------

/// tokio's `simultaneous_deadline_future_completion`,
/// `completed_future_past_deadline` and `deadline_now_elapses`, and a
/// `Duration::ZERO` timeout: a ready future wins over any deadline, with no
/// timer; a never-ready one elapses at its first poll, with no timer.
#[test]
fn timeouts_at_or_past_their_deadline() {
    let timers = TimerService::new();
    let now = Instant::now();
    let w = Waker::noop();
    let mut at_now = Box::pin(timers.timeout_at(now, async {}));
    assert_eq!(poll(&mut at_now, w), Poll::Ready(Ok(())));
    let past = now - Duration::from_secs(1);
    let mut at_past = Box::pin(timers.timeout_at(past, async { 3 }));
    assert_eq!(poll(&mut at_past, w), Poll::Ready(Ok(3)));
    let mut zero = Box::pin(timers.timeout(Duration::ZERO, async { 4 }));
    assert_eq!(poll(&mut zero, w), Poll::Ready(Ok(4)));
    let mut never = Box::pin(timers.timeout_at(now, std::future::pending::<()>()));
    assert!(matches!(poll(&mut never, w), Poll::Ready(Err(_))));
    let mut zero_never = Box::pin(timers.timeout(Duration::ZERO, std::future::pending::<()>()));
    assert!(matches!(poll(&mut zero_never, w), Poll::Ready(Err(_))));
    assert_eq!(timers.stats().scheduled, 0, "none of these needs a timer");
}

/// tokio's `future_and_deadline_in_future`, `future_and_timeout_in_future`
/// and `deadline_future_elapses`, on a manual clock with a tokio oneshot.
#[test]
fn timeout_of_a_channel_on_the_manual_clock() {
    let timers = manual();
    let (woken, waker) = counter();

    for use_at in [true, false] {
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let mut fut = if use_at {
            Box::pin(timers.timeout_at(timers.now() + ms(100), rx))
        } else {
            Box::pin(timers.timeout(ms(100), rx))
        };
        let before = woken.count();
        assert!(poll(&mut fut, &waker).is_pending());
        timers.advance(ms(90)).unwrap();
        assert!(poll(&mut fut, &waker).is_pending());
        tx.send(()).unwrap();
        assert!(woken.count() > before, "the channel woke the task");
        assert!(matches!(poll(&mut fut, &waker), Poll::Ready(Ok(Ok(())))));
        drop(fut);
        assert_eq!(timers.pending(), 0);
    }

    let mut fut = Box::pin(timers.timeout_at(timers.now() + ms(300), std::future::pending::<()>()));
    let before = woken.count();
    assert!(poll(&mut fut, &waker).is_pending());
    timers.advance(ms(299)).unwrap();
    assert_eq!(woken.count(), before);
    assert!(poll(&mut fut, &waker).is_pending());
    timers.advance(ms(2)).unwrap();
    assert!(woken.count() > before);
    assert!(matches!(poll(&mut fut, &waker), Poll::Ready(Err(_))));
}

/// The inner future is polled first: a timeout around a sleep due at the
/// same instant as the timeout's own deadline resolves `Ok`, also when
/// both fired in the same advance.
#[test]
fn a_timeout_and_its_future_due_at_the_same_tick_resolve_ok() {
    let timers = manual();
    let (_, waker) = counter();
    let mut fut = Box::pin(timers.timeout(ms(10), timers.sleep(ms(10))));
    assert!(poll(&mut fut, &waker).is_pending());
    timers.advance(ms(10)).unwrap();
    assert_eq!(poll(&mut fut, &waker), Poll::Ready(Ok(())));
}

/// tokio's `timeout_value` and `starving` under both tokio runtimes on the
/// real clock: a timeout of a channel never sent elapses, not before its
/// deadline; a task that wakes itself at every poll of a sleep still sees
/// the sleep end, not before its deadline.
#[test]
fn timeout_value_and_starving_under_both_runtimes() {
    struct Starve<T: Future<Output = ()> + Unpin>(T, u64);
    impl<T: Future<Output = ()> + Unpin> Future for Starve<T> {
        type Output = u64;
        fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<u64> {
            if Pin::new(&mut self.0).poll(cx).is_ready() {
                return Poll::Ready(self.1);
            }
            self.1 += 1;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    }

    let timers = TimerService::new();
    let runtimes = [
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap(),
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_time()
            .build()
            .unwrap(),
    ];
    for rt in runtimes {
        let t = timers.clone();
        rt.block_on(async move {
            let (_tx, rx) = tokio::sync::oneshot::channel::<()>();
            let now = Instant::now();
            let res = tokio::time::timeout(PATIENCE, t.timeout(ms(10), rx))
                .await
                .expect("the timeout never elapsed");
            assert!(res.is_err());
            assert!(Instant::now() >= now + ms(10));

            let when = Instant::now() + ms(10);
            let starve = Starve(t.sleep_until(when), 0);
            tokio::time::timeout(PATIENCE, starve)
                .await
                .expect("a self-waking task never saw its sleep end");
            assert!(Instant::now() >= when);
        });
    }
    assert_eq!(timers.pending(), 0);
}

// ---------------------------------------------------------------------------
// time_interval.rs and time_pause.rs
// ---------------------------------------------------------------------------

/// Every tick ready now, until the interval waits.
fn ready_ticks(interval: &mut Interval, start: Instant) -> Vec<Duration> {
    let mut out = Vec::new();
    while let Poll::Ready(t) = tick_now(interval) {
        out.push(t - start);
        assert!(out.len() < 1000, "runaway interval");
    }
    out
}

/// tokio's `time_pause::interval` without its 1 ms offset: 300 ms period;
/// advances of 100, 200, 400 and 500 ms. At 1200 ms the tick due at 1200
/// is delivered with the one due at 900.
#[test]
fn interval_on_the_paused_clock_as_tokio_s() {
    let timers = manual();
    let start = timers.now();
    let mut i = timers.interval_at(start, ms(300));
    assert_eq!(ready_ticks(&mut i, start), [ms(0)]);
    timers.advance(ms(100)).unwrap();
    assert_eq!(ready_ticks(&mut i, start), []);
    timers.advance(ms(200)).unwrap();
    assert_eq!(ready_ticks(&mut i, start), [ms(300)]);
    timers.advance(ms(400)).unwrap();
    assert_eq!(ready_ticks(&mut i, start), [ms(600)]);
    timers.advance(ms(500)).unwrap();
    assert_eq!(ready_ticks(&mut i, start), [ms(900), ms(1200)]);
    timers.advance(ms(299)).unwrap();
    assert_eq!(ready_ticks(&mut i, start), []);
    timers.advance(ms(1)).unwrap();
    assert_eq!(ready_ticks(&mut i, start), [ms(1500)]);
}

/// tokio's `reset_at` and `reset_at_bigger_than_interval`, without the
/// 1 ms offset (wheel-sync has no jitter to add).
#[test]
fn interval_reset_at_as_tokio_s() {
    let timers = manual();
    let start = timers.now();
    let mut i = timers.interval_at(start, ms(300));
    assert_eq!(ready_ticks(&mut i, start), [ms(0)]);
    timers.advance(ms(100)).unwrap();
    assert_eq!(ready_ticks(&mut i, start), []);
    timers.advance(ms(200)).unwrap();
    assert_eq!(ready_ticks(&mut i, start), [ms(300)]);
    timers.advance(ms(100)).unwrap();
    assert_eq!(ready_ticks(&mut i, start), []);
    i.reset_at(timers.now() + ms(40));
    timers.advance(ms(39)).unwrap();
    assert_eq!(ready_ticks(&mut i, start), []);
    timers.advance(ms(1)).unwrap();
    assert_eq!(ready_ticks(&mut i, start), [ms(440)]);
    timers.advance(ms(100)).unwrap();
    assert_eq!(ready_ticks(&mut i, start), []);
    timers.advance(ms(200)).unwrap();
    assert_eq!(ready_ticks(&mut i, start), [ms(740)]);

    // reset_at_bigger_than_interval, from 740 ms.
    i.reset_at(timers.now() + ms(1000));
    for _ in 0..3 {
        timers.advance(ms(300)).unwrap();
        assert_eq!(ready_ticks(&mut i, start), []);
    }
    timers.advance(ms(100)).unwrap();
    assert_eq!(ready_ticks(&mut i, start), [ms(1740)]);
    timers.advance(ms(300)).unwrap();
    assert_eq!(ready_ticks(&mut i, start), [ms(2040)]);
}

/// `reset`, `reset_immediately` and `reset_after` while a burst of missed
/// ticks is owed: the owed ticks are dropped and the new schedule runs.
#[test]
fn interval_resets_drop_an_owed_burst() {
    let timers = manual();
    let start = timers.now();
    let mut i = timers.interval_at(start, ms(300));
    assert_eq!(ready_ticks(&mut i, start), [ms(0)]);
    timers.advance(ms(1000)).unwrap(); // 300, 600, 900 owed
    assert_eq!(tick_now(&mut i), Poll::Ready(start + ms(300)));
    i.reset();
    assert_eq!(ready_ticks(&mut i, start), [], "owed ticks survived reset");
    timers.advance(ms(300)).unwrap();
    assert_eq!(ready_ticks(&mut i, start), [ms(1300)]);

    timers.advance(ms(1000)).unwrap(); // clock 2300: 1600, 1900, 2200 owed
    assert_eq!(tick_now(&mut i), Poll::Ready(start + ms(1600)));
    i.reset_immediately();
    assert_eq!(ready_ticks(&mut i, start), [ms(2300)]);
    timers.advance(ms(300)).unwrap();
    assert_eq!(ready_ticks(&mut i, start), [ms(2600)]);

    timers.advance(ms(1000)).unwrap(); // clock 3600: 2900, 3200, 3500 owed
    assert_eq!(tick_now(&mut i), Poll::Ready(start + ms(2900)));
    i.reset_after(ms(20));
    assert_eq!(ready_ticks(&mut i, start), []);
    timers.advance(ms(20)).unwrap();
    assert_eq!(ready_ticks(&mut i, start), [ms(3620)]);
    timers.advance(ms(300)).unwrap();
    assert_eq!(ready_ticks(&mut i, start), [ms(3920)]);
}

/// A period shorter than the tick, and not dividing it (300 µs on 1 ms):
/// `Burst` owes every tick and delivers them at once; `Skip` stays on the
/// grid start + k × 300 µs; `Delay` runs a period after each late tick.
#[test]
fn intervals_shorter_than_the_tick_keep_their_grid() {
    for (missed, want) in [
        (
            MissedTickBehavior::Burst,
            vec![
                vec![us(300), us(600), us(900)],
                vec![us(1200), us(1500), us(1800)],
            ],
        ),
        (
            MissedTickBehavior::Skip,
            vec![vec![us(300)], vec![us(1200)]],
        ),
        (
            MissedTickBehavior::Delay,
            vec![vec![us(300)], vec![us(1300)]],
        ),
    ] {
        let timers = manual();
        let start = timers.now();
        let mut i = timers.interval_at(start, us(300));
        i.set_missed_tick_behavior(missed);
        assert_eq!(ready_ticks(&mut i, start), [Duration::ZERO]);
        let mut got = Vec::new();
        for _ in 0..2 {
            timers.advance(ms(1)).unwrap();
            got.push(ready_ticks(&mut i, start));
        }
        assert_eq!(got, want, "{missed:?}");
    }
}

/// On a coarse tick (10 ms), a 15 ms interval: a tick whose deadline the
/// clock has passed is delivered when asked for, before the driver fires
/// its timer (rounded up to the next tick); the timer moved on to the next
/// tick then must not fire at the old one and deliver that tick early.
#[test]
fn a_due_tick_taken_before_the_driver_fired_it_does_not_make_the_next_early() {
    let timers = TimerService::builder()
        .tick(ms(10))
        .manual_clock()
        .build()
        .unwrap();
    let start = timers.now();
    let (woken, waker) = counter();
    let mut cx = Context::from_waker(&waker);
    let mut i = timers.interval_at(start, ms(15));
    assert_eq!(i.poll_tick(&mut cx), Poll::Ready(start));
    assert!(i.poll_tick(&mut cx).is_pending());
    timers.advance(ms(15)).unwrap(); // 15 ms: due, its timer at 20 ms
    assert_eq!(
        woken.count(),
        0,
        "woken before the tick its deadline rounds to"
    );
    assert_eq!(i.poll_tick(&mut cx), Poll::Ready(start + ms(15)));
    assert!(i.poll_tick(&mut cx).is_pending(), "30 ms is not due at 15");
    timers.advance(ms(5)).unwrap(); // 20 ms: the old tick of the timer
    assert!(
        i.poll_tick(&mut cx).is_pending(),
        "30 ms tick delivered at 20 ms"
    );
    timers.advance(ms(10)).unwrap(); // 30 ms
    assert_eq!(i.poll_tick(&mut cx), Poll::Ready(start + ms(30)));
    timers.advance(ms(15)).unwrap(); // 45 ms
    assert_eq!(i.poll_tick(&mut cx), Poll::Ready(start + ms(45)));
    timers.advance(ms(5)).unwrap(); // 50 ms
    assert!(
        i.poll_tick(&mut cx).is_pending(),
        "60 ms tick delivered at 50 ms"
    );
    timers.advance(ms(10)).unwrap(); // 60 ms
    assert_eq!(i.poll_tick(&mut cx), Poll::Ready(start + ms(60)));
    assert!(i.poll_tick(&mut cx).is_pending());
}

/// An interval started before the manual clock's origin (its whole past
/// is before the service existed): the ticks it owes come at once, and
/// `Skip` lands on the grid.
#[test]
fn an_interval_started_before_the_clock_origin_catches_up() {
    let timers = manual();
    let origin = timers.now();
    let start = origin - Duration::from_secs(10);
    let mut burst = timers.interval_at(start, Duration::from_secs(3));
    let got: Vec<_> = std::iter::from_fn(|| match tick_now(&mut burst) {
        Poll::Ready(t) => Some(t),
        Poll::Pending => None,
    })
    .take(10)
    .collect();
    let secs = Duration::from_secs;
    assert_eq!(
        got,
        [start, start + secs(3), start + secs(6), start + secs(9)]
    );
    timers.advance(secs(2) - Duration::from_millis(1)).unwrap();
    assert!(tick_now(&mut burst).is_pending());
    timers.advance(ms(1)).unwrap();
    assert_eq!(tick_now(&mut burst), Poll::Ready(start + secs(12)));

    let mut skip = timers.interval_at(start, secs(3));
    skip.set_missed_tick_behavior(MissedTickBehavior::Skip);
    assert_eq!(tick_now(&mut skip), Poll::Ready(start));
    // Clock at origin + 2 s = start + 12 s: on the grid, so it is skipped.
    assert!(tick_now(&mut skip).is_pending());
    timers.advance(secs(3)).unwrap();
    assert_eq!(tick_now(&mut skip), Poll::Ready(start + secs(15)));
}

// ---------------------------------------------------------------------------
// tokio-util's time_delay_queue.rs
// ---------------------------------------------------------------------------

/// tokio-util's `multi_delay_at_start`: six items, one far on a high
/// level; the clock moves a millisecond at a time. At each deadline the
/// task has been woken and the item comes out; in between, a wake (a slot's
/// start) finds nothing. Then the far one comes out exactly on time.
#[test]
fn multi_delay_at_start() {
    let timers = manual();
    let start = timers.now();
    let long = 262_144 + 9 * 4096;
    let delays = [1000, 2, 234, long, 60, 10];
    let (woken, waker) = counter();
    let mut queue = DelayQueue::with_service(&timers);
    for &i in &delays {
        queue.insert_at(i, start + ms(i));
    }
    dq_pending(&mut queue, &waker);
    let mut seen = woken.count();
    for elapsed in 1..=1200 {
        timers.advance(ms(1)).unwrap();
        let now_woken = woken.count();
        if delays.contains(&elapsed) {
            assert!(now_woken > seen, "not woken at {elapsed} ms");
            assert_eq!(dq_ready(&mut queue, &waker), elapsed);
            dq_pending(&mut queue, &waker);
        } else if now_woken > seen {
            dq_pending(&mut queue, &waker);
        }
        seen = woken.count();
    }
    assert_eq!(queue.len(), 1);
    // The far one: follow the next deadlines; it comes out at its own.
    loop {
        timers
            .advance_to_next()
            .unwrap()
            .expect("the far item has a timer");
        match dq(&mut queue, &waker) {
            Poll::Ready(Some(e)) => {
                assert_eq!(timers.now() - start, ms(long));
                assert_eq!(e.into_inner(), long);
                break;
            }
            Poll::Ready(None) => panic!("lost"),
            Poll::Pending => assert!(timers.now() - start < ms(long)),
        }
    }
    dq_none(&mut queue, &waker);
}

/// tokio-util's `reset_entry`: moved from 5 to 10 ms at 1 ms; pending at
/// 8 ms; out at 10.
#[test]
fn delay_queue_reset_entry() {
    let timers = manual();
    let now = timers.now();
    let (woken, waker) = counter();
    let mut queue = DelayQueue::with_service(&timers);
    let key = queue.insert_at("foo", now + ms(5));
    dq_pending(&mut queue, &waker);
    timers.advance(ms(1)).unwrap();
    queue.reset_at(&key, now + ms(10));
    dq_pending(&mut queue, &waker);
    timers.advance(ms(7)).unwrap();
    dq_pending(&mut queue, &waker);
    let before = woken.count();
    timers.advance(ms(2)).unwrap();
    assert!(woken.count() > before);
    assert_eq!(dq_ready(&mut queue, &waker), "foo");
    dq_none(&mut queue, &waker);
}

/// tokio-util's `reset_much_later` and `reset_twice` (tokio#849): an item
/// at 200 ms moved earlier once or twice after the queue waited; the task
/// is woken by the new deadline and the item comes out then, not before.
#[test]
fn delay_queue_reset_much_later_and_twice() {
    for twice in [false, true] {
        let timers = manual();
        let now = timers.now();
        let (woken, waker) = counter();
        let mut queue = DelayQueue::with_service(&timers);
        timers.advance(ms(1)).unwrap();
        let key = queue.insert_at("foo", now + ms(200));
        dq_pending(&mut queue, &waker);
        timers.advance(ms(3)).unwrap();
        let due = if twice {
            queue.reset_at(&key, now + ms(50));
            timers.advance(ms(20)).unwrap();
            dq_pending(&mut queue, &waker);
            queue.reset_at(&key, now + ms(40));
            40
        } else {
            queue.reset_at(&key, now + ms(10));
            10
        };
        let moved = timers.now() - now;
        timers.advance(ms(due) - moved - ms(1)).unwrap();
        dq_pending(&mut queue, &waker);
        let before = woken.count();
        timers.advance(ms(1)).unwrap();
        assert!(woken.count() > before, "twice={twice}: not woken");
        assert_eq!(dq_ready(&mut queue, &waker), "foo");
    }
}

/// tokio-util's `repeatedly_reset_entry_inserted_as_expired` and
/// `reset_inserted_expired`: an item inserted 100 ms in the past, then
/// moved into the future (once or twice) before any poll, comes out at its
/// last deadline only, with that deadline.
#[test]
fn delay_queue_entries_inserted_expired_then_reset() {
    let timers = manual();
    timers.advance(ms(1000)).unwrap();
    let now = timers.now();
    let (woken, waker) = counter();
    let mut queue = DelayQueue::with_service(&timers);
    let key = queue.insert_at("foo", now - ms(100));
    assert_eq!(queue.deadline(&key), now - ms(100));
    queue.reset_at(&key, now + ms(100));
    queue.reset_at(&key, now + ms(50));
    dq_pending(&mut queue, &waker);
    timers.advance(ms(49)).unwrap();
    dq_pending(&mut queue, &waker);
    let before = woken.count();
    timers.advance(ms(11)).unwrap();
    assert!(woken.count() > before);
    match dq(&mut queue, &waker) {
        Poll::Ready(Some(e)) => {
            assert_eq!(e.deadline(), now + ms(50));
            assert_eq!(e.into_inner(), "foo");
        }
        other => panic!("{:?}", other.map(|o| o.map(Expired::into_inner))),
    }
    dq_none(&mut queue, &waker);

    let now = timers.now();
    let key = queue.insert_at("bar", now - ms(100));
    queue.reset_at(&key, now + ms(100));
    assert_eq!(queue.len(), 1);
    timers.advance(ms(99)).unwrap();
    dq_pending(&mut queue, &waker);
    timers.advance(ms(101)).unwrap();
    assert_eq!(dq_ready(&mut queue, &waker), "bar");
    assert_eq!(queue.len(), 0);
}

/// tokio-util's `remove_at_timer_wheel_threshold`, at every level
/// boundary of the queue's wheel (64, 4096, 262144 ms) and exactly at it:
/// two items due together, one comes out, the other is removed by its key.
#[test]
fn delay_queue_remove_at_wheel_thresholds() {
    for boundary in [64, 4096, 262_144, 16_777_216] {
        for overshoot in [0, 16] {
            let timers = manual();
            let now = timers.now();
            let mut queue = DelayQueue::with_service(&timers);
            let w = Waker::noop();
            let k1 = queue.insert_at("foo", now + ms(boundary));
            let k2 = queue.insert_at("bar", now + ms(boundary));
            dq_pending(&mut queue, w);
            timers.advance(ms(boundary - 1)).unwrap();
            dq_pending(&mut queue, w);
            timers.advance(ms(1 + overshoot)).unwrap();
            let out = dq_ready(&mut queue, w);
            let other = match out {
                "foo" => queue.remove(&k2).into_inner(),
                "bar" => queue.remove(&k1).into_inner(),
                _ => unreachable!(),
            };
            assert_ne!(out, other, "boundary {boundary}");
            dq_none(&mut queue, w);
        }
    }
}

/// tokio-util's `expires_before_last_insert`, `insert_before_first_after_poll`
/// and `insert_in_past_after_poll_fires_immediately`: an insert that makes
/// the earliest deadline earlier wakes the waiting task (at once if it is
/// due already) and the new item comes out first, exactly at its deadline.
#[test]
fn delay_queue_inserts_before_the_first_after_a_poll() {
    // expires_before_last_insert
    let timers = manual();
    let now = timers.now();
    let (woken, waker) = counter();
    let mut queue = DelayQueue::with_service(&timers);
    queue.insert_at("foo", now + ms(10_000));
    dq_pending(&mut queue, &waker);
    queue.insert_at("bar", now + ms(600));
    dq_pending(&mut queue, &waker);
    timers.advance(ms(599)).unwrap();
    dq_pending(&mut queue, &waker);
    let before = woken.count();
    timers.advance(ms(1)).unwrap();
    assert!(woken.count() > before);
    assert_eq!(dq_ready(&mut queue, &waker), "bar");
    dq_pending(&mut queue, &waker);

    // insert_before_first_after_poll
    let timers = manual();
    let now = timers.now();
    let mut queue = DelayQueue::with_service(&timers);
    queue.insert_at("one", now + ms(200));
    dq_pending(&mut queue, &waker);
    let before = woken.count();
    queue.insert_at("two", now + ms(100));
    assert!(woken.count() > before, "an earlier insert woke no one");
    timers.advance(ms(99)).unwrap();
    dq_pending(&mut queue, &waker);
    let before = woken.count();
    timers.advance(ms(1)).unwrap();
    assert!(woken.count() > before);
    assert_eq!(dq_ready(&mut queue, &waker), "two");

    // insert_in_past_after_poll_fires_immediately
    let timers = manual();
    let now = timers.now();
    let mut queue = DelayQueue::with_service(&timers);
    queue.insert_at("foo", now + ms(200));
    dq_pending(&mut queue, &waker);
    timers.advance(ms(80)).unwrap();
    let before = woken.count();
    queue.insert_at("bar", now + ms(40));
    assert!(woken.count() > before, "a past insert woke no one");
    assert_eq!(dq_ready(&mut queue, &waker), "bar");
    dq_pending(&mut queue, &waker);
}

/// tokio-util's `multi_reset`, `expire_first_key_when_reset_to_expire_earlier`,
/// `expire_second_key_when_reset_to_expire_earlier` and
/// `reset_first_expiring_item_to_expire_later`.
#[test]
fn delay_queue_multi_resets() {
    // multi_reset
    let timers = manual();
    let now = timers.now();
    let (woken, waker) = counter();
    let mut queue = DelayQueue::with_service(&timers);
    let one = queue.insert_at("one", now + ms(200));
    let two = queue.insert_at("two", now + ms(250));
    dq_pending(&mut queue, &waker);
    queue.reset_at(&one, now + ms(300));
    queue.reset_at(&two, now + ms(350));
    queue.reset_at(&one, now + ms(400));
    timers.advance(ms(310)).unwrap();
    dq_pending(&mut queue, &waker);
    timers.advance(ms(39)).unwrap();
    dq_pending(&mut queue, &waker);
    timers.advance(ms(1)).unwrap();
    assert_eq!(dq_ready(&mut queue, &waker), "two");
    dq_pending(&mut queue, &waker);
    timers.advance(ms(49)).unwrap();
    dq_pending(&mut queue, &waker);
    timers.advance(ms(1)).unwrap();
    assert_eq!(dq_ready(&mut queue, &waker), "one");
    dq_none(&mut queue, &waker);

    // The three single resets: which key moves, where, and what comes out
    // first, when.
    for (which, to, first, at) in [
        (0, 100, "one", 100),
        (1, 100, "two", 100),
        (0, 300, "two", 250),
    ] {
        let timers = manual();
        let now = timers.now();
        let mut queue = DelayQueue::with_service(&timers);
        let keys = [
            queue.insert_at("one", now + ms(200)),
            queue.insert_at("two", now + ms(250)),
        ];
        dq_pending(&mut queue, &waker);
        queue.reset_at(&keys[which], now + ms(to));
        timers.advance(ms(at - 1)).unwrap();
        dq_pending(&mut queue, &waker);
        let before = woken.count();
        timers.advance(ms(1)).unwrap();
        assert!(woken.count() > before, "{first} at {at}: not woken");
        assert_eq!(dq_ready(&mut queue, &waker), first);
    }
}

/// tokio-util's `insert_after_ready_poll`, and more: three items come out
/// at 100 ms while each take inserts another, one of them due at once
/// (it comes out in the same drain), the others later.
#[test]
fn delay_queue_inserts_while_draining() {
    let timers = manual();
    let now = timers.now();
    let (woken, waker) = counter();
    let mut queue = DelayQueue::with_service(&timers);
    for v in ["1", "2", "3"] {
        queue.insert_at(v, now + ms(100));
    }
    dq_pending(&mut queue, &waker);
    timers.advance(ms(100)).unwrap();
    assert!(woken.count() > 0);
    let mut res = Vec::new();
    let mut inserted_now = false;
    loop {
        match dq(&mut queue, &waker) {
            Poll::Ready(Some(e)) => res.push(e.into_inner()),
            Poll::Ready(None) => panic!("the later items were lost"),
            Poll::Pending => break,
        }
        queue.insert_at("foo", now + ms(500));
        if !inserted_now {
            queue.insert_at("now", timers.now());
            inserted_now = true;
        }
    }
    res.sort_unstable();
    assert_eq!(res, ["1", "2", "3", "now"]);
    assert_eq!(queue.len(), 4, "the four later inserts");
    timers.advance(ms(399)).unwrap();
    dq_pending(&mut queue, &waker);
    timers.advance(ms(1)).unwrap();
    for _ in 0..4 {
        assert_eq!(dq_ready(&mut queue, &waker), "foo");
    }
    dq_none(&mut queue, &waker);
}

/// tokio-util's `reset_later_after_slot_starts` and
/// `reset_earlier_after_slot_starts`: at 80 ms, an item waited on at 100
/// (or 200) ms is moved to 120 ms, into a level-1 slot the wheel is
/// already inside. It comes out at 120, not at 119, and the task is woken
/// by then; moved earlier, the task is woken at the reset.
#[test]
fn delay_queue_resets_after_the_slot_starts() {
    for (from, earlier) in [(100, false), (200, true)] {
        let timers = manual();
        let now = timers.now();
        let (woken, waker) = counter();
        let mut queue = DelayQueue::with_service(&timers);
        let foo = queue.insert_at("foo", now + ms(from));
        dq_pending(&mut queue, &waker);
        timers.advance(ms(80)).unwrap();
        let before = woken.count();
        queue.reset_at(&foo, now + ms(120));
        if earlier {
            assert!(woken.count() > before, "an earlier reset woke no one");
        }
        dq_pending(&mut queue, &waker);
        for _ in 80..119 {
            timers.advance(ms(1)).unwrap();
            dq_pending(&mut queue, &waker);
        }
        let before = woken.count();
        timers.advance(ms(1)).unwrap();
        assert!(woken.count() > before, "from {from}: not woken at 120 ms");
        assert_eq!(dq_ready(&mut queue, &waker), "foo");
    }
}

/// tokio-util's `peek_entries_sharing_a_wheel_slot`: 100 and 120 ms share
/// a level-1 slot; `peek` names the earlier both before and after the
/// clock enters it, and each comes out by its own key.
#[test]
fn delay_queue_peek_entries_sharing_a_wheel_slot() {
    let timers = manual();
    let now = timers.now();
    let w = Waker::noop();
    let mut queue = DelayQueue::with_service(&timers);
    let early = queue.insert_at("early", now + ms(100));
    let late = queue.insert_at("late", now + ms(120));
    assert_eq!(queue.peek(), Some(early));
    timers.advance(ms(105)).unwrap();
    assert_eq!(queue.peek(), Some(early));
    match dq(&mut queue, w) {
        Poll::Ready(Some(e)) => assert_eq!((e.key(), *e.get_ref()), (early, "early")),
        _ => panic!("early not out at 105 ms"),
    }
    assert_eq!(queue.peek(), Some(late));
    dq_pending(&mut queue, w);
    timers.advance(ms(15)).unwrap();
    match dq(&mut queue, w) {
        Poll::Ready(Some(e)) => assert_eq!(e.key(), late),
        _ => panic!("late not out at 120 ms"),
    }
    assert!(queue.peek().is_none());
}

/// On a coarse 10 ms tick: an item at 18 ms (inserted at 3 ms for 15)
/// keeps its exact deadline, is not out at 19 ms and is out at 20; a reset
/// by a `Duration` lands exactly at now + it.
#[test]
fn delay_queue_on_a_coarse_tick_rounds_up_and_keeps_exact_deadlines() {
    let timers = TimerService::builder()
        .tick(ms(10))
        .manual_clock()
        .build()
        .unwrap();
    let start = timers.now();
    let w = Waker::noop();
    let mut queue = DelayQueue::with_service(&timers);
    timers.advance(ms(3)).unwrap();
    let key = queue.insert("x", ms(15));
    assert_eq!(queue.deadline(&key), start + ms(18));
    dq_pending(&mut queue, w);
    timers.advance(ms(15)).unwrap(); // 18 ms
    dq_pending(&mut queue, w);
    timers.advance(ms(1)).unwrap(); // 19 ms
    dq_pending(&mut queue, w);
    timers.advance(ms(1)).unwrap(); // 20 ms
    match dq(&mut queue, w) {
        Poll::Ready(Some(e)) => assert_eq!(e.deadline(), start + ms(18)),
        _ => panic!("not out at 20 ms"),
    }
    let key = queue.insert("y", ms(7));
    queue.reset(&key, ms(25));
    assert_eq!(queue.deadline(&key), start + ms(45));
    timers.advance(ms(29)).unwrap(); // 49 ms
    dq_pending(&mut queue, w);
    timers.advance(ms(1)).unwrap(); // 50 ms
    assert_eq!(dq_ready(&mut queue, w), "y");
}

/// A queue left unpolled while the clock moves ten seconds, then given an
/// item 5 ms out: the wheel it keeps is far behind the service's clock,
/// and must neither hand the item out early nor wait past it.
#[test]
fn delay_queue_whose_wheel_lags_the_clock() {
    let timers = manual();
    let start = timers.now();
    let (woken, waker) = counter();
    let mut queue = DelayQueue::with_service(&timers);
    let k = queue.insert("old", Duration::from_secs(3600));
    dq_pending(&mut queue, &waker);
    queue.remove(&k);
    dq_none(&mut queue, &waker); // empty: ends, and may be polled again
    timers.advance(Duration::from_secs(10)).unwrap();
    queue.insert("new", ms(5));
    dq_pending(&mut queue, &waker);
    timers.advance(ms(4)).unwrap();
    dq_pending(&mut queue, &waker);
    let before = woken.count();
    timers.advance(ms(1)).unwrap();
    assert!(woken.count() > before);
    assert_eq!(dq_ready(&mut queue, &waker), "new");
    assert_eq!(timers.now() - start, Duration::from_secs(10) + ms(5));
    dq_none(&mut queue, &waker);
}

/// Sanity for the real clock: a queue fed random deadlines, drained under
/// tokio, hands every item out once, never before its deadline.
#[test]
fn delay_queue_on_the_real_clock_never_early() {
    let timers = TimerService::new();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let mut queue = DelayQueue::with_service(&timers);
    let mut x = 0x2545_f491_4f6c_dd1d_u64;
    for i in 0..300u64 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let d = us(x % 40_000);
        let key = queue.insert(i, d);
        if i % 7 == 0 {
            queue.reset(&key, us((x >> 20) % 40_000));
        }
    }
    let seen = rt.block_on(async {
        tokio::time::timeout(PATIENCE, async {
            let mut seen = Vec::new();
            while let Some(e) = queue.next_expired().await {
                assert!(Instant::now() >= e.deadline(), "item {} early", e.get_ref());
                seen.push(e.into_inner());
            }
            seen
        })
        .await
        .expect("the queue never drained")
    });
    let mut sorted = seen.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, (0..300).collect::<Vec<_>>());
    drop(queue);
    assert_eq!(timers.pending(), 0);
}

/// tokio's `drop_from_wake`, but for a `DelayQueue`'s task: the waker the
/// queue's timer wakes drops the queue itself (the list holds it), on the
/// driver thread; the driver carries on and nothing is left pending.
#[test]
fn a_delay_queue_dropped_from_its_own_wake() {
    within_patience("queue dropped from its wake", || {
        let timers = manual();
        type Queues = Arc<Mutex<Vec<DelayQueue<u32>>>>;
        struct DropsQueues(Queues, AtomicBool);
        impl Wake for DropsQueues {
            fn wake(self: Arc<Self>) {
                self.wake_by_ref();
            }
            fn wake_by_ref(self: &Arc<Self>) {
                if let Ok(mut q) = self.0.try_lock() {
                    q.clear();
                    self.1.store(true, SeqCst);
                }
            }
        }
        let queues: Queues = Arc::default();
        let dropper = Arc::new(DropsQueues(queues.clone(), AtomicBool::new(false)));
        let waker = Waker::from(dropper.clone());
        for i in 0..10 {
            let mut q = DelayQueue::with_service(&timers);
            q.insert(i, ms(10));
            q.insert(i, ms(20));
            dq_pending(&mut q, &waker);
            queues.lock().unwrap().push(q);
        }
        assert_eq!(timers.pending(), 10);
        timers.advance(ms(11)).unwrap();
        assert!(dropper.1.load(SeqCst), "no wake emptied the list");
        assert!(queues.lock().unwrap().is_empty());
        assert_eq!(timers.pending(), 0);
        assert_eq!(timers.stats().panicked, 0);
    });
}

// ---------------------------------------------------------------------------
// Races with the driver on the real clock
// ---------------------------------------------------------------------------

const HOUR: Duration = Duration::from_secs(3600);

/// A tiny xorshift, for spreads that do not depend on a seed crate.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

fn spin_until(t: Instant) {
    while Instant::now() < t {
        std::hint::spin_loop();
    }
}

/// `reset_sleep_to_past` racing the driver: a waiting sleep reset to a
/// deadline passed (the driver fires it "at once", on its own thread),
/// then at once, or a moment later, an hour out. Whichever way the race
/// went, the sleep is pending after the second reset and stays so: the
/// fire meant for the first reset never completes it an hour early.
#[test]
fn a_sleep_reset_to_the_past_then_an_hour_out_never_completes_early() {
    let timers = TimerService::new();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut sleeps = Vec::new();
    for i in 0..2000 {
        let mut s = timers.sleep(HOUR);
        assert!(poll(&mut s, Waker::noop()).is_pending());
        s.reset(Instant::now() - ms(1));
        if i % 3 == 0 {
            assert!(poll(&mut s, Waker::noop()).is_ready());
        }
        spin_until(Instant::now() + us(rng.below(40)));
        s.reset(Instant::now() + HOUR);
        assert!(!s.is_elapsed());
        assert!(poll(&mut s, Waker::noop()).is_pending());
        sleeps.push(s);
    }
    thread::sleep(ms(50));
    for (i, s) in sleeps.iter_mut().enumerate() {
        assert!(!s.is_elapsed(), "sleep {i} completed an hour early");
        assert!(poll(s, Waker::noop()).is_pending());
    }
    assert_eq!(timers.pending(), 2000);
    drop(sleeps);
    assert_eq!(timers.pending(), 0);
}

/// A waiting sleep moved to 1 ms out, then, as the driver fires it (a
/// spin of 0-300 µs past that deadline), an hour out: pending after the
/// move whichever came first, and never completed by the fire it escaped.
#[test]
fn a_sleep_moved_an_hour_out_as_its_near_deadline_fires_never_completes_early() {
    let timers = TimerService::new();
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let mut sleeps = Vec::new();
    for _ in 0..300 {
        let mut s = timers.sleep(HOUR);
        assert!(poll(&mut s, Waker::noop()).is_pending());
        let near = Instant::now() + ms(1);
        s.reset(near);
        spin_until(near + us(rng.below(300)));
        s.reset(Instant::now() + HOUR);
        assert!(!s.is_elapsed());
        assert!(poll(&mut s, Waker::noop()).is_pending());
        sleeps.push(s);
    }
    thread::sleep(ms(30));
    for (i, s) in sleeps.iter_mut().enumerate() {
        assert!(!s.is_elapsed(), "sleep {i} completed an hour early");
    }
    assert_eq!(timers.pending(), 300);
}

/// The same race inside a `DelayQueue`: its item moved to 1 ms out and
/// polled (the queue's one timer follows it), then, as that timer fires,
/// an hour out and polled again. The item never comes out early. (It may
/// come out at the first poll, should this thread be held up past the 1 ms:
/// it is due then, and goes back in.)
#[test]
fn a_delay_queue_item_moved_away_as_its_timer_fires_never_comes_out_early() {
    let timers = TimerService::new();
    let mut rng = Rng(0x1234_5678_9abc_def1);
    let mut queue = DelayQueue::with_service(&timers);
    let mut key = queue.insert("x", HOUR);
    let w = Waker::noop();
    dq_pending(&mut queue, w);
    for _ in 0..300 {
        let near = Instant::now() + ms(1);
        queue.reset_at(&key, near);
        if let Poll::Ready(out) = dq(&mut queue, w) {
            assert!(out.is_some() && Instant::now() >= near, "came out early");
            key = queue.insert("x", HOUR);
            continue;
        }
        spin_until(near + us(rng.below(300)));
        queue.reset(&key, HOUR);
        dq_pending(&mut queue, w);
    }
    thread::sleep(ms(20));
    dq_pending(&mut queue, w);
    assert_eq!(queue.len(), 1);
}

/// More sleeps than a spot has places (300), made and polled on a thread
/// that then exits, moved to this thread, each reset to 1-30 ms out and
/// awaited together under tokio: each ends, none before its deadline.
#[test]
fn sleeps_from_an_exited_thread_reset_and_awaited_elsewhere_all_end_never_early() {
    let timers = TimerService::new();
    let made = {
        let timers = timers.clone();
        thread::spawn(move || {
            (0..300)
                .map(|_| {
                    let mut s = timers.sleep(HOUR);
                    assert!(poll(&mut s, Waker::noop()).is_pending());
                    s
                })
                .collect::<Vec<_>>()
        })
        .join()
        .unwrap()
    };
    assert_eq!(timers.pending(), 300);
    let mut rng = Rng(0x0dd_ba11);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let started = Instant::now();
    rt.block_on(async {
        let waits = made.into_iter().map(|mut s| {
            let deadline = Instant::now() + ms(1 + rng.below(30));
            s.reset(deadline);
            async move {
                s.await;
                assert!(Instant::now() >= deadline, "ended early");
            }
        });
        tokio::time::timeout(PATIENCE, futures::future::join_all(waits))
            .await
            .expect("a sleep moved from an exited thread never ended");
    });
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(timers.pending(), 0);
}

/// `advance` "returns once every timer due by the new time has fired":
/// 200 sleeps (more than a spot's places, so some parked, some queued,
/// half of them filed by the driver first), each moved earlier or later
/// once after its first poll. Stepping a millisecond at a time, each is
/// woken in the step that reaches its last deadline, not before, not
/// after, and exactly once.
#[test]
fn advance_fires_exactly_the_sleeps_moved_to_each_step() {
    let timers = manual();
    let start = timers.now();
    let mut rng = Rng(0xfeed_f00d);
    let mut sleeps: Vec<(Sleep, Arc<Counter>, Waker, u64)> = Vec::new();
    for i in 0..200 {
        let first = 1 + rng.below(60);
        let (c, w) = counter();
        let mut s = timers.sleep(ms(first));
        assert!(poll(&mut s, &w).is_pending());
        if i == 100 {
            timers.advance(Duration::ZERO).unwrap(); // the first half filed
        }
        sleeps.push((s, c, w, first));
    }
    for (s, _, _, at) in &mut sleeps {
        *at = 1 + rng.below(60);
        s.reset(start + ms(*at));
    }
    assert_eq!(timers.pending(), 200);
    for now in 1..=60 {
        timers.advance(ms(1)).unwrap();
        let waiting = sleeps.iter().filter(|(.., at)| *at > now).count();
        assert_eq!(timers.pending(), waiting, "at {now} ms");
        for (i, (s, c, w, at)) in sleeps.iter_mut().enumerate() {
            let due = *at <= now;
            assert_eq!(
                c.count(),
                usize::from(due),
                "sleep {i} (due {at}) at {now} ms"
            );
            assert_eq!(
                poll(s, w).is_ready(),
                due,
                "sleep {i} (due {at}) at {now} ms"
            );
        }
    }
    drop(sleeps);
    assert_eq!(timers.pending(), 0);
}

/// The global functions, as tokio's free ones are used: `sleep`,
/// `sleep_until`, `timeout`, `timeout_at`, `interval` and a `DelayQueue`
/// on the global service, from tasks of a multi-thread runtime. Never
/// early, all done, nothing left pending.
#[test]
fn the_global_functions_under_a_multi_thread_runtime() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut tasks = Vec::new();
        for i in 0..20u64 {
            tasks.push(tokio::spawn(async move {
                let start = Instant::now();
                wheel_sync::sleep(ms(i % 5)).await;
                assert!(start.elapsed() >= ms(i % 5));
                let at = Instant::now() + ms(2);
                wheel_sync::sleep_until(at).await;
                assert!(Instant::now() >= at);
                let never = std::future::pending::<()>();
                let t0 = Instant::now();
                assert!(wheel_sync::timeout(ms(3), never).await.is_err());
                assert!(t0.elapsed() >= ms(3));
                let ok = wheel_sync::timeout_at(Instant::now() + HOUR, async { i }).await;
                assert_eq!(ok, Ok(i));
                let mut every = wheel_sync::interval(ms(2));
                let first = every.tick().await;
                for k in 1..4u32 {
                    let due = every.tick().await;
                    assert_eq!(due, first + ms(2) * k);
                    assert!(Instant::now() >= due);
                }
                let mut queue = DelayQueue::new();
                for d in [3, 1, 2] {
                    queue.insert(d, ms(d));
                }
                let mut out = Vec::new();
                while let Some(e) = queue.next_expired().await {
                    assert!(Instant::now() >= e.deadline());
                    out.push(e.into_inner());
                }
                assert_eq!(out.len(), 3);
            }));
        }
        for t in tasks {
            tokio::time::timeout(PATIENCE, t)
                .await
                .expect("a task using the global service hung")
                .unwrap();
        }
    });
    assert_eq!(TimerService::global().pending(), 0);
}

//! The nastiest cases of tokio's `tests/time_timeout.rs`, `time_rt.rs`,
//! `time_interval.rs` and `time_pause.rs`, ported to wheel-sync's public
//! API, mostly on a manual clock (tokio's paused one).
#![cfg(not(loom))]

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use wheel_sync::{Interval, MissedTickBehavior, TimerService};

mod common;
use common::tokio_cases::*;

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

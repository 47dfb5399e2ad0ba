//! Races with the driver on the real clock, in the manner of tokio's timer
//! tests: a sleep, or a `DelayQueue` item, moved away just as its timer
//! fires never completes early; sleeps handed between threads; the global
//! functions under a multi-thread runtime.
#![cfg(not(loom))]

use std::sync::Arc;
use std::task::{Poll, Waker};
use std::thread;
use std::time::{Duration, Instant};

use wheel_sync::{DelayQueue, Sleep, TimerService};

mod common;
use common::tokio_cases::*;

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

//! The futures under tokio's two runtimes, used the way tokio programs use
//! them: thousands of timeouts racing channels in `select!`, a `Sleep`
//! moved between tasks (and executors) and reset there, polls with
//! `yield_now` between them, an `Interval` whose tick future `select!`
//! drops, and wakers from inside `block_in_place`. Each asserts a promise
//! of the crate docs: nothing early, the latest waker woken, every timer
//! settled once, `pending` back to 0. Beside it: `under_tokio_delay_queue.rs`
//! (the queue), `under_tokio_teardown.rs` (tasks aborted, the runtime or
//! the service ended under them), `under_tokio_many_threads.rs` (more
//! threads than parking spots).
#![cfg(not(loom))]

use std::future::pending;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use futures::poll;
use tokio::sync::oneshot;
use tokio::task::{yield_now, JoinHandle};
use wheel_sync::{Sleep, TimerService};

mod common;
use common::tokio_runtimes::{assert_settled, multi_thread, RUNTIMES};
use common::{ms, within_patience, XorShift, HOUR};

/// How a task's channel is answered, and so who must win.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Answer {
    /// Sent after a `yield_now`, against an hour's timeout: the channel wins.
    AfterAYield,
    /// Sent after a wheel-sync sleep, against an hour's timeout: the
    /// channel wins, and the timeout's timer is cancelled.
    AfterASleep,
    /// Sent at the timeout's own deadline (the same tick): either wins.
    AtTheDeadline,
    /// Never sent (the sender is kept): the timeout wins.
    Never,
}

const ANSWERS: [Answer; 4] = [
    Answer::AfterAYield,
    Answer::AfterASleep,
    Answer::AtTheDeadline,
    Answer::Never,
];

/// One request: a `Timeout` (or, every other group of four, a wheel-sync
/// `Sleep` in `tokio::select!`) against a tokio oneshot channel. Returns
/// who was to answer and whether the channel won; a deadline that elapsed
/// is checked against `Instant::now()`.
async fn request(timers: TimerService, i: usize) -> (Answer, bool) {
    let answer = ANSWERS[i % 4];
    let delay = ms(1 + (i % 16) as u64);
    let limit = match answer {
        Answer::AfterAYield | Answer::AfterASleep => HOUR,
        Answer::AtTheDeadline | Answer::Never => delay,
    };
    let (tx, rx) = oneshot::channel::<usize>();
    let mut kept = None;
    match answer {
        Answer::AfterAYield => {
            tokio::spawn(async move {
                yield_now().await;
                let _ = tx.send(i);
            });
        }
        Answer::AfterASleep | Answer::AtTheDeadline => {
            let sleep = timers.sleep(delay);
            tokio::spawn(async move {
                sleep.await;
                let _ = tx.send(i);
            });
        }
        Answer::Never => kept = Some(tx),
    }
    let won = if i % 8 < 4 {
        let timeout = timers.timeout(limit, rx);
        let deadline = timeout.deadline();
        match timeout.await {
            Ok(got) => {
                assert_eq!(got, Ok(i), "request {i}");
                true
            }
            Err(_) => {
                assert!(Instant::now() >= deadline, "request {i}: timed out early");
                false
            }
        }
    } else {
        let sleep = timers.sleep(limit);
        let deadline = sleep.deadline();
        tokio::select! {
            got = rx => {
                assert_eq!(got, Ok(i), "request {i}");
                true
            }
            () = sleep => {
                assert!(Instant::now() >= deadline, "request {i}: slept past early");
                false
            }
        }
    };
    drop(kept);
    (answer, won)
}

/// Two thousand requests at once on each runtime: the channel wins where it
/// must, the deadline where it must, either at the shared deadline, none
/// early; then nothing is pending and every timer is settled once.
#[test]
fn thousands_of_timeouts_racing_tokio_channels_settle_once_and_never_early() {
    const REQUESTS: usize = 2000;
    for (name, runtime) in RUNTIMES {
        within_patience(move || {
            let timers = TimerService::new();
            let rt = runtime();
            let tasks: Vec<JoinHandle<(Answer, bool)>> = (0..REQUESTS)
                .map(|i| rt.spawn(request(timers.clone(), i)))
                .collect();
            let outcomes = rt.block_on(async {
                let mut outcomes = Vec::new();
                for task in tasks {
                    outcomes.push(task.await.expect("a request panicked"));
                }
                outcomes
            });
            for (i, &(answer, won)) in outcomes.iter().enumerate() {
                match answer {
                    Answer::AfterAYield | Answer::AfterASleep => {
                        assert!(won, "{name}: request {i} ({answer:?}) timed out");
                    }
                    Answer::Never => assert!(!won, "{name}: request {i} answered"),
                    Answer::AtTheDeadline => {}
                }
            }
            drop(rt);
            assert_settled(&timers, name);
        });
    }
}

/// Ten thousand tasks sleeping to one deadline, more than a driver round
/// fires (it fires a bounded batch and goes again): every task is woken,
/// none before the deadline, and nothing stays pending.
#[test]
fn ten_thousand_tasks_sleeping_to_one_deadline_are_all_woken_never_early() {
    const TASKS: usize = 10_000;
    for (name, runtime) in RUNTIMES {
        within_patience(move || {
            let timers = TimerService::new();
            let rt = runtime();
            let deadline = Instant::now() + ms(50);
            // On a slow machine the last may be made past the deadline:
            // those complete at once, with no timer.
            let mut timed = 0;
            let tasks: Vec<_> = (0..TASKS)
                .map(|_| {
                    let sleep = timers.sleep_until(deadline);
                    timed += usize::from(!sleep.is_elapsed());
                    rt.spawn(async move {
                        sleep.await;
                        Instant::now()
                    })
                })
                .collect();
            rt.block_on(async {
                for task in tasks {
                    assert!(task.await.unwrap() >= deadline, "{name}: woken early");
                }
            });
            drop(rt);
            assert_settled(&timers, name);
            assert_eq!(timers.stats().fired, timed as u64, "{name}");
        });
    }
}

/// A sleep polled by one task (its timer made, that task's waker kept),
/// then sent to another task, likely on another worker, and finished
/// there: as it was (the new task's waker must be the one woken), reset
/// earlier, or parked an hour away and reset back; then re-armed after its
/// fire, on that thread. Never early, never lost.
#[test]
fn a_sleep_moved_to_another_task_wakes_that_task_and_resets_there() {
    const SLEEPS: usize = 300;
    within_patience(|| {
        let timers = TimerService::new();
        let rt = multi_thread();
        let tasks: Vec<_> = (0..SLEEPS)
            .map(|i| {
                let (tx, rx) = oneshot::channel::<Sleep>();
                let on = timers.clone();
                let poller = rt.spawn(async move {
                    let mut sleep = on.sleep(ms(3 + (i % 8) as u64));
                    assert!(poll!(&mut sleep).is_pending(), "sleep {i}");
                    tx.send(sleep).unwrap();
                });
                let finisher = rt.spawn(async move {
                    let mut sleep = rx.await.unwrap();
                    let mut deadline = sleep.deadline();
                    match i % 3 {
                        0 => {}
                        1 => {
                            deadline = Instant::now() + ms(1 + (i % 3) as u64);
                            sleep.reset(deadline);
                        }
                        _ => {
                            sleep.reset(Instant::now() + HOUR);
                            assert!(poll!(&mut sleep).is_pending(), "sleep {i}");
                            yield_now().await;
                            deadline = Instant::now() + ms(2);
                            sleep.reset(deadline);
                        }
                    }
                    (&mut sleep).await;
                    assert!(Instant::now() >= deadline, "sleep {i}: done early");
                    let again = Instant::now() + ms(2);
                    sleep.reset(again);
                    assert!(!sleep.is_elapsed(), "sleep {i}: re-armed, yet done");
                    sleep.await;
                    assert!(Instant::now() >= again, "sleep {i}: re-armed, done early");
                });
                (poller, finisher)
            })
            .collect();
        rt.block_on(async {
            for (poller, finisher) in tasks {
                poller.await.unwrap();
                finisher.await.unwrap();
            }
        });
        drop(rt);
        assert_settled(&timers, "moved sleeps");
    });
}

/// A sleep and a timeout polled under tokio, then finished under another
/// executor (`futures`' thread pool): its tasks' wakers replace tokio's.
#[test]
fn a_sleep_polled_under_tokio_is_finished_under_a_futures_thread_pool() {
    const SLEEPS: usize = 200;
    within_patience(|| {
        let timers = TimerService::new();
        let rt = multi_thread();
        let pool = futures::executor::ThreadPool::builder()
            .pool_size(2)
            .create()
            .unwrap();
        let (tx, rx) = mpsc::channel();
        for i in 0..SLEEPS {
            let (timers, tx) = (timers.clone(), tx.clone());
            rt.spawn(async move {
                let mut sleep = timers.sleep(ms(2 + (i % 6) as u64));
                let mut timeout = timers.timeout(ms(2 + (i % 5) as u64), pending::<()>());
                assert!(poll!(&mut sleep).is_pending());
                assert!(poll!(&mut timeout).is_pending());
                tx.send((sleep, timeout)).unwrap();
            });
        }
        drop(tx);
        let finished: Vec<_> = rx
            .iter()
            .map(|(sleep, timeout)| {
                let task = async move {
                    let deadlines = (sleep.deadline(), timeout.deadline());
                    sleep.await;
                    assert!(timeout.await.is_err());
                    assert!(Instant::now() >= deadlines.0.max(deadlines.1), "done early");
                };
                futures::task::SpawnExt::spawn_with_handle(&pool, task).unwrap()
            })
            .collect();
        assert_eq!(finished.len(), SLEEPS);
        futures::executor::block_on(futures::future::join_all(finished));
        drop(rt);
        assert_settled(&timers, "sleeps moved to a thread pool");
    });
}

/// A keep-alive: a task polls its sleep, yields, resets it (later, earlier,
/// the same, or to a deadline already passed), polls again, many times,
/// while the driver fires the deadlines it leaves behind. Whenever the
/// sleep says it is done, its current deadline has come; after the last
/// reset it completes. And a timeout around a future that yields forever
/// elapses, not early.
#[test]
fn a_sleep_reset_and_polled_between_yields_is_never_done_early() {
    const TASKS: usize = 60;
    for (name, runtime) in RUNTIMES {
        within_patience(move || {
            let timers = TimerService::new();
            let rt = runtime();
            let tasks: Vec<_> = (0..TASKS)
                .map(|t| {
                    let timers = timers.clone();
                    rt.spawn(async move {
                        let mut rng = XorShift::new(t as u64 + 1);
                        let mut sleep = timers.sleep(ms(1));
                        let mut deadline = sleep.deadline();
                        for round in 0..40 {
                            if rng.below(3) > 0 {
                                deadline = Instant::now() + ms(rng.below(3));
                                sleep.reset(deadline);
                            }
                            for _ in 0..2 {
                                let done = poll!(&mut sleep).is_ready() || sleep.is_elapsed();
                                let now = Instant::now();
                                assert!(!done || now >= deadline, "task {t} round {round}: early");
                                yield_now().await;
                            }
                        }
                        (&mut sleep).await;
                        assert!(Instant::now() >= deadline, "task {t}: done early");
                        drop(sleep);
                        let deadline = Instant::now() + ms(2);
                        let busy = async {
                            loop {
                                yield_now().await;
                            }
                        };
                        assert!(timers.timeout_at(deadline, busy).await.is_err());
                        assert!(Instant::now() >= deadline, "task {t}: timeout early");
                    })
                })
                .collect();
            rt.block_on(async {
                for task in tasks {
                    task.await.unwrap();
                }
            });
            drop(rt);
            assert_settled(&timers, name);
        });
    }
}

/// `Interval::tick` in a `select!` loop whose other branch (a yield, a
/// wheel-sync sleep or a tokio sleep) often wins, dropping the tick
/// future: no tick is lost, none early, and the schedule is kept (by
/// default a late tick bursts the missed ones, so tick `k` is due at
/// `start + k × period` exactly).
#[test]
fn interval_ticks_in_a_select_loop_that_drops_the_tick_future_are_all_delivered_on_schedule() {
    const INTERVALS: usize = 24;
    const TICKS: u32 = 25;
    for (name, runtime) in RUNTIMES {
        within_patience(move || {
            let timers = TimerService::new();
            let rt = runtime();
            let tasks: Vec<_> = (0..INTERVALS)
                .map(|i| {
                    let timers = timers.clone();
                    rt.spawn(async move {
                        let period = ms(2 + (i % 3) as u64);
                        let start = Instant::now() + ms(1);
                        let mut every = timers.interval_at(start, period);
                        let (mut ticks, mut dropped) = (0, 0_u32);
                        while ticks < TICKS {
                            tokio::select! {
                                due = every.tick() => {
                                    assert_eq!(due, start + period * ticks, "{i}: tick {ticks} off schedule");
                                    assert!(Instant::now() >= due, "{i}: tick {ticks} early");
                                    ticks += 1;
                                }
                                () = async {
                                    match i % 3 {
                                        0 => yield_now().await,
                                        1 => timers.sleep(Duration::from_micros(700)).await,
                                        _ => tokio::time::sleep(Duration::from_micros(700)).await,
                                    }
                                } => dropped += 1,
                            }
                        }
                        dropped
                    })
                })
                .collect();
            let dropped: u32 = rt.block_on(async {
                let mut dropped = 0;
                for task in tasks {
                    dropped += task.await.unwrap();
                }
                dropped
            });
            assert!(dropped > 0, "{name}: no tick future was ever dropped");
            drop(rt);
            assert_settled(&timers, name);
        });
    }
}

/// Wakers from inside `block_in_place`: a sleep polled by its task, then
/// waited on by a `block_on` inside `block_in_place` (that thread's waker
/// replaces the task's), then reset and awaited by the task again,
/// wherever it runs after; and a timeout run to its end by the runtime
/// handle's `block_on` there.
#[test]
fn sleeps_waited_on_inside_block_in_place_are_woken_and_never_early() {
    const TASKS: usize = 40;
    within_patience(|| {
        let timers = TimerService::new();
        let rt = multi_thread();
        let tasks: Vec<_> = (0..TASKS)
            .map(|i| {
                let timers = timers.clone();
                rt.spawn(async move {
                    let mut sleep = timers.sleep(ms(2 + (i % 4) as u64));
                    let deadline = sleep.deadline();
                    assert!(poll!(&mut sleep).is_pending());
                    tokio::task::block_in_place(|| futures::executor::block_on(&mut sleep));
                    assert!(Instant::now() >= deadline, "task {i}: woke early");
                    let again = Instant::now() + ms(2);
                    sleep.reset(again);
                    assert!(poll!(&mut sleep).is_pending());
                    let handle = tokio::runtime::Handle::current();
                    let lost = tokio::task::block_in_place(|| {
                        handle.block_on(timers.timeout(ms(1), pending::<()>()))
                    });
                    assert!(lost.is_err(), "task {i}");
                    sleep.await;
                    assert!(Instant::now() >= again, "task {i}: re-armed, woke early");
                })
            })
            .collect();
        rt.block_on(async {
            for task in tasks {
                task.await.unwrap();
            }
        });
        drop(rt);
        assert_settled(&timers, "block_in_place");
    });
}

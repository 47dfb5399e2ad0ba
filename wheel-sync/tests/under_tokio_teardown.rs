//! Tokio tasks that wait on the service, torn down under it: aborted while
//! they wait or while their timers fire, dropped with their runtime, left
//! holding sleeps whose threads have ended, or waiting when the service
//! itself shuts down. Nothing hangs, `pending` comes back to 0, every timer
//! is settled once, and a future whose service ended panics when polled
//! (or says so first), as the crate docs promise. `under_tokio.rs` runs the
//! same futures while everything stays up.
#![cfg(not(loom))]

use std::future::{pending, poll_fn, Future};
use std::pin::Pin;
use std::sync::mpsc;
use std::task::Poll;
use std::thread;
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use futures::{poll, FutureExt};
use tokio::task::JoinError;
use wheel_sync::{DelayQueue, Sleep, TimerService};

mod common;
use common::tokio_runtimes::{assert_settled, multi_thread, RUNTIMES};
use common::{block_on, ms, within_patience, XorShift, HOUR, PATIENCE};

/// Waits, under the runtime, until `cond` holds (the watchdog bounds it).
async fn until(cond: impl Fn() -> bool) {
    while !cond() {
        tokio::time::sleep(ms(1)).await;
    }
}

/// Kinds of futures a task waits on, each one pending timer once polled.
const KINDS: usize = 4;

/// A task waiting an hour on one of the [`KINDS`]: a sleep, a timeout, an
/// interval's second tick or a delay queue's item. It holds no clone of the
/// service, so it does not keep the service running.
fn an_hour(timers: &TimerService, kind: usize) -> BoxFuture<'static, ()> {
    match kind % KINDS {
        0 => timers.sleep(HOUR).boxed(),
        1 => timers.timeout(HOUR, pending::<()>()).map(drop).boxed(),
        2 => {
            let mut every = timers.interval(HOUR);
            async move {
                every.tick().await;
                every.tick().await;
            }
            .boxed()
        }
        _ => {
            let mut queue = DelayQueue::with_service(timers);
            queue.insert((), HOUR);
            async move {
                queue.next_expired().await;
            }
            .boxed()
        }
    }
}

/// Tasks aborted while each waits an hour, from outside the runtime: each
/// future is dropped on whatever thread tokio drops it, and `pending` is 0
/// once the handles have answered.
#[test]
fn tasks_aborted_while_they_wait_leave_nothing_pending() {
    const TASKS: usize = 2000;
    for (name, runtime) in RUNTIMES {
        within_patience(move || {
            let timers = TimerService::new();
            let rt = runtime();
            let tasks: Vec<_> = (0..TASKS).map(|i| rt.spawn(an_hour(&timers, i))).collect();
            rt.block_on(until(|| timers.pending() == TASKS));
            tasks.iter().for_each(|task| task.abort());
            let results = rt.block_on(futures::future::join_all(tasks));
            assert!(results
                .iter()
                .all(|r| r.as_ref().is_err_and(JoinError::is_cancelled)));
            assert_eq!(timers.pending(), 0, "{name}: aborted tasks' timers remain");
            assert_settled(&timers, name);
            assert_eq!(timers.stats().cancelled, TASKS as u64, "{name}");
        });
    }
}

/// A task whose timers come due every millisecond or so, for ever.
fn busy_forever(timers: TimerService, i: usize) -> BoxFuture<'static, ()> {
    let mut rng = XorShift::new(i as u64 + 1);
    let mut delay = move || Duration::from_micros(rng.below(2500));
    match i % KINDS {
        0 => async move {
            loop {
                timers.sleep(delay()).await;
            }
        }
        .boxed(),
        1 => async move {
            loop {
                let _ = timers.timeout(delay(), pending::<()>()).await;
            }
        }
        .boxed(),
        2 => async move {
            let mut every = timers.interval(ms(1));
            loop {
                every.tick().await;
            }
        }
        .boxed(),
        _ => async move {
            let mut queue = DelayQueue::with_service(&timers);
            loop {
                queue.insert((), delay());
                queue.insert((), delay());
                while queue.next_expired().await.is_some() {}
            }
        }
        .boxed(),
    }
}

/// Tasks aborted a few at a time, from another thread, while their timers
/// fire, move and are made anew: each drop races the driver's fire and
/// wake. Every handle answers "cancelled", nothing stays pending, and the
/// counts add up.
#[test]
fn tasks_aborted_while_their_timers_fire_settle_every_timer() {
    const TASKS: usize = 400;
    for (name, runtime) in RUNTIMES {
        within_patience(move || {
            let timers = TimerService::new();
            let rt = runtime();
            let tasks: Vec<_> = (0..TASKS)
                .map(|i| rt.spawn(busy_forever(timers.clone(), i)))
                .collect();
            let mut aborts: Vec<_> = tasks.iter().map(|t| t.abort_handle()).collect();
            let joined = thread::spawn(move || {
                let results = rt.block_on(futures::future::join_all(tasks));
                drop(rt);
                results
            });
            let mut rng = XorShift::new(3);
            thread::sleep(ms(5));
            while !aborts.is_empty() {
                for _ in 0..=rng.below(8) {
                    if !aborts.is_empty() {
                        let i = rng.below(aborts.len() as u64) as usize;
                        aborts.swap_remove(i).abort();
                    }
                }
                thread::sleep(Duration::from_micros(rng.below(600)));
            }
            let results = joined.join().unwrap();
            for (i, result) in results.iter().enumerate() {
                match result {
                    Err(e) if e.is_cancelled() => {}
                    other => panic!("{name}: task {i} ended with {other:?}"),
                }
            }
            assert_settled(&timers, name);
        });
    }
}

/// A runtime shut down with thousands of tasks waiting on the service
/// (dropped on the thread that shuts it down, or on its workers): the
/// shutdown does not hang, and their timers are gone with them.
#[test]
fn a_runtime_shut_down_with_thousands_of_waiting_tasks_leaves_nothing_pending() {
    const TASKS: usize = 3000;
    for (name, runtime) in RUNTIMES {
        within_patience(move || {
            let timers = TimerService::new();
            let rt = runtime();
            for i in 0..TASKS {
                rt.spawn(an_hour(&timers, i));
            }
            rt.block_on(until(|| timers.pending() == TASKS));
            // From a thread of its own: not the one whose lane made them.
            let took = thread::spawn(move || {
                let start = Instant::now();
                rt.shutdown_timeout(PATIENCE);
                start.elapsed()
            })
            .join()
            .unwrap();
            assert!(took < PATIENCE, "{name}: the runtime's shutdown hung");
            assert_eq!(timers.pending(), 0, "{name}: dropped tasks' timers remain");
            assert_settled(&timers, name);
        });
    }
}

/// Sleeps made and polled by tokio tasks, then sent out of the runtime,
/// which is dropped: the worker threads that made them (and hold their
/// lanes) have ended. On the thread they were sent to, a third are
/// dropped, a third reset and waited on, a third waited on as they are
/// (their deadlines may pass before or after the runtime's end): each
/// completes, not early, and nothing stays pending.
#[test]
fn sleeps_outliving_the_tokio_workers_that_made_them_still_complete_reset_and_cancel() {
    const SLEEPS: usize = 300;
    within_patience(|| {
        let timers = TimerService::new();
        let rt = multi_thread();
        let (tx, rx) = mpsc::channel::<(usize, Sleep)>();
        for i in 0..SLEEPS {
            let (timers, tx) = (timers.clone(), tx.clone());
            rt.spawn(async move {
                let mut sleep = timers.sleep(ms(1 + (i % 20) as u64));
                assert!(poll!(&mut sleep).is_pending());
                tx.send((i, sleep)).unwrap();
            });
        }
        drop(tx);
        let sleeps: Vec<_> = rx.iter().collect();
        assert_eq!(sleeps.len(), SLEEPS);
        drop(rt);
        for (i, mut sleep) in sleeps {
            match i % 3 {
                0 => drop(sleep),
                1 => {
                    let deadline = Instant::now() + ms(1 + (i % 3) as u64);
                    sleep.reset(deadline);
                    block_on(&mut sleep);
                    assert!(Instant::now() >= deadline, "sleep {i}: reset, done early");
                }
                _ => {
                    let deadline = sleep.deadline();
                    block_on(&mut sleep);
                    assert!(Instant::now() >= deadline, "sleep {i}: done early");
                }
            }
        }
        assert_settled(&timers, "sleeps outliving their threads");
    });
}

/// How a task waiting on a service that shuts down ended.
#[derive(Debug, PartialEq, Eq)]
enum Ended {
    /// It panicked, as documented, with the service's message.
    Panicked,
    /// It asked `is_shut_down` first and was told.
    Told,
}

/// A task's end: `Told` from the task itself, or the panic its handle
/// carries, which must be the service's.
fn ended(result: Result<Ended, JoinError>) -> Ended {
    match result {
        Ok(told) => told,
        Err(e) if e.is_panic() => {
            let panic = e.into_panic();
            let message = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            assert!(message.contains("shut down"), "a foreign panic: {message}");
            Ended::Panicked
        }
        Err(e) => panic!("a task was {e:?}"),
    }
}

/// A task waiting an hour when the service ends: the [`an_hour`] kinds
/// panic when polled after, as documented; two more kinds ask
/// `Sleep::is_shut_down` / `Interval::is_shut_down` at each poll and end
/// when told.
fn waits_for_shutdown(timers: &TimerService, kind: usize) -> BoxFuture<'static, Ended> {
    match kind % (KINDS + 2) {
        k if k < KINDS => an_hour(timers, k).map(|()| unreachable!()).boxed(),
        k if k == KINDS => {
            let mut sleep = timers.sleep(HOUR);
            poll_fn(move |cx| {
                if sleep.is_shut_down() {
                    return Poll::Ready(Ended::Told);
                }
                Pin::new(&mut sleep).poll(cx).map(|()| unreachable!())
            })
            .boxed()
        }
        _ => {
            let mut every = timers.interval_at(Instant::now() + HOUR, HOUR);
            poll_fn(move |cx| {
                if every.is_shut_down() {
                    return Poll::Ready(Ended::Told);
                }
                every.poll_tick(cx).map(|_| unreachable!())
            })
            .boxed()
        }
    }
}

/// `shutdown` called from outside while tokio tasks wait on the service:
/// it reports each of their timers unfired, and wakes every task, whose
/// next poll panics with the service's message or is told by
/// `is_shut_down`; nothing hangs.
#[test]
fn a_service_shut_down_under_waiting_tokio_tasks_wakes_each_to_panic_or_be_told() {
    const TASKS: usize = 300;
    for (name, runtime) in RUNTIMES {
        within_patience(move || {
            let timers = TimerService::new();
            let rt = runtime();
            let tasks: Vec<_> = (0..TASKS)
                .map(|i| rt.spawn(waits_for_shutdown(&timers, i)))
                .collect();
            rt.block_on(until(|| timers.pending() == TASKS));
            let report = timers.shutdown().unwrap();
            assert_eq!(report.unfired, TASKS, "{name}");
            assert_eq!(timers.pending(), 0, "{name}");
            let results = rt.block_on(futures::future::join_all(tasks));
            for (i, result) in results.into_iter().enumerate() {
                let expected = if i % (KINDS + 2) < KINDS {
                    Ended::Panicked
                } else {
                    Ended::Told
                };
                assert_eq!(ended(result), expected, "{name}: task {i}");
            }
        });
    }
}

/// The service ended while its tasks are busy with timers that come due
/// every millisecond, made anew and moved all the time, some of them
/// racing the shutdown itself: each task ends in the service's panic (the
/// next sleep it waits on has no service to fire it), none hangs, and
/// nothing is left pending.
#[test]
fn tasks_busy_with_short_timers_when_the_service_shuts_down_all_end_in_its_panic() {
    const TASKS: usize = 200;
    for (name, runtime) in RUNTIMES {
        within_patience(move || {
            let timers = TimerService::new();
            let rt = runtime();
            let tasks: Vec<_> = (0..TASKS)
                .map(|i| rt.spawn(busy_forever(timers.clone(), i).map(|()| Ended::Told)))
                .collect();
            let joined = thread::spawn(move || rt.block_on(futures::future::join_all(tasks)));
            thread::sleep(ms(20));
            timers.shutdown().unwrap();
            let results = joined.join().unwrap();
            for (i, result) in results.into_iter().enumerate() {
                assert_eq!(ended(result), Ended::Panicked, "{name}: task {i}");
            }
            assert_eq!(timers.pending(), 0, "{name}");
        });
    }
}

/// The service's last clone, held by a tokio task, dropped there while
/// the other tasks wait on it: the service ends at once, on the runtime's
/// own thread, and every waiting task is woken to panic or be told.
#[test]
fn the_last_clone_dropped_inside_a_tokio_task_ends_the_service_under_its_neighbours() {
    const TASKS: usize = 120;
    for (name, runtime) in RUNTIMES {
        within_patience(move || {
            let timers = TimerService::new();
            let rt = runtime();
            let tasks: Vec<_> = (0..TASKS)
                .map(|i| rt.spawn(waits_for_shutdown(&timers, i)))
                .collect();
            let closer = rt.spawn(async move {
                until(|| timers.pending() == TASKS).await;
                drop(timers);
            });
            rt.block_on(closer).unwrap();
            let results = rt.block_on(futures::future::join_all(tasks));
            for (i, result) in results.into_iter().enumerate() {
                let expected = if i % (KINDS + 2) < KINDS {
                    Ended::Panicked
                } else {
                    Ended::Told
                };
                assert_eq!(ended(result), expected, "{name}: task {i}");
            }
        });
    }
}

//! `DelayQueue` under tokio's two runtimes: fed between polls by the task
//! that polls it (with `next_expired` and as a `Stream`, each in a
//! `select!` that often drops the poll), and fed by another task while one
//! waits on it. Every item comes out once, none early, by deadline among
//! those not yet due, and the waiting task is woken by an insert that
//! makes the earliest deadline earlier. `under_tokio.rs` has the other
//! futures.
#![cfg(not(loom))]

use std::future::poll_fn;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use tokio::task::yield_now;
use wheel_sync::{DelayQueue, TimerService};

mod common;
use common::tokio_runtimes::{assert_settled, RUNTIMES};
use common::{assert_in_deadline_order, ms, within_patience, XorShift, HOUR};

/// `out` (each item's value, deadline and the time it came out) holds
/// items `0..items`, each once, in deadline order among those not yet due.
fn assert_each_once_in_deadline_order(out: &[(usize, Instant, Instant)], items: usize, name: &str) {
    let mut values: Vec<usize> = out.iter().map(|&(v, _, _)| v).collect();
    values.sort_unstable();
    assert_eq!(
        values,
        (0..items).collect::<Vec<_>>(),
        "{name}: lost or doubled"
    );
    let times: Vec<_> = out.iter().map(|&(_, d, at)| (d, at)).collect();
    assert_in_deadline_order(&times);
}

/// A `DelayQueue` fed by the task that polls it: between polls (made in a
/// `select!` against a yield, so each `next_expired` future is often
/// dropped) it inserts items due from now to 12 ms on. Every item comes
/// out once, none early, by deadline among those not yet due; then the
/// queue's one timer is gone.
#[test]
fn a_delay_queue_fed_between_polls_by_its_own_task_hands_out_every_item_once_never_early() {
    const ITEMS: usize = 300;
    for (name, runtime) in RUNTIMES {
        within_patience(move || {
            let timers = TimerService::new();
            let rt = runtime();
            let tasks: Vec<_> = (0..4_u64)
                .map(|seed| {
                    let timers = timers.clone();
                    rt.spawn(async move {
                        let mut rng = XorShift::new(seed + 1);
                        let mut queue = DelayQueue::with_service(&timers);
                        let mut out = Vec::new();
                        let mut inserted = 0;
                        while inserted < ITEMS || !queue.is_empty() {
                            if inserted < ITEMS && rng.below(2) == 0 {
                                queue.insert(inserted, ms(rng.below(13)));
                                inserted += 1;
                            }
                            tokio::select! {
                                Some(expired) = queue.next_expired(), if !queue.is_empty() => {
                                    let now = Instant::now();
                                    out.push((*expired.get_ref(), expired.deadline(), now));
                                }
                                () = yield_now() => {}
                            }
                        }
                        out
                    })
                })
                .collect();
            let outs = rt.block_on(async {
                let mut outs = Vec::new();
                for task in tasks {
                    outs.push(task.await.unwrap());
                }
                outs
            });
            for out in outs {
                assert_each_once_in_deadline_order(&out, ITEMS, name);
            }
            drop(rt);
            assert_settled(&timers, name);
        });
    }
}

/// The queue as a `Stream` under tokio, fed between polls by its own task:
/// `StreamExt::next` in a `select!` guarded by `!is_empty()`, as the
/// stream's docs advise. Every item once, none early, deadline order among
/// those not yet due.
#[cfg(feature = "stream")]
#[test]
fn a_delay_queue_stream_fed_between_polls_yields_every_item_once_in_deadline_order() {
    use futures::StreamExt;
    const ITEMS: usize = 300;
    for (name, runtime) in RUNTIMES {
        within_patience(move || {
            let timers = TimerService::new();
            let rt = runtime();
            let service = timers.clone();
            let out = rt.block_on(async move {
                let mut rng = XorShift::new(11);
                let mut queue = DelayQueue::with_service(&service);
                let (mut out, mut inserted) = (Vec::new(), 0);
                while inserted < ITEMS || !queue.is_empty() {
                    if inserted < ITEMS && rng.below(2) == 0 {
                        queue.insert(inserted, ms(rng.below(13)));
                        inserted += 1;
                    }
                    tokio::select! {
                        Some(expired) = queue.next(), if !queue.is_empty() => {
                            let now = Instant::now();
                            out.push((*expired.get_ref(), expired.deadline(), now));
                        }
                        () = yield_now() => {}
                    }
                }
                assert!(queue.next().await.is_none(), "empty: the stream ends");
                out
            });
            assert_each_once_in_deadline_order(&out, ITEMS, name);
            drop(rt);
            assert_settled(&timers, name);
        });
    }
}

/// A queue shared by two tasks: one waits on it with an item an hour away,
/// the other inserts items due sooner, one at a time. Each insert makes
/// the earliest deadline earlier, so it must wake the waiting task
/// ("Wakes"), or that task waits an hour; a last `remove` empties the
/// queue, which must wake it to see `Ready(None)`.
#[test]
fn a_delay_queue_waited_on_by_one_task_is_woken_by_inserts_from_another() {
    const ITEMS: usize = 40;
    for (name, runtime) in RUNTIMES {
        within_patience(move || {
            let timers = TimerService::new();
            let rt = runtime();
            let queue = Arc::new(Mutex::new(DelayQueue::with_service(&timers)));
            let far = queue.lock().unwrap().insert(usize::MAX, HOUR);
            let (took_tx, mut took) = tokio::sync::mpsc::unbounded_channel();
            let waiter = {
                let queue = Arc::clone(&queue);
                rt.spawn(async move {
                    let mut out = Vec::new();
                    while let Some(expired) =
                        poll_fn(|cx| queue.lock().unwrap().poll_expired(cx)).await
                    {
                        out.push((expired.deadline(), Instant::now()));
                        took_tx.send(*expired.get_ref()).unwrap();
                    }
                    out
                })
            };
            let feeder = {
                let queue = Arc::clone(&queue);
                rt.spawn(async move {
                    for i in 0..ITEMS {
                        yield_now().await;
                        queue.lock().unwrap().insert(i, ms(1 + (i % 4) as u64));
                        assert_eq!(took.recv().await, Some(i), "item {i}");
                    }
                    queue.lock().unwrap().remove(&far);
                })
            };
            let out = rt.block_on(async {
                feeder.await.unwrap();
                waiter.await.unwrap()
            });
            assert_eq!(out.len(), ITEMS, "{name}");
            assert!(
                out.iter().all(|&(d, at)| at >= d),
                "{name}: an item came out early"
            );
            drop(rt);
            drop(queue);
            assert_settled(&timers, name);
        });
    }
}

//! `DelayQueue` against a model, on a manual clock: random inserts,
//! removes, resets and advances; after each advance the items that come out
//! are exactly the model's due ones, never early, and the queue then waits.
//! Then the wake-ups: a task waiting on the queue is woken by the earliest
//! deadline, also when an insert or a reset makes it earlier.
#![cfg(not(loom))]

use std::collections::HashMap;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use wheel_sync::delay_queue::Key;
use wheel_sync::{DelayQueue, TimerService};

mod common;
use common::{counting_waker, manual, ms, XorShift};

/// Takes out everything `poll_expired` hands over without waiting.
fn drain_due(queue: &mut DelayQueue<u64>, cx: &mut Context<'_>) -> Vec<(u64, Instant)> {
    let mut out = Vec::new();
    while let Poll::Ready(Some(expired)) = queue.poll_expired(cx) {
        out.push((*expired.get_ref(), expired.deadline()));
    }
    out
}

#[test]
fn items_come_out_exactly_when_due_against_a_model() {
    let timers = manual();
    let mut queue = DelayQueue::with_service(&timers);
    let start = timers.now();
    let mut rng = XorShift::new(11);
    // id -> (key, deadline)
    let mut model: HashMap<u64, (Key, Instant)> = HashMap::new();
    let mut cx = Context::from_waker(Waker::noop());
    for id in 0..20_000u64 {
        match rng.below(10) {
            0..=5 => {
                let deadline = timers.now() + Duration::from_micros(rng.below(300_000));
                let key = queue.insert_at(id, deadline);
                model.insert(id, (key, deadline));
            }
            6 if !model.is_empty() => {
                let victim = *model.keys().next().unwrap();
                let (key, _) = model.remove(&victim).unwrap();
                assert_eq!(queue.remove(&key).into_inner(), victim);
                assert!(
                    queue.try_remove(&key).is_none(),
                    "a stale key removed something"
                );
            }
            7 if !model.is_empty() => {
                let id = *model.keys().next().unwrap();
                let entry = model.get_mut(&id).unwrap();
                entry.1 = timers.now() + ms(rng.below(300));
                queue.reset_at(&entry.0, entry.1);
                assert_eq!(queue.deadline(&entry.0), entry.1);
            }
            _ => {
                timers
                    .advance(Duration::from_micros(rng.below(5_000)))
                    .unwrap();
                let now = timers.now();
                for (id, deadline) in drain_due(&mut queue, &mut cx) {
                    assert!(deadline <= now, "came out early");
                    let (_, expected) = model.remove(&id).expect("came out twice or was removed");
                    assert_eq!(deadline, expected);
                }
                // Due once the clock reaches the deadline's tick (1 ms),
                // rounded up.
                let due = |d: Instant| {
                    let tick = (d - start).as_nanos().div_ceil(ms(1).as_nanos());
                    start + ms(1) * u32::try_from(tick).unwrap() <= now
                };
                let kept: Vec<u64> = model
                    .iter()
                    .filter(|(_, &(_, d))| due(d))
                    .map(|(&id, _)| id)
                    .collect();
                assert!(kept.is_empty(), "due but kept: {kept:?}");
                if model.is_empty() {
                    assert!(matches!(queue.poll_expired(&mut cx), Poll::Ready(None)));
                } else {
                    assert!(queue.poll_expired(&mut cx).is_pending());
                }
            }
        }
        assert_eq!(queue.len(), model.len());
    }
    // A queue is one timer to the service, however many items it holds.
    assert!(timers.pending() <= 1);
}

#[test]
fn a_waiting_task_is_woken_by_the_earliest_deadline_even_one_added_later() {
    let timers = manual();
    let mut queue = DelayQueue::with_service(&timers);
    let (count, waker) = counting_waker();
    let mut cx = Context::from_waker(&waker);
    queue.insert(1, ms(100));
    assert!(queue.poll_expired(&mut cx).is_pending());

    // An earlier item, inserted while the task waits for the later one:
    // the task is woken at once, to wait for the new deadline.
    let early = queue.insert(2, ms(10));
    assert_eq!(count.count(), 1);
    assert!(queue.poll_expired(&mut cx).is_pending());
    timers.advance(ms(10)).unwrap();
    assert_eq!(count.count(), 2);
    let Poll::Ready(Some(expired)) = queue.poll_expired(&mut cx) else {
        panic!("the early item did not come out");
    };
    assert_eq!((*expired.get_ref(), expired.key()), (2, early));
    assert!(queue.poll_expired(&mut cx).is_pending());

    // A reset that makes the remaining item due sooner.
    let key = queue.insert(3, ms(500));
    assert!(queue.poll_expired(&mut cx).is_pending());
    queue.reset(&key, ms(5));
    assert_eq!(count.count(), 3);
    assert!(queue.poll_expired(&mut cx).is_pending());
    timers.advance(ms(5)).unwrap();
    assert_eq!(count.count(), 4);
    assert!(matches!(queue.poll_expired(&mut cx), Poll::Ready(Some(e)) if *e.get_ref() == 3));
}

#[test]
fn next_expired_waits_on_the_real_clock_and_never_returns_early() {
    let timers = TimerService::new();
    let mut queue = DelayQueue::with_service(&timers);
    let start = Instant::now();
    for (value, delay) in [(3, 6), (1, 2), (2, 4)] {
        queue.insert(value, ms(delay));
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let drained = async {
        let mut order = Vec::new();
        while let Some(expired) = queue.next_expired().await {
            assert!(Instant::now() >= expired.deadline());
            order.push(expired.into_inner());
        }
        order
    };
    // tokio's own timer keeps the watch, should the queue never wake.
    let order = rt
        .block_on(async { tokio::time::timeout(Duration::from_secs(10), drained).await })
        .expect("the queue stopped waking its task");
    assert_eq!(order, [1, 2, 3]);
    assert!(start.elapsed() >= ms(6));
}

#[test]
fn clear_empties_the_queue_and_stales_every_key() {
    let timers = manual();
    let mut queue = DelayQueue::with_service(&timers);
    let keys: Vec<Key> = (0..100).map(|i| queue.insert(i, ms(i))).collect();
    queue.clear();
    assert!(queue.is_empty());
    assert!(keys.iter().all(|k| queue.try_remove(k).is_none()));
    timers.advance(ms(1000)).unwrap();
    let mut cx = Context::from_waker(Waker::noop());
    assert!(matches!(queue.poll_expired(&mut cx), Poll::Ready(None)));
}

#[test]
fn expired_carries_the_item_its_last_deadline_and_its_key() {
    let timers = manual();
    let mut queue = DelayQueue::with_service(&timers);
    let first = timers.now() + ms(30);
    let moved = queue.insert_at(String::from("moved"), first);
    let stays = queue.insert_at(String::from("stays"), timers.now() + ms(20));
    let later = timers.now() + Duration::from_micros(40_500); // not on a tick
    queue.reset_at(&moved, later);
    timers.advance(ms(41)).unwrap();
    let mut cx = Context::from_waker(Waker::noop());
    let mut out = Vec::new();
    while let Poll::Ready(Some(expired)) = queue.poll_expired(&mut cx) {
        out.push(expired);
    }
    assert_eq!(out.len(), 2);
    let (a, mut b) = (out.remove(0), out.remove(0));
    assert_eq!((a.get_ref().as_str(), a.key()), ("stays", stays));
    assert_eq!((b.get_ref().as_str(), b.key()), ("moved", moved));
    assert_eq!(b.deadline(), later, "the reset deadline, unrounded");
    b.get_mut().push('!');
    assert_eq!(b.clone().into_inner(), "moved!");
    assert!(
        queue.try_remove(&b.key()).is_none(),
        "an expired key names nothing"
    );
}

//! `DelayQueue` against a model, on a manual clock: random inserts,
//! removes, resets and advances; after each advance the items that come out
//! are exactly the model's due ones, never early, and the queue then waits.
//! Then the wake-ups: a task waiting on the queue is woken by the earliest
//! deadline, also when an insert or a reset makes it earlier. And the
//! edges: items already due, keys of items due but not out (and of items
//! out), a queue centuries old.
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

/// tokio-util's `single_immediate_delay`, `multi_immediate_delays`,
/// `insert_in_past_fires_immediately`, `insert_in_past_after_poll_fires_immediately`
/// and `insert_after_ready_poll`: items whose deadline is now or past come
/// out at once, without the clock moving, also while the task waits on a
/// later one (it is woken) and while later items go in between them.
#[test]
fn items_already_due_come_out_at_once_without_the_clock_moving() {
    let timers = manual();
    timers.advance(ms(1000)).unwrap();
    let now = timers.now();
    let mut queue = DelayQueue::with_service(&timers);
    let mut cx = Context::from_waker(Waker::noop());
    for id in 1..=3 {
        queue.insert_at(id, now);
    }
    queue.insert_at(4, now - ms(10));
    let mut out = Vec::new();
    while let Poll::Ready(Some(expired)) = queue.poll_expired(&mut cx) {
        out.push(expired.into_inner());
        // A later item between them holds none of them up.
        queue.insert_at(100, now + ms(500));
        assert!(out.len() <= 4, "{out:?}");
    }
    out.sort_unstable();
    assert_eq!(out, [1, 2, 3, 4]);
    assert!(queue.poll_expired(&mut cx).is_pending());

    let (wakes, waker) = counting_waker();
    assert!(queue
        .poll_expired(&mut Context::from_waker(&waker))
        .is_pending());
    timers.advance(ms(80)).unwrap();
    assert_eq!(wakes.count(), 0);
    queue.insert_at(5, now + ms(40));
    assert_eq!(wakes.count(), 1, "an item inserted already due woke no one");
    let Poll::Ready(Some(expired)) = queue.poll_expired(&mut cx) else {
        panic!("the item inserted already due did not come out");
    };
    assert_eq!(*expired.get_ref(), 5);
    assert_eq!(timers.now(), now + ms(80));
}

/// tokio-util's `multi_delay_at_start`: a task waiting on the queue while
/// the clock moves a millisecond at a time is woken at each deadline, and
/// each item comes out then, not before nor after; the item a wheel level
/// above them comes out exactly at its own. As tokio-util's, the queue may
/// also wake its task where an item on a higher level of its wheel cascades
/// down (`Wheel::next_expiration`), with nothing to hand out: a few times
/// at most.
#[test]
fn a_waiting_task_is_woken_at_each_deadline_and_items_come_out_then() {
    const LONG: u64 = 262_144 + 9 * 4096;
    let timers = manual();
    let mut queue = DelayQueue::with_service(&timers);
    let (wakes, waker) = counting_waker();
    let mut cx = Context::from_waker(&waker);
    let deadlines = [1000, 2, 234, LONG, 60, 10];
    for at in deadlines {
        queue.insert(at, ms(at));
    }
    assert!(queue.poll_expired(&mut cx).is_pending());
    let (mut seen, mut idle) = (0, Vec::new());
    for elapsed in 1..=1200 {
        timers.advance(ms(1)).unwrap();
        let woken = wakes.count() > seen;
        seen = wakes.count();
        if deadlines.contains(&elapsed) {
            assert!(woken, "not woken at {elapsed} ms");
            let Poll::Ready(Some(expired)) = queue.poll_expired(&mut cx) else {
                panic!("nothing came out at {elapsed} ms");
            };
            assert_eq!(*expired.get_ref(), elapsed);
            assert!(queue.poll_expired(&mut cx).is_pending());
        } else if woken {
            assert!(
                queue.poll_expired(&mut cx).is_pending(),
                "early at {elapsed} ms"
            );
            idle.push(elapsed);
        }
    }
    assert!(
        idle.len() < deadlines.len(),
        "woken for nothing at {idle:?} ms"
    );
    let start = timers.now() - ms(1200);
    let long = timers.run_paused(queue.next_expired()).unwrap().unwrap();
    assert_eq!((*long.get_ref(), timers.now()), (LONG, start + ms(LONG)));
    assert!(matches!(queue.poll_expired(&mut cx), Poll::Ready(None)));
}

/// tokio-util's `remove_expired_item`, `remove_at_timer_wheel_threshold`,
/// `reset_inserted_expired` and `repeatedly_reset_entry_inserted_as_expired`:
/// an item whose deadline has come but that has not come out yet is still
/// in the queue, so its key removes it or moves it into the future (where
/// it waits for the new deadline); once it has come out, the key names
/// nothing, and using it panics without touching the queue.
#[test]
fn an_item_due_but_not_yet_out_can_be_removed_or_reset_and_one_out_cannot() {
    let timers = manual();
    timers.advance(ms(1000)).unwrap();
    let now = timers.now();
    let mut queue = DelayQueue::with_service(&timers);
    let mut cx = Context::from_waker(Waker::noop());

    let past = queue.insert_at("past", now - ms(100));
    let removed = queue.remove(&past);
    assert_eq!(
        (removed.deadline(), removed.into_inner()),
        (now - ms(100), "past")
    );
    assert!(matches!(queue.poll_expired(&mut cx), Poll::Ready(None)));

    let foo = queue.insert_at("foo", now + ms(64));
    let bar = queue.insert_at("bar", now + ms(64));
    timers.advance(ms(80)).unwrap();
    let Poll::Ready(Some(first)) = queue.poll_expired(&mut cx) else {
        panic!("neither came out");
    };
    let other = if first.key() == foo { bar } else { foo };
    assert_ne!(queue.remove(&other).into_inner(), *first.get_ref());
    assert!(matches!(queue.poll_expired(&mut cx), Poll::Ready(None)));

    let now = timers.now();
    let (wakes, waker) = counting_waker();
    let again = queue.insert_at("again", now - ms(100));
    queue.reset_at(&again, now + ms(100));
    queue.reset_at(&again, now + ms(50));
    assert_eq!(queue.len(), 1);
    assert!(queue
        .poll_expired(&mut Context::from_waker(&waker))
        .is_pending());
    timers.advance(ms(49)).unwrap();
    assert!(queue
        .poll_expired(&mut Context::from_waker(&waker))
        .is_pending());
    let before = wakes.count();
    timers.advance(ms(1)).unwrap();
    assert!(wakes.count() > before, "not woken at its last deadline");
    let Poll::Ready(Some(out)) = queue.poll_expired(&mut cx) else {
        panic!("not out at its last deadline");
    };
    assert_eq!((out.key(), out.deadline()), (again, now + ms(50)));

    // The key of an item that came out, while another item is queued.
    queue.insert("stays", ms(10));
    let stale = out.key();
    for use_it in [
        (|q, k| q.reset(k, ms(5))) as fn(&mut DelayQueue<&str>, &Key),
        |q, k| q.reset_at(k, Instant::now()),
        |q, k| {
            let _ = q.remove(k);
        },
        |q, k| {
            let _ = q.deadline(k);
        },
    ] {
        let used =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| use_it(&mut queue, &stale)));
        assert!(used.is_err(), "a key that came out named something");
    }
    assert!(queue.try_remove(&stale).is_none());
    assert_eq!(queue.len(), 1);
    timers.advance(ms(10)).unwrap();
    assert!(matches!(queue.poll_expired(&mut cx), Poll::Ready(Some(e)) if *e.get_ref() == "stays"));
}

/// tokio-util's `item_expiry_greater_than_wheel`, and further: a queue
/// that has lived for two years (past 2^36 ms), then two centuries, on a
/// manual clock still takes items and hands each out exactly when due.
#[test]
fn a_queue_that_has_lived_for_centuries_still_hands_out_items_on_time() {
    const YEAR: Duration = Duration::from_secs(365 * 24 * 3600);
    let timers = manual();
    let mut queue = DelayQueue::with_service(&timers);
    let mut cx = Context::from_waker(Waker::noop());
    for lived in [ms(1 << 35), ms(1 << 35), 200 * YEAR] {
        timers.advance(lived).unwrap();
        queue.insert(0, Duration::ZERO);
        assert!(matches!(queue.poll_expired(&mut cx), Poll::Ready(Some(_))));
        queue.insert(1, ms(1));
        assert!(queue.poll_expired(&mut cx).is_pending());
        timers.advance(ms(1)).unwrap();
        assert!(matches!(queue.poll_expired(&mut cx), Poll::Ready(Some(e)) if *e.get_ref() == 1));
    }
    let century = queue.insert(2, 100 * YEAR);
    let deadline = queue.deadline(&century);
    let out = timers.run_paused(queue.next_expired()).unwrap().unwrap();
    assert_eq!((out.deadline(), timers.now()), (deadline, deadline));
}

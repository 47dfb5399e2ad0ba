//! tokio-util's own `DelayQueue` tests of `compact`, `peek` and the wakes
//! (`tokio-util/tests/time_delay_queue.rs`), told again on a manual clock
//! with a counting waker, and the queue's end after its service shuts down.
//! Each wake test fails if the queue leaves its waiting task asleep.
#![cfg(not(loom))]

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::task::{Context, Poll, Waker};

use wheel_sync::delay_queue::{Expired, Key};
use wheel_sync::{DelayQueue, TimerService};

mod common;
use common::{counting_waker, manual, ms};

fn poll<T>(queue: &mut DelayQueue<T>, waker: &Waker) -> Poll<Option<Expired<T>>> {
    queue.poll_expired(&mut Context::from_waker(waker))
}

/// The next item, which must be ready.
fn ready<T>(queue: &mut DelayQueue<T>) -> T {
    match poll(queue, Waker::noop()) {
        Poll::Ready(Some(expired)) => expired.into_inner(),
        Poll::Ready(None) => panic!("the queue is empty"),
        Poll::Pending => panic!("nothing is due"),
    }
}

fn ready_none<T>(queue: &mut DelayQueue<T>) -> bool {
    matches!(poll(queue, Waker::noop()), Poll::Ready(None))
}

#[test]
fn compact_after_everything_expired_gives_back_all_memory() {
    let timers = manual();
    let mut queue = DelayQueue::with_service(&timers);
    let now = timers.now();
    queue.insert_at("foo1", now + ms(10));
    queue.insert_at("foo2", now + ms(10));
    timers.advance(ms(10)).unwrap();
    let mut out = vec![ready(&mut queue), ready(&mut queue)];
    out.sort();
    assert_eq!(out, ["foo1", "foo2"]);
    queue.compact();
    assert_eq!((queue.len(), queue.capacity()), (0, 0));
}

#[test]
fn compact_after_removing_everything_gives_back_all_memory() {
    let timers = manual();
    let mut queue = DelayQueue::with_service(&timers);
    let now = timers.now();
    let key1 = queue.insert_at("foo1", now + ms(10));
    let key2 = queue.insert_at("foo2", now + ms(10));
    queue.remove(&key1);
    queue.remove(&key2);
    queue.compact();
    assert_eq!((queue.len(), queue.capacity()), (0, 0));
}

#[test]
fn keys_of_items_moved_by_compact_still_name_them() {
    let timers = manual();
    let mut queue = DelayQueue::with_service(&timers);
    let now = timers.now();
    queue.insert_at("foo1", now + ms(10));
    queue.insert_at("foo2", now + ms(10));
    let key3 = queue.insert_at("foo3", now + ms(20));
    let key4 = queue.insert_at("foo4", now + ms(20));
    timers.advance(ms(10)).unwrap();
    ready(&mut queue);
    ready(&mut queue);

    // foo3 and foo4 move down into the freed places; a new item takes one
    // of the places their keys used to name.
    queue.compact();
    let key5 = queue.insert_at("foo5", now + ms(10));
    assert_eq!(queue.remove(&key3).into_inner(), "foo3");
    assert_eq!(queue.remove(&key4).into_inner(), "foo4");
    assert_eq!(queue.deadline(&key5), now + ms(10));

    queue.compact();
    assert_eq!((queue.len(), queue.capacity()), (1, 1));
    assert_eq!(queue.remove(&key5).into_inner(), "foo5");
}

#[test]
fn deadlines_of_items_moved_by_compact_can_be_changed() {
    let timers = manual();
    let mut queue = DelayQueue::with_service(&timers);
    let now = timers.now();
    queue.insert_at("foo1", now + ms(10));
    queue.insert_at("foo2", now + ms(10));
    queue.insert_at("foo3", now + ms(20));
    let key4 = queue.insert_at("foo4", now + ms(20));
    timers.advance(ms(10)).unwrap();
    ready(&mut queue);
    ready(&mut queue);
    queue.compact();

    let now = timers.now();
    queue.insert_at("foo5", now + ms(10));
    let key6 = queue.insert_at("foo6", now + ms(10));
    queue.reset_at(&key4, now + ms(20));
    queue.reset_at(&key6, now + ms(20));

    timers.advance(ms(10)).unwrap();
    let mut first = vec![ready(&mut queue), ready(&mut queue)];
    first.sort();
    assert_eq!(first, ["foo3", "foo5"]);
    assert!(poll(&mut queue, Waker::noop()).is_pending());
    timers.advance(ms(10)).unwrap();
    let mut second = vec![ready(&mut queue), ready(&mut queue)];
    second.sort();
    assert_eq!(second, ["foo4", "foo6"]);
    assert!(ready_none(&mut queue));
}

#[test]
fn a_key_removed_before_compact_stays_stale_after_it() {
    let timers = manual();
    let mut queue = DelayQueue::with_service(&timers);
    let now = timers.now();
    let foo = queue.insert_at("foo", now + ms(10));
    let bar = queue.insert_at("bar", now + ms(20));
    queue.remove(&foo);
    queue.compact(); // bar moves into foo's old place
    assert!(queue.try_remove(&foo).is_none());
    let panic = catch_unwind(AssertUnwindSafe(|| queue.remove(&foo)));
    assert!(panic.is_err(), "a stale key must panic, not take bar");
    assert_eq!(queue.remove(&bar).into_inner(), "bar");
}

#[test]
fn a_key_that_came_out_before_compact_stays_stale_after_it() {
    let timers = manual();
    let mut queue = DelayQueue::with_service(&timers);
    let now = timers.now();
    let foo = queue.insert_at("foo", now + ms(10));
    queue.insert_at("bar", now + ms(20));
    timers.advance(ms(10)).unwrap();
    let Poll::Ready(Some(expired)) = poll(&mut queue, Waker::noop()) else {
        panic!("foo did not come out");
    };
    assert_eq!(expired.key(), foo);
    queue.compact();
    let panic = catch_unwind(AssertUnwindSafe(|| queue.remove(&foo)));
    assert!(panic.is_err());
    assert_eq!(queue.len(), 1);
}

#[test]
fn peek_names_the_item_that_comes_out_next() {
    let timers = manual();
    let mut queue = DelayQueue::with_service(&timers);
    let now = timers.now();
    let foo = queue.insert_at("foo", now + ms(5));
    let bar = queue.insert_at("bar", now);
    let baz = queue.insert_at("baz", now + ms(10));
    assert_eq!(queue.peek(), Some(bar));
    timers.advance(ms(6)).unwrap();
    assert_eq!(queue.peek(), Some(bar));
    assert_eq!(ready(&mut queue), "bar");
    assert_eq!(queue.peek(), Some(foo));
    assert_eq!(ready(&mut queue), "foo");
    assert_eq!(queue.peek(), Some(baz));
    assert!(poll(&mut queue, Waker::noop()).is_pending());
    timers.advance(ms(5)).unwrap();
    assert_eq!(queue.peek(), Some(baz));
    assert_eq!(ready(&mut queue), "baz");
    assert_eq!(queue.peek(), None);
}

#[test]
fn removing_the_last_item_wakes_the_waiting_task() {
    let timers = manual();
    let mut queue = DelayQueue::with_service(&timers);
    let (wakes, waker) = counting_waker();
    let key = queue.insert("foo", ms(1000));
    assert!(poll(&mut queue, &waker).is_pending());
    assert_eq!(wakes.count(), 0);
    queue.remove(&key);
    assert_eq!(wakes.count(), 1);
    assert!(ready_none(&mut queue));
}

#[test]
fn try_removing_the_last_item_wakes_the_waiting_task() {
    let timers = manual();
    let mut queue = DelayQueue::with_service(&timers);
    let (wakes, waker) = counting_waker();
    let key = queue.insert("foo", ms(1000));
    assert!(poll(&mut queue, &waker).is_pending());
    assert!(queue.try_remove(&key).is_some());
    assert_eq!(wakes.count(), 1);
    assert!(ready_none(&mut queue));
}

#[test]
fn clear_wakes_the_waiting_task() {
    let timers = manual();
    let mut queue = DelayQueue::with_service(&timers);
    let (wakes, waker) = counting_waker();
    queue.insert("foo", ms(1000));
    assert!(poll(&mut queue, &waker).is_pending());
    assert_eq!(wakes.count(), 0);
    queue.clear();
    assert_eq!(wakes.count(), 1);
    assert!(ready_none(&mut queue));
}

#[test]
fn removing_the_earliest_item_wakes_the_task_to_wait_for_the_next() {
    earliest_taken_out_wakes_the_task(|queue, key| queue.remove(key).into_inner());
}

#[test]
fn try_removing_the_earliest_item_wakes_the_task_to_wait_for_the_next() {
    earliest_taken_out_wakes_the_task(|queue, key| {
        queue.try_remove(key).map(Expired::into_inner).unwrap()
    });
}

/// `take` takes the waiting queue's earliest item out before its deadline.
fn earliest_taken_out_wakes_the_task(
    take: fn(&mut DelayQueue<&'static str>, &Key) -> &'static str,
) {
    let timers = manual();
    let mut queue = DelayQueue::with_service(&timers);
    let (wakes, waker) = counting_waker();
    let early = queue.insert("early", ms(10));
    let late = queue.insert("late", ms(100));
    assert!(poll(&mut queue, &waker).is_pending());

    // A later item going changes nothing the task waits for.
    let later = queue.insert("later", ms(200));
    assert_eq!(take(&mut queue, &later), "later");
    assert_eq!(wakes.count(), 0);

    assert_eq!(take(&mut queue, &early), "early");
    assert_eq!(wakes.count(), 1);
    assert!(poll(&mut queue, &waker).is_pending());
    // The wait is now for `late` alone: the old deadline fires nothing.
    timers.advance(ms(10)).unwrap();
    assert_eq!(wakes.count(), 1);
    timers.advance(ms(90)).unwrap();
    assert_eq!(wakes.count(), 2);
    assert_eq!(ready(&mut queue), "late");
    assert!(queue.try_remove(&late).is_none());
}

#[test]
fn resetting_the_earliest_item_later_wakes_the_task() {
    let timers = manual();
    let mut queue = DelayQueue::with_service(&timers);
    let (wakes, waker) = counting_waker();
    let first = queue.insert("first", ms(10));
    queue.insert("second", ms(50));
    assert!(poll(&mut queue, &waker).is_pending());
    queue.reset(&first, ms(100));
    assert_eq!(wakes.count(), 1);
    assert!(poll(&mut queue, &waker).is_pending());
    timers.advance(ms(50)).unwrap();
    assert_eq!(ready(&mut queue), "second");
    timers.advance(ms(50)).unwrap();
    assert_eq!(ready(&mut queue), "first");
}

/// `reset_later_after_slot_starts` and `reset_earlier_after_slot_starts`:
/// the clock moves with no poll between, then the only item is moved,
/// later or earlier but still ahead; the task is woken by its new deadline
/// and the item comes out then, not before.
#[test]
fn an_item_reset_after_the_clock_moved_unpolled_comes_out_at_its_new_deadline() {
    for first in [100, 200] {
        let timers = manual();
        let start = timers.now();
        let mut queue = DelayQueue::with_service(&timers);
        let (wakes, waker) = counting_waker();
        let key = queue.insert_at("foo", start + ms(first));
        assert!(poll(&mut queue, &waker).is_pending());
        // (A wake by now is allowed: the queue's wheel may ask to be polled
        // at the start of the item's slot, to cascade it.)
        timers.advance(ms(80)).unwrap();
        queue.reset_at(&key, start + ms(120));
        assert!(poll(&mut queue, &waker).is_pending());
        timers.advance(ms(39)).unwrap();
        assert!(poll(&mut queue, &waker).is_pending(), "out at 119 ms");
        let woken = wakes.count();
        timers.advance(ms(1)).unwrap();
        assert!(wakes.count() > woken, "not woken at 120 ms");
        assert_eq!(ready(&mut queue), "foo");
    }
}

#[test]
fn resetting_to_a_past_deadline_wakes_the_task_and_the_item_is_ready() {
    let timers = manual();
    timers.advance(ms(1000)).unwrap();
    let mut queue = DelayQueue::with_service(&timers);
    let (wakes, waker) = counting_waker();
    let key = queue.insert("foo", ms(10_000));
    assert!(poll(&mut queue, &waker).is_pending());
    assert_eq!(wakes.count(), 0);
    queue.reset_at(&key, timers.now() - ms(100));
    assert_eq!(wakes.count(), 1);
    assert_eq!(ready(&mut queue), "foo");
    assert!(ready_none(&mut queue));
}

#[test]
fn after_shutdown_the_due_items_come_out_then_the_queue_panics() {
    let timers = manual();
    let mut queue = DelayQueue::with_service(&timers);
    queue.insert("due", ms(10));
    queue.insert("also due", ms(10));
    queue.insert("never", ms(1000));
    timers.advance(ms(10)).unwrap();
    timers.shutdown().unwrap();
    let mut due = vec![ready(&mut queue), ready(&mut queue)];
    due.sort();
    assert_eq!(due, ["also due", "due"]);
    // The last would need a timer the service can no longer fire.
    let panic = catch_unwind(AssertUnwindSafe(|| poll(&mut queue, Waker::noop())));
    assert!(panic.is_err());
}

#[test]
fn after_shutdown_a_queue_drained_of_due_items_ends() {
    let timers = manual();
    let mut queue = DelayQueue::with_service(&timers);
    let (wakes, waker) = counting_waker();
    queue.insert("due", ms(10));
    assert!(poll(&mut queue, &waker).is_pending());
    timers.advance(ms(10)).unwrap();
    assert_eq!(wakes.count(), 1);
    timers.shutdown().unwrap();
    assert_eq!(ready(&mut queue), "due");
    assert!(ready_none(&mut queue));
}

#[test]
fn a_queue_made_after_shutdown_hands_out_what_is_due_at_once() {
    let timers = TimerService::builder().manual_clock().build().unwrap();
    timers.shutdown().unwrap();
    let mut queue = DelayQueue::with_service(&timers);
    queue.insert("now", ms(0));
    assert_eq!(ready(&mut queue), "now");
    assert!(ready_none(&mut queue));
}

#[test]
fn an_item_that_fell_due_after_shutdown_still_comes_out() {
    // The queue waits on its service's timer for the item; the service
    // shuts down before it fires, and the item's deadline then passes.
    let timers = TimerService::new();
    let mut queue = DelayQueue::with_service(&timers);
    queue.insert("due after shutdown", ms(20));
    queue.insert("never", ms(60_000));
    assert!(poll(&mut queue, Waker::noop()).is_pending());
    timers.shutdown().unwrap();
    std::thread::sleep(ms(30));
    assert_eq!(ready(&mut queue), "due after shutdown");
    let panic = catch_unwind(AssertUnwindSafe(|| poll(&mut queue, Waker::noop())));
    assert!(panic.is_err());
}

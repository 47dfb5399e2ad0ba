//! The nastiest cases of tokio-util's `tests/time_delay_queue.rs`, ported
//! to wheel-sync's `DelayQueue`, mostly on a manual clock. Where its
//! promise differs from tokio-util's (it may wake its task at a wheel
//! slot's start), the test checks wheel-sync's.
#![cfg(not(loom))]

use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::task::{Poll, Wake, Waker};
use std::time::{Duration, Instant};

use wheel_sync::delay_queue::Expired;
use wheel_sync::{DelayQueue, TimerService};

mod common;
use common::tokio_cases::*;

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

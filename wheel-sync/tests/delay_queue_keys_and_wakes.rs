//! `DelayQueue` keys and wakes at their edges: a key that came out, was
//! removed or cleared never names a newer item, across `compact`,
//! `shrink_to_fit` and `clear` (against a model); `len`, `is_empty`,
//! `capacity` and `peek` agree with it after every operation; the task that
//! polled last is the one woken, from whichever thread; `clear` then
//! `insert` comes out at the new deadline.
#![cfg(not(loom))]

use std::collections::HashSet;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::task::{Context, Poll, Waker};
use std::thread;
use std::time::Instant;

use wheel_sync::delay_queue::{Expired, Key};
use wheel_sync::DelayQueue;

mod common;
use common::{counting_waker, manual, ms, XorShift};

fn poll<T>(queue: &mut DelayQueue<T>, waker: &Waker) -> Poll<Option<Expired<T>>> {
    queue.poll_expired(&mut Context::from_waker(waker))
}

/// Whether `f` panics.
fn panics(f: impl FnOnce()) -> bool {
    catch_unwind(AssertUnwindSafe(f)).is_err()
}

/// An item the model holds: its id (the value), key and deadline.
#[derive(Clone, Copy, Debug)]
struct Live {
    id: u64,
    key: Key,
    deadline: Instant,
}

/// Random inserts, removes, resets, advances, `compact`, `shrink_to_fit`
/// and `clear` against a model. After every step: `len`, `is_empty` and
/// `capacity` agree with it; `peek` names an item due already or one with
/// the earliest deadline; no key handed out by an insert equals a key that
/// came out or was removed before (it would name the new item); a stale
/// key removes nothing; every live key still finds its item and deadline.
/// Deadlines are whole milliseconds past the manual clock's start, so each
/// is exactly its tick.
#[test]
fn stale_keys_never_touch_newer_items_across_compact_shrink_and_clear() {
    for seed in 1..=4 {
        stale_keys_against_a_model(seed);
    }
}

/// One run of the model test above, from `seed`.
fn stale_keys_against_a_model(seed: u64) {
    let timers = manual();
    let start = timers.now();
    let mut queue = DelayQueue::with_service(&timers);
    let mut rng = XorShift::new(seed);
    // Mostly within the wheel's first levels, some minutes out.
    let delay = |rng: &mut XorShift| match rng.below(8) {
        0 => rng.below(200_000),
        _ => rng.below(300),
    };
    let mut live: Vec<Live> = Vec::new();
    let mut retired: HashSet<Key> = HashSet::new();
    let mut stale: Vec<Key> = Vec::new();
    let mut next_id = 0u64;
    let mut elapsed_ms = 0u64;

    for step in 0..6_000u32 {
        let now = timers.now();
        assert_eq!(now, start + ms(elapsed_ms));
        let what = rng.below(100);
        match what {
            0..=39 => {
                let delay = delay(&mut rng);
                let id = next_id;
                next_id += 1;
                let key = if id % 2 == 0 {
                    queue.insert(id, ms(delay))
                } else {
                    queue.insert_at(id, now + ms(delay))
                };
                assert!(
                    !retired.contains(&key),
                    "seed {seed} step {step}: insert handed out {key:?}, a key that already named an item \
                     now gone: the old key names the new item"
                );
                assert!(
                    live.iter().all(|l| l.key != key),
                    "seed {seed} step {step}: {key:?} names two live items"
                );
                live.push(Live {
                    id,
                    key,
                    deadline: now + ms(delay),
                });
            }
            40..=54 if !live.is_empty() => {
                let gone = live.swap_remove(rng.below(live.len() as u64) as usize);
                let expired = if rng.below(2) == 0 {
                    queue.remove(&gone.key)
                } else {
                    queue.try_remove(&gone.key).expect("a live key")
                };
                assert_eq!(
                    (expired.key(), expired.deadline(), *expired.get_ref()),
                    (gone.key, gone.deadline, gone.id),
                    "seed {seed} step {step}"
                );
                retired.insert(gone.key);
                stale.push(gone.key);
            }
            55..=69 if !live.is_empty() => {
                let i = rng.below(live.len() as u64) as usize;
                let delay = delay(&mut rng);
                if rng.below(2) == 0 {
                    queue.reset(&live[i].key, ms(delay));
                } else {
                    queue.reset_at(&live[i].key, now + ms(delay));
                }
                live[i].deadline = now + ms(delay);
            }
            70..=77 if !stale.is_empty() => {
                let key = stale[rng.below(stale.len() as u64) as usize];
                assert!(
                    queue.try_remove(&key).is_none(),
                    "seed {seed} step {step}: the stale key {key:?} removed an item"
                );
                if rng.below(20) == 0 {
                    let later = now + ms(1);
                    assert!(
                        panics(|| queue.reset_at(&key, later)),
                        "seed {seed} step {step}"
                    );
                    assert!(
                        panics(|| {
                            let _ = queue.deadline(&key);
                        }),
                        "seed {seed} step {step}"
                    );
                }
            }
            78..=80 => queue.compact(),
            81..=83 => queue.shrink_to_fit(),
            84 if rng.below(4) == 0 => {
                queue.clear();
                for gone in live.drain(..) {
                    retired.insert(gone.key);
                    stale.push(gone.key);
                }
            }
            _ => {
                let by = match rng.below(30) {
                    0 => rng.below(100_000),
                    _ => rng.below(40),
                };
                timers.advance(ms(by)).unwrap();
                elapsed_ms += by;
                let now = timers.now();
                loop {
                    match poll(&mut queue, Waker::noop()) {
                        Poll::Ready(Some(expired)) => {
                            let at = live
                                .iter()
                                .position(|l| l.key == expired.key())
                                .unwrap_or_else(|| {
                                    panic!("seed {seed} step {step}: {expired:?} came out, not a live item")
                                });
                            let out = live.swap_remove(at);
                            assert_eq!(
                                (expired.deadline(), *expired.get_ref()),
                                (out.deadline, out.id),
                                "seed {seed} step {step}"
                            );
                            assert!(
                                out.deadline <= now,
                                "seed {seed} step {step}: came out early"
                            );
                            retired.insert(out.key);
                            stale.push(out.key);
                        }
                        Poll::Ready(None) => {
                            assert!(
                                live.is_empty(),
                                "seed {seed} step {step}: ended with items left"
                            );
                            break;
                        }
                        Poll::Pending => {
                            assert!(
                                !live.is_empty(),
                                "seed {seed} step {step}: waits though empty"
                            );
                            break;
                        }
                    }
                }
                if let Some(due) = live.iter().find(|l| l.deadline <= now) {
                    panic!(
                        "seed {seed} step {step}: {due:?} is due at {now:?} but did not come out"
                    );
                }
            }
        }
        if stale.len() > 512 {
            stale.drain(..256);
        }

        assert_eq!(queue.len(), live.len(), "seed {seed} step {step}");
        assert_eq!(queue.is_empty(), live.is_empty(), "seed {seed} step {step}");
        assert!(queue.capacity() >= queue.len(), "seed {seed} step {step}");
        let now = timers.now();
        match queue.peek() {
            None => assert!(live.is_empty(), "seed {seed} step {step}: peek saw nothing"),
            Some(key) => {
                let item = live.iter().find(|l| l.key == key).unwrap_or_else(|| {
                    panic!("seed {seed} step {step}: peek named {key:?}, no live item")
                });
                let earliest = live.iter().map(|l| l.deadline).min().unwrap();
                assert!(
                    item.deadline <= now || item.deadline == earliest,
                    "seed {seed} step {step}: peek named {item:?}, not due, and {earliest:?} is earlier"
                );
            }
        }
        if step % 64 == 0 || (78..=84).contains(&what) {
            for l in &live {
                assert_eq!(
                    queue.deadline(&l.key),
                    l.deadline,
                    "seed {seed} step {step}: {l:?}"
                );
            }
        }
    }
}

/// The item a stale key once named has gone, and a new item took its place
/// in the queue's storage: the stale key neither removes, resets nor reads
/// the new item.
#[test]
fn a_stale_key_whose_place_holds_a_new_item_touches_nothing() {
    let timers = manual();
    let mut queue = DelayQueue::with_service(&timers);
    let now = timers.now();

    // Removed.
    let old = queue.insert("old", ms(10));
    queue.remove(&old);
    let new = queue.insert("new", ms(20));
    assert_ne!(old, new);
    assert!(panics(|| queue.reset_at(&old, now + ms(5))));
    assert!(panics(|| {
        let _ = queue.deadline(&old);
    }));
    assert!(queue.try_remove(&old).is_none());
    assert_eq!(queue.deadline(&new), now + ms(20));

    // Came out.
    let due = queue.insert("due", ms(0));
    let Poll::Ready(Some(out)) = poll(&mut queue, Waker::noop()) else {
        panic!("an item due at once did not come out");
    };
    assert_eq!((out.key(), out.into_inner()), (due, "due"));
    let newer = queue.insert("newer", ms(30));
    assert!(queue.try_remove(&due).is_none());
    assert_eq!(queue.deadline(&newer), now + ms(30));

    // Cleared, then the places are filled again.
    let before: Vec<Key> = (0..8).map(|i| queue.insert("x", ms(i + 1))).collect();
    queue.clear();
    let after: Vec<Key> = (0..20).map(|i| queue.insert("y", ms(i + 40))).collect();
    for key in before.iter().chain([&old, &due, &new, &newer]) {
        assert!(
            !after.contains(key),
            "{key:?} names an item inserted after clear"
        );
        assert!(queue.try_remove(key).is_none());
    }
    assert_eq!(queue.len(), 20);

    // Compacted, then the freed places are filled again.
    for key in &after[..15] {
        queue.remove(key);
    }
    queue.compact();
    assert_eq!(queue.capacity(), 5);
    let refill: Vec<Key> = (0..20).map(|i| queue.insert("z", ms(i + 100))).collect();
    for key in &after[..15] {
        assert!(
            !refill.contains(key),
            "{key:?} names an item inserted after compact"
        );
        assert!(queue.try_remove(key).is_none());
    }
    for (i, key) in after[15..].iter().enumerate() {
        assert_eq!(queue.deadline(key), now + ms(55 + i as u64));
    }
    assert_eq!(queue.len(), 25);
}

/// `peek` after `compact` names the earliest item by the key its owner
/// holds, and that key is the one the item comes out with.
#[test]
fn peek_and_expired_after_compact_give_the_key_the_owner_holds() {
    let timers = manual();
    let mut queue = DelayQueue::with_service(&timers);
    let keys: Vec<Key> = (0..10u64).map(|i| queue.insert(i, ms(100 - i))).collect();
    for key in &keys[..9] {
        queue.remove(key);
    }
    queue.compact(); // the last item moves into the first place
    assert_eq!(queue.capacity(), 1);
    assert_eq!(queue.peek(), Some(keys[9]));
    let late = queue.insert(99, ms(500));
    queue.compact();
    assert_eq!(queue.peek(), Some(keys[9]));
    timers.advance(ms(91)).unwrap();
    let Poll::Ready(Some(out)) = poll(&mut queue, Waker::noop()) else {
        panic!("due at 91 ms");
    };
    assert_eq!((out.key(), out.into_inner()), (keys[9], 9));
    assert_eq!(queue.peek(), Some(late));
    assert!(queue.try_remove(&keys[9]).is_none());
}

/// The Wakes section: the task that last polled is woken, not one that
/// polled before it, even when the queue moved to another thread and was
/// polled there; both for the earliest deadline coming and for an insert
/// that makes it earlier.
#[test]
fn the_task_that_polled_last_is_woken_from_whichever_thread() {
    for round in 0..20 {
        let timers = manual();
        let mut queue = DelayQueue::with_service(&timers);
        queue.insert("a", ms(10));
        let (first, first_waker) = counting_waker();
        let (second, second_waker) = counting_waker();
        assert!(poll(&mut queue, &first_waker).is_pending());
        // Moved to another thread and polled there by another task.
        let mut queue = thread::spawn(move || {
            assert!(poll(&mut queue, &second_waker).is_pending());
            queue
        })
        .join()
        .unwrap();
        timers.advance(ms(10)).unwrap();
        assert_eq!(
            (first.count(), second.count()),
            (0, 1),
            "round {round}: the deadline woke the wrong task"
        );

        // An insert that makes the earliest deadline earlier.
        let (third, third_waker) = counting_waker();
        let (fourth, fourth_waker) = counting_waker();
        assert!(matches!(
            poll(&mut queue, &third_waker),
            Poll::Ready(Some(_))
        ));
        queue.insert("b", ms(50));
        assert!(poll(&mut queue, &third_waker).is_pending());
        // (Inserted into an empty queue, "b" woke the task that polled last.)
        let third_before = third.count();
        let mut queue = thread::spawn(move || {
            assert!(poll(&mut queue, &fourth_waker).is_pending());
            queue
        })
        .join()
        .unwrap();
        queue.insert("c", ms(5));
        assert_eq!(
            (third.count() - third_before, fourth.count()),
            (0, 1),
            "round {round}: the earlier insert woke the wrong task"
        );
        timers.advance(ms(5)).unwrap();
        assert!(
            matches!(poll(&mut queue, Waker::noop()), Poll::Ready(Some(e)) if *e.get_ref() == "c")
        );
    }
}

/// `clear` wakes the waiting task and its next poll ends; an insert after
/// it, earlier or later than the deadline the queue was waiting for, wakes
/// the task and comes out exactly at its own deadline, never at the old one.
#[test]
fn clear_then_insert_comes_out_at_the_new_deadline_only() {
    for new_delay in [5, 10, 20] {
        let timers = manual();
        let start = timers.now();
        let mut queue = DelayQueue::with_service(&timers);
        queue.insert("old", ms(10));
        let (woken, waker) = counting_waker();
        assert!(poll(&mut queue, &waker).is_pending());
        queue.clear();
        assert_eq!(woken.count(), 1, "clear must wake the waiting task");
        assert!(matches!(poll(&mut queue, &waker), Poll::Ready(None)));
        assert_eq!(queue.len(), 0);

        let key = queue.insert("new", ms(new_delay));
        assert_eq!(woken.count(), 2, "an insert into an empty queue must wake");
        for at in 1..new_delay {
            timers.advance(ms(1)).unwrap();
            assert!(
                poll(&mut queue, &waker).is_pending(),
                "new item ({new_delay} ms) came out at {at} ms"
            );
        }
        timers.advance(ms(1)).unwrap();
        match poll(&mut queue, &waker) {
            Poll::Ready(Some(out)) => {
                assert_eq!(out.key(), key);
                assert_eq!(out.deadline(), start + ms(new_delay));
            }
            other => panic!("{new_delay} ms: not out at its deadline: {other:?}"),
        }
        assert!(matches!(poll(&mut queue, &waker), Poll::Ready(None)));
    }
}

/// A queue that waits, then is cleared (or not) and refilled, round after
/// round on a running manual clock: whatever changed, the task that last
/// polled and was told to wait is woken by the time an item is due, and
/// the item comes out then, never early.
#[test]
fn a_queue_cleared_and_refilled_never_leaves_its_task_asleep() {
    let timers = manual();
    let mut queue = DelayQueue::with_service(&timers);
    let mut rng = XorShift::new(7);
    for round in 0..300u32 {
        let (woken, waker) = counting_waker();
        for _ in 0..rng.below(4) {
            queue.insert(round, ms(1 + rng.below(20)));
        }
        // The task polls until told to wait (or that the queue is empty).
        while let Poll::Ready(Some(_)) = poll(&mut queue, &waker) {}
        let told_to_wait = woken.count();
        if rng.below(3) == 0 {
            queue.clear();
        }
        let deadline = timers.now() + ms(1 + rng.below(20));
        let key = queue.insert_at(round, deadline);
        while timers.now() < deadline {
            timers.advance(ms(1)).unwrap();
        }
        assert!(
            woken.count() > told_to_wait,
            "round {round}: an item is due and the task was never woken"
        );
        let mut out = false;
        while let Poll::Ready(Some(e)) = poll(&mut queue, &waker) {
            assert!(e.deadline() <= timers.now(), "round {round}: early");
            out |= e.key() == key;
        }
        assert!(out, "round {round}: the item due now did not come out");
        queue.clear();
    }
}

/// A key is `Copy` and `Hash`: keys of items inserted at the same deadline
/// are all different, and each removes exactly its own item.
#[test]
fn keys_of_items_due_together_are_distinct_and_each_removes_its_own() {
    let timers = manual();
    let mut queue = DelayQueue::with_service(&timers);
    let keys: Vec<Key> = (0..1000u32).map(|i| queue.insert(i, ms(7))).collect();
    let distinct: HashSet<Key> = keys.iter().copied().collect();
    assert_eq!(distinct.len(), keys.len());
    for (i, key) in keys.iter().enumerate().rev().step_by(3) {
        assert_eq!(queue.remove(key).into_inner(), i as u32);
    }
    queue.compact();
    timers.advance(ms(7)).unwrap();
    let mut out = HashSet::new();
    while let Poll::Ready(Some(e)) = poll(&mut queue, Waker::noop()) {
        assert_eq!(keys[*e.get_ref() as usize], e.key());
        assert!(out.insert(e.into_inner()));
    }
    assert_eq!(out.len(), 1000 - 334);
    assert!(queue.is_empty());
}

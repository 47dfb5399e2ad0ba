//! `WakerQueue` at its edges: one task asking twice, wakers that
//! `will_wake` each other, deadlines already passed, at 0 and at
//! `u64::MAX`, a clock that jumps centuries or reads earlier than before,
//! and tasks enough to spill past the near cells into the wheel.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::task::Waker;

use wheel_core::WakerQueue;

/// Two hundred years of milliseconds.
const CENTURIES: u64 = 200 * 365 * 24 * 3_600 * 1_000;

mod common;
use common::tasks::{tasks, woken, Task};

#[test]
fn one_waker_asking_twice_for_the_same_tick_is_one_entry_woken_once() {
    // 1 and 17 tasks: the second puts the asking task in the wheel.
    for others in [0, 16] {
        let (tasks, wakers) = tasks(others + 1);
        let mut queue: WakerQueue<32> = WakerQueue::new();
        for (k, waker) in wakers.iter().enumerate().skip(1) {
            queue.schedule_wake(10 + k as u64, waker);
        }
        let first = queue.schedule_wake(500, &wakers[0]);
        assert_eq!(first, others == 0, "the alarm moves only if it was unset");
        assert!(
            !queue.schedule_wake(500, &wakers[0]),
            "same tick: nothing moves"
        );
        assert_eq!(queue.len(), others + 1);
        queue.validate();
        assert_eq!(queue.next_expiration(499), 500);
        assert_eq!(queue.next_expiration(500), u64::MAX);
        assert_eq!(woken(&tasks), vec![1; others + 1]);
    }
}

#[test]
fn wakers_that_will_wake_each_other_hold_one_entry() {
    let task = Arc::new(Task::default());
    let a = Waker::from(task.clone());
    let b = Waker::from(task.clone());
    let c = a.clone();
    assert!(a.will_wake(&b) && b.will_wake(&c));
    let (others, other_wakers) = tasks(20);
    let mut queue: WakerQueue<24> = WakerQueue::new();
    // Enough others that the task may sit in the near cells or the wheel.
    for (k, waker) in other_wakers.iter().enumerate() {
        queue.schedule_wake(1_000 + k as u64, waker);
    }
    queue.schedule_wake(5_000, &a);
    assert!(
        !queue.schedule_wake(6_000, &b),
        "b is a's task: keeps 5_000"
    );
    assert!(queue.schedule_wake(40, &c), "earlier than every entry");
    assert_eq!(queue.len(), 21);
    queue.validate();
    assert_eq!(queue.next_expiration(40), 1_000);
    assert_eq!(task.woken.load(Ordering::Relaxed), 1);
    assert_eq!(queue.next_expiration(u64::MAX), u64::MAX);
    assert_eq!(task.woken.load(Ordering::Relaxed), 1, "woken once, at 40");
    assert_eq!(woken(&others), vec![1; 20]);
}

#[test]
fn a_deadline_already_passed_in_the_wheel_is_woken_by_the_next_call() {
    let (tasks, wakers) = tasks(30);
    let mut queue: WakerQueue<32> = WakerQueue::new();
    for (k, waker) in wakers.iter().enumerate().take(20) {
        queue.schedule_wake(100_000 + k as u64, waker);
    }
    assert_eq!(queue.next_expiration(50_000), 100_000);
    // Behind the clock, at 0 and at the clock itself: due now.
    let calls = [
        (20, 49_999, true),
        (21, 0, true),
        (22, 50_000, false),
        (23, 1, false),
    ];
    for (k, at, earlier) in calls {
        assert_eq!(
            queue.schedule_wake(at, &wakers[k]),
            earlier,
            "{at}: alarm moves?"
        );
        queue.validate();
    }
    assert_eq!(queue.next_expiration(50_000), 100_000);
    let mut want = vec![0; 30];
    want[20..24].fill(1);
    assert_eq!(woken(&tasks), want);
}

#[test]
fn a_jump_of_two_hundred_years_wakes_every_task_and_empties_the_queue() {
    let start = 1_700_000_000_000;
    let (tasks, wakers) = tasks(40);
    let mut queue: WakerQueue<40> = WakerQueue::new();
    queue.next_expiration(start);
    for (k, waker) in wakers.iter().enumerate() {
        let at = start + (CENTURIES >> (k % 40)) + k as u64;
        queue.schedule_wake(at, waker);
    }
    queue.validate();
    assert_eq!(queue.next_expiration(start + CENTURIES + 39), u64::MAX);
    assert!(queue.is_empty());
    assert_eq!(woken(&tasks), vec![1; 40]);
}

#[test]
fn tasks_at_the_end_of_time_are_woken_only_there() {
    let (tasks, wakers) = tasks(20);
    let mut queue: WakerQueue<20> = WakerQueue::new();
    for (k, waker) in wakers.iter().enumerate() {
        queue.schedule_wake(u64::MAX - (k as u64 % 2), waker);
    }
    assert_eq!(queue.next_expiration(u64::MAX - 2), u64::MAX - 1);
    assert_eq!(queue.next_expiration(u64::MAX - 1), u64::MAX);
    assert_eq!(woken(&tasks).iter().sum::<usize>(), 10);
    // u64::MAX is both a deadline and "none left": the queue says which.
    assert_eq!(queue.len(), 10);
    assert_eq!(queue.next_expiration(u64::MAX), u64::MAX);
    assert!(queue.is_empty());
    assert_eq!(woken(&tasks), vec![1; 20]);
}

/// `next_expiration(now)` wakes "every task due by `now`". A clock read
/// earlier than the last must not wake a task whose deadline is after every
/// `now` the queue has seen: that would be early by any reading.
#[test]
fn a_clock_that_reads_earlier_than_before_wakes_nothing_not_yet_due() {
    let (tasks, wakers) = tasks(30);
    let mut queue: WakerQueue<32> = WakerQueue::new();
    for (k, waker) in wakers.iter().enumerate() {
        queue.schedule_wake(1_000 + 100 * k as u64, waker);
    }
    assert_eq!(queue.next_expiration(1_500), 1_600);
    assert_eq!(woken(&tasks).iter().sum::<usize>(), 6);
    assert_eq!(queue.next_expiration(1_200), 1_600, "nothing more is due");
    assert_eq!(woken(&tasks).iter().sum::<usize>(), 6);
    assert_eq!(queue.next_expiration(1_600), 1_700);
    assert_eq!(woken(&tasks).iter().sum::<usize>(), 7);
    queue.validate();
}

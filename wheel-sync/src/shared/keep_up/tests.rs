//! The wait for the driver, with the test in the driver's place: it takes
//! from the queue, or does not.

use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::*;
use crate::clock::Clock;
use crate::job::Job;
use crate::queue::Consumer;
use crate::shared::Message;
use crate::sync::Arc;

/// How long a step may take before a test gives up (miri runs slower).
const PATIENCE: Duration = Duration::from_secs(if cfg!(miri) { 120 } else { 10 });

/// A patience no test outlasts: a wait that ends did so for its reason.
const FOREVER: Duration = Duration::from_secs(3600);

/// A service's state with no driver, and its queues' consumer ends.
fn undriven() -> (Arc<Shared>, Vec<Consumer<Message>>) {
    let clock = Clock::new(Duration::from_millis(1), false);
    let (state, consumers) = Shared::new(clock, usize::MAX);
    (Arc::new(state), consumers)
}

/// Pushes `n` messages that do nothing to spot 0's queue, without the
/// wait; returns the last one's sequence number.
fn push(state: &Shared, n: usize) -> u64 {
    let mut last = 0;
    for _ in 0..n {
        match state.queues[0].push(Message::Job(0, Job::new(|| ()))) {
            Ok(seq) => last = seq,
            Err(_) => panic!("the queue is closed"),
        }
    }
    last
}

/// A thread that waits, as the push at `seq` would, giving up after
/// `patience` without progress; returns once it has started waiting.
fn waiting_for(state: &Arc<Shared>, seq: u64, patience: Duration) -> JoinHandle<()> {
    let before = state.spots.total(Count::Waits);
    let waiter = {
        let state = Arc::clone(state);
        std::thread::spawn(move || state.keep_up_for(0, seq, patience))
    };
    until(|| state.spots.total(Count::Waits) > before);
    waiter
}

/// [`waiting_for`] with no patience limit.
fn waiting(state: &Arc<Shared>, seq: u64) -> JoinHandle<()> {
    waiting_for(state, seq, FOREVER)
}

/// Counts a timer in on spot 0 and submits it there, as a detached
/// callback's schedule does.
fn submit(state: &Shared) {
    state.admit(0, true).unwrap();
    assert!(state.submit(0, Message::Job(0, Job::new(|| ())), 0).is_ok());
}

fn until(done: impl Fn() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < PATIENCE, "gave up waiting");
        std::thread::yield_now();
    }
}

#[test]
fn a_push_two_batches_ahead_waits_until_the_driver_has_taken_all_but_a_batch() {
    let (state, mut consumers) = undriven();
    let seq = push(&state, 2 * BATCH);
    let waiter = waiting(&state, seq);
    for _ in 0..BATCH - 1 {
        assert!(consumers[0].pop().is_some());
    }
    std::thread::sleep(Duration::from_millis(20));
    assert!(!waiter.is_finished(), "it stopped waiting a message early");
    assert!(consumers[0].pop().is_some());
    until(|| waiter.is_finished());
    waiter.join().unwrap();
}

#[test]
fn pushes_made_after_the_wait_began_do_not_hold_it() {
    let (state, mut consumers) = undriven();
    let seq = push(&state, 2 * BATCH);
    let waiter = waiting(&state, seq);
    // Other threads of the spot push on; the queue stays two batches long.
    push(&state, BATCH);
    for _ in 0..BATCH {
        assert!(consumers[0].pop().is_some());
    }
    until(|| waiter.is_finished());
    waiter.join().unwrap();
}

#[test]
fn a_shutdown_ends_the_wait() {
    let (state, _consumers) = undriven();
    let seq = push(&state, 2 * BATCH);
    let waiter = waiting(&state, seq);
    state.begin_shutdown();
    until(|| waiter.is_finished());
    waiter.join().unwrap();
}

#[test]
fn a_push_that_ends_a_batch_two_ahead_of_a_driver_that_takes_nothing_carries_on() {
    let (state, _consumers) = undriven();
    for _ in 0..2 * BATCH - 1 {
        submit(&state);
    }
    // The push that ended the first batch found the driver a batch behind
    // it, no more: no wait.
    assert_eq!(state.spots.total(Count::Waits), 0);
    let last = {
        let state = Arc::clone(&state);
        std::thread::spawn(move || {
            let start = Instant::now();
            submit(&state);
            start.elapsed()
        })
    };
    until(|| last.is_finished());
    let took = last.join().unwrap();
    assert_eq!(state.spots.total(Count::Waits), 1, "it did not wait");
    assert!(took >= RECLAIM_EVERY);
}

#[test]
fn a_driver_that_keeps_taking_keeps_the_waiter_past_its_patience() {
    let (state, mut consumers) = undriven();
    let seq = push(&state, 2 * BATCH);
    let patience = Duration::from_millis(500);
    let waiter = waiting_for(&state, seq, patience);
    // Eight takes 100 ms apart: 700 ms of progress, past the patience,
    // with no gap near it.
    for take in 0..8 {
        if take > 0 {
            std::thread::sleep(Duration::from_millis(100));
        }
        assert!(!waiter.is_finished(), "it gave up on a driver still taking");
        for _ in 0..BATCH / 8 {
            assert!(consumers[0].pop().is_some());
        }
    }
    until(|| waiter.is_finished());
    waiter.join().unwrap();
}

//! `Builder::callback_executor`: due callbacks run off the driver thread, so
//! a slow one delays no other timer; each runs at most once, a handed-over
//! one counts as fired, and whatever the executor does with it (runs it,
//! panics, drops it) is accounted for.
#![cfg(not(loom))]

use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{mpsc, Arc, Mutex};
use std::thread;
use std::time::Duration;

use wheel_sync::TimerService;

mod common;
use common::{wait_until, PATIENCE};

type Task = Box<dyn FnOnce() + Send + 'static>;

/// An executor that keeps what it is handed, for the test to run or drop.
fn holding() -> (TimerService, Arc<Mutex<Vec<Task>>>) {
    let held: Arc<Mutex<Vec<Task>>> = Arc::default();
    let sink = held.clone();
    let timers = TimerService::builder()
        .callback_executor(move |task| sink.lock().unwrap().push(task))
        .build()
        .unwrap();
    (timers, held)
}

#[test]
fn a_slow_callback_delays_no_other_timer() {
    let timers = TimerService::builder()
        .callback_executor(|task| drop(thread::spawn(task)))
        .build()
        .unwrap();
    let (release_tx, release_rx) = mpsc::channel::<()>();
    timers
        .schedule(Duration::ZERO, move || {
            // Holds its thread until the test is done: on the driver, it
            // would hold every other timer too.
            let _ = release_rx.recv_timeout(3 * PATIENCE);
        })
        .unwrap();
    let (tx, rx) = mpsc::channel();
    for ms in [5, 10, 15] {
        let tx = tx.clone();
        timers
            .schedule_detached(Duration::from_millis(ms), move || tx.send(ms).unwrap())
            .unwrap();
    }
    let fired: Vec<u64> = (0..3).map(|_| rx.recv_timeout(PATIENCE).unwrap()).collect();
    assert_eq!(fired.len(), 3);
    release_tx.send(()).unwrap();
}

#[test]
fn a_handed_over_callback_is_fired_cannot_be_cancelled_and_runs_once() {
    let (timers, held) = holding();
    let runs = Arc::new(AtomicUsize::new(0));
    let counter = runs.clone();
    let handle = timers
        .schedule(Duration::ZERO, move || {
            counter.fetch_add(1, SeqCst);
        })
        .unwrap();
    assert!(wait_until(PATIENCE, || handle.is_fired()));
    assert!(!handle.cancel(), "cancelled after it was handed over");
    assert_eq!(runs.load(SeqCst), 0, "the executor has not run it yet");
    let tasks: Vec<Task> = std::mem::take(&mut *held.lock().unwrap());
    assert_eq!(tasks.len(), 1);
    tasks.into_iter().for_each(|task| task());
    assert_eq!(runs.load(SeqCst), 1);
    assert_eq!(timers.pending(), 0);
    assert_eq!(timers.stats().fired, 1);
}

#[test]
fn detached_callbacks_go_through_the_executor_too() {
    let (timers, held) = holding();
    let runs = Arc::new(AtomicUsize::new(0));
    for _ in 0..10 {
        let counter = runs.clone();
        timers
            .schedule_detached(Duration::ZERO, move || {
                counter.fetch_add(1, SeqCst);
            })
            .unwrap();
    }
    assert!(wait_until(PATIENCE, || held.lock().unwrap().len() == 10));
    assert_eq!(runs.load(SeqCst), 0);
    let tasks: Vec<Task> = std::mem::take(&mut *held.lock().unwrap());
    tasks.into_iter().for_each(|task| task());
    assert_eq!(runs.load(SeqCst), 10);
}

#[test]
fn panics_in_callbacks_and_in_the_executor_are_caught_and_counted() {
    let calls = Arc::new(AtomicUsize::new(0));
    let seen = calls.clone();
    let held: Arc<Mutex<Vec<Task>>> = Arc::default();
    let sink = held.clone();
    let timers = TimerService::builder()
        .callback_executor(move |task| {
            // Every other call panics (dropping the task as it unwinds).
            if seen.fetch_add(1, SeqCst) % 2 == 0 {
                panic!("the executor panics");
            }
            sink.lock().unwrap().push(task);
        })
        .build()
        .unwrap();
    for _ in 0..4 {
        timers
            .schedule(Duration::ZERO, || panic!("the callback panics"))
            .unwrap();
    }
    assert!(wait_until(PATIENCE, || calls.load(SeqCst) == 4));
    let tasks: Vec<Task> = std::mem::take(&mut *held.lock().unwrap());
    assert_eq!(tasks.len(), 2);
    tasks.into_iter().for_each(|task| task()); // the callbacks' panics, caught
                                               // Two executor panics, two callback panics; the driver carries on.
    assert!(wait_until(PATIENCE, || timers.stats().panicked == 4));
    let (tx, rx) = mpsc::channel();
    let executor_done = timers.schedule(Duration::ZERO, move || tx.send(()).unwrap());
    assert!(executor_done.is_ok());
    assert!(wait_until(PATIENCE, || calls.load(SeqCst) == 5));
    drop(rx);
    // The two tasks dropped by the panicking executor never ran.
    assert_eq!(timers.shutdown().unwrap().unrun, 3);
}

#[test]
fn callbacks_the_executor_drops_are_counted_unrun_at_shutdown() {
    let (timers, held) = holding();
    for _ in 0..3 {
        timers.schedule(Duration::ZERO, || ()).unwrap();
    }
    timers.schedule(Duration::from_secs(3600), || ()).unwrap();
    assert!(wait_until(PATIENCE, || held.lock().unwrap().len() == 3));
    held.lock().unwrap().clear(); // dropped unrun
    let report = timers.shutdown().unwrap();
    assert_eq!((report.unfired, report.unrun), (1, 3));
}

/// The service gives up the executor when it ends, though the threads that
/// held the service (this one built it, the worker made a handle in a
/// callback) still run: a worker draining the executor's channel sees it
/// close. A thread used to keep its count, and through it the service,
/// until it ended.
#[test]
fn the_last_drop_closes_the_executors_channel_though_the_threads_run_on() {
    common::within_patience(|| {
        let (tx, rx) = mpsc::channel::<Box<dyn FnOnce() + Send>>();
        let timers = TimerService::builder()
            .callback_executor(move |callback| tx.send(Box::new(callback)).unwrap())
            .build()
            .unwrap();
        let worker = thread::spawn(move || {
            for callback in rx {
                callback();
            }
        });
        let (made, made_rx) = mpsc::channel();
        let inner = timers.clone();
        timers
            .schedule(Duration::ZERO, move || {
                drop(inner.schedule(Duration::from_secs(3600), || ()).unwrap());
                drop(inner);
                made.send(()).unwrap();
            })
            .unwrap();
        made_rx.recv_timeout(PATIENCE).unwrap();
        drop(timers);
        worker.join().unwrap();
    });
}

/// A detached callback the executor drops unrun, whose capture panics as
/// it is dropped: counted unrun, and its panic counted too.
#[test]
fn a_detached_callback_dropped_unrun_by_the_executor_counts_its_drops_panic() {
    struct PanicsOnDrop;
    impl Drop for PanicsOnDrop {
        fn drop(&mut self) {
            panic!("a capture that panics as it is dropped");
        }
    }
    // Drops every callback unrun, on a thread of its own.
    let timers = TimerService::builder()
        .callback_executor(|task| drop(thread::spawn(move || drop(task))))
        .build()
        .unwrap();
    let capture = PanicsOnDrop;
    timers
        .schedule_detached(Duration::ZERO, move || drop(capture))
        .unwrap();
    assert!(wait_until(PATIENCE, || timers.stats().panicked == 1));
    assert_eq!(timers.shutdown().unwrap().unrun, 1);
}

//! What a callback may do: panic (caught, counted, the driver carries on), and
//! call back into its service: schedule, cancel, shut down (refused), or drop
//! the last clone, which ends the driver; and the clones it makes keep the
//! driver only while they live.
#![cfg(not(loom))]

use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use wheel_sync::{ShutdownError, TimerService};

mod common;
use common::patiently::wait_until;
#[cfg(target_os = "linux")]
use common::threads_named;
use common::{drop_flag, manual, named_service, HOUR, PATIENCE};

#[test]
fn panicking_callback_is_caught_and_counted() {
    let timers = TimerService::new();
    let (tx, rx) = mpsc::channel();
    timers
        .schedule(Duration::from_millis(1), || {
            panic!("expected test panic: a timer callback")
        })
        .unwrap();
    timers
        .schedule(Duration::from_millis(2), || std::panic::panic_any(42_u32))
        .unwrap();
    timers
        .schedule(Duration::from_millis(20), move || tx.send(()).unwrap())
        .unwrap();
    rx.recv_timeout(PATIENCE)
        .expect("the driver stopped after a callback panicked");
    assert!(
        wait_until(|| timers.stats().fired == 3),
        "{:?}",
        timers.stats()
    );
    let stats = timers.stats();
    assert_eq!(stats.panicked, 2, "{stats:?}");
    // And it keeps going.
    let (tx, rx) = mpsc::channel();
    timers
        .schedule(Duration::ZERO, move || tx.send(()).unwrap())
        .unwrap();
    rx.recv_timeout(PATIENCE).unwrap();
}

#[test]
fn callback_schedules_a_timer_that_fires() {
    let timers = TimerService::new();
    let (tx, rx) = mpsc::channel();
    let inner = timers.clone();
    let start = Instant::now();
    timers
        .schedule(Duration::from_millis(1), move || {
            let deadline = Instant::now() + Duration::from_millis(5);
            inner
                .schedule_at(deadline, move || {
                    tx.send((deadline, Instant::now())).unwrap()
                })
                .unwrap();
        })
        .unwrap();
    let (deadline, fired_at) = rx
        .recv_timeout(PATIENCE)
        .expect("a timer scheduled from a callback never fired");
    assert!(fired_at >= deadline && deadline >= start + Duration::from_millis(6));
}

#[test]
fn callback_cancels_a_pending_timer() {
    let timers = TimerService::new();
    let victim_ran = Arc::new(AtomicBool::new(false));
    let ran = victim_ran.clone();
    let victim = timers
        .schedule(Duration::from_millis(100), move || ran.store(true, SeqCst))
        .unwrap();
    let (tx, rx) = mpsc::channel();
    timers
        .schedule(Duration::from_millis(1), move || {
            let won = victim.cancel();
            tx.send((won, victim.is_cancelled())).unwrap();
        })
        .unwrap();
    let (sentinel_tx, sentinel_rx) = mpsc::channel();
    timers
        .schedule(Duration::from_millis(150), move || {
            sentinel_tx.send(()).unwrap()
        })
        .unwrap();
    assert_eq!(rx.recv_timeout(PATIENCE).unwrap(), (true, true));
    // The sentinel's deadline is after the victim's: once it fires, the victim had its chance.
    sentinel_rx.recv_timeout(PATIENCE).unwrap();
    assert!(!victim_ran.load(SeqCst), "a cancelled timer fired");
}

/// Timers due at the same tick: whichever runs first cancels the other,
/// which has not started, so exactly one runs. A driver that claimed a
/// whole batch of due timers before running any would run both.
#[test]
fn a_callback_cancels_a_timer_due_at_the_same_tick() {
    use std::sync::atomic::AtomicUsize;
    use std::sync::Mutex;
    use wheel_sync::TimerHandle;

    let timers = manual();
    let (ran, won) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let shelves: [Arc<Mutex<Option<TimerHandle>>>; 2] = Default::default();
    let handles: Vec<_> = (0..2)
        .map(|me| {
            let (ran, won, other) = (ran.clone(), won.clone(), shelves[1 - me].clone());
            timers
                .schedule(Duration::from_millis(1), move || {
                    ran.fetch_add(1, SeqCst);
                    let other = other.lock().unwrap().take().expect("both scheduled");
                    if other.cancel() {
                        won.fetch_add(1, SeqCst);
                    }
                })
                .unwrap()
        })
        .collect();
    for (shelf, handle) in shelves.iter().zip(handles) {
        *shelf.lock().unwrap() = Some(handle);
    }
    timers.advance(Duration::from_millis(1)).unwrap();
    assert_eq!(
        (ran.load(SeqCst), won.load(SeqCst)),
        (1, 1),
        "(callbacks run, cancels won)"
    );
    assert_eq!(timers.pending(), 0);
}

#[test]
fn shutdown_from_a_callback_is_refused() {
    let timers = TimerService::new();
    let (tx, rx) = mpsc::channel();
    let inner = timers.clone();
    timers
        .schedule(Duration::ZERO, move || tx.send(inner.shutdown()).unwrap())
        .unwrap();
    let result = rx
        .recv_timeout(PATIENCE)
        .expect("shutdown from a callback deadlocked");
    assert_eq!(result.unwrap_err(), ShutdownError::FromCallback);
    // The service is untouched.
    let (tx, rx) = mpsc::channel();
    timers
        .schedule(Duration::ZERO, move || tx.send(()).unwrap())
        .unwrap();
    rx.recv_timeout(PATIENCE).unwrap();
    assert!(timers.shutdown().is_ok());
}

#[test]
fn callback_dropping_the_last_clone_ends_the_driver() {
    let (name, timers) = named_service();
    let (guard, far_dropped) = drop_flag();
    drop(timers.schedule(HOUR, move || drop(guard)).unwrap());

    let (go_tx, go_rx) = mpsc::channel::<()>();
    let (done_tx, done_rx) = mpsc::channel();
    let last = timers.clone();
    let handle = timers
        .schedule(Duration::ZERO, move || {
            // Wait until every other clone is gone, so this one is the last.
            let _ = go_rx.recv_timeout(PATIENCE);
            drop(last);
            done_tx.send(()).unwrap();
        })
        .unwrap();
    drop(handle);
    drop(timers);
    go_tx.send(()).unwrap();
    done_rx
        .recv_timeout(PATIENCE)
        .expect("dropping the last clone in a callback deadlocked");
    assert!(
        wait_until(|| far_dropped.load(SeqCst)),
        "the driver did not end: an unfired callback was never dropped"
    );
    #[cfg(target_os = "linux")]
    assert!(
        wait_until(|| threads_named(&name) == 0),
        "driver thread {name} still alive"
    );
}

/// A callback that makes clones and handles counts them on the driver's own
/// thread; once they are gone, the user's last drop still ends the driver.
#[cfg(target_os = "linux")]
#[test]
fn clones_made_and_dropped_by_a_callback_do_not_keep_the_driver() {
    let (name, timers) = named_service();
    let (guard, far_dropped) = drop_flag();
    drop(timers.schedule(HOUR, move || drop(guard)).unwrap());
    let (done_tx, done_rx) = mpsc::channel();
    let inner = timers.clone();
    drop(
        timers
            .schedule(Duration::ZERO, move || {
                let clone = inner.clone();
                let handle = clone.schedule(HOUR, || ()).unwrap();
                assert!(handle.cancel());
                let sleep = clone.sleep(HOUR);
                drop((handle, sleep, clone, inner));
                done_tx.send(()).unwrap();
            })
            .unwrap(),
    );
    done_rx.recv_timeout(PATIENCE).expect("the callback ran");
    drop(timers);
    assert!(
        wait_until(|| threads_named(&name) == 0),
        "the driver outlived its last clone after a callback held the service"
    );
    assert!(
        wait_until(|| far_dropped.load(SeqCst)),
        "an unfired callback was never dropped"
    );
}

/// Cancelling a callback whose closure holds the service's last clone: the
/// closure's drop ends the service, from inside `cancel`, and the shutdown
/// must find the cancelled timer counted out (it used to wait out its
/// patience, 10 s, for it).
#[test]
fn cancelling_a_callback_that_holds_the_last_clone_ends_the_service_at_once() {
    let timers = TimerService::new();
    let last = timers.clone();
    let handle = timers
        .schedule(HOUR, move || drop(last.schedule(HOUR, || ())))
        .unwrap();
    drop(timers);
    let started = Instant::now();
    assert!(handle.cancel());
    let took = started.elapsed();
    assert!(took < Duration::from_secs(2), "the cancel took {took:?}");
}

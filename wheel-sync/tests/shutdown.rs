//! Shutdown drops what is pending unrun, wakes pending futures (which then
//! panic when polled) and refuses what comes after; no driver thread outlives
//! the service, whether it is shut down or its last handle drops.
#![cfg(not(loom))]

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::{mpsc, Arc};
use std::task::{Poll, Waker};
use std::time::{Duration, Instant};

use wheel_sync::{ScheduleError, ShutdownError, TimerService};

mod common;
use common::patiently::wait_until;
use common::{block_on, counting_waker, drop_flag, poll_once, HOUR};
#[cfg(target_os = "linux")]
use common::{named_service, threads_named, unique_thread_name, PATIENCE};

#[test]
fn shutdown_drops_pending_callbacks_unrun() {
    let timers = TimerService::new();
    let (tx, rx) = mpsc::channel();
    timers
        .schedule(Duration::ZERO, move || tx.send(()).unwrap())
        .unwrap();
    rx.recv_timeout(PATIENCE).unwrap();

    let ran = Arc::new(AtomicBool::new(false));
    let mut dropped = Vec::new();
    let mut handles = Vec::new();
    for delay in [Duration::from_secs(2), Duration::from_secs(20), HOUR] {
        let (guard, flag) = drop_flag();
        let ran = ran.clone();
        handles.push(
            timers
                .schedule(delay, move || {
                    let _guard = guard;
                    ran.store(true, SeqCst);
                })
                .unwrap(),
        );
        dropped.push(flag);
    }
    let report = timers.shutdown().unwrap();
    assert_eq!(report.unfired, 3, "{report:?}");
    for (i, flag) in dropped.iter().enumerate() {
        assert!(
            flag.load(SeqCst),
            "callback {i} was not dropped by shutdown"
        );
    }
    for handle in &handles {
        assert!(handle.is_cancelled() && !handle.is_fired(), "{handle:?}");
        assert!(!handle.cancel(), "cancel after shutdown returned true");
    }
    assert_eq!(timers.pending(), 0);
    assert_eq!(timers.stats().fired, 1);
    // The driver is joined: had shutdown run any of them, it ran early.
    assert!(
        !ran.load(SeqCst),
        "shutdown ran a callback before its deadline"
    );

    assert_eq!(
        timers.schedule(Duration::ZERO, || ()).unwrap_err(),
        ScheduleError::Shutdown
    );
    assert_eq!(
        timers.schedule_at(Instant::now(), || ()).unwrap_err(),
        ScheduleError::Shutdown
    );
    assert_eq!(
        timers.shutdown().unwrap_err(),
        ShutdownError::AlreadyShutDown
    );
    assert_eq!(
        timers.clone().shutdown().unwrap_err(),
        ShutdownError::AlreadyShutDown
    );
}

#[test]
fn sleep_pending_at_shutdown_is_woken_and_panics_when_polled() {
    let timers = TimerService::new();
    let mut sleep = timers.sleep(HOUR);
    let mut timeout = timers.timeout(HOUR, std::future::pending::<()>());
    let mut ready_timeout = timers.timeout(HOUR, std::future::ready(5));
    let (sleep_wakes, sleep_waker) = counting_waker();
    let (timeout_wakes, timeout_waker) = counting_waker();
    assert!(poll_once(&mut sleep, &sleep_waker).is_pending());
    assert!(poll_once(&mut timeout, &timeout_waker).is_pending());

    let report = timers.shutdown().unwrap();
    assert_eq!(report.unfired, 3, "{report:?}");
    assert_eq!(
        sleep_wakes.count(),
        1,
        "the Sleep's task was not woken by shutdown"
    );
    assert_eq!(
        timeout_wakes.count(),
        1,
        "the Timeout's task was not woken by shutdown"
    );
    assert!(sleep.is_shut_down() && !sleep.is_elapsed(), "{sleep:?}");
    assert_eq!(timers.pending(), 0);

    let polled = catch_unwind(AssertUnwindSafe(|| poll_once(&mut sleep, Waker::noop())));
    assert!(polled.is_err(), "polling a shut-down Sleep must panic");
    let polled = catch_unwind(AssertUnwindSafe(|| poll_once(&mut timeout, Waker::noop())));
    assert!(polled.is_err(), "polling a shut-down Timeout must panic");
    // Its inner future is ready, so it has an honest answer.
    assert_eq!(
        poll_once(&mut ready_timeout, Waker::noop()),
        Poll::Ready(Ok(5))
    );
}

#[test]
fn sleep_made_after_shutdown_reports_it() {
    let timers = TimerService::new();
    timers.shutdown().unwrap();
    let mut sleep = timers.sleep(Duration::from_millis(1));
    assert!(sleep.is_shut_down());
    assert_eq!(timers.pending(), 0);
    let polled = catch_unwind(AssertUnwindSafe(|| poll_once(&mut sleep, Waker::noop())));
    assert!(
        polled.is_err(),
        "polling a Sleep made after shutdown must panic"
    );
}

#[test]
fn reset_after_shutdown_keeps_pending_at_zero() {
    let timers = TimerService::new();
    let mut sleep = timers.sleep(Duration::ZERO);
    block_on(&mut sleep);
    assert!(sleep.is_elapsed());
    assert_eq!(timers.pending(), 0);
    timers.shutdown().unwrap();
    sleep.reset(Instant::now() + Duration::from_secs(1));
    assert!(sleep.is_shut_down(), "{sleep:?}");
    assert_eq!(timers.pending(), 0, "reset of a fired Sleep after shutdown");
}

#[cfg(target_os = "linux")]
#[test]
fn no_driver_thread_outlives_the_service() {
    let name = unique_thread_name();
    assert_eq!(threads_named(&name), 0);
    let timers = TimerService::builder()
        .thread_name(name.clone())
        .build()
        .unwrap();
    assert!(wait_until(|| threads_named(&name) == 1));
    let handle = timers.schedule(HOUR, || ()).unwrap();
    let sleep = timers.sleep(HOUR);
    drop(timers.clone());
    drop(timers);
    drop(handle);
    // The Sleep still holds the service.
    assert_eq!(threads_named(&name), 1);
    let started = Instant::now();
    drop(sleep);
    let took = started.elapsed();
    assert!(
        took < Duration::from_secs(2),
        "dropping the last handle took {took:?}"
    );
    assert!(
        wait_until(|| threads_named(&name) == 0),
        "driver thread {name} outlived the service"
    );

    let (name, timers) = named_service();
    assert!(wait_until(|| threads_named(&name) == 1));
    timers.shutdown().unwrap();
    assert!(
        wait_until(|| threads_named(&name) == 0),
        "driver thread {name} outlived shutdown"
    );
}

#[test]
fn dropping_the_last_handle_is_prompt_and_drops_unfired_callbacks() {
    let timers = TimerService::new();
    let (guard, dropped) = drop_flag();
    let handle = timers.schedule(HOUR, move || drop(guard)).unwrap();
    let other = timers.clone();
    drop(timers);
    drop(handle);
    assert!(!dropped.load(SeqCst), "dropped while a handle was left");
    let started = Instant::now();
    drop(other);
    let took = started.elapsed();
    assert!(
        took < Duration::from_secs(2),
        "dropping the last handle took {took:?}"
    );
    assert!(
        dropped.load(SeqCst),
        "the unfired callback outlived the service"
    );
}

/// Each clone counts its own handles; a handle made through a clone keeps
/// the service running after every `TimerService` value is gone.
#[cfg(target_os = "linux")]
#[test]
fn a_handle_made_through_a_clone_keeps_the_service_alive() {
    let (name, timers) = named_service();
    let clone = timers.clone();
    let (tx, rx) = mpsc::channel();
    let handle = clone
        .schedule(Duration::from_millis(20), move || tx.send(()).unwrap())
        .unwrap();
    let sleep = timers.clone().sleep(Duration::from_millis(40));
    drop(clone);
    drop(timers);
    rx.recv_timeout(PATIENCE)
        .expect("the handle alone did not keep the driver running");
    assert!(handle.is_fired());
    block_on(sleep);
    assert_eq!(threads_named(&name), 1);
    drop(handle);
    assert!(
        wait_until(|| threads_named(&name) == 0),
        "the driver outlived its last handle"
    );
}

/// Threads that held the service by reference and let go, but still run:
/// their counts are idle, not gone, and the driver disarms them, so the
/// last drop elsewhere still ends it (within a sweep or two, not at once).
#[cfg(target_os = "linux")]
#[test]
fn threads_that_let_go_but_still_run_do_not_keep_the_service_alive() {
    use std::sync::Barrier;
    let (name, timers) = named_service();
    let timers = Arc::new(timers);
    let (done, finish) = (Arc::new(Barrier::new(3)), Arc::new(Barrier::new(3)));
    let threads: Vec<_> = (0..2)
        .map(|_| {
            let (timers, done, finish) = (timers.clone(), done.clone(), finish.clone());
            std::thread::spawn(move || {
                let handle = timers.schedule(HOUR, || ()).unwrap();
                let sleep = timers.sleep(HOUR);
                assert!(handle.cancel());
                drop((handle, sleep, timers));
                done.wait();
                finish.wait();
            })
        })
        .collect();
    done.wait();
    drop(timers);
    let gone = wait_until(|| threads_named(&name) == 0);
    finish.wait();
    threads.into_iter().for_each(|t| t.join().unwrap());
    assert!(
        gone,
        "the driver outlived its last handle while idle threads ran"
    );
}

/// A pending `Sleep` is a handle: its entry sits in the driver's wheel,
/// but only the `Sleep` holds the service, so the driver runs while the
/// `Sleep` lives and ends when it drops.
#[cfg(target_os = "linux")]
#[test]
fn a_pending_sleep_is_a_handle_until_it_drops() {
    let (name, timers) = named_service();
    let sleep = timers.sleep(HOUR);
    // Filed in the wheel, so the driver holds the entry too.
    assert!(wait_until(|| timers.stats().scheduled == 1));
    drop(timers);
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(threads_named(&name), 1, "the sleep alone keeps it running");
    assert!(!sleep.is_shut_down());
    drop(sleep);
    assert!(
        wait_until(|| threads_named(&name) == 0),
        "the driver outlived the last Sleep"
    );
}

/// Handles kept in a thread-local are dropped by the thread's teardown,
/// before or after the library's own thread-local (thread-locals go in the
/// reverse order of their first use), and handles are made in a teardown,
/// before the library's list goes or (the third case) after it has gone:
/// either way the last of them ends the service, and what it held is
/// dropped unrun.
#[cfg(target_os = "linux")]
#[test]
fn handles_a_thread_keeps_or_makes_in_its_teardown_end_the_service() {
    use std::cell::RefCell;
    use wheel_sync::TimerHandle;

    /// Schedules through `service` from its own drop: the thread's
    /// teardown making a handle.
    struct MakesOnDrop(TimerService);

    impl Drop for MakesOnDrop {
        fn drop(&mut self) {
            let late = self.0.clone();
            let handle = late.schedule(HOUR, || ()).unwrap();
            assert!(handle.cancel());
        }
    }

    std::thread_local! {
        static KEPT: RefCell<Vec<TimerHandle>> = const { RefCell::new(Vec::new()) };
        static MAKER: RefCell<Option<MakesOnDrop>> = const { RefCell::new(None) };
    }

    let cases = [
        "kept, theirs first used",
        "kept, ours first used",
        "made in teardown, theirs first used",
        "made in teardown, ours first used",
    ];
    for (case, first_use) in cases.into_iter().enumerate() {
        let (name, timers) = named_service();
        let (guard, dropped) = drop_flag();
        let service = timers.clone();
        let thread = std::thread::spawn(move || {
            // Thread-locals are destroyed in the reverse order of first use.
            match case {
                0 => KEPT.with(|kept| assert!(kept.borrow().is_empty())),
                2 => MAKER.with(|maker| assert!(maker.borrow().is_none())),
                _ => {}
            }
            let handle = service.schedule(HOUR, move || drop(guard)).unwrap();
            if case >= 2 {
                drop(handle);
                MAKER.with(|maker| *maker.borrow_mut() = Some(MakesOnDrop(service)));
            } else {
                KEPT.with(|kept| kept.borrow_mut().push(handle));
            }
        });
        thread.join().unwrap();
        drop(timers);
        assert!(
            wait_until(|| threads_named(&name) == 0),
            "{first_use}: the driver outlived the thread's teardown"
        );
        // A timer still parked is dropped with the service's last
        // reference, which may go just after the driver thread ends.
        assert!(
            wait_until(|| dropped.load(SeqCst)),
            "{first_use}: the callback outlived the service"
        );
    }
}

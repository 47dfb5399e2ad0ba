//! Shutdown drops what is pending unrun, wakes pending futures (which then
//! panic when polled) and refuses what comes after; no driver thread outlives
//! the service, whether it is shut down or its last clone drops; and a
//! shutdown that returns, returns with the service down.
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

/// A shutdown called while another is joining the driver (stuck in a
/// callback) waits for it: whoever gets an answer finds the service down.
#[test]
fn a_second_shutdown_returns_only_once_the_service_is_down() {
    let timers = TimerService::new();
    let (running, callback_runs) = mpsc::channel();
    let (release, released) = mpsc::channel::<()>();
    let finished = Arc::new(AtomicBool::new(false));
    let flag = finished.clone();
    timers
        .schedule(Duration::ZERO, move || {
            running.send(()).unwrap();
            let _ = released.recv();
            flag.store(true, SeqCst);
        })
        .unwrap();
    for _ in 0..100 {
        timers.schedule(HOUR, || ()).unwrap();
    }
    callback_runs.recv_timeout(PATIENCE).unwrap();
    let first = {
        let timers = timers.clone();
        std::thread::spawn(move || timers.shutdown())
    };
    assert!(wait_until(|| timers.sleep(HOUR).is_shut_down()));
    let second = {
        let (timers, finished) = (timers.clone(), finished.clone());
        std::thread::spawn(move || {
            let answer = timers.shutdown();
            (answer, timers.pending(), finished.load(SeqCst))
        })
    };
    // Time for the second call to answer early, as it once did.
    std::thread::sleep(Duration::from_millis(50));
    release.send(()).unwrap();
    let (answer, pending, callback_finished) = second.join().unwrap();
    assert_eq!(answer, Err(ShutdownError::AlreadyShutDown));
    assert_eq!(pending, 0, "answered before the shutdown was done");
    assert!(callback_finished, "answered while a callback still ran");
    assert_eq!(first.join().unwrap().unwrap().unfired, 100);
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
    // The ready timeout was never polled into waiting: it has no timer.
    assert_eq!(report.unfired, 2, "{report:?}");
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
    let sleep = common::polled(timers.sleep(HOUR));
    drop(timers.clone());
    assert_eq!(threads_named(&name), 1, "a clone is left");
    // The last clone goes: the service with it, as a runtime's would,
    // though a callback's handle and a pending Sleep are left.
    let started = Instant::now();
    drop(timers);
    let took = started.elapsed();
    assert!(
        took < Duration::from_secs(2),
        "dropping the last clone took {took:?}"
    );
    // Joined, so gone from /proc a moment later.
    assert!(
        wait_until(|| threads_named(&name) == 0),
        "driver thread {name} outlived the service"
    );
    assert!(handle.is_cancelled() && sleep.is_shut_down());

    let (name, timers) = named_service();
    assert!(wait_until(|| threads_named(&name) == 1));
    timers.shutdown().unwrap();
    assert!(
        wait_until(|| threads_named(&name) == 0),
        "driver thread {name} outlived shutdown"
    );
}

#[test]
fn dropping_the_last_clone_is_prompt_and_drops_unfired_callbacks() {
    let timers = TimerService::new();
    let (guard, dropped) = drop_flag();
    let handle = timers.schedule(HOUR, move || drop(guard)).unwrap();
    let other = timers.clone();
    drop(timers);
    drop(handle);
    assert!(!dropped.load(SeqCst), "dropped while a clone was left");
    let started = Instant::now();
    drop(other);
    let took = started.elapsed();
    assert!(
        took < Duration::from_secs(2),
        "dropping the last clone took {took:?}"
    );
    assert!(
        dropped.load(SeqCst),
        "the unfired callback outlived the service"
    );
}

/// A clone keeps the service running, whichever clone it was made from;
/// what the service hands out (a callback's handle, a `Sleep`) does not.
#[cfg(target_os = "linux")]
#[test]
fn a_clone_keeps_the_service_running_and_what_it_hands_out_does_not() {
    let (name, timers) = named_service();
    let clone = timers.clone();
    let (tx, rx) = mpsc::channel();
    let handle = timers
        .schedule(Duration::from_millis(20), move || tx.send(()).unwrap())
        .unwrap();
    let sleep = timers.sleep(Duration::from_millis(40));
    drop(timers);
    rx.recv_timeout(PATIENCE)
        .expect("the clone did not keep the driver running");
    assert!(handle.is_fired());
    block_on(sleep);
    assert_eq!(threads_named(&name), 1);
    let (tx, rx) = mpsc::channel::<()>();
    let unfired = clone.schedule(HOUR, move || drop(tx)).unwrap();
    drop(clone);
    assert!(
        wait_until(|| threads_named(&name) == 0),
        "the driver outlived its last clone"
    );
    assert!(unfired.is_cancelled(), "{unfired:?}");
    assert!(rx.recv().is_err(), "the unfired callback was dropped");
}

/// Threads that held the service by reference and let go, but still run
/// (their lanes live on in their thread-locals): the last drop elsewhere
/// still ends it.
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
        "the driver outlived its last clone while idle threads ran"
    );
}

/// A pending `Sleep` whose service's last clone goes is woken, shut down,
/// and panics when polled; its own drop afterwards is harmless.
#[cfg(target_os = "linux")]
#[test]
fn a_pending_sleep_is_woken_when_the_last_clone_goes() {
    let (name, timers) = named_service();
    let (wakes, waker) = counting_waker();
    let mut sleep = timers.sleep(HOUR);
    assert!(poll_once(&mut sleep, &waker).is_pending());
    // Filed in the wheel, so the driver holds the entry too.
    assert!(wait_until(|| timers.stats().scheduled == 1));
    drop(timers);
    assert!(wait_until(|| threads_named(&name) == 0));
    assert_eq!(wakes.count(), 1, "not woken by the shutdown");
    assert!(sleep.is_shut_down());
    let polled = catch_unwind(AssertUnwindSafe(|| poll_once(&mut sleep, Waker::noop())));
    assert!(polled.is_err(), "polling a shut-down Sleep must panic");
    drop(sleep);
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

/// A waker that holds the service's last clone, woken by the driver: the
/// wake consumes it, so the last clone is dropped on the driver's own
/// thread, after its round has fired the sleep. The service ends, its
/// driver thread with it, and nothing hangs.
#[cfg(target_os = "linux")]
#[test]
fn a_waker_holding_the_last_clone_ends_the_service_when_woken() {
    /// Holds a clone until woken; says when it was.
    struct Holds(std::sync::Mutex<Option<TimerService>>, mpsc::SyncSender<()>);
    impl std::task::Wake for Holds {
        fn wake(self: Arc<Self>) {
            let last = self.0.lock().unwrap().take();
            drop(last);
            let _ = self.1.try_send(());
        }
    }
    let (name, timers) = named_service();
    let (woke_tx, woke_rx) = mpsc::sync_channel(1);
    let holder = Arc::new(Holds(std::sync::Mutex::new(Some(timers.clone())), woke_tx));
    let mut sleep = timers.sleep(Duration::from_millis(5));
    assert!(poll_once(&mut sleep, &Waker::from(holder)).is_pending());
    drop(timers);
    woke_rx
        .recv_timeout(PATIENCE)
        .expect("the waker that dropped the last clone did not return");
    assert!(
        wait_until(|| threads_named(&name) == 0),
        "the driver outlived its last clone, dropped by a waker it woke"
    );
    assert_eq!(poll_once(&mut sleep, Waker::noop()), Poll::Ready(()));
}

/// Schedules made while a shutdown waits on a callback that holds up the
/// driver: each is refused, or accepted and then counted unfired: none is
/// lost, and once the shutdown returns every schedule is refused.
#[test]
fn schedules_while_a_shutdown_waits_on_a_blocked_callback_are_each_counted_or_refused() {
    let timers = TimerService::new();
    let (running, callback_runs) = mpsc::channel();
    let (release, released) = mpsc::channel::<()>();
    timers
        .schedule(Duration::ZERO, move || {
            running.send(()).unwrap();
            let _ = released.recv();
        })
        .unwrap();
    callback_runs.recv_timeout(PATIENCE).unwrap();
    let first = {
        let timers = timers.clone();
        std::thread::spawn(move || timers.shutdown())
    };
    assert!(wait_until(|| timers.sleep(HOUR).is_shut_down()));
    let accepted = (0..100)
        .filter(|_| timers.schedule(HOUR, || ()).is_ok())
        .count();
    release.send(()).unwrap();
    let report = first.join().unwrap().unwrap();
    assert_eq!(report.unfired, accepted);
    assert_eq!(timers.pending(), 0);
    assert_eq!(
        timers.schedule(HOUR, || ()).unwrap_err(),
        ScheduleError::Shutdown
    );
}

/// Runs its closure when dropped.
struct OnDrop(Option<Box<dyn FnOnce() + Send>>);

impl Drop for OnDrop {
    fn drop(&mut self) {
        if let Some(act) = self.0.take() {
            act();
        }
    }
}

/// What a shutdown drops runs user code on the driver thread: here a
/// capture whose drop schedules, cancels another pending callback, drops a
/// pending sleep and asks for a shutdown again. The schedule is refused,
/// the cancel and the sleep's drop each settle their timer once (cancelled,
/// or abandoned if the shutdown came to it first), the second shutdown is
/// an error rather than a deadlock, and the account adds up.
#[test]
fn captures_that_call_back_into_the_service_as_the_shutdown_drops_them_are_answered() {
    let timers = TimerService::new();
    let victim = timers.schedule(HOUR, || ()).unwrap();
    let mut sleep = Box::pin(timers.sleep(HOUR));
    assert!(poll_once(&mut sleep, Waker::noop()).is_pending());
    let (tx, rx) = mpsc::channel();
    let caller = timers.clone();
    let on_drop = OnDrop(Some(Box::new(move || {
        let scheduled = caller.schedule(HOUR, || ()).map(drop);
        let cancelled = victim.cancel();
        drop(sleep);
        let again = caller.shutdown().map(drop);
        tx.send((scheduled, cancelled, again)).unwrap();
    })));
    timers.schedule(HOUR, move || drop(on_drop)).unwrap();
    let report = timers.shutdown().unwrap();
    let (scheduled, cancelled, again) = rx.recv_timeout(common::PATIENCE).unwrap();
    assert_eq!(scheduled, Err(ScheduleError::Shutdown));
    assert!(again.is_err(), "a shutdown from the driver's own thread");
    let stats = timers.stats();
    assert_eq!(timers.pending(), 0);
    assert_eq!(stats.scheduled, 3, "{stats:?}");
    assert_eq!(stats.fired, 0);
    assert_eq!(
        stats.cancelled + report.unfired as u64,
        3,
        "cancelled here: {cancelled}; {stats:?} {report:?}"
    );
    assert_eq!(stats.panicked, 0);
}

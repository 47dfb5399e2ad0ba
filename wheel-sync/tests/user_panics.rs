//! User code never stops the driver: a panic from a callback, a waker, or
//! the drop of anything a user handed in (a closure's captures, a waker) is
//! caught and counted in `Stats::panicked`, on fire, cancel and shutdown,
//! and every later timer still fires; and a drop that blocks holds up only
//! the thread that drops it (or a shutdown, which waits for it).
#![cfg(not(loom))]

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{mpsc, Arc};
use std::task::{Context, RawWaker, RawWakerVTable, Waker};
use std::time::{Duration, Instant};

use wheel_sync::TimerService;

mod common;
use common::{poll_once, wait_until, PATIENCE};

const HOUR: Duration = Duration::from_secs(3600);

/// Panics as it is dropped.
struct Bomb;

impl Drop for Bomb {
    fn drop(&mut self) {
        panic!("a captured value that panics on drop");
    }
}

/// Proves the driver still runs: a fresh timer fires.
fn assert_driver_alive(timers: &TimerService) {
    let (tx, rx) = mpsc::channel();
    timers
        .schedule(Duration::from_millis(1), move || tx.send(()).unwrap())
        .unwrap();
    assert!(
        rx.recv_timeout(PATIENCE).is_ok(),
        "the driver is gone: {:?}",
        timers.stats()
    );
}

#[test]
fn a_cancelled_closure_whose_capture_panics_on_drop_does_not_stop_the_driver() {
    let timers = TimerService::new();
    for delay in [Duration::from_millis(1), HOUR] {
        let bomb = Bomb;
        let handle = timers
            .schedule_at(Instant::now() + delay, move || drop(bomb))
            .unwrap();
        assert!(handle.cancel());
        drop(handle);
    }
    assert_driver_alive(&timers);
    assert_eq!(timers.stats().panicked, 2);
}

#[test]
fn closures_panicking_on_drop_at_shutdown_are_all_counted_unfired() {
    let timers = TimerService::new();
    for _ in 0..15 {
        let bomb = Bomb;
        timers.schedule(HOUR, move || drop(bomb)).unwrap();
        let bomb = Bomb;
        timers.schedule_detached(HOUR, move || drop(bomb)).unwrap();
    }
    let observer = timers.clone();
    let report = timers.shutdown().unwrap();
    assert_eq!(report.unfired, 30);
    assert_eq!(observer.pending(), 0);
    assert_eq!(observer.stats().panicked, 30);
}

#[test]
fn a_fired_callback_whose_capture_panics_on_drop_is_counted() {
    let timers = TimerService::new();
    let bomb = Bomb;
    timers
        .schedule_detached(Duration::ZERO, move || {
            let _bomb = bomb;
        })
        .unwrap();
    assert!(wait_until(PATIENCE, || timers.stats().panicked == 1));
    assert_driver_alive(&timers);
}

/// A waker whose drop panics (its clones count how many are live).
fn bomb_waker(live: &'static AtomicUsize) -> Waker {
    fn clone(data: *const ()) -> RawWaker {
        // SAFETY: `data` is the `&'static AtomicUsize` given to `bomb_waker`.
        unsafe { &*data.cast::<AtomicUsize>() }.fetch_add(1, SeqCst);
        RawWaker::new(data, &VTABLE)
    }
    fn noop(_: *const ()) {}
    fn drop(data: *const ()) {
        // SAFETY: as in `clone`.
        unsafe { &*data.cast::<AtomicUsize>() }.fetch_sub(1, SeqCst);
        panic!("a waker that panics on drop");
    }
    static VTABLE: RawWakerVTable = RawWakerVTable::new(clone, noop, noop, drop);
    live.fetch_add(1, SeqCst);
    // SAFETY: the vtable's functions keep the `RawWaker` contract: `data`
    // stays valid (it is `'static`) and none of them is unsafe to call twice.
    unsafe { Waker::from_raw(RawWaker::new(core::ptr::from_ref(live).cast(), &VTABLE)) }
}

/// A sleep polled again with another waker drops the one it held: that
/// drop's panic is caught and counted at once, in the sleep's own service,
/// not left for whichever sleep the thread drops next.
#[test]
fn a_replaced_waker_whose_drop_panics_is_counted_at_once_in_its_own_service() {
    static LIVE: AtomicUsize = AtomicUsize::new(0);
    let (mine, other) = (TimerService::new(), TimerService::new());
    let bomb = std::mem::ManuallyDrop::new(bomb_waker(&LIVE));
    let mut sleep = Box::pin(mine.sleep(HOUR));
    assert!(poll_once(&mut sleep, &bomb).is_pending());
    assert!(poll_once(&mut sleep, Waker::noop()).is_pending());
    assert_eq!(mine.stats().panicked, 1, "not counted at the poll");
    let mut elsewhere = Box::pin(other.sleep(HOUR));
    assert!(poll_once(&mut elsewhere, Waker::noop()).is_pending());
    drop(elsewhere);
    assert_eq!(other.stats().panicked, 0, "counted in another service");
    drop(sleep);
    assert_eq!(mine.stats().panicked, 1);
}

#[test]
fn a_dropped_sleep_whose_waker_panics_on_drop_does_not_stop_the_driver() {
    static LIVE: AtomicUsize = AtomicUsize::new(0);
    let timers = TimerService::new();
    let waker = std::mem::ManuallyDrop::new(bomb_waker(&LIVE));
    for delay in [Duration::from_millis(1), HOUR] {
        let mut sleep = Box::pin(timers.sleep(delay));
        assert!(sleep
            .as_mut()
            .poll(&mut Context::from_waker(&waker))
            .is_pending());
        drop(sleep); // its stored clone goes with its entry, caught
    }
    assert_driver_alive(&timers);
    // The clones' drops, on this thread or the driver's, were caught.
    assert!(wait_until(PATIENCE, || LIVE.load(SeqCst) == 1));
}

#[test]
fn a_panicking_waker_drop_is_counted_whichever_thread_frees_the_sleep() {
    static LIVE: AtomicUsize = AtomicUsize::new(0);
    // A manual clock: nothing comes due, so each sleep's stored waker is
    // dropped with its entry, by this thread (a parked sleep taken back)
    // or by the driver (a queued or filed one), and never woken.
    let timers = TimerService::builder().manual_clock().build().unwrap();
    let waker = std::mem::ManuallyDrop::new(bomb_waker(&LIVE));
    for delay in [
        Duration::from_millis(1),
        HOUR,
        Duration::from_millis(1),
        HOUR,
    ] {
        let mut sleep = Box::pin(timers.sleep(delay));
        assert!(sleep
            .as_mut()
            .poll(&mut Context::from_waker(&waker))
            .is_pending());
        drop(sleep);
    }
    assert!(wait_until(PATIENCE, || LIVE.load(SeqCst) == 1));
    let counted = wait_until(PATIENCE, || timers.stats().panicked == 4);
    assert!(counted, "{:?}", timers.stats());
    // The driver lives on: a timer made due fires.
    let ran = Arc::new(AtomicUsize::new(0));
    let count = ran.clone();
    timers
        .schedule(Duration::from_millis(1), move || {
            count.fetch_add(1, SeqCst);
        })
        .unwrap();
    timers.advance(Duration::from_millis(1)).unwrap();
    assert!(wait_until(PATIENCE, || ran.load(SeqCst) == 1));
}

#[test]
fn panics_on_every_path_add_up_in_stats() {
    let timers = TimerService::new();
    let runs = Arc::new(AtomicUsize::new(0));
    for _ in 0..10 {
        let runs = runs.clone();
        timers
            .schedule(Duration::ZERO, move || {
                runs.fetch_add(1, SeqCst);
                panic!("callback panics");
            })
            .unwrap();
        let bomb = Bomb;
        timers.schedule(HOUR, move || drop(bomb)).unwrap().cancel();
    }
    assert!(wait_until(PATIENCE, || runs.load(SeqCst) == 10));
    assert!(wait_until(PATIENCE, || timers.stats().panicked == 20));
    assert_driver_alive(&timers);
}

/// Panics with a payload that panics as it is dropped.
fn panic_with_a_bomb() {
    std::panic::panic_any(Bomb);
}

#[test]
fn a_panic_whose_payload_panics_on_drop_is_caught_too() {
    let timers = TimerService::new();
    timers.schedule(Duration::ZERO, panic_with_a_bomb).unwrap();
    timers
        .schedule_detached(Duration::ZERO, panic_with_a_bomb)
        .unwrap();
    let bomb = Bomb;
    timers.schedule(HOUR, move || drop(bomb)).unwrap().cancel();
    assert!(wait_until(PATIENCE, || timers.stats().panicked == 3));
    assert_driver_alive(&timers);
    let pending = common::polled(timers.sleep(HOUR));
    assert_eq!(timers.shutdown().unwrap().unfired, 1);
    assert!(pending.is_shut_down());
}

#[test]
fn a_waker_whose_wake_panics_with_such_a_payload_is_caught() {
    struct BombOnWake;
    impl std::task::Wake for BombOnWake {
        fn wake(self: Arc<Self>) {
            panic_with_a_bomb();
        }
    }
    let timers = TimerService::new();
    let waker = Waker::from(Arc::new(BombOnWake));
    let mut sleep = Box::pin(timers.sleep(Duration::from_millis(1)));
    assert!(sleep
        .as_mut()
        .poll(&mut Context::from_waker(&waker))
        .is_pending());
    assert!(wait_until(PATIENCE, || timers.stats().panicked == 1));
    assert_driver_alive(&timers);
}

/// Blocks as it is dropped until `release` sends (or goes).
struct Stall(mpsc::Receiver<()>, mpsc::Sender<()>);

impl Drop for Stall {
    fn drop(&mut self) {
        let _ = self.1.send(());
        let _ = self.0.recv();
    }
}

/// A capture whose drop blocks holds up only the thread that drops it: a
/// cancel drops the closure on the cancelling thread, at once, and while
/// that drop is stuck the driver fires what comes due.
#[test]
fn a_capture_whose_drop_blocks_holds_up_only_the_cancelling_thread() {
    common::within_patience(|| {
        let timers = TimerService::builder().manual_clock().build().unwrap();
        let (release, stuck) = mpsc::channel();
        let (dropping, started) = mpsc::channel();
        let stall = Stall(stuck, dropping);
        let handle = timers.schedule(HOUR, move || drop(stall)).unwrap();
        let canceller = std::thread::spawn(move || handle.cancel());
        started.recv().expect("the drop began");
        let (ran, count) = common::counter();
        timers.schedule(Duration::from_millis(1), count()).unwrap();
        timers.advance(Duration::from_millis(1)).unwrap();
        assert_eq!(ran.load(SeqCst), 1, "the driver waited for the drop");
        assert!(!canceller.is_finished(), "the drop ran elsewhere");
        release.send(()).unwrap();
        assert!(canceller.join().unwrap(), "the cancel lost");
        assert_eq!(timers.pending(), 0);
    });
}

/// Captures whose drops block a while at shutdown: the shutdown waits for
/// them and returns with every one dropped and counted unfired.
#[test]
fn captures_whose_drops_block_at_shutdown_are_waited_for_and_counted() {
    struct Slow(Arc<AtomicUsize>);
    impl Drop for Slow {
        fn drop(&mut self) {
            std::thread::sleep(Duration::from_millis(5));
            self.0.fetch_add(1, SeqCst);
        }
    }
    let timers = TimerService::new();
    let dropped = Arc::new(AtomicUsize::new(0));
    for _ in 0..4 {
        let slow = Slow(dropped.clone());
        timers.schedule(HOUR, move || drop(slow)).unwrap();
        let slow = Slow(dropped.clone());
        timers.schedule_detached(HOUR, move || drop(slow)).unwrap();
    }
    let observer = timers.clone();
    let report = timers.shutdown().unwrap();
    assert_eq!(report.unfired, 8);
    assert_eq!(
        dropped.load(SeqCst),
        8,
        "shutdown returned before the drops"
    );
    assert_eq!(observer.pending(), 0);
}

/// A closure that `max_pending` refuses is dropped by the service, which
/// catches and counts a panic in its drop, as it does for one a shutdown
/// refuses: the caller gets its `Err`, not the panic.
#[test]
fn a_closure_refused_by_the_limit_whose_capture_panics_on_drop_is_counted() {
    let timers = TimerService::builder().max_pending(0).build().unwrap();
    let bomb = Bomb;
    let refused = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        timers.schedule(HOUR, move || drop(bomb)).map(drop)
    }));
    assert!(matches!(
        refused,
        Ok(Err(wheel_sync::ScheduleError::TooManyPending { limit: 0 }))
    ));
    let bomb = Bomb;
    let refused = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        timers.schedule_detached(HOUR, move || drop(bomb))
    }));
    assert!(matches!(
        refused,
        Ok(Err(wheel_sync::ScheduleError::TooManyPending { limit: 0 }))
    ));
    assert_eq!(timers.stats().panicked, 2);
    assert_eq!(timers.pending(), 0);
}

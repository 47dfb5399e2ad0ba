//! User code never stops the driver: a panic from a callback, a waker, or
//! the drop of anything a user handed in (a closure's captures, a waker) on
//! the driver's side is caught and counted in `Stats::panicked`, on fire,
//! cancel and shutdown, and every later timer still fires; a `Sleep`'s
//! waker is dropped on its owner's thread, where its panic unwinds as in
//! any future, unless the driver's wake consumes it; and a drop that blocks holds up only
//! the thread that drops it (or a shutdown, which waits for it).
#![cfg(not(loom))]

use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
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

/// A sleep polled again with another waker drops the one it held, on the
/// polling thread: that drop's panic is the poll's, as in any future (and
/// as in tokio's `Sleep`); the new waker is stored, and nothing is lost.
#[test]
fn a_replaced_waker_whose_drop_panics_unwinds_into_the_poll() {
    static LIVE: AtomicUsize = AtomicUsize::new(0);
    let timers = TimerService::new();
    let bomb = std::mem::ManuallyDrop::new(bomb_waker(&LIVE));
    let mut sleep = Box::pin(timers.sleep(HOUR));
    assert!(poll_once(&mut sleep, &bomb).is_pending());
    assert_eq!(LIVE.load(SeqCst), 2, "the sleep holds a clone");
    let poll = catch_unwind(AssertUnwindSafe(|| poll_once(&mut sleep, Waker::noop())));
    assert!(poll.is_err(), "the replaced waker's panic is the poll's");
    assert_eq!(LIVE.load(SeqCst), 1);
    assert_eq!(timers.stats().panicked, 0, "not the driver's");
    assert!(poll_once(&mut sleep, Waker::noop()).is_pending());
    drop(sleep);
    assert_eq!(timers.pending(), 0);
    assert_driver_alive(&timers);
}

/// A sleep dropped drops its waker on the dropping thread, whoever else
/// holds its entry: its parked message taken back (the entry is the
/// sleep's alone), its message queued (the queue holds the entry), or its
/// copy filed (the driver does). A panic of that drop unwinds into the
/// dropping thread after the timer is counted out, never into the driver.
#[test]
fn a_dropped_sleeps_waker_that_panics_on_drop_unwinds_into_the_dropper_never_the_driver() {
    static LIVE: AtomicUsize = AtomicUsize::new(0);
    // A manual clock: nothing comes due unless advanced to it, so no
    // waker is woken or taken.
    let timers = TimerService::builder().manual_clock().build().unwrap();
    // The driver sleeps until this callback's tick: a sleep of an hour
    // parks or queues without waking it, so its message stays where it is
    // until the drop (short of the driver's own nap to reclaim dead
    // copies, 100 ms, far longer than a round of this loop).
    let (tx, rx) = mpsc::channel();
    timers
        .schedule(Duration::from_millis(1), move || tx.send(()).unwrap())
        .unwrap();
    timers.advance(Duration::ZERO).unwrap();
    let waker = std::mem::ManuallyDrop::new(bomb_waker(&LIVE));
    let mut unwound = Vec::new();
    for round in 0..4 {
        // The spot's 64 places fill, and the rest are queued.
        let sleeps: Vec<_> = (0..68)
            .map(|_| {
                let mut sleep = Box::pin(timers.sleep(HOUR));
                assert!(sleep
                    .as_mut()
                    .poll(&mut Context::from_waker(&waker))
                    .is_pending());
                sleep
            })
            .collect();
        if round % 2 == 1 {
            // The driver files them all: its copies hold the entries.
            timers.advance(Duration::ZERO).unwrap();
        }
        for sleep in sleeps {
            let dropped = catch_unwind(AssertUnwindSafe(move || drop(sleep)));
            unwound.push(dropped.is_err());
        }
    }
    assert!(unwound.iter().all(|&panicked| panicked), "{unwound:?}");
    assert_eq!(LIVE.load(SeqCst), 1, "every clone dropped once");
    assert_eq!(timers.pending(), 1, "the callback's timer");
    assert_eq!(timers.stats().cancelled, 4 * 68);
    assert_eq!(timers.stats().panicked, 0, "none reached the driver");
    // The driver lives on, and its drops of the filed copies and queued
    // messages dropped no waker.
    timers.advance(Duration::from_millis(1)).unwrap();
    assert!(rx.recv_timeout(PATIENCE).is_ok(), "{:?}", timers.stats());
    assert_eq!(timers.stats().panicked, 0);
    assert_eq!(timers.shutdown().unwrap().unfired, 0);
}

/// A sleep fired, reset and polled again with a waker that panics on drop
/// holds its new waker while the driver's message (or copy) holds the
/// entry: dropped, it takes the waker out and drops it on its own thread.
#[test]
fn a_sleep_re_armed_after_it_fired_drops_its_new_waker_on_its_own_thread() {
    static LIVE: AtomicUsize = AtomicUsize::new(0);
    let timers = TimerService::builder().manual_clock().build().unwrap();
    let mut sleep = Box::pin(timers.sleep(Duration::from_millis(1)));
    assert!(poll_once(&mut sleep, Waker::noop()).is_pending());
    timers.advance(Duration::from_millis(1)).unwrap();
    assert!(poll_once(&mut sleep, Waker::noop()).is_ready());
    sleep.as_mut().reset(timers.now() + HOUR);
    let bomb = std::mem::ManuallyDrop::new(bomb_waker(&LIVE));
    assert!(poll_once(&mut sleep, &bomb).is_pending());
    timers.advance(Duration::ZERO).unwrap(); // filed: the driver holds it
    let dropped = catch_unwind(AssertUnwindSafe(move || drop(sleep)));
    assert!(dropped.is_err(), "the owner's drop unwinds");
    assert_eq!(LIVE.load(SeqCst), 1);
    assert_eq!((timers.pending(), timers.stats().panicked), (0, 0));
    // The driver lives on: a timer made due fires.
    let (tx, rx) = mpsc::channel();
    timers
        .schedule(Duration::from_millis(1), move || tx.send(()).unwrap())
        .unwrap();
    timers.advance(Duration::from_millis(1)).unwrap();
    assert!(rx.recv_timeout(PATIENCE).is_ok(), "{:?}", timers.stats());
    assert_eq!(timers.stats().panicked, 0);
}

/// A sleep dropped by a callback, on the driver's thread: its waker's
/// panic unwinds into the callback, whose catch counts it, and the driver
/// carries on.
#[test]
fn a_sleep_dropped_by_a_callback_with_a_waker_that_panics_on_drop_is_counted() {
    static LIVE: AtomicUsize = AtomicUsize::new(0);
    let timers = TimerService::new();
    let mut sleep = Box::pin(timers.sleep(HOUR));
    let bomb = std::mem::ManuallyDrop::new(bomb_waker(&LIVE));
    assert!(poll_once(&mut sleep, &bomb).is_pending());
    timers
        .schedule(Duration::ZERO, move || drop(sleep))
        .unwrap();
    assert!(wait_until(PATIENCE, || timers.stats().panicked == 1));
    assert_eq!(LIVE.load(SeqCst), 1);
    assert_eq!(timers.pending(), 0);
    assert_driver_alive(&timers);
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

//! A `Sleep` that one task waits on and another holder resets, as an idle
//! timeout behind a lock is: whatever the reset does (complete it, move
//! it, or meet a shutdown), the waiting task is woken, as tokio's would
//! be; and woken by the driver, never inside the reset, so a reset made
//! under the lock the waiting task's waker takes cannot deadlock.
#![cfg(not(loom))]

use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::task::{Wake, Waker};
use std::thread::{self, ThreadId};
use std::time::Instant;

use wheel_sync::TimerService;

mod common;
use common::patiently::wait_until;
use common::{ms, poll_once, within_patience, HOUR};

/// A waker that counts its wakes and notes the thread of the last one.
#[derive(Default)]
struct Watched {
    wakes: AtomicUsize,
    thread: Mutex<Option<ThreadId>>,
}

impl Wake for Watched {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        *self.thread.lock().unwrap() = Some(thread::current().id());
        self.wakes.fetch_add(1, SeqCst);
    }
}

fn watched() -> (Arc<Watched>, Waker) {
    let watched = Arc::new(Watched::default());
    (watched.clone(), Waker::from(watched))
}

#[test]
fn a_waiting_task_is_woken_by_the_driver_when_its_sleep_is_reset_to_a_passed_deadline() {
    within_patience(|| {
        let timers = TimerService::new();
        let (watched, waker) = watched();
        let mut sleep = Box::pin(timers.sleep(HOUR));
        assert!(poll_once(&mut sleep, &waker).is_pending());
        // Another holder (here, the same thread, not polling) moves the
        // deadline to one already passed.
        sleep.as_mut().reset(Instant::now());
        assert!(
            wait_until(|| watched.wakes.load(SeqCst) > 0),
            "the task waiting on the sleep was never woken"
        );
        let woke_on = watched.thread.lock().unwrap().unwrap();
        assert_ne!(woke_on, thread::current().id(), "woken inside the reset");
        assert!(poll_once(&mut sleep, &waker).is_ready());
        assert_eq!(timers.pending(), 0);
    });
}

#[test]
fn a_reset_to_a_passed_deadline_made_under_the_lock_the_waker_takes_does_not_deadlock() {
    within_patience(|| {
        let timers = TimerService::new();
        let sleep = Arc::new(Mutex::new(Box::pin(timers.sleep(HOUR))));
        let woken = Arc::new(AtomicUsize::new(0));
        // The waiting task's waker takes the sleep's lock, as a task
        // polling it again would.
        let waker = {
            let (sleep, woken) = (sleep.clone(), woken.clone());
            common::on_wake(move || {
                drop(sleep.lock().unwrap());
                woken.fetch_add(1, SeqCst);
            })
        };
        assert!(poll_once(&mut *sleep.lock().unwrap(), &waker).is_pending());
        {
            let mut held = sleep.lock().unwrap();
            held.as_mut().reset(Instant::now());
            // Still holding the lock a moment: a wake inside the reset
            // would have deadlocked above.
            thread::sleep(ms(5));
        }
        assert!(wait_until(|| woken.load(SeqCst) == 1));
        assert!(poll_once(&mut *sleep.lock().unwrap(), &waker).is_ready());
    });
}

#[test]
fn a_sleep_reset_to_a_passed_deadline_and_dropped_at_once_is_counted_out() {
    let timers = TimerService::new();
    let (_, waker) = watched();
    for _ in 0..1_000 {
        let mut sleep = Box::pin(timers.sleep(HOUR));
        assert!(poll_once(&mut sleep, &waker).is_pending());
        sleep.as_mut().reset(Instant::now());
        assert!(poll_once(&mut sleep, &waker).is_ready());
    }
    assert!(wait_until(|| timers.pending() == 0), "{}", timers.pending());
    let stats = timers.stats();
    assert_eq!(stats.scheduled, stats.fired + stats.cancelled, "{stats:?}");
}

/// On a manual clock between two ticks, a reset to now (passed) must not
/// file the timer at the next tick, which no round reaches until someone
/// advances the clock: the waiting task is woken without an advance.
#[test]
fn a_reset_to_now_between_ticks_of_a_manual_clock_wakes_the_task_without_an_advance() {
    within_patience(|| {
        let timers = TimerService::builder().manual_clock().build().unwrap();
        timers
            .advance(std::time::Duration::from_micros(1500))
            .unwrap();
        let (watched, waker) = watched();
        let mut sleep = Box::pin(timers.sleep(HOUR));
        assert!(poll_once(&mut sleep, &waker).is_pending());
        sleep.as_mut().reset(timers.now());
        assert!(
            wait_until(|| watched.wakes.load(SeqCst) > 0),
            "woken only by an advance"
        );
        assert!(wait_until(|| timers.pending() == 0));
        let late = timers.stats().max_lateness;
        assert!(late < ms(1), "a reset's lateness is the driver's: {late:?}");
    });
}

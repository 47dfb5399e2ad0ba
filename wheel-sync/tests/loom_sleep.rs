//! loom models of a `Sleep` against the service (the ground rules of
//! `src/shared.rs`, run on the real `TimerService`, whose driver is a loom
//! thread): a wake is not lost, sleeps fired in one round all complete, a
//! registration races a shutdown, a sleep reset to a passed deadline and
//! then moved races a shutdown, and a waited-on sleep moved as the service
//! shuts down wakes its task; a parked sleep moved earlier fires, on a
//! manual clock and on the real one, whose driver leaves it parked.
//!
//! Run: `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 cargo test -p wheel-sync --release --test loom_sleep`
#![cfg(loom)]

use std::future::Future;
use std::sync::Arc as StdArc;
use std::task::{Context, Wake, Waker};
use std::time::{Duration, Instant};

use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::sync::Arc;
use loom::thread;
use wheel_sync::TimerService;

mod loom_support;
use loom_support::{counter, futures_noop_waker, model, past, wait_until, HOUR};

/// A waker that counts its wakes in a loom atomic.
struct Counting(Arc<AtomicUsize>);

impl Wake for Counting {
    fn wake(self: StdArc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &StdArc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn sleep_wake_is_not_lost() {
    model(|| {
        let timers = TimerService::new();
        loom::future::block_on(timers.sleep_until(past()));
        // The driver counts the timer out right after it marks it fired.
        wait_until(|| timers.pending() == 0);
        timers.shutdown().unwrap();
    });
}

#[test]
fn sleeps_fired_together_all_complete() {
    // Fired in one round or in two, each task is woken by the driver as it
    // fires the task's timer.
    model(|| {
        let timers = TimerService::new();
        let other = {
            let sleep = timers.sleep_until(past());
            thread::spawn(move || loom::future::block_on(sleep))
        };
        loom::future::block_on(timers.sleep_until(past()));
        other.join().unwrap();
        wait_until(|| timers.pending() == 0);
        timers.shutdown().unwrap();
    });
}

/// A sleep's first poll (its registration) racing a shutdown: taken by the
/// driver, it is abandoned and counted; refused, its poll panics and nothing is
/// counted. Either way it is shut down, and nothing is left pending.
#[test]
fn shutdown_racing_a_sleeps_registration_leaves_none_pending() {
    model(|| {
        let timers = TimerService::new();
        let producer = {
            let timers = timers.clone();
            thread::spawn(move || {
                let mut sleep = Box::pin(timers.sleep(HOUR));
                let waker = futures_noop_waker();
                let mut cx = std::task::Context::from_waker(&waker);
                let poll = std::panic::AssertUnwindSafe(|| sleep.as_mut().poll(&mut cx));
                let admitted = std::panic::catch_unwind(poll).is_ok();
                (sleep, admitted)
            })
        };
        let report = timers.shutdown().unwrap();
        let (sleep, admitted) = producer.join().unwrap();
        assert_eq!(timers.pending(), 0);
        assert!(sleep.is_shut_down(), "left pending");
        assert_eq!(report.unfired, usize::from(admitted));
    });
}

/// A sleep reset to a passed deadline (its timer moved to fire at once),
/// then reset to a later one while a shutdown runs: a re-arm or move whose
/// push the closed queue refuses is abandoned by the owner unless the
/// driver, abandoning what its wheel holds, took it first, and it is
/// counted out once. Fails (the count wraps) when the owner counts the
/// refused re-arm out without winning the move to `ABANDONED`.
#[test]
fn a_sleep_reset_as_the_service_shuts_down_is_counted_out_once() {
    model(|| {
        let timers = TimerService::builder().max_pending(4).build().unwrap();
        let before = timers.stats().rounds;
        let mut sleep = Box::pin(timers.sleep(HOUR));
        let waker = futures_noop_waker();
        assert!(sleep
            .as_mut()
            .poll(&mut std::task::Context::from_waker(&waker))
            .is_pending());
        // Parked, and most often filed by the round its park wakes.
        wait_until(|| timers.stats().rounds > before);
        sleep.as_mut().reset(past());
        let resetter = thread::spawn(move || {
            sleep.as_mut().reset(Instant::now() + HOUR);
            sleep
        });
        let report = timers.shutdown().unwrap();
        let sleep = resetter.join().unwrap();
        assert_eq!(timers.pending(), 0);
        assert!(report.unfired <= 1, "{report:?}");
        assert!(sleep.is_shut_down() || sleep.is_elapsed());
    });
}

#[test]
fn parked_sleep_moved_earlier_is_swept_and_fires() {
    // On a manual clock: an hour away, registered (parked), then moved to
    // a millisecond away, its message still parked: the reset only hurries
    // the driver, which must still take the parked message and fire it.
    model(|| {
        let timers = TimerService::builder().manual_clock().build().unwrap();
        let mut sleep = Box::pin(timers.sleep(HOUR));
        let waker = futures_noop_waker();
        let mut cx = std::task::Context::from_waker(&waker);
        assert!(sleep.as_mut().poll(&mut cx).is_pending());
        sleep
            .as_mut()
            .reset(timers.now() + Duration::from_millis(1));
        let advancer = {
            let timers = timers.clone();
            thread::spawn(move || timers.advance(Duration::from_millis(1)).unwrap())
        };
        advancer.join().unwrap();
        assert!(sleep.is_elapsed(), "advance returned before it fired");
        timers.shutdown().unwrap();
        assert_eq!(timers.stats().fired, 1);
    });
}

/// On the real clock (which loom holds at its origin): a sleep an hour
/// away is parked, and the driver, whenever it sweeps, leaves it on its
/// spot (due after the round's horizon, a `RECLAIM_EVERY` on); its owner
/// moves it to a deadline already passed, its message still parked, while
/// the driver may be going to sleep. The move lowers the place's tick, then
/// fences and wakes a driver asleep past the new tick, so the driver takes
/// the message and fires it, waking the task. Fails (the task is never
/// woken) without the lowering (`Spots::lower`).
#[test]
fn a_sleep_left_parked_and_moved_to_a_passed_deadline_fires() {
    model(|| {
        let timers = TimerService::new();
        let woken = counter();
        let waker = Waker::from(StdArc::new(Counting(woken.clone())));
        let mut cx = Context::from_waker(&waker);
        let mut sleep = Box::pin(timers.sleep(HOUR));
        assert!(sleep.as_mut().poll(&mut cx).is_pending());
        sleep.as_mut().reset(past());
        wait_until(|| woken.load(Ordering::SeqCst) == 1);
        assert!(sleep.as_mut().poll(&mut cx).is_ready());
        timers.shutdown().unwrap();
        assert_eq!(timers.stats().fired, 1);
    });
}

/// A sleep a task waits on, filed by the driver, moved by another holder
/// while the service shuts down: whoever abandons it (the driver, through
/// the copy it filed, or the holder, whose move the closed queue refused)
/// wakes the task, which then finds the sleep shut down, and it is counted
/// out once. Fails (the task is never woken) when the holder abandons the
/// timer without waking its waker.
#[test]
fn a_waited_on_sleep_moved_as_the_service_shuts_down_wakes_its_task() {
    model(|| {
        let timers = TimerService::new();
        let before = timers.stats().rounds;
        let woken = counter();
        let waker = Waker::from(StdArc::new(Counting(woken.clone())));
        let mut sleep = Box::pin(timers.sleep(HOUR));
        assert!(sleep
            .as_mut()
            .poll(&mut Context::from_waker(&waker))
            .is_pending());
        // Parked, and most often filed by the round its park wakes.
        wait_until(|| timers.stats().rounds > before);
        let holder = thread::spawn(move || {
            let later = Instant::now() + 2 * HOUR;
            sleep.as_mut().reset(later);
            sleep
        });
        let report = timers.shutdown().unwrap();
        let sleep = holder.join().unwrap();
        assert_eq!(timers.pending(), 0);
        assert_eq!(report.unfired, 1, "{report:?}");
        wait_until(|| woken.load(Ordering::SeqCst) > 0);
        assert!(sleep.is_shut_down());
    });
}

//! What a waker may do when the driver wakes it, on the driver's thread:
//! call back into its service (schedule, cancel, reset, make and poll
//! sleeps, re-arm the very sleep that woke it, ask for a shutdown), and
//! none of it stalls the driver or goes missing.
#![cfg(not(loom))]

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::task::{Poll, Wake, Waker};

use wheel_sync::{ShutdownError, Sleep, TimerHandle, TimerService};

mod common;
use common::{
    assert_adds_up, counting_waker, manual, ms, on_wake, poll_once, within_patience, HOUR,
};

/// A waker woken by the driver schedules a callback, cancels another,
/// moves a second sleep earlier and makes and polls a third: the `advance`
/// that woke it returns, and each of those takes effect at its own time.
#[test]
fn a_waker_that_schedules_cancels_and_resets_from_inside_wake_stalls_nothing() {
    within_patience(|| {
        let timers = manual();
        let start = timers.now();
        let ran = Arc::new(AtomicBool::new(false));
        let victim_ran = Arc::new(AtomicBool::new(false));
        let flag = victim_ran.clone();
        let victim = timers
            .schedule(ms(20), move || flag.store(true, SeqCst))
            .unwrap();
        let (moved_wakes, moved_waker) = counting_waker();
        let moved = Arc::new(Mutex::new(timers.sleep(HOUR)));
        assert!(poll_once(&mut *moved.lock().unwrap(), &moved_waker).is_pending());
        let (made_wakes, made_waker) = counting_waker();
        let made: Arc<Mutex<Option<Sleep>>> = Arc::default();
        let scheduled: Arc<Mutex<Option<TimerHandle>>> = Arc::default();
        let cancelled = Arc::new(Mutex::new(None));

        let waker = {
            let (timers, ran) = (timers.clone(), ran.clone());
            let (moved, made, scheduled) = (moved.clone(), made.clone(), scheduled.clone());
            let cancelled = cancelled.clone();
            on_wake(move || {
                let flag = ran.clone();
                let handle = timers.schedule(ms(1), move || flag.store(true, SeqCst));
                *scheduled.lock().unwrap() = Some(handle.unwrap());
                *cancelled.lock().unwrap() = Some(victim.cancel());
                moved.lock().unwrap().reset(timers.now() + ms(2));
                let mut sleep = timers.sleep(ms(3));
                assert!(poll_once(&mut sleep, &made_waker).is_pending());
                *made.lock().unwrap() = Some(sleep);
            })
        };
        let mut first = timers.sleep(ms(10));
        assert!(poll_once(&mut first, &waker).is_pending());
        timers.advance(ms(10)).unwrap();
        assert_eq!(*cancelled.lock().unwrap(), Some(true), "the cancel lost");
        assert!(poll_once(&mut first, Waker::noop()).is_ready());

        timers.advance(ms(1)).unwrap();
        assert!(ran.load(SeqCst), "the callback scheduled in the wake");
        timers.advance(ms(1)).unwrap();
        assert_eq!(moved_wakes.count(), 1, "the sleep reset in the wake");
        timers.advance(ms(1)).unwrap();
        assert_eq!(made_wakes.count(), 1, "the sleep made in the wake");
        timers.advance(ms(20)).unwrap();
        assert!(
            !victim_ran.load(SeqCst),
            "the callback cancelled in the wake ran"
        );
        assert_eq!(timers.now() - start, ms(33));
        assert_eq!(timers.pending(), 0);
    });
}

/// A sleep kept where its own waker can reach it, re-armed and polled
/// again by that waker (the wake consumed its registration) each time the
/// driver wakes it: the re-arm, made while the driver is waking that very
/// timer, fires again at its new deadline, every time.
#[test]
fn a_sleep_re_armed_from_inside_its_own_wake_fires_again() {
    /// Moves the sleep a millisecond on and waits on it again, `left` more
    /// times.
    struct Rearms {
        timers: TimerService,
        sleep: Mutex<Option<Sleep>>,
        woken: Mutex<u32>,
        left: Mutex<u32>,
    }
    impl Wake for Rearms {
        fn wake(self: Arc<Self>) {
            *self.woken.lock().unwrap() += 1;
            let mut left = self.left.lock().unwrap();
            if *left > 0 {
                *left -= 1;
                let mut sleep = self.sleep.lock().unwrap();
                let sleep = sleep.as_mut().unwrap();
                sleep.reset(self.timers.now() + ms(1));
                let waker = Waker::from(Arc::clone(&self));
                assert!(poll_once(sleep, &waker).is_pending());
            }
        }
    }
    within_patience(|| {
        let timers = manual();
        let rearms = Arc::new(Rearms {
            timers: timers.clone(),
            sleep: Mutex::new(Some(timers.sleep(ms(1)))),
            woken: Mutex::new(0),
            left: Mutex::new(5),
        });
        let waker = Waker::from(rearms.clone());
        let polled = poll_once(rearms.sleep.lock().unwrap().as_mut().unwrap(), &waker);
        assert!(polled.is_pending());
        for n in 1..=6 {
            timers.advance(ms(1)).unwrap();
            assert_eq!(*rearms.woken.lock().unwrap(), n, "advance {n}");
        }
        timers.advance(ms(5)).unwrap();
        assert_eq!(
            *rearms.woken.lock().unwrap(),
            6,
            "woken with no re-arm left"
        );
        let mut sleep = rearms.sleep.lock().unwrap().take().unwrap();
        assert_eq!(poll_once(&mut sleep, Waker::noop()), Poll::Ready(()));
        assert_eq!(timers.pending(), 0);
    });
}

/// A waker that asks its service to shut down, from the driver's thread,
/// is refused, as a callback is (the driver cannot join itself), and the
/// service runs on.
#[test]
fn a_shutdown_asked_for_from_inside_a_wake_is_refused_and_the_service_runs_on() {
    within_patience(|| {
        let timers = manual();
        let answer = Arc::new(Mutex::new(None));
        let waker = {
            let (timers, answer) = (timers.clone(), answer.clone());
            on_wake(move || *answer.lock().unwrap() = Some(timers.shutdown()))
        };
        let mut sleep = timers.sleep(ms(1));
        assert!(poll_once(&mut sleep, &waker).is_pending());
        drop(waker);
        timers.advance(ms(1)).unwrap();
        let answer = answer.lock().unwrap().take().expect("woken");
        assert_eq!(answer.unwrap_err(), ShutdownError::FromCallback);
        let (wakes, waker) = counting_waker();
        let mut after = timers.sleep(ms(1));
        assert!(poll_once(&mut after, &waker).is_pending());
        timers.advance(ms(1)).unwrap();
        assert_eq!(wakes.count(), 1, "the driver stopped");
        assert!(timers.shutdown().is_ok());
    });
}

/// A waker of [`a_waker_that_drops_and_moves_sleeps_due_later_in_its_own_batch`]:
/// counts its wakes; the first of all to be woken drops every third of the
/// other sleeps and moves every third 5 ms later.
struct Acting {
    index: usize,
    woken: AtomicUsize,
    sleeps: Arc<Mutex<Vec<Option<Sleep>>>>,
    first: Arc<Mutex<Option<usize>>>,
}

impl Wake for Acting {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.woken.fetch_add(1, SeqCst);
        let mut first = self.first.lock().unwrap();
        if first.is_some() {
            return;
        }
        *first = Some(self.index);
        drop(first);
        let mut sleeps = self.sleeps.lock().unwrap();
        for (j, slot) in sleeps.iter_mut().enumerate() {
            match j % 3 {
                _ if j == self.index => {}
                0 => drop(slot.take()),
                1 => {
                    let sleep = slot.as_mut().unwrap();
                    let later = sleep.deadline() + ms(5);
                    sleep.reset(later);
                }
                _ => {}
            }
        }
    }
}

/// Sleeps due at one tick fire in one batch. The first task woken drops a
/// third of the others and moves a third later, from inside its wake on
/// the driver's thread, while their copies wait further on in the same
/// batch: the driver wakes each task as it fires its timer, so none of
/// those has fired yet. Each dropped one is cancelled, each moved one fires
/// at its new deadline, the rest in this batch, and the account adds up.
#[test]
fn a_waker_that_drops_and_moves_sleeps_due_later_in_its_own_batch() {
    within_patience(|| {
        const N: usize = 30;
        let timers = manual();
        let sleeps: Arc<Mutex<Vec<Option<Sleep>>>> = Arc::new(Mutex::new(
            (0..N).map(|_| Some(timers.sleep(ms(1)))).collect(),
        ));
        let first = Arc::default();
        let wakers: Vec<Arc<Acting>> = (0..N)
            .map(|index| {
                Arc::new(Acting {
                    index,
                    woken: AtomicUsize::new(0),
                    sleeps: sleeps.clone(),
                    first: Arc::clone(&first),
                })
            })
            .collect();
        for (slot, acting) in sleeps.lock().unwrap().iter_mut().zip(&wakers) {
            let waker = Waker::from(acting.clone());
            assert!(poll_once(slot.as_mut().unwrap(), &waker).is_pending());
        }
        timers.advance(ms(1)).unwrap();
        let f = first.lock().unwrap().expect("a task was woken");
        let class = |j: usize| if j == f { 2 } else { j % 3 };
        let woken = |j: usize| wakers[j].woken.load(SeqCst);
        let of = |c| (0..N).filter(|&j| class(j) == c).count() as u64;
        for j in 0..N {
            assert_eq!(woken(j), usize::from(class(j) == 2), "sleep {j}, first {f}");
        }
        let stats = timers.stats();
        assert_eq!(
            (stats.fired, stats.cancelled, stats.pending as u64),
            (of(2), of(0), of(1)),
            "first {f}: {stats:?}"
        );
        timers.advance(ms(5)).unwrap();
        for j in 0..N {
            assert_eq!(woken(j), usize::from(class(j) != 0), "sleep {j}, first {f}");
        }
        let stats = timers.stats();
        assert_eq!(
            (stats.fired, stats.pending, stats.panicked),
            (of(2) + of(1), 0, 0)
        );
        assert_adds_up(&stats, "after the moved sleeps fired");
        // The sleeps hold the wakers that hold the sleeps: let them go.
        sleeps.lock().unwrap().clear();
    });
}

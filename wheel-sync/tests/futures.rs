//! The `Sleep` and `Timeout` futures: the latest waker is woken, and every
//! task a round fires even past a panicking waker; reset moves a deadline
//! either way and re-arms; drop cancels; a deadline of now needs no timer;
//! a timeout elapses past a busy future and lets its panic through; and all
//! of it works under a hand-rolled executor and tokio's two runtimes.
#![cfg(not(loom))]

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Poll, Wake, Waker};
use std::time::{Duration, Instant};

use wheel_sync::{Sleep, TimerService};

mod common;
use common::patiently::wait_until;
use common::{block_on, counting_waker, poll_once, CountingWaker, XorShift, HOUR, PATIENCE};

/// `n` sleeps until `deadline`, each polled once (pending) with a counting
/// waker of its own.
fn polled_once(
    timers: &TimerService,
    deadline: Instant,
    n: usize,
) -> Vec<(Pin<Box<wheel_sync::Sleep>>, Arc<CountingWaker>)> {
    (0..n)
        .map(|_| {
            let (count, waker) = counting_waker();
            let mut sleep = Box::pin(timers.sleep_until(deadline));
            assert!(poll_once(&mut sleep, &waker).is_pending());
            (sleep, count)
        })
        .collect()
}

#[test]
fn sleeps_fired_in_one_round_are_all_woken_though_none_is_polled_again() {
    // One deadline, so one round fires them all, and the driver wakes
    // each task itself as it fires its timer: polled once each and never
    // again, no task is there to pass a wake on.
    let timers = TimerService::new();
    let deadline = Instant::now() + Duration::from_millis(20);
    let mut sleeps = polled_once(&timers, deadline, 64);
    assert!(
        wait_until(|| sleeps.iter().all(|(_, count)| count.count() == 1)),
        "woken: {} of 64",
        sleeps.iter().filter(|(_, count)| count.count() > 0).count()
    );
    assert!(Instant::now() >= deadline);
    for (sleep, count) in &mut sleeps {
        let waker = Waker::from(count.clone());
        assert!(poll_once(sleep, &waker).is_ready());
    }
    assert_eq!(timers.pending(), 0);
}

/// Panics when woken.
struct PanicsOnWake;

impl Wake for PanicsOnWake {
    fn wake(self: Arc<Self>) {
        panic!("this waker panics");
    }
}

#[test]
fn a_panicking_waker_is_counted_and_the_driver_carries_on() {
    let timers = TimerService::new();
    let bad = Waker::from(Arc::new(PanicsOnWake));
    let mut alone = Box::pin(timers.sleep(Duration::from_millis(1)));
    assert!(poll_once(&mut alone, &bad).is_pending());
    assert!(wait_until(|| timers.stats().panicked == 1));
    // In a round with others, whoever wakes it: they are all still woken.
    let deadline = Instant::now() + Duration::from_millis(20);
    let mut with_others = Box::pin(timers.sleep_until(deadline));
    assert!(poll_once(&mut with_others, &bad).is_pending());
    let others = polled_once(&timers, deadline, 8);
    assert!(wait_until(|| others
        .iter()
        .all(|(_, count)| count.count() == 1)));
    assert!(wait_until(|| timers.stats().panicked == 2));
    block_on(timers.sleep(Duration::from_millis(1)));
    assert_eq!(timers.stats().fired, 11);
}

#[test]
fn sleep_wakes_only_the_latest_waker() {
    let timers = TimerService::new();
    let mut sleep = timers.sleep(HOUR);
    let (a, waker_a) = counting_waker();
    let (b, waker_b) = counting_waker();
    assert!(poll_once(&mut sleep, &waker_a).is_pending());
    assert!(poll_once(&mut sleep, &waker_b).is_pending());
    sleep.reset(Instant::now() + Duration::from_millis(2));
    assert!(
        wait_until(|| b.count() > 0),
        "the latest waker was never woken"
    );
    assert!(sleep.is_elapsed());
    assert_eq!(a.count(), 0, "a replaced waker was woken");
    assert_eq!(b.count(), 1);
    assert_eq!(poll_once(&mut sleep, &waker_a), Poll::Ready(()));
}

#[test]
fn reset_moves_a_sleep_earlier_and_later() {
    let timers = TimerService::new();

    let mut sleep = timers.sleep(HOUR);
    let soon = Instant::now() + Duration::from_millis(10);
    sleep.reset(soon);
    assert_eq!(sleep.deadline(), soon);
    block_on(&mut sleep);
    assert!(Instant::now() >= soon, "reset earlier: done early");

    let mut sleep = timers.sleep(Duration::from_millis(20));
    let later = Instant::now() + Duration::from_millis(120);
    sleep.reset(later);
    block_on(&mut sleep);
    assert!(
        Instant::now() >= later,
        "reset later: done at the old deadline"
    );
    assert_eq!(timers.pending(), 0);
}

#[test]
fn reset_after_fire_rearms() {
    let timers = TimerService::new();
    let mut sleep = timers.sleep(Duration::from_millis(1));
    block_on(&mut sleep);
    assert!(sleep.is_elapsed());
    assert_eq!(timers.pending(), 0);

    sleep.reset(Instant::now() + HOUR);
    assert!(!sleep.is_elapsed(), "reset must re-arm a fired Sleep");
    assert_eq!(timers.pending(), 1, "a re-armed Sleep counts again");
    assert!(poll_once(&mut sleep, Waker::noop()).is_pending());

    let again = Instant::now() + Duration::from_millis(5);
    sleep.reset(again);
    block_on(&mut sleep);
    assert!(Instant::now() >= again, "the re-armed Sleep fired early");
    assert_eq!(timers.pending(), 0);
    assert!(
        wait_until(|| timers.stats().fired == 2),
        "{:?}",
        timers.stats()
    );
}

#[test]
fn timeout_ok_when_the_future_wins_err_when_time_wins() {
    let timers = TimerService::new();
    assert_eq!(block_on(timers.timeout(HOUR, async { 7 })), Ok(7));
    let inner = timers.sleep(Duration::from_millis(5));
    assert_eq!(block_on(timers.timeout(HOUR, inner)), Ok(()));

    let deadline = Instant::now() + Duration::from_millis(20);
    let timeout = timers.timeout(Duration::from_millis(20), std::future::pending::<()>());
    assert!(timeout.deadline() >= deadline);
    let elapsed = block_on(timeout).unwrap_err();
    assert!(Instant::now() >= deadline, "the timeout elapsed early");
    assert_eq!(elapsed.to_string(), "deadline has elapsed");

    // A ready future wins even over a deadline that has passed.
    assert_eq!(block_on(timers.timeout(Duration::ZERO, async { 1 })), Ok(1));
    assert_eq!(timers.pending(), 0);
}

#[test]
fn timeout_at_keeps_its_deadline_and_lets_a_ready_future_win() {
    let timers = TimerService::new();
    let deadline = Instant::now() + Duration::from_millis(15);
    let mut timeout = timers.timeout_at(deadline, std::future::pending::<()>());
    assert_eq!(timeout.deadline(), deadline);
    assert_eq!(timers.pending(), 0, "no timer until it waits");
    assert!(poll_once(&mut timeout, Waker::noop()).is_pending());
    assert_eq!(timers.pending(), 1);
    assert!(block_on(timeout).is_err());
    assert!(Instant::now() >= deadline, "the timeout elapsed early");

    let past = Instant::now() - Duration::from_millis(1);
    assert_eq!(block_on(timers.timeout_at(past, async { 2 })), Ok(2));
    assert!(block_on(timers.timeout_at(past, std::future::pending::<()>())).is_err());

    let mut timeout = timers.timeout_at(Instant::now() + HOUR, std::future::ready(5));
    *timeout.get_mut() = std::future::ready(6);
    assert_eq!(block_on(timeout), Ok(6), "get_mut reaches the inner future");
    assert_eq!(timers.pending(), 0);
}

#[test]
fn dropping_sleep_and_timeout_cancels_them() {
    let timers = TimerService::new();
    let mut sleep = timers.sleep(HOUR);
    let mut timeout = timers.timeout(HOUR, std::future::pending::<()>());
    assert!(poll_once(&mut sleep, Waker::noop()).is_pending());
    assert!(poll_once(&mut timeout, Waker::noop()).is_pending());
    assert!(wait_until(|| timers.stats().scheduled == 2));
    assert_eq!(timers.pending(), 2);
    drop(sleep);
    drop(timeout);
    assert_eq!(timers.pending(), 0, "dropping must count out at once");
    assert!(
        wait_until(|| timers.stats().cancelled == 2),
        "dropped futures never counted as cancelled: {:?}",
        timers.stats()
    );
}

#[test]
fn a_dropped_sleep_releases_its_waker_while_the_driver_has_nothing_to_do() {
    // On a manual clock the driver has no reason to wake for an hour. A
    // sleep it has filed, then dropped, leaves a dead copy in its wheel
    // and wakes nobody; the task the waker holds must not wait an hour to
    // be released.
    for timers in [TimerService::new(), common::manual()] {
        let task = Arc::new(CountingWaker::default());
        let waker = Waker::from(Arc::clone(&task));
        let mut sleep = timers.sleep(HOUR);
        assert!(poll_once(&mut sleep, &waker).is_pending());
        drop(waker);
        // Every round from now on began after the sleep was submitted.
        timers.advance(Duration::ZERO).ok();
        assert!(wait_until(|| timers.stats().rounds > 0));
        drop(sleep);
        assert!(
            wait_until(|| Arc::strong_count(&task) == 1),
            "the dropped sleep still holds its task's waker"
        );
    }
}

/// A waker holds its task's memory: a sleep the driver has filed, then
/// dropped, lets go of it at once, on the dropping thread, though the
/// driver's wheel keeps the sleep's dead copy until it is due or dropped
/// with other dead ones (here the live sleeps outnumber it): dropped as it
/// waits, after a move whose message the driver has not taken yet, or
/// after a reset to a passed deadline.
#[test]
fn a_filed_sleep_dropped_lets_go_of_its_waker_at_once() {
    let timers = common::manual();
    let live: Vec<_> = (0..10)
        .map(|_| common::polled(Box::pin(timers.sleep(HOUR))))
        .collect();
    let moves: [fn(&mut Sleep, &TimerService); 3] = [
        |_, _| (),
        |sleep, timers| sleep.reset(timers.now() + 2 * HOUR),
        |sleep, timers| sleep.reset(timers.now()),
    ];
    for (i, step) in moves.into_iter().enumerate() {
        let task = Arc::new(CountingWaker::default());
        let waker = Waker::from(Arc::clone(&task));
        let mut sleep = timers.sleep(HOUR);
        assert!(poll_once(&mut sleep, &waker).is_pending());
        drop(waker);
        timers.advance(Duration::ZERO).unwrap(); // filed
        step(&mut sleep, &timers);
        drop(sleep);
        assert_eq!(
            Arc::strong_count(&task),
            1,
            "way {i}: the waker outlived the drop"
        );
        timers.advance(Duration::ZERO).unwrap();
        assert_eq!(Arc::strong_count(&task), 1, "way {i}");
    }
    assert_eq!(timers.pending(), live.len());
}

#[test]
fn futures_work_under_a_hand_rolled_executor() {
    let timers = TimerService::new();
    let deadline = Instant::now() + Duration::from_millis(3);
    block_on(async {
        timers.sleep_until(deadline).await;
        assert!(Instant::now() >= deadline);
        let slow = timers.timeout(Duration::from_millis(2), timers.sleep(HOUR));
        assert!(slow.await.is_err());
        let fast = timers.timeout(HOUR, timers.sleep(Duration::from_millis(2)));
        assert_eq!(fast.await, Ok(()));
    });
    assert_eq!(timers.pending(), 0);
}

#[test]
fn futures_work_under_tokio_current_thread() {
    let timers = TimerService::new();
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    rt.block_on(async {
        let tasks: Vec<_> = (0..20_u64)
            .map(|i| {
                let timers = timers.clone();
                tokio::spawn(async move {
                    let deadline = Instant::now() + Duration::from_micros(i * 700);
                    timers.sleep_until(deadline).await;
                    (deadline, Instant::now())
                })
            })
            .collect();
        for task in tasks {
            let (deadline, done) = task.await.unwrap();
            assert!(done >= deadline, "a sleep ended early");
        }
        let timed_out = timers.timeout(Duration::from_millis(3), std::future::pending::<()>());
        assert!(timed_out.await.is_err());
    });
    assert_eq!(timers.pending(), 0);
}

#[test]
fn futures_work_under_tokio_multi_thread() {
    let timers = TimerService::new();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .unwrap();
    let mut rng = XorShift::new(7);
    let tasks: Vec<_> = (0..500)
        .map(|i| {
            let timers = timers.clone();
            let delay = Duration::from_micros(rng.below(30_000));
            rt.spawn(async move {
                let deadline = Instant::now() + delay;
                if i % 3 == 0 {
                    let lost = timers.timeout(delay, std::future::pending::<()>()).await;
                    assert!(lost.is_err());
                } else {
                    timers.sleep(delay).await;
                }
                (deadline, Instant::now())
            })
        })
        .collect();
    rt.block_on(async {
        for task in tasks {
            let (deadline, done) = tokio::time::timeout(PATIENCE, task)
                .await
                .expect("a task was never woken")
                .unwrap();
            assert!(done >= deadline, "a sleep ended early");
        }
    });
    assert_eq!(timers.pending(), 0);
}

/// tokio's `drop_from_wake`: 100 sleeps polled with one waker that, when
/// woken, locks the list they are kept in and drops them all. The drops
/// must wake nobody (they run inside that waker, on the driver thread), so
/// the driver carries on and `advance` returns.
#[test]
fn sleeps_dropped_from_inside_a_waker_wake_no_other_task() {
    use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
    use std::sync::Mutex;

    type Sleeps = Arc<Mutex<Vec<Pin<Box<wheel_sync::Sleep>>>>>;
    /// The list, whether a wake found it locked (on its own thread), and
    /// whether one emptied it.
    struct DropsThem(Sleeps, AtomicBool, AtomicBool);
    impl Wake for DropsThem {
        fn wake(self: Arc<Self>) {
            self.wake_by_ref();
        }
        fn wake_by_ref(self: &Arc<Self>) {
            // The sleeps drop while the lock is held, as in tokio's test.
            match self.0.try_lock() {
                Ok(mut sleeps) => *sleeps = Vec::new(),
                Err(_) => self.1.store(true, SeqCst),
            }
            self.2.store(true, SeqCst);
        }
    }

    let timers = common::manual();
    let list: Sleeps = Arc::default();
    let drops = Arc::new(DropsThem(
        list.clone(),
        AtomicBool::new(false),
        AtomicBool::new(false),
    ));
    let waker = Waker::from(drops.clone());
    {
        let mut sleeps = list.lock().unwrap();
        for _ in 0..100 {
            let mut sleep = Box::pin(timers.sleep(Duration::from_millis(10)));
            assert!(poll_once(&mut sleep, &waker).is_pending());
            sleeps.push(sleep);
        }
    }
    let advancing = {
        let timers = timers.clone();
        std::thread::spawn(move || timers.advance(Duration::from_millis(11)))
    };
    assert!(
        wait_until(|| advancing.is_finished()),
        "the driver hung inside a waker"
    );
    advancing.join().unwrap().unwrap();
    assert!(
        !drops.1.load(SeqCst),
        "a waker ran inside a Sleep's drop, inside another waker"
    );
    assert!(drops.2.load(SeqCst) && list.lock().unwrap().is_empty());
    assert_eq!(timers.pending(), 0);
}

/// A sleep reset to a deadline that has passed is ready at its next poll,
/// whether or not the driver has run meanwhile (tokio's driver fires it
/// inside `reset`).
#[test]
fn a_sleep_reset_to_a_passed_deadline_is_ready_at_its_next_poll() {
    let timers = TimerService::new();
    for _ in 0..200 {
        let mut sleep = timers.sleep(HOUR);
        assert!(poll_once(&mut sleep, Waker::noop()).is_pending());
        sleep.reset(Instant::now() - Duration::from_millis(1));
        assert!(sleep.is_elapsed());
        assert_eq!(poll_once(&mut sleep, Waker::noop()), Poll::Ready(()));
    }
    assert_eq!(timers.pending(), 0);

    // tokio's `reset_sleep_to_past`, on a manual clock.
    let timers = common::manual();
    let start = timers.now();
    let (wakes, waker) = counting_waker();
    let mut sleep = timers.sleep_until(start + Duration::from_millis(100));
    assert!(poll_once(&mut sleep, &waker).is_pending());
    timers.advance(Duration::from_millis(50)).unwrap();
    assert_eq!(wakes.count(), 0);
    sleep.reset(start + Duration::from_millis(40));
    assert_eq!(poll_once(&mut sleep, &waker), Poll::Ready(()));
}

/// Reset to a passed deadline, its parked timer is taken back; reset again
/// to a later one, the timer must reach the driver once more and fire.
#[test]
fn a_sleep_reset_to_the_past_then_to_the_future_fires() {
    let timers = common::manual();
    let start = timers.now();
    let (wakes, waker) = counting_waker();
    let mut sleep = timers.sleep_until(start + HOUR);
    assert!(poll_once(&mut sleep, &waker).is_pending());
    sleep.reset(start);
    assert_eq!(poll_once(&mut sleep, &waker), Poll::Ready(()));
    sleep.reset(start + Duration::from_millis(5));
    assert!(poll_once(&mut sleep, &waker).is_pending());
    assert_eq!(timers.pending(), 1);
    timers.advance(Duration::from_millis(5)).unwrap();
    assert_eq!(wakes.count(), 1, "the re-armed timer never fired");
    assert_eq!(poll_once(&mut sleep, &waker), Poll::Ready(()));
    assert_eq!(timers.pending(), 0);
}

/// A sleep polled again with another waker drops the one it held: when
/// that drop drops the service's last clone, the shutdown it starts joins a
/// driver that abandons this very sleep. The old waker must not be dropped
/// under the sleep's waker lock, which the driver takes to abandon it.
#[test]
fn a_replaced_waker_whose_drop_ends_the_service_does_not_deadlock() {
    /// A waker holding a clone of the service: held, never used.
    struct Holds(#[allow(dead_code)] TimerService);
    impl Wake for Holds {
        fn wake(self: Arc<Self>) {}
    }
    let timers = TimerService::new();
    let holder = Arc::new(Holds(timers.clone()));
    let mut sleep = timers.sleep(HOUR);
    assert!(poll_once(&mut sleep, &Waker::from(holder)).is_pending());
    drop(timers);
    let repolled = std::thread::spawn(move || {
        // The waker held the last clone: replacing it ends the service, and
        // the poll, finding its sleep abandoned, panics, as documented.
        let poll = std::panic::AssertUnwindSafe(|| poll_once(&mut sleep, Waker::noop()));
        let panicked = std::panic::catch_unwind(poll).is_err();
        (panicked, sleep.is_shut_down())
    });
    assert!(
        wait_until(|| repolled.is_finished()),
        "the poll that replaced the waker hung"
    );
    assert_eq!(repolled.join().unwrap(), (true, true));
}

/// tokio's `immediate_sleep`, `short_sleeps`, `simultaneous_deadline_future_completion`
/// and `deadline_now_elapses`: a deadline that is the clock's present is
/// one that has passed, so the sleep or timeout completes at its first
/// poll, with no timer and without the clock moving.
#[test]
fn a_deadline_equal_to_now_completes_at_the_first_poll_with_no_timer() {
    let timers = common::manual();
    timers.advance(Duration::from_millis(5)).unwrap();
    let now = timers.now();
    let mut sleep = timers.sleep_until(now);
    assert!(sleep.is_elapsed());
    assert_eq!(poll_once(&mut sleep, Waker::noop()), Poll::Ready(()));
    let mut lost = timers.timeout_at(now, std::future::pending::<()>());
    assert!(matches!(
        poll_once(&mut lost, Waker::noop()),
        Poll::Ready(Err(_))
    ));
    let mut won = timers.timeout_at(now, std::future::ready(3));
    assert_eq!(poll_once(&mut won, Waker::noop()), Poll::Ready(Ok(3)));
    for _ in 0..1000 {
        block_on(timers.sleep(Duration::ZERO));
    }
    assert_eq!(timers.now(), now);
    assert_eq!(timers.stats().scheduled, 0, "a timer was made");
    assert_eq!(timers.pending(), 0);
}

/// tokio's `timeout_is_not_exhausted_by_future`: an inner future that is
/// never ready but wakes its task at every poll keeps the task busy; its
/// timeout still elapses.
#[test]
fn a_timeout_elapses_though_its_future_wakes_itself_at_every_poll() {
    let timers = TimerService::new();
    let deadline = Instant::now() + Duration::from_millis(2);
    let busy = std::future::poll_fn(|cx| {
        cx.waker().wake_by_ref();
        Poll::<()>::Pending
    });
    assert!(block_on(timers.timeout_at(deadline, busy)).is_err());
    assert!(Instant::now() >= deadline, "elapsed early");
    assert_eq!(timers.pending(), 0);
}

/// A timeout whose inner future panics: the panic is the poller's (the
/// service catches only what it runs itself), nothing is left half-done,
/// and dropping the timeout as the panic unwinds cancels its timer.
#[test]
fn a_timeout_whose_future_panics_lets_the_panic_through_and_its_drop_cancels_the_timer() {
    use std::panic::{catch_unwind, AssertUnwindSafe};
    let timers = TimerService::new();
    for panic_at in [1, 2] {
        let mut polls = 0;
        let inner = std::future::poll_fn(move |_| {
            polls += 1;
            assert!(polls < panic_at, "an inner future that panics");
            Poll::<()>::Pending
        });
        let mut timeout = timers.timeout(HOUR, inner);
        let poll_until_it_panics =
            AssertUnwindSafe(
                || {
                    while poll_once(&mut timeout, Waker::noop()).is_pending() {}
                },
            );
        assert!(catch_unwind(poll_until_it_panics).is_err());
        // Panicking at its second poll, the first had made the timer.
        assert_eq!(timers.pending(), panic_at - 1, "panic at poll {panic_at}");
        drop(timeout);
        assert_eq!(timers.pending(), 0, "panic at poll {panic_at}");
    }
    assert_eq!(timers.stats().cancelled, 1);
    // The driver never saw the panic: a timer still fires.
    block_on(timers.sleep(Duration::from_millis(1)));
}

//! Races on the manual clock, handles and sleeps: each takes one
//! promise of the crate docs and attacks it from several threads at once,
//! where an interleaving the authors may not have pictured could break it
//! (the clock moved from two threads, a cancel or a reset racing the round
//! that answers `advance_to_next`, a `Sleep` reset on the thread it was
//! moved to). The racy ones repeat a round on fresh services, so that a
//! rare order is met. `promised_counts.rs` attacks the accounts.
#![cfg(not(loom))]

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::{mpsc, Arc, Barrier, Mutex};
use std::task::Poll;
use std::thread;
use std::time::Duration;

use wheel_sync::TimerService;

mod common;
use common::{
    assert_adds_up, counter, counting_waker, manual, ms, poll_once, polled, XorShift, HOUR,
};

/// Rounds of each racy scenario.
const ROUNDS: usize = 200;

// ---- The manual clock, moved from several threads ----

/// Threads that move the clock at once in each scenario below: more than
/// the cores, so that one is often descheduled between finding the next
/// deadline and moving the clock to it.
const MOVERS: usize = 6;

/// `advance_to_next`: "with several threads moving the clock at once, each
/// moves it to the deadline it found". Several threads ask at once with
/// one timer pending, at 10 s: each finds 10 s (or, once it has fired,
/// nothing), so the clock ends at 10 s, never at a multiple of it.
#[test]
fn threads_advancing_to_the_next_deadline_at_once_leave_the_clock_on_it() {
    for round in 0..ROUNDS {
        let timers = manual();
        let start = timers.now();
        let (fired, make) = counter();
        timers.schedule(ms(10_000), make()).unwrap();
        let barrier = Arc::new(Barrier::new(MOVERS));
        let movers: Vec<_> = (0..MOVERS)
            .map(|_| {
                let (timers, barrier) = (timers.clone(), Arc::clone(&barrier));
                thread::spawn(move || {
                    barrier.wait();
                    timers.advance_to_next().unwrap()
                })
            })
            .collect();
        let answers: Vec<_> = movers.into_iter().map(|m| m.join().unwrap()).collect();
        let moved = timers.now() - start;
        assert_eq!(
            moved,
            ms(10_000),
            "round {round}: the clock moved past the one deadline found \
             (answers {answers:?})"
        );
        assert_eq!(fired.load(SeqCst), 1, "round {round}");
    }
}

/// `run_paused` on several threads at once, each a task sleeping 10 s:
/// each wakes with the clock at its deadline ("each at its own time"),
/// not at the sum of the threads' moves.
#[test]
fn sleeps_run_paused_on_threads_at_once_each_wake_at_their_deadline() {
    // The race is narrow: met here once in some 12 000 rounds, with other
    // tests' threads running alongside.
    for round in 0..ROUNDS {
        let timers = manual();
        let start = timers.now();
        let barrier = Arc::new(Barrier::new(MOVERS));
        let tasks: Vec<_> = (0..MOVERS)
            .map(|_| {
                let (timers, barrier) = (timers.clone(), Arc::clone(&barrier));
                thread::spawn(move || {
                    let sleep = timers.sleep(ms(10_000));
                    barrier.wait();
                    let woke = timers.run_paused(async {
                        sleep.await;
                        timers.now()
                    });
                    woke.unwrap() - start
                })
            })
            .collect();
        let woke: Vec<_> = tasks.into_iter().map(|t| t.join().unwrap()).collect();
        assert!(
            woke.iter().all(|&at| at == ms(10_000)),
            "round {round}: 10 s sleeps woke with the clock at {woke:?}"
        );
    }
}

/// The same race, met more often: threads step the clock through a
/// thousand deadlines a millisecond apart, each calling `advance_to_next`
/// until nothing is left. Each step moves the clock to a deadline found,
/// so every timer fires exactly at its deadline (no lateness on a manual
/// clock) and the clock ends on the last one.
#[test]
fn threads_stepping_through_deadlines_together_fire_each_exactly_on_time() {
    const TIMERS: u64 = 1000;
    for round in 0..5 {
        let timers = manual();
        let start = timers.now();
        for i in 1..=TIMERS {
            timers.schedule_detached(ms(i), || ()).unwrap();
        }
        let barrier = Arc::new(Barrier::new(MOVERS));
        let movers: Vec<_> = (0..MOVERS)
            .map(|_| {
                let (timers, barrier) = (timers.clone(), Arc::clone(&barrier));
                thread::spawn(move || {
                    barrier.wait();
                    while timers.advance_to_next().unwrap().is_some() {}
                })
            })
            .collect();
        movers.into_iter().for_each(|m| m.join().unwrap());
        let stats = timers.stats();
        assert_eq!(stats.fired, TIMERS, "round {round}");
        assert_eq!(
            (stats.max_lateness, timers.now() - start),
            (Duration::ZERO, ms(TIMERS)),
            "round {round}: the clock moved past a deadline found"
        );
    }
}

/// A spot's places for parked timers.
const PLACES: usize = 64;

/// "Timers submitted from any thread before the call count": a callback
/// or a sleep made on another thread (parked in that thread's spot, or
/// queued behind those parked there) is the deadline `advance_to_next`
/// moves to, and it fires there.
#[test]
fn advance_to_next_moves_to_a_deadline_another_thread_just_made() {
    let timers = manual();
    let start = timers.now();
    let (fired, make) = counter();
    let _backstop = timers.schedule(24 * HOUR, make()).unwrap();
    let (tx, rx) = mpsc::channel();
    let (ack, acked) = mpsc::channel::<()>();
    let maker = {
        let timers = timers.clone();
        thread::spawn(move || {
            // In lockstep: the clock stands still while this thread makes.
            let mut rng = XorShift::new(7);
            for i in 0..ROUNDS {
                let (fired, make) = counter();
                let delay = ms(1 + rng.below(500));
                // One of a kind, or more than a spot has places: the last
                // finds the spot full and is queued.
                let mut sleeps = Vec::new();
                let mut handles = Vec::new();
                for _ in 0..(if i % 2 == 0 { 1 } else { PLACES + 1 }) {
                    if i % 3 == 0 {
                        sleeps.push(polled(Box::pin(timers.sleep(delay))));
                    } else {
                        handles.push(timers.schedule(delay, make()).unwrap());
                    }
                }
                tx.send((timers.now() + delay, sleeps, handles, fired))
                    .unwrap();
                acked.recv().unwrap();
            }
        })
    };
    for (deadline, sleeps, handles, fired_here) in rx {
        let before = timers.now();
        let moved = timers.advance_to_next().unwrap();
        assert_eq!(moved, Some(deadline - before), "{:?}", timers.stats());
        assert_eq!(timers.now(), deadline);
        assert!(sleeps.iter().all(|s| s.is_elapsed()));
        assert!(handles.iter().all(|h| h.is_fired()));
        assert_eq!(fired_here.load(SeqCst), handles.len());
        ack.send(()).unwrap();
    }
    maker.join().unwrap();
    assert_eq!(fired.load(SeqCst), 0, "the backstop stays");
    assert!(timers.now() - start < 24 * HOUR);
}

/// `advance_to_next` racing a cancel of the earliest timer: the clock moves
/// to a deadline that was pending at some moment of the call (10 s, found
/// before the cancel, or 20 s, after it), a cancel that won means the
/// callback never runs, and the counts add up.
#[test]
fn advance_to_next_racing_a_cancel_of_the_earliest_timer_moves_to_a_pending_deadline() {
    for round in 0..ROUNDS {
        let timers = manual();
        let start = timers.now();
        let (first_ran, make_first) = counter();
        let (second_ran, make_second) = counter();
        let first = timers.schedule(ms(10_000), make_first()).unwrap();
        let second = timers.schedule(ms(20_000), make_second()).unwrap();
        if round % 2 == 0 {
            timers.advance(Duration::ZERO).unwrap(); // both filed
        }
        let barrier = Arc::new(Barrier::new(2));
        let canceller = {
            let barrier = Arc::clone(&barrier);
            thread::spawn(move || {
                barrier.wait();
                first.cancel()
            })
        };
        barrier.wait();
        let moved = timers.advance_to_next().unwrap();
        let cancelled = canceller.join().unwrap();
        let at = timers.now() - start;
        assert_eq!(moved, Some(at), "round {round}");
        assert!(
            at == ms(10_000) || (cancelled && at == ms(20_000)),
            "round {round}: moved to {at:?}, cancel won: {cancelled}"
        );
        assert_eq!(
            first_ran.load(SeqCst),
            usize::from(!cancelled),
            "round {round}: fired or cancelled, exactly one"
        );
        assert_eq!(second_ran.load(SeqCst), usize::from(at == ms(20_000)));
        assert_eq!(second.is_fired(), at == ms(20_000));
        assert_eq!(timers.pending(), usize::from(!second.is_fired()));
        assert_adds_up(&timers.stats(), &format!("round {round}"));
    }
}

/// `advance_to_next` racing a reset that moves the earliest sleep from
/// 10 s to 30 s on the thread the sleep was moved to: the clock goes to
/// 10 s (found before the move) or 20 s (the next, after it); the sleep
/// ends at 30 s all the same, woken once per time it fired, and the counts
/// add up.
#[test]
fn advance_to_next_racing_a_reset_of_the_earliest_sleep_moves_to_a_pending_deadline() {
    for round in 0..ROUNDS {
        let timers = manual();
        let start = timers.now();
        let (wakes, waker) = counting_waker();
        let mut sleep = Box::pin(timers.sleep(ms(10_000)));
        assert!(poll_once(&mut sleep, &waker).is_pending());
        let (_, make) = counter();
        let middle = timers.schedule(ms(20_000), make()).unwrap();
        if round % 2 == 0 {
            timers.advance(Duration::ZERO).unwrap(); // both filed
        }
        let barrier = Arc::new(Barrier::new(2));
        let resetter = {
            let (barrier, later) = (Arc::clone(&barrier), start + ms(30_000));
            thread::spawn(move || {
                barrier.wait();
                let fired_before = sleep.is_elapsed();
                sleep.as_mut().reset(later);
                (sleep, fired_before)
            })
        };
        barrier.wait();
        timers.advance_to_next().unwrap();
        let (mut sleep, fired_before) = resetter.join().unwrap();
        let at = timers.now() - start;
        assert!(
            at == ms(10_000) || at == ms(20_000),
            "round {round}: moved to {at:?}"
        );
        assert!(!sleep.is_elapsed(), "round {round}: reset to 30 s");
        while timers.advance_to_next().unwrap().is_some() {}
        assert_eq!(timers.now() - start, ms(30_000), "round {round}");
        assert!(middle.is_fired());
        assert!(sleep.is_elapsed(), "round {round}");
        assert_eq!(poll_once(&mut sleep, &waker), Poll::Ready(()));
        // A fire takes the waker, so the fire at 30 s after one at 10 s
        // may find none: one wake or two, never none, never more.
        assert!(
            (1..=2).contains(&wakes.count()),
            "round {round}: woken {} times, fired before the reset: {fired_before}",
            wakes.count()
        );
        assert_eq!(timers.pending(), 0, "round {round}");
        assert_adds_up(&timers.stats(), &format!("round {round}"));
    }
}

/// `advance` from two threads at once: each returns once everything due
/// by the time it made has fired, and the clock ends at the sum.
#[test]
fn advances_from_two_threads_each_return_once_their_time_has_fired() {
    for round in 0..ROUNDS {
        let timers = manual();
        let start = timers.now();
        let handles: Vec<_> = (1..=6)
            .map(|s| timers.schedule(ms(s * 1000), || ()).unwrap())
            .collect();
        let barrier = Arc::new(Barrier::new(2));
        let mover = |timers: TimerService, barrier: Arc<Barrier>, by: u64| {
            barrier.wait();
            timers.advance(ms(by)).unwrap();
            // Whatever the other did, this thread's own time has passed.
            timers.now()
        };
        let other = {
            let (timers, barrier) = (timers.clone(), Arc::clone(&barrier));
            thread::spawn(move || mover(timers, barrier, 2000))
        };
        let mine = mover(timers.clone(), barrier, 3000);
        let theirs = other.join().unwrap();
        assert_eq!(timers.now() - start, ms(5000));
        for seen in [mine, theirs] {
            let due = (seen - start).as_millis() as usize / 1000;
            assert!(
                handles[..due].iter().all(|h| h.is_fired()),
                "round {round}: not all due by {:?} fired",
                seen - start
            );
        }
        assert!(!handles[5].is_fired());
    }
}

/// A round files at most a batch of messages, and the round that answers
/// `advance_to_next` must have filed them all: with many more timers
/// queued from another thread than one round takes, the earliest (queued
/// last) is the answer.
#[test]
fn advance_to_next_answers_the_earliest_of_more_timers_than_a_round_files() {
    let timers = manual();
    let maker = {
        let timers = timers.clone();
        thread::spawn(move || {
            // Latest first: the earliest is the last message in the queue.
            (0..10_000_u64)
                .rev()
                .map(|i| timers.schedule(ms(1000 + i), || ()).unwrap())
                .collect::<Vec<_>>()
        })
    };
    let handles = maker.join().unwrap();
    assert_eq!(timers.advance_to_next(), Ok(Some(ms(1000))));
    assert!(handles[9_999].is_fired());
    assert!(!handles[9_998].is_fired());
    assert_eq!(timers.pending(), 9_999);
}

// ---- `TimerHandle`: cancel racing the fire, on other threads ----

/// Handles made on one thread, cancelled in a random order on another,
/// while a third moves the manual clock over their deadlines a millisecond
/// at a time: each callback runs or is cancelled, exactly once, and
/// `pending` and the counts come back to what is left.
#[test]
fn cancels_on_another_thread_racing_the_advancing_clock_settle_each_timer_once() {
    const N: usize = 64;
    for round in 0..ROUNDS / 4 {
        let timers = manual();
        let runs: Arc<Vec<AtomicUsize>> = Arc::new((0..N).map(|_| AtomicUsize::new(0)).collect());
        let handles: Vec<_> = {
            let (timers, runs) = (timers.clone(), Arc::clone(&runs));
            thread::spawn(move || {
                (0..N)
                    .map(|i| {
                        let runs = Arc::clone(&runs);
                        let delay = ms(1 + i as u64 % 16);
                        timers
                            .schedule(delay, move || {
                                runs[i].fetch_add(1, SeqCst);
                            })
                            .unwrap()
                    })
                    .collect()
            })
            .join()
            .unwrap()
        };
        let barrier = Arc::new(Barrier::new(2));
        let canceller = {
            let barrier = Arc::clone(&barrier);
            thread::spawn(move || {
                let mut rng = XorShift::new(round as u64);
                let mut handles: Vec<_> = handles.into_iter().enumerate().collect();
                let mut won = vec![false; N];
                barrier.wait();
                while !handles.is_empty() {
                    let (i, handle) = handles.swap_remove(rng.below(handles.len() as u64) as usize);
                    won[i] = handle.cancel();
                    assert!(!handle.cancel(), "cancelled twice");
                    assert_eq!(handle.is_cancelled(), won[i]);
                    // Dropped here, on this thread, whatever its fate.
                }
                won
            })
        };
        barrier.wait();
        for _ in 0..16 {
            timers.advance(ms(1)).unwrap();
        }
        let won = canceller.join().unwrap();
        for (i, &cancelled) in won.iter().enumerate() {
            assert_eq!(
                runs[i].load(SeqCst),
                usize::from(!cancelled),
                "round {round}, timer {i}: cancelled {cancelled}"
            );
        }
        assert_eq!(timers.pending(), 0, "round {round}");
        let stats = timers.stats();
        assert_adds_up(&stats, &format!("round {round}"));
        let cancelled = won.iter().filter(|&&c| c).count() as u64;
        assert_eq!(
            (stats.cancelled, stats.fired),
            (cancelled, N as u64 - cancelled)
        );
    }
}

/// Each due timer is claimed just before it fires, so a callback can
/// cancel one due in the same round, at the same tick or a later one: the
/// cancel wins and that callback never runs, or it ran and the cancel says
/// so.
#[test]
fn a_callback_cancelling_a_timer_due_in_the_same_round_settles_it_once() {
    for same_tick in [true, false] {
        let timers = manual();
        let slot: Arc<Mutex<Option<wheel_sync::TimerHandle>>> = Arc::default();
        let (victim_ran, make) = counter();
        let verdict = Arc::new(Mutex::new(None));
        let first = {
            let (slot, verdict) = (Arc::clone(&slot), Arc::clone(&verdict));
            timers
                .schedule(ms(1), move || {
                    let victim = slot.lock().unwrap().take().unwrap();
                    *verdict.lock().unwrap() = Some(victim.cancel());
                })
                .unwrap()
        };
        let victim = timers
            .schedule(if same_tick { ms(1) } else { ms(2) }, make())
            .unwrap();
        *slot.lock().unwrap() = Some(victim);
        timers.advance(ms(5)).unwrap();
        assert!(first.is_fired());
        let cancelled = verdict.lock().unwrap().expect("the first callback ran");
        if !same_tick {
            assert!(cancelled, "a timer due later in the round is still pending");
        }
        assert_eq!(victim_ran.load(SeqCst), usize::from(!cancelled));
        assert_eq!(timers.pending(), 0);
        assert_adds_up(&timers.stats(), "after the round");
    }
}

/// A handle outlives its service, on another thread: it says its callback
/// was cancelled (abandoned), a cancel is refused, and a fired one stays
/// fired; dropping them there is harmless.
#[test]
fn handles_outliving_their_service_report_its_end_on_any_thread() {
    let timers = manual();
    let (ran, make) = counter();
    let fired = timers.schedule(ms(1), make()).unwrap();
    let pending = timers.schedule(HOUR, make()).unwrap();
    timers.advance(ms(1)).unwrap();
    drop(timers); // the last clone: the service ends
    thread::spawn(move || {
        assert!(fired.is_fired() && !fired.is_cancelled());
        assert!(pending.is_cancelled() && !pending.is_fired());
        assert!(!pending.cancel() && !fired.cancel());
    })
    .join()
    .unwrap();
    assert_eq!(ran.load(SeqCst), 1);
}

// ---- `Sleep::reset` on the thread a sleep moved to ----

/// A sleep polled on one thread, moved to another and reset there again
/// and again, earlier and later and to the same deadline, while the clock
/// moves: it is never complete before its deadline, and after the last
/// reset it fires once, at that deadline.
#[test]
fn a_sleep_reset_again_and_again_on_the_thread_it_moved_to_fires_at_its_last_deadline() {
    for round in 0..ROUNDS / 4 {
        let timers = manual();
        let (wakes, waker) = counting_waker();
        let mut sleep = Box::pin(timers.sleep(ms(20)));
        assert!(poll_once(&mut sleep, &waker).is_pending());
        let done = Arc::new(AtomicBool::new(false));
        let resetter = {
            let (timers, done) = (timers.clone(), Arc::clone(&done));
            thread::spawn(move || {
                let mut rng = XorShift::new(round as u64 + 1);
                let mut last = sleep.deadline();
                for _ in 0..300 {
                    let deadline = match rng.below(3) {
                        0 => last, // the same again
                        _ => timers.now() + ms(1 + rng.below(30)),
                    };
                    sleep.as_mut().reset(deadline);
                    last = deadline;
                    if sleep.is_elapsed() {
                        assert!(timers.now() >= deadline, "round {round}: complete early");
                    }
                }
                done.store(true, SeqCst);
                (sleep, last)
            })
        };
        while !done.load(SeqCst) {
            timers.advance(ms(1)).unwrap();
        }
        let (mut sleep, last) = resetter.join().unwrap();
        // The last reset may have come after the last advance's round began.
        timers.advance(Duration::ZERO).unwrap();
        let still_due = !sleep.is_elapsed();
        if still_due {
            assert!(last > timers.now(), "round {round}: due, not fired");
        }
        while timers.advance_to_next().unwrap().is_some() {}
        assert!(sleep.is_elapsed(), "round {round}");
        if still_due {
            // The clock stopped at its last deadline (whole milliseconds).
            assert_eq!(timers.now(), last, "round {round}");
            assert!(wakes.count() >= 1);
        }
        assert_eq!(poll_once(&mut sleep, &waker), Poll::Ready(()));
        assert_eq!(timers.pending(), 0, "round {round}");
        drop(sleep);
        assert_adds_up(&timers.stats(), &format!("round {round}"));
    }
}

/// Reset to the deadline it already has, many times, between rounds: one
/// timer, one fire, one wake, counted once.
#[test]
fn a_sleep_reset_to_its_own_deadline_fires_once() {
    let timers = manual();
    let (wakes, waker) = counting_waker();
    let mut sleep = Box::pin(timers.sleep(ms(10)));
    assert!(poll_once(&mut sleep, &waker).is_pending());
    let deadline = sleep.deadline();
    for i in 0..1000 {
        sleep.as_mut().reset(deadline);
        if i % 100 == 0 {
            timers.advance(Duration::ZERO).unwrap();
        }
    }
    assert_eq!(timers.pending(), 1);
    timers.advance(ms(10)).unwrap();
    assert_eq!(wakes.count(), 1);
    assert_eq!(poll_once(&mut sleep, &waker), Poll::Ready(()));
    let stats = timers.stats();
    assert_eq!((stats.scheduled, stats.fired, stats.cancelled), (1, 1, 0));
}

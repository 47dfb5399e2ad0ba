//! Trying to break the driver's horizon on a manual clock (where the
//! driver takes every parked timer), and on coarse and fine ticks.
#![cfg(not(loom))]

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{mpsc, Arc, Mutex};
use std::task::Waker;
use std::thread;
use std::time::{Duration, Instant};

use wheel_sync::{Sleep, TimerService};

mod common;
use common::horizon::*;
use common::{
    assert_adds_up, counting_waker, manual, ms, poll_once, report_to, CountingWaker, LATE_BOUND,
};

/// A manual clock stepped over timers parked by several threads that then
/// exited: `advance` by zero and by less than a tick fires nothing not due;
/// each `advance_to_next` lands on a deadline and, when it returns, exactly
/// the timers due by then have fired, in deadline order, and the sleeps due
/// by then are complete; years-long timers fire at their year; a deadline
/// the clock cannot count stays pending through a 200-year advance.
#[test]
fn a_manual_clock_steps_over_timers_parked_by_several_threads() {
    let timers = manual();
    let start = timers.now();
    let fired = Arc::new(Mutex::new(Vec::<(usize, Instant)>::new()));
    let (sleep_tx, sleep_rx) = mpsc::channel();
    let mut deadlines = Vec::new();
    for t in 0..4usize {
        for k in 0..6usize {
            deadlines.push((t * 100 + k, start + ms(1 + 7 * k as u64 + t as u64)));
        }
        deadlines.push((t * 100 + 50, start + YEAR * (t as u32 + 1)));
    }
    let threads: Vec<_> = (0..4usize)
        .map(|t| {
            let (timers, fired, sleep_tx) = (timers.clone(), fired.clone(), sleep_tx.clone());
            let mine: Vec<_> = deadlines
                .iter()
                .copied()
                .filter(|(id, _)| id / 100 == t)
                .collect();
            thread::spawn(move || {
                for (id, deadline) in mine {
                    let fired = fired.clone();
                    timers
                        .schedule_at(deadline, move || {
                            fired.lock().unwrap().push((id, deadline));
                        })
                        .unwrap();
                }
                timers.schedule(Duration::MAX, || panic!("never")).unwrap();
                let deadline = start + ms(3 + 10 * t as u64);
                let (wakes, waker) = counting_waker();
                let mut sleep = timers.sleep_until(deadline);
                assert!(poll_once(&mut sleep, &waker).is_pending());
                sleep_tx.send((deadline, sleep, wakes)).unwrap();
            })
        })
        .collect();
    drop(sleep_tx);
    threads.into_iter().for_each(|t| t.join().unwrap());
    let mut sleeps: Vec<_> = sleep_rx.iter().collect();
    let total = deadlines.len() + 4 + sleeps.len();
    assert_eq!(timers.pending(), total);

    let check = |sleeps: &mut Vec<(Instant, Sleep, Arc<CountingWaker>)>, what: &str| {
        let now = timers.now();
        let fired = fired.lock().unwrap();
        let due: HashSet<usize> = deadlines
            .iter()
            .filter(|(_, d)| *d <= now)
            .map(|(id, _)| *id)
            .collect();
        let got: HashSet<usize> = fired.iter().map(|(id, _)| *id).collect();
        assert_eq!(got.len(), fired.len(), "{what}: a timer fired twice");
        assert_eq!(got, due, "{what}: at {:?}", now - start);
        assert!(
            fired.windows(2).all(|w| w[0].1 <= w[1].1),
            "{what}: out of deadline order: {fired:?}"
        );
        for (deadline, sleep, wakes) in sleeps.iter_mut() {
            let passed = *deadline <= now;
            assert_eq!(sleep.is_elapsed(), passed, "{what}: a sleep");
            assert_eq!(wakes.count() == 1, passed, "{what}: a sleep's wakes");
            let waker = Waker::from(wakes.clone());
            assert_eq!(poll_once(sleep, &waker).is_ready(), passed);
        }
    };
    timers.advance(Duration::ZERO).unwrap();
    check(&mut sleeps, "advance(0)");
    timers.advance(Duration::from_nanos(1)).unwrap();
    check(&mut sleeps, "advance(1 ns)");
    timers.advance(Duration::from_nanos(999_998)).unwrap();
    check(&mut sleeps, "advance to 1 ms less 1 ns");
    timers.advance(Duration::from_nanos(1)).unwrap();
    assert_eq!(timers.now() - start, ms(1));
    check(&mut sleeps, "advance to 1 ms");
    let mut steps = 0;
    while let Some(moved) = timers.advance_to_next().unwrap() {
        steps += 1;
        assert!(steps < 100, "advance_to_next does not end");
        let now = timers.now();
        assert!(
            deadlines.iter().any(|(_, d)| *d == now) || sleeps.iter().any(|(d, _, _)| *d == now),
            "moved {moved:?} to {:?}, no deadline",
            now - start
        );
        check(&mut sleeps, "advance_to_next");
    }
    assert_eq!(timers.now() - start, YEAR * 4);
    assert_eq!(fired.lock().unwrap().len(), deadlines.len());
    assert_eq!(timers.pending(), 4, "only the four that never come");
    timers.advance(YEAR * 200).unwrap();
    assert_eq!(timers.pending(), 4);
    assert_eq!(timers.advance_to_next().unwrap(), None);
    let s = timers.stats();
    assert_eq!(s.fired, (total - 4) as u64, "{s:?}");
    assert_eq!(s.panicked, 0);
    assert_adds_up(&s, "manual clock");
}

/// On a manual clock, callbacks parked by several threads due now fire in
/// an `advance` by zero; those a nanosecond out (a tick out, rounded up)
/// fire neither then nor in an advance to a nanosecond short of that tick,
/// only in the one that reaches it.
#[test]
fn advances_by_zero_and_by_less_than_a_tick_fire_exactly_what_is_due() {
    let timers = manual();
    let now_count = Arc::new(AtomicUsize::new(0));
    let later_count = Arc::new(AtomicUsize::new(0));
    let threads: Vec<_> = (0..3)
        .map(|_| {
            let timers = timers.clone();
            let (now_count, later_count) = (now_count.clone(), later_count.clone());
            thread::spawn(move || {
                for _ in 0..3 {
                    let c = now_count.clone();
                    timers
                        .schedule(Duration::ZERO, move || {
                            c.fetch_add(1, SeqCst);
                        })
                        .unwrap();
                    let c = later_count.clone();
                    timers
                        .schedule(Duration::from_nanos(1), move || {
                            c.fetch_add(1, SeqCst);
                        })
                        .unwrap();
                }
                let (wakes, waker) = counting_waker();
                let mut sleep = timers.sleep(Duration::from_nanos(1));
                assert!(poll_once(&mut sleep, &waker).is_pending());
                (sleep, wakes)
            })
        })
        .collect();
    let sleeps: Vec<_> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    timers.advance(Duration::ZERO).unwrap();
    assert_eq!(now_count.load(SeqCst), 9);
    assert_eq!(later_count.load(SeqCst), 0);
    timers.advance(Duration::from_nanos(999_999)).unwrap();
    assert_eq!(later_count.load(SeqCst), 0, "fired before its tick");
    assert!(sleeps
        .iter()
        .all(|(s, w)| !s.is_elapsed() && w.count() == 0));
    timers.advance(Duration::from_nanos(1)).unwrap();
    assert_eq!(later_count.load(SeqCst), 9);
    assert!(sleeps.iter().all(|(s, w)| s.is_elapsed() && w.count() == 1));
    assert_eq!(timers.pending(), 0);
    assert_eq!(timers.stats().fired, 21);
}

/// A coarse tick (250 ms, longer than the horizon) and a fine one (1 µs):
/// callbacks parked beyond the horizon by a thread that exits fire never
/// early, and no later than a tick plus the usual slack.
#[test]
fn parked_timers_beyond_the_horizon_on_coarse_and_fine_ticks() {
    for tick in [ms(250), Duration::from_micros(1)] {
        let timers = TimerService::builder().tick(tick).build().unwrap();
        let (tx, rx) = mpsc::channel();
        thread::spawn({
            let timers = timers.clone();
            move || {
                for (k, after) in [260, 330, 470, 610].into_iter().enumerate() {
                    let deadline = Instant::now() + ms(after);
                    timers
                        .schedule_at(deadline, report_to(&tx, k, deadline))
                        .unwrap();
                }
            }
        })
        .join()
        .unwrap();
        collect_on_time(&rx, 4, tick + LATE_BOUND);
        assert_eq!(timers.pending(), 0, "tick {tick:?}");
    }
}

//! Trying to break the driver's horizon with more threads than spots:
//! threads sharing a spot park, cancel and clone the service, and the
//! accounting stays exact.
#![cfg(not(loom))]

use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{mpsc, Arc, Barrier, Mutex};
use std::task::Waker;
use std::thread;
use std::time::Instant;

use wheel_sync::{Sleep, TimerHandle, TimerService};

mod common;
use common::horizon::*;
use common::{assert_adds_up, ms, poll_once, report_to, HOUR, LATE_BOUND};

/// More threads than spots (100 on 64), all at once: each parks far
/// callbacks and sleeps and near callbacks, cancels half its far callbacks,
/// and cancels the other half of those of the thread 64 after it (which
/// shares its spot), while its own are cancelled by the thread 64 before.
/// Afterwards the counts are exact: every far callback's closure dropped
/// by its cancel, the near ones fired once on time, the sleeps kept still
/// pending, and `Stats` adds up before and after they go.
#[test]
fn more_threads_than_spots_park_and_cancel_with_exact_accounting() {
    const THREADS: usize = 100;
    const FAR: usize = 8;
    const NEAR: usize = 2;
    const SLEEPS: usize = 4;
    let timers = TimerService::new();
    let barrier = Arc::new(Barrier::new(THREADS));
    let exchange: Arc<Vec<Mutex<Vec<TimerHandle>>>> =
        Arc::new((0..THREADS).map(|_| Mutex::new(Vec::new())).collect());
    let dropped = Arc::new(AtomicUsize::new(0));
    let (tx, rx) = mpsc::channel();
    let threads: Vec<_> = (0..THREADS)
        .map(|i| {
            let (timers, barrier, exchange) = (timers.clone(), barrier.clone(), exchange.clone());
            let (dropped, tx) = (dropped.clone(), tx.clone());
            thread::spawn(move || {
                barrier.wait();
                let mut far: Vec<TimerHandle> = (0..FAR)
                    .map(|_| {
                        let counted = Counted(dropped.clone());
                        timers.schedule(HOUR, move || drop(counted)).unwrap()
                    })
                    .collect();
                let near: Vec<TimerHandle> = (0..NEAR)
                    .map(|k| {
                        let deadline = Instant::now() + HORIZON + ms(100 + (i % 50) as u64);
                        let id = i * NEAR + k;
                        timers
                            .schedule_at(deadline, report_to(&tx, id, deadline))
                            .unwrap()
                    })
                    .collect();
                let mut sleeps: Vec<Sleep> = (0..SLEEPS)
                    .map(|_| {
                        let mut sleep = timers.sleep(HOUR);
                        assert!(poll_once(&mut sleep, Waker::noop()).is_pending());
                        sleep
                    })
                    .collect();
                for handle in far.drain(..FAR / 2) {
                    assert!(handle.cancel(), "thread {i}: own cancel lost");
                }
                *exchange[i].lock().unwrap() = far;
                barrier.wait();
                let theirs = std::mem::take(&mut *exchange[(i + 64) % THREADS].lock().unwrap());
                assert_eq!(theirs.len(), FAR / 2);
                for handle in theirs {
                    assert!(handle.cancel(), "thread {i}: a neighbour's cancel lost");
                    assert!(!handle.cancel());
                }
                sleeps.truncate(SLEEPS / 2);
                (near, sleeps)
            })
        })
        .collect();
    drop(tx);
    let mut kept_sleeps = Vec::new();
    let mut near = Vec::new();
    for thread in threads {
        let (n, s) = thread.join().unwrap();
        near.extend(n);
        kept_sleeps.extend(s);
    }
    assert_eq!(
        dropped.load(SeqCst),
        THREADS * FAR,
        "closures left undropped"
    );
    let seen = collect_on_time(&rx, THREADS * NEAR, LATE_BOUND);
    assert_eq!(seen.len(), THREADS * NEAR);
    assert!(near.iter().all(TimerHandle::is_fired));
    let kept = THREADS * SLEEPS / 2;
    assert_eq!(timers.pending(), kept, "{:?}", timers.stats());
    let s = timers.stats();
    let total = (THREADS * (FAR + NEAR + SLEEPS)) as u64;
    let cancelled = (THREADS * (FAR + SLEEPS / 2)) as u64;
    assert_eq!(
        (s.scheduled, s.fired, s.cancelled, s.pending),
        (total, (THREADS * NEAR) as u64, cancelled, kept),
        "{s:?}"
    );
    assert!(kept_sleeps.iter().all(|s| !s.is_elapsed()));
    drop(kept_sleeps);
    assert_eq!(timers.pending(), 0);
    let s = timers.stats();
    assert_eq!(s.cancelled, cancelled + kept as u64, "{s:?}");
    assert_adds_up(&s, "more threads than spots");
}

/// More threads than spots (130) each hold a clone of the service, make
/// and drop clones of it in a loop and park a far timer, while a clone on
/// the main thread is kept: the service never ends early (every schedule is
/// accepted, every far timer still pending); once the kept clone goes too,
/// it ends, and every parked closure is dropped.
#[test]
fn clone_churn_on_more_threads_than_spots_never_ends_the_service_early() {
    const THREADS: usize = 130;
    let dropped = Arc::new(AtomicUsize::new(0));
    let keeper = TimerService::new();
    let barrier = Arc::new(Barrier::new(THREADS));
    let threads: Vec<_> = (0..THREADS)
        .map(|_| {
            let (timers, dropped, barrier) = (keeper.clone(), dropped.clone(), barrier.clone());
            thread::spawn(move || {
                barrier.wait();
                let counted = Counted(dropped.clone());
                let handle = timers.schedule(HOUR, move || drop(counted)).unwrap();
                for _ in 0..50 {
                    let a = timers.clone();
                    let b = a.clone();
                    drop(a);
                    let counted = Counted(dropped.clone());
                    assert!(b.schedule(HOUR, move || drop(counted)).unwrap().cancel());
                    drop(b);
                }
                drop(timers);
                handle
            })
        })
        .collect();
    let handles: Vec<TimerHandle> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    assert_eq!(dropped.load(SeqCst), THREADS * 50, "only the cancelled");
    assert!(handles.iter().all(|h| !h.is_cancelled() && !h.is_fired()));
    assert_eq!(keeper.pending(), THREADS);
    let probe = keeper.schedule(ms(1), || ());
    assert!(probe.is_ok(), "the service ended with a clone left");
    drop(keeper);
    assert_eq!(dropped.load(SeqCst), THREADS * 51);
    assert!(handles.iter().all(|h| h.is_cancelled()));
}

/// Requests answered in any order on more threads than spots (100 threads,
/// so spots are shared): each thread keeps two in flight, an hour out, and
/// ends one at random as it makes the next. The driver is handed next to
/// none of them (a spot's threads keep few places taken, and a park looks
/// at eight); the counts are exact.
#[test]
fn requests_answered_in_any_order_on_shared_spots_stay_off_the_driver() {
    const THREADS: usize = 100;
    const REQUESTS: usize = 200;
    let timers = TimerService::new();
    let barrier = Arc::new(Barrier::new(THREADS));
    let threads: Vec<_> = (0..THREADS)
        .map(|t| {
            let (timers, barrier) = (timers.clone(), barrier.clone());
            thread::spawn(move || {
                let mut rng = common::XorShift::new(7 + t as u64);
                barrier.wait();
                let mut in_flight: Vec<TimerHandle> = Vec::new();
                let mut sleeps: Vec<Sleep> = Vec::new();
                for n in 0..REQUESTS {
                    if n % 2 == 0 {
                        in_flight.push(timers.schedule(HOUR, || unreachable!()).unwrap());
                    } else {
                        let mut sleep = timers.sleep(HOUR);
                        assert!(poll_once(&mut sleep, Waker::noop()).is_pending());
                        sleeps.push(sleep);
                    }
                    if in_flight.len() + sleeps.len() > 2 {
                        let i = rng.below(3) as usize;
                        if i < in_flight.len() {
                            assert!(in_flight.swap_remove(i).cancel());
                        } else {
                            drop(sleeps.swap_remove(i - in_flight.len()));
                        }
                    }
                }
                for handle in in_flight {
                    assert!(handle.cancel());
                }
            })
        })
        .collect();
    threads.into_iter().for_each(|t| t.join().unwrap());
    assert_eq!(timers.pending(), 0);
    let s = timers.stats();
    let total = (THREADS * REQUESTS) as u64;
    assert_eq!(
        (s.scheduled, s.cancelled, s.fired),
        (total, total, 0),
        "{s:?}"
    );
    assert!(
        s.max_filed_per_round <= 16,
        "the driver filed {} in a round: {s:?}",
        s.max_filed_per_round
    );
}

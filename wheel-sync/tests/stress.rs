//! Stress: several threads schedule and cancel a hundred thousand timers with
//! random deadlines, shut a busy service down, run thousands of sleeps and
//! timeouts on a multi-threaded tokio runtime, and fire a burst of a hundred
//! thousand detached callbacks. Every timer is accounted
//! for through per-timer flags: it ran exactly once and never early, or its
//! cancel won, or shutdown dropped it unrun; and the counters agree.
//!
//! Each test is bounded in time (seconds on two busy cores) and scales down
//! under `cfg!(miri)`.
#![cfg(not(loom))]

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use wheel_sync::{ScheduleError, TimerHandle, TimerService};

mod common;
use common::{wait_until, XorShift};

/// How long the driver may take to finish once the work is submitted.
const PATIENCE: Duration = Duration::from_secs(20);
/// How long its counters may lag once no timer is pending.
const CATCH_UP: Duration = Duration::from_secs(5);

/// The callback ran.
const RAN: u8 = 1;
/// It ran before its deadline.
const EARLY: u8 = 1 << 1;
/// It ran a second time.
const TWICE: u8 = 1 << 2;
/// `cancel()` returned true.
const CANCEL_WON: u8 = 1 << 3;
/// `cancel()` returned false.
const CANCEL_LOST: u8 = 1 << 4;
/// The closure was dropped (after running, or unrun).
const DROPPED: u8 = 1 << 5;
/// The closure was dropped a second time.
const DROPPED_TWICE: u8 = 1 << 6;

/// One flag byte per timer.
type Flags = Arc<Vec<AtomicU8>>;

fn flags(n: usize) -> Flags {
    Arc::new((0..n).map(|_| AtomicU8::new(0)).collect())
}

/// Sets `flag` on timer `index`; sets `again` too if `flag` was already set.
fn mark(flags: &Flags, index: usize, flag: u8, again: u8) {
    if flags[index].fetch_or(flag, SeqCst) & flag != 0 {
        flags[index].fetch_or(again, SeqCst);
    }
}

/// A timer's callback: records that it ran, and whether early; records its
/// own drop, run or not.
struct Tracked {
    flags: Flags,
    index: usize,
    deadline: Instant,
}

impl Tracked {
    fn run(self) {
        let early = Instant::now() < self.deadline;
        mark(&self.flags, self.index, RAN, TWICE);
        if early {
            self.flags[self.index].fetch_or(EARLY, SeqCst);
        }
    }
}

impl Drop for Tracked {
    fn drop(&mut self) {
        mark(&self.flags, self.index, DROPPED, DROPPED_TWICE);
    }
}

/// Schedules `tracked` by delay or by deadline, alternately; `deadline` is
/// taken before the service reads the clock, so it bounds its own from below.
fn schedule(
    timers: &TimerService,
    flags: &Flags,
    index: usize,
    delay: Duration,
) -> Result<TimerHandle, ScheduleError> {
    let deadline = Instant::now() + delay;
    let tracked = Tracked {
        flags: flags.clone(),
        index,
        deadline,
    };
    if index % 2 == 0 {
        timers.schedule(delay, move || tracked.run())
    } else {
        timers.schedule_at(deadline, move || tracked.run())
    }
}

/// Up to this many timers per callback stress thread.
const STORM_PER_THREAD: usize = if cfg!(miri) { 64 } else { 32_768 };
const STORM_THREADS: usize = 4;

#[test]
fn schedule_cancel_storm_accounts_for_every_timer() {
    const TOTAL: usize = STORM_THREADS * STORM_PER_THREAD;
    let timers = TimerService::new();
    let flags = flags(TOTAL);
    let barrier = Arc::new(Barrier::new(STORM_THREADS));
    let started = Instant::now();
    let workers: Vec<_> = (0..STORM_THREADS)
        .map(|t| {
            let timers = timers.clone();
            let flags = flags.clone();
            let barrier = barrier.clone();
            thread::spawn(move || {
                let mut rng = XorShift::new(t as u64 + 1);
                // Cancels come due at a random later iteration, so they land
                // anywhere from long before a deadline to well after it.
                let mut doomed = BinaryHeap::new();
                let mut handles: Vec<Option<TimerHandle>> = Vec::with_capacity(STORM_PER_THREAD);
                let cancel = |i: usize, handles: &mut Vec<Option<TimerHandle>>| {
                    let handle = handles[i].take().expect("cancelled once");
                    let flag = if handle.cancel() {
                        CANCEL_WON
                    } else {
                        CANCEL_LOST
                    };
                    flags[t * STORM_PER_THREAD + i].fetch_or(flag, SeqCst);
                };
                let mut last_deadline = Instant::now();
                barrier.wait();
                for i in 0..STORM_PER_THREAD {
                    let index = t * STORM_PER_THREAD + i;
                    let delay = Duration::from_micros(rng.below(50_001));
                    last_deadline = last_deadline.max(Instant::now() + delay);
                    let handle = schedule(&timers, &flags, index, delay).unwrap();
                    handles.push(Some(handle));
                    if rng.below(2) == 0 {
                        doomed.push(Reverse((i + rng.below(4_096) as usize, i)));
                    }
                    while let Some(&Reverse((at, doomed_i))) = doomed.peek() {
                        if at > i {
                            break;
                        }
                        doomed.pop();
                        cancel(doomed_i, &mut handles);
                    }
                    // Spread the submissions over time, so deadlines and
                    // cancels keep meeting the driver at every stage.
                    if i % 512 == 511 {
                        thread::sleep(Duration::from_millis(1));
                    }
                }
                for Reverse((_, doomed_i)) in doomed {
                    cancel(doomed_i, &mut handles);
                }
                last_deadline
            })
        })
        .collect();
    let last_deadline = workers
        .into_iter()
        .map(|w| w.join().unwrap())
        .max()
        .unwrap();
    let submitted_in = started.elapsed();

    let settle = last_deadline.saturating_duration_since(Instant::now()) + PATIENCE;
    assert!(
        wait_until(settle, || timers.pending() == 0),
        "pending() stuck at {} after the last deadline",
        timers.pending()
    );
    let caught_up = wait_until(CATCH_UP, || {
        let s = timers.stats();
        s.fired + s.cancelled >= TOTAL as u64
    });
    let stats = timers.stats();
    // Joins the driver: no callback is still running after this.
    let report = timers.shutdown().unwrap();
    assert_eq!(report.unfired, 0, "{report:?}");

    let (mut ran, mut cancelled) = (0_u64, 0_u64);
    for (index, flag) in flags.iter().enumerate() {
        let f = flag.load(SeqCst);
        let context = format!("timer {index}: flags {f:#09b}");
        assert_eq!(f & (EARLY | TWICE | DROPPED_TWICE), 0, "{context}");
        assert!(f & RAN != 0 || f & CANCEL_WON != 0, "{context}: lost");
        assert!(
            f & RAN == 0 || f & CANCEL_WON == 0,
            "{context}: ran after cancel() won"
        );
        assert!(
            f & CANCEL_LOST == 0 || f & RAN != 0,
            "{context}: cancel() lost, never ran"
        );
        ran += u64::from(f & RAN != 0);
        cancelled += u64::from(f & CANCEL_WON != 0);
    }
    assert!(ran > 0 && cancelled > 0, "ran {ran}, cancelled {cancelled}");
    assert!(
        stats.max_lateness < Duration::from_secs(5),
        "{stats:?} (submitted in {submitted_in:?})"
    );
    assert_eq!(stats.scheduled, TOTAL as u64, "{stats:?}");
    assert!(
        caught_up && stats.fired == ran && stats.cancelled == cancelled,
        "counters disagree with the callbacks: ran {ran}, cancel() won {cancelled}, \
         fired + cancelled should be {TOTAL}: {stats:?}"
    );
}

#[test]
fn shutdown_under_load_accounts_for_every_callback() {
    const THREADS: usize = 4;
    const PER_THREAD: usize = if cfg!(miri) { 64 } else { 20_000 };
    const TOTAL: usize = THREADS * PER_THREAD;
    let timers = TimerService::new();
    let flags = flags(TOTAL);
    // 0: not attempted, 1: admitted, 2: refused with Shutdown.
    let results: Arc<Vec<AtomicU8>> = Arc::new((0..TOTAL).map(|_| AtomicU8::new(0)).collect());
    let attempted = Arc::new(AtomicUsize::new(0));
    let barrier = Arc::new(Barrier::new(THREADS + 1));
    let workers: Vec<_> = (0..THREADS)
        .map(|t| {
            let timers = timers.clone();
            let flags = flags.clone();
            let results = results.clone();
            let attempted = attempted.clone();
            let barrier = barrier.clone();
            thread::spawn(move || {
                let mut rng = XorShift::new(50 + t as u64);
                let mut live = Vec::new();
                barrier.wait();
                for i in 0..PER_THREAD {
                    let index = t * PER_THREAD + i;
                    let delay = Duration::from_micros(rng.below(20_001));
                    attempted.fetch_add(1, SeqCst);
                    match schedule(&timers, &flags, index, delay) {
                        Ok(handle) => {
                            results[index].store(1, SeqCst);
                            live.push((index, handle));
                        }
                        Err(ScheduleError::Shutdown) => {
                            results[index].store(2, SeqCst);
                            break;
                        }
                        Err(e) => panic!("unexpected {e}"),
                    }
                    if rng.below(4) == 0 {
                        let (index, handle) =
                            live.swap_remove(rng.below(live.len() as u64) as usize);
                        let flag = if handle.cancel() {
                            CANCEL_WON
                        } else {
                            CANCEL_LOST
                        };
                        flags[index].fetch_or(flag, SeqCst);
                    }
                    if i % 256 == 255 {
                        thread::yield_now();
                    }
                }
                live
            })
        })
        .collect();
    barrier.wait();
    assert!(
        wait_until(PATIENCE, || attempted.load(SeqCst) >= TOTAL / 3),
        "the workers stalled"
    );
    let report = timers.shutdown().unwrap();
    let live: Vec<_> = workers
        .into_iter()
        .flat_map(|w| w.join().unwrap())
        .collect();
    for (index, handle) in &live {
        let ran = flags[*index].load(SeqCst) & RAN != 0;
        assert_eq!(handle.is_fired(), ran, "timer {index}: {handle:?}");
        assert_eq!(
            handle.is_cancelled(),
            !ran,
            "timer {index}: neither ran nor dropped"
        );
        assert!(!handle.cancel(), "cancel() won after shutdown");
    }
    assert_eq!(timers.pending(), 0);
    drop(live);
    drop(timers);

    let mut unfired = 0;
    for (index, flag) in flags.iter().enumerate() {
        let f = flag.load(SeqCst);
        let result = results[index].load(SeqCst);
        let context = format!("timer {index}: result {result}, flags {f:#09b}");
        assert_eq!(f & (EARLY | TWICE | DROPPED_TWICE), 0, "{context}");
        match result {
            0 => assert_eq!(f, 0, "{context}"),
            1 => {
                assert!(f & DROPPED != 0, "{context}: closure leaked");
                assert!(
                    f & RAN == 0 || f & CANCEL_WON == 0,
                    "{context}: ran after cancel() won"
                );
                unfired += usize::from(f & (RAN | CANCEL_WON) == 0);
            }
            _ => assert_eq!(f, DROPPED, "{context}: refused, yet not just dropped"),
        }
    }
    assert_eq!(
        report.unfired, unfired,
        "shutdown's count of dropped callbacks"
    );
}

#[test]
fn futures_storm_on_tokio_multi_thread() {
    const TASKS: usize = if cfg!(miri) { 32 } else { 20_000 };
    let timers = TimerService::new();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .unwrap();
    let mut rng = XorShift::new(99);
    let tasks: Vec<_> = (0..TASKS)
        .map(|i| {
            let timers = timers.clone();
            let sleep_for = Duration::from_micros(rng.below(50_001));
            let time_out_after = Duration::from_micros(rng.below(50_001));
            rt.spawn(async move {
                let start = Instant::now();
                if i % 2 == 0 {
                    timers.sleep(sleep_for).await;
                    assert!(start.elapsed() >= sleep_for, "a sleep ended early");
                } else {
                    let raced = timers
                        .timeout(time_out_after, timers.sleep(sleep_for))
                        .await;
                    let took = start.elapsed();
                    match raced {
                        Ok(()) => assert!(took >= sleep_for, "the inner sleep ended early"),
                        Err(_) => assert!(took >= time_out_after, "the timeout elapsed early"),
                    }
                }
            })
        })
        .collect();
    rt.block_on(async {
        for task in tasks {
            tokio::time::timeout(PATIENCE, task)
                .await
                .expect("a task was never woken")
                .unwrap();
        }
    });
    assert_eq!(timers.pending(), 0);
}

#[test]
fn a_detached_burst_fires_each_once_never_early_in_deadline_order() {
    // Enough timers that each 64 ms slot of the driver's bucket wheel holds
    // hundreds of chunks and is staged ahead while the burst still arrives.
    const TIMERS: usize = if cfg!(miri) { 300 } else { 100_000 };
    let timers = TimerService::new();
    let fired = Arc::new(std::sync::Mutex::new(Vec::with_capacity(TIMERS)));
    let mut rng = XorShift::new(0xb0c7);
    let start = Instant::now();
    for id in 0..TIMERS {
        let deadline = start + Duration::from_micros(rng.below(400_000));
        let fired = Arc::clone(&fired);
        timers
            .schedule_detached_at(deadline, move || {
                fired.lock().unwrap().push((id, deadline, Instant::now()));
            })
            .unwrap();
    }
    // Timers due while the burst was still queued may come after later
    // ones that were filed in time (each round files a bounded batch, and
    // fires what is due meanwhile); once the driver has filed them all, the
    // wheel keeps the order, so it is checked from a tick after that. The
    // queue is first in, first out: a timer due at once, queued after the
    // burst, fires once the burst is filed.
    let (filed, all_filed) = std::sync::mpsc::channel();
    timers
        .schedule_detached(Duration::ZERO, move || filed.send(()).unwrap())
        .unwrap();
    all_filed.recv_timeout(PATIENCE).unwrap();
    let settled = Instant::now() + Duration::from_millis(1);
    assert!(
        wait_until(PATIENCE, || fired.lock().unwrap().len() == TIMERS),
        "{} of {TIMERS} fired",
        fired.lock().unwrap().len()
    );
    let fired = fired.lock().unwrap();
    let mut seen = vec![false; TIMERS];
    let mut latest = settled;
    let mut ordered = 0;
    for &(id, deadline, at) in fired.iter() {
        assert!(
            !std::mem::replace(&mut seen[id], true),
            "timer {id} fired twice"
        );
        assert!(at >= deadline, "timer {id} fired {:?} early", deadline - at);
        if deadline < settled {
            continue;
        }
        // Callbacks run one after another on the driver thread, a tick at a
        // time: none may come after one due a whole tick (1 ms) later.
        assert!(
            deadline + Duration::from_millis(1) >= latest,
            "timer {id} due {:?} before one that fired ahead of it",
            latest - deadline
        );
        latest = latest.max(deadline);
        ordered += 1;
    }
    assert!(
        ordered >= TIMERS / 4,
        "only {ordered} timers due after the burst"
    );
    let stats = timers.stats();
    assert_eq!(
        (stats.fired, stats.pending),
        (TIMERS as u64 + 1, 0),
        "{stats:?}"
    );
}

//! What the tests that try to break the driver's horizon share
//! (`horizon_*.rs`): the horizon itself, reports checked for time, drop
//! counters, and sleeps parked by threads that have ended.

use std::collections::HashSet;
use std::future::Future;
use std::sync::mpsc;
use std::task::Waker;
use std::thread;
use std::time::{Duration, Instant};

use wheel_sync::{Sleep, TimerService};

use super::{block_on, poll_once, HOUR};

/// The driver's horizon on a real clock (`RECLAIM_EVERY`).
pub const HORIZON: Duration = Duration::from_millis(100);
/// How long a test waits for one report before it calls the timer lost.
pub const REPORT_PATIENCE: Duration = Duration::from_secs(3);
pub const YEAR: Duration = Duration::from_secs(365 * 24 * 3600);

/// Receives `n` reports `(id, deadline, fired_at)`, each never early and at
/// most `slack` late, each id once; returns the ids.
pub fn collect_on_time(
    rx: &mpsc::Receiver<(usize, Instant, Instant)>,
    n: usize,
    slack: Duration,
) -> HashSet<usize> {
    let mut seen = HashSet::new();
    for i in 0..n {
        let (id, deadline, at) = rx
            .recv_timeout(REPORT_PATIENCE)
            .unwrap_or_else(|e| panic!("report {i} of {n} never came: {e:?}"));
        assert!(at >= deadline, "timer {id} fired {:?} early", deadline - at);
        assert!(
            at <= deadline + slack,
            "timer {id} fired {:?} late",
            at - deadline
        );
        assert!(seen.insert(id), "timer {id} fired twice");
    }
    seen
}

#[allow(unused_imports)]
pub use super::Counted;

/// Runs a closure as it is dropped.
pub struct OnDrop(pub Option<Box<dyn FnOnce() + Send>>);

impl Drop for OnDrop {
    fn drop(&mut self) {
        if let Some(f) = self.0.take() {
            f();
        }
    }
}

/// Panics as it is dropped.
pub struct PanicOnDrop;

impl Drop for PanicOnDrop {
    fn drop(&mut self) {
        panic!("PanicOnDrop");
    }
}

/// Polls `sleep` until it completes, woken by the driver (never by a busy
/// loop), and checks it never completes before `deadline`; returns when.
pub fn wait_out(sleep: &mut Sleep, deadline: Instant) -> Instant {
    block_on(std::future::poll_fn(|cx| {
        let polled = std::pin::Pin::new(&mut *sleep).poll(cx);
        if polled.is_ready() {
            let now = Instant::now();
            assert!(now >= deadline, "completed {:?} early", deadline - now);
        }
        polled
    }));
    Instant::now()
}

/// `threads` rings of `ring` sleeps an hour out, each ring made and first
/// polled (parked) on a thread of its own that has ended since.
pub fn sleep_rings(timers: &TimerService, threads: usize, ring: usize) -> Vec<Vec<Sleep>> {
    let makers: Vec<_> = (0..threads)
        .map(|_| {
            let timers = timers.clone();
            thread::spawn(move || {
                (0..ring)
                    .map(|_| {
                        let mut sleep = timers.sleep(HOUR);
                        assert!(poll_once(&mut sleep, Waker::noop()).is_pending());
                        sleep
                    })
                    .collect()
            })
        })
        .collect();
    makers.into_iter().map(|t| t.join().unwrap()).collect()
}

/// Schedules `hops` callbacks one after another, each `delay` after the
/// one before ran, from inside it (on the driver thread, parked in the
/// driver's own spot, with no other timer pending); each reports its id,
/// deadline and when it ran.
pub fn chain(
    timers: &TimerService,
    base: usize,
    hops: usize,
    delay: Duration,
    tx: mpsc::Sender<(usize, Instant, Instant)>,
) {
    if hops == 0 {
        return;
    }
    let deadline = Instant::now() + delay;
    let next = timers.clone();
    timers
        .schedule_at(deadline, move || {
            let _ = tx.send((base, deadline, Instant::now()));
            chain(&next, base + 1, hops - 1, delay, tx);
        })
        .unwrap();
}

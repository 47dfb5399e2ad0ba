//! What each fired timer records in the `delay` experiment: its lateness
//! past its own deadline, in a histogram of the firing thread's own, and its
//! fire time in a per-100 ms series. The child reads the result once, after
//! the last timer.

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::{self, Thread};
use std::time::{Duration, Instant};

use indicatif::ProgressBar;
use serde::{Deserialize, Serialize};

use super::latency::Latency;

/// Width of one slot of the fired-per-slot series.
pub const SLOT: Duration = Duration::from_millis(100);

/// Tells recorders apart in the threads' [`LANE`]s.
static NEXT_ID: AtomicU64 = AtomicU64::new(0);

/// One thread's lateness histogram. Only that thread locks it until every
/// timer has fired, so it never waits for it: the lock is there for the
/// merge at the end, from another thread.
type Lane = Arc<Mutex<Latency>>;

thread_local! {
    /// This thread's histogram, and the id of the recorder it belongs to.
    static LANE: RefCell<Option<(u64, Lane)>> = const { RefCell::new(None) };
}

/// Shared by every timer of one `delay` run.
pub struct Recorder {
    id: u64,
    start: Instant,
    total: u64,
    fired: AtomicU64,
    early: AtomicU64,
    wall_ns: AtomicU64,
    done: AtomicBool,
    per_slot: Box<[AtomicU32]>,
    /// Every firing thread's histogram, registered at its first fire.
    lanes: Mutex<Vec<Lane>>,
    /// Woken by the last timer.
    waiter: Thread,
}

/// Everything a [`Recorder`] saw.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Recorded {
    /// From start to the last timer's fire.
    pub wall_ns: u64,
    /// Timers that fired before their deadline.
    pub early: u64,
    /// Lateness of every timer; early ones count as 0.
    pub lateness: Latency,
    /// Timers fired in each [`SLOT`] since start; trailing empty slots dropped.
    pub per_slot: Vec<u32>,
}

impl Recorder {
    /// A recorder for `total` timers that fire within `horizon` of now; the
    /// run's clock starts when this returns. The calling thread is the one
    /// [`Recorder::wait`] wakes.
    pub fn new(total: u64, horizon: Duration) -> Recorder {
        let slots = (horizon.as_nanos() / SLOT.as_nanos()) as usize + 1;
        Recorder {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            total,
            fired: AtomicU64::new(0),
            early: AtomicU64::new(0),
            wall_ns: AtomicU64::new(0),
            done: AtomicBool::new(false),
            per_slot: (0..slots).map(|_| AtomicU32::new(0)).collect(),
            lanes: Mutex::new(Vec::new()),
            waiter: thread::current(),
            start: Instant::now(),
        }
    }

    /// Time since start, saturating at ~584 years.
    pub fn elapsed_ns(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    /// The instant `offset_ns` after start.
    pub fn at(&self, offset_ns: u64) -> Instant {
        self.start + Duration::from_nanos(offset_ns)
    }

    /// Records one timer whose deadline was `deadline_ns` after start firing now.
    pub fn fire(&self, deadline_ns: u64) {
        let now_ns = self.elapsed_ns();
        if now_ns < deadline_ns {
            self.early.fetch_add(1, Ordering::Relaxed);
        }
        let late = now_ns.saturating_sub(deadline_ns);
        LANE.with_borrow_mut(|slot| {
            if slot.as_ref().is_none_or(|(id, _)| *id != self.id) {
                *slot = Some((self.id, self.new_lane()));
            }
            if let Some((_, lane)) = slot {
                lane.lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .record(late);
            }
        });
        let slot = ((now_ns / SLOT.as_nanos() as u64) as usize).min(self.per_slot.len() - 1);
        self.per_slot[slot].fetch_add(1, Ordering::Relaxed);
        // AcqRel chains every fire's relaxed writes into the last one's release.
        // Every fire, not just the last to count: on a multi-thread runtime
        // the last to count need not be the last to fire.
        self.wall_ns.fetch_max(now_ns, Ordering::Relaxed);
        if self.fired.fetch_add(1, Ordering::AcqRel) + 1 == self.total {
            self.done.store(true, Ordering::Release);
            self.waiter.unpark();
        }
    }

    /// A histogram for the calling thread, registered for the merge.
    #[cold]
    fn new_lane(&self) -> Lane {
        let lane = Lane::default();
        let mut lanes = self.lanes.lock().unwrap_or_else(PoisonError::into_inner);
        lanes.push(Arc::clone(&lane));
        lane
    }

    /// Whether every timer has fired.
    pub fn is_done(&self) -> bool {
        self.done.load(Ordering::Acquire)
    }

    /// Blocks the thread that created the recorder until every timer has
    /// fired, showing how many have on `bar`.
    pub fn wait(&self, bar: &ProgressBar) {
        while !self.is_done() {
            bar.set_position(self.fired.load(Ordering::Relaxed));
            thread::park_timeout(Duration::from_millis(100));
        }
        bar.finish_and_clear();
    }

    /// What was recorded; complete once [`Recorder::is_done`].
    pub fn recorded(&self) -> Recorded {
        let mut lateness = Latency::default();
        for lane in self
            .lanes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
        {
            lateness.add(&lane.lock().unwrap_or_else(PoisonError::into_inner));
        }
        let mut per_slot: Vec<u32> = (self.per_slot.iter())
            .map(|a| a.load(Ordering::Relaxed))
            .collect();
        while per_slot.last() == Some(&0) {
            per_slot.pop();
        }
        Recorded {
            wall_ns: self.wall_ns.load(Ordering::Relaxed),
            early: self.early.load(Ordering::Relaxed),
            lateness,
            per_slot,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recorder_counts_early_late_and_finishes() {
        let recorder = Recorder::new(3, Duration::from_secs(1));
        let far_future = u64::MAX / 2;
        recorder.fire(far_future);
        recorder.fire(0);
        assert!(!recorder.is_done());
        recorder.fire(0);
        recorder.wait(&ProgressBar::hidden());
        let recorded = recorder.recorded();
        assert_eq!(recorded.early, 1);
        assert_eq!(recorded.lateness.total(), 3);
        assert_eq!(recorded.per_slot.iter().sum::<u32>(), 3);
        assert!(recorded.wall_ns > 0);
        assert!(recorded.lateness.max_ns() >= recorded.lateness.quantile_ns(0.5));
    }

    #[test]
    fn fires_on_many_threads_are_merged() {
        let recorder = Recorder::new(4 * 1000, Duration::from_secs(1));
        thread::scope(|scope| {
            for _ in 0..4 {
                scope.spawn(|| (0..1000).for_each(|_| recorder.fire(0)));
            }
        });
        assert!(recorder.is_done());
        let recorded = recorder.recorded();
        assert_eq!(recorder.lanes.lock().unwrap().len(), 4);
        assert_eq!(recorded.lateness.total(), 4000);
        // A thread that served another recorder first gets a lane of this one's.
        let other = Recorder::new(1, Duration::from_secs(1));
        other.fire(0);
        recorder.fire(0);
        assert_eq!(other.recorded().lateness.total(), 1);
        assert_eq!(recorder.recorded().lateness.total(), 4001);
    }
}

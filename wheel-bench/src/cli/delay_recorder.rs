//! What each fired timer records in the `delay` experiment: its lateness
//! past its own deadline, in a histogram of the firing thread's own, and its
//! fire time in a per-100 ms series. The child reads the result once, after
//! the last timer.
//!
//! A fire takes no lock. Each thread writes only its own histogram (its
//! lane), and only while one of the run's `total` timers is being counted;
//! the lanes are read once all `total` have been ([`Recorder::recorded`]).
//! The threads that fire are any the experiment's shape uses (a runtime's
//! workers, the driver, an executor's), idle at the end, so none can be
//! asked to hand its histogram over.

use std::cell::{RefCell, UnsafeCell};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
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

/// One thread's lateness histogram: written by that thread alone, from
/// [`Recorder::fire`], before the fire is counted in `Recorder::counted`;
/// read by [`Recorder::recorded`] only once every fire has been counted.
#[derive(Default)]
struct Lane(UnsafeCell<Latency>);

// SAFETY: a lane is written only by the thread whose `LANE` holds it, and
// only by a fire that will count in `counted`; it is read only after
// `counted` reached `total` (Acquire, against each fire's AcqRel count,
// which follows its write), after which no fire writes it again.
unsafe impl Sync for Lane {}

thread_local! {
    /// This thread's histogram, and the id of the recorder it belongs to.
    static LANE: RefCell<Option<(u64, Arc<Lane>)>> = const { RefCell::new(None) };
}

/// Shared by every timer of one `delay` run.
pub struct Recorder {
    id: u64,
    start: Instant,
    total: u64,
    /// Fires begun: the first `total` record, any later one (a timer fired
    /// twice) only shows in the progress count.
    fired: AtomicU64,
    /// Recording fires finished; `total` of them make the run done.
    counted: AtomicU64,
    early: AtomicU64,
    wall_ns: AtomicU64,
    per_slot: Box<[AtomicU32]>,
    /// Every firing thread's histogram, registered at its first fire.
    lanes: Mutex<Vec<Arc<Lane>>>,
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
            counted: AtomicU64::new(0),
            early: AtomicU64::new(0),
            wall_ns: AtomicU64::new(0),
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
        if self.fired.fetch_add(1, Ordering::Relaxed) >= self.total {
            // Past the run's timers: the lanes may already be being read.
            return;
        }
        if now_ns < deadline_ns {
            self.early.fetch_add(1, Ordering::Relaxed);
        }
        let late = now_ns.saturating_sub(deadline_ns);
        LANE.with_borrow_mut(|slot| {
            if slot.as_ref().is_none_or(|(id, _)| *id != self.id) {
                *slot = Some((self.id, self.new_lane()));
            }
            if let Some((_, lane)) = slot {
                // SAFETY: this thread's own lane, and this fire is not
                // counted yet (see `Lane`).
                unsafe { &mut *lane.0.get() }.record(late);
            }
        });
        let slot = ((now_ns / SLOT.as_nanos() as u64) as usize).min(self.per_slot.len() - 1);
        self.per_slot[slot].fetch_add(1, Ordering::Relaxed);
        // AcqRel chains every fire's writes (its lane's, the relaxed ones)
        // into the last one's release. Every fire, not just the last to
        // count: on a multi-thread runtime the last to count need not be
        // the last to fire.
        self.wall_ns.fetch_max(now_ns, Ordering::Relaxed);
        if self.counted.fetch_add(1, Ordering::AcqRel) + 1 == self.total {
            self.waiter.unpark();
        }
    }

    /// A histogram for the calling thread, registered for the merge.
    #[cold]
    fn new_lane(&self) -> Arc<Lane> {
        let lane = Arc::new(Lane::default());
        let mut lanes = self.lanes.lock().unwrap_or_else(PoisonError::into_inner);
        lanes.push(Arc::clone(&lane));
        lane
    }

    /// Whether every timer has fired.
    pub fn is_done(&self) -> bool {
        // Acquire: reads from the last count, whose release sequence holds
        // every fire's.
        self.counted.load(Ordering::Acquire) == self.total
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

    /// What was recorded.
    ///
    /// # Panics
    /// If called before every timer has fired ([`Recorder::is_done`]).
    pub fn recorded(&self) -> Recorded {
        assert!(self.is_done(), "read a delay recorder before its last fire");
        let mut lateness = Latency::default();
        for lane in self
            .lanes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
        {
            // SAFETY: every fire that writes a lane has been counted, and
            // `is_done` acquired the last count (see `Lane`).
            lateness.add(unsafe { &*lane.0.get() });
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

    /// Fewer under miri, which runs this test to check the lanes' unsafe.
    const PER_THREAD: u64 = if cfg!(miri) { 20 } else { 1000 };

    #[test]
    fn fires_on_many_threads_are_merged() {
        let recorder = Recorder::new(4 * PER_THREAD, Duration::from_secs(1));
        thread::scope(|scope| {
            for _ in 0..4 {
                scope.spawn(|| (0..PER_THREAD).for_each(|_| recorder.fire(0)));
            }
        });
        assert!(recorder.is_done());
        let recorded = recorder.recorded();
        assert_eq!(recorder.lanes.lock().unwrap().len(), 4);
        assert_eq!(recorded.lateness.total(), 4 * PER_THREAD);
        // A thread that served another recorder first gets a lane of this one's.
        let first = Recorder::new(1, Duration::from_secs(1));
        let second = Recorder::new(1, Duration::from_secs(1));
        first.fire(0);
        second.fire(0);
        assert_eq!(first.recorded().lateness.total(), 1);
        assert_eq!(second.recorded().lateness.total(), 1);
    }

    #[test]
    fn fires_past_the_total_leave_the_read_histogram_alone() {
        let recorder = Recorder::new(2, Duration::from_secs(1));
        recorder.fire(0);
        recorder.fire(0);
        let before = recorder.recorded();
        thread::scope(|scope| {
            scope.spawn(|| recorder.fire(0));
            assert_eq!(recorder.recorded(), before);
        });
        assert_eq!(recorder.recorded().lateness.total(), 2);
        assert_eq!(recorder.fired.load(Ordering::Relaxed), 3);
    }

    #[test]
    #[should_panic(expected = "before its last fire")]
    fn reading_before_the_last_fire_panics() {
        let recorder = Recorder::new(2, Duration::from_secs(1));
        recorder.fire(0);
        let _ = recorder.recorded();
    }
}

//! What producers and the driver share: the service's state, its
//! shutdown and the manual clock's `advance`; admission counting and
//! submission (with the park handshake and cancel) are in the files of
//! their own below (see the ground rules in the driver's module docs).

mod admission;
mod submission;

use crossbeam_utils::CachePadded;
use std::time::Duration;

use super::{Message, AWAKE};
use crate::caught::take_uncounted;
use crate::clock::Clock;
use crate::entry::EntryRef;
use crate::executor::Executor;
use crate::holders::Holders;
use crate::lateness::Histogram;
use crate::parked::Spots;
use crate::queue::{Consumer, Producer};
use crate::relay::Relay;
use crate::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use crate::sync::{thread, Arc, Backoff, Mutex};
use crate::{AdvanceError, ShutdownReport};

/// What producers and the driver share.
pub(crate) struct ServiceState {
    pub(super) producer: Producer<Message>,
    /// Far-off timers waiting next to the queue (see `parked`).
    pub(super) parked: Spots,
    pub(crate) clock: Clock,
    /// Live timers: callbacks, sleeps and timeouts.
    pending: CachePadded<AtomicUsize>,
    /// What `schedule` admits; `usize::MAX` for no limit.
    max_pending: usize,
    pub(super) sleeping_until: CachePadded<AtomicU64>,
    /// A parked message may need the driver sooner than its next sweep (a
    /// `Sleep` reset earlier): sweep in the next round.
    pub(super) sweep_asked: AtomicBool,
    pub(super) shutdown: AtomicBool,
    /// Set by the spawner as it starts the driver.
    driver: Mutex<Option<thread::Thread>>,
    /// Taken by whoever waits for the driver to end (a shutdown, or the
    /// last holder's drop).
    join: Mutex<Option<thread::JoinHandle<usize>>>,
    /// Who holds the service, thread by thread (see `holders`).
    pub(crate) holders: Holders,
    /// On a line of its own: the driver writes it as it files and fires,
    /// and every `schedule` reads the fields above (a shared line cost 5–8 %
    /// of a producer's time in a 4M-timer burst).
    pub(super) stats: CachePadded<DriverStats>,
    /// Fired sleeps' wakers handed to a woken task (see `relay`).
    pub(crate) relay: Relay,
    /// Under a manual clock: the clock's time (ns past the origin) as of the
    /// start of the driver's last round that drained the queue, so
    /// everything due by then has fired. Untouched under the monotonic clock.
    pub(super) caught_up: AtomicU64,
    /// Panics of user code caught outside a driver round: the drop of a
    /// cancelled callback's closure, or of a sleep's waker with its entry.
    panicked: AtomicU64,
    /// Where due callbacks run, if not on the driver.
    pub(super) executor: Option<Executor>,
    /// The driver's last word: how many timers its shutdown abandoned.
    /// Read after joining it, so no panic after it can lose the count.
    pub(super) unfired: AtomicUsize,
    /// For the driver's tests: its next round panics, as a bug would.
    #[cfg(all(test, not(loom)))]
    pub(crate) fail_next_round: AtomicBool,
}

/// Counters only the driver writes.
#[derive(Default)]
pub(crate) struct DriverStats {
    pub(crate) scheduled: AtomicU64,
    pub(crate) fired: AtomicU64,
    pub(crate) cancelled: AtomicU64,
    pub(crate) panicked: AtomicU64,
    pub(crate) lateness_sum_ns: AtomicU64,
    pub(crate) lateness_max_ns: AtomicU64,
    /// Every fired timer's lateness, in buckets.
    pub(crate) lateness: Histogram,
    pub(crate) wakeups: AtomicU64,
    pub(crate) rounds: AtomicU64,
    /// The most submissions filed in one round.
    pub(crate) max_filed: AtomicU64,
    /// The most timers taken out of the wheels in one round.
    pub(crate) max_fired: AtomicU64,
}

impl DriverStats {
    pub(super) fn bump(counter: &AtomicU64, by: u64) {
        // Single writer: a load and a store, no read-modify-write needed.
        counter.store(counter.load(Ordering::Relaxed) + by, Ordering::Relaxed);
    }

    /// Raises a single-writer maximum to `to`.
    pub(super) fn raise(counter: &AtomicU64, to: u64) {
        if to > counter.load(Ordering::Relaxed) {
            counter.store(to, Ordering::Relaxed);
        }
    }
}

impl ServiceState {
    pub(crate) fn new(
        clock: Clock,
        max_pending: usize,
        executor: Option<Executor>,
    ) -> (Arc<Self>, Consumer<Message>) {
        let (producer, consumer) = crate::queue::channel();
        let state = Arc::new(Self {
            producer,
            parked: Spots::new(),
            clock,
            pending: CachePadded::new(AtomicUsize::new(0)),
            max_pending,
            sleeping_until: CachePadded::new(AtomicU64::new(AWAKE)),
            sweep_asked: AtomicBool::new(false),
            shutdown: AtomicBool::new(false),
            driver: Mutex::new(None),
            join: Mutex::new(None),
            holders: Holders::new(),
            stats: CachePadded::default(),
            relay: Relay::new(),
            caught_up: AtomicU64::new(0),
            panicked: AtomicU64::new(0),
            executor,
            unfired: AtomicUsize::new(0),
            #[cfg(all(test, not(loom)))]
            fail_next_round: AtomicBool::new(false),
        });
        (state, consumer)
    }

    pub(crate) fn set_driver(&self, driver: thread::Thread) {
        *self.driver.lock().unwrap_or_else(|e| e.into_inner()) = Some(driver);
    }

    /// The driver thread, to wait for it to end.
    pub(crate) fn set_join(&self, join: thread::JoinHandle<usize>) {
        *self.join.lock().unwrap_or_else(|e| e.into_inner()) = Some(join);
    }

    /// The driver thread, for the one caller that waits for it to end.
    pub(crate) fn take_join(&self) -> Option<thread::JoinHandle<usize>> {
        self.join.lock().unwrap_or_else(|e| e.into_inner()).take()
    }

    /// Ends the service once it has no holder left: shuts it down and,
    /// off the driver thread (where a callback dropped the last holder, and
    /// the driver is already on its way out), waits for the driver to end.
    pub(crate) fn stop(&self) {
        self.begin_shutdown();
        if self.on_driver_thread() {
            return;
        }
        if let Some(join) = self.take_join() {
            let _ = join.join();
        }
    }

    pub(crate) fn stats(&self) -> &DriverStats {
        &self.stats
    }

    pub(crate) fn is_shutdown(&self) -> bool {
        self.shutdown.load(Ordering::Acquire)
    }

    /// Adds the panics caught on this thread where nothing could count them
    /// (see `caught`) to the service's count.
    pub(crate) fn count_uncounted(&self) {
        let n = take_uncounted();
        if n > 0 {
            self.panicked.fetch_add(n, Ordering::Relaxed);
        }
    }

    pub(crate) fn on_driver_thread(&self) -> bool {
        let driver = self.driver.lock().unwrap_or_else(|e| e.into_inner());
        driver
            .as_ref()
            .is_some_and(|d| d.id() == thread::current().id())
    }

    /// Sets the shutdown flag and wakes the driver.
    pub(crate) fn begin_shutdown(&self) {
        // SeqCst: with `submit`'s fence, a producer either sees the flag or
        // its push is seen by the driver's last round.
        self.shutdown.store(true, Ordering::SeqCst);
        self.unpark_driver();
    }

    /// Moves a pending timer to `ABANDONED` at shutdown: counts it out and
    /// wakes a waiting task (or drops the callback). Returns whether it was
    /// pending, and whether user code panicked meanwhile.
    pub(super) fn abandon(&self, entry: &EntryRef) -> (bool, bool) {
        if !entry.abandon() {
            return (false, false);
        }
        self.release();
        // SAFETY: this thread won the move to `ABANDONED`.
        (true, !unsafe { entry.abandon_action() })
    }

    /// Panics of user code caught so far, wherever they ran.
    pub(crate) fn panicked(&self) -> u64 {
        let executor =
            (self.executor.as_ref()).map_or(0, |e| e.counts().panicked.load(Ordering::Relaxed));
        self.stats.panicked.load(Ordering::Relaxed)
            + self.relay.panicked()
            + self.panicked.load(Ordering::Relaxed)
            + executor
    }

    /// What the driver's shutdown left undone; read after joining it.
    pub(crate) fn shutdown_report(&self) -> ShutdownReport {
        let unrun =
            (self.executor.as_ref()).map_or(0, |e| e.counts().unrun.load(Ordering::Relaxed));
        ShutdownReport {
            unfired: self.unfired.load(Ordering::Acquire),
            unrun: usize::try_from(unrun).unwrap_or(usize::MAX),
        }
    }

    /// Moves a manual clock forward by `by`, wakes the driver, and waits
    /// until it has fired everything due by the new time; from the driver
    /// thread (a callback), returns at once.
    pub(crate) fn advance(&self, by: Duration) -> Result<(), AdvanceError> {
        let target = self.clock.advance(by).ok_or(AdvanceError::NotManual)?;
        self.sleeping_until.store(AWAKE, Ordering::Relaxed);
        self.unpark_driver();
        let shut_down = || {
            if self.is_shutdown() {
                Err(AdvanceError::Shutdown)
            } else {
                Ok(())
            }
        };
        if self.on_driver_thread() {
            return shut_down();
        }
        let backoff = Backoff::new();
        while self.caught_up.load(Ordering::Acquire) < target {
            shut_down()?;
            backoff.snooze();
        }
        Ok(())
    }

    pub(crate) fn unpark_driver(&self) {
        if let Some(driver) = &*self.driver.lock().unwrap_or_else(|e| e.into_inner()) {
            driver.unpark();
        }
    }
}

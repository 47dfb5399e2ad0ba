//! [`TimerService`]: the handle every call goes through, and whose last
//! clone ends the service.

use core::fmt;
use core::mem::ManuallyDrop;
use std::time::{Duration, Instant};

use crate::action::Callback;
use crate::caught::drop_caught;
use crate::entry::EntryRef;
use crate::job::Job;
use crate::lane;
use crate::shared::{Message, Shared};
use crate::spot::Count;
use crate::sync::Arc;
use crate::{
    AdvanceError, Builder, ScheduleError, ShutdownError, ShutdownReport, Stats, TimerHandle,
};

/// A timer service: cheap to clone, `Send + Sync`.
///
/// The service runs until [`shutdown`](Self::shutdown) is called or its
/// last `TimerService` clone is dropped, as a runtime does: the futures and
/// handles it hands out ([`Sleep`](crate::Sleep),
/// [`Timeout`](crate::Timeout), [`Interval`](crate::Interval),
/// [`DelayQueue`](crate::DelayQueue), [`TimerHandle`]) do not keep it
/// running. Once it is down they report it: a pending `Sleep` panics when
/// polled, a callback's handle says it was cancelled. See the
/// [crate docs](crate) for the design.
///
/// # Examples
/// ```
/// use std::time::Duration;
///
/// let timers = wheel_sync::TimerService::new();
/// let other_thread = timers.clone();
/// std::thread::spawn(move || {
///     other_thread.schedule(Duration::from_millis(1), || ()).unwrap();
/// })
/// .join()
/// .unwrap();
/// ```
pub struct TimerService {
    /// The service. Every clone shares one strong reference, the owners':
    /// a clone writes only its owner count, never the service's reference
    /// count, which every thread would share. The clone that ends the
    /// ownership (see `spot`) drops that reference.
    shared: ManuallyDrop<Arc<Shared>>,
    /// The spot this clone is counted on as an owner (see `spot`).
    owner: usize,
}

impl Clone for TimerService {
    /// Another owner of the service, counted on this thread's spot: no
    /// write to a line another thread writes.
    fn clone(&self) -> Self {
        let owner = lane::spot();
        self.shared.spots.own(owner);
        // SAFETY: the pointer is `self`'s, which holds the owners' strong
        // reference while any clone is counted (this one now is); the copy
        // is never dropped as such (`ManuallyDrop`): only the clone that
        // ends the ownership drops one, once (`Drop`).
        let shared = unsafe { Arc::from_raw(Arc::as_ptr(&self.shared)) };
        Self {
            shared: ManuallyDrop::new(shared),
            owner,
        }
    }
}

impl Drop for TimerService {
    /// The last clone anywhere ends the service (see `spot`).
    fn drop(&mut self) {
        let spots = &self.shared.spots;
        if spots.disown_unless_last(self.owner) {
            // Other clones count on this spot: this one touches nothing more.
            return;
        }
        // This count may be the spot's last. Once it is out, the last clone
        // elsewhere may end the service and drop the owners' reference, so
        // the look that follows holds the memory through this thread's lane.
        let ended = lane::holding(&self.shared, || spots.disown(self.owner));
        if ended {
            // SAFETY: `disown` returns true to one caller only, once no clone
            // is counted anywhere: the owners' reference is this call's to
            // drop, and no other `TimerService` uses its copy any more.
            let shared = unsafe { ManuallyDrop::take(&mut self.shared) };
            shared.stop();
        }
    }
}

impl Default for TimerService {
    fn default() -> Self {
        Self::new()
    }
}

impl TimerService {
    /// A service with a 1 ms tick and no pending limit; spawns its driver.
    ///
    /// # Panics
    /// If the OS cannot spawn the driver thread; use
    /// [`builder`](Self::builder) to get the error instead.
    ///
    /// # Examples
    /// ```
    /// let timers = wheel_sync::TimerService::new();
    /// assert_eq!(timers.pending(), 0);
    /// ```
    #[track_caller]
    pub fn new() -> Self {
        match Self::builder().build() {
            Ok(service) => service,
            Err(e) => panic!("wheel-sync: cannot spawn the driver thread: {e}"),
        }
    }

    /// A [`Builder`] with the defaults.
    ///
    /// # Examples
    /// ```
    /// let timers = wheel_sync::TimerService::builder().build().unwrap();
    /// # drop(timers);
    /// ```
    pub fn builder() -> Builder {
        Builder::default()
    }

    /// The first owner of `shared`, on this thread's spot: it takes over
    /// `shared` as the owners' reference.
    pub(crate) fn owning(shared: Arc<Shared>) -> Self {
        let owner = lane::spot();
        shared.spots.own(owner);
        Self {
            shared: ManuallyDrop::new(shared),
            owner,
        }
    }

    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// Runs `f` on the driver thread once `delay` has passed (or hands it
    /// to the [callback executor](Builder::callback_executor)). On the
    /// driver, `f` must be short: the other timers wait while it runs. A
    /// panic in `f`, or in the drop of what it captured, is caught and
    /// counted in [`Stats::panicked`].
    ///
    /// It waits only for a driver its spot's threads have outrun ([`Stats::waits_for_driver`]).
    ///
    /// # Errors
    /// [`ScheduleError::Shutdown`] after shutdown;
    /// [`ScheduleError::TooManyPending`] when the limit is reached.
    ///
    /// # Examples
    /// ```
    /// use std::sync::mpsc;
    /// use std::time::{Duration, Instant};
    ///
    /// let timers = wheel_sync::TimerService::new();
    /// let (tx, rx) = mpsc::channel();
    /// let start = Instant::now();
    /// timers.schedule(Duration::from_millis(3), move || tx.send(()).unwrap()).unwrap();
    /// rx.recv().unwrap();
    /// assert!(start.elapsed() >= Duration::from_millis(3));
    /// ```
    #[inline]
    pub fn schedule(
        &self,
        delay: Duration,
        f: impl FnOnce() + Send + 'static,
    ) -> Result<TimerHandle, ScheduleError> {
        let tick = self.shared().clock.tick_after(delay);
        self.schedule_tick(tick, f)
    }

    /// Runs `f` on the driver thread at `deadline` (at once if it has passed).
    ///
    /// # Errors
    /// As [`schedule`](Self::schedule).
    ///
    /// # Examples
    /// ```
    /// use std::time::{Duration, Instant};
    ///
    /// let timers = wheel_sync::TimerService::new();
    /// let handle = timers.schedule_at(Instant::now() + Duration::from_secs(5), || ()).unwrap();
    /// assert!(handle.cancel());
    /// ```
    #[inline]
    pub fn schedule_at(
        &self,
        deadline: Instant,
        f: impl FnOnce() + Send + 'static,
    ) -> Result<TimerHandle, ScheduleError> {
        let tick = self.shared().clock.tick_for(deadline);
        self.schedule_tick(tick, f)
    }

    /// Runs `f` on the driver thread once `delay` has passed. Fire and
    /// forget: there is no handle, so it cannot be cancelled.
    ///
    /// That makes it cheaper than [`schedule`](Self::schedule). A closure of
    /// up to two words (a reference and a number, say) travels inline, so
    /// scheduling allocates nothing and firing frees nothing, and the driver
    /// keeps it by value in a wheel built for timers that are never
    /// cancelled, a fraction of a callback with a handle's memory. A bigger
    /// closure is boxed. It counts
    /// toward [`pending`](Self::pending) and [`Builder::max_pending`] like
    /// any callback, and a shutdown drops it unrun like any callback.
    ///
    /// # Errors
    /// [`ScheduleError::Shutdown`] after shutdown;
    /// [`ScheduleError::TooManyPending`] when the limit is reached. Either
    /// way `f` is dropped unrun.
    ///
    /// # Examples
    /// ```
    /// use std::sync::mpsc;
    /// use std::time::Duration;
    ///
    /// let timers = wheel_sync::TimerService::new();
    /// let (tx, rx) = mpsc::channel();
    /// for ms in [30, 10, 20] {
    ///     let tx = tx.clone();
    ///     timers.schedule_detached(Duration::from_millis(ms), move || tx.send(ms).unwrap()).unwrap();
    /// }
    /// let fired: Vec<u64> = rx.iter().take(3).collect();
    /// assert_eq!(fired, [10, 20, 30]);
    /// ```
    pub fn schedule_detached(
        &self,
        delay: Duration,
        f: impl FnOnce() + Send + 'static,
    ) -> Result<(), ScheduleError> {
        let tick = self.shared().clock.tick_after(delay);
        self.detach_tick(tick, f)
    }

    /// Runs `f` on the driver thread at `deadline` (at once if it has
    /// passed), with no handle: [`schedule_detached`](Self::schedule_detached)
    /// with a deadline.
    ///
    /// # Errors
    /// As [`schedule_detached`](Self::schedule_detached).
    ///
    /// # Examples
    /// ```
    /// use std::sync::mpsc;
    /// use std::time::{Duration, Instant};
    ///
    /// let timers = wheel_sync::TimerService::new();
    /// let (tx, rx) = mpsc::channel();
    /// let deadline = Instant::now() + Duration::from_millis(5);
    /// timers.schedule_detached_at(deadline, move || tx.send(Instant::now()).unwrap()).unwrap();
    /// assert!(rx.recv().unwrap() >= deadline);
    /// ```
    pub fn schedule_detached_at(
        &self,
        deadline: Instant,
        f: impl FnOnce() + Send + 'static,
    ) -> Result<(), ScheduleError> {
        let tick = self.shared().clock.tick_for(deadline);
        self.detach_tick(tick, f)
    }

    fn detach_tick(
        &self,
        tick: u64,
        f: impl FnOnce() + Send + 'static,
    ) -> Result<(), ScheduleError> {
        let (shared, spot) = (self.shared(), lane::spot());
        if let Err(error) = shared.admit(spot, true) {
            return Err(refused_by_limit(shared, error, f));
        }
        match shared.submit(spot, Message::Job(tick, Job::new(f)), tick) {
            Ok(()) => Ok(()),
            Err(refused) => {
                // Shut down (rule 7 of `shared`): the closure goes here.
                let error = shared.refuse(spot);
                if let Message::Job(_, job) = refused {
                    shared.count_panics(u64::from(!job.discard()));
                }
                Err(error)
            }
        }
    }

    #[inline]
    fn schedule_tick(
        &self,
        tick: u64,
        f: impl FnOnce() + Send + 'static,
    ) -> Result<TimerHandle, ScheduleError> {
        let lane = lane::lane(self.shared());
        if let Err(error) = lane.shared.admit(lane.spot, true) {
            return Err(refused_by_limit(&lane.shared, error, f));
        }
        let (entry, message) = EntryRef::new(tick, Callback::new(f));
        if !lane.shared.park(lane.spot, message, tick) {
            // Shut down (rule 7 of `shared`): the closure goes here.
            let error = lane.shared.refuse(lane.spot);
            if entry.abandon() {
                // SAFETY: `abandon` won the move to `ABANDONED`.
                lane.shared
                    .count_panics(u64::from(!unsafe { entry.abandon_action() }));
            }
            return Err(error);
        }
        Ok(TimerHandle {
            lane,
            entry: entry.erase(),
        })
    }

    /// The service's time: `Instant::now()`, or for a
    /// [manual clock](Builder::manual_clock) the moment it was built plus
    /// however far [`advance`](Self::advance) has moved it.
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    ///
    /// let timers = wheel_sync::TimerService::builder().manual_clock().build().unwrap();
    /// let start = timers.now();
    /// std::thread::sleep(Duration::from_millis(2));
    /// assert_eq!(timers.now(), start); // stands still
    /// timers.advance(Duration::from_millis(5)).unwrap();
    /// assert_eq!(timers.now(), start + Duration::from_millis(5));
    /// ```
    pub fn now(&self) -> Instant {
        self.shared().clock.now()
    }

    /// Moves a [manual clock](Builder::manual_clock) forward by `by`, then
    /// waits until the driver has fired every timer due by the new time
    /// (scheduled, from any thread, before this call): callbacks have run
    /// (or been handed to the [callback executor](Builder::callback_executor))
    /// and sleeps' wakers have been woken when it returns. Called from a
    /// callback, it moves the clock and returns at once; what came due fires
    /// after the callback, in the driver's next round.
    ///
    /// # Errors
    /// [`AdvanceError::NotManual`] for a service that follows the monotonic
    /// clock; [`AdvanceError::Shutdown`] if the service shut down before the
    /// timers due fired.
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    ///
    /// let timers = wheel_sync::TimerService::builder().manual_clock().build().unwrap();
    /// let handle = timers.schedule(Duration::from_secs(3600), || ()).unwrap();
    /// timers.advance(Duration::from_secs(3599)).unwrap();
    /// assert!(!handle.is_fired());
    /// timers.advance(Duration::from_secs(1)).unwrap();
    /// assert!(handle.is_fired());
    /// ```
    pub fn advance(&self, by: Duration) -> Result<(), AdvanceError> {
        self.shared().advance(by)
    }

    /// Moves a [manual clock](crate::Builder::manual_clock) to the earliest
    /// deadline pending and fires what is due then, as
    /// [`advance`](Self::advance) does; returns how far it moved the clock
    /// (zero when a timer was already due, such as a callback scheduled for
    /// a deadline the clock had passed: it fires, and the clock stays),
    /// or `None`, moving nothing, if no pending timer can ever come due
    /// (none is pending, or only ones at [`Duration::MAX`] and the like).
    /// Timers submitted from any thread before the call count; with several
    /// threads moving the clock at once, each moves it to the deadline it
    /// found.
    ///
    /// # Errors
    /// [`AdvanceError::NotManual`] for a service that follows the monotonic
    /// clock; [`AdvanceError::Shutdown`] once it has shut down;
    /// [`AdvanceError::FromCallback`] from a callback.
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    ///
    /// let timers = wheel_sync::TimerService::builder().manual_clock().build().unwrap();
    /// let hour = timers.schedule(Duration::from_secs(3600), || ()).unwrap();
    /// assert_eq!(timers.advance_to_next(), Ok(Some(Duration::from_secs(3600))));
    /// assert!(hour.is_fired());
    /// assert_eq!(timers.advance_to_next(), Ok(None)); // nothing left
    /// ```
    pub fn advance_to_next(&self) -> Result<Option<Duration>, AdvanceError> {
        let shared = self.shared();
        let Some(tick) = shared.next_deadline()? else {
            return Ok(None);
        };
        shared.advance_to_tick(tick).map(Some)
    }

    /// Live timers: scheduled callbacks, sleeps and timeouts that have not
    /// fired, been cancelled or been dropped.
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    ///
    /// let timers = wheel_sync::TimerService::new();
    /// let h = timers.schedule(Duration::from_secs(60), || ()).unwrap();
    /// assert_eq!(timers.pending(), 1);
    /// h.cancel();
    /// assert_eq!(timers.pending(), 0);
    /// ```
    pub fn pending(&self) -> usize {
        self.shared().pending()
    }

    /// The counters (see [`Stats`]).
    ///
    /// # Examples
    /// ```
    /// let timers = wheel_sync::TimerService::new();
    /// assert_eq!(timers.stats().fired, 0);
    /// ```
    pub fn stats(&self) -> Stats {
        let shared = self.shared();
        let driver = &shared.stats;
        let load =
            |c: &crate::sync::atomic::AtomicU64| c.load(crate::sync::atomic::Ordering::Relaxed);
        // The maximum first, with Acquire: every count a round made before
        // it published that maximum (`fired`, the histogram) is then seen.
        let max_ns = driver
            .lateness_max_ns
            .load(crate::sync::atomic::Ordering::Acquire);
        let max_lateness = Duration::from_nanos(max_ns);
        let fired = load(&driver.fired);
        Stats {
            scheduled: shared.spots.total(Count::Scheduled),
            fired,
            cancelled: shared.spots.total(Count::Cancelled),
            panicked: shared.panicked(),
            pending: shared.pending(),
            max_lateness,
            // Read after `fired`, the sum may hold timers that count does
            // not: no mean is above the maximum.
            mean_lateness: Duration::from_nanos(
                load(&driver.lateness_sum_ns)
                    .checked_div(fired)
                    .unwrap_or(0),
            )
            .min(max_lateness),
            lateness: driver.lateness.lateness(max_lateness),
            wakeups: load(&driver.wakeups),
            rounds: load(&driver.rounds),
            max_filed_per_round: load(&driver.max_filed),
            max_fired_per_round: load(&driver.max_fired),
            waits_for_driver: shared.spots.total(Count::Waits),
        }
    }

    /// Stops and joins the driver. Timers still pending never fire: their
    /// callbacks are dropped and counted in the report; pending futures are
    /// woken and panic if polled (see [`Sleep`](crate::Sleep)). Afterwards `schedule`
    /// returns [`ScheduleError::Shutdown`].
    ///
    /// # Errors
    /// [`ShutdownError::FromCallback`] if called from a callback (the driver
    /// cannot join itself); [`ShutdownError::AlreadyShutDown`] on a second call.
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    /// use wheel_sync::ScheduleError;
    ///
    /// let timers = wheel_sync::TimerService::new();
    /// timers.shutdown().unwrap();
    /// assert_eq!(timers.schedule(Duration::ZERO, || ()).unwrap_err(), ScheduleError::Shutdown);
    /// ```
    pub fn shutdown(&self) -> Result<ShutdownReport, ShutdownError> {
        self.shared().shutdown()
    }
}

/// A closure the pending limit refused: dropped here, a panic in its drop
/// caught and counted (rule 5 of `shared`), as one a shutdown refuses is;
/// the caller gets `error`, never the panic.
fn refused_by_limit(shared: &Shared, error: ScheduleError, f: impl FnOnce()) -> ScheduleError {
    shared.count_panics(u64::from(!drop_caught(f)));
    error
}

impl fmt::Debug for TimerService {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TimerService")
            .field("pending", &self.pending())
            .field("max_pending", &self.shared().max_pending())
            .field("shut_down", &self.shared().is_shut_down())
            .finish()
    }
}

mod futures;
#[cfg(test)]
mod tests;

//! A threaded timer service over [`wheel_core`]: any number of threads
//! schedule and cancel through a lock-free queue; one driver thread owns a
//! cascading wheel, follows the monotonic clock, runs callbacks and wakes
//! [`Sleep`] / [`Timeout`] futures under any executor.
//!
//! ```
//! use std::sync::mpsc;
//! use std::time::Duration;
//! use wheel_sync::TimerService;
//!
//! let timers = TimerService::new();
//! let (tx, rx) = mpsc::channel();
//! timers.schedule(Duration::from_millis(5), move || tx.send("fired").unwrap()).unwrap();
//!
//! // A request timeout that is almost always cancelled:
//! let timeout = timers.schedule(Duration::from_secs(1), || unreachable!()).unwrap();
//! assert!(timeout.cancel());
//!
//! assert_eq!(rx.recv().unwrap(), "fired");
//! ```
//!
//! # How it works
//!
//! - **Submission** never blocks or locks: a timer is a reference-counted
//!   entry whose state word decides fire-vs-cancel with one
//!   compare-exchange; `schedule`, `cancel` and `Sleep::reset` change the
//!   word and push the entry onto an MPSC [`queue`]. The driver is unparked
//!   only when a new deadline is earlier than its planned wake-up (or once
//!   per 1024 submissions, so a backlog never builds while it sleeps) —
//!   never on every submission.
//! - **Parking**: a callback scheduled at least 50 ms out by
//!   [`TimerService::schedule`] (or a [`Sleep`] made by
//!   [`TimerService::sleep`] or [`TimerService::timeout`] that far out)
//!   waits in a slot of its thread's, next to the
//!   queue, until the thread schedules another or the driver sweeps the
//!   slots (every 10 ms while it is awake, and before any longer sleep). A
//!   cancel from the same thread in between (a request answered in time)
//!   takes it back: the driver never sees it, and no cache line crosses
//!   cores. Everything else about the timer is as if it had been queued.
//! - **Detached callbacks** ([`TimerService::schedule_detached`]) have no
//!   handle, so no shared entry either: the closure travels through the
//!   queue by value (inline when it is at most two words) and sits in a
//!   second wheel of the driver's, a [`wheel_core::BucketWheel`] that keeps
//!   each slot's timers in chunks and so files and fires them in memory
//!   order; the driver fires both wheels in deadline order together.
//!   Scheduling one allocates nothing and costs 32 bytes of the driver's
//!   memory, against 80 for a callback with a handle.
//! - **The driver** files submissions and fires due timers in bounded
//!   batches (4096 a round), advances the wheel to the current tick, runs
//!   due callbacks (panics are caught and counted) and wakes due futures,
//!   then parks until the next expiration (at most
//!   100 ms, to free cancelled entries), or indefinitely when there is none
//!   and nothing arrived in the last nap: no idle ticking.
//! - **Wakes**: when several sleeps fire in one round, the driver wakes one
//!   of their tasks and hands it the other wakers. The next `Sleep` polled
//!   or dropped, usually that task's, wakes them from its own thread, where a
//!   work-stealing executor such as tokio's takes them as local wakes into
//!   that worker's queue rather than as remote ones, each through its shared
//!   queue and often with an unpark. A handed batch that no task takes
//!   (its task is never polled) is woken by the driver itself at its next
//!   round, at most one tick later.
//! - **Many deadlines in one task**: a [`DelayQueue`] keeps its items in a
//!   wheel of its own and hands each back when due; the whole queue is one
//!   timer of the service's, due at its earliest deadline.
//! - **Intervals**: an [`Interval`] ticks at a fixed period on one timer
//!   that each tick moves ([`Sleep::reset`]): it allocates once and is one
//!   pending timer for its life. A tick already due is returned at once,
//!   with no round trip through the driver. [`MissedTickBehavior`] picks
//!   the next deadline after a tick observed when the following one was
//!   already due.
//! - **Time**: deadlines round *up* to the tick (1 ms by default) and the
//!   clock rounds down, so nothing fires early; under light load a timer
//!   fires within about one tick of its deadline. After a stall, everything
//!   that came due fires once, in deadline order.
//! - **Cancel** is O(1) from any thread and never waits for the driver. The
//!   driver drops a cancelled entry in its next round: within 100 ms (it
//!   never sleeps longer while timers are pending), within 1024 submissions,
//!   and before the cancelled deadline, whichever comes first. A lone cancel
//!   does not wake a sleeping driver: in the request-timeout pattern that
//!   would cost a context switch per request. A timer cancelled while still
//!   queued never enters the wheel, and costs the driver one pop.
//!
//! # The global service
//!
//! [`sleep`], [`sleep_until`], [`timeout`], [`timeout_at`], [`interval`]
//! and [`interval_at`] work on [`TimerService::global`], a service started
//! on first use that lives as long as the process: what `tokio::time::sleep`
//! is to a tokio runtime, with no runtime context to enter. Each thread goes through a clone of its own,
//! so threads making sleeps this way never contend on one handle count.
//!
//! ```
//! use std::time::Duration;
//!
//! # let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
//! rt.block_on(async {
//!     wheel_sync::sleep(Duration::from_millis(1)).await;
//!     let reply = wheel_sync::timeout(Duration::from_secs(1), async { "pong" }).await;
//!     assert_eq!(reply, Ok("pong"));
//! });
//! ```
//!
//! # Testing with a manual clock
//!
//! A service built with [`Builder::manual_clock`] has a clock that stands
//! still until [`TimerService::advance`] moves it, as a tokio runtime's
//! after `tokio::time::pause`. `advance` returns once every timer due by
//! the new time has fired, in deadline order, so a test of code that waits
//! an hour takes no time and does not depend on the machine's speed. Take
//! deadlines from [`TimerService::now`].
//!
//! ```
//! use std::task::{Context, Poll, Waker};
//! use std::time::Duration;
//!
//! let timers = wheel_sync::TimerService::builder().manual_clock().build().unwrap();
//! let start = timers.now();
//! let mut heartbeat = timers.interval(Duration::from_secs(30));
//! let mut cx = Context::from_waker(Waker::noop());
//! assert_eq!(heartbeat.poll_tick(&mut cx), Poll::Ready(start));
//! timers.advance(Duration::from_secs(30)).unwrap();
//! assert_eq!(heartbeat.poll_tick(&mut cx), Poll::Ready(start + Duration::from_secs(30)));
//! ```
//!
//! # Counting and limits
//!
//! [`TimerService::pending`] counts every live timer — callbacks, sleeps and
//! timeouts — and falls at once on fire, cancel or drop. Without a limit,
//! each thread counts on a cache line of its own and `pending` sums them:
//! exact whenever no timer is being scheduled or cancelled meanwhile.
//! [`Builder::max_pending`] bounds what [`TimerService::schedule`],
//! [`TimerService::schedule_detached`] and their `_at` forms admit, exactly
//! under concurrency. Futures
//! count toward that total (so they can make `schedule` refuse) but are
//! never refused themselves: a `Sleep` has no way to report an error.
//!
//! # Shutdown
//!
//! The driver stops when [`TimerService::shutdown`] is called or the last
//! handle — a `TimerService` clone, a [`TimerHandle`], a `Sleep` or a
//! `Timeout` — is dropped. The account is exact: every timer scheduled
//! `Ok` before `shutdown` returned fired, was cancelled, or is counted in
//! [`ShutdownReport::unfired`] (its callback dropped unrun, its task
//! woken), and [`TimerService::pending`] is 0 after; a schedule that races
//! the shutdown either gets `Ok` and is counted so, or gets
//! [`ScheduleError::Shutdown`]. A `Sleep` or `Timeout` that was pending at
//! shutdown panics when polled (as tokio's do): it would otherwise hang
//! forever or lie about its deadline.
//!
//! # User code and the driver
//!
//! Nothing a user hands in can stop the driver: a panic in a callback, in
//! a waker, or in the drop of a closure's captures or of a waker (on fire,
//! cancel and shutdown) is caught and counted in [`Stats::panicked`], and
//! everything else still fires. A cancelled callback's closure is dropped
//! by the thread that cancels it, at once. Callbacks run on the driver
//! thread one after another, so they must be short; a service built with
//! [`Builder::callback_executor`] hands them to an executor instead.
//!
//! # Never early, and never
//!
//! Deadlines round up to the tick and the clock rounds down. A deadline
//! past what the service can count — `Duration::MAX` from now, more than
//! 2⁶¹ ticks, or more than 584 years past the service's start — never
//! comes due, however far a manual clock is moved; it is never clamped to
//! an earlier one.
#![warn(missing_docs)]

mod clock;
pub mod delay_queue;
mod driver;
mod entry;
mod entry_cache;
mod executor;
#[cfg(not(loom))]
mod global;
mod interval;
mod job;
mod parked;
pub mod queue;
mod relay;
mod sleep;
mod sync;

use core::fmt;
use core::future::Future;
use std::io;
use std::time::{Duration, Instant};

use crate::clock::Clock;
use crate::driver::{Driver, Shared};
use crate::entry::{Callback, EntryRef, ABANDONED, CANCELLED, FIRED};
use crate::executor::Executor;
use crate::sync::{thread, Arc, Mutex};

pub use crate::delay_queue::DelayQueue;
#[cfg(not(loom))]
pub use crate::global::{interval, interval_at, sleep, sleep_until, timeout, timeout_at};
pub use crate::interval::{Interval, MissedTickBehavior};
pub use crate::sleep::{Elapsed, Sleep, Timeout};

/// Why a timer was not scheduled.
///
/// # Examples
/// ```
/// use std::time::Duration;
/// use wheel_sync::{ScheduleError, TimerService};
///
/// let timers = TimerService::builder().max_pending(0).build().unwrap();
/// let err = timers.schedule(Duration::from_secs(1), || ()).unwrap_err();
/// assert_eq!(err, ScheduleError::TooManyPending { limit: 0 });
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScheduleError {
    /// The service has shut down.
    Shutdown,
    /// `limit` timers are already pending (see [`Builder::max_pending`]).
    TooManyPending {
        /// The configured limit.
        limit: usize,
    },
}

impl fmt::Display for ScheduleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Shutdown => f.write_str("timer service has shut down"),
            Self::TooManyPending { limit } => {
                write!(f, "too many pending timers (limit {limit})")
            }
        }
    }
}

impl std::error::Error for ScheduleError {}

/// Why [`TimerService::shutdown`] did not shut the service down.
///
/// # Examples
/// ```
/// use wheel_sync::{ShutdownError, TimerService};
///
/// let timers = TimerService::new();
/// timers.shutdown().unwrap();
/// assert_eq!(timers.shutdown().unwrap_err(), ShutdownError::AlreadyShutDown);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShutdownError {
    /// Called from a callback on the driver thread, which cannot join itself.
    /// Drop the handles instead, or shut down from another thread.
    FromCallback,
    /// Another call already shut it down.
    AlreadyShutDown,
}

impl fmt::Display for ShutdownError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::FromCallback => "shutdown called from a timer callback",
            Self::AlreadyShutDown => "timer service already shut down",
        })
    }
}

impl std::error::Error for ShutdownError {}

/// Why [`TimerService::advance`] did not move the clock.
///
/// # Examples
/// ```
/// use std::time::Duration;
/// use wheel_sync::{AdvanceError, TimerService};
///
/// let timers = TimerService::new(); // follows the monotonic clock
/// assert_eq!(timers.advance(Duration::from_secs(1)), Err(AdvanceError::NotManual));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AdvanceError {
    /// The service follows the monotonic clock; only a service built with
    /// [`Builder::manual_clock`] can be advanced.
    NotManual,
    /// The service shut down before the timers due by the new time fired.
    Shutdown,
}

impl fmt::Display for AdvanceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::NotManual => "timer service follows the monotonic clock, not a manual one",
            Self::Shutdown => "timer service has shut down",
        })
    }
}

impl std::error::Error for AdvanceError {}

/// What a shutdown left undone.
///
/// # Examples
/// ```
/// use std::time::Duration;
///
/// let timers = wheel_sync::TimerService::new();
/// timers.schedule(Duration::from_secs(3600), || ()).unwrap();
/// assert_eq!(timers.shutdown().unwrap().unfired, 1);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ShutdownReport {
    /// Timers (callbacks and futures) pending at shutdown: they never fired,
    /// and their callbacks were dropped without running. Exact: every timer
    /// scheduled `Ok` before `shutdown` returned either fired, was
    /// cancelled, or is counted here.
    pub unfired: usize,
    /// Callbacks that fired and were handed to the
    /// [callback executor](Builder::callback_executor), which dropped them
    /// without running them, as of the report.
    pub unrun: usize,
}

/// Counters, as of the driver's last round (except `pending`, which is
/// exact).
///
/// # Examples
/// ```
/// use std::time::Duration;
///
/// let timers = wheel_sync::TimerService::new();
/// timers.schedule(Duration::ZERO, || ()).unwrap();
/// while timers.stats().fired == 0 {
///     std::thread::yield_now();
/// }
/// assert_eq!(timers.stats().scheduled, 1);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Stats {
    /// Timers the driver has received (a `Sleep` reset after firing counts again).
    pub scheduled: u64,
    /// Timers fired: callbacks run (including those that panicked) and futures woken.
    pub fired: u64,
    /// Timers cancelled (including dropped futures).
    pub cancelled: u64,
    /// Panics of user code, caught and counted, after which the driver (or
    /// the thread that ran it) carried on: callbacks, wakers woken, the
    /// drops of closures and what they capture (on fire, cancel and
    /// shutdown) and of wakers, and the callback executor itself.
    pub panicked: u64,
    /// Live timers now.
    pub pending: usize,
    /// The largest delay between a timer's due tick and its firing.
    pub max_lateness: Duration,
    /// The mean of that delay over fired timers.
    pub mean_lateness: Duration,
    /// How many times the driver has gone to sleep (and so been woken: by
    /// a due timer, a submission it had to see sooner, or a periodic
    /// reclaim). Scheduling and cancelling in a loop costs about one per
    /// thousand timers.
    pub wakeups: u64,
    /// Rounds the driver has run: a batch of submissions filed, what is
    /// due fired.
    pub rounds: u64,
    /// The most submissions filed in one round. Bounded, whatever the
    /// backlog: a burst never holds off the timers that are due.
    pub max_filed_per_round: u64,
    /// The most timers fired in one round. Bounded, however many are due
    /// at once: the queue is never left unread for long.
    pub max_fired_per_round: u64,
}

/// Configures a [`TimerService`].
///
/// # Examples
/// ```
/// use std::time::Duration;
///
/// let timers = wheel_sync::TimerService::builder()
///     .tick(Duration::from_micros(100))
///     .max_pending(10_000)
///     .thread_name("request-timeouts")
///     .build()
///     .unwrap();
/// assert_eq!(timers.pending(), 0);
/// ```
#[derive(Clone)]
pub struct Builder {
    tick: Duration,
    max_pending: usize,
    thread_name: String,
    manual_clock: bool,
    executor: Option<executor::Run>,
}

impl Default for Builder {
    fn default() -> Self {
        Self {
            tick: Duration::from_nanos(clock::DEFAULT_TICK_NS),
            max_pending: usize::MAX,
            thread_name: "wheel-timer".into(),
            manual_clock: false,
            executor: None,
        }
    }
}

impl fmt::Debug for Builder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Builder")
            .field("tick", &self.tick)
            .field("max_pending", &self.max_pending)
            .field("thread_name", &self.thread_name)
            .field("manual_clock", &self.manual_clock)
            .field("callback_executor", &self.executor.is_some())
            .finish()
    }
}

impl Builder {
    /// The wheel's resolution (default 1 ms): deadlines round up to it.
    ///
    /// # Examples
    /// ```
    /// let b = wheel_sync::TimerService::builder().tick(std::time::Duration::from_millis(10));
    /// assert!(b.build().is_ok());
    /// ```
    pub fn tick(mut self, tick: Duration) -> Self {
        self.tick = tick;
        self
    }

    /// The most timers `schedule`/`schedule_at` admit at once (default: no limit).
    ///
    /// # Examples
    /// ```
    /// let timers = wheel_sync::TimerService::builder().max_pending(1).build().unwrap();
    /// let d = std::time::Duration::from_secs(9);
    /// assert!(timers.schedule(d, || ()).is_ok());
    /// assert!(timers.schedule(d, || ()).is_err());
    /// ```
    pub fn max_pending(mut self, limit: usize) -> Self {
        self.max_pending = limit;
        self
    }

    /// The driver thread's name (default `wheel-timer`).
    ///
    /// # Examples
    /// ```
    /// let timers = wheel_sync::TimerService::builder().thread_name("t").build();
    /// assert!(timers.is_ok());
    /// ```
    pub fn thread_name(mut self, name: impl Into<String>) -> Self {
        self.thread_name = name.into();
        self
    }

    /// A clock that stands still until [`TimerService::advance`] moves it,
    /// for tests: what `tokio::time::pause` is to a tokio runtime. Timers
    /// then fire in an order and at times that do not depend on how fast
    /// the machine runs. The clock starts at the moment the service is
    /// built; take deadlines from [`TimerService::now`], not from
    /// `Instant::now()`, which goes on moving.
    ///
    /// # Examples
    /// ```
    /// use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
    /// use std::sync::Arc;
    /// use std::time::Duration;
    ///
    /// let timers = wheel_sync::TimerService::builder().manual_clock().build().unwrap();
    /// let fired = Arc::new(AtomicBool::new(false));
    /// let flag = fired.clone();
    /// timers.schedule(Duration::from_secs(30), move || flag.store(true, SeqCst)).unwrap();
    ///
    /// timers.advance(Duration::from_secs(29)).unwrap();
    /// assert!(!fired.load(SeqCst));
    /// timers.advance(Duration::from_secs(1)).unwrap(); // returns once it has fired
    /// assert!(fired.load(SeqCst));
    /// ```
    pub fn manual_clock(mut self) -> Self {
        self.manual_clock = true;
        self
    }

    /// Runs due callbacks through `executor` instead of on the driver
    /// thread, so that a slow callback delays no other timer (as Netty's
    /// `taskExecutor`). The driver hands each due callback, with a handle
    /// or detached, to `executor` as a box; the executor runs it, on a
    /// thread pool say, or drops it.
    ///
    /// Once handed over, a callback has fired: [`TimerHandle::cancel`]
    /// returns `false` and [`TimerHandle::is_fired`] is true. It runs at
    /// most once, when the executor calls it; a panic there, or in the
    /// executor itself, is caught and counted in [`Stats::panicked`], and
    /// one the executor drops unrun is counted in
    /// [`ShutdownReport::unrun`].
    ///
    /// Without an executor, callbacks run on the driver thread, one after
    /// another: they must be short, since every other timer waits for them.
    ///
    /// # Examples
    /// ```
    /// use std::sync::mpsc;
    /// use std::time::Duration;
    ///
    /// // A thread per callback, for the example; a pool in practice.
    /// let timers = wheel_sync::TimerService::builder()
    ///     .callback_executor(|callback| drop(std::thread::spawn(callback)))
    ///     .build()
    ///     .unwrap();
    /// let (tx, rx) = mpsc::channel();
    /// timers.schedule(Duration::from_millis(1), move || {
    ///     tx.send(std::thread::current().name().map(String::from)).unwrap()
    /// }).unwrap();
    /// assert_eq!(rx.recv().unwrap(), None); // not the driver, `wheel-timer`
    /// ```
    pub fn callback_executor<E>(mut self, executor: E) -> Self
    where
        E: Fn(Box<dyn FnOnce() + Send + 'static>) + Send + Sync + 'static,
    {
        self.executor = Some(std::sync::Arc::new(executor));
        self
    }

    /// Spawns the driver thread.
    ///
    /// # Errors
    /// `InvalidInput` if the tick is zero or longer than `u64::MAX` ns, or
    /// the thread name holds a NUL byte; the OS error if the thread cannot
    /// be spawned.
    ///
    /// # Examples
    /// ```
    /// use std::io::ErrorKind;
    /// use wheel_sync::TimerService;
    ///
    /// let zero = TimerService::builder().tick(std::time::Duration::ZERO);
    /// assert_eq!(zero.build().unwrap_err().kind(), ErrorKind::InvalidInput);
    /// let nul = TimerService::builder().thread_name("timer\0");
    /// assert_eq!(nul.build().unwrap_err().kind(), ErrorKind::InvalidInput);
    /// ```
    pub fn build(self) -> io::Result<TimerService> {
        if self.tick.is_zero() || u64::try_from(self.tick.as_nanos()).is_err() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "tick must be between 1 ns and u64::MAX ns",
            ));
        }
        if self.thread_name.contains('\0') {
            // std's spawn panics on it.
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "thread name must not contain a NUL byte",
            ));
        }
        let (shared, consumer) = Shared::new(
            Clock::new(self.tick, self.manual_clock),
            self.max_pending,
            self.executor.map(Executor::new),
        );
        let driver = Driver::new(shared.clone(), consumer);
        let join = thread::spawn_named(self.thread_name, move || driver.run())?;
        shared.set_driver(join.thread().clone());
        let owner = Arc::new(Owner {
            shared,
            join: Mutex::new(Some(join)),
        });
        Ok(TimerService::of(owner))
    }
}

/// Ends the driver when the last handle goes.
struct Owner {
    shared: Arc<Shared>,
    join: Mutex<Option<thread::JoinHandle<usize>>>,
}

impl Owner {
    fn take_join(&self) -> Option<thread::JoinHandle<usize>> {
        self.join.lock().unwrap_or_else(|e| e.into_inner()).take()
    }
}

impl Drop for Owner {
    fn drop(&mut self) {
        self.shared.begin_shutdown();
        let join = self.take_join();
        // On the driver thread (a callback dropped the last handle) the
        // driver is already on its way out; it cannot join itself.
        if !self.shared.on_driver_thread() {
            if let Some(join) = join {
                let _ = join.join();
            }
        }
    }
}

/// A handle to a timer service: cheap to clone, `Send + Sync`.
///
/// The driver stops when [`shutdown`](Self::shutdown) is called or the last
/// handle is dropped (clones, [`TimerHandle`]s and pending futures all hold
/// one). See the [crate docs](crate) for the design.
///
/// Each clone counts the handles made through it on a cache line of its
/// own, so threads that each schedule through their own clone never touch
/// a shared count; threads sharing one `TimerService` by reference bump one
/// counter for every [`TimerHandle`], `Sleep` and `Timeout` they make.
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
    local: Arc<Local>,
}

/// One `TimerService` value, shared by the handles made through it: what
/// the handles' reference counting touches. Aligned to a cache line of its
/// own, so that counting handles on one thread never disturbs another's.
#[repr(align(128))]
struct Local {
    /// `owner.shared` again, so that every call reaches it in one hop.
    shared: Arc<Shared>,
    owner: Arc<Owner>,
}

impl Clone for TimerService {
    /// A new handle on the same service, with a count of its own (see the
    /// type's docs).
    fn clone(&self) -> Self {
        Self::of(Arc::clone(&self.local.owner))
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

    fn of(owner: Arc<Owner>) -> Self {
        Self {
            local: Arc::new(Local {
                shared: Arc::clone(&owner.shared),
                owner,
            }),
        }
    }

    /// Another reference to this very value, for a handle made through it.
    fn share(&self) -> Self {
        Self {
            local: Arc::clone(&self.local),
        }
    }

    fn shared(&self) -> &Shared {
        &self.local.shared
    }

    /// Runs `f` on the driver thread once `delay` has passed (or hands it
    /// to the [callback executor](Builder::callback_executor)). On the
    /// driver, `f` must be short: the other timers wait while it runs. A
    /// panic in `f`, or in the drop of what it captured, is caught and
    /// counted in [`Stats::panicked`].
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
    pub fn schedule(
        &self,
        delay: Duration,
        f: impl FnOnce() + Send + 'static,
    ) -> Result<TimerHandle, ScheduleError> {
        let tick = self.shared().clock.tick_after(delay);
        self.schedule_tick(tick, delay >= parked::PARK_MIN, f)
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
    pub fn schedule_at(
        &self,
        deadline: Instant,
        f: impl FnOnce() + Send + 'static,
    ) -> Result<TimerHandle, ScheduleError> {
        let tick = self.shared().clock.tick_for(deadline);
        self.schedule_tick(tick, false, f)
    }

    /// Runs `f` on the driver thread once `delay` has passed. Fire and
    /// forget: there is no handle, so it cannot be cancelled.
    ///
    /// That makes it cheaper than [`schedule`](Self::schedule). A closure of
    /// up to two words (a reference and a number, say) travels inline, so
    /// scheduling allocates nothing and firing frees nothing, and the driver
    /// keeps it by value in a wheel built for timers that are never
    /// cancelled: 32 bytes per timer in all, where a callback with a handle
    /// costs 80. A bigger closure is boxed. It counts
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
        let shared = self.shared();
        shared.admit(true)?;
        shared.submit_job(tick, job::Job::new(f));
        Ok(())
    }

    /// `far`: the deadline is at least [`parked::PARK_MIN`] away, so the
    /// timer may be parked rather than queued (see `parked`).
    fn schedule_tick(
        &self,
        tick: u64,
        far: bool,
        f: impl FnOnce() + Send + 'static,
    ) -> Result<TimerHandle, ScheduleError> {
        let shared = self.shared();
        shared.admit(true)?;
        let (entry, message) = EntryRef::new(tick, Callback::new(f));
        shared.hand_over(message, tick, far);
        Ok(TimerHandle {
            service: self.share(),
            entry: entry.erase(),
        })
    }

    /// A future that completes after `delay`.
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    ///
    /// let timers = wheel_sync::TimerService::new();
    /// # let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    /// rt.block_on(async {
    ///     timers.sleep(Duration::from_millis(1)).await;
    /// });
    /// ```
    pub fn sleep(&self, delay: Duration) -> Sleep {
        let (deadline, tick) = self.shared().clock.deadline_after(delay);
        Sleep::new(self.share(), deadline, tick, delay >= parked::PARK_MIN)
    }

    /// A future that completes at `deadline`.
    ///
    /// # Examples
    /// ```
    /// use std::time::{Duration, Instant};
    ///
    /// let timers = wheel_sync::TimerService::new();
    /// let sleep = timers.sleep_until(Instant::now() + Duration::from_secs(1));
    /// assert_eq!(timers.pending(), 1);
    /// drop(sleep);
    /// assert_eq!(timers.pending(), 0);
    /// ```
    pub fn sleep_until(&self, deadline: Instant) -> Sleep {
        let tick = self.shared().clock.tick_for(deadline);
        self.sleep_at_tick(deadline, tick)
    }

    /// A sleep until `deadline`, whose tick is `tick`.
    pub(crate) fn sleep_at_tick(&self, deadline: Instant, tick: u64) -> Sleep {
        Sleep::new(self.share(), deadline, tick, false)
    }

    /// Runs `future` with a deadline `delay` from now.
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    ///
    /// let timers = wheel_sync::TimerService::new();
    /// # let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    /// let reply = rt.block_on(timers.timeout(Duration::from_secs(1), async { "pong" }));
    /// assert_eq!(reply, Ok("pong"));
    /// ```
    pub fn timeout<F: Future>(&self, delay: Duration, future: F) -> Timeout<F> {
        Timeout::new(future, self.sleep(delay))
    }

    /// Runs `future` with a deadline at `deadline`. The future is polled
    /// first, so one that is ready wins even when the deadline has passed.
    ///
    /// # Examples
    /// ```
    /// use std::time::{Duration, Instant};
    ///
    /// let timers = wheel_sync::TimerService::new();
    /// # let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    /// let deadline = Instant::now() + Duration::from_millis(2);
    /// let never = std::future::pending::<()>();
    /// assert!(rt.block_on(timers.timeout_at(deadline, never)).is_err());
    /// assert!(Instant::now() >= deadline);
    /// ```
    pub fn timeout_at<F: Future>(&self, deadline: Instant, future: F) -> Timeout<F> {
        Timeout::new(future, self.sleep_until(deadline))
    }

    /// Ticks every `period`, the first at once: [`interval_at`](Self::interval_at)
    /// from now.
    ///
    /// # Panics
    /// If `period` is zero.
    ///
    /// # Examples
    /// ```
    /// use std::time::{Duration, Instant};
    ///
    /// let timers = wheel_sync::TimerService::new();
    /// let start = Instant::now();
    /// let mut heartbeat = timers.interval(Duration::from_millis(2));
    /// # let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    /// rt.block_on(async {
    ///     for _ in 0..3 {
    ///         heartbeat.tick().await; // send a heartbeat
    ///     }
    /// });
    /// assert!(start.elapsed() >= Duration::from_millis(4)); // at 0, 2 and 4 ms
    /// ```
    pub fn interval(&self, period: Duration) -> Interval {
        self.interval_at(self.now(), period)
    }

    /// Ticks at `start` and every `period` after it, on one reused timer
    /// (see [`Interval`]).
    ///
    /// # Panics
    /// If `period` is zero.
    ///
    /// # Examples
    /// ```
    /// use std::time::{Duration, Instant};
    ///
    /// let timers = wheel_sync::TimerService::new();
    /// let start = Instant::now() + Duration::from_millis(2);
    /// let mut every = timers.interval_at(start, Duration::from_millis(3));
    /// # let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    /// rt.block_on(async {
    ///     assert_eq!(every.tick().await, start);
    ///     assert_eq!(every.tick().await, start + Duration::from_millis(3));
    /// });
    /// ```
    pub fn interval_at(&self, start: Instant, period: Duration) -> Interval {
        Interval::new(self.sleep_until(start), period)
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
    /// (scheduled, from any thread, before this call): callbacks have run and
    /// sleeps' wakers have been woken when it returns. Called from a
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
    /// let sleep = timers.sleep(Duration::from_secs(3600));
    /// timers.advance(Duration::from_secs(3599)).unwrap();
    /// assert!(!sleep.is_elapsed());
    /// timers.advance(Duration::from_secs(1)).unwrap();
    /// assert!(sleep.is_elapsed());
    /// ```
    pub fn advance(&self, by: Duration) -> Result<(), AdvanceError> {
        self.shared().advance(by)
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
        let driver = shared.stats();
        let load =
            |c: &crate::sync::atomic::AtomicU64| c.load(crate::sync::atomic::Ordering::Relaxed);
        let fired = load(&driver.fired);
        let mean_ns = load(&driver.lateness_sum_ns)
            .checked_div(fired)
            .unwrap_or(0);
        // Timers cancelled while parked never reach the driver's counts.
        let retracted = shared.retracted();
        Stats {
            scheduled: load(&driver.scheduled) + retracted,
            fired,
            cancelled: load(&driver.cancelled) + retracted,
            panicked: shared.panicked(),
            pending: shared.pending(),
            max_lateness: Duration::from_nanos(load(&driver.lateness_max_ns)),
            mean_lateness: Duration::from_nanos(mean_ns),
            wakeups: load(&driver.wakeups),
            rounds: load(&driver.rounds),
            max_filed_per_round: load(&driver.max_filed),
            max_fired_per_round: load(&driver.max_fired),
        }
    }

    /// Stops and joins the driver. Timers still pending never fire: their
    /// callbacks are dropped and counted in the report; pending futures are
    /// woken and panic if polled (see [`Sleep`]). Afterwards `schedule`
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
        if self.shared().on_driver_thread() {
            return Err(ShutdownError::FromCallback);
        }
        let join = self
            .local
            .owner
            .take_join()
            .ok_or(ShutdownError::AlreadyShutDown)?;
        self.shared().begin_shutdown();
        // The driver leaves its count behind before it ends, so nothing it
        // could meet after (a panicking drop of the user's) can lose it.
        let _ = join.join();
        Ok(self.shared().shutdown_report())
    }
}

impl fmt::Debug for TimerService {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TimerService")
            .field("pending", &self.pending())
            .field("max_pending", &self.shared().max_pending())
            .field("shut_down", &self.shared().is_shutdown())
            .finish()
    }
}

/// A scheduled callback. Dropping it does not cancel the timer.
///
/// # Examples
/// ```
/// use std::time::Duration;
///
/// let timers = wheel_sync::TimerService::new();
/// let handle = timers.schedule(Duration::from_secs(30), || ()).unwrap();
/// assert!(!handle.is_fired());
/// assert!(handle.cancel());
/// assert!(handle.is_cancelled());
/// assert!(!handle.cancel()); // only the first cancel wins
/// ```
pub struct TimerHandle {
    service: TimerService,
    /// Its action type erased: `TimerHandle` names no closure type.
    entry: EntryRef,
}

impl TimerHandle {
    /// Cancels the timer: `true` iff the callback will now never run;
    /// `false` if it ran, is running, was already cancelled or was abandoned
    /// at shutdown. O(1); the driver frees the timer within a round.
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    ///
    /// let timers = wheel_sync::TimerService::new();
    /// let handle = timers.schedule(Duration::from_secs(1), || ()).unwrap();
    /// assert!(handle.cancel());
    /// ```
    pub fn cancel(&self) -> bool {
        let entry = &self.entry;
        self.service.shared().cancel(entry, || entry.clone())
    }

    /// Whether the timer was cancelled, or abandoned by a shutdown: either
    /// way its callback will never run.
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    ///
    /// let timers = wheel_sync::TimerService::new();
    /// let handle = timers.schedule(Duration::from_secs(1), || ()).unwrap();
    /// assert!(!handle.is_cancelled());
    /// ```
    pub fn is_cancelled(&self) -> bool {
        matches!(self.entry.state(), CANCELLED | ABANDONED)
    }

    /// Whether the callback has started (it may still be running).
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    ///
    /// let timers = wheel_sync::TimerService::new();
    /// let handle = timers.schedule(Duration::ZERO, || ()).unwrap();
    /// while !handle.is_fired() {
    ///     std::thread::yield_now();
    /// }
    /// ```
    pub fn is_fired(&self) -> bool {
        self.entry.state() == FIRED
    }
}

impl fmt::Debug for TimerHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TimerHandle")
            .field("fired", &self.is_fired())
            .field("cancelled", &self.is_cancelled())
            .finish()
    }
}

// Compile-time proof that the futures and queues move between an
// executor's threads (and the handles are shared by them).
const _: fn() = || {
    fn send<S: Send>() {}
    fn send_sync<S: Send + Sync>() {}
    send_sync::<TimerService>();
    send_sync::<TimerHandle>();
    send::<Sleep>();
    send::<Timeout<core::future::Ready<()>>>();
    send::<Interval>();
    send::<DelayQueue<Vec<u8>>>();
};

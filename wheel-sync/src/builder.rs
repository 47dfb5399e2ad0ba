//! [`Builder`]: how a [`TimerService`] is configured and started.

use core::fmt;
use std::io;
use std::time::Duration;

use crate::clock::{self, Clock};
use crate::driver::{Driver, Inbox};
use crate::executor::{self, Executor};
use crate::shared::Shared;
use crate::sync::{thread, Arc};
use crate::TimerService;

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

    /// A clock that stands still until [`TimerService::advance`](crate::TimerService::advance) moves it,
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
    /// Once handed over, a callback has fired: [`TimerHandle::cancel`](crate::TimerHandle::cancel)
    /// returns `false` and [`TimerHandle::is_fired`](crate::TimerHandle::is_fired) is true. It runs at
    /// most once, when the executor calls it; a panic there, or in the
    /// executor itself, is caught and counted in [`Stats::panicked`](crate::Stats::panicked), and
    /// one the executor drops unrun is counted in
    /// [`ShutdownReport::unrun`](crate::ShutdownReport::unrun).
    ///
    /// Without an executor, callbacks run on the driver thread, one after
    /// another: they must be short, since every other timer waits for them.
    ///
    /// `executor` itself is called on the driver thread, so it must not
    /// block: hand the callback to a pool's spawn or an unbounded queue,
    /// not to a bounded channel that may be full. For the same reason a
    /// callback running on the executor must not shut the service down or
    /// drop its last clone while the driver may be blocked handing it
    /// work: that joins the driver.
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
        let (shared, consumers) =
            Shared::new(Clock::new(self.tick, self.manual_clock), self.max_pending);
        let executor = (self.executor).map(|run| Executor::new(run, shared.counts.clone()));
        let shared = Arc::new(shared);
        let for_driver = Arc::clone(&shared);
        let now = shared.clock.now_tick();
        // Built on its own thread: the wheel's tables (about 11 KiB) are
        // first written there, and never cross the caller's stack.
        let join = thread::spawn_named(self.thread_name, move || {
            Driver::new(for_driver, Inbox::new(consumers), executor, now).run()
        })?;
        shared.set_driver(join);
        Ok(TimerService::owning(shared))
    }
}

#[cfg(not(loom))]
impl Builder {
    /// Builds the service and makes it the process-wide one, behind
    /// [`TimerService::global`] and the free functions ([`sleep`](crate::sleep),
    /// [`timeout`](crate::timeout), …) and [`DelayQueue::new`](crate::DelayQueue::new):
    /// so code written against those runs on, say, a
    /// [manual clock](Self::manual_clock) in a test binary of its own.
    ///
    /// # Errors
    /// `AlreadyExists` if the process-wide service exists already (it is
    /// made on first use); otherwise as [`build`](Self::build).
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    ///
    /// let timers = wheel_sync::TimerService::builder().manual_clock().build_global().unwrap();
    /// let start = timers.now();
    /// timers.run_paused(wheel_sync::sleep(Duration::from_secs(60))).unwrap();
    /// assert_eq!(timers.now() - start, Duration::from_secs(60));
    /// ```
    pub fn build_global(self) -> io::Result<&'static TimerService> {
        let exists = || io::Error::new(io::ErrorKind::AlreadyExists, "the global service exists");
        if crate::global::GLOBAL.get().is_some() {
            return Err(exists());
        }
        let service = self.build()?;
        crate::global::GLOBAL.set(service).map_err(|_| exists())?;
        crate::global::GLOBAL.get().ok_or_else(exists)
    }
}

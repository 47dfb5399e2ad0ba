//! The process-wide service behind [`sleep`], [`sleep_until`], [`timeout`],
//! [`timeout_at`], [`interval`] and [`interval_at`]: what `tokio::time::sleep` is to a tokio runtime, but
//! under any executor and with no context to enter.

use core::future::Future;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::{Interval, Sleep, Timeout, TimerService};

pub(crate) static GLOBAL: OnceLock<TimerService> = OnceLock::new();

impl TimerService {
    /// The process-wide service, with the defaults (a 1 ms tick, no pending
    /// limit) unless [`Builder::build_global`](crate::Builder::build_global)
    /// made it, started on first use. Its driver thread lives as long as the
    /// process; shutting it down ends it for every user, so leave it running.
    ///
    /// # Panics
    /// On first use, if the OS cannot spawn the driver thread (as
    /// [`TimerService::new`]).
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    /// use wheel_sync::TimerService;
    ///
    /// let timers = TimerService::global();
    /// let handle = timers.schedule(Duration::from_secs(60), || ()).unwrap();
    /// assert!(handle.cancel());
    /// ```
    pub fn global() -> &'static TimerService {
        GLOBAL.get_or_init(TimerService::new)
    }
}

/// A future that completes after `delay`, on [`TimerService::global`].
///
/// # Panics
/// As [`TimerService::global`].
///
/// # Examples
/// ```
/// use std::time::{Duration, Instant};
///
/// let start = Instant::now();
/// # let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
/// rt.block_on(wheel_sync::sleep(Duration::from_millis(2)));
/// assert!(start.elapsed() >= Duration::from_millis(2));
/// ```
pub fn sleep(delay: Duration) -> Sleep {
    TimerService::global().sleep(delay)
}

/// A future that completes at `deadline`, on [`TimerService::global`].
///
/// # Panics
/// As [`TimerService::global`].
///
/// # Examples
/// ```
/// use std::time::{Duration, Instant};
///
/// let at = Instant::now() + Duration::from_millis(2);
/// # let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
/// rt.block_on(wheel_sync::sleep_until(at));
/// assert!(Instant::now() >= at);
/// ```
pub fn sleep_until(deadline: Instant) -> Sleep {
    TimerService::global().sleep_until(deadline)
}

/// Runs `future` with a deadline `delay` from now, on
/// [`TimerService::global`].
///
/// # Panics
/// As [`TimerService::global`].
///
/// # Examples
/// ```
/// use std::time::Duration;
///
/// # let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
/// let reply = rt.block_on(wheel_sync::timeout(Duration::from_secs(1), async { "pong" }));
/// assert_eq!(reply, Ok("pong"));
/// ```
pub fn timeout<F: Future>(delay: Duration, future: F) -> Timeout<F> {
    Timeout::new(future, sleep(delay))
}

/// Runs `future` with a deadline at `deadline`, on [`TimerService::global`].
///
/// # Panics
/// As [`TimerService::global`].
///
/// # Examples
/// ```
/// use std::time::{Duration, Instant};
///
/// let deadline = Instant::now() + Duration::from_millis(2);
/// # let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
/// let never = std::future::pending::<()>();
/// assert!(rt.block_on(wheel_sync::timeout_at(deadline, never)).is_err());
/// ```
pub fn timeout_at<F: Future>(deadline: Instant, future: F) -> Timeout<F> {
    Timeout::new(future, sleep_until(deadline))
}

/// Ticks every `period`, the first at once, on [`TimerService::global`]
/// (see [`Interval`]).
///
/// # Panics
/// If `period` is zero; and as [`TimerService::global`].
///
/// # Examples
/// ```
/// use std::time::{Duration, Instant};
///
/// let start = Instant::now();
/// let mut every = wheel_sync::interval(Duration::from_millis(2));
/// # let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
/// rt.block_on(async {
///     every.tick().await;
///     every.tick().await;
/// });
/// assert!(start.elapsed() >= Duration::from_millis(2));
/// ```
pub fn interval(period: Duration) -> Interval {
    TimerService::global().interval(period)
}

/// Ticks at `start` and every `period` after it, on
/// [`TimerService::global`] (see [`Interval`]).
///
/// # Panics
/// If `period` is zero; and as [`TimerService::global`].
///
/// # Examples
/// ```
/// use std::time::{Duration, Instant};
///
/// let start = Instant::now() + Duration::from_millis(1);
/// let mut every = wheel_sync::interval_at(start, Duration::from_millis(2));
/// # let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
/// assert_eq!(rt.block_on(every.tick()), start);
/// ```
pub fn interval_at(start: Instant, period: Duration) -> Interval {
    TimerService::global().interval_at(start, period)
}

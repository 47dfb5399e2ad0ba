//! The futures a service makes: [`Sleep`], [`Timeout`] and [`Interval`],
//! each on the lane of the thread that makes it.

use core::future::Future;
use std::time::{Duration, Instant};

use super::TimerService;
use crate::{lane, Interval, Sleep, Timeout};

impl TimerService {
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
        Sleep::after(lane::lane(self.shared()), delay)
    }

    /// A future that completes at `deadline`.
    ///
    /// # Examples
    /// ```
    /// use std::time::{Duration, Instant};
    ///
    /// let timers = wheel_sync::TimerService::new();
    /// # let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    /// rt.block_on(timers.sleep_until(Instant::now() + Duration::from_millis(1)));
    /// ```
    pub fn sleep_until(&self, deadline: Instant) -> Sleep {
        Sleep::until(lane::lane(self.shared()), deadline)
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
}

//! Why a call into the service did not do what it asked: the error types.

use core::fmt;

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
    /// `limit` timers are already pending (see [`Builder::max_pending`](crate::Builder::max_pending)).
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

/// Why [`TimerService::shutdown`](crate::TimerService::shutdown) did not shut the service down.
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

/// Why [`TimerService::advance`](crate::TimerService::advance) did not move
/// the clock, or did not wait for what came due.
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
    /// [`Builder::manual_clock`](crate::Builder::manual_clock) can be advanced.
    NotManual,
    /// The service shut down before the timers due by the new time fired.
    /// One already shut down when called keeps its clock where it was; one
    /// that shuts down during the call may have moved it.
    Shutdown,
    /// [`TimerService::advance_to_next`](crate::TimerService::advance_to_next)
    /// or [`run_paused`](crate::TimerService::run_paused) was called from a
    /// callback, on the driver thread, which alone knows the next deadline
    /// and is busy running the callback.
    FromCallback,
}

impl fmt::Display for AdvanceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::NotManual => "timer service follows the monotonic clock, not a manual one",
            Self::Shutdown => "timer service has shut down",
            Self::FromCallback => "the next deadline asked for from a timer callback",
        })
    }
}

impl std::error::Error for AdvanceError {}

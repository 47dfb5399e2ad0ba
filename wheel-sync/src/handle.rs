//! [`TimerHandle`]: a scheduled callback, for cancelling it.

use core::fmt;

use crate::entry::{EntryRef, ABANDONED, CANCELLED, FIRED};
use crate::lane::Lane;
use crate::sync::Arc;

/// A scheduled callback. Dropping it does not cancel the timer, and it does
/// not keep the service running: a shutdown abandons the callback, and the
/// handle then says it was cancelled.
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
    pub(crate) lane: Arc<Lane>,
    /// Its action type erased: `TimerHandle` names no closure type.
    pub(crate) entry: EntryRef,
}

impl TimerHandle {
    /// Cancels the timer: `true` iff the callback will now never run;
    /// `false` if it ran, is running, was already cancelled or was abandoned
    /// at shutdown. O(1), and it sends the driver nothing: the closure is
    /// dropped at once, on this thread; the timer's memory goes once the
    /// driver drops its copy, if it has one (at the deadline, or sooner
    /// with the other dead copies once they outnumber the live ones).
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    ///
    /// let timers = wheel_sync::TimerService::new();
    /// let handle = timers.schedule(Duration::from_secs(1), || ()).unwrap();
    /// assert!(handle.cancel());
    /// ```
    #[inline]
    pub fn cancel(&self) -> bool {
        self.lane.shared.cancel(self.lane.spot, &self.entry)
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

//! What the service reports about itself: [`Stats`] and the
//! [`ShutdownReport`].

use std::time::Duration;

use crate::Lateness;

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
    /// cancelled, or is counted here, however long a producer racing the
    /// shutdown was held up mid-schedule (see the crate docs).
    pub unfired: usize,
    /// Callbacks that fired and were handed to the
    /// [callback executor](crate::Builder::callback_executor), which dropped them
    /// without running them, as of the report.
    pub unrun: usize,
}

/// Counters: `fired` and the lateness as of the driver's last fire (a fire
/// is counted before its callback runs or its task is woken); `scheduled`,
/// `cancelled`, `panicked` and `waits_for_driver` as the threads that
/// schedule, cancel or catch count them; `pending` as
/// [`TimerService::pending`](crate::TimerService::pending) counts it,
/// exact whenever no timer is being counted in or out meanwhile.
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
    /// Timers scheduled: counted in by `schedule` and its kin, and by a
    /// `Sleep`'s first poll (a reset after firing counts again). A
    /// schedule that a shutdown refuses is counted in, then out again: a
    /// read at that moment sees it.
    pub scheduled: u64,
    /// Timers fired: callbacks run (including those that panicked) and futures woken.
    pub fired: u64,
    /// Timers cancelled (including dropped futures).
    pub cancelled: u64,
    /// Panics of user code, caught and counted, after which the driver (or
    /// the thread that ran it) carried on: callbacks, wakers woken, the
    /// drops of closures and what they capture (on fire, cancel and
    /// shutdown), and the callback executor itself, and the drop of a
    /// `Sleep`'s waker inside the driver's wake, which consumes it (on fire
    /// or at shutdown). Otherwise a `Sleep`'s waker is cloned and dropped on
    /// its owner's thread, in its poll or drop, where a panic unwinds into
    /// the caller as in any future: not counted.
    pub panicked: u64,
    /// Live timers now.
    pub pending: usize,
    /// The largest delay between a timer's due tick and its firing.
    pub max_lateness: Duration,
    /// The mean of that delay over fired timers.
    pub mean_lateness: Duration,
    /// Its distribution: p50, p99, p99.9 and the maximum.
    pub lateness: Lateness,
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
    /// The most timers one round took out of its wheels to fire (dead
    /// copies of cancelled or moved timers included). Bounded, however many
    /// are due at once: the queues are never left unread for long.
    pub max_fired_per_round: u64,
    /// How many times a thread that schedules waited for the driver to
    /// catch up: the push that ends each 4096 to its spot's queue found
    /// the driver more than 4096 messages behind it, and waited until the
    /// driver had taken them (or had taken nothing for 100 ms). Zero
    /// unless the threads that schedule outrun the driver, as they can
    /// when they outnumber the cores or the callbacks are slow.
    pub waits_for_driver: u64,
}

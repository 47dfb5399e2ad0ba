//! `Interval`: ticks at a fixed period on one reused timer, as tokio's
//! `interval`, under any executor.

use core::future::{poll_fn, Future};
use core::pin::Pin;
use core::task::{ready, Context, Poll};
use std::time::{Duration, Instant};

use crate::Sleep;

/// What an [`Interval`] does after a tick it could not deliver in time: one
/// observed at or after the following tick's deadline (the task was busy, or
/// not polled, for a period or more).
///
/// The late tick itself is delivered; this decides when the ones after it
/// are due. With a period of 10 ms, ticks due at 10, 20, 30… and the tick
/// due at 10 observed at 35:
///
/// | behaviour | the ticks that follow are due at |
/// |---|---|
/// | `Burst` | 20, 30 (both at once), then 40, 50… |
/// | `Delay` | 45, 55, 65… (a period after 35) |
/// | `Skip`  | 40, 50, 60… (the schedule, minus what was missed) |
///
/// # Examples
/// ```
/// use std::time::Duration;
/// use wheel_sync::MissedTickBehavior;
///
/// let timers = wheel_sync::TimerService::new();
/// let mut frames = timers.interval(Duration::from_millis(16));
/// assert_eq!(frames.missed_tick_behavior(), MissedTickBehavior::Burst);
/// frames.set_missed_tick_behavior(MissedTickBehavior::Skip);
/// assert_eq!(frames.missed_tick_behavior(), MissedTickBehavior::Skip);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum MissedTickBehavior {
    /// Keep the schedule: the missed ticks are delivered at once, one per
    /// call, until the interval has caught up. The default, as tokio's.
    #[default]
    Burst,
    /// Start a new schedule a period after the late tick was observed.
    Delay,
    /// Keep the schedule, but drop the ticks whose time has passed: the next
    /// is the first one still in the future.
    Skip,
}

impl MissedTickBehavior {
    /// When the tick after one due at `due`, observed at `now`, is due;
    /// `None` past what `Instant` holds: never.
    fn next_deadline(self, due: Instant, now: Instant, period: Duration) -> Option<Instant> {
        let scheduled = due.checked_add(period);
        match scheduled {
            Some(next) if now < next => Some(next),
            _ => match self {
                Self::Burst => scheduled,
                Self::Delay => now.checked_add(period),
                Self::Skip => {
                    // How far `now` is into the period it falls in.
                    let into_ns = now.saturating_duration_since(due).as_nanos() % period.as_nanos();
                    // Below `period`, so its seconds fit a `u64` as `period`'s do.
                    let secs = u64::try_from(into_ns / 1_000_000_000).unwrap_or(u64::MAX);
                    let into = Duration::new(secs, (into_ns % 1_000_000_000) as u32);
                    now.checked_add(period.saturating_sub(into))
                }
            },
        }
    }
}

/// Ticks every `period`; made by [`TimerService::interval`] or
/// [`TimerService::interval_at`] (or the free [`interval`] and
/// [`interval_at`]).
///
/// The first tick is due at the start (at once, for `interval`), then one
/// every period after it. [`tick`](Self::tick) waits for the next and
/// returns the deadline it was due at, never before that deadline. One
/// timer serves every tick: it is moved, not made anew, so an interval
/// allocates once (at its first wait) and counts as at most one in
/// [`TimerService::pending`] for as long as it lives. A tick that is already due when asked for is delivered
/// without waiting for the driver. See [`MissedTickBehavior`] for ticks
/// that come too late.
///
/// [`TimerService::interval`]: crate::TimerService::interval
/// [`TimerService::interval_at`]: crate::TimerService::interval_at
/// [`TimerService::pending`]: crate::TimerService::pending
/// [`interval`]: crate::interval
/// [`interval_at`]: crate::interval_at
///
/// # Panics
/// Waiting for a tick the interval's timer was waiting for when the
/// service shut down panics, as [`Sleep`] does (a tick due, but late, is
/// abandoned like one not yet due); ticks that were already due when the
/// interval last moved its timer (a burst owed) are still delivered.
/// [`is_shut_down`](Self::is_shut_down) tells beforehand.
///
/// # Examples
/// A game loop's fixed update, three frames:
/// ```
/// use std::time::{Duration, Instant};
///
/// let timers = wheel_sync::TimerService::new();
/// let start = Instant::now();
/// let mut frames = timers.interval_at(start, Duration::from_millis(5));
/// # let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
/// rt.block_on(async {
///     for frame in 0..3 {
///         let due = frames.tick().await;
///         assert_eq!(due, start + Duration::from_millis(5) * frame);
///         assert!(Instant::now() >= due);
///     }
/// });
/// ```
#[derive(Debug)]
#[must_use = "an interval does nothing unless its ticks are awaited"]
pub struct Interval {
    /// Due at the next tick's deadline.
    sleep: Sleep,
    period: Duration,
    missed: MissedTickBehavior,
}

impl Interval {
    /// # Panics
    /// If `period` is zero.
    pub(crate) fn new(sleep: Sleep, period: Duration) -> Self {
        assert!(
            !period.is_zero(),
            "wheel-sync: an interval's period must be non-zero"
        );
        Self {
            sleep,
            period,
            missed: MissedTickBehavior::default(),
        }
    }

    /// Waits for the next tick and returns the deadline it was due at.
    /// Dropping the future before it completes loses no tick.
    ///
    /// # Panics
    /// As [`Interval`]: if the service shut down before this tick was due.
    ///
    /// # Examples
    /// ```
    /// use std::time::{Duration, Instant};
    ///
    /// let timers = wheel_sync::TimerService::new();
    /// let mut every = timers.interval(Duration::from_millis(2));
    /// # let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    /// rt.block_on(async {
    ///     let first = every.tick().await; // at once
    ///     let second = every.tick().await;
    ///     assert_eq!(second - first, Duration::from_millis(2));
    ///     assert!(Instant::now() >= second);
    /// });
    /// ```
    pub async fn tick(&mut self) -> Instant {
        poll_fn(|cx| self.poll_tick(cx)).await
    }

    /// Polls for the next tick: `Ready(deadline it was due at)` once it is
    /// due, else `Pending` with `cx`'s waker registered (the latest one
    /// polled with is woken).
    ///
    /// # Panics
    /// As [`tick`](Self::tick).
    ///
    /// # Examples
    /// ```
    /// use std::task::{Context, Poll, Waker};
    /// use std::time::{Duration, Instant};
    ///
    /// let timers = wheel_sync::TimerService::new();
    /// let start = Instant::now();
    /// let mut every = timers.interval_at(start, Duration::from_secs(60));
    /// let mut cx = Context::from_waker(Waker::noop());
    /// assert_eq!(every.poll_tick(&mut cx), Poll::Ready(start));
    /// assert_eq!(every.poll_tick(&mut cx), Poll::Pending);
    /// ```
    pub fn poll_tick(&mut self, cx: &mut Context<'_>) -> Poll<Instant> {
        let due = self.sleep.deadline();
        let mut now = self.sleep.now();
        // A tick abandoned by a shutdown is not delivered when its time
        // comes: waiting for it panics, as the sleep's poll does.
        if now < due || self.sleep.is_shut_down() {
            ready!(Pin::new(&mut self.sleep).poll(cx));
            now = self.sleep.now();
        }
        let next = self.missed.next_deadline(due, now, self.period);
        self.arm(next);
        Poll::Ready(due)
    }

    /// Moves the sleep to the next tick; `None` for one that never comes.
    fn arm(&mut self, next: Option<Instant>) {
        let deadline = next.unwrap_or_else(|| self.sleep.never());
        self.sleep.reset(deadline);
    }

    /// Starts the schedule again a period from now: the next tick is due
    /// then, and one every period after it.
    ///
    /// # Examples
    /// ```
    /// use std::time::{Duration, Instant};
    ///
    /// let timers = wheel_sync::TimerService::new();
    /// let mut every = timers.interval(Duration::from_millis(3));
    /// let before = Instant::now();
    /// every.reset(); // the tick due at once is dropped
    /// # let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    /// let due = rt.block_on(every.tick());
    /// assert!(due >= before + Duration::from_millis(3));
    /// ```
    pub fn reset(&mut self) {
        let next = self.sleep.now().checked_add(self.period);
        self.arm(next);
    }

    /// Starts the schedule again now: the next tick is due at once, and
    /// one every period after it (tokio's `Interval::reset_immediately`).
    ///
    /// # Examples
    /// ```
    /// use std::time::{Duration, Instant};
    ///
    /// let timers = wheel_sync::TimerService::new();
    /// let mut every = timers.interval(Duration::from_secs(60));
    /// # let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    /// rt.block_on(every.tick()); // the first tick, at once
    /// every.reset_immediately();
    /// let before = Instant::now();
    /// rt.block_on(every.tick()); // at once again, not a minute later
    /// assert!(before.elapsed() < Duration::from_secs(30));
    /// ```
    pub fn reset_immediately(&mut self) {
        let now = self.sleep.now();
        self.arm(Some(now));
    }

    /// Starts the schedule again `after` from now: the next tick is due
    /// then, and one every period after it (tokio's `Interval::reset_after`).
    ///
    /// # Examples
    /// ```
    /// use std::time::{Duration, Instant};
    ///
    /// let timers = wheel_sync::TimerService::new();
    /// let mut every = timers.interval(Duration::from_millis(3));
    /// let before = Instant::now();
    /// every.reset_after(Duration::from_millis(5));
    /// # let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    /// let due = rt.block_on(every.tick());
    /// assert!(due >= before + Duration::from_millis(5));
    /// ```
    pub fn reset_after(&mut self, after: Duration) {
        let next = self.sleep.now().checked_add(after);
        self.arm(next);
    }

    /// Starts the schedule again at `deadline`: the next tick is due then
    /// (at once if it has passed), and one every period after it.
    ///
    /// # Examples
    /// ```
    /// use std::time::{Duration, Instant};
    ///
    /// let timers = wheel_sync::TimerService::new();
    /// let mut every = timers.interval(Duration::from_millis(4));
    /// let at = Instant::now() + Duration::from_millis(2);
    /// every.reset_at(at);
    /// # let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    /// rt.block_on(async {
    ///     assert_eq!(every.tick().await, at);
    ///     assert_eq!(every.tick().await, at + Duration::from_millis(4));
    /// });
    /// ```
    pub fn reset_at(&mut self, deadline: Instant) {
        self.sleep.reset(deadline);
    }

    /// The time between ticks.
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    ///
    /// let timers = wheel_sync::TimerService::new();
    /// let every = timers.interval(Duration::from_millis(50));
    /// assert_eq!(every.period(), Duration::from_millis(50));
    /// ```
    pub fn period(&self) -> Duration {
        self.period
    }

    /// What this interval does after a late tick.
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    /// use wheel_sync::MissedTickBehavior;
    ///
    /// let every = wheel_sync::TimerService::new().interval(Duration::from_secs(1));
    /// assert_eq!(every.missed_tick_behavior(), MissedTickBehavior::Burst);
    /// ```
    pub fn missed_tick_behavior(&self) -> MissedTickBehavior {
        self.missed
    }

    /// Sets what this interval does after a late tick, from the next one on.
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    /// use wheel_sync::MissedTickBehavior;
    ///
    /// let mut every = wheel_sync::TimerService::new().interval(Duration::from_secs(1));
    /// every.set_missed_tick_behavior(MissedTickBehavior::Delay);
    /// assert_eq!(every.missed_tick_behavior(), MissedTickBehavior::Delay);
    /// ```
    pub fn set_missed_tick_behavior(&mut self, behavior: MissedTickBehavior) {
        self.missed = behavior;
    }

    /// Whether the service shut down before the next tick was due (waiting
    /// for it would panic).
    ///
    /// # Examples
    /// ```
    /// use std::time::{Duration, Instant};
    ///
    /// let timers = wheel_sync::TimerService::new();
    /// let every = timers.interval_at(Instant::now() + Duration::from_secs(60), Duration::from_secs(60));
    /// assert!(!every.is_shut_down());
    /// timers.shutdown().unwrap();
    /// assert!(every.is_shut_down());
    /// ```
    pub fn is_shut_down(&self) -> bool {
        self.sleep.is_shut_down()
    }
}

#[cfg(test)]
mod tests {
    use super::MissedTickBehavior::{self, Burst, Delay, Skip};
    use std::time::{Duration, Instant};

    const ALL: [MissedTickBehavior; 3] = [Burst, Delay, Skip];

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn a_tick_on_time_keeps_the_schedule_whatever_the_behavior() {
        let base = Instant::now();
        for b in ALL {
            let next = b.next_deadline(base + ms(10), base + ms(19), ms(10));
            assert_eq!(next, Some(base + ms(20)), "{b:?}");
        }
    }

    #[test]
    fn after_a_missed_tick_each_behavior_picks_its_own_next_deadline() {
        let base = Instant::now();
        let (due, now) = (base + ms(10), base + ms(35));
        assert_eq!(Burst.next_deadline(due, now, ms(10)), Some(base + ms(20)));
        assert_eq!(Delay.next_deadline(due, now, ms(10)), Some(base + ms(45)));
        assert_eq!(Skip.next_deadline(due, now, ms(10)), Some(base + ms(40)));
    }

    #[test]
    fn a_tick_observed_exactly_at_the_next_deadline_is_missed() {
        let base = Instant::now();
        let (due, now) = (base + ms(10), base + ms(20));
        assert_eq!(Burst.next_deadline(due, now, ms(10)), Some(base + ms(20)));
        assert_eq!(Delay.next_deadline(due, now, ms(10)), Some(base + ms(30)));
        assert_eq!(Skip.next_deadline(due, now, ms(10)), Some(base + ms(30)));
    }

    #[test]
    fn skip_stays_on_the_grid_for_periods_with_fractions_of_a_second() {
        let base = Instant::now();
        let period = Duration::new(1, 300_000_000);
        let due = base + period;
        let now = base + Duration::new(7, 0);
        let next = Skip.next_deadline(due, now, period);
        // The grid is base + k × 1.3 s: 6.5 s has passed, 7.8 s has not.
        assert_eq!(next, Some(base + period * 6));
    }

    #[test]
    fn a_period_past_what_instant_holds_gives_never_not_a_panic() {
        let base = Instant::now();
        for b in ALL {
            let next = b.next_deadline(base, base + ms(1), Duration::MAX);
            assert_eq!(next, None, "{b:?}");
        }
    }
}

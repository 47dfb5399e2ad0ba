//! `tokio_util::time::DelayQueue`, the most used timer wheel in Rust, driven
//! tick by tick from outside the way the other peers are.

use std::future::poll_fn;
use std::io;
use std::task::Poll;
use std::time::Duration;

use tokio::runtime::{Builder, Runtime};
use tokio::time::Instant;
use tokio_util::time::delay_queue::Key;
use tokio_util::time::DelayQueue;

use super::TimerQueue;

/// Where deadlines past [`DelayQueueTimers::LAST_TICK`] and the sentinel
/// are filed.
const NEVER: u64 = DelayQueueTimers::LAST_TICK + 1;

/// A `DelayQueue<u64>` with its own single-threaded tokio runtime whose
/// clock is paused: a tick is one millisecond of tokio time.
///
/// How time is driven: the queue's epoch is the paused clock at creation, so
/// tick `t` is the instant `epoch + t ms` and [`insert`](TimerQueue::insert)
/// calls `insert_at` with it. [`advance`](TimerQueue::advance) runs one
/// `block_on` on the runtime that moves the paused clock forward with
/// `tokio::time::advance` (which lets tokio's timer driver fire the queue's
/// internal `Sleep`) and then polls `poll_expired` until it is pending, so the
/// cost of the `Sleep` the queue re-arms for each new next deadline is part of
/// what is measured, as it is in a real program.
///
/// A sentinel timer past [`LAST_TICK`](Self::LAST_TICK) is filed at
/// creation and never fires. It keeps the queue non-empty, so the queue
/// always owns its `Sleep` and insert, cancel and reschedule never need a
/// tokio context: they run with no per-call overhead that a real DelayQueue
/// user inside a runtime would not pay.
///
/// DelayQueue's own contracts carry over: a key of a fired or cancelled
/// timer may name a newer timer that reused its slot (keys have no
/// generation), and [`reschedule`](TimerQueue::reschedule) of such a key
/// panics inside `reset_at`, which has no fallible form. The benchmarks only
/// use pending keys.
///
/// # Examples
/// ```
/// use wheel_bench::peers::{DelayQueueTimers, TimerQueue};
///
/// let mut queue = DelayQueueTimers::new()?;
/// queue.insert(1_500, 7); // due 1.5 s of tokio time after creation
/// let mut fired = Vec::new();
/// assert_eq!(queue.advance(1_499, |v| fired.push(v)), 0);
/// assert_eq!(queue.advance(1_500, |v| fired.push(v)), 1);
/// assert_eq!(fired, [7]);
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct DelayQueueTimers {
    // Before `runtime`: the queue's `Sleep` must leave the timer driver
    // before the runtime shuts it down.
    queue: DelayQueue<u64>,
    epoch: Instant,
    now: u64,
    runtime: Runtime,
}

impl DelayQueueTimers {
    /// The clock of this peer stops here (about a year of milliseconds, far
    /// past anything the benchmarks reach): DelayQueue rejects deadlines more
    /// than 2³⁶ − 1 ms past its clock, so any later deadline is filed at
    /// `LAST_TICK + 1`, a tick the clock never reaches.
    ///
    /// # Examples
    /// ```
    /// use wheel_bench::peers::{DelayQueueTimers, TimerQueue};
    ///
    /// let mut queue = DelayQueueTimers::new()?;
    /// queue.insert(u64::MAX, 1);
    /// assert_eq!(queue.advance(DelayQueueTimers::LAST_TICK, |_| ()), 0);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub const LAST_TICK: u64 = (1 << 35) - 1;

    /// An empty queue (clock at tick 0) on a new paused current-thread runtime.
    ///
    /// # Errors
    /// If tokio cannot build the runtime.
    ///
    /// # Examples
    /// ```
    /// use wheel_bench::peers::{DelayQueueTimers, TimerQueue};
    ///
    /// assert!(DelayQueueTimers::new()?.is_empty());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn new() -> io::Result<Self> {
        let runtime = Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build()?;
        // `DelayQueue::new` and the first `Sleep` read the runtime's clock.
        let (queue, epoch) = {
            let _context = runtime.enter();
            let epoch = Instant::now();
            let mut queue = DelayQueue::new();
            queue.insert_at(u64::MAX, epoch + Duration::from_millis(NEVER));
            (queue, epoch)
        };
        Ok(Self {
            queue,
            epoch,
            now: 0,
            runtime,
        })
    }

    #[inline]
    fn instant(&self, tick: u64) -> Instant {
        self.epoch + Duration::from_millis(tick.min(NEVER))
    }
}

impl std::fmt::Debug for DelayQueueTimers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DelayQueueTimers")
            .field("now", &self.now)
            .field("len", &self.len())
            .finish_non_exhaustive()
    }
}

impl TimerQueue for DelayQueueTimers {
    type Key = Key;

    const NAME: &'static str = "delay-queue";

    const DETECTS_STALE_KEYS: bool = false;

    #[inline]
    fn insert(&mut self, deadline: u64, value: u64) -> Key {
        let when = self.instant(deadline);
        self.queue.insert_at(value, when)
    }

    #[inline]
    fn cancel(&mut self, key: Key) -> Option<u64> {
        self.queue
            .try_remove(&key)
            .map(|expired| expired.into_inner())
    }

    #[inline]
    fn reschedule(&mut self, key: &mut Key, deadline: u64) -> bool {
        let when = self.instant(deadline);
        self.queue.reset_at(key, when);
        true
    }

    fn advance(&mut self, now: u64, mut fire: impl FnMut(u64)) -> usize {
        let now = now.min(Self::LAST_TICK);
        let step = now.saturating_sub(self.now);
        self.now = self.now.max(now);
        let queue = &mut self.queue;
        self.runtime.block_on(async {
            if step > 0 {
                tokio::time::advance(Duration::from_millis(step)).await;
            }
            poll_fn(|cx| {
                let mut fired = 0;
                while let Poll::Ready(Some(expired)) = queue.poll_expired(cx) {
                    fire(expired.into_inner());
                    fired += 1;
                }
                Poll::Ready(fired)
            })
            .await
        })
    }

    #[inline]
    fn len(&self) -> usize {
        // The sentinel is not a timer anyone asked for.
        self.queue.len() - 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clock_moves_only_when_advanced() {
        let mut queue = DelayQueueTimers::new().unwrap();
        queue.insert(1, 1);
        let mut fired = Vec::new();
        assert_eq!(queue.advance(0, |v| fired.push(v)), 0);
        assert_eq!(queue.advance(1, |v| fired.push(v)), 1);
        assert_eq!(fired, [1]);
    }

    #[test]
    fn the_sentinel_never_fires_and_is_not_counted() {
        let mut queue = DelayQueueTimers::new().unwrap();
        assert!(queue.is_empty());
        let mut fired = Vec::new();
        assert_eq!(queue.advance(u64::MAX, |v| fired.push(v)), 0);
        queue.insert(u64::MAX, 9); // filed past the last tick: never due
        queue.insert(DelayQueueTimers::LAST_TICK, 8);
        assert_eq!(queue.len(), 2);
        assert_eq!(queue.advance(u64::MAX, |v| fired.push(v)), 1);
        assert_eq!(fired, [8]);
    }
}

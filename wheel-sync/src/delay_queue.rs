//! `DelayQueue`: many deadlines owned by one task, on one timer of the
//! service's, as `tokio_util::time::DelayQueue`; the [`Key`] that names an
//! item in it and the [`Expired`] item it hands back. With the `stream`
//! feature it is a `futures_core::Stream` of [`Expired`] items.

use core::fmt;
use core::future::{poll_fn, Future};
use core::pin::Pin;
use core::task::{Context, Poll};
use std::time::{Duration, Instant};

use wheel_core::{TimerId, Wheel};

use crate::lane::{self, Lane};
use crate::sync::Arc;
use crate::{Sleep, TimerService};

mod expired;
#[cfg(feature = "stream")]
mod stream;

pub use expired::Expired;

/// Names an item in a [`DelayQueue`]. Keys are generational: once the item
/// has expired or been removed, its key names nothing, even if the queue
/// reuses the place for a new item.
///
/// # Examples
/// ```
/// use std::time::Duration;
///
/// let timers = wheel_sync::TimerService::new();
/// let mut queue = wheel_sync::DelayQueue::with_service(&timers);
/// let key = queue.insert("session 7", Duration::from_secs(30));
/// assert_eq!(queue.remove(key), Some("session 7"));
/// assert_eq!(queue.remove(key), None);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Key(TimerId);

/// A queue of items, each handed back once its own deadline has come:
/// per-connection idle timeouts, a cache's time-to-live, retries with
/// backoff, all owned by one task.
///
/// The items live in a [`wheel_core::Wheel`] inside the queue: inserting,
/// removing or moving one is O(1) and touches no other thread. The queue
/// keeps one [`Sleep`] on its service, due at the earliest deadline, to wake
/// the task that polls it; so a queue of a million items is one pending
/// timer to the service. Nothing comes out before its deadline: deadlines
/// round up to the service's tick. Items already due come out first (in
/// no particular order), then the rest in deadline order.
///
/// [`poll_expired`](Self::poll_expired) returns `Ready(None)` when the queue
/// is empty (as tokio's does), and can be polled again after an insert. With
/// the `stream` feature, the queue is a `futures_core::Stream` of
/// [`Expired`] items that does the same (see its impl).
///
/// # Panics
/// [`poll_expired`](Self::poll_expired) panics, as [`Sleep`] does, if it
/// would wait for a deadline after the service has shut down.
///
/// # Examples
/// ```
/// use std::future::poll_fn;
/// use std::time::{Duration, Instant};
///
/// let mut idle = wheel_sync::DelayQueue::new(); // on the global service
/// let start = Instant::now();
/// idle.insert("conn 2", Duration::from_millis(4));
/// let first = idle.insert("conn 1", Duration::from_millis(2));
/// idle.reset(first, Duration::from_millis(6)); // conn 1 was active again
/// # let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
/// rt.block_on(async {
///     let mut closed = Vec::new();
///     while let Some(expired) = poll_fn(|cx| idle.poll_expired(cx)).await {
///         assert!(Instant::now() >= expired.deadline());
///         closed.push(expired.into_inner());
///     }
///     assert_eq!(closed, ["conn 2", "conn 1"]);
/// });
/// assert!(start.elapsed() >= Duration::from_millis(6));
/// ```
pub struct DelayQueue<T> {
    lane: Arc<Lane>,
    /// Each item with its exact deadline; the wheel's ticks are the
    /// service's, rounded up.
    wheel: Wheel<(T, Instant)>,
    /// Due when the tick beside it begins (the wheel's next expiration),
    /// once the queue has had to wait. The tick is kept so that polls and
    /// inserts compare ticks, not `Instant`s made from them.
    sleep: Option<(Sleep, u64)>,
}

impl<T> DelayQueue<T> {
    /// An empty queue on the process-wide service
    /// ([`TimerService::global`]).
    ///
    /// # Panics
    /// As [`TimerService::global`].
    ///
    /// # Examples
    /// ```
    /// let queue = wheel_sync::DelayQueue::<u32>::new();
    /// assert!(queue.is_empty());
    /// ```
    #[cfg(not(loom))]
    pub fn new() -> Self {
        Self::with_service(TimerService::global())
    }

    /// An empty queue on `service`.
    ///
    /// # Examples
    /// ```
    /// let timers = wheel_sync::TimerService::new();
    /// let queue = wheel_sync::DelayQueue::<u32>::with_service(&timers);
    /// assert_eq!(queue.len(), 0);
    /// assert_eq!(timers.pending(), 0); // no timer until the queue waits
    /// ```
    pub fn with_service(service: &TimerService) -> Self {
        let lane = lane::lane(service.shared());
        Self {
            wheel: Wheel::starting_at(lane.shared.clock.now_tick()),
            lane,
            sleep: None,
        }
    }

    /// Inserts `value`, due `delay` from now (by the service's clock).
    ///
    /// # Panics
    /// As [`Wheel::insert`](wheel_core::Wheel::insert): if the queue already
    /// holds about four billion items.
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    ///
    /// let mut queue = wheel_sync::DelayQueue::new();
    /// let key = queue.insert("retry", Duration::from_millis(100));
    /// assert!(queue.deadline(key).is_some());
    /// ```
    pub fn insert(&mut self, value: T, delay: Duration) -> Key {
        let (deadline, tick) = self.lane.shared.clock.deadline_after(delay);
        self.insert_tick(value, deadline, tick)
    }

    /// Inserts `value`, due at `deadline` (at once if it has passed).
    ///
    /// # Panics
    /// As [`insert`](Self::insert).
    ///
    /// # Examples
    /// ```
    /// use std::time::{Duration, Instant};
    ///
    /// let mut queue = wheel_sync::DelayQueue::new();
    /// let at = Instant::now() + Duration::from_secs(5);
    /// let key = queue.insert_at('a', at);
    /// assert_eq!(queue.deadline(key), Some(at));
    /// ```
    pub fn insert_at(&mut self, value: T, deadline: Instant) -> Key {
        let tick = self.lane.shared.clock.tick_for(deadline);
        self.insert_tick(value, deadline, tick)
    }

    /// Inserts `value`, due at `deadline`, whose tick is `tick`.
    fn insert_tick(&mut self, value: T, deadline: Instant, tick: u64) -> Key {
        let id = self.wheel.insert(tick, (value, deadline));
        self.hurry(tick);
        Key(id)
    }

    /// Takes the item out before its deadline; `None` if `key` names
    /// nothing (the item expired or was removed).
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    ///
    /// let mut queue = wheel_sync::DelayQueue::new();
    /// let key = queue.insert(7, Duration::from_secs(1));
    /// assert_eq!(queue.remove(key), Some(7));
    /// assert!(queue.is_empty());
    /// ```
    pub fn remove(&mut self, key: Key) -> Option<T> {
        // The sleep stays armed: if it was this item's, it wakes the task
        // once for nothing, which is cheaper than moving it on every remove.
        self.wheel.cancel(key.0).map(|(value, _)| value)
    }

    /// Moves the item's deadline to `delay` from now; `false` if `key` names
    /// nothing.
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    ///
    /// let mut queue = wheel_sync::DelayQueue::new();
    /// let key = queue.insert("idle", Duration::from_secs(30));
    /// assert!(queue.reset(key, Duration::from_secs(60)));
    /// ```
    pub fn reset(&mut self, key: Key, delay: Duration) -> bool {
        let (deadline, tick) = self.lane.shared.clock.deadline_after(delay);
        self.reset_tick(key, deadline, tick)
    }

    /// Moves the item's deadline to `deadline`; `false` if `key` names
    /// nothing.
    ///
    /// # Examples
    /// ```
    /// use std::time::{Duration, Instant};
    ///
    /// let mut queue = wheel_sync::DelayQueue::new();
    /// let key = queue.insert("idle", Duration::from_secs(30));
    /// let at = Instant::now() + Duration::from_secs(5);
    /// assert!(queue.reset_at(key, at));
    /// assert_eq!(queue.deadline(key), Some(at));
    /// ```
    pub fn reset_at(&mut self, key: Key, deadline: Instant) -> bool {
        let tick = self.lane.shared.clock.tick_for(deadline);
        self.reset_tick(key, deadline, tick)
    }

    /// Moves the item's deadline to `deadline`, whose tick is `tick`.
    fn reset_tick(&mut self, key: Key, deadline: Instant, tick: u64) -> bool {
        let Some((_, at)) = self.wheel.get_mut(key.0) else {
            return false;
        };
        *at = deadline;
        self.wheel.reschedule(key.0, tick);
        self.hurry(tick);
        true
    }

    /// The item's deadline; `None` if `key` names nothing.
    ///
    /// # Examples
    /// ```
    /// use std::time::{Duration, Instant};
    ///
    /// let mut queue = wheel_sync::DelayQueue::new();
    /// let at = Instant::now() + Duration::from_secs(1);
    /// let key = queue.insert_at((), at);
    /// assert_eq!(queue.deadline(key), Some(at));
    /// queue.remove(key);
    /// assert_eq!(queue.deadline(key), None);
    /// ```
    pub fn deadline(&self, key: Key) -> Option<Instant> {
        self.wheel.get(key.0).map(|&(_, deadline)| deadline)
    }

    /// Makes room for `additional` more items without reallocating.
    ///
    /// # Panics
    /// As [`Wheel::reserve`](wheel_core::Wheel::reserve): if the capacity
    /// would pass what the wheel can index.
    ///
    /// # Examples
    /// ```
    /// let mut queue = wheel_sync::DelayQueue::<u64>::new();
    /// queue.reserve(1000);
    /// assert!(queue.capacity() >= 1000);
    /// ```
    pub fn reserve(&mut self, additional: usize) {
        self.wheel.reserve(additional);
    }

    /// Items the queue holds without reallocating.
    ///
    /// # Examples
    /// ```
    /// let queue = wheel_sync::DelayQueue::<u64>::new();
    /// assert_eq!(queue.capacity(), 0);
    /// ```
    pub fn capacity(&self) -> usize {
        self.wheel.capacity()
    }

    /// Items in the queue.
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    ///
    /// let mut queue = wheel_sync::DelayQueue::new();
    /// queue.insert('a', Duration::from_secs(1));
    /// queue.insert('b', Duration::from_secs(2));
    /// assert_eq!(queue.len(), 2);
    /// ```
    pub fn len(&self) -> usize {
        self.wheel.len()
    }

    /// Whether the queue holds no item.
    ///
    /// # Examples
    /// ```
    /// let queue = wheel_sync::DelayQueue::<()>::new();
    /// assert!(queue.is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.wheel.is_empty()
    }

    /// Removes every item, unexpired, and drops them; their keys name
    /// nothing afterwards.
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    ///
    /// let mut queue = wheel_sync::DelayQueue::new();
    /// let key = queue.insert(1, Duration::from_secs(1));
    /// queue.clear();
    /// assert!(queue.is_empty());
    /// assert_eq!(queue.remove(key), None);
    /// ```
    pub fn clear(&mut self) {
        self.wheel.clear();
    }

    /// Takes out the next item whose deadline has come: `Ready(Some(_))`;
    /// `Pending` if none has yet, with `cx`'s task woken when the earliest
    /// deadline comes; `Ready(None)` if the queue is empty.
    ///
    /// # Panics
    /// As [`DelayQueue`]: if it would wait after the service shut down.
    ///
    /// # Examples
    /// ```
    /// use std::task::{Context, Poll, Waker};
    /// use std::time::Duration;
    ///
    /// let mut queue = wheel_sync::DelayQueue::new();
    /// let mut cx = Context::from_waker(Waker::noop());
    /// assert!(matches!(queue.poll_expired(&mut cx), Poll::Ready(None)));
    /// queue.insert("later", Duration::from_secs(60));
    /// assert!(queue.poll_expired(&mut cx).is_pending());
    /// ```
    pub fn poll_expired(&mut self, cx: &mut Context<'_>) -> Poll<Option<Expired<T>>> {
        // The wheel's clock: never ahead of the service's. It moves when the
        // sleep fires or the earliest deadline changes, so a poll that waits
        // on an armed sleep reads no time.
        let mut reached = self.wheel.now();
        loop {
            if let Some(expired) = self.wheel.advance(reached).next() {
                let (value, deadline) = expired.value;
                let key = Key(expired.id);
                return Poll::Ready(Some(Expired {
                    value,
                    deadline,
                    key,
                }));
            }
            let Some(next) = self.wheel.next_expiration() else {
                return Poll::Ready(None);
            };
            let armed = matches!(self.sleep, Some((_, tick)) if tick == next);
            if !armed {
                // A new earliest deadline: it may have passed already.
                let now = self.lane.shared.clock.now_tick();
                if next <= now {
                    reached = now;
                    continue;
                }
            }
            let sleep = self.arm(next);
            if Pin::new(sleep).poll(cx).is_pending() {
                return Poll::Pending;
            }
            // Fired, so the clock has passed `next`; one read of it takes in
            // every tick since.
            reached = next.max(self.lane.shared.clock.now_tick());
        }
    }

    /// Waits for the next item whose deadline has come: `None` at once if
    /// the queue is empty. Dropping the future before it completes loses no
    /// item.
    ///
    /// # Panics
    /// As [`poll_expired`](Self::poll_expired).
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    ///
    /// let mut retries = wheel_sync::DelayQueue::new();
    /// retries.insert("GET /a", Duration::from_millis(2));
    /// # let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    /// rt.block_on(async {
    ///     while let Some(expired) = retries.next_expired().await {
    ///         assert_eq!(*expired.get_ref(), "GET /a"); // send it again
    ///     }
    /// });
    /// ```
    pub async fn next_expired(&mut self) -> Option<Expired<T>> {
        poll_fn(|cx| self.poll_expired(cx)).await
    }

    /// The sleep, due when `tick` begins: made on the first wait, moved
    /// after. One that already fired there stays fired.
    fn arm(&mut self, tick: u64) -> &mut Sleep {
        let lane = &self.lane;
        let at = |tick| lane.shared.clock.deadline_of(tick);
        let (sleep, armed) = self
            .sleep
            .get_or_insert_with(|| (Sleep::until(Arc::clone(lane), at(tick)), tick));
        if *armed != tick {
            sleep.reset(at(tick));
            *armed = tick;
        }
        sleep
    }

    /// An item now due at `tick`: an armed sleep due later is moved earlier,
    /// so the task that last polled is woken in time.
    fn hurry(&mut self, tick: u64) {
        if let Some((sleep, armed)) = &mut self.sleep {
            if tick < *armed && !sleep.is_elapsed() {
                sleep.reset(self.lane.shared.clock.deadline_of(tick));
                *armed = tick;
            }
        }
    }
}

// The queue never pins an item: items move in and out by value, so a
// pinned queue may move its items (the wheel's storage alone would make the
// queue `Unpin` only for `T: Unpin`). `Stream::poll_next` needs this.
impl<T> Unpin for DelayQueue<T> {}

#[cfg(not(loom))]
impl<T> Default for DelayQueue<T> {
    /// [`DelayQueue::new`].
    fn default() -> Self {
        Self::new()
    }
}

impl<T: fmt::Debug> fmt::Debug for DelayQueue<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DelayQueue")
            .field("len", &self.len())
            .field("sleep", &self.sleep.as_ref().map(|(sleep, _)| sleep))
            .finish_non_exhaustive()
    }
}

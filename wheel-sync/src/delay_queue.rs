//! `DelayQueue`: many deadlines owned by one task, on one timer of the
//! service's, as `tokio_util::time::DelayQueue`; the [`Key`] that names an
//! item in it and the [`Expired`] item it hands back. With the `stream`
//! feature it is a `futures_core::Stream` of [`Expired`] items.

use core::fmt;
use core::task::Waker;
use std::time::{Duration, Instant};

use wheel_core::Wheel;

use crate::lane::{self, Lane};
use crate::sync::Arc;
use crate::{Sleep, TimerService};

mod expired;
mod key;
mod poll;
#[cfg(feature = "stream")]
mod stream;

pub use expired::Expired;
pub use key::Key;
use key::Renames;

/// A queue of items, each handed back once its own deadline has come:
/// per-connection idle timeouts, a cache's time-to-live, retries with
/// backoff, all owned by one task. Its API is `tokio_util::time::DelayQueue`'s,
/// so code written for that one moves here by changing its `use` lines.
///
/// The items live in a [`wheel_core::Wheel`] inside the queue: inserting,
/// removing or moving one is O(1) and touches no other thread. The queue
/// keeps one [`Sleep`] on its service to wake the task that polls it, due
/// by the earliest deadline (at it, or, as tokio-util's, at the start of the
/// wheel slot that holds it, where a poll finds nothing due and waits
/// again); so a queue of a million items is one pending
/// timer to the service. Nothing comes out before its deadline: deadlines
/// round up to the service's tick. Items already due come out first (in
/// no particular order), then the rest in deadline order.
///
/// **Wakes.** The task that last polled the queue is woken when an
/// `insert` or a `reset` makes the queue's next expiration earlier (its
/// earliest deadline, or for a far one the start of the wheel slot that
/// holds it, which the queue's timer waits for), and when a `remove`,
/// `try_remove` or `clear` leaves the queue empty or makes its next
/// expiration later; its next poll then waits for the new one. So a
/// waiting task never waits past the queue's next deadline, and
/// `poll_expired` answers `Ready(None)` as soon as the queue is empty.
///
/// [`poll_expired`](Self::poll_expired) returns `Ready(None)` when the queue
/// is empty (as tokio's does), and can be polled again after an insert. With
/// the `stream` feature, the queue is a `futures_core::Stream` of
/// [`Expired`] items that does the same (see its impl).
///
/// # Panics
/// Once the service has shut down, [`poll_expired`](Self::poll_expired)
/// still hands out every item already due, then answers `Ready(None)` if
/// the queue is empty, and panics, as [`Sleep`] does, if it would have to
/// wait. The methods that take a [`Key`] panic if it names nothing, as
/// tokio's do; [`try_remove`](Self::try_remove) does not.
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
/// idle.reset(&first, Duration::from_millis(6)); // conn 1 was active again
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
    /// once the queue has had to wait. The tick is kept so that polls
    /// compare ticks, not `Instant`s made from them.
    sleep: Option<(Sleep, u64)>,
    /// The task that last polled, woken when the next expiration moves.
    waker: Option<Waker>,
    /// Keys of the items `compact` moved.
    renames: Renames,
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

    /// An empty queue on the process-wide service with room for `capacity`
    /// items before it reallocates.
    ///
    /// # Panics
    /// As [`TimerService::global`], and as [`reserve`](Self::reserve).
    ///
    /// # Examples
    /// ```
    /// let queue = wheel_sync::DelayQueue::<u32>::with_capacity(10);
    /// assert_eq!(queue.capacity(), 10);
    /// ```
    #[cfg(not(loom))]
    pub fn with_capacity(capacity: usize) -> Self {
        let mut queue = Self::new();
        queue.reserve(capacity);
        queue
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
            waker: None,
            renames: Renames::default(),
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
    /// assert_eq!(queue.len(), 1);
    /// # let _ = key;
    /// ```
    #[track_caller]
    #[inline]
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
    /// assert_eq!(queue.deadline(&key), at);
    /// ```
    #[track_caller]
    pub fn insert_at(&mut self, value: T, deadline: Instant) -> Key {
        let tick = self.lane.shared.clock.tick_for(deadline);
        self.insert_tick(value, deadline, tick)
    }

    /// Inserts `value`, due at `deadline`, whose tick is `tick`.
    #[track_caller]
    #[inline]
    fn insert_tick(&mut self, value: T, deadline: Instant, tick: u64) -> Key {
        let before = self.watched();
        let id = self.wheel.insert(tick, (value, deadline));
        self.moved_from(before);
        Key(id)
    }

    /// Takes the item out before its deadline, with the deadline it had.
    ///
    /// # Panics
    /// If `key` names nothing (the item came out or was removed); see
    /// [`try_remove`](Self::try_remove).
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    ///
    /// let mut queue = wheel_sync::DelayQueue::new();
    /// let key = queue.insert(7, Duration::from_secs(1));
    /// assert_eq!(queue.remove(&key).into_inner(), 7);
    /// assert!(queue.is_empty());
    /// ```
    #[track_caller]
    #[inline]
    pub fn remove(&mut self, key: &Key) -> Expired<T> {
        match self.try_remove(key) {
            Some(expired) => expired,
            None => stale(key),
        }
    }

    /// Takes the item out before its deadline, with the deadline it had;
    /// `None` if `key` names nothing (the item came out or was removed).
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    ///
    /// let mut queue = wheel_sync::DelayQueue::new();
    /// let key = queue.insert("foo", Duration::from_secs(5));
    /// assert_eq!(queue.try_remove(&key).unwrap().into_inner(), "foo");
    /// assert!(queue.try_remove(&key).is_none());
    /// ```
    #[inline]
    pub fn try_remove(&mut self, key: &Key) -> Option<Expired<T>> {
        let id = self.renames.id(key);
        let before = self.watched();
        let (value, deadline) = self.wheel.cancel(id)?;
        self.renames.forget(id);
        self.moved_from(before);
        Some(Expired {
            value,
            deadline,
            key: *key,
        })
    }

    /// Moves the item's deadline to `delay` from now.
    ///
    /// # Panics
    /// If `key` names nothing (the item came out or was removed).
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    ///
    /// let mut queue = wheel_sync::DelayQueue::new();
    /// let key = queue.insert("idle", Duration::from_secs(30));
    /// queue.reset(&key, Duration::from_secs(60));
    /// ```
    #[track_caller]
    pub fn reset(&mut self, key: &Key, delay: Duration) {
        let (deadline, tick) = self.lane.shared.clock.deadline_after(delay);
        self.reset_tick(key, deadline, tick);
    }

    /// Moves the item's deadline to `deadline` (at once if it has passed).
    ///
    /// # Panics
    /// If `key` names nothing (the item came out or was removed).
    ///
    /// # Examples
    /// ```
    /// use std::time::{Duration, Instant};
    ///
    /// let mut queue = wheel_sync::DelayQueue::new();
    /// let key = queue.insert("idle", Duration::from_secs(30));
    /// let at = Instant::now() + Duration::from_secs(5);
    /// queue.reset_at(&key, at);
    /// assert_eq!(queue.deadline(&key), at);
    /// ```
    #[track_caller]
    pub fn reset_at(&mut self, key: &Key, deadline: Instant) {
        let tick = self.lane.shared.clock.tick_for(deadline);
        self.reset_tick(key, deadline, tick);
    }

    /// Moves the item's deadline to `deadline`, whose tick is `tick`.
    #[track_caller]
    fn reset_tick(&mut self, key: &Key, deadline: Instant, tick: u64) {
        let id = self.renames.id(key);
        let before = self.watched();
        let Some((_, at)) = self.wheel.get_mut(id) else {
            stale(key)
        };
        *at = deadline;
        self.wheel.reschedule(id, tick);
        self.moved_from(before);
    }

    /// The item's deadline.
    ///
    /// # Panics
    /// If `key` names nothing (the item came out or was removed).
    ///
    /// # Examples
    /// ```
    /// use std::time::{Duration, Instant};
    ///
    /// let mut queue = wheel_sync::DelayQueue::new();
    /// let at = Instant::now() + Duration::from_secs(1);
    /// let key = queue.insert_at((), at);
    /// assert_eq!(queue.deadline(&key), at);
    /// ```
    #[track_caller]
    pub fn deadline(&self, key: &Key) -> Instant {
        match self.wheel.get(self.renames.id(key)) {
            Some(&(_, deadline)) => deadline,
            None => stale(key),
        }
    }

    /// The key of the item [`poll_expired`](Self::poll_expired) hands out
    /// next (once its deadline has come), without taking it out: an item
    /// with the earliest deadline, or one of those already due. `None` if
    /// the queue is empty.
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    ///
    /// let mut queue = wheel_sync::DelayQueue::new();
    /// queue.insert("foo", Duration::from_secs(10));
    /// let bar = queue.insert("bar", Duration::from_secs(5));
    /// queue.insert("baz", Duration::from_secs(15));
    /// assert_eq!(queue.peek(), Some(bar));
    /// ```
    pub fn peek(&self) -> Option<Key> {
        self.wheel.peek().map(|(id, _)| self.renames.key(id))
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

    /// Gives back the memory of the places freed past the last item: after
    /// a burst has drained, the queue shrinks to what its items need. Like
    /// tokio's, it cannot move items, so an item in a high place keeps the
    /// memory below it; [`compact`](Self::compact) moves them.
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    ///
    /// let mut queue = wheel_sync::DelayQueue::new();
    /// let keys: Vec<_> = (0..1000).map(|i| queue.insert(i, Duration::from_secs(9))).collect();
    /// for key in &keys[10..] {
    ///     queue.remove(key);
    /// }
    /// queue.shrink_to_fit();
    /// assert!(queue.capacity() < 1000);
    /// ```
    pub fn shrink_to_fit(&mut self) {
        self.wheel.shrink_to_fit();
        self.renames.shrink_to_fit();
    }

    /// Moves the items into the lowest places and gives back the memory
    /// past them: the capacity is then the number of items. Keys stay
    /// valid. O(capacity).
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    ///
    /// let mut queue = wheel_sync::DelayQueue::with_capacity(10);
    /// let key1 = queue.insert(5, Duration::from_secs(5));
    /// let key2 = queue.insert(10, Duration::from_secs(10));
    /// let key3 = queue.insert(15, Duration::from_secs(15));
    /// queue.remove(&key2);
    /// queue.compact();
    /// assert_eq!(queue.capacity(), 2);
    /// assert_eq!(queue.remove(&key3).into_inner(), 15);
    /// # let _ = key1;
    /// ```
    pub fn compact(&mut self) {
        let renames = &mut self.renames;
        self.wheel.compact(|old, new| renames.moved(old, new));
        renames.shrink_to_fit();
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
    /// nothing afterwards. A task waiting on the queue is woken, and its
    /// next poll answers `Ready(None)`.
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    ///
    /// let mut queue = wheel_sync::DelayQueue::new();
    /// let key = queue.insert(1, Duration::from_secs(1));
    /// queue.clear();
    /// assert!(queue.is_empty());
    /// assert!(queue.try_remove(&key).is_none());
    /// ```
    pub fn clear(&mut self) {
        let before = self.watched();
        self.wheel.clear();
        self.renames.clear();
        self.moved_from(before);
    }

    /// The next expiration, read only while a task waits to be told that
    /// it moved: with no waker kept, nobody is waiting (a woken task polls
    /// again and sees the queue as it is), so the common calls read nothing.
    #[inline]
    fn watched(&self) -> Option<Option<u64>> {
        self.waker.as_ref().map(|_| self.wheel.next_expiration())
    }

    /// Wakes the task that last polled if the next expiration is no longer
    /// `before` (as [`watched`](Self::watched) read it): its next poll waits
    /// for the new one, or ends the stream.
    #[inline]
    fn moved_from(&mut self, before: Option<Option<u64>>) {
        if before.is_some_and(|before| self.wheel.next_expiration() != before) {
            if let Some(waker) = self.waker.take() {
                waker.wake();
            }
        }
    }
}

/// A key that names nothing, handed to a method that needs an item.
#[cold]
#[track_caller]
fn stale(key: &Key) -> ! {
    panic!("wheel-sync: DelayQueue key {key:?} names no item (it came out or was removed)")
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
            .field("waiting", &self.waker.is_some())
            .finish_non_exhaustive()
    }
}

//! `Expired`: an item a [`DelayQueue`](super::DelayQueue) handed back, with
//! the deadline and key it had; `tokio_util`'s accessors by the same names.

use std::time::Instant;

use super::Key;

/// An item whose deadline has come, taken out of a
/// [`DelayQueue`](super::DelayQueue), with its deadline and key: what
/// [`poll_expired`](super::DelayQueue::poll_expired),
/// [`next_expired`](super::DelayQueue::next_expired) and the queue's
/// `Stream` yield. Its accessors are `tokio_util`'s.
///
/// # Examples
/// ```
/// use std::task::{Context, Poll, Waker};
/// use std::time::Duration;
///
/// let timers = wheel_sync::TimerService::builder().manual_clock().build().unwrap();
/// let mut queue = wheel_sync::DelayQueue::with_service(&timers);
/// let key = queue.insert('x', Duration::from_millis(5));
/// timers.advance(Duration::from_millis(5)).unwrap();
/// let Poll::Ready(Some(expired)) = queue.poll_expired(&mut Context::from_waker(Waker::noop())) else {
///     panic!("not expired");
/// };
/// assert_eq!((expired.key(), expired.deadline()), (key, timers.now()));
/// assert_eq!(expired.into_inner(), 'x');
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Expired<T> {
    pub(super) value: T,
    pub(super) deadline: Instant,
    pub(super) key: Key,
}

impl<T> Expired<T> {
    /// The item.
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    ///
    /// let mut queue = wheel_sync::DelayQueue::new();
    /// queue.insert(String::from("GET /a"), Duration::ZERO);
    /// # let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    /// let expired = rt.block_on(queue.next_expired()).unwrap();
    /// assert_eq!(expired.get_ref(), "GET /a");
    /// ```
    pub fn get_ref(&self) -> &T {
        &self.value
    }

    /// The item, to change in place.
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    ///
    /// let mut queue = wheel_sync::DelayQueue::new();
    /// queue.insert(1, Duration::ZERO);
    /// # let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    /// let mut expired = rt.block_on(queue.next_expired()).unwrap();
    /// *expired.get_mut() += 1;
    /// assert_eq!(expired.into_inner(), 2);
    /// ```
    pub fn get_mut(&mut self) -> &mut T {
        &mut self.value
    }

    /// The item, taken out.
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    ///
    /// let mut queue = wheel_sync::DelayQueue::new();
    /// queue.insert(vec![1, 2], Duration::ZERO);
    /// # let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    /// let expired = rt.block_on(queue.next_expired()).unwrap();
    /// assert_eq!(expired.into_inner(), [1, 2]);
    /// ```
    pub fn into_inner(self) -> T {
        self.value
    }

    /// The deadline the item was due at, as inserted or last reset (not
    /// rounded to the tick): it came out at or after it.
    ///
    /// # Examples
    /// ```
    /// use std::time::{Duration, Instant};
    ///
    /// let mut queue = wheel_sync::DelayQueue::new();
    /// let at = Instant::now() + Duration::from_millis(2);
    /// queue.insert_at((), at);
    /// # let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    /// let expired = rt.block_on(queue.next_expired()).unwrap();
    /// assert_eq!(expired.deadline(), at);
    /// assert!(Instant::now() >= at);
    /// ```
    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    /// The key the item had; it names nothing in the queue any more.
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    ///
    /// let mut queue = wheel_sync::DelayQueue::new();
    /// let key = queue.insert("a", Duration::ZERO);
    /// # let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    /// let expired = rt.block_on(queue.next_expired()).unwrap();
    /// assert_eq!(expired.key(), key);
    /// assert!(queue.try_remove(&key).is_none());
    /// ```
    pub fn key(&self) -> Key {
        self.key
    }
}

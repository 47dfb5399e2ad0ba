//! The queue's two ends, the handles its users hold: [`Producer`]s,
//! cloned onto any thread, and the one [`Consumer`]. The protocol they run
//! is the channel's, in the parent module.

use core::fmt;

use super::Channel;
use crate::sync::atomic::Ordering;
use crate::sync::Arc;

/// Creates a queue and returns its two ends.
///
/// [`Producer`]s can be cloned and used from any number of threads; the one [`Consumer`]
/// drains items in the order their pushes were sequenced. Items still inside when the last
/// handle is dropped are dropped with it.
///
/// # Examples
///
/// ```
/// let (producer, mut consumer) = wheel_sync::__private::queue::channel();
/// let worker = {
///     let producer = producer.clone();
///     std::thread::spawn(move || producer.push("from a thread").unwrap())
/// };
/// let seq = worker.join().unwrap();
/// producer.push("from main").unwrap();
/// assert_eq!(seq, 0);
/// assert_eq!(consumer.pop(), Some("from a thread"));
/// assert_eq!(consumer.pop(), Some("from main"));
/// assert_eq!(consumer.pop(), None);
/// ```
pub fn channel<T: Send>() -> (Producer<T>, Consumer<T>) {
    let channel = Arc::new(Channel::new());
    (
        Producer {
            channel: Arc::clone(&channel),
        },
        Consumer { channel },
    )
}

/// The sending end of a [`channel`]: cheap to clone, usable from many threads at once.
///
/// Pushing never blocks, and fails only once the [`Consumer`] has [closed](Consumer::close)
/// the queue. If the consumer is gone, items wait in the queue and are dropped with the last
/// `Producer`.
pub struct Producer<T> {
    pub(super) channel: Arc<Channel<T>>,
}

impl<T: Send> Producer<T> {
    /// Appends `value` and returns its sequence number, or gives it back if the queue is
    /// closed.
    ///
    /// Sequence numbers count pushes across all producers of the queue from 0 upwards;
    /// the consumer receives items in that order. A caller can compare the number with
    /// how far the consumer has got to decide whether a wake-up is needed.
    ///
    /// # Examples
    ///
    /// ```
    /// let (producer, mut consumer) = wheel_sync::__private::queue::channel();
    /// assert_eq!(producer.push('a').ok(), Some(0));
    /// assert_eq!(producer.clone().push('b').ok(), Some(1));
    /// assert_eq!(consumer.pop(), Some('a'));
    /// ```
    #[inline]
    pub fn push(&self, value: T) -> Result<u64, Closed<T>> {
        self.channel.push(value)
    }

    /// Approximate number of items in the queue.
    ///
    /// Pushes and pops may run meanwhile, and a push counts from the moment it claims its
    /// place, slightly before the consumer can see it.
    ///
    /// # Examples
    ///
    /// ```
    /// let (producer, mut consumer) = wheel_sync::__private::queue::channel();
    /// producer.push(1).unwrap();
    /// producer.push(2).unwrap();
    /// assert_eq!(producer.len(), 2);
    /// consumer.pop();
    /// assert_eq!(producer.len(), 1);
    /// ```
    pub fn len(&self) -> usize {
        self.channel.len()
    }

    /// How many items the consumer has taken so far: it only grows.
    ///
    /// # Examples
    ///
    /// ```
    /// let (producer, mut consumer) = wheel_sync::__private::queue::channel();
    /// producer.push(1).unwrap();
    /// assert_eq!(producer.taken(), 0);
    /// consumer.pop();
    /// assert_eq!(producer.taken(), 1);
    /// ```
    pub fn taken(&self) -> u64 {
        self.channel.head.published.load(Ordering::Acquire)
    }

    /// Whether [`len`](Self::len) is zero; approximate in the same way.
    ///
    /// # Examples
    ///
    /// ```
    /// let (producer, _consumer) = wheel_sync::__private::queue::channel();
    /// assert!(producer.is_empty());
    /// producer.push(()).unwrap();
    /// assert!(!producer.is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<T> Clone for Producer<T> {
    fn clone(&self) -> Self {
        Producer {
            channel: Arc::clone(&self.channel),
        }
    }
}

impl<T> fmt::Debug for Producer<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Producer")
            .field("len", &self.channel.len())
            .finish_non_exhaustive()
    }
}

/// A push refused because the queue is closed, with the value it carried.
pub struct Closed<T>(pub T);

impl<T> fmt::Debug for Closed<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Closed(..)")
    }
}

// Compile-time proof of the handles' thread-safety promises for a `Send`-only item type.
const _: fn() = || {
    fn send_sync<S: Send + Sync>() {}
    fn send<S: Send>() {}
    send_sync::<Producer<core::cell::Cell<u8>>>();
    send::<Consumer<core::cell::Cell<u8>>>();
};

/// The receiving end of a [`channel`]; there is exactly one.
pub struct Consumer<T> {
    pub(super) channel: Arc<Channel<T>>,
}

impl<T: Send> Consumer<T> {
    /// Takes the next item in sequence order, or `None` if there is none yet.
    ///
    /// Never blocks. If the next sequence number is claimed by a producer that has not
    /// finished writing it, `pop` returns `None`, and a later `pop` returns that item
    /// first: items are never skipped or reordered to get past a slow producer.
    ///
    /// # Examples
    ///
    /// ```
    /// let (producer, mut consumer) = wheel_sync::__private::queue::channel();
    /// assert_eq!(consumer.pop(), None);
    /// producer.push(7).unwrap();
    /// assert_eq!(consumer.pop(), Some(7));
    /// assert_eq!(consumer.pop(), None);
    /// ```
    pub fn pop(&mut self) -> Option<T> {
        // SAFETY: there is one `Consumer` per queue and `&mut self` makes this call its only
        // user, so the cursor is accessed exclusively.
        unsafe { self.channel.pop() }
    }

    /// Closes the queue: every push from now on is refused, and every push that was not is
    /// one [`pop`](Self::pop) will return, once its producer has written it. So once
    /// [`len`](Self::len) reads zero after `close`, every item accepted has been taken.
    ///
    /// # Examples
    ///
    /// ```
    /// let (producer, mut consumer) = wheel_sync::__private::queue::channel();
    /// producer.push(1).unwrap();
    /// consumer.close();
    /// assert_eq!(producer.push(2).map_err(|refused| refused.0), Err(2));
    /// assert_eq!(consumer.pop(), Some(1));
    /// assert!(consumer.is_empty());
    /// ```
    pub fn close(&mut self) {
        self.channel.close();
    }

    /// Whether [`pop`](Self::pop) would return an item now: the next place in sequence is
    /// written. `false` while the queue is empty, or while the next place is claimed by a
    /// producer that has not finished writing it (see [`len`](Self::len)).
    ///
    /// # Examples
    ///
    /// ```
    /// let (producer, mut consumer) = wheel_sync::__private::queue::channel();
    /// assert!(!consumer.has_ready());
    /// producer.push('x').unwrap();
    /// assert!(consumer.has_ready());
    /// consumer.pop();
    /// assert!(!consumer.has_ready());
    /// ```
    pub fn has_ready(&self) -> bool {
        // SAFETY: there is one `Consumer` per queue, and `pop`, the only mover of the cursor,
        // needs `&mut self`, so it cannot run during this `&self` call.
        unsafe { self.channel.head_ready() }
    }

    /// Approximate number of items in the queue, counting pushes still being written.
    ///
    /// # Examples
    ///
    /// ```
    /// let (producer, mut consumer) = wheel_sync::__private::queue::channel();
    /// producer.push("x").unwrap();
    /// assert_eq!(consumer.len(), 1);
    /// consumer.pop();
    /// assert_eq!(consumer.len(), 0);
    /// ```
    pub fn len(&self) -> usize {
        self.channel.len()
    }

    /// Whether [`len`](Self::len) is zero.
    ///
    /// # Examples
    ///
    /// ```
    /// let (producer, consumer) = wheel_sync::__private::queue::channel();
    /// assert!(consumer.is_empty());
    /// producer.push(0u8).unwrap();
    /// assert!(!consumer.is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<T> fmt::Debug for Consumer<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Consumer")
            .field("len", &self.channel.len())
            .finish_non_exhaustive()
    }
}

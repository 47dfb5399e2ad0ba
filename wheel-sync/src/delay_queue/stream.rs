//! `DelayQueue` as a `futures_core::Stream` of [`Expired`] items (the
//! `stream` feature), as `tokio_util`'s is.

use core::pin::Pin;
use core::task::{Context, Poll};

use futures_core::Stream;

use super::{DelayQueue, Expired};

/// The items as they come due: [`DelayQueue::poll_expired`] as a stream, for
/// `StreamExt` and the code written against `tokio_util`'s `DelayQueue`.
///
/// Ends, as `tokio_util`'s does, whenever the queue is empty: `poll_next`
/// returns `Ready(None)`, so `while let Some(_) = queue.next().await` stops
/// once everything inserted has come out. It is not fused: after an insert
/// the same queue yields again. So do not `fuse()` a queue that will be
/// refilled, and in a `select!` loop that also inserts, poll it only while
/// it is not empty (tokio's `select!` takes an `, if !queue.is_empty()`
/// guard), or it ends the loop's branch each time it drains.
///
/// `size_hint` is the number of items in the queue: exactly what it yields
/// before `None` unless items are inserted or removed meanwhile.
///
/// # Panics
/// As [`poll_expired`](DelayQueue::poll_expired): if it would wait after
/// the service shut down.
///
/// # Examples
/// ```
/// use std::time::Duration;
/// use futures::StreamExt;
///
/// let mut retries = wheel_sync::DelayQueue::new();
/// retries.insert("GET /b", Duration::from_millis(4));
/// retries.insert("GET /a", Duration::from_millis(2));
/// # let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
/// rt.block_on(async {
///     let sent: Vec<_> = retries.by_ref().map(|expired| expired.into_inner()).collect().await;
///     assert_eq!(sent, ["GET /a", "GET /b"]);
///     // Empty, so ended; an insert starts it again.
///     assert!(retries.next().await.is_none());
///     retries.insert("GET /c", Duration::ZERO);
///     assert_eq!(retries.next().await.map(|e| e.into_inner()), Some("GET /c"));
/// });
/// ```
#[cfg_attr(docsrs, doc(cfg(feature = "stream")))]
impl<T> Stream for DelayQueue<T> {
    type Item = Expired<T>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Expired<T>>> {
        self.get_mut().poll_expired(cx)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.len(), Some(self.len()))
    }
}

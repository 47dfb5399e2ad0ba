//! Taking items out of a [`DelayQueue`]: the poll that hands out what is
//! due and otherwise waits on the queue's one `Sleep`, moved to the
//! earliest deadline.

use core::future::poll_fn;
use core::task::{Context, Poll};

use super::{DelayQueue, Expired};
use crate::sleep::ShutDown;
use crate::sync::Arc;
use crate::Sleep;

impl<T> DelayQueue<T> {
    /// Takes out the next item whose deadline has come: `Ready(Some(_))`;
    /// `Pending` if none has yet, with `cx`'s task woken when the earliest
    /// deadline comes (see [Wakes](Self#wakes)); `Ready(None)` if the queue
    /// is empty.
    ///
    /// # Panics
    /// If it would wait after the service shut down (see [`DelayQueue`]).
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
    #[inline]
    pub fn poll_expired(&mut self, cx: &mut Context<'_>) -> Poll<Option<Expired<T>>> {
        if !self.waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
            self.waker = Some(cx.waker().clone());
        }
        // The wheel's clock: never ahead of the service's. It moves when the
        // sleep fires or the earliest deadline changes, so a poll that waits
        // on an armed sleep reads no time.
        let mut reached = self.wheel.now();
        loop {
            if let Some(expired) = self.wheel.advance(reached).next() {
                let (value, deadline) = expired.value;
                let key = self.renames.key(expired.id);
                self.renames.forget(expired.id);
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
            let Poll::Ready(fired) = self.arm(next).poll_unless_shut_down(cx) else {
                return Poll::Pending;
            };
            // Read only now: a poll that waits on an armed sleep reads no
            // time.
            let now = self.lane.shared.clock.now_tick();
            reached = match fired {
                // Fired, so the clock has passed `next`; one read of it
                // takes in every tick since.
                Ok(()) => next.max(now),
                // Shut down: what is due still comes out.
                Err(ShutDown) if next <= now => now,
                Err(ShutDown) => shut_down(),
            };
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
}

/// The service shut down before the queue's next deadline.
#[cold]
fn shut_down() -> ! {
    panic!("wheel-sync: the timer service shut down before this DelayQueue's next deadline")
}

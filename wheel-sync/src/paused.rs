//! A paused clock for tests under any executor: a `block_on` that moves a
//! manual clock to the next deadline ([`TimerService::advance_to_next`])
//! whenever the future it drives waits on nothing else
//! ([`TimerService::run_paused`]): tokio's `time::pause` with auto-advance,
//! without tokio's runtime.

use core::future::Future;
use core::pin::pin;
use core::task::{Context, Poll, Waker};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::{self, Thread};
use std::time::Duration;

use crate::{AdvanceError, TimerService};

/// How long [`TimerService::run_paused`] waits for another thread when no
/// timer can come due, before it looks again.
const IDLE_LOOK: Duration = Duration::from_millis(1);

impl TimerService {
    /// Drives `future` to completion on this thread, on a
    /// [manual clock](crate::Builder::manual_clock) that moves to the next
    /// deadline ([`advance_to_next`](Self::advance_to_next)) whenever the
    /// future waits and nothing has woken it: code that sleeps for an hour
    /// runs in microseconds, and its timers fire in deadline order, each at
    /// its own time. Other tasks' timers on the service fire on the way.
    ///
    /// Only this future is driven. A future that waits on another thread
    /// (a channel from a worker, a task on another executor) should not
    /// also wait on a timer the clock would move past meanwhile: the clock
    /// does not wait for that thread. When no timer can come due, it waits
    /// for a wake like any `block_on`, looking again every millisecond for a
    /// timer another thread made meanwhile; so a future that waits forever
    /// (on `sleep(Duration::MAX)`, say) blocks forever.
    ///
    /// A timer that comes due again and again at the clock's time (a
    /// callback that schedules itself with no delay) holds the clock where
    /// it is, as a task that never waits holds tokio's paused clock.
    ///
    /// # Errors
    /// As [`advance_to_next`](Self::advance_to_next): not a manual clock, a
    /// shutdown (once the service is down the future is not polled again,
    /// even one that would finish: its sleeps would panic; a shutdown that
    /// lands during a poll may still make a sleep panic there), or a call
    /// from a callback.
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    ///
    /// let timers = wheel_sync::TimerService::builder().manual_clock().build().unwrap();
    /// let start = timers.now();
    /// let slept = timers.run_paused(async {
    ///     timers.sleep(Duration::from_secs(3600)).await;
    ///     timers.now() - start
    /// });
    /// assert_eq!(slept, Ok(Duration::from_secs(3600)));
    /// ```
    pub fn run_paused<F: Future>(&self, future: F) -> Result<F::Output, AdvanceError> {
        if self.shared().clock.manual_ns().is_none() {
            return Err(AdvanceError::NotManual);
        }
        // Refused before the first poll, so that the answer does not depend
        // on whether the future happens to be ready.
        if self.shared().on_driver_thread() {
            return Err(AdvanceError::FromCallback);
        }
        let signal = Arc::new(Signal {
            woken: AtomicBool::new(false),
            thread: thread::current(),
        });
        let waker = Waker::from(Arc::clone(&signal));
        let mut cx = Context::from_waker(&waker);
        let mut future = pin!(future);
        let shared = self.shared();
        loop {
            // A shutdown wakes every sleep it abandons, and an abandoned
            // sleep panics when polled: report it instead.
            if shared.is_stopping() {
                return Err(AdvanceError::Shutdown);
            }
            if let Poll::Ready(output) = future.as_mut().poll(&mut cx) {
                return Ok(output);
            }
            // Woken while it ran (a yield), by a timer that fired, or by
            // another thread: poll again. Otherwise move the clock to the
            // next deadline, unless a round up to the one that found it woke
            // the future (a round wakes before it serves, and the answer
            // waits for that): a timer made for a deadline the clock had
            // passed fires in such a round, and the future must see the
            // time it had.
            while !signal.woken.swap(false, Ordering::Acquire) {
                match shared.next_deadline()? {
                    None => thread::park_timeout(IDLE_LOOK),
                    Some(_) if signal.woken.load(Ordering::Acquire) => {}
                    Some(tick) => drop(shared.advance_to_tick(tick)?),
                }
            }
        }
    }
}

/// The waker of the future [`TimerService::run_paused`] drives.
struct Signal {
    woken: AtomicBool,
    thread: Thread,
}

impl std::task::Wake for Signal {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.woken.store(true, Ordering::Release);
        self.thread.unpark();
    }
}

//! `Timeout`: a future with a deadline, on a [`Sleep`] that is registered
//! only if the future has to wait.

use core::fmt;
use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};
use std::time::Instant;

use crate::Sleep;

/// The error of a [`Timeout`] whose deadline came first.
///
/// # Examples
/// ```
/// let e = wheel_sync::Elapsed::default();
/// assert_eq!(e.to_string(), "deadline has elapsed");
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Elapsed(());

impl fmt::Display for Elapsed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("deadline has elapsed")
    }
}

impl std::error::Error for Elapsed {}

/// A future with a deadline; made by [`TimerService::timeout`](crate::TimerService::timeout). Resolves to
/// `Ok(output)` if the inner future finishes first, `Err(Elapsed)` if the
/// deadline comes first. The inner future is polled first, and the timer
/// is made only when it has to wait: a future that is ready at once costs
/// no timer. Dropping it cancels its timer.
///
/// # Panics
/// As [`Sleep`]: polling it after its service was shut down before the
/// deadline panics, unless the inner future is ready.
///
/// # Examples
/// ```
/// use std::time::Duration;
///
/// let timers = wheel_sync::TimerService::new();
/// # let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
/// let fast = rt.block_on(timers.timeout(Duration::from_secs(5), async { 7 }));
/// assert_eq!(fast, Ok(7));
/// let slow = rt.block_on(timers.timeout(Duration::from_millis(1), std::future::pending::<()>()));
/// assert!(slow.is_err());
/// ```
#[must_use = "futures do nothing unless polled"]
pub struct Timeout<F> {
    future: F,
    sleep: Sleep,
}

impl<F> Timeout<F> {
    pub(crate) fn new(future: F, sleep: Sleep) -> Self {
        Self { future, sleep }
    }

    /// The inner future.
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    ///
    /// let timers = wheel_sync::TimerService::new();
    /// let t = timers.timeout(Duration::from_secs(1), std::future::ready(3));
    /// let _inner: &std::future::Ready<i32> = t.get_ref();
    /// ```
    pub fn get_ref(&self) -> &F {
        &self.future
    }

    /// The inner future, mutably (it is not pinned through this).
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    ///
    /// let timers = wheel_sync::TimerService::new();
    /// let mut t = timers.timeout(Duration::from_secs(1), std::future::ready(3));
    /// let _inner: &mut std::future::Ready<i32> = t.get_mut();
    /// ```
    pub fn get_mut(&mut self) -> &mut F {
        &mut self.future
    }

    /// Drops the deadline and returns the inner future.
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    ///
    /// let timers = wheel_sync::TimerService::new();
    /// let t = timers.timeout(Duration::from_secs(1), std::future::ready(3));
    /// assert_eq!(t.into_inner().into_inner(), 3);
    /// ```
    pub fn into_inner(self) -> F {
        self.future
    }

    /// The deadline.
    ///
    /// # Examples
    /// ```
    /// use std::time::{Duration, Instant};
    ///
    /// let timers = wheel_sync::TimerService::new();
    /// let t = timers.timeout(Duration::from_secs(1), std::future::ready(3));
    /// assert!(t.deadline() > Instant::now());
    /// ```
    pub fn deadline(&self) -> Instant {
        self.sleep.deadline()
    }
}

impl<F: Future> Future for Timeout<F> {
    type Output = Result<F::Output, Elapsed>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // SAFETY: `future` is structurally pinned: nothing moves it while the
        // `Timeout` is pinned (`into_inner` needs an unpinned `Timeout`, and
        // there is no `Drop` impl). `sleep` is `Unpin`, so handing out a plain
        // `&mut` to it moves nothing that is pinned.
        let (future, sleep) = unsafe {
            let this = self.get_unchecked_mut();
            (Pin::new_unchecked(&mut this.future), &mut this.sleep)
        };
        if let Poll::Ready(output) = future.poll(cx) {
            return Poll::Ready(Ok(output));
        }
        let sleep = Pin::new(sleep);
        sleep.poll(cx).map(|()| Err(Elapsed(())))
    }
}

impl<F: fmt::Debug> fmt::Debug for Timeout<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Timeout")
            .field("future", &self.future)
            .field("sleep", &self.sleep)
            .finish()
    }
}

// `Timeout`'s pin projection is `unsafe`: these run it under miri
// (`cargo +nightly miri test -p wheel-sync --lib`).
#[cfg(all(test, not(loom)))]
mod tests {
    use core::future::Future;
    use core::pin::pin;
    use core::task::{Context, Poll, Waker};
    use std::time::Duration;

    use crate::TimerService;

    const HOUR: Duration = Duration::from_secs(3600);

    #[test]
    fn timeout_projects_a_pinned_inner_future() {
        let timers = TimerService::new();
        let mut cx = Context::from_waker(Waker::noop());
        // An async block that borrows across an await is !Unpin.
        let inner = async {
            let local = [1_u8, 2, 3];
            let borrowed = &local;
            core::future::ready(()).await;
            borrowed.iter().map(|&b| u32::from(b)).sum::<u32>()
        };
        let mut timeout = pin!(timers.timeout(HOUR, inner));
        assert_eq!(timeout.as_mut().poll(&mut cx), Poll::Ready(Ok(6)));
        assert_eq!(timers.pending(), 0, "a ready future needs no timer");
    }

    #[test]
    fn timeout_polls_its_sleep_while_the_future_waits() {
        let timers = TimerService::new();
        let mut cx = Context::from_waker(Waker::noop());
        let mut timeout = pin!(timers.timeout(HOUR, core::future::pending::<()>()));
        assert!(timeout.as_mut().poll(&mut cx).is_pending());
        assert!(timeout.as_mut().poll(&mut cx).is_pending());
        assert_eq!(timers.pending(), 1);
    }
}

//! What the tests ported from tokio's and tokio-util's timer suites share
//! (`tokio_*_cases.rs`): tokio-test's `is_woken` as a counting waker, the
//! polls they make, and the race helpers.

use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::thread;
use std::time::{Duration, Instant};

use wheel_sync::delay_queue::Expired;
use wheel_sync::{DelayQueue, Interval};

// The helpers every test shares, under the names tokio's suites use;
// each binary uses some of them.
#[allow(unused_imports)]
pub use super::{
    counting_waker as counter, manual, ms, poll_once as poll, CountingWaker as Counter, HOUR,
    PATIENCE,
};

pub fn us(n: u64) -> Duration {
    Duration::from_micros(n)
}

/// Polls `f` once from inside an async block, with the block's context.
pub async fn poll_in_task<F: Future + Unpin>(f: &mut F) -> Poll<F::Output> {
    poll_fn(|cx| Poll::Ready(Pin::new(&mut *f).poll(cx))).await
}

pub fn tick_now(interval: &mut Interval) -> Poll<Instant> {
    interval.poll_tick(&mut Context::from_waker(Waker::noop()))
}

pub fn dq<T>(queue: &mut DelayQueue<T>, waker: &Waker) -> Poll<Option<Expired<T>>> {
    queue.poll_expired(&mut Context::from_waker(waker))
}

/// The item that must be ready now.
#[track_caller]
pub fn dq_ready<T>(queue: &mut DelayQueue<T>, waker: &Waker) -> T {
    match dq(queue, waker) {
        Poll::Ready(Some(e)) => e.into_inner(),
        Poll::Ready(None) => panic!("queue empty, an item was due"),
        Poll::Pending => panic!("pending, an item was due"),
    }
}

#[track_caller]
pub fn dq_pending<T>(queue: &mut DelayQueue<T>, waker: &Waker) {
    assert!(dq(queue, waker).is_pending(), "an item came out early");
}

#[track_caller]
pub fn dq_none<T>(queue: &mut DelayQueue<T>, waker: &Waker) {
    assert!(matches!(dq(queue, waker), Poll::Ready(None)));
}

/// Runs `f` on a thread of its own and fails, rather than hangs, if it
/// does not finish within `PATIENCE` (a deadlock).
pub fn within_patience<R: Send + 'static>(what: &str, f: impl FnOnce() -> R + Send + 'static) -> R {
    let handle = thread::spawn(f);
    let give_up = Instant::now() + PATIENCE;
    while !handle.is_finished() {
        assert!(Instant::now() < give_up, "{what}: hung (deadlock?)");
        thread::sleep(ms(1));
    }
    handle.join().unwrap()
}

/// A tiny xorshift, for spreads that do not depend on a seed crate.
pub struct Rng(pub u64);

impl Rng {
    pub fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

pub fn spin_until(t: Instant) {
    while Instant::now() < t {
        std::hint::spin_loop();
    }
}

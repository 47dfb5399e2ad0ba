//! What the tests ported from tokio's and tokio-util's timer suites share
//! (`tokio_*_cases.rs`): tokio-test's `is_woken` as a counting waker, the
//! polls they make, and the race helpers.

use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::thread;
use std::time::{Duration, Instant};

use wheel_sync::delay_queue::Expired;
use wheel_sync::{DelayQueue, Interval, TimerService};

pub const PATIENCE: Duration = Duration::from_secs(10);

pub fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

pub fn us(n: u64) -> Duration {
    Duration::from_micros(n)
}

pub fn manual() -> TimerService {
    TimerService::builder().manual_clock().build().unwrap()
}

/// A waker that counts its wakes: tokio-test's `is_woken`.
#[derive(Default)]
pub struct Counter(AtomicUsize);

impl Counter {
    pub fn count(&self) -> usize {
        self.0.load(SeqCst)
    }
}

impl Wake for Counter {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.0.fetch_add(1, SeqCst);
    }
}

pub fn counter() -> (Arc<Counter>, Waker) {
    let c = Arc::new(Counter::default());
    (c.clone(), Waker::from(c))
}

pub fn poll<F: Future + Unpin>(f: &mut F, waker: &Waker) -> Poll<F::Output> {
    Pin::new(f).poll(&mut Context::from_waker(waker))
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

pub const HOUR: Duration = Duration::from_secs(3600);

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

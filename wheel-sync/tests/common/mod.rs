//! What the integration tests share; each test binary uses part of it.
#![allow(dead_code)]

use std::future::Future;
use std::pin::{pin, Pin};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::{mpsc, Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::thread;
use std::time::{Duration, Instant};

use wheel_sync::TimerService;

pub mod horizon;
pub mod tokio_cases;
pub mod tokio_runtimes;

/// How long any condition may take to come true before a test gives up.
pub const PATIENCE: Duration = Duration::from_secs(10);
/// Lateness that still counts as sane on a loaded two-core machine.
pub const LATE_BOUND: Duration = Duration::from_millis(500);
/// "Never", as far as a test is concerned.
pub const HOUR: Duration = Duration::from_secs(3600);

/// A service on a manual clock: time moves only by `advance`.
pub fn manual() -> TimerService {
    TimerService::builder().manual_clock().build().unwrap()
}

/// A service on a manual clock with a tick of `tick`.
pub fn manual_ticking(tick: Duration) -> TimerService {
    TimerService::builder()
        .tick(tick)
        .manual_clock()
        .build()
        .unwrap()
}

pub fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// A waker that counts its wake-ups.
#[derive(Default)]
pub struct CountingWaker(AtomicUsize);

impl CountingWaker {
    pub fn count(&self) -> usize {
        self.0.load(SeqCst)
    }
}

impl Wake for CountingWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.0.fetch_add(1, SeqCst);
    }
}

pub fn counting_waker() -> (Arc<CountingWaker>, Waker) {
    let counter = Arc::new(CountingWaker::default());
    (counter.clone(), Waker::from(counter))
}

/// What a waker does when woken; it runs once.
pub struct OnWake(Mutex<Option<Box<dyn FnOnce() + Send>>>);

impl Wake for OnWake {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        if let Some(act) = self.0.lock().unwrap().take() {
            act();
        }
    }
}

pub fn on_wake(act: impl FnOnce() + Send + 'static) -> Waker {
    Waker::from(Arc::new(OnWake(Mutex::new(Some(Box::new(act))))))
}

/// Polls `cond` until it holds or `limit` runs out; returns whether it held.
pub fn wait_until(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let give_up = Instant::now() + limit;
    loop {
        if cond() {
            return true;
        }
        if Instant::now() >= give_up {
            return false;
        }
        thread::sleep(Duration::from_millis(1));
    }
}

/// The service tests' one-argument `wait_until`: `PATIENCE` is the limit.
pub mod patiently {
    /// Polls `cond` until it holds or `PATIENCE` runs out; returns whether it held.
    pub fn wait_until(cond: impl FnMut() -> bool) -> bool {
        super::wait_until(super::PATIENCE, cond)
    }
}

/// xorshift64: deterministic, dependency-free randomness.
pub struct XorShift(u64);

impl XorShift {
    pub fn new(seed: u64) -> Self {
        Self(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x % n
    }
}

/// Sets its flag when dropped: proves a callback's closure was released.
pub struct DropFlag(Arc<AtomicBool>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, SeqCst);
    }
}

/// Counts its drops: move one into each closure to count the closures
/// released.
pub struct Counted(pub Arc<AtomicUsize>);

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_add(1, SeqCst);
    }
}

/// A guard to move into a closure, and the flag it sets when dropped.
pub fn drop_flag() -> (DropFlag, Arc<AtomicBool>) {
    let flag = Arc::new(AtomicBool::new(false));
    (DropFlag(flag.clone()), flag)
}

/// Polls `future` once, with `waker`.
pub fn poll_once<F: Future + Unpin>(future: &mut F, waker: &Waker) -> Poll<F::Output> {
    Pin::new(future).poll(&mut Context::from_waker(waker))
}

/// `future` as a task holds it after a first poll that found it waiting:
/// a `Sleep`'s timer is made by that poll.
pub fn polled<F: Future + Unpin>(mut future: F) -> F {
    assert!(poll_once(&mut future, Waker::noop()).is_pending());
    future
}

/// Wakes a thread parked in [`block_on`].
struct Unparker(thread::Thread);

impl Wake for Unparker {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
}

/// The smallest executor: poll, park until woken. It never polls without a
/// wake-up (bar spurious unparks), so a lost wake-up hangs until `PATIENCE`
/// and fails instead of being papered over by busy polling.
pub fn block_on<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    let waker = Waker::from(Arc::new(Unparker(thread::current())));
    let mut cx = Context::from_waker(&waker);
    let give_up = Instant::now() + PATIENCE;
    loop {
        if let Poll::Ready(output) = future.as_mut().poll(&mut cx) {
            return output;
        }
        let now = Instant::now();
        assert!(now < give_up, "block_on: not woken within {PATIENCE:?}");
        thread::park_timeout(give_up - now);
    }
}

/// A driver thread name no other test uses (Linux keeps 15 bytes of it).
pub fn unique_thread_name() -> String {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    format!("ws-svc-{}", NEXT.fetch_add(1, SeqCst))
}

/// A service whose driver thread has a name no other test uses, and the name.
pub fn named_service() -> (String, TimerService) {
    let name = unique_thread_name();
    let timers = TimerService::builder()
        .thread_name(name.clone())
        .build()
        .unwrap();
    (name, timers)
}

/// Threads of this process named `name`.
#[cfg(target_os = "linux")]
pub fn threads_named(name: &str) -> usize {
    std::fs::read_dir("/proc/self/task")
        .expect("/proc/self/task")
        .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("comm")).ok())
        .filter(|comm| comm.trim_end() == name)
        .count()
}

/// A callback that records when it ran, for never-early checks.
pub fn report_to(
    tx: &mpsc::Sender<(usize, Instant, Instant)>,
    id: usize,
    deadline: Instant,
) -> impl FnOnce() + Send + 'static {
    let tx = tx.clone();
    move || {
        let now = Instant::now();
        let _ = tx.send((id, deadline, now));
    }
}

/// Runs `run` on a thread of its own and waits up to `PATIENCE` for it: a
/// panic in it is this thread's panic, and a hang (a lost wake-up) fails
/// instead of stalling the suite. The executors under test park their
/// threads, so only a watch from outside can bound them.
pub fn within_patience(run: impl FnOnce() + Send + 'static) {
    let (done_tx, done) = mpsc::channel();
    let runner = thread::spawn(move || {
        run();
        let _ = done_tx.send(());
    });
    match done.recv_timeout(PATIENCE) {
        Ok(()) => runner.join().expect("it finished"),
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            std::panic::resume_unwind(runner.join().expect_err("it panicked"))
        }
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("not done within {PATIENCE:?}"),
    }
}

/// Checks what a `DelayQueue` handed out, as (deadline, when it came out),
/// in the order it came out: never early, and in deadline order except
/// among items that were all due already (those come out in any order).
/// So an item that overtook one due earlier came out when that one was due.
pub fn assert_in_deadline_order(out: &[(Instant, Instant)]) {
    for (i, &(deadline, at)) in out.iter().enumerate() {
        assert!(at >= deadline, "item {i} came out early: {out:?}");
        for &(earlier, _) in &out[i + 1..] {
            assert!(
                earlier >= deadline || earlier <= at,
                "item {i} came out before an earlier deadline was due: {out:?}"
            );
        }
    }
}

/// A count, and a maker of callbacks that each bump it once when run.
pub fn counter() -> (Arc<AtomicUsize>, impl Fn() -> Box<dyn FnOnce() + Send>) {
    let count = Arc::new(AtomicUsize::new(0));
    let make = {
        let count = Arc::clone(&count);
        move || {
            let count = Arc::clone(&count);
            Box::new(move || {
                count.fetch_add(1, SeqCst);
            }) as Box<dyn FnOnce() + Send>
        }
    };
    (count, make)
}

/// The account the crate docs promise once nothing moves: every timer
/// admitted fired, was cancelled (a dropped future counts so), or is still
/// pending.
pub fn assert_adds_up(stats: &wheel_sync::Stats, what: &str) {
    assert_eq!(
        stats.scheduled,
        stats.fired + stats.cancelled + stats.pending as u64,
        "{what}: {stats:?}"
    );
}

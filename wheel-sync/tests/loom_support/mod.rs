//! What the loom models of the service share.
#![allow(dead_code)]

use std::time::{Duration, Instant};

use loom::sync::atomic::AtomicUsize;
use loom::sync::Arc;
use loom::thread;

/// Checks `f` in every interleaving within the preemption bound (2 unless
/// `LOOM_MAX_PREEMPTIONS` says otherwise).
pub fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    if builder.preemption_bound.is_none() {
        builder.preemption_bound = Some(2);
    }
    builder.check(f);
}

/// A deadline already passed: due whenever the driver looks.
pub fn past() -> Instant {
    Instant::now()
        .checked_sub(Duration::from_secs(1))
        .unwrap_or_else(Instant::now)
}

/// Never due during a model.
pub const HOUR: Duration = Duration::from_secs(3600);

/// Yields until `done`; loom fails the model if that never happens.
pub fn wait_until(done: impl Fn() -> bool) {
    while !done() {
        thread::yield_now();
    }
}

/// A waker that does nothing (`Waker::noop` is not loom's to see).
pub fn futures_noop_waker() -> std::task::Waker {
    std::task::Waker::noop().clone()
}

pub fn counter() -> Arc<AtomicUsize> {
    Arc::new(AtomicUsize::new(0))
}

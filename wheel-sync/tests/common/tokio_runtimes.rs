//! tokio's two runtimes, as the `under_tokio*` tests run every scenario on
//! both, and the account they check once every future is gone.

use tokio::runtime::{Builder, Runtime};
use wheel_sync::TimerService;

use super::assert_adds_up;
use super::patiently::wait_until;

/// More workers than the machine's two cores: a task is often preempted
/// between a poll and what follows it, and moves between threads.
pub fn multi_thread() -> Runtime {
    Builder::new_multi_thread()
        .worker_threads(4)
        .enable_time()
        .build()
        .unwrap()
}

pub fn current_thread() -> Runtime {
    Builder::new_current_thread().enable_time().build().unwrap()
}

/// A runtime's constructor.
pub type MakeRuntime = fn() -> Runtime;

/// Both runtimes, named for the failure messages.
pub const RUNTIMES: [(&str, MakeRuntime); 2] = [
    ("current-thread", current_thread),
    ("multi-thread", multi_thread),
];

/// Once every future is gone: nothing pending, and (once the driver's
/// counters have caught up) every timer admitted fired or was cancelled.
pub fn assert_settled(timers: &TimerService, what: &str) {
    assert_eq!(timers.pending(), 0, "{what}: timers outlived their futures");
    wait_until(|| {
        let s = timers.stats();
        s.scheduled == s.fired + s.cancelled
    });
    assert_adds_up(&timers.stats(), what);
}

//! The process-wide service and its free functions: one test, so that
//! nothing else in this binary touches the global's counts meanwhile.

#![cfg(not(loom))]

use core::future::Future;
use std::time::{Duration, Instant};

use wheel_sync::{Sleep, TimerService};

const HOUR: Duration = Duration::from_secs(3600);

fn block_on<F: Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(future)
}

/// Polls `future` once with a waker that does nothing: whether it waits.
fn poll_pending<F: Future + Unpin>(future: &mut F) -> bool {
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    core::pin::Pin::new(future).poll(&mut cx).is_pending()
}

#[test]
fn the_free_functions_share_one_global_service() {
    let global = TimerService::global();
    assert!(core::ptr::eq(global, TimerService::global()));
    assert_eq!(global.pending(), 0);

    // Made and polled on other threads, counted by one service.
    let sleeps: Vec<Sleep> = (0..3)
        .map(|_| {
            std::thread::spawn(|| {
                let mut sleep = wheel_sync::sleep(HOUR);
                assert!(poll_pending(&mut sleep));
                sleep
            })
            .join()
            .unwrap()
        })
        .collect();
    assert_eq!(global.pending(), 3);
    let mut timeout = wheel_sync::timeout_at(Instant::now() + HOUR, core::future::pending::<()>());
    assert!(poll_pending(&mut timeout));
    assert_eq!(global.pending(), 4);
    drop(sleeps);
    drop(timeout);
    assert_eq!(global.pending(), 0);

    let start = Instant::now();
    block_on(wheel_sync::sleep(Duration::from_millis(3)));
    assert!(start.elapsed() >= Duration::from_millis(3));
    let at = Instant::now() + Duration::from_millis(3);
    let sleep = wheel_sync::sleep_until(at);
    assert_eq!(sleep.deadline(), at);
    block_on(sleep);
    assert!(Instant::now() >= at);
    assert_eq!(
        block_on(wheel_sync::timeout(HOUR, async { 5 })),
        Ok(5),
        "a ready future wins"
    );
    let late = block_on(wheel_sync::timeout(
        Duration::from_millis(2),
        core::future::pending::<()>(),
    ));
    assert!(late.is_err());
    assert_eq!(global.pending(), 0);
    assert_eq!(global.stats().fired, 3);
}

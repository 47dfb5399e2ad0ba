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

#[test]
fn the_free_functions_share_one_global_service() {
    let global = TimerService::global();
    assert!(core::ptr::eq(global, TimerService::global()));
    assert_eq!(global.pending(), 0);

    // Made on other threads, through their own handles, counted by one service.
    let sleeps: Vec<Sleep> = (0..3)
        .map(|_| {
            std::thread::spawn(|| wheel_sync::sleep(HOUR))
                .join()
                .unwrap()
        })
        .collect();
    assert_eq!(global.pending(), 3);
    let timeout = wheel_sync::timeout_at(Instant::now() + HOUR, core::future::pending::<()>());
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

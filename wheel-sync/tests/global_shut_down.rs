//! The process-wide service shut down: it ends for every user of the free
//! functions, as its docs warn. One test: the process-wide service is this
//! binary's alone.
#![cfg(not(loom))]

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::task::{Context, Waker};

use wheel_sync::{ScheduleError, ShutdownError, TimerService};

mod common;
use common::{block_on, ms, poll_once, HOUR};

#[test]
fn the_global_service_shut_down_is_down_for_every_free_function() {
    let global = TimerService::global();
    let pending = common::polled(Box::pin(wheel_sync::sleep(HOUR)));
    let report = global.shutdown().unwrap();
    assert_eq!(report.unfired, 1, "the sleep pending at the shutdown");
    assert!(pending.is_shut_down());
    assert_eq!(global.pending(), 0);
    // Made after: shut down, and its poll panics (as tokio's would).
    let mut sleep = Box::pin(wheel_sync::sleep(ms(1)));
    assert!(sleep.is_shut_down());
    let poll = AssertUnwindSafe(|| poll_once(&mut sleep, Waker::noop()));
    assert!(catch_unwind(poll).is_err(), "a shut-down sleep completed");
    // A timeout whose future is ready at once needs no timer: it still wins.
    assert_eq!(
        block_on(wheel_sync::timeout(ms(1), async { 7 })).ok(),
        Some(7)
    );
    let mut ticks = wheel_sync::interval(ms(1));
    let mut cx = Context::from_waker(Waker::noop());
    assert!(
        ticks.poll_tick(&mut cx).is_ready(),
        "the first tick is at once"
    );
    assert_eq!(
        global.schedule(ms(1), || ()).map(drop),
        Err(ScheduleError::Shutdown)
    );
    assert_eq!(
        global.shutdown().map(drop),
        Err(ShutdownError::AlreadyShutDown)
    );
}

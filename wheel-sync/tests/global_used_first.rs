//! The process-wide service made on first use, with the defaults, then
//! `Builder::build_global`: refused, and the service already running stays
//! the one the free functions use. One test: the process-wide service is
//! this binary's alone.
#![cfg(not(loom))]

use std::io::ErrorKind;
use std::time::Instant;

use wheel_sync::{AdvanceError, TimerService};

mod common;
use common::{block_on, ms};

#[test]
fn build_global_after_first_use_is_refused_and_changes_nothing() {
    let start = Instant::now();
    block_on(wheel_sync::sleep(ms(2)));
    assert!(start.elapsed() >= ms(2));
    let global = TimerService::global();

    let late = TimerService::builder().manual_clock().build_global();
    assert_eq!(late.map(drop).unwrap_err().kind(), ErrorKind::AlreadyExists);
    assert!(core::ptr::eq(global, TimerService::global()));
    assert_eq!(
        global.advance(ms(1)),
        Err(AdvanceError::NotManual),
        "the defaults' monotonic clock stays"
    );
    let reply = block_on(wheel_sync::timeout(ms(1000), async { "pong" }));
    assert_eq!(reply, Ok("pong"));
    let before = Instant::now();
    block_on(wheel_sync::sleep(ms(3)));
    assert!(before.elapsed() >= ms(3), "a real sleep on the real clock");
}

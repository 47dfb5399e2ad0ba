//! A program written for `tokio_util::time::DelayQueue` (`program/sessions.rs`)
//! compiles against wheel-sync's with only its `use` lines changed, and
//! behaves the same: run on tokio's paused clock and on a manual clock
//! here, it sees the same events at the same simulated times.
//!
//! The only difference between the two modules below is their `use` lines.
#![cfg(all(not(loom), feature = "stream"))]

mod on_tokio {
    use futures::StreamExt;
    use std::collections::HashMap;
    use std::time::Duration;
    use tokio::time::{sleep, Instant};
    use tokio_util::time::delay_queue::{DelayQueue, Expired, Key};

    include!("program/sessions.rs");
}

mod on_wheel {
    use futures::StreamExt;
    use std::collections::HashMap;
    use std::time::Duration;
    use std::time::Instant;
    use wheel_sync::delay_queue::{DelayQueue, Expired, Key};
    use wheel_sync::sleep;

    include!("program/sessions.rs");
}

#[test]
fn the_tokio_util_program_sees_the_same_on_both() {
    let tokio_log = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap()
        .block_on(on_tokio::scenario(tokio::time::Instant::now));

    // This test binary's process-wide service runs on a manual clock, so
    // `DelayQueue::new` and `wheel_sync::sleep` in the program use it.
    let timers = wheel_sync::TimerService::builder()
        .manual_clock()
        .build_global()
        .unwrap();
    let wall = std::time::Instant::now();
    let wheel_log = timers
        .run_paused(on_wheel::scenario(|| timers.now()))
        .unwrap();
    assert!(
        wall.elapsed().as_secs() < 10,
        "a paused clock waits for nothing"
    );

    let secs = |s: u64| std::time::Duration::from_secs(s);
    assert_eq!(wheel_log, tokio_log);
    // And what both saw is what the program means.
    assert_eq!(
        wheel_log,
        [
            ("closed bob 1".to_owned(), secs(10), None),
            ("closed by key Some(\"dave\")".to_owned(), secs(10), None),
            ("next carol".to_owned(), secs(10), Some(secs(30))),
            ("expired carol".to_owned(), secs(35), Some(secs(30))),
            ("expired alice".to_owned(), secs(40), Some(secs(40))),
            ("compacted to 1 of 1".to_owned(), secs(40), None),
            ("erin is Some(5)".to_owned(), secs(40), None),
            ("expired erin".to_owned(), secs(70), Some(secs(70))),
            ("empty".to_owned(), secs(70), None),
        ]
    );
}

//! `Builder::build_global` raced from several threads before anything
//! else touches the process-wide service: exactly one wins, every later
//! call is refused, and the free functions and `DelayQueue::new`, from any
//! thread, all run on the service it built (here a manual clock). One
//! test: the process-wide service is this binary's alone.
#![cfg(not(loom))]

use std::io::ErrorKind;
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::Duration;

use wheel_sync::{DelayQueue, TimerService};

mod common;
use common::{ms, polled, HOUR};

#[test]
fn one_racing_build_global_wins_and_every_free_function_runs_on_it() {
    let start = Arc::new(Barrier::new(4));
    let racers: Vec<_> = (0..4)
        .map(|_| {
            let start = Arc::clone(&start);
            thread::spawn(move || {
                start.wait();
                TimerService::builder()
                    .manual_clock()
                    .build_global()
                    .map(|service| service as *const TimerService as usize)
                    .map_err(|e| e.kind())
            })
        })
        .collect();
    let results: Vec<_> = racers.into_iter().map(|r| r.join().unwrap()).collect();
    let won: Vec<usize> = results.iter().filter_map(|r| r.ok()).collect();
    assert_eq!(won.len(), 1, "exactly one build_global wins: {results:?}");
    for lost in results.iter().filter_map(|r| r.err()) {
        assert_eq!(lost, ErrorKind::AlreadyExists);
    }
    let global = TimerService::global();
    assert_eq!(won[0], global as *const TimerService as usize);
    let again = TimerService::builder().build_global().map(drop);
    assert_eq!(again.unwrap_err().kind(), ErrorKind::AlreadyExists);

    // The free functions run on the manual clock that was built.
    let t0 = global.now();
    thread::sleep(ms(2));
    assert_eq!(global.now(), t0, "the global clock is the manual one");
    let mut queue = DelayQueue::new();
    queue.insert("item", ms(30));
    let mut every = wheel_sync::interval(ms(20));
    let log = global
        .run_paused(async {
            wheel_sync::sleep(ms(5)).await;
            let a = global.now() - t0;
            wheel_sync::sleep_until(t0 + ms(10)).await;
            let b = global.now() - t0;
            let timed_out = wheel_sync::timeout(ms(5), std::future::pending::<()>()).await;
            let c = global.now() - t0;
            let at = wheel_sync::timeout_at(t0 + ms(100), async { 7 }).await;
            every.tick().await;
            every.tick().await;
            let d = global.now() - t0;
            let item = queue.next_expired().await.map(|e| e.into_inner());
            let e = global.now() - t0;
            (a, b, timed_out.is_err(), c, at, d, item, e)
        })
        .unwrap();
    assert_eq!(
        log,
        (
            ms(5),
            ms(10),
            true,
            ms(15),
            Ok(7),
            ms(20),
            Some("item"),
            ms(30)
        )
    );
    let mut from = wheel_sync::interval_at(t0 + ms(40), ms(1));
    assert_eq!(global.run_paused(from.tick()).unwrap(), t0 + ms(40));
    drop(from);

    // From many threads at once: each sleep waits on the one service.
    let ready = Arc::new(Barrier::new(8));
    let threads: Vec<_> = (0..8)
        .map(|_| {
            let ready = Arc::clone(&ready);
            thread::spawn(move || {
                ready.wait();
                polled(wheel_sync::sleep(HOUR))
            })
        })
        .collect();
    let sleeps: Vec<_> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    assert_eq!(global.pending(), 8);
    drop(sleeps);
    assert_eq!(global.pending(), 0);
    assert!(global.advance(Duration::ZERO).is_ok());
}

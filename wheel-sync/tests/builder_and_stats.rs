//! `Builder` limits and `Stats` read while the driver works: the tick's
//! bounds, `max_pending(0)` (every callback refused, no future), the
//! callback executor handed callbacks in deadline order; and each `Stats`
//! a reader takes while timers fire is one the service could have had:
//! percentiles in order and true of the timers fired, mean within the
//! maximum, counters that never fall.
#![cfg(not(loom))]

use std::io::ErrorKind;
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use wheel_sync::{DelayQueue, ScheduleError, Stats, TimerService};

mod common;
use common::{manual, ms, polled, XorShift, HOUR};

type Task = Box<dyn FnOnce() + Send + 'static>;

/// A tick of one nanosecond past what `u64` nanoseconds hold is refused;
/// one nanosecond builds.
#[test]
fn ticks_from_one_nanosecond_to_u64_max_nanoseconds_build_and_no_more() {
    let past = Duration::from_nanos(u64::MAX) + Duration::from_nanos(1);
    let err = TimerService::builder().tick(past).build().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    let timers = common::manual_ticking(Duration::from_nanos(1));
    let start = timers.now();
    timers
        .run_paused(timers.sleep(Duration::from_nanos(3)))
        .unwrap();
    assert_eq!(timers.now() - start, Duration::from_nanos(3));
}

/// `max_pending(0)`: `schedule`, `schedule_at`, `schedule_detached` and
/// `schedule_detached_at` refuse every timer, and say the limit; futures,
/// an interval and a delay queue are never refused, and count.
#[test]
fn max_pending_zero_refuses_every_callback_and_no_future() {
    let timers = TimerService::builder()
        .manual_clock()
        .max_pending(0)
        .build()
        .unwrap();
    let refused = Err(ScheduleError::TooManyPending { limit: 0 });
    let at = timers.now() + ms(1);
    assert_eq!(timers.schedule(ms(1), || ()).map(drop), refused);
    assert_eq!(timers.schedule_at(at, || ()).map(drop), refused);
    assert_eq!(timers.schedule_detached(ms(1), || ()), refused);
    assert_eq!(timers.schedule_detached_at(at, || ()), refused);
    assert_eq!(timers.pending(), 0);

    let sleep = polled(timers.sleep(HOUR));
    assert_eq!(timers.pending(), 1, "a sleep counts though the limit is 0");
    let start = timers.now();
    let mut every = timers.interval(ms(5));
    let mut queue = DelayQueue::with_service(&timers);
    queue.insert("item", ms(7));
    let done = timers
        .run_paused(async {
            every.tick().await;
            every.tick().await;
            let out = queue.next_expired().await.map(|e| e.into_inner());
            (out, timers.now() - start)
        })
        .unwrap();
    assert_eq!(done, (Some("item"), ms(7)));
    assert_eq!(timers.schedule(ms(1), || ()).map(drop), refused);
    drop((sleep, every));
    assert_eq!(timers.pending(), 0);
}

/// The driver "fires both wheels in deadline order together": with a
/// callback executor, callbacks with handles and detached ones reach the
/// executor in deadline order, all of them by the time `advance` returns.
#[test]
fn the_callback_executor_is_handed_callbacks_in_deadline_order() {
    let held: Arc<Mutex<Vec<Task>>> = Arc::default();
    let sink = Arc::clone(&held);
    let timers = TimerService::builder()
        .manual_clock()
        .callback_executor(move |task| sink.lock().unwrap().push(task))
        .build()
        .unwrap();
    let ran: Arc<Mutex<Vec<u64>>> = Arc::default();
    let mut rng = XorShift::new(3);
    let mut handles = Vec::new();
    for i in 0..400u64 {
        let due = 1 + rng.below(5_000);
        let ran = Arc::clone(&ran);
        let callback = move || ran.lock().unwrap().push(due);
        if i % 2 == 0 {
            handles.push(timers.schedule(ms(due), callback).unwrap());
        } else {
            timers.schedule_detached(ms(due), callback).unwrap();
        }
    }
    timers.advance(ms(5_000)).unwrap();
    let tasks = std::mem::take(&mut *held.lock().unwrap());
    assert_eq!(
        tasks.len(),
        400,
        "advance returned before all were handed over"
    );
    assert!(handles.iter().all(|h| h.is_fired()));
    for task in tasks {
        task();
    }
    let ran = ran.lock().unwrap();
    let mut sorted = ran.clone();
    sorted.sort_unstable();
    assert_eq!(*ran, sorted, "handed over out of deadline order");
}

/// What a reader may see of a service whose timers are firing: the
/// percentiles in order and none above the maximum, the mean within the
/// maximum, and, once the one timer `big` late has fired, a p99 and p999
/// of at least `big` (it is more than 1 % of the at most 99 timers fired);
/// and counters that never fall from one read to the next.
fn check(before: &Stats, now: &Stats, big: Duration) {
    let late = now.lateness;
    assert!(
        late.p50 <= late.p99 && late.p99 <= late.p999 && late.p999 <= late.max,
        "percentiles out of order: {now:?}"
    );
    assert_eq!(late.max, now.max_lateness, "{now:?}");
    assert!(
        now.mean_lateness <= now.max_lateness,
        "mean above the max: {now:?}"
    );
    if late.max >= big {
        assert!(
            late.p99 >= big && late.p999 >= big,
            "p99 below a timer that is more than 1% of those fired: {now:?}"
        );
    }
    for (what, a, b) in [
        ("scheduled", before.scheduled, now.scheduled),
        ("fired", before.fired, now.fired),
        ("cancelled", before.cancelled, now.cancelled),
        ("rounds", before.rounds, now.rounds),
        ("wakeups", before.wakeups, now.wakeups),
    ] {
        assert!(
            b >= a,
            "{what} fell from {a} to {b}: {before:?} then {now:?}"
        );
    }
    assert!(
        now.max_lateness >= before.max_lateness,
        "{before:?} then {now:?}"
    );
}

/// A reader on another thread takes `Stats` again and again while one
/// timer fires a second late and then 80 more fire on time, in batches of
/// 20: every read passes [`check`]. Fresh services, so that each read sees
/// few timers, where a torn read shows most.
#[test]
fn stats_read_while_timers_fire_are_each_ones_the_service_could_have() {
    let big = Duration::from_secs(1);
    for service in 0..60 {
        let timers = manual();
        let stop = Arc::new(AtomicBool::new(false));
        let reader = {
            let (timers, stop) = (timers.clone(), Arc::clone(&stop));
            thread::spawn(move || {
                let mut before = timers.stats();
                let mut reads = 0u64;
                while !stop.load(SeqCst) || reads < 10 {
                    let now = timers.stats();
                    check(&before, &now, big);
                    before = now;
                    reads += 1;
                }
            })
        };
        timers.schedule_detached(ms(1), || ()).unwrap();
        timers.advance(ms(1) + big).unwrap();
        for _ in 0..4 {
            for _ in 0..20 {
                timers.schedule_detached(ms(1), || ()).unwrap();
            }
            let cancelled = timers.schedule(HOUR, || ()).unwrap();
            cancelled.cancel();
            timers.advance(ms(1)).unwrap();
        }
        stop.store(true, SeqCst);
        if let Err(panic) = reader.join() {
            eprintln!("service {service}");
            std::panic::resume_unwind(panic);
        }
    }
}

/// "A schedule that a shutdown refuses is counted in, then out again."
/// After a shutdown, schedules refused on two threads move `scheduled` by
/// at most one each, for a moment, and leave it where it was once they
/// stop. (`pending` is not checked: the crate docs make it exact only
/// while no timer is being scheduled.)
#[test]
fn schedules_refused_after_shutdown_leave_the_scheduled_count_where_it_was() {
    let timers = TimerService::new();
    timers.schedule(HOUR, || ()).unwrap();
    timers.shutdown().unwrap();
    let settled = timers.stats().scheduled;
    let stop = Arc::new(AtomicBool::new(false));
    let refusers: Vec<_> = (0..2)
        .map(|_| {
            let (timers, stop) = (timers.clone(), Arc::clone(&stop));
            thread::spawn(move || {
                while !stop.load(SeqCst) {
                    let refused = timers.schedule(HOUR, || ());
                    assert_eq!(refused.map(drop), Err(ScheduleError::Shutdown));
                }
            })
        })
        .collect();
    let give_up = std::time::Instant::now() + Duration::from_millis(100);
    while std::time::Instant::now() < give_up {
        let scheduled = timers.stats().scheduled;
        assert!(
            (settled..=settled + 2).contains(&scheduled),
            "after shutdown, scheduled was {settled}, then {scheduled}"
        );
    }
    stop.store(true, SeqCst);
    for refuser in refusers {
        refuser.join().unwrap();
    }
    assert_eq!(timers.stats().scheduled, settled);
}

/// A fire is counted before its callback runs: the callback itself reads
/// its own fire in `Stats::fired`.
#[test]
fn a_fire_is_counted_before_its_callback_runs() {
    let timers = manual();
    let (tx, rx) = std::sync::mpsc::channel();
    let inner = timers.clone();
    timers
        .schedule(ms(1), move || tx.send(inner.stats().fired).unwrap())
        .unwrap();
    timers.advance(ms(1)).unwrap();
    assert_eq!(rx.recv().unwrap(), 1);
}

/// A thread that has pushed two batches to its queue while the driver is
/// held up in a callback waits for it at the second batch's end, gives up
/// once the driver has taken nothing for 100 ms, and the wait is counted
/// in `Stats::waits_for_driver`; everything fires once the driver is free.
#[test]
fn a_producer_two_batches_ahead_of_a_held_driver_waits_and_is_counted() {
    const PUSHES: usize = 2 * 4096;
    let timers = TimerService::new();
    let (held_tx, held) = std::sync::mpsc::channel();
    timers
        .schedule_detached(Duration::ZERO, move || {
            held_tx.send(()).unwrap();
            thread::sleep(Duration::from_millis(400));
        })
        .unwrap();
    held.recv().unwrap();
    let before = timers.stats().waits_for_driver;
    let fired = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let start = std::time::Instant::now();
    for _ in 0..PUSHES {
        let fired = fired.clone();
        timers
            .schedule_detached(Duration::ZERO, move || {
                fired.fetch_add(1, SeqCst);
            })
            .unwrap();
    }
    let took = start.elapsed();
    assert!(timers.stats().waits_for_driver > before, "no wait counted");
    assert!(took >= Duration::from_millis(100), "pushed in {took:?}");
    assert!(common::patiently::wait_until(
        || fired.load(SeqCst) == PUSHES
    ));
}

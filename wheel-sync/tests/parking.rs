//! Parking: a new timer with a handle waits in its thread's parking spot next
//! to the queue (if the spot has an empty place), and a cancel through its
//! handle takes it back unseen. Parked timers still fire on time and in order, are taken
//! back and freed at once when cancelled on another thread, are counted
//! when taken back, and are abandoned by shutdown.
#![cfg(not(loom))]

use std::sync::atomic::Ordering::SeqCst;
use std::sync::{mpsc, Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use wheel_sync::TimerService;

mod common;
use common::patiently::wait_until;
use common::{counting_waker, drop_flag, poll_once, HOUR, LATE_BOUND, PATIENCE};

/// A parked timer whose thread never touches the service again still fires,
/// on time: the driver, idle before, is woken for it or sweeps it.
#[test]
fn a_parked_timer_fires_although_its_thread_goes_quiet() {
    let timers = TimerService::new();
    // Let the driver settle into sleeping with nothing to do.
    thread::sleep(Duration::from_millis(20));
    let delay = Duration::from_millis(80);
    let (tx, rx) = mpsc::channel();
    let start = Instant::now();
    let handle = thread::spawn({
        let timers = timers.clone();
        move || {
            timers
                .schedule(delay, move || tx.send(Instant::now()).unwrap())
                .unwrap()
        }
    })
    .join()
    .unwrap();
    let fired_at = rx
        .recv_timeout(PATIENCE)
        .expect("the parked timer never fired");
    assert!(fired_at >= start + delay, "fired early");
    assert!(
        fired_at <= start + delay + LATE_BOUND,
        "fired {:?} late",
        fired_at - start - delay
    );
    assert!(handle.is_fired());
}

/// A spot's places for parked timers.
const PLACES: usize = 64;

/// Two timers from one thread whose spot has one place left: the first
/// takes it, the second finds the spot full and is queued; both fire, in
/// deadline order, neither early.
#[test]
fn a_parked_timer_and_one_queued_beside_it_fire_in_order() {
    let timers = TimerService::new();
    let fillers: Vec<_> = (1..PLACES)
        .map(|_| timers.schedule(HOUR, || ()).unwrap())
        .collect();
    let order = Arc::new(Mutex::new(Vec::new()));
    let start = Instant::now();
    let mut handles = Vec::new();
    for (name, ms) in [("second", 120), ("first", 60)] {
        let order = order.clone();
        let delay = Duration::from_millis(ms);
        handles.push(
            timers
                .schedule(delay, move || {
                    order.lock().unwrap().push((name, Instant::now()))
                })
                .unwrap(),
        );
    }
    assert!(wait_until(|| order.lock().unwrap().len() == 2));
    let order = order.lock().unwrap();
    assert_eq!(
        order.iter().map(|(n, _)| *n).collect::<Vec<_>>(),
        ["first", "second"]
    );
    assert!(order[0].1 >= start + Duration::from_millis(60));
    assert!(order[1].1 >= start + Duration::from_millis(120));
    assert!(fillers.iter().all(|h| h.cancel()));
    assert_eq!(timers.pending(), 0);
}

/// Cancelled on another thread, a parked timer is taken back from the spot
/// of its handle's lane (or swept by the driver, if it got there first):
/// freed well before its deadline, and counted.
#[test]
fn a_parked_timer_cancelled_elsewhere_is_freed() {
    let timers = TimerService::new();
    let (guard, dropped) = drop_flag();
    let handle = timers.schedule(HOUR, move || drop(guard)).unwrap();
    assert_eq!(timers.pending(), 1);
    let cancelled = thread::spawn(move || {
        let won = handle.cancel();
        drop(handle);
        won
    })
    .join()
    .unwrap();
    assert!(cancelled);
    assert_eq!(timers.pending(), 0, "counted out at once");
    assert!(
        wait_until(|| dropped.load(SeqCst)),
        "a cancelled parked timer is held until its deadline"
    );
    assert!(wait_until(|| {
        let s = timers.stats();
        (s.scheduled, s.cancelled) == (1, 1)
    }));
}

/// Taken back from its spot, a timer never reaches the driver: its memory
/// goes at once, on the thread that drops it, which a sleep's waker shows
/// (it is dropped with the timer), and the counters see it all the same.
#[test]
fn retracted_timers_are_counted_and_freed_at_once() {
    const SLEEPS: u64 = 10_000;
    let timers = TimerService::new();
    let mut freed_at_once = 0;
    for _ in 0..SLEEPS {
        let (wakes, waker) = counting_waker();
        let mut sleep = timers.sleep(Duration::from_secs(1));
        assert!(poll_once(&mut sleep, &waker).is_pending());
        drop(waker);
        drop(sleep);
        // The timer held the last clone of the waker, but for `wakes`.
        freed_at_once += u64::from(std::sync::Arc::strong_count(&wakes) == 1);
    }
    assert_eq!(timers.pending(), 0);
    // Only a round that happens to land between a poll and its drop takes a
    // timer for the driver to free.
    assert!(
        freed_at_once > SLEEPS * 9 / 10,
        "only {freed_at_once} freed at once"
    );
    let s = timers.stats();
    assert_eq!((s.scheduled, s.cancelled, s.fired), (SLEEPS, SLEEPS, 0));
}

/// Requests kept in flight on one thread, `in_flight` at a time, each
/// cancelled in turn (`pick` chooses which of those in flight ends: the
/// oldest, or any); returns the most the driver filed in one round.
fn most_filed_in_a_round(in_flight: usize, mut pick: impl FnMut(usize) -> usize) -> u64 {
    const REQUESTS: u64 = 10_000;
    let timers = TimerService::new();
    let mut ring = std::collections::VecDeque::new();
    for _ in 0..REQUESTS {
        ring.push_back(timers.schedule(Duration::from_secs(1), || ()).unwrap());
        if ring.len() == in_flight {
            let ended = ring.remove(pick(in_flight)).unwrap();
            assert!(ended.cancel());
        }
    }
    ring.into_iter().for_each(|handle| assert!(handle.cancel()));
    assert_eq!(timers.pending(), 0);
    let stats = timers.stats();
    assert_eq!((stats.scheduled, stats.cancelled), (REQUESTS, REQUESTS));
    stats.max_filed_per_round
}

/// A spot has 64 places, and a park looks at eight of them from the one
/// after its last: requests answered in the order made find the place the
/// oldest left, so up to 64 in flight never reach the driver (a round that
/// lands meanwhile could take what is parked then, 64 at most, though a
/// second-long timer stays parked past a round's horizon; with eight
/// places a spot, the rest were queued, and the driver, woken for every
/// `BATCH` of them, filed thousands a round).
#[test]
fn sixty_four_requests_answered_in_order_never_reach_the_driver() {
    // The ring's front: the oldest.
    let filed = most_filed_in_a_round(64, |_| 0);
    assert!(filed <= 64, "the driver filed {filed} in a round");
}

/// Answered in any order, up to eight in flight: a park looks at eight
/// places, and at most seven others are taken.
#[test]
fn eight_requests_answered_in_any_order_never_reach_the_driver() {
    let filed = most_filed_in_a_round(8, any_of(0x9E37_79B9_7F4A_7C15));
    assert!(filed <= 8, "the driver filed {filed} in a round");
}

/// Answered in any order, up to 64 in flight: a cancel that takes its
/// timer back leaves the spot's cursor on the place it emptied, where the
/// next park looks first. (Before, a park looked only at the eight places
/// after its last, which rarely held the one a random answer had emptied:
/// most requests went through the queue, and the driver, woken for every
/// `BATCH` of them, filed thousands a round.)
#[test]
fn sixty_four_requests_answered_in_any_order_never_reach_the_driver() {
    let filed = most_filed_in_a_round(64, any_of(0x2545_F491_4F6C_DD1D));
    assert!(filed <= 64, "the driver filed {filed} in a round");
}

/// A pick of any of `n` requests in flight, from a xorshift seeded `seed`.
fn any_of(seed: u64) -> impl FnMut(usize) -> usize {
    let mut random = seed;
    move |n| {
        random ^= random << 13;
        random ^= random >> 7;
        random ^= random << 17;
        (random % n as u64) as usize
    }
}

/// A thread with several requests in flight, each ended in turn (a ring
/// of eight sleeps, the oldest dropped as a new one is polled), parks each
/// in a place of its spot and takes it back: the driver is handed none of
/// them to file (with one place a spot, all but one in eight were queued,
/// and the driver, woken for every `BATCH` of them, filed thousands a
/// round).
#[test]
fn eight_requests_in_flight_on_a_thread_never_reach_the_driver() {
    const SLEEPS: u64 = 10_000;
    const IN_FLIGHT: usize = 8;
    let timers = TimerService::new();
    let waker = std::task::Waker::noop();
    let mut ring = std::collections::VecDeque::new();
    for _ in 0..SLEEPS {
        let mut sleep = timers.sleep(Duration::from_secs(1));
        assert!(poll_once(&mut sleep, waker).is_pending());
        ring.push_back(sleep);
        if ring.len() == IN_FLIGHT {
            ring.pop_front();
        }
    }
    drop(ring);
    assert_eq!(timers.pending(), 0);
    let stats = timers.stats();
    assert_eq!((stats.scheduled, stats.cancelled), (SLEEPS, SLEEPS));
    // A round that lands while requests are in flight could take what is
    // parked then, the eight at most (though not a second-long timer: it is
    // due after the round's horizon).
    assert!(
        stats.max_filed_per_round <= IN_FLIGHT as u64,
        "the driver filed {} in a round",
        stats.max_filed_per_round
    );
}

/// Shutdown abandons a parked timer like a queued one: reported, closure
/// dropped unrun, the handle sees it.
#[test]
fn shutdown_abandons_parked_timers() {
    let timers = TimerService::new();
    let (guard, dropped) = drop_flag();
    let handle = timers.schedule(HOUR, move || drop(guard)).unwrap();
    let report = timers.shutdown().unwrap();
    assert_eq!(report.unfired, 1);
    assert!(dropped.load(SeqCst), "the closure outlived shutdown");
    assert!(handle.is_cancelled());
    assert!(!handle.cancel());
    assert_eq!(timers.pending(), 0);
}

#[test]
fn a_request_timeout_future_dropped_in_time_never_reaches_the_driver() {
    let timers = TimerService::new();
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    // A reply there at once: no timer at all.
    for _ in 0..1_000 {
        let reply = rt.block_on(timers.timeout(Duration::from_secs(1), async { "pong" }));
        assert_eq!(reply, Ok("pong"));
    }
    assert_eq!(timers.stats().scheduled, 0, "{:?}", timers.stats());
    // A reply after one wait: a timer each, parked, and taken back by the
    // thread as the request ends, so counted at once and never filed.
    for _ in 0..1_000 {
        let reply = rt.block_on(timers.timeout(Duration::from_secs(1), PendingOnce(false)));
        assert_eq!(reply, Ok("pong"));
    }
    assert_eq!(timers.pending(), 0);
    let stats = timers.stats();
    assert_eq!(
        (stats.scheduled, stats.cancelled),
        (1_000, 1_000),
        "{stats:?}"
    );
    assert!(stats.wakeups < 100, "woken per request: {stats:?}");
}

/// A request whose reply comes at its second poll (it wakes its task).
struct PendingOnce(bool);

impl std::future::Future for PendingOnce {
    type Output = &'static str;

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<&'static str> {
        if std::mem::replace(&mut self.0, true) {
            return std::task::Poll::Ready("pong");
        }
        cx.waker().wake_by_ref();
        std::task::Poll::Pending
    }
}

#[test]
fn a_parked_sleep_reset_earlier_completes_on_time() {
    let timers = TimerService::new();
    let mut sleep = timers.sleep(HOUR);
    let (waker_count, waker) = counting_waker();
    assert!(poll_once(&mut sleep, &waker).is_pending());
    let soon = Instant::now() + Duration::from_millis(3);
    sleep.reset(soon);
    assert!(
        wait_until(|| waker_count.count() > 0),
        "a parked sleep reset earlier was never woken"
    );
    assert!(poll_once(&mut sleep, &waker).is_ready());
    let late = Instant::now() - soon;
    assert!(late < LATE_BOUND, "{late:?} late");
    // And one reset later than parked still waits for its new deadline.
    let mut later = common::polled(timers.sleep(Duration::from_millis(60)));
    later.reset(Instant::now() + HOUR);
    thread::sleep(Duration::from_millis(120));
    assert!(!later.is_elapsed(), "fired at its old deadline");
}

/// A thread that schedules and cancels in a loop keeps its spot full half
/// the time: a driver that went back to a round whenever it found a parked
/// message before a sleep would take (and then free) timer after timer,
/// awake the whole time. A parked timer due later than the driver's plan
/// does not wake it, so it sleeps on.
#[test]
fn a_schedule_and_cancel_loop_does_not_keep_the_driver_awake() {
    let timers = TimerService::new();
    // A timer far out keeps the wheel from being empty, so the driver's
    // sleeps are the ones before an expiration.
    let _far = timers.schedule(HOUR, || ()).unwrap();
    let start = Instant::now();
    let before = timers.stats().rounds;
    while start.elapsed() < Duration::from_millis(400) {
        for _ in 0..1_000 {
            assert!(timers
                .schedule(Duration::from_secs(1), || ())
                .unwrap()
                .cancel());
        }
    }
    let rounds = timers.stats().rounds - before;
    // A round per nap, every 100 ms, and a few wake-ups more: not one per
    // parked timer.
    assert!(rounds < 100, "{rounds} driver rounds in 400 ms");
}

/// Timers parked with a second to go stay on their spot through the
/// driver's rounds: a round takes only what is due by its horizon (the
/// longest it sleeps with timers pending, 100 ms), so requests cancelled
/// before then never reach the driver however many rounds it runs
/// meanwhile. (A round used to take every parked timer: here it filed all
/// sixteen in one round.)
#[test]
fn parked_timers_due_after_the_drivers_horizon_stay_parked_through_its_rounds() {
    const IN_FLIGHT: usize = 16;
    let timers = TimerService::new();
    let waker = std::task::Waker::noop();
    let before = timers.stats().rounds;
    let start = std::time::Instant::now();
    let mut sleeps: Vec<_> = (0..IN_FLIGHT)
        .map(|_| timers.sleep(Duration::from_secs(1)))
        .collect();
    for sleep in &mut sleeps {
        assert!(poll_once(sleep, waker).is_pending());
    }
    // The first park wakes the driver; it then rounds at least once a
    // 100 ms while timers are pending.
    assert!(wait_until(|| timers.stats().rounds >= before + 3));
    let filed = timers.stats().max_filed_per_round;
    drop(sleeps);
    assert_eq!(timers.pending(), 0);
    // A park reserves its place before it writes the tick, and a round
    // skips a reserved place: none was taken early. (Unless this thread
    // was held up until the sleeps came within the horizon.)
    if start.elapsed() < Duration::from_millis(800) {
        assert_eq!(filed, 0, "the driver filed {filed} in a round");
    }
}

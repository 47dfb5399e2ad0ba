//! The driver's own steps, driven by hand on a manual clock.

use std::sync::mpsc;
use std::time::{Duration, Instant};

use super::*;
use crate::action::Wake;
use crate::clock::Clock;
use crate::entry::FIRED;

/// How long a step may take before a test gives up: miri runs these
/// tests a thousand times slower, on the real clock.
const PATIENCE: Duration = Duration::from_secs(if cfg!(miri) { 120 } else { 10 });

/// A driver on a manual clock with a 1 ms tick, not yet running.
fn manual_driver() -> (Arc<ServiceState>, Driver) {
    let clock = Clock::new(Duration::from_millis(1), true);
    let (state, consumer) = ServiceState::new(clock, usize::MAX, None);
    let driver = Driver::new(Arc::clone(&state), consumer);
    (state, driver)
}

#[test]
fn a_sweep_before_a_long_sleep_that_files_a_due_timer_goes_back_to_a_round() {
    let (state, mut driver) = manual_driver();
    // A sleep's entry, parked and already due: as a parked sleep reset to
    // now leaves it.
    let (entry, message) = EntryRef::new(0, Wake::default());
    state.admit(false).unwrap();
    assert!(state.parked.park(message).is_none());
    let (tx, rx) = mpsc::channel();
    let parker = {
        let state = Arc::clone(&state);
        std::thread::spawn(move || {
            state.set_driver(std::thread::current());
            // With an empty wheel the plan is to sleep for good, so the
            // parked messages are swept first; what that files is due.
            driver.park(false);
            tx.send(()).unwrap();
            driver
        })
    };
    let went_back = rx.recv_timeout(PATIENCE).is_ok();
    if !went_back {
        // Parked for good past a due timer: wake it to end the test.
        state.sleeping_until.store(AWAKE, Ordering::Relaxed);
        state.unpark_driver();
    }
    let mut driver = parker.join().unwrap();
    assert!(went_back, "the driver slept past a due timer");
    assert!(driver.fire_due(state.clock.now()));
    assert_eq!(entry.state(), FIRED);
}

#[test]
fn a_producer_preempted_between_claim_and_write_neither_spins_the_driver_nor_holds_due_timers() {
    use crate::job::Job;
    use crate::queue::stall;
    use std::sync::atomic::AtomicUsize as StdAtomicUsize;

    let clock = Clock::new(Duration::from_millis(1), false);
    let (state, consumer) = ServiceState::new(clock, usize::MAX, None);
    let driver = Driver::new(Arc::clone(&state), consumer);
    let join = std::thread::spawn(move || driver.run());
    state.set_driver(join.thread().clone());
    // A timer in the wheel, due 30 ms from now.
    let due = state.clock.tick_after(Duration::from_millis(30));
    let (entry, message) = EntryRef::new(due, Wake::default());
    state.admit(false).unwrap();
    state.submit(message, due);
    while state.stats().scheduled.load(Ordering::Relaxed) == 0 {
        std::thread::yield_now();
    }
    // A producer claims a place and stops before writing it; a job queued
    // behind it waits on it (the queue is FIFO).
    let ran = Arc::new(StdAtomicUsize::new(0));
    let job = |ran: &Arc<StdAtomicUsize>| {
        let ran = Arc::clone(ran);
        Job::new(move || {
            ran.fetch_add(1, Ordering::Relaxed);
        })
    };
    let (release, held) = mpsc::channel();
    let (claimed, claim) = mpsc::channel();
    let producer = {
        let (state, job) = (Arc::clone(&state), job(&ran));
        std::thread::spawn(move || {
            stall::next_push(claimed, held);
            state.admit(true).unwrap();
            state.submit_job(0, job);
        })
    };
    claim.recv_timeout(PATIENCE).unwrap();
    state.admit(true).unwrap();
    state.submit_job(0, job(&ran));
    let rounds = || state.stats().rounds.load(Ordering::Relaxed);
    let (before, start) = (rounds(), Instant::now());
    // The wheel's timer fires meanwhile, the queue's waits.
    while entry.state() != FIRED {
        assert!(
            start.elapsed() < PATIENCE,
            "a due timer waited on the queue"
        );
        std::thread::yield_now();
    }
    std::thread::sleep(Duration::from_millis(100));
    let (spun, elapsed_ms) = (rounds() - before, start.elapsed().as_millis().max(1));
    assert_eq!(ran.load(Ordering::Relaxed), 0);
    release.send(()).unwrap();
    producer.join().unwrap();
    while ran.load(Ordering::Relaxed) < 2 {
        std::thread::yield_now();
    }
    state.begin_shutdown();
    join.join().unwrap();
    // Yielding alone, a round every few microseconds: hundreds a ms.
    assert!(
        u128::from(spun) < 10 * elapsed_ms,
        "{spun} rounds in {elapsed_ms} ms of a stalled queue"
    );
}

#[test]
fn should_the_driver_die_every_call_reports_it_and_nothing_hangs() {
    use crate::{ScheduleError, TimerService};

    let timers = TimerService::new();
    let hour = Duration::from_secs(3600);
    let handle = timers.schedule(hour, || ()).unwrap();
    let sleep = timers.sleep(hour);
    timers
        .state()
        .fail_next_round
        .store(true, Ordering::Relaxed);
    // Wake the driver into the round that fails.
    let _ = timers.schedule(Duration::ZERO, || ());
    let give_up = Instant::now() + PATIENCE;
    while !timers.state().is_shutdown() {
        assert!(Instant::now() < give_up, "the driver's death went unseen");
        std::thread::yield_now();
    }
    assert_eq!(
        timers.schedule(hour, || ()).unwrap_err(),
        ScheduleError::Shutdown
    );
    assert!(timers.sleep(hour).is_shut_down());
    let report = timers.shutdown().unwrap();
    // What was pending was abandoned as at any shutdown.
    assert!(handle.is_cancelled());
    assert!(sleep.is_shut_down());
    assert_eq!(timers.pending(), 0);
    assert!((2..=3).contains(&report.unfired), "{report:?}");
}

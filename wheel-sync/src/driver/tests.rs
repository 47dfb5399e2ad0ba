//! The driver's own steps, and what its own failure leaves behind.

use std::sync::mpsc;
use std::sync::Mutex as StdMutex;
use std::time::{Duration, Instant};

use core::future::Future;

use super::*;
use crate::action::Wake;
use crate::clock::Clock;
use crate::entry::FIRED;
use crate::shared::Message;
use crate::sync::atomic::Ordering;

/// The name of a driver thread whose next round panics, as a bug would.
static FAIL_NEXT_ROUND: StdMutex<Option<String>> = StdMutex::new(None);

/// Called as each round begins: panics on the thread named to fail.
pub(super) fn maybe_fail() {
    let mut fail = FAIL_NEXT_ROUND.lock().unwrap_or_else(|e| e.into_inner());
    if fail.is_some() && fail.as_deref() == std::thread::current().name() {
        *fail = None;
        drop(fail);
        panic!("the driver's own code panics");
    }
}

/// How long a step may take before a test gives up: miri runs these
/// tests a thousand times slower, on the real clock.
const PATIENCE: Duration = Duration::from_secs(if cfg!(miri) { 120 } else { 10 });

/// A service's state with its driver running on a thread of its own.
fn running(manual_clock: bool) -> Arc<Shared> {
    let clock = Clock::new(Duration::from_millis(1), manual_clock);
    let (state, consumers) = Shared::new(clock, usize::MAX);
    let state = Arc::new(state);
    let driver = Driver::new(
        Arc::clone(&state),
        Inbox::new(consumers),
        None,
        state.clock.now_tick(),
    );
    state.set_driver(std::thread::spawn(move || driver.run()));
    state
}

/// A detached callback that adds `by` to `ran`.
fn adding(ran: &Arc<std::sync::atomic::AtomicUsize>, by: usize) -> crate::job::Job {
    let ran = Arc::clone(ran);
    crate::job::Job::new(move || {
        ran.fetch_add(by, Ordering::Relaxed);
    })
}

/// Submits `job` through spot `spot`'s queue from a producer held between
/// claiming its place and writing it; returns once the place is claimed,
/// with the sender that lets the producer go and its thread.
fn held_push(
    state: &Arc<Shared>,
    spot: usize,
    job: crate::job::Job,
) -> (mpsc::Sender<()>, std::thread::JoinHandle<()>) {
    let (release, held) = mpsc::channel();
    let (claimed, claim) = mpsc::channel();
    let producer = {
        let state = Arc::clone(state);
        std::thread::spawn(move || {
            crate::queue::stall::next_push(claimed, held);
            state.admit(spot, true).unwrap();
            assert!(state.submit(spot, Message::Job(0, job), 0).is_ok());
        })
    };
    claim.recv_timeout(PATIENCE).unwrap();
    (release, producer)
}

#[test]
fn a_producer_preempted_between_claim_and_write_neither_spins_the_driver_nor_holds_due_timers() {
    let state = running(false);
    // A timer in the wheel, due 30 ms from now.
    let due = state.clock.tick_after(Duration::from_millis(30));
    let (entry, message) = EntryRef::new(due, Wake::new(std::task::Waker::noop()));
    state.admit(0, false).unwrap();
    assert!(state.submit(0, Message::Entry(message), due).is_ok());
    while !entry.is_filed() {
        std::thread::yield_now();
    }
    // A producer claims a place and stops before writing it; a job queued
    // behind it waits on it (the queue is FIFO).
    let ran = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let (release, producer) = held_push(&state, 0, adding(&ran, 1));
    state.admit(0, true).unwrap();
    assert!(state.submit(0, Message::Job(0, adding(&ran, 1)), 0).is_ok());
    let rounds = || state.stats.rounds.load(Ordering::Relaxed);
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
    state.shutdown().unwrap();
    // Yielding alone, a round every few microseconds: hundreds a ms.
    assert!(
        u128::from(spun) < 10 * elapsed_ms,
        "{spun} rounds in {elapsed_ms} ms of a stalled queue"
    );
}

/// Each spot has its own queue: a producer preempted between its claim
/// and its write holds up only what is queued behind it on its own spot.
#[test]
fn a_push_held_on_one_spots_queue_holds_up_no_other_spots_messages() {
    let state = running(false);
    let ran = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let (release, producer) = held_push(&state, 0, adding(&ran, 10));
    state.admit(1, true).unwrap();
    assert!(state.submit(1, Message::Job(0, adding(&ran, 1)), 0).is_ok());
    let start = Instant::now();
    while ran.load(Ordering::Relaxed) != 1 {
        assert!(
            start.elapsed() < PATIENCE,
            "another spot's held push held this one up"
        );
        std::thread::yield_now();
    }
    release.send(()).unwrap();
    producer.join().unwrap();
    while ran.load(Ordering::Relaxed) != 11 {
        assert!(start.elapsed() < PATIENCE, "the held push never ran");
        std::thread::yield_now();
    }
    state.shutdown().unwrap();
}

#[test]
fn should_the_driver_die_every_call_reports_it_and_nothing_hangs() {
    use crate::{ScheduleError, TimerService};

    let name = "wheel-sync driver that dies";
    let timers = TimerService::builder().thread_name(name).build().unwrap();
    let hour = Duration::from_secs(3600);
    let handle = timers.schedule(hour, || ()).unwrap();
    let mut sleep = timers.sleep(hour);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    assert!(core::pin::Pin::new(&mut sleep).poll(&mut cx).is_pending());
    *FAIL_NEXT_ROUND.lock().unwrap() = Some(name.into());
    // Wake the driver into the round that fails.
    let _ = timers.schedule(Duration::ZERO, || ());
    let give_up = Instant::now() + PATIENCE;
    while !timers.shared().is_shut_down() {
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
    assert_eq!(
        timers.shutdown().unwrap_err(),
        crate::ShutdownError::AlreadyShutDown
    );
}

/// A sleep moved away from its tick and back, each move filed before its
/// old copy came due, leaves copies at that tick, all pending there: the
/// driver's pass over its dead copies keeps one, so a sleep reset back and
/// forth cannot fill the wheel.
#[test]
fn a_timer_moved_away_and_back_keeps_one_copy_once_the_dead_are_dropped() {
    let clock = Clock::new(Duration::from_millis(1), true);
    let (state, consumers) = Shared::new(clock, usize::MAX);
    let state = Arc::new(state);
    let mut driver = Driver::new(Arc::clone(&state), Inbox::new(consumers), None, 0);
    let (entry, message) = EntryRef::new(100, Wake::new(std::task::Waker::noop()));
    driver.file(message);
    for _ in 0..1_000 {
        for tick in [200, 100] {
            assert_eq!(entry.rearm_from(crate::entry::PENDING, tick), Ok(true));
            driver.file(entry.erased());
        }
    }
    assert_eq!(driver.entries.len(), 2_001);
    driver.keep_live();
    assert_eq!(driver.entries.len(), 1);
    let fired: Vec<u64> = driver.entries.advance(u64::MAX).map(|(t, _)| t).collect();
    assert_eq!(fired, [100]);
}

/// A sleep moved while the driver holds its copy, the move's message not
/// yet sent (its owner is between the move and the push): the driver keeps
/// the old copy through a pass over the dead and past its tick, and a
/// shutdown that then refuses the message still finds, abandons and counts
/// the timer. Dropped as dead, the timer would be left pending, for its
/// owner to abandon after the shutdown's report.
#[test]
fn a_timer_whose_move_is_on_its_way_keeps_a_copy_for_the_shutdown() {
    let clock = Clock::new(Duration::from_millis(1), true);
    let (state, consumers) = Shared::new(clock, usize::MAX);
    let state = Arc::new(state);
    let mut driver = Driver::new(Arc::clone(&state), Inbox::new(consumers), None, 0);
    let (entry, message) = EntryRef::new(100, Wake::new(std::task::Waker::noop()));
    state.admit(0, false).unwrap();
    driver.file(message);
    assert_eq!(entry.rearm_from(crate::entry::PENDING, 200), Ok(true));
    driver.keep_live();
    assert_eq!(driver.entries.len(), 1, "dropped by the pass over the dead");
    assert_eq!(driver.earliest(), Some(200), "kept at its old tick");
    assert!(driver.fire_due(state.clock.deadline_of(150)));
    assert_eq!(driver.entries.len(), 1, "dropped when its old tick came");
    assert_eq!(entry.state(), crate::entry::PENDING);
    state.begin_shutdown();
    assert_eq!(driver.abandon_all(), 1);
    assert_eq!(entry.state(), crate::entry::ABANDONED);
    assert_eq!(state.pending(), 0);
}

/// A sleep moved earlier, its owner stopped before the push: its old copy,
/// filed again at the new tick, fires it there. The shutdown that follows
/// refuses the owner's push, and a re-arm after it must be refused too,
/// not wait for a message that will never come: the refusal cleared
/// `QUEUED`. Left set, the re-arm would find "a message on its way",
/// push nothing, and leave the timer pending after the shutdown.
#[test]
fn a_re_arm_after_a_refused_move_is_refused_in_turn() {
    use crate::entry::{ABANDONED, FIRED, PENDING};
    use crate::sleep::{hand_over, rearm};
    let clock = Clock::new(Duration::from_millis(1), true);
    let (state, consumers) = Shared::new(clock, usize::MAX);
    let state = Arc::new(state);
    let mut driver = Driver::new(Arc::clone(&state), Inbox::new(consumers), None, 0);
    let lane = crate::lane::lane(&state);
    let (entry, message) = EntryRef::new(100, Wake::new(std::task::Waker::noop()));
    state.admit(lane.spot, false).unwrap();
    driver.file(message);
    assert_eq!(entry.rearm_from(PENDING, 50), Ok(true));
    assert!(driver.fire_due(state.clock.deadline_of(100)));
    assert_eq!(entry.state(), FIRED, "fired by its old copy, filed again");
    state.begin_shutdown();
    assert_eq!(driver.abandon_all(), 0);
    hand_over(&lane, &entry, PENDING, true, 50);
    rearm(&lane, &entry, 300);
    assert_eq!(entry.state(), ABANDONED);
    assert_eq!(state.pending(), 0);
}

/// A manual clock's `advance` that waits on a push still being written
/// leaves the driver asleep until the write, not spinning through rounds.
#[test]
fn an_advance_waiting_on_a_stalled_push_does_not_spin_a_manual_clock_driver() {
    let state = running(true);
    let ran = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let (release, producer) = held_push(&state, 0, adding(&ran, 1));
    let rounds = || state.stats.rounds.load(Ordering::Relaxed);
    let (before, start) = (rounds(), Instant::now());
    let advance = {
        let state = Arc::clone(&state);
        std::thread::spawn(move || state.advance(Duration::from_millis(1)))
    };
    std::thread::sleep(Duration::from_millis(100));
    let (spun, elapsed_ms) = (rounds() - before, start.elapsed().as_millis().max(1));
    assert!(
        !advance.is_finished(),
        "advance returned before the held push"
    );
    release.send(()).unwrap();
    producer.join().unwrap();
    advance.join().unwrap().unwrap();
    // The advance waited for the push, and its round ran what it carried.
    assert_eq!(ran.load(Ordering::Relaxed), 1);
    state.shutdown().unwrap();
    assert!(
        u128::from(spun) < 10 * elapsed_ms,
        "{spun} rounds in {elapsed_ms} ms of a stalled queue"
    );
}

/// A producer preempted between claiming its place in the queue and
/// writing it, while a shutdown closes the queue: its schedule was taken
/// (`Ok`), so the shutdown waits for the write, then abandons the callback
/// and counts it, however late the place is written. The producer is held
/// past the 10 s after which the shutdown used to give up and lose the
/// timer (under miri, whose clock is its own, a moment).
#[test]
fn a_push_claimed_before_the_queue_closed_is_taken_however_late_it_lands() {
    use crate::queue::stall;
    use crate::TimerService;
    use std::sync::atomic::AtomicBool as StdAtomicBool;

    let timers = TimerService::new();
    let dropped = Arc::new(StdAtomicBool::new(false));
    let (claimed, claim) = mpsc::channel();
    let (release, held) = mpsc::channel();
    let producer = {
        let (timers, dropped) = (timers.clone(), Arc::clone(&dropped));
        std::thread::spawn(move || {
            stall::next_push(claimed, held);
            let guard = DropFlag(dropped);
            timers.schedule_detached(Duration::from_secs(3600), move || drop(guard))
        })
    };
    claim.recv_timeout(PATIENCE).unwrap();
    let shutdown = {
        let timers = timers.clone();
        std::thread::spawn(move || timers.shutdown())
    };
    let give_up = Instant::now() + PATIENCE;
    while !timers.shared().is_shut_down() {
        assert!(Instant::now() < give_up, "the doors never closed");
        std::thread::yield_now();
    }
    let held = Duration::from_millis(if cfg!(miri) { 50 } else { 10_500 });
    std::thread::sleep(held);
    assert!(
        !shutdown.is_finished(),
        "the shutdown ended before the claimed place was written"
    );
    release.send(()).unwrap();
    assert_eq!(producer.join().unwrap(), Ok(()));
    let report = shutdown.join().unwrap().unwrap();
    assert_eq!(report.unfired, 1);
    assert_eq!(timers.pending(), 0);
    assert!(
        dropped.load(Ordering::SeqCst),
        "the callback was not dropped"
    );
}

/// Sets its flag when dropped.
struct DropFlag(Arc<std::sync::atomic::AtomicBool>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

#[test]
fn a_callback_that_schedules_a_flood_never_waits_for_its_own_driver() {
    use crate::shared::BATCH;
    let state = running(false);
    let ran = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let flood = {
        let (state, ran) = (Arc::clone(&state), Arc::clone(&ran));
        crate::job::Job::new(move || {
            // On the driver's thread, which takes nothing while this runs.
            for _ in 0..2 * BATCH {
                state.admit(0, true).unwrap();
                assert!(state.submit(0, Message::Job(0, adding(&ran, 1)), 0).is_ok());
            }
        })
    };
    state.admit(1, true).unwrap();
    assert!(state.submit(1, Message::Job(0, flood), 0).is_ok());
    let start = Instant::now();
    while ran.load(Ordering::Relaxed) < 2 * BATCH {
        assert!(start.elapsed() < PATIENCE, "the flood never ran");
        std::thread::yield_now();
    }
    assert_eq!(state.spots.total(crate::spot::Count::Waits), 0);
    state.shutdown().unwrap();
}

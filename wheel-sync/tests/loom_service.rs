//! loom models of the service's protocol (the ground rules of
//! `src/shared.rs`), run on the real `TimerService` (its driver is a loom
//! thread): cancel vs fire, cancel while queued, the driver's sleep and a
//! producer's wake-up, the
//! `max_pending` counter, shutdown racing a schedule, parked timers
//! sharing a spot, a spot full and the next timer queued, taken back by a
//! cancel, swept by the driver,
//! abandoned at shutdown, detached callbacks (no entry: queued and filed
//! by value) fired, or dropped unrun by a racing shutdown, a manual clock's `advance`,
//! which returns only once what came due has fired, in deadline order, and its
//! `advance_to_next`, which answers only from a round that saw the call,
//! the exact account of a
//! shutdown racing schedules, cancels and sleeps, and the last clones of a
//! service dropped at once on two threads. The models of a `Sleep` are in
//! `loom_sleep.rs`.
//!
//! Run: `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 cargo test -p wheel-sync --release --test loom_service`
//!
//! Deadlines are either in the past (due whenever the driver looks) or an
//! hour away (never due during a model), so real time cannot make two runs
//! of one interleaving differ.
#![cfg(loom)]

use std::time::Duration;

use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::sync::mpsc::{self, Receiver};
use loom::sync::Arc;
use loom::thread;
use wheel_sync::{ScheduleError, ShutdownReport, TimerService};

mod loom_support;
use loom_support::{counter, model, past, wait_until, HOUR};

/// Counts drops of what a callback captured: proves it was released.
struct DropCount(Arc<AtomicUsize>);

impl Drop for DropCount {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// Shuts `timers` down while another thread schedules, with `schedule`, an
/// hour-long callback that counts its runs in `ran` and the drops of what
/// it captured in `drops`. Returns the report and what `schedule` returned.
fn shutdown_racing<R: Send + 'static>(
    timers: &TimerService,
    drops: &Arc<AtomicUsize>,
    ran: &Arc<AtomicUsize>,
    schedule: fn(&TimerService, Box<dyn FnOnce() + Send>) -> R,
) -> (ShutdownReport, R) {
    let producer = {
        let timers = timers.clone();
        let guard = DropCount(drops.clone());
        let ran = ran.clone();
        thread::spawn(move || {
            schedule(
                &timers,
                Box::new(move || {
                    drop(guard);
                    ran.fetch_add(1, Ordering::SeqCst);
                }),
            )
        })
    };
    let report = timers.shutdown().unwrap();
    (report, producer.join().unwrap())
}

#[test]
fn cancel_races_fire_exactly_one_wins() {
    model(|| {
        let timers = TimerService::new();
        let ran = Arc::new(AtomicUsize::new(0));
        let ran2 = ran.clone();
        let handle = timers
            .schedule_at(past(), move || {
                ran2.fetch_add(1, Ordering::SeqCst);
            })
            .unwrap();
        let canceller = thread::spawn(move || handle.cancel());
        let cancelled = canceller.join().unwrap();
        wait_until(|| timers.pending() == 0);
        timers.shutdown().unwrap();
        let ran = ran.load(Ordering::SeqCst);
        assert_eq!(
            ran + usize::from(cancelled),
            1,
            "ran {ran}, cancelled {cancelled}"
        );
    });
}

#[test]
fn cancel_while_queued_never_fires_and_frees() {
    model(|| {
        let timers = TimerService::new();
        let drops = Arc::new(AtomicUsize::new(0));
        let guard = DropCount(drops.clone());
        let handle = timers
            .schedule(HOUR, move || {
                drop(guard);
                panic!("cancelled timer fired");
            })
            .unwrap();
        assert!(handle.cancel());
        assert_eq!(timers.pending(), 0);
        // The canceller drops the closure at once, whatever the driver does.
        assert_eq!(drops.load(Ordering::SeqCst), 1, "closure kept");
        // The handle (the entry's last reference, once its message is taken
        // back) is kept to the end: freed here, its memory could come back
        // as the next timer's entry, parked in the place the cancel emptied,
        // and whether the driver's exchange on that place then matched
        // would depend on the allocator, which loom cannot replay. (Such a
        // match takes a message early, which is harmless: see `spot`.)
        // A due timer still fires; the cancelled one, parked, queued or
        // filed, never does.
        let fired = Arc::new(AtomicUsize::new(0));
        let fired2 = fired.clone();
        let _due = timers
            .schedule_at(past(), move || {
                fired2.fetch_add(1, Ordering::SeqCst);
            })
            .unwrap();
        wait_until(|| fired.load(Ordering::SeqCst) == 1);
        let report = timers.shutdown().unwrap();
        assert_eq!(report.unfired, 0);
        let stats = timers.stats();
        assert_eq!((stats.fired, stats.cancelled), (1, 1));
        drop(handle);
    });
}

/// Another thread schedules, with `schedule`, a callback already due that
/// counts its runs in `fired`, while the driver may be going to sleep; waits
/// for it to fire (forever, and so failing, if the driver slept through its
/// submission). Returns what `schedule` returned.
fn fires_though_racing_park<R: Send + 'static>(
    timers: &TimerService,
    fired: &Arc<AtomicUsize>,
    schedule: fn(&TimerService, Box<dyn FnOnce() + Send>) -> R,
) -> R {
    let producer = {
        let timers = timers.clone();
        let fired = fired.clone();
        thread::spawn(move || {
            schedule(
                &timers,
                Box::new(move || {
                    fired.fetch_add(1, Ordering::SeqCst);
                }),
            )
        })
    };
    let result = producer.join().unwrap();
    wait_until(|| fired.load(Ordering::SeqCst) == 1);
    result
}

#[test]
fn submission_racing_park_is_never_stranded() {
    model(|| {
        let (timers, fired) = (TimerService::new(), counter());
        let _handle =
            fires_though_racing_park(&timers, &fired, |t, f| t.schedule_at(past(), f).unwrap());
        timers.shutdown().unwrap();
    });
}

/// A message queued behind one whose producer is between claiming its place
/// and writing it: the driver, woken by the second, cannot take it yet and
/// sleeps, asking to be woken by any message; the first producer's write
/// (an hour-long timer, which alone would not wake it) does. Fails (the
/// due timer never fires) without the `ANY` bit.
#[test]
fn a_message_behind_one_still_being_written_is_not_stranded() {
    model(|| {
        let (timers, fired) = (TimerService::new(), counter());
        let far = {
            let timers = timers.clone();
            thread::spawn(move || timers.schedule_detached(HOUR, || ()).unwrap())
        };
        let _ = fires_though_racing_park(&timers, &fired, |t, f| {
            t.schedule_detached_at(past(), f).unwrap()
        });
        far.join().unwrap();
        timers.shutdown().unwrap();
    });
}

#[test]
fn advance_returns_once_what_came_due_has_fired() {
    // However the driver's round interleaves with the advance (asleep,
    // mid-round with the old time, parking), a timer scheduled before it is
    // filed and fired by a round that saw the new time, before it returns.
    model(|| {
        let timers = TimerService::builder().manual_clock().build().unwrap();
        let fired = counter();
        let advancer = {
            let (timers, fired) = (timers.clone(), fired.clone());
            thread::spawn(move || {
                let count = fired.clone();
                timers
                    .schedule_detached(Duration::from_millis(1), move || {
                        count.fetch_add(1, Ordering::SeqCst);
                    })
                    .unwrap();
                timers.advance(Duration::from_millis(1)).unwrap();
                assert_eq!(fired.load(Ordering::SeqCst), 1);
            })
        };
        advancer.join().unwrap();
        timers.shutdown().unwrap();
    });
}

#[test]
fn what_one_advance_makes_due_fires_in_deadline_order() {
    // A round may be under way, having filed the first timer, as the
    // second (earlier) one is scheduled and the clock advanced: that round
    // must not fire the first by the new time before the second is filed.
    model(|| {
        let timers = TimerService::builder().manual_clock().build().unwrap();
        let first_to_fire = counter();
        for ms in [2, 1] {
            let first = first_to_fire.clone();
            timers
                .schedule_detached(Duration::from_millis(ms), move || {
                    let _ =
                        first.compare_exchange(0, ms as usize, Ordering::SeqCst, Ordering::SeqCst);
                })
                .unwrap();
        }
        timers.advance(Duration::from_millis(2)).unwrap();
        assert_eq!(first_to_fire.load(Ordering::SeqCst), 1);
        timers.shutdown().unwrap();
    });
}

#[test]
fn advance_to_next_answers_with_a_round_that_saw_the_call() {
    // The driver's first round may be under way as the call begins: it
    // may take the request and answer from wheels that do not hold the
    // timer submitted just before. That answer must not be taken.
    model(|| {
        let timers = TimerService::builder().manual_clock().build().unwrap();
        let fired = counter();
        let count = fired.clone();
        timers
            .schedule_detached(Duration::from_millis(1), move || {
                count.fetch_add(1, Ordering::SeqCst);
            })
            .unwrap();
        assert_eq!(timers.advance_to_next(), Ok(Some(Duration::from_millis(1))));
        assert_eq!(fired.load(Ordering::SeqCst), 1);
        timers.shutdown().unwrap();
    });
}

#[test]
fn max_pending_is_exact_under_contention() {
    model(|| {
        let timers = TimerService::builder().max_pending(1).build().unwrap();
        let spawn_schedule = |timers: &TimerService| {
            let timers = timers.clone();
            thread::spawn(move || timers.schedule(HOUR, || ()))
        };
        let a = spawn_schedule(&timers);
        let b = spawn_schedule(&timers);
        let results = [a.join().unwrap(), b.join().unwrap()];
        let admitted: Vec<_> = results.iter().filter_map(|r| r.as_ref().ok()).collect();
        assert_eq!(admitted.len(), 1, "limit 1 admits exactly one");
        assert!(results
            .iter()
            .any(|r| matches!(r, Err(ScheduleError::TooManyPending { limit: 1 }))));
        assert_eq!(timers.pending(), 1);
        // Cancelling frees the place at once.
        assert!(admitted[0].cancel());
        assert!(timers.schedule(HOUR, || ()).is_ok());
        timers.shutdown().unwrap();
    });
}

#[test]
fn shutdown_racing_schedule_loses_nothing() {
    model(|| {
        let (timers, drops, ran) = (TimerService::new(), counter(), counter());
        let (report, result) = shutdown_racing(&timers, &drops, &ran, |t, f| t.schedule(HOUR, f));
        let scheduled_ok = usize::from(result.is_ok());
        // Never run early because of shutdown, never left pending, and the
        // closure is released whichever side won.
        assert_eq!(ran.load(Ordering::SeqCst), 0);
        assert_eq!(timers.pending(), 0);
        match result {
            Ok(handle) => {
                assert!(handle.is_cancelled(), "abandoned at shutdown");
                assert!(!handle.cancel());
            }
            Err(e) => assert_eq!(e, ScheduleError::Shutdown),
        }
        // Exact: the timer is counted unfired iff it was scheduled `Ok`.
        assert_eq!(report.unfired, scheduled_ok);
        wait_until(|| drops.load(Ordering::SeqCst) == 1);
    });
}

#[test]
fn timers_sharing_a_spot_are_all_accounted_for() {
    model(|| {
        // New timers park; with two spots under loom, the model's threads
        // may share one, and then race for its places while the driver may
        // be sweeping them (a full spot is `a_full_spot_queues_...`).
        let timers = TimerService::new();
        let drops = Arc::new(AtomicUsize::new(0));
        let spawn_schedule = |timers: &TimerService| {
            let timers = timers.clone();
            let guard = DropCount(drops.clone());
            thread::spawn(move || {
                timers
                    .schedule(HOUR, move || {
                        drop(guard);
                        panic!("an hour has not passed");
                    })
                    .unwrap()
            })
        };
        let a = spawn_schedule(&timers);
        let b = spawn_schedule(&timers);
        let (a, b) = (a.join().unwrap(), b.join().unwrap());
        assert_eq!(timers.pending(), 2);
        assert!(a.cancel());
        assert_eq!(timers.pending(), 1);
        drop(a);
        let report = timers.shutdown().unwrap();
        assert_eq!(report.unfired, 1, "the live one is abandoned, not lost");
        assert!(b.is_cancelled());
        drop(b);
        wait_until(|| drops.load(Ordering::SeqCst) == 2);
        let stats = timers.stats();
        assert_eq!((stats.scheduled, stats.cancelled, stats.fired), (2, 1, 0));
    });
}

/// Two threads park into one spot (as threads do when there are more of
/// them than spots, or when a `Sleep` is first polled off the thread that
/// made it): one an hour-long timer, the other one already due, which is
/// waited for. Whatever the driver sweeps meanwhile, the due one fires: a
/// park reserves its place, writes its tick, and only then shows its
/// message there, so the tick of a message the driver took cannot land on
/// a later message in the same place. Fails (the due timer is left parked
/// behind the hour's tick) with the tick written after the message shows.
#[test]
fn a_due_timer_parked_where_an_hour_long_one_just_was_fires() {
    model(|| {
        let (timers, fired) = (TimerService::new(), counter());
        let far = {
            let timers = timers.clone();
            thread::spawn(move || timers.schedule(HOUR, || ()).unwrap())
        };
        let _due =
            fires_though_racing_park(&timers, &fired, |t, f| t.schedule_at(past(), f).unwrap());
        let far = far.join().unwrap();
        timers.shutdown().unwrap();
        assert!(far.is_cancelled(), "abandoned by the shutdown");
    });
}

/// A thread makes one timer more than its spot has places (two under
/// loom): the last is queued beside the parked ones, unless the driver
/// swept meanwhile. The one due now fires wherever it waited, a cancel
/// takes a parked one back or kills its copy, and the shutdown abandons
/// the rest: each accounted for once.
#[test]
fn a_full_spot_queues_the_next_timer_and_every_one_is_accounted_for() {
    model(|| {
        let timers = TimerService::new();
        let fired = counter();
        let count = || {
            let fired = fired.clone();
            move || {
                fired.fetch_add(1, Ordering::SeqCst);
            }
        };
        let first = timers.schedule(HOUR, count()).unwrap();
        let _second = timers.schedule(HOUR, count()).unwrap();
        let due = timers.schedule_at(past(), count()).unwrap();
        wait_until(|| due.is_fired());
        assert!(first.cancel());
        let report = timers.shutdown().unwrap();
        assert_eq!(report.unfired, 1, "the second is abandoned, not lost");
        assert_eq!(fired.load(Ordering::SeqCst), 1);
        let stats = timers.stats();
        assert_eq!((stats.scheduled, stats.cancelled, stats.fired), (3, 1, 1));
        assert_eq!(timers.pending(), 0);
    });
}

#[test]
fn detached_submission_racing_park_fires() {
    model(|| {
        let (timers, fired) = (TimerService::new(), counter());
        fires_though_racing_park(&timers, &fired, |t, f| t.schedule_detached_at(past(), f))
            .unwrap();
        wait_until(|| timers.pending() == 0);
        timers.shutdown().unwrap();
        assert_eq!(timers.stats().fired, 1);
    });
}

#[test]
fn shutdown_racing_detached_schedule_drops_it_unrun() {
    model(|| {
        let (timers, drops, ran) = (TimerService::new(), counter(), counter());
        let (report, result) =
            shutdown_racing(&timers, &drops, &ran, |t, f| t.schedule_detached(HOUR, f));
        assert!(result.is_ok() || result == Err(ScheduleError::Shutdown));
        // Exact: a job whose push the queue took is the driver's to drop and
        // count, however late the push lands; a refused one was dropped by
        // `schedule`.
        assert_eq!(report.unfired, usize::from(result.is_ok()));
        assert_eq!(timers.pending(), 0);
        assert_eq!(drops.load(Ordering::SeqCst), 1);
        assert_eq!(ran.load(Ordering::SeqCst), 0, "ran at shutdown");
    });
}

#[test]
fn the_accounting_adds_up_whatever_the_shutdown_races() {
    // The stress test's account at a model's size: a callback scheduled and
    // cancelled, a detached one due at once, and a shutdown racing both.
    model(|| {
        let timers = TimerService::new();
        let ran = counter();
        let producer = {
            let (timers, ran) = (timers.clone(), ran.clone());
            thread::spawn(move || {
                let mut scheduled = 0;
                let mut cancelled = 0;
                if let Ok(handle) = timers.schedule(HOUR, || ()) {
                    scheduled += 1;
                    cancelled += usize::from(handle.cancel());
                }
                let ran = ran.clone();
                let detached = timers.schedule_detached_at(past(), move || {
                    ran.fetch_add(1, Ordering::SeqCst);
                });
                scheduled += usize::from(detached.is_ok());
                (scheduled, cancelled)
            })
        };
        let report = timers.shutdown().unwrap();
        let (scheduled, cancelled) = producer.join().unwrap();
        let fired = ran.load(Ordering::SeqCst);
        assert_eq!(fired + cancelled + report.unfired, scheduled);
        assert_eq!(timers.pending(), 0);
    });
}

/// A service whose detached callback, an hour away, sends on `ended` when
/// the service ends and drops it (a wait that blocks rather than spins:
/// the driver has a long way to go in these models), and a second clone
/// of it made on another thread (so counted on that thread's spot).
fn service_and_a_clone_from_another_thread() -> (TimerService, TimerService, Receiver<()>) {
    let timers = TimerService::new();
    let (tx, ended) = mpsc::channel();
    let signal = SendOnDrop(tx);
    timers
        .schedule_detached(HOUR, move || drop(signal))
        .unwrap();
    let source = timers.clone();
    let theirs = thread::spawn(move || source.clone()).join().unwrap();
    (timers, theirs, ended)
}

struct SendOnDrop(mpsc::Sender<()>);

impl Drop for SendOnDrop {
    fn drop(&mut self) {
        let _ = self.0.send(());
    }
}

/// The last two clones, counted on two spots, dropped at once on two
/// threads: whichever counts out last reads the other's count as zero, and
/// ends the service. Fails (neither does: a deadlock on `ended`) with the
/// owner counts' accesses `AcqRel`/`Acquire` instead of `SeqCst`.
#[test]
fn the_last_clones_dropped_at_once_on_two_threads_end_the_service() {
    model(|| {
        let (mine, theirs, ended) = service_and_a_clone_from_another_thread();
        let dropper = thread::spawn(move || drop(theirs));
        drop(mine);
        dropper.join().unwrap();
        ended.recv().unwrap();
    });
}

/// A clone made from the last other clone as that one goes: the service
/// keeps running for the new one, and ends when it goes.
#[test]
fn a_clone_made_as_the_last_other_goes_keeps_the_service_running() {
    model(|| {
        let (mine, theirs, ended) = service_and_a_clone_from_another_thread();
        let holder = thread::spawn(move || {
            let again = theirs.clone();
            drop(theirs);
            let ran = again.schedule_detached(HOUR, || ());
            assert_eq!(ran, Ok(()), "the service ended under a clone");
        });
        drop(mine);
        holder.join().unwrap();
        ended.recv().unwrap();
    });
}

//! Nothing is lost: threads doing random schedules, cancels, resets,
//! sleeps, detached callbacks and drops against one service, shut down at a
//! random moment. Afterwards every timer scheduled `Ok` fired, was
//! cancelled, or is counted in `ShutdownReport::unfired` — exactly, the
//! three adding up to what was scheduled — `pending()` is 0, and no sleep
//! is left pending. (A sleep last reset to a deadline already passed is
//! elapsed for its poll whichever came first, the fire that wakes its
//! waiter or the shutdown's abandonment: the report says which, and the
//! count allows either.)
//!
//! Sleeps are futures with no `Ok`, whose timer is made by their first
//! poll: one polled once shutdown has begun is shut down and never counted. So that each sleep's fate is known,
//! a sleep is made, reset and dropped (its cancel) only while no shutdown
//! is under way, or after it; callbacks, with handles and detached, race
//! the shutdown freely.
#![cfg(not(loom))]

use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering::SeqCst};
use std::sync::{Arc, RwLock};
use std::task::{Context, Waker};
use std::thread;
use std::time::{Duration, Instant};

use wheel_sync::{Sleep, TimerHandle, TimerService};

mod common;
use common::XorShift;

/// What one producer saw.
#[derive(Default)]
struct Tally {
    /// Timers scheduled `Ok`: handles, detached, sleeps.
    scheduled: u64,
    /// Fired: handles that fired, sleeps elapsed (detached runs are
    /// counted by the callbacks themselves, in `Round::detached_ran`).
    fired: u64,
    /// Cancelled by this thread: `cancel() == true`, sleeps dropped live.
    cancelled: u64,
    /// Abandoned at shutdown, as the handles and sleeps say.
    abandoned: u64,
    /// Sleeps whose last reset, while the service ran, was to a deadline
    /// already passed: elapsed at once for their poll, their timer fired
    /// at once or, if the shutdown came first, abandoned.
    fired_or_abandoned: u64,
    /// Schedules refused: the shutdown had begun.
    refused: u64,
}

/// One service's life: producers, a shutdown at a random moment, a check.
struct Round {
    timers: TimerService,
    /// Held (read) while a sleep is dropped, taken (write) around shutdown.
    quiet: RwLock<bool>,
    detached_ok: AtomicU64,
    detached_ran: Arc<AtomicU64>,
}

/// A callback with a handle, as its producer remembers it: how often its
/// closure ran, and whether this thread's `cancel` won.
struct Scheduled {
    runs: Arc<AtomicU8>,
    cancelled_here: bool,
}

impl Scheduled {
    /// Its fate, once the round is over; `handle` if it was kept.
    fn settle(&self, handle: Option<&TimerHandle>, tally: &mut Tally) {
        let runs = self.runs.load(SeqCst);
        assert!(runs <= 1, "a callback ran {runs} times");
        if let Some(handle) = handle {
            assert!(handle.is_fired() ^ handle.is_cancelled(), "{handle:?}");
            assert_eq!(handle.is_fired(), runs == 1, "{handle:?}");
        }
        if self.cancelled_here {
            assert_eq!(runs, 0, "ran though cancelled");
        } else if runs == 1 {
            tally.fired += 1;
        } else {
            tally.abandoned += 1;
        }
    }
}

fn delay(rng: &mut XorShift) -> Duration {
    match rng.below(4) {
        0 => Duration::ZERO,
        1 => Duration::from_micros(rng.below(3000)),
        // Parked (at least 50 ms) and never due within a round.
        2 => Duration::from_secs(3600),
        _ => Duration::from_millis(60 + rng.below(40)),
    }
}

/// The fate of a sleep kept to the end of the round.
fn settle_sleep(sleep: &Sleep, passed: bool, tally: &mut Tally) {
    if passed {
        assert!(sleep.is_elapsed(), "{sleep:?}");
        tally.fired_or_abandoned += 1;
        return;
    }
    assert!(
        sleep.is_elapsed() ^ sleep.is_shut_down(),
        "left pending: {sleep:?}"
    );
    if sleep.is_elapsed() {
        tally.fired += 1;
    } else {
        tally.abandoned += 1;
    }
}

fn produce(round: &Round, seed: u64, ops: usize, shut: &AtomicBool) -> Tally {
    let mut rng = XorShift::new(seed);
    let mut tally = Tally::default();
    let mut handles: Vec<(TimerHandle, Scheduled)> = Vec::new();
    let mut dropped: Vec<Scheduled> = Vec::new();
    // With whether it was settled before a reset after the shutdown (see
    // `5`), and whether its last reset before was to a passed deadline.
    let mut sleeps: Vec<(Sleep, bool, bool)> = Vec::new();
    let mut cx = Context::from_waker(Waker::noop());
    // At least `ops` operations, and on until the shutdown: every round
    // races it, however fast the machine.
    let mut done = 0;
    while done < ops || !shut.load(SeqCst) {
        done += 1;
        let timers = &round.timers;
        match rng.below(8) {
            0 | 1 => {
                let runs = Arc::new(AtomicU8::new(0));
                let counter = runs.clone();
                let scheduled = timers.schedule(delay(&mut rng), move || {
                    counter.fetch_add(1, SeqCst);
                });
                tally.refused += u64::from(scheduled.is_err());
                if let Ok(handle) = scheduled {
                    tally.scheduled += 1;
                    let cancelled_here = false;
                    handles.push((
                        handle,
                        Scheduled {
                            runs,
                            cancelled_here,
                        },
                    ));
                }
            }
            2 => {
                if let Some((handle, scheduled)) = handles.last_mut() {
                    if !scheduled.cancelled_here && handle.cancel() {
                        scheduled.cancelled_here = true;
                        tally.cancelled += 1;
                    }
                }
            }
            3 => {
                let ran = round.detached_ran.clone();
                if timers
                    .schedule_detached(delay(&mut rng), move || {
                        ran.fetch_add(1, SeqCst);
                    })
                    .is_ok()
                {
                    round.detached_ok.fetch_add(1, SeqCst);
                }
            }
            4 => {
                // Made while no shutdown is under way, or after it: a sleep
                // made during one may be abandoned before it can be seen
                // to have been scheduled, since it has no `Ok` to say so.
                let _quiet = round.quiet.read().unwrap();
                let mut sleep = timers.sleep(delay(&mut rng));
                if !sleep.is_shut_down() {
                    tally.scheduled += 1;
                    // Abandoned meanwhile, by a shutdown that has begun,
                    // polling it panics: as documented, and no loss.
                    let poll = AssertUnwindSafe(|| std::pin::Pin::new(&mut sleep).poll(&mut cx));
                    let _ = catch_unwind(poll);
                    sleeps.push((sleep, false, false));
                }
            }
            5 => {
                // A reset re-arms a fired sleep: a new timer, made by the
                // poll that follows (the task awaits it again). While no
                // shutdown is under way (the lock) it is always admitted,
                // and whether it had fired adds one to both sides of the
                // count. After the shutdown it is refused, and the sleep,
                // which did fire, is shut down from then on. One the
                // shutdown abandoned is settled before its reset too: reset
                // to a deadline already passed, it completes, with no timer.
                let quiet = round.quiet.read().unwrap();
                if let Some((sleep, refused, passed)) = sleeps.last_mut() {
                    if *quiet && !*refused {
                        settle_sleep(sleep, *passed, &mut tally);
                        *refused = true;
                    }
                    sleep.reset(Instant::now() + delay(&mut rng));
                    if !*quiet {
                        // Passed as the sleep judged it, by its clock's
                        // reading inside `reset`: a thread preempted after
                        // its own `Instant::now()` finds a deadline of a
                        // few microseconds passed too. (A timer fired since
                        // reads as elapsed as well: `either` holds it.)
                        *passed = sleep.is_elapsed();
                    }
                    let poll = AssertUnwindSafe(|| std::pin::Pin::new(&mut *sleep).poll(&mut cx));
                    let _ = catch_unwind(poll);
                }
            }
            6 => {
                let quiet = round.quiet.read().unwrap();
                if !*quiet {
                    if let Some((sleep, _, _)) = sleeps.pop() {
                        // No shutdown under way: it fired, or this drop
                        // cancels it; either way it is not unfired.
                        if sleep.is_elapsed() {
                            tally.fired += 1;
                        } else {
                            tally.cancelled += 1;
                        }
                        drop(sleep);
                    }
                }
            }
            _ => {
                // Dropping a handle does not cancel: its fate is settled
                // at the end, by whether its closure ran.
                if let Some((handle, scheduled)) = handles.pop() {
                    drop(handle);
                    dropped.push(scheduled);
                }
            }
        }
        if shut.load(SeqCst) && rng.below(64) == 0 {
            break; // some producers go on past the shutdown, some stop
        }
    }
    // The fates of the rest are known once the shutdown is over.
    while !shut.load(SeqCst) {
        thread::yield_now();
    }
    let _done = round.quiet.read().unwrap();
    for (handle, scheduled) in &handles {
        scheduled.settle(Some(handle), &mut tally);
    }
    for scheduled in &dropped {
        scheduled.settle(None, &mut tally);
    }
    for (sleep, refused, passed) in &sleeps {
        if !refused {
            settle_sleep(sleep, *passed, &mut tally);
        }
    }
    tally
}

/// One round; returns whether its shutdown abandoned timers and whether it
/// refused schedules (so that it raced the producers).
fn run_round(seed: u64, producers: usize, ops: usize) -> (bool, bool) {
    let round = Arc::new(Round {
        timers: TimerService::new(),
        quiet: RwLock::new(false),
        detached_ok: AtomicU64::new(0),
        detached_ran: Arc::new(AtomicU64::new(0)),
    });
    let shut = Arc::new(AtomicBool::new(false));
    let threads: Vec<_> = (0..producers as u64)
        .map(|p| {
            let (round, shut) = (round.clone(), shut.clone());
            thread::spawn(move || produce(&round, seed * 31 + p, ops, &shut))
        })
        .collect();
    let mut rng = XorShift::new(seed);
    thread::sleep(Duration::from_micros(rng.below(4000)));
    let report = {
        let mut quiet = round.quiet.write().unwrap();
        *quiet = true;
        let report = round.timers.shutdown().unwrap();
        shut.store(true, SeqCst);
        report
    };
    let tallies: Vec<Tally> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    let sum = |f: fn(&Tally) -> u64| tallies.iter().map(f).sum::<u64>();
    let detached_ok = round.detached_ok.load(SeqCst);
    let detached_ran = round.detached_ran.load(SeqCst);
    let scheduled = sum(|t| t.scheduled) + detached_ok;
    let fired = sum(|t| t.fired) + detached_ran;
    let cancelled = sum(|t| t.cancelled);
    let unfired = report.unfired as u64;
    let known_unfired = sum(|t| t.abandoned) + (detached_ok - detached_ran);
    let either = sum(|t| t.fired_or_abandoned);
    assert_eq!(round.timers.pending(), 0, "seed {seed}");
    assert!(
        (known_unfired..=known_unfired + either).contains(&unfired),
        "seed {seed}: the report's unfired {unfired} against what the handles say, \
         {known_unfired} and up to {either} more; the handles' scheduled {scheduled}, \
         fired {fired}, cancelled {cancelled}; {:?}",
        round.timers.stats()
    );
    assert_eq!(
        fired + cancelled + either + known_unfired,
        scheduled,
        "seed {seed}: fired {fired} + cancelled {cancelled} + either {either} \
         + unfired {known_unfired}"
    );
    (unfired > 0, sum(|t| t.refused) > 0)
}

#[test]
fn shutdown_at_a_random_moment_loses_nothing() {
    // A million operations in all, in rounds of 4 producers.
    let (rounds, ops) = if cfg!(miri) { (2, 50) } else { (250, 1000) };
    let (mut abandoning, mut refusing) = (0, 0);
    for seed in 1..=rounds {
        let (abandoned, refused) = run_round(seed, 4, ops);
        abandoning += u32::from(abandoned);
        refusing += u32::from(refused);
    }
    // The shutdowns raced the producers: some found timers to abandon,
    // some came while producers were still scheduling.
    assert!(abandoning > 0 && refusing > 0, "{abandoning} {refusing}");
}

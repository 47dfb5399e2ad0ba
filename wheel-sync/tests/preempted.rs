//! Threads stopped at arbitrary instructions, as the OS preempts them: a
//! signal whose handler sleeps lands on a producer wherever it is (between
//! claiming a place in its queue and writing it, between reserving a spot's
//! place and showing its message there, inside `malloc`), or on the driver
//! wherever it is in a round, while the other threads and a shutdown go
//! on. Nothing is lost, nothing runs twice or early, and a shutdown that
//! races them accounts for every timer. (loom explores such stops within
//! its models; these run the whole service, on real threads.)
#![cfg(all(target_os = "linux", not(loom)))]

use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex, Once};
use std::thread;
use std::time::{Duration, Instant};

use wheel_sync::{ScheduleError, TimerHandle};

mod common;
use common::patiently::wait_until;
use common::{block_on, named_service, Counted, XorShift, HOUR};

/// How long a signalled thread stays stopped.
const STOP_NS: libc::c_long = 3_000_000;

/// The handler: the thread sleeps where the signal found it.
extern "C" fn stop_here(_: libc::c_int) {
    let pause = libc::timespec {
        tv_sec: 0,
        tv_nsec: STOP_NS,
    };
    // SAFETY: `nanosleep` is async-signal-safe; no remainder is asked for.
    unsafe { libc::nanosleep(&pause, std::ptr::null_mut()) };
}

/// Installs [`stop_here`] for `SIGUSR1`, once for the process.
fn install() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        // SAFETY: a zeroed `sigaction` is a valid one to fill in; the
        // handler calls only an async-signal-safe function, and
        // `SA_RESTART` resumes the system calls it interrupts.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = stop_here as extern "C" fn(libc::c_int) as usize;
            action.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut action.sa_mask);
            assert_eq!(
                libc::sigaction(libc::SIGUSR1, &action, std::ptr::null_mut()),
                0
            );
        }
    });
}

/// This thread's id, for [`stop`].
fn tid() -> i32 {
    // SAFETY: `gettid` has no preconditions.
    unsafe { libc::gettid() }
}

/// Stops thread `tid` of this process for [`STOP_NS`], wherever it is. A
/// thread that has ended is no longer there to stop (`ESRCH`).
fn stop(tid: i32) {
    // SAFETY: `tgkill` to this process only; the signal's handler is set.
    unsafe {
        libc::syscall(
            libc::SYS_tgkill,
            libc::getpid(),
            libc::c_long::from(tid),
            libc::SIGUSR1,
        );
    }
}

/// The id of this process's thread named `name` (a new thread names
/// itself once it runs, so this waits for the name).
fn tid_named(name: &str) -> i32 {
    let find = || {
        std::fs::read_dir("/proc/self/task")
            .expect("/proc/self/task")
            .filter_map(|task| {
                let path = task.ok()?.path();
                let comm = std::fs::read_to_string(path.join("comm")).ok()?;
                (comm.trim_end() == name).then(|| path.file_name()?.to_str()?.parse().ok())?
            })
            .next()
    };
    let mut found = None;
    assert!(wait_until(|| {
        found = find();
        found.is_some()
    }));
    found.expect("the driver thread")
}

/// Stops one of `tids` (chosen at random, 0 standing for none yet) every
/// 0–2 ms until `done`.
fn stopper(tids: Arc<Vec<AtomicI32>>, done: Arc<AtomicBool>) -> thread::JoinHandle<u64> {
    thread::spawn(move || {
        let mut rng = XorShift::new(7);
        let mut stops = 0;
        while !done.load(SeqCst) {
            let tid = tids[rng.below(tids.len() as u64) as usize].load(SeqCst);
            if tid != 0 {
                stop(tid);
                stops += 1;
            }
            thread::sleep(Duration::from_micros(rng.below(2_000)));
        }
        stops
    })
}

/// Producers schedule callbacks (handles kept, cancelled at once, dropped,
/// or detached) and sleep briefly, due 0–20 ms out, while they and the
/// driver are stopped at random. Every callback not cancelled runs once,
/// none before its deadline, and none cancelled runs.
#[test]
fn producers_and_driver_stopped_anywhere_lose_nothing_and_fire_nothing_early() {
    const PRODUCERS: usize = 4;
    install();
    let (name, timers) = named_service();
    // Slots: the producers, then the driver.
    let tids: Arc<Vec<AtomicI32>> = Arc::new((0..=PRODUCERS).map(|_| AtomicI32::new(0)).collect());
    tids[PRODUCERS].store(tid_named(&name), SeqCst);
    let done = Arc::new(AtomicBool::new(false));
    let stopper = stopper(tids.clone(), done.clone());
    let ran = Arc::new(AtomicU64::new(0));
    let early = Arc::new(Mutex::new(Vec::new()));
    let producers: Vec<_> = (0..PRODUCERS)
        .map(|p| {
            let (timers, tids) = (timers.clone(), tids.clone());
            let (ran, early) = (ran.clone(), early.clone());
            thread::spawn(move || {
                tids[p].store(tid(), SeqCst);
                let mut rng = XorShift::new(p as u64 + 1);
                let (mut to_run, mut kept) = (0_u64, Vec::new());
                let start = Instant::now();
                let mut i = 0_u64;
                while start.elapsed() < Duration::from_millis(1_500) {
                    i += 1;
                    let deadline = Instant::now() + Duration::from_micros(rng.below(20_000));
                    let (ran, early) = (ran.clone(), early.clone());
                    let callback = move || {
                        let now = Instant::now();
                        if now < deadline {
                            early.lock().unwrap().push(deadline - now);
                        }
                        ran.fetch_add(1, SeqCst);
                    };
                    match i % 5 {
                        0 => {
                            let handle = timers.schedule_at(deadline, callback).unwrap();
                            to_run += u64::from(!handle.cancel());
                        }
                        1 => {
                            timers.schedule_detached_at(deadline, callback).unwrap();
                            to_run += 1;
                        }
                        2 => {
                            drop(timers.schedule_at(deadline, callback).unwrap());
                            to_run += 1;
                        }
                        3 => {
                            kept.push(timers.schedule_at(deadline, callback).unwrap());
                            to_run += 1;
                        }
                        _ => {
                            let short = Instant::now() + Duration::from_micros(rng.below(3_000));
                            block_on(timers.sleep_until(short));
                            assert!(Instant::now() >= short, "a sleep ended early");
                        }
                    }
                    if kept.len() > 64 {
                        kept.clear();
                    }
                }
                tids[p].store(0, SeqCst);
                to_run
            })
        })
        .collect();
    let to_run: u64 = producers.into_iter().map(|p| p.join().unwrap()).sum();
    assert!(
        wait_until(|| ran.load(SeqCst) >= to_run && timers.pending() == 0),
        "ran {} of {to_run}, {} pending",
        ran.load(SeqCst),
        timers.pending()
    );
    done.store(true, SeqCst);
    let stops = stopper.join().unwrap();
    assert_eq!(ran.load(SeqCst), to_run, "a callback ran twice");
    assert!(
        early.lock().unwrap().is_empty(),
        "early by {:?}",
        early.lock().unwrap()
    );
    let stats = timers.stats();
    assert_eq!(stats.panicked, 0);
    assert_eq!(stats.scheduled, stats.fired + stats.cancelled, "{stats:?}");
    assert!(stops > 100, "only {stops} threads stopped");
}

/// Shutdowns made while producers are stopped wherever a signal found
/// them mid-schedule (parking in their spots, or pushing to their queues),
/// round after round: every callback
/// accepted and not cancelled is counted unfired, every closure is dropped
/// unrun (the refused ones with their error), and nothing stays pending.
#[test]
fn shutdowns_racing_stopped_producers_account_for_every_timer() {
    const PRODUCERS: usize = 2;
    const ROUNDS: usize = 150;
    install();
    for round in 0..ROUNDS {
        let timers = wheel_sync::TimerService::new();
        let (ran, dropped) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let tids: Arc<Vec<AtomicI32>> =
            Arc::new((0..PRODUCERS).map(|_| AtomicI32::new(0)).collect());
        let producers: Vec<_> = (0..PRODUCERS)
            .map(|p| {
                let (timers, tids) = (timers.clone(), tids.clone());
                let (ran, dropped) = (ran.clone(), dropped.clone());
                thread::spawn(move || {
                    tids[p].store(tid(), SeqCst);
                    let (mut accepted, mut cancelled, mut kept) = (0, 0, Vec::new());
                    for i in 0_u64.. {
                        let counted = Counted(dropped.clone());
                        let ran = ran.clone();
                        let callback = move || {
                            let _counted = counted;
                            ran.fetch_add(1, SeqCst);
                        };
                        let result = if i % 3 == 0 {
                            timers.schedule_detached(HOUR, callback)
                        } else {
                            timers.schedule(HOUR, callback).map(|handle| {
                                if i % 3 == 1 {
                                    cancelled += usize::from(handle.cancel());
                                } else {
                                    kept.push(handle);
                                }
                            })
                        };
                        match result {
                            Ok(()) => accepted += 1,
                            Err(ScheduleError::Shutdown) => break,
                            Err(other) => panic!("{other:?}"),
                        }
                        // Room left in the spot: schedules keep parking.
                        if kept.len() == 32 {
                            let taken = kept.drain(..).filter(|h: &TimerHandle| h.cancel());
                            cancelled += taken.count();
                        }
                    }
                    (accepted, cancelled, kept)
                })
            })
            .collect();
        assert!(wait_until(|| tids.iter().all(|t| t.load(SeqCst) != 0)));
        thread::sleep(Duration::from_micros(500 + 10 * round as u64));
        for t in tids.iter() {
            stop(t.load(SeqCst));
        }
        let report = timers.shutdown().unwrap();
        let (mut accepted, mut cancelled) = (0, 0);
        for producer in producers {
            let (a, c, kept) = producer.join().unwrap();
            (accepted, cancelled) = (accepted + a, cancelled + c);
            // Refused, a producer may have seen its handles still pending;
            // now that `shutdown` has returned, each was abandoned.
            for handle in &kept {
                assert!(handle.is_cancelled() && !handle.is_fired(), "{handle:?}");
            }
        }
        assert_eq!(
            report.unfired,
            accepted - cancelled,
            "round {round}: {report:?}"
        );
        assert_eq!(timers.pending(), 0, "round {round}");
        assert_eq!(
            ran.load(SeqCst),
            0,
            "round {round}: a callback an hour out ran"
        );
        // Each producer's last closure was refused, and dropped with the error.
        assert_eq!(
            dropped.load(SeqCst),
            accepted + PRODUCERS,
            "round {round}: a closure was not dropped"
        );
    }
}

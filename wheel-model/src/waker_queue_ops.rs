//! Random calls on a [`WakerQueue`], checked one by one against a map of
//! task to deadline, with every wake counted.
//!
//! There are more tasks than entries, so the queue fills and must wake a
//! task early to take a new one; the capacities straddle the queue's 16 near
//! cells, so entries live in the cells, in the wheel, and move between them.
//! With `panics` on, [`Call::Panics`] makes some tasks' wakers panic: a call
//! that unwinds must have taken out only the entries it woke, leave the rest
//! pending and the queue consistent. The fuzz target runs without, as
//! libFuzzer aborts on any panic, caught or not; the quickcheck property
//! runs with.

mod wakers;

use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::task::Waker;

use arbitrary::{Arbitrary, Unstructured};
use wheel_core::WakerQueue;

use crate::wheel_ops::Start;
use wakers::Task;
pub use wakers::WakerKind;

/// The queue sizes the `waker_queue_ops` target picks from: one entry, a
/// few, the near cells' count and one past it, and well past it.
pub const CAPACITIES: [usize; 7] = [1, 3, 8, 16, 17, 24, 64];

/// Tasks beyond the queue's capacity, so that it fills.
const EXTRA_TASKS: usize = 8;

/// Calls a case holds at most.
const MAX_CALLS: usize = 400;

/// One call on the queue, or a change to a task.
///
/// # Examples
/// ```
/// use wheel_model::waker_queue_ops::{At, Call, Ticks};
///
/// let call = Call::Schedule { task: 3, at: At::Ahead(Ticks { bits: 8, value: 300 }) };
/// assert_ne!(call, Call::Expire { by: Ticks { bits: 0, value: 0 } });
/// ```
#[derive(Arbitrary, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Call {
    /// `schedule_wake` for task `task` (modulo the tasks).
    Schedule {
        /// The task.
        task: u8,
        /// Its deadline, from the clock.
        at: At,
    },
    /// `schedule_wake` for `count % 80` tasks in turn from task `task`, at
    /// `first` and then `spread` ticks apart: fills a queue at once.
    Burst {
        /// The first task.
        task: u8,
        /// How many tasks (modulo 80).
        count: u8,
        /// The first deadline, from the clock.
        first: At,
        /// Ticks between deadlines.
        spread: u16,
    },
    /// `next_expiration`, the clock moved on `by` ticks first.
    Expire {
        /// How far the clock moves.
        by: Ticks,
    },
    /// From now on, task `task`'s wakes panic (`on`) or do not; a no-op
    /// unless the run allows panics.
    Panics {
        /// The task.
        task: u8,
        /// Whether its wakes panic.
        on: bool,
    },
}

/// A deadline relative to the clock.
///
/// # Examples
/// ```
/// use wheel_model::waker_queue_ops::{At, Ticks};
///
/// assert_eq!(At::Behind(Ticks { bits: 4, value: 3 }).resolve(10), 7);
/// assert_eq!(At::Never.resolve(10), u64::MAX);
/// ```
#[derive(Arbitrary, Clone, Copy, Debug, PartialEq, Eq)]
pub enum At {
    /// Ticks after the clock (saturating).
    Ahead(Ticks),
    /// Ticks before it (saturating): already due.
    Behind(Ticks),
    /// `u64::MAX`.
    Never,
}

impl At {
    /// The tick this names when the clock reads `now`.
    pub fn resolve(self, now: u64) -> u64 {
        match self {
            At::Ahead(by) => now.saturating_add(by.get()),
            At::Behind(by) => now.saturating_sub(by.get()),
            At::Never => u64::MAX,
        }
    }
}

/// A tick count at every scale, from within a level-0 slot to the far
/// levels: the low `bits % 45` bits of `value`.
///
/// # Examples
/// ```
/// let ticks = wheel_model::waker_queue_ops::Ticks { bits: 3, value: 0xff };
/// assert_eq!(ticks.get(), 7);
/// ```
#[derive(Arbitrary, Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ticks {
    /// How many low bits of `value` count (modulo 45).
    pub bits: u8,
    /// The bits.
    pub value: u64,
}

impl Ticks {
    /// The count.
    pub fn get(self) -> u64 {
        self.value & ((1 << (self.bits % 45)) - 1)
    }
}

/// A whole case: where the clock starts, the tasks' kind of waker, and the
/// calls.
///
/// # Examples
/// ```
/// use arbitrary::Unstructured;
/// use wheel_model::waker_queue_ops::Case;
///
/// let case = Case::decode(&mut Unstructured::new(&[]));
/// assert!(case.calls.is_empty());
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Case {
    /// The clock's first reading, passed to a first `next_expiration`.
    pub start: Start,
    /// How the tasks make their wakers.
    pub wakers: WakerKind,
    /// What to do.
    pub calls: Vec<Call>,
}

impl Case {
    /// Decodes a case from fuzz bytes; any bytes are valid.
    pub fn decode(u: &mut Unstructured<'_>) -> Self {
        Case {
            start: u.arbitrary().unwrap_or(Start::Zero),
            wakers: u.arbitrary().unwrap_or(WakerKind::Std),
            calls: crate::decode_up_to(u, MAX_CALLS),
        }
    }
}

/// What a run reached, for a caller that checks its cases explore.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Reached {
    /// Tasks a full queue woke early.
    pub woken_early: usize,
    /// `schedule_wake` calls that unwound from the early wake's panic.
    pub unwound_scheduling: usize,
    /// `next_expiration` calls that unwound from a waker's panic.
    pub unwound_expiring: usize,
}

/// Runs `case` on a `WakerQueue` of `capacity` entries (one of
/// [`CAPACITIES`]) with `capacity + 8` tasks, checking every answer and
/// every wake against the model, the queue's invariants after each call,
/// and at the end that one last call wakes every task still pending.
/// Returns what the run reached.
///
/// # Panics
/// On a disagreement, naming it; or a capacity not in [`CAPACITIES`]; or,
/// with [`WakerKind::Std`], if std's `Arc` wakers' clones do not
/// `will_wake` the waker they were cloned from, which that kind takes for
/// granted (miri breaks it).
///
/// # Examples
/// ```
/// use wheel_model::waker_queue_ops::{run, At, Call, Case, Ticks, WakerKind};
/// use wheel_model::wheel_ops::Start;
///
/// let soon = At::Ahead(Ticks { bits: 10, value: 500 });
/// let calls = (0..4).map(|task| Call::Schedule { task, at: soon }).collect();
/// let case = Case { start: Start::Zero, wakers: WakerKind::AnotherData, calls };
/// let reached = run(3, &case, false);
/// assert_eq!(reached.woken_early, 1); // the fourth task's call
/// ```
pub fn run(capacity: usize, case: &Case, panics: bool) -> Reached {
    match capacity {
        1 => Runner::<1>::run(case, panics),
        3 => Runner::<3>::run(case, panics),
        8 => Runner::<8>::run(case, panics),
        16 => Runner::<16>::run(case, panics),
        17 => Runner::<17>::run(case, panics),
        24 => Runner::<24>::run(case, panics),
        64 => Runner::<64>::run(case, panics),
        other => panic!("no WakerQueue of capacity {other} here: pick from {CAPACITIES:?}"),
    }
}

struct Runner<const N: usize> {
    queue: Box<WakerQueue<N>>,
    tasks: Vec<Arc<Task>>,
    wakers: Vec<Waker>,
    /// Each pending task's deadline.
    pending: BTreeMap<usize, u64>,
    /// Each task's wakes counted so far.
    seen: Vec<usize>,
    now: u64,
    reached: Reached,
}

impl<const N: usize> Runner<N> {
    fn run(case: &Case, panics: bool) -> Reached {
        let tasks: Vec<Arc<Task>> = (0..N + EXTRA_TASKS).map(|_| Arc::default()).collect();
        let mut runner = Runner::<N> {
            queue: Box::new(WakerQueue::new()),
            wakers: tasks.iter().map(|task| case.wakers.waker(task)).collect(),
            seen: vec![0; tasks.len()],
            tasks,
            pending: BTreeMap::new(),
            now: case.start.tick(),
            reached: Reached::default(),
        };
        let waker = &runner.wakers[0];
        assert_eq!(
            waker.clone().will_wake(waker),
            case.wakers.clones_will_wake(),
            "{:?}: a clone is not what the kind says",
            case.wakers
        );
        assert_eq!(runner.queue.next_expiration(runner.now), u64::MAX);
        for (step, &call) in case.calls.iter().enumerate() {
            match call {
                Call::Schedule { task, at } => runner.schedule(usize::from(task), at, step),
                Call::Burst {
                    task,
                    count,
                    first,
                    spread,
                } => {
                    let first = first.resolve(runner.now);
                    for k in 0..usize::from(count % 80) {
                        let later = (k as u64).saturating_mul(u64::from(spread));
                        runner.schedule_at(
                            usize::from(task) + k,
                            first.saturating_add(later),
                            step,
                        );
                    }
                }
                Call::Expire { by } => runner.expire(by.get(), step),
                Call::Panics { task, on } => {
                    let task = usize::from(task) % runner.tasks.len();
                    runner.tasks[task]
                        .panics
                        .store(on && panics, Ordering::Relaxed);
                }
            }
            assert_eq!(runner.queue.len(), runner.pending.len(), "step {step}: len");
            runner.queue.validate();
        }
        runner.finish();
        runner.reached
    }

    fn earliest(&self) -> u64 {
        self.pending.values().copied().min().unwrap_or(u64::MAX)
    }

    /// The tasks woken since the last look, each checked woken once.
    fn newly_woken(&mut self, step: usize) -> Vec<usize> {
        let mut woken = Vec::new();
        for (k, task) in self.tasks.iter().enumerate() {
            let count = task.woken.load(Ordering::Relaxed);
            match count - self.seen[k] {
                0 => {}
                1 => woken.push(k),
                more => panic!("step {step}: task {k} woken {more} times at once"),
            }
            self.seen[k] = count;
        }
        woken
    }

    fn panics(&self, task: usize) -> bool {
        self.tasks[task].panics.load(Ordering::Relaxed)
    }

    fn schedule(&mut self, task: usize, at: At, step: usize) {
        self.schedule_at(task, at.resolve(self.now), step);
    }

    fn schedule_at(&mut self, task: usize, at: u64, step: usize) {
        let task = task % self.tasks.len();
        let before = self.earliest();
        let was_empty = self.pending.is_empty();
        let queue = &mut self.queue;
        let waker = &self.wakers[task];
        let answer = catch_unwind(AssertUnwindSafe(|| queue.schedule_wake(at, waker)));
        let woken = self.newly_woken(step);
        let what = format!("step {step}: schedule_wake({at}, task {task})");
        if self.pending.contains_key(&task) || self.pending.len() < N {
            assert!(woken.is_empty(), "{what}: woke {woken:?} with room");
        } else {
            let [early] = woken[..] else {
                panic!("{what}: full, so one woken early, not {woken:?}");
            };
            assert!(
                self.pending.remove(&early).is_some(),
                "{what}: woke {early}, which was not pending"
            );
            self.reached.woken_early += 1;
        }
        let deadline = self.pending.entry(task).or_insert(at);
        *deadline = (*deadline).min(at);
        match answer {
            Ok(moved) => assert_eq!(moved, self.earliest() < before || was_empty, "{what}"),
            // The early wake comes last: the new entry is filed.
            Err(_) => {
                assert!(
                    woken.iter().any(|&k| self.panics(k)),
                    "{what}: unwound, but woke no task that panics ({woken:?})"
                );
                self.reached.unwound_scheduling += 1;
            }
        }
    }

    fn expire(&mut self, by: u64, step: usize) {
        self.now = self.now.saturating_add(by);
        let now = self.now;
        let queue = &mut self.queue;
        let answer = catch_unwind(AssertUnwindSafe(|| queue.next_expiration(now)));
        let woken = self.newly_woken(step);
        let what = format!("step {step}: next_expiration({now})");
        for &k in &woken {
            let deadline = self.pending.remove(&k);
            assert!(
                deadline.is_some_and(|deadline| deadline <= now),
                "{what}: woke task {k}, due at {deadline:?}"
            );
        }
        match answer {
            Ok(next) => {
                let late: Vec<_> = self.pending.iter().filter(|&(_, &d)| d <= now).collect();
                assert!(late.is_empty(), "{what}: left due {late:?}");
                assert_eq!(next, self.earliest(), "{what}");
            }
            // What it did not wake stays pending for the next call.
            Err(_) => {
                assert!(
                    woken.iter().any(|&k| self.panics(k)),
                    "{what}: unwound, but woke no task that panics ({woken:?})"
                );
                self.reached.unwound_expiring += 1;
            }
        }
    }

    /// With no waker panicking, one call at the end of time wakes every
    /// task still pending, once: nothing was lost.
    fn finish(&mut self) {
        for task in &self.tasks {
            task.panics.store(false, Ordering::Relaxed);
        }
        assert_eq!(self.queue.next_expiration(u64::MAX), u64::MAX);
        let woken = self.newly_woken(usize::MAX);
        let pending: Vec<usize> = self.pending.keys().copied().collect();
        assert_eq!(
            woken, pending,
            "the last call woke these, not the pending ones"
        );
        assert!(self.queue.is_empty());
        self.queue.validate();
    }
}

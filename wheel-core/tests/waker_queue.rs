//! `WakerQueue`: its contract case by case, then quickcheck op sequences
//! against a map of task to deadline, with every wake counted.

use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{RawWaker, RawWakerVTable, Waker};

use quickcheck::{Arbitrary, Gen, QuickCheck};
use wheel_core::WakerQueue;

mod common;
use common::tasks::{tasks, woken, Task};

#[test]
fn an_empty_queue_has_no_deadline_and_its_first_entry_arms_the_alarm() {
    let mut queue: WakerQueue<4> = WakerQueue::new();
    assert_eq!(queue.next_expiration(0), u64::MAX);
    assert!(queue.schedule_wake(u64::MAX, Waker::noop()), "was empty");
    assert_eq!(queue.next_expiration(1 << 60), u64::MAX);
    assert_eq!(queue.len(), 1);
    assert_eq!(queue.next_expiration(u64::MAX), u64::MAX);
    assert!(queue.is_empty());
}

#[test]
fn a_task_keeps_its_earliest_deadline_and_is_woken_once() {
    let (tasks, wakers) = tasks(1);
    let mut queue: WakerQueue<4> = WakerQueue::new();
    assert!(queue.schedule_wake(100, &wakers[0]));
    assert!(!queue.schedule_wake(200, &wakers[0]), "later: no change");
    assert!(
        !queue.schedule_wake(100, &wakers[0].clone()),
        "a clone is the same task"
    );
    assert_eq!(queue.len(), 1);
    assert!(queue.schedule_wake(60, &wakers[0]), "earlier: re-arm");
    queue.validate();
    assert_eq!(queue.next_expiration(59), 60);
    assert_eq!(woken(&tasks), [0]);
    assert_eq!(queue.next_expiration(60), u64::MAX);
    assert_eq!(woken(&tasks), [1]);
    assert_eq!(queue.next_expiration(1_000), u64::MAX);
    assert_eq!(woken(&tasks), [1]);
}

#[test]
fn only_a_new_earliest_deadline_moves_the_alarm() {
    let (tasks, wakers) = tasks(3);
    let mut queue: WakerQueue<4> = WakerQueue::new();
    assert!(queue.schedule_wake(500, &wakers[0]));
    assert!(!queue.schedule_wake(700, &wakers[1]), "behind 500");
    assert!(!queue.schedule_wake(500, &wakers[2]), "ties 500");
    assert!(
        !queue.schedule_wake(600, &wakers[1]),
        "earlier, still behind 500"
    );
    assert!(queue.schedule_wake(400, &wakers[1]), "ahead of 500");
    queue.validate();
    assert_eq!(queue.next_expiration(0), 400);
    assert_eq!(queue.next_expiration(450), 500);
    assert_eq!(woken(&tasks), [0, 1, 0]);
    assert_eq!(queue.next_expiration(500), u64::MAX);
    assert_eq!(woken(&tasks), [1, 1, 1]);
}

#[test]
fn a_deadline_already_passed_is_woken_by_the_next_call() {
    let (tasks, wakers) = tasks(2);
    let mut queue: WakerQueue<4> = WakerQueue::new();
    queue.schedule_wake(1_000, &wakers[0]);
    assert_eq!(queue.next_expiration(900), 1_000);
    assert!(queue.schedule_wake(5, &wakers[1]), "in the past: re-arm");
    assert_eq!(queue.next_expiration(900), 1_000);
    assert_eq!(woken(&tasks), [0, 1]);
}

#[test]
fn stepping_to_each_answer_wakes_each_task_exactly_at_its_deadline() {
    for start in [0, (1 << 36) - 300, u64::MAX - 5_000_000] {
        let deadlines: Vec<u64> = (0..40u64)
            .map(|k| start + 1 + (k * 7_919 + k * k * 104_729) % 4_000_000)
            .collect();
        let (tasks, wakers) = tasks(deadlines.len());
        let mut queue: WakerQueue<40> = WakerQueue::new();
        queue.next_expiration(start);
        for (waker, &at) in wakers.iter().zip(&deadlines) {
            queue.schedule_wake(at, waker);
        }
        queue.validate();
        let mut now = queue.next_expiration(start);
        while now != u64::MAX {
            let before = woken(&tasks);
            let next = queue.next_expiration(now);
            queue.validate();
            for (k, (&was, &is)) in before.iter().zip(&woken(&tasks)).enumerate() {
                let due = deadlines[k] == now;
                assert_eq!(is - was, usize::from(due), "task {k} at {now}");
            }
            assert!(next > now, "{next} after {now}");
            now = next;
        }
        assert_eq!(woken(&tasks), vec![1; deadlines.len()], "from {start}");
    }
}

#[test]
fn a_full_queue_wakes_one_task_early_and_loses_none() {
    let (tasks, wakers) = tasks(5);
    let mut queue: WakerQueue<4> = WakerQueue::new();
    for (k, waker) in wakers[..4].iter().enumerate() {
        queue.schedule_wake(100 + k as u64 * 1_000_000, waker);
    }
    assert!(!queue.schedule_wake(50_000, &wakers[4]), "100 stays first");
    queue.validate();
    assert_eq!(queue.len(), 4);
    let early = woken(&tasks);
    assert_eq!(early.iter().sum::<usize>(), 1, "one woken early: {early:?}");
    assert_eq!(early[4], 0, "not the new task");
    assert_eq!(
        early[0], 0,
        "not the earliest, which room was made without moving"
    );
    assert_eq!(queue.next_expiration(u64::MAX), u64::MAX);
    assert_eq!(woken(&tasks), [1; 5], "every task woken once");
}

#[test]
fn a_full_queue_of_one_hands_its_entry_to_the_new_task() {
    let (tasks, wakers) = tasks(2);
    let mut queue: WakerQueue<1> = WakerQueue::new();
    assert!(queue.schedule_wake(100, &wakers[0]));
    assert!(
        !queue.schedule_wake(200, &wakers[1]),
        "the earliest got later"
    );
    assert_eq!(woken(&tasks), [1, 0]);
    assert_eq!(queue.next_expiration(150), 200);
    assert!(queue.schedule_wake(50, &wakers[0]));
    assert_eq!(woken(&tasks), [1, 1]);
    assert_eq!(queue.next_expiration(150), u64::MAX);
    assert_eq!(woken(&tasks), [2, 1]);
}

#[test]
fn a_full_queue_with_one_deadline_keeps_it() {
    let (tasks, wakers) = tasks(9);
    let mut queue: WakerQueue<8> = WakerQueue::new();
    for waker in &wakers[..8] {
        queue.schedule_wake(777, waker);
    }
    assert!(!queue.schedule_wake(777, &wakers[8]));
    queue.validate();
    assert_eq!(queue.next_expiration(0), 777);
    assert_eq!(queue.next_expiration(777), u64::MAX);
    assert_eq!(woken(&tasks), [1; 9]);
}

/// Tasks queued at `deadlines` (in that order), all due by 10, and the one
/// at `panics` panics when woken: the call unwinds with the queue
/// consistent, and the next call wakes the rest.
fn a_waker_that_panics_leaves(deadlines: &[u64], panics: usize) {
    let mut tasks: Vec<Arc<Task>> = deadlines.iter().map(|_| Arc::default()).collect();
    tasks[panics] = Arc::new(Task {
        panics: true,
        ..Task::default()
    });
    let wakers: Vec<Waker> = tasks.iter().map(|t| Waker::from(t.clone())).collect();
    let mut queue: WakerQueue<8> = WakerQueue::new();
    for (waker, &at) in wakers.iter().zip(deadlines) {
        queue.schedule_wake(at, waker);
    }
    let unwound = catch_unwind(AssertUnwindSafe(|| queue.next_expiration(10)));
    assert!(unwound.is_err(), "the panic reaches the caller");
    queue.validate();
    let after_panic = woken(&tasks);
    assert_eq!(after_panic[panics], 1);
    assert!(after_panic.iter().all(|&w| w <= 1), "{after_panic:?}");
    assert_eq!(queue.len(), after_panic.iter().filter(|&&w| w == 0).count());
    // The next call wakes the rest; the one that panicked is gone.
    assert_eq!(queue.next_expiration(10), u64::MAX);
    assert_eq!(woken(&tasks), vec![1; deadlines.len()]);
    assert!(queue.schedule_wake(20, &wakers[0]), "usable again");
    queue.validate();
}

#[test]
fn a_waker_that_panics_leaves_a_consistent_queue_and_the_rest_pending() {
    a_waker_that_panics_leaves(&[10; 6], 2);
}

/// Several due at once: the earliest is fired first, then one pass finds
/// the rest, which leave before the earliest of them: a panic at any of
/// them leaves the least exact.
#[test]
fn a_waker_that_panics_among_many_due_leaves_the_least_exact() {
    // The earliest (3), one of the rest (7), and the earliest of the rest (5).
    for panics in [2, 3, 0] {
        a_waker_that_panics_leaves(&[5, 9, 3, 7, 8, 6], panics);
    }
}

/// Entries at `u64::MAX` are due only at `u64::MAX`, and then all of them,
/// in a near set and past it.
#[test]
fn every_task_at_u64_max_is_woken_at_u64_max() {
    for n in [3, 20] {
        let (tasks, wakers) = tasks(n);
        let mut queue: WakerQueue<24> = WakerQueue::new();
        for waker in &wakers {
            queue.schedule_wake(u64::MAX, waker);
        }
        queue.schedule_wake(7, &wakers[0]);
        assert_eq!(queue.next_expiration(7), u64::MAX);
        assert_eq!(queue.next_expiration(u64::MAX - 1), u64::MAX);
        assert_eq!(woken(&tasks).iter().sum::<usize>(), 1);
        assert_eq!(queue.next_expiration(u64::MAX), u64::MAX);
        assert!(queue.is_empty(), "{n} tasks");
        assert_eq!(woken(&tasks), vec![1; n]);
        queue.validate();
    }
}

/// The vtable of a waker whose clone panics; its other calls do nothing.
static CLONE_PANICS: RawWakerVTable = RawWakerVTable::new(
    |_| panic!("this waker's clone panics"),
    |_| {},
    |_| {},
    |_| {},
);

/// A queue of `N` entries holding `queued` tasks, then a new task whose
/// waker's clone panics: the call unwinds before any entry moves (none is
/// taken out to make room, to be lost with the unwinding), and all stay
/// pending.
fn a_clone_that_panics_loses_no_task<const N: usize>(queued: usize) {
    let (tasks, wakers) = tasks(queued);
    let mut queue: WakerQueue<N> = WakerQueue::new();
    for (k, waker) in wakers.iter().enumerate() {
        queue.schedule_wake(1_000 + k as u64 * 7_919, waker);
    }
    // SAFETY: the vtable's functions never read the data pointer, so a null
    // one keeps `RawWaker`'s contract; clone panics instead of returning.
    let panics = unsafe { Waker::from_raw(RawWaker::new(std::ptr::null(), &CLONE_PANICS)) };
    let unwound = catch_unwind(AssertUnwindSafe(|| queue.schedule_wake(10, &panics)));
    assert!(unwound.is_err(), "the clone's panic reaches the caller");
    queue.validate();
    assert_eq!(
        woken(&tasks),
        vec![0; queued],
        "none woken early: nothing moved"
    );
    assert_eq!(queue.len(), queued, "a task went missing");
    assert_eq!(queue.next_expiration(u64::MAX), u64::MAX);
    assert_eq!(woken(&tasks), vec![1; queued], "every task woken once");
}

#[test]
fn a_hand_made_waker_whose_clone_panics_is_not_queued_and_loses_no_other() {
    // Room in the near cells (the common call's clone), full in them, and
    // full past them into the wheel.
    a_clone_that_panics_loses_no_task::<4>(2);
    a_clone_that_panics_loses_no_task::<4>(4);
    a_clone_that_panics_loses_no_task::<24>(24);
}

/// Wakes counted by task, for the wakers below: their data is an index here.
static WAKES: [AtomicUsize; 48] = [const { AtomicUsize::new(0) }; 48];

/// Two copies of one waker vtable at two addresses, as the compiler may
/// make of a promoted constant (std's `Arc` wakers name theirs twice, and
/// miri gives each use its own): a waker made with `FIRST` clones to one
/// with `SECOND`. Waking counts in `WAKES`.
static FIRST: RawWakerVTable =
    RawWakerVTable::new(clone_second, wake_counted, wake_counted, drop_nothing);
static SECOND: RawWakerVTable =
    RawWakerVTable::new(clone_second, wake_counted, wake_counted, drop_nothing);
/// A waker whose clone is another data pointer, 24 on, with the `SECOND`
/// vtable (whose clones keep it): it does not `will_wake` its clone, so
/// to the queue the clone is the task, which it must index and forget at
/// one home, and find again from the caller's waker's next clone.
static MOVES: RawWakerVTable =
    RawWakerVTable::new(clone_moved, wake_counted, wake_counted, drop_nothing);

fn clone_second(data: *const ()) -> RawWaker {
    RawWaker::new(data, &SECOND)
}

fn clone_moved(data: *const ()) -> RawWaker {
    RawWaker::new(data.wrapping_byte_add(24), &SECOND)
}

fn wake_counted(data: *const ()) {
    WAKES[data.addr()].fetch_add(1, Ordering::Relaxed);
}

fn drop_nothing(_: *const ()) {}

/// 24 tasks with wakers of `vtable` in a queue of 24 (16 near, the rest in
/// the wheel and its index), each asking three times (later: kept; earlier:
/// lowered; its kept clone's clone: kept), then fired, `validate` after
/// every call: one entry a task, each woken once, as `WAKES[counted]`
/// counts them.
fn hand_made_wakers_fire_once(vtable: &'static RawWakerVTable, counted: std::ops::Range<usize>) {
    let wakers: Vec<Waker> = (0..24)
        .map(|task| {
            let data = std::ptr::without_provenance::<()>(task);
            // SAFETY: the vtables' functions only use the data pointer's
            // address, as an index into `WAKES`, and make no references.
            unsafe { Waker::from_raw(RawWaker::new(data, vtable)) }
        })
        .collect();
    let mut queue: WakerQueue<24> = WakerQueue::new();
    for (k, waker) in wakers.iter().enumerate() {
        let at = 100 + k as u64 * 7_919;
        assert_eq!(queue.schedule_wake(at + 1, waker), k == 0);
        assert!(!queue.schedule_wake(at + 2, waker), "later: kept");
        assert_eq!(queue.schedule_wake(at, waker), k == 0, "earlier: lowered");
        assert!(!queue.schedule_wake(at, &waker.clone().clone()), "kept");
        assert_eq!(queue.len(), k + 1, "one entry a task");
        queue.validate();
    }
    for k in 0..wakers.len() as u64 {
        // Each at the deadline it was lowered to, not a tick later.
        let next = queue.next_expiration(100 + k * 7_919);
        let expected = if k + 1 == wakers.len() as u64 {
            u64::MAX
        } else {
            100 + (k + 1) * 7_919
        };
        assert_eq!(next, expected);
        queue.validate();
    }
    assert!(queue.is_empty());
    let wakes: Vec<usize> = WAKES[counted]
        .iter()
        .map(|w| w.load(Ordering::Relaxed))
        .collect();
    assert_eq!(wakes, [1; 24], "each task woken once");
}

#[test]
fn hand_made_wakers_whose_clones_carry_another_vtable_copy_keep_the_index_whole() {
    hand_made_wakers_fire_once(&FIRST, 0..24);
}

#[test]
fn hand_made_wakers_whose_clones_carry_another_data_pointer_keep_the_index_whole() {
    hand_made_wakers_fire_once(&MOVES, 24..48);
}

#[test]
fn a_queue_can_be_a_static() {
    static QUEUE: std::sync::Mutex<WakerQueue<8>> = std::sync::Mutex::new(WakerQueue::new());
    let mut queue = QUEUE.lock().unwrap();
    assert!(queue.schedule_wake(3, Waker::noop()));
    assert_eq!(queue.next_expiration(3), u64::MAX);
}

#[test]
fn a_ticking_task_below_a_crowded_slot_keeps_every_deadline_exact() {
    // 200 tasks far out in one slot, one task ticking below them: the
    // earliest deadline stays exact as the ticker fires and comes back.
    let (tasks, wakers) = tasks(201);
    let mut queue: WakerQueue<201> = WakerQueue::new();
    for (k, waker) in wakers[1..].iter().enumerate() {
        queue.schedule_wake(3_000_000 + k as u64 * 13, waker);
    }
    let mut now = 0;
    for _ in 0..100 {
        assert!(queue.schedule_wake(now + 1_000, &wakers[0]));
        now += 1_000;
        assert_eq!(queue.next_expiration(now), 3_000_000);
        queue.validate();
    }
    assert_eq!(woken(&tasks)[0], 100);
    assert_eq!(queue.next_expiration(3_000_000 + 13), 3_000_000 + 26);
    assert_eq!(woken(&tasks)[1..4], [1, 1, 0]);
}

/// What a model test does next.
#[derive(Clone, Debug)]
enum Op {
    /// `schedule_wake` for a task (taken modulo the case's tasks), at a
    /// tick relative to now.
    Schedule { task: usize, at: Offset },
    /// `next_expiration` at a later tick.
    Expire { by: u64 },
}

/// A deadline relative to the clock.
#[derive(Clone, Copy, Debug)]
enum Offset {
    Ahead(u64),
    Behind(u64),
    Never,
}

fn spread(g: &mut Gen) -> u64 {
    // Ticks at every scale: within a level-0 slot up to far levels.
    let bits = u32::arbitrary(g) % 45;
    u64::arbitrary(g) & ((1u64 << bits) - 1)
}

impl Arbitrary for Op {
    fn arbitrary(g: &mut Gen) -> Self {
        match u8::arbitrary(g) % 8 {
            0..=4 => Op::Schedule {
                task: usize::arbitrary(g) % 64,
                at: match u8::arbitrary(g) % 16 {
                    0 => Offset::Never,
                    1 | 2 => Offset::Behind(spread(g)),
                    _ => Offset::Ahead(spread(g)),
                },
            },
            _ => Op::Expire { by: spread(g) },
        }
    }

    fn shrink(&self) -> Box<dyn Iterator<Item = Self>> {
        match *self {
            Op::Schedule { task, at } => {
                Box::new(task.shrink().map(move |task| Op::Schedule { task, at }))
            }
            Op::Expire { by } => Box::new(by.shrink().map(|by| Op::Expire { by })),
        }
    }
}

#[derive(Clone, Debug)]
struct Case {
    start: u64,
    ops: Vec<Op>,
}

impl Arbitrary for Case {
    fn arbitrary(g: &mut Gen) -> Self {
        let start = match u8::arbitrary(g) % 4 {
            0 => 0,
            1 => (1 << 36) - spread(g) % 5_000,
            2 => u64::MAX - spread(g),
            _ => spread(g),
        };
        Case {
            start,
            ops: Vec::arbitrary(g),
        }
    }

    fn shrink(&self) -> Box<dyn Iterator<Item = Self>> {
        let start = self.start;
        Box::new(self.ops.shrink().map(move |ops| Case { start, ops }))
    }
}

/// Runs a case on a queue of `ENTRIES` entries with `TASKS` tasks against
/// the model, checking every answer and every wake.
fn agrees<const ENTRIES: usize, const TASKS: usize>(case: Case) -> bool {
    let (tasks, wakers) = tasks(TASKS);
    let mut queue: WakerQueue<ENTRIES> = WakerQueue::new();
    let mut model: BTreeMap<usize, u64> = BTreeMap::new();
    let mut now = case.start;
    queue.next_expiration(now);
    let mut seen = woken(&tasks);
    let earliest = |model: &BTreeMap<usize, u64>| model.values().copied().min().unwrap_or(u64::MAX);
    for op in case.ops {
        match op {
            Op::Schedule { task, at } => {
                let task = task % TASKS;
                let at = match at {
                    Offset::Ahead(by) => now.saturating_add(by),
                    Offset::Behind(by) => now.saturating_sub(by),
                    Offset::Never => u64::MAX,
                };
                let before = earliest(&model);
                let was_empty = model.is_empty();
                let moved = queue.schedule_wake(at, &wakers[task]);
                let now_woken = woken(&tasks);
                let early: Vec<usize> = (0..TASKS).filter(|&k| now_woken[k] != seen[k]).collect();
                if model.contains_key(&task) || model.len() < ENTRIES {
                    assert!(early.is_empty(), "woken early with room: {early:?}");
                } else {
                    assert_eq!(early.len(), 1, "full: one woken early, not {early:?}");
                    assert_eq!(now_woken[early[0]] - seen[early[0]], 1);
                    assert!(
                        model.remove(&early[0]).is_some(),
                        "woke {early:?}, not queued"
                    );
                }
                let deadline = model.entry(task).or_insert(at);
                *deadline = (*deadline).min(at);
                assert_eq!(
                    moved,
                    earliest(&model) < before || was_empty,
                    "schedule_wake({at}, {task})"
                );
                seen = now_woken;
            }
            Op::Expire { by } => {
                now = now.saturating_add(by);
                let next = queue.next_expiration(now);
                let now_woken = woken(&tasks);
                for k in 0..TASKS {
                    let due = model.get(&k).is_some_and(|&d| d <= now);
                    assert_eq!(
                        now_woken[k] - seen[k],
                        usize::from(due),
                        "task {k} at {now}"
                    );
                }
                model.retain(|_, &mut d| d > now);
                assert_eq!(next, earliest(&model), "next_expiration({now})");
                seen = now_woken;
            }
        }
        assert_eq!(queue.len(), model.len());
        queue.validate();
    }
    true
}

/// More tasks than entries, so the queue fills up; 8 entries all fit the
/// near cells.
#[test]
fn waker_queue_agrees_with_a_map_of_tasks() {
    QuickCheck::new()
        .rng(Gen::new(120))
        .tests(2_000)
        .max_tests(2_000)
        .quickcheck(agrees::<8, 12> as fn(Case) -> bool);
}

/// 24 entries do not fit the 16 near cells: entries move from the cells to
/// the wheel, the two share the calls, and a full queue makes room in the
/// wheel. Long cases, so that the queue fills.
#[test]
fn waker_queue_past_its_near_cells_agrees_with_a_map_of_tasks() {
    QuickCheck::new()
        .rng(Gen::new(400))
        .tests(1_000)
        .max_tests(1_000)
        .quickcheck(agrees::<24, 32> as fn(Case) -> bool);
}

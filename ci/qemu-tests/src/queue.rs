//! `WakerQueue` on the target: one entry per task at its earliest
//! deadline, the re-arm answers, wakes due by `now`, and a full queue.

use core::ptr;
use core::sync::atomic::{AtomicU32, Ordering};
use core::task::{RawWaker, RawWakerVTable, Waker};

use wheel_core::WakerQueue;

use crate::wheel::Rng;
use crate::{check, check_eq, Outcome, Test};

pub static TESTS: &[Test] = &[
    (
        "queue_keeps_each_task_s_earliest_deadline",
        earliest_per_task,
    ),
    ("queue_wakes_what_is_due", wakes_due),
    ("queue_near_u64_max", near_u64_max),
    ("queue_full_wakes_one_early", full),
    ("queue_against_an_array", against_array),
];

/// How often each test task was woken; a task's waker data is its number.
static WOKEN: [AtomicU32; 8] = [const { AtomicU32::new(0) }; 8];

static VTABLE: RawWakerVTable = RawWakerVTable::new(clone, wake, wake, drop);

fn clone(data: *const ()) -> RawWaker {
    RawWaker::new(data, &VTABLE)
}

fn wake(data: *const ()) {
    if let Some(count) = WOKEN.get(data.addr()) {
        count.fetch_add(1, Ordering::Relaxed);
    }
}

fn drop(_: *const ()) {}

/// Task `k`'s waker; its count starts again at 0.
fn task(k: usize) -> Waker {
    WOKEN[k].store(0, Ordering::Relaxed);
    // SAFETY: the vtable's functions never dereference the data pointer,
    // which is only the task's number, and clone hands back the same vtable.
    unsafe { Waker::from_raw(RawWaker::new(ptr::without_provenance(k), &VTABLE)) }
}

fn woken(k: usize) -> u32 {
    WOKEN[k].load(Ordering::Relaxed)
}

fn earliest_per_task() -> Outcome {
    let (a, b) = (task(0), task(1));
    let mut queue: WakerQueue<4> = WakerQueue::new();
    check!(queue.schedule_wake(500, &a)); // empty
    check!(!queue.schedule_wake(800, &a)); // same task, later
    check!(!queue.schedule_wake(600, &b)); // behind 500
    check!(queue.schedule_wake(400, &b)); // ahead of 500
    check!(!queue.schedule_wake(450, &a.clone())); // a clone is task a
    check_eq!(queue.len(), 2);
    queue.validate();
    check_eq!(queue.next_expiration(0), 400);
    Ok(())
}

fn wakes_due() -> Outcome {
    let tasks = [task(0), task(1), task(2)];
    let mut queue: WakerQueue<8> = WakerQueue::new();
    for (k, waker) in tasks.iter().enumerate() {
        queue.schedule_wake(100 + 5_000 * k as u64, waker);
    }
    check_eq!(queue.next_expiration(99), 100);
    check_eq!(woken(0), 0);
    check_eq!(queue.next_expiration(5_100), 10_100);
    check_eq!((woken(0), woken(1), woken(2)), (1, 1, 0));
    check_eq!(queue.next_expiration(10_100), u64::MAX);
    check_eq!(woken(2), 1);
    check!(queue.is_empty());
    Ok(())
}

fn near_u64_max() -> Outcome {
    let tasks = [task(0), task(1)];
    let mut queue: WakerQueue<2> = WakerQueue::new();
    let start = u64::MAX - 1_000;
    check_eq!(queue.next_expiration(start), u64::MAX);
    check!(queue.schedule_wake(u64::MAX, &tasks[0]));
    check!(queue.schedule_wake(start + 10, &tasks[1]));
    check_eq!(queue.next_expiration(start + 10), u64::MAX);
    check_eq!((woken(0), woken(1)), (0, 1));
    check_eq!(queue.next_expiration(u64::MAX), u64::MAX);
    check_eq!(woken(0), 1);
    check!(queue.is_empty());
    Ok(())
}

fn full() -> Outcome {
    let tasks = [task(0), task(1), task(2), task(3), task(4)];
    let mut queue: WakerQueue<4> = WakerQueue::new();
    for (k, waker) in tasks[..4].iter().enumerate() {
        queue.schedule_wake(1_000 + ((k as u64) << 20), waker);
    }
    check!(!queue.schedule_wake(2_000, &tasks[4])); // 1_000 stays first
    check_eq!(queue.len(), 4);
    let early: u32 = (0..5).map(woken).sum();
    check_eq!(early, 1);
    check_eq!(woken(0), 0); // not the earliest
    check_eq!(woken(4), 0); // not the new task
    queue.validate();
    check_eq!(queue.next_expiration(u64::MAX), u64::MAX);
    check!((0..5).all(|k| woken(k) == 1)); // none lost
    Ok(())
}

/// Random `schedule_wake` and `next_expiration` calls for 8 tasks on 6
/// entries against an array of deadlines: every wake counted, every answer
/// checked.
fn against_array() -> Outcome {
    const TASKS: usize = 8;
    const ENTRIES: usize = 6;
    for start in [0, (1 << 36) - 500, u64::MAX - (1 << 24)] {
        let tasks: [Waker; TASKS] = core::array::from_fn(task);
        let mut rng = Rng(start ^ 0x9e37_79b9);
        let mut queue: WakerQueue<ENTRIES> = WakerQueue::new();
        let mut model: [Option<u64>; TASKS] = [None; TASKS];
        let earliest = |model: &[Option<u64>; TASKS]| {
            model.iter().flatten().copied().min().unwrap_or(u64::MAX)
        };
        let mut now = start;
        queue.next_expiration(now);
        let mut seen = [0u32; TASKS];
        for _ in 0..3_000 {
            if !rng.next().is_multiple_of(3) {
                let k = (rng.next() % TASKS as u64) as usize;
                let at = now.saturating_add(rng.span(36));
                let (before, was_empty) = (earliest(&model), model.iter().all(Option::is_none));
                let moved = queue.schedule_wake(at, &tasks[k]);
                let full = model[k].is_none() && model.iter().flatten().count() == ENTRIES;
                for j in 0..TASKS {
                    let early = woken(j) - seen[j];
                    check!(early == 0 || (full && early == 1 && j != k && model[j].is_some()));
                    if early == 1 {
                        model[j] = None;
                    }
                    seen[j] = woken(j);
                }
                model[k] = Some(model[k].map_or(at, |d| d.min(at)));
                check_eq!(moved, earliest(&model) < before || was_empty);
            } else {
                now = now.saturating_add(rng.span(30));
                let next = queue.next_expiration(now);
                for j in 0..TASKS {
                    let due = model[j].is_some_and(|d| d <= now);
                    check_eq!(woken(j) - seen[j], u32::from(due));
                    if due {
                        model[j] = None;
                    }
                    seen[j] = woken(j);
                }
                check_eq!(next, earliest(&model));
            }
            check_eq!(queue.len(), model.iter().flatten().count());
        }
        queue.validate();
    }
    Ok(())
}

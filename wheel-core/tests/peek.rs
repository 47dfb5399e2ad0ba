//! `peek` names the timer `advance` yields next: checked against `advance`
//! itself after random inserts, cancels, reschedules and moves of the
//! clock, on several geometries and both storages, with many timers
//! sharing deadlines so that the order among them is put to the test.

use std::collections::BTreeMap;

use wheel_core::{ArrayStorage, Storage, TimerId, TimerWheel, VecStorage};

mod common;
use common::Rng;

/// Random work on `wheel`, asking `peek` before every step and checking
/// its answer against what `advance` then yields.
fn check<S: Storage<u64> + Default, const SLOTS: usize, const LEVELS: usize>(
    seed: u64,
    cap: usize,
) {
    let mut rng = Rng(seed);
    let start = if seed % 2 == 0 { 0 } else { rng.next() >> 8 };
    let mut wheel: TimerWheel<u64, S, SLOTS, LEVELS> = TimerWheel::with_geometry(start);
    let mut pending: BTreeMap<TimerId, u64> = BTreeMap::new();
    // A few deadlines, reused, so that many timers share one.
    let shared: Vec<u64> = (0..6).map(|_| start + rng.spread(30)).collect();
    for step in 0..400 {
        let now = wheel.now();
        let peeked = wheel.peek();
        match pending.values().min() {
            None => assert_eq!(peeked, None),
            Some(&least) => {
                let (id, deadline) = peeked.expect("a timer is pending");
                assert_eq!(pending.get(&id), Some(&deadline), "peek named {id:?}");
                assert!(
                    deadline == least || deadline <= now,
                    "peek's deadline {deadline}, least {least}, now {now}"
                );
            }
        }
        match rng.below(10) {
            0..=4 if pending.len() < cap => {
                let deadline = if rng.below(3) > 0 {
                    shared[rng.below(6) as usize].max(now)
                } else {
                    now + rng.spread(30)
                };
                let id = wheel.try_insert(deadline, step).unwrap();
                pending.insert(id, deadline);
            }
            5 if !pending.is_empty() => {
                let id = *pending
                    .keys()
                    .nth(rng.below(pending.len() as u64) as usize)
                    .unwrap();
                pending.remove(&id);
                wheel.cancel(id).unwrap();
            }
            6 if !pending.is_empty() => {
                let id = *pending
                    .keys()
                    .nth(rng.below(pending.len() as u64) as usize)
                    .unwrap();
                let deadline = shared[rng.below(6) as usize].max(now);
                pending.insert(id, deadline);
                assert!(wheel.reschedule(id, deadline));
            }
            _ => {
                let Some((id, deadline)) = peeked else {
                    continue;
                };
                // Any target at or past the deadline yields the peeked one first.
                let target = deadline.max(now) + rng.spread(8).min(u64::MAX - deadline.max(now));
                let mut advance = wheel.advance(target);
                let first = advance.next().expect("the peeked timer is due");
                assert_eq!(
                    (first.id, first.deadline),
                    (id, deadline),
                    "seed {seed} step {step}"
                );
                drop(advance);
                pending.remove(&id);
                // Those now due stay pending, due: peek names them next.
            }
        }
    }
}

#[test]
fn peek_names_what_advance_yields_next_on_a_growable_wheel() {
    for seed in 0..200 {
        check::<VecStorage<u64>, 64, 11>(seed, 2_000);
        check::<VecStorage<u64>, 8, 22>(seed, 2_000);
        check::<VecStorage<u64>, 2, 64>(seed, 2_000);
    }
}

#[test]
fn peek_names_what_advance_yields_next_on_a_fixed_wheel() {
    for seed in 0..200 {
        check::<ArrayStorage<u64, 64>, 64, 11>(seed, 64);
        check::<ArrayStorage<u64, 64>, 4, 32>(seed, 64);
    }
}

#[test]
fn peek_after_cascading_ahead_names_a_timer_with_the_least_deadline() {
    let mut wheel = wheel_core::Wheel::new();
    for t in (5_000..5_100u64).rev() {
        wheel.insert(t, t);
        wheel.insert(t + 1, t);
    }
    assert_eq!(wheel.cascade_ahead(37), 37);
    let (id, deadline) = wheel.peek().unwrap();
    assert_eq!(deadline, 5_000);
    assert_eq!(wheel.get(id), Some(&5_000));
    let first = wheel.advance(5_000).next().unwrap();
    assert_eq!(first.deadline, 5_000);
}

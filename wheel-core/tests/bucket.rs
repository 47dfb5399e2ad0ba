//! `BucketWheel` at sizes the model tests do not reach: slots holding many
//! chunks, staging a big slot across many `cascade_ahead` calls while timers
//! keep arriving, and the chunk pool giving memory back. Every timer's value
//! is unique, and each run is checked against a sorted list of what went in.

use wheel_core::BucketWheel;

mod common;
use common::Rng;

/// Drives `wheel` one tick at a time to `end`, cascading ahead a little
/// between ticks, and checks each tick yields exactly the timers due then
/// (those already due first). Returns `(deadline, value)` in firing order.
fn drive(wheel: &mut BucketWheel<u64>, end: u64, ahead: usize) -> Vec<(u64, u64)> {
    let mut fired = Vec::new();
    while wheel.now() < end {
        let tick = wheel.now() + 1;
        let before = wheel.now();
        let mut last_fresh = 0;
        for (deadline, value) in wheel.advance(tick) {
            assert!(deadline <= tick, "{deadline} fired at {tick}: early");
            if deadline > before {
                assert!(deadline >= last_fresh, "out of order at {tick}");
                last_fresh = deadline;
            }
            fired.push((deadline, value));
        }
        wheel.cascade_ahead(ahead);
        if tick % 97 == 0 {
            wheel.validate();
        }
    }
    fired
}

#[test]
fn a_burst_of_crowded_slots_fires_exactly_and_in_order() {
    let mut rng = Rng(7);
    let mut wheel = BucketWheel::new();
    let mut expected = Vec::new();
    // 200k timers over 20k ticks: every level-1 slot holds hundreds of
    // chunks' worth, and one tick holds a crowd of its own.
    for value in 0..200_000 {
        let deadline = if value % 10 == 0 {
            5_000
        } else {
            1 + rng.below(20_000)
        };
        wheel.insert(deadline, value);
        expected.push((deadline, value));
    }
    wheel.validate();
    let mut fired = drive(&mut wheel, 20_000, 500);
    assert!(wheel.is_empty());
    fired.sort_unstable();
    expected.sort_unstable();
    assert_eq!(fired, expected);
}

#[test]
fn timers_keep_arriving_while_a_big_slot_is_staged() {
    let mut rng = Rng(11);
    let mut wheel = BucketWheel::starting_at(100);
    let mut expected = Vec::new();
    let mut value = 0;
    let mut add = |wheel: &mut BucketWheel<u64>, deadline: u64| {
        wheel.insert(deadline, value);
        expected.push((deadline, value));
        value += 1;
    };
    // 50k timers in the level-2 slot starting at 4096.
    for _ in 0..50_000 {
        add(&mut wheel, 4_096 + rng.below(4_096));
    }
    // Stage part of it, then keep inserting into the same slot, a
    // lower one, and the past, staging a little more each time.
    for round in 0..100 {
        assert!(
            wheel.cascade_ahead(300) > 0,
            "round {round}: nothing staged"
        );
        for _ in 0..200 {
            add(&mut wheel, 4_096 + rng.below(4_096));
        }
        let now = wheel.now();
        add(&mut wheel, now + 1 + rng.below(3_000));
        add(&mut wheel, now.saturating_sub(5));
        wheel.validate();
    }
    let mut fired = drive(&mut wheel, 8_192, 0);
    assert!(wheel.is_empty());
    fired.sort_unstable();
    expected.sort_unstable();
    assert_eq!(fired, expected);
}

#[test]
fn a_partial_advance_leaves_the_rest_due() {
    let mut wheel = BucketWheel::new();
    for value in 0..10_000 {
        wheel.insert(1 + value % 700, value);
    }
    let taken: Vec<_> = wheel.advance(600).take(1_234).collect();
    assert_eq!(taken.len(), 1_234);
    assert_eq!(wheel.now(), 600);
    wheel.validate();
    let due = (0..10_000u64).filter(|v| v % 700 < 600).count() - 1_234;
    let rest: Vec<_> = wheel.advance(600).collect();
    assert_eq!(rest.len(), due, "due after the partial advance");
    assert!(rest.iter().all(|&(deadline, _)| deadline <= 600));
    let late: Vec<_> = wheel.advance(700).collect();
    assert_eq!(taken.len() + rest.len() + late.len(), 10_000);
    assert!(wheel.is_empty());
}

#[test]
fn drain_takes_staged_and_live_timers_alike() {
    let mut wheel = BucketWheel::new();
    for value in 0..5_000 {
        wheel.insert(4_096 + value, value);
        wheel.insert(value, value + 5_000);
    }
    wheel.cascade_ahead(2_000);
    let mut values: Vec<u64> = wheel.drain().map(|(_, value)| value).collect();
    values.sort_unstable();
    assert_eq!(values, (0..10_000).collect::<Vec<_>>());
    assert!(wheel.is_empty());
    wheel.validate();
    assert_eq!(wheel.next_expiration(), None);
    assert_eq!(wheel.cascade_ahead(10), 0);
}

#[test]
fn bursts_filed_and_fired_over_and_over_reuse_chunks_within_bounds() {
    // `validate` checks the pool of spare chunks stays within its bound.
    let mut wheel = BucketWheel::new();
    for round in 0..10u64 {
        let base = wheel.now();
        for value in 0..100_000 {
            wheel.insert(base + 1 + value % 3_000, value);
        }
        wheel.validate();
        let fired = wheel.advance(base + 3_000).count();
        assert_eq!(fired, 100_000, "round {round}");
        wheel.validate();
    }
}

/// `peek` names what `advance` yields next: after random inserts (many
/// sharing a deadline) and moves of the clock, any target at or past the
/// peeked deadline yields that very timer first; while a slot is staged,
/// a timer with the least deadline.
#[test]
fn peek_names_what_advance_yields_next() {
    for seed in 0..300 {
        let mut rng = Rng(seed);
        let start = if seed % 2 == 0 { 0 } else { rng.next() >> 8 };
        let mut wheel = BucketWheel::starting_at(start);
        let mut pending = std::collections::BTreeMap::<u64, u64>::new(); // value → deadline
        let shared: Vec<u64> = (0..6).map(|_| start + rng.spread(30)).collect();
        let ahead = seed % 3 == 0;
        for value in 0..300u64 {
            let now = wheel.now();
            match (wheel.peek(), pending.values().min()) {
                (None, None) => {}
                (Some((deadline, &v)), Some(&least)) => {
                    assert_eq!(pending.get(&v), Some(&deadline), "seed {seed}");
                    assert!(deadline == least || deadline <= now, "seed {seed}");
                }
                (peeked, least) => panic!("seed {seed}: peek {peeked:?}, least {least:?}"),
            }
            if rng.below(3) > 0 {
                let deadline = if rng.below(3) > 0 {
                    shared[rng.below(6) as usize].max(now)
                } else {
                    now + rng.spread(30)
                };
                wheel.insert(deadline, value);
                pending.insert(value, deadline);
                if ahead {
                    wheel.cascade_ahead(rng.below(4) as usize);
                }
            } else if let Some((deadline, &v)) = wheel.peek() {
                let target = deadline.max(now).saturating_add(rng.spread(8));
                let mut advance = wheel.advance(target);
                let first = advance.next().expect("the peeked timer is due");
                if ahead {
                    assert_eq!(first.0, deadline, "seed {seed}");
                    pending.remove(&first.1);
                } else {
                    assert_eq!(first, (deadline, v), "seed {seed}");
                    pending.remove(&v);
                }
            }
        }
    }
}

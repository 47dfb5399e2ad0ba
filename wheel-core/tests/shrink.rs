//! Giving memory back. `Wheel::shrink_to_fit`: memory comes back after a
//! burst drains; pending timers keep their ids and deadlines, stale ids
//! stay inert even once their indexes are in use again, and every promise
//! still holds. `Wheel::compact`: the storage shrinks to the pending
//! timers wherever they were; each moved timer is reported under its old
//! and new id, and the old ids never name a timer again.
#![cfg(feature = "alloc")]

use std::collections::BTreeMap;

use wheel_core::{TimerId, Wheel};

mod common;
use common::Rng;

#[test]
fn a_drained_burst_gives_its_memory_back_and_ids_stay_honest() {
    let mut wheel = Wheel::new();
    let early: Vec<_> = (0..10u64)
        .map(|i| (wheel.insert(50_000 + i, i), i))
        .collect();
    let burst: Vec<_> = (0..100_000u64)
        .map(|t| wheel.insert(t % 5_000, t))
        .collect();
    assert!(wheel.capacity() >= 100_010);
    let mut fired = 0;
    while fired < burst.len() {
        let tick = wheel.next_expiration().unwrap();
        fired += wheel.advance(tick).count();
    }
    wheel.shrink_to_fit();
    assert!(wheel.capacity() < 64, "capacity {}", wheel.capacity());
    wheel.validate();
    // New timers take the freed indexes again: the burst's ids must not
    // name them.
    let fresh: Vec<_> = (0..1_000u64).map(|t| wheel.insert(60_000 + t, t)).collect();
    for &id in &burst {
        assert_eq!(wheel.cancel(id), None, "a stale id reached a new timer");
        assert!(!wheel.reschedule(id, 1));
    }
    wheel.validate();
    for (id, i) in early {
        assert_eq!(wheel.deadline(id), Some(50_000 + i));
    }
    assert_eq!(wheel.len(), 1_010);
    let mut order = Vec::new();
    while let Some(tick) = wheel.next_expiration() {
        order.extend(wheel.advance(tick).map(|e| (e.deadline, e.value)));
    }
    assert_eq!(order.len(), 1_010);
    assert!(order.windows(2).all(|w| w[0].0 <= w[1].0));
    drop(fresh);
}

#[test]
fn a_pending_timer_at_a_high_index_keeps_the_storage_up_to_it() {
    let mut wheel = Wheel::new();
    let ids: Vec<_> = (0..1_000u64).map(|t| wheel.insert(t, t)).collect();
    let last = *ids.last().unwrap();
    for &id in &ids[..999] {
        wheel.cancel(id);
    }
    wheel.shrink_to_fit();
    assert!(wheel.capacity() >= 1_000);
    assert_eq!(wheel.cancel(last), Some(999));
    wheel.shrink_to_fit();
    assert_eq!(wheel.capacity(), 0);
    assert!(wheel.is_empty());
    wheel.validate();
}

#[test]
fn a_vacant_stretch_shorter_than_what_is_kept_stays_until_it_is_half() {
    let mut wheel = Wheel::new();
    let ids: Vec<_> = (0..1_000u64).map(|t| wheel.insert(t, t)).collect();
    for &id in &ids[600..] {
        wheel.cancel(id);
    }
    wheel.shrink_to_fit();
    assert_eq!(
        wheel.capacity(),
        1_000,
        "a 400-entry stretch past 600 stays"
    );
    wheel.validate();
    // What comes next takes the stretch's indexes: no growth.
    let refill: Vec<_> = (0..400u64).map(|t| wheel.insert(5_000 + t, t)).collect();
    assert_eq!(wheel.capacity(), 1_000);
    for &id in &ids[600..] {
        assert_eq!(wheel.cancel(id), None, "a stale id reached a new timer");
    }
    for id in refill {
        wheel.cancel(id);
    }
    for &id in &ids[300..600] {
        wheel.cancel(id);
    }
    wheel.shrink_to_fit();
    assert_eq!(wheel.capacity(), 300, "700 vacant past 300: given back");
    wheel.validate();
    for (t, &id) in ids[..300].iter().enumerate() {
        assert_eq!(wheel.deadline(id), Some(t as u64));
    }
}

#[test]
fn compact_leaves_just_the_pending_timers_and_reports_each_move() {
    let mut rng = Rng(7);
    for round in 0..40u64 {
        let mut wheel = Wheel::starting_at(round * 1_000);
        // id → (deadline, value), kept up to date through the moves.
        let mut pending = BTreeMap::new();
        let mut gone = Vec::new();
        let n = 1 + rng.below(3_000);
        for value in 0..n {
            let deadline = round * 1_000 + rng.spread(40);
            pending.insert(wheel.insert(deadline, value), (deadline, value));
        }
        // Cancel a random share, fire some, so that holes lie everywhere.
        let ids: Vec<TimerId> = pending.keys().copied().collect();
        for id in ids {
            if rng.below(3) > 0 {
                pending.remove(&id);
                wheel.cancel(id).unwrap();
                gone.push(id);
            }
        }
        let now = round * 1_000 + rng.spread(12);
        for expired in wheel.advance(now).take(rng.below(50) as usize) {
            assert_eq!(
                pending.remove(&expired.id),
                Some((expired.deadline, expired.value))
            );
            gone.push(expired.id);
        }
        let mut moves = Vec::new();
        wheel.compact(|old, new| moves.push((old, new)));
        wheel.validate();
        assert_eq!(wheel.capacity(), pending.len(), "round {round}");
        for (old, new) in moves {
            let timer = pending.remove(&old).expect("a move of a pending timer");
            assert!(
                pending.insert(new, timer).is_none(),
                "moved onto a pending id"
            );
            gone.push(old);
        }
        for (&id, &(deadline, value)) in &pending {
            assert_eq!(wheel.deadline(id), Some(deadline));
            assert_eq!(wheel.get(id), Some(&value));
        }
        // New timers take indexes that moved timers and cancelled ones left:
        // no old id may name them.
        let fresh: Vec<_> = (0..5_000u64)
            .map(|t| wheel.insert(u64::MAX - t, t))
            .collect();
        for &id in &gone {
            assert_eq!(wheel.get(id), None, "a stale id reached a new timer");
        }
        for id in fresh {
            wheel.cancel(id).unwrap();
        }
        // Everything pending still fires, at its deadline (those already due
        // at once).
        while let Some(tick) = wheel.next_expiration() {
            for expired in wheel.advance(tick) {
                assert_eq!(
                    pending.remove(&expired.id),
                    Some((expired.deadline, expired.value))
                );
                assert!(expired.deadline == tick || expired.deadline <= now);
            }
        }
        assert!(pending.is_empty());
    }
}

#[test]
fn a_panicking_report_of_a_move_leaves_the_wheel_whole() {
    let mut wheel = Wheel::new();
    let ids: Vec<_> = (0..100u64).map(|t| wheel.insert(t, t)).collect();
    for &id in &ids[..50] {
        wheel.cancel(id);
    }
    let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut seen = 0;
        wheel.compact(|_, _| {
            seen += 1;
            assert!(seen < 10, "the user's report panics");
        });
    }));
    assert!(unwound.is_err());
    wheel.validate();
    assert_eq!(wheel.len(), 50);
    let more: Vec<_> = (0..100u64).map(|t| wheel.insert(t, t)).collect();
    wheel.validate();
    assert_eq!(wheel.len(), 150);
    assert_eq!(wheel.advance(1_000).count(), 150);
    drop(more);
}

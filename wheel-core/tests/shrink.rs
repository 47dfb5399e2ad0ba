//! `Wheel::shrink_to_fit`: memory comes back after a burst drains; pending
//! timers keep their ids and deadlines, stale ids stay inert even once
//! their indexes are in use again, and every promise still holds.
#![cfg(feature = "alloc")]

use wheel_core::Wheel;

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

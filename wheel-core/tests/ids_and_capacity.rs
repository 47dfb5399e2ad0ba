//! The promises in wheel-core's crate docs about ids and room: a stale id
//! never touches the timer that reuses its entry, a `FixedWheel` holds
//! exactly `N` timers, and a timer costs at most 32 bytes beyond its value.

use std::mem::size_of;

use wheel_core::{FixedWheel, TimerId};

/// Every way an id goes stale, then what a stale id must not do: touch the
/// new timer that reuses its slab entry.
fn assert_inert(wheel: &mut FixedWheel<u64, 1>, stale: TimerId) {
    let fresh = wheel
        .try_insert(500, 7)
        .expect("the stale timer's entry is free");
    assert_ne!(fresh, stale, "a reused entry repeated its id");
    assert_eq!(wheel.cancel(stale), None);
    assert!(!wheel.reschedule(stale, 1));
    assert_eq!(wheel.deadline(stale), None);
    assert_eq!(wheel.get(stale), None);
    assert_eq!(wheel.get_mut(stale), None);
    wheel.validate();
    assert_eq!(wheel.deadline(fresh), Some(500));
    assert_eq!(wheel.get(fresh), Some(&7));
    assert_eq!(wheel.cancel(fresh), Some(7));
    wheel.validate();
}

#[test]
fn stale_ids_are_inert() {
    let mut wheel: FixedWheel<u64, 1> = FixedWheel::new();

    let fired = wheel.try_insert(10, 1).unwrap();
    assert_eq!(wheel.advance(10).next().map(|e| e.id), Some(fired));
    assert_inert(&mut wheel, fired);

    let cancelled = wheel.try_insert(1 << 40, 2).unwrap();
    assert_eq!(wheel.cancel(cancelled), Some(2));
    assert_inert(&mut wheel, cancelled);

    let drained = wheel.try_insert(1 << 20, 3).unwrap();
    assert_eq!(wheel.drain().map(|e| e.id).collect::<Vec<_>>(), [drained]);
    assert_inert(&mut wheel, drained);

    let cleared = wheel.try_insert(20, 4).unwrap();
    wheel.clear();
    assert_inert(&mut wheel, cleared);

    // Every stale id so far stays stale, whatever reuse happened since.
    for stale in [fired, cancelled, drained, cleared] {
        assert_inert(&mut wheel, stale);
    }
}

fn holds_exactly<const N: usize>() {
    let mut wheel: FixedWheel<usize, N> = FixedWheel::new();
    assert_eq!(wheel.capacity(), N);
    let ids: Vec<_> = (0..N)
        .map(|i| wheel.try_insert(100 + i as u64, i).unwrap())
        .collect();
    assert_eq!(wheel.len(), N);
    assert_eq!(wheel.try_insert(1, 999).unwrap_err().into_inner(), 999);
    wheel.validate();
    if N == 0 {
        return;
    }

    assert_eq!(wheel.advance(100).map(|e| e.value).collect::<Vec<_>>(), [0]);
    let refilled = wheel
        .try_insert(50, 1_000)
        .expect("a fired timer frees its entry");
    assert_eq!(wheel.try_insert(1, 1_001).unwrap_err().into_inner(), 1_001);

    assert_eq!(wheel.cancel(refilled), Some(1_000));
    let last = wheel
        .try_insert(1 << 50, 1_002)
        .expect("a cancelled timer frees its entry");
    assert_eq!(wheel.try_insert(1, 1_003).unwrap_err().into_inner(), 1_003);
    assert_eq!(wheel.len(), N);
    assert_eq!(wheel.get(last), Some(&1_002));
    for (i, &id) in ids.iter().enumerate().skip(1) {
        assert_eq!(wheel.get(id), Some(&i));
    }
    wheel.validate();
}

#[test]
fn fixed_wheel_holds_exactly_n() {
    holds_exactly::<0>();
    holds_exactly::<1>();
    holds_exactly::<2>();
    holds_exactly::<7>();
    holds_exactly::<64>();
}

/// What one more `FixedWheel` slot costs: the private entry type measured
/// through the public one.
fn bytes_per_entry<T>() -> usize {
    (size_of::<FixedWheel<T, 48>>() - size_of::<FixedWheel<T, 16>>()) / 32
}

#[test]
fn at_most_32_bytes_per_timer_beyond_the_value() {
    let measured = [
        ("()", size_of::<()>(), bytes_per_entry::<()>()),
        ("u8", size_of::<u8>(), bytes_per_entry::<u8>()),
        ("u64", size_of::<u64>(), bytes_per_entry::<u64>()),
        // 16-byte alignment: the one kind of value padding can punish most.
        ("u128", size_of::<u128>(), bytes_per_entry::<u128>()),
        (
            "[u8; 24]",
            size_of::<[u8; 24]>(),
            bytes_per_entry::<[u8; 24]>(),
        ),
        (
            "Box<dyn FnOnce()>",
            size_of::<Box<dyn FnOnce()>>(),
            bytes_per_entry::<Box<dyn FnOnce()>>(),
        ),
    ];
    let over: Vec<_> = measured
        .iter()
        .filter(|&&(_, value, entry)| entry > value + 32)
        .collect();
    assert!(
        over.is_empty(),
        "(T, size_of::<T>, bytes per entry) over the bound: {over:?}"
    );
}

//! Entries that move or come back: a full `FixedWheel` refusing, then
//! reusing a freed entry; ids of timers fired, cancelled, drained, compacted
//! or made up from bits; reschedules to the same tick, into the past and of
//! timers due but not yet yielded; `compact` and `shrink_to_fit` while a
//! slot is staged. Ends with random operations, those included, checked
//! against a map of id to deadline after every one.

use std::collections::BTreeMap;

use wheel_core::{Expired, FixedWheel, Storage, TimerId, TimerWheel, Wheel};

mod common;
use common::Rng;

/// Every way a stale id can be used, none of which may touch `fresh`.
fn assert_stale_leaves<T: PartialEq + std::fmt::Debug, S: Storage<T>>(
    wheel: &mut TimerWheel<T, S>,
    stale: TimerId,
    fresh: TimerId,
) {
    let (deadline, len) = (wheel.deadline(fresh), wheel.len());
    assert_eq!(wheel.deadline(stale), None, "{stale:?} names {fresh:?}");
    assert!(wheel.get(stale).is_none());
    assert!(wheel.get_mut(stale).is_none());
    assert!(!wheel.reschedule(stale, 0), "{stale:?} moved {fresh:?}");
    assert!(
        wheel.cancel(stale).is_none(),
        "{stale:?} cancelled {fresh:?}"
    );
    assert_eq!((wheel.deadline(fresh), wheel.len()), (deadline, len));
    wheel.validate();
}

#[test]
fn a_full_fixed_wheel_refuses_and_a_freed_entry_takes_the_next_timer_under_a_new_id() {
    let mut wheel: FixedWheel<u64, 4> = FixedWheel::starting_at(100);
    let ids: Vec<TimerId> = [50, 100, 5_000, u64::MAX]
        .iter()
        .map(|&t| wheel.try_insert(t, t).unwrap())
        .collect();
    for value in [7, 8] {
        let full = wheel.try_insert(200, value).unwrap_err();
        assert_eq!(full.into_inner(), value, "the refused value comes back");
    }
    assert_eq!(wheel.len(), 4);
    wheel.validate();

    // Cancelled: its entry is the only one free, so the next timer gets it.
    assert_eq!(wheel.cancel(ids[2]), Some(5_000));
    let fresh = wheel.try_insert(300, 300).unwrap();
    assert_eq!(fresh.index(), ids[2].index());
    assert_stale_leaves(&mut wheel, ids[2], fresh);
    assert!(wheel.try_insert(1, 1).is_err(), "full again");

    // Fired: the two already due come out; their entries take two more.
    let mut fired: Vec<TimerId> = wheel.advance(100).map(|e| e.id).collect();
    fired.sort();
    let mut due = vec![ids[0], ids[1]];
    due.sort();
    assert_eq!(fired, due);
    let again: Vec<TimerId> = (0..2).map(|k| wheel.try_insert(k, k).unwrap()).collect();
    for (&stale, &new) in due.iter().zip(&again) {
        assert_stale_leaves(&mut wheel, stale, new);
    }
    assert!(wheel.try_insert(2, 2).is_err(), "full again");
    // The stale ids moved nothing: each timer comes out once, at its deadline.
    let mut rest: Vec<u64> = wheel.advance(u64::MAX).map(|e| e.deadline).collect();
    rest.sort_unstable();
    assert_eq!(rest, [0, 1, 300, u64::MAX]);
}

#[test]
fn one_entry_reused_a_thousand_times_never_answers_to_an_old_id() {
    let mut wheel: FixedWheel<u32, 1> = FixedWheel::new();
    let mut old = Vec::new();
    for k in 0..1_000u32 {
        let id = wheel.try_insert(u64::from(k) + 1, k).unwrap();
        assert!(!old.contains(&id), "id {id:?} issued twice");
        for &stale in old.iter().rev().take(8) {
            assert_stale_leaves(&mut wheel, stale, id);
        }
        // Alternate the ways a timer ends.
        match k % 3 {
            0 => assert_eq!(wheel.cancel(id), Some(k)),
            1 => assert_eq!(
                wheel.advance(u64::from(k) + 1).next().map(|e| e.id),
                Some(id)
            ),
            _ => assert_eq!(wheel.drain().next().map(|e| e.id), Some(id)),
        }
        old.push(id);
    }
}

#[test]
fn a_fixed_wheel_of_no_entries_refuses_everything_and_answers_no_id() {
    let mut wheel: FixedWheel<u8, 0> = FixedWheel::new();
    for deadline in [0, 1, u64::MAX] {
        assert_eq!(wheel.try_insert(deadline, 9).unwrap_err().into_inner(), 9);
    }
    assert_eq!(wheel.next_expiration(), None);
    assert_eq!(wheel.peek(), None);
    assert_eq!(wheel.cancel(TimerId::from_bits(0)), None);
    assert_eq!(wheel.advance(u64::MAX).count(), 0);
    assert_eq!(wheel.now(), u64::MAX);
    wheel.validate();
}

/// `TimerId::from_bits` promises a made-up id is harmless: it names some
/// pending timer of the wheel or none, and never panics.
#[test]
fn ids_made_up_from_bits_name_a_pending_timer_or_nothing() {
    let mut wheel: FixedWheel<u64, 8> = FixedWheel::new();
    let ids: Vec<TimerId> = (0..5u64)
        .map(|t| wheel.try_insert(t * 1_000, t).unwrap())
        .collect();
    wheel.cancel(ids[1]);
    let mut rng = Rng(7);
    let mut made_up = vec![0, u64::MAX, u64::MAX - 1, u64::from(u32::MAX), 1 << 32, 3];
    made_up.extend((0..200).map(|_| rng.next()));
    made_up.extend((0..200).map(|_| rng.below(16) | (rng.below(3) << 32)));
    for bits in made_up {
        let id = TimerId::from_bits(bits);
        let named = ids.iter().position(|&live| live == id && id != ids[1]);
        assert_eq!(wheel.deadline(id).is_some(), named.is_some(), "{id:?}");
        assert_eq!(
            wheel.id_at(id.index()).is_some(),
            id.index() < 5 && id.index() != 1
        );
        if named.is_none() {
            assert!(!wheel.reschedule(id, 0));
            assert_eq!(wheel.cancel(id), None);
        }
        wheel.validate();
    }
    assert_eq!(wheel.len(), 4);
}

/// Promise 5: a timer `advance` did not get to yield is still pending, so
/// its id still cancels and reschedules it.
#[test]
fn a_timer_due_but_not_yet_yielded_can_be_cancelled_or_moved_away() {
    for shape in 0..3 {
        let mut wheel = Wheel::new();
        let ids: Vec<TimerId> = [10, 20, 30, 5_000, 70_000]
            .iter()
            .map(|&t| wheel.insert(t, t))
            .collect();
        if shape == 1 {
            wheel.cascade_ahead(2);
        }
        let first = wheel.advance(100_000).next().unwrap();
        assert_eq!(first.deadline, 10);
        // The iterator is dropped: 20 .. 70_000 are all due, none yielded.
        assert_eq!(wheel.next_expiration(), Some(100_000));
        assert_eq!(wheel.cancel(ids[1]), Some(20));
        assert!(
            wheel.reschedule(ids[3], 100_001),
            "due but pending: movable"
        );
        if shape == 2 {
            assert!(wheel.reschedule(ids[2], 100_000), "to the clock: still due");
        }
        wheel.validate();
        let mut rest: Vec<u64> = wheel.advance(0).map(|e| e.deadline).collect();
        rest.sort_unstable();
        let want: &[u64] = if shape == 2 {
            &[70_000, 100_000]
        } else {
            &[30, 70_000]
        };
        assert_eq!(rest, want, "shape {shape}");
        assert_eq!(wheel.peek(), Some((ids[3], 100_001)));
        assert_eq!(
            wheel.advance(100_001).map(|e| e.id).collect::<Vec<_>>(),
            [ids[3]]
        );
        assert!(wheel.is_empty());
    }
}

/// A reschedule to the deadline a timer already has changes nothing it can
/// see: it comes out once, at that tick, on whatever level it was filed.
#[test]
fn rescheduling_to_the_same_tick_keeps_the_timer_due_once_at_it() {
    let deadlines = [1, 63, 64, 4_095, 4_097, 1 << 20, (1 << 40) + 3, u64::MAX];
    for staged in [0, 1, 1_000] {
        let mut wheel = Wheel::new();
        let ids: Vec<TimerId> = deadlines.iter().map(|&t| wheel.insert(t, t)).collect();
        wheel.cascade_ahead(staged);
        for (&id, &t) in ids.iter().zip(&deadlines) {
            assert!(wheel.reschedule(id, t));
            assert!(wheel.reschedule(id, t), "twice");
            wheel.validate();
            assert_eq!(wheel.deadline(id), Some(t));
        }
        let mut seen = Vec::new();
        while let Some(t) = wheel.next_expiration() {
            for expired in wheel.advance(t) {
                assert_eq!(expired.deadline, t, "cascade_ahead({staged})");
                seen.push(expired.id);
            }
            wheel.validate();
        }
        assert_eq!(seen, ids, "cascade_ahead({staged})");
    }
}

/// Promise 4 for timers moved out of a staged slot, out of the due list and
/// off level 0: into the past, to tick 0, and to the clock itself.
#[test]
fn rescheduling_into_the_past_makes_it_due_at_the_next_advance() {
    let mut wheel = Wheel::starting_at(1_000);
    let ids: Vec<TimerId> = (0..40).map(|k| wheel.insert(5_000 + k, k)).collect();
    let low = wheel.insert(1_001, 100);
    let due = wheel.insert(3, 101);
    assert_eq!(wheel.cascade_ahead(25), 25); // some of the 5_000s staged
    let moves = [
        (ids[0], 0),
        (ids[20], 999),
        (ids[39], 1_000),
        (low, 1),
        (due, 2),
    ];
    for (id, t) in moves {
        assert!(wheel.reschedule(id, t));
        wheel.validate();
    }
    assert_eq!(wheel.next_expiration(), Some(1_000));
    let mut fired: Vec<TimerId> = wheel.advance(1_000).map(|e| e.id).collect();
    fired.sort();
    let mut want: Vec<TimerId> = moves.iter().map(|&(id, _)| id).collect();
    want.sort();
    assert_eq!(fired, want);
    assert_eq!(wheel.len(), 37);
    assert_eq!(wheel.advance(5_040).count(), 37);
}

/// `compact` while a slot is part staged and timers are due: each moved
/// timer is reported once, its old id goes stale, the rest keep theirs,
/// and every timer still fires exactly at its deadline.
#[test]
fn compact_while_a_slot_is_staged_renames_only_what_moved_and_loses_nothing() {
    for staged in [0, 17, 1_000] {
        let mut wheel = Wheel::starting_at(2);
        let mut pending = BTreeMap::new();
        for k in 0..300u64 {
            let t = match k % 5 {
                0 => 1,                  // due
                1 => 10 + k % 50,        // level 0
                2 => 5_000 + k,          // one level-2 slot, staged below
                3 => (1 << 30) + k * 99, // far
                _ => 8_200 + k % 7,      // the next level-2 slot
            };
            pending.insert(wheel.insert(t, k), (t, k));
        }
        let ids: Vec<TimerId> = pending.keys().copied().collect();
        for &id in ids.iter().step_by(3) {
            assert!(wheel.cancel(id).is_some());
            pending.remove(&id);
        }
        wheel.cascade_ahead(staged);
        wheel.validate();
        let mut moves = Vec::new();
        wheel.compact(|old, new| moves.push((old, new)));
        wheel.validate();
        assert_eq!(wheel.capacity(), pending.len(), "compact keeps just len()");
        for &(old, new) in &moves {
            let timer = pending.remove(&old).expect("a moved timer was pending");
            assert!(pending.insert(new, timer).is_none(), "{new:?} taken");
            assert_eq!(wheel.deadline(old), None, "{old:?} still live");
        }
        for (&id, &(t, k)) in &pending {
            assert_eq!((wheel.deadline(id), wheel.get(id)), (Some(t), Some(&k)));
        }
        let mut fired = 0;
        while let Some(t) = wheel.next_expiration() {
            for Expired {
                id,
                deadline,
                value,
            } in wheel.advance(t)
            {
                let (want, k) = pending.remove(&id).expect("fired a pending timer");
                assert_eq!((deadline, value), (want, k));
                assert!(deadline == t || deadline <= 2, "{deadline} at {t}");
                fired += 1;
            }
        }
        assert!(pending.is_empty(), "left {pending:?}");
        assert_eq!(fired, 200);
    }
}

#[test]
fn shrink_to_fit_while_a_slot_is_staged_keeps_every_id_and_deadline() {
    let mut wheel = Wheel::new();
    let keep: Vec<TimerId> = (0..50).map(|k| wheel.insert(5_000 + k, k)).collect();
    let burst: Vec<TimerId> = (0..5_000).map(|k| wheel.insert(9_000 + k, k)).collect();
    wheel.cascade_ahead(20);
    for &id in &burst {
        wheel.cancel(id);
    }
    wheel.shrink_to_fit();
    wheel.validate();
    assert!(wheel.capacity() < 1_000, "{}", wheel.capacity());
    let fresh: Vec<TimerId> = (0..10).map(|k| wheel.insert(6_000 + k, k)).collect();
    for (&stale, &new) in burst.iter().zip(&fresh) {
        assert_eq!(stale.index(), new.index(), "the storage was cut back");
        assert_stale_leaves(&mut wheel, stale, new);
    }
    for (k, &id) in keep.iter().enumerate() {
        assert_eq!(wheel.deadline(id), Some(5_000 + k as u64));
    }
    let fired: Vec<u64> = wheel.advance(10_000).map(|e| e.deadline).collect();
    let mut want: Vec<u64> = (5_000..5_050).chain(6_000..6_010).collect();
    want.sort_unstable();
    assert_eq!(fired, want);
}

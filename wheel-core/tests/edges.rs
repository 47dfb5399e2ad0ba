//! Edge cases of wheel-core: deadlines on level boundaries and across level
//! rotations in three geometries, clocks at 0, near 2³⁶ and near `u64::MAX`,
//! and `drain`, `clear`, `get_mut` and `reschedule` in awkward states.
//! `validate()` runs after every mutation.

use std::rc::Rc;

use wheel_core::{FixedWheel, Storage, TimerId, TimerWheel, Wheel};

mod common;
use common::sample;

fn levels(below: usize) -> Vec<u32> {
    sample(&(0..below as u32).collect::<Vec<_>>(), 3)
}

/// Advances to `t` and returns the yielded deadlines in order; every value
/// here is its own deadline, so a mix-up shows.
fn fire<S: Storage<u64>, const SLOTS: usize, const LEVELS: usize>(
    wheel: &mut TimerWheel<u64, S, SLOTS, LEVELS>,
    t: u64,
) -> Vec<u64> {
    let before = wheel.now();
    let fired: Vec<_> = wheel
        .advance(t)
        .map(|expired| {
            assert_eq!(
                expired.value, expired.deadline,
                "{expired:?} from advance({t})"
            );
            expired.deadline
        })
        .collect();
    wheel.validate();
    assert_eq!(
        wheel.now(),
        t.max(before),
        "now after advance({t}) from {before}"
    );
    fired
}

fn filled<const SLOTS: usize, const LEVELS: usize>(
    start: u64,
    deadlines: &[u64],
) -> Wheel<u64, SLOTS, LEVELS> {
    let mut wheel = Wheel::with_geometry(start);
    for &deadline in deadlines {
        let id = wheel.insert(deadline, deadline);
        wheel.validate();
        assert_eq!(wheel.deadline(id), Some(deadline));
    }
    wheel
}

/// Runs one schedule three ways — one sweep to the end of time, tick by tick
/// around each deadline, and the `next_expiration` driver loop — and checks
/// each timer comes out exactly at its deadline.
fn check_schedule<const SLOTS: usize, const LEVELS: usize>(start: u64, deadlines: &[u64]) {
    let geometry = format!("{SLOTS}x{LEVELS} from {start}");
    let mut sorted = deadlines.to_vec();
    sorted.sort_unstable();
    let due = sorted.partition_point(|&deadline| deadline <= start);

    let mut wheel = filled::<SLOTS, LEVELS>(start, deadlines);
    let mut swept = fire(&mut wheel, u64::MAX);
    // Timers due on insertion come out first, in any order.
    let first = due.min(swept.len());
    swept[..first].sort_unstable();
    assert_eq!(swept, sorted, "{geometry}: one sweep");
    assert!(wheel.is_empty());

    // The slowest pass, so Miri skips it: the driver pins the same ticks.
    if !cfg!(miri) {
        let mut wheel = filled::<SLOTS, LEVELS>(start, deadlines);
        let mut at_start = fire(&mut wheel, start);
        at_start.sort_unstable();
        assert_eq!(at_start, sorted[..due], "{geometry}: due on insertion");
        let mut rest = &sorted[due..];
        while let Some(&deadline) = rest.first() {
            let copies = rest.partition_point(|&d| d == deadline);
            assert_eq!(fire(&mut wheel, deadline - 1), [], "{geometry}: early");
            assert_eq!(
                fire(&mut wheel, deadline),
                rest[..copies],
                "{geometry}: at {deadline}"
            );
            rest = &rest[copies..];
        }
        assert!(wheel.is_empty(), "{geometry}: left {wheel:?}");
    }

    let mut wheel = filled::<SLOTS, LEVELS>(start, deadlines);
    let mut at_start = fire(&mut wheel, start);
    at_start.sort_unstable();
    assert_eq!(at_start, sorted[..due], "{geometry}: due on insertion");
    let budget = (LEVELS + 1) * deadlines.len();
    let mut calls = 0;
    let mut driven = Vec::new();
    while let Some(t) = wheel.next_expiration() {
        calls += 1;
        assert!(calls <= budget, "{geometry}: over {budget} driver calls");
        for deadline in fire(&mut wheel, t) {
            assert_eq!(deadline, t, "{geometry}: driver");
            driven.push(deadline);
        }
    }
    assert_eq!(driven, sorted[due..], "{geometry}: driver");
}

/// Deadlines `S^k - 1`, `S^k` and `S^k + 1` ticks after `start` for every
/// level `k`: each alone, then all together.
fn level_boundaries<const SLOTS: usize, const LEVELS: usize>() {
    let starts = [0, 12_345, (1 << 36) - 1, 1 << 62, u64::MAX - 1_000];
    for start in sample(&starts, 2) {
        let mut all = Vec::new();
        for k in levels(LEVELS) {
            let Some(span) = (SLOTS as u64).checked_pow(k) else {
                break;
            };
            for offset in [span - 1, span, span + 1] {
                let Some(deadline) = start.checked_add(offset) else {
                    continue;
                };
                check_schedule::<SLOTS, LEVELS>(start, &[deadline]);
                let wheel = filled::<SLOTS, LEVELS>(start, &[deadline]);
                let next = wheel.next_expiration().expect("one timer pending");
                assert!(
                    start <= next && next <= deadline,
                    "next_expiration {next} for {deadline} from {start}"
                );
                all.push(deadline);
            }
        }
        check_schedule::<SLOTS, LEVELS>(start, &all);
    }
}

#[test]
fn level_boundaries_64_slots() {
    level_boundaries::<64, 11>();
}

#[test]
fn level_boundaries_4_slots() {
    level_boundaries::<4, 32>();
}

#[test]
fn level_boundaries_2_slots() {
    level_boundaries::<2, 64>();
}

/// For every level but the top (which spans all of `u64` and never wraps):
/// a clock just below one of its rotation boundaries, deadlines on both
/// sides. Boundaries: the first, a middle one and the last below `u64::MAX`.
fn every_level_wraps<const SLOTS: usize, const LEVELS: usize>() {
    let slots = SLOTS as u64;
    for k in levels(LEVELS - 1) {
        let span = slots.pow(k);
        let Some(rotation) = slots.checked_pow(k + 1) else {
            break;
        };
        let boundaries = [
            Some(rotation),
            rotation.checked_mul(3),
            Some(u64::MAX - u64::MAX % rotation),
        ];
        for boundary in sample(&boundaries, 2).into_iter().flatten() {
            for start in sample(&[boundary - 1, boundary - span, boundary - rotation / 2], 1) {
                let near = [
                    Some(boundary - 1),
                    Some(boundary),
                    boundary.checked_add(1),
                    boundary.checked_add(span - 1),
                    boundary.checked_add(span),
                    boundary.checked_add(rotation - 1),
                    boundary.checked_add(rotation),
                    boundary.checked_add(rotation + span),
                ];
                let deadlines: Vec<_> = near.iter().flatten().copied().collect();
                check_schedule::<SLOTS, LEVELS>(start, &deadlines);
            }
        }
    }
}

#[test]
fn every_level_wraps_64_slots() {
    every_level_wraps::<64, 11>();
}

#[test]
fn every_level_wraps_4_slots() {
    every_level_wraps::<4, 32>();
}

#[test]
fn every_level_wraps_2_slots() {
    every_level_wraps::<2, 64>();
}

#[test]
fn clock_at_zero() {
    let mut wheel = Wheel::new();
    wheel.insert(0, 0);
    wheel.validate();
    assert_eq!(wheel.next_expiration(), Some(0));
    assert_eq!(fire(&mut wheel, 0), [0]);
    wheel.insert(1, 1);
    assert_eq!(wheel.next_expiration(), Some(1));
    assert_eq!(fire(&mut wheel, 0), []);
    assert_eq!(fire(&mut wheel, 1), [1]);
    check_schedule::<64, 11>(0, &[0, 0, 1, 63, 64, 65, u64::MAX]);
}

#[test]
fn clock_near_2_pow_36() {
    let start = (1 << 36) - 2;
    let mut wheel = filled::<64, 11>(start, &[(1 << 36) + 1]);
    // The timer sits on level 6; the driver wakes where that slot starts.
    assert_eq!(wheel.next_expiration(), Some(1 << 36));
    assert_eq!(fire(&mut wheel, 1 << 36), []);
    assert_eq!(wheel.next_expiration(), Some((1 << 36) + 1));
    assert_eq!(fire(&mut wheel, (1 << 36) + 1), [(1 << 36) + 1]);

    let deadlines = [
        start,
        (1 << 36) - 1,
        1 << 36,
        (1 << 36) + 1,
        (1 << 36) + 64,
        1 << 37,
        (1 << 36) * 3 - 1,
    ];
    check_schedule::<64, 11>(start, &deadlines);
    check_schedule::<4, 32>(start, &deadlines);
    check_schedule::<2, 64>(start, &deadlines);
}

#[test]
fn clock_near_u64_max() {
    let start = u64::MAX - 70;
    let deadlines = [
        u64::MAX,
        u64::MAX - 1,
        u64::MAX - 63,
        u64::MAX - 64,
        start + 1,
    ];
    check_schedule::<64, 11>(start, &deadlines);
    check_schedule::<4, 32>(start, &deadlines);
    check_schedule::<2, 64>(start, &deadlines);

    let mut wheel = filled::<64, 11>(start, &deadlines);
    assert_eq!(fire(&mut wheel, u64::MAX - 1).len(), 4);
    assert_eq!(fire(&mut wheel, u64::MAX), [u64::MAX]);
    assert_eq!(wheel.now(), u64::MAX);

    // With the clock at the end of time every deadline is due.
    for deadline in [u64::MAX, 0, 5] {
        wheel.insert(deadline, deadline);
        wheel.validate();
    }
    assert_eq!(wheel.next_expiration(), Some(u64::MAX));
    let mut fired = fire(&mut wheel, 0);
    fired.sort_unstable();
    assert_eq!(fired, [0, 5, u64::MAX]);
    assert_eq!(fire(&mut wheel, u64::MAX), []);
    assert_eq!(wheel.next_expiration(), None);

    // From tick 0 the last tick is 11 levels away.
    let mut wheel = filled::<64, 11>(0, &[u64::MAX]);
    assert_eq!(fire(&mut wheel, u64::MAX - 1), []);
    assert_eq!(fire(&mut wheel, u64::MAX), [u64::MAX]);

    let mut wheel: FixedWheel<u64, 2> = FixedWheel::starting_at(u64::MAX);
    wheel.try_insert(u64::MAX, u64::MAX).unwrap();
    wheel.validate();
    assert_eq!(fire(&mut wheel, 0), [u64::MAX]);
}

/// A wheel holding timers in every kind of place: due, level 0, higher
/// levels and the top one. Values are `Rc`s so drops can be counted.
fn mixed(token: &Rc<()>) -> (Wheel<Rc<()>>, Vec<TimerId>) {
    let mut wheel = Wheel::starting_at(1_000);
    let ids = [500, 1_000, 1_001, 1_063, 5_000, 1 << 40, u64::MAX]
        .iter()
        .map(|&deadline| {
            let id = wheel.insert(deadline, Rc::clone(token));
            wheel.validate();
            id
        })
        .collect();
    (wheel, ids)
}

fn assert_all_stale<T, S: Storage<T>>(wheel: &mut TimerWheel<T, S>, ids: &[TimerId]) {
    for &id in ids {
        assert!(wheel.cancel(id).is_none(), "{id:?} still cancels");
        assert!(!wheel.reschedule(id, 1), "{id:?} still reschedules");
        assert_eq!(wheel.deadline(id), None);
        assert!(wheel.get(id).is_none());
        assert!(wheel.get_mut(id).is_none());
    }
    wheel.validate();
}

/// After a drain or clear: empty, clock unmoved, and still a working wheel.
fn assert_emptied(wheel: &mut Wheel<Rc<()>>, ids: &[TimerId], token: &Rc<()>) {
    assert!(wheel.is_empty());
    assert_eq!(wheel.len(), 0);
    assert_eq!(wheel.next_expiration(), None);
    assert_eq!(wheel.now(), 1_000);
    assert_eq!(Rc::strong_count(token), 1, "values leaked");
    wheel.validate();
    assert_all_stale(wheel, ids);

    let id = wheel.insert(1_100, Rc::clone(token));
    wheel.validate();
    assert!(!ids.contains(&id));
    assert!(wheel.advance(1_099).next().is_none());
    assert_eq!(wheel.advance(1_100).map(|e| e.id).collect::<Vec<_>>(), [id]);
    wheel.validate();
}

#[test]
fn drain_yields_everything_and_empties() {
    let token = Rc::new(());
    let (mut wheel, ids) = mixed(&token);
    let mut drain = wheel.drain();
    assert_eq!(drain.len(), ids.len());
    let drained: Vec<_> = drain.by_ref().map(|e| (e.id, e.deadline)).collect();
    drop(drain);
    let mut drained_ids: Vec<_> = drained.iter().map(|&(id, _)| id).collect();
    drained_ids.sort_unstable();
    let mut sorted_ids = ids.clone();
    sorted_ids.sort_unstable();
    assert_eq!(drained_ids, sorted_ids);
    let mut deadlines: Vec<_> = drained.iter().map(|&(_, deadline)| deadline).collect();
    deadlines.sort_unstable();
    assert_eq!(
        deadlines,
        [500, 1_000, 1_001, 1_063, 5_000, 1 << 40, u64::MAX]
    );
    assert_emptied(&mut wheel, &ids, &token);
}

#[test]
fn drain_dropped_early_still_empties() {
    let token = Rc::new(());
    let (mut wheel, ids) = mixed(&token);
    let mut drain = wheel.drain();
    assert!(drain.next().is_some());
    assert!(drain.next().is_some());
    drop(drain);
    assert_emptied(&mut wheel, &ids, &token);

    let (mut wheel, ids) = mixed(&token);
    drop(wheel.drain());
    assert_emptied(&mut wheel, &ids, &token);
}

#[test]
fn drain_of_a_full_fixed_wheel_frees_every_entry() {
    let mut wheel: FixedWheel<u64, 3> = FixedWheel::new();
    let ids: Vec<_> = [0, 70, 1 << 33]
        .iter()
        .map(|&deadline| wheel.try_insert(deadline, deadline).unwrap())
        .collect();
    assert_eq!(wheel.drain().count(), 3);
    wheel.validate();
    assert_all_stale(&mut wheel, &ids);
    for deadline in [1, 2, 3] {
        wheel
            .try_insert(deadline, deadline)
            .expect("drained entries are free");
        wheel.validate();
    }
    assert!(wheel.try_insert(4, 4).is_err());
    assert_eq!(fire(&mut wheel, 3), [1, 2, 3]);
}

#[test]
fn clear_drops_everything_and_empties() {
    let token = Rc::new(());
    let (mut wheel, ids) = mixed(&token);
    assert_eq!(Rc::strong_count(&token), 1 + ids.len());
    wheel.clear();
    assert_emptied(&mut wheel, &ids, &token);
    wheel.clear();
    wheel.validate();
    assert!(wheel.is_empty());
}

#[test]
fn get_mut_changes_the_value_not_the_deadline() {
    let mut wheel = Wheel::starting_at(100);
    let due = wheel.insert(50, 1);
    let soon = wheel.insert(101, 2);
    let far = wheel.insert(1 << 30, 3);
    for (id, add) in [(due, 10), (soon, 20), (far, 30)] {
        *wheel.get_mut(id).expect("pending") += add;
        wheel.validate();
    }
    assert_eq!(wheel.deadline(far), Some(1 << 30));
    assert_eq!(wheel.get(soon), Some(&22));
    let fired: Vec<_> = wheel.advance(101).map(|e| (e.id, e.value)).collect();
    assert_eq!(fired, [(due, 11), (soon, 22)]);
    wheel.validate();
    assert_eq!(wheel.get_mut(soon), None);
    assert_eq!(wheel.cancel(far), Some(33));
}

#[test]
fn reschedule_up_down_past_and_to_the_end_of_time() {
    let mut wheel = Wheel::starting_at(1_000);
    let id = wheel.insert(5_000, 0);
    let anchor = wheel.insert(3_000, 1);
    let moves = [
        6_000,
        1 << 40,
        1_001,
        1_064,
        u64::MAX,
        2_000,
        2_000,
        4_095,
        4_096,
    ];
    for deadline in moves {
        assert!(wheel.reschedule(id, deadline));
        wheel.validate();
        assert_eq!(wheel.deadline(id), Some(deadline));
        assert_eq!(wheel.deadline(anchor), Some(3_000));
    }
    assert!(wheel.reschedule(id, 3_001));
    wheel.validate();
    assert!(wheel.advance(2_999).next().is_none());
    assert_eq!(
        wheel.advance(3_000).map(|e| e.id).collect::<Vec<_>>(),
        [anchor]
    );
    assert_eq!(wheel.next_expiration(), Some(3_001));

    // Into the past: due at once, even for an advance that does not move.
    assert!(wheel.reschedule(id, 7));
    wheel.validate();
    assert_eq!(wheel.next_expiration(), Some(3_000));
    let fired: Vec<_> = wheel.advance(0).map(|e| (e.id, e.deadline)).collect();
    assert_eq!(fired, [(id, 7)]);
    wheel.validate();

    // To the end of time and back.
    let id = wheel.insert(4_000, 2);
    assert!(wheel.reschedule(id, u64::MAX));
    wheel.validate();
    assert!(wheel.advance(u64::MAX - 1).next().is_none());
    wheel.validate();
    assert!(wheel.reschedule(id, u64::MAX - 1));
    wheel.validate();
    assert_eq!(wheel.next_expiration(), Some(u64::MAX - 1));
    assert_eq!(
        wheel
            .advance(u64::MAX - 1)
            .map(|e| e.id)
            .collect::<Vec<_>>(),
        [id]
    );
    wheel.validate();
}

#[test]
fn reschedule_out_of_the_due_list() {
    let mut wheel = Wheel::starting_at(0);
    let ids: Vec<_> = [10, 20, 30, 40]
        .iter()
        .map(|&d| wheel.insert(d, d))
        .collect();
    // An abandoned advance leaves 10..=40 on the due list.
    drop(wheel.advance(50));
    wheel.validate();
    assert_eq!(wheel.next_expiration(), Some(50));

    assert!(wheel.reschedule(ids[0], 51)); // due → future
    wheel.validate();
    assert!(wheel.reschedule(ids[1], 5)); // due → still due, earlier
    wheel.validate();
    assert!(wheel.reschedule(ids[2], 50)); // due → due at now exactly
    wheel.validate();
    assert!(wheel.reschedule(ids[3], 1 << 50)); // due → far future
    wheel.validate();

    let mut due: Vec<_> = wheel
        .advance(50)
        .map(|e| (e.id, e.deadline, e.value))
        .collect();
    due.sort_unstable();
    assert_eq!(due, [(ids[1], 5, 20), (ids[2], 50, 30)]);
    wheel.validate();
    assert_eq!(wheel.deadline(ids[1]), None);
    assert_eq!(wheel.deadline(ids[0]), Some(51));
    assert_eq!(
        wheel
            .advance(51)
            .map(|e| (e.id, e.deadline))
            .collect::<Vec<_>>(),
        [(ids[0], 51)]
    );
    assert_eq!(wheel.next_expiration().map(|t| t <= 1 << 50), Some(true));
    assert_eq!(
        wheel.advance(1 << 50).map(|e| e.id).collect::<Vec<_>>(),
        [ids[3]]
    );
    wheel.validate();
}

/// Staging ends when its slot empties, so cascading ahead moves on to the
/// next slot instead of idling until the clock passes the emptied one.
#[test]
fn cascading_ahead_moves_on_when_the_staged_slot_empties() {
    let mut wheel = Wheel::new();
    let first = wheel.insert(5_000, 'a'); // level 2, the slot starting at 4096
    wheel.insert(9_000, 'b'); // level 2, the slot starting at 8192
    assert_eq!(wheel.cascade_ahead(1), 1);
    assert_eq!(wheel.cancel(first), Some('a'));
    wheel.validate();
    assert_eq!(wheel.cascade_ahead(100), 1, "the 8192 slot was not staged");
    wheel.validate();
    assert_eq!(wheel.next_expiration(), Some(8_192));
    let fired: Vec<_> = wheel
        .advance(9_000)
        .map(|e| (e.deadline, e.value))
        .collect();
    assert_eq!(fired, [(9_000, 'b')]);
}

/// `id_at` gives back the id of whatever timer is kept at an index: the
/// pending one, nothing once it is gone, and a newer timer once the entry is
/// reused; indexes stay clear of the two values callers keep as sentinels.
fn id_at_follows_the_entry<S: Storage<u64>>(mut wheel: TimerWheel<u64, S>) {
    let a = wheel.try_insert(10, 10).unwrap();
    let b = wheel.try_insert(20, 20).unwrap();
    assert_ne!(a.index(), b.index());
    assert_eq!(wheel.id_at(a.index()), Some(a));
    assert_eq!(wheel.id_at(b.index()), Some(b));
    assert_eq!(wheel.id_at(u32::MAX), None);
    assert_eq!(wheel.id_at(u32::MAX - 1), None);
    assert_eq!(wheel.cancel(a), Some(10));
    assert_eq!(wheel.id_at(a.index()), None);
    let c = wheel.try_insert(30, 30).unwrap();
    assert_eq!(c.index(), a.index(), "the vacant entry is reused");
    assert_eq!(wheel.id_at(a.index()), Some(c));
    assert_ne!(c, a, "the old id stays stale");
    assert_eq!(fire(&mut wheel, 20), [20]);
    assert_eq!(wheel.id_at(b.index()), None);
    for id in [a, b, c] {
        assert!(id.index() < u32::MAX - 1);
    }
    wheel.validate();
}

#[test]
fn id_at_in_growable_and_fixed_wheels() {
    id_at_follows_the_entry(Wheel::new());
    id_at_follows_the_entry(FixedWheel::<u64, 4>::new());
}

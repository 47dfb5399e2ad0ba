//! Ticks at the far ends, for all three wheels: two hundred years of
//! milliseconds in one `advance`, deadlines at 0 and `u64::MAX` from every
//! clock, advances to ticks before the clock, and an `advance` dropped half
//! way followed by one into the past. `BucketWheel::retain` is tried where
//! a cascade leaves things: a slot part staged and a due bucket not drained.

use wheel_core::{BucketWheel, FixedWheel, Storage, TimerWheel, Wheel};

mod common;
use common::Rng;

/// Two hundred years of milliseconds.
const CENTURIES: u64 = 200 * 365 * 24 * 3_600 * 1_000;
/// A wall clock in milliseconds since 1970, about 2023.
const EPOCH_MS: u64 = 1_700_000_000_000;

/// Deadlines over every scale up to two centuries from `start`, a few
/// beyond, and some in the past; values are their deadlines.
fn deadlines(start: u64, seed: u64) -> Vec<u64> {
    let mut rng = Rng(seed);
    let mut all = vec![
        0,
        start,
        start + 1,
        start + CENTURIES,
        start + CENTURIES + 1,
        u64::MAX,
    ];
    all.extend((0..400).map(|_| start + rng.below(CENTURIES)));
    all.extend((0..200).map(|_| start + rng.spread(43)));
    all.extend((0..20).map(|_| start - rng.spread(40)));
    all
}

/// One advance across two centuries: everything due by then comes out,
/// those already due first, then the rest in deadline order, and exactly
/// what is later stays.
fn one_advance_across_centuries<S: Storage<u64>, const SLOTS: usize, const LEVELS: usize>(
    mut wheel: TimerWheel<u64, S, SLOTS, LEVELS>,
) {
    let start = wheel.now();
    let all = deadlines(start, start ^ SLOTS as u64);
    for &t in &all {
        wheel.try_insert(t, t).expect("room for every timer");
    }
    let target = start + CENTURIES;
    let fired: Vec<u64> = wheel.advance(target).map(|e| e.deadline).collect();
    wheel.validate();
    let already = fired.iter().take_while(|&&t| t <= start).count();
    assert!(fired[already..].is_sorted(), "{SLOTS} slots: out of order");
    assert!(fired[already..].iter().all(|&t| t > start && t <= target));
    let mut want: Vec<u64> = all.iter().copied().filter(|&t| t <= target).collect();
    want.sort_unstable();
    let mut got = fired.clone();
    got.sort_unstable();
    assert_eq!(got, want, "{SLOTS} slots");
    assert_eq!(wheel.now(), target);
    assert_eq!(wheel.len(), all.len() - want.len(), "the later ones stay");
    let later = all.iter().copied().filter(|&t| t > target).min();
    assert_eq!(wheel.peek().map(|(_, t)| t), later);
    let next = wheel.next_expiration().unwrap();
    assert!(next > target && Some(next) <= later, "{next}");
}

#[test]
fn two_hundred_years_of_milliseconds_in_one_advance_on_every_wheel() {
    one_advance_across_centuries(Wheel::<u64>::starting_at(EPOCH_MS));
    one_advance_across_centuries(Wheel::<u64, 2, 64>::with_geometry(EPOCH_MS));
    one_advance_across_centuries(Wheel::<u64, 32, 13>::with_geometry(1 << 44));
    let fixed: Box<FixedWheel<u64, 700>> = Box::new(FixedWheel::starting_at(EPOCH_MS));
    one_advance_across_centuries(*fixed);
    let small: Box<FixedWheel<u64, 700, 8, 22>> = Box::new(FixedWheel::with_geometry(EPOCH_MS));
    one_advance_across_centuries(*small);

    let mut bucket = BucketWheel::starting_at(EPOCH_MS);
    let all = deadlines(EPOCH_MS, 5);
    for &t in &all {
        bucket.insert(t, t);
    }
    let target = EPOCH_MS + CENTURIES;
    let fired: Vec<u64> = bucket.advance(target).map(|(t, _)| t).collect();
    bucket.validate();
    let already = fired.iter().take_while(|&&t| t <= EPOCH_MS).count();
    assert!(fired[already..].is_sorted(), "bucket: out of order");
    assert_eq!(fired.len(), all.iter().filter(|&&t| t <= target).count());
    let later = all.iter().copied().filter(|&t| t > target).min().unwrap();
    assert_eq!(bucket.peek(), Some((later, &later)));
}

/// `u64::MAX` is a deadline like any other, from a clock at 0, in the
/// middle, one short of it and at it; 0 is due from any clock but 0's.
#[test]
fn the_largest_tick_and_tick_zero_from_every_clock() {
    for start in [0, 1, 1 << 63, u64::MAX - 64, u64::MAX - 1, u64::MAX] {
        let mut wheel: FixedWheel<u64, 4> = FixedWheel::starting_at(start);
        let last = wheel.try_insert(u64::MAX, u64::MAX).unwrap();
        let first = wheel.try_insert(0, 0).unwrap();
        wheel.validate();
        let due_now = usize::from(start == u64::MAX) + 1;
        let next = wheel.next_expiration().unwrap();
        assert_eq!(next, start, "0 is due from {start}");
        let (id, t) = wheel.peek().unwrap();
        if start < u64::MAX {
            assert_eq!((id, t), (first, 0), "from {start}");
        }
        assert_eq!(wheel.advance(start).count(), due_now, "from {start}");
        if start < u64::MAX {
            assert_eq!(wheel.peek(), Some((last, u64::MAX)));
            assert_eq!(wheel.advance(u64::MAX - 1).count(), 0, "early from {start}");
            assert_eq!(
                wheel.advance(u64::MAX).map(|e| e.id).collect::<Vec<_>>(),
                [last]
            );
        }
        assert!(wheel.is_empty());
        assert_eq!((wheel.deadline(first), wheel.deadline(last)), (None, None));
        assert_eq!(wheel.now(), u64::MAX);
        // Past the end of time every deadline is due, and stays so.
        wheel.try_insert(5, 5).unwrap();
        assert_eq!(
            wheel.advance(3).map(|e| e.deadline).collect::<Vec<_>>(),
            [5]
        );
        assert_eq!(wheel.now(), u64::MAX);
    }
}

/// Promise 1: `advance(t)` with `t` before the clock yields what is due
/// by the clock, inserted into the past or rescheduled there since, and
/// leaves the clock where it was.
#[test]
fn an_advance_to_a_tick_before_the_clock_yields_what_is_due_and_moves_nothing() {
    let mut wheel = Wheel::new();
    let late = wheel.insert(1_000, 1_000);
    wheel.insert(10, 10);
    assert_eq!(
        wheel.advance(500).map(|e| e.deadline).collect::<Vec<_>>(),
        [10]
    );
    assert_eq!(wheel.advance(100).count(), 0);
    assert_eq!(wheel.now(), 500);
    wheel.insert(300, 300);
    wheel.insert(500, 500);
    wheel.insert(501, 501);
    assert!(wheel.reschedule(late, 499));
    let mut fired: Vec<u64> = wheel.advance(0).map(|e| e.deadline).collect();
    fired.sort_unstable();
    assert_eq!(fired, [300, 499, 500]);
    assert_eq!(wheel.now(), 500);
    assert_eq!(wheel.next_expiration(), Some(501));

    let mut bucket = BucketWheel::new();
    bucket.insert(1_000, 1_000);
    bucket.insert(10, 10);
    assert_eq!(bucket.advance(500).count(), 1);
    assert_eq!(bucket.advance(100).count(), 0);
    bucket.insert(300, 300);
    bucket.insert(501, 501);
    assert_eq!(bucket.advance(0).collect::<Vec<_>>(), [(300, 300)]);
    assert_eq!(bucket.now(), 500);
    assert_eq!(bucket.next_expiration(), Some(501));
}

/// Promise 5 with an advance across several levels dropped after a few
/// timers: the rest come out first from the next advance, even one to a
/// tick before the clock, and nothing later than the old target does.
#[test]
fn an_advance_dropped_half_way_leaves_the_rest_for_an_advance_into_the_past() {
    let all: Vec<u64> = (1..=30u64)
        .map(|k| k * k * k * 997)
        .chain([u64::MAX])
        .collect();
    let target = 20 * 20 * 20 * 997;
    for taken in [0, 1, 7, 19] {
        let mut wheel = Wheel::new();
        let mut bucket = BucketWheel::new();
        for &t in &all {
            wheel.insert(t, t);
            bucket.insert(t, t);
        }
        let first: Vec<u64> = wheel
            .advance(target)
            .take(taken)
            .map(|e| e.deadline)
            .collect();
        let first_bucket: Vec<u64> = bucket.advance(target).take(taken).map(|(t, _)| t).collect();
        assert_eq!(first, all[..taken]);
        assert_eq!(first_bucket, all[..taken]);
        assert_eq!((wheel.now(), bucket.now()), (target, target));
        wheel.validate();
        bucket.validate();
        let mut rest: Vec<u64> = wheel.advance(1).map(|e| e.deadline).collect();
        let mut rest_bucket: Vec<u64> = bucket.advance(1).map(|(t, _)| t).collect();
        rest.sort_unstable();
        rest_bucket.sort_unstable();
        assert_eq!(rest, all[taken..20], "took {taken}");
        assert_eq!(rest_bucket, all[taken..20], "bucket, took {taken}");
        assert_eq!(wheel.len(), 11);
        assert_eq!(bucket.len(), 11);
    }
}

/// `retain` keeps the promises for what it keeps, wherever a cascade left
/// the timers: in a due bucket an advance did not drain, in a slot part
/// staged, and on the levels below.
#[test]
fn retain_after_a_dropped_advance_and_in_a_staged_slot_keeps_the_order() {
    let mut wheel = BucketWheel::new();
    let mut rng = Rng(11);
    let mut all: Vec<u64> = (0..3_000).map(|_| rng.below(20_000)).collect();
    all.extend(5_000..5_200); // one crowded level-2 slot
    for &t in &all {
        wheel.insert(t, t);
    }
    let yielded: Vec<u64> = wheel.advance(3_000).take(10).map(|(t, _)| t).collect();
    assert!(wheel.cascade_ahead(150) > 0, "the 4096 slot part staged");
    wheel.validate();
    let dropped = wheel.retain(|deadline, &value| {
        assert_eq!(deadline, value);
        value % 3 != 0
    });
    wheel.validate();
    let mut pending = all.clone();
    for t in &yielded {
        let at = pending.iter().position(|p| p == t).unwrap();
        pending.swap_remove(at);
    }
    let mut want: Vec<u64> = pending.iter().copied().filter(|&t| t % 3 != 0).collect();
    want.sort_unstable();
    assert_eq!(dropped, pending.len() - want.len());
    assert_eq!(wheel.len(), want.len());
    let mut fired = Vec::new();
    while let Some(t) = wheel.next_expiration() {
        let peeked = wheel.peek().map(|(d, _)| d);
        let batch: Vec<u64> = wheel.advance(t).map(|(d, _)| d).collect();
        if t > 3_000 {
            assert!(batch.iter().all(|&d| d == t), "{batch:?} at {t}");
            if let Some(&d) = batch.first() {
                assert_eq!(peeked, Some(d));
            }
        }
        fired.extend(batch);
    }
    fired.sort_unstable();
    assert_eq!(fired, want);
}

/// Random inserts, advances (dropped part way, into the past, across
/// centuries), `retain` and `cascade_ahead` on a bucket wheel, with `peek`
/// and `next_expiration` held to their docs after each: the fuzz target
/// checks what comes out, not what `peek` says.
#[test]
fn a_bucket_wheel_peeks_at_what_comes_out_next_through_retains_and_drops() {
    for seed in 0..if cfg!(miri) { 2 } else { 40 } {
        let mut rng = Rng(seed);
        let start = [0, EPOCH_MS, u64::MAX - CENTURIES][seed as usize % 3];
        let mut wheel = BucketWheel::starting_at(start);
        // value -> deadline of each pending timer.
        let mut pending = std::collections::BTreeMap::new();
        let mut staged = false;
        for serial in 0..400u64 {
            let now = wheel.now();
            match rng.below(10) {
                0..=4 => {
                    let deadline = match rng.below(6) {
                        0 => now.saturating_sub(rng.spread(20)),
                        1 => now.saturating_add(CENTURIES),
                        _ => now.saturating_add(rng.spread(30)),
                    };
                    wheel.insert(deadline, serial);
                    pending.insert(serial, deadline);
                }
                5 | 6 => {
                    let t = match rng.below(4) {
                        0 => now.saturating_sub(rng.spread(20)),
                        1 => wheel.next_expiration().unwrap_or(now),
                        _ => now.saturating_add(rng.spread(32)),
                    };
                    let peeked = wheel.peek().map(|(d, &v)| (d, v));
                    let take = if rng.below(2) == 0 {
                        rng.below(5) as usize
                    } else {
                        usize::MAX
                    };
                    let fired: Vec<(u64, u64)> = wheel.advance(t).take(take).collect();
                    if let Some(&(deadline, value)) = fired.first() {
                        let peeked = peeked.expect("peek saw nothing");
                        assert_eq!(peeked.0, deadline, "seed {seed}: peek's deadline");
                        if !staged {
                            assert_eq!(peeked.1, value, "seed {seed}: peek's timer");
                        }
                    }
                    for (deadline, value) in fired {
                        assert_eq!(pending.remove(&value), Some(deadline), "seed {seed}");
                        assert!(deadline <= t.max(now), "seed {seed}: early");
                    }
                }
                7 => {
                    let m = rng.below(4) + 2;
                    let dropped = wheel.retain(|_, &v| v % m != 0);
                    let before = pending.len();
                    pending.retain(|&v, _| v % m != 0);
                    assert_eq!(dropped, before - pending.len(), "seed {seed}");
                }
                _ => staged |= wheel.cascade_ahead(rng.below(60) as usize) > 0,
            }
            wheel.validate();
            assert_eq!(wheel.len(), pending.len(), "seed {seed}");
            let now = wheel.now();
            let least = pending.values().copied().min();
            match (wheel.peek(), least) {
                (None, None) => assert_eq!(wheel.next_expiration(), None),
                (Some((deadline, value)), Some(least)) => {
                    assert_eq!(pending.get(value), Some(&deadline), "seed {seed}");
                    if least > now {
                        assert_eq!(deadline, least, "seed {seed}: peek not the least");
                    } else {
                        assert!(deadline <= now, "seed {seed}: peek not a due timer");
                    }
                    let next = wheel.next_expiration().unwrap();
                    assert!(now <= next && next <= now.max(least), "seed {seed}: {next}");
                }
                (peeked, least) => panic!("seed {seed}: peek {peeked:?}, least {least:?}"),
            }
        }
    }
}

//! The promises in wheel-core's crate docs, one test (or a few) each, checked
//! against a plain map of what should be pending, on several geometries and
//! starting clocks. Ids, capacity and memory are in `ids_and_capacity.rs`.

use std::collections::{BTreeMap, BTreeSet};

use wheel_core::{
    ArrayStorage, Expired, FixedWheel, Storage, TimerId, TimerWheel, VecStorage, Wheel,
};

mod common;
use common::{sample, Rng};

/// Miri is about a thousand times slower: the same shapes, fewer of them.
fn scaled(native: usize) -> usize {
    if cfg!(miri) {
        native.div_ceil(100)
    } else {
        native
    }
}

/// A wheel beside the map of what must be pending in it, id → (deadline,
/// value). Every mutation goes through here and is checked on the spot.
struct Checked<S: Storage<u64>, const SLOTS: usize = 64, const LEVELS: usize = 11> {
    wheel: TimerWheel<u64, S, SLOTS, LEVELS>,
    pending: BTreeMap<TimerId, (u64, u64)>,
    next_value: u64,
}

type Growable<const SLOTS: usize = 64, const LEVELS: usize = 11> =
    Checked<VecStorage<u64>, SLOTS, LEVELS>;

impl<S: Storage<u64> + Default, const SLOTS: usize, const LEVELS: usize> Checked<S, SLOTS, LEVELS> {
    fn starting_at(now: u64) -> Self {
        let checked = Self {
            wheel: TimerWheel::with_geometry(now),
            pending: BTreeMap::new(),
            next_value: 0,
        };
        checked.check();
        checked
    }

    fn insert(&mut self, deadline: u64) -> TimerId {
        let value = self.next_value;
        self.next_value += 1;
        let id = self.wheel.try_insert(deadline, value).expect("room");
        assert!(
            self.pending.insert(id, (deadline, value)).is_none(),
            "{id:?} handed out while still pending"
        );
        self.check();
        id
    }

    fn cancel(&mut self, id: TimerId) {
        let expected = self.pending.remove(&id).map(|(_, value)| value);
        assert_eq!(self.wheel.cancel(id), expected, "cancel({id:?})");
        self.check();
    }

    fn reschedule(&mut self, id: TimerId, deadline: u64) {
        let live = match self.pending.get_mut(&id) {
            Some(entry) => {
                entry.0 = deadline;
                true
            }
            None => false,
        };
        assert_eq!(
            self.wheel.reschedule(id, deadline),
            live,
            "reschedule({id:?}, {deadline})"
        );
        self.check();
    }

    fn advance(&mut self, t: u64) -> Vec<Expired<u64>> {
        self.advance_taking(t, usize::MAX)
    }

    /// Runs `advance(t)`, keeps at most `take` of what it yields, drops it,
    /// and checks promises 1, 2, 3 and 5 on the result.
    fn advance_taking(&mut self, t: u64, take: usize) -> Vec<Expired<u64>> {
        let before = self.wheel.now();
        let target = t.max(before);
        let already_due = self.due_by(before);
        let should_fire = self.due_by(target);

        let fired: Vec<_> = self.wheel.advance(t).take(take).collect();

        assert_eq!(
            self.wheel.now(),
            target,
            "now after advance({t}) from {before}"
        );
        // Promise 3: the already-due ones first, in any order…
        let split = already_due.len().min(fired.len());
        for expired in &fired[..split] {
            assert!(
                already_due.contains(&expired.id),
                "advance({t}) from {before}: {expired:?} came out before an already-due timer"
            );
        }
        // …then non-decreasing deadlines.
        for pair in fired[split..].windows(2) {
            assert!(
                pair[0].deadline <= pair[1].deadline,
                "advance({t}) from {before}: {} came out before {}",
                pair[0].deadline,
                pair[1].deadline
            );
        }
        for expired in &fired {
            assert!(
                expired.deadline <= target,
                "advance({t}) from {before} yielded {expired:?}, due later"
            );
            assert_eq!(
                self.pending.remove(&expired.id),
                Some((expired.deadline, expired.value)),
                "advance({t}) from {before} yielded {expired:?}, which was not pending as such"
            );
        }
        if fired.len() < take {
            // The iterator ran dry, so promise 1 applies in full.
            let yielded: BTreeSet<_> = fired.iter().map(|expired| expired.id).collect();
            assert_eq!(yielded, should_fire, "advance({t}) from {before}");
        }
        self.check();
        fired
    }

    /// Loops `advance(next_expiration())` until the wheel is empty, checking
    /// promise 6; returns how many calls it took.
    fn drive(&mut self) -> usize {
        let budget = (LEVELS + 1) * self.pending.len();
        let mut calls = 0;
        while let Some(t) = self.wheel.next_expiration() {
            calls += 1;
            assert!(
                calls <= budget,
                "more than {budget} calls for {} timers",
                budget / (LEVELS + 1)
            );
            let fired = self.advance(t);
            for expired in &fired {
                assert_eq!(expired.deadline, t, "{expired:?} came out of advance({t})");
            }
            assert!(
                !fired.is_empty() || self.wheel.next_expiration() != Some(t),
                "advance({t}) made no progress"
            );
        }
        assert!(self.pending.is_empty(), "{:?} never came out", self.pending);
        calls
    }

    fn due_by(&self, tick: u64) -> BTreeSet<TimerId> {
        self.pending
            .iter()
            .filter(|(_, &(deadline, _))| deadline <= tick)
            .map(|(&id, _)| id)
            .collect()
    }

    /// The wheel's own invariants, then agreement with the map, including
    /// the bounds of promise 6 on `next_expiration`.
    fn check(&self) {
        self.wheel.validate();
        assert_eq!(self.wheel.len(), self.pending.len());
        assert_eq!(self.wheel.is_empty(), self.pending.is_empty());
        let now = self.wheel.now();
        let earliest = self.pending.values().map(|&(deadline, _)| deadline).min();
        match (self.wheel.next_expiration(), earliest) {
            (None, None) => {}
            (Some(t), Some(earliest)) => assert!(
                now <= t && t <= now.max(earliest),
                "next_expiration {t} outside {now}..={}",
                now.max(earliest)
            ),
            (next, earliest) => {
                panic!("next_expiration {next:?} with earliest pending deadline {earliest:?}")
            }
        }
        for (&id, &(deadline, value)) in &self.pending {
            assert_eq!(self.wheel.deadline(id), Some(deadline), "deadline({id:?})");
            assert_eq!(self.wheel.get(id), Some(&value), "get({id:?})");
        }
    }

    fn random_pending(&self, rng: &mut Rng) -> Option<TimerId> {
        let skip = rng.below(self.pending.len().max(1) as u64) as usize;
        self.pending.keys().nth(skip).copied()
    }
}

fn deadlines(fired: &[Expired<u64>]) -> Vec<u64> {
    fired.iter().map(|expired| expired.deadline).collect()
}

/// Deadlines that stress the arithmetic: `u64::MAX`, around 2³⁶, around
/// every power of 64, each as an absolute tick and as an offset from `start`,
/// plus random ones spread over every bit length; only those ≥ `start`.
fn awkward_deadlines(start: u64, random: usize, rng: &mut Rng) -> Vec<u64> {
    let mut deadlines = vec![u64::MAX, u64::MAX - 1, start, start.saturating_add(1)];
    deadlines.extend([(1 << 36) - 1, 1 << 36, (1 << 36) + 1, (1 << 36) + 63]);
    for k in 0..=10 {
        let power = 64u64.pow(k);
        for tick in [power - 1, power, power + 1] {
            deadlines.push(tick);
            deadlines.push(start.saturating_add(tick));
        }
    }
    deadlines.extend((0..random).map(|_| start.saturating_add(rng.spread(64))));
    deadlines.retain(|&deadline| deadline >= start);
    sample(&deadlines, 8)
}

#[test]
fn advance_yields_exactly_what_is_due_and_moves_the_clock() {
    let mut c = Growable::<64, 11>::starting_at(100);
    for deadline in [100, 151, 150, 5_000, 1 << 40] {
        c.insert(deadline);
    }
    assert_eq!(deadlines(&c.advance(150)), [100, 150]);
    assert_eq!(c.wheel.now(), 150);

    // t < now(): the clock stays, nothing new comes due…
    assert!(c.advance(149).is_empty());
    assert_eq!(c.wheel.now(), 150);
    // …but a timer inserted in the past still comes out.
    c.insert(120);
    assert_eq!(deadlines(&c.advance(10)), [120]);
    assert_eq!(c.wheel.now(), 150);

    assert_eq!(deadlines(&c.advance(5_000)), [151, 5_000]);
    assert_eq!(deadlines(&c.advance(u64::MAX)), [1 << 40]);
    assert_eq!(c.wheel.now(), u64::MAX);
}

/// Random inserts (some in the past), cancels, reschedules, full and
/// abandoned advances, forwards and backwards; `Checked` asserts the
/// promises after each.
fn random_operations<S: Storage<u64> + Default, const SLOTS: usize, const LEVELS: usize>(
    seed: u64,
    start: u64,
    steps: usize,
) {
    let mut rng = Rng(seed);
    let mut c = Checked::<S, SLOTS, LEVELS>::starting_at(start);
    for _ in 0..steps {
        let now = c.wheel.now();
        match rng.below(10) {
            0..=3 => {
                let deadline = match rng.below(4) {
                    0 => now.saturating_sub(rng.spread(20)),
                    1 => now.saturating_add(rng.spread(64)),
                    _ => now.saturating_add(rng.spread(20)),
                };
                if c.pending.len() < c.wheel.capacity() {
                    c.insert(deadline);
                }
            }
            4 => {
                if let Some(id) = c.random_pending(&mut rng) {
                    c.cancel(id);
                }
            }
            5 => {
                let deadline = now
                    .saturating_add(rng.spread(24))
                    .saturating_sub(rng.spread(8));
                if let Some(id) = c.random_pending(&mut rng) {
                    c.reschedule(id, deadline);
                }
            }
            6 => {
                let take = rng.below(4) as usize;
                c.advance_taking(now.saturating_add(rng.spread(22)), take);
            }
            7 => {
                c.advance(now.saturating_sub(rng.spread(10)));
            }
            _ => {
                c.advance(now.saturating_add(rng.spread(18)));
            }
        }
    }
    // The driver's "out at exactly t" holds for timers not yet due.
    c.advance(c.wheel.now());
    c.drive();
}

#[test]
fn random_operations_keep_the_promises() {
    let runs: [fn(u64, usize); 7] = [
        |seed, steps| random_operations::<VecStorage<u64>, 64, 11>(seed, 0, steps),
        |seed, steps| random_operations::<VecStorage<u64>, 2, 64>(seed, seed, steps),
        |seed, steps| random_operations::<VecStorage<u64>, 64, 11>(seed, (1 << 36) - 1_000, steps),
        |seed, steps| random_operations::<ArrayStorage<u64, 48>, 64, 11>(seed, seed << 30, steps),
        |seed, steps| random_operations::<VecStorage<u64>, 4, 32>(seed, seed, steps),
        |seed, steps| random_operations::<VecStorage<u64>, 8, 22>(seed, seed, steps),
        |seed, steps| {
            random_operations::<VecStorage<u64>, 64, 11>(seed, u64::MAX - (1 << 20), steps)
        },
    ];
    for seed in 0..scaled(8) as u64 {
        for run in sample(&runs, 3) {
            run(seed, scaled(3_000));
        }
    }
}

#[test]
fn nothing_comes_out_before_its_deadline() {
    let mut rng = Rng(2);
    for start in sample(&[0, 1_000, (1 << 36) - 7, u64::MAX - 100_000], 2) {
        for deadline in awkward_deadlines(start, scaled(40), &mut rng) {
            let mut wheel = Wheel::starting_at(start);
            let id = wheel.insert(deadline, ());
            if deadline > start {
                assert!(
                    wheel.advance(deadline - 1).next().is_none(),
                    "{deadline} came out at {} (start {start})",
                    deadline - 1
                );
                wheel.validate();
            }
            let fired: Vec<_> = wheel
                .advance(deadline)
                .map(|e| (e.id, e.deadline))
                .collect();
            assert_eq!(fired, [(id, deadline)], "start {start}");
            wheel.validate();
        }
    }

    // Many timers, advanced in uneven steps: every yielded deadline ≤ t.
    let mut c = Growable::<64, 11>::starting_at(0);
    for _ in 0..scaled(500) {
        c.insert(rng.spread(24));
    }
    while !c.pending.is_empty() {
        let t = c.wheel.now() + rng.spread(24);
        for expired in c.advance(t) {
            assert!(
                expired.deadline <= t,
                "{expired:?} came out of advance({t})"
            );
        }
    }
}

/// Past-due timers first, then the rest sorted, with equal deadlines and
/// deadlines on several levels.
fn order_holds<S: Storage<u64> + Default, const SLOTS: usize, const LEVELS: usize>(
    start: u64,
    count: usize,
    seed: u64,
) {
    let mut rng = Rng(seed);
    let mut c = Checked::<S, SLOTS, LEVELS>::starting_at(start);
    let mut future = Vec::new();
    for i in 0..count {
        // Every fifth deadline repeats an earlier one.
        let deadline = match future.len() {
            len if len > 0 && i % 5 == 0 => future[rng.below(len as u64) as usize],
            _ => start + 1 + rng.spread(22),
        };
        c.insert(deadline);
        future.push(deadline);
    }
    let past: BTreeSet<_> = (0..count / 10)
        .map(|_| c.insert(start - rng.below(start + 1)))
        .collect();

    let fired = c.advance(u64::MAX);
    let (first, rest) = fired.split_at(past.len());
    assert_eq!(first.iter().map(|e| e.id).collect::<BTreeSet<_>>(), past);
    future.sort_unstable();
    assert_eq!(deadlines(rest), future);
}

#[test]
fn already_due_first_then_non_decreasing_deadlines() {
    let count = scaled(1_000);
    let runs: [fn(usize, u64); 4] = [
        |count, seed| order_holds::<VecStorage<u64>, 64, 11>(1 << 20, count, seed),
        |count, seed| order_holds::<VecStorage<u64>, 64, 11>((1 << 36) - 5, count, seed),
        |count, seed| order_holds::<VecStorage<u64>, 4, 32>(1 << 20, count, seed),
        |count, seed| order_holds::<VecStorage<u64>, 2, 64>(12_345, count, seed),
    ];
    for seed in 0..scaled(3) as u64 {
        for run in sample(&runs, 2) {
            run(count, seed);
        }
    }
    order_holds::<ArrayStorage<u64, 128>, 64, 11>(77, scaled(110), 9);

    // In steps too: an early stop leaves due timers that come out first, and
    // equal deadlines come out together.
    let mut c = Growable::<64, 11>::starting_at(0);
    for deadline in [70, 64, 64, 4_096, 4_095, 4_097, 4_096, 200_000, 64] {
        c.insert(deadline);
    }
    assert_eq!(deadlines(&c.advance_taking(4_096, 2)), [64, 64]);
    let next = c.advance(5_000);
    let mut due_first = deadlines(&next[..5]);
    due_first.sort_unstable();
    assert_eq!(due_first, [64, 70, 4_095, 4_096, 4_096]);
    assert_eq!(deadlines(&next[5..]), [4_097]);
}

#[test]
fn inserting_or_rescheduling_into_the_past_is_due() {
    for t_after in [1_000, 999, 0] {
        let mut c = Growable::<64, 11>::starting_at(1_000);
        let at_now = c.insert(1_000);
        let long_ago = c.insert(3);
        let later = c.insert(1_001);
        let moved_back = c.insert(2_000);
        c.reschedule(moved_back, 999);
        let moved_to_now = c.insert(1 << 40);
        c.reschedule(moved_to_now, 1_000);
        assert_eq!(c.wheel.next_expiration(), Some(1_000));

        let fired: BTreeSet<_> = c.advance(t_after).iter().map(|e| e.id).collect();
        assert_eq!(
            fired,
            BTreeSet::from([at_now, long_ago, moved_back, moved_to_now]),
            "advance({t_after}) at now 1000"
        );
        assert_eq!(c.wheel.deadline(later), Some(1_001));
    }

    // At the end of time every insert is due.
    let mut wheel: FixedWheel<u8, 4> = FixedWheel::starting_at(u64::MAX);
    wheel.try_insert(0, 0).unwrap();
    wheel.try_insert(u64::MAX, 1).unwrap();
    assert_eq!(wheel.next_expiration(), Some(u64::MAX));
    let mut values: Vec<_> = wheel.advance(0).map(|e| e.value).collect();
    values.sort_unstable();
    assert_eq!(values, [0, 1]);
    wheel.validate();
}

#[test]
fn dropping_advance_before_higher_levels_cascade_loses_nothing() {
    let mut c = Growable::<64, 11>::starting_at(0);
    c.insert(1);
    c.insert(10_000);
    c.insert(10_000);
    c.insert(20_000);
    let beyond = c.insert(20_001);

    // 10_000 and 20_000 sit on level 2 when the iterator is dropped.
    assert_eq!(deadlines(&c.advance_taking(20_000, 1)), [1]);
    assert_eq!(c.wheel.now(), 20_000);
    assert_eq!(c.wheel.next_expiration(), Some(20_000));

    let mut rest = deadlines(&c.advance(20_000));
    rest.sort_unstable();
    assert_eq!(rest, [10_000, 10_000, 20_000]);
    assert_eq!(c.pending.keys().copied().collect::<Vec<_>>(), [beyond]);
}

#[test]
fn dropping_advance_unread_loses_nothing() {
    let mut c = Growable::<64, 11>::starting_at(0);
    for deadline in [5, 64, 4_096, 1 << 30, (1 << 30) + 1] {
        c.insert(deadline);
    }
    assert!(c.advance_taking(1 << 30, 0).is_empty());
    assert_eq!(c.wheel.now(), 1 << 30);
    // Due already, so even a smaller argument yields them.
    let mut fired = deadlines(&c.advance(7));
    fired.sort_unstable();
    assert_eq!(fired, [5, 64, 4_096, 1 << 30]);
    assert_eq!(deadlines(&c.advance(u64::MAX)), [(1 << 30) + 1]);
}

#[test]
fn dropping_advance_anywhere_loses_nothing() {
    let mut rng = Rng(5);
    for _ in 0..scaled(40) {
        let mut c = Growable::<64, 11>::starting_at(rng.spread(40));
        for _ in 0..scaled(200) {
            let deadline = c.wheel.now() + rng.spread(20);
            c.insert(deadline);
        }
        while !c.pending.is_empty() {
            let t = c.wheel.now() + rng.spread(18);
            let take = rng.below(6) as usize;
            c.advance_taking(t, take);
        }
    }
}

#[test]
fn next_expiration_is_none_only_when_empty() {
    let mut wheel = Wheel::new();
    assert_eq!(wheel.next_expiration(), None);
    let id = wheel.insert(u64::MAX, ());
    assert!(wheel.next_expiration().is_some());
    wheel.cancel(id);
    assert_eq!(wheel.next_expiration(), None);
    wheel.insert(0, ());
    assert_eq!(wheel.next_expiration(), Some(0));
    wheel.advance(0).for_each(drop);
    assert_eq!(wheel.next_expiration(), None);
}

/// The driver loop over awkward deadlines from several starting clocks.
fn driver_sees_exact_deadlines<
    S: Storage<u64> + Default,
    const SLOTS: usize,
    const LEVELS: usize,
>(
    seed: u64,
) {
    let mut rng = Rng(seed);
    let random_start = rng.next();
    for start in sample(&[0, random_start, (1 << 36) - 3, u64::MAX - 4_096], 2) {
        let mut c = Checked::<S, SLOTS, LEVELS>::starting_at(start);
        let room = c.wheel.capacity() - c.pending.len();
        for deadline in awkward_deadlines(start, scaled(150), &mut rng)
            .into_iter()
            .take(room)
        {
            c.insert(deadline);
        }
        let timers = c.pending.len();
        let calls = c.drive();
        assert!(
            calls <= (LEVELS + 1) * timers,
            "{calls} calls for {timers} timers from {start}"
        );
    }
}

#[test]
fn driver_loop_wakes_at_each_deadline_and_rarely() {
    let runs: [fn(u64); 5] = [
        driver_sees_exact_deadlines::<VecStorage<u64>, 64, 11>,
        driver_sees_exact_deadlines::<ArrayStorage<u64, 256>, 64, 11>,
        driver_sees_exact_deadlines::<VecStorage<u64>, 4, 32>,
        driver_sees_exact_deadlines::<VecStorage<u64>, 16, 16>,
        driver_sees_exact_deadlines::<VecStorage<u64>, 2, 64>,
    ];
    for seed in 0..scaled(4) as u64 {
        for run in sample(&runs, 2) {
            run(seed);
        }
    }
}

#[test]
fn a_lone_far_timer_takes_at_most_levels_plus_one_wakeups() {
    for deadline in [u64::MAX, 1 << 36, 64u64.pow(10), 64u64.pow(10) - 1] {
        let mut c = Growable::<64, 11>::starting_at(0);
        c.insert(deadline);
        let calls = c.drive();
        assert!(calls <= 12, "{calls} calls for one timer at {deadline}");
    }
}

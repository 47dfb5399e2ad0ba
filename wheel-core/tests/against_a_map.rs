//! Random operations on growable and fixed wheels, checked against a map of
//! id to deadline after every one, with what `promises.rs` leaves out mixed
//! in: `compact` and `shrink_to_fit` (the fuzz targets never call them),
//! `cascade_ahead` on a fixed wheel, advances to ticks before the clock and
//! across centuries, deadlines at 0 and `u64::MAX`, and `peek` and
//! `next_expiration` held to their bounds at every step.

use std::collections::{BTreeMap, BTreeSet};

use wheel_core::{FixedWheel, Storage, TimerId, TimerWheel, Wheel};

mod common;
use common::Rng;

/// Two hundred years of milliseconds.
const CENTURIES: u64 = 200 * 365 * 24 * 3_600 * 1_000;

type Compact<S, const SLOTS: usize, const LEVELS: usize> =
    fn(&mut TimerWheel<u64, S, SLOTS, LEVELS>, bool) -> Vec<(TimerId, TimerId)>;

struct Checked<S: Storage<u64>, const SLOTS: usize, const LEVELS: usize> {
    wheel: TimerWheel<u64, S, SLOTS, LEVELS>,
    /// Each pending timer's deadline and value.
    pending: BTreeMap<TimerId, (u64, u64)>,
    /// Every id ever handed out: none may come back.
    issued: BTreeSet<TimerId>,
    /// Some stale ids, to check they stay inert.
    stale: Vec<TimerId>,
    /// Whether `peek` must name the very timer `advance` yields first: not
    /// once `cascade_ahead` has staged a slot (its docs say so).
    peek_exact: bool,
    serial: u64,
    log: Vec<String>,
}

impl<S: Storage<u64> + Default, const SLOTS: usize, const LEVELS: usize> Checked<S, SLOTS, LEVELS> {
    fn new(start: u64) -> Self {
        Self {
            wheel: TimerWheel::with_geometry(start),
            pending: BTreeMap::new(),
            issued: BTreeSet::new(),
            stale: Vec::new(),
            peek_exact: true,
            serial: 0,
            log: Vec::new(),
        }
    }

    fn insert(&mut self, deadline: u64) {
        self.serial += 1;
        self.log.push(format!("insert({deadline})"));
        match self.wheel.try_insert(deadline, self.serial) {
            Ok(id) => {
                assert!(
                    self.issued.insert(id),
                    "{id:?} issued twice; {:?}",
                    self.log
                );
                self.pending.insert(id, (deadline, self.serial));
            }
            Err(full) => {
                assert_eq!(
                    self.pending.len(),
                    self.wheel.capacity(),
                    "refused with room"
                );
                assert_eq!(full.into_inner(), self.serial);
            }
        }
    }

    fn end(&mut self, id: TimerId) {
        self.pending.remove(&id);
        self.stale.push(id);
        if self.stale.len() > 64 {
            self.stale.remove(0);
        }
    }

    fn advance(&mut self, t: u64, take: Option<usize>) {
        self.log.push(format!("advance({t}, {take:?})"));
        let before = self.wheel.now();
        let clock = t.max(before);
        let peeked = self.wheel.peek();
        let mut fired = Vec::new();
        {
            let mut advance = self.wheel.advance(t);
            while take.is_none_or(|take| fired.len() < take) {
                let Some(expired) = advance.next() else { break };
                fired.push(expired);
            }
        }
        assert_eq!(self.wheel.now(), clock, "{:?}", self.log);
        if let (true, Some(first)) = (self.peek_exact, fired.first()) {
            assert_eq!(
                peeked,
                Some((first.id, first.deadline)),
                "peek; {:?}",
                self.log
            );
        }
        let mut last_late = None;
        for expired in &fired {
            let want = self.pending.get(&expired.id).copied();
            assert_eq!(
                want,
                Some((expired.deadline, expired.value)),
                "{expired:?}; {:?}",
                self.log
            );
            assert!(
                expired.deadline <= clock,
                "early: {expired:?} at {clock}; {:?}",
                self.log
            );
            // Promise 3: those due before the call first, then in deadline order.
            if expired.deadline <= before {
                assert_eq!(
                    last_late, None,
                    "{expired:?} after a later one; {:?}",
                    self.log
                );
            } else {
                assert!(last_late <= Some(expired.deadline), "order; {:?}", self.log);
                last_late = Some(expired.deadline);
            }
            self.end(expired.id);
        }
        let left_due = self.pending.values().filter(|&&(d, _)| d <= clock).count();
        if take.is_none_or(|take| fired.len() < take) {
            assert_eq!(left_due, 0, "due left behind; {:?}", self.log);
        } else if left_due > 0 {
            // Promise 5: what was not yielded is due, and comes out first.
            assert_eq!(self.wheel.next_expiration(), Some(clock), "{:?}", self.log);
        }
    }

    fn pick(&self, rng: &mut Rng) -> Option<TimerId> {
        let live = self.pending.len() as u64;
        if live == 0 || rng.below(5) == 0 {
            return self
                .stale
                .get(rng.below(self.stale.len().max(1) as u64) as usize)
                .copied();
        }
        self.pending.keys().nth(rng.below(live) as usize).copied()
    }

    fn deadline(&self, rng: &mut Rng) -> u64 {
        let now = self.wheel.now();
        match rng.below(12) {
            0 => 0,
            1 => u64::MAX,
            2 => now,
            3 | 4 => now.saturating_sub(rng.spread(20)),
            5 => now.saturating_add(CENTURIES),
            _ => now.saturating_add(rng.spread(44)),
        }
    }

    fn step(&mut self, rng: &mut Rng, compact: Option<Compact<S, SLOTS, LEVELS>>) {
        match rng.below(20) {
            0..=5 => {
                let deadline = self.deadline(rng);
                self.insert(deadline);
            }
            6 => {
                // A burst into one slot, for `cascade_ahead` to stage.
                let first = self.wheel.now().saturating_add(rng.spread(30));
                for k in 0..rng.below(40) {
                    self.insert(first.saturating_add(k * rng.below(3)));
                }
            }
            7 | 8 => {
                let Some(id) = self.pick(rng) else { return };
                self.log.push(format!("cancel({id:?})"));
                let want = self.pending.get(&id).map(|&(_, value)| value);
                assert_eq!(self.wheel.cancel(id), want, "{:?}", self.log);
                self.end(id);
            }
            9 | 10 => {
                let Some(id) = self.pick(rng) else { return };
                let deadline = self.deadline(rng);
                self.log.push(format!("reschedule({id:?}, {deadline})"));
                let live = self.pending.contains_key(&id);
                assert_eq!(self.wheel.reschedule(id, deadline), live, "{:?}", self.log);
                if let Some(timer) = self.pending.get_mut(&id) {
                    timer.0 = deadline;
                }
            }
            11 | 12 => {
                let now = self.wheel.now();
                let t = match rng.below(6) {
                    0 => now.saturating_sub(rng.spread(30)), // back in time
                    1 => now.saturating_add(CENTURIES),
                    2 => self.wheel.next_expiration().unwrap_or(now),
                    _ => now.saturating_add(rng.spread(36)),
                };
                let take = (rng.below(3) == 0).then(|| rng.below(4) as usize);
                self.advance(t, take);
            }
            13 => {
                let max = rng.below(50) as usize;
                self.log.push(format!("cascade_ahead({max})"));
                if self.wheel.cascade_ahead(max) > 0 {
                    self.peek_exact = false;
                }
            }
            14 => {
                let Some(compact) = compact else { return };
                let shrink = rng.below(2) == 0;
                self.log.push(format!("compact(shrink only: {shrink})"));
                let moves = compact(&mut self.wheel, shrink);
                for (old, new) in moves {
                    assert!(
                        self.issued.insert(new),
                        "{new:?} issued twice; {:?}",
                        self.log
                    );
                    let timer = self.pending.remove(&old).expect("moved a pending timer");
                    self.pending.insert(new, timer);
                    self.end(old);
                }
                if !shrink {
                    assert_eq!(self.wheel.capacity(), self.pending.len(), "{:?}", self.log);
                }
                // Timers due at one tick may come out in another order now.
                self.peek_exact = false;
            }
            _ => {
                let Some(id) = self.pick(rng) else { return };
                let want = self.pending.get(&id).copied();
                assert_eq!(
                    self.wheel.deadline(id),
                    want.map(|(d, _)| d),
                    "{:?}",
                    self.log
                );
                assert_eq!(self.wheel.get(id).copied(), want.map(|(_, v)| v));
            }
        }
    }

    /// What holds between any two operations.
    fn check(&self) {
        self.wheel.validate();
        let log = &self.log;
        assert_eq!(self.wheel.len(), self.pending.len(), "{log:?}");
        let now = self.wheel.now();
        let earliest = self.pending.values().map(|&(d, _)| d).min();
        let next = self.wheel.next_expiration();
        match (earliest, next) {
            (None, None) => {}
            (Some(earliest), Some(next)) => {
                assert!(
                    now <= next && next <= now.max(earliest),
                    "{next} for {earliest} at {now}; {log:?}"
                );
            }
            _ => panic!("next_expiration {next:?} with earliest {earliest:?}; {log:?}"),
        }
        let peeked = self.wheel.peek();
        assert_eq!(peeked.is_some(), earliest.is_some(), "{log:?}");
        if let (Some((id, deadline)), Some(earliest)) = (peeked, earliest) {
            assert_eq!(
                self.pending.get(&id).map(|&(d, _)| d),
                Some(deadline),
                "{log:?}"
            );
            if earliest > now {
                assert_eq!(deadline, earliest, "peek not the least; {log:?}");
            } else {
                assert!(
                    deadline <= now,
                    "peek {deadline} with some due at {now}; {log:?}"
                );
            }
        }
        for &id in &self.stale {
            assert_eq!(self.wheel.deadline(id), None, "stale {id:?} live; {log:?}");
        }
        for (&id, &(deadline, value)) in &self.pending {
            assert_eq!(self.wheel.deadline(id), Some(deadline), "{id:?}; {log:?}");
            assert_eq!(self.wheel.get(id), Some(&value), "{id:?}; {log:?}");
        }
    }

    /// Flushes what is due, then the driver loop of promise 6: each timer
    /// from the call at its deadline, within `LEVELS + 1` calls a timer.
    fn drive_out(&mut self) {
        let now = self.wheel.now();
        self.advance(now, None);
        let budget = (LEVELS + 1) * self.pending.len();
        let mut calls = 0;
        while let Some(t) = self.wheel.next_expiration() {
            calls += 1;
            assert!(calls <= budget, "over {budget} calls; {:?}", self.log);
            let fired: Vec<_> = self.wheel.advance(t).collect();
            for expired in fired {
                assert_eq!(expired.deadline, t, "{expired:?}; {:?}", self.log);
                let want = self.pending.get(&expired.id).copied();
                assert_eq!(want, Some((t, expired.value)), "{:?}", self.log);
                self.end(expired.id);
            }
            self.check();
        }
        assert!(self.pending.is_empty());
    }
}

fn run<S: Storage<u64> + Default, const SLOTS: usize, const LEVELS: usize>(
    seeds: std::ops::Range<u64>,
    steps: usize,
    compact: Option<Compact<S, SLOTS, LEVELS>>,
) {
    let starts = [
        0,
        (1 << 36) - 5,
        1_700_000_000_000,
        u64::MAX - CENTURIES,
        u64::MAX - 3,
    ];
    for seed in seeds {
        let mut rng = Rng(seed);
        let start = starts[(seed % starts.len() as u64) as usize];
        let mut checked = Checked::<S, SLOTS, LEVELS>::new(start);
        for _ in 0..steps {
            checked.step(&mut rng, compact);
            checked.check();
        }
        checked.drive_out();
    }
}

fn compact<const SLOTS: usize, const LEVELS: usize>(
    wheel: &mut Wheel<u64, SLOTS, LEVELS>,
    shrink_only: bool,
) -> Vec<(TimerId, TimerId)> {
    let mut moves = Vec::new();
    if shrink_only {
        wheel.shrink_to_fit();
    } else {
        wheel.compact(|old, new| moves.push((old, new)));
    }
    moves
}

fn scaled(native: u64) -> u64 {
    if cfg!(miri) {
        2
    } else {
        native
    }
}

#[test]
fn a_growable_wheel_that_compacts_and_shrinks_agrees_with_a_map() {
    run::<_, 64, 11>(0..scaled(60), 300, Some(compact::<64, 11>));
}

#[test]
fn a_growable_wheel_of_two_slots_a_level_agrees_with_a_map() {
    run::<_, 2, 64>(100..100 + scaled(30), 300, Some(compact::<2, 64>));
}

#[test]
fn a_fixed_wheel_that_fills_and_cascades_ahead_agrees_with_a_map() {
    run::<wheel_core::ArrayStorage<u64, 24>, 64, 11>(200..200 + scaled(60), 300, None);
    // A full wheel refuses: `insert` checks that against the map's count.
    assert_eq!(FixedWheel::<u64, 24>::new().capacity(), 24);
}

#[test]
fn a_small_fixed_wheel_of_eight_slots_a_level_agrees_with_a_map() {
    type Small = wheel_core::ArrayStorage<u64, 24>;
    run::<Small, 8, 22>(300..300 + scaled(60), 300, None);
}

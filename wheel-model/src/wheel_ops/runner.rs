//! The runner behind [`run`](super::run): a reference model of the
//! pending timers and the clock, and the checks of each answer of the wheel
//! against it.

use std::collections::{BTreeMap, BTreeSet};

use wheel_core::{Expired, Storage, TimerId, TimerWheel};

use super::promises::{check_next_expiration, check_peek_deadline, Staging};
use super::{Drive, Empty, Op, Pick, MAX_BURST};

/// Applies `ops` to an empty `wheel` and to a model, asserting after each op
/// that every answer agrees, that the wheel's invariants hold
/// ([`validate`](TimerWheel::validate)), and that `len`, `now`, `capacity`,
/// `next_expiration`, `peek` and `cascade_ahead` keep their promises.
/// `capacity` is `Some(n)` for a wheel that must hold exactly `n` timers (a
/// `FixedWheel`), `None` for one that grows.
///
/// # Panics
/// On the first disagreement, naming it; also if `wheel` is not empty.
///
/// # Examples
/// ```
/// use wheel_core::FixedWheel;
/// use wheel_model::wheel_ops::{run, Op, Step, When};
///
/// let mut wheel: FixedWheel<u64, 1> = FixedWheel::starting_at(5);
/// let ops = [Op::Insert(When::Past(0)), Op::Insert(When::Max), Op::Advance(Step::Zero)];
/// run(&mut wheel, &ops, Some(1)); // the second insert must come back Full
/// ```
pub fn run<S: Storage<u64>, const SLOTS: usize, const LEVELS: usize>(
    wheel: &mut TimerWheel<u64, S, SLOTS, LEVELS>,
    ops: &[Op],
    capacity: Option<usize>,
) {
    assert!(wheel.is_empty(), "run needs an empty wheel, got {wheel:?}");
    let mut runner = Runner {
        model: Model::new(wheel.now()),
        wheel,
        capacity,
        staging: Staging::default(),
    };
    runner.check();
    for (step, op) in ops.iter().enumerate() {
        runner.apply(*op, step);
        runner.check();
    }
    runner.audit(ops.len());
}

/// The reference: pending timers by id and by deadline, the clock, and every
/// id ever issued.
struct Model {
    now: u64,
    pending: BTreeMap<TimerId, (u64, u64)>,
    by_deadline: BTreeSet<(u64, TimerId)>,
    issued: Vec<TimerId>,
    issued_set: BTreeSet<TimerId>,
    next_value: u64,
}

impl Model {
    fn new(now: u64) -> Self {
        Model {
            now,
            pending: BTreeMap::new(),
            by_deadline: BTreeSet::new(),
            issued: Vec::new(),
            issued_set: BTreeSet::new(),
            next_value: 0,
        }
    }

    /// Forgets every pending timer (the wheel was drained or cleared).
    fn clear_pending(&mut self) {
        self.pending.clear();
        self.by_deadline.clear();
    }

    fn earliest(&self) -> Option<u64> {
        self.by_deadline.first().map(|&(deadline, _)| deadline)
    }

    /// A value no timer has held, so a mixed-up value is always caught.
    fn fresh_value(&mut self) -> u64 {
        self.next_value += 1;
        self.next_value
    }

    fn pick(&self, pick: Pick) -> Option<TimerId> {
        match pick {
            Pick::Live(n) if !self.pending.is_empty() => self
                .pending
                .keys()
                .nth(usize::from(n) % self.pending.len())
                .copied(),
            Pick::Any(n) if !self.issued.is_empty() => {
                Some(self.issued[usize::from(n) % self.issued.len()])
            }
            Pick::Live(_) | Pick::Any(_) => None,
        }
    }

    fn insert(&mut self, id: TimerId, deadline: u64, value: u64) {
        assert!(
            self.issued_set.insert(id),
            "try_insert returned {id:?}, which was issued before"
        );
        self.issued.push(id);
        self.schedule(id, deadline, value);
    }

    fn schedule(&mut self, id: TimerId, deadline: u64, value: u64) {
        self.pending.insert(id, (deadline, value));
        self.by_deadline.insert((deadline, id));
    }

    fn remove(&mut self, id: TimerId) -> Option<(u64, u64)> {
        let (deadline, value) = self.pending.remove(&id)?;
        self.by_deadline.remove(&(deadline, id));
        Some((deadline, value))
    }

    /// How many pending timers have deadline ≤ `tick`.
    fn due_by(&self, tick: u64) -> usize {
        self.by_deadline
            .iter()
            .take_while(|&&(deadline, _)| deadline <= tick)
            .count()
    }

    /// Takes out a timer the wheel yielded, checking it was pending with that
    /// deadline and value.
    fn take_expired(&mut self, expired: &Expired<u64>, what: &str) -> u64 {
        let Some((deadline, value)) = self.remove(expired.id) else {
            panic!("{what} yielded {expired:?}, which is not pending");
        };
        assert_eq!(
            (expired.deadline, expired.value),
            (deadline, value),
            "{what} yielded {:?} with the wrong deadline or value",
            expired.id
        );
        deadline
    }
}

/// The order promise for one `advance`: already-due timers first, then the
/// rest by non-decreasing deadline, none after the target.
pub(crate) struct Order {
    pub(crate) old_now: u64,
    pub(crate) new_now: u64,
    pub(crate) last_fresh: Option<u64>,
}

impl Order {
    /// Checks the next timer `expired`, due at `deadline`.
    pub(crate) fn check(&mut self, deadline: u64, expired: &dyn core::fmt::Debug) {
        assert!(
            deadline <= self.new_now,
            "early: advance to {} yielded {expired:?}",
            self.new_now
        );
        if deadline <= self.old_now {
            assert!(
                self.last_fresh.is_none(),
                "{expired:?} was due before the advance but came after a timer due at {:?}",
                self.last_fresh
            );
        } else {
            if let Some(last) = self.last_fresh {
                assert!(
                    deadline >= last,
                    "out of order: {expired:?} after a timer due at {last}"
                );
            }
            self.last_fresh = Some(deadline);
        }
    }
}

struct Runner<'w, S: Storage<u64>, const SLOTS: usize, const LEVELS: usize> {
    wheel: &'w mut TimerWheel<u64, S, SLOTS, LEVELS>,
    model: Model,
    capacity: Option<usize>,
    staging: Staging,
}

impl<S: Storage<u64>, const SLOTS: usize, const LEVELS: usize> Runner<'_, S, SLOTS, LEVELS> {
    const BITS: u32 = SLOTS.trailing_zeros();

    fn apply(&mut self, op: Op, step: usize) {
        let now = self.model.now;
        match op {
            Op::Insert(when) => self.insert(when.resolve(now, Self::BITS, LEVELS), step),
            Op::InsertMany {
                first,
                spread,
                count,
            } => {
                let first = first.resolve(now, Self::BITS, LEVELS);
                for i in 0..u64::from(count) % (MAX_BURST as u64 + 1) {
                    self.insert(first.saturating_add(i * u64::from(spread)), step);
                }
            }
            Op::Cancel(pick) => {
                if let Some(id) = self.model.pick(pick) {
                    let expected = self.model.remove(id).map(|(_, value)| value);
                    assert_eq!(self.wheel.cancel(id), expected, "op {step}: cancel({id:?})");
                }
            }
            Op::Reschedule(pick, when) => {
                if let Some(id) = self.model.pick(pick) {
                    let deadline = when.resolve(now, Self::BITS, LEVELS);
                    let live = match self.model.remove(id) {
                        Some((_, value)) => {
                            self.model.schedule(id, deadline, value);
                            true
                        }
                        None => false,
                    };
                    assert_eq!(
                        self.wheel.reschedule(id, deadline),
                        live,
                        "op {step}: reschedule({id:?}, {deadline})"
                    );
                }
            }
            Op::Query(pick) => {
                if let Some(id) = self.model.pick(pick) {
                    self.query(id, step);
                }
            }
            Op::Touch(pick) => {
                if let Some(id) = self.model.pick(pick) {
                    let value = self.model.fresh_value();
                    let entry = self.model.pending.get_mut(&id);
                    match (self.wheel.get_mut(id), entry) {
                        (Some(got), Some((_, expected))) => {
                            assert_eq!(*got, *expected, "op {step}: get_mut({id:?})");
                            *got = value;
                            *expected = value;
                        }
                        (None, None) => {}
                        (got, expected) => {
                            panic!("op {step}: get_mut({id:?}) = {got:?}, model has {expected:?}")
                        }
                    }
                }
            }
            Op::Advance(to) => {
                let target = to.resolve(now, Self::BITS, LEVELS, self.model.earliest());
                self.advance(target, usize::MAX, step);
            }
            Op::AdvancePartial(to, take) => {
                let target = to.resolve(now, Self::BITS, LEVELS, self.model.earliest());
                self.advance(target, usize::from(take), step);
            }
            Op::Drive(drive) => self.drive(drive, step),
            Op::Empty(Empty::Drain(take)) => self.drain(usize::from(take), step),
            Op::Empty(Empty::Clear) => {
                self.wheel.clear();
                self.model.clear_pending();
            }
            Op::Audit => self.audit(step),
            Op::CascadeAhead(max) => {
                let max = usize::from(max);
                let moved = self.wheel.cascade_ahead(max);
                let deadlines = self.model.by_deadline.iter().map(|&(deadline, _)| deadline);
                self.staging
                    .cascade_ahead(now, deadlines, Self::BITS, max, moved);
            }
        }
    }

    fn insert(&mut self, deadline: u64, step: usize) {
        let value = self.model.fresh_value();
        let len = self.model.pending.len();
        match self.wheel.try_insert(deadline, value) {
            Ok(id) => {
                assert!(
                    self.capacity.is_none_or(|capacity| len < capacity),
                    "op {step}: try_insert succeeded with {len} of {:?} pending",
                    self.capacity
                );
                self.model.insert(id, deadline, value);
            }
            Err(full) => {
                assert_eq!(
                    Some(len),
                    self.capacity,
                    "op {step}: try_insert({deadline}) was Full with {len} pending"
                );
                assert_eq!(full.into_inner(), value, "op {step}: Full lost the value");
            }
        }
    }

    fn query(&self, id: TimerId, step: usize) {
        let expected = self.model.pending.get(&id);
        assert_eq!(
            self.wheel.deadline(id),
            expected.map(|&(deadline, _)| deadline),
            "op {step}: deadline({id:?})"
        );
        assert_eq!(
            self.wheel.get(id),
            expected.map(|(_, value)| value),
            "op {step}: get({id:?})"
        );
    }

    fn drain(&mut self, take: usize, step: usize) {
        let mut drain = self.wheel.drain();
        for _ in 0..take {
            assert_eq!(
                drain.len(),
                self.model.pending.len(),
                "op {step}: drain's len"
            );
            let Some(expired) = drain.next() else {
                break;
            };
            self.model.take_expired(&expired, "drain");
        }
        drop(drain);
        self.model.clear_pending();
    }

    /// Asks the wheel about every id ever issued.
    fn audit(&self, step: usize) {
        for &id in &self.model.issued {
            self.query(id, step);
        }
    }
}

impl<S: Storage<u64>, const SLOTS: usize, const LEVELS: usize> Drives
    for Runner<'_, S, SLOTS, LEVELS>
{
    const LEVELS: usize = LEVELS;

    fn next_expiration(&self) -> Option<u64> {
        self.wheel.next_expiration()
    }

    fn pending(&self) -> usize {
        self.model.pending.len()
    }

    fn advance(&mut self, target: u64, take: usize, step: usize) -> usize {
        let old_now = self.model.now;
        let new_now = target.max(old_now);
        let due = self.model.due_by(new_now);
        let mut order = Order {
            old_now,
            new_now,
            last_fresh: None,
        };
        // The timer `peek` names comes out first if it is due by then.
        let first = match self.wheel.peek() {
            Some((id, deadline)) if deadline <= new_now && self.staging.peek_is_first(old_now) => {
                Some(id)
            }
            _ => None,
        };
        let mut yielded = 0;
        let mut exhausted = false;
        let mut advance = self.wheel.advance(target);
        let (low, high) = advance.size_hint();
        assert!(
            low <= due && high.is_none_or(|high| high >= due),
            "op {step}: advance({target}) size_hint {:?} excludes the {due} due",
            (low, high)
        );
        while yielded < take {
            let Some(expired) = advance.next() else {
                exhausted = true;
                break;
            };
            order.check(expired.deadline, &expired);
            if yielded == 0 {
                assert!(
                    first.is_none_or(|id| id == expired.id),
                    "op {step}: advance({target}) yielded {expired:?} first, peek named {first:?}"
                );
            }
            self.model.take_expired(&expired, "advance");
            yielded += 1;
        }
        drop(advance);
        self.model.now = new_now;
        if exhausted {
            assert_eq!(
                yielded, due,
                "op {step}: advance({target}) from {old_now} yielded {yielded} of {due} due"
            );
        }
        yielded
    }

    fn check(&self) {
        self.wheel.validate();
        let (wheel, model) = (&*self.wheel, &self.model);
        assert_eq!(wheel.len(), model.pending.len(), "len");
        assert_eq!(wheel.is_empty(), model.pending.is_empty(), "is_empty");
        assert_eq!(wheel.now(), model.now, "now");
        match self.capacity {
            Some(capacity) => assert_eq!(wheel.capacity(), capacity, "capacity"),
            None => assert!(wheel.capacity() >= wheel.len(), "capacity below len"),
        }
        check_next_expiration(
            wheel.next_expiration(),
            model.now,
            model.earliest(),
            Self::BITS,
        );
        let peeked = wheel.peek();
        check_peek_deadline(
            peeked.map(|(_, deadline)| deadline),
            model.now,
            model.earliest(),
        );
        if let Some((id, deadline)) = peeked {
            assert_eq!(
                model.pending.get(&id).map(|&(deadline, _)| deadline),
                Some(deadline),
                "peek named {id:?} due at {deadline}"
            );
        }
    }
}

/// What the [`Drive`] ops need of a runner: its wheel's next expiration,
/// an advance checked against its model, and the checks between ops.
pub(crate) trait Drives {
    /// The wheel's levels: a timer needs at most `LEVELS + 1` advances.
    const LEVELS: usize;

    fn next_expiration(&self) -> Option<u64>;

    fn pending(&self) -> usize;

    /// `advance(target)`, yielding at most `take` timers before the
    /// iterator is dropped, each checked; returns how many it yielded.
    fn advance(&mut self, target: u64, take: usize, step: usize) -> usize;

    /// The promises that hold between any two ops.
    fn check(&self);

    /// Advances driven by `next_expiration`, the way a timer thread sleeps
    /// and wakes; each must make progress.
    fn drive(&mut self, drive: Drive, step: usize) {
        let calls = match drive {
            Drive::Next(calls) => usize::from(calls % 16) + 1,
            Drive::All => usize::MAX,
        };
        let budget = (Self::LEVELS + 1) * self.pending();
        let mut made = 0;
        while made < calls {
            let Some(tick) = self.next_expiration() else {
                return;
            };
            assert!(
                drive != Drive::All || made < budget,
                "op {step}: driving {} timers took over {budget} advances",
                budget / (Self::LEVELS + 1)
            );
            if self.advance(tick, usize::MAX, step) == 0 {
                let next = self.next_expiration();
                assert!(
                    next.is_some_and(|next| next > tick),
                    "op {step}: advance(next_expiration() = {tick}) made no progress: next is {next:?}"
                );
            }
            self.check();
            made += 1;
        }
    }
}

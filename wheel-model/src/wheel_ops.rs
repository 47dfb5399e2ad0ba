//! Random operations on a [`TimerWheel`], checked one by one against a
//! `BTreeMap` model that states the crate's promises directly.
//!
//! The model knows nothing about levels or slots: it holds the pending timers
//! and the clock, and says which timers `advance(t)` must yield and in what
//! order they may come. The runner applies each [`Op`] to the wheel and the
//! model, compares every answer, and calls
//! [`validate`](TimerWheel::validate) after every op.

use std::collections::{BTreeMap, BTreeSet};

use arbitrary::{Arbitrary, Unstructured};
use wheel_core::{Expired, Storage, TimerId, TimerWheel};

/// Most ops decoded from one input, so each fuzz iteration stays fast.
pub const MAX_OPS: usize = 256;

/// A deadline, relative to the clock when the op runs.
///
/// # Examples
/// ```
/// use wheel_model::wheel_ops::When;
///
/// // On a 64-slot wheel at tick 100 the next level-1 slot starts at 128.
/// assert_eq!(When::Boundary { level: 1, offset: 0 }.resolve(100, 6, 11), 128);
/// assert_eq!(When::Past(9).resolve(5, 6, 11), 0); // saturates at tick 0
/// ```
#[derive(Arbitrary, Debug, Clone, Copy, PartialEq, Eq)]
pub enum When {
    /// Exactly `now`: due at once.
    Now,
    /// `now + 1 + n`: on level 0 or just above it.
    Near(u8),
    /// `now + (value << shift)`, saturating: any scale up to `u64::MAX`.
    Far {
        /// Left shift, taken mod 64.
        shift: u8,
        /// The magnitude before shifting.
        value: u16,
    },
    /// `offset` ticks from the next slot boundary of `level` (mod the wheel's
    /// level count), where the placement arithmetic is tight.
    Boundary {
        /// Which level's slot boundary.
        level: u8,
        /// Ticks before (negative) or after the boundary, saturating.
        offset: i8,
    },
    /// `now - 1 - n`, saturating at 0: already due.
    Past(u16),
    /// Any tick at all.
    Absolute(u64),
    /// `u64::MAX`, the last tick.
    Max,
}

impl When {
    /// The deadline this stands for on a wheel at `now` whose levels resolve
    /// `bits` bits each, `levels` levels in all.
    ///
    /// # Examples
    /// ```
    /// use wheel_model::wheel_ops::When;
    ///
    /// assert_eq!(When::Near(0).resolve(7, 6, 11), 8);
    /// assert_eq!(When::Max.resolve(7, 6, 11), u64::MAX);
    /// ```
    pub fn resolve(self, now: u64, bits: u32, levels: usize) -> u64 {
        match self {
            When::Now => now,
            When::Near(n) => now.saturating_add(1 + u64::from(n)),
            When::Far { shift, value } => now.saturating_add(u64::from(value) << (shift % 64)),
            When::Boundary { level, offset } => {
                boundary(now, bits, levels, level).saturating_add_signed(i64::from(offset))
            }
            When::Past(n) => now.saturating_sub(1 + u64::from(n)),
            When::Absolute(tick) => tick,
            When::Max => u64::MAX,
        }
    }
}

/// The first tick after `now` at which `level`'s digit changes, or
/// `u64::MAX` if there is none.
fn boundary(now: u64, bits: u32, levels: usize, level: u8) -> u64 {
    // (levels - 1) * bits < 64 for every valid geometry, so the shift is in range.
    let shift = (usize::from(level) % levels) as u32 * bits;
    (now >> shift)
        .checked_add(1)
        .and_then(|rotation| rotation.checked_mul(1 << shift))
        .unwrap_or(u64::MAX)
}

/// Where an `advance` moves the clock to, relative to the clock and the
/// pending timers when the op runs.
///
/// # Examples
/// ```
/// use wheel_model::wheel_ops::Step;
///
/// assert_eq!(Step::Small(3).resolve(10, 6, 11, None), 13);
/// assert_eq!(Step::Earliest { offset: -1 }.resolve(10, 6, 11, Some(40)), 39);
/// assert_eq!(Step::Backward(4).resolve(10, 6, 11, None), 5);
/// ```
#[derive(Arbitrary, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Stay at `now`: yields only what is already due.
    Zero,
    /// One tick.
    One,
    /// A few ticks.
    Small(u8),
    /// `value << shift` ticks, saturating: up to huge jumps.
    Jump {
        /// Left shift, taken mod 64.
        shift: u8,
        /// The magnitude before shifting.
        value: u16,
    },
    /// Next to a slot boundary, as in [`When::Boundary`].
    Boundary {
        /// Which level's slot boundary.
        level: u8,
        /// Ticks before (negative) or after the boundary, saturating.
        offset: i8,
    },
    /// Next to the earliest pending deadline (`now` if there is none), so
    /// advances land exactly on, just before and just after deadlines.
    Earliest {
        /// Ticks before (negative) or after that deadline, saturating.
        offset: i8,
    },
    /// Backwards by `1 + n` ticks: the clock must not move.
    Backward(u16),
    /// Any tick at all, possibly in the past.
    Absolute(u64),
    /// Straight to `u64::MAX`.
    Max,
}

impl Step {
    /// The `advance` argument this stands for on a wheel at `now` (geometry as
    /// in [`When::resolve`]) whose earliest pending deadline is `earliest`.
    ///
    /// # Examples
    /// ```
    /// use wheel_model::wheel_ops::Step;
    ///
    /// assert_eq!(Step::Max.resolve(0, 6, 11, None), u64::MAX);
    /// ```
    pub fn resolve(self, now: u64, bits: u32, levels: usize, earliest: Option<u64>) -> u64 {
        match self {
            Step::Zero => now,
            Step::One => now.saturating_add(1),
            Step::Small(n) => now.saturating_add(u64::from(n)),
            Step::Jump { shift, value } => now.saturating_add(u64::from(value) << (shift % 64)),
            Step::Boundary { level, offset } => {
                boundary(now, bits, levels, level).saturating_add_signed(i64::from(offset))
            }
            Step::Earliest { offset } => earliest
                .unwrap_or(now)
                .saturating_add_signed(i64::from(offset)),
            Step::Backward(n) => now.saturating_sub(1 + u64::from(n)),
            Step::Absolute(tick) => tick,
            Step::Max => u64::MAX,
        }
    }
}

/// Which id an op targets.
///
/// # Examples
/// ```
/// use wheel_model::wheel_ops::{Op, Pick};
///
/// let ops = [Op::Cancel(Pick::Live(0)), Op::Cancel(Pick::Any(3))];
/// assert_eq!(ops.len(), 2);
/// ```
#[derive(Arbitrary, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pick {
    /// The n-th pending timer (mod their number); no-op when none is pending.
    Live(u16),
    /// The n-th id ever issued (mod their number), live or stale; no-op
    /// before the first insert.
    Any(u16),
}

/// Most timers one [`Op::InsertMany`] inserts.
pub const MAX_BURST: usize = 16;

/// One operation on the wheel and the model.
///
/// Ops that empty the wheel sit one enum down ([`Drive`], [`Empty`]), so
/// they are rarer than ops that fill it and random sequences reach wheels
/// with many timers on many levels.
///
/// # Examples
/// ```
/// use wheel_model::wheel_ops::{run, Drive, Op, Pick, Step, When};
///
/// let ops = [
///     Op::Insert(When::Max),
///     Op::InsertMany { first: When::Near(3), spread: 70, count: 5 },
///     Op::AdvancePartial(Step::Max, 1),
///     Op::Cancel(Pick::Any(0)),
///     Op::Drive(Drive::All),
/// ];
/// run(&mut wheel_core::Wheel::new(), &ops, None);
/// ```
#[derive(Arbitrary, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `try_insert` at a deadline; `Full` exactly when a fixed wheel is at
    /// capacity.
    Insert(When),
    /// `count % (MAX_BURST + 1)` inserts at `first`, `first + spread`,
    /// `first + 2 * spread`, … (saturating).
    InsertMany {
        /// The first deadline.
        first: When,
        /// Ticks between consecutive deadlines.
        spread: u8,
        /// How many, mod `MAX_BURST + 1`.
        count: u8,
    },
    /// `cancel`: the value back iff the id is live.
    Cancel(Pick),
    /// `reschedule`: `true` iff the id is live.
    Reschedule(Pick, When),
    /// `deadline` and `get` for one id.
    Query(Pick),
    /// `get_mut`: give a live timer a new value.
    Touch(Pick),
    /// `advance`, yielding everything.
    Advance(Step),
    /// `advance`, taking at most `n` timers, then dropping the iterator.
    AdvancePartial(Step, u8),
    /// Advances driven by `next_expiration`.
    Drive(Drive),
    /// `drain` or `clear`.
    Empty(Empty),
    /// `deadline` and `get` for every id ever issued.
    Audit,
    /// `cascade_ahead(n)`: moves at most `n` timers and changes nothing the
    /// model can see.
    CascadeAhead(u16),
}

/// Advances driven by [`next_expiration`](TimerWheel::next_expiration), the
/// way a timer thread sleeps and wakes.
///
/// # Examples
/// ```
/// use wheel_model::wheel_ops::{run, Drive, Op, When};
///
/// let ops = [Op::Insert(When::Far { shift: 30, value: 1 }), Op::Drive(Drive::Next(3))];
/// run(&mut wheel_core::Wheel::new(), &ops, None);
/// ```
#[derive(Arbitrary, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Drive {
    /// Up to `1 + n % 16` calls of `advance(next_expiration())`; each must
    /// make progress: yield a timer or move `next_expiration` later.
    Next(u8),
    /// Loop `advance(next_expiration())` until the wheel is empty, within
    /// `LEVELS + 1` calls per pending timer.
    All,
}

/// Ways to empty the wheel at once; the clock stays put.
///
/// # Examples
/// ```
/// use wheel_model::wheel_ops::{run, Empty, Op, When};
///
/// let ops = [Op::Insert(When::Max), Op::Insert(When::Now), Op::Empty(Empty::Drain(1))];
/// run(&mut wheel_core::Wheel::new(), &ops, None);
/// ```
#[derive(Arbitrary, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Empty {
    /// `drain`, taking at most `n` timers, then dropping the iterator.
    Drain(u8),
    /// `clear`.
    Clear,
}

/// Decodes up to [`MAX_OPS`] ops, stopping quietly when the data runs out.
///
/// # Examples
/// ```
/// use arbitrary::Unstructured;
/// use wheel_model::wheel_ops::decode_ops;
///
/// assert!(decode_ops(&mut Unstructured::new(&[])).is_empty());
/// assert!(!decode_ops(&mut Unstructured::new(&[0; 64])).is_empty());
/// ```
pub fn decode_ops(u: &mut Unstructured<'_>) -> Vec<Op> {
    crate::decode_up_to(u, MAX_OPS)
}

/// Where a wheel's clock starts.
///
/// # Examples
/// ```
/// use wheel_model::wheel_ops::Start;
///
/// assert_eq!(Start::NearMax(0).tick(), u64::MAX);
/// ```
#[derive(Arbitrary, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Start {
    /// Tick 0.
    Zero,
    /// `u64::MAX - n`: the top of the clock, where arithmetic saturates.
    NearMax(u16),
    /// Any tick.
    At(u64),
}

impl Start {
    /// The starting tick.
    ///
    /// # Examples
    /// ```
    /// assert_eq!(wheel_model::wheel_ops::Start::At(9).tick(), 9);
    /// ```
    pub fn tick(self) -> u64 {
        match self {
            Start::Zero => 0,
            Start::NearMax(n) => u64::MAX - u64::from(n),
            Start::At(tick) => tick,
        }
    }
}

/// A whole test case: where the clock starts and what to do.
///
/// # Examples
/// ```
/// use arbitrary::Unstructured;
/// use wheel_model::wheel_ops::{Case, Start};
///
/// let case = Case::decode(&mut Unstructured::new(&[]));
/// assert_eq!(case, Case { start: Start::Zero, ops: vec![] });
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Case {
    /// The wheel's starting tick.
    pub start: Start,
    /// The ops, in order.
    pub ops: Vec<Op>,
}

impl Case {
    /// Decodes a start and up to [`MAX_OPS`] ops; never fails (missing bytes
    /// read as zero, as `arbitrary` does).
    ///
    /// # Examples
    /// ```
    /// use arbitrary::Unstructured;
    /// use wheel_model::wheel_ops::Case;
    ///
    /// let case = Case::decode(&mut Unstructured::new(&[0; 100]));
    /// assert!(case.ops.len() <= wheel_model::wheel_ops::MAX_OPS);
    /// ```
    pub fn decode(u: &mut Unstructured<'_>) -> Self {
        let start = u.arbitrary().unwrap_or(Start::Zero);
        Case {
            start,
            ops: decode_ops(u),
        }
    }
}

/// Applies `ops` to an empty `wheel` and to a model, asserting after each op
/// that every answer agrees, that the wheel's invariants hold
/// ([`validate`](TimerWheel::validate)), and that `len`, `now`, `capacity`
/// and `next_expiration` keep their promises. `capacity` is `Some(n)` for a
/// wheel that must hold exactly `n` timers (a `FixedWheel`), `None` for one
/// that grows.
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
                let moved = self.wheel.cascade_ahead(usize::from(max));
                assert!(
                    moved <= usize::from(max) && moved <= self.model.pending.len(),
                    "op {step}: cascade_ahead({max}) moved {moved} of {} pending",
                    self.model.pending.len()
                );
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
        check_next_expiration(wheel.next_expiration(), model.now, model.earliest());
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

/// The promise of `next_expiration`: `None` iff nothing is pending, else a
/// tick from `now` to `max(now, earliest deadline)`.
pub(crate) fn check_next_expiration(next: Option<u64>, now: u64, earliest: Option<u64>) {
    match (next, earliest) {
        (None, None) => {}
        (Some(tick), Some(earliest)) => assert!(
            now <= tick && tick <= now.max(earliest),
            "next_expiration {tick} outside {now}..={} (earliest deadline {earliest})",
            now.max(earliest)
        ),
        (next, earliest) => {
            panic!("next_expiration {next:?} but the earliest deadline is {earliest:?}")
        }
    }
}

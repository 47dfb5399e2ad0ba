//! Random operations on a [`TimerWheel`](wheel_core::TimerWheel), checked
//! one by one against a `BTreeMap` model that states the crate's promises
//! directly.
//!
//! The model knows nothing about levels or slots: it holds the pending timers
//! and the clock, and says which timers `advance(t)` must yield and in what
//! order they may come. The runner applies each [`Op`] to the wheel and the
//! model, compares every answer, and calls
//! [`validate`](wheel_core::TimerWheel::validate) after every op.

use arbitrary::{Arbitrary, Unstructured};

mod promises;
mod runner;

pub(crate) use promises::{check_next_expiration, check_peek_deadline, Staging};
pub use runner::run;
pub(crate) use runner::{Drives, Order};

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

/// Advances driven by [`next_expiration`](wheel_core::TimerWheel::next_expiration), the
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

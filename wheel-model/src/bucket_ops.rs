//! Random operations on a [`BucketWheel`], checked one by one against a
//! `BTreeSet` model, with the same ops as [`wheel_ops`](crate::wheel_ops).
//!
//! A `BucketWheel` has no ids, so `Cancel` becomes a
//! [`retain`](BucketWheel::retain) dropping every value that is a multiple
//! of a number the op picks, and the other ops that name a timer
//! (`Reschedule`, `Query`, `Touch`, `Audit`) check only that the wheel
//! agrees with the model on what is pending, by count, and on when it is
//! due next.

use std::collections::BTreeSet;

use wheel_core::BucketWheel;

use crate::wheel_ops::{
    check_next_expiration, check_peek_deadline, Drives, Empty, Op, Order, Pick, Staging, MAX_BURST,
};

/// `BucketWheel`'s geometry, which `When` and `Step` resolve against.
const BITS: u32 = 6;
const LEVELS: usize = 11;

/// Applies `ops` to an empty `wheel` and to a model, asserting after each op
/// that the answers agree, that the wheel's invariants hold
/// ([`validate`](BucketWheel::validate)), and that `len`, `now`,
/// `next_expiration`, `peek` and `cascade_ahead` keep their promises.
///
/// # Panics
/// On the first disagreement, naming it; also if `wheel` is not empty.
///
/// # Examples
/// ```
/// use wheel_core::BucketWheel;
/// use wheel_model::bucket_ops::run;
/// use wheel_model::wheel_ops::{Drive, Op, Step, When};
///
/// let ops = [
///     Op::InsertMany { first: When::Near(3), spread: 70, count: 5 },
///     Op::CascadeAhead(2),
///     Op::AdvancePartial(Step::Max, 1),
///     Op::Drive(Drive::All),
/// ];
/// run(&mut BucketWheel::new(), &ops);
/// ```
pub fn run(wheel: &mut BucketWheel<u64>, ops: &[Op]) {
    assert!(wheel.is_empty(), "run needs an empty wheel, got {wheel:?}");
    let mut runner = Runner {
        now: wheel.now(),
        wheel,
        pending: BTreeSet::new(),
        next_value: 0,
        staging: Staging::default(),
    };
    runner.check();
    for (step, op) in ops.iter().enumerate() {
        runner.apply(*op, step);
        runner.check();
    }
}

struct Runner<'w> {
    wheel: &'w mut BucketWheel<u64>,
    now: u64,
    /// `(deadline, value)` of every pending timer; values are unique.
    pending: BTreeSet<(u64, u64)>,
    next_value: u64,
    staging: Staging,
}

impl Runner<'_> {
    fn earliest(&self) -> Option<u64> {
        self.pending.first().map(|&(deadline, _)| deadline)
    }

    fn apply(&mut self, op: Op, step: usize) {
        let now = self.now;
        match op {
            Op::Insert(when) => self.insert(when.resolve(now, BITS, LEVELS)),
            Op::InsertMany {
                first,
                spread,
                count,
            } => {
                let first = first.resolve(now, BITS, LEVELS);
                for i in 0..u64::from(count) % (MAX_BURST as u64 + 1) {
                    self.insert(first.saturating_add(i * u64::from(spread)));
                }
            }
            Op::Cancel(Pick::Live(n) | Pick::Any(n)) => self.retain(u64::from(n % 5) + 2, step),
            Op::Reschedule(..) | Op::Query(_) | Op::Touch(_) | Op::Audit => {}
            Op::Advance(to) => {
                let target = to.resolve(now, BITS, LEVELS, self.earliest());
                self.advance(target, usize::MAX, step);
            }
            Op::AdvancePartial(to, take) => {
                let target = to.resolve(now, BITS, LEVELS, self.earliest());
                self.advance(target, usize::from(take), step);
            }
            Op::Drive(drive) => self.drive(drive, step),
            Op::Empty(Empty::Drain(take)) => {
                for (deadline, value) in self.wheel.drain().take(usize::from(take)) {
                    Self::take(&mut self.pending, deadline, value, step);
                }
                self.pending.clear();
            }
            Op::Empty(Empty::Clear) => {
                self.wheel.clear();
                self.pending.clear();
            }
            Op::CascadeAhead(max) => {
                let moved = self.wheel.cascade_ahead(usize::from(max));
                let deadlines = self.pending.iter().map(|&(deadline, _)| deadline);
                let max = usize::from(max);
                self.staging
                    .cascade_ahead(self.now, deadlines, BITS, max, moved);
            }
        }
    }

    fn insert(&mut self, deadline: u64) {
        self.next_value += 1;
        self.wheel.insert(deadline, self.next_value);
        self.pending.insert((deadline, self.next_value));
    }

    /// Drops every timer whose value is a multiple of `m`, from both.
    fn retain(&mut self, m: u64, step: usize) {
        let dropped = self.wheel.retain(|_, &value| value % m != 0);
        let before = self.pending.len();
        self.pending.retain(|&(_, value)| value % m != 0);
        assert_eq!(
            dropped,
            before - self.pending.len(),
            "op {step}: retain dropped {dropped} timers"
        );
    }

    /// Takes out a timer the wheel yielded, which must be pending.
    fn take(pending: &mut BTreeSet<(u64, u64)>, deadline: u64, value: u64, step: usize) {
        assert!(
            pending.remove(&(deadline, value)),
            "op {step}: the wheel yielded ({deadline}, {value}), which is not pending"
        );
    }
}

impl Drives for Runner<'_> {
    const LEVELS: usize = LEVELS;

    fn next_expiration(&self) -> Option<u64> {
        self.wheel.next_expiration()
    }

    fn pending(&self) -> usize {
        self.pending.len()
    }

    fn advance(&mut self, target: u64, take: usize, step: usize) -> usize {
        let old_now = self.now;
        let new_now = target.max(old_now);
        let due = self.pending.range(..=(new_now, u64::MAX)).count();
        let mut order = Order {
            old_now,
            new_now,
            last_fresh: None,
        };
        // The timer `peek` names comes out first if it is due by then.
        let first = match self.wheel.peek() {
            Some((deadline, &value))
                if deadline <= new_now && self.staging.peek_is_first(old_now) =>
            {
                Some((deadline, value))
            }
            _ => None,
        };
        let mut yielded = 0;
        let mut exhausted = false;
        let mut advance = self.wheel.advance(target);
        while yielded < take {
            let Some((deadline, value)) = advance.next() else {
                exhausted = true;
                break;
            };
            order.check(deadline, &(deadline, value));
            if yielded == 0 {
                assert!(
                    first.is_none_or(|first| first == (deadline, value)),
                    "op {step}: advance({target}) yielded {:?} first, peek named {first:?}",
                    (deadline, value)
                );
            }
            Self::take(&mut self.pending, deadline, value, step);
            yielded += 1;
        }
        drop(advance);
        self.now = new_now;
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
        assert_eq!(self.wheel.len(), self.pending.len(), "len");
        assert_eq!(self.wheel.is_empty(), self.pending.is_empty(), "is_empty");
        assert_eq!(self.wheel.now(), self.now, "now");
        check_next_expiration(
            self.wheel.next_expiration(),
            self.now,
            self.earliest(),
            BITS,
        );
        let peeked = self.wheel.peek();
        check_peek_deadline(
            peeked.map(|(deadline, _)| deadline),
            self.now,
            self.earliest(),
        );
        if let Some((deadline, &value)) = peeked {
            assert!(
                self.pending.contains(&(deadline, value)),
                "peek named ({deadline}, {value}), which is not pending"
            );
        }
    }
}

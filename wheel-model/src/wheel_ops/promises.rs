//! The promises of `next_expiration`, `peek` and `cascade_ahead`, stated
//! over a model's clock and deadlines, so that the runners of both cascading
//! wheels ([`TimerWheel`](wheel_core::TimerWheel) and
//! [`BucketWheel`](wheel_core::BucketWheel)) check them one way.
//!
//! The model knows no levels, but the crate docs say where a timer sits: on
//! the level of the most significant base-`SLOTS` digit in which its
//! deadline differs from `now`, in the slot of its deadline's digit there.
//! That and the clock are enough to say exactly what `next_expiration`
//! and `peek` answer; of `cascade_ahead`, only bounds.

use std::collections::BTreeMap;

/// Where a timer due at `deadline` sits with the clock at `now`, on a wheel
/// whose levels resolve `bits` bits each: its level and its slot's first
/// tick; `None` if it is already due.
fn placement(now: u64, deadline: u64, bits: u32) -> Option<(u32, u64)> {
    if deadline <= now {
        return None;
    }
    let level = (u64::BITS - 1 - (deadline ^ now).leading_zeros()) / bits;
    // level * bits ≤ the highest differing bit < 64.
    let span = 1u64 << (level * bits);
    Some((level, deadline & !(span - 1)))
}

/// The promise of `next_expiration`, exactly: `None` iff nothing is
/// pending; `now` while a timer is already due; else the earliest deadline
/// if that timer sits on level 0, or the start of its slot on the level it
/// sits on.
pub(crate) fn check_next_expiration(next: Option<u64>, now: u64, earliest: Option<u64>, bits: u32) {
    let expected =
        earliest.map(|earliest| placement(now, earliest, bits).map_or(now, |(_, start)| start));
    assert_eq!(
        next, expected,
        "next_expiration at {now} with the earliest deadline {earliest:?}"
    );
}

/// The promise of `peek` on the deadline it reports: `None` iff nothing is
/// pending; while a timer is already due, one of those; else the earliest
/// deadline. Which timer it names, the runner checks against its model.
pub(crate) fn check_peek_deadline(peeked: Option<u64>, now: u64, earliest: Option<u64>) {
    match (peeked, earliest) {
        (None, None) => {}
        (Some(deadline), Some(earliest)) if earliest <= now => assert!(
            deadline <= now,
            "peek named a timer due at {deadline}, but one due at {earliest} is due at {now}"
        ),
        (Some(deadline), Some(earliest)) => assert_eq!(
            deadline, earliest,
            "peek's deadline at {now}, the earliest being {earliest}"
        ),
        (peeked, earliest) => {
            panic!("peek named a timer due at {peeked:?}, the earliest deadline is {earliest:?}")
        }
    }
}

/// What the model knows of `cascade_ahead`: which slots it may have begun
/// staging, since `peek` names the timer `advance` yields first only where
/// it has not.
#[derive(Debug, Default)]
pub(crate) struct Staging {
    /// The latest first tick of a slot a `cascade_ahead` call may have
    /// begun on; staging a slot ends once the clock reaches its start.
    until: Option<u64>,
}

impl Staging {
    /// Checks the answer `moved` of `cascade_ahead(max)` with the clock at
    /// `now` and timers pending at `deadlines`, and notes the slot it works
    /// on. It moves timers of one slot above level 0, so no more than `max`
    /// nor than such slots hold; the slot is the earliest above level 0,
    /// unless one begun earlier is still being staged (noted then).
    pub(crate) fn cascade_ahead(
        &mut self,
        now: u64,
        deadlines: impl Iterator<Item = u64>,
        bits: u32,
        max: usize,
        moved: usize,
    ) {
        let mut slots = BTreeMap::<(u32, u64), usize>::new();
        for deadline in deadlines {
            if let Some(place @ (1.., _)) = placement(now, deadline, bits) {
                *slots.entry(place).or_default() += 1;
            }
        }
        let fullest = slots.values().copied().max().unwrap_or(0);
        assert!(
            moved <= max && moved <= fullest,
            "cascade_ahead({max}) moved {moved}, but the fullest slot above level 0 holds {fullest}"
        );
        if let Some(start) = slots.keys().map(|&(_, start)| start).min() {
            self.until = self.until.max(Some(start));
        }
    }

    /// Whether `peek`, with the clock at `now`, names the timer `advance`
    /// yields first: not while a staging may be in progress, when it names
    /// one with the least deadline but maybe not that one.
    pub(crate) fn peek_is_first(&self, now: u64) -> bool {
        self.until.is_none_or(|until| until <= now)
    }
}

#[cfg(test)]
mod tests {
    use super::placement;

    #[test]
    fn placement_follows_the_crate_docs_level_table() {
        // 64 slots: level 1 slots span 64 ticks, level 2 slots 4096.
        assert_eq!(placement(0, 40, 6), Some((0, 40)));
        assert_eq!(placement(40, 40, 6), None);
        assert_eq!(placement(0, 100, 6), Some((1, 64)));
        assert_eq!(placement(0, 5_000, 6), Some((2, 4_096)));
        assert_eq!(placement(4_100, 5_000, 6), Some((1, 4_992)));
        assert_eq!(placement(0, u64::MAX, 6), Some((10, 15 << 60)));
        assert_eq!(placement(0, u64::MAX, 1), Some((63, 1 << 63)));
    }
}

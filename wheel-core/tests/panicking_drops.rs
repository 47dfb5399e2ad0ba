//! Values whose `Drop` panics: `clear`, a dropped `drain` and dropping the
//! wheel still remove or drop every other value, and the wheel stays whole.

use std::cell::Cell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::rc::Rc;

use wheel_core::{FixedWheel, Storage, TimerWheel, Wheel};

/// A value whose drop panics if armed.
struct Bomb(bool);

impl Drop for Bomb {
    fn drop(&mut self) {
        if self.0 {
            panic!("value drop panics");
        }
    }
}

/// After a `clear` or `drain` unwound: empty, consistent, and a new timer
/// fires at its tick and nothing else ever does.
fn assert_empty_and_working<S: Storage<Bomb>, const SLOTS: usize, const LEVELS: usize>(
    wheel: &mut TimerWheel<Bomb, S, SLOTS, LEVELS>,
) {
    assert!(wheel.is_empty(), "{} timers left", wheel.len());
    assert_eq!(wheel.len(), 0);
    assert_eq!(wheel.next_expiration(), None);
    wheel.validate();
    let now = wheel.now();
    let id = wheel.try_insert(now + 40, Bomb(false)).ok().unwrap();
    wheel.validate();
    assert_eq!(wheel.next_expiration(), Some(now + 40));
    assert_eq!(wheel.advance(now + 39).count(), 0);
    let fired: Vec<_> = wheel.advance(now + 40).map(|e| e.id).collect();
    assert_eq!(fired, [id]);
    assert_eq!(wheel.advance(u64::MAX).count(), 0);
    wheel.validate();
}

/// Bomb(true) at 10, harmless ones at 20 and 30; `clear` must unwind.
fn clear_with_a_bomb<S: Storage<Bomb>, const SLOTS: usize, const LEVELS: usize>(
    wheel: &mut TimerWheel<Bomb, S, SLOTS, LEVELS>,
) {
    for (deadline, armed) in [(10, true), (20, false), (30, false)] {
        assert!(wheel.try_insert(deadline, Bomb(armed)).is_ok());
    }
    let unwound = catch_unwind(AssertUnwindSafe(|| wheel.clear()));
    assert!(unwound.is_err(), "the value's panic propagates");
}

#[test]
fn clear_on_a_growable_wheel_ends_empty_when_a_drop_panics() {
    let mut wheel = Wheel::new();
    clear_with_a_bomb(&mut wheel);
    assert_empty_and_working(&mut wheel);
}

#[test]
fn clear_on_a_fixed_wheel_ends_empty_when_a_drop_panics() {
    let mut wheel: FixedWheel<Bomb, 4> = FixedWheel::new();
    clear_with_a_bomb(&mut wheel);
    assert_empty_and_working(&mut wheel);
}

#[test]
fn ids_cleared_by_a_panicking_clear_are_stale_and_do_not_touch_new_timers() {
    let mut wheel: FixedWheel<Bomb, 4> = FixedWheel::new();
    let _a = wheel.try_insert(10, Bomb(true)).ok().unwrap();
    let b = wheel.try_insert(10, Bomb(false)).ok().unwrap();
    let c = wheel.try_insert(10, Bomb(false)).ok().unwrap();
    let unwound = catch_unwind(AssertUnwindSafe(|| wheel.clear()));
    assert!(unwound.is_err());
    // Every timer is gone, so their ids are stale.
    assert!(wheel.cancel(b).is_none());
    assert!(wheel.cancel(c).is_none());
    wheel.validate();
    let d = wheel.try_insert(10, Bomb(false)).ok().unwrap();
    wheel.validate();
    let fired: Vec<_> = wheel.advance(10).map(|e| e.id).collect();
    assert_eq!(fired, [d]);
    wheel.validate();
}

#[test]
fn a_drain_dropped_early_removes_the_rest_when_a_drop_panics() {
    let mut wheel = Wheel::new();
    for (deadline, armed) in [(10, false), (20, true), (30, false), (40, false)] {
        wheel.insert(deadline, Bomb(armed));
    }
    let unwound = catch_unwind(AssertUnwindSafe(|| {
        let mut drain = wheel.drain();
        let first = drain.next().expect("four pending");
        assert!(!first.value.0, "drain yields in storage order");
        drop(drain);
    }));
    assert!(unwound.is_err(), "the value's panic propagates");
    assert_empty_and_working(&mut wheel);
}

#[test]
fn every_other_value_is_dropped_when_a_drop_panics() {
    /// Counts its drops; panics in its own drop if armed.
    struct Counted(Rc<Cell<usize>>, bool);
    impl Drop for Counted {
        fn drop(&mut self) {
            self.0.set(self.0.get() + 1);
            if self.1 {
                panic!("value drop panics");
            }
        }
    }
    let drops = Rc::new(Cell::new(0));
    let fill = |wheel: &mut Wheel<Counted>| {
        for t in 0..5u64 {
            wheel.insert(t * 100, Counted(drops.clone(), t == 1));
        }
    };

    let mut wheel = Wheel::new();
    fill(&mut wheel);
    assert!(catch_unwind(AssertUnwindSafe(|| wheel.clear())).is_err());
    assert_eq!(drops.get(), 5, "clear drops every value");
    assert!(wheel.is_empty());

    drops.set(0);
    fill(&mut wheel);
    assert!(catch_unwind(AssertUnwindSafe(|| drop(wheel))).is_err());
    assert_eq!(drops.get(), 5, "dropping the wheel drops every value");
}

//! Running user code so that its panic stops here: the one way the crate
//! catches a panic.
//!
//! A caught panic's payload is user code too: `panic_any(value)` makes the
//! payload `value`, whose drop may itself panic, and dropping the `Err` of
//! a `catch_unwind` outside any catch would unwind into the driver after
//! all. So the payload is dropped under a catch of its own, as is the
//! payload of that drop's panic, if any.
//!
//! A `Drop` impl that drops user code has nobody to return a count to: it
//! leaves its caught panics in a count of the thread's, which the thread's
//! next call of [`take_uncounted`] adds to the service's statistics (the
//! driver before each sleep, a callback executor's thread after a drop).

use core::any::Any;
use core::cell::Cell;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Runs `f`, catching its panic; `false` if it panicked.
pub(crate) fn run_caught(f: impl FnOnce()) -> bool {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(()) => true,
        Err(payload) => {
            drop_payload(payload);
            false
        }
    }
}

/// Drops `value`, catching a panic from its drop; `false` if there was one.
pub(crate) fn drop_caught<T>(value: T) -> bool {
    run_caught(move || drop(value))
}

std::thread_local! {
    /// Panics caught by [`drop_uncounted`] on this thread, not yet counted.
    static UNCOUNTED: Cell<u64> = const { Cell::new(0) };
}

/// Drops `value` where no count can be returned (inside a `Drop`), catching
/// a panic from its drop and leaving it for [`take_uncounted`].
pub(crate) fn drop_uncounted<T>(value: T) {
    run_uncounted(move || drop(value));
}

/// Runs `f` where no count can be returned, catching its panic and leaving
/// it for [`take_uncounted`].
pub(crate) fn run_uncounted(f: impl FnOnce()) {
    if !run_caught(f) {
        let _ = UNCOUNTED.try_with(|n| n.set(n.get() + 1));
    }
}

/// The panics [`drop_uncounted`] caught on this thread since the last call.
pub(crate) fn take_uncounted() -> u64 {
    UNCOUNTED.try_with(|n| n.replace(0)).unwrap_or(0)
}

/// Drops a caught panic's payload without letting its drop unwind: a drop
/// that panics leaves a payload of its own (a message, as a rule), dropped
/// the same way; past a few such, the last one is leaked.
pub(crate) fn drop_payload(payload: Box<dyn Any + Send>) {
    let mut payload = payload;
    for _ in 0..3 {
        match catch_unwind(AssertUnwindSafe(move || drop(payload))) {
            Ok(()) => return,
            Err(again) => payload = again,
        }
    }
    core::mem::forget(payload);
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// Panics as it is dropped.
    struct Bomb;

    impl Drop for Bomb {
        fn drop(&mut self) {
            panic!("a payload that panics on drop");
        }
    }

    #[test]
    fn a_payload_that_panics_on_drop_does_not_unwind_past_the_catch() {
        assert!(!run_caught(|| std::panic::panic_any(Bomb)));
        assert!(!drop_caught(Bomb));
        assert!(run_caught(|| ()));
    }

    #[test]
    fn a_panic_caught_in_a_drop_is_counted_once_by_the_next_take() {
        take_uncounted();
        drop_uncounted(Bomb);
        drop_uncounted(7);
        drop_uncounted(Bomb);
        assert_eq!(take_uncounted(), 2);
        assert_eq!(take_uncounted(), 0);
    }
}

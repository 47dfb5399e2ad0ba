//! The RAM figures the docs state for a 32-bit Cortex-M (where a `u64` is
//! aligned to 8, as it is not on i686, whose figures `tests/memory.rs`
//! pins): `FixedWheel` per wheel and per timer, `WakerQueue` per queue and
//! per task, in the default 64 × 11 geometry and without `alloc`.

use core::mem::size_of;
use core::task::Waker;

use wheel_core::{FixedWheel, WakerQueue};

use crate::{check_eq, Outcome, Test};

pub static TESTS: &[Test] = &[
    ("sizes_fixed_wheel", fixed_wheel),
    ("sizes_waker_queue", waker_queue),
];

/// 2 968 B a wheel (944 B at 8 × 22); 28 B a `u32` or `Waker` timer, 32 B
/// a `u64` one. Eight timers at a time, so that the rounding to 8 bytes is
/// the same.
fn fixed_wheel() -> Outcome {
    check_eq!(size_of::<FixedWheel<u64, 0>>(), 2_968);
    check_eq!(size_of::<FixedWheel<u64, 0, 8, 22>>(), 944);
    check_eq!(
        size_of::<FixedWheel<u32, 9>>() - size_of::<FixedWheel<u32, 1>>(),
        8 * 28
    );
    check_eq!(
        size_of::<FixedWheel<u64, 9>>() - size_of::<FixedWheel<u64, 1>>(),
        8 * 32
    );
    check_eq!(
        size_of::<FixedWheel<Waker, 9>>() - size_of::<FixedWheel<Waker, 1>>(),
        8 * 28
    );
    Ok(())
}

/// 3 308 B a queue and 36 B a task, rounded up to 8 bytes.
fn waker_queue() -> Outcome {
    check_eq!(size_of::<WakerQueue<1>>(), 3_308 + 36);
    check_eq!(size_of::<WakerQueue<9>>(), 3_308 + 9 * 36);
    check_eq!(
        size_of::<WakerQueue<64>>(),
        (3_308 + 64 * 36_usize).div_ceil(8) * 8
    );
    Ok(())
}

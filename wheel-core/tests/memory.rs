//! The RAM a `FixedWheel` and a `WakerQueue` take, as their docs state it,
//! pinned for a few value types, capacities and geometries on this target
//! (run on a 64-bit host and on i686 by ci/i686.sh).

use core::mem::{align_of, size_of};
use core::task::Waker;

use wheel_core::{ArrayStorage, FixedWheel, TimerWheel, WakerQueue};

/// Pointer width: 4 or 8 bytes.
const P: usize = size_of::<usize>();
/// A deadline's alignment: 8, but 4 on i686.
const A: usize = align_of::<u64>();

fn round_up(bytes: usize, align: usize) -> usize {
    bytes.div_ceil(align) * align
}

/// Bytes per timer beside its deadline and links, as the docs state it:
/// `T` beside a 32-bit generation and a tag, at least 12 bytes; the tag
/// takes no room when `T` has a niche for it.
fn entry<T>() -> usize {
    let align = align_of::<T>().max(4);
    let niche = size_of::<Option<T>>() == size_of::<T>();
    if niche {
        round_up(4 + size_of::<T>(), align)
    } else {
        round_up(8usize.max(align_of::<T>()) + size_of::<T>(), align).max(12)
    }
}

/// `FixedWheel<T, N, SLOTS, LEVELS>` as its docs state it.
fn fixed_wheel<T, const N: usize, const SLOTS: usize, const LEVELS: usize>() -> usize {
    // One list a slot in a fixed wheel: a slot is its occupied bit's word
    // share and one 4-byte head; the due list one head, beside the word of
    // occupied levels.
    let tables = round_up(12 + LEVELS * (8 + 4 * SLOTS), A);
    let stage = if cfg!(feature = "alloc") { P } else { 0 };
    let per_timer = 16 + entry::<T>();
    let storage = round_up(N * per_timer + P, A);
    round_up(8 + tables + P + stage + storage + 8 + 16, A)
}

macro_rules! pin {
    ($($t:ty, $n:literal, $slots:literal, $levels:literal;)*) => {$(
        assert_eq!(
            size_of::<TimerWheel<$t, ArrayStorage<$t, $n>, $slots, $levels>>(),
            fixed_wheel::<$t, $n, $slots, $levels>(),
            "{} x {} in {} x {}", stringify!($t), $n, $slots, $levels
        );
    )*};
}

#[test]
fn a_fixed_wheel_takes_what_its_docs_say() {
    pin! {
        (), 1, 64, 11;
        u32, 1, 64, 11;
        u32, 3, 64, 11;
        u64, 64, 64, 11;
        [u64; 3], 7, 64, 11;
        Waker, 32, 64, 11;
        &'static str, 5, 16, 16;
        u32, 100, 8, 22;
        (u32, u32, u32), 9, 2, 64;
    }
    // The default geometry's two figures, per wheel and per timer.
    // Without `alloc` there is no staging box: one pointer less.
    let per_wheel =
        if P == 8 { 2_976 } else { 2_960 } - if cfg!(feature = "alloc") { 0 } else { P };
    assert_eq!(size_of::<FixedWheel<u64, 0>>(), per_wheel, "per wheel");
    assert_eq!(
        size_of::<FixedWheel<u64, 2>>() - size_of::<FixedWheel<u64, 1>>(),
        32,
        "per timer with a u64"
    );
}

#[test]
fn a_waker_queue_takes_what_its_docs_say() {
    // The near cells (a deadline, a waker and a tag byte each, 16 of
    // them, their least and latest bound deadlines, a word of taken
    // bits and the least's cell), the wheel (64 x 11), the index (8
    // bytes a task), the earliest deadline, the staleness flag and the
    // walked slot.
    for (n, size) in [
        (1, size_of::<WakerQueue<1>>()),
        (8, size_of::<WakerQueue<8>>()),
        (64, size_of::<WakerQueue<64>>()),
    ] {
        let wheel = fixed_wheel::<Waker, 0, 64, 11>() + n * (16 + entry::<Waker>());
        let index = n * 8;
        let near = round_up(16 * (8 + size_of::<Option<Waker>>() + 1) + 8 + 8 + 4 + 1, A);
        assert_eq!(
            size,
            round_up(near + wheel + index + 8 + 1 + 24 + A, A),
            "{n} tasks"
        );
    }
    assert_eq!(
        16 + entry::<Waker>() + 8,
        if P == 8 { 48 } else { 36 },
        "per task"
    );
}

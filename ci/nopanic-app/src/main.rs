//! A bare-metal program that calls every `FixedWheel` and `WakerQueue`
//! operation on inputs the optimiser cannot see, and whose panic handler
//! calls a function that exists nowhere: if any of those operations can
//! reach a panic, the program fails to link. Built by `ci/nopanic.sh`.
//!
//! Left out, because panicking is their job: `validate` (an invariant
//! check for tests). `Wheel`, `BucketWheel` and `cascade_ahead` need
//! `alloc`, which a bare-metal build without an allocator does not have.
#![no_std]
#![no_main]

use core::fmt::{self, Write};
use core::hint::black_box;
use core::panic::PanicInfo;
use core::task::Waker;

use wheel_core::{ArrayStorage, FixedWheel, TimerId, TimerWheel, WakerQueue};

/// The reset entry point; no runtime crate, so the linker starts here.
#[no_mangle]
pub extern "C" fn _start() -> ! {
    fixed_wheel(FixedWheel::<u32, 8>::new());
    fixed_wheel(FixedWheel::<u32, 8>::starting_at(black_box(u64::MAX - 3)));
    fixed_wheel(FixedWheel::<[u8; 24], 3>::default());
    let small: TimerWheel<u16, ArrayStorage<u16, 5>, 8, 22> =
        TimerWheel::with_geometry(black_box(7));
    fixed_wheel(small);
    let tiny: TimerWheel<u64, ArrayStorage<u64, 2>, 2, 64> =
        TimerWheel::with_geometry(black_box(1 << 36));
    fixed_wheel(tiny);
    waker_queue::<1>(WakerQueue::new());
    waker_queue::<16>(WakerQueue::default());
    // Past the 16 near cells: the wheel, the index and their paths, which
    // a queue whose entries all fit the cells compiles away.
    waker_queue::<40>(WakerQueue::new());
    halt()
}

/// Every operation of a fixed wheel, in an order the optimiser cannot
/// predict: its inputs go through `black_box`.
fn fixed_wheel<T: Default, const N: usize, const SLOTS: usize, const LEVELS: usize>(
    mut wheel: TimerWheel<T, ArrayStorage<T, N>, SLOTS, LEVELS>,
) {
    let mut ids = [TimerId::from_bits(black_box(u64::MAX)); 4];
    for (k, id) in ids.iter_mut().enumerate() {
        match wheel.try_insert(black_box(k as u64 * 1_000), T::default()) {
            Ok(inserted) => *id = inserted,
            Err(full) => {
                let mut sink = Sink;
                let _ = write!(sink, "{full:?} {full}");
                black_box(full.into_inner());
            }
        }
    }
    let id = black_box(ids[1]);
    black_box(wheel.reschedule(id, black_box(u64::MAX)));
    black_box(wheel.deadline(id));
    black_box(wheel.get(id).is_some());
    if let Some(value) = wheel.get_mut(id) {
        *value = T::default();
    }
    black_box(wheel.id_at(black_box(id.index())));
    black_box(TimerId::from_bits(black_box(id.to_bits())));
    black_box(wheel.cancel(black_box(ids[2])).is_some());
    black_box((wheel.len(), wheel.is_empty(), wheel.capacity(), wheel.now()));
    let mut sink = Sink;
    let _ = write!(sink, "{wheel:?}");
    if let Some(tick) = wheel.next_expiration() {
        let mut advance = wheel.advance(black_box(tick));
        let _ = write!(sink, "{advance:?}");
        if let Some(expired) = advance.next() {
            black_box((expired.id, expired.deadline));
        }
        black_box(advance.size_hint());
        drop(advance);
    }
    for expired in wheel.advance(black_box(u64::MAX / 2)) {
        black_box(expired.deadline);
    }
    let drain = wheel.drain();
    let _ = write!(sink, "{drain:?}");
    black_box(drain.len());
    drop(drain);
    black_box(wheel.try_insert(black_box(3), T::default()).is_ok());
    wheel.clear();
    black_box(&wheel);
}

/// Every operation of a waker queue, the full queue's included.
fn waker_queue<const N: usize>(mut queue: WakerQueue<N>) {
    let waker = Waker::noop();
    black_box(queue.schedule_wake(black_box(500), waker));
    black_box(queue.schedule_wake(black_box(200), &waker.clone()));
    black_box(queue.next_expiration(black_box(100)));
    black_box(queue.next_expiration(black_box(u64::MAX)));
    black_box((queue.len(), queue.is_empty()));
    let mut sink = Sink;
    let _ = write!(sink, "{queue:?}");
    black_box(&queue);
}

/// Formatting goes nowhere: only whether it can panic matters.
struct Sink;

impl Write for Sink {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        black_box(s);
        Ok(())
    }
}

fn halt() -> ! {
    loop {
        core::hint::spin_loop();
    }
}

#[panic_handler]
fn panic(_: &PanicInfo) -> ! {
    extern "C" {
        /// Defined nowhere: a reachable panic leaves it unresolved.
        fn a_wheel_core_operation_can_panic() -> !;
    }
    // SAFETY: never runs; the program only links if nothing calls it.
    unsafe { a_wheel_core_operation_can_panic() }
}

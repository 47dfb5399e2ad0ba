//! A bare-metal program that drives a `FixedWheel`, so CI proves wheel-core
//! needs neither `std` nor an allocator. Build it with
//! `cargo build --manifest-path ci/nostd-app/Cargo.toml --target thumbv7em-none-eabihf`.
#![no_std]
#![no_main]

use core::hint::black_box;
use core::panic::PanicInfo;

use wheel_core::FixedWheel;

/// The reset entry point; no runtime crate, so the linker starts here.
#[no_mangle]
pub extern "C" fn _start() -> ! {
    let mut wheel: FixedWheel<u32, 8> = FixedWheel::new();
    for (value, deadline) in [(1, 30), (2, 10), (3, 1 << 40)] {
        // `black_box` keeps the optimiser from folding the whole wheel away.
        if wheel.try_insert(black_box(deadline), value).is_err() {
            halt();
        }
    }
    let mut sum = 0u32;
    while let Some(tick) = wheel.next_expiration() {
        for expired in wheel.advance(tick) {
            sum += expired.value;
        }
    }
    black_box(sum);
    halt()
}

fn halt() -> ! {
    loop {
        core::hint::spin_loop();
    }
}

#[panic_handler]
fn panic(_: &PanicInfo) -> ! {
    halt()
}

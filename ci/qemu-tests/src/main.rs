//! wheel-core's behaviour tests as Cortex-M firmware: `bash ci/qemu.sh`
//! builds it for thumbv7em-none-eabihf and runs it on QEMU's mps2-an386.
//! Each test's result goes to the host over semihosting, then
//! `N passed, M failed` as the last result line, and the exit status says
//! whether all passed.
#![no_std]
#![no_main]

mod queue;
mod sizes;
mod wheel;

use core::panic::PanicInfo;

use cortex_m_rt::entry;
use cortex_m_semihosting::debug::{self, EXIT_FAILURE, EXIT_SUCCESS};
use cortex_m_semihosting::hprintln;

/// Why a test failed: the check's text and line.
pub struct Failure {
    check: &'static str,
    line: u32,
}

/// What a test returns.
pub type Outcome = Result<(), Failure>;

/// A test: its name and body.
pub type Test = (&'static str, fn() -> Outcome);

/// Fails the test, naming the check, when `cond` is false.
#[macro_export]
macro_rules! check {
    ($cond:expr) => {
        if !$cond {
            return Err($crate::Failure {
                check: stringify!($cond),
                line: line!(),
            });
        }
    };
}

/// Fails the test when the two differ, naming the comparison.
#[macro_export]
macro_rules! check_eq {
    ($left:expr, $right:expr) => {
        $crate::check!($left == $right)
    };
}

#[entry]
fn main() -> ! {
    let (mut passed, mut failed) = (0u32, 0u32);
    for (name, test) in wheel::TESTS.iter().chain(queue::TESTS).chain(sizes::TESTS) {
        match test() {
            Ok(()) => {
                passed += 1;
                hprintln!("test {} ... ok", name);
            }
            Err(Failure { check, line }) => {
                failed += 1;
                hprintln!("test {} ... FAILED: {} (line {})", name, check, line);
            }
        }
    }
    hprintln!("{} passed, {} failed", passed, failed);
    debug::exit(if failed == 0 {
        EXIT_SUCCESS
    } else {
        EXIT_FAILURE
    });
    loop {
        cortex_m::asm::wfi();
    }
}

#[panic_handler]
fn panic(info: &PanicInfo) -> ! {
    hprintln!("panicked: {}", info);
    debug::exit(EXIT_FAILURE);
    loop {
        cortex_m::asm::wfi();
    }
}

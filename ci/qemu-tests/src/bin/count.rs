//! `WakerQueue` against embassy's `ConstGenericQueue` on the emulated
//! Cortex-M4: instructions a call, counted, at 8, 64 and 512 pending
//! tasks, in the shapes of `wheel-bench`'s `embassy` bench (all but `idle`
//! and `ticker`). `bash ci/qemu-count.sh` builds it and runs it on QEMU
//! with `-icount shift=6`, where each instruction advances the virtual
//! clock by 64 ns, so SysTick (the core's 25 MHz clock on mps2-an386)
//! counts 1.6 a instruction: a span's reading is short of its
//! instructions by less than one.
//! Instructions are not a Cortex-M4's cycles (a load takes one more, a
//! taken branch two or three more), but such a core has no predictor and
//! no overlap to hide what it executes, as the host's has.
#![no_std]
#![no_main]

use core::hint::black_box;
use core::ptr;
use core::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use core::task::{RawWaker, RawWakerVTable, Waker};

use cortex_m::peripheral::syst::SystClkSource;
use cortex_m::peripheral::SYST;
use cortex_m_rt::entry;
use cortex_m_semihosting::debug::{self, EXIT_FAILURE, EXIT_SUCCESS};
use cortex_m_semihosting::hprintln;
use embassy_time_queue_utils::queue_generic::ConstGenericQueue;
use wheel_core::WakerQueue;

// The queues' shared calls, as the host bench has them.
#[path = "../../../../wheel-bench/benches/embassy/queues.rs"]
mod queues;
use queues::Queue;

/// Nanoseconds of virtual time a SysTick count stands for (25 MHz).
const NS_PER_COUNT: u64 = 40;
/// Nanoseconds of virtual time an instruction takes: `-icount shift=6`.
const NS_PER_INSTRUCTION: u64 = 64;

/// Instructions `counts` SysTick counts stand for, rounded.
fn instructions(counts: u64) -> u64 {
    (counts * NS_PER_COUNT + NS_PER_INSTRUCTION / 2) / NS_PER_INSTRUCTION
}
/// Far deadlines of the pending tasks: the clock never gets there.
const FAR: u64 = 1 << 40;
/// Calls timed together.
const BATCH: usize = 8;
/// Batches a shape runs, after as many untimed.
const BATCHES: usize = 400;

/// The tasks woken and not yet run, as an executor's run queue; a task's
/// waker data is its number.
static WOKEN: [AtomicU32; 1024] = [const { AtomicU32::new(0) }; 1024];
static WOKEN_LEN: AtomicUsize = AtomicUsize::new(0);

static VTABLE: RawWakerVTable = RawWakerVTable::new(clone, wake, wake, drop);

fn clone(data: *const ()) -> RawWaker {
    RawWaker::new(data, &VTABLE)
}

fn wake(data: *const ()) {
    let len = WOKEN_LEN.load(Ordering::Relaxed);
    if let Some(slot) = WOKEN.get(len) {
        slot.store(data.addr() as u32, Ordering::Relaxed);
        WOKEN_LEN.store(len + 1, Ordering::Relaxed);
    }
}

fn drop(_: *const ()) {}

/// Task `k`'s waker.
fn task(k: usize) -> Waker {
    // SAFETY: the vtable's functions never dereference the data pointer,
    // which is only the task's number, and clone hands back the same vtable.
    unsafe { Waker::from_raw(RawWaker::new(ptr::without_provenance(k), &VTABLE)) }
}

/// The next woken task to run, if any.
fn run_next() -> Option<usize> {
    let len = WOKEN_LEN.load(Ordering::Relaxed).checked_sub(1)?;
    WOKEN_LEN.store(len, Ordering::Relaxed);
    Some(WOKEN[len].load(Ordering::Relaxed) as usize)
}

/// SysTick, counting down from 2^24 - 1 at the core's clock.
struct Counter(SYST);

impl Counter {
    /// SysTick counts while `f` runs ([`instructions`] converts them),
    /// with the cost of an empty span taken off by the caller. A span must
    /// stay under 2^24 counts (10 million instructions).
    fn count(&mut self, f: impl FnOnce()) -> u64 {
        self.0.clear_current();
        let start = SYST::get_current();
        f();
        let end = SYST::get_current();
        u64::from(start.wrapping_sub(end) & 0x00ff_ffff)
    }
}

/// The shapes, each a function of the queue, its pending tasks and the
/// counter, returning instructions a call over its timed batches.
#[derive(Clone, Copy)]
enum Shape {
    /// `schedule_wake` for 8 tasks not queued, earlier than the `n - 4`
    /// pending; the batch is then fired untimed.
    NewTask,
    /// `schedule_wake` for a queued task at a later deadline: no change.
    Repoll,
    /// `next_expiration` with one task due, `n + 4` tasks due in turn.
    Expire,
    /// `next_expiration` waking 8 tasks at once, `n - 4` pending.
    Burst,
    /// `next_expiration` with one task due, tasks waiting at random.
    Mixed,
    /// A time driver's whole work per alarm in `Mixed`: the expiry, each
    /// woken task's wait again, and a re-arm when one asks for it.
    Driver,
}

const SHAPES: [(&str, Shape); 6] = [
    ("new_task", Shape::NewTask),
    ("repoll", Shape::Repoll),
    ("expire", Shape::Expire),
    ("burst", Shape::Burst),
    ("mixed", Shape::Mixed),
    ("driver", Shape::Driver),
];

/// Runs `shape` with `n` tasks pending; instructions a call, the empty
/// span's `overhead` taken off each timed span.
fn run<Q: Queue>(shape: Shape, n: usize, counter: &mut Counter, overhead: u64) -> u64 {
    let mut queue = Q::new();
    let (mut total, mut calls) = (0, 0);
    let mut timed = |counter: &mut Counter, per: usize, f: &mut dyn FnMut()| {
        total += counter.count(f).saturating_sub(overhead);
        calls += per;
    };
    WOKEN_LEN.store(0, Ordering::Relaxed);
    match shape {
        Shape::NewTask | Shape::Burst => {
            for k in 0..n - 4 {
                queue.schedule_wake(FAR + k as u64 * 7_919, &task(k));
            }
            let fresh: [Waker; BATCH] = core::array::from_fn(|k| task(n + k));
            let mut now = 0;
            for round in 0..2 * BATCHES {
                let mut file = || {
                    for (k, waker) in fresh.iter().enumerate() {
                        let at = now + 1 + (k as u64 * 383) % 1_000;
                        black_box(queue.schedule_wake(black_box(at), waker));
                    }
                };
                if round >= BATCHES && matches!(shape, Shape::NewTask) {
                    timed(counter, BATCH, &mut file);
                } else {
                    file();
                }
                now += 1_000;
                let mut fire = || {
                    black_box(queue.next_expiration(black_box(now)));
                };
                if round >= BATCHES && matches!(shape, Shape::Burst) {
                    timed(counter, 1, &mut fire);
                } else {
                    fire();
                }
                WOKEN_LEN.store(0, Ordering::Relaxed);
            }
        }
        Shape::Repoll => {
            let tasks: [Waker; 520] = core::array::from_fn(task);
            for (k, waker) in tasks.iter().enumerate().take(n) {
                queue.schedule_wake(FAR + k as u64 * 7_919, waker);
            }
            let mut k = 0;
            for round in 0..2 * BATCHES {
                let mut repoll = || {
                    for _ in 0..BATCH {
                        k = if k + 1 == n { 0 } else { k + 1 };
                        black_box(queue.schedule_wake(black_box(FAR * 2), &tasks[k]));
                    }
                };
                if round >= BATCHES {
                    timed(counter, BATCH, &mut repoll);
                } else {
                    repoll();
                }
            }
        }
        Shape::Expire => {
            let tasks: [Waker; 524] = core::array::from_fn(task);
            let count = n + 4;
            let mut due = [0u64; 524];
            for k in 0..count {
                due[k] = (k as u64 + 1) * 97;
                queue.schedule_wake(due[k], &tasks[k]);
            }
            let period = count as u64 * 97;
            let mut next = 0;
            for round in 0..2 * BATCHES {
                let mut expire = || {
                    for k in 0..BATCH {
                        let t = (next + k) % count;
                        black_box(queue.next_expiration(black_box(due[t])));
                    }
                };
                if round >= BATCHES {
                    timed(counter, BATCH, &mut expire);
                } else {
                    expire();
                }
                for k in 0..BATCH {
                    let t = (next + k) % count;
                    due[t] += period;
                    queue.schedule_wake(due[t], &tasks[t]);
                }
                next = (next + BATCH) % count;
                WOKEN_LEN.store(0, Ordering::Relaxed);
            }
        }
        Shape::Mixed | Shape::Driver => {
            let tasks: [Waker; 520] = core::array::from_fn(task);
            let span = 2 * n as u64 * 97;
            let mut state = 0x9e37_79b9_7f4a_7c15_u64;
            let mut delay = move || {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                1 + (((state >> 32) * span) >> 32)
            };
            for waker in tasks.iter().take(n) {
                queue.schedule_wake(delay(), waker);
            }
            let mut alarm = queue.next_expiration(0);
            for round in 0..2 * BATCHES * BATCH {
                let now = alarm;
                let expire = |queue: &mut Q, alarm: &mut u64| {
                    *alarm = queue.next_expiration(black_box(now));
                };
                // The woken tasks run and wait again; the driver re-arms
                // when asked.
                let mut run = |queue: &mut Q, alarm: &mut u64| {
                    while let Some(k) = run_next() {
                        if queue.schedule_wake(now + delay(), &tasks[k]) {
                            *alarm = queue.next_expiration(now);
                        }
                    }
                };
                match shape {
                    _ if round < BATCHES * BATCH => {
                        expire(&mut queue, &mut alarm);
                        run(&mut queue, &mut alarm);
                    }
                    Shape::Driver => timed(counter, 1, &mut || {
                        expire(&mut queue, &mut alarm);
                        run(&mut queue, &mut alarm);
                    }),
                    _ => {
                        timed(counter, 1, &mut || expire(&mut queue, &mut alarm));
                        run(&mut queue, &mut alarm);
                    }
                }
            }
        }
    }
    instructions(total) / calls.max(1) as u64
}

/// Both queues at one size, a line each shape.
fn sizes<W: Queue, E: Queue>(n: usize, counter: &mut Counter, overhead: u64) {
    for (name, shape) in SHAPES {
        let ours = run::<W>(shape, n, counter, overhead);
        let theirs = run::<E>(shape, n, counter, overhead);
        // Hundredths, rounded.
        let ratio = (ours * 100 + theirs / 2) / theirs.max(1);
        hprintln!(
            "{:<9}{:>4}  {:>10}  {:>8}  {:>3}.{:02}",
            name,
            n,
            ours,
            theirs,
            ratio / 100,
            ratio % 100
        );
    }
}

#[entry]
fn main() -> ! {
    let Some(peripherals) = cortex_m::Peripherals::take() else {
        panic!("the core's peripherals were taken before main");
    };
    let mut syst = peripherals.SYST;
    syst.set_clock_source(SystClkSource::Core);
    syst.set_reload(0x00ff_ffff);
    syst.enable_counter();
    let mut counter = Counter(syst);
    // A known span, two instructions a turn: the counter counts
    // instructions only under `-icount shift=0`, and the script checks
    // this line.
    let turns = |counter: &mut Counter, turns: u32| {
        counter.count(|| {
            // SAFETY: the loop only counts a register down to zero.
            unsafe {
                core::arch::asm!(
                    "1:",
                    "subs {0}, #1",
                    "bne 1b",
                    inout(reg) turns => _,
                    options(nomem, nostack),
                );
            }
        })
    };
    let overhead = counter.count(|| {});
    let (short, long) = (turns(&mut counter, 1_000), turns(&mut counter, 101_000));
    hprintln!(
        "calibration: {} instructions a turn of a two-instruction loop",
        (instructions(long - short) + 50_000) / 100_000
    );
    hprintln!("shape       n  wheel-core   embassy  ratio  (instructions a call)");
    sizes::<WakerQueue<16>, ConstGenericQueue<16>>(8, &mut counter, overhead);
    sizes::<WakerQueue<72>, ConstGenericQueue<72>>(64, &mut counter, overhead);
    sizes::<WakerQueue<520>, ConstGenericQueue<520>>(512, &mut counter, overhead);
    debug::exit(EXIT_SUCCESS);
    loop {
        cortex_m::asm::wfi();
    }
}

#[panic_handler]
fn panic(info: &core::panic::PanicInfo) -> ! {
    hprintln!("panicked: {}", info);
    debug::exit(EXIT_FAILURE);
    loop {
        cortex_m::asm::wfi();
    }
}

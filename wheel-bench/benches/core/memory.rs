//! Heap bytes per pending timer, for every peer: a global allocator that
//! counts live bytes while asked to, and the table the bench prints first.

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicIsize, Ordering};

use tabled::builder::Builder;
use tabled::settings::object::Columns;
use tabled::settings::{Alignment, Style};
use wheel_bench::peers::{BTreeTimers, IndexedHeap, LazyHeap, TimerQueue, WheelTimers};
use wheel_bench::rng::SplitMix64;

use super::{delay_queue, SEED, SPREAD};

/// Counts live heap bytes while [`COUNTING`] is on; off during the timed
/// benchmarks, where it costs one relaxed load per allocation.
struct CountingAllocator;

static COUNTING: AtomicBool = AtomicBool::new(false);
static LIVE_BYTES: AtomicIsize = AtomicIsize::new(0);

fn count(delta: isize) {
    if COUNTING.load(Ordering::Relaxed) {
        LIVE_BYTES.fetch_add(delta, Ordering::Relaxed);
    }
}

// SAFETY: every method forwards its arguments unchanged to `System`, which
// upholds the `GlobalAlloc` contract; the counters never touch the memory.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's `layout` obligations pass straight through.
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            count(layout.size() as isize);
        }
        ptr
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as for `alloc`.
        let ptr = unsafe { System.alloc_zeroed(layout) };
        if !ptr.is_null() {
            count(layout.size() as isize);
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from this allocator, i.e. from `System`, with `layout`.
        unsafe { System.dealloc(ptr, layout) };
        count(-(layout.size() as isize));
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `ptr` came from `System` with `layout`; the caller upholds the rest.
        let new = unsafe { System.realloc(ptr, layout, new_size) };
        if !new.is_null() {
            count(new_size as isize - layout.size() as isize);
        }
        new
    }
}

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

/// Bytes of a queue holding `n` timers, as (empty queue: inline plus heap,
/// heap per timer).
fn memory<Q: TimerQueue>(make: fn() -> Q, n: usize) -> (isize, f64) {
    COUNTING.store(true, Ordering::Relaxed);
    let before = LIVE_BYTES.load(Ordering::Relaxed);
    let mut queue = make();
    let empty = LIVE_BYTES.load(Ordering::Relaxed);
    let mut rng = SplitMix64(SEED);
    for value in 0..n as u64 {
        black_box(queue.insert(1 + rng.below(SPREAD), value));
    }
    let full = LIVE_BYTES.load(Ordering::Relaxed);
    COUNTING.store(false, Ordering::Relaxed);
    drop(queue);
    let inline = std::mem::size_of::<Q>() as isize;
    (inline + empty - before, (full - empty) as f64 / n as f64)
}

/// Prints, as a markdown table, heap bytes per pending timer for every peer
/// at every size, plus what the empty queue holds.
pub fn memory_table(sizes: &[usize]) {
    fn row<Q: TimerQueue>(make: fn() -> Q, sizes: &[usize]) -> Vec<String> {
        let mut empty = 0;
        let mut cells = Vec::new();
        for &n in sizes {
            let (fixed, per_timer) = memory(make, n);
            empty = fixed;
            cells.push(format!("{per_timer:.1}"));
        }
        [Q::NAME.to_string(), empty.to_string()]
            .into_iter()
            .chain(cells)
            .collect()
    }
    let mut table = Builder::new();
    table.push_record(
        [
            "peer".to_string(),
            "empty queue (inline + heap), bytes".to_string(),
        ]
        .into_iter()
        .chain(sizes.iter().map(|n| format!("n = {n}"))),
    );
    table.push_record(row(WheelTimers::new, sizes));
    table.push_record(row(delay_queue, sizes));
    table.push_record(row(LazyHeap::new, sizes));
    table.push_record(row(IndexedHeap::new, sizes));
    table.push_record(row(BTreeTimers::new, sizes));
    let mut table = table.build();
    table
        .with(Style::markdown())
        .modify(Columns::new(1..), Alignment::right());
    println!("\nheap bytes per pending timer: (live bytes with n timers − empty queue) / n");
    println!("{table}\n");
}

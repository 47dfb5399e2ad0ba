//! Recycled entry allocations: each thread keeps the blocks of the timer
//! entries freed on it, by size, and hands them to the next entries it
//! makes, so that a thread scheduling and cancelling in a loop (a request
//! timeout, taken back from its parking spot) allocates nothing once warm.
//!
//! # Ground rules
//!
//! - A block is kept under the exact layout it was allocated with, and
//!   only reused for, or given back to the allocator with, that layout.
//! - Only small blocks aligned to a word are kept ([`MAX_SIZE`]), at most
//!   [`PER_SIZE`] of each size per thread; the rest go back at once.
//! - The cache is the thread's own (a thread-local): no locking, and a
//!   block freed on one thread and reused on another is just memory.
//!   Whatever a thread holds when it ends goes back to the allocator.
//! - The driver frees the entries that reached its wheel, which its own
//!   thread never makes: it marks itself ([`give_to_depot`]) and gives its
//!   blocks to a process-wide depot under a lock, where a thread whose own
//!   list is empty looks before it allocates. A count beside the depot
//!   (a hint, read without the lock) keeps a thread from taking the lock
//!   for a depot that is empty.
//! - A list takes its whole room from the allocator when its first block
//!   is kept, so keeping a block never allocates after that.
//! - Under loom, whose model threads share one OS thread, nothing is kept.

use core::alloc::Layout;
use core::cell::{Cell, RefCell};
use core::ptr::NonNull;
use std::alloc::{alloc, dealloc, handle_alloc_error};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// The largest block kept.
const MAX_SIZE: usize = 128;
/// Blocks kept per size, by a thread.
const PER_SIZE: usize = 64;
/// Blocks kept per size, in the depot.
const DEPOT_PER_SIZE: usize = 4096;
/// The alignment of the blocks kept.
const ALIGN: usize = core::mem::align_of::<usize>();
/// One list per multiple of `ALIGN` up to `MAX_SIZE`.
const SIZES: usize = MAX_SIZE / ALIGN;

/// One thread's kept blocks, by size.
struct Cache {
    blocks: [Vec<NonNull<u8>>; SIZES],
}

impl Drop for Cache {
    fn drop(&mut self) {
        for (class, blocks) in self.blocks.iter_mut().enumerate() {
            let layout = layout_of(class);
            for block in blocks.drain(..) {
                // SAFETY: every kept block was allocated with the layout of
                // its list (`give` checks) and is owned by the cache alone.
                unsafe { dealloc(block.as_ptr(), layout) };
            }
        }
    }
}

std::thread_local! {
    static CACHE: RefCell<Cache> = const {
        RefCell::new(Cache { blocks: [const { Vec::new() }; SIZES] })
    };
    /// This is a driver thread: its frees go to the depot.
    static TO_DEPOT: Cell<bool> = const { Cell::new(false) };
}

/// Blocks that changed threads: freed by a driver, for any thread to take.
struct Depot {
    blocks: [Vec<SendBlock>; SIZES],
}

/// A kept block: unused memory, which any thread may own.
struct SendBlock(NonNull<u8>);

// SAFETY: a kept block is memory that nothing uses; whoever takes it from
// the depot (under its lock) is its only owner.
unsafe impl Send for SendBlock {}

static DEPOT: Mutex<Depot> = Mutex::new(Depot {
    blocks: [const { Vec::new() }; SIZES],
});

/// Blocks in the depot, as of its last change: only ever a hint.
static DEPOT_BLOCKS: AtomicUsize = AtomicUsize::new(0);

/// Marks this thread as a driver: what it frees goes to the depot.
pub(crate) fn give_to_depot() {
    let _ = TO_DEPOT.try_with(|to_depot| to_depot.set(true));
}

fn depot() -> std::sync::MutexGuard<'static, Depot> {
    DEPOT.lock().unwrap_or_else(|e| e.into_inner())
}

/// The list for `layout`, if blocks of it are kept.
fn class_of(layout: Layout) -> Option<usize> {
    let kept = !cfg!(loom)
        && layout.align() == ALIGN
        && layout.size() <= MAX_SIZE
        && layout.size() % ALIGN == 0
        && layout.size() > 0;
    kept.then(|| layout.size() / ALIGN - 1)
}

/// The layout of list `class`'s blocks.
fn layout_of(class: usize) -> Layout {
    // `(class + 1) * ALIGN` is at most `MAX_SIZE` and a multiple of ALIGN.
    Layout::from_size_align((class + 1) * ALIGN, ALIGN).unwrap_or(Layout::new::<usize>())
}

/// A block for `layout`: a kept one, or a new one from the allocator.
///
/// # Panics
/// As `Box::new`, on allocation failure (`handle_alloc_error`).
pub(crate) fn take(layout: Layout) -> NonNull<u8> {
    debug_assert!(layout.size() > 0, "zero-sized entry");
    let kept = class_of(layout).and_then(|class| {
        CACHE
            .try_with(|cache| cache.borrow_mut().blocks[class].pop())
            .ok()
            .flatten()
            .or_else(|| {
                if DEPOT_BLOCKS.load(Ordering::Relaxed) == 0 {
                    return None;
                }
                let block = depot().blocks[class].pop()?;
                DEPOT_BLOCKS.fetch_sub(1, Ordering::Relaxed);
                Some(block.0)
            })
    });
    kept.unwrap_or_else(|| {
        // SAFETY: `layout` is not zero-sized (an entry has a header).
        let block = unsafe { alloc(layout) };
        NonNull::new(block).unwrap_or_else(|| handle_alloc_error(layout))
    })
}

/// Gives a list its whole room the first time a block is kept in it, so
/// that keeping a block allocates only then, never in a steady loop whose
/// blocks in flight outgrow the list's earlier high-water mark.
fn reserve_all<T>(blocks: &mut Vec<T>, room: usize) {
    if blocks.capacity() == 0 {
        blocks.reserve_exact(room);
    }
}

/// Gives `block`, allocated with `layout` and no longer used, to this
/// thread's cache, or back to the allocator.
///
/// # Safety
/// `block` came from [`take`] with this `layout`, and nothing uses it any
/// more (what it held has been dropped).
pub(crate) unsafe fn give(block: NonNull<u8>, layout: Layout) {
    let kept = class_of(layout).is_some_and(|class| {
        if TO_DEPOT.try_with(Cell::get).unwrap_or(false) {
            let blocks = &mut depot().blocks[class];
            let room = blocks.len() < DEPOT_PER_SIZE;
            if room {
                reserve_all(blocks, DEPOT_PER_SIZE);
                blocks.push(SendBlock(block));
                DEPOT_BLOCKS.fetch_add(1, Ordering::Relaxed);
            }
            return room;
        }
        CACHE
            .try_with(|cache| {
                let blocks = &mut cache.borrow_mut().blocks[class];
                let room = blocks.len() < PER_SIZE;
                if room {
                    reserve_all(blocks, PER_SIZE);
                    blocks.push(block);
                }
                room
            })
            .unwrap_or(false)
    });
    if !kept {
        // SAFETY: the caller's contract: allocated with `layout`, unused.
        unsafe { dealloc(block.as_ptr(), layout) };
    }
}

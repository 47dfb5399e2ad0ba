//! Lock-free multi-producer, single-consumer submission queue.
//!
//! Any thread may hand work to the driver through a [`Producer`]; the driver alone drains
//! it through the [`Consumer`]. Producers never lock and never wait on the consumer.
//!
//! # Ground rules
//!
//! * The queue is a singly linked list of blocks of `BLOCK_CAP` places. A push claims the
//!   next global sequence number `seq` with a CAS on `tail`; its item lives in place
//!   `seq % BLOCK_CAP` of block `seq / BLOCK_CAP`.
//! * `tail` stores `seq << 2 | CLOSED | INSTALLING`. The producer that claims the last place of a
//!   block also sets `INSTALLING`; until it has linked a fresh block (`next`, then
//!   `tail.block`, then a Release store of `tail` without the bit) no one can claim. A
//!   producer reads `tail.block` after a bit-free `tail`; if its CAS from that `tail`
//!   succeeds, no install ran in between, so the block it read holds its place.
//! * A queue starts with no block, so that a queue never pushed to costs none. The first
//!   block is `tail.first`, set once by a compare-exchange from null: a push that reads a
//!   null `tail.block` (which stays null until the first block's last place installs the
//!   second) takes its place in `tail.first`, making it first if there is none (a producer
//!   that loses that race frees its own). The consumer's cursor starts in `tail.first`;
//!   while that is null, no place is written.
//! * A producer writes its value, then sets the place's `ready` with Release. That store is
//!   its last touch of the block.
//! * Only the consumer reads places and frees blocks. It frees a block once it has read the
//!   block's last place; that place's producer linked `next` before setting `ready`, and every
//!   other place of the block was read before, so no producer still touches it.
//! * [`Consumer::pop`] never waits. A claimed place whose `ready` is not yet visible makes
//!   [`Consumer::pop`] return `None` and the consumer stays on that place, so items come out
//!   in sequence order, none skipped.
//! * The consumer may close the queue: it sets `CLOSED` in `tail` by a CAS from a bit-free
//!   `tail`, so no install is under way and none starts after. A push that reads `CLOSED`
//!   gives its value back; every place claimed before is still written, and the consumer has
//!   taken everything once `len` is zero.
//! * The last handle to go drops the items in `[head, tail)` and frees the chain. No push or
//!   pop can be running then, since each borrows a handle.

use core::marker::PhantomData;
use core::mem::MaybeUninit;
use core::ptr;

use crossbeam_utils::CachePadded;

use crate::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, Ordering};
use crate::sync::{Backoff, UnsafeCell};

/// Places per block: one allocation serves this many pushes.
#[cfg(not(any(loom, miri)))]
const BLOCK_CAP: usize = 256;
/// Places per block under miri: small, so its tests cross blocks quickly.
#[cfg(miri)]
const BLOCK_CAP: usize = 32;
/// Places per block: two under loom, so a model crosses a block boundary in three pushes.
#[cfg(loom)]
const BLOCK_CAP: usize = 2;

/// Low bit of `tail`: the last place of the tail block is claimed and the next block is not
/// yet published.
const INSTALLING: u64 = 1;
/// Bit of `tail`: the consumer has closed the queue, and no push claims a place again.
const CLOSED: u64 = 2;
/// `tail` keeps the next sequence number above the [`INSTALLING`] and [`CLOSED`] bits.
const SEQ_SHIFT: u32 = 2;

/// For the driver's tests: a producer preempted between its claim and its
/// write, held there until the test lets it go.
#[cfg(all(test, not(loom)))]
pub(crate) mod stall {
    use std::cell::Cell;
    use std::sync::mpsc::{Receiver, Sender};

    /// Where to say the push has claimed its place, and what to wait for.
    type Hold = (Sender<()>, Receiver<()>);

    std::thread_local! {
        static HOLD: Cell<Option<Hold>> = const { Cell::new(None) };
    }

    /// This thread's next push, once it has claimed its place, says so on
    /// `claimed` and waits for a message on `release`.
    pub(crate) fn next_push(claimed: Sender<()>, release: Receiver<()>) {
        HOLD.with(|hold| hold.set(Some((claimed, release))));
    }

    pub(super) fn point() {
        if let Some((claimed, release)) = HOLD.with(Cell::take) {
            let _ = claimed.send(());
            let _ = release.recv();
        }
    }
}

/// Index of sequence number `seq` within its block.
fn place_index(seq: u64) -> usize {
    // The remainder is below BLOCK_CAP, so it fits in usize.
    (seq % BLOCK_CAP as u64) as usize
}

struct Place<T> {
    value: UnsafeCell<MaybeUninit<T>>,
    /// Set, with Release, once `value` is written.
    ready: AtomicBool,
}

struct Block<T> {
    /// The following block; set before the last place's `ready`.
    next: AtomicPtr<Block<T>>,
    places: [Place<T>; BLOCK_CAP],
}

impl<T> Block<T> {
    /// Built in place: `Box::new` of a block built on the stack would copy
    /// its 10 KiB over on every new block.
    fn new() -> Box<Self> {
        let mut block = Box::<Self>::new_uninit();
        let p = block.as_mut_ptr();
        // SAFETY: `p` points to memory for a whole `Block<T>`; each field is written once
        // through a raw place, without making a reference to uninitialised memory, and
        // then all of the block is initialised.
        unsafe {
            ptr::addr_of_mut!((*p).next).write(AtomicPtr::new(ptr::null_mut()));
            for i in 0..BLOCK_CAP {
                let place = ptr::addr_of_mut!((*p).places[i]);
                ptr::addr_of_mut!((*place).value).write(UnsafeCell::new(MaybeUninit::uninit()));
                ptr::addr_of_mut!((*place).ready).write(AtomicBool::new(false));
            }
            block.assume_init()
        }
    }
}

/// Producers' end: where the next push goes.
struct Tail<T> {
    /// `next_seq << SEQ_SHIFT | CLOSED? | INSTALLING?`.
    seq: AtomicU64,
    /// The block holding `next_seq`; changes only while `INSTALLING` is set. Null while
    /// that is the first block.
    block: AtomicPtr<Block<T>>,
    /// The first block, once a push has made it; on the producers' line, which the
    /// consumer reads only until its cursor has a block.
    first: AtomicPtr<Block<T>>,
}

/// The consumer's position in the chain.
struct Cursor<T> {
    seq: u64,
    block: *mut Block<T>,
}

/// Consumer's end.
struct Head<T> {
    /// Touched only by the single [`Consumer`] through `&mut self`, or by the last handle's drop.
    cursor: UnsafeCell<Cursor<T>>,
    /// Copy of `cursor.seq` for [`Producer::len`].
    published: AtomicU64,
}

/// The queue itself, held by its producers and its consumer: the two ends of
/// the chain of blocks.
struct Channel<T> {
    tail: CachePadded<Tail<T>>,
    head: CachePadded<Head<T>>,
    /// The queue owns the `T`s in its blocks, which drop check cannot see through raw pointers.
    _owns: PhantomData<T>,
}

// SAFETY: items only move through the queue (in by a producer, out by the consumer or the
// final drop) and are never shared by reference, so `T: Send` is all that moving `Channel`
// to another thread needs.
unsafe impl<T: Send> Send for Channel<T> {}
// SAFETY: through `&Channel` producers write only places they claimed by CAS, the consumer's
// cursor is reached only through `&mut Consumer`, and the rest is atomics; no `&T` is ever
// handed out, so sharing needs only `T: Send`.
unsafe impl<T: Send> Sync for Channel<T> {}

impl<T> Channel<T> {
    fn new() -> Self {
        Channel {
            tail: CachePadded::new(Tail {
                seq: AtomicU64::new(0),
                block: AtomicPtr::new(ptr::null_mut()),
                first: AtomicPtr::new(ptr::null_mut()),
            }),
            head: CachePadded::new(Head {
                cursor: UnsafeCell::new(Cursor {
                    seq: 0,
                    block: ptr::null_mut(),
                }),
                published: AtomicU64::new(0),
            }),
            _owns: PhantomData,
        }
    }

    /// Claimed places not yet popped; the two loads are not one snapshot.
    fn len(&self) -> usize {
        let head = self.head.published.load(Ordering::Acquire);
        let tail = self.tail.seq.load(Ordering::Acquire) >> SEQ_SHIFT;
        usize::try_from(tail.saturating_sub(head)).unwrap_or(usize::MAX)
    }

    #[inline]
    fn push(&self, value: T) -> Result<u64, Closed<T>> {
        let backoff = Backoff::new();
        // Allocated before claiming the last place, so the install window stays short.
        let mut spare: Option<Box<Block<T>>> = None;
        let mut tail = self.tail.seq.load(Ordering::Acquire);
        loop {
            if tail & CLOSED != 0 {
                return Err(Closed(value));
            }
            if tail & INSTALLING != 0 {
                backoff.snooze();
                tail = self.tail.seq.load(Ordering::Acquire);
                continue;
            }
            let seq = tail >> SEQ_SHIFT;
            let index = place_index(seq);
            let is_last = index + 1 == BLOCK_CAP;
            if is_last && spare.is_none() {
                spare = Some(Block::new());
            }
            let mut block = self.tail.block.load(Ordering::Acquire);
            if block.is_null() {
                block = self.first_block();
            }
            // `seq + 1` cannot overflow: 2^62 pushes would take centuries.
            let claimed = ((seq + 1) << SEQ_SHIFT) | if is_last { INSTALLING } else { 0 };
            match self.tail.seq.compare_exchange_weak(
                tail,
                claimed,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => {
                    // SAFETY: the CAS succeeded from the bit-free `tail` read before `block`,
                    // so `block` holds `seq` (see the ground rules: a null `tail.block` there
                    // means the first block), and the consumer frees it only after reading
                    // `seq`, which this push has not yet written.
                    let block = unsafe { &*block };
                    if is_last {
                        let next = Box::into_raw(spare.take().unwrap_or_else(Block::new));
                        block.next.store(next, Ordering::Release);
                        self.tail.block.store(next, Ordering::Release);
                        self.tail
                            .seq
                            .store((seq + 1) << SEQ_SHIFT, Ordering::Release);
                    }
                    #[cfg(all(test, not(loom)))]
                    stall::point();
                    let place = &block.places[index];
                    place.value.with_mut(|cell| {
                        // SAFETY: the CAS gave this push place `seq` alone, and the consumer
                        // reads it only after the `ready` store below.
                        unsafe { cell.write(MaybeUninit::new(value)) };
                    });
                    place.ready.store(true, Ordering::Release);
                    return Ok(seq);
                }
                Err(current) => {
                    tail = current;
                    backoff.spin();
                }
            }
        }
    }

    /// The first block, made now if no push has made it yet (see the ground rules).
    fn first_block(&self) -> *mut Block<T> {
        let first = self.tail.first.load(Ordering::Acquire);
        if !first.is_null() {
            return first;
        }
        let made = Box::into_raw(Block::new());
        match (self.tail.first).compare_exchange(
            ptr::null_mut(),
            made,
            Ordering::AcqRel,
            Ordering::Acquire,
        ) {
            Ok(_) => made,
            Err(first) => {
                // SAFETY: `made` came from `into_raw` just above and was never published.
                drop(unsafe { Box::from_raw(made) });
                first
            }
        }
    }

    /// Sets `CLOSED` once no install is under way (see the ground rules).
    fn close(&self) {
        let backoff = Backoff::new();
        let mut tail = self.tail.seq.load(Ordering::Acquire);
        while tail & CLOSED == 0 {
            if tail & INSTALLING != 0 {
                backoff.snooze();
                tail = self.tail.seq.load(Ordering::Acquire);
                continue;
            }
            match self.tail.seq.compare_exchange_weak(
                tail,
                tail | CLOSED,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return,
                Err(current) => tail = current,
            }
        }
    }

    /// Whether the place at the consumer's cursor is written: what the next `pop` takes.
    ///
    /// # Safety
    ///
    /// The caller is the one [`Consumer`], so nothing moves the cursor meanwhile.
    unsafe fn head_ready(&self) -> bool {
        self.head.cursor.with(|cursor| {
            // SAFETY: the caller guarantees no concurrent access to the cursor.
            let cursor = unsafe { &*cursor };
            let block = self.cursor_block(cursor);
            // SAFETY: the cursor's block holds `cursor.seq` and is freed only by `pop`.
            !block.is_null()
                && unsafe { &*block }.places[place_index(cursor.seq)]
                    .ready
                    .load(Ordering::Acquire)
        })
    }

    /// The block holding the cursor's place: the cursor's own, or before the first pop the
    /// first block, if the first push has installed it (else null).
    fn cursor_block(&self, cursor: &Cursor<T>) -> *mut Block<T> {
        if cursor.block.is_null() {
            self.tail.first.load(Ordering::Acquire)
        } else {
            cursor.block
        }
    }

    /// # Safety
    ///
    /// The caller has exclusive access to the consumer's cursor: it is the one [`Consumer`]
    /// (borrowed mutably).
    unsafe fn pop(&self) -> Option<T> {
        self.head.cursor.with_mut(|cursor| {
            // SAFETY: the caller guarantees no other access to the cursor.
            let cursor = unsafe { &mut *cursor };
            cursor.block = self.cursor_block(cursor);
            if cursor.block.is_null() {
                return None;
            }
            let index = place_index(cursor.seq);
            // SAFETY: the cursor's block holds `cursor.seq` and is freed only below, when the
            // cursor leaves it.
            let block = unsafe { &*cursor.block };
            let place = &block.places[index];
            if !place.ready.load(Ordering::Acquire) {
                return None;
            }
            let value = place.value.with(|cell| {
                // SAFETY: `ready` (Acquire) makes the producer's write visible, and the cursor
                // moves past this place, so the value is read out exactly once.
                unsafe { cell.read().assume_init() }
            });
            if index + 1 == BLOCK_CAP {
                let next = block.next.load(Ordering::Acquire);
                // A null here would leave the cursor reading the first block again.
                assert!(
                    !next.is_null(),
                    "block ending at seq {} was not linked before its last place was ready",
                    cursor.seq
                );
                // SAFETY: every place of this block has been read, so all its producers have
                // made their last touch (the `ready` store) and no one will reach it again.
                drop(unsafe { Box::from_raw(cursor.block) });
                cursor.block = next;
            }
            cursor.seq += 1;
            self.head.published.store(cursor.seq, Ordering::Release);
            Some(value)
        })
    }
}

impl<T> Drop for Channel<T> {
    fn drop(&mut self) {
        let end = self.tail.seq.load(Ordering::Acquire) >> SEQ_SHIFT;
        let (head, mut block) = self.head.cursor.with_mut(|cursor| {
            // SAFETY: `&mut self`: no handle is left, so no one else reaches the cursor.
            let cursor = unsafe { &*cursor };
            (cursor.seq, self.cursor_block(cursor))
        });
        let mut block_start = head - head % BLOCK_CAP as u64;
        while !block.is_null() {
            // SAFETY: blocks from the cursor's on are live until freed just below.
            let current = unsafe { Box::from_raw(block) };
            for (seq, place) in (block_start..).zip(current.places.iter()) {
                if seq < head || seq >= end {
                    continue;
                }
                let ready = place.ready.load(Ordering::Acquire);
                // Each push borrows a handle, so none can be half done now.
                debug_assert!(ready, "place {seq} claimed but never written");
                if ready {
                    place.value.with_mut(|cell| {
                        // SAFETY: the place is written (`ready`) and not yet popped
                        // (`seq >= head`); the block is freed right after, so no second drop.
                        unsafe { (*cell).assume_init_drop() };
                    });
                }
            }
            block = current.next.load(Ordering::Acquire);
            block_start += BLOCK_CAP as u64;
        }
    }
}

mod ends;

pub use ends::{channel, Closed, Consumer, Producer};

#[cfg(all(test, not(loom)))]
mod tests;

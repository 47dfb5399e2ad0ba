//! The cascading wheel: insert, cancel, reschedule, advance and drain over a
//! [`Storage`] of entries linked into per-slot lists.
//!
//! # Ground rules
//!
//! - A pending timer is on exactly one list, and which one is a function of
//!   the clock and its deadline (`Geometry::place`): a due list iff its
//!   deadline is ≤ `now`; else on level `k`, the most significant digit in
//!   which its deadline differs from `now`, in the slot of its deadline's
//!   digit there. Within a slot (and among the due lists) it is on list
//!   `index % STRIPES` (four lists a slot for a growable wheel, one for a
//!   fixed one: `Heads`). Nothing records where an entry is: `unlink`
//!   computes it again, so every move of the clock must keep each
//!   placement true.
//! - The clock only moves forward, and never past the start of an occupied
//!   slot: `step` stops there, takes the whole slot, then files each of its
//!   timers again relative to the new clock, onto a due list or a strictly
//!   lower level. Every occupied slot lies after the clock's slot on its
//!   level, so the lowest occupied level's first slot is the earliest, and
//!   moving the clock up to its start leaves every other placement true.
//!   Once that slot is taken, nothing is filed before its end, so a caller
//!   that fires what is due in any order (`pop_expired`) lets the clock go
//!   on within it to the target at once.
//! - Bits: a slot's occupied bit is set iff one of its lists is not empty,
//!   and a level's bit in `occupied_levels` iff one of its slots is
//!   occupied; the one exception is the slot being staged, which stays
//!   occupied while it holds staged timers (see `stage`).
//! - Links: the lists run through the slab's links by `u32` index, doubly
//!   linked, ending in `NIL`, a head's `prev` being `NIL`; only taking off
//!   a head touches the tables.
//! - Counts: the live and the staged tables hold `len()` timers between
//!   them, and every other slab entry is on the free list.
//!
//! [`TimerWheel::validate`] checks each of these.

use core::fmt;

use crate::slab::{Sealed, Slab, Storage, TimerId};
use crate::stage::Stage;
use crate::tables::Tables;
use crate::ArrayStorage;
#[cfg(feature = "alloc")]
use crate::VecStorage;

mod api;
mod cascade;
mod iter;
mod lists;
mod peek;
mod queries;
mod storage;
mod validate;

pub use iter::{Advance, Drain};

/// The heads of a slot's lists in a wheel over storage `S`.
pub(crate) type HeadsOf<T, S> = <S as Sealed<T>>::Heads;

/// A timer that came due, as yielded by [`advance`](TimerWheel::advance) and
/// [`drain`](TimerWheel::drain).
///
/// # Examples
/// ```
/// use wheel_core::Wheel;
///
/// let mut wheel = Wheel::new();
/// let id = wheel.insert(3, 'x');
/// let expired = wheel.advance(3).next().unwrap();
/// assert_eq!((expired.id, expired.deadline, expired.value), (id, 3, 'x'));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Expired<T> {
    /// The timer's id, stale from now on.
    pub id: TimerId,
    /// The tick it was due at.
    pub deadline: u64,
    /// What was stored with it.
    pub value: T,
}

/// Where a wheel's earliest pending deadline lies (see `TimerWheel::earliest`).
pub(crate) enum Earliest<H> {
    /// No timer is pending.
    Empty,
    /// Timers are due: the least deadline is on the due lists, these.
    Due(H),
    /// The earliest timers are all due at this tick.
    At(u64),
    /// The earliest timer is in the slot spanning `start ..= last`, on
    /// these lists.
    InSlot { start: u64, last: u64, heads: H },
}

/// A hierarchical timing wheel over a [`Storage`] `S`, with `SLOTS` slots
/// per level and `LEVELS` levels. Use it through [`Wheel`] (growable) or
/// [`FixedWheel`] (fixed capacity, no allocation).
///
/// See the [crate docs](crate) for the design and the promises.
///
/// # Examples
/// ```
/// use wheel_core::Wheel;
///
/// let mut wheel = Wheel::new();
/// wheel.insert(100, "late");
/// wheel.insert(10, "early");
/// let fired: Vec<_> = wheel.advance(100).map(|e| e.value).collect();
/// assert_eq!(fired, ["early", "late"]);
/// ```
pub struct TimerWheel<T, S: Storage<T>, const SLOTS: usize = 64, const LEVELS: usize = 11> {
    now: u64,
    /// The slots of every level, and the due lists: timers whose deadline
    /// is ≤ `now`, which the next `advance` yields first.
    tables: Tables<SLOTS, LEVELS, HeadsOf<T, S>>,
    /// The due list `pop_due` tries first.
    due_cursor: usize,
    /// The next slot to cascade, filed ahead of time (see `cascade_ahead`).
    stage: Stage<SLOTS, LEVELS, HeadsOf<T, S>>,
    slab: Slab<T, S>,
}

/// A growable wheel: entries live in a `Vec`, so [`insert`](Wheel::insert)
/// never fails. The default geometry is 64 slots × 11 levels.
///
/// # Examples
/// ```
/// use wheel_core::Wheel;
///
/// let mut wheel = Wheel::starting_at(1_000);
/// let id = wheel.insert(1_500, "retry");
/// assert_eq!(wheel.deadline(id), Some(1_500));
/// assert!(wheel.advance(1_499).next().is_none());
/// assert_eq!(wheel.advance(1_500).next().unwrap().value, "retry");
/// ```
#[cfg(feature = "alloc")]
#[cfg_attr(docsrs, doc(cfg(feature = "alloc")))]
pub type Wheel<T, const SLOTS: usize = 64, const LEVELS: usize = 11> =
    TimerWheel<T, VecStorage<T>, SLOTS, LEVELS>;

/// A wheel with room for exactly `N` timers, stored inline: it never
/// allocates, and [`try_insert`](TimerWheel::try_insert) hands the value back
/// in [`Full`](crate::Full) when all `N` are pending.
///
/// **Memory.** With `P` the pointer size (4 or 8 bytes),
/// `size_of::<FixedWheel<T, N, SLOTS, LEVELS>>()` is, rounded up to the
/// alignment of a `u64` (8; 4 on i686):
///
/// - per wheel: `LEVELS × (8 + 4 × SLOTS)` for the level tables (a word
///   of occupied bits and one 4-byte list head a slot), plus 72 bytes on a
///   64-bit target, 64 on a 32-bit ARM core (Cortex-M) and 56 on i686,
///   whose `u64` is aligned to 4 (the clock, the word of occupied
///   levels, the due list, the due cursor, the staging pointer, the slab's
///   counts and padding; one pointer less without the `alloc` feature);
/// - per timer: `16 + E`: the deadline and two links, then the entry,
///   `E` = `size_of::<T>() + 8` (a tag and a generation) rounded up to
///   `T`'s alignment (at least 4), and at least 12; for a `T` with a niche
///   the tag can use (a reference, a [`Waker`](core::task::Waker)),
///   `size_of::<T>() + 4` rounded up. (A `T` aligned to less than 4 may
///   pack tighter than this.)
///
/// | 64 slots × 11 levels | per wheel | per `u32` timer | per `u64` timer | per `Waker` |
/// |----------------------|-----------|-----------------|-----------------|-------------|
/// | 64-bit target        | 2 976 B   | 28 B            | 32 B            | 40 B        |
/// | Cortex-M (32-bit)    | 2 968 B   | 28 B            | 32 B            | 28 B        |
/// | i686                 | 2 960 B   | 28 B            | 32 B            | 28 B        |
///
/// A smaller geometry shrinks the tables: 8 slots × 22 levels take 880 B
/// instead of 2 904 B. A growable [`Wheel`] keeps four lists a slot (its
/// cascades walk them in lockstep, so that cache misses overlap); a fixed
/// wheel keeps one, as it is small enough to stay in cache or runs on a
/// core without one: a quarter of the tables, and fewer lists to look at.
/// `tests/memory.rs` pins these figures on the host and on i686, and
/// `ci/qemu.sh` on a Cortex-M4.
///
/// # Examples
/// ```
/// use wheel_core::FixedWheel;
///
/// let mut wheel: FixedWheel<u8, 1> = FixedWheel::new();
/// let id = wheel.try_insert(5, 1).unwrap();
/// assert_eq!(wheel.try_insert(6, 2).unwrap_err().into_inner(), 2);
/// wheel.cancel(id);
/// assert!(wheel.try_insert(6, 2).is_ok());
/// ```
pub type FixedWheel<T, const N: usize, const SLOTS: usize = 64, const LEVELS: usize = 11> =
    TimerWheel<T, ArrayStorage<T, N>, SLOTS, LEVELS>;

impl<T, S: Storage<T>, const SLOTS: usize, const LEVELS: usize> fmt::Debug
    for TimerWheel<T, S, SLOTS, LEVELS>
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TimerWheel")
            .field("now", &self.now)
            .field("len", &self.len())
            .field("next_expiration", &self.next_expiration())
            .finish_non_exhaustive()
    }
}

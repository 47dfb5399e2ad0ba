//! A `no_std` cascading hierarchical timing wheel: exact to the tick, O(1)
//! insert, cancel and reschedule, and no allocation per timer.
//!
//! Time is a `u64` tick that you pass in; there is no clock, thread or I/O
//! here. [`Wheel<T>`] grows (feature `alloc`, on by default);
//! [`FixedWheel<T, N>`] holds exactly `N` timers inline and never allocates.
//!
//! ```
//! use wheel_core::Wheel;
//!
//! let mut wheel = Wheel::new();
//! let request = wheel.insert(30, "request 7 timed out");
//! wheel.insert(10, "heartbeat");
//! wheel.cancel(request); // the reply came in time
//!
//! // A driver sleeps until `next_expiration`, then advances to it.
//! while let Some(tick) = wheel.next_expiration() {
//!     for expired in wheel.advance(tick) {
//!         assert_eq!(expired.deadline, tick); // exact, never early
//!         assert_eq!(expired.value, "heartbeat");
//!     }
//! }
//! assert!(wheel.is_empty());
//! ```
//!
//! # Design
//!
//! `LEVELS` levels of `SLOTS` slots (default 64 × 11). Slot `s` of level `k`
//! spans `SLOTS^k` ticks. A timer sits on the level of the most significant
//! base-`SLOTS` digit in which its deadline differs from `now`, in the slot of
//! its deadline's digit there. When the clock reaches a slot on level `k > 0`,
//! the whole slot is taken and each timer is filed again relative to the new
//! clock, on a strictly lower level — so every timer comes out at exactly its
//! deadline tick, unlike Linux's non-cascading wheel, which rounds up.
//!
//! | level | slot span (64 slots) | level range |
//! |-------|----------------------|-------------|
//! | 0     | 1 tick               | 64 ticks    |
//! | 1     | 64 ticks             | 2¹² ticks   |
//! | 2     | 2¹² ticks            | 2¹⁸ ticks   |
//! | k     | 2^(6k) ticks         | 2^(6k+6) ticks |
//! | 10    | 2⁶⁰ ticks            | all of `u64` |
//!
//! Eleven 6-bit levels cover all 64 bits, so **no deadline is clamped or
//! rejected**, `u64::MAX` included, and no overflow wheel is needed. Other
//! geometries are a type parameter away ([`TimerWheel::with_geometry`]):
//! `SLOTS` a power of two from 2 to 64 and `LEVELS` = ⌈64 / log2 `SLOTS`⌉.
//!
//! Each level keeps a 64-bit occupancy bitmap and the wheel keeps one bit per
//! level, so the next occupied slot is two `trailing_zeros` away:
//! [`next_expiration`](TimerWheel::next_expiration) is O(1), and advancing
//! across any stretch of empty time costs nothing per empty tick.
//!
//! Timers live in a slab of entries linked by `u32` index into intrusive
//! doubly-linked slot lists. In a growable [`Wheel`] each slot is four
//! lists (entry `i` on list `i % 4`), which a cascade walks in lockstep so
//! that its cache misses overlap — at a million timers this halves the cost
//! of firing; a [`FixedWheel`], small enough for its links to stay in
//! cache, has one list a slot. Each entry
//! has a generation, so a stale
//! [`TimerId`] never touches a newer timer. A [`Storage`] type parameter picks
//! a `Vec` ([`VecStorage`]) or an inline array ([`ArrayStorage`]): one
//! implementation serves both.
//!
//! **No cascade stalls** (with `alloc`): a slot on a high level can hold
//! millions of timers, and cascading it walks every one while the timers due
//! at that tick wait. [`TimerWheel::cascade_ahead`] lets a driver file them
//! ahead, a chunk at a time while it would otherwise sleep, into a copy of
//! the lower levels as they will be at the slot's start; when the clock gets
//! there, the copy is swapped in.
//!
//! **Memory:** at most 32 bytes per timer beyond `size_of::<T>()` for any `T`
//! aligned to 16 bytes or less (the deadline and two links in one array; a
//! generation and the entry's tag beside the value in another), plus the
//! fixed tables: 11 levels × 64 slots × 4 lists × 4 bytes ≈ 11 KiB for a
//! [`Wheel`], about a quarter of that (2.9 KiB with the words of occupied
//! bits) for a [`FixedWheel`] (a smaller geometry shrinks them: 8 slots ×
//! 22 levels is 880 B in a `FixedWheel`), and as much again for staging
//! the first time `cascade_ahead` is called.
//!
//! # Promises
//!
//! 1. `advance(t)` yields exactly the pending timers with deadline ≤
//!    `max(t, now())` and sets `now()` to that; time never goes backwards.
//! 2. Never early: nothing comes out of `advance(t)` with a deadline >
//!    `max(t, now())`.
//! 3. Order: first the timers already due when `advance` was called, in any
//!    order; then the rest in non-decreasing deadline order.
//! 4. A timer inserted or rescheduled to a deadline ≤ `now()` is due: the next
//!    `advance` yields it.
//! 5. Dropping [`Advance`] early loses nothing: what it did not yield stays
//!    pending, already due, and comes out first next time.
//! 6. [`next_expiration`](TimerWheel::next_expiration) is `None` iff empty,
//!    else some `t` in `now() ..= max(now(), earliest deadline)` at which
//!    `advance(t)` makes progress. Looping `advance(next_expiration())` yields
//!    each timer from the call whose argument equals its deadline, with at most
//!    `LEVELS + 1` calls per timer.
//! 7. Stale ids are inert.
//! 8. A [`FixedWheel<T, N>`] holds exactly `N` timers.
//!
//! # Features
//!
//! - `alloc` (default): [`Wheel`], [`VecStorage`] and [`BucketWheel`].
//!   Without it the crate needs neither `std` nor an allocator.
//!
//! # Panics
//!
//! No operation of [`FixedWheel`] or [`WakerQueue`] can panic, whatever its
//! input: `ci/nopanic.sh` links a bare-metal release build that calls each
//! of them with a panic handler that cannot link, so a reachable panic
//! fails the build. Lookups that internal invariants keep in range are
//! written so that the compiler sees it: a mask, a clamp, or a `get` with a
//! fallback that is never taken. What can still panic, and why:
//!
//! - `validate` (on every type): checking invariants and panicking when
//!   one is broken is its job; it is for tests and fuzzing.
//! - [`Wheel::insert`] (feature `alloc`), past `u32::MAX - 1` timers, as
//!   its `# Panics` says; [`TimerWheel::try_insert`] returns [`Full`]
//!   instead. Growing a [`Wheel`] or a [`BucketWheel`] allocates, and an
//!   allocation that fails is the allocator's error handler's business.
//!   A [`Wheel`]'s link lookups keep their bounds checks, which its
//!   invariants never fail (the fallbacks are for the fixed storage only).
//! - A [`Waker`](core::task::Waker) whose `wake` panics: the panic unwinds
//!   out of the `WakerQueue` call that woke it, leaving the queue
//!   consistent (see [`WakerQueue`]).
//! - A value whose `drop` panics, where a wheel drops values (`clear`, a
//!   `drain` dropped early, dropping the wheel): the other values are
//!   still dropped, a cleared or drained wheel is left empty, and the
//!   panic then unwinds out of that call. A second value whose drop
//!   panics while the first panic unwinds aborts the process, as in a
//!   `Vec`'s drain.
//! - With debug assertions on, `debug_assert!`s guard internal invariants;
//!   one that fires is a bug in this crate.
//!
//! # Timers that are never cancelled
//!
//! [`BucketWheel<T>`] (feature `alloc`) is for fire-and-forget timers, such
//! as a game server's delays: no ids, no cancel, and each slot keeps its
//! timers by value in chunks that double from 4 KiB to 64 KiB. Filing is an
//! append and a cascade reads memory in order, where [`Wheel`] follows a
//! linked list through its slab; it keeps promises 1–6 above. With 4M
//! timers of 0.5–15 s and 24-byte values it took them out about 4× faster
//! than [`Wheel`], at 32 bytes a timer instead of 48.
//!
//! # A timer queue for an async executor
//!
//! [`WakerQueue<N>`] is the queue an embedded executor's time driver keeps
//! (embassy's contract: `schedule_wake` on each pending poll,
//! `next_expiration` when the alarm fires): one entry per task at its
//! earliest deadline, O(1) amortised per call where a scanning queue pays
//! for every entry, no allocation, `const fn new` for a `static`.
#![no_std]
#![cfg_attr(docsrs, feature(doc_cfg))]
#![forbid(unsafe_code)]
#![warn(clippy::std_instead_of_core, clippy::alloc_instead_of_core)]

#[cfg(feature = "alloc")]
extern crate alloc;

#[cfg(feature = "alloc")]
mod bucket;
mod error;
mod geometry;
mod level;
mod slab;
mod stage;
mod tables;
mod timer_id;
mod waker_queue;
mod wheel;

#[cfg(feature = "alloc")]
pub use bucket::{BucketAdvance, BucketWheel};
pub use error::Full;
#[cfg(feature = "alloc")]
pub use slab::VecStorage;
pub use slab::{ArrayStorage, Storage, TimerId};
pub use waker_queue::WakerQueue;
#[cfg(feature = "alloc")]
pub use wheel::Wheel;
pub use wheel::{Advance, Drain, Expired, FixedWheel, TimerWheel};

// The README's examples run as doctests (they use `Wheel`, hence `alloc`),
// so the crates.io page stays true.
#[cfg(all(doctest, feature = "alloc"))]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

//! A threaded timer service over [`wheel_core`]: any number of threads
//! schedule and cancel through a lock-free queue; one driver thread owns
//! the cascading wheels, follows the monotonic clock, runs callbacks and
//! wakes [`Sleep`] / [`Timeout`] futures under any executor.
//!
//! ```
//! use std::sync::mpsc;
//! use std::time::Duration;
//! use wheel_sync::TimerService;
//!
//! let timers = TimerService::new();
//! let (tx, rx) = mpsc::channel();
//! timers.schedule(Duration::from_millis(5), move || tx.send("fired").unwrap()).unwrap();
//!
//! // A request timeout that is almost always cancelled:
//! let timeout = timers.schedule(Duration::from_secs(1), || unreachable!()).unwrap();
//! assert!(timeout.cancel());
//!
//! assert_eq!(rx.recv().unwrap(), "fired");
//! ```
//!
//! # How it works
//!
//! The protocol is told in one place, the ground rules of `shared.rs`;
//! [docs/design-sync.md](https://github.com/wheel-rs/timing-wheels/blob/main/docs/design-sync.md)
//! explains each choice and what it was measured to pay.
//!
//! - **A timer with a handle is one allocation**: a state word that decides
//!   fire-vs-cancel with one compare-exchange, and the closure (or a
//!   `Sleep`'s waker) right after it. A [`Sleep`] makes it on its first
//!   poll, as tokio's does: a [`Timeout`] around a future that is ready at
//!   once costs no timer.
//! - **Submission never locks** (but to wake a sleeping driver, at most
//!   once a sleep) **and waits only for a driver it has outrun**: the
//!   push that ends each few thousand to a spot's queue (a `schedule` of
//!   any kind, a `Sleep`'s first poll or reset) waits until the driver
//!   has taken that queue up to a few thousand before it, or until the
//!   driver has taken nothing for 100 ms, so threads that outnumber the
//!   cores cannot grow the queues without bound (a push also waits, for
//!   a moment, while another thread of its spot installs the queue's next
//!   block)
//!   ([`Stats::waits_for_driver`] counts the waits). A new timer waits in its thread's parking spot
//!   if it finds an empty place there (a spot has 64; a park looks at
//!   eight from the place a cancel last emptied or the one after the last
//!   park, so a thread that makes a request as it ends one keeps up to 64
//!   in flight there, answered in any order), else goes into the spot's
//!   lock-free MPSC queue (a queue per spot, so threads on different
//!   spots never write one tail); the one driver thread takes what is
//!   queued each round, and what is parked once it is due within 100 ms
//!   (the longest the driver sleeps with timers pending). A cancel takes a
//!   parked timer back, so a request timeout answered in time, more than
//!   about 100 ms before its deadline, with up to that many in flight on
//!   its thread, never reaches the driver. Each thread counts
//!   its timers, and the handles it makes hold the service, on lines it
//!   owns, however the service is held (by reference, a clone per task, the
//!   global functions).
//! - **The driver** files what was submitted into a cascading wheel,
//!   fires what is due in deadline order (callbacks run, sleeps' tasks
//!   woken, panics caught and counted), and sleeps until the next
//!   expiration. A producer wakes it when its timer is due before
//!   that (and once every few thousand queued timers, so that a burst is
//!   filed as it comes), never for a cancel: a loop of schedule and cancel
//!   costs the driver about one wake-up per nap.
//! - **Detached callbacks** ([`TimerService::schedule_detached`]) have no
//!   handle, so no entry either: the closure travels through its spot's queue by
//!   value (inline when it is at most two words) and waits in a wheel of
//!   its own, a [`wheel_core::BucketWheel`], which files and fires in
//!   memory order; the driver fires both wheels in deadline order together.
//! - **Many deadlines in one task**: a [`DelayQueue`] keeps its items in a
//!   wheel of its own and hands each back when due; the whole queue is one
//!   timer of the service's, due at its earliest deadline.
//! - **Intervals**: an [`Interval`] ticks at a fixed period on one timer
//!   that each tick moves ([`Sleep::reset`]): it allocates once and is at
//!   most one pending timer for its life. [`MissedTickBehavior`] picks the next
//!   deadline after a tick observed when the following one was already due.
//! - **Time**: deadlines round *up* to the tick (1 ms by default) and the
//!   clock rounds down, so nothing fires early; under light load a timer
//!   fires within about one tick of its deadline. After a stall, everything
//!   that came due fires once, in deadline order among what the driver has
//!   taken: a round takes at most a few thousand queued timers, so a
//!   larger backlog fires a batch at a time, each batch in order.
//! - **Cancel** is O(1) from any thread, never waits for the driver and
//!   sends it nothing. The closure (or a dropped `Sleep`'s waker) is
//!   dropped at once, on the cancelling thread. A timer taken back from its
//!   parking spot is freed with its handle; one the driver has filed leaves
//!   a dead copy (holding its entry) in the driver's wheel until its deadline
//!   or until the dead copies outnumber the live ones, when the driver
//!   drops them all (it looks at least every 100 ms while timers are
//!   pending, or once a tick with a coarser tick).
//!
//! # The global service
//!
//! [`sleep`], [`sleep_until`], [`timeout`], [`timeout_at`], [`interval`]
//! and [`interval_at`] work on [`TimerService::global`], a service started
//! on first use that lives as long as the process: what `tokio::time::sleep`
//! is to a tokio runtime, with no runtime context to enter. Threads making
//! sleeps this way never contend on one count.
//!
//! ```
//! use std::time::Duration;
//!
//! # let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
//! rt.block_on(async {
//!     wheel_sync::sleep(Duration::from_millis(1)).await;
//!     let reply = wheel_sync::timeout(Duration::from_secs(1), async { "pong" }).await;
//!     assert_eq!(reply, Ok("pong"));
//! });
//! ```
//!
//! # Testing with a manual clock
//!
//! A service built with [`Builder::manual_clock`] has a clock that stands
//! still until [`TimerService::advance`] moves it, as a tokio runtime's
//! after `tokio::time::pause`. `advance` returns once every timer due by
//! the new time has fired, in deadline order, so a test of code that waits
//! an hour takes no time and does not depend on the machine's speed. Take
//! deadlines from [`TimerService::now`].
//!
//! ```
//! use std::task::{Context, Poll, Waker};
//! use std::time::Duration;
//!
//! let timers = wheel_sync::TimerService::builder().manual_clock().build().unwrap();
//! let start = timers.now();
//! let mut heartbeat = timers.interval(Duration::from_secs(30));
//! let mut cx = Context::from_waker(Waker::noop());
//! assert_eq!(heartbeat.poll_tick(&mut cx), Poll::Ready(start));
//! timers.advance(Duration::from_secs(30)).unwrap();
//! assert_eq!(heartbeat.poll_tick(&mut cx), Poll::Ready(start + Duration::from_secs(30)));
//! ```
//!
//! # Counting and limits
//!
//! [`TimerService::pending`] counts every live timer — callbacks, and the
//! sleeps and timeouts that are waiting (polled, not yet due) — and falls
//! at once on fire, cancel or drop. Without a limit, each thread counts on
//! a cache line of its own and `pending` sums them: exact whenever no timer
//! is being scheduled or cancelled meanwhile.
//! [`Builder::max_pending`] bounds what [`TimerService::schedule`],
//! [`TimerService::schedule_detached`] and their `_at` forms admit, exactly
//! under concurrency. Futures
//! count toward that total (so they can make `schedule` refuse) but are
//! never refused themselves: a `Sleep` has no way to report an error.
//!
//! # Lifetime and shutdown
//!
//! A service runs as a runtime does: until [`TimerService::shutdown`] is
//! called or its last `TimerService` clone is dropped, whichever comes
//! first. What it hands out (a [`TimerHandle`], a [`Sleep`], a [`Timeout`],
//! an [`Interval`], a [`DelayQueue`]) does not keep it running. Each clone
//! counts itself on its own thread's line, so cloning the service into
//! every task costs no contended write; the last drop anywhere finds that
//! no clone is left and ends the service at once.
//!
//! The account is exact: every timer scheduled `Ok` before `shutdown`
//! returned fired, was cancelled, or is counted in
//! [`ShutdownReport::unfired`] (its callback dropped unrun, its task
//! woken), and [`TimerService::pending`] is 0 after; a schedule that races
//! the shutdown either gets `Ok` and is counted so, or gets
//! [`ScheduleError::Shutdown`]. A `shutdown` that returns `Ok` or
//! [`ShutdownError::AlreadyShutDown`], from any thread, returns with the
//! service down; called from the driver's own thread (a callback, a
//! wake) it returns [`ShutdownError::FromCallback`] at once, and the
//! service runs on. (The shutdown closes the service's
//! queue; a timer whose place in it was claimed before is written however
//! late, and the driver waits for it: between the claim and the write a
//! push runs no user code, takes no lock and cannot panic.) A `Sleep` or
//! `Timeout` that was pending
//! at shutdown panics when polled (as tokio's do): it would otherwise hang
//! forever or lie about its deadline. A `Sleep` reset after the shutdown to
//! a deadline already passed completes, as any sleep reset so does.
//!
//! # User code and the driver
//!
//! Nothing a user hands in can stop the driver: a panic in a callback, in
//! a waker's wake, or in the drop of a closure's captures (on fire, cancel
//! and shutdown) is caught and counted in [`Stats::panicked`], and
//! everything else still fires. A `Sleep`'s waker is cloned only by the
//! `Sleep` itself, and dropped by it, on the thread that polls or drops
//! it, but for the one the driver wakes: a wake consumes its waker, as in
//! tokio's driver, so a task that kept no other reference has its waker
//! dropped inside that wake, caught with it. A panic in the `Sleep`'s own
//! clone or drop of a waker unwinds into that poll or drop, as in any
//! future (tokio's `Sleep` included). No user code runs inside other user
//! code: the driver runs callbacks and wakes wakers one after another, as
//! it fires their timers in deadline order, holding no lock (so a wake
//! that blocks holds up the timers after it, as a callback does); and
//! polling, resetting or dropping a `Sleep` never runs a waker (a reset to
//! a deadline already passed has the driver wake the task waiting on the
//! sleep). A cancelled callback's closure is dropped by the thread that
//! cancels it, at once. Callbacks run on the driver thread, so they must
//! be short; a service built with [`Builder::callback_executor`] hands them
//! to an executor instead.
//!
//! # Cargo features
//!
//! - `stream` (off by default): [`DelayQueue`] is a `futures_core::Stream`
//!   of [`delay_queue::Expired`] items, as `tokio_util`'s is; it adds the
//!   `futures-core` dependency. Everything else needs no feature.
//!
//! # Never early, and never
//!
//! Deadlines round up to the tick and the clock rounds down. A deadline
//! past what the service can count — `Duration::MAX` from now, more than
//! 2⁶¹ ticks, or more than 584 years past the service's start — never
//! comes due, however far a manual clock is moved; it is never clamped to
//! an earlier one.
#![warn(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod action;
mod builder;
mod caught;
mod clock;
pub mod delay_queue;
mod driver;
mod entry;
mod error;
mod executor;
#[cfg(not(loom))]
mod global;
mod handle;
mod interval;
mod job;
mod lane;
mod lateness;
#[cfg(not(loom))]
mod paused;
mod queue;
mod service;
mod shared;
mod sleep;
mod spot;
mod stats;
mod sync;
mod timeout;

pub use crate::builder::Builder;
pub use crate::delay_queue::DelayQueue;
pub use crate::error::{AdvanceError, ScheduleError, ShutdownError};
#[cfg(not(loom))]
pub use crate::global::{interval, interval_at, sleep, sleep_until, timeout, timeout_at};
pub use crate::handle::TimerHandle;
pub use crate::interval::{Interval, MissedTickBehavior};
pub use crate::lateness::Lateness;
pub use crate::service::TimerService;
pub use crate::sleep::Sleep;
pub use crate::stats::{ShutdownReport, Stats};
pub use crate::timeout::{Elapsed, Timeout};

/// Not part of the API, and not covered by semver: the submission queue,
/// for wheel-model's differential tests (and so the fuzz targets), the loom
/// models in `tests/` and the queue's own doctests.
#[doc(hidden)]
pub mod __private {
    /// The MPSC submission queue.
    pub mod queue {
        pub use crate::queue::{channel, Consumer, Producer};
    }
}

const _: fn() = || {
    fn send<S: Send>() {}
    fn send_sync<S: Send + Sync>() {}
    send_sync::<TimerService>();
    send_sync::<TimerHandle>();
    send::<Sleep>();
    send::<Timeout<core::future::Ready<()>>>();
    send::<Interval>();
    send::<DelayQueue<Vec<u8>>>();
};

// The README's examples run as doctests, so the crates.io page stays true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

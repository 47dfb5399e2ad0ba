//! Maps monotonic `Instant`s to wheel ticks. Deadlines round up, the clock
//! rounds down, so a timer never fires before its deadline.
//!
//! A deadline past what a tick can count (a state word holds 61 bits of
//! tick; at a 1 ns tick that is 73 years), or past what `Instant` holds
//! (`Duration::MAX` from now), maps to [`NEVER`], which the clock never
//! reaches: such a timer never comes due, however far a manual clock moves.
//!
//! A manual clock (for tests) reads the origin plus however far
//! [`TimerService::advance`](crate::TimerService::advance) has moved it.

use std::time::{Duration, Instant};

use crate::entry::MAX_TICK;
use crate::sync::atomic::{AtomicU64, Ordering};

/// The builder's default tick, 1 ms, in nanoseconds.
pub(crate) const DEFAULT_TICK_NS: u64 = 1_000_000;
/// The tick of a deadline that never comes: the clock stops short of it.
pub(crate) const NEVER: u64 = MAX_TICK;

/// Tick 0 starts at `origin`; each tick lasts `tick`.
#[derive(Debug)]
pub(crate) struct Clock {
    origin: Instant,
    tick_ns: u64,
    /// A manual clock's time: nanoseconds past the origin. `None` for the
    /// monotonic clock.
    manual_ns: Option<AtomicU64>,
}

impl Clock {
    /// # Panics
    /// If `tick` is zero or longer than `u64::MAX` nanoseconds (the builder
    /// rejects both first).
    pub(crate) fn new(tick: Duration, manual: bool) -> Self {
        let tick_ns = u64::try_from(tick.as_nanos()).expect("tick fits in u64 ns");
        assert!(tick_ns > 0, "tick must be positive");
        Self {
            origin: Instant::now(),
            tick_ns,
            manual_ns: manual.then(|| AtomicU64::new(0)),
        }
    }

    /// A manual clock's time in nanoseconds past the origin; `None` for the
    /// monotonic clock. Acquire: what a thread did before it advanced the
    /// clock to this time is visible after this read.
    #[inline]
    pub(crate) fn manual_ns(&self) -> Option<u64> {
        self.manual_ns.as_ref().map(|ns| ns.load(Ordering::Acquire))
    }

    /// Moves a manual clock forward by `by` (saturating after 584 years);
    /// returns how far it moved, or `None` for the monotonic clock, which
    /// only time moves.
    pub(crate) fn advance(&self, by: Duration) -> Option<Duration> {
        let by = u64::try_from(by.as_nanos()).unwrap_or(u64::MAX);
        self.move_manual(|t| t.saturating_add(by))
    }

    /// Moves a manual clock to the start of `tick`, unless it is there or
    /// past it already; returns how far it moved, or `None` for the
    /// monotonic clock. One step from read to write: threads moving it to
    /// the same tick at once leave it there, where adding the distance each
    /// had read would have carried it past.
    pub(crate) fn advance_to_tick(&self, tick: u64) -> Option<Duration> {
        let to = tick.saturating_mul(self.tick_ns);
        self.move_manual(|t| t.max(to))
    }

    /// Sets a manual clock to `to(its time)`, in one step; returns how far
    /// it moved.
    fn move_manual(&self, to: impl Fn(u64) -> u64) -> Option<Duration> {
        let ns = self.manual_ns.as_ref()?;
        // Release: pairs with `manual_ns`'s Acquire.
        let before = ns
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |t| Some(to(t)))
            .unwrap_or_else(|t| t);
        Some(Duration::from_nanos(to(before) - before))
    }

    /// Nanoseconds from the origin to `t` (0 before it), saturating after
    /// 584 years; u64 arithmetic keeps `schedule` free of 128-bit division.
    #[inline]
    fn ns_since_origin(&self, t: Instant) -> u64 {
        let d = t.saturating_duration_since(self.origin);
        d.as_secs()
            .saturating_mul(1_000_000_000)
            .saturating_add(u64::from(d.subsec_nanos()))
    }

    /// The first tick at or after `deadline`: a timer due then fires when
    /// the clock reaches that tick, never before `deadline`; [`NEVER`] past
    /// the range, and for a tick the clock never begins.
    #[inline]
    pub(crate) fn tick_for(&self, deadline: Instant) -> u64 {
        let ns = self.ns_since_origin(deadline);
        if ns == u64::MAX {
            // Saturated: at or past 584 years, beyond what the clock counts.
            return NEVER;
        }
        let tick = self.by_tick(|tick_ns| {
            let tick = ns.div_ceil(tick_ns);
            // The clock stops at `u64::MAX` ns, inside tick
            // `u64::MAX / tick_ns`: rounded up past it, a deadline in that
            // last partial tick would wait for a tick that never begins.
            if tick > u64::MAX / tick_ns {
                NEVER
            } else {
                tick
            }
        });
        tick.min(NEVER)
    }

    /// `divide(tick_ns)`, with the default tick passed as a constant: the
    /// division then compiles to a multiplication, where a 64-bit division
    /// by a variable costs tens of cycles per schedule.
    #[inline(always)]
    fn by_tick(&self, divide: impl Fn(u64) -> u64) -> u64 {
        if self.tick_ns == DEFAULT_TICK_NS {
            divide(DEFAULT_TICK_NS)
        } else {
            Self::by_other_tick(divide, self.tick_ns)
        }
    }

    /// The other branch of [`by_tick`](Self::by_tick), kept out of line:
    /// inlined, LLVM saw that both branches divide by `tick_ns` and merged
    /// them into the variable division.
    #[inline(never)]
    fn by_other_tick(divide: impl Fn(u64) -> u64, tick_ns: u64) -> u64 {
        divide(tick_ns)
    }

    /// Now, as the driver and the clock's own reads see it: a manual
    /// clock's time, else the monotonic clock's. Under loom, which has no
    /// clock, the monotonic one stays at the origin: a model's deadlines are
    /// in the past or an hour away, and how fast the machine runs an
    /// interleaving cannot change what the driver does in it (loom aborts
    /// a model whose runs of one interleaving differ).
    #[inline]
    pub(crate) fn now(&self) -> Instant {
        match self.manual_ns() {
            Some(ns) => self.origin + Duration::from_nanos(ns),
            None if cfg!(loom) => self.origin,
            None => Instant::now(),
        }
    }

    /// The tick `delay` from now, rounded up ([`NEVER`] past the range).
    #[inline]
    pub(crate) fn tick_after(&self, delay: Duration) -> u64 {
        self.deadline_after(delay).1
    }

    /// The deadline `delay` from now, and its tick. Past what `Instant`
    /// holds, the deadline is the latest this clock can name and the tick
    /// is [`NEVER`]: the deadline is for display, the tick decides.
    #[inline]
    pub(crate) fn deadline_after(&self, delay: Duration) -> (Instant, u64) {
        let now = self.now();
        match now.checked_add(delay) {
            Some(deadline) => (deadline, self.tick_for(deadline)),
            None => (self.never_instant(), NEVER),
        }
    }

    /// The deadline `delay` from now, as [`deadline_after`](Self::deadline_after)
    /// gives it, without its tick: for a `Sleep`, whose first poll finds it.
    #[inline]
    pub(crate) fn instant_after(&self, delay: Duration) -> Instant {
        let now = self.now();
        now.checked_add(delay)
            .unwrap_or_else(|| self.never_instant())
    }

    /// An `Instant` for a deadline that never comes: a millennium past the
    /// origin, beyond the 584 years of nanoseconds the clock counts, so
    /// that no reading of this clock reaches it.
    pub(crate) fn never_instant(&self) -> Instant {
        const MILLENNIUM: Duration = Duration::from_secs(1000 * 365 * 24 * 3600);
        self.origin.checked_add(MILLENNIUM).unwrap_or(self.origin)
    }

    /// When `tick` begins, as a deadline: [`never_instant`](Self::never_instant)
    /// for [`NEVER`], or past what `Instant` holds.
    pub(crate) fn deadline_of(&self, tick: u64) -> Instant {
        match tick {
            NEVER.. => self.never_instant(),
            _ => self
                .instant_of(tick)
                .unwrap_or_else(|| self.never_instant()),
        }
    }

    /// The last tick that has begun.
    #[inline]
    pub(crate) fn now_tick(&self) -> u64 {
        self.tick_at(self.now())
    }

    /// The last tick begun at `t`; never [`NEVER`], which stays ahead.
    #[inline]
    pub(crate) fn tick_at(&self, t: Instant) -> u64 {
        let ns = self.ns_since_origin(t);
        self.by_tick(|tick_ns| ns / tick_ns).min(NEVER - 1)
    }

    /// How far `t` is past the start of `tick`, in nanoseconds (0 if not);
    /// u64 arithmetic, for the driver's per-timer lateness.
    #[inline]
    pub(crate) fn ns_past(&self, t: Instant, tick: u64) -> u64 {
        self.ns_since_origin(t)
            .saturating_sub(tick.saturating_mul(self.tick_ns))
    }

    /// When `tick` begins; `None` if that is beyond what `Instant` can hold.
    pub(crate) fn instant_of(&self, tick: u64) -> Option<Instant> {
        let ns = u128::from(tick) * u128::from(self.tick_ns);
        let secs = u64::try_from(ns / 1_000_000_000).ok()?;
        let sub = (ns % 1_000_000_000) as u32;
        self.origin.checked_add(Duration::new(secs, sub))
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// Threads that each found the same next deadline move the clock to it
    /// at once: it ends on the deadline, not past it, and the distances
    /// they report add up to the one it moved (`advance_to_next` from
    /// several threads; a step computed from a time read before the other
    /// thread's move carried the clock past the deadline).
    #[test]
    fn moves_to_one_tick_at_once_leave_the_clock_on_it() {
        let tick = 7;
        for _ in 0..if cfg!(miri) { 4 } else { 200 } {
            let clock = Clock::new(Duration::from_millis(1), true);
            let start = std::sync::Barrier::new(2);
            let moved: Vec<Duration> = std::thread::scope(|s| {
                let mover = || {
                    start.wait();
                    clock.advance_to_tick(tick).unwrap()
                };
                let other = s.spawn(mover);
                vec![mover(), other.join().unwrap()]
            });
            assert_eq!(clock.manual_ns(), Some(7_000_000));
            assert_eq!(moved.iter().sum::<Duration>(), Duration::from_millis(7));
        }
    }

    #[test]
    fn a_move_to_a_tick_already_passed_leaves_the_clock_where_it_is() {
        let clock = Clock::new(Duration::from_millis(1), true);
        assert_eq!(
            clock.advance(Duration::from_millis(10)),
            Some(Duration::from_millis(10))
        );
        assert_eq!(clock.advance_to_tick(4), Some(Duration::ZERO));
        assert_eq!(clock.manual_ns(), Some(10_000_000));
        assert_eq!(
            Clock::new(Duration::from_millis(1), false).advance_to_tick(4),
            None
        );
    }
}

//! Maps monotonic `Instant`s to wheel ticks. Deadlines round up, the clock
//! rounds down, so a timer never fires before its deadline.

use std::time::{Duration, Instant};

use crate::entry::MAX_TICK;

/// Tick 0 starts at `origin`; each tick lasts `tick`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Clock {
    origin: Instant,
    tick_ns: u64,
}

impl Clock {
    /// # Panics
    /// If `tick` is zero or longer than `u64::MAX` nanoseconds (the builder
    /// rejects both first).
    pub(crate) fn new(tick: Duration) -> Self {
        let tick_ns = u64::try_from(tick.as_nanos()).expect("tick fits in u64 ns");
        assert!(tick_ns > 0, "tick must be positive");
        Self {
            origin: Instant::now(),
            tick_ns,
        }
    }

    /// The first tick at or after `deadline`: a timer due then fires when
    /// the clock reaches that tick, never before `deadline`.
    pub(crate) fn tick_for(&self, deadline: Instant) -> u64 {
        let ns = deadline.saturating_duration_since(self.origin).as_nanos();
        let ticks = ns.div_ceil(u128::from(self.tick_ns));
        u64::try_from(ticks).unwrap_or(MAX_TICK).min(MAX_TICK)
    }

    /// The tick `delay` from now, rounded up.
    pub(crate) fn tick_after(&self, delay: Duration) -> u64 {
        match Instant::now().checked_add(delay) {
            Some(deadline) => self.tick_for(deadline),
            None => MAX_TICK,
        }
    }

    /// The last tick that has begun.
    pub(crate) fn now_tick(&self) -> u64 {
        let ns = Instant::now().saturating_duration_since(self.origin).as_nanos();
        u64::try_from(ns / u128::from(self.tick_ns)).unwrap_or(MAX_TICK)
    }

    /// When `tick` begins; `None` if that is beyond what `Instant` can hold.
    pub(crate) fn instant_of(&self, tick: u64) -> Option<Instant> {
        let ns = u128::from(tick) * u128::from(self.tick_ns);
        let secs = u64::try_from(ns / 1_000_000_000).ok()?;
        let sub = (ns % 1_000_000_000) as u32;
        self.origin.checked_add(Duration::new(secs, sub))
    }
}

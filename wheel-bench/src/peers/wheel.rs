//! `wheel_core::Wheel` behind [`TimerQueue`]: the thing being measured.

use wheel_core::{TimerId, Wheel};

use super::TimerQueue;

/// A [`wheel_core::Wheel<u64>`] of `SLOTS` slots × `LEVELS` levels (by
/// default 64 × 11, wheel-core's own default), grown on demand like every
/// other peer. The other geometries are here so the `geometry` benchmarks can
/// pick the default.
///
/// # Examples
/// ```
/// use wheel_bench::peers::{TimerQueue, WheelTimers};
///
/// let mut wheel = WheelTimers::new();
/// let id = wheel.insert(5, 50);
/// assert_eq!(wheel.cancel(id), Some(50));
/// assert_eq!(wheel.cancel(id), None); // ids are generational
/// ```
///
/// Another geometry, named for the benchmark ids:
/// ```
/// use wheel_bench::peers::{TimerQueue, WheelTimers};
///
/// let mut wheel = WheelTimers::<16, 16>::with_geometry();
/// wheel.insert(1 << 40, 7);
/// let mut fired = Vec::new();
/// assert_eq!(wheel.advance(1 << 40, |value| fired.push(value)), 1);
/// assert_eq!(fired, [7]);
/// assert_eq!(<WheelTimers<16, 16>>::NAME, "wheel-core-16x16");
/// ```
#[derive(Debug)]
pub struct WheelTimers<const SLOTS: usize = 64, const LEVELS: usize = 11> {
    wheel: Wheel<u64, SLOTS, LEVELS>,
}

impl WheelTimers {
    /// An empty wheel of the default geometry whose clock is at tick 0.
    ///
    /// # Examples
    /// ```
    /// use wheel_bench::peers::{TimerQueue, WheelTimers};
    ///
    /// assert!(WheelTimers::new().is_empty());
    /// ```
    pub fn new() -> Self {
        Self::with_geometry()
    }
}

impl<const SLOTS: usize, const LEVELS: usize> WheelTimers<SLOTS, LEVELS> {
    /// An empty wheel of this geometry whose clock is at tick 0; the
    /// geometry is checked at compile time, as [`Wheel::with_geometry`] does.
    ///
    /// # Examples
    /// ```
    /// use wheel_bench::peers::{TimerQueue, WheelTimers};
    ///
    /// assert!(WheelTimers::<8, 22>::with_geometry().is_empty());
    /// ```
    pub fn with_geometry() -> Self {
        Self {
            wheel: Wheel::with_geometry(0),
        }
    }
}

impl<const SLOTS: usize, const LEVELS: usize> Default for WheelTimers<SLOTS, LEVELS> {
    fn default() -> Self {
        Self::with_geometry()
    }
}

impl<const SLOTS: usize, const LEVELS: usize> TimerQueue for WheelTimers<SLOTS, LEVELS> {
    type Key = TimerId;

    const NAME: &'static str = match (SLOTS, LEVELS) {
        (64, 11) => "wheel-core",
        (32, 13) => "wheel-core-32x13",
        (16, 16) => "wheel-core-16x16",
        (8, 22) => "wheel-core-8x22",
        _ => "wheel-core-other",
    };

    #[inline]
    fn insert(&mut self, deadline: u64, value: u64) -> TimerId {
        self.wheel.insert(deadline, value)
    }

    #[inline]
    fn cancel(&mut self, key: TimerId) -> Option<u64> {
        self.wheel.cancel(key)
    }

    #[inline]
    fn reschedule(&mut self, key: &mut TimerId, deadline: u64) -> bool {
        self.wheel.reschedule(*key, deadline)
    }

    #[inline]
    fn advance(&mut self, now: u64, mut fire: impl FnMut(u64)) -> usize {
        let mut fired = 0;
        for expired in self.wheel.advance(now) {
            fire(expired.value);
            fired += 1;
        }
        fired
    }

    #[inline]
    fn len(&self) -> usize {
        self.wheel.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn far_deadlines_cascade_to_their_exact_tick() {
        let mut wheel = WheelTimers::new();
        wheel.insert(1 << 40, 1);
        wheel.insert((1 << 40) + 1, 2);
        let mut fired = Vec::new();
        assert_eq!(wheel.advance((1 << 40) - 1, |v| fired.push(v)), 0);
        assert_eq!(wheel.advance(1 << 40, |v| fired.push(v)), 1);
        assert_eq!(fired, [1]);
        assert_eq!(wheel.len(), 1);
    }

    #[test]
    fn every_benchmarked_geometry_has_its_own_name() {
        let names = [
            WheelTimers::<64, 11>::NAME,
            WheelTimers::<32, 13>::NAME,
            WheelTimers::<16, 16>::NAME,
            WheelTimers::<8, 22>::NAME,
            WheelTimers::<4, 32>::NAME,
        ];
        assert_eq!(
            names,
            [
                "wheel-core",
                "wheel-core-32x13",
                "wheel-core-16x16",
                "wheel-core-8x22",
                "wheel-core-other",
            ]
        );
    }
}

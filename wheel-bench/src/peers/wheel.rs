//! `wheel_core::Wheel` behind [`TimerQueue`]: the thing being measured.

use wheel_core::{TimerId, Wheel};

use super::TimerQueue;

/// A [`wheel_core::Wheel<u64>`] with the default geometry (64 slots × 11
/// levels), grown on demand like every other peer.
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
#[derive(Debug, Default)]
pub struct WheelTimers {
    wheel: Wheel<u64>,
}

impl WheelTimers {
    /// An empty wheel whose clock is at tick 0.
    ///
    /// # Examples
    /// ```
    /// use wheel_bench::peers::{TimerQueue, WheelTimers};
    ///
    /// assert!(WheelTimers::new().is_empty());
    /// ```
    pub fn new() -> Self {
        Self::default()
    }
}

impl TimerQueue for WheelTimers {
    type Key = TimerId;

    const NAME: &'static str = "wheel-core";

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
}

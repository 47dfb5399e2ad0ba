//! The implementations the experiments compare, and their command-line names:
//! timer implementations for `delay` and `timeouts`, timeout mechanisms of
//! the Redis client for `redis`.

use core::fmt;

/// One implementation under test; each runs in its own child process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Impl {
    /// `wheel-sync` callbacks.
    Wheel,
    /// Tasks awaiting `wheel-sync`'s `Sleep` on a tokio multi-thread runtime
    /// (in `timeouts`: a `Sleep` polled once, then dropped; in `redis`: each
    /// command under `wheel_sync::timeout`).
    WheelAsync,
    /// One task draining a `wheel_sync::DelayQueue`.
    WheelQueue,
    /// Tasks awaiting `tokio::time::sleep` (in `redis`: each command under
    /// `tokio::time::timeout`).
    Tokio,
    /// One task draining a `tokio_util::time::DelayQueue`.
    DelayQueue,
    /// A `Mutex<BinaryHeap>` + `Condvar` scheduler thread.
    Heap,
    /// Redis commands with no timeout: the ceiling.
    None,
    /// Redis command timeouts on a scheduled executor with 2 workers.
    Executor2,
    /// Redis command timeouts on a scheduled executor with 8 workers.
    Executor8,
}

impl Impl {
    /// Every implementation, in the order the tables list them.
    pub const ALL: [Impl; 9] = [
        Impl::None,
        Impl::Executor2,
        Impl::Executor8,
        Impl::Wheel,
        Impl::WheelAsync,
        Impl::WheelQueue,
        Impl::Tokio,
        Impl::DelayQueue,
        Impl::Heap,
    ];

    /// What `delay` and `timeouts` compare.
    pub const TIMERS: [Impl; 6] = [
        Impl::Wheel,
        Impl::WheelAsync,
        Impl::WheelQueue,
        Impl::Tokio,
        Impl::DelayQueue,
        Impl::Heap,
    ];

    /// What `redis` compares.
    pub const REDIS: [Impl; 6] = [
        Impl::None,
        Impl::Executor2,
        Impl::Executor8,
        Impl::Wheel,
        Impl::WheelAsync,
        Impl::Tokio,
    ];

    /// The name used by `--impls` and in every output.
    pub fn name(self) -> &'static str {
        match self {
            Impl::Wheel => "wheel",
            Impl::WheelAsync => "wheel-async",
            Impl::WheelQueue => "wheel-queue",
            Impl::Tokio => "tokio",
            Impl::DelayQueue => "delayqueue",
            Impl::Heap => "heap",
            Impl::None => "none",
            Impl::Executor2 => "executor-2",
            Impl::Executor8 => "executor-8",
        }
    }

    /// Parses a name as written by [`Impl::name`].
    pub fn from_name(name: &str) -> Option<Impl> {
        Impl::ALL.into_iter().find(|i| i.name() == name)
    }
}

impl fmt::Display for Impl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // `pad`, so `{:<11}` aligns names in progress lines.
        f.pad(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for imp in Impl::ALL {
            assert_eq!(Impl::from_name(imp.name()), Some(imp));
        }
        assert_eq!(Impl::from_name("Wheel"), None);
        assert_eq!(Impl::from_name(""), None);
        assert_eq!(format!("[{:<6}]", Impl::Heap), "[heap  ]");
    }

    #[test]
    fn every_implementation_is_in_an_experiment() {
        for imp in Impl::ALL {
            assert!(
                Impl::TIMERS.contains(&imp) || Impl::REDIS.contains(&imp),
                "{imp}"
            );
        }
    }
}

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
    /// Redis commands from tokio tasks with no timeout: the async
    /// client's ceiling, which `wheel-async` and `tokio` are measured
    /// against.
    NoneAsync,
    /// Redis command timeouts on a scheduled executor with 2 workers.
    Executor2,
    /// Redis command timeouts on a scheduled executor with 8 workers.
    Executor8,
    /// `timeouts`: callbacks on one `TimerService` all threads share by
    /// reference.
    WheelShared,
    /// `timeouts`: callbacks, each request through a fresh clone of the
    /// service, as a handle cloned into each task.
    WheelCloneEach,
    /// `delay`: callbacks with their handles kept until the end.
    WheelHandles,
    /// `delay`: callbacks with handles, each dropped at once.
    WheelHandleDropped,
    /// `timeouts`: a `Sleep` on the shared service, polled once, dropped.
    WheelAsyncShared,
    /// `timeouts`: `wheel_sync::sleep` (the global service), polled once,
    /// dropped.
    WheelAsyncGlobal,
    /// `timeouts`: `wheel_sync::timeout` around a future that is pending
    /// once, then ready.
    WheelTimeout,
    /// `delay`: each task awaits `sleep_until` on its own clone of the
    /// service, moved into it.
    WheelAsyncCloneEach,
    /// `delay`: each task awaits `sleep_until` through an
    /// `Arc<TimerService>` cloned into it.
    WheelAsyncArc,
    /// `delay`: `WheelAsyncCloneEach`'s tasks on smol's multi-threaded
    /// executor, as many threads as tokio's runtime has workers.
    WheelAsyncSmol,
    /// `delay`: tasks awaiting `smol::Timer` (async-io's timer) on the
    /// executor of `WheelAsyncSmol`.
    Smol,
    /// As `Tokio`, on a runtime with tokio's alternative timer (per-worker
    /// wheels); only in a build with `--cfg tokio_unstable`, so asked for
    /// by name, never run by default.
    TokioAlt,
}

impl Impl {
    /// Every implementation, in the order the tables list them.
    pub const ALL: [Impl; 22] = [
        Impl::None,
        Impl::NoneAsync,
        Impl::Executor2,
        Impl::Executor8,
        Impl::Wheel,
        Impl::WheelShared,
        Impl::WheelCloneEach,
        Impl::WheelHandles,
        Impl::WheelHandleDropped,
        Impl::WheelAsync,
        Impl::WheelAsyncShared,
        Impl::WheelAsyncGlobal,
        Impl::WheelTimeout,
        Impl::WheelAsyncCloneEach,
        Impl::WheelAsyncArc,
        Impl::WheelAsyncSmol,
        Impl::WheelQueue,
        Impl::Tokio,
        Impl::TokioAlt,
        Impl::Smol,
        Impl::DelayQueue,
        Impl::Heap,
    ];

    /// Implementations `delay` and `timeouts` run only when named: they
    /// need a build of their own.
    pub const ON_REQUEST: [Impl; 1] = [Impl::TokioAlt];

    /// What `delay` accepts by name: its own, and those on request.
    pub const DELAY_NAMED: [Impl; 13] = Impl::with_on_request(&Impl::DELAY);

    /// What `timeouts` accepts by name: its own, and those on request.
    pub const TIMEOUTS_NAMED: [Impl; 12] = Impl::with_on_request(&Impl::TIMEOUTS);

    /// `own` followed by [`Impl::ON_REQUEST`]; `K` is their total length
    /// (checked at compile time).
    const fn with_on_request<const K: usize>(own: &[Impl]) -> [Impl; K] {
        assert!(own.len() + Impl::ON_REQUEST.len() == K);
        let mut all = [Impl::TokioAlt; K];
        let mut i = 0;
        while i < K {
            all[i] = if i < own.len() {
                own[i]
            } else {
                Impl::ON_REQUEST[i - own.len()]
            };
            i += 1;
        }
        all
    }

    /// What `delay` compares: every way of holding wheel-sync, and the peers.
    pub const DELAY: [Impl; 12] = [
        Impl::Wheel,
        Impl::WheelHandles,
        Impl::WheelHandleDropped,
        Impl::WheelAsync,
        Impl::WheelAsyncCloneEach,
        Impl::WheelAsyncArc,
        Impl::WheelAsyncSmol,
        Impl::WheelQueue,
        Impl::Tokio,
        Impl::Smol,
        Impl::DelayQueue,
        Impl::Heap,
    ];

    /// What `timeouts` compares: every way of holding wheel-sync, and the
    /// peers.
    pub const TIMEOUTS: [Impl; 11] = [
        Impl::Wheel,
        Impl::WheelShared,
        Impl::WheelCloneEach,
        Impl::WheelAsync,
        Impl::WheelAsyncShared,
        Impl::WheelAsyncGlobal,
        Impl::WheelTimeout,
        Impl::WheelQueue,
        Impl::Tokio,
        Impl::DelayQueue,
        Impl::Heap,
    ];

    /// How this implementation holds wheel-sync, as `--shapes` names it;
    /// `None` for a peer. The plain `wheel` and `wheel-async` rows are a
    /// clone per thread in `timeouts`, and detached callbacks and the
    /// global functions in `delay`.
    pub fn shape(self, experiment: &str) -> Option<&'static str> {
        let timeouts = experiment == "timeouts";
        Some(match self {
            Impl::Wheel | Impl::WheelAsync if timeouts => "thread-clone",
            Impl::Wheel => "detached",
            Impl::WheelAsync | Impl::WheelAsyncGlobal => "global",
            Impl::WheelShared | Impl::WheelAsyncShared => "shared",
            Impl::WheelCloneEach | Impl::WheelAsyncCloneEach => "clone-each",
            Impl::WheelHandles => "handles",
            Impl::WheelHandleDropped => "handle-dropped",
            Impl::WheelTimeout => "timeout",
            Impl::WheelAsyncArc => "arc",
            Impl::WheelAsyncSmol => "smol",
            Impl::WheelQueue => "queue",
            Impl::Tokio
            | Impl::TokioAlt
            | Impl::Smol
            | Impl::DelayQueue
            | Impl::Heap
            | Impl::None
            | Impl::NoneAsync
            | Impl::Executor2
            | Impl::Executor8 => return None,
        })
    }

    /// What `redis` compares.
    pub const REDIS: [Impl; 7] = [
        Impl::None,
        Impl::Executor2,
        Impl::Executor8,
        Impl::Wheel,
        Impl::NoneAsync,
        Impl::WheelAsync,
        Impl::Tokio,
    ];

    /// The same client with no timeout, which `redis` subtracts to give a
    /// timeout's cost: `none-async` for the tasks, `none` for the threads.
    pub fn redis_baseline(self) -> Impl {
        match self {
            Impl::NoneAsync | Impl::WheelAsync | Impl::Tokio => Impl::NoneAsync,
            _ => Impl::None,
        }
    }

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
            Impl::NoneAsync => "none-async",
            Impl::Executor2 => "executor-2",
            Impl::Executor8 => "executor-8",
            Impl::WheelShared => "wheel/shared",
            Impl::WheelCloneEach => "wheel/clone-each",
            Impl::WheelHandles => "wheel/handles",
            Impl::WheelHandleDropped => "wheel/handle-dropped",
            Impl::WheelAsyncShared => "wheel-async/shared",
            Impl::WheelAsyncGlobal => "wheel-async/global",
            Impl::WheelTimeout => "wheel-async/timeout",
            Impl::WheelAsyncCloneEach => "wheel-async/clone-each",
            Impl::WheelAsyncArc => "wheel-async/arc",
            Impl::WheelAsyncSmol => "wheel-async/smol",
            Impl::Smol => "smol",
            Impl::TokioAlt => "tokio-alt",
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
    fn every_wheel_row_of_an_experiment_has_a_shape_of_its_own() {
        for (experiment, impls) in [
            ("delay", &Impl::DELAY[..]),
            ("timeouts", &Impl::TIMEOUTS[..]),
        ] {
            let mut seen = Vec::new();
            for imp in impls {
                let Some(shape) = imp.shape(experiment) else {
                    continue;
                };
                let family = imp.name().split('/').next().unwrap_or("");
                assert!(!seen.contains(&(family, shape)), "{experiment}: {imp}");
                seen.push((family, shape));
            }
        }
        assert_eq!(Impl::Tokio.shape("delay"), None);
    }

    #[test]
    fn every_implementation_is_in_an_experiment() {
        for imp in Impl::ALL {
            assert!(
                Impl::DELAY.contains(&imp)
                    || Impl::TIMEOUTS.contains(&imp)
                    || Impl::ON_REQUEST.contains(&imp)
                    || Impl::REDIS.contains(&imp),
                "{imp}"
            );
        }
    }
}

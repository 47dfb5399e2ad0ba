//! Shared pieces of the benchmarks: the peers we measure against, the
//! Redis client and server, the executors the task rows run on, and CPU
//! pinning.
pub mod affinity;
pub mod peers;
pub mod redis;
pub mod rng;
pub mod smol_executor;

/// The runtime the tokio peers run on, as an application would build it:
/// multi-threaded (one worker per core), with its timer.
///
/// # Errors
/// If the runtime cannot start its threads.
///
/// # Examples
/// ```
/// let rt = wheel_bench::tokio_runtime().unwrap();
/// rt.block_on(async { tokio::time::sleep(std::time::Duration::from_millis(1)).await });
/// ```
pub fn tokio_runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_time()
        .build()
}

/// The same runtime with tokio's alternative timer (per-worker wheels), an
/// unstable feature: only a build with `RUSTFLAGS="--cfg tokio_unstable"`
/// has it; any other returns an error saying so.
///
/// # Errors
/// As [`tokio_runtime`], or `Unsupported` without `tokio_unstable`.
pub fn tokio_alt_runtime() -> std::io::Result<tokio::runtime::Runtime> {
    #[cfg(tokio_unstable)]
    return tokio::runtime::Builder::new_multi_thread()
        .enable_alt_timer()
        .build();
    #[cfg(not(tokio_unstable))]
    Err(std::io::Error::new(
        std::io::ErrorKind::Unsupported,
        "tokio-alt needs a build with RUSTFLAGS=\"--cfg tokio_unstable\"",
    ))
}

/// How many workers [`tokio_runtime`] has, tokio's default: the
/// `TOKIO_WORKER_THREADS` variable if it holds a positive number, else one
/// per CPU this process may run on. The other multi-threaded executors get
/// as many, so that their rows compare with tokio's.
///
/// # Examples
/// ```
/// let rt = wheel_bench::tokio_runtime().unwrap();
/// assert_eq!(rt.metrics().num_workers(), wheel_bench::worker_threads());
/// ```
pub fn worker_threads() -> usize {
    // Read as tokio reads it (tokio panics on a bad value, where this falls
    // back), since tokio does not export the number before a runtime exists.
    std::env::var("TOKIO_WORKER_THREADS")
        .ok()
        .and_then(|n| n.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, usize::from))
}

// The project README's examples run as doctests here, where every crate
// they use is a dependency, so the front door stays true.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
struct ProjectReadmeDoctests;

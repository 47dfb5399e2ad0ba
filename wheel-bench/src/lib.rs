//! Shared pieces of the benchmarks: the peers we measure against.
pub mod peers;
pub mod redis;
pub mod rng;

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

//! smol's multi-threaded executor as an application runs it: one
//! `smol::Executor` run by [`worker_threads`](crate::worker_threads)
//! threads, the counterpart of [`tokio_runtime`](crate::tokio_runtime).

use std::io;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use smol::channel::Sender;

/// An `smol::Executor` and the threads that run it until this is dropped.
///
/// # Examples
/// ```
/// let smol = wheel_bench::smol_executor::SmolExecutor::new().unwrap();
/// let task = smol.executor().spawn(async { 1 + 1 });
/// assert_eq!(smol::block_on(task), 2);
/// ```
pub struct SmolExecutor {
    executor: Arc<smol::Executor<'static>>,
    /// Closed on drop, which ends every thread's run.
    stop: Sender<()>,
    threads: Vec<JoinHandle<()>>,
}

impl SmolExecutor {
    /// Starts the threads, and smol's reactor (its timers and I/O) with
    /// them.
    ///
    /// # Errors
    /// If a thread cannot be spawned.
    pub fn new() -> io::Result<SmolExecutor> {
        let executor = Arc::new(smol::Executor::new());
        let (stop, stopped) = smol::channel::bounded::<()>(1);
        let threads = (0..crate::worker_threads())
            .map(|i| {
                let executor = Arc::clone(&executor);
                let stopped = stopped.clone();
                std::thread::Builder::new()
                    .name(format!("smol-{i}"))
                    .spawn(move || {
                        // smol's own `block_on`, as its global executor's
                        // threads use: an idle one drives the reactor.
                        let _closed = smol::block_on(executor.run(stopped.recv()));
                    })
            })
            .collect::<io::Result<Vec<_>>>()?;
        // The reactor and its thread start with the first timer; start them
        // here, as a tokio runtime has its timer driver once built.
        smol::block_on(smol::Timer::after(Duration::from_micros(1)));
        Ok(SmolExecutor {
            executor,
            stop,
            threads,
        })
    }

    /// The executor, to spawn on (an `Arc`, so that a task can hold it and
    /// spawn more).
    pub fn executor(&self) -> &Arc<smol::Executor<'static>> {
        &self.executor
    }
}

impl Drop for SmolExecutor {
    fn drop(&mut self) {
        self.stop.close();
        for thread in self.threads.drain(..) {
            // A worker that panicked has printed why; nothing is left to do.
            let _ = thread.join();
        }
    }
}

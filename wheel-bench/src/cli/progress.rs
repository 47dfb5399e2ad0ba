//! A live progress line on stderr, redrawn in place while a child runs. The
//! parent asks for it only when its stderr is a terminal, so logs stay clean.

use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

/// How often the line is redrawn.
const PERIOD: Duration = Duration::from_millis(200);

/// Redraws `label render()` until finished or dropped, then clears the line.
pub struct ProgressLine {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl ProgressLine {
    /// Starts redrawing if `enabled`; `render` says how far the run is.
    pub fn start(
        enabled: bool,
        label: String,
        render: impl Fn() -> String + Send + 'static,
    ) -> ProgressLine {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = enabled.then(|| {
            thread::spawn(move || {
                let start = Instant::now();
                let mut err = io::stderr();
                while !flag.load(Ordering::Relaxed) {
                    let secs = start.elapsed().as_secs_f64();
                    // A failed write to stderr only loses progress; the run goes on.
                    let _ = write!(err, "\r\x1b[2K{label}  {}  {secs:6.1} s", render());
                    let _ = err.flush();
                    thread::park_timeout(PERIOD);
                }
                let _ = write!(err, "\r\x1b[2K");
                let _ = err.flush();
            })
        });
        ProgressLine { stop, thread }
    }
}

impl Drop for ProgressLine {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            thread.thread().unpark();
            // The thread only writes to stderr; its panic would leave nothing to undo.
            let _ = thread.join();
        }
    }
}

/// A count one thread publishes for the progress line, on a cache line of
/// its own so that threads publishing do not contend.
#[derive(Default)]
#[repr(align(128))]
pub struct Published(pub AtomicU64);

//! A client's request timeouts: every request schedules one, and almost
//! every reply cancels it in time. Four threads, a million requests, the
//! replies of one request in a thousand "lost", so its timeout fires.
//!
//! `cargo run --release -p wheel-sync --example request_timeouts`

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use wheel_sync::TimerService;

const THREADS: u64 = 4;
const REQUESTS: u64 = 250_000;
const TIMEOUT: Duration = Duration::from_millis(20);

fn main() {
    let timers = TimerService::new();
    let timed_out = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let clients: Vec<_> = (0..THREADS)
        .map(|client| {
            // A clone per thread: threads with their own clones share no count.
            let (timers, timed_out) = (timers.clone(), timed_out.clone());
            thread::spawn(move || {
                for request in 0..REQUESTS {
                    let timed_out = timed_out.clone();
                    let timeout = timers
                        .schedule(TIMEOUT, move || {
                            timed_out.fetch_add(1, Ordering::Relaxed);
                        })
                        .expect("the service runs until main ends");
                    let reply_lost = (client * REQUESTS + request) % 1000 == 0;
                    // `cancel` is false if the timeout fired first (a thread
                    // descheduled for longer than TIMEOUT): counted there.
                    if !reply_lost {
                        timeout.cancel();
                    }
                }
            })
        })
        .collect();
    for client in clients {
        client.join().expect("client thread");
    }
    let elapsed = start.elapsed();
    let requests = THREADS * REQUESTS;
    println!(
        "{requests} requests on {THREADS} threads in {elapsed:.2?}: {:.1} M schedule + cancel per second",
        requests as f64 / elapsed.as_secs_f64() / 1e6
    );
    // Wait for the lost replies' timeouts.
    while timers.pending() > 0 {
        thread::sleep(Duration::from_millis(1));
    }
    let stats = timers.stats();
    println!(
        "timed out: {} (lost replies: {}); cancelled: {}; driver wake-ups: {}",
        timed_out.load(Ordering::Relaxed),
        requests / 1000,
        stats.cancelled,
        stats.wakeups
    );
}

//! The `heap` peer of the threaded benchmarks: what a scheduled executor is. One scheduler thread waits on
//! a `Condvar` for the earliest deadline in a `Mutex<BinaryHeap>` and runs due
//! tasks one at a time; cancel is lazy (a flag; the entry stays until its
//! deadline), as in Java's `ScheduledThreadPoolExecutor`.

use std::cmp::Ordering as CmpOrdering;
use std::collections::binary_heap::PeekMut;
use std::collections::BinaryHeap;
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::Instant;

type Task = Box<dyn FnOnce() + Send>;

struct Entry {
    deadline: Instant,
    /// Ties on deadline run in schedule order.
    seq: u64,
    cancelled: Option<Arc<AtomicBool>>,
    task: Task,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == CmpOrdering::Equal
    }
}

impl Eq for Entry {}

impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<CmpOrdering> {
        Some(self.cmp(other))
    }
}

impl Ord for Entry {
    /// Reversed, so `BinaryHeap`'s max is the earliest deadline.
    fn cmp(&self, other: &Self) -> CmpOrdering {
        (other.deadline, other.seq).cmp(&(self.deadline, self.seq))
    }
}

#[derive(Default)]
struct Queue {
    heap: BinaryHeap<Entry>,
    next_seq: u64,
    shutdown: bool,
}

#[derive(Default)]
struct Shared {
    queue: Mutex<Queue>,
    /// Signalled when the earliest deadline changes or on shutdown.
    changed: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Queue> {
        // A panicking task runs outside the lock, so a poisoned queue is intact.
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Lazily cancels its entry.
///
/// # Examples
/// ```
/// use std::time::{Duration, Instant};
/// use wheel_bench::peers::HeapScheduler;
///
/// let heap = HeapScheduler::new().unwrap();
/// let handle = heap.schedule_cancellable(Instant::now() + Duration::from_secs(1), || ());
/// handle.cancel(); // stays in the heap until its deadline, then is skipped
/// ```
pub struct HeapHandle(Arc<AtomicBool>);

impl HeapHandle {
    /// Marks the entry cancelled; it stays queued until its deadline.
    ///
    /// # Examples
    /// ```
    /// # use std::time::Instant;
    /// # let heap = wheel_bench::peers::HeapScheduler::new().unwrap();
    /// heap.schedule_cancellable(Instant::now(), || unreachable!()).cancel();
    /// ```
    pub fn cancel(&self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// A single-threaded scheduled executor over a binary heap.
///
/// # Examples
/// ```
/// use std::sync::mpsc;
/// use std::time::Instant;
/// use wheel_bench::peers::HeapScheduler;
///
/// let heap = HeapScheduler::new().unwrap();
/// let (tx, rx) = mpsc::channel();
/// heap.schedule_at(Instant::now(), move || tx.send(1).unwrap());
/// assert_eq!(rx.recv().unwrap(), 1);
/// ```
pub struct HeapScheduler {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl HeapScheduler {
    /// Starts the scheduler thread.
    ///
    /// # Examples
    /// ```
    /// let heap = wheel_bench::peers::HeapScheduler::new().unwrap();
    /// # drop(heap);
    /// ```
    pub fn new() -> io::Result<HeapScheduler> {
        let shared = Arc::new(Shared::default());
        let worker = Arc::clone(&shared);
        let thread = thread::Builder::new()
            .name("heap-scheduler".into())
            .spawn(move || run(&worker))?;
        Ok(HeapScheduler {
            shared,
            thread: Some(thread),
        })
    }

    /// Runs `task` on the scheduler thread at `deadline`.
    ///
    /// # Examples
    /// ```
    /// # let heap = wheel_bench::peers::HeapScheduler::new().unwrap();
    /// heap.schedule_at(std::time::Instant::now(), || ());
    /// ```
    pub fn schedule_at(&self, deadline: Instant, task: impl FnOnce() + Send + 'static) {
        self.push(deadline, None, Box::new(task));
    }

    /// Like [`HeapScheduler::schedule_at`], with a handle that cancels it.
    ///
    /// # Examples
    /// ```
    /// # let heap = wheel_bench::peers::HeapScheduler::new().unwrap();
    /// let at = std::time::Instant::now() + std::time::Duration::from_secs(5);
    /// heap.schedule_cancellable(at, || ()).cancel();
    /// ```
    pub fn schedule_cancellable(
        &self,
        deadline: Instant,
        task: impl FnOnce() + Send + 'static,
    ) -> HeapHandle {
        let flag = Arc::new(AtomicBool::new(false));
        self.push(deadline, Some(Arc::clone(&flag)), Box::new(task));
        HeapHandle(flag)
    }

    fn push(&self, deadline: Instant, cancelled: Option<Arc<AtomicBool>>, task: Task) {
        let mut queue = self.shared.lock();
        let seq = queue.next_seq;
        queue.next_seq += 1;
        queue.heap.push(Entry {
            deadline,
            seq,
            cancelled,
            task,
        });
        // Only a new earliest deadline changes how long the thread must sleep.
        let earliest = queue.heap.peek().is_some_and(|e| e.seq == seq);
        drop(queue);
        if earliest {
            self.shared.changed.notify_one();
        }
    }
}

impl Drop for HeapScheduler {
    fn drop(&mut self) {
        self.shared.lock().shutdown = true;
        self.shared.changed.notify_one();
        if let Some(thread) = self.thread.take() {
            // A task's panic already went to stderr; nothing more to report.
            let _ = thread.join();
        }
    }
}

fn run(shared: &Shared) {
    let mut queue = shared.lock();
    while !queue.shutdown {
        let now = Instant::now();
        let due = (queue.heap.peek_mut())
            .filter(|top| top.deadline <= now)
            .map(PeekMut::pop);
        if let Some(entry) = due {
            drop(queue);
            if !entry.cancelled.is_some_and(|c| c.load(Ordering::Relaxed)) {
                (entry.task)();
            }
            queue = shared.lock();
            continue;
        }
        let wait = queue.heap.peek().map(|e| e.deadline - now);
        queue = match wait {
            None => (shared.changed.wait(queue)).unwrap_or_else(PoisonError::into_inner),
            Some(timeout) => {
                let waited = shared.changed.wait_timeout(queue, timeout);
                waited.unwrap_or_else(PoisonError::into_inner).0
            }
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::Duration;

    #[test]
    fn runs_in_deadline_order_and_skips_cancelled() {
        let heap = HeapScheduler::new().unwrap();
        let (tx, rx) = mpsc::channel();
        let now = Instant::now();
        for (ms, id) in [(30, 3), (10, 1), (20, 2), (10, 11)] {
            let tx = tx.clone();
            heap.schedule_at(now + Duration::from_millis(ms), move || {
                tx.send((id, Instant::now())).unwrap();
            });
        }
        let tx2 = tx.clone();
        let handle = heap.schedule_cancellable(now + Duration::from_millis(15), move || {
            tx2.send((99, Instant::now())).unwrap();
        });
        handle.cancel();
        drop(tx);
        let fired: Vec<(u32, Instant)> = rx.iter().take(4).collect();
        let ids: Vec<u32> = fired.iter().map(|f| f.0).collect();
        assert_eq!(ids, [1, 11, 2, 3]);
        assert!(fired[0].1 >= now + Duration::from_millis(10));
        assert!(fired[3].1 >= now + Duration::from_millis(30));
        drop(heap);
        assert!(rx.try_recv().is_err(), "the cancelled task ran");
    }
}

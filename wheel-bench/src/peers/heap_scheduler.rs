//! The `heap` peer of the threaded benchmarks: what a scheduled executor is.
//! Worker threads share a `Mutex<BinaryHeap>` and one `Condvar`; cancel is
//! lazy (a flag; the entry stays until its deadline and is then taken and
//! skipped), as in Java's `ScheduledThreadPoolExecutor` with its default
//! `removeOnCancel = false`.
//!
//! With several workers they take turns as in that executor's
//! `DelayedWorkQueue`, leader and followers: one worker (the leader) waits
//! for the earliest deadline, the others wait for anything. A worker that
//! takes a due entry leaves the lead, and wakes a follower to take it up if
//! entries remain; a new earliest entry also deposes the leader and wakes
//! one. With one worker that is the plain scheduler thread.

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
    /// The worker waiting for the earliest deadline.
    leader: Option<usize>,
    /// Workers waiting on the `Condvar`, leader included: a notify with none
    /// is skipped, since it would be a futex call per entry for nothing.
    waiting: usize,
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

/// A scheduled executor over a binary heap: one worker thread by default,
/// or [`HeapScheduler::with_workers`].
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
    threads: Vec<JoinHandle<()>>,
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
        HeapScheduler::with_workers(1)
    }

    /// Starts `workers` threads (at least one) that take turns waiting for
    /// the earliest deadline and run due tasks: the shape of Java's
    /// `ScheduledThreadPoolExecutor(workers)`.
    ///
    /// # Errors
    /// If a thread cannot be started (those already started are stopped).
    ///
    /// # Examples
    /// ```
    /// use std::sync::mpsc;
    /// use std::time::Instant;
    ///
    /// let pool = wheel_bench::peers::HeapScheduler::with_workers(4).unwrap();
    /// let (tx, rx) = mpsc::channel();
    /// for i in 0..8 {
    ///     let tx = tx.clone();
    ///     pool.schedule_at(Instant::now(), move || tx.send(i).unwrap());
    /// }
    /// let mut ran: Vec<i32> = rx.iter().take(8).collect();
    /// ran.sort();
    /// assert_eq!(ran, (0..8).collect::<Vec<_>>());
    /// ```
    pub fn with_workers(workers: usize) -> io::Result<HeapScheduler> {
        let mut scheduler = HeapScheduler {
            shared: Arc::new(Shared::default()),
            threads: Vec::new(),
        };
        for i in 0..workers.max(1) {
            let worker = Arc::clone(&scheduler.shared);
            // On error `scheduler` drops here and stops the started ones.
            let thread = thread::Builder::new()
                .name(format!("heap-scheduler-{i}"))
                .spawn(move || run(&worker, i))?;
            scheduler.threads.push(thread);
        }
        Ok(scheduler)
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
        // Only a new earliest deadline changes how long the leader must sleep.
        let earliest = queue.heap.peek().is_some_and(|e| e.seq == seq);
        if earliest {
            queue.leader = None;
        }
        let wake = earliest && queue.waiting > 0;
        drop(queue);
        if wake {
            self.shared.changed.notify_one();
        }
    }
}

impl Drop for HeapScheduler {
    fn drop(&mut self) {
        self.shared.lock().shutdown = true;
        self.shared.changed.notify_all();
        for thread in self.threads.drain(..) {
            // A task's panic already went to stderr; nothing more to report.
            let _ = thread.join();
        }
    }
}

/// One worker: `DelayedWorkQueue.take()` and run, until shutdown.
fn run(shared: &Shared, me: usize) {
    let mut queue = shared.lock();
    while !queue.shutdown {
        let now = Instant::now();
        let due = (queue.heap.peek_mut())
            .filter(|top| top.deadline <= now)
            .map(PeekMut::pop);
        if let Some(entry) = due {
            // Someone must wait for the next deadline while this one runs.
            let wake = queue.leader.is_none() && !queue.heap.is_empty() && queue.waiting > 0;
            drop(queue);
            if wake {
                shared.changed.notify_one();
            }
            if !entry.cancelled.is_some_and(|c| c.load(Ordering::Relaxed)) {
                (entry.task)();
            }
            queue = shared.lock();
            continue;
        }
        let lead = match queue.heap.peek() {
            Some(e) if queue.leader.is_none() => Some(e.deadline - now),
            _ => None,
        };
        queue.waiting += 1;
        queue = match lead {
            None => (shared.changed.wait(queue)).unwrap_or_else(PoisonError::into_inner),
            Some(timeout) => {
                queue.leader = Some(me);
                let waited = shared.changed.wait_timeout(queue, timeout);
                let mut queue = waited.unwrap_or_else(PoisonError::into_inner).0;
                // Unless deposed meanwhile (a new earliest entry), this worker
                // now takes what is due or competes for the lead again.
                if queue.leader == Some(me) {
                    queue.leader = None;
                }
                queue
            }
        };
        queue.waiting -= 1;
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

    #[test]
    fn workers_take_turns_so_a_blocked_task_does_not_stop_the_rest() {
        let pool = HeapScheduler::with_workers(2).unwrap();
        let (release, blocked) = mpsc::channel::<()>();
        let (tx, rx) = mpsc::channel();
        let now = Instant::now();
        // The first task holds its worker until the last one has run, which
        // only the other worker, taking over the lead, can do.
        let done = tx.clone();
        pool.schedule_at(now, move || {
            blocked.recv().unwrap();
            done.send(0).unwrap();
        });
        for id in 1..=20 {
            let tx = tx.clone();
            let release = release.clone();
            let at = now + Duration::from_millis(2 * id);
            pool.schedule_at(at, move || {
                assert!(Instant::now() >= at, "task {id} ran early");
                tx.send(id).unwrap();
                if id == 20 {
                    release.send(()).unwrap();
                }
            });
        }
        drop(tx);
        let ran: Vec<u64> = rx.iter().take(21).collect();
        assert_eq!(ran, (1..=20).chain([0]).collect::<Vec<_>>());
    }
}

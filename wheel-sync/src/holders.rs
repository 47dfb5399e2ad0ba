//! Who holds a service: every `TimerService` value, `TimerHandle`, `Sleep`
//! and `Timeout` counts itself in its thread's count of holders, found
//! through a thread-local, so that no two threads count on one line however
//! the caller holds the service (shared by reference, a clone per task, the
//! global functions). The driver runs while some count is armed.
//!
//! # Ground rules
//!
//! - A thread's count is a word: holders (in steps of [`HOLDER`]) and the
//!   [`ARMED`] bit. A thread adds holders only to its own count; a holder
//!   that moved to another thread leaves from there.
//! - A holder made from one counted on this thread (a clone made where
//!   its original lives: a handle or sleep made from a clone this thread
//!   holds) joins that count directly; one made from another thread's
//!   holder (a service shared by reference, the global one) looks up this
//!   thread's list.
//! - A count belongs to the service's list and to its holders; a thread
//!   keeps only a weak reference to its own (a strong one under loom, which
//!   has no `Weak`), so a stopped service is freed while the threads that
//!   held it run on.
//! - `Holders::armed` counts the armed counts. A count with holders is
//!   armed: a holder arms its count if it finds it disarmed, and can, since
//!   it was made from another holder, whose own count is armed all along;
//!   so `armed` cannot reach zero meanwhile. When it does reach zero there
//!   is no holder left anywhere, none can be made, and the service stops.
//! - Disarming is a compare-exchange from exactly `ARMED` (no holders) to
//!   zero, so it loses to any holder that arrives; disarmers take the list's
//!   lock, so whoever takes `armed` to zero is the one that ends the
//!   service, and a disarmer that lost the exchange to that one sees it.
//! - Who disarms an idle count: the holder that empties it, if it is the
//!   only armed count (a one-thread program stops its driver when its last
//!   holder goes, at once), or once the service is shut down; a thread
//!   exiting, its idle counts; and the driver, every idle count it finds
//!   every [`DISARM_EVERY`] while awake. So when every thread has let go
//!   but some still run, the driver stops within about twice that long.
//! - The driver never sleeps untimed while an idle count may be armed (it
//!   could sleep forever with nobody left to wake it): `Holders::idle` says
//!   one may be. A sweep clears the flag (a swap, so it is ordered after
//!   every setting), fences, then disarms what is idle. A holder that
//!   empties its count fences, then reads the flag: set, the sweep to come
//!   finds the count; clear, the holder sets it, fences and wakes the
//!   driver if it sleeps (once per sweep, whoever sets it): the park
//!   handshake of a submission. The driver reads the flag after its plan
//!   and fence, and sleeps at most [`DISARM_EVERY`] when it is set; it
//!   takes no lock between its plan and its sleep, and sweeps with
//!   `try_lock`, leaving a busy list for its next round.
//! - At shutdown the driver stores the flag, fences, then disarms every
//!   idle count; a holder that empties its count fences, then reads the
//!   flag and disarms its own. So after a shutdown no idle count stays
//!   armed, and the last holder's drop frees the service (the list of
//!   counts, whose counts refer to the service, is cleared by whoever takes
//!   `armed` to zero).
//! - Under loom (no clock) every sleep counts as untimed, a driver that
//!   finds the flag set sweeps at once instead of napping, and a thread's
//!   exit leaves its counts to the driver (loom's locks do not work in
//!   thread-local destructors). The models in `tests/loom_service.rs`
//!   check each exchange above.

use core::cell::RefCell;
use core::mem;
use core::ops::DerefMut;
use std::sync::TryLockError;
use std::time::Duration;

use crossbeam_utils::CachePadded;

use crate::driver::ServiceState;
use crate::sync::atomic::{fence, AtomicBool, AtomicUsize, Ordering};
use crate::sync::{Arc, Mutex};

/// The count's bit for "armed: keeps the driver running".
const ARMED: usize = 1;
/// One holder in a count.
const HOLDER: usize = 2;
/// How often an awake driver disarms the idle counts.
pub(crate) const DISARM_EVERY: Duration = crate::driver::RECLAIM_EVERY;

/// One thread's holders of one service.
pub(crate) struct ThreadHolders {
    /// On a line of its own: the holders of one thread never disturb
    /// another's, nor the threads that read `service` through a handle this
    /// thread made.
    count: CachePadded<AtomicUsize>,
    /// The number of the thread whose count this is; 0, which no thread
    /// has, for a count listed only (made during a thread's teardown, or
    /// by a drop that ran inside a look-up of the thread's list).
    thread: u64,
    pub(crate) service: Arc<ServiceState>,
}

/// The counts of a service's holders, thread by thread.
pub(crate) struct Holders {
    /// Armed counts.
    armed: CachePadded<AtomicUsize>,
    /// Some count may be armed with no holders since the driver last
    /// disarmed the idle ones.
    idle: AtomicBool,
    /// Every count made for the service, until it stops; a sweep forgets
    /// those of threads that have gone.
    threads: Mutex<Vec<Arc<ThreadHolders>>>,
}

#[cfg(not(loom))]
std::thread_local! {
    /// This thread's counts, one per service it holds or held.
    static THIS_THREAD: ThisThread = ThisThread::new();
}

#[cfg(loom)]
loom::thread_local! {
    static THIS_THREAD: ThisThread = ThisThread::new();
}

/// Hands out thread numbers, from 1; a plain `std` counter even under
/// loom, as only their being distinct matters, and 64 bits wide on every
/// target, so that no number comes round again.
static NEXT_THREAD: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// This thread's counts, each by the address of its service.
struct ThisThread {
    /// This thread's number, never another's (an address could be a gone
    /// thread's): what [`ThreadHolders::thread`] holds.
    number: u64,
    counts: RefCell<Vec<(*const ServiceState, Kept)>>,
}

impl ThisThread {
    fn new() -> Self {
        Self {
            number: NEXT_THREAD.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            counts: RefCell::new(Vec::new()),
        }
    }
}

/// What a thread keeps of its count: a weak reference, so that a thread
/// that once held a service does not keep the service (and what the user
/// gave it, such as an executor's channel) alive once the service stops.
/// loom has no `Weak`; there it is a strong one, dropped as the model's
/// thread ends.
#[cfg(not(loom))]
type Kept = std::sync::Weak<ThreadHolders>;
#[cfg(loom)]
type Kept = Arc<ThreadHolders>;

#[cfg(not(loom))]
fn keep(counted: &Arc<ThreadHolders>) -> Kept {
    Arc::downgrade(counted)
}

#[cfg(loom)]
fn keep(counted: &Arc<ThreadHolders>) -> Kept {
    Arc::clone(counted)
}

/// The count, if it is still alive (listed by its service, or held).
#[cfg(not(loom))]
fn kept(kept: &Kept) -> Option<Arc<ThreadHolders>> {
    kept.upgrade()
}

#[cfg(loom)]
fn kept(kept: &Kept) -> Option<Arc<ThreadHolders>> {
    Some(Arc::clone(kept))
}

/// Whether the count is alive and its service not shut down.
#[cfg(not(loom))]
fn running(kept: &Kept) -> bool {
    kept.upgrade()
        .is_some_and(|counted| !counted.service.is_shutdown())
}

#[cfg(loom)]
fn running(kept: &Kept) -> bool {
    !kept.service.is_shutdown()
}

impl Drop for ThisThread {
    /// The thread makes no more holders: its idle counts need not wait for
    /// the driver to disarm them.
    fn drop(&mut self) {
        // loom runs thread-local destructors where its locks do not work;
        // there the driver disarms what the thread left.
        if cfg!(loom) {
            return;
        }
        for (_, counted) in mem::take(self.counts.get_mut()) {
            let Some(counted) = kept(&counted) else {
                continue;
            };
            if counted.count.load(Ordering::Relaxed) == ARMED {
                // Not waiting for the driver: a thread's teardown is no
                // place to block.
                counted.disarm(false);
            }
        }
    }
}

impl Holders {
    pub(crate) fn new() -> Self {
        Self {
            armed: CachePadded::new(AtomicUsize::new(0)),
            idle: AtomicBool::new(false),
            threads: Mutex::new(Vec::new()),
        }
    }

    /// A count for the thread `thread` (see [`ThreadHolders::thread`]), listed.
    fn add(service: &Arc<ServiceState>, thread: u64) -> Arc<ThreadHolders> {
        let counted = Arc::new(ThreadHolders {
            count: CachePadded::new(AtomicUsize::new(0)),
            thread,
            service: Arc::clone(service),
        });
        let holders = &service.holders;
        let mut threads = holders.threads.lock().unwrap_or_else(|e| e.into_inner());
        threads.push(Arc::clone(&counted));
        counted
    }

    /// The driver's sweep: disarms every idle count and forgets the counts
    /// nothing else refers to (their threads have gone). Returns whether it
    /// took the last armed count, so the service stops; `None` if another
    /// disarmer has the list, so the driver looks again later rather than
    /// wait (under loom, an unpark would also end that wait, which its
    /// locks do not allow).
    pub(crate) fn disarm_idle(&self) -> Option<bool> {
        let mut threads = match self.threads.try_lock() {
            Ok(threads) => threads,
            Err(TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
            Err(TryLockError::WouldBlock) => return None,
        };
        // Cleared first: a count going idle after the look below finds the
        // flag cleared and sets it again (see `ThreadHolders::left_idle`).
        // A swap, not a store: the fences order a store as well, but loom,
        // whose order of stores is only as strong as what each thread has
        // seen, needs the clearing ordered after the settings so far.
        self.idle.swap(false, Ordering::Relaxed);
        fence(Ordering::SeqCst);
        let mut stopped = false;
        threads.retain_mut(|counted| {
            stopped |= self.disarm_locked(counted);
            // Only the list refers to it, and only the list's lock hands out
            // new references: nobody can arm it again. `get_mut` acquires
            // what the other references did before they went, so the count
            // read is their last (a plain look at the counts could see a
            // count the thread has since armed).
            Arc::get_mut(counted).is_none_or(|c| c.count.load(Ordering::Relaxed) != 0)
        });
        unlock_then_forget(threads, stopped);
        Some(stopped)
    }

    /// Whether some armed count may have no holders: the driver's check
    /// before it sleeps untimed. A flag, not a look at the counts: the
    /// driver takes no lock between its plan and its sleep (under loom, a
    /// wait for a lock would also lose a wake-up).
    pub(crate) fn any_idle(&self) -> bool {
        self.idle.load(Ordering::Relaxed)
    }

    /// Disarms `counted` if it has no holders; whether that took `armed`
    /// to zero. The caller holds the list's lock.
    fn disarm_locked(&self, counted: &ThreadHolders) -> bool {
        counted
            .count
            .compare_exchange(ARMED, 0, Ordering::SeqCst, Ordering::Relaxed)
            .is_ok()
            && self.armed.fetch_sub(1, Ordering::SeqCst) == 1
    }
}

/// Unlocks the list of counts; if the service has just stopped (`forget`),
/// empties it first and drops the counts after the unlock, as a count's
/// drop may drop the service and what the user gave it.
fn unlock_then_forget(mut threads: impl DerefMut<Target = Vec<Arc<ThreadHolders>>>, forget: bool) {
    let forgotten = if forget {
        mem::take(&mut *threads)
    } else {
        Vec::new()
    };
    drop(threads);
    drop(forgotten);
}

impl ThreadHolders {
    /// A new holder of the service `counted` counts for, on this thread's
    /// count: `counted` itself when it is this thread's (a clone made where
    /// its original lives), with no look-up of the thread's list.
    pub(crate) fn hold_again(counted: &Arc<Self>) -> Arc<Self> {
        Self::hold_from(&counted.service, Some(counted))
    }

    /// A new holder of `service`, counted in this thread's count.
    pub(crate) fn hold(service: &Arc<ServiceState>) -> Arc<Self> {
        Self::hold_from(service, None)
    }

    /// A new holder of `service` on this thread's count, which is `from`
    /// if that is this thread's, else found in (or added to) its list.
    fn hold_from(service: &Arc<ServiceState>, from: Option<&Arc<Self>>) -> Arc<Self> {
        let found = THIS_THREAD.try_with(|this| {
            if let Some(from) = from.filter(|from| from.thread == this.number) {
                return Some(Arc::clone(from));
            }
            // Not borrowed unless a drop run below makes a holder itself.
            let mut counts = this.counts.try_borrow_mut().ok()?;
            let key = Arc::as_ptr(service);
            // A live count at the service's address is the service's: the
            // count keeps the service, so the address is not reused.
            let found = counts.iter().find(|(at, _)| *at == key);
            if let Some(counted) = found.and_then(|(_, counted)| kept(counted)) {
                return Some(counted);
            }
            // Forget the counts of services that have stopped (their count
            // is gone) or shut down: they need no holders from this thread.
            counts.retain(|(_, counted)| running(counted));
            let counted = Holders::add(service, this.number);
            counts.push((key, keep(&counted)));
            Some(counted)
        });
        // During the thread's teardown, or from a drop run above: a count
        // of its own, listed only.
        let counted = found
            .ok()
            .flatten()
            .unwrap_or_else(|| Holders::add(service, 0));
        counted.join();
        counted
    }

    fn join(&self) {
        let was = self.count.fetch_add(HOLDER, Ordering::Relaxed);
        if was & ARMED == 0 {
            self.arm();
        }
    }

    /// Arms a count that had no holders and was disarmed.
    #[cold]
    fn arm(&self) {
        if self.count.fetch_or(ARMED, Ordering::SeqCst) & ARMED == 0 {
            self.service.holders.armed.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// A holder goes.
    pub(crate) fn leave(&self) {
        let was = self.count.fetch_sub(HOLDER, Ordering::SeqCst);
        if was < 2 * HOLDER {
            self.left_idle();
        }
    }

    /// The count has no holders left (see the ground rules): on every drop
    /// that empties a thread's count, so not rare.
    fn left_idle(&self) {
        let service = &*self.service;
        let holders = &service.holders;
        fence(Ordering::SeqCst);
        if service.is_shutdown() || holders.armed.load(Ordering::Relaxed) == 1 {
            self.disarm(true);
            return;
        }
        // The driver's next look at the counts comes after it clears the
        // flag and fences: a flag still set (read after the fence above)
        // means that look is to come, and will find this count. Whoever
        // sets it again wakes the driver, once per look however many
        // threads go idle, so a driver asleep for good comes to look.
        if !holders.idle.load(Ordering::Relaxed) && !holders.idle.swap(true, Ordering::Relaxed) {
            // The park handshake's producer half: an awake driver reads the
            // flag after its plan, a sleeping one is woken.
            fence(Ordering::SeqCst);
            service.wake_sleeping_driver();
        }
    }

    /// Disarms this count if it has no holders, and ends the service if no
    /// count is left armed; if `wait`, waits for its driver to end (off the
    /// driver's thread).
    fn disarm(&self, wait: bool) {
        let holders = &self.service.holders;
        let threads = holders.threads.lock().unwrap_or_else(|e| e.into_inner());
        let ended_here = holders.disarm_locked(self);
        let stopped = ended_here || holders.armed.load(Ordering::SeqCst) == 0;
        unlock_then_forget(threads, ended_here);
        if stopped && wait {
            self.service.stop();
        } else if stopped {
            self.service.begin_shutdown();
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::TimerService;

    fn holders(counted: &ThreadHolders) -> usize {
        counted.count.load(Ordering::Relaxed) / HOLDER
    }

    /// Each thread counts the clones it makes on its own count, whichever
    /// thread's holder they were made from, and one thread has one count.
    #[test]
    fn a_clone_counts_on_the_thread_that_makes_it() {
        let timers = TimerService::builder().manual_clock().build().unwrap();
        let here = timers.clone();
        assert!(Arc::ptr_eq(timers.holder(), here.holder()));
        assert_eq!(holders(timers.holder()), 2);
        let moved = std::thread::scope(|s| {
            s.spawn(|| {
                let there = timers.clone();
                assert!(!Arc::ptr_eq(timers.holder(), there.holder()));
                let again = there.clone();
                assert!(Arc::ptr_eq(there.holder(), again.holder()));
                assert_eq!(holders(there.holder()), 2);
                drop(again);
                there
            })
            .join()
            .unwrap()
        });
        // Made on a thread that has gone, cloned on a new thread (which
        // glibc gives the gone thread's stack and thread-locals): counted
        // on the new thread's count, not the gone one's.
        let moved = std::thread::spawn(move || {
            let again = moved.clone();
            assert!(
                !Arc::ptr_eq(again.holder(), moved.holder()),
                "joined the count of a thread that has gone"
            );
            assert_eq!(holders(again.holder()), 1);
            moved
        })
        .join()
        .unwrap();
        // Made on a thread that has gone, cloned here: counted here.
        let back = moved.clone();
        assert!(Arc::ptr_eq(back.holder(), timers.holder()));
        assert_eq!(holders(timers.holder()), 3);
        assert_eq!(holders(moved.holder()), 1);
    }
}

//! What producers and the driver share, and the one protocol between them.
//!
//! # Ground rules
//!
//! The whole protocol is these rules; every file that takes part points
//! here.
//!
//! 1. **Fate.** A timer with an entry leaves `PENDING` by one
//!    compare-exchange on its state word (`entry`). The winner owns the
//!    consequence (run or drop the callback, take or drop the waker) and
//!    counts the timer out. Only a `Sleep`'s owner moves its
//!    timer back to `PENDING`; `ABANDONED` is final. (A `Sleep` dropped
//!    drops its waker too, from whatever state, on its own thread: taken
//!    out under the entry's lock if another holds the entry, else with
//!    the entry's last reference. A timer whose owner is gone needs no
//!    wake, and the driver drops a sleep's waker only by waking it: a wake
//!    consumes its waker.)
//!
//!    A timer is counted in before its message is sent, so it is never
//!    counted out first. Without a `max_pending` limit, each thread counts
//!    its timers in and out on its spot, so threads never contend on one
//!    count; `pending` is the spots' sum. With a limit, one shared count
//!    enforces it exactly (and the spots count as well).
//! 2. **One message in flight.** A producer that changes an entry's word
//!    sets `QUEUED` in the same exchange, and sends a message for the
//!    entry only if `QUEUED` was clear. The driver clears `QUEUED` as it
//!    takes the message and acts on the word it cleared it in, so the wheel
//!    always comes to agree with the word's last change. A detached
//!    callback has no entry: it is the message.
//!
//!    A message goes through its thread's spot's queue (a queue per spot,
//!    so threads on different spots never write one tail) or, for a new
//!    timer with an entry, waits in the spot itself (`spot`) if one of the
//!    places a park looks at is empty, its tick beside it. The driver
//!    takes each parked message due by its round's *horizon* (on a real
//!    clock a [`RECLAIM_EVERY`] from the round's start, which also caps the
//!    sleep after it; on a manual clock every message) and leaves the
//!    others parked, so a parked message is as good as a queued one to
//!    every rule here; a cancel through the
//!    timer's handle takes it back from the spot of the handle's lane, and
//!    the driver never sees that timer (a request answered in time). A
//!    cancel sends no message (rule 4).
//! 3. **The driver's word** says what the driver is doing: `AWAKE`, asleep
//!    until a tick, `STOPPING` (asked to shut down) or `SHUT_DOWN` (for
//!    good). It is the other half of a
//!    Dekker pair, the *wake-up*, each side storing, fencing `SeqCst`, then
//!    loading: a producer sends (pushes or parks), fences, and reads the
//!    word; if the driver sleeps past the tick by which it must look at the
//!    message (`look_by`), the producer swaps the word to `AWAKE` and
//!    unparks it (one unpark per sleep, however many producers see it). The
//!    driver stores the tick it will wake at, fences, and sleeps only if no
//!    message is ready in the queues or parked due by the horizon (any
//!    parked one, should it sleep past the horizon) and no `advance`
//!    waits. A move of a timer whose message is on its way sends nothing:
//!    it lowers the parked message's tick, if parked, then fences and
//!    reads the word the same way (`hurry`). A
//!    message claimed in a queue but not yet written holds up the
//!    messages behind it in that queue: the driver then asks to be woken by
//!    any message (`ANY`), and sleeps only with `ANY` in its word while
//!    places in a queue are claimed; every push, whatever it is for, ends with this fence and
//!    look. Every [`BATCH`] pushes to a queue, the pusher also wakes the
//!    driver whatever its plan; then, should the driver not yet have taken
//!    its queue up to `BATCH` messages before that push, the pusher waits
//!    until it has (`keep_up`, after the look: it reads the queue's
//!    progress, and orders nothing the protocol relies on). A cancel pushes nothing and wakes no one: the cancelled timer's
//!    copy is still in the wheel, so the driver's plan is no later than its
//!    deadline.
//! 4. **The driver owns the wheels.** Only the driver thread touches them
//!    and an entry's `marks`. Filing a pending word files a copy of
//!    the entry at its tick; a copy fires only if the word is still pending
//!    at the copy's tick when it comes due (rule 1's compare-exchange), so
//!    a cancel or a move leaves the old copy where it is, dead. A move's
//!    message tells the driver, which until then keeps one old copy of the
//!    moving timer, filed again at the new tick (as its old one comes due,
//!    or in a pass over the dead): so
//!    the driver holds a copy of every pending timer it has filed, and a
//!    shutdown finds each. A cancel of a filed timer (`QUEUED` clear)
//!    counts the copy dead on the canceller's spot instead, which the
//!    driver sums each round. It drops the dead copies all at once when
//!    they outnumber the live ones (by its count, which errs high). A round
//!    files at most [`BATCH`] queued messages (and what the spots hold due by its horizon), fires at most `BATCH` due timers in
//!    deadline order (a callback run, a sleep's task woken, each as it
//!    fires). While timers
//!    are pending it sleeps at most [`RECLAIM_EVERY`], so the dead copies
//!    that cancels counted are looked at within that long without a
//!    canceller waking anyone.
//! 5. **User code** (callbacks, wakers, the drops of closures and wakers)
//!    runs outside every lock, never inside other user code. What the
//!    service runs (callbacks, wakes, the drops of closures) is caught and
//!    its panics counted in one place ([`Shared::count_panics`]); a
//!    `Sleep`'s waker is cloned and dropped only by the `Sleep`, on its
//!    owner's thread, uncaught, as in any future, but for the driver's
//!    wake, which consumes it (caught, as every wake).
//! 6. **A manual clock's `advance`** bumps `advances`, fences, and wakes
//!    the driver; the driver reads `advances`, then the clock, before it
//!    files, and stores `advances` in `served` after a round that filed
//!    everything and fired everything due by the time it read. `advance`
//!    returns once `served` reaches its bump, so every timer submitted
//!    before the call, due by the new time, has fired. A manual clock's
//!    round reads its time before it files, and fires nothing while a
//!    message it could not take yet (rule 3) may hold up earlier ones:
//!    what it fires by that time was all filed first, so one advance
//!    fires in deadline order; meanwhile it sleeps asking for any message
//!    (`ANY`), as a waiting `advance` cannot be served before the held
//!    message lands. To learn the next deadline (`advance_to_next`), a caller sets
//!    `next_wanted` before an `advance` by zero; a round that finds it set
//!    stores its wheels' earliest deadline, as it finds them before it
//!    fires (a timer filed already due is the earliest: the clock stays),
//!    in `next_due`, then the `advances` it read in `next_for`, and serves
//!    after firing (a round that fires only part of what is due serves in
//!    a later one; its answer is then a tick already reached). The answer
//!    is the caller's if `next_for` reaches its own bump; else it asks
//!    again. The clock moves to the answer in one step, to the later of its
//!    time and the deadline, so that callers on several threads that found
//!    the same deadline leave it there.
//! 7. **Shutdown closes the doors**, then is joined once. The driver, once
//!    it sees `STOPPING`, closes every spot, taking what was parked, then
//!    every queue, and only then stores `SHUT_DOWN`: a schedule made after
//!    the service reads as shut down is refused. A park refused by a closed spot goes to the spot's queue, and
//!    a push refused by a closed queue hands its message back: the
//!    producer counts the timer out and refuses it (`Err(Shutdown)`). A
//!    `Sleep`'s owner whose message is refused clears `QUEUED` (none is on
//!    its way, so a later change sends again); if it moved a pending
//!    timer, it leaves it to the driver, which holds a copy of it (rule
//!    4); if it re-armed a fired one, it abandons it (rule 1) and counts it
//!    out (no task waits on it: the fire took the waker). A message accepted
//!    before the close is one the driver takes: every place claimed in a
//!    queue before it is written, however late, and the driver files and
//!    abandons until none is left, with no time limit: between its claim
//!    and its write a push runs no user code, takes no lock and cannot
//!    panic. So a timer
//!    scheduled `Ok` fires or is abandoned, and counted. Whoever takes the
//!    driver's join handle joins it while holding the lock it sits behind,
//!    so a second caller returns only once the service is down.

use core::fmt;
use core::time::Duration;
use crossbeam_utils::CachePadded;

use crate::clock::{Clock, NEVER};
use crate::entry::{Entry, EntryRef};
use crate::executor::Counts;
use crate::job::Job;
use crate::lateness::Histogram;
use crate::queue::{Consumer, Producer};
use crate::spot::SPOTS;
use crate::spot::{Count, Spots};
use crate::sync::atomic::{fence, AtomicBool, AtomicU64, AtomicUsize, Ordering};
use crate::sync::{thread, Mutex};
use crate::{ScheduleError, ShutdownError, ShutdownReport};

mod advance;
mod keep_up;

/// Messages filed and due timers fired per round at most: a burst of
/// submissions never holds off what is due, nor a flood of due timers the
/// submissions. Under loom two, and under miri, which runs a thousand
/// times slower, 64: so that their tests cross a batch in a few steps.
pub(crate) const BATCH: usize = if cfg!(loom) {
    2
} else if cfg!(miri) {
    64
} else {
    4096
};
/// The longest the driver sleeps while timers are pending.
pub(crate) const RECLAIM_EVERY: Duration = Duration::from_millis(100);

/// The driver's word while it runs a round.
pub(crate) const AWAKE: u64 = 0;
/// The driver's word while it sleeps until woken: past every tick.
pub(crate) const FOREVER: u64 = 1 << 61;
/// A bit of a sleeping driver's word: wake it for any message, whatever
/// its tick (it waits for a producer caught between claiming its place in
/// a queue and writing it).
pub(crate) const ANY: u64 = 1 << 62;
/// The driver's word once a shutdown is asked for, until the driver has
/// closed the doors (rule 7).
pub(crate) const STOPPING: u64 = u64::MAX - 1;
/// The driver's word once the doors are closed: every schedule is refused.
pub(crate) const SHUT_DOWN: u64 = u64::MAX;

/// What travels through the queues to the driver.
pub(crate) enum Message {
    /// An entry whose state word the driver makes the wheel agree with.
    Entry(EntryRef),
    /// A detached callback, due at the tick: the driver's alone from now on.
    Job(u64, Job),
}

/// What producers and the driver share.
pub(crate) struct Shared {
    /// Each spot's queue, its producers' end (indexed as `spots`).
    queues: Box<[Producer<Message>]>,
    pub(crate) clock: Clock,
    /// `AWAKE`, the tick the driver sleeps until, `STOPPING` or `SHUT_DOWN`.
    word: CachePadded<AtomicU64>,
    /// Parked messages, and each thread's count of live timers.
    pub(crate) spots: Spots,
    /// Live timers under a `max_pending` limit (else counted in `spots`).
    pending: CachePadded<AtomicUsize>,
    /// What `schedule` admits; `usize::MAX` for no limit.
    max_pending: usize,
    /// The driver thread, to unpark it; set as it is spawned.
    driver: Mutex<Option<thread::Thread>>,
    /// Taken, and joined under the lock, by the one caller that ends it.
    join: Mutex<Option<thread::JoinHandle<()>>>,
    /// Counters only the driver writes, on a line of their own.
    pub(crate) stats: CachePadded<DriverStats>,
    /// Panics of user code wherever caught, and callbacks left unrun.
    pub(crate) counts: std::sync::Arc<Counts>,
    /// How many timers the shutdown abandoned; read after the join.
    unfired: AtomicUsize,
    /// `advance` calls made (a manual clock).
    advances: AtomicU64,
    /// The last of them the driver has served.
    served: AtomicU64,
    /// `advance_to_next` asks for the next deadline (rule 6).
    next_wanted: AtomicBool,
    /// The driver's earliest deadline as a tick (`NEVER` for none) …
    next_due: AtomicU64,
    /// … and the `advances` of the round that found it.
    next_for: AtomicU64,
}

/// Counters only the driver writes: a load and a store, no read-modify-write.
#[derive(Default)]
pub(crate) struct DriverStats {
    pub(crate) fired: AtomicU64,
    pub(crate) lateness_sum_ns: AtomicU64,
    pub(crate) lateness_max_ns: AtomicU64,
    /// Every fired timer's lateness, in buckets.
    pub(crate) lateness: Histogram,
    pub(crate) wakeups: AtomicU64,
    pub(crate) rounds: AtomicU64,
    /// The most messages filed in one round.
    pub(crate) max_filed: AtomicU64,
    /// The most timers taken out of the wheels in one round.
    pub(crate) max_fired: AtomicU64,
}

impl DriverStats {
    pub(crate) fn bump(counter: &AtomicU64, by: u64) {
        counter.store(counter.load(Ordering::Relaxed) + by, Ordering::Relaxed);
    }

    /// Raises a maximum to `to`; `Release`, so that a reader that sees it
    /// sees what the round counted before (the lateness histogram).
    pub(crate) fn raise(counter: &AtomicU64, to: u64) {
        if to > counter.load(Ordering::Relaxed) {
            counter.store(to, Ordering::Release);
        }
    }
}

impl Shared {
    pub(crate) fn new(clock: Clock, max_pending: usize) -> (Self, Vec<Consumer<Message>>) {
        let (queues, consumers): (Vec<_>, _) = (0..SPOTS).map(|_| crate::queue::channel()).unzip();
        let shared = Self {
            queues: queues.into_boxed_slice(),
            clock,
            word: CachePadded::new(AtomicU64::new(AWAKE)),
            spots: Spots::new(),
            pending: CachePadded::new(AtomicUsize::new(0)),
            max_pending,
            driver: Mutex::new(None),
            join: Mutex::new(None),
            stats: CachePadded::default(),
            counts: std::sync::Arc::default(),
            unfired: AtomicUsize::new(0),
            advances: AtomicU64::new(0),
            served: AtomicU64::new(0),
            next_wanted: AtomicBool::new(false),
            next_due: AtomicU64::new(NEVER),
            next_for: AtomicU64::new(0),
        };
        (shared, consumers)
    }

    /// The driver thread, once spawned, and the handle to join it by.
    pub(crate) fn set_driver(&self, join: thread::JoinHandle<()>) {
        *lock(&self.driver) = Some(join.thread().clone());
        *lock(&self.join) = Some(join);
    }

    // ---- Counting (rule 1) ----

    /// Counts a new timer in on spot `spot`, or refuses it at the limit.
    /// Futures pass `limited = false`: they count toward the limit but are
    /// never refused by it. An `Ok` obliges the caller to hand the timer
    /// over, or count it out with [`Self::refuse`].
    pub(crate) fn admit(&self, spot: usize, limited: bool) -> Result<(), ScheduleError> {
        if self.max_pending == usize::MAX {
            // Counted below.
        } else if limited {
            let limit = self.max_pending;
            self.pending
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |p| {
                    (p < limit).then_some(p + 1)
                })
                .map_err(|_| ScheduleError::TooManyPending { limit })?;
        } else {
            self.pending.fetch_add(1, Ordering::AcqRel);
        }
        self.spots.count(spot, Count::Scheduled, 1);
        Ok(())
    }

    /// Counts out a timer counted in on spot `spot` whose message a closed
    /// door handed back (rule 7): it never was the driver's.
    pub(crate) fn refuse(&self, spot: usize) -> ScheduleError {
        self.spots.count(spot, Count::Scheduled, -1);
        self.uncount_limited(1);
        ScheduleError::Shutdown
    }

    /// `n` timers left `PENDING` by transitions this thread won, other than
    /// their owners' cancels; counted out on spot `spot`.
    pub(crate) fn release(&self, spot: usize, n: usize) {
        self.spots.count(spot, Count::Released, n as i64);
        self.uncount_limited(n);
    }

    /// Counts `n` timers out of the limit's count, if there is a limit.
    fn uncount_limited(&self, n: usize) {
        if self.max_pending != usize::MAX {
            self.pending.fetch_sub(n, Ordering::AcqRel);
        }
    }

    /// Live timers. Without a limit, the spots' sum: exact when no timer is
    /// being counted meanwhile.
    pub(crate) fn pending(&self) -> usize {
        if self.max_pending == usize::MAX {
            self.spots.live()
        } else {
            self.pending.load(Ordering::Acquire)
        }
    }

    pub(crate) fn max_pending(&self) -> Option<usize> {
        (self.max_pending != usize::MAX).then_some(self.max_pending)
    }

    /// Counts `n` panics of user code, caught where they ran.
    pub(crate) fn count_panics(&self, n: u64) {
        if n > 0 {
            self.counts.panicked.fetch_add(n, Ordering::Relaxed);
        }
    }

    /// Panics of user code caught so far, wherever they ran.
    pub(crate) fn panicked(&self) -> u64 {
        self.counts.panicked.load(Ordering::Relaxed)
    }

    // ---- Submission (rules 2, 3 and 7) ----

    /// Hands `message` to the driver through spot `spot`'s queue; the
    /// driver must have looked at it by tick `look_by`: a driver asleep
    /// past that is woken. Once the queue is closed (shutdown), hands the
    /// message back.
    pub(crate) fn submit(
        &self,
        spot: usize,
        message: Message,
        look_by: u64,
    ) -> Result<(), Message> {
        let queue = &self.queues[spot % SPOTS];
        let seq = queue.push(message).map_err(|closed| closed.0)?;
        let batch_ends = seq % BATCH as u64 == BATCH as u64 - 1;
        self.look_by(look_by, batch_ends);
        if batch_ends {
            self.keep_up(spot, seq);
        }
        Ok(())
    }

    /// Parks a new timer's `message` in spot `spot`, or queues it if the
    /// spot has no empty place; the driver is to look at it by tick `look_by`.
    /// Whether the driver took it: once the doors are closed (shutdown),
    /// the message is dropped, and the caller still holds the entry.
    #[must_use]
    pub(crate) fn park(&self, spot: usize, message: EntryRef, look_by: u64) -> bool {
        match self.spots.park(spot, message, look_by) {
            Ok(()) => {
                self.look_by(look_by, false);
                true
            }
            // Taken (or closed): queued instead, so that no message is ever
            // in a thread's hands, where neither the driver nor `advance`
            // sees it.
            Err(message) => self.submit(spot, Message::Entry(message), look_by).is_ok(),
        }
    }

    /// The producer's half of the wake-up (rule 3), after a send; a push
    /// that `batch_ends` (the last of each [`BATCH`] pushes to its queue)
    /// wakes a sleeping driver whatever its plan, so that a burst is filed
    /// as it comes: left queued, it would take the queue's memory as well
    /// as the wheel's. (A burst spread over every spot's queue may reach
    /// `SPOTS` times that before the driver wakes, or before the cap on
    /// its sleep, [`RECLAIM_EVERY`], ends it.)
    #[inline]
    fn look_by(&self, look_by: u64, batch_ends: bool) {
        fence(Ordering::SeqCst);
        self.wake_driver_if(|planned| look_by < planned || batch_ends);
    }

    /// `entry`, whose message is still queued or parked (in spot `spot`),
    /// now wants the driver by tick `look_by` (a `Sleep` reset earlier):
    /// the wake-up half of rule 3 without a send, since the message carries
    /// the new tick, after lowering its place's tick if it is parked.
    pub(crate) fn hurry(&self, spot: usize, entry: &Entry, look_by: u64) {
        self.spots.lower(spot, entry, look_by);
        fence(Ordering::SeqCst);
        self.wake_driver_if(|planned| look_by < planned);
    }

    /// Cancels `entry` if it is still pending, for its owner on spot
    /// `spot`: takes its message back if it is parked there, or, if the
    /// driver has filed it, counts its copy dead there (rule 4); counts it
    /// out; then drops the callback's closure (a sleep's waker stays with
    /// its entry, see `Sleep`'s drop). Returns whether it was pending. It
    /// sends nothing and wakes no one.
    ///
    /// The user's drop comes last: it may drop the service's last clone,
    /// whose shutdown (and `pending() == 0` after it) must then find this
    /// timer counted out. A cancel is final (a handle's, a sleep's drop):
    /// a message taken back leaves `QUEUED` set, as no re-arm follows.
    pub(crate) fn cancel<A>(&self, spot: usize, entry: &EntryRef<A>) -> bool {
        let Some(filed) = entry.cancel() else {
            return false;
        };
        if filed {
            self.spots.count(spot, Count::Dead, 1);
        } else {
            self.spots.retract(spot, entry);
        }
        self.spots.count(spot, Count::Cancelled, 1);
        self.uncount_limited(1);
        // SAFETY: `cancel` won the move to `CANCELLED`.
        if !unsafe { entry.cancel_action() } {
            self.count_panics(1);
        }
        true
    }

    /// Wakes the driver if it sleeps and `needed(the tick it sleeps until)`.
    /// The wake-up is claimed by a compare-exchange, so a sleeping driver is
    /// unparked once, not once per producer that notices it sleeping.
    #[inline]
    fn wake_driver_if(&self, needed: impl Fn(u64) -> bool) {
        let mut planned = self.word.load(Ordering::Relaxed);
        while planned != AWAKE && planned < STOPPING && (planned & ANY != 0 || needed(planned)) {
            match self
                .word
                .compare_exchange(planned, AWAKE, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => {
                    self.unpark_driver();
                    return;
                }
                Err(now) => planned = now,
            }
        }
    }

    fn unpark_driver(&self) {
        if let Some(driver) = &*lock(&self.driver) {
            driver.unpark();
        }
    }

    // ---- The driver's side of rule 3 ----

    /// Driver: it is going to sleep until `plan` (a tick, or `FOREVER`).
    /// `false` if a shutdown was asked for.
    pub(crate) fn plan_sleep(&self, plan: u64) -> bool {
        self.word
            .compare_exchange(AWAKE, plan, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
    }

    /// Driver, after its sleep (or instead of it): back to `AWAKE` unless
    /// a shutdown was asked for. Returns whether a producer ended the sleep.
    pub(crate) fn end_sleep(&self, plan: u64) -> bool {
        match self
            .word
            .compare_exchange(plan, AWAKE, Ordering::Relaxed, Ordering::Relaxed)
        {
            Ok(_) => false,
            Err(now) => now == AWAKE,
        }
    }

    /// Whether the doors are closed (rule 7): a schedule made after this
    /// reads true is refused.
    pub(crate) fn is_shut_down(&self) -> bool {
        self.word.load(Ordering::Acquire) == SHUT_DOWN
    }

    /// Whether a shutdown has been asked for (the doors may still be open):
    /// what users are told as "shut down", since every pending timer will
    /// be abandoned.
    pub(crate) fn is_stopping(&self) -> bool {
        self.word.load(Ordering::Acquire) >= STOPPING
    }

    /// Asks for a shutdown, for good, and wakes the driver (rule 7).
    pub(crate) fn begin_shutdown(&self) {
        // A maximum, so that a late call never takes `SHUT_DOWN` back.
        self.word.fetch_max(STOPPING, Ordering::SeqCst);
        self.unpark_driver();
    }

    /// Driver: the doors are closed; from now on the service reports
    /// itself shut down.
    pub(crate) fn doors_closed(&self) {
        self.word.store(SHUT_DOWN, Ordering::Release);
    }

    /// Whether this is the driver's thread (a callback, a wake): read from
    /// the thread itself, no lock taken; in the thread's teardown, once its
    /// own mark is gone, from the driver's handle under its lock.
    pub(crate) fn on_driver_thread(&self) -> bool {
        crate::lane::drives(self).unwrap_or_else(|| {
            lock(&self.driver)
                .as_ref()
                .is_some_and(|d| d.id() == thread::current().id())
        })
    }

    // ---- Shutdown (rule 7) ----

    /// Shuts the service down and joins the driver, once; a second caller
    /// waits for the first to finish, then learns it was already done.
    pub(crate) fn shutdown(&self) -> Result<ShutdownReport, ShutdownError> {
        if self.on_driver_thread() {
            return Err(ShutdownError::FromCallback);
        }
        let mut join = lock(&self.join);
        let driver = join.take().ok_or(ShutdownError::AlreadyShutDown)?;
        self.begin_shutdown();
        let _ = driver.join();
        drop(join);
        Ok(self.report())
    }

    /// The service's last owner is gone: shut it down, and off the driver
    /// thread (where a callback dropped the last owner and the driver is
    /// already on its way out) wait for the driver to end.
    pub(crate) fn stop(&self) {
        if self.on_driver_thread() {
            self.begin_shutdown();
        } else {
            let _ = self.shutdown();
        }
    }

    /// Driver, as its last word: how many timers its shutdown abandoned.
    pub(crate) fn add_unfired(&self, unfired: usize) {
        self.unfired.fetch_add(unfired, Ordering::AcqRel);
    }

    /// What the shutdown left undone; read after the join.
    pub(crate) fn report(&self) -> ShutdownReport {
        let unrun = self.counts.unrun.load(Ordering::Relaxed);
        ShutdownReport {
            unfired: self.unfired.load(Ordering::Acquire),
            unrun: usize::try_from(unrun).unwrap_or(usize::MAX),
        }
    }
}

impl fmt::Debug for Shared {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Shared")
            .field("pending", &self.pending())
            .field("shut_down", &self.is_shut_down())
            .finish_non_exhaustive()
    }
}

/// Locks `mutex`, whose data no panic leaves inconsistent.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> crate::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

//! Submission and the producers' half of the park handshake: a timer's
//! message is pushed to the queue or parked in this thread's spot, then the
//! producer fences and unparks a driver that plans to wake too late for it.

use super::super::{
    Message, AWAKE, BACKLOG_CHECK_EVERY, BACKLOG_HIGH, THROTTLE_YIELDS, WAKE_EVERY,
};
use super::ServiceState;
use crate::entry::{self, EntryRef};
use crate::job::Job;
use crate::sync::atomic::{fence, Ordering};
use crate::sync::thread;

impl ServiceState {
    /// Hands an entry's `message` to the driver, which must have seen it by
    /// tick `look_by`: a sleeping driver planning to wake later is unparked.
    /// Never refused: an admitted timer's message, or a change to one the
    /// driver knows, is one the driver waits for even at shutdown.
    pub(crate) fn submit(&self, message: EntryRef, look_by: u64) {
        self.push(Message::Entry(message), look_by);
    }

    /// A new timer's message to the driver: [`park`](Self::park)ed if it is
    /// `far` (due at least [`crate::parked::PARK_MIN`] from now), else
    /// [`submit`](Self::submit)ted.
    pub(crate) fn hand_over(&self, message: EntryRef, tick: u64, far: bool) {
        if far {
            self.park(message, tick);
        } else {
            self.submit(message, tick);
        }
    }

    /// Hands an admitted detached callback due at `tick` to the driver. It
    /// is the driver's from here on: it runs at its tick, or is dropped
    /// unrun and counted if the service shuts down first.
    #[inline]
    pub(crate) fn submit_job(&self, tick: u64, job: Job) {
        self.push(Message::Job(tick, job), tick);
    }

    /// Pushes `message`, which the driver must have seen by tick `look_by`,
    /// and does a producer's part of the park handshake.
    #[inline]
    fn push(&self, message: Message, look_by: u64) {
        let seq = self.producer.push(message);
        fence(Ordering::SeqCst);
        let wake_anyway = seq % WAKE_EVERY == 0;
        self.wake_driver_if(|planned| look_by < planned || wake_anyway);
        if seq % BACKLOG_CHECK_EVERY == 0 {
            self.throttle();
        }
    }

    /// Like [`submit`](Self::submit), but parks the message in this
    /// thread's parking spot (see `parked`) for a timer due at least
    /// [`crate::parked::PARK_MIN`] from now: a cancel from this thread then takes it
    /// back before the driver sees it. A message it displaces is submitted.
    pub(crate) fn park(&self, message: EntryRef, look_by: u64) {
        let displaced = self.parked.park(message);
        fence(Ordering::SeqCst);
        self.wake_driver_if(|planned| look_by < planned);
        if let Some(other) = displaced {
            let tick = entry::tick_of(other.word_relaxed());
            self.submit(other, tick);
        }
    }

    /// Timers cancelled while parked, which the driver never saw.
    pub(crate) fn retracted(&self) -> u64 {
        self.parked.retracted()
    }

    /// An entry whose message is still queued or parked now wants the
    /// driver by tick `look_by` (a `Sleep` reset earlier): asks for a sweep
    /// of the parking spots and unparks a driver planning to wake later. The
    /// fence pairs with `park`'s, as in `submit`: either the driver sees the
    /// queued message or the request before it sleeps, or this sees its plan.
    pub(crate) fn hurry(&self, look_by: u64) {
        // Release, with the driver's Acquire in `sweep_asked`: a driver that
        // takes the request sees the parked message it is about.
        self.sweep_asked.store(true, Ordering::Release);
        fence(Ordering::SeqCst);
        self.wake_driver_if(|planned| look_by < planned);
    }

    /// Takes back a request for a sweep: whether there was one.
    pub(in crate::driver) fn sweep_asked(&self) -> bool {
        self.sweep_asked.load(Ordering::Relaxed) && self.sweep_asked.swap(false, Ordering::Acquire)
    }

    /// Cancels `entry` if it is still pending, for its owner: counts it out
    /// and, unless a message for it is already queued, queues `message()` (a
    /// reference to it) so the driver frees it in its next round. Returns
    /// whether it was pending.
    pub(crate) fn cancel<A>(
        &self,
        entry: &EntryRef<A>,
        message: impl FnOnce() -> EntryRef,
    ) -> bool {
        let Some(finished) = entry.cancel() else {
            return false;
        };
        self.release();
        // SAFETY: `cancel` won the move to `CANCELLED`.
        if !unsafe { entry.cancel_action() } {
            self.panicked.fetch_add(1, Ordering::Relaxed);
        }
        if finished.must_push {
            // By the round before its deadline: it never needs the driver sooner.
            let look_by = finished.tick.saturating_sub(1);
            self.submit(message(), look_by);
        } else {
            // Its message is queued or parked; if parked by this thread,
            // take it back so the driver never sees the timer.
            self.parked.retract(entry.as_ptr());
        }
        true
    }

    /// Unparks a sleeping driver if `needed(planned wake-up tick)`. The
    /// wake-up is claimed by CAS, so a sleeping driver is unparked once, not
    /// once per producer that notices it sleeping.
    #[inline]
    fn wake_driver_if(&self, needed: impl Fn(u64) -> bool) {
        let mut planned = self.sleeping_until.load(Ordering::Relaxed);
        while planned != AWAKE && needed(planned) {
            match self.sleeping_until.compare_exchange(
                planned,
                AWAKE,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => {
                    self.unpark_driver();
                    return;
                }
                Err(now) => planned = now,
            }
        }
    }

    /// Unparks the driver if it sleeps (see [`Self::wake_driver_if`]).
    pub(crate) fn wake_sleeping_driver(&self) {
        self.wake_driver_if(|_| true);
    }

    /// Backpressure: when more than [`BACKLOG_HIGH`] submissions wait, the
    /// producer wakes the driver and yields to it until half are filed (or
    /// it has yielded [`THROTTLE_YIELDS`] times, should the driver be stuck
    /// in a slow callback). Without it, producers that outnumber the cores
    /// starve the driver and the queue grows without bound.
    #[cold]
    fn throttle(&self) {
        if self.producer.len() <= BACKLOG_HIGH || self.on_driver_thread() {
            return;
        }
        for _ in 0..THROTTLE_YIELDS {
            if self.producer.len() <= BACKLOG_HIGH / 2 || self.is_shutdown() {
                return;
            }
            self.wake_driver_if(|_| true);
            thread::yield_now();
        }
    }
}

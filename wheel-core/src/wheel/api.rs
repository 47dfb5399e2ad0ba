//! The wheel's everyday API over any storage: insert, cancel, reschedule,
//! look up, advance, drain.

use crate::level::Slot;
use crate::slab::{Storage, TimerId};
use crate::tables::Tables;
use crate::Full;

use super::{Advance, Drain, TimerWheel};

impl<T, S: Storage<T>, const SLOTS: usize, const LEVELS: usize> TimerWheel<T, S, SLOTS, LEVELS> {
    /// The wheel's current tick: the largest `now` passed to
    /// [`advance`](Self::advance), or where it started.
    ///
    /// # Examples
    /// ```
    /// let mut wheel = wheel_core::Wheel::<()>::new();
    /// wheel.advance(10);
    /// wheel.advance(5); // time never goes backwards
    /// assert_eq!(wheel.now(), 10);
    /// ```
    #[inline]
    pub fn now(&self) -> u64 {
        self.now
    }

    /// How many timers are pending.
    ///
    /// # Examples
    /// ```
    /// let mut wheel = wheel_core::Wheel::new();
    /// wheel.insert(1, ());
    /// assert_eq!(wheel.len(), 1);
    /// ```
    #[inline]
    pub fn len(&self) -> usize {
        self.slab.len()
    }

    /// Whether no timer is pending.
    ///
    /// # Examples
    /// ```
    /// assert!(wheel_core::Wheel::<()>::new().is_empty());
    /// ```
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.slab.len() == 0
    }

    /// How many timers fit without the storage growing (for a
    /// [`FixedWheel`](crate::FixedWheel), exactly `N`).
    ///
    /// # Examples
    /// ```
    /// assert_eq!(wheel_core::FixedWheel::<(), 3>::new().capacity(), 3);
    /// ```
    pub fn capacity(&self) -> usize {
        self.slab.storage().capacity()
    }

    /// Inserts a timer due at `deadline`, or hands `value` back in [`Full`]
    /// when there is no room. A deadline ≤ [`now`](Self::now) is due at once:
    /// the next [`advance`](Self::advance) yields it. Any `u64` is a valid
    /// deadline; none is clamped. O(1).
    ///
    /// # Examples
    /// ```
    /// let mut wheel = wheel_core::FixedWheel::<&str, 1>::starting_at(50);
    /// wheel.try_insert(10, "in the past").unwrap();
    /// assert_eq!(wheel.advance(50).next().unwrap().value, "in the past");
    /// ```
    #[inline]
    pub fn try_insert(&mut self, deadline: u64, value: T) -> Result<TimerId, Full<T>> {
        let id = self.slab.insert(deadline, value).map_err(Full)?;
        self.link(id.index, deadline);
        Ok(id)
    }

    /// Cancels a pending timer and returns its value; `None` if `id` is stale
    /// (fired, cancelled or drained). O(1).
    ///
    /// # Examples
    /// ```
    /// let mut wheel = wheel_core::Wheel::new();
    /// let id = wheel.insert(9, "req-1 timeout");
    /// assert_eq!(wheel.cancel(id), Some("req-1 timeout"));
    /// assert!(wheel.advance(100).next().is_none());
    /// ```
    #[inline]
    pub fn cancel(&mut self, id: TimerId) -> Option<T> {
        let index = self.slab.index_of(id)?;
        self.unlink(index);
        Some(self.slab.remove(index)?.value)
    }

    /// Moves a pending timer to a new deadline (≤ [`now`](Self::now): due at
    /// once), keeping its id; `false` if `id` is stale. O(1).
    ///
    /// # Examples
    /// ```
    /// let mut wheel = wheel_core::Wheel::new();
    /// let id = wheel.insert(10, ());
    /// assert!(wheel.reschedule(id, 20));
    /// assert!(wheel.advance(19).next().is_none());
    /// assert_eq!(wheel.advance(20).next().unwrap().id, id);
    /// ```
    #[inline]
    pub fn reschedule(&mut self, id: TimerId, deadline: u64) -> bool {
        let Some(index) = self.slab.index_of(id) else {
            return false;
        };
        self.unlink(index);
        self.slab.link_mut(index).deadline = deadline;
        self.link(index, deadline);
        true
    }

    /// A pending timer's deadline; `None` if `id` is stale.
    ///
    /// # Examples
    /// ```
    /// let mut wheel = wheel_core::Wheel::new();
    /// let id = wheel.insert(77, ());
    /// assert_eq!(wheel.deadline(id), Some(77));
    /// ```
    #[inline]
    pub fn deadline(&self, id: TimerId) -> Option<u64> {
        let index = self.slab.index_of(id)?;
        Some(self.slab.link(index).deadline)
    }

    /// A pending timer's value; `None` if `id` is stale.
    ///
    /// # Examples
    /// ```
    /// let mut wheel = wheel_core::Wheel::new();
    /// let id = wheel.insert(1, "v");
    /// assert_eq!(wheel.get(id), Some(&"v"));
    /// ```
    #[inline]
    pub fn get(&self, id: TimerId) -> Option<&T> {
        self.slab.get(id)
    }

    /// The id of the timer pending at slab index `index` (see
    /// [`TimerId::index`]), or `None` if no timer is kept there. The id
    /// names whichever timer is there now: an index kept past its timer's
    /// end may name a newer one, which the full id never does.
    ///
    /// # Examples
    /// ```
    /// let mut wheel = wheel_core::Wheel::new();
    /// let id = wheel.insert(1, "v");
    /// assert_eq!(wheel.id_at(id.index()), Some(id));
    /// wheel.cancel(id);
    /// assert_eq!(wheel.id_at(id.index()), None);
    /// ```
    #[inline]
    pub fn id_at(&self, index: u32) -> Option<TimerId> {
        self.slab.id_at(index)
    }

    /// A pending timer's value, mutably; `None` if `id` is stale.
    ///
    /// # Examples
    /// ```
    /// let mut wheel = wheel_core::Wheel::new();
    /// let id = wheel.insert(1, 1);
    /// *wheel.get_mut(id).unwrap() += 1;
    /// assert_eq!(wheel.cancel(id), Some(2));
    /// ```
    #[inline]
    pub fn get_mut(&mut self, id: TimerId) -> Option<&mut T> {
        self.slab.get_mut(id)
    }

    /// Moves the clock to `max(now, self.now())` and yields every timer with
    /// deadline ≤ that: first those already due (in any order), then the rest
    /// in non-decreasing deadline order. Never early.
    ///
    /// The work is lazy and O(1) per step: each `next()` cascades at most one
    /// slot. Dropping the iterator early loses nothing: the clock still moves
    /// to `now`, and the timers it did not yield stay pending, already due,
    /// and come out first from the next `advance`.
    ///
    /// # Examples
    /// ```
    /// let mut wheel = wheel_core::Wheel::new();
    /// for t in [30, 10, 20] {
    ///     wheel.insert(t, t);
    /// }
    /// let mut fired = wheel.advance(25);
    /// assert_eq!(fired.next().map(|e| e.deadline), Some(10));
    /// drop(fired); // 20 stays pending, already due
    /// assert_eq!(wheel.now(), 25);
    /// let rest: Vec<_> = wheel.advance(30).map(|e| e.deadline).collect();
    /// assert_eq!(rest, [20, 30]);
    /// ```
    pub fn advance(&mut self, now: u64) -> Advance<'_, T, S, SLOTS, LEVELS> {
        Advance {
            wheel: self,
            target: now,
        }
    }

    /// When to call [`advance`](Self::advance) next: `None` iff the wheel is
    /// empty; otherwise a tick `t` with `now() ≤ t ≤ max(now(), earliest
    /// deadline)` at which `advance(t)` makes progress. It is exactly the
    /// earliest deadline unless that timer sits on a higher level, in which
    /// case it is the start of its slot, where it cascades down. O(1).
    ///
    /// A driver that loops `advance(next_expiration())` sees every timer come
    /// out of the call whose argument equals its deadline, and wakes at most
    /// `LEVELS + 1` times per timer.
    ///
    /// # Examples
    /// ```
    /// let mut wheel = wheel_core::Wheel::new();
    /// assert_eq!(wheel.next_expiration(), None);
    /// wheel.insert(40, ());
    /// assert_eq!(wheel.next_expiration(), Some(40));
    /// ```
    #[inline]
    pub fn next_expiration(&self) -> Option<u64> {
        if !self.tables.due.is_empty() {
            return Some(self.now);
        }
        self.next_slot().map(|(_, _, start)| start)
    }

    /// Removes every pending timer, yielding each (in no particular order).
    /// The wheel is empty afterwards, even if the iterator is dropped early;
    /// the clock does not move. If a value the dropped iterator had not
    /// yielded panics in its drop, the rest are still removed and dropped
    /// and the wheel is empty; the panic then propagates (a second such
    /// panic aborts, as in a `Vec`'s drain).
    ///
    /// # Examples
    /// ```
    /// let mut wheel = wheel_core::Wheel::new();
    /// wheel.insert(1, 'a');
    /// wheel.insert(u64::MAX, 'b');
    /// let mut values: Vec<_> = wheel.drain().map(|e| e.value).collect();
    /// values.sort();
    /// assert_eq!(values, ['a', 'b']);
    /// assert!(wheel.is_empty());
    /// ```
    pub fn drain(&mut self) -> Drain<'_, T, S, SLOTS, LEVELS> {
        // Unhook every list first: the entries are then only slab entries.
        self.tables = Tables::EMPTY;
        self.stage.reset();
        Drain {
            wheel: self,
            index: 0,
        }
    }

    /// Removes every pending timer, dropping the values. If a value's drop
    /// panics, the rest are still removed and dropped and the wheel is
    /// empty; the panic then propagates (a second such panic aborts).
    ///
    /// # Examples
    /// ```
    /// let mut wheel = wheel_core::Wheel::new();
    /// wheel.insert(1, ());
    /// wheel.clear();
    /// assert!(wheel.is_empty());
    /// ```
    pub fn clear(&mut self) {
        self.drain();
    }
}

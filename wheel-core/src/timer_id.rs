//! [`TimerId`]: the name of one timer in one wheel, generational so that a
//! stale one never touches a newer timer.

/// Names one timer in one wheel.
///
/// It goes stale once its timer fires, is cancelled or is drained; a stale id
/// is inert (`cancel` gives `None`, `reschedule` gives `false`). Entries are
/// reused, but each reuse bumps a 32-bit generation, so an id can only match a
/// newer timer after its entry has been reused 2³² times.
///
/// # Examples
/// ```
/// use wheel_core::Wheel;
///
/// let mut wheel = Wheel::new();
/// let id = wheel.insert(5, "tick");
/// assert_eq!(wheel.cancel(id), Some("tick"));
/// assert_eq!(wheel.cancel(id), None); // stale now
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub struct TimerId {
    pub(crate) index: u32,
    pub(crate) generation: u32,
}

impl TimerId {
    /// The id packed into one `u64`, e.g. to keep it in an atomic. Indexes
    /// stay below `u32::MAX - 1`, so the packed value is never `u64::MAX` or
    /// `u64::MAX - 1`: those two are free for use as sentinels.
    ///
    /// # Examples
    /// ```
    /// use wheel_core::{TimerId, Wheel};
    ///
    /// let mut wheel = Wheel::new();
    /// let id = wheel.insert(1, ());
    /// assert_eq!(TimerId::from_bits(id.to_bits()), id);
    /// ```
    #[inline]
    pub const fn to_bits(self) -> u64 {
        ((self.generation as u64) << 32) | self.index as u64
    }

    /// Where the timer is kept: an index below `u32::MAX - 1` that no other
    /// timer pending in the same wheel has. With
    /// [`TimerWheel::id_at`](crate::TimerWheel::id_at) it lets a caller
    /// that is short of room keep 32 bits instead of the whole id.
    ///
    /// # Examples
    /// ```
    /// use wheel_core::Wheel;
    ///
    /// let mut wheel = Wheel::new();
    /// let id = wheel.insert(1, ());
    /// assert_eq!(wheel.id_at(id.index()), Some(id));
    /// ```
    #[inline]
    pub const fn index(self) -> u32 {
        self.index
    }

    /// Unpacks [`to_bits`](Self::to_bits). An id made up from arbitrary
    /// bits is harmless: at worst it names some timer of the wheel it is used
    /// with, at best none.
    ///
    /// # Examples
    /// ```
    /// use wheel_core::TimerId;
    ///
    /// assert_eq!(TimerId::from_bits(7).to_bits(), 7);
    /// ```
    #[inline]
    pub const fn from_bits(bits: u64) -> Self {
        Self {
            index: bits as u32,
            generation: (bits >> 32) as u32,
        }
    }
}

//! The error a fixed-capacity wheel returns when it has no room, carrying the value back.

use core::fmt;

/// The wheel had no free entry for a new timer; the value is handed back.
///
/// Returned by [`try_insert`](crate::TimerWheel::try_insert) when a
/// [`FixedWheel`](crate::FixedWheel) already holds `N` timers (or a growable
/// [`Wheel`](crate::Wheel) already holds `u32::MAX - 1`).
///
/// # Examples
/// ```
/// use wheel_core::FixedWheel;
///
/// let mut wheel: FixedWheel<&str, 1> = FixedWheel::new();
/// wheel.try_insert(10, "first").unwrap();
/// let full = wheel.try_insert(20, "second").unwrap_err();
/// assert_eq!(full.to_string(), "timer wheel is full");
/// assert_eq!(full.into_inner(), "second");
/// ```
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Full<T>(pub(crate) T);

impl<T> Full<T> {
    /// Takes back the value that could not be inserted.
    ///
    /// # Examples
    /// ```
    /// use wheel_core::FixedWheel;
    ///
    /// let mut wheel: FixedWheel<u32, 0> = FixedWheel::new();
    /// assert_eq!(wheel.try_insert(1, 7).unwrap_err().into_inner(), 7);
    /// ```
    pub fn into_inner(self) -> T {
        self.0
    }
}

// Like `std::sync::mpsc::SendError`: no `T: Debug` bound, so any `Full<T>` is an `Error`.
impl<T> fmt::Debug for Full<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Full(..)")
    }
}

impl<T> fmt::Display for Full<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("timer wheel is full")
    }
}

impl<T> core::error::Error for Full<T> {}

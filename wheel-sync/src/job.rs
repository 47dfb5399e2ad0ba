//! A detached callback: a type-erased `FnOnce() + Send` kept inline.
//!
//! A callback scheduled with
//! [`TimerService::schedule_detached_at`](crate::TimerService::schedule_detached_at)
//! has no handle, so nothing but the driver ever refers to it: it needs no
//! shared, reference-counted entry.
//! It travels through a queue and sits in the driver's wheel by value, as
//! a [`Job`]: a table of two functions and two words of storage. A closure
//! that fits those words (size ≤ 16 bytes, alignment ≤ 8 — a reference and
//! an integer, say) is stored in them; a bigger one is boxed and the box is
//! stored. Scheduling such a callback allocates nothing, and the driver
//! frees nothing when it fires.

use crate::caught::{run_caught, run_uncounted};
use core::fmt;
use core::marker::PhantomData;
use core::mem::{self, ManuallyDrop, MaybeUninit};

/// The inline storage: two words, word-aligned.
type Words = MaybeUninit<[usize; 2]>;

/// What a [`Job`] does with its storage; one table per closure type.
struct Table {
    /// Moves the closure out of the storage and calls it.
    call: unsafe fn(*mut Words),
    /// Moves the closure out of the storage and drops it.
    drop: unsafe fn(*mut Words),
}

/// A callback the driver owns outright (see the module docs).
pub(crate) struct Job {
    table: &'static Table,
    /// Holds an `F` for which [`fits`] holds, initialised, until `call` or
    /// `drop` moves it out (both consume the job).
    words: Words,
}

// SAFETY: a `Job` is made only from an `F: Send` (see `new`), and the
// storage holds nothing but that `F`.
unsafe impl Send for Job {}

/// Whether a `G` can live in the inline storage.
const fn fits<G>() -> bool {
    mem::size_of::<G>() <= mem::size_of::<Words>()
        && mem::align_of::<G>() <= mem::align_of::<Words>()
}

/// `call` for closures of type `G`.
///
/// # Safety
/// `words` holds an initialised `G`, which this moves out.
unsafe fn call<G: FnOnce()>(words: *mut Words) {
    // SAFETY: the caller's contract; `Words` is aligned for `G` (`fits`).
    let g = unsafe { words.cast::<G>().read() };
    g();
}

/// `drop` for closures of type `G`.
///
/// # Safety
/// As [`call`].
unsafe fn drop_in<G>(words: *mut Words) {
    // SAFETY: as in `call`.
    drop(unsafe { words.cast::<G>().read() });
}

/// The table for closures of type `G`, promoted to a `'static`.
struct TableOf<G>(PhantomData<G>);

impl<G: FnOnce()> TableOf<G> {
    const TABLE: Table = Table {
        call: call::<G>,
        drop: drop_in::<G>,
    };
}

impl Job {
    /// Wraps `f`: inline if it fits, else boxed.
    pub(crate) fn new<F: FnOnce() + Send + 'static>(f: F) -> Self {
        if fits::<F>() {
            Self::inline(f)
        } else {
            Self::inline(Box::new(f))
        }
    }

    /// Stores `g` in the words.
    ///
    /// # Panics
    /// If `G` does not [fit](fits); `new` only calls it with types that do.
    fn inline<G: FnOnce() + Send + 'static>(g: G) -> Self {
        assert!(fits::<G>(), "Job::inline with a closure that does not fit");
        let mut words = Words::uninit();
        // SAFETY: `G` fits the storage in size and alignment (checked above),
        // and the storage is uninitialised, so nothing is overwritten.
        unsafe { words.as_mut_ptr().cast::<G>().write(g) };
        Self {
            table: &TableOf::<G>::TABLE,
            words,
        }
    }

    /// Calls the closure; returns `false` if it panicked (the panic is caught).
    pub(crate) fn run(self) -> bool {
        run_caught(|| self.call())
    }

    /// Calls the closure, letting a panic through (for a caller that
    /// catches it, such as the callback executor's wrapper).
    pub(crate) fn call(self) {
        let mut this = ManuallyDrop::new(self);
        let call = this.table.call;
        let words: *mut Words = &mut this.words;
        // SAFETY: the words hold the closure `table` was made for; `this` is
        // never dropped, so it is moved out exactly once, here (a panic in
        // the closure unwinds past `this` without dropping it).
        unsafe { call(words) }
    }

    /// Drops the closure unrun; returns `false` if its drop panicked (the
    /// panic is caught).
    pub(crate) fn discard(self) -> bool {
        let mut this = ManuallyDrop::new(self);
        let drop = this.table.drop;
        let words: *mut Words = &mut this.words;
        // SAFETY: as in `call`, for the drop.
        run_caught(|| unsafe { drop(words) })
    }
}

impl Drop for Job {
    fn drop(&mut self) {
        // A job dropped unrun (one that `discard` did not take) still holds
        // its closure, whose drop is user code: it must not unwind into the
        // thread that drops the job, which may be the driver.
        let drop = self.table.drop;
        let words: *mut Words = &mut self.words;
        // SAFETY: a job that is dropped was never run or discarded (both
        // forget it), so its words still hold the closure.
        run_uncounted(|| unsafe { drop(words) });
    }
}

impl fmt::Debug for Job {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Job").finish_non_exhaustive()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    /// Counts its drops.
    struct Token(Arc<AtomicUsize>);

    impl Drop for Token {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Small, but aligned beyond the storage.
    #[repr(align(16))]
    struct A16(u8);

    #[test]
    fn a_job_is_three_words() {
        assert_eq!(mem::size_of::<Job>(), 3 * mem::size_of::<usize>());
        // The table is never null, so an enum around a job needs no tag.
        assert_eq!(mem::size_of::<Option<Job>>(), mem::size_of::<Job>());
    }

    #[test]
    fn small_closures_are_inline_and_big_ones_boxed() {
        let small = (&0u8, 7u64);
        let big = [0u64; 3];
        let aligned = A16(1);
        assert!(fits::<&dyn Fn()>());
        assert!(fits::<(&u8, u64)>());
        assert!(!fits::<[u64; 3]>());
        assert!(!fits::<A16>());
        let seen = Arc::new(AtomicUsize::new(0));
        for job in [
            Job::new({
                let seen = Arc::clone(&seen);
                move || {
                    let _ = small;
                    seen.fetch_add(1, Ordering::Relaxed);
                }
            }),
            Job::new({
                let seen = Arc::clone(&seen);
                move || {
                    assert_eq!(big, [0; 3]);
                    seen.fetch_add(10, Ordering::Relaxed);
                }
            }),
            Job::new({
                let seen = Arc::clone(&seen);
                move || {
                    assert_eq!(aligned.0, 1);
                    seen.fetch_add(100, Ordering::Relaxed);
                }
            }),
            Job::new(|| ()),
        ] {
            assert!(job.run());
        }
        assert_eq!(seen.load(Ordering::Relaxed), 111);
    }

    /// A job that holds a [`Token`] counting into `drops`: inline, or
    /// `boxed` (its closure made too big to fit).
    fn token_job(drops: &Arc<AtomicUsize>, boxed: bool) -> Job {
        let token = Token(Arc::clone(drops));
        let pad = [0u64; 4];
        if boxed {
            Job::new(move || drop((token, pad)))
        } else {
            Job::new(move || drop(token))
        }
    }

    #[test]
    fn running_drops_the_capture_once_and_dropping_drops_it_unrun() {
        let drops = Arc::new(AtomicUsize::new(0));
        for boxed in [false, true] {
            assert!(token_job(&drops, boxed).run());
        }
        assert_eq!(drops.load(Ordering::Relaxed), 2);
        for boxed in [false, true] {
            drop(token_job(&drops, boxed));
        }
        assert_eq!(drops.load(Ordering::Relaxed), 4);
    }

    /// Panics as it is dropped.
    struct Bomb;

    impl Drop for Bomb {
        fn drop(&mut self) {
            panic!("a capture that panics on drop");
        }
    }

    #[test]
    fn a_capture_panicking_on_drop_is_caught_whether_discarded_or_dropped() {
        for boxed in [false, true] {
            let pad = [0u64; 4];
            let job = |bomb: Bomb| {
                if boxed {
                    Job::new(move || drop((bomb, pad)))
                } else {
                    Job::new(move || drop(bomb))
                }
            };
            assert!(!job(Bomb).discard(), "discard reports the panic");
            drop(job(Bomb)); // caught: the test would fail on the unwind
        }
    }

    #[test]
    fn a_panic_is_caught_and_the_capture_still_dropped() {
        let drops = Arc::new(AtomicUsize::new(0));
        let token = Token(Arc::clone(&drops));
        let job = Job::new(move || {
            let _token = &token;
            panic!("job panics");
        });
        assert!(!job.run());
        assert_eq!(drops.load(Ordering::Relaxed), 1);
    }
}

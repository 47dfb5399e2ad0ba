use super::*;
use crate::action::Callback;
use core::task::Waker;
use std::sync::atomic::AtomicUsize;
use std::sync::Arc as StdArc;

/// Counts its drops.
struct Guard(StdArc<AtomicUsize>);

impl Drop for Guard {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

fn counted_callback(
    ran: &StdArc<AtomicUsize>,
    dropped: &StdArc<AtomicUsize>,
) -> EntryRef<Callback<impl FnOnce() + Send + 'static>> {
    let (ran, guard) = (ran.clone(), Guard(dropped.clone()));
    let (owner, message) = EntryRef::new(
        7,
        Callback::new(move || {
            let _guard = guard;
            ran.fetch_add(1, Ordering::Relaxed);
        }),
    );
    assert_eq!(owner.refs.load(Ordering::Relaxed), 2, "owner and message");
    drop(message);
    owner
}

#[test]
fn a_two_word_callback_entry_is_a_forty_byte_allocation() {
    let (a, b) = (0u64, &0u64);
    let closure = move || assert!(a < *b);
    assert_eq!(size_of_val(&closure), 16);
    assert_eq!(size_of::<Entry>(), 24);
    assert_eq!(size_of::<EntryRef>(), size_of::<usize>());
    fn timer_size<F>(_: &F) -> usize {
        size_of::<Timer<Callback<F>>>()
    }
    assert_eq!(timer_size(&closure), 40);
}

#[test]
fn the_last_reference_frees_the_entry_and_its_closure_once() {
    let (ran, dropped) = Default::default();
    let owner = counted_callback(&ran, &dropped).erase();
    let message = owner.clone();
    let wheel = message.clone();
    drop(message);
    drop(owner);
    assert_eq!(dropped.load(Ordering::Relaxed), 0, "still referenced");
    assert_eq!(wheel.state(), PENDING);
    drop(wheel);
    assert_eq!(dropped.load(Ordering::Relaxed), 1);
    assert_eq!(ran.load(Ordering::Relaxed), 0);
}

#[test]
fn firing_runs_the_closure_once_and_drops_it_at_once() {
    let (ran, dropped) = Default::default();
    let owner = counted_callback(&ran, &dropped);
    let driver = owner.erased();
    let word = driver.word_relaxed();
    assert!(driver.try_fire(word, 7));
    // SAFETY: `try_fire` just won the move to `FIRED`.
    assert!(unsafe { driver.fire(None) }.finish());
    assert_eq!(ran.load(Ordering::Relaxed), 1);
    assert_eq!(dropped.load(Ordering::Relaxed), 1, "dropped after its run");
    assert!(!driver.try_fire(driver.word_relaxed(), 7), "fires once");
    assert!(owner.cancel().is_none(), "too late to cancel");
    drop((owner, driver));
    assert_eq!(dropped.load(Ordering::Relaxed), 1);
}

/// Counts its wakes.
struct WakeCount(AtomicUsize);

impl std::task::Wake for WakeCount {
    fn wake(self: StdArc<Self>) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

#[test]
fn firing_a_sleep_wakes_its_latest_waker_once_the_driver_finishes() {
    let first = StdArc::new(WakeCount(AtomicUsize::new(0)));
    let latest = StdArc::new(WakeCount(AtomicUsize::new(0)));
    let (owner, driver) = EntryRef::new(7, Wake::new(&Waker::from(first.clone())));
    owner.action().register(&Waker::from(latest.clone()));
    assert!(driver.try_fire(driver.word_relaxed(), 7));
    // SAFETY: `try_fire` just won the move to `FIRED`.
    let fired = unsafe { driver.fire(None) };
    assert_eq!(latest.0.load(Ordering::Relaxed), 0, "woken by finish");
    assert!(fired.finish());
    assert_eq!(latest.0.load(Ordering::Relaxed), 1);
    assert_eq!(first.0.load(Ordering::Relaxed), 0);
}

#[test]
fn abandoning_drops_the_closure_without_running_it() {
    let (ran, dropped) = Default::default();
    let owner = counted_callback(&ran, &dropped).erase();
    assert!(owner.abandon());
    // SAFETY: `abandon` just won the move to `ABANDONED`.
    assert!(unsafe { owner.abandon_action() });
    assert_eq!(dropped.load(Ordering::Relaxed), 1);
    assert!(!owner.try_fire(owner.word_relaxed(), 7));
    drop(owner);
    assert_eq!(
        (ran.load(Ordering::Relaxed), dropped.load(Ordering::Relaxed)),
        (0, 1)
    );
}

#[test]
fn a_panicking_callback_reports_it_and_is_dropped() {
    let dropped = StdArc::new(AtomicUsize::new(0));
    let guard = Guard(dropped.clone());
    let (entry, message) = EntryRef::new(
        1,
        Callback::new(move || {
            let _guard = guard;
            panic!("callback panics");
        }),
    );
    drop(message);
    assert!(entry.try_fire(entry.word_relaxed(), 1));
    // SAFETY: `try_fire` just won the move to `FIRED`.
    assert!(!unsafe { entry.fire(None) }.finish());
    assert_eq!(dropped.load(Ordering::Relaxed), 1);
}

#[test]
fn references_dropped_on_other_threads_free_once() {
    let (ran, dropped) = Default::default();
    let owner = counted_callback(&ran, &dropped).erase();
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let entry = owner.clone();
            crate::sync::thread::spawn(move || drop(entry))
        })
        .collect();
    drop(owner);
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(dropped.load(Ordering::Relaxed), 1);
}

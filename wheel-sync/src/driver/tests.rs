//! The driver's own steps, driven by hand on a manual clock.

use std::sync::mpsc;
use std::time::Duration;

use super::*;
use crate::entry::{Wake, FIRED};

/// A driver on a manual clock with a 1 ms tick, not yet running.
fn manual_driver() -> (Arc<Shared>, Driver) {
    let clock = Clock::new(Duration::from_millis(1), true);
    let (shared, consumer) = Shared::new(clock, usize::MAX, None);
    let driver = Driver::new(Arc::clone(&shared), consumer);
    (shared, driver)
}

#[test]
fn a_sweep_before_a_long_sleep_that_files_a_due_timer_goes_back_to_a_round() {
    let (shared, mut driver) = manual_driver();
    // A sleep's entry, parked and already due: as a parked sleep reset to
    // now leaves it.
    let (entry, message) = EntryRef::new(0, Wake::default());
    shared.admit(false).unwrap();
    assert!(shared.parked.park(message).is_none());
    let (tx, rx) = mpsc::channel();
    let parker = {
        let shared = Arc::clone(&shared);
        std::thread::spawn(move || {
            shared.set_driver(std::thread::current());
            // With an empty wheel the plan is to sleep for good, so the
            // parked messages are swept first; what that files is due.
            driver.park(false);
            tx.send(()).unwrap();
            driver
        })
    };
    let went_back = rx.recv_timeout(Duration::from_secs(2)).is_ok();
    if !went_back {
        // Parked for good past a due timer: wake it to end the test.
        shared.sleeping_until.store(AWAKE, Ordering::Relaxed);
        shared.unpark_driver();
    }
    let mut driver = parker.join().unwrap();
    assert!(went_back, "the driver slept past a due timer");
    assert!(driver.fire_due(shared.clock.now()));
    assert_eq!(entry.state(), FIRED);
}

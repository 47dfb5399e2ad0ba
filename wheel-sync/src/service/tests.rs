//! The clones' one shared reference: the last clone to go ends the service
//! and lets go of its memory, once, whichever threads the clones go on.

use std::time::Duration;

use super::*;

#[test]
fn the_last_clones_dropped_on_many_threads_end_the_service_and_free_it_once() {
    for round in 0..if cfg!(miri) { 2 } else { 50 } {
        let timers = TimerService::new();
        let memory = Arc::downgrade(timers.shared());
        let clones: Vec<_> = (0..4).map(|_| timers.clone()).collect();
        drop(timers);
        let threads: Vec<_> = clones
            .into_iter()
            .map(|clone| {
                std::thread::spawn(move || {
                    // A clone of a clone, made and dropped on this thread.
                    drop(clone.clone());
                    assert!(!clone.shared().is_shut_down(), "round {round}");
                    drop(clone);
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        // The driver may still be on its way out of a shutdown begun by
        // the last drop: its reference goes when its thread ends.
        let give_up =
            std::time::Instant::now() + Duration::from_secs(if cfg!(miri) { 120 } else { 10 });
        while memory.strong_count() > 0 {
            assert!(
                std::time::Instant::now() < give_up,
                "round {round}: never freed"
            );
            std::thread::yield_now();
        }
    }
}

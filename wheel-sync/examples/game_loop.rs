//! A game server's loop on any executor (tokio's here): a fixed 20 Hz tick
//! from an `Interval`, monsters that respawn after a random delay (`sleep`),
//! and idle players dropped by a `DelayQueue` unless they act in time.
//!
//! `cargo run --release -p wheel-sync --example game_loop`

use std::time::{Duration, Instant};

use wheel_sync::{DelayQueue, MissedTickBehavior};

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let start = Instant::now();

    // Ten thousand monsters, each respawning after 0.1–1 s.
    let respawns: Vec<_> = (0..10_000u64)
        .map(|monster| {
            tokio::spawn(async move {
                let delay = Duration::from_millis(100 + monster * 7919 % 900);
                let due = Instant::now() + delay;
                wheel_sync::sleep(delay).await;
                Instant::now() - due // how late
            })
        })
        .collect();

    // Players idle for 300 ms are dropped; player 0 acts every tick.
    let mut idle = DelayQueue::new();
    let players: Vec<_> = (0..100u32)
        .map(|player| idle.insert(player, Duration::from_millis(300)))
        .collect();

    let mut ticks = wheel_sync::interval(Duration::from_millis(50));
    ticks.set_missed_tick_behavior(MissedTickBehavior::Skip);
    let mut dropped = 0;
    for _ in 0..20 {
        ticks.tick().await;
        idle.reset(&players[0], Duration::from_millis(300));
        // Drop the players whose idle time ran out, without waiting.
        while let Some(Some(_player)) = ready_now(&mut idle) {
            dropped += 1;
        }
    }

    let mut worst = Duration::ZERO;
    for respawn in respawns {
        worst = worst.max(respawn.await.expect("monster task"));
    }
    println!(
        "20 ticks in {:.2?}; {dropped} idle players dropped, player 0 {}; \
         10 000 respawns, the latest {worst:.2?} after its deadline",
        start.elapsed(),
        if idle.try_remove(&players[0]).is_some() {
            "still in"
        } else {
            "dropped"
        }
    );
}

/// The queue's next expired item if one is ready now, without waiting.
fn ready_now<T>(queue: &mut DelayQueue<T>) -> Option<Option<wheel_sync::delay_queue::Expired<T>>> {
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    match queue.poll_expired(&mut cx) {
        std::task::Poll::Ready(item) => Some(item),
        std::task::Poll::Pending => None,
    }
}

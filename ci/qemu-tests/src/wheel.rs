//! `FixedWheel` on the target: insert, cancel, reschedule, advance across
//! level edges and around the end of `u64`, `next_expiration`, clocks
//! started at 0, near 2^36 and near `u64::MAX`, and `Full`.

use wheel_core::FixedWheel;

use crate::{check, check_eq, Outcome, Test};

pub static TESTS: &[Test] = &[
    ("wheel_fires_each_timer_at_its_deadline", fires_at_deadline),
    ("wheel_cancel_and_stale_ids", cancel),
    ("wheel_reschedule_later_and_earlier", reschedule),
    ("wheel_level_edges_from_0", || level_edges(0)),
    ("wheel_level_edges_near_2_36", || level_edges((1 << 36) - 7)),
    ("wheel_level_edges_near_u64_max", || {
        level_edges(u64::MAX - (1 << 20))
    }),
    ("wheel_up_to_u64_max", up_to_u64_max),
    ("wheel_rotation_wraps", rotation_wraps),
    ("wheel_next_expiration", next_expiration),
    ("wheel_past_deadlines_are_due", past_deadlines),
    ("wheel_full", full),
    ("wheel_drain", drain),
    ("wheel_against_an_array", against_array),
];

/// Steps a wheel from `next_expiration` to `next_expiration`, checking that
/// each timer comes out exactly at its deadline; returns how many fired.
fn step_through<const N: usize>(wheel: &mut FixedWheel<u64, N>) -> Result<usize, crate::Failure> {
    let mut fired = 0;
    let mut calls = 0;
    while let Some(tick) = wheel.next_expiration() {
        check!(tick >= wheel.now());
        for expired in wheel.advance(tick) {
            check_eq!(expired.deadline, tick);
            check_eq!(expired.value, expired.deadline);
            fired += 1;
        }
        calls += 1;
        check!(calls <= 12 * N + 1);
    }
    wheel.validate();
    Ok(fired)
}

fn fires_at_deadline() -> Outcome {
    let mut wheel: FixedWheel<u64, 16> = FixedWheel::new();
    for deadline in [30, 10, 20, 1 << 40, 64, 1] {
        check!(wheel.try_insert(deadline, deadline).is_ok());
    }
    check!(wheel.advance(9).next().map(|e| e.deadline) == Some(1));
    check!(wheel.advance(9).next().is_none());
    check_eq!(step_through(&mut wheel)?, 5);
    check_eq!(wheel.now(), 1 << 40);
    Ok(())
}

fn cancel() -> Outcome {
    let mut wheel: FixedWheel<u64, 4> = FixedWheel::new();
    let a = wheel.try_insert(100, 100).map_err(|_| fail("insert"))?;
    let b = wheel.try_insert(5_000, 5_000).map_err(|_| fail("insert"))?;
    check_eq!(wheel.cancel(a), Some(100));
    check_eq!(wheel.cancel(a), None);
    check!(!wheel.reschedule(a, 7));
    check_eq!(wheel.len(), 1);
    let c = wheel.try_insert(200, 200).map_err(|_| fail("insert"))?;
    check!(c != a); // the entry is reused under a new generation
    check_eq!(wheel.get(a), None);
    check_eq!(wheel.get(b), Some(&5_000));
    check_eq!(step_through(&mut wheel)?, 2);
    Ok(())
}

fn reschedule() -> Outcome {
    let mut wheel: FixedWheel<u64, 4> = FixedWheel::new();
    let id = wheel.try_insert(1_000, 0).map_err(|_| fail("insert"))?;
    check!(wheel.reschedule(id, 70_000));
    check_eq!(wheel.deadline(id), Some(70_000));
    check!(wheel.advance(69_999).next().is_none());
    check!(wheel.reschedule(id, 69_999)); // now: due at once
    let expired = wheel.advance(69_999).next();
    check!(expired.is_some_and(|e| e.id == id && e.deadline == 69_999));
    check!(wheel.is_empty());
    Ok(())
}

/// Deadlines on each side of the first three level boundaries, relative to
/// a clock started at `start`.
fn level_edges(start: u64) -> Outcome {
    let mut wheel: FixedWheel<u64, 32> = FixedWheel::starting_at(start);
    let mut count = 0;
    for edge in [64u64, 1 << 12, 1 << 18, 1 << 24] {
        for deadline in [edge - 1, edge, edge + 1] {
            // Near the end of `u64` the far edges all land on `u64::MAX`.
            let deadline = start.saturating_add(deadline);
            check!(wheel.try_insert(deadline, deadline).is_ok());
            count += 1;
        }
    }
    wheel.validate();
    check_eq!(step_through(&mut wheel)?, count);
    Ok(())
}

fn up_to_u64_max() -> Outcome {
    let start = u64::MAX - 100;
    let mut wheel: FixedWheel<u64, 8> = FixedWheel::starting_at(start);
    for deadline in [u64::MAX, u64::MAX - 1, start + 1, start + 64] {
        check!(wheel.try_insert(deadline, deadline).is_ok());
    }
    check_eq!(step_through(&mut wheel)?, 4);
    check_eq!(wheel.now(), u64::MAX);
    // The clock stays at the end; a deadline there is due at once.
    check!(wheel.try_insert(u64::MAX, u64::MAX).is_ok());
    check_eq!(wheel.advance(u64::MAX).count(), 1);
    Ok(())
}

fn rotation_wraps() -> Outcome {
    // From tick 60 a deadline of 70 lies in the next level-0 rotation, and
    // from 4_090 one of 4_200 in the next level-1 rotation.
    for (start, deadline) in [
        (60u64, 70u64),
        (4_090, 4_200),
        ((1 << 36) - 1, (1 << 36) + 1),
    ] {
        let mut wheel: FixedWheel<u64, 2> = FixedWheel::starting_at(start);
        check!(wheel.try_insert(deadline, deadline).is_ok());
        check!(wheel.advance(deadline - 1).next().is_none());
        check_eq!(step_through(&mut wheel)?, 1);
    }
    Ok(())
}

fn next_expiration() -> Outcome {
    let mut wheel: FixedWheel<u64, 4> = FixedWheel::new();
    check_eq!(wheel.next_expiration(), None);
    check!(wheel.try_insert(40, 40).is_ok());
    check_eq!(wheel.next_expiration(), Some(40)); // level 0: exact
    check!(wheel.try_insert(5_000, 5_000).is_ok());
    check_eq!(wheel.next_expiration(), Some(40));
    check_eq!(wheel.advance(40).count(), 1);
    // 5_000 sits on level 2, in the slot starting at 4_096.
    check_eq!(wheel.next_expiration(), Some(4_096));
    check_eq!(wheel.advance(4_096).count(), 0);
    check_eq!(wheel.next_expiration(), Some(4_992));
    check_eq!(step_through(&mut wheel)?, 1);
    Ok(())
}

fn past_deadlines() -> Outcome {
    let mut wheel: FixedWheel<u64, 4> = FixedWheel::starting_at(1_000);
    check!(wheel.try_insert(3, 3).is_ok());
    check_eq!(wheel.next_expiration(), Some(1_000));
    check!(wheel.advance(1_000).next().is_some_and(|e| e.deadline == 3));
    Ok(())
}

fn full() -> Outcome {
    let mut wheel: FixedWheel<u64, 3> = FixedWheel::new();
    let mut ids = [None; 3];
    for (k, id) in ids.iter_mut().enumerate() {
        *id = wheel.try_insert(k as u64 + 1, k as u64 + 1).ok();
        check!(id.is_some());
    }
    let full = wheel.try_insert(9, 9);
    check!(full.is_err_and(|full| full.into_inner() == 9));
    check_eq!(wheel.len(), 3);
    check!(ids[1].and_then(|id| wheel.cancel(id)) == Some(2));
    check!(wheel.try_insert(9, 9).is_ok());
    check_eq!(wheel.capacity(), 3);
    Ok(())
}

fn drain() -> Outcome {
    let mut wheel: FixedWheel<u64, 4> = FixedWheel::starting_at(7);
    for deadline in [1, 8, 1 << 30, u64::MAX] {
        check!(wheel.try_insert(deadline, deadline).is_ok());
    }
    check_eq!(
        wheel.drain().map(|e| e.value).fold(0u64, u64::wrapping_add),
        1u64.wrapping_add(8)
            .wrapping_add(1 << 30)
            .wrapping_add(u64::MAX)
    );
    check!(wheel.is_empty());
    check_eq!(wheel.next_expiration(), None);
    check_eq!(wheel.now(), 7);
    Ok(())
}

fn fail(check: &'static str) -> crate::Failure {
    crate::Failure {
        check,
        line: line!(),
    }
}

/// A xorshift generator: the same pseudo-random ops on every run.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A span of any scale up to 2^`bits`.
    pub fn span(&mut self, bits: u32) -> u64 {
        let scale = (self.next() % u64::from(bits)) as u32;
        self.next() & ((1u64 << scale) - 1)
    }
}

/// Random inserts, cancels, reschedules and advances, from each start,
/// against an array of (id, deadline): the wheel yields exactly the due
/// timers and never early.
fn against_array() -> Outcome {
    const N: usize = 16;
    for start in [0, (1 << 36) - 500, u64::MAX - (1 << 24)] {
        let mut rng = Rng(start | 1);
        let mut wheel: FixedWheel<u64, N> = FixedWheel::starting_at(start);
        let mut model: [Option<(wheel_core::TimerId, u64)>; N] = [None; N];
        for _ in 0..3_000 {
            let k = (rng.next() % N as u64) as usize;
            let deadline = wheel.now().saturating_add(rng.span(40));
            match (rng.next() % 4, model[k]) {
                (0 | 1, None) => {
                    let id = wheel
                        .try_insert(deadline, deadline)
                        .map_err(|_| fail("room"))?;
                    model[k] = Some((id, deadline));
                }
                (0, Some((id, _))) => {
                    check!(wheel.reschedule(id, deadline));
                    model[k] = Some((id, deadline));
                }
                (1, Some((id, old))) => {
                    check_eq!(wheel.deadline(id), Some(old));
                    check!(wheel.cancel(id).is_some());
                    model[k] = None;
                }
                _ => {
                    let now = wheel.now().saturating_add(rng.span(30));
                    let mut fired = 0;
                    for expired in wheel.advance(now) {
                        let slot = model
                            .iter()
                            .position(|m| m.is_some_and(|(id, _)| id == expired.id));
                        let Some(slot) = slot else {
                            return Err(fail("fired an unknown id"));
                        };
                        check!(expired.deadline <= now);
                        model[slot] = None;
                        fired += 1;
                    }
                    check!(model.iter().flatten().all(|&(_, d)| d > now));
                    check!(fired <= N);
                }
            }
            check_eq!(wheel.len(), model.iter().flatten().count());
        }
        wheel.validate();
    }
    Ok(())
}

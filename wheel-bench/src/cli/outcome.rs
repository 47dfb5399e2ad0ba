//! What a child reports to its parent: one JSON line on stdout. The CPU time
//! is the child's own reading of `getrusage` over the run; the peak RSS is
//! not here: the parent takes it from the OS when it reaps the child.

use core::fmt;

use serde::{Deserialize, Serialize};

use super::delay_recorder::Recorded;
use super::latency::Latency;

/// One child's result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "experiment", rename_all = "lowercase")]
pub enum Outcome {
    /// A `delay` run.
    Delay(DelayOutcome),
    /// A `timeouts` run.
    Timeouts(TimeoutsOutcome),
    /// A `redis` run.
    Redis(RedisOutcome),
}

/// A `delay` run as the child saw it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DelayOutcome {
    /// Lateness, fire times, wall time.
    pub recorded: Recorded,
    /// How long scheduling all timers took.
    pub sched_ns: u64,
    /// RSS just before scheduling, to tell what the timers cost.
    pub baseline_rss_kib: u64,
    /// CPU time (user + system, all threads) from just before scheduling to
    /// the last fire.
    pub cpu_ns: u64,
    /// CPU time from the same start through the release of every timer:
    /// what still holds them dropped (handles, a queue) and the allocator's
    /// merge of what was freed (see `delay::settle_allocator`).
    pub release_cpu_ns: u64,
    /// A wheel-sync service's own lateness p50 and p99 (ns past each
    /// timer's due tick), from its `Stats`; `None` for the peers.
    pub service_lateness: Option<[u64; 2]>,
}

/// A `timeouts` run as the child saw it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TimeoutsOutcome {
    /// Requests started by all threads, each a schedule + cancel pair
    /// (those still in flight at the stop are cancelled then, not counted
    /// again).
    pub ops: u64,
    /// From the threads' start to their stop.
    pub elapsed_ns: u64,
    /// CPU time (user + system, all threads) over `elapsed_ns`.
    pub cpu_ns: u64,
    /// The wheel-sync driver's rounds over `elapsed_ns` (`Stats::rounds`);
    /// `None` for the peers.
    #[serde(default)]
    pub driver_rounds: Option<u64>,
}

/// A `redis` run as the child saw it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RedisOutcome {
    /// Workload loops completed with the right replies by all callers.
    pub ops: u64,
    /// Commands sent.
    pub commands: u64,
    /// From the callers' start to their stop.
    pub elapsed_ns: u64,
    /// CPU time (user + system, all threads) over `elapsed_ns`.
    pub cpu_ns: u64,
    /// Context switches (voluntary and involuntary, all threads) over
    /// `elapsed_ns`.
    pub context_switches: u64,
    /// Each completed op's latency.
    pub latency: Latency,
    /// Commands completed by their timeout.
    pub timeouts_fired: u64,
    /// Commands lost, answered twice or answered wrongly, and failures.
    pub errors: u64,
}

/// Child output the parent cannot read.
#[derive(Debug)]
pub enum OutcomeError {
    /// The child printed nothing.
    NoOutcome,
    /// Its last line is not an outcome.
    Malformed(serde_json::Error),
}

impl fmt::Display for OutcomeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OutcomeError::NoOutcome => write!(f, "the child printed no result"),
            OutcomeError::Malformed(e) => write!(f, "unreadable result: {e}"),
        }
    }
}

impl std::error::Error for OutcomeError {}

impl Outcome {
    /// The line a child prints.
    pub fn encode(&self) -> String {
        // Plain data with string keys: serialising it cannot fail.
        let mut line = serde_json::to_string(self).expect("an outcome serialises");
        line.push('\n');
        line
    }

    /// Reads what [`Outcome::encode`] wrote: the last line of `text`.
    pub fn decode(text: &str) -> Result<Outcome, OutcomeError> {
        let line = (text.lines().rev())
            .find(|l| !l.trim().is_empty())
            .ok_or(OutcomeError::NoOutcome)?;
        serde_json::from_str(line).map_err(OutcomeError::Malformed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn latency(values: &[u64]) -> Latency {
        let mut latency = Latency::default();
        values.iter().for_each(|&ns| latency.record(ns));
        latency
    }

    #[test]
    fn every_outcome_round_trips() {
        let outcomes = [
            Outcome::Delay(DelayOutcome {
                recorded: Recorded {
                    wall_ns: 15_000_000_123,
                    early: 2,
                    lateness: latency(&[3, 3, 3, 99]),
                    per_slot: vec![0, 7, 0, 3],
                },
                sched_ns: 42,
                baseline_rss_kib: 4096,
                cpu_ns: 1_500_000_000,
                release_cpu_ns: 1_600_000_000,
                service_lateness: Some([700_000, 1_200_000]),
            }),
            Outcome::Timeouts(TimeoutsOutcome {
                ops: 123,
                elapsed_ns: 456,
                cpu_ns: 789,
                driver_rounds: Some(12),
            }),
            Outcome::Redis(RedisOutcome {
                ops: 10,
                commands: 30,
                elapsed_ns: 1_000,
                cpu_ns: 900,
                context_switches: 40,
                latency: latency(&[7, 1_000_000]),
                timeouts_fired: 3,
                errors: 0,
            }),
        ];
        for outcome in outcomes {
            let text = format!("noise before\n{}", outcome.encode());
            assert_eq!(Outcome::decode(&text).unwrap(), outcome);
        }
    }

    #[test]
    fn bad_output_is_an_error() {
        assert!(matches!(Outcome::decode(""), Err(OutcomeError::NoOutcome)));
        assert!(matches!(
            Outcome::decode(r#"{"experiment":"timeouts","ops":1}"#),
            Err(OutcomeError::Malformed(_))
        ));
        assert!(matches!(
            Outcome::decode(r#"{"experiment":"sleep"}"#),
            Err(OutcomeError::Malformed(_))
        ));
    }
}

//! What a child reports to its parent on stdout, and the plain-text lines that
//! carry it: a header, `key value...` lines, and `end`. The CPU time is the
//! child's own reading of `getrusage` over the run; the peak RSS is not here:
//! the parent takes it from the OS when it reaps the child.

use core::fmt;
use std::collections::HashMap;

use super::recorder::{Lateness, Recorded};

const HEADER: &str = "wheel-bench-outcome";

/// One child's result.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// A `delay` run.
    Delay(DelayOutcome),
    /// A `timeouts` run.
    Timeouts(TimeoutsOutcome),
    /// A `redis` run.
    Redis(RedisOutcome),
}

/// A `delay` run as the child saw it.
#[derive(Clone, Debug, Default, PartialEq)]
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
    /// A wheel-sync service's own lateness p50 and p99 (ns past each
    /// timer's due tick), from its `Stats`; `None` for the peers.
    pub service_lateness: Option<[u64; 2]>,
}

/// A `timeouts` run as the child saw it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TimeoutsOutcome {
    /// schedule + cancel pairs done by all threads.
    pub ops: u64,
    /// From the threads' start to their stop.
    pub elapsed_ns: u64,
    /// CPU time (user + system, all threads) over `elapsed_ns`.
    pub cpu_ns: u64,
}

/// A `redis` run as the child saw it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RedisOutcome {
    /// Workload loops completed with the right replies by all callers.
    pub ops: u64,
    /// Commands sent.
    pub commands: u64,
    /// From the callers' start to their stop.
    pub elapsed_ns: u64,
    /// CPU time (user + system, all threads) over `elapsed_ns`.
    pub cpu_ns: u64,
    /// Each completed op's latency, in the `delay` lateness histogram's buckets.
    pub latency: Lateness,
    /// Commands completed by their timeout.
    pub timeouts_fired: u64,
    /// Commands lost, answered twice or answered wrongly, and failures.
    pub errors: u64,
}

/// Child output the parent cannot read.
#[derive(Debug, PartialEq)]
pub enum OutcomeError {
    /// No header line: the child printed nothing it meant as a result.
    NoOutcome,
    /// A line that is not `key value...` with the expected value.
    Malformed(String),
    /// A required key is absent.
    Missing(&'static str),
}

impl fmt::Display for OutcomeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OutcomeError::NoOutcome => write!(f, "the child printed no result"),
            OutcomeError::Malformed(line) => write!(f, "unreadable result line `{line}`"),
            OutcomeError::Missing(key) => write!(f, "the child's result lacks `{key}`"),
        }
    }
}

impl std::error::Error for OutcomeError {}

/// Reads a `service_lateness` line's value: two numbers.
fn service_lateness(v: &str) -> Result<[u64; 2], OutcomeError> {
    let bad = || OutcomeError::Malformed(format!("service_lateness {v}"));
    let mut numbers = v.split_whitespace().map(|n| n.parse().map_err(|_| bad()));
    let p50 = numbers.next().ok_or_else(bad)??;
    let p99 = numbers.next().ok_or_else(bad)??;
    Ok([p50, p99])
}

impl Outcome {
    /// The lines a child prints.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        let mut line = |key: &str, value: &dyn fmt::Display| {
            out.push_str(&format!("{key} {value}\n"));
        };
        match self {
            Outcome::Delay(d) => {
                line(HEADER, &"delay");
                line("wall_ns", &d.recorded.wall_ns);
                line("early", &d.recorded.early);
                line("sched_ns", &d.sched_ns);
                line("baseline_rss_kib", &d.baseline_rss_kib);
                line("cpu_ns", &d.cpu_ns);
                if let Some([p50, p99]) = d.service_lateness {
                    line("service_lateness", &format!("{p50} {p99}"));
                }
                line("max_late_ns", &d.recorded.lateness.max_ns);
                line("lateness", &sparse(&d.recorded.lateness));
                let slots: Vec<String> = d.recorded.per_slot.iter().map(u32::to_string).collect();
                line("per_slot", &slots.join(" "));
            }
            Outcome::Timeouts(t) => {
                line(HEADER, &"timeouts");
                line("ops", &t.ops);
                line("elapsed_ns", &t.elapsed_ns);
                line("cpu_ns", &t.cpu_ns);
            }
            Outcome::Redis(r) => {
                line(HEADER, &"redis");
                line("ops", &r.ops);
                line("commands", &r.commands);
                line("elapsed_ns", &r.elapsed_ns);
                line("cpu_ns", &r.cpu_ns);
                line("max_latency_ns", &r.latency.max_ns);
                line("latency", &sparse(&r.latency));
                line("timeouts_fired", &r.timeouts_fired);
                line("errors", &r.errors);
            }
        }
        out.push_str("end\n");
        out
    }

    /// Reads what [`Outcome::encode`] wrote, ignoring any lines before it.
    pub fn decode(text: &str) -> Result<Outcome, OutcomeError> {
        let mut lines = text.lines().skip_while(|l| !l.starts_with(HEADER));
        let header = lines.next().ok_or(OutcomeError::NoOutcome)?;
        let mut fields = HashMap::new();
        for l in lines.take_while(|&l| l != "end") {
            let (key, value) = l.split_once(' ').unwrap_or((l, ""));
            fields.insert(key, value);
        }
        let get = |key: &'static str| fields.get(key).copied().ok_or(OutcomeError::Missing(key));
        let int = |key: &'static str| -> Result<u64, OutcomeError> {
            let v = get(key)?;
            v.parse()
                .map_err(|_| OutcomeError::Malformed(format!("{key} {v}")))
        };
        match header.strip_prefix(HEADER).map(str::trim) {
            Some("delay") => {
                let per_slot = get("per_slot")?
                    .split_whitespace()
                    .map(|s| {
                        s.parse()
                            .map_err(|_| OutcomeError::Malformed(format!("per_slot {s}")))
                    })
                    .collect::<Result<_, _>>()?;
                Ok(Outcome::Delay(DelayOutcome {
                    recorded: Recorded {
                        wall_ns: int("wall_ns")?,
                        early: int("early")?,
                        lateness: Lateness {
                            counts: counts("lateness", get("lateness")?)?,
                            max_ns: int("max_late_ns")?,
                        },
                        per_slot,
                    },
                    sched_ns: int("sched_ns")?,
                    baseline_rss_kib: int("baseline_rss_kib")?,
                    cpu_ns: int("cpu_ns")?,
                    service_lateness: match fields.get("service_lateness") {
                        None => None,
                        Some(v) => Some(service_lateness(v)?),
                    },
                }))
            }
            Some("timeouts") => Ok(Outcome::Timeouts(TimeoutsOutcome {
                ops: int("ops")?,
                elapsed_ns: int("elapsed_ns")?,
                cpu_ns: int("cpu_ns")?,
            })),
            Some("redis") => Ok(Outcome::Redis(RedisOutcome {
                ops: int("ops")?,
                commands: int("commands")?,
                elapsed_ns: int("elapsed_ns")?,
                cpu_ns: int("cpu_ns")?,
                latency: Lateness {
                    counts: counts("latency", get("latency")?)?,
                    max_ns: int("max_latency_ns")?,
                },
                timeouts_fired: int("timeouts_fired")?,
                errors: int("errors")?,
            })),
            _ => Err(OutcomeError::Malformed(header.to_owned())),
        }
    }
}

/// A histogram as `bucket:count` pairs of its non-empty buckets.
fn sparse(histogram: &Lateness) -> String {
    let pairs: Vec<String> = (histogram.counts.iter().enumerate())
        .filter(|(_, &c)| c > 0)
        .map(|(i, c)| format!("{i}:{c}"))
        .collect();
    pairs.join(" ")
}

/// Reads what [`sparse`] wrote for `key`.
fn counts(key: &str, value: &str) -> Result<Vec<u64>, OutcomeError> {
    let mut counts = Vec::new();
    for pair in value.split_whitespace() {
        let parsed = pair
            .split_once(':')
            .and_then(|(i, c)| Some((i.parse::<usize>().ok()?, c.parse().ok()?)));
        let Some((i, c)) = parsed.filter(|&(i, _)| i < super::recorder::BUCKETS) else {
            return Err(OutcomeError::Malformed(format!("{key} {pair}")));
        };
        if counts.len() <= i {
            counts.resize(i + 1, 0);
        }
        counts[i] = c;
    }
    Ok(counts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delay_round_trips() {
        let mut counts = vec![0; 70];
        counts[3] = 5;
        counts[69] = 1;
        let outcome = Outcome::Delay(DelayOutcome {
            recorded: Recorded {
                wall_ns: 15_000_000_123,
                early: 2,
                lateness: Lateness { counts, max_ns: 99 },
                per_slot: vec![0, 7, 0, 3],
            },
            sched_ns: 42,
            baseline_rss_kib: 4096,
            cpu_ns: 1_500_000_000,
            service_lateness: Some([700_000, 1_200_000]),
        });
        let text = format!("noise before\n{}", outcome.encode());
        assert_eq!(Outcome::decode(&text), Ok(outcome));
    }

    #[test]
    fn timeouts_round_trip() {
        let outcome = Outcome::Timeouts(TimeoutsOutcome {
            ops: 123,
            elapsed_ns: 456,
            cpu_ns: 789,
        });
        assert_eq!(Outcome::decode(&outcome.encode()), Ok(outcome));
    }

    #[test]
    fn redis_round_trips() {
        let mut counts = vec![0; 300];
        counts[299] = 4;
        let outcome = Outcome::Redis(RedisOutcome {
            ops: 10,
            commands: 30,
            elapsed_ns: 1_000,
            cpu_ns: 900,
            latency: Lateness { counts, max_ns: 7 },
            timeouts_fired: 3,
            errors: 0,
        });
        assert_eq!(Outcome::decode(&outcome.encode()), Ok(outcome));
    }

    #[test]
    fn bad_output_is_an_error() {
        assert_eq!(Outcome::decode(""), Err(OutcomeError::NoOutcome));
        assert_eq!(
            Outcome::decode("wheel-bench-outcome timeouts\nops 1\nend\n"),
            Err(OutcomeError::Missing("elapsed_ns"))
        );
        assert!(matches!(
            Outcome::decode("wheel-bench-outcome timeouts\nops x\nelapsed_ns 1\ncpu_ns 1\n"),
            Err(OutcomeError::Malformed(_))
        ));
        assert!(matches!(
            Outcome::decode("wheel-bench-outcome sleep\nend\n"),
            Err(OutcomeError::Malformed(_))
        ));
    }
}

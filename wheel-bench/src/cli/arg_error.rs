//! Why a command line cannot be run: every usage error, each with the
//! message `wheel-bench` prints before exiting with 2.

use core::fmt;

use super::args::{MAX_DELAY_MS, MAX_MS, MAX_SECS, MAX_THREADS, MAX_TIMERS};
use super::impls::Impl;

/// A command line that cannot be run.
#[derive(Debug, PartialEq)]
pub enum ArgError {
    /// No experiment named.
    NoExperiment,
    /// The first word is not an experiment.
    UnknownExperiment(String),
    /// A flag the experiment does not take.
    UnknownFlag {
        /// As written.
        flag: String,
        /// The experiment's name.
        experiment: &'static str,
    },
    /// A flag without its value.
    MissingValue(&'static str),
    /// A value that does not parse.
    BadValue {
        /// The flag.
        flag: &'static str,
        /// As written.
        value: String,
        /// What would have parsed.
        expected: &'static str,
    },
    /// `--timers 0`.
    NoTimers,
    /// More than [`MAX_TIMERS`].
    TooManyTimers(u64),
    /// `--min-ms` above `--max-ms`.
    MinAboveMax {
        /// `--min-ms`.
        min_ms: u64,
        /// `--max-ms`.
        max_ms: u64,
    },
    /// `--max-ms` above [`MAX_DELAY_MS`].
    DelayTooLong(u64),
    /// An `--impls` entry that names no implementation of the experiment.
    UnknownImpl {
        /// As written.
        name: String,
        /// The experiment's implementations.
        expected: &'static [Impl],
    },
    /// A `--shapes` entry that names no way of holding wheel-sync in the
    /// experiment.
    UnknownShape {
        /// As written.
        name: String,
        /// The experiment's shapes.
        expected: Vec<&'static str>,
    },
    /// A `--threads` entry of 0 or above [`MAX_THREADS`].
    ThreadsOutOfRange(usize),
    /// `--secs` not in (0, [`MAX_SECS`]].
    SecsOutOfRange(f64),
    /// A `__child` command line that does not name exactly one implementation
    /// (and, for `timeouts` and `redis`, one thread count; for `redis`, one
    /// workload and the server).
    ChildNotSingle,
    /// `--timeout-ms` or `--stall-ms` of 0 or above [`MAX_MS`].
    MsOutOfRange {
        /// The flag.
        flag: &'static str,
        /// As given.
        ms: u64,
    },
}

impl fmt::Display for ArgError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ArgError::NoExperiment => {
                write!(f, "name an experiment: `delay`, `timeouts` or `redis`")
            }
            ArgError::UnknownExperiment(word) => write!(
                f,
                "unknown experiment `{word}`; expected `delay`, `timeouts` or `redis`"
            ),
            ArgError::UnknownFlag { flag, experiment } => {
                write!(f, "`{experiment}` takes no flag `{flag}`")
            }
            ArgError::MissingValue(flag) => write!(f, "{flag} needs a value"),
            ArgError::BadValue {
                flag,
                value,
                expected,
            } => write!(f, "{flag} `{value}`: expected {expected}"),
            ArgError::NoTimers => write!(f, "--timers must be at least 1"),
            ArgError::TooManyTimers(n) => {
                write!(f, "--timers {n} is above the limit of {MAX_TIMERS}")
            }
            ArgError::MinAboveMax { min_ms, max_ms } => write!(
                f,
                "--min-ms ({min_ms}) must not be above --max-ms ({max_ms})"
            ),
            ArgError::DelayTooLong(ms) => {
                write!(
                    f,
                    "--max-ms {ms} is above the limit of {MAX_DELAY_MS} (one hour)"
                )
            }
            ArgError::UnknownImpl { name, expected } => {
                write!(f, "unknown implementation `{name}`; expected one of ")?;
                for (i, imp) in expected.iter().enumerate() {
                    let sep = if i == 0 { "" } else { ", " };
                    write!(f, "{sep}{imp}")?;
                }
                Ok(())
            }
            ArgError::UnknownShape { name, expected } => {
                write!(
                    f,
                    "unknown shape `{name}`; expected one of {}",
                    expected.join(", ")
                )
            }
            ArgError::ThreadsOutOfRange(n) => {
                write!(f, "--threads entry {n} is not in 1..={MAX_THREADS}")
            }
            ArgError::SecsOutOfRange(s) => {
                write!(f, "--secs {s} is not in (0, {MAX_SECS}]")
            }
            ArgError::ChildNotSingle => write!(
                f,
                "__child needs exactly one --impls entry (and one --threads entry; \
                 for redis one --workload and --redis-url)"
            ),
            ArgError::MsOutOfRange { flag, ms } => {
                write!(f, "{flag} {ms} is not in 1..={MAX_MS}")
            }
        }
    }
}

impl std::error::Error for ArgError {}

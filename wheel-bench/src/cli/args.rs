//! Command-line parsing and validation: the two experiments, their flags, and
//! the hidden `__child` mode the parent uses to run one implementation.

use core::fmt;
use std::path::PathBuf;

use super::impls::Impl;

/// Printed by `--help`.
pub const HELP: &str = "\
wheel-bench: the seed experiments, wheel-sync side by side with its peers

USAGE:
    wheel-bench delay    [--timers N] [--min-ms MS] [--max-ms MS] [--seed N] [COMMON]
    wheel-bench timeouts [--threads LIST] [--secs S] [COMMON]

EXPERIMENTS:
    delay      N timers, each with a delay drawn uniformly from [min-ms, max-ms]
               (microsecond steps, the same draws for every implementation), all
               scheduled as fast as one thread can at start, as the seed's game
               server does with 1M-4M `await Delay(..)`. It reports how long the
               last one took to fire (the ideal is the max delay), the CPU time and
               average CPU % (of one core) the process spent from the first
               schedule to the last fire (getrusage), its peak RSS and the
               bytes each timer cost above the idle process, and each timer's
               lateness past its own deadline (p50/p99/max, and any that fired early).
               Defaults: --timers 1000000 --min-ms 500 --max-ms 15000.

    timeouts   Each of --threads threads loops schedule(1 s) + cancel for --secs
               seconds, as a client does around every request it sends. It reports
               total schedule+cancel pairs per second, the wall time of one pair on
               one thread (ns/op), the speed-up over `heap`, the CPU time over
               those seconds and the peak RSS. Defaults: --threads 1,2,8 --secs 5.

IMPLEMENTATIONS (each measured in its own child process):
    wheel        wheel-sync callbacks (delay: schedule_detached_at, fire and forget,
                 as no timer is cancelled; timeouts: schedule + cancel)
    wheel-async  tasks awaiting wheel-sync's Sleep on a tokio multi-thread runtime
                 (timeouts: a Sleep polled once, dropped)
    wheel-queue  one task draining a wheel-sync DelayQueue (timeouts: one queue per thread)
    tokio        tasks awaiting tokio::time::sleep (timeouts: a Sleep polled once, dropped)
    delayqueue   one task draining a tokio_util DelayQueue (timeouts: one queue per thread)
    heap         a Mutex<BinaryHeap> + Condvar scheduler thread with lazy cancel

COMMON:
    --impls LIST   comma-separated implementations to run (default: all)
    --quick        scale everything down to run in seconds (smoke test)
    --json         print the rows as JSON lines instead of the table
    --plot FILE    write an SVG chart (delay: fired per 100 ms and lateness CDF;
                   timeouts: ops/s per thread count)
    -h, --help     print this help
";

/// Largest `--timers`; beyond it one run would need more memory than a
/// developer machine has.
const MAX_TIMERS: u64 = 100_000_000;
/// Largest `--max-ms`: one hour keeps every deadline well inside the wheels'
/// ranges and the per-100 ms series small.
const MAX_DELAY_MS: u64 = 3_600_000;
/// Largest `--threads` entry.
const MAX_THREADS: usize = 1024;
/// Largest `--secs`.
const MAX_SECS: f64 = 3600.0;

/// What the command line asks for.
#[derive(Debug, PartialEq)]
pub enum Command {
    /// Print [`HELP`].
    Help,
    /// Run an experiment over the chosen implementations, one child each.
    Run(Experiment, Output),
    /// Run one implementation of an experiment in this process (hidden; the
    /// parent spawns it).
    Child(Child),
}

/// An experiment and its parameters.
#[derive(Clone, Debug, PartialEq)]
pub enum Experiment {
    /// Seed 000.
    Delay(DelayArgs),
    /// Seed 001.
    Timeouts(TimeoutsArgs),
}

/// Parameters of the `delay` experiment.
#[derive(Clone, Debug, PartialEq)]
pub struct DelayArgs {
    /// How many timers.
    pub timers: u64,
    /// Shortest delay.
    pub min_ms: u64,
    /// Longest delay: the ideal wall time.
    pub max_ms: u64,
    /// Seeds the delay draws, so every implementation gets the same ones.
    pub seed: u64,
}

/// Parameters of the `timeouts` experiment.
#[derive(Clone, Debug, PartialEq)]
pub struct TimeoutsArgs {
    /// Thread counts, one run each.
    pub threads: Vec<usize>,
    /// How long each run lasts.
    pub secs: f64,
}

/// How a parent run reports.
#[derive(Clone, Debug, PartialEq)]
pub struct Output {
    /// Implementations to run, in order, without repeats.
    pub impls: Vec<Impl>,
    /// JSON lines instead of the table.
    pub json: bool,
    /// Where to write the SVG chart.
    pub plot: Option<PathBuf>,
}

/// One implementation's run inside a child process.
#[derive(Clone, Debug, PartialEq)]
pub struct Child {
    /// The experiment; for `timeouts`, `threads` holds exactly one count.
    pub experiment: Experiment,
    /// The implementation.
    pub imp: Impl,
    /// Draw a live progress line on stderr.
    pub progress: bool,
}

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
        /// `delay` or `timeouts`.
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
    /// An `--impls` entry that names no implementation.
    UnknownImpl(String),
    /// A `--threads` entry of 0 or above [`MAX_THREADS`].
    ThreadsOutOfRange(usize),
    /// `--secs` not in (0, [`MAX_SECS`]].
    SecsOutOfRange(f64),
    /// A `__child` command line that does not name exactly one implementation
    /// (and, for `timeouts`, one thread count).
    ChildNotSingle,
}

impl fmt::Display for ArgError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ArgError::NoExperiment => write!(f, "name an experiment: `delay` or `timeouts`"),
            ArgError::UnknownExperiment(word) => {
                write!(
                    f,
                    "unknown experiment `{word}`; expected `delay` or `timeouts`"
                )
            }
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
            ArgError::UnknownImpl(name) => {
                write!(f, "unknown implementation `{name}`; expected one of ")?;
                for (i, imp) in Impl::ALL.iter().enumerate() {
                    let sep = if i == 0 { "" } else { ", " };
                    write!(f, "{sep}{imp}")?;
                }
                Ok(())
            }
            ArgError::ThreadsOutOfRange(n) => {
                write!(f, "--threads entry {n} is not in 1..={MAX_THREADS}")
            }
            ArgError::SecsOutOfRange(s) => {
                write!(f, "--secs {s} is not in (0, {MAX_SECS}]")
            }
            ArgError::ChildNotSingle => write!(
                f,
                "__child needs exactly one --impls entry (and one --threads entry)"
            ),
        }
    }
}

impl std::error::Error for ArgError {}

/// Parses the arguments after the program name.
pub fn parse<I>(args: I) -> Result<Command, ArgError>
where
    I: IntoIterator<Item = String>,
{
    let mut args = args.into_iter().peekable();
    let child = args.peek().is_some_and(|a| a == "__child");
    if child {
        args.next();
    }
    let rest: Vec<String> = args.collect();
    let help = rest.iter().any(|a| a == "-h" || a == "--help");
    if help || rest.first().is_some_and(|a| a == "help") {
        return Ok(Command::Help);
    }
    let (word, flags) = rest.split_first().ok_or(ArgError::NoExperiment)?;
    let name = match word.as_str() {
        "delay" => "delay",
        "timeouts" => "timeouts",
        other => return Err(ArgError::UnknownExperiment(other.to_owned())),
    };
    let raw = RawFlags::parse(name, flags, child)?;
    let experiment = if name == "delay" {
        Experiment::Delay(raw.delay()?)
    } else {
        Experiment::Timeouts(raw.timeouts()?)
    };
    if !child {
        let output = Output {
            impls: raw.impls.unwrap_or_else(|| Impl::ALL.to_vec()),
            json: raw.json,
            plot: raw.plot,
        };
        return Ok(Command::Run(experiment, output));
    }
    let single_threads = match &experiment {
        Experiment::Delay(_) => true,
        Experiment::Timeouts(t) => t.threads.len() == 1,
    };
    match raw.impls.as_deref() {
        Some(&[imp]) if single_threads => Ok(Command::Child(Child {
            experiment,
            imp,
            progress: raw.progress,
        })),
        _ => Err(ArgError::ChildNotSingle),
    }
}

/// The flags as given, before defaults (which depend on `--quick`).
#[derive(Default)]
struct RawFlags {
    timers: Option<u64>,
    min_ms: Option<u64>,
    max_ms: Option<u64>,
    seed: Option<u64>,
    threads: Option<Vec<usize>>,
    secs: Option<f64>,
    impls: Option<Vec<Impl>>,
    quick: bool,
    json: bool,
    plot: Option<PathBuf>,
    progress: bool,
}

impl RawFlags {
    fn parse(experiment: &'static str, flags: &[String], child: bool) -> Result<Self, ArgError> {
        let mut raw = RawFlags::default();
        let mut it = flags.iter();
        while let Some(arg) = it.next() {
            let (flag, inline) = match arg.split_once('=') {
                Some((f, v)) if f.starts_with("--") => (f, Some(v.to_owned())),
                _ => (arg.as_str(), None),
            };
            let unknown = || ArgError::UnknownFlag {
                flag: flag.to_owned(),
                experiment,
            };
            let delay = experiment == "delay";
            // Takes the flag's value from `--flag=v` or the next argument.
            let mut value = |name: &'static str| -> Result<String, ArgError> {
                match inline.clone() {
                    Some(v) => Ok(v),
                    None => it.next().cloned().ok_or(ArgError::MissingValue(name)),
                }
            };
            match flag {
                "--timers" if delay => raw.timers = Some(number("--timers", &value("--timers")?)?),
                "--min-ms" if delay => raw.min_ms = Some(number("--min-ms", &value("--min-ms")?)?),
                "--max-ms" if delay => raw.max_ms = Some(number("--max-ms", &value("--max-ms")?)?),
                "--seed" if delay => raw.seed = Some(number("--seed", &value("--seed")?)?),
                "--threads" if !delay => raw.threads = Some(thread_list(&value("--threads")?)?),
                "--secs" if !delay => raw.secs = Some(seconds(&value("--secs")?)?),
                "--impls" => raw.impls = Some(impl_list(&value("--impls")?)?),
                "--plot" => raw.plot = Some(PathBuf::from(value("--plot")?)),
                "--quick" | "--json" | "--progress" if inline.is_some() => return Err(unknown()),
                "--quick" => raw.quick = true,
                "--json" => raw.json = true,
                "--progress" if child => raw.progress = true,
                _ => return Err(unknown()),
            }
        }
        Ok(raw)
    }

    fn delay(&self) -> Result<DelayArgs, ArgError> {
        let (timers, min_ms, max_ms) = if self.quick {
            (50_000, 100, 1_000)
        } else {
            (1_000_000, 500, 15_000)
        };
        let args = DelayArgs {
            timers: self.timers.unwrap_or(timers),
            min_ms: self.min_ms.unwrap_or(min_ms),
            max_ms: self.max_ms.unwrap_or(max_ms),
            seed: self.seed.unwrap_or(0x5eed),
        };
        if args.timers == 0 {
            return Err(ArgError::NoTimers);
        }
        if args.timers > MAX_TIMERS {
            return Err(ArgError::TooManyTimers(args.timers));
        }
        if args.min_ms > args.max_ms {
            return Err(ArgError::MinAboveMax {
                min_ms: args.min_ms,
                max_ms: args.max_ms,
            });
        }
        if args.max_ms > MAX_DELAY_MS {
            return Err(ArgError::DelayTooLong(args.max_ms));
        }
        Ok(args)
    }

    fn timeouts(&self) -> Result<TimeoutsArgs, ArgError> {
        let (threads, secs) = if self.quick {
            (vec![1, 2], 0.25)
        } else {
            (vec![1, 2, 8], 5.0)
        };
        Ok(TimeoutsArgs {
            threads: self.threads.clone().unwrap_or(threads),
            secs: self.secs.unwrap_or(secs),
        })
    }
}

/// A non-negative integer; `_` separators are allowed (`4_000_000`).
fn number(flag: &'static str, value: &str) -> Result<u64, ArgError> {
    let digits: String = value.chars().filter(|&c| c != '_').collect();
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad(flag, value, "a non-negative integer"));
    }
    digits
        .parse()
        .map_err(|_| bad(flag, value, "an integer below 2^64"))
}

fn thread_list(value: &str) -> Result<Vec<usize>, ArgError> {
    let mut threads = Vec::new();
    for part in value.split(',') {
        let n = number("--threads", part.trim())
            .map_err(|_| bad("--threads", value, "a comma-separated list like 1,2,8"))?;
        let n = usize::try_from(n).unwrap_or(usize::MAX);
        if n == 0 || n > MAX_THREADS {
            return Err(ArgError::ThreadsOutOfRange(n));
        }
        if !threads.contains(&n) {
            threads.push(n);
        }
    }
    Ok(threads)
}

fn seconds(value: &str) -> Result<f64, ArgError> {
    let secs: f64 = value
        .trim()
        .parse()
        .map_err(|_| bad("--secs", value, "a number of seconds like 5 or 0.5"))?;
    // The negated form also rejects NaN.
    if !(secs > 0.0 && secs <= MAX_SECS) {
        return Err(ArgError::SecsOutOfRange(secs));
    }
    Ok(secs)
}

fn impl_list(value: &str) -> Result<Vec<Impl>, ArgError> {
    let mut impls = Vec::new();
    for name in value.split(',').map(str::trim) {
        if name.is_empty() {
            return Err(bad(
                "--impls",
                value,
                "a comma-separated list like wheel,tokio",
            ));
        }
        let imp = Impl::from_name(name).ok_or_else(|| ArgError::UnknownImpl(name.to_owned()))?;
        if !impls.contains(&imp) {
            impls.push(imp);
        }
    }
    Ok(impls)
}

fn bad(flag: &'static str, value: &str, expected: &'static str) -> ArgError {
    ArgError::BadValue {
        flag,
        value: value.to_owned(),
        expected,
    }
}

/// The command line a parent passes to the child that runs `imp`.
pub fn child_args(experiment: &Experiment, imp: Impl, progress: bool) -> Vec<String> {
    let mut args = vec!["__child".to_owned()];
    match experiment {
        Experiment::Delay(d) => {
            args.push("delay".into());
            for (flag, v) in [
                ("--timers", d.timers),
                ("--min-ms", d.min_ms),
                ("--max-ms", d.max_ms),
                ("--seed", d.seed),
            ] {
                args.push(flag.into());
                args.push(v.to_string());
            }
        }
        Experiment::Timeouts(t) => {
            args.push("timeouts".into());
            args.push("--threads".into());
            let threads: Vec<String> = t.threads.iter().map(usize::to_string).collect();
            args.push(threads.join(","));
            args.push("--secs".into());
            args.push(t.secs.to_string());
        }
    }
    args.push("--impls".into());
    args.push(imp.name().into());
    if progress {
        args.push("--progress".into());
    }
    args
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_str(line: &str) -> Result<Command, ArgError> {
        parse(line.split_whitespace().map(str::to_owned))
    }

    fn delay_of(line: &str) -> DelayArgs {
        match parse_str(line) {
            Ok(Command::Run(Experiment::Delay(d), _)) => d,
            other => panic!("{line}: {other:?}"),
        }
    }

    #[test]
    fn delay_defaults_are_the_seeds() {
        let d = delay_of("delay");
        assert_eq!((d.timers, d.min_ms, d.max_ms), (1_000_000, 500, 15_000));
    }

    #[test]
    fn quick_lowers_defaults_but_explicit_flags_win() {
        let d = delay_of("delay --quick");
        assert!(d.timers < 1_000_000 && d.max_ms < 15_000);
        let d = delay_of("delay --timers=4_000_000 --quick --max-ms 2000");
        assert_eq!((d.timers, d.max_ms), (4_000_000, 2000));
    }

    #[test]
    fn timeouts_flags() {
        let Ok(Command::Run(Experiment::Timeouts(t), out)) =
            parse_str("timeouts --threads 8,1,8 --secs 0.5 --impls heap,wheel --json")
        else {
            panic!("did not parse");
        };
        assert_eq!(t.threads, vec![8, 1]);
        assert_eq!(t.secs, 0.5);
        assert_eq!(out.impls, vec![Impl::Heap, Impl::Wheel]);
        assert!(out.json);
    }

    #[test]
    fn bad_flags_are_errors() {
        assert_eq!(parse_str("delay --timers 0"), Err(ArgError::NoTimers));
        assert_eq!(
            parse_str("delay --min-ms 20 --max-ms 10"),
            Err(ArgError::MinAboveMax {
                min_ms: 20,
                max_ms: 10
            })
        );
        assert_eq!(
            parse_str("delay --impls wheel,nope"),
            Err(ArgError::UnknownImpl("nope".into()))
        );
        assert_eq!(
            parse_str("delay --timers"),
            Err(ArgError::MissingValue("--timers"))
        );
        assert!(matches!(
            parse_str("delay --timers -5"),
            Err(ArgError::BadValue { .. })
        ));
        assert!(matches!(
            parse_str("delay --threads 2"),
            Err(ArgError::UnknownFlag { .. })
        ));
        assert!(matches!(
            parse_str("timeouts --timers 2"),
            Err(ArgError::UnknownFlag { .. })
        ));
        assert!(matches!(
            parse_str("delay --progress"),
            Err(ArgError::UnknownFlag { .. })
        ));
        assert!(matches!(
            parse_str("delay --json=1"),
            Err(ArgError::UnknownFlag { .. })
        ));
        assert_eq!(
            parse_str("timeouts --threads 1,0"),
            Err(ArgError::ThreadsOutOfRange(0))
        );
        assert_eq!(
            parse_str("timeouts --secs 0"),
            Err(ArgError::SecsOutOfRange(0.0))
        );
        assert!(matches!(
            parse_str("timeouts --secs nan"),
            Err(ArgError::SecsOutOfRange(_))
        ));
        assert_eq!(parse_str(""), Err(ArgError::NoExperiment));
        assert_eq!(
            parse_str("sleep"),
            Err(ArgError::UnknownExperiment("sleep".into()))
        );
        assert_eq!(
            parse_str("delay --max-ms 4000000"),
            Err(ArgError::DelayTooLong(4_000_000))
        );
    }

    #[test]
    fn help_wins_anywhere() {
        assert_eq!(parse_str("--help"), Ok(Command::Help));
        assert_eq!(parse_str("delay --timers 0 -h"), Ok(Command::Help));
    }

    #[test]
    fn child_args_round_trip() {
        let delay = Experiment::Delay(delay_of("delay --timers 7 --min-ms 1 --max-ms 9 --seed 3"));
        let timeouts = Experiment::Timeouts(TimeoutsArgs {
            threads: vec![2],
            secs: 0.25,
        });
        for (experiment, progress) in [(delay, true), (timeouts, false)] {
            let args = child_args(&experiment, Impl::Tokio, progress);
            assert_eq!(
                parse(args),
                Ok(Command::Child(Child {
                    experiment,
                    imp: Impl::Tokio,
                    progress
                }))
            );
        }
    }

    #[test]
    fn child_needs_one_impl_and_one_thread_count() {
        assert_eq!(parse_str("__child delay"), Err(ArgError::ChildNotSingle));
        assert_eq!(
            parse_str("__child timeouts --impls heap --threads 1,2"),
            Err(ArgError::ChildNotSingle)
        );
    }
}

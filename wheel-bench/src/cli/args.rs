//! Command-line parsing and validation: the experiments, their flags, and
//! the hidden `__child` mode the parent uses to run one implementation.

use std::net::SocketAddr;
use std::path::PathBuf;

pub use super::arg_error::ArgError;
use super::impls::Impl;
use super::values::{
    impl_list, millis, number, redis_url, seconds, shape_list, thread_list, tick_us, workload_list,
};

/// Printed by `--help`.
pub const HELP: &str = include_str!("help.txt");

/// Largest `--timers`; beyond it one run would need more memory than a
/// developer machine has.
pub const MAX_TIMERS: u64 = 100_000_000;
/// Largest `--max-ms`: one hour keeps every deadline well inside the wheels'
/// ranges and the per-100 ms series small.
pub const MAX_DELAY_MS: u64 = 3_600_000;
/// Largest `--threads` entry.
pub const MAX_THREADS: usize = 1024;
/// Largest `--secs`.
pub const MAX_SECS: f64 = 3600.0;
/// Largest `--timeout-ms` and `--stall-ms`: an hour.
pub const MAX_MS: u64 = 3_600_000;

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
    /// Seed 001's timer pattern.
    Timeouts(TimeoutsArgs),
    /// Seed 001 against a real Redis server.
    Redis(RedisArgs),
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
    /// The wheel-sync services' tick, in microseconds.
    pub tick_us: u64,
}

/// Parameters of the `timeouts` experiment.
#[derive(Clone, Debug, PartialEq)]
pub struct TimeoutsArgs {
    /// Thread counts, one run each.
    pub threads: Vec<usize>,
    /// How long each run lasts.
    pub secs: f64,
}

/// Parameters of the `redis` experiment.
#[derive(Clone, Debug, PartialEq)]
pub struct RedisArgs {
    /// Caller counts, one run each.
    pub threads: Vec<usize>,
    /// How long each run lasts.
    pub secs: f64,
    /// Workloads, one run each.
    pub workloads: Vec<Workload>,
    /// Each command's timeout.
    pub timeout_ms: u64,
    /// Stall the server this long mid-run.
    pub stall_ms: Option<u64>,
    /// The server to use; `None`: start one (the parent always gives its
    /// children one).
    pub server: Option<SocketAddr>,
}

/// What each `redis` caller loops.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Workload {
    /// `SET key value`: the seed's `syncSet`.
    Set,
    /// `DEL`, a 20-value `LPUSH`, `LRANGE 0 -1`: the seed's `syncList`.
    List,
}

impl Workload {
    /// As `--workload` names it.
    pub fn name(self) -> &'static str {
        match self {
            Workload::Set => "set",
            Workload::List => "list",
        }
    }
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
    /// The experiment; for `timeouts` and `redis`, `threads` holds exactly
    /// one count; for `redis`, one workload and the server.
    pub experiment: Experiment,
    /// The implementation.
    pub imp: Impl,
    /// Draw a live progress line on stderr.
    pub progress: bool,
}

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
    // The experiment's default implementations, and all it accepts by name.
    let (name, impls, named): (_, &'static [Impl], &'static [Impl]) = match word.as_str() {
        "delay" => ("delay", &Impl::DELAY, &Impl::DELAY_NAMED),
        "timeouts" => ("timeouts", &Impl::TIMEOUTS, &Impl::TIMEOUTS_NAMED),
        "redis" => ("redis", &Impl::REDIS, &Impl::REDIS),
        other => return Err(ArgError::UnknownExperiment(other.to_owned())),
    };
    let raw = RawFlags::parse(name, named, flags, child)?;
    let experiment = match name {
        "delay" => Experiment::Delay(raw.delay()?),
        "timeouts" => Experiment::Timeouts(raw.timeouts()?),
        _ => Experiment::Redis(raw.redis()?),
    };
    if !child {
        let mut chosen = raw.impls.clone().unwrap_or_else(|| impls.to_vec());
        if let Some(shapes) = &raw.shapes {
            chosen.retain(|imp| {
                imp.shape(name)
                    .is_none_or(|s| shapes.iter().any(|w| w == s))
            });
        }
        let output = Output {
            impls: chosen,
            json: raw.json,
            plot: raw.plot,
        };
        return Ok(Command::Run(experiment, output));
    }
    let single = match &experiment {
        Experiment::Delay(_) => true,
        Experiment::Timeouts(t) => t.threads.len() == 1,
        Experiment::Redis(r) => {
            r.threads.len() == 1 && r.workloads.len() == 1 && r.server.is_some()
        }
    };
    match raw.impls.as_deref() {
        Some(&[imp]) if single => Ok(Command::Child(Child {
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
    tick_us: Option<u64>,
    threads: Option<Vec<usize>>,
    secs: Option<f64>,
    workloads: Option<Vec<Workload>>,
    timeout_ms: Option<u64>,
    stall_ms: Option<u64>,
    server: Option<SocketAddr>,
    impls: Option<Vec<Impl>>,
    shapes: Option<Vec<String>>,
    quick: bool,
    json: bool,
    plot: Option<PathBuf>,
    progress: bool,
}

impl RawFlags {
    fn parse(
        experiment: &'static str,
        impls: &'static [Impl],
        flags: &[String],
        child: bool,
    ) -> Result<Self, ArgError> {
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
            let redis = experiment == "redis";
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
                "--tick-us" if delay => raw.tick_us = Some(tick_us(&value("--tick-us")?)?),
                "--threads" if !delay => raw.threads = Some(thread_list(&value("--threads")?)?),
                "--secs" if !delay => raw.secs = Some(seconds(&value("--secs")?)?),
                "--workload" if redis => {
                    raw.workloads = Some(workload_list(&value("--workload")?)?)
                }
                "--timeout-ms" if redis => {
                    raw.timeout_ms = Some(millis("--timeout-ms", &value("--timeout-ms")?)?);
                }
                "--stall-ms" if redis => {
                    raw.stall_ms = Some(millis("--stall-ms", &value("--stall-ms")?)?);
                }
                "--redis-url" if redis => raw.server = Some(redis_url(&value("--redis-url")?)?),
                "--impls" => raw.impls = Some(impl_list(&value("--impls")?, impls)?),
                "--shapes" if !redis && !child => {
                    raw.shapes = Some(shape_list(experiment, impls, &value("--shapes")?)?);
                }
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
            tick_us: self.tick_us.unwrap_or(1_000),
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

    fn redis(&self) -> Result<RedisArgs, ArgError> {
        let (threads, secs) = if self.quick {
            (vec![50, 200], 0.3)
        } else {
            (vec![50, 100, 200], 5.0)
        };
        Ok(RedisArgs {
            threads: self.threads.clone().unwrap_or(threads),
            secs: self.secs.unwrap_or(secs),
            workloads: (self.workloads.clone())
                .unwrap_or_else(|| vec![Workload::Set, Workload::List]),
            timeout_ms: self.timeout_ms.unwrap_or(1000),
            stall_ms: self.stall_ms,
            server: self.server,
        })
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

#[cfg(test)]
mod tests {
    use super::super::child::child_args;
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
        assert_eq!(d.tick_us, 1_000);
        assert_eq!(delay_of("delay --tick-us 1").tick_us, 1);
        assert!(matches!(
            parse_str("delay --tick-us 0"),
            Err(ArgError::BadValue { .. })
        ));
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
    fn shapes_keep_those_ways_of_holding_wheel_sync_and_every_peer() {
        let Ok(Command::Run(_, out)) = parse_str("timeouts --shapes shared,global") else {
            panic!("did not parse");
        };
        let names: Vec<&str> = out.impls.iter().map(|i| i.name()).collect();
        assert_eq!(
            names,
            [
                "wheel/shared",
                "wheel-async/shared",
                "wheel-async/global",
                "tokio",
                "delayqueue",
                "heap"
            ]
        );
        let Ok(Command::Run(_, out)) =
            parse_str("delay --impls wheel,wheel/handles,tokio --shapes handles")
        else {
            panic!("did not parse");
        };
        assert_eq!(out.impls, vec![Impl::WheelHandles, Impl::Tokio]);
        assert!(matches!(
            parse_str("delay --shapes thread-clone"),
            Err(ArgError::UnknownShape { .. })
        ));
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
            Err(ArgError::UnknownImpl {
                name: "nope".into(),
                expected: &Impl::DELAY_NAMED
            })
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
        let redis = Experiment::Redis(RedisArgs {
            threads: vec![50],
            secs: 0.5,
            workloads: vec![Workload::List],
            timeout_ms: 300,
            stall_ms: Some(700),
            server: Some(SocketAddr::from(([127, 0, 0, 1], 6400))),
        });
        for (experiment, progress) in [(delay, true), (timeouts, false), (redis, false)] {
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

    #[test]
    fn redis_defaults_are_the_seeds_and_flags_check() {
        let Ok(Command::Run(Experiment::Redis(r), out)) = parse_str("redis") else {
            panic!("did not parse");
        };
        assert_eq!(r.threads, vec![50, 100, 200]);
        assert_eq!(r.workloads, vec![Workload::Set, Workload::List]);
        assert_eq!((r.timeout_ms, r.stall_ms, r.server), (1000, None, None));
        assert_eq!(out.impls, Impl::REDIS.to_vec());
        let Ok(Command::Run(Experiment::Redis(r), _)) =
            parse_str("redis --workload list --stall-ms 1500 --redis-url redis://127.0.0.1:7000")
        else {
            panic!("did not parse");
        };
        assert_eq!(r.workloads, vec![Workload::List]);
        assert_eq!(r.stall_ms, Some(1500));
        assert_eq!(r.server, Some(SocketAddr::from(([127, 0, 0, 1], 7000))));
        assert_eq!(
            parse_str("redis --impls heap"),
            Err(ArgError::UnknownImpl {
                name: "heap".into(),
                expected: &Impl::REDIS
            })
        );
        assert!(matches!(
            parse_str("timeouts --impls executor-2"),
            Err(ArgError::UnknownImpl { .. })
        ));
        assert_eq!(
            parse_str("redis --timeout-ms 0"),
            Err(ArgError::MsOutOfRange {
                flag: "--timeout-ms",
                ms: 0
            })
        );
        for bad_line in [
            "redis --workload get",
            "redis --redis-url redis://user:pw@127.0.0.1:1",
            "redis --redis-url localhost",
        ] {
            assert!(
                matches!(parse_str(bad_line), Err(ArgError::BadValue { .. })),
                "{bad_line}"
            );
        }
        assert!(matches!(
            parse_str("timeouts --workload set"),
            Err(ArgError::UnknownFlag { .. })
        ));
        assert_eq!(
            parse_str("__child redis --impls wheel --threads 50 --workload set"),
            Err(ArgError::ChildNotSingle)
        );
    }
}

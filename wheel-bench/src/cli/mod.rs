//! The `wheel-bench` command: parse, then either run one implementation (as a
//! child) or run every chosen implementation in its own child and report.

mod arg_error;
mod args;
mod child;
mod delay;
mod impls;
mod outcome;
mod plot;
mod progress;
mod recorder;
mod redis;
mod report;
mod timeouts;
mod values;

use core::fmt;
use std::fs::File;
use std::io::{self, IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use args::{ArgError, Command, Experiment, Output};
use child::{ChildFailure, Measured};
use outcome::{Outcome, OutcomeError};
use report::{DelayResult, RedisResult, TimeoutsResult};

/// Anything that stops a run.
#[derive(Debug)]
pub enum RunError {
    /// Spawning, threads, runtimes, files.
    Io(io::Error),
    /// A tokio task panicked.
    Task(tokio::task::JoinError),
    /// A benchmark thread panicked.
    Panicked,
    /// `wheel-sync` refused a timer.
    Schedule(wheel_sync::ScheduleError),
    /// A child failed.
    Child(ChildFailure),
    /// A child's output could not be read.
    Outcome(OutcomeError),
    /// The chart file cannot be written.
    PlotFile(PathBuf, io::Error),
    /// The chart could not be drawn.
    Plot(plot::PlotError),
    /// An implementation asked of an experiment that does not compare it.
    NotIn {
        /// The implementation.
        imp: impls::Impl,
        /// The experiment's name.
        experiment: &'static str,
    },
    /// The Redis server could not be started.
    Server(wheel_bench::redis::ServerError),
    /// The server could not be made to stall.
    Stall(wheel_bench::redis::CommandError),
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunError::Io(e) => write!(f, "{e}"),
            RunError::Task(e) => write!(f, "a task failed: {e}"),
            RunError::Panicked => write!(f, "a benchmark thread panicked"),
            RunError::Schedule(e) => write!(f, "wheel-sync refused a timer: {e}"),
            RunError::Child(e) => write!(f, "{e}"),
            RunError::Outcome(e) => write!(f, "{e}"),
            RunError::PlotFile(path, e) => write!(f, "cannot write {}: {e}", path.display()),
            RunError::Plot(e) => write!(f, "cannot draw the chart: {e}"),
            RunError::NotIn { imp, experiment } => {
                write!(f, "`{experiment}` does not measure `{imp}`")
            }
            RunError::Server(e) => write!(f, "{e}"),
            RunError::Stall(e) => write!(f, "cannot stall the server: {e}"),
        }
    }
}

impl std::error::Error for RunError {}

impl From<io::Error> for RunError {
    fn from(e: io::Error) -> Self {
        RunError::Io(e)
    }
}

impl From<tokio::task::JoinError> for RunError {
    fn from(e: tokio::task::JoinError) -> Self {
        RunError::Task(e)
    }
}

impl From<wheel_sync::ScheduleError> for RunError {
    fn from(e: wheel_sync::ScheduleError) -> Self {
        RunError::Schedule(e)
    }
}

impl From<OutcomeError> for RunError {
    fn from(e: OutcomeError) -> Self {
        RunError::Outcome(e)
    }
}

impl From<plot::PlotError> for RunError {
    fn from(e: plot::PlotError) -> Self {
        RunError::Plot(e)
    }
}

/// Usage errors exit with 2, failed runs with 1.
const USAGE: u8 = 2;

/// Runs the command line of this process.
pub fn main() -> ExitCode {
    let parsed = std::env::args_os()
        .skip(1)
        .map(|a| {
            a.into_string().map_err(|a| ArgError::BadValue {
                flag: "argument",
                value: a.to_string_lossy().into_owned(),
                expected: "UTF-8 text",
            })
        })
        .collect::<Result<Vec<String>, ArgError>>()
        .and_then(args::parse);
    match parsed {
        Err(e) => {
            eprintln!("wheel-bench: error: {e}\nRun `wheel-bench --help` for usage.");
            ExitCode::from(USAGE)
        }
        Ok(Command::Help) => {
            print!("{}", args::HELP);
            ExitCode::SUCCESS
        }
        Ok(Command::Child(c)) => run_child(&c),
        Ok(Command::Run(experiment, output)) => match run_parent(&experiment, &output) {
            Ok(true) => ExitCode::SUCCESS,
            Ok(false) => ExitCode::FAILURE,
            Err(e) => {
                eprintln!("wheel-bench: error: {e}");
                ExitCode::FAILURE
            }
        },
    }
}

/// Runs one implementation here and prints its [`Outcome`] on stdout.
fn run_child(c: &args::Child) -> ExitCode {
    let outcome = match &c.experiment {
        Experiment::Delay(d) => delay::run(d, c.imp, c.progress).map(Outcome::Delay),
        Experiment::Timeouts(t) => timeouts::run(t, c.imp, c.progress).map(Outcome::Timeouts),
        Experiment::Redis(r) => redis::run(r, c.imp, c.progress).map(Outcome::Redis),
    };
    let written = outcome.and_then(|o| {
        let mut out = io::stdout().lock();
        out.write_all(o.encode().as_bytes())?;
        out.flush()?;
        Ok(())
    });
    match written {
        // Exits without dropping the timers and runtimes: tearing down
        // millions of them is not part of the experiment.
        Ok(()) => std::process::exit(0),
        Err(e) => {
            eprintln!("wheel-bench: {}: {e}", c.imp);
            ExitCode::FAILURE
        }
    }
}

/// Runs every chosen implementation; `Ok(false)` if any of them failed (the
/// others are still reported).
fn run_parent(experiment: &Experiment, output: &Output) -> Result<bool, RunError> {
    if let Some(path) = &output.plot {
        // Fail before minutes of measuring, not after.
        File::create(path).map_err(|e| RunError::PlotFile(path.clone(), e))?;
    }
    let progress = io::stderr().is_terminal();
    let mut all_ok = true;
    let mut note = |what: String, result: &Result<Measured, RunError>| match result {
        Ok(m) => eprintln!("wheel-bench: {what}: done, {:.2} CPU s", m.cpu_s),
        Err(e) => {
            eprintln!("wheel-bench: {what}: {e}");
            all_ok = false;
        }
    };
    match experiment {
        Experiment::Delay(args) => {
            let mut results = Vec::new();
            for &imp in &output.impls {
                let measured = child::measure(experiment, imp, progress);
                note(format!("delay {imp}"), &measured);
                if let Ok(Measured {
                    outcome: Outcome::Delay(outcome),
                    cpu_s,
                    peak_rss_kib,
                }) = measured
                {
                    results.push(DelayResult {
                        imp,
                        outcome,
                        cpu_s,
                        peak_rss_kib,
                    });
                }
            }
            print_table(&report::delay_table(args, &results), output.json)?;
            if let Some(path) = &output.plot {
                plot::delay(path, args, &results)?;
            }
        }
        Experiment::Timeouts(args) => {
            let mut results = Vec::new();
            for &threads in &args.threads {
                let one = Experiment::Timeouts(args::TimeoutsArgs {
                    threads: vec![threads],
                    secs: args.secs,
                });
                for &imp in &output.impls {
                    let measured = child::measure(&one, imp, progress);
                    note(format!("timeouts {imp} x{threads}"), &measured);
                    if let Ok(Measured {
                        outcome: Outcome::Timeouts(outcome),
                        cpu_s,
                        peak_rss_kib,
                    }) = measured
                    {
                        results.push(TimeoutsResult {
                            imp,
                            threads,
                            outcome,
                            cpu_s,
                            peak_rss_kib,
                        });
                    }
                }
            }
            print_table(&report::timeouts_table(&results), output.json)?;
            if let Some(path) = &output.plot {
                plot::timeouts(path, &results)?;
            }
        }
        Experiment::Redis(args) => {
            // Ours unless one was named; stopped when this scope ends,
            // however it ends.
            let server = match args.server {
                // Fail before the children do, each with the same error.
                Some(addr) => redis::connect(addr).map(|_| None)?,
                None => Some(wheel_bench::redis::RedisServer::start().map_err(RunError::Server)?),
            };
            let addr = args.server.or(server.as_ref().map(|s| s.addr()));
            let mut results = Vec::new();
            for &workload in &args.workloads {
                for &threads in &args.threads {
                    let one = Experiment::Redis(args::RedisArgs {
                        threads: vec![threads],
                        workloads: vec![workload],
                        server: addr,
                        ..args.clone()
                    });
                    for &imp in &output.impls {
                        let what = format!("redis {imp} x{threads} {}", workload.name());
                        let measured = child::measure(&one, imp, progress);
                        if measured.is_err() {
                            note(what.clone(), &measured);
                        }
                        if let Ok(Measured {
                            outcome: Outcome::Redis(outcome),
                            cpu_s,
                            peak_rss_kib,
                        }) = measured
                        {
                            let result = RedisResult {
                                imp,
                                threads,
                                workload,
                                outcome,
                                cpu_s,
                                peak_rss_kib,
                            };
                            eprintln!(
                                "wheel-bench: {what}: done, {cpu_s:.2} CPU s, {:.2} CPU us per command, \
                                 {} timeouts, {} errors",
                                result.cpu_us_per_command(),
                                result.outcome.timeouts_fired,
                                result.outcome.errors
                            );
                            results.push(result);
                        }
                    }
                }
            }
            drop(server);
            print_table(&report::redis_table(&results), output.json)?;
            if let Some(path) = &output.plot {
                plot::redis(path, &results)?;
            }
            // errors must be 0: a run with any fails the command.
            all_ok &= results.iter().all(|r| r.outcome.errors == 0);
        }
    }
    Ok(all_ok)
}

fn print_table(table: &report::Table, json: bool) -> io::Result<()> {
    let text = if json {
        table.json_lines()
    } else {
        table.render()
    };
    let mut out = io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()
}

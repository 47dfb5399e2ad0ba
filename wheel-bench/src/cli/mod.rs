//! The `wheel-bench` command: parse, then either run one implementation (as a
//! child) or run every chosen implementation in its own child and report.

mod child;
mod command_line;
mod delay;
mod delay_recorder;
mod experiment;
mod impls;
mod latency;
mod outcome;
mod plot;
mod progress_bar;
mod redis;
mod redis_runs;
mod report;
mod timeouts;

use core::fmt;
use std::fs::File;
use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use serde::Serialize;
use tabled::Tabled;

use child::{ChildFailure, Measured};
use experiment::{Command, Experiment, Plan};
use outcome::{Outcome, OutcomeError};
use report::{DelayResult, TimeoutsResult};

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

/// Runs the command line of this process: usage errors exit with 2 (as
/// clap's own), failed runs with 1.
pub fn main() -> ExitCode {
    match command_line::parse(std::env::args_os()) {
        // Prints the help, the version or the usage error, and exits.
        Err(e) => e.exit(),
        Ok(Command::Child(c)) => run_child(&c),
        Ok(Command::Run(experiment, plan)) => match run_parent(&experiment, &plan) {
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
fn run_child(c: &experiment::Child) -> ExitCode {
    let outcome = match &c.experiment {
        Experiment::Delay(d) => delay::run(d, c.imp).map(Outcome::Delay),
        Experiment::Timeouts(t) => timeouts::run(t, c.imp).map(Outcome::Timeouts),
        Experiment::Redis(r) => redis::run(r, c.imp).map(Outcome::Redis),
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
fn run_parent(experiment: &Experiment, output: &Plan) -> Result<bool, RunError> {
    if let Some(path) = &output.plot {
        // Fail before minutes of measuring, not after.
        File::create(path).map_err(|e| RunError::PlotFile(path.clone(), e))?;
    }
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
                let measured = child::measure(experiment, imp);
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
            print_rows(&report::delay_rows(args, &results), output.json, 1, 0)?;
            if let Some(path) = &output.plot {
                plot::delay(path, args, &results)?;
            }
        }
        Experiment::Timeouts(args) => {
            let mut results = Vec::new();
            for run in 1..=output.runs {
                for &threads in &args.threads {
                    let one = Experiment::Timeouts(experiment::TimeoutsArgs {
                        threads: vec![threads],
                        secs: args.secs,
                        in_flight: args.in_flight,
                        any_order: args.any_order,
                    });
                    for &imp in &output.impls {
                        let measured = child::measure(&one, imp);
                        note(format!("timeouts {imp} x{threads} run {run}"), &measured);
                        if let Ok(Measured {
                            outcome: Outcome::Timeouts(outcome),
                            cpu_s,
                            peak_rss_kib,
                        }) = measured
                        {
                            results.push(TimeoutsResult {
                                run,
                                imp,
                                threads,
                                in_flight: args.in_flight,
                                any_order: args.any_order,
                                outcome,
                                cpu_s,
                                peak_rss_kib,
                            });
                        }
                    }
                }
            }
            // Grouped by implementation and thread count over the runs.
            let rows = report::timeouts_rows(&results);
            print_rows(&rows, output.json, output.runs, 2)?;
            if let Some(path) = &output.plot {
                plot::timeouts(path, &results)?;
            }
        }
        Experiment::Redis(args) => all_ok = redis_runs::run(args, output)?,
    }
    Ok(all_ok)
}

/// Prints `rows` on stdout as JSON lines, every run's, or as the table;
/// over several `runs`, the table has a row per group of rows whose first
/// `key` cells agree, with the spread of each figure.
fn print_rows<R: Serialize + Tabled>(
    rows: &[R],
    json: bool,
    runs: usize,
    key: usize,
) -> io::Result<()> {
    let text = if json {
        report::json_lines(rows)
    } else if runs > 1 {
        report::render_cells::<R>(report::spread_rows(rows, key))
    } else {
        report::render(rows)
    };
    let mut out = io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()
}

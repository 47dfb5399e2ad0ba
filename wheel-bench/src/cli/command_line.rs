//! The command line, declared with clap: a subcommand per experiment with
//! its own `--help`, the common flags declared once, each value checked as
//! it is parsed, then the checks across flags and the defaults that depend
//! on `--quick`. Usage errors exit with 2, as clap's own do.

use core::fmt;
use std::ffi::OsString;
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;

use clap::error::ErrorKind;
use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand};

use super::experiment::{
    Child, Command, DelayArgs, Experiment, Plan, RedisArgs, TimeoutsArgs, Workload, MAX_DELAY_MS,
    MAX_IN_FLIGHT, MAX_MS, MAX_RUNS, MAX_SECS, MAX_THREADS, MAX_TIMERS,
};
use super::impls::Impl;

/// wheel-bench: the seed experiments, wheel-sync side by side with its
/// peers, each implementation measured in its own child process.
#[derive(Debug, Parser)]
#[command(name = "wheel-bench", version, after_help = IMPLEMENTATIONS)]
struct Cli {
    #[command(subcommand)]
    command: Sub,
}

#[derive(Debug, Subcommand)]
enum Sub {
    #[command(flatten)]
    Run(ExperimentFlags),
    /// Runs one implementation in this process and prints its outcome: the
    /// parent's way of measuring each in a process of its own.
    #[command(name = "__child", hide = true)]
    Child {
        #[command(subcommand)]
        experiment: ExperimentFlags,
    },
}

#[derive(Debug, Subcommand)]
enum ExperimentFlags {
    /// Seed 000: N timers with random delays, all scheduled at once.
    ///
    /// N timers, each with a delay drawn uniformly from [min-ms, max-ms]
    /// (microsecond steps, the same draws for every implementation), all
    /// scheduled as fast as one thread can at start, as the seed's game
    /// server does with 1M-4M `await Delay(..)`. It reports how long the last
    /// one took to fire (the ideal is the max delay), the CPU time and
    /// average CPU % (of one core) the process spent from the first schedule
    /// to the last fire (getrusage), its peak RSS and the bytes each timer
    /// cost above the idle process, and each timer's lateness past its own
    /// deadline (p50/p99/max, from an HdrHistogram, and any that fired
    /// early). The wheel-sync services it builds tick every --tick-us (the
    /// global one, in the plain wheel-async row, keeps its 1 ms): the svc
    /// columns are their own lateness past each due tick, the late columns
    /// past the requested instant, so the two differ by the rounding up to
    /// the tick.
    Delay(DelayFlags),
    /// Seed 001's timer pattern: schedule(1 s) + cancel per request.
    ///
    /// Each of --threads threads loops schedule(1 s) + cancel for --secs
    /// seconds, as a client does around every request it sends. It reports
    /// total schedule+cancel pairs per second, the wall time of one pair on
    /// one thread (ns/op), the speed-up over `heap`, the ratio to the best
    /// way of holding wheel-sync (vs best way), the CPU time over those
    /// seconds and the peak RSS. With --runs, every implementation runs that
    /// many times, interleaved; the table gives each figure's median
    /// (min-max), the JSON every run. With --in-flight K, each thread is a
    /// client with K requests outstanding (a pipelined connection, or K
    /// tasks per worker): every op schedules a new request's timeout and,
    /// once K are in flight, cancels the oldest; an op is still one
    /// schedule + cancel. For K above 1 every in-flight future is boxed
    /// (Box::pin: tokio's Sleep must not move once polled, and the others
    /// are boxed alike), an allocation per op that K = 1, pinning on the
    /// stack, does not make.
    Timeouts(TimeoutsFlags),
    /// Seed 001 itself: a Redis client's per-command timeouts, against a
    /// real redis-server.
    ///
    /// A Redis client whose --threads callers share one TCP connection
    /// (replies matched to commands in order), each looping a synchronous
    /// command for --secs seconds, every command under a --timeout-ms
    /// timeout armed as it is written and cancelled by its reply. --workload
    /// set: SET key value; list: DEL, a 20-value LPUSH and LRANGE 0 -1 (the
    /// seed's syncSet and syncList; one op is one loop). It starts
    /// redis-server on a free loopback port (no persistence) and stops it at
    /// the end, unless --redis-url redis://HOST:PORT names a server.
    /// --stall-ms makes the server stall mid-run (CLIENT PAUSE from a side
    /// connection) so that timeouts fire. With two CPUs or more, the server
    /// runs on one and the client on the others (--no-pin: both anywhere).
    /// Every mechanism runs --runs times, interleaved; the table gives each
    /// figure's median (min-max), the JSON every run. It reports ops/s, each
    /// op's latency (p50/p99/p99.9), timeouts fired, errors (replies lost,
    /// doubled or not the command's: must be 0), the client's CPU time over
    /// the run, its CPU and context switches per op, the CPU per op above
    /// `none` (the timeout's cost), and the peak RSS.
    Redis(RedisFlags),
}

/// The flags every experiment takes.
#[derive(Args, Debug)]
struct CommonFlags {
    /// Implementations to run, comma-separated [default: all the experiment
    /// compares]
    // Names, not `Impl`s: an unknown one is reported in `plan`, with the
    // names this experiment accepts.
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    impls: Vec<String>,
    /// Scale everything down to run in seconds (a smoke test)
    #[arg(long)]
    quick: bool,
    /// Print the rows as JSON lines instead of the table
    #[arg(long)]
    json: bool,
    /// Write an SVG chart (delay: fired per 100 ms and lateness CDF;
    /// timeouts, redis: ops/s per thread count)
    #[arg(long, value_name = "FILE")]
    plot: Option<PathBuf>,
}

/// The flag of the experiments with many ways of holding wheel-sync.
#[derive(Args, Debug)]
struct ShapeFlags {
    /// Keep only the wheel-sync rows of these shapes, and every peer
    /// [default: all]
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    shapes: Vec<String>,
}

#[derive(Args, Debug)]
struct DelayFlags {
    /// How many timers [default: 1000000; --quick: 50000]
    #[arg(long, value_name = "N", value_parser = timers)]
    timers: Option<u64>,
    /// Shortest delay [default: 500; --quick: 100]
    #[arg(long, value_name = "MS", value_parser = number)]
    min_ms: Option<u64>,
    /// Longest delay: the ideal wall time [default: 15000; --quick: 1000]
    #[arg(long, value_name = "MS", value_parser = max_delay)]
    max_ms: Option<u64>,
    /// Seeds the delay draws, the same for every implementation
    #[arg(long, value_name = "N", value_parser = number, default_value = "24301")]
    seed: u64,
    /// The wheel-sync services' tick, 1 to 1000000
    #[arg(long, value_name = "US", value_parser = tick_us, default_value = "1000")]
    tick_us: u64,
    #[command(flatten)]
    shapes: ShapeFlags,
    #[command(flatten)]
    common: CommonFlags,
}

#[derive(Args, Debug)]
struct TimeoutsFlags {
    /// Thread counts, one run each [default: 1,2,8; --quick: 1,2]
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = threads)]
    threads: Vec<usize>,
    /// How long each run lasts [default: 5; --quick: 0.25]
    #[arg(long, value_name = "S", value_parser = seconds)]
    secs: Option<f64>,
    /// Run every implementation this many times, interleaved; the table
    /// gives each figure's median and min-max over the runs [default: 1]
    #[arg(long, value_name = "N", value_parser = runs)]
    runs: Option<usize>,
    /// Requests each thread keeps in flight, cancelling the oldest as it
    /// schedules the next (1: each cancelled at once)
    #[arg(long, value_name = "K", value_parser = in_flight, default_value = "1")]
    in_flight: usize,
    /// With --in-flight above 1, end a request picked at random among
    /// those in flight rather than the oldest (replies out of order, as on
    /// a multiplexed connection)
    #[arg(long)]
    any_order: bool,
    #[command(flatten)]
    shapes: ShapeFlags,
    #[command(flatten)]
    common: CommonFlags,
}

#[derive(Args, Debug)]
struct RedisFlags {
    /// Caller counts, one run each [default: 50,100,200; --quick: 50,200]
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = threads)]
    threads: Vec<usize>,
    /// How long each run lasts [default: 5; --quick: 0.3]
    #[arg(long, value_name = "S", value_parser = seconds)]
    secs: Option<f64>,
    /// What each caller loops [default: set,list]
    #[arg(long, value_name = "LIST", value_enum, value_delimiter = ',')]
    workload: Vec<Workload>,
    /// Each command's timeout
    #[arg(long, value_name = "MS", value_parser = millis, default_value = "1000")]
    timeout_ms: u64,
    /// Stall the server this long, half-way through each run
    #[arg(long, value_name = "MS", value_parser = millis)]
    stall_ms: Option<u64>,
    /// Use this server (redis://HOST:PORT) instead of starting one
    #[arg(long, value_name = "URL", value_parser = redis_url)]
    redis_url: Option<SocketAddr>,
    /// Run every mechanism this many times, interleaved [default: 3;
    /// --quick: 1]
    #[arg(long, value_name = "N", value_parser = runs)]
    runs: Option<usize>,
    /// Pin redis-server to one CPU and the client to the others, when there
    /// are two or more (the default)
    #[arg(long, overrides_with = "no_pin")]
    pin: bool,
    /// Let the server and the client run on any CPU
    #[arg(long, overrides_with = "pin")]
    no_pin: bool,
    #[command(flatten)]
    common: CommonFlags,
}

/// Printed after the top-level help.
const IMPLEMENTATIONS: &str = "\
Implementations (each measured in its own child process):
  wheel        wheel-sync callbacks (delay: schedule_detached_at, fire and forget,
               as no timer is cancelled; timeouts: schedule + cancel through a
               clone of the service per thread)
  wheel-async  tasks awaiting wheel-sync's Sleep on a tokio multi-thread runtime
               (delay: the global sleep_until; timeouts: a Sleep on a clone per
               thread, polled once, dropped)
every other way of holding wheel-sync, each a row (its shape after the /):
  wheel/shared            timeouts: one service shared by reference by every thread
  wheel/clone-each        timeouts: a fresh clone of the service per request
  wheel/handles           delay: schedule_at, every handle kept to the end
  wheel/handle-dropped    delay: schedule_at, each handle dropped at once
  wheel-async/shared      timeouts: a Sleep on the shared service
  wheel-async/global      timeouts: wheel_sync::sleep, the global service
  wheel-async/timeout     timeouts: wheel_sync::timeout around a request that is
                          pending once, then ready
  wheel-async/clone-each  delay: a clone of the service moved into each task
  wheel-async/arc         delay: an Arc<TimerService> cloned into each task
  wheel-async/smol        delay: clone-each's tasks on smol's multi-threaded executor
                          (as many threads as tokio's runtime has workers)
  wheel-queue  one task draining a wheel-sync DelayQueue (timeouts: one queue per thread)
  tokio        tasks awaiting tokio::time::sleep (timeouts: a Sleep polled once, dropped)
  tokio-alt    the same on tokio's alternative timer (per-worker wheels); only by
               name, in a build with RUSTFLAGS=\"--cfg tokio_unstable\"
  smol         delay: tasks awaiting smol::Timer on wheel-async/smol's executor
  delayqueue   one task draining a tokio_util DelayQueue (timeouts: one queue per thread)
  heap         a Mutex<BinaryHeap> + Condvar scheduler thread with lazy cancel

redis, the timeout of each command (a blocking caller thread each, except
none-async, wheel-async and tokio):
  none         no timeout: the ceiling
  executor-2   a scheduled executor: a heap under a lock, 2 worker threads
               taking turns at the earliest deadline (Java's
               ScheduledThreadPoolExecutor shape); cancel marks the entry
  executor-8   the same with 8 workers
  wheel        a wheel-sync callback on one shared service; cancel on reply
  none-async   caller tasks on a tokio multi-thread runtime, no timeout: the
               tasks' ceiling
  wheel-async  the same tasks, each command under wheel_sync::timeout
  tokio        the same tasks, each command under tokio::time::timeout";

/// The experiments' implementations: those run by default, and every one
/// accepted by name.
fn impls_of(experiment: &str) -> (&'static [Impl], &'static [Impl]) {
    match experiment {
        "delay" => (&Impl::DELAY, &Impl::DELAY_NAMED),
        "timeouts" => (&Impl::TIMEOUTS, &Impl::TIMEOUTS_NAMED),
        _ => (&Impl::REDIS, &Impl::REDIS),
    }
}

/// The whole command, each experiment's help ending with its
/// implementations and shapes.
fn command() -> clap::Command {
    let mut cli = Cli::command();
    for experiment in ["delay", "timeouts", "redis"] {
        let (_, named) = impls_of(experiment);
        let names: Vec<&str> = named.iter().map(|i| i.name()).collect();
        let mut text = format!("Implementations: {}", names.join(", "));
        let shapes = shapes_of(experiment, named);
        if !shapes.is_empty() {
            text.push_str(&format!("\nShapes: {}", shapes.join(", ")));
        }
        text.push_str("\n`wheel-bench --help` says what each is.");
        cli = cli.mut_subcommand(experiment, |sub| sub.after_help(text));
    }
    cli
}

/// Parses a whole command line, program name first.
///
/// # Errors
/// A clap error to print and exit with: a usage error (status 2), or the
/// help or version asked for (status 0).
pub fn parse<I, T>(args: I) -> Result<Command, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let cli = Cli::from_arg_matches(&command().try_get_matches_from(args)?)?;
    match cli.command {
        Sub::Run(flags) => {
            let (experiment, plan) = flags.resolve()?;
            Ok(Command::Run(experiment, plan))
        }
        Sub::Child { experiment } => {
            let (experiment, plan) = experiment.resolve()?;
            let single = match &experiment {
                Experiment::Delay(_) => true,
                Experiment::Timeouts(t) => t.threads.len() == 1,
                Experiment::Redis(r) => {
                    r.threads.len() == 1 && r.workloads.len() == 1 && r.server.is_some()
                }
            };
            match plan.impls[..] {
                [imp] if single => Ok(Command::Child(Child { experiment, imp })),
                _ => Err(usage_error(
                    experiment.name(),
                    "__child needs exactly one --impls entry (and one --threads entry; \
                     for redis one --workload and --redis-url)",
                )),
            }
        }
    }
}

/// A usage error of `experiment`, with its usage line.
fn usage_error(experiment: &str, message: impl fmt::Display) -> clap::Error {
    let mut cli = command();
    cli.build();
    match cli.find_subcommand_mut(experiment) {
        Some(sub) => sub.error(ErrorKind::ValueValidation, message),
        None => cli.error(ErrorKind::ValueValidation, message),
    }
}

impl ExperimentFlags {
    fn resolve(self) -> Result<(Experiment, Plan), clap::Error> {
        match self {
            ExperimentFlags::Delay(f) => {
                let quick = f.common.quick;
                let args = DelayArgs {
                    timers: f.timers.unwrap_or(if quick { 50_000 } else { 1_000_000 }),
                    min_ms: f.min_ms.unwrap_or(if quick { 100 } else { 500 }),
                    max_ms: f.max_ms.unwrap_or(if quick { 1_000 } else { 15_000 }),
                    seed: f.seed,
                    tick_us: f.tick_us,
                };
                if args.min_ms > args.max_ms {
                    return Err(usage_error(
                        "delay",
                        format!(
                            "--min-ms ({}) must not be above --max-ms ({})",
                            args.min_ms, args.max_ms
                        ),
                    ));
                }
                let plan = f.common.plan("delay", &f.shapes.shapes)?;
                Ok((Experiment::Delay(args), plan))
            }
            ExperimentFlags::Timeouts(f) => {
                let quick = f.common.quick;
                let args = TimeoutsArgs {
                    threads: or_default(f.threads, if quick { &[1, 2] } else { &[1, 2, 8] }),
                    secs: f.secs.unwrap_or(if quick { 0.25 } else { 5.0 }),
                    in_flight: f.in_flight,
                    any_order: f.any_order,
                };
                let mut plan = f.common.plan("timeouts", &f.shapes.shapes)?;
                plan.runs = f.runs.unwrap_or(1);
                Ok((Experiment::Timeouts(args), plan))
            }
            ExperimentFlags::Redis(f) => {
                let quick = f.common.quick;
                let args = RedisArgs {
                    threads: or_default(
                        f.threads,
                        if quick { &[50, 200] } else { &[50, 100, 200] },
                    ),
                    secs: f.secs.unwrap_or(if quick { 0.3 } else { 5.0 }),
                    workloads: or_default(f.workload, &[Workload::Set, Workload::List]),
                    timeout_ms: f.timeout_ms,
                    stall_ms: f.stall_ms,
                    server: f.redis_url,
                };
                let mut plan = f.common.plan("redis", &[])?;
                plan.runs = f.runs.unwrap_or(if quick { 1 } else { 3 });
                plan.pin = !f.no_pin;
                Ok((Experiment::Redis(args), plan))
            }
        }
    }
}

impl CommonFlags {
    /// The implementations chosen (each one the experiment accepts by name,
    /// without repeats), narrowed to `shapes`.
    fn plan(self, experiment: &str, shapes: &[String]) -> Result<Plan, clap::Error> {
        let (defaults, named) = impls_of(experiment);
        let mut chosen = Vec::with_capacity(self.impls.len());
        for name in &self.impls {
            match Impl::from_name(name.trim()).filter(|i| named.contains(i)) {
                Some(imp) => chosen.push(imp),
                None => {
                    let names: Vec<&str> = named.iter().map(|i| i.name()).collect();
                    return Err(usage_error(
                        experiment,
                        format!(
                            "`{experiment}` does not measure `{}`; expected one of {}",
                            name.trim(),
                            names.join(", ")
                        ),
                    ));
                }
            }
        }
        let known = shapes_of(experiment, named);
        if let Some(shape) = shapes.iter().find(|s| !known.contains(&s.as_str())) {
            return Err(usage_error(
                experiment,
                format!(
                    "unknown shape `{shape}`; expected one of {}",
                    known.join(", ")
                ),
            ));
        }
        let mut impls = or_default(chosen, defaults);
        if !shapes.is_empty() {
            impls.retain(|imp| {
                imp.shape(experiment)
                    .is_none_or(|s| shapes.iter().any(|w| w == s))
            });
        }
        Ok(Plan {
            impls,
            json: self.json,
            plot: self.plot,
            runs: 1,
            pin: false,
        })
    }
}

/// The shapes of `impls` in `experiment`, sorted, without repeats.
fn shapes_of(experiment: &str, impls: &[Impl]) -> Vec<&'static str> {
    let mut shapes: Vec<&'static str> = impls.iter().filter_map(|i| i.shape(experiment)).collect();
    shapes.sort_unstable();
    shapes.dedup();
    shapes
}

/// `given` without repeats, or `default` if none were given.
fn or_default<T: Copy + PartialEq>(given: Vec<T>, default: &[T]) -> Vec<T> {
    let mut out: Vec<T> = Vec::new();
    for v in if given.is_empty() {
        default.to_vec()
    } else {
        given
    } {
        if !out.contains(&v) {
            out.push(v);
        }
    }
    out
}

/// A non-negative integer; `_` separators are allowed (`4_000_000`).
fn number(value: &str) -> Result<u64, String> {
    let digits: String = value.chars().filter(|&c| c != '_').collect();
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err("expected a non-negative integer".into());
    }
    digits
        .parse()
        .map_err(|_| "expected an integer below 2^64".into())
}

/// `number` within `range`, saying which it must be in.
fn number_in(value: &str, range: core::ops::RangeInclusive<u64>) -> Result<u64, String> {
    let n = number(value)?;
    if range.contains(&n) {
        Ok(n)
    } else {
        Err(format!("must be in {}..={}", range.start(), range.end()))
    }
}

fn timers(value: &str) -> Result<u64, String> {
    number_in(value, 1..=MAX_TIMERS)
}

fn max_delay(value: &str) -> Result<u64, String> {
    number_in(value, 0..=MAX_DELAY_MS).map_err(|e| format!("{e} (one hour)"))
}

fn tick_us(value: &str) -> Result<u64, String> {
    number_in(value, 1..=1_000_000)
}

fn millis(value: &str) -> Result<u64, String> {
    number_in(value, 1..=MAX_MS)
}

fn threads(value: &str) -> Result<usize, String> {
    number_in(value.trim(), 1..=MAX_THREADS as u64).map(|n| n as usize)
}

fn runs(value: &str) -> Result<usize, String> {
    number_in(value, 1..=MAX_RUNS as u64).map(|n| n as usize)
}

fn in_flight(value: &str) -> Result<usize, String> {
    number_in(value, 1..=MAX_IN_FLIGHT as u64).map(|n| n as usize)
}

fn seconds(value: &str) -> Result<f64, String> {
    let secs: f64 = (value.trim().parse())
        .map_err(|_| "expected a number of seconds like 5 or 0.5".to_owned())?;
    // The negated form also rejects NaN.
    if !(secs > 0.0 && secs <= MAX_SECS) {
        return Err(format!("must be in (0, {MAX_SECS}]"));
    }
    Ok(secs)
}

/// `redis://HOST:PORT` or `HOST:PORT`, resolved to its first address.
fn redis_url(value: &str) -> Result<SocketAddr, String> {
    let expected = || "expected redis://HOST:PORT (no user, password or database)".to_owned();
    let hostport = value.strip_prefix("redis://").unwrap_or(value);
    let hostport = hostport.strip_suffix('/').unwrap_or(hostport);
    if hostport.contains(['@', '/']) || !hostport.contains(':') {
        return Err(expected());
    }
    let mut addrs = hostport.to_socket_addrs().map_err(|_| expected())?;
    addrs.next().ok_or_else(expected)
}

#[cfg(test)]
mod tests;

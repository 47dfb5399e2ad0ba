//! What a command line asks for, once parsed and checked: an experiment with
//! every parameter resolved (the defaults depend on `--quick`), and how the
//! parent runs and reports it, or the hidden child run of one implementation.

use std::net::SocketAddr;
use std::path::PathBuf;

use super::impls::Impl;

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
/// Largest `--runs`.
pub const MAX_RUNS: usize = 100;
/// Largest `--in-flight`. A request lives that many operations of its
/// thread, which must stay well inside its 1 s timeout: a run whose
/// requests outlive half of it fails (see `timeouts::in_flight`), as many
/// threads on few cores can make them.
pub const MAX_IN_FLIGHT: usize = 65_536;

// Every thread at its most requests in flight must fit what `--timers`
// allows one run to hold at once.
const _: () = assert!(
    (MAX_IN_FLIGHT * MAX_THREADS) as u64 <= MAX_TIMERS,
    "lower MAX_IN_FLIGHT or MAX_THREADS"
);

/// What the command line asks for.
#[derive(Debug, PartialEq)]
pub enum Command {
    /// Run an experiment over the chosen implementations, one child each.
    Run(Experiment, Plan),
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

impl Experiment {
    /// As its subcommand names it.
    pub fn name(&self) -> &'static str {
        match self {
            Experiment::Delay(_) => "delay",
            Experiment::Timeouts(_) => "timeouts",
            Experiment::Redis(_) => "redis",
        }
    }
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
    /// Requests each thread keeps in flight: every operation starts one and,
    /// once this many are in flight, ends the oldest; 1 ends each at once.
    pub in_flight: usize,
    /// End a request picked at random among those in flight, not the
    /// oldest.
    pub any_order: bool,
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
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
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

/// How a parent runs the experiment and reports it.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    /// Implementations to run, in order, without repeats.
    pub impls: Vec<Impl>,
    /// JSON lines instead of the table.
    pub json: bool,
    /// Where to write the SVG chart.
    pub plot: Option<PathBuf>,
    /// `timeouts` and `redis`: how many times to run every implementation,
    /// interleaved; 1 for `delay`.
    pub runs: usize,
    /// `redis`: the server and the client on CPUs of their own.
    pub pin: bool,
}

/// One implementation's run inside a child process.
#[derive(Clone, Debug, PartialEq)]
pub struct Child {
    /// The experiment; for `timeouts` and `redis`, `threads` holds exactly
    /// one count; for `redis`, one workload and the server.
    pub experiment: Experiment,
    /// The implementation.
    pub imp: Impl,
}

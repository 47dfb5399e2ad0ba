//! Seed 001 against a real server, inside a child: N callers share one
//! connection of the multiplexed client, each looping the workload until
//! the time is up, every command under the mechanism's timeout; optionally
//! the server stalls mid-run. Each caller checks that every reply is the
//! one its command must get, and the run checks that each timed-out
//! command's late reply came and was dropped.

use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use wheel_bench::peers::HeapScheduler;
use wheel_bench::redis::{
    stall, AsyncClient, AsyncExpiry, BytesFrame, Client, CommandError, Connection, Expiry,
};
use wheel_sync::TimerService;

use super::child::Usage;
use super::experiment::{RedisArgs, Workload};
use super::impls::Impl;
use super::latency::Latency;
use super::outcome::RedisOutcome;
use super::progress_bar::{self, Published};
use super::RunError;

/// Values each `LPUSH` pushes, as the seed's `syncList`.
const LIST_LEN: usize = 20;
/// How long after the callers stop the late replies of timed-out commands
/// may take to come, beyond one timeout and the stall.
const DRAIN_SLACK: Duration = Duration::from_secs(2);

/// Runs `imp` with `args.threads[0]` callers on `args.workloads[0]`.
pub fn run(args: &RedisArgs, imp: Impl) -> Result<RedisOutcome, RunError> {
    let addr = (args.server).ok_or_else(|| io::Error::other("the child was given no server"))?;
    let callers = args.threads.first().copied().unwrap_or(1);
    let workload = args.workloads.first().copied().unwrap_or(Workload::Set);
    let run = Run {
        args,
        callers,
        workload,
        timeout: Duration::from_millis(args.timeout_ms),
        label: format!("redis {imp:<11} x{callers:<3} {}", workload.name()),
    };
    let connection = connect(addr)?;
    let expiry = match imp {
        Impl::None => Expiry::None,
        Impl::Executor2 => Expiry::Executor(HeapScheduler::with_workers(2)?),
        Impl::Executor8 => Expiry::Executor(HeapScheduler::with_workers(8)?),
        Impl::Wheel => Expiry::Wheel(TimerService::builder().build()?),
        Impl::NoneAsync => return run.tasks(connection, AsyncExpiry::None),
        Impl::WheelAsync => return run.tasks(connection, AsyncExpiry::WheelSync),
        Impl::Tokio => return run.tasks(connection, AsyncExpiry::Tokio),
        Impl::WheelQueue
        | Impl::DelayQueue
        | Impl::Heap
        | Impl::WheelShared
        | Impl::WheelCloneEach
        | Impl::WheelHandles
        | Impl::WheelHandleDropped
        | Impl::WheelAsyncShared
        | Impl::WheelAsyncGlobal
        | Impl::WheelTimeout
        | Impl::WheelAsyncCloneEach
        | Impl::WheelAsyncArc
        | Impl::WheelAsyncSmol
        | Impl::Smol
        | Impl::TokioAlt => {
            return Err(RunError::NotIn {
                imp,
                experiment: "redis",
            })
        }
    };
    run.threads(Client::new(connection, expiry, run.timeout))
}

/// Connects to the server at `addr`, saying which when it cannot.
pub fn connect(addr: SocketAddr) -> io::Result<Connection> {
    Connection::connect(addr)
        .map_err(|e| io::Error::new(e.kind(), format!("cannot connect to redis://{addr}: {e}")))
}

struct Run<'a> {
    args: &'a RedisArgs,
    callers: usize,
    workload: Workload,
    timeout: Duration,
    label: String,
}

/// What one caller did.
#[derive(Default)]
struct Tally {
    ops: u64,
    commands: u64,
    wrong: u64,
    latency: Latency,
}

impl Tally {
    /// Counts an op that began at `start`; `false` if the caller must stop
    /// (its connection failed).
    fn record(&mut self, start: Instant, commands: u64, verdict: Verdict) -> bool {
        self.commands += commands;
        match verdict {
            Verdict::Done => {
                let ns = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
                self.latency.record(ns);
                self.ops += 1;
                true
            }
            Verdict::TimedOut => true,
            Verdict::Wrong => {
                self.wrong += 1;
                true
            }
            Verdict::Failed => {
                self.wrong += 1;
                false
            }
        }
    }

    fn add(&mut self, other: Tally) {
        self.ops += other.ops;
        self.commands += other.commands;
        self.wrong += other.wrong;
        self.latency.add(&other.latency);
    }
}

/// How one op ended.
enum Verdict {
    /// Every reply was the one its command must get.
    Done,
    /// A command timed out; the op is not counted.
    TimedOut,
    /// A reply was not its command's, or the server refused one.
    Wrong,
    /// The connection failed.
    Failed,
}

/// The verdict on a command's outcome, `right` judging its reply.
fn judge(
    outcome: Result<BytesFrame, CommandError>,
    right: impl Fn(&BytesFrame) -> bool,
) -> Verdict {
    match outcome {
        Ok(reply) if right(&reply) => Verdict::Done,
        Ok(_) | Err(CommandError::Server(_) | CommandError::Encode) => Verdict::Wrong,
        Err(CommandError::Timeout) => Verdict::TimedOut,
        Err(CommandError::Disconnected(_) | CommandError::Timer(_)) => Verdict::Failed,
    }
}

/// The first verdict that is not [`Verdict::Done`], or `Done`.
fn worst(verdicts: [Verdict; 3]) -> Verdict {
    let rank = |v: &Verdict| match v {
        Verdict::Done => 0,
        Verdict::TimedOut => 1,
        Verdict::Wrong => 2,
        Verdict::Failed => 3,
    };
    verdicts
        .into_iter()
        .max_by_key(rank)
        .unwrap_or(Verdict::Done)
}

fn is_ok(reply: &BytesFrame) -> bool {
    matches!(reply, BytesFrame::SimpleString(s) if s.as_ref() == b"OK")
}

fn is_deleted(reply: &BytesFrame) -> bool {
    matches!(reply, BytesFrame::Integer(0 | 1))
}

fn is_pushed(reply: &BytesFrame) -> bool {
    matches!(reply, BytesFrame::Integer(n) if *n == LIST_LEN as i64)
}

/// The caller's whole list, and nothing else.
fn is_list_of(key: &[u8]) -> impl Fn(&BytesFrame) -> bool + '_ {
    move |reply| match reply {
        BytesFrame::Array(items) => {
            items.len() == LIST_LEN
                && (items.iter())
                    .all(|i| matches!(i, BytesFrame::BulkString(v) if v.as_ref() == key))
        }
        _ => false,
    }
}

/// A caller's key; the value it writes is the key too, so a reply to another
/// caller's `LRANGE` cannot pass for its own.
fn key_of(caller: usize) -> Vec<u8> {
    format!("wheel-bench:{caller}").into_bytes()
}

fn push_args(key: &[u8]) -> Vec<&[u8]> {
    let mut args: Vec<&[u8]> = vec![b"LPUSH", key];
    args.extend(std::iter::repeat_n(key, LIST_LEN));
    args
}

impl Run<'_> {
    /// Blocking callers, a thread each.
    fn threads(&self, client: Client) -> Result<RedisOutcome, RunError> {
        let stop = AtomicBool::new(false);
        let published = self.published();
        let start_line = Barrier::new(self.callers + 1);
        let (tally, elapsed_ns, usage) = thread::scope(|scope| {
            let callers: Vec<_> = (0..self.callers)
                .map(|caller| {
                    let (client, stop, start_line) = (&client, &stop, &start_line);
                    let published = &published[caller].0;
                    scope.spawn(move || {
                        let key = key_of(caller);
                        let push = push_args(&key);
                        let mut tally = Tally::default();
                        start_line.wait();
                        while !stop.load(Ordering::Relaxed) {
                            let start = Instant::now();
                            let (commands, verdict) = match self.workload {
                                Workload::Set => {
                                    (1, judge(client.call(&[b"SET", &key, &key]), is_ok))
                                }
                                Workload::List => (3, list_op(client, &key, &push)),
                            };
                            if !tally.record(start, commands, verdict) {
                                break;
                            }
                            published.store(tally.ops, Ordering::Relaxed);
                        }
                        tally
                    })
                })
                .collect();
            start_line.wait();
            let start = Instant::now();
            let usage_start = Usage::now()?;
            let stall = StallPlan::of(self);
            let stalled = scope.spawn(move || stall.stall_mid_run());
            self.wait(&published);
            stop.store(true, Ordering::Relaxed);
            let mut tally = Tally::default();
            for caller in callers {
                tally.add(caller.join().map_err(|_| RunError::Panicked)?);
            }
            let elapsed_ns = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
            let usage = Usage::now()?.since(usage_start);
            stalled.join().map_err(|_| RunError::Panicked)??;
            Ok::<_, RunError>((tally, elapsed_ns, usage))
        })?;
        Ok(self.outcome(
            tally,
            elapsed_ns,
            usage,
            client.connection(),
            client.timeouts_fired(),
        ))
    }

    /// Caller tasks on a tokio multi-thread runtime.
    fn tasks(&self, connection: Connection, expiry: AsyncExpiry) -> Result<RedisOutcome, RunError> {
        if expiry == AsyncExpiry::WheelSync {
            // Started before the clock, as the runtime is.
            TimerService::global();
        }
        let rt = wheel_bench::tokio_runtime()?;
        let client = Arc::new(AsyncClient::new(connection, expiry, self.timeout));
        let stop = Arc::new(AtomicBool::new(false));
        let published = Arc::new(self.published());
        let start_line = Arc::new(tokio::sync::Barrier::new(self.callers + 1));
        let callers: Vec<_> = (0..self.callers)
            .map(|caller| {
                let (client, stop) = (Arc::clone(&client), Arc::clone(&stop));
                let (published, start_line) = (Arc::clone(&published), Arc::clone(&start_line));
                let workload = self.workload;
                rt.spawn(async move {
                    let key = key_of(caller);
                    let push = push_args(&key);
                    let mut tally = Tally::default();
                    start_line.wait().await;
                    while !stop.load(Ordering::Relaxed) {
                        let start = Instant::now();
                        let (commands, verdict) = match workload {
                            Workload::Set => {
                                (1, judge(client.call(&[b"SET", &key, &key]).await, is_ok))
                            }
                            Workload::List => (3, list_op_async(&client, &key, &push).await),
                        };
                        if !tally.record(start, commands, verdict) {
                            break;
                        }
                        published[caller].0.store(tally.ops, Ordering::Relaxed);
                    }
                    tally
                })
            })
            .collect();
        rt.block_on(start_line.wait());
        let start = Instant::now();
        let usage_start = Usage::now()?;
        let stall = StallPlan::of(self);
        let stalled = thread::spawn(move || stall.stall_mid_run());
        // The callers run on the runtime's workers; this thread only waits.
        self.wait(&published);
        stop.store(true, Ordering::Relaxed);
        let tally = rt.block_on(async {
            let mut tally = Tally::default();
            for caller in callers {
                tally.add(caller.await?);
            }
            Ok::<_, RunError>(tally)
        })?;
        let elapsed_ns = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
        let usage = Usage::now()?.since(usage_start);
        stalled.join().map_err(|_| RunError::Panicked)??;
        Ok(self.outcome(
            tally,
            elapsed_ns,
            usage,
            client.connection(),
            client.timeouts_fired(),
        ))
    }

    fn published(&self) -> Vec<Published> {
        (0..self.callers).map(|_| Published::default()).collect()
    }

    /// Lets the callers run for `--secs`, showing their ops as they go.
    fn wait(&self, published: &[Published]) {
        let bar = progress_bar::spinner(self.label.clone(), "ops");
        progress_bar::wait_for(&bar, Duration::from_secs_f64(self.args.secs), published);
    }

    /// Waits for the late replies of timed-out commands, then sums up: a
    /// command still in flight was lost, and every timeout must have had
    /// exactly one late reply dropped.
    fn outcome(
        &self,
        tally: Tally,
        elapsed_ns: u64,
        usage: Usage,
        connection: &Connection,
        timeouts_fired: u64,
    ) -> RedisOutcome {
        let stall = Duration::from_millis(self.args.stall_ms.unwrap_or(0));
        let deadline = Instant::now() + stall + self.timeout + DRAIN_SLACK;
        while connection.in_flight() > 0 && Instant::now() < deadline && !connection.is_dead() {
            thread::sleep(Duration::from_millis(5));
        }
        let lost = connection.in_flight() as u64;
        let unmatched = connection.late_replies().abs_diff(timeouts_fired);
        RedisOutcome {
            ops: tally.ops,
            commands: tally.commands,
            elapsed_ns,
            cpu_ns: usage.cpu_ns,
            context_switches: usage.context_switches,
            latency: tally.latency,
            timeouts_fired,
            errors: tally.wrong + lost + unmatched + connection.unsolicited_replies(),
        }
    }
}

/// When and how long the server stalls.
struct StallPlan {
    addr: Option<SocketAddr>,
    after: Duration,
    ms: Option<u64>,
}

impl StallPlan {
    fn of(run: &Run<'_>) -> StallPlan {
        StallPlan {
            addr: run.args.server,
            after: Duration::from_secs_f64(run.args.secs / 2.0),
            ms: run.args.stall_ms,
        }
    }

    fn stall_mid_run(&self) -> Result<(), RunError> {
        let (Some(addr), Some(ms)) = (self.addr, self.ms) else {
            return Ok(());
        };
        thread::sleep(self.after);
        stall(addr, ms).map_err(RunError::Stall)
    }
}

/// The seed's `syncList`: `DEL` sent without waiting, then `LPUSH` and
/// `LRANGE` waited for in turn.
fn list_op(client: &Client, key: &[u8], push: &[&[u8]]) -> Verdict {
    let del = client.begin(&[b"DEL", key]);
    let pushed = judge(client.call(push), is_pushed);
    let deleted = match del {
        Ok(del) => judge(del.wait(), is_deleted),
        Err(e) => judge(Err(e), is_deleted),
    };
    let listed = judge(client.call(&[b"LRANGE", key, b"0", b"-1"]), is_list_of(key));
    worst([deleted, pushed, listed])
}

async fn list_op_async(client: &AsyncClient, key: &[u8], push: &[&[u8]]) -> Verdict {
    let del = client.begin(&[b"DEL", key]);
    let pushed = judge(client.call(push).await, is_pushed);
    let deleted = match del {
        Ok(del) => judge(del.wait().await, is_deleted),
        Err(e) => judge(Err(e), is_deleted),
    };
    let listed = judge(
        client.call(&[b"LRANGE", key, b"0", b"-1"]).await,
        is_list_of(key),
    );
    worst([deleted, pushed, listed])
}

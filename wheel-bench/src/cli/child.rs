//! The parent's side of a child run: re-execute this binary with `__child`,
//! read its [`Outcome`] from stdout, and reap it with `wait4(2)` so the peak
//! RSS is the OS's own accounting of that child alone. The CPU time is the
//! child's own `getrusage(2)` over the run ([`cpu_ns`]): from the start of
//! the measured work to its end, as the wall time is, so neither the setup
//! nor the teardown after the last fire (freeing N timers or tasks, working
//! out the statistics) is counted, for any implementation.

use core::fmt;
use std::io::{self, Read};
use std::process::{Command, Stdio};

use super::experiment::Experiment;
use super::impls::Impl;
use super::outcome::Outcome;
use super::RunError;

/// The command line a parent passes to the child that runs `imp`.
pub fn child_args(experiment: &Experiment, imp: Impl) -> Vec<String> {
    let mut args = vec!["__child".to_owned()];
    match experiment {
        Experiment::Delay(d) => {
            args.push("delay".into());
            for (flag, v) in [
                ("--timers", d.timers),
                ("--min-ms", d.min_ms),
                ("--max-ms", d.max_ms),
                ("--seed", d.seed),
                ("--tick-us", d.tick_us),
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
            args.push("--in-flight".into());
            args.push(t.in_flight.to_string());
            if t.any_order {
                args.push("--any-order".into());
            }
        }
        Experiment::Redis(r) => {
            args.push("redis".into());
            let threads: Vec<String> = r.threads.iter().map(usize::to_string).collect();
            let workloads: Vec<&str> = r.workloads.iter().map(|w| w.name()).collect();
            for (flag, v) in [
                ("--threads", threads.join(",")),
                ("--secs", r.secs.to_string()),
                ("--workload", workloads.join(",")),
                ("--timeout-ms", r.timeout_ms.to_string()),
            ] {
                args.push(flag.into());
                args.push(v);
            }
            if let Some(ms) = r.stall_ms {
                args.push("--stall-ms".into());
                args.push(ms.to_string());
            }
            if let Some(addr) = r.server {
                args.push("--redis-url".into());
                args.push(format!("redis://{addr}"));
            }
        }
    }
    args.push("--impls".into());
    args.push(imp.name().into());
    args
}

/// A child's result with the OS's accounting.
#[derive(Clone, Debug)]
pub struct Measured {
    /// What the child reported.
    pub outcome: Outcome,
    /// User + system CPU seconds of the child and all its threads over the run.
    pub cpu_s: f64,
    /// Peak resident set size.
    pub peak_rss_kib: u64,
}

/// How a child ended, when it did not exit with 0.
#[derive(Debug)]
pub enum ChildFailure {
    /// It exited with this code.
    Exited(i32),
    /// It was killed by this signal (9 is often the OOM killer).
    Signalled(i32),
}

impl fmt::Display for ChildFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ChildFailure::Exited(code) => write!(f, "child exited with code {code}"),
            ChildFailure::Signalled(sig) => write!(f, "child was killed by signal {sig}"),
        }
    }
}

/// Runs `imp` through `experiment` in a fresh child process.
pub fn measure(experiment: &Experiment, imp: Impl) -> Result<Measured, RunError> {
    let mut child = Command::new(std::env::current_exe()?)
        .args(child_args(experiment, imp))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()?;
    let mut stdout = String::new();
    if let Some(mut out) = child.stdout.take() {
        out.read_to_string(&mut stdout)?;
    }
    // Reaped here rather than by `Child::wait`, which would drop the rusage.
    let (status, usage) = wait4(child.id())?;
    if libc::WIFSIGNALED(status) {
        return Err(RunError::Child(ChildFailure::Signalled(libc::WTERMSIG(
            status,
        ))));
    }
    let code = libc::WEXITSTATUS(status);
    if code != 0 {
        return Err(RunError::Child(ChildFailure::Exited(code)));
    }
    let outcome = Outcome::decode(&stdout)?;
    let cpu_ns = match &outcome {
        Outcome::Delay(d) => d.cpu_ns,
        Outcome::Timeouts(t) => t.cpu_ns,
        Outcome::Redis(r) => r.cpu_ns,
    };
    Ok(Measured {
        outcome,
        cpu_s: cpu_ns as f64 / 1e9,
        // Linux reports ru_maxrss in KiB.
        peak_rss_kib: u64::try_from(usage.ru_maxrss).unwrap_or(0),
    })
}

/// What this process (all its threads, live or ended) has used so far, from
/// `getrusage(RUSAGE_SELF)`.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Usage {
    /// User + system CPU time.
    pub cpu_ns: u64,
    /// Context switches, voluntary (a thread blocked) and involuntary (its
    /// time slice ended).
    pub context_switches: u64,
}

impl Usage {
    /// This process's usage now.
    pub fn now() -> io::Result<Usage> {
        // SAFETY: as in `wait4`: all-zero bytes are a valid `rusage`.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: `usage` is a live local valid for writes.
        if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) } != 0 {
            return Err(io::Error::last_os_error());
        }
        let ns = |t: libc::timeval| {
            u64::try_from(t.tv_sec).unwrap_or(0) * 1_000_000_000
                + u64::try_from(t.tv_usec).unwrap_or(0) * 1000
        };
        let count = |n: libc::c_long| u64::try_from(n).unwrap_or(0);
        Ok(Usage {
            cpu_ns: ns(usage.ru_utime) + ns(usage.ru_stime),
            context_switches: count(usage.ru_nvcsw) + count(usage.ru_nivcsw),
        })
    }

    /// What was used from `earlier` to `self`.
    pub fn since(self, earlier: Usage) -> Usage {
        Usage {
            cpu_ns: self.cpu_ns.saturating_sub(earlier.cpu_ns),
            context_switches: self
                .context_switches
                .saturating_sub(earlier.context_switches),
        }
    }
}

/// User + system CPU time this process (all its threads, live or ended) has
/// used so far.
pub fn cpu_ns() -> io::Result<u64> {
    Ok(Usage::now()?.cpu_ns)
}

/// Waits for child `pid` to end; returns its wait status and resource usage.
fn wait4(pid: u32) -> io::Result<(libc::c_int, libc::rusage)> {
    let pid = libc::pid_t::try_from(pid).map_err(io::Error::other)?;
    let mut status: libc::c_int = 0;
    // SAFETY: `rusage` is plain integers and `timeval`s, for which all-zero
    // bytes are a valid value.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: `pid` is our own child, not yet reaped (its `Child` is never
        // waited on); `status` and `usage` are live locals valid for writes.
        let reaped = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        if reaped == pid {
            return Ok((status, usage));
        }
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
}

//! The parent's side of `redis`: one server for the whole experiment, on a
//! CPU of its own when pinned, the client's children on the others; every
//! mechanism run `--runs` times, interleaved (each caller count and
//! workload through every mechanism, then again), so that a drift of the
//! machine's load falls on all of them alike.

use wheel_bench::affinity::CpuSet;
use wheel_bench::redis::RedisServer;

use super::child::{self, Measured};
use super::experiment::{Experiment, Plan, RedisArgs};
use super::outcome::Outcome;
use super::report::{self, RedisResult};
use super::{plot, print_rows, redis, RunError};

/// CPUs for the server and for the client.
#[derive(Debug, PartialEq)]
pub struct Placement {
    /// The server's CPU; `None`: anywhere.
    pub server: Option<CpuSet>,
    /// The client's CPUs; `None`: anywhere.
    pub client: Option<CpuSet>,
}

/// Where the server and the client run: with `pin` and two or more of
/// the `allowed` CPUs, the server on the last and the client on the rest.
pub fn place(pin: bool, allowed: &[usize]) -> Placement {
    match allowed.split_last() {
        Some((&last, rest)) if pin && !rest.is_empty() => Placement {
            server: Some(CpuSet::of(&[last])),
            client: Some(CpuSet::of(rest)),
        },
        _ => Placement {
            server: None,
            client: None,
        },
    }
}

/// What the placement is, for the log.
fn describe(placement: &Placement, pin: bool, own_server: bool) -> String {
    let list = |set: &CpuSet| {
        let cpus: Vec<String> = set.cpus().iter().map(usize::to_string).collect();
        cpus.join(",")
    };
    match (&placement.server, &placement.client) {
        (Some(server), Some(client)) if own_server => format!(
            "redis-server on CPU {}, the client on CPU {}",
            list(server),
            list(client)
        ),
        (_, Some(client)) => format!(
            "the client on CPU {} (the server is not ours to pin)",
            list(client)
        ),
        _ if pin => "not pinned: fewer than two CPUs".to_owned(),
        _ => "not pinned (--no-pin)".to_owned(),
    }
}

/// Runs the experiment; `Ok(false)` if a child failed or a row had errors.
pub fn run(args: &RedisArgs, plan: &Plan) -> Result<bool, RunError> {
    let placement = place(plan.pin, &CpuSet::allowed()?.cpus());
    // Ours unless one was named; stopped when this function returns,
    // however it returns.
    let server = match args.server {
        // Fail before the children do, each with the same error.
        Some(addr) => redis::connect(addr).map(|_| None)?,
        None => Some(RedisServer::start_on(placement.server.as_ref()).map_err(RunError::Server)?),
    };
    // The children inherit this thread's CPUs.
    if let Some(client) = &placement.client {
        client.pin_this_thread()?;
    }
    eprintln!(
        "wheel-bench: redis: {}",
        describe(&placement, plan.pin, server.is_some())
    );
    let addr = args.server.or(server.as_ref().map(RedisServer::addr));
    let mut results = Vec::new();
    let mut all_ok = true;
    for run in 1..=plan.runs {
        for &workload in &args.workloads {
            for &threads in &args.threads {
                let one = Experiment::Redis(RedisArgs {
                    threads: vec![threads],
                    workloads: vec![workload],
                    server: addr,
                    ..args.clone()
                });
                for &imp in &plan.impls {
                    let what = format!("redis {imp} x{threads} {} run {run}", workload.name());
                    match child::measure(&one, imp) {
                        Ok(Measured {
                            outcome: Outcome::Redis(outcome),
                            cpu_s,
                            peak_rss_kib,
                        }) => {
                            let result = RedisResult {
                                run,
                                imp,
                                threads,
                                workload,
                                outcome,
                                cpu_s,
                                peak_rss_kib,
                            };
                            eprintln!(
                                "wheel-bench: {what}: done, {cpu_s:.2} CPU s, {:.2} CPU us and \
                                 {:.2} context switches per op, {} timeouts, {} errors",
                                result.cpu_us_per_op(),
                                result.context_switches_per_op(),
                                result.outcome.timeouts_fired,
                                result.outcome.errors
                            );
                            results.push(result);
                        }
                        Ok(_) => {
                            eprintln!("wheel-bench: {what}: the child ran another experiment");
                            all_ok = false;
                        }
                        Err(e) => {
                            eprintln!("wheel-bench: {what}: {e}");
                            all_ok = false;
                        }
                    }
                }
            }
        }
    }
    drop(server);
    // Grouped by mechanism, caller count and workload over the runs.
    let rows = report::redis_rows(&results);
    print_rows(&rows, plan.json, plan.runs, 3)?;
    if let Some(path) = &plan.plot {
        plot::redis(path, &results)?;
    }
    // errors must be 0: a run with any fails the command.
    Ok(all_ok && results.iter().all(|r| r.outcome.errors == 0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_server_gets_the_last_cpu_and_the_client_the_rest() {
        let placement = place(true, &[0, 1, 2, 3]);
        assert_eq!(placement.server.map(|s| s.cpus()), Some(vec![3]));
        assert_eq!(placement.client.map(|s| s.cpus()), Some(vec![0, 1, 2]));
        let two = place(true, &[0, 1]);
        assert_eq!(
            describe(&two, true, true),
            "redis-server on CPU 1, the client on CPU 0"
        );
        assert_eq!(
            describe(&two, true, false),
            "the client on CPU 0 (the server is not ours to pin)"
        );
    }

    #[test]
    fn nothing_is_pinned_on_one_cpu_or_when_asked_not_to() {
        let none = Placement {
            server: None,
            client: None,
        };
        assert_eq!(place(true, &[5]), none);
        assert_eq!(
            describe(&none, true, true),
            "not pinned: fewer than two CPUs"
        );
        assert_eq!(place(false, &[0, 1]), none);
        assert_eq!(describe(&none, false, true), "not pinned (--no-pin)");
    }
}

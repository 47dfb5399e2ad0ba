//! One flag's value at a time: numbers, lists, durations, the server's
//! address, each checked against its limits.

use std::net::{SocketAddr, ToSocketAddrs};

use super::arg_error::ArgError;
use super::args::{Workload, MAX_MS, MAX_SECS, MAX_THREADS};
use super::impls::Impl;

/// A non-negative integer; `_` separators are allowed (`4_000_000`).
pub fn number(flag: &'static str, value: &str) -> Result<u64, ArgError> {
    let digits: String = value.chars().filter(|&c| c != '_').collect();
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad(flag, value, "a non-negative integer"));
    }
    digits
        .parse()
        .map_err(|_| bad(flag, value, "an integer below 2^64"))
}

pub fn thread_list(value: &str) -> Result<Vec<usize>, ArgError> {
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

pub fn seconds(value: &str) -> Result<f64, ArgError> {
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

pub fn millis(flag: &'static str, value: &str) -> Result<u64, ArgError> {
    let ms = number(flag, value)?;
    if ms == 0 || ms > MAX_MS {
        return Err(ArgError::MsOutOfRange { flag, ms });
    }
    Ok(ms)
}

pub fn workload_list(value: &str) -> Result<Vec<Workload>, ArgError> {
    let mut workloads = Vec::new();
    for name in value.split(',').map(str::trim) {
        let workload = match name {
            "set" => Workload::Set,
            "list" => Workload::List,
            _ => return Err(bad("--workload", value, "set, list or set,list")),
        };
        if !workloads.contains(&workload) {
            workloads.push(workload);
        }
    }
    Ok(workloads)
}

/// `redis://HOST:PORT` or `HOST:PORT`, resolved to its first address.
pub fn redis_url(value: &str) -> Result<SocketAddr, ArgError> {
    let expected = "redis://HOST:PORT (no user, password or database)";
    let hostport = value.strip_prefix("redis://").unwrap_or(value);
    let hostport = hostport.strip_suffix('/').unwrap_or(hostport);
    if hostport.contains(['@', '/']) || !hostport.contains(':') {
        return Err(bad("--redis-url", value, expected));
    }
    let mut addrs =
        (hostport.to_socket_addrs()).map_err(|_| bad("--redis-url", value, expected))?;
    addrs
        .next()
        .ok_or_else(|| bad("--redis-url", value, expected))
}

pub fn impl_list(value: &str, known: &'static [Impl]) -> Result<Vec<Impl>, ArgError> {
    let mut impls = Vec::new();
    for name in value.split(',').map(str::trim) {
        if name.is_empty() {
            return Err(bad(
                "--impls",
                value,
                "a comma-separated list like wheel,tokio",
            ));
        }
        let imp = (Impl::from_name(name).filter(|imp| known.contains(imp))).ok_or_else(|| {
            ArgError::UnknownImpl {
                name: name.to_owned(),
                expected: known,
            }
        })?;
        if !impls.contains(&imp) {
            impls.push(imp);
        }
    }
    Ok(impls)
}

pub fn bad(flag: &'static str, value: &str, expected: &'static str) -> ArgError {
    ArgError::BadValue {
        flag,
        value: value.to_owned(),
        expected,
    }
}

/// A `--tick-us` value: 1 µs to 1 s.
pub fn tick_us(value: &str) -> Result<u64, ArgError> {
    match number("--tick-us", value)? {
        us @ 1..=1_000_000 => Ok(us),
        _ => Err(bad("--tick-us", value, "microseconds from 1 to 1000000")),
    }
}

/// A `--shapes` list: each a shape of one of the experiment's `impls`.
pub fn shape_list(experiment: &str, impls: &[Impl], value: &str) -> Result<Vec<String>, ArgError> {
    let mut known: Vec<&'static str> = impls.iter().filter_map(|i| i.shape(experiment)).collect();
    known.sort_unstable();
    known.dedup();
    value
        .split(',')
        .map(str::trim)
        .map(|name| match known.contains(&name) {
            true => Ok(name.to_owned()),
            false => Err(ArgError::UnknownShape {
                name: name.to_owned(),
                expected: known.clone(),
            }),
        })
        .collect()
}

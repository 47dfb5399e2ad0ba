//! The rows each experiment prints: one struct per experiment, each field
//! a column, its header for the table (tabled) and its key for the JSON
//! lines (serde) declared on the field.

use serde::{Serialize, Serializer};
use tabled::builder::Builder;
use tabled::settings::object::Columns;
use tabled::settings::{Alignment, Padding, Style};
use tabled::Tabled;

use super::experiment::{DelayArgs, Workload};
use super::impls::Impl;
use super::outcome::{DelayOutcome, RedisOutcome, TimeoutsOutcome};

/// One implementation's `delay` run.
#[derive(Clone, Debug)]
pub struct DelayResult {
    /// Which implementation.
    pub imp: Impl,
    /// What the child saw.
    pub outcome: DelayOutcome,
    /// The child's CPU seconds.
    pub cpu_s: f64,
    /// The child's peak RSS.
    pub peak_rss_kib: u64,
}

/// One implementation's `timeouts` run at one thread count.
#[derive(Clone, Debug)]
pub struct TimeoutsResult {
    /// Which of the `--runs`, from 1.
    pub run: usize,
    /// Which implementation.
    pub imp: Impl,
    /// Threads looping.
    pub threads: usize,
    /// Requests each thread kept in flight.
    pub in_flight: usize,
    /// Whether they ended in any order, not the oldest first.
    pub any_order: bool,
    /// What the child saw.
    pub outcome: TimeoutsOutcome,
    /// The child's CPU seconds.
    pub cpu_s: f64,
    /// The child's peak RSS.
    pub peak_rss_kib: u64,
}

impl TimeoutsResult {
    /// schedule + cancel pairs per second, all threads together.
    pub fn ops_per_s(&self) -> f64 {
        self.outcome.ops as f64 / (self.outcome.elapsed_ns.max(1) as f64 / 1e9)
    }

    /// Whether `other` ran in the same run at the same thread count.
    fn beside(&self, other: &TimeoutsResult) -> bool {
        (self.run, self.threads) == (other.run, other.threads)
    }
}

/// One mechanism's `redis` run at one caller count and workload.
#[derive(Clone, Debug)]
pub struct RedisResult {
    /// Which of the `--runs`, from 1.
    pub run: usize,
    /// Which timeout mechanism.
    pub imp: Impl,
    /// Callers sharing the connection.
    pub threads: usize,
    /// What each caller looped.
    pub workload: Workload,
    /// What the child saw.
    pub outcome: RedisOutcome,
    /// The child's CPU seconds.
    pub cpu_s: f64,
    /// The child's peak RSS.
    pub peak_rss_kib: u64,
}

impl RedisResult {
    /// Workload loops per second, all callers together.
    pub fn ops_per_s(&self) -> f64 {
        self.outcome.ops as f64 / (self.outcome.elapsed_ns.max(1) as f64 / 1e9)
    }

    /// CPU time the client spent per op completed.
    pub fn cpu_us_per_op(&self) -> f64 {
        1e6 * self.cpu_s / self.outcome.ops as f64
    }

    /// Context switches of the client per op completed.
    pub fn context_switches_per_op(&self) -> f64 {
        self.outcome.context_switches as f64 / self.outcome.ops as f64
    }

    /// Whether `other` is the same run, caller count and workload.
    fn beside(&self, other: &RedisResult) -> bool {
        (self.run, self.threads, self.workload) == (other.run, other.threads, other.workload)
    }
}

/// A measurement shown with `D` decimals; not finite: not applicable,
/// `-` in the table and `null` in the JSON.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Num<const D: usize>(pub f64);

impl<const D: usize> core::fmt::Display for Num<D> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self.0 {
            x if x.is_finite() => write!(f, "{x:.D$}"),
            _ => f.write_str("-"),
        }
    }
}

impl<const D: usize> Serialize for Num<D> {
    /// Rounded as the table shows it; with no decimals, an integer.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let scale = 10f64.powi(D as i32);
        match self.0 {
            x if !x.is_finite() => serializer.serialize_none(),
            x if D == 0 => serializer.serialize_i64(x.round() as i64),
            x => serializer.serialize_f64((x * scale).round() / scale),
        }
    }
}

/// A `delay` row.
#[derive(Serialize, Tabled)]
pub struct DelayRow {
    #[tabled(rename = "impl")]
    #[serde(rename = "impl")]
    imp: &'static str,
    timers: u64,
    #[tabled(rename = "max delay ms")]
    max_delay_ms: u64,
    #[tabled(rename = "CPU %")]
    cpu_pct: Num<1>,
    #[tabled(rename = "CPU s")]
    cpu_s: Num<2>,
    /// Through the release of every timer: the fair figure where a row's
    /// frees fall after its last fire.
    #[tabled(rename = "CPU s released")]
    cpu_released_s: Num<2>,
    #[tabled(rename = "wall ms")]
    wall_ms: Num<0>,
    #[tabled(rename = "over ideal %")]
    #[serde(rename = "wall_over_ideal_pct")]
    over_ideal_pct: Num<2>,
    #[tabled(rename = "sched ms")]
    sched_ms: Num<0>,
    #[tabled(rename = "late p50 ms")]
    lateness_p50_ms: Num<3>,
    #[tabled(rename = "late p99 ms")]
    lateness_p99_ms: Num<3>,
    #[tabled(rename = "late max ms")]
    lateness_max_ms: Num<3>,
    #[tabled(rename = "svc p50 ms")]
    service_p50_ms: Num<3>,
    #[tabled(rename = "svc p99 ms")]
    service_p99_ms: Num<3>,
    early: u64,
    #[tabled(rename = "peak RSS MiB")]
    peak_rss_mib: Num<1>,
    #[tabled(rename = "B/timer")]
    bytes_per_timer: Num<0>,
}

/// A `timeouts` row.
#[derive(Serialize, Tabled)]
pub struct TimeoutsRow {
    #[tabled(rename = "impl")]
    #[serde(rename = "impl")]
    imp: &'static str,
    threads: usize,
    #[tabled(rename = "in flight")]
    in_flight: usize,
    /// `--any-order`: the same for every row of a run, so only in the JSON.
    #[tabled(skip)]
    any_order: bool,
    #[tabled(rename = "ops/s")]
    ops_per_s: Num<0>,
    #[tabled(rename = "ns/op")]
    ns_per_op: Num<1>,
    #[tabled(rename = "vs heap")]
    ratio_to_heap: Num<2>,
    /// Against the best way of holding wheel-sync (any row of a wheel-sync
    /// shape but `wheel-queue`, another API) in the same run and thread
    /// count.
    #[tabled(rename = "vs best way")]
    ratio_to_best_way: Num<2>,
    #[tabled(rename = "CPU s")]
    cpu_s: Num<2>,
    /// The wheel-sync driver's rounds a second: how often it woke and
    /// worked, which the CPU column alone hides on many cores.
    #[tabled(rename = "driver rounds/s")]
    driver_rounds_per_s: Num<0>,
    #[tabled(rename = "peak RSS MiB")]
    peak_rss_mib: Num<1>,
    /// Which run; the table gives the spread over all of them instead.
    #[tabled(skip)]
    run: usize,
}

/// A `redis` row.
#[derive(Serialize, Tabled)]
pub struct RedisRow {
    #[tabled(rename = "impl")]
    #[serde(rename = "impl")]
    imp: &'static str,
    threads: usize,
    workload: &'static str,
    #[tabled(rename = "ops/s")]
    ops_per_s: Num<0>,
    #[tabled(rename = "p50 ms")]
    p50_ms: Num<3>,
    #[tabled(rename = "p99 ms")]
    p99_ms: Num<3>,
    #[tabled(rename = "p99.9 ms")]
    p999_ms: Num<3>,
    #[tabled(rename = "timeouts")]
    timeouts_fired: u64,
    errors: u64,
    #[tabled(rename = "CPU s")]
    cpu_s: Num<2>,
    #[tabled(rename = "peak RSS MiB")]
    peak_rss_mib: Num<1>,
    #[tabled(rename = "CPU us/op")]
    cpu_us_per_op: Num<2>,
    /// Above the same client's without a timeout in the same run (`none`
    /// for the threads, `none-async` for the tasks): what the timeouts
    /// cost.
    #[tabled(rename = "timeout CPU us/op")]
    timeout_cpu_us_per_op: Num<2>,
    #[tabled(rename = "cs/op")]
    #[serde(rename = "cs_per_op")]
    context_switches_per_op: Num<2>,
    /// Which run; the table gives the spread over all of them instead.
    #[tabled(skip)]
    run: usize,
}

fn mib(kib: u64) -> Num<1> {
    Num(kib as f64 / 1024.0)
}

fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

/// The `delay` rows: one per implementation.
pub fn delay_rows(args: &DelayArgs, results: &[DelayResult]) -> Vec<DelayRow> {
    (results.iter())
        .map(|r| {
            let rec = &r.outcome.recorded;
            let wall_ms = ms(rec.wall_ns);
            let timer_kib = r.peak_rss_kib.saturating_sub(r.outcome.baseline_rss_kib);
            let service = |i: usize| Num(r.outcome.service_lateness.map_or(f64::NAN, |p| ms(p[i])));
            DelayRow {
                imp: r.imp.name(),
                timers: args.timers,
                max_delay_ms: args.max_ms,
                cpu_pct: Num(100.0 * r.cpu_s / (wall_ms / 1e3)),
                cpu_s: Num(r.cpu_s),
                cpu_released_s: Num(r.outcome.release_cpu_ns as f64 / 1e9),
                wall_ms: Num(wall_ms),
                over_ideal_pct: Num(100.0 * (wall_ms - args.max_ms as f64) / args.max_ms as f64),
                sched_ms: Num(ms(r.outcome.sched_ns)),
                lateness_p50_ms: Num(ms(rec.lateness.quantile_ns(0.50))),
                lateness_p99_ms: Num(ms(rec.lateness.quantile_ns(0.99))),
                lateness_max_ms: Num(ms(rec.lateness.max_ns())),
                service_p50_ms: service(0),
                service_p99_ms: service(1),
                early: rec.early,
                peak_rss_mib: mib(r.peak_rss_kib),
                bytes_per_timer: Num(timer_kib as f64 * 1024.0 / args.timers as f64),
            }
        })
        .collect()
}

/// The `timeouts` rows: one per run, implementation and thread count, each
/// compared with `heap` and with the best way of holding wheel-sync at the
/// same run and thread count.
pub fn timeouts_rows(results: &[TimeoutsResult]) -> Vec<TimeoutsRow> {
    let holds_the_service = |r: &TimeoutsResult| {
        r.imp
            .shape("timeouts")
            .is_some_and(|shape| shape != "queue")
    };
    (results.iter())
        .map(|r| {
            let ops_per_s = r.ops_per_s();
            let heap = (results.iter()).find(|h| h.imp == Impl::Heap && h.beside(r));
            let best_way = (results.iter())
                .filter(|b| holds_the_service(b) && b.beside(r))
                .map(TimeoutsResult::ops_per_s)
                .max_by(f64::total_cmp);
            TimeoutsRow {
                imp: r.imp.name(),
                threads: r.threads,
                in_flight: r.in_flight,
                any_order: r.any_order,
                ops_per_s: Num(ops_per_s),
                // The wall time one thread spends per operation.
                ns_per_op: Num(1e9 * r.threads as f64 / ops_per_s),
                ratio_to_heap: Num(heap.map_or(f64::NAN, |h| ops_per_s / h.ops_per_s())),
                ratio_to_best_way: Num(best_way.map_or(f64::NAN, |b| ops_per_s / b)),
                cpu_s: Num(r.cpu_s),
                driver_rounds_per_s: Num(r.outcome.driver_rounds.map_or(f64::NAN, |n| {
                    n as f64 * 1e9 / r.outcome.elapsed_ns.max(1) as f64
                })),
                peak_rss_mib: mib(r.peak_rss_kib),
                run: r.run,
            }
        })
        .collect()
}

/// The `redis` rows: one per run, mechanism, caller count and workload.
pub fn redis_rows(results: &[RedisResult]) -> Vec<RedisRow> {
    (results.iter())
        .map(|r| {
            let latency = &r.outcome.latency;
            let base = r.imp.redis_baseline();
            let none = (results.iter()).find(|n| n.imp == base && n.beside(r));
            RedisRow {
                imp: r.imp.name(),
                threads: r.threads,
                workload: r.workload.name(),
                ops_per_s: Num(r.ops_per_s()),
                p50_ms: Num(ms(latency.quantile_ns(0.50))),
                p99_ms: Num(ms(latency.quantile_ns(0.99))),
                p999_ms: Num(ms(latency.quantile_ns(0.999))),
                timeouts_fired: r.outcome.timeouts_fired,
                errors: r.outcome.errors,
                cpu_s: Num(r.cpu_s),
                peak_rss_mib: mib(r.peak_rss_kib),
                cpu_us_per_op: Num(r.cpu_us_per_op()),
                timeout_cpu_us_per_op: Num(
                    none.map_or(f64::NAN, |n| r.cpu_us_per_op() - n.cpu_us_per_op())
                ),
                context_switches_per_op: Num(r.context_switches_per_op()),
                run: r.run,
            }
        })
        .collect()
}

/// A table over several runs: a row per group of rows whose first `key`
/// cells agree (the mechanism, its thread or caller count, ...), in the
/// order of their first run, each number the median over the runs and,
/// where they differ, their min-max.
pub fn spread_rows<R: Tabled>(rows: &[R], key: usize) -> Vec<Vec<String>> {
    let key = key.min(R::LENGTH);
    let mut groups: Vec<Vec<Vec<String>>> = Vec::new();
    for row in rows {
        let cells: Vec<String> = row.fields().into_iter().map(|c| c.into_owned()).collect();
        match (groups.iter_mut()).find(|g| g[0][..key] == cells[..key]) {
            Some(group) => group.push(cells),
            None => groups.push(vec![cells]),
        }
    }
    (groups.iter())
        .map(|runs| {
            (0..R::LENGTH)
                .map(|i| spread((runs.iter()).map(|cells| cells[i].as_str())))
                .collect()
        })
        .collect()
}

/// One column's cells over the runs: the cell if all agree, else the
/// median and the min-max of the numbers, with the cells' decimals.
fn spread<'a>(cells: impl Iterator<Item = &'a str> + Clone) -> String {
    let first = cells.clone().next().unwrap_or("-");
    if cells.clone().all(|c| c == first) {
        return first.to_owned();
    }
    let Ok(mut values) = cells
        .map(str::parse::<f64>)
        .collect::<Result<Vec<f64>, _>>()
    else {
        return "-".to_owned();
    };
    values.sort_by(f64::total_cmp);
    let decimals = first.split_once('.').map_or(0, |(_, d)| d.len());
    let (low, high) = (values[0], values[values.len() - 1]);
    format!(
        "{:.decimals$} ({low:.decimals$}-{high:.decimals$})",
        median(&values)
    )
}

/// The middle of `sorted` values (the mean of the middle two for an even
/// count); NaN when empty.
pub fn median(sorted: &[f64]) -> f64 {
    match sorted.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => sorted[n / 2],
        n => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
    }
}

/// Aligned columns under one header line, two spaces apart: numbers to the
/// right, text (a column whose first row is not a number) to the left.
pub fn render<R: Tabled>(rows: &[R]) -> String {
    let cells = rows
        .iter()
        .map(|r| r.fields().into_iter().map(|c| c.into_owned()));
    render_cells::<R>(cells)
}

/// As [`render`], from the cells of rows of `R`'s columns.
pub fn render_cells<R: Tabled>(
    rows: impl IntoIterator<Item = impl IntoIterator<Item = String>>,
) -> String {
    let mut builder = Builder::new();
    builder.push_record(R::headers());
    let mut first = None;
    for row in rows {
        let row: Vec<String> = row.into_iter().collect();
        first.get_or_insert_with(|| row.clone());
        builder.push_record(row);
    }
    let mut table = builder.build();
    table.with(Style::empty()).with(Padding::new(0, 2, 0, 0));
    for (i, cell) in first.unwrap_or_default().iter().enumerate() {
        // A number, or a median with its spread after it.
        let lead = cell.split(' ').next().unwrap_or("");
        if lead == "-" || lead.parse::<f64>().is_ok() {
            table.modify(Columns::one(i), Alignment::right());
        }
    }
    let mut out = String::new();
    for line in table.to_string().lines() {
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// One JSON object per row, keys in field order.
pub fn json_lines<R: Serialize>(rows: &[R]) -> String {
    let mut out = String::new();
    for row in rows {
        // Plain fields with string keys: serialising cannot fail.
        out.push_str(&serde_json::to_string(row).expect("a row serialises"));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests;

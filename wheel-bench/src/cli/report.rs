//! The rows each experiment prints, as an aligned table or as JSON lines with
//! the same columns.

use core::fmt::Write as _;

use super::args::{DelayArgs, Workload};
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
    /// Which implementation.
    pub imp: Impl,
    /// Threads looping.
    pub threads: usize,
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
}

/// One mechanism's `redis` run at one caller count and workload.
#[derive(Clone, Debug)]
pub struct RedisResult {
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

    /// CPU time the client spent per command sent.
    pub fn cpu_us_per_command(&self) -> f64 {
        1e6 * self.cpu_s / self.outcome.commands.max(1) as f64
    }
}

/// One cell.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// A string.
    Text(String),
    /// An exact count.
    Int(u64),
    /// A measurement, shown with this many decimals.
    Num(f64, usize),
    /// Not applicable (JSON `null`).
    Missing,
}

/// A column: its table header and its JSON key.
pub struct Column {
    header: &'static str,
    key: &'static str,
}

const fn col(header: &'static str, key: &'static str) -> Column {
    Column { header, key }
}

const DELAY_COLUMNS: [Column; 16] = [
    col("impl", "impl"),
    col("timers", "timers"),
    col("max delay ms", "max_delay_ms"),
    col("CPU %", "cpu_pct"),
    col("CPU s", "cpu_s"),
    col("wall ms", "wall_ms"),
    col("over ideal %", "wall_over_ideal_pct"),
    col("sched ms", "sched_ms"),
    col("late p50 ms", "lateness_p50_ms"),
    col("late p99 ms", "lateness_p99_ms"),
    col("late max ms", "lateness_max_ms"),
    col("svc p50 ms", "service_p50_ms"),
    col("svc p99 ms", "service_p99_ms"),
    col("early", "early"),
    col("peak RSS MiB", "peak_rss_mib"),
    col("B/timer", "bytes_per_timer"),
];

const TIMEOUTS_COLUMNS: [Column; 7] = [
    col("impl", "impl"),
    col("threads", "threads"),
    col("ops/s", "ops_per_s"),
    col("ns/op", "ns_per_op"),
    col("vs heap", "ratio_to_heap"),
    col("CPU s", "cpu_s"),
    col("peak RSS MiB", "peak_rss_mib"),
];

const REDIS_COLUMNS: [Column; 11] = [
    col("impl", "impl"),
    col("threads", "threads"),
    col("workload", "workload"),
    col("ops/s", "ops_per_s"),
    col("p50 ms", "p50_ms"),
    col("p99 ms", "p99_ms"),
    col("p99.9 ms", "p999_ms"),
    col("timeouts", "timeouts_fired"),
    col("errors", "errors"),
    col("CPU s", "cpu_s"),
    col("peak RSS MiB", "peak_rss_mib"),
];

/// Rows under fixed columns.
pub struct Table {
    columns: &'static [Column],
    rows: Vec<Vec<Value>>,
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

/// The `delay` table: one row per implementation.
pub fn delay_table(args: &DelayArgs, results: &[DelayResult]) -> Table {
    let ms = |ns: u64| ns as f64 / 1e6;
    let rows = results
        .iter()
        .map(|r| {
            let rec = &r.outcome.recorded;
            let wall_ms = ms(rec.wall_ns);
            let timer_kib = r.peak_rss_kib.saturating_sub(r.outcome.baseline_rss_kib);
            let service = |i: usize| {
                (r.outcome.service_lateness).map_or(Value::Missing, |p| Value::Num(ms(p[i]), 3))
            };
            vec![
                Value::Text(r.imp.name().to_owned()),
                Value::Int(args.timers),
                Value::Int(args.max_ms),
                Value::Num(100.0 * r.cpu_s / (wall_ms / 1e3), 1),
                Value::Num(r.cpu_s, 2),
                Value::Num(wall_ms, 0),
                Value::Num(
                    100.0 * (wall_ms - args.max_ms as f64) / args.max_ms as f64,
                    2,
                ),
                Value::Num(ms(r.outcome.sched_ns), 0),
                Value::Num(ms(rec.lateness.quantile_ns(0.50)), 3),
                Value::Num(ms(rec.lateness.quantile_ns(0.99)), 3),
                Value::Num(ms(rec.lateness.max_ns), 3),
                service(0),
                service(1),
                Value::Int(rec.early),
                Value::Num(mib(r.peak_rss_kib), 1),
                Value::Num(timer_kib as f64 * 1024.0 / args.timers as f64, 0),
            ]
        })
        .collect();
    Table {
        columns: &DELAY_COLUMNS,
        rows,
    }
}

/// The `timeouts` table: one row per implementation and thread count, each
/// compared with `heap` at the same thread count.
pub fn timeouts_table(results: &[TimeoutsResult]) -> Table {
    let rows = results
        .iter()
        .map(|r| {
            let ops_per_s = r.ops_per_s();
            let heap = results
                .iter()
                .find(|h| h.imp == Impl::Heap && h.threads == r.threads);
            vec![
                Value::Text(r.imp.name().to_owned()),
                Value::Int(r.threads as u64),
                Value::Num(ops_per_s, 0),
                // The wall time one thread spends per operation.
                Value::Num(1e9 * r.threads as f64 / ops_per_s, 1),
                heap.map_or(Value::Missing, |h| Value::Num(ops_per_s / h.ops_per_s(), 2)),
                Value::Num(r.cpu_s, 2),
                Value::Num(mib(r.peak_rss_kib), 1),
            ]
        })
        .collect();
    Table {
        columns: &TIMEOUTS_COLUMNS,
        rows,
    }
}

/// The `redis` table: one row per mechanism, caller count and workload.
pub fn redis_table(results: &[RedisResult]) -> Table {
    let ms = |ns: u64| Value::Num(ns as f64 / 1e6, 3);
    let rows = results
        .iter()
        .map(|r| {
            let latency = &r.outcome.latency;
            vec![
                Value::Text(r.imp.name().to_owned()),
                Value::Int(r.threads as u64),
                Value::Text(r.workload.name().to_owned()),
                Value::Num(r.ops_per_s(), 0),
                ms(latency.quantile_ns(0.50)),
                ms(latency.quantile_ns(0.99)),
                ms(latency.quantile_ns(0.999)),
                Value::Int(r.outcome.timeouts_fired),
                Value::Int(r.outcome.errors),
                Value::Num(r.cpu_s, 2),
                Value::Num(mib(r.peak_rss_kib), 1),
            ]
        })
        .collect();
    Table {
        columns: &REDIS_COLUMNS,
        rows,
    }
}

impl Value {
    fn text(&self) -> String {
        match self {
            Value::Text(s) => s.clone(),
            Value::Int(n) => n.to_string(),
            Value::Num(x, _) if !x.is_finite() => "-".to_owned(),
            Value::Num(x, decimals) => format!("{x:.decimals$}"),
            Value::Missing => "-".to_owned(),
        }
    }

    fn json(&self) -> String {
        match self {
            Value::Text(s) => json_string(s),
            Value::Num(x, decimals) if x.is_finite() => format!("{x:.decimals$}"),
            Value::Num(..) | Value::Missing => "null".to_owned(),
            Value::Int(n) => n.to_string(),
        }
    }
}

fn json_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if u32::from(c) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

impl Table {
    /// Aligned columns: text left, numbers right; one header line.
    pub fn render(&self) -> String {
        let cells: Vec<Vec<String>> = (self.rows.iter())
            .map(|row| row.iter().map(Value::text).collect())
            .collect();
        let widths: Vec<usize> = (self.columns.iter().enumerate())
            .map(|(i, c)| {
                let widest = cells.iter().map(|r| r[i].len()).max().unwrap_or(0);
                widest.max(c.header.len())
            })
            .collect();
        let mut out = String::new();
        let mut line = |texts: Vec<&str>, left: &dyn Fn(usize) -> bool| {
            let parts: Vec<String> = (texts.iter().enumerate())
                .map(|(i, t)| {
                    let w = widths[i];
                    if left(i) {
                        format!("{t:<w$}")
                    } else {
                        format!("{t:>w$}")
                    }
                })
                .collect();
            out.push_str(parts.join("  ").trim_end());
            out.push('\n');
        };
        let is_text = |i: usize| {
            self.rows
                .first()
                .is_some_and(|r| matches!(r[i], Value::Text(_)))
        };
        line(self.columns.iter().map(|c| c.header).collect(), &is_text);
        for row in &cells {
            line(row.iter().map(String::as_str).collect(), &is_text);
        }
        out
    }

    /// One JSON object per row, keys in column order.
    pub fn json_lines(&self) -> String {
        let mut out = String::new();
        for row in &self.rows {
            let fields: Vec<String> = (self.columns.iter().zip(row))
                .map(|(c, v)| format!("{}:{}", json_string(c.key), v.json()))
                .collect();
            out.push('{');
            out.push_str(&fields.join(","));
            out.push_str("}\n");
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::recorder::{bucket_of, Lateness, Recorded, BUCKETS};

    fn delay_result() -> DelayResult {
        let mut counts = vec![0; BUCKETS];
        counts[bucket_of(500_000)] = 1000;
        DelayResult {
            imp: Impl::Heap,
            outcome: DelayOutcome {
                recorded: Recorded {
                    wall_ns: 15_150_000_000,
                    early: 0,
                    lateness: Lateness {
                        counts,
                        max_ns: 500_000,
                    },
                    per_slot: vec![1000],
                },
                sched_ns: 2_000_000,
                baseline_rss_kib: 1024,
                cpu_ns: 1_515_000_000,
                service_lateness: None,
            },
            cpu_s: 1.515,
            peak_rss_kib: 1024 + 100,
        }
    }

    fn args() -> DelayArgs {
        DelayArgs {
            timers: 1000,
            min_ms: 500,
            max_ms: 15_000,
            seed: 0,
            tick_us: 1_000,
        }
    }

    #[test]
    fn delay_row_derives_rates_and_costs() {
        let json = delay_table(&args(), &[delay_result()]).json_lines();
        for field in [
            r#""impl":"heap""#,
            r#""timers":1000"#,
            r#""cpu_pct":10.0"#,
            r#""wall_ms":15150"#,
            r#""wall_over_ideal_pct":1.00"#,
            r#""lateness_max_ms":0.500"#,
            r#""peak_rss_mib":1.1"#,
            // 100 KiB above the baseline over 1000 timers.
            r#""bytes_per_timer":102"#,
        ] {
            assert!(json.contains(field), "{field} not in {json}");
        }
        assert_eq!(json.lines().count(), 1);
    }

    #[test]
    fn table_aligns_under_headers() {
        let text = delay_table(&args(), &[delay_result()]).render();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2);
        assert!(lines[0].starts_with("impl  timers"));
        assert!(lines[1].starts_with("heap    1000"));
        // Right-aligned numbers end where their header ends.
        let header_end = lines[0].find("CPU %").unwrap() + "CPU %".len();
        assert_eq!(&lines[1][header_end - 4..header_end], "10.0");
    }

    #[test]
    fn timeouts_ratio_is_against_heap_at_the_same_threads() {
        let row = |imp, threads, ops| TimeoutsResult {
            imp,
            threads,
            outcome: TimeoutsOutcome {
                ops,
                elapsed_ns: 1_000_000_000,
                cpu_ns: 1_000_000_000,
            },
            cpu_s: 1.0,
            peak_rss_kib: 2048,
        };
        let table = timeouts_table(&[
            row(Impl::Heap, 1, 100),
            row(Impl::Tokio, 1, 300),
            row(Impl::Tokio, 2, 50),
        ]);
        let json = table.json_lines();
        let lines: Vec<&str> = json.lines().collect();
        assert!(lines[1].contains(r#""ratio_to_heap":3.00"#), "{}", lines[1]);
        assert!(
            lines[1].contains(r#""ns_per_op":3333333.3"#),
            "{}",
            lines[1]
        );
        assert!(lines[2].contains(r#""ratio_to_heap":null"#), "{}", lines[2]);
        assert!(table.render().lines().nth(3).unwrap().contains(" - "));
    }

    #[test]
    fn redis_rows_have_the_issues_keys() {
        let mut counts = vec![0; BUCKETS];
        counts[bucket_of(1_000_000)] = 99;
        counts[bucket_of(4_000_000)] = 1;
        let result = RedisResult {
            imp: Impl::Executor2,
            threads: 50,
            workload: Workload::List,
            outcome: RedisOutcome {
                ops: 200,
                commands: 600,
                elapsed_ns: 2_000_000_000,
                cpu_ns: 300_000_000,
                latency: Lateness {
                    counts,
                    max_ns: 4_000_000,
                },
                timeouts_fired: 5,
                errors: 0,
            },
            cpu_s: 0.3,
            peak_rss_kib: 10 * 1024,
        };
        assert_eq!(result.cpu_us_per_command(), 500.0);
        let json = redis_table(&[result]).json_lines();
        let keys: Vec<&str> = (json.trim().trim_matches(['{', '}']).split(','))
            .map(|kv| kv.split(':').next().unwrap().trim_matches('"'))
            .collect();
        assert_eq!(
            keys,
            [
                "impl",
                "threads",
                "workload",
                "ops_per_s",
                "p50_ms",
                "p99_ms",
                "p999_ms",
                "timeouts_fired",
                "errors",
                "cpu_s",
                "peak_rss_mib"
            ]
        );
        for field in [
            r#""impl":"executor-2""#,
            r#""workload":"list""#,
            r#""ops_per_s":100"#,
            // 1 ms rounded up to its bucket's top.
            r#""p50_ms":1.016"#,
            r#""p99_ms":1.016"#,
            r#""p999_ms":4.000"#,
            r#""timeouts_fired":5"#,
            r#""errors":0"#,
        ] {
            assert!(json.contains(field), "{field} not in {json}");
        }
    }

    #[test]
    fn json_strings_are_escaped() {
        assert_eq!(json_string("a\"b\\c\n"), r#""a\"b\\c\u000a""#);
    }
}

//! The `wheel-bench` binary end to end: bad flags fail clearly, and a quick
//! run prints the JSON rows scripts rely on.

use std::process::{Command, Output};

fn wheel_bench(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_wheel-bench"))
        .args(args)
        .output()
        .expect("the binary runs")
}

fn assert_usage_error(args: &[&str], message: &str) {
    let out = wheel_bench(args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
    assert!(
        stderr.contains(message),
        "{args:?}: `{message}` not in {stderr}"
    );
    assert!(out.stdout.is_empty(), "{args:?} printed to stdout");
}

#[test]
fn bad_flags_exit_non_zero_with_a_message() {
    assert_usage_error(&["delay", "--timers", "0"], "--timers must be at least 1");
    assert_usage_error(
        &["delay", "--min-ms", "20", "--max-ms", "10"],
        "--min-ms (20) must not be above --max-ms (10)",
    );
    assert_usage_error(
        &["delay", "--impls", "wheel,sleepy"],
        "unknown implementation `sleepy`",
    );
    assert_usage_error(&["timeouts", "--threads", "0"], "--threads entry 0");
    assert_usage_error(&["timeouts", "--timers", "5"], "takes no flag `--timers`");
    assert_usage_error(&["dance"], "unknown experiment `dance`");
    assert_usage_error(
        &["redis", "--impls", "heap"],
        "unknown implementation `heap`; expected one of none, executor-2",
    );
    assert_usage_error(&["redis", "--workload", "get"], "--workload `get`");
    assert_usage_error(&["redis", "--stall-ms", "0"], "--stall-ms 0 is not in");
    assert_usage_error(
        &["redis", "--redis-url", "redis://u:p@127.0.0.1:1"],
        "expected redis://HOST:PORT",
    );
    assert_usage_error(
        &["timeouts", "--impls", "executor-8"],
        "unknown implementation",
    );
    assert_usage_error(&[], "name an experiment");
}

#[test]
fn an_unwritable_plot_fails_before_measuring() {
    let out = wheel_bench(&["timeouts", "--plot", "/nonexistent-dir/t.svg"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("cannot write /nonexistent-dir/t.svg"),
        "{stderr}"
    );
    assert!(!stderr.contains("done"), "it measured first: {stderr}");
}

#[test]
fn help_explains_every_experiment() {
    let out = wheel_bench(&["--help"]);
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    for word in [
        "delay",
        "timeouts",
        "redis",
        "--workload",
        "--stall-ms",
        "--redis-url",
        "--timers",
        "--threads",
        "--quick",
        "--json",
        "--plot",
    ] {
        assert!(help.contains(word), "help lacks {word}");
    }
}

/// The stdout of a run that must have succeeded (else its stderr is shown).
fn stdout_of_success(out: &Output) -> String {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The value of `"key":` in a flat JSON object, as written.
fn field<'a>(object: &'a str, key: &str) -> &'a str {
    let tag = format!("\"{key}\":");
    let start = object
        .find(&tag)
        .unwrap_or_else(|| panic!("{key} not in {object}"))
        + tag.len();
    let rest = &object[start..];
    let end = rest.find([',', '}']).unwrap_or(rest.len());
    &rest[..end]
}

#[test]
fn quick_delay_prints_json_rows_and_plots() {
    let svg = std::env::temp_dir().join(format!("wheel-bench-cli-{}.svg", std::process::id()));
    let svg_arg = svg.to_str().expect("a UTF-8 temp dir");
    let out = wheel_bench(&[
        "delay", "--quick", "--json", "--impls", "heap", "--timers", "2000", "--max-ms", "300",
        "--plot", svg_arg,
    ]);
    let chart = std::fs::read_to_string(&svg).unwrap_or_default();
    let _ = std::fs::remove_file(&svg);
    assert!(chart.starts_with("<svg"), "no chart written: {chart:.80}");
    assert!(
        chart.trim_end().ends_with("</svg>"),
        "the chart is cut short"
    );
    let legend = chart.lines().any(|l| l.trim() == "heap");
    assert!(legend, "the chart has no `heap` legend");
    let stdout = stdout_of_success(&out);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 1, "{stdout}");
    let row = lines[0];
    assert!(row.starts_with('{') && row.ends_with('}'), "{row}");
    assert_eq!(field(row, "impl"), "\"heap\"");
    assert_eq!(field(row, "timers"), "2000");
    assert_eq!(field(row, "early"), "0");
    let wall_ms: f64 = field(row, "wall_ms").parse().unwrap();
    assert!(
        wall_ms >= 300.0 - 1.0,
        "the last timer fired before its deadline: {wall_ms}"
    );
    for key in [
        "cpu_s",
        "cpu_pct",
        "peak_rss_mib",
        "lateness_p50_ms",
        "lateness_p99_ms",
        "lateness_max_ms",
        "bytes_per_timer",
    ] {
        let value: f64 = field(row, key)
            .parse()
            .unwrap_or_else(|_| panic!("{key} in {row}"));
        assert!(value >= 0.0, "{key} = {value}");
    }
    assert!(field(row, "peak_rss_mib").parse::<f64>().unwrap() > 0.0);
}

#[test]
fn quick_timeouts_prints_json_rows() {
    let out = wheel_bench(&[
        "timeouts",
        "--quick",
        "--json",
        "--impls",
        "wheel,heap",
        "--threads",
        "1",
        "--secs",
        "0.1",
    ]);
    let stdout = stdout_of_success(&out);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{stdout}");
    assert_eq!(field(lines[0], "impl"), "\"wheel\"");
    assert_eq!(field(lines[1], "impl"), "\"heap\"");
    assert_eq!(field(lines[1], "ratio_to_heap"), "1.00");
    for row in lines {
        assert_eq!(field(row, "threads"), "1");
        let ops: f64 = field(row, "ops_per_s").parse().unwrap();
        assert!(ops > 0.0, "{row}");
    }
}

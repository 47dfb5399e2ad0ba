//! The `wheel-bench` binary end to end: bad flags fail clearly with exit
//! status 2, each experiment has its help, and a quick run prints the JSON
//! rows scripts rely on, with every key.

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
fn bad_flags_exit_with_2_and_a_message() {
    assert_usage_error(
        &["delay", "--timers", "0"],
        "'--timers <N>': must be in 1..=",
    );
    assert_usage_error(
        &["delay", "--min-ms", "20", "--max-ms", "10"],
        "--min-ms (20) must not be above --max-ms (10)",
    );
    assert_usage_error(
        &["delay", "--impls", "wheel,sleepy"],
        "`delay` does not measure `sleepy`; expected one of wheel, wheel/handles",
    );
    assert_usage_error(
        &["delay", "--timer", "5"],
        "a similar argument exists: '--timers'",
    );
    assert_usage_error(&["timeouts", "--threads", "0"], "'--threads <LIST>'");
    assert_usage_error(
        &["timeouts", "--timers", "5"],
        "unexpected argument '--timers'",
    );
    assert_usage_error(&["dance"], "unrecognized subcommand 'dance'");
    assert_usage_error(
        &["redis", "--impls", "heap"],
        "`redis` does not measure `heap`; expected one of none, executor-2",
    );
    assert_usage_error(
        &["redis", "--workload", "get"],
        "[possible values: set, list]",
    );
    assert_usage_error(
        &["redis", "--stall-ms", "0"],
        "'--stall-ms <MS>': must be in 1..=",
    );
    assert_usage_error(
        &["redis", "--redis-url", "redis://u:p@127.0.0.1:1"],
        "expected redis://HOST:PORT",
    );
    assert_usage_error(
        &["timeouts", "--impls", "executor-8"],
        "`timeouts` does not measure `executor-8`",
    );
    assert_usage_error(&[], "Usage: wheel-bench <COMMAND>");
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
fn help_names_every_experiment_and_each_has_its_own() {
    let out = wheel_bench(&["--help"]);
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    for word in ["delay", "timeouts", "redis", "executor-2", "delayqueue"] {
        assert!(help.contains(word), "help lacks {word}");
    }
    for (experiment, flags) in [
        ("delay", &["--timers", "--tick-us", "--shapes"][..]),
        (
            "timeouts",
            &["--threads", "--secs", "--runs", "--in-flight", "--shapes"],
        ),
        ("redis", &["--workload", "--stall-ms", "--redis-url"]),
    ] {
        let out = wheel_bench(&[experiment, "--help"]);
        assert!(out.status.success());
        let help = String::from_utf8_lossy(&out.stdout);
        for flag in flags
            .iter()
            .chain(&["--impls", "--quick", "--json", "--plot"])
        {
            assert!(help.contains(flag), "{experiment} --help lacks {flag}");
        }
    }
    let version = wheel_bench(&["--version"]);
    assert!(version.status.success());
    let version = String::from_utf8_lossy(&version.stdout);
    assert_eq!(
        version.trim(),
        format!("wheel-bench {}", env!("CARGO_PKG_VERSION"))
    );
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

/// A JSON row and its keys in the order written.
fn parse_row(line: &str) -> (serde_json::Value, Vec<String>) {
    let row: serde_json::Value =
        serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
    let object = row.as_object().expect("a JSON object");
    // serde_json's map sorts its keys; the line's order is the columns'.
    let mut keys: Vec<(usize, String)> = (object.keys())
        .map(|k| (line.find(&format!("\"{k}\":")).unwrap(), k.clone()))
        .collect();
    keys.sort();
    (row, keys.into_iter().map(|(_, k)| k).collect())
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
    let (row, keys) = parse_row(lines[0]);
    assert_eq!(
        keys,
        [
            "impl",
            "timers",
            "max_delay_ms",
            "cpu_pct",
            "cpu_s",
            "cpu_released_s",
            "wall_ms",
            "wall_over_ideal_pct",
            "sched_ms",
            "lateness_p50_ms",
            "lateness_p99_ms",
            "lateness_max_ms",
            "service_p50_ms",
            "service_p99_ms",
            "early",
            "peak_rss_mib",
            "bytes_per_timer"
        ]
    );
    assert_eq!(row["impl"], "heap");
    assert_eq!(row["timers"], 2000);
    assert_eq!(row["early"], 0);
    // A peer has no service of its own to ask.
    assert!(row["service_p50_ms"].is_null());
    let wall_ms = row["wall_ms"].as_f64().unwrap();
    assert!(
        wall_ms >= 300.0 - 1.0,
        "the last timer fired before its deadline: {wall_ms}"
    );
    for key in [
        "cpu_s",
        "cpu_pct",
        "lateness_p50_ms",
        "lateness_p99_ms",
        "lateness_max_ms",
        "bytes_per_timer",
    ] {
        let value = row[key]
            .as_f64()
            .unwrap_or_else(|| panic!("{key} in {row}"));
        assert!(value >= 0.0, "{key} = {value}");
    }
    assert!(row["lateness_p50_ms"].as_f64() <= row["lateness_max_ms"].as_f64());
    assert!(row["peak_rss_mib"].as_f64().unwrap() > 0.0);
    assert!(row["cpu_s"].as_f64() <= row["cpu_released_s"].as_f64());
}

#[test]
fn a_row_whose_timers_outlive_the_last_fire_is_charged_for_their_release() {
    let out = wheel_bench(&[
        "delay",
        "--quick",
        "--json",
        "--impls",
        "wheel/handles",
        "--timers",
        "20000",
        "--max-ms",
        "200",
    ]);
    let stdout = stdout_of_success(&out);
    let (row, _) = parse_row(stdout.lines().next().expect("a row"));
    assert_eq!(row["impl"], "wheel/handles");
    let (to_last_fire, released) = (row["cpu_s"].as_f64(), row["cpu_released_s"].as_f64());
    assert!(
        to_last_fire.is_some_and(|fired| released.is_some_and(|r| r >= fired && r > 0.0)),
        "{row}"
    );
}

#[test]
fn quick_delay_on_smol_fires_every_timer() {
    let out = wheel_bench(&[
        "delay",
        "--quick",
        "--impls",
        "wheel-async/smol,smol",
        "--json",
    ]);
    let stdout = stdout_of_success(&out);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{stdout}");
    for (line, imp) in lines.into_iter().zip(["wheel-async/smol", "smol"]) {
        // A row is written only once its every timer has fired.
        let (row, _) = parse_row(line);
        assert_eq!(row["impl"], imp);
        assert_eq!(row["timers"], 50_000, "{row}");
        assert_eq!(row["early"], 0, "{row}");
        let wall_ms = row["wall_ms"].as_f64().unwrap_or(0.0);
        assert!(wall_ms >= 1000.0 - 1.0, "fired before its deadline: {row}");
        assert!(row["cpu_s"].as_f64() <= row["cpu_released_s"].as_f64());
        assert!(row["peak_rss_mib"].as_f64().unwrap_or(0.0) > 0.0, "{row}");
        // Only the wheel-sync row has a service to ask.
        assert_eq!(row["service_p50_ms"].is_null(), imp == "smol", "{row}");
    }
}

/// `timeouts` of `wheel` and `heap` at one thread for 0.1 s, with `flags`:
/// its output and its progress lines.
fn timeouts_of_wheel_and_heap(flags: &[&str]) -> (String, String) {
    let mut args = vec![
        "timeouts",
        "--impls",
        "wheel,heap",
        "--threads",
        "1",
        "--secs",
        "0.1",
    ];
    args.extend_from_slice(flags);
    let out = wheel_bench(&args);
    let stdout = stdout_of_success(&out);
    (stdout, String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn quick_timeouts_prints_json_rows() {
    let (stdout, _) = timeouts_of_wheel_and_heap(&["--quick", "--json"]);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{stdout}");
    let (wheel, keys) = parse_row(lines[0]);
    assert_eq!(
        keys,
        [
            "impl",
            "threads",
            "in_flight",
            "any_order",
            "ops_per_s",
            "ns_per_op",
            "ratio_to_heap",
            "ratio_to_best_way",
            "cpu_s",
            "driver_rounds_per_s",
            "peak_rss_mib",
            "run"
        ]
    );
    let (heap, _) = parse_row(lines[1]);
    assert_eq!(wheel["impl"], "wheel");
    assert_eq!(heap["impl"], "heap");
    // A count for wheel-sync (in 0.1 s it may be none), none for a peer.
    assert!(wheel["driver_rounds_per_s"].as_f64().is_some(), "{wheel}");
    assert!(heap["driver_rounds_per_s"].is_null(), "{heap}");
    assert_eq!(heap["ratio_to_heap"], 1.0);
    assert_eq!(wheel["ratio_to_best_way"], 1.0);
    for row in [wheel, heap] {
        assert_eq!(row["threads"], 1);
        assert_eq!(row["in_flight"], 1);
        assert_eq!(row["run"], 1);
        assert!(row["ops_per_s"].as_f64().unwrap() > 0.0, "{row}");
    }
}

#[test]
fn timeouts_over_several_runs_prints_a_row_per_implementation() {
    let (stdout, stderr) = timeouts_of_wheel_and_heap(&["--runs", "2"]);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 3, "a header and a row each: {stdout}");
    assert!(lines[1].starts_with("wheel "), "{stdout}");
    assert!(lines[2].starts_with("heap "), "{stdout}");
    // Each run was measured apart: two runs, as the progress lines say.
    assert!(stderr.contains("timeouts heap x1 run 2: done"), "{stderr}");
    // The JSON gives every run.
    let (json, _) = timeouts_of_wheel_and_heap(&["--runs", "2", "--json"]);
    let runs: Vec<(String, u64)> = (json.lines())
        .map(|line| {
            let (row, _) = parse_row(line);
            (
                row["impl"].as_str().unwrap().to_owned(),
                row["run"].as_u64().unwrap(),
            )
        })
        .collect();
    let expected = [("wheel", 1), ("heap", 1), ("wheel", 2), ("heap", 2)];
    assert_eq!(
        runs,
        expected.map(|(imp, run)| (imp.to_owned(), run)),
        "{json}"
    );
}

#[test]
fn timeouts_keep_requests_in_flight_for_callbacks_futures_and_tokio() {
    let out = wheel_bench(&[
        "timeouts",
        "--quick",
        "--in-flight",
        "8",
        "--impls",
        "wheel,wheel-async,tokio",
        "--json",
    ]);
    let stdout = stdout_of_success(&out);
    let rows: Vec<serde_json::Value> = stdout.lines().map(|l| parse_row(l).0).collect();
    // --quick: one and two threads, each with every implementation.
    let impls: Vec<&str> = rows.iter().map(|r| r["impl"].as_str().unwrap()).collect();
    assert_eq!(
        impls,
        [
            "wheel",
            "wheel-async",
            "tokio",
            "wheel",
            "wheel-async",
            "tokio"
        ],
        "{stdout}"
    );
    for row in &rows {
        assert_eq!(row["in_flight"], 8, "{row}");
        assert!(row["ops_per_s"].as_f64().unwrap() > 0.0, "{row}");
    }
}

#[test]
fn timeouts_end_requests_in_any_order_when_asked() {
    for (flag, any_order) in [(None, false), (Some("--any-order"), true)] {
        let mut args = vec![
            "timeouts",
            "--threads",
            "1",
            "--secs",
            "0.25",
            "--in-flight",
            "16",
            "--impls",
            "wheel,wheel-async",
            "--json",
        ];
        args.extend(flag);
        let out = wheel_bench(&args);
        let stdout = stdout_of_success(&out);
        let rows: Vec<serde_json::Value> = stdout.lines().map(|l| parse_row(l).0).collect();
        assert_eq!(rows.len(), 2, "{stdout}");
        for row in &rows {
            assert_eq!(row["any_order"], any_order, "{row}");
            assert_eq!(row["in_flight"], 16, "{row}");
            assert!(row["ops_per_s"].as_f64().unwrap() > 0.0, "{row}");
        }
    }
}

use super::*;
use crate::cli::delay_recorder::Recorded;
use crate::cli::latency::Latency;

fn latency(values: &[(u64, u64)]) -> Latency {
    let mut latency = Latency::default();
    for &(ns, n) in values {
        (0..n).for_each(|_| latency.record(ns));
    }
    latency
}

/// The keys of a flat JSON object, in order (the end-to-end tests in
/// tests/cli.rs check delay's and timeouts'; redis's need a server).
fn keys(line: &str) -> Vec<String> {
    let value: serde_json::Value = serde_json::from_str(line).unwrap();
    let object = value.as_object().unwrap();
    // serde_json's map sorts its keys; the line's order is the fields'.
    let mut keys: Vec<(usize, String)> = (object.keys())
        .map(|k| (line.find(&format!("\"{k}\":")).unwrap(), k.clone()))
        .collect();
    keys.sort();
    keys.into_iter().map(|(_, k)| k).collect()
}

fn delay_result() -> DelayResult {
    DelayResult {
        imp: Impl::Heap,
        outcome: DelayOutcome {
            recorded: Recorded {
                wall_ns: 15_150_000_000,
                early: 0,
                lateness: latency(&[(500_000, 1000)]),
                per_slot: vec![1000],
            },
            sched_ns: 2_000_000,
            baseline_rss_kib: 1024,
            cpu_ns: 1_515_000_000,
            release_cpu_ns: 1_616_000_000,
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
    let json = json_lines(&delay_rows(&args(), &[delay_result()]));
    assert_eq!(json.lines().count(), 1);
    for field in [
        r#""impl":"heap""#,
        r#""timers":1000"#,
        r#""cpu_pct":10.0"#,
        r#""cpu_released_s":1.62"#,
        r#""wall_ms":15150"#,
        r#""wall_over_ideal_pct":1.0"#,
        // 0.5 ms rounded up to the top of its bucket.
        r#""lateness_max_ms":0.5"#,
        r#""service_p50_ms":null"#,
        r#""peak_rss_mib":1.1"#,
        // 100 KiB above the baseline over 1000 timers.
        r#""bytes_per_timer":102"#,
    ] {
        assert!(json.contains(field), "{field} not in {json}");
    }
}

#[test]
fn table_aligns_under_headers() {
    let text = render(&delay_rows(&args(), &[delay_result()]));
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2);
    assert!(lines[0].starts_with("impl  timers"), "{text}");
    assert!(lines[1].starts_with("heap    1000"), "{text}");
    // Right-aligned numbers end where their header ends.
    let header_end = lines[0].find("CPU %").unwrap() + "CPU %".len();
    assert_eq!(&lines[1][header_end - 4..header_end], "10.0");
    assert!(lines[1].contains(" - "), "no `-` for the service columns");
}

/// `ops` operations in one second of CPU and wall time.
fn timeouts_result(run: usize, imp: Impl, threads: usize, ops: u64) -> TimeoutsResult {
    TimeoutsResult {
        run,
        imp,
        threads,
        in_flight: 1,
        any_order: false,
        outcome: TimeoutsOutcome {
            ops,
            elapsed_ns: 1_000_000_000,
            cpu_ns: 1_000_000_000,
            driver_rounds: None,
        },
        cpu_s: 1.0,
        peak_rss_kib: 2048,
    }
}

/// A wheel-sync row gives its driver's rounds a second; a peer's, none.
#[test]
fn timeouts_rows_give_the_drivers_rounds_a_second_for_wheel_sync_only() {
    let mut wheel = timeouts_result(1, Impl::Wheel, 1, 100);
    wheel.outcome.elapsed_ns = 2_000_000_000;
    wheel.outcome.driver_rounds = Some(50);
    let rows = timeouts_rows(&[wheel, timeouts_result(1, Impl::Tokio, 1, 100)]);
    let json = json_lines(&rows);
    let lines: Vec<&str> = json.lines().collect();
    assert!(
        lines[0].contains(r#""driver_rounds_per_s":25"#),
        "{}",
        lines[0]
    );
    assert!(
        lines[1].contains(r#""driver_rounds_per_s":null"#),
        "{}",
        lines[1]
    );
}

#[test]
fn timeouts_ratio_is_against_heap_at_the_same_threads() {
    let row = |imp, threads, ops| timeouts_result(1, imp, threads, ops);
    let rows = timeouts_rows(&[
        row(Impl::Heap, 1, 100),
        row(Impl::Tokio, 1, 300),
        row(Impl::Tokio, 2, 50),
    ]);
    let json = json_lines(&rows);
    let lines: Vec<&str> = json.lines().collect();
    assert!(lines[1].contains(r#""ratio_to_heap":3.0"#), "{}", lines[1]);
    assert!(
        lines[1].contains(r#""ns_per_op":3333333.3"#),
        "{}",
        lines[1]
    );
    assert!(lines[2].contains(r#""ratio_to_heap":null"#), "{}", lines[2]);
    assert!(render(&rows).lines().nth(3).unwrap().contains(" - "));
}

#[test]
fn timeouts_compare_with_the_best_way_of_holding_the_service_in_the_same_run() {
    let row = |run, imp, ops| timeouts_result(run, imp, 2, ops);
    let rows = timeouts_rows(&[
        row(1, Impl::WheelShared, 400),
        row(1, Impl::WheelCloneEach, 300),
        // Faster, but another API: not a way of holding the service.
        row(1, Impl::WheelQueue, 800),
        row(1, Impl::Heap, 100),
        row(2, Impl::WheelShared, 200),
        row(2, Impl::WheelCloneEach, 200),
        row(2, Impl::Heap, 50),
        // Another thread count: the best way there is its own.
        timeouts_result(2, Impl::WheelCloneEach, 1, 100),
    ]);
    let json = json_lines(&rows);
    let lines: Vec<&str> = json.lines().collect();
    assert!(
        lines[1].contains(r#""ratio_to_best_way":0.75"#),
        "{}",
        lines[1]
    );
    assert!(
        lines[2].contains(r#""ratio_to_best_way":2.0"#),
        "{}",
        lines[2]
    );
    // Against the heap and the best way of its own run, not the first run's.
    assert!(
        lines[5].contains(r#""ratio_to_best_way":1.0"#),
        "{}",
        lines[5]
    );
    assert!(lines[5].contains(r#""ratio_to_heap":4.0"#), "{}", lines[5]);
    assert!(lines[5].contains(r#""run":2"#), "{}", lines[5]);
    let lone = json.lines().last().unwrap();
    assert!(lone.contains(r#""ratio_to_best_way":1.0"#), "{lone}");
    let table = spread_rows(&rows, 2);
    assert_eq!(table.len(), 5, "a row per implementation and thread count");
    assert_eq!(table[4][..2], ["wheel/clone-each", "1"]);
    let clone_each = &table[1];
    assert_eq!(clone_each[0], "wheel/clone-each");
    // 0.75 and 1.00 of the best way: the median of two is their mean.
    assert_eq!(clone_each[6], "0.88 (0.75-1.00)");
    assert!(
        !render(&rows).contains("run"),
        "the table has no run column"
    );
}

fn redis_result(run: usize, imp: Impl, ops: u64, cpu_s: f64) -> RedisResult {
    RedisResult {
        run,
        imp,
        threads: 50,
        workload: Workload::List,
        outcome: RedisOutcome {
            ops,
            commands: 3 * ops,
            elapsed_ns: 2_000_000_000,
            cpu_ns: (cpu_s * 1e9) as u64,
            context_switches: 3 * ops,
            latency: latency(&[(1_000_000, 99), (4_000_000, 1)]),
            timeouts_fired: 5,
            errors: 0,
        },
        cpu_s,
        peak_rss_kib: 10 * 1024,
    }
}

#[test]
fn redis_rows_have_the_keys() {
    let rows = redis_rows(&[
        redis_result(1, Impl::None, 400, 0.2),
        redis_result(1, Impl::Executor2, 200, 0.3),
    ]);
    let json = json_lines(&rows);
    let lines: Vec<&str> = json.lines().collect();
    assert_eq!(
        keys(lines[1]),
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
            "peak_rss_mib",
            "cpu_us_per_op",
            "timeout_cpu_us_per_op",
            "cs_per_op",
            "run"
        ]
    );
    for field in [
        r#""impl":"executor-2""#,
        r#""workload":"list""#,
        r#""ops_per_s":100"#,
        r#""timeouts_fired":5"#,
        r#""errors":0"#,
        // 0.3 s over 200 ops, and 0.5 us above none's 0.2 s over 400.
        r#""cpu_us_per_op":1500.0"#,
        r#""timeout_cpu_us_per_op":1000.0"#,
        r#""cs_per_op":3.0"#,
        r#""run":1"#,
    ] {
        assert!(lines[1].contains(field), "{field} not in {}", lines[1]);
    }
    assert!(lines[0].contains(r#""timeout_cpu_us_per_op":0.0"#));
    // Each rounded up to its bucket's top, within 1 %.
    let row: serde_json::Value = serde_json::from_str(lines[1]).unwrap();
    for (key, ms) in [("p50_ms", 1.0), ("p99_ms", 1.0), ("p999_ms", 4.0)] {
        let got = row[key].as_f64().unwrap();
        assert!((ms..=ms * 1.01).contains(&got), "{key}: {got}");
    }
    // The tasks' timeouts cost what they add to the tasks' own client, not
    // to the threads'.
    let tasks = redis_rows(&[
        redis_result(1, Impl::None, 400, 0.2),
        redis_result(1, Impl::NoneAsync, 400, 0.1),
        redis_result(1, Impl::Tokio, 200, 0.1),
    ]);
    let tokio = json_lines(&tasks[2..]);
    // 0.1 s over 200 ops, 250 us above none-async's 0.1 s over 400.
    assert!(
        tokio.contains(r#""timeout_cpu_us_per_op":250.0"#),
        "{tokio}"
    );
    // Without a `none` row in the same run there is no cost to tell.
    let alone = json_lines(&redis_rows(&[redis_result(2, Impl::Wheel, 10, 0.1)]));
    assert!(alone.contains(r#""timeout_cpu_us_per_op":null"#), "{alone}");
    assert!(
        !render(&rows).contains("run"),
        "the table has no run column"
    );
}

#[test]
fn spread_rows_give_the_median_and_min_max_of_each_figure() {
    let rows = redis_rows(&[
        redis_result(1, Impl::None, 400, 0.2),
        redis_result(1, Impl::Wheel, 300, 0.3),
        redis_result(2, Impl::None, 400, 0.2),
        redis_result(2, Impl::Wheel, 100, 0.3),
        redis_result(3, Impl::None, 400, 0.2),
        redis_result(3, Impl::Wheel, 200, 0.3),
    ]);
    let table = spread_rows(&rows, 3);
    assert_eq!(table.len(), 2);
    let wheel = &table[1];
    assert_eq!(wheel[0], "wheel");
    assert_eq!(wheel[1], "50");
    // 50, 150 and 100 ops/s.
    assert_eq!(wheel[3], "100 (50-150)");
    // The same in every run: shown once.
    assert_eq!(wheel[7], "5");
    assert_eq!(table[0][3], "200");
    let text = render_cells::<RedisRow>(table);
    assert!(text.contains("100 (50-150)"), "{text}");
    assert_eq!(median(&[1.0, 2.0, 4.0, 8.0]), 3.0);
    assert!(median(&[]).is_nan());
}

#[test]
fn numbers_round_as_shown_and_missing_is_null() {
    assert_eq!(Num::<2>(1.0 / 3.0).to_string(), "0.33");
    assert_eq!(serde_json::to_string(&Num::<2>(1.0 / 3.0)).unwrap(), "0.33");
    assert_eq!(serde_json::to_string(&Num::<0>(2.5e3)).unwrap(), "2500");
    assert_eq!(Num::<1>(f64::INFINITY).to_string(), "-");
    assert_eq!(serde_json::to_string(&Num::<1>(f64::NAN)).unwrap(), "null");
}

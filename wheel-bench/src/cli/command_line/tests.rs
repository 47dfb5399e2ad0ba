use super::super::child::child_args;
use super::*;

fn parse_str(line: &str) -> Result<Command, clap::Error> {
    parse(std::iter::once("wheel-bench").chain(line.split_whitespace()))
}

fn run_of(line: &str) -> (Experiment, Plan) {
    match parse_str(line) {
        Ok(Command::Run(experiment, plan)) => (experiment, plan),
        other => panic!("{line}: {other:?}"),
    }
}

fn delay_of(line: &str) -> DelayArgs {
    match run_of(line) {
        (Experiment::Delay(d), _) => d,
        other => panic!("{line}: {other:?}"),
    }
}

fn redis_of(line: &str) -> (RedisArgs, Plan) {
    match run_of(line) {
        (Experiment::Redis(r), plan) => (r, plan),
        other => panic!("{line}: {other:?}"),
    }
}

/// The error `line` must give, as its kind and message.
fn error_of(line: &str) -> (ErrorKind, String) {
    match parse_str(line) {
        Err(e) => (e.kind(), e.to_string()),
        Ok(c) => panic!("{line} parsed: {c:?}"),
    }
}

#[test]
fn delay_defaults_are_the_seeds() {
    let d = delay_of("delay");
    assert_eq!((d.timers, d.min_ms, d.max_ms), (1_000_000, 500, 15_000));
    assert_eq!((d.seed, d.tick_us), (0x5eed, 1_000));
    assert_eq!(delay_of("delay --tick-us 1").tick_us, 1);
    assert_eq!(error_of("delay --tick-us 0").0, ErrorKind::ValueValidation);
}

#[test]
fn quick_lowers_defaults_but_explicit_flags_win() {
    let d = delay_of("delay --quick");
    assert!(d.timers < 1_000_000 && d.max_ms < 15_000);
    let d = delay_of("delay --timers=4_000_000 --quick --max-ms 2000");
    assert_eq!((d.timers, d.max_ms), (4_000_000, 2000));
}

#[test]
fn timeouts_flags() {
    let (Experiment::Timeouts(t), plan) =
        run_of("timeouts --threads 8,1,8 --secs 0.5 --impls heap,wheel --json")
    else {
        panic!("not timeouts");
    };
    assert_eq!(t.threads, vec![8, 1]);
    assert_eq!(t.secs, 0.5);
    assert_eq!(plan.impls, vec![Impl::Heap, Impl::Wheel]);
    assert!(plan.json);
}

#[test]
fn in_flight_defaults_to_one_request_per_thread() {
    let in_flight = |line| match run_of(line) {
        (Experiment::Timeouts(t), _) => t.in_flight,
        other => panic!("{line}: {other:?}"),
    };
    assert_eq!(in_flight("timeouts"), 1);
    assert_eq!(in_flight("timeouts --quick"), 1);
    assert_eq!(in_flight("timeouts --in-flight 64"), 64);
    let (kind, message) = error_of("timeouts --in-flight 0");
    assert_eq!(kind, ErrorKind::ValueValidation);
    assert!(message.contains("1..=65536"), "{message}");
    assert_eq!(
        error_of("timeouts --in-flight 65537").0,
        ErrorKind::ValueValidation
    );
    assert_eq!(
        error_of("delay --in-flight 2").0,
        ErrorKind::UnknownArgument
    );
}

#[test]
fn shapes_keep_those_ways_of_holding_wheel_sync_and_every_peer() {
    let (_, plan) = run_of("timeouts --shapes shared,global");
    let names: Vec<&str> = plan.impls.iter().map(|i| i.name()).collect();
    assert_eq!(
        names,
        [
            "wheel/shared",
            "wheel-async/shared",
            "wheel-async/global",
            "tokio",
            "delayqueue",
            "heap"
        ]
    );
    let (_, plan) = run_of("delay --impls wheel,wheel/handles,tokio --shapes handles");
    assert_eq!(plan.impls, vec![Impl::WheelHandles, Impl::Tokio]);
    // smol is a peer; wheel-sync on smol's executor is a shape.
    let (_, plan) = run_of("delay --shapes smol");
    let names: Vec<&str> = plan.impls.iter().map(|i| i.name()).collect();
    assert_eq!(
        names,
        ["wheel-async/smol", "tokio", "smol", "delayqueue", "heap"]
    );
    let (kind, message) = error_of("delay --shapes thread-clone");
    assert_eq!(kind, ErrorKind::ValueValidation);
    assert!(
        message.contains("unknown shape `thread-clone`"),
        "{message}"
    );
    assert_eq!(
        error_of("redis --shapes shared").0,
        ErrorKind::UnknownArgument
    );
}

#[test]
fn bad_values_are_errors() {
    for (line, kind, says) in [
        (
            "delay --timers 0",
            ErrorKind::ValueValidation,
            "1..=100000000",
        ),
        (
            "delay --min-ms 20 --max-ms 10",
            ErrorKind::ValueValidation,
            "--min-ms (20) must not be above --max-ms (10)",
        ),
        (
            "delay --impls wheel,nope",
            ErrorKind::ValueValidation,
            "`delay` does not measure `nope`; expected one of wheel, wheel/handles",
        ),
        ("delay --timers", ErrorKind::InvalidValue, "--timers"),
        ("delay --timers -5", ErrorKind::UnknownArgument, "-5"),
        ("delay --threads 2", ErrorKind::UnknownArgument, "--threads"),
        (
            "timeouts --timers 2",
            ErrorKind::UnknownArgument,
            "--timers",
        ),
        ("delay --json=1", ErrorKind::TooManyValues, "--json"),
        (
            "timeouts --threads 1,0",
            ErrorKind::ValueValidation,
            "1..=1024",
        ),
        ("timeouts --secs 0", ErrorKind::ValueValidation, "(0, 3600]"),
        (
            "timeouts --secs nan",
            ErrorKind::ValueValidation,
            "(0, 3600]",
        ),
        (
            "",
            ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand,
            "Usage",
        ),
        ("sleep", ErrorKind::InvalidSubcommand, "sleep"),
        (
            "delay --max-ms 4000000",
            ErrorKind::ValueValidation,
            "one hour",
        ),
        ("redis --runs 0", ErrorKind::ValueValidation, "1..=100"),
    ] {
        let (got, message) = error_of(line);
        assert_eq!(got, kind, "{line}: {message}");
        assert!(message.contains(says), "{line}: `{says}` not in {message}");
    }
}

#[test]
fn a_misspelt_flag_gets_a_suggestion() {
    let (kind, message) = error_of("delay --timer 5");
    assert_eq!(kind, ErrorKind::UnknownArgument);
    assert!(message.contains("--timers"), "{message}");
}

#[test]
fn help_and_version_are_not_usage_errors() {
    assert_eq!(error_of("--help").0, ErrorKind::DisplayHelp);
    assert_eq!(error_of("delay -h --timers 0").0, ErrorKind::DisplayHelp);
    assert_eq!(error_of("--version").0, ErrorKind::DisplayVersion);
    let delay_help = error_of("delay --help").1;
    assert!(delay_help.contains("--tick-us") && !delay_help.contains("--stall-ms"));
}

#[test]
fn child_args_round_trip() {
    let delay = Experiment::Delay(delay_of("delay --timers 7 --min-ms 1 --max-ms 9 --seed 3"));
    let timeouts = Experiment::Timeouts(TimeoutsArgs {
        threads: vec![2],
        secs: 0.25,
        in_flight: 64,
        any_order: true,
    });
    let redis = Experiment::Redis(RedisArgs {
        threads: vec![50],
        secs: 0.5,
        workloads: vec![Workload::List],
        timeout_ms: 300,
        stall_ms: Some(700),
        server: Some(SocketAddr::from(([127, 0, 0, 1], 6400))),
    });
    for experiment in [delay, timeouts, redis] {
        let args = child_args(&experiment, Impl::Tokio);
        assert_eq!(
            parse(std::iter::once("wheel-bench".to_owned()).chain(args)).ok(),
            Some(Command::Child(Child {
                experiment,
                imp: Impl::Tokio,
            }))
        );
    }
}

#[test]
fn child_needs_one_impl_and_one_thread_count() {
    for line in [
        "__child delay",
        "__child timeouts --impls heap --threads 1,2",
        "__child redis --impls wheel --threads 50 --workload set",
    ] {
        let (kind, message) = error_of(line);
        assert_eq!(kind, ErrorKind::ValueValidation, "{line}");
        assert!(message.contains("exactly one --impls"), "{message}");
    }
}

#[test]
fn redis_defaults_are_the_seeds_and_flags_check() {
    let (r, plan) = redis_of("redis");
    assert_eq!(r.threads, vec![50, 100, 200]);
    assert_eq!(r.workloads, vec![Workload::Set, Workload::List]);
    assert_eq!((r.timeout_ms, r.stall_ms, r.server), (1000, None, None));
    assert_eq!(plan.impls, Impl::REDIS.to_vec());
    let (r, _) =
        redis_of("redis --workload list --stall-ms 1500 --redis-url redis://127.0.0.1:7000");
    assert_eq!(r.workloads, vec![Workload::List]);
    assert_eq!(r.stall_ms, Some(1500));
    assert_eq!(r.server, Some(SocketAddr::from(([127, 0, 0, 1], 7000))));
    let (kind, message) = error_of("redis --impls heap");
    assert_eq!(kind, ErrorKind::ValueValidation);
    assert!(
        message.contains("expected one of none, executor-2"),
        "{message}"
    );
    assert_eq!(
        error_of("timeouts --impls executor-2").0,
        ErrorKind::ValueValidation
    );
    assert_eq!(
        error_of("redis --timeout-ms 0").0,
        ErrorKind::ValueValidation
    );
    for line in [
        "redis --workload get",
        "redis --redis-url redis://user:pw@127.0.0.1:1",
        "redis --redis-url localhost",
    ] {
        let kind = error_of(line).0;
        assert!(
            matches!(kind, ErrorKind::ValueValidation | ErrorKind::InvalidValue),
            "{line}: {kind:?}"
        );
    }
    assert_eq!(
        error_of("timeouts --workload set").0,
        ErrorKind::UnknownArgument
    );
}

#[test]
fn redis_runs_and_pinning() {
    let (_, plan) = redis_of("redis");
    assert_eq!((plan.runs, plan.pin), (3, true));
    let (_, plan) = redis_of("redis --quick");
    assert_eq!((plan.runs, plan.pin), (1, true));
    let (_, plan) = redis_of("redis --quick --runs 5 --no-pin");
    assert_eq!((plan.runs, plan.pin), (5, false));
    // The last of the two wins, as with any flag and its negation.
    assert!(redis_of("redis --no-pin --pin").1.pin);
    assert!(!redis_of("redis --pin --no-pin").1.pin);
    assert_eq!(error_of("delay --runs 2").0, ErrorKind::UnknownArgument);
    assert_eq!(error_of("timeouts --no-pin").0, ErrorKind::UnknownArgument);
}

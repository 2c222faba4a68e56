//! The binary's contract: exit codes, one-line errors (the parser's own messages whole), nothing
//! on stdout on error.

use clap::Parser;
use lbsim::cli::Cli;

use crate::util::{lbsim, lbsim_ok};

fn assert_usage_error(args: &[&str], must_mention: &str) {
    let out = lbsim(args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "lbsim {args:?}: stderr {stderr}");
    assert!(out.stdout.is_empty(), "lbsim {args:?} printed to stdout on error");
    // The parser's errors are printed whole (what is missing, a near miss, the usage).
    if Cli::try_parse_from(std::iter::once("lbsim").chain(args.iter().copied())).is_ok() {
        assert_eq!(stderr.trim_end().lines().count(), 1, "one line, got: {stderr}");
    }
    assert!(stderr.starts_with("error: "), "{stderr}");
    assert!(
        stderr.contains(must_mention),
        "lbsim {args:?}: {stderr} should mention {must_mention}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn bad_input_is_one_line_naming_the_option_with_exit_2() {
    assert_usage_error(&["homo", "--loads", "0"], "--loads");
    assert_usage_error(&["homo", "--loads", "1"], "--loads");
    assert_usage_error(&["homo", "--loads", "1.5"], "0 < load < 1");
    assert_usage_error(&["homo", "--loads", "nan"], "--loads");
    assert_usage_error(&["homo", "--loads", "inf"], "--loads");
    assert_usage_error(&["homo", "--loads", ""], "--loads");
    assert_usage_error(&["homo", "--loads", "0.5,,0.9"], "--loads");
    assert_usage_error(&["homo", "--servers", "0"], "--servers");
    assert_usage_error(&["homo", "--servers", "-3"], "--servers");
    assert_usage_error(&["homo", "--servers", "1", "--policies", "p2c"], "at least 2 servers");
    assert_usage_error(&["homo", "--policies", "p2c,least-loaded"], "valid policies");
    assert_usage_error(&["homo", "--policies", "jsq-local"], "--policies");
    assert_usage_error(&["homo", "--seeds", "0"], "--seeds");
    assert_usage_error(&["homo", "--requests", "1"], "--requests");
    assert_usage_error(&["homo", "--tau", "0"], "--tau");
    assert_usage_error(&["homo", "--threads", "0"], "--threads");
    assert_usage_error(&["fixed", "--n", "10", "--d", "11"], "--d");
    assert_usage_error(&["fixed", "--lambda", "-0.1"], "--lambda");
    assert_usage_error(&["bins", "--d", "0"], "--d");
    assert_usage_error(&["bins", "--variants", "right"], "--variants");
    assert_usage_error(&["homo", "--format", "xml"], "--format");
    assert_usage_error(&["homo", "-o", "/nonexistent-dir/x.csv"], "--out");
    assert_usage_error(&["frobnicate"], "frobnicate");
}

#[test]
fn help_and_version_succeed() {
    assert!(lbsim_ok(&["--help"]).contains("homo"));
    assert!(lbsim_ok(&["homo", "--help"]).contains("--loads"));
    assert!(lbsim_ok(&["--version"]).starts_with("lbsim "));
}

#[test]
fn csv_has_the_spec_columns() {
    let csv = lbsim_ok(&[
        "homo",
        "--format",
        "csv",
        "--loads",
        "0.5",
        "--requests",
        "2000",
        "--warmup",
        "0",
        "--seeds",
        "2",
    ]);
    let header = csv.lines().next().unwrap();
    assert!(header.starts_with("load,policy,seeds,mean,p99,max_queue,mean_ci95,p99_ci95,drift"));
    assert_eq!(csv.lines().count(), 7, "a header and six policies");
    let bins = lbsim_ok(&["bins", "--format", "csv", "--n", "100", "--d", "2"]);
    assert!(bins.starts_with("n,d,variant,seeds,max_load_median,max_load_min,max_load_max\n"));
    let fixed = lbsim_ok(&["fixed", "--format", "csv", "--n", "20", "--requests", "1000"]);
    assert!(fixed.starts_with("d,lambda,i,sim,theory"));
}

#[test]
fn one_seed_leaves_the_intervals_empty() {
    let csv = lbsim_ok(&[
        "homo",
        "--format",
        "csv",
        "--loads",
        "0.5",
        "--policies",
        "p2c",
        "--requests",
        "1000",
        "--seeds",
        "1",
    ]);
    let row: Vec<&str> = csv.lines().nth(1).unwrap().split(',').collect();
    assert_eq!((row[6], row[7]), ("", ""), "mean_ci95 and p99_ci95 are empty: {row:?}");
}

#[test]
fn json_has_command_params_rows_and_run() {
    let json = lbsim_ok(&[
        "homo",
        "--format",
        "json",
        "--loads",
        "0.5",
        "--policies",
        "p2c",
        "--requests",
        "1000",
    ]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["command"], "homo");
    assert_eq!(v["params"]["servers"], 100);
    assert_eq!(v["rows"][0]["policy"], "p2c");
    assert!(v["run"]["events_per_second"].as_f64().unwrap() > 0.0);
}

#[test]
fn out_file_is_written_and_matches_stdout() {
    let dir = std::env::temp_dir().join(format!("lbsim-out-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("bins.csv");
    let args = ["bins", "--format", "csv", "--n", "100,1000"];
    let stdout = lbsim_ok(&args);
    let mut with_out = args.to_vec();
    with_out.extend(["-o", path.to_str().unwrap()]);
    assert_eq!(lbsim_ok(&with_out), "", "nothing on stdout with -o");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), stdout);
    let leftovers = std::fs::read_dir(&dir).unwrap().count();
    assert_eq!(leftovers, 1, "no temporary file left behind");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn values_typed_by_the_parser_are_refused_with_lbsims_own_line() {
    for (args, line) in [
        (
            &["homo", "--seeds", "0"][..],
            "invalid value '0' for --seeds: expected an integer from 1 to 10000000",
        ),
        (
            &["--seed", "-1", "bins"],
            "invalid value '-1' for --seed: expected an integer from 0 to 18446744073709551615",
        ),
        (
            &["homo", "--threads", "0"],
            "invalid value '0' for --threads: expected an integer from 1 to 1024",
        ),
        (
            &["homo", "--shard", "2/2"],
            "invalid value '2/2' for --shard: expected K/N with 0 <= K < N <= 1000000 (shard K of N, counted from 0)",
        ),
        (
            &["fixed", "--requests", "1.5e0"],
            "invalid value '1.5e0' for --requests: expected an integer from 2 to 1000000000000",
        ),
        (
            &["stale", "--warmup", " 12x"],
            "invalid value '12x' for --warmup: expected an integer from 0 to 1000000000000",
        ),
        (
            &["homo", "--queue-guard", "1e10"],
            "invalid value '1e10' for --queue-guard: expected an integer from 1 to 1000000000",
        ),
        (
            &["hetero", "--precision", "nan"],
            "invalid value 'nan' for --precision: expected a relative half-width R with 1e-6 <= R <= 0.5 (0.01 = +-1%)",
        ),
        (&["homo", "--quantiles", "50,50"], "--quantiles lists '50' twice"),
        (&["homo", "--quantiles", ""], "--quantiles needs at least one value"),
    ] {
        let out = lbsim(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(out.stdout.is_empty(), "{args:?}");
        assert_eq!(String::from_utf8_lossy(&out.stderr), format!("error: {line}\n"), "{args:?}");
    }
}

/// One bad value of each command's own options (its arguments separated by `|`) and the exact
/// line it is refused with. Each is alone on its command line: with several bad values, which
/// one is named first may depend on their order.
const BAD_VALUES: &[(&str, &str)] = &[
    ("bins|--n|0", "invalid value '0' for --n: expected an integer from 1 to 100000000"),
    ("bins|--n|1,,2", "--n has an empty item in '1,,2'"),
    ("bins|--d|65", "invalid value '65' for --d: expected an integer from 1 to 64"),
    ("bins|--d|1,1", "--d lists '1' twice"),
    ("bins|--variants|up", "invalid value 'up' for --variants: expected uniform or left"),
    ("bins|--variants|", "--variants needs at least one value"),
    ("fixed|--n|x", "invalid value 'x' for --n: expected an integer from 1 to 1000000"),
    (
        "fixed|--lambda|1",
        "invalid value '1' for --lambda: expected a utilisation with 0 < load < 1 (at least 1e-6)",
    ),
    ("fixed|--lambda|0.5,0.5", "--lambda lists '0.5' twice"),
    ("fixed|--d|101", "invalid value '101' for --d: expected an integer from 1 to 100"),
    (
        "fixed|--precision|0.01|--max-requests|1e3",
        "invalid value '1e3' for --max-requests: expected an integer from --requests (5000000) to 1000000000000",
    ),
    (
        "homo|--servers|1.5",
        "invalid value '1.5' for --servers: expected an integer from 1 to 1000000",
    ),
    ("homo|--loads|0.5,,0.7", "--loads has an empty item in '0.5,,0.7'"),
    (
        "homo|--policies|jsq-local",
        "invalid value 'jsq-local' for --policies: not available in this command; valid here: random, rr, swrr, pNc (p2c, p3c, ... N from 2 to 100), p2c-repl, jsq, p2c-pewma, least-request, least-conn, random-two, aperture, jiq, ring-hash, maglev, wrr-orca, prequal, c3, least-latency",
    ),
    ("homo|--policies|p2c,p2c", "--policies lists 'p2c' twice"),
    ("homo|--tau|0", "invalid value '0' for --tau: expected a time constant > 0"),
    (
        "homo|--baseline|bogus",
        "invalid value 'bogus' for --baseline: expected one of --policies (random, rr, p2c, p2c-repl, p3c, jsq)",
    ),
    ("hetero|--slow|-1", "invalid value '-1' for --slow: expected an integer from 0 to 1000000"),
    ("hetero|--fast|x", "invalid value 'x' for --fast: expected an integer from 0 to 1000000"),
    ("hetero|--slow-rate|0", "invalid value '0' for --slow-rate: expected a rate from 1e-6 to 1e6"),
    (
        "hetero|--fast-rate|1e7",
        "invalid value '1e7' for --fast-rate: expected a rate from 1e-6 to 1e6",
    ),
    (
        "hetero|--load|1",
        "invalid value '1' for --load: expected a utilisation with 0 < load < 1 (at least 1e-6)",
    ),
    (
        "hetero|--policies|p0c",
        "invalid value 'p0c' for --policies: unknown policy; valid policies: random, rr, swrr, pNc (p2c, p3c, ... N from 2 to 100), p2c-repl, jsq, jsq-local, p2c-pewma, least-request, least-conn, random-two, aperture, jiq, ring-hash, maglev, wrr-orca, prequal, c3, least-latency",
    ),
    ("hetero|--tau|x", "invalid value 'x' for --tau: expected a time constant > 0"),
    (
        "hetero|--baseline|p3c",
        "invalid value 'p3c' for --baseline: expected one of --policies (random, rr, swrr, p2c, jsq, p2c-pewma)",
    ),
    ("stale|--servers|0", "invalid value '0' for --servers: expected an integer from 1 to 1000000"),
    (
        "stale|--load|x",
        "invalid value 'x' for --load: expected a utilisation with 0 < load < 1 (at least 1e-6)",
    ),
    (
        "stale|--periods|0.0001",
        "invalid value '0.0001' for --periods: expected 0 (live) or a period >= 0.001",
    ),
    ("stale|--periods|", "--periods needs at least one value"),
    ("stale|--policies|p101c", "invalid value 'p101c' for --policies: pNc takes 2 <= N <= 100"),
    (
        "stale|--baseline|rr2",
        "invalid value 'rr2' for --baseline: expected one of --policies (random, p2c, p3c, jsq, jsq-local)",
    ),
    (
        "swrr|--trace|0",
        "invalid value '0' for --trace: expected comma-separated integer weights from 1 to 1000000",
    ),
    ("swrr|--weights|", "--weights needs at least one set"),
    (
        "swrr|--weights|1",
        "invalid value '1' for --weights: a set needs two servers or more (one server is picked every time)",
    ),
    ("swrr|--weights|1,2;;3,4", "--weights has an empty set in '1,2;;3,4'"),
    ("swrr|--weights|1,2;1,2", "--weights lists '1,2' twice"),
    ("hash|--servers|0", "invalid value '0' for --servers: expected an integer from 1 to 1000000"),
    ("hash|--keys|1.5", "invalid value '1.5' for --keys: expected an integer from 1 to 100000000"),
    ("hash|--vnodes|1,1", "--vnodes lists '1' twice"),
    (
        "hash|--methods|bogus",
        "invalid value 'bogus' for --methods: expected ring, maglev or modulo",
    ),
    (
        "hash|--balance|1.001",
        "invalid value '1.001' for --balance: expected a factor above 1 and at most 100 in whole percent (1.25 is HAProxy's hash-balance-factor 125)",
    ),
    (
        "subset|--clients|0",
        "invalid value '0' for --clients: expected an integer from 1 to 1000000",
    ),
    (
        "subset|--backends|x",
        "invalid value 'x' for --backends: expected an integer from 1 to 1000000",
    ),
    ("subset|--subsets|3,3", "--subsets lists '3' twice"),
    (
        "subset|--methods|bogus",
        "invalid value 'bogus' for --methods: expected random or deterministic",
    ),
    (
        "limit|--limiter|token-bucket:rate=0",
        "--limiter: admission.rate: expected a number > 0, got 0",
    ),
    (
        "limit|--limiter|token-bucket:rate=10,burst=1|--pattern|poisson",
        "--pattern: poisson: rate is missing",
    ),
    (
        "limit|--limiter|token-bucket:rate=10,burst=1|--duration|0",
        "invalid value '0' for --duration: a number > 0, at most 1e9",
    ),
    (
        "limit|--limiter|token-bucket:rate=10,burst=1|--capacity|x",
        "invalid value 'x' for --capacity: a number > 0, at most 1e9",
    ),
    (
        "run|examples/scenarios/hetero.toml|--set|foo|--print",
        "invalid value 'foo' for --set: expected KEY=VALUE",
    ),
    (
        "run|examples/scenarios/hetero.toml|--set|a..b=1|--print",
        "--set a..b=1: 'a..b' is not a dotted key",
    ),
    (
        "run|examples/scenarios/hetero.toml|--policies|p2c,,jsq|--print",
        "--policies has an empty item in 'p2c,,jsq'",
    ),
    (
        "run|examples/scenarios/hetero.toml|--admission|token-bucket|--print",
        "invalid value 'token-bucket' for --admission: admission.rate: missing (the limiter needs it)",
    ),
    (
        "run|examples/scenarios/hetero.toml|--series|s.csv|--series-window|0",
        "invalid value '0' for --series-window: expected a width > 0",
    ),
    (
        "run|examples/scenarios/hetero.toml|--baseline|bogus|--requests|100|--dry-run",
        "invalid value 'bogus' for --baseline: expected one of the scenario's policies (swrr, p2c, jsq, p2c-pewma)",
    ),
    (
        "run|examples/scenarios/hetero.toml|--max-requests|abc|--precision|0.1",
        "invalid value 'abc' for --max-requests: expected an integer from 2 to 1000000000000",
    ),
];

#[test]
fn every_command_option_refuses_a_bad_value_with_its_own_line() {
    for &(args, line) in BAD_VALUES {
        let args: Vec<&str> = args.split('|').collect();
        let out = lbsim(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(out.stdout.is_empty(), "{args:?}");
        assert_eq!(String::from_utf8_lossy(&out.stderr), format!("error: {line}\n"), "{args:?}");
    }
}

#[test]
fn the_shared_and_run_options_arrive_typed() {
    let argv = ["lbsim", "homo", "--seeds", "1e3", "--seed", "1_000", "--threads", "3"];
    let more =
        ["--shard", "1/4", "--requests", "2.5e3", "--warmup", "auto", "--quantiles", "50,99"];
    let cli = Cli::try_parse_from(argv.iter().chain(&more)).unwrap();
    let g = &cli.global;
    assert_eq!((g.seeds, g.seed, g.threads), (Some(1000), Some(1000), Some(3)));
    assert_eq!(g.shard, Some(lbsim::options::Shard { index: 1, count: 4 }));
    let lbsim::cli::Command::Homo(a) = &cli.command else { panic!("homo") };
    assert_eq!(a.run.requests, Some(2500));
    assert_eq!(a.run.warmup, Some(lbsim::options::WarmupArg::Auto));
    assert_eq!(a.run.queue_guard, 100_000);
    let columns: Vec<&str> =
        a.run.quantiles.as_ref().unwrap().0.iter().map(|q| q.column.as_str()).collect();
    assert_eq!(columns, ["p50", "p99"]);
}

#[test]
fn the_command_options_arrive_typed() {
    use lbsim::args::{HashMethod, Variant, Weights};
    use lbsim::cli::Command;
    use lbsim::policy::PolicyKind;
    let parse = |args: &[&str]| {
        Cli::try_parse_from(std::iter::once("lbsim").chain(args.iter().copied())).unwrap().command
    };
    let Command::Bins(a) = parse(&["bins", "--n", "1e3, 10", "--variants", "left"]) else {
        panic!("bins")
    };
    assert_eq!(
        (a.n.0, a.d.0, a.variants.0),
        (vec![1000, 10], vec![1, 2, 3, 4], vec![Variant::Left])
    );
    let Command::Homo(a) =
        parse(&["homo", "--policies", "p2c, jsq", "--tau", "5", "--baseline", " jsq"])
    else {
        panic!("homo")
    };
    assert_eq!(a.policies.0, [PolicyKind::PnC(2), PolicyKind::Jsq]);
    assert_eq!(
        (a.servers, a.tau, a.baseline.baseline.unwrap().kind),
        (100, 5.0, Some(PolicyKind::Jsq))
    );
    let Command::Swrr(a) = parse(&["swrr", "--trace", "5,1,1"]) else { panic!("swrr") };
    assert_eq!(a.trace, Some(Weights(vec![5, 1, 1])));
    let Command::Swrr(a) = parse(&["swrr", "--weights", "1,2;3,1,1"]) else { panic!("swrr") };
    assert_eq!(a.weights.unwrap().0, [vec![1, 2], vec![3, 1, 1]]);
    let Command::Hash(a) = parse(&["hash", "--methods", "maglev", "--balance", "1.25"]) else {
        panic!("hash")
    };
    assert_eq!((a.methods.0, a.balance, a.keys), (vec![HashMethod::Maglev], Some(1.25), 1_000_000));
    let Command::Limit(a) =
        parse(&["limit", "--limiter", "token-bucket:rate=10", "--pattern", "poisson:rate=5"])
    else {
        panic!("limit")
    };
    assert_eq!(a.limiter.unwrap().given, "token-bucket:rate=10");
    assert_eq!(a.pattern.unwrap().pattern, lbsim::workload::Pattern::Poisson { rate: 5.0 });
    let run =
        ["run", "x.toml", "--set", "a.b = 1", "--set", "c=d=e", "--policies", "p2c:x=1,y=2,jsq"];
    let Command::Run(a) = parse(&run) else { panic!("run") };
    let sets: Vec<(&str, &str)> =
        a.set.iter().map(|s| (s.key.as_str(), s.value.as_str())).collect();
    assert_eq!(sets, [("a.b", "1"), ("c", "d=e")]);
    assert_eq!(a.policies.unwrap().0, ["p2c:x=1,y=2", "jsq"]);
}

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

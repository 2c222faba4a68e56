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

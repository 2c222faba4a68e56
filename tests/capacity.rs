//! `lbsim capacity`: the answers against closed forms, determinism, and its refusals.
//!
//! Each answer comes with `value_lo,value_hi`, the bracket that bisection left around the
//! threshold. A probe is decided only when the 95% interval of its metric (Student t over the
//! replications) lies on one side of the target, so each decision is wrong with probability
//! about 2.5% at most, and those far from the threshold with far less; runs are fixed-seed, so
//! the assertions are exact for these seeds. The tolerance on each closed form is the bracket
//! itself, widened by the `--precision` asked (a wrong decision next to the threshold moves the
//! bracket by at most one bisection step of about that width).

use lbsim::theory::{mm1_quantile, mmn_mean};
use serde_json::Value;

use crate::util::{Dir, lbsim, lbsim_ok};

/// A homogeneous farm of `count` unit-rate servers with `slots` each, routed by `policies`.
fn scenario(dir: &Dir, count: u32, slots: u32, policies: &str, requests: u64) -> String {
    let text = format!(
        "name = \"capacity\"\npolicies = [{policies}]\n[farm]\n\
         groups = [{{ name = \"s\", count = {count}, rate = 1.0 }}]\nslots = {slots}\n\
         [run]\nrequests = {requests}\nwarmup = {}\nseeds = 5\n",
        requests / 10
    );
    dir.file("scenario.toml", &text)
}

/// The JSON rows of `lbsim capacity FILE args...`.
fn rows(file: &str, args: &[&str]) -> Vec<Value> {
    let mut all = vec!["capacity", file, "--format", "json", "-q"];
    all.extend_from_slice(args);
    let out: Value = serde_json::from_str(&lbsim_ok(&all)).unwrap();
    out["rows"].as_array().unwrap().clone()
}

/// The bracket `[value_lo, value_hi]` of a row.
fn bracket(row: &Value) -> (f64, f64) {
    (row["value_lo"].as_f64().unwrap(), row["value_hi"].as_f64().unwrap())
}

/// Asserts that `want` lies in the row's bracket widened by `precision`.
fn assert_brackets(row: &Value, want: f64, precision: f64) {
    let (lo, hi) = bracket(row);
    assert!(lo <= hi, "{row}");
    assert!(
        lo - precision <= want && want <= hi + precision,
        "{}: [{lo}, {hi}] +- {precision} misses {want}: {row}",
        row["target"]
    );
}

/// The load at which `f` (increasing) reaches `goal`, by bisection on [0, 1).
fn solve(f: impl Fn(f64) -> f64, goal: f64) -> f64 {
    let (mut lo, mut hi) = (0.0, 0.999_999);
    for _ in 0..100 {
        let mid = (lo + hi) / 2.0;
        if f(mid) <= goal { lo = mid } else { hi = mid }
    }
    lo
}

#[test]
fn random_routing_reaches_the_m_m_1_load_of_its_mean_and_p99_targets() {
    // Random routing of a Poisson stream over unit-rate servers makes each an M/M/1 queue,
    // whose sojourn is Exp(1 - rho): mean 1/(1 - rho) = 3 at rho = 2/3, and
    // p99 = ln(100)/(1 - rho) = 20 at rho = 1 - ln(100)/20 = 0.7697.
    let dir = Dir::new("capacity-mm1");
    let file = scenario(&dir, 10, 1, "\"random\"", 20_000);
    let precision = 0.005;
    let mean = rows(&file, &["--target", "mean=3"]);
    assert_eq!(mean[0]["over"], "arrivals.load");
    assert_brackets(&mean[0], 2.0 / 3.0, precision);
    assert_eq!(mean[0]["decided"], true, "{}", mean[0]);
    let (lo, hi) = bracket(&mean[0]);
    assert!(hi - lo <= precision, "bisected to --precision: {}", mean[0]);
    let p99 = rows(&file, &["--target", "p99=20", "--max-requests", "1280000"]);
    let want = 1.0 - 100f64.ln() / 20.0;
    assert!((solve(|r| mm1_quantile(r, 0.99), 20.0) - want).abs() < 1e-9);
    assert_brackets(&p99[0], want, precision);
}

#[test]
fn slots_share_a_queue_as_erlang_c_says() {
    // One server with 8 slots sharing its FIFO queue is M/M/8: mean sojourn
    // 1 + C(8, rho) / (8 (1 - rho)), which is 1.5 at rho = 0.8543.
    let dir = Dir::new("capacity-mmc");
    let file = scenario(&dir, 1, 8, "\"random\"", 50_000);
    let want = solve(|r| mmn_mean(8, r), 1.5);
    let row = &rows(&file, &["--target", "mean=1.5", "--max-requests", "2e6"])[0];
    assert_brackets(row, want, 0.005);
    // At 5 arrivals per unit time the mean is 1.59 with 6 slots and 1.16 with 7: far on either
    // side of 1.5 (tens of interval widths at these run lengths), so 7 is the exact answer.
    assert!(mmn_mean(6, 5.0 / 6.0) > 1.5 && mmn_mean(7, 5.0 / 7.0) < 1.5);
    let slots =
        &rows(&file, &["--target", "mean=1.5", "--over", "farm.slots", "--set", "arrivals.rate=5"])
            [0];
    assert_eq!(slots["value"], 7, "{slots}");
    assert_eq!((slots["value_lo"].clone(), slots["value_hi"].clone()), (7.into(), 7.into()));
}

#[test]
fn the_fewest_servers_is_searched_downward_at_the_files_arrival_rate() {
    // 6 arrivals per unit time over n random M/M/1 servers: mean 1/(1 - 6/n) is 3 at n = 9
    // exactly, 4 at n = 8 and 2.5 at n = 10; jsq needs fewer (7: its mean at load 6/7 on 7
    // servers is below 3, as the M/M/7 bound 1.33 and the simulation both say).
    let dir = Dir::new("capacity-count");
    let file = scenario(&dir, 10, 1, "\"random\", \"jsq\"", 20_000);
    let args = ["--target", "mean=3", "--over", "farm.groups.0.count", "--set", "arrivals.rate=6"];
    let rows = rows(&file, &args);
    let (lo, hi) = bracket(&rows[0]);
    assert!(lo <= 9.0 && (9.0..=10.0).contains(&hi), "{}", rows[0]);
    assert_eq!(rows[1]["value"], 7, "{}", rows[1]);
}

#[test]
fn capacity_is_the_same_whatever_the_threads() {
    let dir = Dir::new("capacity-threads");
    let file = scenario(&dir, 10, 1, "\"random\", \"p2c\"", 5_000);
    let run = |threads: &str| {
        lbsim_ok(&[
            "capacity",
            &file,
            "--target",
            "p99=20",
            "--format",
            "csv",
            "--threads",
            threads,
        ])
    };
    let one = run("1");
    assert!(one.starts_with("policy,target,over,value,value_lo,value_hi,seeds,"), "{one}");
    assert_eq!(one, run("2"));
}

#[test]
fn capacity_refuses_bad_input_with_one_line() {
    let dir = Dir::new("capacity-errors");
    let file = scenario(&dir, 10, 1, "\"random\"", 2_000);
    let out_dir = dir.0.to_string_lossy().into_owned();
    for (args, says) in [
        (vec!["--target", "latency=3"], "unknown metric 'latency'"),
        (vec!["--target", "mean=3", "--over", "arrivals.kind"], "not numeric"),
        (vec!["--target", "mean=3", "--over", "farm.groups.1.count"], "farm.groups.N.count"),
        (vec!["--target", "mean=3", "--plot", &out_dir], "--plot"),
        (vec!["--target", "success=0.9"], "[client]"),
    ] {
        let mut all = vec!["capacity", &file];
        all.extend_from_slice(&args);
        let out = lbsim(&all);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
    // A target that holds nowhere, or everywhere, in the searched range says so, with the range.
    let nowhere = &rows(&file, &["--target", "mean=0.5"])[0];
    assert_eq!(nowhere["value"], Value::Null);
    let note = nowhere["note"].as_str().unwrap();
    assert!(note.contains("holds nowhere in [0.01, 0.99]"), "{note}");
    let everywhere = &rows(&file, &["--target", "p50=1e6", "--policies", "jsq"])[0];
    let note = everywhere["note"].as_str().unwrap();
    assert!(note.contains("holds everywhere in [0.01, 0.99]"), "{note}");
    // It is a finding of the simulation, not bad input: status 0, the row on stdout and one
    // line on stderr that names the range.
    let out = lbsim(&["capacity", &file, "--target", "mean=0.5", "-q", "--format", "csv"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(err.starts_with("warning: ") && err.contains("holds nowhere in [0.01, 0.99]"), "{err}");
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 2, "the header and the row");
}

//! What the request lifecycle's outputs say (SPEC §11): the `success` and `goodput` lines of
//! `--series`, whole and sharded; `realised_load` when requests fail; a row where every request
//! fails; the shipped Linkerd and retry-storm examples. And the health view's `healthy` line
//! (SPEC §12), whole and sharded.

use crate::util::{Dir, column, lbsim, lbsim_ok};

/// The values of `metric` for `policy` in a series CSV whose leading column is `policy`, by
/// window start.
fn metric(series: &str, policy: &str, metric: &str) -> Vec<(f64, String)> {
    series
        .lines()
        .skip(1)
        .map(|l| l.split(',').collect::<Vec<_>>())
        .filter(|c| c[0] == policy && c[2] == metric)
        .map(|c| (c[1].parse().unwrap(), c[3].to_string()))
        .collect()
}

/// Round robin sends the slow backend of linkerd.toml every 11th request; from t = 15 to 45
/// its answers come 2 s late, so each of them times out 1 s after it was sent. A request counts
/// in the window where it ends: the first failures end in window 15 (a few) or 16, the last in
/// window 45, and from window 16 to 45 a window's success is 10/11 but for the Poisson noise of which requests end in it
/// (about 90 of 1000 per window and replication, 10 replications: the share sd is about 0.003;
/// 0.02 is over 6 sd). Before 15 and from 46 on, everything succeeds. goodput is there too,
/// near success but in windows 15 and 45 (where failures lag the 1 s timeout behind the
/// requests that arrive) and the last (cut short by the end of the arrivals).
#[test]
fn the_series_counts_a_request_where_it_ends() {
    let dir = Dir::new("outcomes-series");
    let file = dir.0.join("l.csv");
    let path = file.to_str().unwrap();
    let args = ["run", "examples/scenarios/linkerd.toml", "--policies", "rr", "--format", "csv"];
    lbsim_ok(&[&args[..], &["--series", path, "--series-window", "1"]].concat());
    let series = std::fs::read_to_string(&file).unwrap();
    let success = metric(&series, "rr", "success");
    assert_eq!(success.len(), metric(&series, "rr", "requests").len());
    for (t, s) in &success {
        let s: f64 = s.parse().unwrap_or_else(|_| panic!("window {t}: {s:?}"));
        if *t < 15.0 || *t >= 46.0 {
            assert_eq!(s, 1.0, "window {t}");
        } else if (16.0..=45.0).contains(t) {
            assert!((s - 10.0 / 11.0).abs() < 0.02, "window {t}: {s}");
        }
    }
    let goodput = metric(&series, "rr", "goodput");
    let steady = |t: f64| t < 59.0 && t != 15.0 && t != 45.0;
    for ((t, s), (_, g)) in success.iter().zip(&goodput).filter(|((t, _), _)| steady(*t)) {
        let (s, g): (f64, f64) = (s.parse().unwrap(), g.parse().unwrap());
        assert!((s - g).abs() < 0.1, "window {t}: success {s}, goodput {g}");
    }
}

/// Shards carry the windows' outcomes in their records: merged, the series is the whole run's.
#[test]
fn sharded_lifecycle_series_merge_to_the_whole() {
    let dir = Dir::new("outcomes-shards");
    let path = |name: &str| dir.0.join(name).to_str().unwrap().to_string();
    let base = [
        "run",
        "examples/scenarios/retry-storm.toml",
        "--set",
        "run.requests=5000",
        "--set",
        "farm.groups=[{ name = \"all\", count = 10, rate = 1.0 }]",
        "--seeds",
        "3",
        "--series-window",
        "10",
        "--series",
    ];
    lbsim_ok(&[&base[..], &[path("whole.csv").as_str(), "-o", &path("whole.txt")]].concat());
    let whole = std::fs::read(path("whole.csv")).unwrap();
    assert!(String::from_utf8_lossy(&whole).contains(",goodput,"));
    let mut files = Vec::new();
    for k in 0..2 {
        let out = path(&format!("shard{k}.jsonl"));
        let shard = format!("{k}/2");
        lbsim_ok(&[&base[..], &[path("x.csv").as_str(), "--shard", &shard, "-o", &out]].concat());
        files.push(out);
    }
    lbsim_ok(&["merge", &files[0], &files[1], "--series", &path("merged.csv")]);
    assert_eq!(std::fs::read(path("merged.csv")).unwrap(), whole);
}

/// realised_load counts every measured arrival, failed ones too (it read the successes only);
/// a row where every request fails prints no number where none is defined: `-` in the table,
/// an empty cell in CSV, null in JSON.
#[test]
fn a_row_where_every_request_fails_prints_no_undefined_number() {
    let dir = Dir::new("outcomes-fail");
    let file = dir.file(
        "fail.toml",
        "policies = [\"p2c\"]\n[farm]\ngroups = [{ count = 4, rate = 1.0, error = 1.0 }]\n\
         [arrivals]\nload = 0.5\n[run]\nrequests = 4000\nwarmup = 400\n",
    );
    let csv = lbsim_ok(&["run", &file, "--format", "csv"]);
    assert_eq!(column(&csv, "success"), ["0.0"]);
    // 5 x 4000 Poisson arrivals at 2 per unit time: the realised rate's sd is about 0.7%.
    let realised: f64 = column(&csv, "realised_load")[0].parse().unwrap();
    assert!((realised - 0.5).abs() < 0.02, "{csv}");
    for c in ["mean", "p50", "p99", "mean_ci95", "p99_ci95", "drift"] {
        assert_eq!(column(&csv, c), [""], "{c}: {csv}");
    }
    assert!(!csv.to_lowercase().contains("nan") && !csv.contains("inf"), "{csv}");
    let table = lbsim_ok(&["run", &file]);
    assert!(!table.to_lowercase().contains("nan"), "{table}");
    let json = lbsim_ok(&["run", &file, "--format", "json"]);
    let doc: serde_json::Value = serde_json::from_str(&json).unwrap();
    let row = &doc["rows"][0];
    assert!(row["mean"].is_null() && row["p99"].is_null(), "{row}");
    assert_eq!(row["success"], 0.0);
    // The series: windows where requests ended have a success of 0, never NaN.
    let series = dir.0.join("s.csv");
    lbsim_ok(&["run", &file, "--series", series.to_str().unwrap(), "--format", "csv"]);
    let text = std::fs::read_to_string(&series).unwrap();
    assert!(!text.to_lowercase().contains("nan"));
    assert!(metric(&text, "p2c", "success").iter().any(|(_, s)| s == "0"));
}

/// Round robin's success on linkerd.toml is exactly 1 - (1/11)(1/2) in expectation: the 95%
/// interval over 10 independent replications holds it, and is narrow enough to tell it from
/// the article's 95%.
#[test]
fn linkerd_round_robin_fails_one_request_in_22() {
    let successes: Vec<f64> = (1..=10)
        .map(|seed| {
            let csv = lbsim_ok(&[
                "run",
                "examples/scenarios/linkerd.toml",
                "--policies",
                "rr",
                "--seeds",
                "1",
                "--set",
                &format!("run.seed={seed}"),
                "--format",
                "csv",
            ]);
            column(&csv, "success")[0].parse().unwrap()
        })
        .collect();
    let n = successes.len() as f64;
    let mean = successes.iter().sum::<f64>() / n;
    let sd = (successes.iter().map(|s| (s - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
    let half = 2.262 * sd / n.sqrt(); // Student t, 9 degrees of freedom
    let exact = 1.0 - 1.0 / 22.0;
    assert!((mean - exact).abs() <= half, "{mean} +- {half} against {exact}");
    assert!(half < 0.001, "{half}");
}

/// The retry storm: without a budget the goodput stays near 0 long after capacity returns
/// (t = 200); with Envoy's 20% budget at load 0.7 it comes back to 1.
#[test]
fn the_retry_storm_outlasts_the_dip_without_a_budget() {
    let dir = Dir::new("outcomes-storm");
    let file = dir.0.join("s.csv");
    let out = lbsim(&[
        "run",
        "examples/scenarios/retry-storm.toml",
        "--set",
        "run.seeds=2",
        "--series",
        file.to_str().unwrap(),
        "--series-window",
        "50",
        "--format",
        "csv",
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let series = std::fs::read_to_string(&file).unwrap();
    let late = |load: &str, budget: &str| -> f64 {
        let rows: Vec<f64> = series
            .lines()
            .map(|l| l.split(',').collect::<Vec<_>>())
            .filter(|c| c[0] == load && c[1] == budget && c[4] == "goodput")
            .filter(|c| (300.0..=500.0).contains(&c[3].parse::<f64>().unwrap()))
            .map(|c| c[5].parse().unwrap())
            .collect();
        assert!(!rows.is_empty(), "{load} {budget}");
        rows.iter().sum::<f64>() / rows.len() as f64
    };
    assert!(late("0.7", "0.0") < 0.2, "{}", late("0.7", "0.0"));
    assert!(late("0.8", "0.0") < 0.2);
    assert!(late("0.7", "0.2") > 0.9, "{}", late("0.7", "0.2"));
}

/// A farm of 10 hosts at load 0.5, hosts 0-2 `down` from T = 500 for good; 4 clients, each
/// with least-request, a timeout of 30 and (`breaker`) a breaker of 5 failures that never
/// recovers.
fn breaker_farm(dir: &Dir, breaker: bool) -> String {
    let breaker = if breaker { "breaker = { failures = 5, recovery = 1e12 }\n" } else { "" };
    dir.file(
        &format!("down{}.toml", breaker.len()),
        &format!(
            "policies = [\"least-request\"]\n[farm]\ngroups = [{{ name = \"bad\", count = 3, \
             rate = 1.0 }}, {{ name = \"good\", count = 7, rate = 1.0 }}]\n[arrivals]\n\
             load = 0.5\n[info]\nclients = 4\n[client]\ntimeout = 30.0\n{breaker}[run]\n\
             requests = 6000\nwarmup = 200\nseeds = 3\n[[events]]\nat = 500.0\ngroup = \"bad\"\n\
             state = \"down\"\n"
        ),
    )
}

/// `healthy` is the fraction of hosts a client considers healthy, time-averaged over the window
/// and averaged over clients and replications; windows of 50 here.
/// - Before T no breaker opens: a failure would be a timeout, and an M/M/1 sojourn at load 0.5
///   exceeds 30 with probability e^-15 (3e-7), five in a row never: exactly 1.
/// - After T the 7 hosts left run at 0.71: a timeout has probability e^-8.6 (2e-4), five in a
///   row at one host about 1e-18, so no breaker of theirs opens: never below 0.7.
/// - When the breakers of the down hosts open: the requests a host held at T are lost and time
///   out by T + 30 (till then least-request sees them active and avoids the host). From then on
///   a down host refuses at once, holds nothing, and least-request (two draws with replacement,
///   ties at random) picks it with probability at least 0.01 + 0.18 / 2 = 0.1 per request of
///   its client until its breaker opens. A client sends 1.25 requests per unit time: in 300
///   units at least 300 with probability 1 - 5e-5 (Poisson of mean 375), and a host picked
///   fewer than 5 times in 300 requests at 0.1 has probability about 3e-9 — so from T + 330 on,
///   every client excludes exactly its 3 down hosts: 0.7, up to the rounding of the averages.
///   (Measured over 10 seeds: every breaker is open by T + 100, some 120 requests per client.)
/// - The window holding T is between the two.
///
/// Without a breaker (nor `[health]`) there is no view, and no `healthy` line.
#[test]
fn healthy_falls_to_the_hosts_left_once_the_breakers_open() {
    let dir = Dir::new("outcomes-healthy");
    let csv = dir.0.join("s.csv");
    let csv = csv.to_str().unwrap();
    let args = ["--series", csv, "--series-window", "50", "--format", "csv"];
    lbsim_ok(&[&["run", &breaker_farm(&dir, true)][..], &args].concat());
    let series = std::fs::read_to_string(csv).unwrap();
    let healthy = metric(&series, "least-request", "healthy");
    assert_eq!(healthy.len(), metric(&series, "least-request", "requests").len());
    assert!(healthy.len() >= 22, "about 1200 time units in windows of 50: {}", healthy.len());
    for (t, h) in &healthy {
        let h: f64 = h.parse().unwrap_or_else(|_| panic!("window {t}: {h:?}"));
        assert!(h > 0.7 - 1e-12, "window {t}: {h}");
        if *t < 500.0 {
            assert_eq!(h, 1.0, "window {t}");
        } else if *t >= 850.0 {
            assert!((h - 0.7).abs() < 1e-12, "window {t}: {h}");
        } else if *t == 500.0 {
            assert!(h > 0.7 && h < 1.0, "window {t}: {h}");
        }
    }
    lbsim_ok(&[&["run", &breaker_farm(&dir, false)][..], &args].concat());
    let series = std::fs::read_to_string(csv).unwrap();
    assert!(series.contains(",goodput,") && !series.contains("healthy"), "{series}");
}

/// Shards carry the windows' health in their records: merged, the series is the whole run's.
#[test]
fn sharded_healthy_series_merge_to_the_whole() {
    let dir = Dir::new("outcomes-healthy-shards");
    let path = |name: &str| dir.0.join(name).to_str().unwrap().to_string();
    let file = breaker_farm(&dir, true);
    let base = ["run", file.as_str(), "--series-window", "50", "--series"];
    lbsim_ok(&[&base[..], &[path("whole.csv").as_str(), "-o", &path("whole.txt")]].concat());
    let whole = std::fs::read(path("whole.csv")).unwrap();
    assert!(String::from_utf8_lossy(&whole).contains(",healthy,0.7"));
    let mut files = Vec::new();
    for k in 0..2 {
        let out = path(&format!("shard{k}.jsonl"));
        let shard = format!("{k}/2");
        lbsim_ok(&[&base[..], &[path("x.csv").as_str(), "--shard", &shard, "-o", &out]].concat());
        files.push(out);
    }
    lbsim_ok(&["merge", &files[0], &files[1], "--series", &path("merged.csv")]);
    assert_eq!(std::fs::read(path("merged.csv")).unwrap(), whole);
}

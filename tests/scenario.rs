//! Scenario files: `lbsim run`, `--set`, sweeps, errors that name the key and line, and the
//! `--print-scenario` round trip of the built-in commands.

use std::path::PathBuf;

use crate::util::{Dir, column, lbsim, lbsim_ok};

#[test]
fn print_scenario_runs_to_the_same_numbers() {
    let dir = Dir::new("scenario-round-trip");
    for command in [
        &["homo", "--requests", "1e5", "--warmup", "1e4"][..],
        &["hetero", "--requests", "1e5", "--warmup", "1e4"],
        &["stale", "--requests", "1e5", "--warmup", "1e4", "--periods", "0,2,20"],
    ] {
        let toml = lbsim_ok(&[command, &["--print-scenario"]].concat());
        let file = dir.file(&format!("{}.toml", command[0]), &toml);
        let direct = lbsim_ok(&[command, &["--format", "csv", "-q"]].concat());
        let via = lbsim_ok(&["run", &file, "--format", "csv", "-q"]);
        for c in ["policy", "mean", "p99", "max_queue", "mean_ci95", "p99_ci95", "steady"] {
            assert_eq!(column(&direct, c), column(&via, c), "{}: column {c}", command[0]);
        }
    }
}

#[test]
fn fixed_prints_a_scenario_with_its_mean_sojourns() {
    // fixed's rows are levels; its mean sojourn per (d, lambda) is the run's mean per policy.
    let dir = Dir::new("scenario-fixed");
    let command = ["fixed", "--n", "100", "--d", "1,2", "--requests", "1e5", "--warmup", "1e4"];
    let file = dir.file("fixed.toml", &lbsim_ok(&[&command[..], &["--print-scenario"]].concat()));
    let direct = lbsim_ok(&[&command[..], &["--format", "csv", "-q"]].concat());
    let via = lbsim_ok(&["run", &file, "--format", "csv", "-q"]);
    let first_levels: Vec<usize> = column(&direct, "i")
        .iter()
        .enumerate()
        .filter(|(_, i)| *i == "1")
        .map(|(k, _)| k)
        .collect();
    for c in ["mean", "mean_ci95"] {
        let fixed: Vec<String> =
            first_levels.iter().map(|&k| column(&direct, c)[k].clone()).collect();
        assert_eq!(fixed, column(&via, c), "column {c}");
    }
    assert_eq!(column(&via, "policy"), ["random", "p2c"]);
}

#[test]
fn a_sweep_is_a_grid_with_one_column_per_key() {
    let dir = Dir::new("scenario-sweep");
    let file = dir.file(
        "s.toml",
        r#"
policies = ["random", "p2c"]
[farm]
groups = [{ name = "a", count = 10, rate = 1.0 }]
[info]
kind = "board"
[run]
requests = 2e4
warmup = 2e3
seeds = 2
[sweep]
"arrivals.load" = [0.5, 0.8]
"info.period" = [0.0, 2.5, 5.0]
"#,
    );
    let out = lbsim_ok(&["run", &file, "--format", "csv", "-q", "--set", "run.seeds=3"]);
    let header = out.lines().next().unwrap();
    let expected = "arrivals.load,info.period,policy,seeds,mean,p50,p90,p99,p99.9,";
    assert!(header.starts_with(expected), "{header}");
    // Six points (the last key varies fastest), two policies each.
    let loads = column(&out, "arrivals.load");
    assert_eq!(loads.len(), 12);
    assert!(loads[..6].iter().all(|l| l == "0.5") && loads[6..].iter().all(|l| l == "0.8"));
    assert_eq!(column(&out, "info.period")[..6], ["0.0", "0.0", "2.5", "2.5", "5.0", "5.0"]);
    assert_eq!(column(&out, "policy")[..2], ["random", "p2c"]);
    assert!(column(&out, "seeds").iter().all(|s| s == "3"), "--set run.seeds wins");
    // random reads no board: the same numbers at every period of one load.
    let mean = column(&out, "mean");
    assert!(mean[0] == mean[2] && mean[2] == mean[4], "{mean:?}");
    // The last point run alone gives the same row (rows do not depend on each other).
    let alone = lbsim_ok(&[
        "run",
        &file,
        "--format",
        "csv",
        "-q",
        "--set",
        "run.seeds=3",
        "--set",
        "sweep={}",
        "--set",
        "arrivals.load=0.8",
        "--set",
        "info.period=5.0",
        "--policies",
        "p2c",
    ]);
    assert_eq!(column(&alone, "mean")[0], mean[11]);
}

#[test]
fn bad_files_name_the_key_and_the_line() {
    let dir = Dir::new("scenario-errors");
    let cases = [
        ("[farm]\nbogus = 3\n", ":2:", "bogus"),
        ("[run]\nrequests = 1.5\n", ":2:", "integer"),
        ("\n[arrivals]\nload = 1.5\n", ":3:", "arrivals.load"),
        ("policies = [\"p2c\", \"nope\"]\n", "", "unknown policy 'nope'"),
        ("[info]\nkind = \"board\"\n", "", "info.period"),
        ("[sweep]\n\"arrivals.load\" = []\n", "", "empty"),
        ("name = \n", ":1:", ""),
    ];
    for (i, (text, line, word)) in cases.iter().enumerate() {
        let file = dir.file(&format!("bad{i}.toml"), text);
        let out = lbsim(&["run", &file]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{text:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{text:?}: {err}");
        assert!(err.contains(&format!("bad{i}.toml{line}")), "{text:?}: {err}");
        assert!(err.contains(word), "{text:?}: {err}");
        assert!(out.stdout.is_empty());
    }
    let good = dir.file("good.toml", "");
    for set in ["arrivals.load=2", "nokey", "farm.groups.x=1", "run.requests=abc"] {
        let out = lbsim(&["run", &good, "--set", set]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "--set {set}: {err}");
        assert_eq!(err.lines().count(), 1, "--set {set}: {err}");
    }
    let out = lbsim(&["run", &dir.0.join("missing.toml").to_string_lossy()]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn print_shows_the_file_as_read_and_reads_back_the_same() {
    let dir = Dir::new("scenario-print");
    let file = dir.file("p.toml", "policies = [\"p2c-pewma:tau=5\"]\n[arrivals]\nrate = 45.0\n");
    let printed = lbsim_ok(&[
        "run",
        &file,
        "--print",
        "--set",
        "farm.groups=[{name=\"x\",count=50,rate=1.0}]",
    ]);
    assert!(printed.contains("rate = 45.0") && printed.contains("count = 50"), "{printed}");
    let again = dir.file("again.toml", &printed);
    assert_eq!(
        lbsim_ok(&["run", &again, "--print"]),
        printed,
        "the canonical form is a fixed point"
    );
}

#[test]
fn every_example_scenario_runs() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/scenarios");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    assert!(files.len() >= 4, "{files:?}");
    for f in files {
        let file = f.to_string_lossy();
        let out = lbsim(&[
            "run",
            &file,
            "-q",
            "--set",
            "run.requests=4000",
            "--set",
            "run.warmup=1000",
            "--set",
            "run.seeds=2",
            "--format",
            "csv",
        ]);
        assert!(out.status.success(), "{file}: {}", String::from_utf8_lossy(&out.stderr));
    }
}

#[test]
fn a_trace_of_a_poisson_stream_replays_as_poisson_and_to_the_same_bytes() {
    // 220,000 timestamps of a Poisson stream at 16 per unit time, on 20 rate-1 servers under
    // random: each server is M/M/1 at 0.8 (mean sojourn 5). Every replication replays the same
    // arrivals (only the demands and the coin flips differ), so the interval over replications
    // leaves out the arrivals' share of the variance: the tolerance is 3 half-widths.
    use lbsim::rng::StreamKey;
    use rand::RngExt;
    let dir = Dir::new("scenario-trace");
    let mut rng = StreamKey::new(5, "trace-test").rng();
    let mut t = 0.0;
    let mut csv = String::from("time\n");
    for _ in 0..220_000 {
        t += rng.sample::<f64, _>(rand_distr::Exp1) / 16.0;
        csv.push_str(&format!("{t}\n"));
    }
    dir.file("poisson.csv", &csv);
    let file = dir.file(
        "trace.toml",
        "policies = [\"random\"]\n[farm]\ngroups = [{ name = \"s\", count = 20, rate = 1.0 }]\n\
         [arrivals]\nkind = \"trace\"\nfile = \"poisson.csv\"\n[run]\nrequests = 2e5\nwarmup = 2e4\nseeds = 8\n",
    );
    let once = lbsim_ok(&["run", &file, "--format", "csv", "-q"]);
    assert_eq!(once, lbsim_ok(&["run", &file, "--format", "csv", "-q", "--threads", "1"]));
    let mean: f64 = column(&once, "mean")[0].parse().unwrap();
    let ci: f64 = column(&once, "mean_ci95")[0].parse().unwrap();
    assert!((mean - 5.0).abs() <= 3.0 * ci, "{mean} +- {ci}");
}

#[test]
fn a_warm_up_request_that_ties_with_the_first_measured_one_is_not_measured() {
    // One server, deterministic service 1, arrivals at 0, 10, 20, 20, 30, 40, 50, 60, warm-up 3:
    // the third arrival (warm-up) and the fourth (the first measured) both come at 20; the fourth
    // waits 1 behind the third. Measured sojourns 2, 1, 1, 1, 1: mean 6/5 exactly, in both halves
    // counted by index (first half: arrivals 3 and 4, mean 1.5; second: 5 to 7, mean 1).
    let dir = Dir::new("scenario-tie");
    dir.file("ties.csv", "time\n0\n10\n20\n20\n30\n40\n50\n60\n");
    let file = dir.file(
        "ties.toml",
        "policies = [\"random\"]\n[farm]\ngroups = [{ name = \"s\", count = 1, rate = 1.0 }]\n\
         [arrivals]\nkind = \"trace\"\nfile = \"ties.csv\"\n[service]\nkind = \"det\"\n\
         [run]\nrequests = 5\nwarmup = 3\nseeds = 1\n",
    );
    let csv = lbsim_ok(&["run", &file, "--format", "csv", "-q"]);
    assert_eq!(column(&csv, "mean"), ["1.2"], "{csv}");
    assert_eq!(column(&csv, "drift"), [(1.0 / 1.5).to_string()], "{csv}");
}

#[test]
fn groups_without_names_are_named_by_position() {
    // An unnamed group is `g0`, `g1`, ... by its place in the list; --print shows the names, and
    // an event may refer to a group by that name.
    let dir = Dir::new("scenario-group-names");
    let text = "[farm]\ngroups = [{ count = 10, rate = 1.0 }, { name = \"fast\", count = 5, \
                rate = 2.0 }, { count = 3, rate = 0.5 }]\n[[events]]\nat = 10.0\ngroup = \"g2\"\n\
                rate = 1.0\n";
    let file = dir.file("unnamed.toml", text);
    let printed = lbsim_ok(&["run", &file, "--print"]);
    for name in ["name = \"g0\"", "name = \"fast\"", "name = \"g2\""] {
        assert!(printed.contains(name), "{name} in {printed}");
    }
    let out = lbsim_ok(&["run", &file, "-q", "--format", "csv", "--set", "run.requests=2000"]);
    assert_eq!(column(&out, "policy"), ["random", "p2c", "jsq"]);
}

#[test]
fn a_group_count_is_read_like_every_count() {
    // `count = 1e2` is a TOML float that is an exact integer, read as `requests = 1e6` is; a count
    // that is not an integer is refused with one line naming the key and its line.
    let dir = Dir::new("scenario-group-count");
    let file = dir.file("c.toml", "[farm]\ngroups = [{ name = \"a\", count = 1e2, rate = 1.0 }]\n");
    let printed = lbsim_ok(&["run", &file, "--print"]);
    assert!(printed.contains("count = 100"), "{printed}");
    for (i, count) in ["1.5", "-3", "1e30"].iter().enumerate() {
        let text = format!("[farm]\ngroups = [{{ name = \"a\", count = {count}, rate = 1.0 }}]\n");
        let file = dir.file(&format!("bad{i}.toml"), &text);
        let out = lbsim(&["run", &file]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "count = {count}: {err}");
        assert_eq!(err.lines().count(), 1, "count = {count}: {err}");
        assert!(err.contains(":2:") && err.contains("count"), "count = {count}: {err}");
        assert!(err.contains("integer") || err.contains(">= 0"), "count = {count}: {err}");
    }
}

#[test]
fn uniform_and_bounded_pareto_service_are_read_and_checked() {
    // The two laws are scenario kinds; impossible parameters are refused naming the key.
    let dir = Dir::new("scenario-service-laws");
    for (kind, refused_key) in [
        ("kind = \"uniform\"\nlow = 0.5\nhigh = 1.5", None),
        ("kind = \"bounded-pareto\"\nalpha = 1.5\nhigh = 100.0", None),
        ("kind = \"uniform\"\nlow = -1.0\nhigh = 1.5", Some("service.low")),
        ("kind = \"uniform\"\nlow = 2.0\nhigh = 1.5", Some("service.high")),
        ("kind = \"bounded-pareto\"\nalpha = 1.5\nhigh = 1.0", Some("service.high")),
        ("kind = \"bounded-pareto\"\nalpha = 0.0\nhigh = 10.0", Some("service.alpha")),
        // A steep tail is a law like any other (its moments once overflowed to NaN).
        ("kind = \"bounded-pareto\"\nalpha = 3.0\nhigh = 30.0", None),
        // No mean-1 law: at alpha 0.01 the mean stays below 1 up to high = 1e9.
        ("kind = \"bounded-pareto\"\nalpha = 0.01\nhigh = 1e9", Some("service.high")),
    ] {
        let file = dir.file("s.toml", &format!("[service]\n{kind}\n"));
        let out = lbsim(&["run", &file, "-q", "--format", "csv", "--set", "run.requests=2000"]);
        let err = String::from_utf8_lossy(&out.stderr);
        match refused_key {
            None => {
                assert!(out.status.success(), "{kind}: {err}");
                let printed = lbsim_ok(&["run", &file, "--print"]);
                assert!(printed.contains(kind.lines().next().unwrap()), "{printed}");
            }
            Some(key) => {
                assert_eq!(out.status.code(), Some(2), "{kind}: {err}");
                assert_eq!(err.lines().count(), 1, "{kind}: {err}");
                assert!(err.contains(key), "{kind}: {err}");
            }
        }
    }
}

#[test]
fn weighted_random_is_a_parameter_of_random() {
    // On a farm where a uniform split overloads the slow servers, `random:weighted=true` keeps
    // every server at the load (M/M/1 at 0.8 each, checked against its closed form in
    // validation); a value other than true or false is refused naming the policy.
    let dir = Dir::new("scenario-weighted-random");
    let file = dir.file(
        "w.toml",
        "policies = [\"random\", \"random:weighted=true\"]\n[farm]\ngroups = [{ count = 20, \
         rate = 0.5 }, { count = 10, rate = 3.0 }]\n[arrivals]\nload = 0.8\n[run]\nrequests = \
         2e5\nwarmup = 2e4\nseeds = 3\n",
    );
    let out = lbsim_ok(&["run", &file, "-q", "--format", "csv"]);
    assert_eq!(column(&out, "policy"), ["random", "random:weighted=true"]);
    assert_eq!(column(&out, "steady"), ["false", "true"], "{out}");
    let mean: f64 = column(&out, "mean")[1].parse().unwrap();
    assert!((mean - 3.75).abs() < 0.5, "{out}");
    let bad = lbsim(&["run", &file, "--policies", "random:weighted=yes"]);
    let err = String::from_utf8_lossy(&bad.stderr);
    assert_eq!(bad.status.code(), Some(2), "{err}");
    assert!(err.contains("weighted must be true or false"), "{err}");
}

#[test]
fn a_trace_shorter_than_asked_says_so() {
    // 500 timestamps for a warm-up of 100 and 900 measured requests: 400 are measured, with a
    // warning on stderr and a note on each row of the table.
    let dir = Dir::new("scenario-short-trace");
    let times: Vec<String> = (0..500).map(|i| format!("{}", f64::from(i) * 0.1)).collect();
    dir.file("t.csv", &format!("time\n{}\n", times.join("\n")));
    let file = dir.file(
        "s.toml",
        "policies = [\"random\", \"p2c\"]\n[farm]\ngroups = [{ count = 20, rate = 1.0 }]\n\
         [arrivals]\nkind = \"trace\"\nfile = \"t.csv\"\n[run]\nwarmup = 100\nrequests = 900\n\
         seeds = 2\n",
    );
    let out = lbsim(&["run", &file, "-q"]);
    let err = String::from_utf8_lossy(&out.stderr);
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{err}");
    let want = "the trace holds 500 arrivals: 400 measured after the warm-up of 100, not the 900 \
                asked";
    assert_eq!(err.lines().filter(|l| l.contains(want)).count(), 1, "{err}");
    assert!(err.lines().all(|l| l.starts_with("warning: ")), "{err}");
    assert_eq!(table.lines().filter(|l| l.contains(want)).count(), 2, "{table}");
    // A trace long enough for what is asked says nothing.
    let quiet = lbsim(&["run", &file, "-q", "--requests", "400"]);
    assert!(quiet.status.success() && quiet.stderr.is_empty());
}

/// A refused `lbsim run`: exit 2, nothing on stdout, one line on stderr; the line.
fn run_refused(args: &[&str]) -> String {
    let out = lbsim(&[&["run"][..], args].concat());
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert!(out.stdout.is_empty(), "{args:?}");
    assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
    err
}

const SMALL: &str = "policies = [\"random\", \"p2c\"]\n[farm]\ngroups = [{ count = 4, rate = 1.0 }]\n\
                     [run]\nrequests = 2000\nwarmup = 100\nseeds = 2\n";

#[test]
fn run_refuses_hash_tables_and_rings_that_hash_refuses() {
    let dir = Dir::new("scenario-hash-limits");
    let file = dir.file("s.toml", "[farm]\ngroups = [{ count = 1e6, rate = 1.0 }]\n");
    // hash refuses Maglev's 65537-entry table on 10^6 servers; run says the same.
    let hash = String::from_utf8_lossy(
        &lbsim(&["hash", "--servers", "1e6", "--methods", "maglev"]).stderr,
    )
    .into_owned();
    let rule = "its table of 65537 entries takes at most";
    assert!(hash.contains(rule), "{hash}");
    let e = run_refused(&[&file, "--policies", "maglev"]);
    assert!(e.contains("policies") && e.contains("'maglev'") && e.contains(rule), "{e}");
    // 10^6 servers of 100 vnodes are 10^8 points: past the 10^7 that hash accepts per ring.
    let hash = String::from_utf8_lossy(
        &lbsim(&["hash", "--servers", "1e6", "--methods", "ring", "--vnodes", "100"]).stderr,
    )
    .into_owned();
    let rule = "points per ring; at most 10000000 are accepted";
    assert!(hash.contains(rule), "{hash}");
    let e = run_refused(&[&file, "--policies", "ring-hash"]);
    assert!(e.contains("'ring-hash'") && e.contains("100000000") && e.contains(rule), "{e}");
    // Within the limits, both are accepted (checked without simulating).
    let out = lbsim(&[
        "run",
        &file,
        "--policies",
        "ring-hash:vnodes=10,maglev:table=1000003",
        "--dry-run",
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn repeated_sweep_values_set_keys_and_parameters_are_refused_by_name() {
    let dir = Dir::new("scenario-duplicates");
    let sweep =
        dir.file("s.toml", &format!("{SMALL}[sweep]\n\"arrivals.load\" = [0.5, 0.7, 0.5]\n"));
    let e = run_refused(&[&sweep]);
    assert!(e.contains("sweep.\"arrivals.load\"") && e.contains("0.5 twice"), "{e}");
    // 1 and 1.0 are one value.
    let slots = dir.file("n.toml", &format!("{SMALL}[sweep]\n\"farm.slots\" = [1, 2, 1.0]\n"));
    let e = run_refused(&[&slots]);
    assert!(e.contains("farm.slots") && e.contains("twice"), "{e}");
    let file = dir.file("ok.toml", SMALL);
    let e = run_refused(&[&file, "--set", "arrivals.load=0.5", "--set", "arrivals.load = 0.6"]);
    assert!(e.contains("--set") && e.contains("'arrivals.load'") && e.contains("0.6"), "{e}");
    let e = run_refused(&[&file, "--policies", "p2c-pewma:tau=1,tau=2"]);
    assert!(e.contains("'tau'") && e.contains("tau=1") && e.contains("tau=2"), "{e}");
    let e = run_refused(&[&file, "--admission", "token-bucket:rate=5,burst=2,rate=6"]);
    assert!(e.contains("--admission") && e.contains("'rate'") && e.contains("rate=6"), "{e}");
}

#[test]
fn policy_names_are_trimmed_wherever_they_are_given() {
    let dir = Dir::new("scenario-trim");
    let spaced = SMALL.replace("[\"random\", \"p2c\"]", "[\"random\", \" p2c \"]");
    let file = dir.file("s.toml", &spaced);
    let csv = lbsim_ok(&["run", &file, "--format", "csv", "-q", "--baseline", " p2c"]);
    assert_eq!(column(&csv, "policy"), ["random", "p2c"]);
    let plain = dir.file("p.toml", SMALL);
    let listed = lbsim_ok(&["run", &plain, "--format", "csv", "-q", "--policies", "random, p2c "]);
    assert_eq!(column(&listed, "policy"), ["random", "p2c"]);
    assert_eq!(column(&listed, "mean"), column(&csv, "mean"));
}

#[test]
fn type_errors_name_the_file_line_and_key() {
    let dir = Dir::new("scenario-type-errors");
    for (text, want) in [
        ("policies = \"p2c\"\n", "s.toml:1: policies: expected a list, e.g. [\"p2c\"]"),
        ("name = \"a\"\npolicies = [\"p2c\"]\npolicies = [\"jsq\"]\n", "s.toml:3: policies: "),
        ("[farm]\nslots = 1\nslots = 2\n", "s.toml:3: farm.slots: "),
        ("[farm]\nslots = \"x\"\n", "s.toml:2: farm.slots: "),
        ("[run]\nseed = 1.5\n", "s.toml:2: run.seed: "),
        ("[farm]\ngroups = [{ count = 2, rate = \"x\" }]\n", "s.toml:2: farm.groups[0].rate: "),
        ("[run]\npolicies = [\"p2c\"]\n", "s.toml:2: run.policies: unknown field"),
    ] {
        let file = dir.file("s.toml", text);
        let e = run_refused(&[&file]);
        assert!(e.starts_with(&format!("error: {}", want.replace("s.toml", &file))), "{text}: {e}");
    }
}

#[test]
fn numbers_in_messages_are_short() {
    let dir = Dir::new("scenario-numbers");
    let file = dir.file("s.toml", SMALL);
    for set in ["arrivals.load=1e300", "farm.groups=[{ count = 4, rate = 1e300 }]"] {
        let e = run_refused(&[&file, "--set", set]);
        assert!(e.contains("1.000e300") && e.len() < 200, "{set}: {e}");
    }
    let e = run_refused(&[&file, "--set", "service={ kind = \"hyperexp\", scv = 1e-300 }"]);
    assert!(e.contains("1.000e-300") && e.len() < 200, "{e}");
}

#[test]
fn print_refuses_the_options_it_would_ignore() {
    let dir = Dir::new("scenario-print-options");
    let file = dir.file("s.toml", SMALL);
    for (extra, option) in [
        (&["--format", "csv"][..], "--format csv"),
        (&["--format", "json"], "--format json"),
        (&["--series", "x.csv"], "--series"),
        (&["--seeds", "3"], "--seeds"),
        (&["--seed", "3"], "--seed"),
    ] {
        let e = run_refused(&[&[file.as_str(), "--print"][..], extra].concat());
        assert!(e.contains(option) && e.contains("--print"), "{extra:?}: {e}");
    }
    assert!(lbsim_ok(&["run", &file, "--print"]).contains("seeds = 2"));
}

//! `--shard K/N` and `lbsim merge`: shards merged give the whole command's bytes, and shards that
//! do not make a whole are refused with one line and status 2.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};

use crate::util::{lbsim, lbsim_ok};

/// A fresh directory for one test's files.
fn scratch(name: &str) -> PathBuf {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("shard-{name}-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs shards `0..n` of `args`, each into its own file; returns the files in shard order.
fn shards(dir: &Path, args: &[&str], n: u64) -> Vec<PathBuf> {
    (0..n)
        .map(|k| {
            let file = dir.join(format!("shard-{k}-of-{n}.jsonl"));
            let shard = format!("{k}/{n}");
            let out = file.to_str().unwrap();
            let extra = ["--shard", shard.as_str(), "-o", out];
            let printed = lbsim_ok(&[args, &extra[..]].concat());
            assert!(printed.is_empty(), "a shard with -o prints nothing on stdout");
            file
        })
        .collect()
}

fn merge(files: &[&PathBuf], extra: &[&str]) -> Output {
    let mut args: Vec<&str> = vec!["merge"];
    args.extend(files.iter().map(|f| f.to_str().unwrap()));
    args.extend(extra);
    lbsim(&args)
}

fn merge_ok(files: &[&PathBuf], extra: &[&str]) -> String {
    let out = merge(files, extra);
    assert!(out.status.success(), "merge failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// `lbsim merge -` with `input` on stdin.
fn merge_stdin(input: &[u8], extra: &[&str]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_lbsim"))
        .args([&["merge", "-"], extra].concat())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input).unwrap();
    child.wait_with_output().unwrap()
}

/// The JSON output without its `run` object (wall time), and that object's event count.
fn json_without_run(text: &str) -> (serde_json::Value, u64) {
    let mut v: serde_json::Value = serde_json::from_str(text).unwrap();
    let run = v.as_object_mut().unwrap().remove("run").expect("a run object");
    (v, run["events"].as_u64().unwrap())
}

/// For N = 1, 3 and 7: the shards merged, in shard order, in reverse order and through stdin,
/// print the whole command's table and CSV byte for byte (and its JSON, `run` timing apart).
///
/// Three replications or more: the sum of two floats does not depend on their order, the sum of
/// three does, so a merge that added replications out of order would show.
fn merged_equals_whole(name: &str, args: &[&str]) {
    let dir = scratch(name);
    let table = lbsim_ok(args);
    let csv = lbsim_ok(&[args, &["--format", "csv"]].concat());
    let json = lbsim_ok(&[args, &["--format", "json"]].concat());
    assert!(csv.lines().count() > 2, "{name}: the test needs several rows:\n{csv}");
    for n in [1, 3, 7] {
        let files = shards(&dir, args, n);
        let in_order: Vec<&PathBuf> = files.iter().collect();
        let reversed: Vec<&PathBuf> = files.iter().rev().collect();
        assert_eq!(merge_ok(&in_order, &[]), table, "{name}: N = {n}, table");
        assert_eq!(merge_ok(&reversed, &["--format", "csv"]), csv, "{name}: N = {n}, reversed");
        let mut all = Vec::new();
        for f in files.iter().skip(1).chain(files.iter().take(1)) {
            all.extend(std::fs::read(f).unwrap());
        }
        let out = merge_stdin(&all, &["--format", "csv"]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(String::from_utf8(out.stdout).unwrap(), csv, "{name}: N = {n}, stdin");
        if n == 3 {
            let merged = merge_ok(&reversed, &["--format", "json"]);
            assert_eq!(json_without_run(&merged), json_without_run(&json), "{name}: JSON");
            let file = dir.join("merged.csv");
            let printed = merge_ok(&in_order, &["--format", "csv", "-o", file.to_str().unwrap()]);
            assert!(printed.is_empty());
            assert_eq!(std::fs::read_to_string(&file).unwrap(), csv, "{name}: -o");
        }
    }
}

#[test]
fn homo_shards_merge_to_the_whole() {
    merged_equals_whole(
        "homo",
        &[
            "homo",
            "--loads",
            "0.8,0.9",
            "--policies",
            "random,p2c,jsq",
            "--requests",
            "2000",
            "--warmup",
            "200",
            "--seeds",
            "3",
            "--quantiles",
            "50,99.9",
            "--baseline",
            "p2c",
        ],
    );
}

#[test]
fn stale_shards_merge_to_the_whole() {
    merged_equals_whole(
        "stale",
        &[
            "stale",
            "--servers",
            "20",
            "--periods",
            "0,2",
            "--policies",
            "random,jsq,jsq-local",
            "--requests",
            "2000",
            "--warmup",
            "200",
            "--seeds",
            "3",
        ],
    );
}

#[test]
fn fixed_shards_merge_to_the_whole() {
    merged_equals_whole(
        "fixed",
        &[
            "fixed",
            "--n",
            "20",
            "--d",
            "1,2",
            "--requests",
            "4000",
            "--warmup",
            "400",
            "--seeds",
            "3",
        ],
    );
}

#[test]
fn a_merge_draws_the_figure_of_the_whole() {
    let dir = scratch("plot");
    let args =
        ["stale", "--servers", "20", "--periods", "0,2", "--requests", "2000", "--seeds", "3"];
    let whole = dir.join("whole.svg");
    lbsim_ok(&[&args[..], &["--plot", whole.to_str().unwrap()]].concat());
    let files = shards(&dir, &args, 3);
    let merged = dir.join("merged.svg");
    merge_ok(&files.iter().collect::<Vec<_>>(), &["--plot", merged.to_str().unwrap()]);
    let svg = std::fs::read_to_string(&merged).unwrap();
    assert!(svg.contains("<svg"));
    assert_eq!(svg, std::fs::read_to_string(&whole).unwrap());
    // homo's figure too, from the merged rows: the bytes of the whole run's.
    let homo_args = small("2");
    let homo = shards(&dir, &homo_args, 2);
    let (whole, merged) = (dir.join("homo-whole.svg"), dir.join("homo-merged.svg"));
    lbsim_ok(&[&homo_args[..], &["--plot", whole.to_str().unwrap()]].concat());
    merge_ok(&homo.iter().collect::<Vec<_>>(), &["--plot", merged.to_str().unwrap()]);
    let read = |p: &PathBuf| std::fs::read_to_string(p).unwrap();
    assert_eq!(read(&merged), read(&whole));
    let bins = shards(&dir, &["bins", "--n", "100", "--seeds", "2"], 1);
    let refusal = merge(&[&bins[0]], &["--plot", merged.to_str().unwrap()]);
    refused(&refusal, "fixed, stale, homo, hetero, run and capacity only");
}

/// `capacity`'s tasks are its policies, each bisected whole where its shard runs: the shards
/// merged give the whole command's bytes, and its figure. Three policies, so that with N = 7
/// some shards hold none.
#[test]
fn capacity_shards_merge_to_the_whole() {
    let dir = scratch("capacity");
    let file = dir.join("c.toml");
    std::fs::write(
        &file,
        "policies = [\"random\", \"p2c\", \"jsq\"]\n[farm]\ngroups = [{ count = 10, rate = 1.0 }]\n\
         [run]\nrequests = 2000\nwarmup = 200\nseeds = 3\n",
    )
    .unwrap();
    let file = file.to_str().unwrap();
    let args = ["capacity", file, "--target", "mean=3", "--max-requests", "8000"];
    merged_equals_whole("capacity", &args);
    let whole = dir.join("whole.svg");
    lbsim_ok(&[&args[..], &["--plot", whole.to_str().unwrap()]].concat());
    let files = shards(&dir, &args, 2);
    let merged = dir.join("merged.svg");
    merge_ok(&files.iter().collect::<Vec<_>>(), &["--plot", merged.to_str().unwrap()]);
    let read = |p: &PathBuf| std::fs::read_to_string(p).unwrap();
    assert_eq!(read(&merged), read(&whole));
}

#[test]
fn bins_shards_merge_to_the_whole() {
    merged_equals_whole("bins", &["bins", "--n", "100,1000", "--d", "1,2", "--seeds", "3"]);
}

#[test]
fn run_shards_merge_to_the_whole() {
    merged_equals_whole(
        "run",
        &[
            "run",
            "examples/scenarios/bursty.toml",
            "--set",
            "run.requests=2000",
            "--set",
            "run.warmup=200",
            "--set",
            "farm.groups=[{ name = \"s\", count = 20, rate = 1.0 }]",
            "--seeds",
            "3",
        ],
    );
}

/// Classes travel in the records: merged shards print the per-class rows byte for byte, with
/// the class disciplines (classes.toml sweeps fifo, priority and fair) and with the lifecycle
/// (classes-timeouts.toml: `[client]` timeouts, a class's own timeout, retries; its per-class
/// lifecycle columns).
#[test]
fn class_shards_merge_to_the_whole() {
    for (name, file) in [
        ("classes", "examples/scenarios/classes.toml"),
        ("classes-timeouts", "examples/scenarios/classes-timeouts.toml"),
    ] {
        let short = ["--set", "run.requests=2000", "--set", "run.warmup=200", "--seeds", "3"];
        merged_equals_whole(name, &[&["run", file][..], &short[..]].concat());
        // The series splits by class too: `merge --series` writes the whole run's bytes.
        let dir = scratch(&format!("{name}-series"));
        let path = |f: &str| dir.join(f).to_str().unwrap().to_string();
        let (whole, merged) = (path("whole.csv"), path("merged.csv"));
        let base =
            [&["run", file][..], &short[..], &["--series-window", "50", "--series"]].concat();
        lbsim_ok(&[&base[..], &[whole.as_str(), "-o", &path("table.txt")]].concat());
        let series = std::fs::read_to_string(&whole).unwrap();
        let head = "farm.discipline,policy,class,time,metric,value";
        assert!(series.starts_with(head), "{name}: {}", &series[..80]);
        assert!(series.contains(",batch,"), "{name}: lines of a class");
        let class_success =
            series.lines().any(|l| l.contains(",batch,") && l.contains(",success,"));
        assert_eq!(class_success, name == "classes-timeouts", "{name}: a class's success");
        let files = shards(&dir, &[&base[..], &[path("recorded.csv").as_str()]].concat(), 3);
        merge_ok(&files.iter().collect::<Vec<_>>(), &["--series", &merged]);
        assert_eq!(std::fs::read_to_string(&merged).unwrap(), series, "{name}: merged series");
    }
}

/// The lifecycle's counts travel in the records: merged shards print its columns byte for byte.
#[test]
fn lifecycle_shards_merge_to_the_whole() {
    merged_equals_whole(
        "lifecycle",
        &[
            "run",
            "examples/scenarios/retries.toml",
            "--set",
            "run.requests=2000",
            "--set",
            "run.warmup=200",
            "--seeds",
            "3",
        ],
    );
}

#[test]
fn hetero_shards_merge_to_the_whole() {
    let args = [
        "hetero",
        "--slow",
        "4",
        "--fast",
        "16",
        "--policies",
        "swrr,p2c,p2c-pewma",
        "--requests",
        "2000",
        "--warmup",
        "200",
        "--seeds",
        "3",
        "--format",
        "csv",
    ];
    let dir = scratch("hetero");
    let files = shards(&dir, &args[..args.len() - 2], 3);
    let files: Vec<&PathBuf> = files.iter().collect();
    assert_eq!(merge_ok(&files, &["--format", "csv"]), lbsim_ok(&args));
}

/// Status 2 and exactly one line on stderr, containing `what`; nothing on stdout.
fn refused(out: &Output, what: &str) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "expected status 2, stderr: {err}");
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(err.contains(what), "expected {what:?} in: {err}");
    assert!(out.stdout.is_empty());
}

const SMALL: [&str; 10] = [
    "homo",
    "--loads",
    "0.9",
    "--policies",
    "random,p2c",
    "--requests",
    "1000",
    "--warmup",
    "100",
    "--seeds",
];

fn small(seeds: &str) -> Vec<&str> {
    [&SMALL[..], &[seeds]].concat()
}

#[test]
fn a_missing_shard_is_named_with_its_tasks() {
    let dir = scratch("missing");
    let files = shards(&dir, &small("4"), 3);
    // 8 tasks: shard 1 of 3 holds 1, 4 and 7.
    refused(&merge(&[&files[0], &files[2]], &[]), "shard 1/3 missing: tasks 1, 4, 7");
    let out = merge_stdin(&std::fs::read(&files[2]).unwrap(), &[]);
    refused(&out, "shards 0/3, 1/3 missing: tasks 0, 1, 3, 4, 6, 7");
}

#[test]
fn a_doubled_shard_is_named_with_its_tasks() {
    let dir = scratch("doubled");
    let files = shards(&dir, &small("4"), 3);
    let copy = dir.join("copy.jsonl");
    std::fs::copy(&files[2], &copy).unwrap();
    let out = merge(&[&files[0], &files[1], &files[2], &copy], &[]);
    refused(&out, "shard 2/3 given twice");
    refused(&out, "tasks 2, 5");
    refused(&merge(&[&files[0], &files[1], &files[1], &files[2]], &[]), "shard 1/3 given twice");
}

#[test]
fn shards_of_different_commands_are_refused() {
    let dir = scratch("commands");
    let a = shards(&dir.join("a").tap_mkdir(), &small("4"), 2);
    let b = shards(&dir.join("b").tap_mkdir(), &small("3"), 2);
    refused(&merge(&[&a[0], &b[1]], &[]), "a shard of another command");
    let c = shards(&dir.join("c").tap_mkdir(), &small("4"), 3);
    refused(&merge(&[&a[0], &c[1]], &[]), "of another split");
    let bins = shards(&dir.join("d").tap_mkdir(), &["bins", "--n", "100", "--seeds", "4"], 2);
    refused(&merge(&[&a[0], &bins[1]], &[]), "a shard of another command");
}

#[test]
fn a_shard_of_another_command_is_refused_with_the_options_that_differ() {
    let dir = scratch("differ");
    let a = shards(&dir.join("a").tap_mkdir(), &small("2"), 2);
    let seed2 = [&small("2")[..], &["--seed", "2"]].concat();
    let b = shards(&dir.join("b").tap_mkdir(), &seed2, 2);
    let out = merge(&[&a[0], &b[1]], &[]);
    refused(&out, "a shard of another command");
    refused(&out, "this one gives `--seed 2` where");
    refused(&out, "gives nothing");
}

#[test]
fn shards_of_another_version_are_refused() {
    let dir = scratch("version");
    let files = shards(&dir, &small("2"), 2);
    let text = std::fs::read_to_string(&files[1]).unwrap();
    let ours = format!("\"lbsim\":\"{}\"", env!("CARGO_PKG_VERSION"));
    assert!(text.starts_with(&format!("{{\"manifest\":{{{ours}")));
    let old = dir.join("old.jsonl");
    std::fs::write(&old, text.replacen(&ours, "\"lbsim\":\"0.0.1\"", 1)).unwrap();
    refused(&merge(&[&files[0], &old], &[]), "raw records of lbsim 0.0.1");
    refused(&merge(&[&old, &files[0]], &[]), "raw records of lbsim 0.0.1");
}

#[test]
fn a_truncated_shard_is_refused() {
    let dir = scratch("truncated");
    let files = shards(&dir, &small("4"), 2);
    let text = std::fs::read_to_string(&files[1]).unwrap();
    // Cut inside the second task's record.
    let second = text.match_indices('\n').nth(1).unwrap().0;
    let cut = dir.join("cut.jsonl");
    std::fs::write(&cut, &text[..second + 200]).unwrap();
    refused(&merge(&[&files[0], &cut], &[]), "truncated");
    // Cut at a line boundary: the end record is missing.
    let lines: Vec<&str> = text.lines().collect();
    std::fs::write(&cut, lines[..lines.len() - 2].join("\n") + "\n").unwrap();
    refused(&merge(&[&files[0], &cut], &[]), "truncated: shard 1/2");
    // A damaged line is named by its number.
    let mut damaged: Vec<&str> = text.lines().collect();
    damaged[2] = "{\"task\":{\"index\":";
    std::fs::write(&cut, damaged.join("\n") + "\n").unwrap();
    refused(&merge(&[&files[0], &cut], &[]), "cut.jsonl:3: not a raw record");
    std::fs::write(&cut, "").unwrap();
    refused(&merge(&[&cut, &files[0]], &[]), "empty");
    refused(&merge_stdin(b"{\"manifest\":{\"lbsim\"", &[]), "not raw records");
}

#[test]
fn what_cannot_be_sharded_is_refused() {
    let base = small("2");
    let no_warmup = ["homo", "--loads", "0.9", "--requests", "1000", "--seeds", "2"];
    let with = |extra: &[&str]| lbsim(&[&no_warmup[..], extra, &["--shard", "0/2"]].concat());
    refused(&with(&["--warmup", "auto"]), "--warmup auto");
    refused(&with(&["--precision", "0.1"]), "--precision");
    refused(&with(&["--format", "csv"]), "give --format to lbsim merge");
    let stale = ["stale", "--requests", "1000", "--plot", "x.svg", "--shard", "0/2"];
    refused(&lbsim(&stale), "give --plot to lbsim merge");
    refused(&lbsim(&["swrr", "--shard", "0/2"]), "swrr");
    refused(&lbsim(&["homo", "--print-scenario", "--shard", "0/2"]), "--print");
    for bad in ["2/2", "1", "0/0", "a/b"] {
        refused(&lbsim(&["homo", "--shard", bad]), "--shard");
    }
    let dir = scratch("refused");
    let files = shards(&dir, &base, 1);
    refused(&merge(&[&files[0]], &["--seeds", "3"]), "--seeds does not apply to merge");
    refused(&merge(&[&files[0]], &["--shard", "0/1"]), "--shard does not apply to merge");
}

#[test]
fn a_merge_into_one_of_its_shards_is_refused_and_the_shard_kept() {
    let dir = scratch("into-a-shard");
    let files = shards(&dir, &small("2"), 2);
    let before = std::fs::read(&files[0]).unwrap();
    let link = dir.join("link.jsonl");
    std::os::unix::fs::symlink(&files[0], &link).unwrap();
    let hard = dir.join("hard.jsonl");
    std::fs::hard_link(&files[0], &hard).unwrap();
    for out in [&files[0], &link, &hard] {
        let out = merge(&[&files[0], &files[1]], &["-o", out.to_str().unwrap()]);
        refused(&out, "--out names a shard");
        assert_eq!(std::fs::read(&files[0]).unwrap(), before);
    }
    let second = std::fs::read(&files[1]).unwrap();
    let svg = merge(&[&files[0], &files[1]], &["--plot", files[1].to_str().unwrap(), "-o", "x"]);
    refused(&svg, "--plot names a shard");
    assert_eq!(std::fs::read(&files[1]).unwrap(), second);
}

trait Mkdir {
    fn tap_mkdir(self) -> Self;
}

impl Mkdir for PathBuf {
    fn tap_mkdir(self) -> Self {
        std::fs::create_dir_all(&self).unwrap();
        self
    }
}

#[test]
fn a_sweep_of_more_than_ten_thousand_replications_is_sharded() {
    // 20,000 replications in all (the old cap was 10,000 for the whole sweep, even when every
    // shard ran two of them); shard 4 of 10,000 runs tasks 4 and 10,004.
    let dir = scratch("many");
    let file = dir.join("s.jsonl");
    let args = ["homo", "--loads", "0.9", "--policies", "p2c", "--seeds", "20000"];
    let run = ["--requests", "100", "--warmup", "0", "--shard", "4/10000"];
    let out = [&args[..], &run[..], &["-o", file.to_str().unwrap()]].concat();
    lbsim_ok(&out);
    let text = std::fs::read_to_string(&file).unwrap();
    let tasks: Vec<&str> = text.lines().filter(|l| l.starts_with("{\"task\"")).collect();
    assert_eq!(tasks.len(), 2);
    assert!(tasks[1].starts_with("{\"task\":{\"index\":10004,"), "{}", &tasks[1][..40]);
    std::fs::remove_dir_all(&dir).unwrap();
    // What stays: 10^7 replications in all, refused with the option named.
    let over = lbsim(&["homo", "--loads", "0.9,0.95", "--policies", "p2c", "--seeds", "5000001"]);
    refused(&over, "--seeds 5000001");
    let text = String::from_utf8_lossy(&over.stderr);
    assert!(text.contains("at most 10000000"), "{text}");
}

#[test]
fn sharded_series_are_written_by_merge_series_only() {
    let dir = scratch("series");
    let path = |name: &str| dir.join(name).to_str().unwrap().to_string();
    let (whole, recorded) = (path("whole.csv"), path("recorded.csv"));
    let base = [
        "run",
        "examples/scenarios/bursty.toml",
        "--set",
        "run.requests=3000",
        "--set",
        "run.warmup=300",
        "--set",
        "farm.groups=[{ name = \"s\", count = 20, rate = 1.0 }]",
        "--seeds",
        "3",
        "--series-window",
        "5",
        "--series",
    ];
    lbsim_ok(&[&base[..], &[whole.as_str(), "-o", &path("table.txt")]].concat());
    let series = std::fs::read(&whole).unwrap();
    assert!(series.len() > 1000, "a series with windows");
    // The shards name a series file, carry their windows in their records and write none.
    let files = shards(&dir, &[&base[..], &[recorded.as_str()]].concat(), 2);
    assert!(!Path::new(&recorded).exists(), "a shard wrote the series file");
    // A merge without --series writes none, not even at the path the shards' command named.
    merge_ok(&[&files[0], &files[1]], &[]);
    assert!(!Path::new(&recorded).exists(), "merge wrote the shards' series file");
    // merge --series FILE writes the whole run's bytes.
    let merged = path("merged.csv");
    merge_ok(&[&files[0], &files[1]], &["--series", &merged]);
    assert_eq!(std::fs::read(&merged).unwrap(), series);
    // --series may not replace a shard, nor name the file --out writes.
    let first = std::fs::read(&files[0]).unwrap();
    let into = merge(&[&files[0], &files[1]], &["--series", files[0].to_str().unwrap()]);
    refused(&into, "--series names a shard");
    assert_eq!(std::fs::read(&files[0]).unwrap(), first);
    let both = merge(&[&files[0], &files[1]], &["--series", &merged, "-o", &merged]);
    refused(&both, "--series and --out name the same file");
    // Shards run without --series have no windows to write.
    let plain = shards(&dir, &small("2"), 1);
    refused(&merge(&[&plain[0]], &["--series", &merged]), "--series");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_task_whose_series_windows_were_changed_is_refused() {
    let dir = scratch("windows");
    let series = dir.join("series.csv").to_str().unwrap().to_string();
    let args = [
        "run",
        "examples/scenarios/bursty.toml",
        "--set",
        "run.requests=2000",
        "--set",
        "run.warmup=200",
        "--set",
        "farm.groups=[{ name = \"a\", count = 5, rate = 1.0 }, { name = \"b\", count = 15, rate = 1.0 }]",
        "--seeds",
        "2",
        "--series-window",
        "5",
        "--series",
        &series,
    ];
    let files = shards(&dir, &args, 2);
    let text = std::fs::read_to_string(&files[1]).unwrap();
    let bad = dir.join("bad.jsonl");
    // The window whose histogram uses the most buckets (written as [bucket, count] pairs).
    let busiest = |t: &mut serde_json::Value| -> Vec<serde_json::Value> {
        let windows = t["result"]["windows"]["latency"].as_array_mut().unwrap();
        let w = windows.iter_mut().max_by_key(|h| h.as_array().unwrap().len()).unwrap();
        std::mem::take(w.as_array_mut().unwrap())
    };
    let fewer = |t: &mut serde_json::Value| {
        let mut h = busiest(t);
        h.pop();
        t["result"]["windows"]["latency"][0] = h.into();
    };
    let disorder = |t: &mut serde_json::Value| {
        let mut h = busiest(t);
        assert!(h.len() > 2, "a histogram of several buckets");
        h.reverse();
        t["result"]["windows"]["latency"][0] = h.into();
    };
    // Line 2 holds task 1 of shard 1/2. Edited under its written checksum: the checksum tells.
    std::fs::write(&bad, edited(&text, 1, false, fewer)).unwrap();
    refused(
        &merge(&[&files[0], &bad], &[]),
        "bad.jsonl:2: task 1 of shard 1/2 is damaged: its checksum",
    );
    // With the checksum recomputed, the windows contradict the rest of the record.
    std::fs::write(&bad, edited(&text, 1, true, fewer)).unwrap();
    let out = merge(&[&files[0], &bad], &[]);
    refused(&out, "bad.jsonl:2: task 1 of shard 1/2 is damaged: its windows' histograms hold");
    std::fs::write(&bad, edited(&text, 1, true, disorder)).unwrap();
    refused(&merge(&[&files[0], &bad], &[]), "histogram has bucket");
    let uneven = |t: &mut serde_json::Value| {
        t["result"]["windows"]["picks"][0].as_array_mut().unwrap().push(0.into());
    };
    std::fs::write(&bad, edited(&text, 1, true, uneven)).unwrap();
    refused(&merge(&[&files[0], &bad], &[]), "not all of one farm's groups and servers");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Task line `line` (0-based) of `text` with its task object changed by `edit`, and its checksum
/// recomputed (`rehash`, as a forger would) or left as written.
fn edited(text: &str, line: usize, rehash: bool, edit: impl Fn(&mut serde_json::Value)) -> String {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let mut v: serde_json::Value = serde_json::from_str(&lines[line]).unwrap();
    let task = v["task"].as_object_mut().unwrap();
    let written = task.remove("xxh64").unwrap();
    let mut obj = serde_json::Value::Object(task.clone());
    if rehash {
        // Before the edit: the checksum is that of the task object without its xxh64 field.
        let again = xxhash_rust::xxh64::xxh64(obj.to_string().as_bytes(), 0);
        assert_eq!(written, format!("{again:016x}"), "the checksum's definition");
    }
    edit(&mut obj);
    let sum = if rehash {
        format!("{:016x}", xxhash_rust::xxh64::xxh64(obj.to_string().as_bytes(), 0)).into()
    } else {
        written
    };
    obj.as_object_mut().unwrap().insert("xxh64".into(), sum);
    lines[line] = serde_json::json!({ "task": obj }).to_string();
    lines.join("\n") + "\n"
}

#[test]
fn a_task_whose_numbers_were_changed_is_refused() {
    let dir = scratch("changed");
    let files = shards(&dir, &small("4"), 2);
    let text = std::fs::read_to_string(&files[1]).unwrap();
    let bad = dir.join("bad.jsonl");
    // Unchanged, and with a checksum recomputed over an unchanged record, it merges.
    std::fs::write(&bad, edited(&text, 2, true, |_| {})).unwrap();
    merge_ok(&[&files[0], &bad], &[]);
    let sum = |f: f64| move |t: &mut serde_json::Value| t["result"]["sum"] = (1.5 * f).into();
    let scaled = |t: &mut serde_json::Value| {
        let s = t["result"]["sum"].as_f64().unwrap();
        t["result"]["sum"] = (1.5 * s).into();
    };
    let requests = |t: &mut serde_json::Value| t["result"]["requests"] = 5.into();
    let hist = |t: &mut serde_json::Value| {
        t["result"]["hist"].as_array_mut().unwrap().pop();
    };
    // Changed numbers, valid JSON, the written checksum: line 3 holds task 3 of shard 1/2.
    for edit in [&scaled as &dyn Fn(&mut serde_json::Value), &requests, &hist] {
        std::fs::write(&bad, edited(&text, 2, false, edit)).unwrap();
        let out = merge(&[&files[0], &bad], &[]);
        refused(&out, "bad.jsonl:3: task 3 of shard 1/2 is damaged: its checksum");
        refused(&out, "is not that of its content");
    }
    // A checksum recomputed over fields that contradict each other.
    std::fs::write(&bad, edited(&text, 2, true, requests)).unwrap();
    let out = merge(&[&bad, &files[0]], &[]);
    refused(&out, "bad.jsonl:3: task 3 of shard 1/2 is damaged: its histogram holds");
    refused(&out, "but requests is 5");
    std::fs::write(&bad, edited(&text, 1, true, hist)).unwrap();
    refused(&merge(&[&files[0], &bad], &[]), "bad.jsonl:2: task 1 of shard 1/2 is damaged");
    std::fs::write(&bad, edited(&text, 1, true, sum(-1e308 / 1.5))).unwrap();
    refused(&merge(&[&files[0], &bad], &[]), "sum is -1e308, not a finite non-negative");
    // A record without its checksum.
    let bare = text.lines().nth(1).unwrap();
    let cut = bare.rfind(",\"xxh64\"").unwrap();
    let without = text.replacen(bare, &format!("{}}}}}", &bare[..cut]), 1);
    std::fs::write(&bad, without).unwrap();
    refused(
        &merge(&[&files[0], &bad], &[]),
        "bad.jsonl:2: task 1 of shard 1/2 is damaged: it has no checksum",
    );
}

#[test]
fn a_stop_reason_survives_a_merge_and_a_damaged_one_is_refused() {
    let dir = scratch("stopped");
    let args = [
        "homo",
        "--servers",
        "2",
        "--loads",
        "0.95",
        "--policies",
        "random",
        "--requests",
        "20000",
        "--warmup",
        "100",
        "--queue-guard",
        "10",
        "--seeds",
        "2",
    ];
    let table = lbsim_ok(&args);
    assert!(table.contains("stopped: a queue exceeded --queue-guard 10 at t = "), "{table}");
    let files = shards(&dir, &args, 2);
    assert_eq!(merge_ok(&[&files[0], &files[1]], &[]), table);
    let text = std::fs::read_to_string(&files[0]).unwrap();
    assert!(text.contains(r#""stopped":{"queue":{"guard":10,"t":"#), "{text}");
    let bad = dir.join("bad.jsonl");
    let write = |edit: &dyn Fn(&mut serde_json::Value)| {
        std::fs::write(&bad, edited(&text, 1, true, edit)).unwrap();
        merge(&[&bad, &files[1]], &[])
    };
    // A reason merge cannot read, checksum recomputed: the record is refused.
    let out = write(&|t| t["result"]["stopped"] = "stopped: a queue exceeded".into());
    refused(&out, "bad.jsonl:2: not a raw record");
    let out = write(&|t| t["result"]["stopped"] = serde_json::json!({"queue": {"guard": 10}}));
    refused(&out, "bad.jsonl:2: not a raw record");
    // A reason and a stop count that contradict each other.
    let out = write(&|t| t["result"]["stops"] = 0.into());
    refused(&out, "task 0 of shard 0/2 is damaged: stops is 0 but it was stopped: a queue");
    let out = write(&|t| t["result"]["stopped"] = serde_json::Value::Null);
    refused(&out, "task 0 of shard 0/2 is damaged: stops is 1 but it gives no stop reason");
    std::fs::remove_dir_all(&dir).unwrap();
}

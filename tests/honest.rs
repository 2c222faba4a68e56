//! Honest numbers: the steady-state verdict, stops, `--warmup auto`, `--precision`,
//! `--quantiles`, `--baseline`, and the types of `fixed`'s columns.

use lbsim::experiment::{Scenario, run_scenarios};
use lbsim::model::Farm;
use lbsim::policy::PolicyKind;
use lbsim::stats::compare::{paired_ci95, unpaired_ci95};

use crate::util::{Dir, common, lbsim, lbsim_ok, run_length};

/// A CSV output as a header and rows of cells.
struct Csv {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Csv {
    fn parse(text: &str) -> Csv {
        let mut lines = text.lines().map(|l| l.split(',').map(str::to_string).collect());
        Csv { header: lines.next().expect("a header"), rows: lines.collect() }
    }

    fn col(&self, name: &str) -> usize {
        self.header.iter().position(|c| c == name).unwrap_or_else(|| panic!("no column {name}"))
    }

    fn cells(&self, name: &str) -> Vec<&str> {
        let c = self.col(name);
        self.rows.iter().map(|r| r[c].as_str()).collect()
    }

    fn nums(&self, name: &str) -> Vec<f64> {
        self.cells(name).iter().map(|v| v.parse().unwrap_or(f64::NAN)).collect()
    }
}

fn run_csv(args: &[&str]) -> Csv {
    Csv::parse(&lbsim_ok(&[args, &["--format", "csv", "-q"]].concat()))
}

#[test]
fn a_warm_up_far_too_short_is_flagged_in_every_case_that_used_to_mislead() {
    // M/M/1 at 0.99 relaxes over ~40,000 time units; 110,000 arrivals on 100 servers last ~1,100.
    let homo = run_csv(&[
        "homo",
        "--loads",
        "0.99",
        "--policies",
        "random",
        "--requests",
        "1e4",
        "--seeds",
        "20",
    ]);
    assert_eq!(homo.cells("steady"), ["false"], "mean {:?}", homo.nums("mean"));
    // The same at 1000 servers in `fixed`: every level row carries the scenario's verdict.
    let fixed =
        run_csv(&["fixed", "--lambda", "0.99", "--d", "1", "--requests", "1e6", "--warmup", "1e5"]);
    assert!(fixed.cells("steady").iter().all(|&s| s == "false"));
    // hetero from empty: a warm-up effect, not instability; p2c is stable and not steady.
    let hetero = run_csv(&[
        "hetero",
        "--load",
        "0.95",
        "--policies",
        "swrr,p2c,p2c-pewma",
        "--requests",
        "1e4",
        "--warmup",
        "0",
    ]);
    assert_eq!(hetero.cells("steady"), ["false", "false", "false"]);
    assert_eq!(hetero.cells("stable"), ["true", "true", "true"]);
    // 330 arrivals on 1000 servers: nearly every request finds an idle server, so the series is
    // flat (mean ~1.1 against T_1 = 10) only because the farm has not begun to fill.
    let tiny = run_csv(&["fixed", "--d", "1", "--requests", "300", "--warmup", "30"]);
    assert!(tiny.cells("steady").iter().all(|&s| s == "false"), "mean {:?}", tiny.nums("mean"));
}

#[test]
fn rows_in_steady_state_are_not_flagged() {
    let homo = run_csv(&["homo", "--loads", "0.9"]);
    assert_eq!(homo.cells("steady"), ["true"; 6], "{:?}", homo.cells("policy"));
    let hetero = run_csv(&["hetero", "--policies", "p2c,jsq,p2c-pewma"]);
    assert_eq!(hetero.cells("steady"), ["true"; 3]);
    assert_eq!(hetero.cells("stopped"), ["0"; 3]);
}

#[test]
fn warmup_auto_reads_the_warm_up_from_the_output() {
    // Random at 0.95 from empty: the transient lasts ~2e5 arrivals; no warm-up is flagged.
    let base = ["homo", "--loads", "0.95", "--policies", "random", "--seeds", "10"];
    let none = run_csv(&[&base[..], &["--warmup", "0"]].concat());
    assert_eq!(none.cells("steady"), ["false"]);
    let auto = run_csv(&[&base[..], &["--warmup", "auto"]].concat());
    assert_eq!(auto.cells("steady"), ["true"]);
    // M/M/1 says 20; the interval (10 replications of 1e6) is about +-0.6.
    let (mean, ci) = (auto.nums("mean")[0], auto.nums("mean_ci95")[0]);
    assert!((mean - 20.0).abs() < 2.0 * ci, "{mean} +- {ci}");
}

#[test]
fn precision_doubles_until_the_target_and_threads_do_not_change_the_bytes() {
    let args = [
        "homo",
        "--loads",
        "0.9",
        "--policies",
        "p2c",
        "--requests",
        "1e5",
        "--precision",
        "0.01",
        "--format",
        "csv",
        "-q",
    ];
    let one = lbsim_ok(&[&args[..], &["--threads", "1"]].concat());
    let two = lbsim_ok(&[&args[..], &["--threads", "2"]].concat());
    assert_eq!(one, two);
    let csv = Csv::parse(&one);
    let (mean, ci) = (csv.nums("mean")[0], csv.nums("mean_ci95")[0]);
    assert!(ci <= 0.01 * mean, "{ci} > 1% of {mean}");
    let requests: u64 = csv.cells("requests")[0].parse().unwrap();
    // 1e5 requests give about +-2.3% here: the row had to double at least once.
    assert!(requests > 100_000, "{requests}");
    assert!(
        requests.is_multiple_of(100_000) && (requests / 100_000).is_power_of_two(),
        "{requests}"
    );
    assert_eq!(csv.cells("steady"), ["true"]);
}

#[test]
fn precision_that_cannot_be_met_is_said_on_stderr_and_in_the_row() {
    let out = lbsim(&[
        "homo",
        "--loads",
        "0.9",
        "--policies",
        "random",
        "--requests",
        "1e4",
        "--precision",
        "0.0001",
        "--max-requests",
        "4e4",
        "-q",
    ]);
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--precision 0.0001 not met"), "{err}");
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(table.contains("40000"), "the row says how far it doubled: {table}");
    for bad in [
        &["homo", "--precision", "0.01", "--seeds", "1"][..],
        &["homo", "--max-requests", "1e7"],
        &["homo", "--precision", "0"],
        &["homo", "--quantiles", "100"],
        &["homo", "--baseline", "jsq", "--policies", "p2c,rr"],
        &["fixed", "--quantiles", "50"],
    ] {
        let out = lbsim(bad);
        assert_eq!(out.status.code(), Some(2), "{bad:?}");
        assert_eq!(String::from_utf8_lossy(&out.stderr).lines().count(), 1, "{bad:?}");
    }
}

#[test]
fn quantile_columns_follow_the_list() {
    let csv = run_csv(&[
        "homo",
        "--loads",
        "0.9",
        "--policies",
        "p2c",
        "--requests",
        "1e5",
        "--quantiles",
        "50,99,99.9",
    ]);
    let tail: Vec<&str> = csv.header.iter().rev().take(3).rev().map(String::as_str).collect();
    assert_eq!(tail, ["p50", "p99.9", "note"], "p99 is not repeated; the note stays last");
    let (p50, p99, p999) = (csv.nums("p50")[0], csv.nums("p99")[0], csv.nums("p99.9")[0]);
    assert!(0.0 < p50 && p50 < p99 && p99 < p999, "{p50} {p99} {p999}");
}

#[test]
fn the_queue_guard_is_counted_and_its_queue_shown() {
    // random on the hetero farm overloads the slow servers; a guard of 50 stops every replication,
    // here inside the warm-up, where max_queue used to read 0.
    let csv = run_csv(&[
        "hetero",
        "--policies",
        "random",
        "--queue-guard",
        "50",
        "--warmup",
        "1e6",
        "--requests",
        "10",
    ]);
    assert_eq!(csv.cells("stopped"), ["5"]);
    assert_eq!(csv.cells("stable"), ["false"]);
    assert!(csv.nums("max_queue")[0] > 50.0, "{:?}", csv.cells("max_queue"));
}

#[test]
fn baseline_columns_are_relative_differences_and_the_baseline_is_zero() {
    let csv = run_csv(&[
        "homo",
        "--loads",
        "0.9",
        "--policies",
        "random,p2c",
        "--requests",
        "1e5",
        "--baseline",
        "random",
    ]);
    assert_eq!(csv.nums("mean_vs_base")[0], 0.0);
    let (mean, base) = (csv.nums("mean")[1], csv.nums("mean")[0]);
    assert!((csv.nums("mean_vs_base")[1] - (mean / base - 1.0)).abs() < 1e-12);
    assert!(csv.nums("mean_vs_base")[1] < -0.5, "p2c is far below random at 0.9");
}

#[test]
fn paired_intervals_are_narrower_where_replications_share_their_noise() {
    // Every policy sees the same arrivals and demands, so per-replication values of two policies
    // are correlated and the pairing removes the shared part. How much depends on the pair. Over
    // 20 replications (measured): the means of p2c-pewma and p2c correlate at about 0.96 and the
    // paired interval is about 5x narrower; the p99s of swrr and p2c correlate at only about 0.3
    // (swrr's tail comes from its own per-server arrival pattern), so pairing narrows that
    // interval by under 10%, not 3x.
    let mut rates = vec![0.5; 20];
    rates.resize(100, 1.0);
    let farm = Farm::new(rates, 0.8);
    let scenarios: Vec<Scenario> = ["p2c", "swrr", "p2c-pewma"]
        .iter()
        .map(|p| Scenario::live(farm.clone(), PolicyKind::parse(p).unwrap(), 10.0))
        .collect();
    let out = run_scenarios(&scenarios, &run_length(100_000, 1_000_000), &common(20, 1), &|| {});
    let (p2c, swrr, pewma) = (&out[0].summary, &out[1].summary, &out[2].summary);
    let mean_paired = paired_ci95(&pewma.rep_means, &p2c.rep_means).unwrap();
    let mean_unpaired = unpaired_ci95(&pewma.rep_means, &p2c.rep_means).unwrap();
    assert!(mean_unpaired > 3.0 * mean_paired, "{mean_unpaired} vs {mean_paired}");
    let p99_paired = paired_ci95(&swrr.rep_p99s, &p2c.rep_p99s).unwrap();
    let p99_unpaired = unpaired_ci95(&swrr.rep_p99s, &p2c.rep_p99s).unwrap();
    assert!(p99_paired < p99_unpaired, "{p99_paired} vs {p99_unpaired}");
}

#[test]
fn every_fixed_column_holds_one_type_and_rare_levels_say_so() {
    let csv = run_csv(&["fixed", "--d", "2", "--requests", "2e5", "--warmup", "2e4"]);
    assert!(csv.cells("i").iter().all(|i| i.parse::<u32>().is_ok()), "{:?}", csv.cells("i"));
    for c in ["sim", "theory", "mean", "mean_theory"] {
        assert!(csv.nums(c).iter().all(|x| x.is_finite()), "{c}");
    }
    for c in ["theory_in_ci", "steady"] {
        assert!(csv.cells(c).iter().all(|b| *b == "true" || *b == "false"), "{c}");
    }
    // The deepest levels of d = 2 at 0.9 (s_6 ~ 1e-3, s_7 ~ 1e-6) are not reached in every
    // replication of so short a run: no interval, rather than a zero-width one.
    let reached = csv.nums("reached");
    let ci = csv.cells("sim_ci95");
    assert!(reached.iter().any(|&r| r < 3.0));
    for (r, c) in reached.iter().zip(&ci) {
        assert_eq!(*r < 3.0, c.is_empty(), "reached {r}, ci '{c}'");
    }
}

#[test]
fn an_atom_reads_as_itself_and_no_quantile_reads_above_the_largest_sojourn() {
    // One server with 1000 slots at load 0.01 (10 requests in service on average, never 1000):
    // no request waits, so every sojourn is its demand. Deterministic service: every sojourn is
    // 1 (up to the rounding of departure minus arrival times, 1e-12 here), so every quantile is
    // 1; the histogram's bucket around 1 is 0.05% wide, and reading inside it used to give
    // 1.0002-1.0004. Bimodal with p = 0.01 and long = 5: the p99.9 lies in the atom at 5, the
    // largest sojourn there is; it cannot read above it, and reads within a bucket (0.1%) of it.
    let dir = Dir::new("honest-atoms");
    let scenario = |service: &str| {
        dir.file(
            &format!("{}.toml", service.split('"').nth(1).unwrap()),
            &format!(
                "policies = [\"random\"]\n[farm]\ngroups = [{{ name = \"s\", count = 1, rate = 1.0 }}]\n\
                 slots = 1000\n[arrivals]\nload = 0.01\n[service]\n{service}\n\
                 [run]\nrequests = 1e5\nwarmup = 1e3\nseeds = 2\n"
            ),
        )
    };
    let det = run_csv(&["run", &scenario("kind = \"det\"")]);
    for q in ["p50", "p90", "p99", "p99.9"] {
        let x = det.nums(q)[0];
        assert!((x - 1.0).abs() < 1e-9, "{q} = {x}");
    }
    let bimodal = run_csv(&["run", &scenario("kind = \"bimodal\"\np = 0.01\nlong = 5.0")]);
    let p999 = bimodal.nums("p99.9")[0];
    assert!((5.0 * (1.0 - 1e-3)..=5.0 + 1e-9).contains(&p999), "p99.9 = {p999}");
}

#[test]
fn csv_and_json_end_every_queueing_row_with_its_note() {
    // The short run at 0.99 is not steady (see above) and its table says why; CSV and JSON
    // carry the same words in a last `note` column, empty on a row with nothing to say.
    let args = ["homo", "--loads", "0.5,0.99", "--policies", "random", "--requests", "1e4"];
    let table = lbsim_ok(&[&args[..], &["-q"]].concat());
    let csv = run_csv(&args);
    assert_eq!(csv.header.last().map(String::as_str), Some("note"));
    let notes = csv.cells("note");
    assert_eq!(notes[0], "", "a steady row has nothing to say");
    assert!(notes[1].starts_with("not steady:"), "{notes:?}");
    assert!(table.lines().nth(3).unwrap().ends_with(notes[1]), "{table}");
    let json: serde_json::Value =
        serde_json::from_str(&lbsim_ok(&[&args[..], &["--format", "json", "-q"]].concat()))
            .unwrap();
    let rows = json["rows"].as_array().unwrap();
    assert_eq!(rows[0]["note"], "");
    assert_eq!(rows[1]["note"], notes[1]);
    // Every queueing command has the column; the others do not.
    for cmd in [
        &["hetero", "--policies", "p2c", "--requests", "1e4"][..],
        &["stale", "--periods", "1", "--policies", "p2c", "--requests", "1e4"],
        &["fixed", "--d", "2", "--requests", "1e4"],
    ] {
        assert_eq!(run_csv(cmd).header.last().map(String::as_str), Some("note"), "{cmd:?}");
    }
    assert_ne!(run_csv(&["bins", "--n", "100"]).header.last().map(String::as_str), Some("note"));
}

#[test]
fn a_drift_within_its_own_noise_is_not_a_false_alarm() {
    // M/M/1 at 0.9 (random on 10 servers), 2e4 warm-up and 2e4 measured: the warm-up is about
    // six relaxation times of a queue (1/(1-sqrt(0.9))^2 = 380 time units, 3,400 arrivals on the
    // farm), so the rows are steady, but each half of the measured window spans only about three
    // relaxation times and the halves of one replication differ by 10-30% from noise alone.
    // The fixed band [0.9, 1.1] flagged 6 of these 10 base seeds. A drift is now flagged only
    // when its 95% interval over the 5 replications excludes 1, which a stationary row does
    // with probability at most 5% (and MSER-5 may flag a few): with 10 fixed seeds, at most 2.
    let flagged: Vec<u64> = (1..=10)
        .filter(|seed| {
            let csv = run_csv(&[
                "homo",
                "--servers",
                "10",
                "--loads",
                "0.9",
                "--policies",
                "random",
                "--warmup",
                "2e4",
                "--requests",
                "2e4",
                "--seed",
                &seed.to_string(),
            ]);
            csv.cells("steady") != ["true"]
        })
        .collect();
    assert!(flagged.len() <= 2, "flagged seeds {flagged:?}");
}

#[test]
fn every_row_of_a_farm_that_changes_while_measured_says_so() {
    // Ten servers at load 0.5 (5 arrivals per unit time): the warm-up of 2e3 arrivals ends near
    // t = 400 and the 2e4 measured ones near t = 4,400. jsq absorbs a mild slowdown of two
    // servers without a trace in its series, so MSER-5 and the drift call it steady; a change at
    // t = 2,000 is inside the measured window all the same. The same change at t = 100, in the
    // warm-up, leaves the measured window to one farm.
    let dir = Dir::new("honest-events");
    let scenario = |at: &str| {
        dir.file(
            &format!("events-{at}.toml"),
            &format!(
                "policies = [\"jsq\", \"p2c\"]\n[farm]\ngroups = [{{ name = \"a\", count = 2, rate = 1.0 }}, \
                 {{ name = \"b\", count = 8, rate = 1.0 }}]\n[arrivals]\nload = 0.5\n\
                 [run]\nrequests = 2e4\nwarmup = 2e3\nseeds = 2\n\
                 [[events]]\nat = {at}\ngroup = \"a\"\nrate = 0.8\n"
            ),
        )
    };
    let inside = run_csv(&["run", &scenario("2000.0")]);
    assert_eq!(inside.cells("steady"), ["false", "false"]);
    for note in inside.cells("note") {
        assert!(note.starts_with("not stationary: the farm changes at t = 2000"), "{note}");
    }
    let before = run_csv(&["run", &scenario("100.0")]);
    assert_eq!(before.cells("steady"), ["true", "true"], "{:?}", before.cells("note"));
}

#[test]
fn a_mean_carried_by_demands_the_run_barely_draws_has_no_interval() {
    // Finite moments are not enough for a t interval. hyperexp scv = 1e9 draws its rare branch
    // (which carries half the mean demand and nearly all of E[S^2]) with probability about
    // 5e-10: 2e4 requests on 3 replications expect 3e-5 such draws, so the run reads the
    // frequent branch alone (a mean sojourn near 0.5, below the mean demand 1) and its interval,
    // a few thousandths wide, is false confidence. pareto alpha = 2.5 has E[S^3] infinite: the
    // wait's variance is infinite and replication means are not near normal at any length. The
    // previous code printed an interval on both rows. Each case is set against its neighbour
    // whose moments the run can measure: scv = 4 (about 7,000 rare draws) and alpha = 3.5.
    let dir = Dir::new("honest-tails");
    let scenario = |name: &str, service: &str| {
        dir.file(
            &format!("{name}.toml"),
            &format!(
                "policies = [\"jsq\"]\n[farm]\ngroups = [{{ count = 20, rate = 1.0 }}]\n\
                 [arrivals]\nload = 0.8\n[service]\n{service}\n\
                 [run]\nrequests = 2e4\nwarmup = 2e3\nseeds = 3\n"
            ),
        )
    };
    for (name, service, flagged) in [
        ("rare", "kind = \"hyperexp\"\nscv = 1e9", Some("the rare branch of hyperexp")),
        ("pareto25", "kind = \"pareto\"\nalpha = 2.5", Some("infinite variance of the wait")),
        ("frequent", "kind = \"hyperexp\"\nscv = 4.0", None),
        ("pareto35", "kind = \"pareto\"\nalpha = 3.5", None),
    ] {
        let file = scenario(name, service);
        let out = lbsim(&["run", &file, "--format", "csv", "-q"]);
        assert!(out.status.success(), "{name}");
        let csv = Csv::parse(&String::from_utf8(out.stdout).unwrap());
        let stderr = String::from_utf8(out.stderr).unwrap();
        let (ci, p99_ci, note) =
            (csv.cells("mean_ci95")[0], csv.cells("p99_ci95")[0], csv.cells("note")[0]);
        match flagged {
            Some(why) => {
                assert_eq!((ci, p99_ci), ("", ""), "{name}: {note}");
                assert!(note.starts_with(why) && note.contains("the mean reads low"), "{note}");
                assert!(stderr.contains(&format!("warning: {why}")), "{stderr}");
            }
            None => {
                assert!(ci.parse::<f64>().is_ok() && p99_ci.parse::<f64>().is_ok(), "{name}");
                assert!(!note.contains("reads low"), "{name}: {note}");
            }
        }
    }
    // The rare branch's mean sojourn is the frequent branch's alone: that is why it is flagged.
    let rare = run_csv(&["run", &scenario("rare", "kind = \"hyperexp\"\nscv = 1e9")]);
    assert!(rare.nums("mean")[0] < 0.6, "{:?}", rare.nums("mean"));
}

#[test]
fn a_run_shorter_than_its_bursts_cycle_is_not_steady_and_shows_its_realised_load() {
    // mmpp2 with ratio 50, high_time 100, low_time 1e5: a modulation cycle of 1.001e5. Ten
    // servers at load 0.8 take 8 arrivals per unit time, so 1e5 measured requests span about
    // 1.25e4, an eighth of one cycle: a replication most likely sees no burst at all and reads
    // the low phase's wait, which MSER-5 and the drift find flat (the previous code printed
    // steady = true with a tight interval). The same farm with cycles of 11 (high 1, low 10)
    // measures over a thousand cycles per replication and is not flagged for it.
    let dir = Dir::new("honest-mmpp");
    let scenario = |name: &str, high: &str, low: &str| {
        dir.file(
            &format!("{name}.toml"),
            &format!(
                "policies = [\"p2c\"]\n[farm]\ngroups = [{{ count = 10, rate = 1.0 }}]\n\
                 [arrivals]\nkind = \"mmpp2\"\nload = 0.8\nratio = 50.0\nhigh_time = {high}\n\
                 low_time = {low}\n[run]\nrequests = 1e5\nwarmup = 1e4\nseeds = 3\n"
            ),
        )
    };
    let long = run_csv(&["run", &scenario("long", "100.0", "1e5")]);
    assert_eq!(long.cells("steady"), ["false"], "{:?}", long.cells("note"));
    let note = long.cells("note")[0];
    assert!(
        note.contains("of the arrivals' modulation cycle") && note.contains("lengthen"),
        "{note}"
    );
    // The columns' contract: realised_load is new, after the others, and note stays last.
    assert_eq!(long.header.last().map(String::as_str), Some("note"));
    assert_eq!(long.col("realised_load"), long.header.len() - 2);
    assert!(long.nums("realised_load")[0].is_finite());
    let short = run_csv(&["run", &scenario("short", "1.0", "10.0")]);
    assert!(!short.cells("note")[0].contains("modulation cycle"), "{:?}", short.cells("note"));
    // Over 1,000 cycles per replication the realised load is the nominal one within 10%. The
    // high phase holds 1/11 of the time and 5/6 of the arrivals, so the realised rate moves
    // with the time spent high: over about 3,400 exponential high phases (three replications)
    // that time has a relative spread near sqrt(2/3400) = 2.4%, about 2% on the load; 10% is
    // five of those, and a load computed over the wrong span or capacity misses it by far more.
    let realised = short.nums("realised_load")[0];
    assert!((realised - 0.8).abs() < 0.08, "{realised}");
}

//! Traffic classes and the disciplines that schedule by class (SPEC §13), against the closed
//! forms of priority queueing and exact counts. Fixed seeds make every test deterministic.
//!
//! The farm is 50 rate-1 servers under `random`: random splitting of a Poisson stream whose
//! classes are drawn independently makes every server an M/G/1 queue fed by independent Poisson
//! streams, one per class, at `share_k * load`, so each class's mean sojourn is the single-server
//! formula. Tolerances are five standard errors of the mean of the replications' class means
//! (each replication is an independent run of its length, so their spread is the run length's
//! own noise); each test also checks that this tolerance is a small fraction of the value, so
//! that the comparison could fail (the alternatives it rules out lie well outside it).

use std::path::Path;

use lbsim::experiment::Scenario;
use lbsim::lifecycle::health::{Health, HostState, Outlier};
use lbsim::lifecycle::{Change, Client, Lifecycle};
use lbsim::model::{Class, Classes, Discipline, Farm, RateChange};
use lbsim::policy::PolicyKind;
use lbsim::stats::RepStats;
use lbsim::theory::mmn_mean;
use lbsim::workload::{Service, ServiceSpec};

use crate::util::{Dir, column, lbsim, lbsim_ok, pooled, replicate, run_length};

/// Two classes, `interactive` (priority 0) and `batch` (priority 1), with these shares and laws
/// (`None`: the scenario's `Exp(1)`) and weights.
fn two(shares: [f64; 2], laws: [Option<Service>; 2], weights: [f64; 2]) -> Classes {
    let class = |k: usize, name: &str| Class {
        name: name.into(),
        share: shares[k],
        priority: k as u32,
        weight: weights[k],
        service: laws[k].clone(),
        timeout: None,
    };
    Classes {
        classes: vec![class(0, "interactive"), class(1, "batch")],
        aging: None,
        slice: lbsim::model::DEFAULT_SLICE,
    }
}

fn farm(n: usize, load: f64, slots: u32, discipline: Discipline, classes: Classes) -> Scenario {
    let farm =
        Farm { slots, discipline, classes: Some(Box::new(classes)), ..Farm::homogeneous(n, load) };
    Scenario::live(farm, PolicyKind::Random, 10.0)
}

/// The mean over replications of `f` and five standard errors of it.
fn mean_and_tol(reps: &[RepStats], f: impl Fn(&RepStats) -> f64) -> (f64, f64) {
    let xs: Vec<f64> = reps.iter().map(f).collect();
    let k = xs.len() as f64;
    let m = xs.iter().sum::<f64>() / k;
    let var = xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (k - 1.0);
    (m, 5.0 * (var / k).sqrt())
}

/// Checks class `k`'s mean sojourn (and the pooled one, `k = None`) against `want`.
fn check(reps: &[RepStats], k: Option<usize>, want: f64, what: &str) {
    let (m, tol) = match k {
        Some(k) => mean_and_tol(reps, |r| r.classes[k].mean()),
        None => mean_and_tol(reps, RepStats::mean),
    };
    assert!(tol < 0.03 * want, "{what}: the run is too short to tell ({tol} on {want})");
    assert!((m - want).abs() < tol, "{what}: mean {m} vs {want} +- {tol}");
}

fn det() -> Service {
    ServiceSpec::Det.build(Path::new(".")).expect("det is valid")
}

/// Load 0.6 with shares 0.3 / 0.7: class loads 0.18 and 0.42 (sigma_0 = 0.18, sigma_1 = 0.6).
const LOAD: f64 = 0.6;
const SHARES: [f64; 2] = [0.3, 0.7];

#[test]
fn non_preemptive_priority_gives_cobhams_waits() {
    // Cobham (1954): W_k = W0 / ((1 - sigma_{k-1})(1 - sigma_k)), W0 = sum lambda_i E[S_i^2]/2.
    // Exp(1) for both: E[S^2] = 2, W0 = 0.6; T_0 = 1 + 0.6/0.82 = 1.732, T_1 = 1 + 0.6/(0.82 *
    // 0.4) = 2.829. FIFO would give both 2.5: 13% and 12% away, where the tolerance is < 3%.
    let sc = farm(50, LOAD, 1, Discipline::Priority, two(SHARES, [None, None], [1.0, 1.0]));
    let reps = replicate(sc, &run_length(100_000, 1_000_000), 8, 3);
    let (s0, s1) = (0.18, 0.6);
    let w0 = LOAD * 2.0 / 2.0;
    check(&reps, Some(0), 1.0 + w0 / (1.0 - s0), "class 0");
    check(&reps, Some(1), 1.0 + w0 / ((1.0 - s0) * (1.0 - s1)), "class 1");
    // Conservation: exponential service of equal mean, so the number present is M/M/1's.
    check(&reps, None, 1.0 / (1.0 - LOAD), "pooled");
}

#[test]
fn non_preemptive_priority_with_a_deterministic_class_is_m_g_1() {
    // Class 0 deterministic (E[S^2] = 1), class 1 Exp(1) (E[S^2] = 2): W0 = (0.18 * 1 + 0.42 *
    // 2)/2 = 0.51; T_0 = 1 + 0.51/0.82 = 1.622, T_1 = 1 + 0.51/(0.82 * 0.4) = 2.555. With both
    // exponential (the test above) they are 1.732 and 2.829: 7% and 11% away.
    let laws = [Some(det()), None];
    let sc = farm(50, LOAD, 1, Discipline::Priority, two(SHARES, laws, [1.0, 1.0]));
    let reps = replicate(sc, &run_length(100_000, 1_000_000), 8, 4);
    let w0 = (0.18 * 1.0 + 0.42 * 2.0) / 2.0;
    check(&reps, Some(0), 1.0 + w0 / 0.82, "deterministic class 0");
    check(&reps, Some(1), 1.0 + w0 / (0.82 * 0.4), "exponential class 1");
}

#[test]
fn preemptive_resume_priority_gives_its_closed_form() {
    // Preemptive resume (Kleinrock vol. 2, §3.7; Harchol-Balter ch. 32): T_k = E[S_k]/(1 -
    // sigma_{k-1}) + R_k / ((1 - sigma_{k-1})(1 - sigma_k)), R_k = sum_{i<=k} lambda_i E[S_i^2]/2.
    // (Written over one denominator the first term's numerator is E[S_k](1 - sigma_k).) Class 0
    // sees only itself: M/M/1 at 0.18, 1.220; class 1: 1/0.82 + 0.6/(0.82 * 0.4) = 3.049. The
    // non-preemptive values (1.732, 2.829) are 42% and 7% away.
    let sc =
        farm(50, LOAD, 1, Discipline::PriorityPreemptive, two(SHARES, [None, None], [1.0, 1.0]));
    let reps = replicate(sc, &run_length(100_000, 1_000_000), 8, 5);
    let (s0, s1) = (0.18, 0.6);
    check(&reps, Some(0), 1.0 + 0.18 / (1.0 - s0), "class 0");
    check(&reps, Some(1), 1.0 / (1.0 - s0) + LOAD / ((1.0 - s0) * (1.0 - s1)), "class 1");
    check(&reps, None, 1.0 / (1.0 - LOAD), "pooled");
}

/// `sc` with every server's rate set to `rate` at each `at` of `changes`, in order.
fn changing(mut sc: Scenario, changes: &[(f64, f64)]) -> Scenario {
    let n = sc.farm.rates.len();
    sc.farm.events =
        changes.iter().map(|&(at, rate)| RateChange { at, servers: 0..n, rate }).collect();
    sc
}

#[test]
fn a_rate_halved_at_time_zero_gives_the_closed_forms_at_the_new_rate() {
    // The arrival rate is taken from the rates at time 0 (load 0.3 of rate 1); every server
    // then works at 0.5 from the start, so each is M/M/1 with Exp demands of mean 2 at
    // utilisation 0.6: time scales by 2. Non-preemptive priority (Cobham): lambda = 0.3 per
    // server, E[S^2] = 8, W0 = 1.2, sigma_0 = 0.18, sigma_1 = 0.6: T_0 = 2 + 1.2/0.82 = 3.463,
    // T_1 = 2 + 1.2/(0.82 * 0.4) = 5.659; at the old rate they would be half that, and FIFO
    // gives both 5 (31% and 12% away, where the tolerance is < 3%). Fair and CFS, size-blind
    // and work-conserving with Exp demands of one mean, give M/M/1's pooled 1/(0.5 - 0.3) = 5
    // (at rate 1 it would be 1/0.7 = 1.43).
    let run = run_length(100_000, 1_000_000);
    let classes = || two(SHARES, [None, None], [3.0, 1.0]);
    let sc = changing(farm(50, 0.3, 1, Discipline::Priority, classes()), &[(0.0, 0.5)]);
    let reps = replicate(sc, &run, 8, 31);
    let w0 = 0.3 * 8.0 / 2.0;
    check(&reps, Some(0), 2.0 + w0 / 0.82, "class 0 at rate 0.5");
    check(&reps, Some(1), 2.0 + w0 / (0.82 * 0.4), "class 1 at rate 0.5");
    check(&reps, None, 5.0, "pooled at rate 0.5");
    for d in [Discipline::Fair, Discipline::Cfs] {
        let sc = changing(farm(50, 0.3, 1, d, classes()), &[(0.0, 0.5)]);
        check(&replicate(sc, &run, 8, 32), None, 5.0, &format!("{d:?} pooled at rate 0.5"));
    }
}

#[test]
fn a_mid_run_rate_change_under_every_class_discipline_conserves_counts() {
    // 50 servers at load 0.6 (30 arrivals a unit of time: 210,000 requests span about 7,000).
    // Every server halves its rate at 2,000 (utilisation 1.2: a backlog of about 0.1 a unit of
    // time per server builds for 500) and returns to 1 at 2,500. Exact counts: every measured
    // request leaves once, in its class, so the classes add up to the run's requests. The
    // slowdown shows: the pooled mean is above that of the same arrivals and demands at a
    // constant rate (backlogs of about 50 a server at 2,500, waited out by thousands of
    // requests, against a mean of 2.5 without it; the runs' arrivals are the same).
    let run = run_length(10_000, 200_000);
    let changes = [(2_000.0, 0.5), (2_500.0, 1.0)];
    for d in
        [Discipline::Priority, Discipline::PriorityPreemptive, Discipline::Fair, Discipline::Cfs]
    {
        let sc = farm(50, LOAD, 1, d, two(SHARES, [None, Some(det())], [3.0, 1.0]));
        let steady = pooled(&replicate(sc.clone(), &run, 2, 33));
        let slowed = pooled(&replicate(changing(sc, &changes), &run, 2, 33));
        assert_eq!(slowed.requests, 400_000, "{d:?}");
        assert_eq!(slowed.classes[0].requests + slowed.classes[1].requests, slowed.requests);
        assert_eq!(steady.classes[0].requests, slowed.classes[0].requests, "{d:?}");
        assert!(slowed.mean() > 1.5 * steady.mean(), "{d:?}: {} {}", slowed.mean(), steady.mean());
    }
}

#[test]
fn priority_with_slots_follows_m_m_c() {
    // Two rate-1 workers per server at utilisation 0.7 (shares 0.3 / 0.7: sigma_0 = 0.21,
    // sigma_1 = 0.7). With exponential service of equal mean every class sees the same
    // departure process of the c workers:
    // - non-preemptive (Cobham's M/M/c form): W_k = C(c, a)/(c mu) / ((1 - sigma_{k-1})(1 -
    //   sigma_k)), C the Erlang C probability of waiting, read from M/M/c's mean sojourn;
    // - preemptive resume: class 0 is an M/M/c queue alone at 0.21;
    // - either: the pooled mean is M/M/c's (the number present is M/M/c's birth-death chain).
    let (c, rho) = (2u32, 0.7);
    let wait = |s: f64| mmn_mean(c, s) - 1.0;
    for d in [Discipline::Priority, Discipline::PriorityPreemptive] {
        let sc = farm(50, rho, c, d, two(SHARES, [None, None], [1.0, 1.0]));
        let reps = replicate(sc, &run_length(100_000, 1_000_000), 8, 6);
        let (s0, s1) = (0.3 * rho, rho);
        let fifo_wait = wait(rho);
        if d == Discipline::Priority {
            check(&reps, Some(0), 1.0 + fifo_wait * (1.0 - rho) / (1.0 - s0), "M/M/2 class 0");
            let w1 = fifo_wait * (1.0 - rho) / ((1.0 - s0) * (1.0 - s1));
            check(&reps, Some(1), 1.0 + w1, "M/M/2 class 1");
        } else {
            check(&reps, Some(0), mmn_mean(c, s0), "M/M/2 preemptive class 0");
        }
        check(&reps, None, mmn_mean(c, rho), "M/M/2 pooled");
    }
}

/// The class disciplines that share a server's slots by weight.
const DISCIPLINES: [Discipline; 2] = [Discipline::Cfs, Discipline::Fair];

#[test]
fn fair_and_cfs_with_slots_follow_m_m_c() {
    // Two rate-1 slots a server at utilisation 0.7, classes of weights 3:1 with Exp(1) demands.
    // Both disciplines are work-conserving (a slot idles only when every request present is
    // running) and blind to demands, so the number present is M/M/c's birth-death chain
    // whatever the split between the classes: the pooled mean is M/M/2's, 1.96 (M/M/1 at 0.7
    // gives 3.33, 70% away, where the tolerance is < 3%).
    for d in DISCIPLINES {
        let sc = farm(50, 0.7, 2, d, two(SHARES, [None, None], [3.0, 1.0]));
        let reps = replicate(sc, &run_length(100_000, 1_000_000), 8, 41);
        check(&reps, None, mmn_mean(2, 0.7), &format!("{d:?} on two slots"));
    }
}

#[test]
fn classes_draw_from_their_own_stream() {
    // With classes that change nothing (FIFO, the scenario's service law), a run sees the same
    // requests as without classes: the pooled statistics are the same bits. Drawing the class
    // from the workload stream would shift every later gap and demand.
    let plain = Scenario::live(Farm::homogeneous(20, 0.8), PolicyKind::Random, 10.0);
    let classed = farm(20, 0.8, 1, Discipline::Fifo, two(SHARES, [None, None], [1.0, 1.0]));
    let run = run_length(10_000, 100_000);
    let (a, b) = (pooled(&replicate(plain, &run, 2, 9)), pooled(&replicate(classed, &run, 2, 9)));
    assert_eq!(a.sum.to_bits(), b.sum.to_bits());
    assert_eq!(a.quantile(0.99), b.quantile(0.99));
    // The classes split the requests by their shares: 0.3 of 200,000, binomial sd 205; 5 sd.
    let n0 = b.classes[0].requests as f64;
    assert!((n0 - 60_000.0).abs() < 1_025.0, "class 0 has {n0}");
    assert_eq!(b.classes[0].requests + b.classes[1].requests, b.requests);
}

#[test]
fn fair_and_cfs_with_slots_and_rate_changes_run_from_a_scenario_file() {
    // Refused before they were simulated: `fair` and `cfs` with more than one slot, and rate
    // changes under a class discipline. Each runs, its rows split by class.
    let dir = Dir::new("classes-slots");
    let events = "[[events]]\nat = 100.0\ngroup = \"g0\"\nrate = 0.8\n";
    for d in ["fair", "cfs", "priority-preemptive"] {
        let text = SCENARIO.replacen(
            "discipline = \"priority\"",
            &format!("discipline = \"{d}\"\nslots = 2"),
            1,
        );
        for text in [text.clone(), format!("{text}{events}")] {
            let csv = lbsim_ok(&["run", &dir.file("s.toml", &text), "--format", "csv"]);
            assert_eq!(column(&csv, "class"), ["all", "interactive", "batch"], "{d}");
        }
    }
}

const SCENARIO: &str = r#"
policies = ["p2c"]
[farm]
groups = [{ count = 10, rate = 1.0 }]
discipline = "priority"
[arrivals]
load = 0.7
[run]
requests = 20000
warmup = 2000
seeds = 2
[[classes]]
name = "interactive"
share = 0.2
priority = 0
[[classes]]
name = "batch"
share = 0.8
priority = 1
service = { kind = "det" }
"#;

#[test]
fn rows_split_by_class_after_policy() {
    let dir = Dir::new("classes-rows");
    let f = dir.file("c.toml", SCENARIO);
    let csv = lbsim_ok(&["run", &f, "--format", "csv"]);
    let header = csv.lines().next().unwrap();
    assert!(header.starts_with("policy,class,seeds,mean,"), "{header}");
    assert_eq!(column(&csv, "class"), ["all", "interactive", "batch"]);
    // Interactive requests wait less than the pooled mean, batch ones more.
    let means: Vec<f64> = column(&csv, "mean").iter().map(|m| m.parse().unwrap()).collect();
    assert!(means[1] < means[0] && means[0] < means[2], "{means:?}");
    let json = lbsim_ok(&["run", &f, "--format", "json"]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["rows"][2]["class"], "batch");
    let table = lbsim_ok(&["run", &f]);
    assert!(table.lines().next().unwrap().contains("class"), "{table}");
    // Without classes there is no class column.
    let plain =
        dir.file("p.toml", "policies = [\"p2c\"]\n[run]\nrequests = 1000\nwarmup = 0\nseeds = 1\n");
    let csv = lbsim_ok(&["run", &plain, "--format", "csv"]);
    assert!(!csv.lines().next().unwrap().contains("class"), "{csv}");
}

#[test]
fn bad_classes_are_refused_naming_the_key() {
    let dir = Dir::new("classes-bad");
    let cases = [
        ("share = 0.8", "share = 0.7", "classes: the shares sum to"),
        ("name = \"batch\"", "name = \"interactive\"", "classes[1].name: two classes are named"),
        ("priority = 1", "priority = 1\nnice = 20", "classes[1].nice: expected -20 to 19"),
        ("priority = 1", "priority = 1\nweight = 0.0", "classes[1].weight: expected a weight > 0"),
        ("priority = 1", "priority = 1\ntimeout = 0.0", "classes[1].timeout: expected a time > 0"),
        ("priority = 1", "priority = 1\ntimeout = -1.0", "classes[1].timeout: expected a time > 0"),
        (
            "service = { kind = \"det\" }",
            "service = { kind = \"erlang\", k = 0 }",
            "classes[1].service.k",
        ),
        (
            "discipline = \"priority\"",
            "discipline = \"fair\"\naging = 5.0",
            "farm.aging: applies to discipline = \"priority\"",
        ),
    ];
    for (from, to, want) in cases {
        let text = SCENARIO.replacen(from, to, 1);
        let f = dir.file("bad.toml", &text);
        let out = lbsim(&["run", &f]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{to}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(err.contains(want), "{to}: {err}");
    }
    let f = dir.file("none.toml", "[farm]\ndiscipline = \"priority\"\n");
    let err = String::from_utf8_lossy(&lbsim(&["run", &f]).stderr).into_owned();
    assert!(
        err.contains("farm.discipline: \"priority\" schedules by class: add [[classes]]"),
        "{err}"
    );
}

#[test]
fn aging_bounds_the_lowest_class_wait_where_plain_priority_lets_it_grow() {
    // 10 servers under random at load 0.9, deterministic demands of 1; class 0 has 90% of the
    // requests (sigma_0 = 0.81), class 1 the rest at priority 1. With aging A, a class-1 request
    // that has waited A is at level 0, and from then on only requests that arrived before it
    // are served first (a tie of levels goes to the earlier arrival), plus at most the one
    // request in service then (non-preemptive, work <= 1). Their work is at most V(a), the
    // work present at its arrival, which is the same under every work-conserving discipline
    // and is its FIFO wait: its sojourn is at most A + 1 + its FIFO sojourn (the same requests,
    // dispatched the same way: the class and the server come from their own streams). So the
    // bound is exact, per replication, at every run length. Plain priority has no such bound:
    // a class-1 request waits out the class-0 work that keeps arriving (a delay cycle about
    // 1/(1 - 0.81) = 5 times its FIFO wait), and its maximum grows with the run.
    let a = 5.0;
    let laws = [Some(det()), Some(det())];
    let classes = |aging| Classes { aging, ..two([0.9, 0.1], laws.clone(), [1.0, 1.0]) };
    let (short, long) = (200_000, 1_600_000);
    let mut plain_max = Vec::new();
    for requests in [short, long] {
        let run = run_length(20_000, requests);
        let max = |d, aging| -> Vec<(f64, f64)> {
            replicate(farm(10, 0.9, 1, d, classes(aging)), &run, 3, 11)
                .iter()
                .map(|r| (r.range.unwrap().1, r.classes[1].range.unwrap().1))
                .collect()
        };
        let fifo = max(Discipline::Fifo, None);
        let aged = max(Discipline::Priority, Some(a));
        let plain = max(Discipline::Priority, None);
        for k in 0..3 {
            let bound = a + 1.0 + fifo[k].0;
            assert!(aged[k].1 <= bound + 1e-6, "{requests}: aged {} > {bound}", aged[k].1);
            if requests == long {
                assert!(plain[k].1 > bound, "{requests}: plain {} within {bound}", plain[k].1);
            }
        }
        plain_max.push(plain.iter().map(|p| p.1).fold(0.0, f64::max));
    }
    assert!(plain_max[1] > plain_max[0], "plain priority's maximum grows: {plain_max:?}");
}

// ===== Classes with the request lifecycle (SPEC §13 with §11) =====

/// A request lifecycle on `n` servers with no rule at all (no errors, delays, queue limit,
/// changes or health) and the default client.
fn bare_lifecycle(n: usize) -> Lifecycle {
    Lifecycle {
        error: vec![0.0; n],
        delay: vec![0.0; n],
        queue_limit: None,
        changes: Vec::new(),
        client: Client::default(),
        health: None,
    }
}

/// `farm(n, load, 1, d, classes)` with the lifecycle `l`.
fn with_lifecycle(n: usize, load: f64, d: Discipline, classes: Classes, l: Lifecycle) -> Scenario {
    let mut sc = farm(n, load, 1, d, classes);
    sc.farm.lifecycle = Some(Box::new(l));
    sc
}

/// `farm(n, load, 1, d, classes)` with a request lifecycle whose client is `client` (no
/// errors, delays or queue limit); class `k`'s timeout is `timeouts[k]`.
fn timed(
    n: usize,
    load: f64,
    d: Discipline,
    mut classes: Classes,
    timeouts: [Option<f64>; 2],
    client: Client,
) -> Scenario {
    for (c, t) in classes.classes.iter_mut().zip(timeouts) {
        c.timeout = t;
    }
    with_lifecycle(n, load, d, classes, Lifecycle { client, ..bare_lifecycle(n) })
}

/// What `reps` counted for class `k`, summed.
fn counted(reps: &[RepStats], k: usize) -> lbsim::lifecycle::LifecycleStats {
    pooled(reps).classes[k].lifecycle
}

#[test]
fn a_low_class_timeout_that_never_fires_changes_nothing() {
    // M/M/1 servers (50 under random) with non-preemptive priority. A lifecycle whose only
    // rule is a timeout of 1e12 on the low class (longer than any run) never acts: the first
    // attempt's demand is the workload's, classes and coins come from their own streams, so
    // every sojourn is the same, bit for bit, pooled and per class, as without a lifecycle.
    let two = || two(SHARES, [None, None], [1.0, 1.0]);
    let run = run_length(10_000, 200_000);
    let plain = replicate(farm(50, LOAD, 1, Discipline::Priority, two()), &run, 2, 21);
    let client = Client { cancel: true, ..Client::default() };
    let sc = timed(50, LOAD, Discipline::Priority, two(), [None, Some(1e12)], client);
    let timed = replicate(sc, &run, 2, 21);
    for (a, b) in plain.iter().zip(&timed) {
        assert_eq!((a.requests, a.sum.to_bits()), (b.requests, b.sum.to_bits()));
        for k in 0..2 {
            let (x, y) = (&a.classes[k], &b.classes[k]);
            assert_eq!((x.requests, x.sum.to_bits()), (y.requests, y.sum.to_bits()), "{k}");
            assert_eq!(x.quantile(0.99), y.quantile(0.99), "class {k}");
        }
    }
    // Every request succeeded at its first attempt.
    for k in 0..2 {
        let l = counted(&timed, k);
        assert_eq!((l.successes, l.attempts, l.timeouts), (l.requests, l.requests, 0), "{k}");
    }
    let all = pooled(&timed).lifecycle;
    assert_eq!(all.requests, 400_000);
    assert_eq!(counted(&timed, 0).requests + counted(&timed, 1).requests, all.requests);
}

#[test]
fn preemptive_priority_keeps_the_high_class_m_m_1_when_the_low_class_times_out() {
    // Preemptive resume: class 0 never sees class 1, so each server is M/M/1 for class 0
    // alone at sigma_0 = 0.18, T_0 = 1/(1 - 0.18) = 1.220 (Cobham, Kleinrock vol. 2 §3.7),
    // whatever class 1 does. Class 1 (T_1 = 3.05 without timeouts) gets a timeout of 3 with
    // `cancel`: its attempts leave queues, some preempted part-way, and some in service.
    // Without retries the policy draws no more coins, so class 0's sojourns are the same
    // bits as without the timeout; its mean is checked against M/M/1 within five standard
    // errors of the replications' means (each replication an independent run, their spread
    // the run length's own noise; the non-preemptive value 1.732 is 42% away).
    let two = || two(SHARES, [None, None], [1.0, 1.0]);
    let run = run_length(100_000, 1_000_000);
    let d = Discipline::PriorityPreemptive;
    let plain = replicate(farm(50, LOAD, 1, d, two()), &run, 8, 22);
    let client = Client { cancel: true, ..Client::default() };
    let cut = replicate(timed(50, LOAD, d, two(), [None, Some(3.0)], client.clone()), &run, 8, 22);
    for (a, b) in plain.iter().zip(&cut) {
        assert_eq!(a.classes[0].sum.to_bits(), b.classes[0].sum.to_bits());
    }
    check(&cut, Some(0), 1.0 / (1.0 - 0.18), "class 0 with class 1 timing out");
    let low = counted(&cut, 1);
    // The timeout fires: P(T_1 > 3) is about a quarter; at least a tenth of 5.6M requests.
    assert!(low.timeouts > low.requests / 10, "{low:?}");
    assert_eq!(low.successes + low.timeouts, low.requests);
    // With one retry the policy draws more coins (class 0's servers change), but class 0
    // still sees M/M/1 at 0.18.
    let retry = Client { retries: 1, ..client };
    let cut = replicate(timed(50, LOAD, d, two(), [None, Some(3.0)], retry), &run, 8, 23);
    check(&cut, Some(0), 1.0 / (1.0 - 0.18), "class 0 with class 1 retrying");
    assert!(counted(&cut, 1).attempts > counted(&cut, 1).requests);
}

#[test]
fn a_class_timeout_cancels_only_its_own_class() {
    // Non-preemptive priority at load 0.6, `cancel = true`. A timeout of 1.5 on the low class
    // alone: the high class never times out, its success is 1 exactly, and every timeout is
    // the low class's. Then the class timeout replaces the client's, even when longer: the
    // client's 1.0 and the high class's 1e12 leave the high class untouched while the low
    // class, on the client's 1.0, times out.
    let two = || two(SHARES, [None, None], [1.0, 1.0]);
    let run = run_length(10_000, 200_000);
    let d = Discipline::Priority;
    let cancel = Client { cancel: true, ..Client::default() };
    let cases = [
        ([None, Some(1.5)], cancel.clone()),
        ([Some(1e12), None], Client { timeout: 1.0, ..cancel }),
    ];
    for (timeouts, client) in cases {
        let reps = replicate(timed(50, LOAD, d, two(), timeouts, client), &run, 4, 24);
        let (high, low) = (counted(&reps, 0), counted(&reps, 1));
        assert_eq!((high.successes, high.timeouts), (high.requests, 0), "{timeouts:?}");
        assert!(low.timeouts > low.requests / 10, "{timeouts:?}: {low:?}");
        assert_eq!(low.successes + low.timeouts, low.requests, "{timeouts:?}");
        assert_eq!(pooled(&reps).lifecycle.timeouts, low.timeouts);
        // With `cancel` no low-class request succeeds after its timeout: the largest
        // sojourn is below it (exactly, per request).
        let limit = timeouts[1].unwrap_or(1.0);
        let hi = pooled(&reps).classes[1].range.unwrap().1;
        assert!(hi <= limit, "{timeouts:?}: {hi}");
    }
}

#[test]
fn cancelled_requests_leave_fair_and_cfs_servers_and_counts_conserve() {
    // 10 servers at load 0.9 under fair queueing and CFS (weights 3:1), with one slot each and
    // with two (where several requests of a class run at once and the one cancelled may be any
    // of them): the low class's timeout of 4 with `cancel` takes its attempts out of queues
    // and service. Counts are exact: every measured request ends once, answered or timed out
    // (no retries, errors or rejections), so per class requests = successes + timeouts, and
    // the classes add up to the arrivals. A cancelled attempt's server (or slot) stops working
    // on it, so the busy time is below that of the same run without `cancel` (the same
    // arrivals and demands, all served to the end there): by what the cancelled attempts
    // still lacked, thousands of them.
    let run = run_length(10_000, 100_000);
    for (slots, seed) in [(1, 25), (2, 42)] {
        for d in DISCIPLINES {
            let busy = |cancel: bool| {
                let client = Client { cancel, ..Client::default() };
                let classes = two(SHARES, [None, None], [3.0, 1.0]);
                let mut sc = timed(10, 0.9, d, classes, [None, Some(4.0)], client);
                sc.farm.slots = slots;
                let reps = replicate(sc, &run, 4, seed);
                let all = pooled(&reps).lifecycle;
                assert_eq!(all.requests, 400_000, "{d:?} on {slots}");
                let mut sum = 0;
                for k in 0..2 {
                    let l = counted(&reps, k);
                    assert_eq!(l.successes + l.timeouts, l.requests, "{d:?} on {slots}, {k}");
                    assert_eq!((l.errors, l.attempts), (0, l.requests), "{d:?} on {slots}, {k}");
                    sum += l.requests;
                }
                assert_eq!(sum, all.requests);
                assert!(counted(&reps, 1).timeouts > 1000, "{d:?} on {slots}: the timeout fires");
                all.busy
            };
            let (kept, cut) = (busy(false), busy(true));
            assert!(kept - cut > 1000.0, "{d:?} on {slots}: {kept} {cut}");
        }
    }
}

#[test]
fn classes_run_with_client_and_class_timeouts_per_class_rows() {
    // Refused before classes worked with the request lifecycle: `[client]` with classes, and a
    // class's `timeout`. A timeout on the batch class alone, with or without `[client]`: the
    // rows carry the lifecycle's columns per class, and only the batch row has timeouts (the
    // interactive class's success is 1 exactly). A timeout that never fires (1e9) gives the
    // rows of a `[client]` without one, byte for byte.
    let dir = Dir::new("classes-lifecycle");
    let with_client = format!("{SCENARIO}[client]\ncancel = true\n");
    let never = with_client.replacen("priority = 1", "priority = 1\ntimeout = 1e9", 1);
    let a = lbsim_ok(&["run", &dir.file("a.toml", &with_client), "--format", "csv"]);
    let b = lbsim_ok(&["run", &dir.file("b.toml", &never), "--format", "csv"]);
    assert_eq!(a, b);
    for text in [
        SCENARIO.replacen("priority = 1", "priority = 1\ntimeout = 3.0", 1),
        with_client.replacen("priority = 1", "priority = 1\ntimeout = 3.0", 1),
    ] {
        let csv = lbsim_ok(&["run", &dir.file("t.toml", &text), "--format", "csv"]);
        assert_eq!(column(&csv, "class"), ["all", "interactive", "batch"]);
        let timeouts: Vec<u64> =
            column(&csv, "timeouts").iter().map(|x| x.parse().unwrap()).collect();
        assert!(timeouts[2] > 0 && timeouts[1] == 0, "{csv}");
        assert_eq!(timeouts[0], timeouts[2], "{csv}");
        let success: Vec<f64> =
            column(&csv, "success").iter().map(|x| x.parse().unwrap()).collect();
        assert!(success[1] == 1.0 && success[2] < 1.0, "{csv}");
    }
}

/// `--series` windows split by class (SPEC §13): per window, the classes' dispatches add up to
/// the window's, and over the windows each class's dispatches and sojourns add up to the
/// requests that class measured; windows written to a tape read back the same. Exact counts:
/// every measured request is dispatched once and leaves once, in its class.
#[test]
fn series_windows_split_by_class_add_up_exactly() {
    let sc = farm(10, 0.8, 1, Discipline::Priority, two(SHARES, [None, Some(det())], [1.0, 1.0]));
    let mut run = run_length(2_000, 20_000);
    run.series = Some(100.0);
    let reps = replicate(sc.clone(), &run, 2, 4);
    run.series_spool = true;
    let spooled = replicate(sc, &run, 2, 4);
    for (r, s) in reps.iter().zip(&spooled) {
        let w = r.windows.as_ref().expect("the series is kept");
        assert_eq!(&s.spooled.as_ref().expect("the series is spooled").load().unwrap(), w);
        assert_eq!(w.damage(lbsim::engine::BUCKETS), None);
        assert_eq!(w.classes.len(), w.picks.len(), "every window is split");
        for (k, counted) in r.classes.iter().enumerate() {
            assert!(counted.requests > 3_000, "class {k} has requests");
            let picks: u64 = w.classes.iter().map(|c| c[k].picks).sum();
            let sojourns: u64 = w.classes.iter().map(|c| c[k].latency.total()).sum();
            assert_eq!(picks, counted.requests, "class {k}'s dispatches");
            assert_eq!(sojourns, counted.requests, "class {k}'s sojourns");
        }
        for (picks, classes) in w.picks.iter().zip(&w.classes) {
            let split: u64 = classes.iter().map(|c| c.picks).sum();
            assert_eq!(split, picks.iter().sum::<u64>());
        }
    }
}

/// The `--series` CSV with classes: a `class` column after `policy`, the pooled lines as `all`
/// and per class `requests`, `p50`, `p99` (and with the lifecycle `success`, `goodput`); the
/// classes' `requests` of a window add up to `all`'s exactly.
#[test]
fn series_csv_has_a_class_column_whose_requests_add_up_to_all() {
    let dir = Dir::new("classes-series");
    let f = dir.file("c.toml", SCENARIO);
    let out = dir.0.join("s.csv");
    lbsim_ok(&["run", &f, "--series", out.to_str().unwrap(), "--series-window", "20"]);
    let text = std::fs::read_to_string(&out).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("policy,class,time,metric,value"));
    let mut sums: std::collections::BTreeMap<(String, String), u64> = Default::default();
    let mut metrics: std::collections::BTreeSet<(String, String)> = Default::default();
    for l in lines {
        let cells: Vec<&str> = l.split(',').collect();
        metrics.insert((cells[1].into(), cells[3].into()));
        if cells[3] == "requests" {
            let who = if cells[1] == "all" { "all" } else { "classes" };
            *sums.entry((cells[2].into(), who.into())).or_default() +=
                cells[4].parse::<u64>().unwrap();
        }
    }
    for class in ["interactive", "batch"] {
        for m in ["requests", "p50", "p99"] {
            assert!(metrics.contains(&(class.into(), m.into())), "{class} {m}");
        }
    }
    let split = metrics.iter().filter(|(c, _)| c != "all");
    assert!(split.clone().all(|(_, m)| ["requests", "p50", "p99"].contains(&m.as_str())));
    assert!(metrics.iter().any(|(c, m)| c == "all" && m.starts_with("share.")));
    let times: std::collections::BTreeSet<&String> = sums.keys().map(|(t, _)| t).collect();
    assert!(times.len() > 50, "{} windows", times.len());
    for t in times {
        let (all, classes) =
            (sums[&(t.clone(), "all".into())], sums[&(t.clone(), "classes".into())]);
        assert_eq!(all, classes, "window at {t}");
    }
}

/// Non-preemptive priority on one server at load 0.9, two classes of Exp(1) demands sharing it
/// equally: Cobham's means are 1 + 0.9/0.55 = 2.64 for the high class and 1 + 0.9/(0.55 * 0.1)
/// = 17.4 for the low one, and the low class's sojourn tail is far longer still. In windows of
/// 2000 (about 900 requests of each class), the high class's p99 lies below the low class's
/// in nearly every window; FIFO (or a series that does not split by class) would put them on
/// the same law, below in about half the windows.
#[test]
fn series_p99_of_the_high_class_lies_below_the_low_class_in_most_windows() {
    let dir = Dir::new("classes-series-p99");
    let scenario = SCENARIO
        .replace("groups = [{ count = 10, rate = 1.0 }]", "groups = [{ count = 1, rate = 1.0 }]")
        .replace("load = 0.7", "load = 0.9")
        .replace("requests = 20000", "requests = 200000")
        .replace("seeds = 2", "seeds = 1")
        .replace("share = 0.2", "share = 0.5")
        .replace("share = 0.8", "share = 0.5")
        .replace("service = { kind = \"det\" }\n", "")
        .replace("policies = [\"p2c\"]", "policies = [\"random\"]");
    let f = dir.file("c.toml", &scenario);
    let out = dir.0.join("s.csv");
    lbsim_ok(&["run", &f, "--series", out.to_str().unwrap(), "--series-window", "2000"]);
    let text = std::fs::read_to_string(&out).unwrap();
    let p99 = |class: &str| -> Vec<Option<f64>> {
        text.lines()
            .map(|l| l.split(',').collect::<Vec<_>>())
            .filter(|c| c[1] == class && c[3] == "p99")
            .map(|c| c[4].parse().ok())
            .collect()
    };
    let (high, low) = (p99("interactive"), p99("batch"));
    assert_eq!(high.len(), low.len());
    let pairs: Vec<(f64, f64)> =
        high.iter().zip(&low).filter_map(|(h, l)| Some(((*h)?, (*l)?))).collect();
    assert!(pairs.len() > 80, "{} windows with both classes", pairs.len());
    let below = pairs.iter().filter(|(h, l)| h < l).count();
    assert!(below * 10 >= pairs.len() * 9, "{below} of {} windows", pairs.len());
}

// ===== Classes with queue limits, errors, delays, failed hosts, health (SPEC §13, §12) =====

#[test]
fn a_queue_limit_rejects_every_class_as_m_m_1_k_does() {
    // 50 rate-1 servers under random at load 0.9, a queue limit of K = 3, no retries: each
    // server is M/M/1/K whatever the discipline (exponential service of equal mean, size-blind
    // and work-conserving: the number present is the same process), and by PASTA every class
    // (an independent Poisson stream) finds it full with the M/M/1/K blocking probability
    // (1 - rho) rho^K / (1 - rho^(K+1)) = 0.2120 at rho = 0.9. Priority only reorders. The
    // tolerance is five standard errors of the replications' fractions (each an independent
    // run); without the limit no request is rejected, and K = 4 would give 0.1637 (23% away).
    let rho: f64 = 0.9;
    let want = (1.0 - rho) * rho.powi(3) / (1.0 - rho.powi(4));
    let run = run_length(20_000, 200_000);
    for d in [Discipline::Priority, Discipline::PriorityPreemptive, Discipline::Fair] {
        let l = Lifecycle { queue_limit: Some(3), ..bare_lifecycle(50) };
        let sc = with_lifecycle(50, rho, d, two(SHARES, [None, None], [3.0, 1.0]), l);
        let reps = replicate(sc, &run, 8, 31);
        for k in 0..2 {
            let fraction = |r: &RepStats| {
                let l = &r.classes[k].lifecycle;
                l.rejects as f64 / l.requests as f64
            };
            let (m, tol) = mean_and_tol(&reps, fraction);
            assert!(tol < 0.05 * want, "{d:?} class {k}: too short to tell ({tol})");
            assert!((m - want).abs() < tol, "{d:?} class {k}: {m} vs {want} +- {tol}");
            let l = counted(&reps, k);
            assert_eq!((l.successes + l.rejects, l.errors), (l.requests, l.rejects), "{d:?}");
        }
    }
}

#[test]
fn errors_and_delays_of_a_group_split_by_class() {
    // Non-preemptive priority on 50 servers (random, load 0.6) whose every response is an
    // error with p = 0.1, without retries. The error is drawn when service ends, whatever the
    // class, so each class's errors are Binomial(its requests, 0.1): within five standard
    // deviations, sqrt(n p (1 - p)), of n p. The servers are untouched by errors, so class 0's
    // successful requests (a tenth removed at random) keep Cobham's mean (the first test:
    // 1.732, five standard errors of the replications' means). A response delay of 0.25 adds
    // exactly 0.25 to every sojourn: the same run with it has each class's mean 0.25 above,
    // to rounding, and the same errors (drawn in the same order).
    let run = run_length(100_000, 1_000_000);
    let errors = |delay: f64| {
        let l = Lifecycle { error: vec![0.1; 50], delay: vec![delay; 50], ..bare_lifecycle(50) };
        let two = two(SHARES, [None, None], [1.0, 1.0]);
        replicate(with_lifecycle(50, LOAD, Discipline::Priority, two, l), &run, 8, 32)
    };
    let (prompt, late) = (errors(0.0), errors(0.25));
    for k in 0..2 {
        let l = counted(&prompt, k);
        let n = l.requests as f64;
        let sd = (n * 0.1 * 0.9).sqrt();
        assert!((l.errors as f64 - 0.1 * n).abs() < 5.0 * sd, "class {k}: {l:?}");
        assert_eq!(l.successes + l.errors, l.requests, "class {k}");
        assert_eq!(counted(&late, k).errors, l.errors, "class {k}");
        for (a, b) in prompt.iter().zip(&late) {
            let (x, y) = (a.classes[k].mean(), b.classes[k].mean());
            assert!((y - x - 0.25).abs() < 1e-9, "class {k}: {x} then {y}");
        }
    }
    check(&prompt, Some(0), 1.0 + 0.6 / (1.0 - 0.18), "class 0 with errors");
}

#[test]
fn failed_hosts_lose_every_class_and_outlier_detection_ejects_them() {
    // 10 servers under p2c at load 0.6 with two classes, a timeout of 20 and no retries:
    // host 0 goes down at 500 (losing what it holds, of either class, from its class queues)
    // and comes back at 3000; host 1 hangs from 1000 to 2000. Outlier detection (5
    // consecutive errors) ejects host 0. Every measured request ends exactly once, answered,
    // refused by the down host, timed out (lost, hung or slow) or failed fast, so per class
    // those add up to its requests, and the classes to all. Both failures reach both classes.
    let run = run_length(1_000, 30_000);
    for d in
        [Discipline::Priority, Discipline::PriorityPreemptive, Discipline::Fair, Discipline::Cfs]
    {
        let to = |s: std::ops::Range<usize>, state, at| Change {
            at,
            servers: s,
            delay: None,
            error: None,
            state: Some(state),
        };
        let changes = vec![
            to(0..1, HostState::Down, 500.0),
            to(1..2, HostState::Hang, 1000.0),
            to(1..2, HostState::Up, 2000.0),
            to(0..1, HostState::Up, 3000.0),
        ];
        let o = Outlier { interval: 10.0, base_ejection: 30.0, ..Outlier::default() };
        let l = Lifecycle {
            changes,
            client: Client { timeout: 20.0, ..Client::default() },
            health: Some(Health { outlier: Some(o), ..Health::default() }),
            ..bare_lifecycle(10)
        };
        let mut sc = with_lifecycle(10, LOAD, d, two(SHARES, [None, None], [3.0, 1.0]), l);
        sc.policy = PolicyKind::PnC(2);
        let reps = replicate(sc, &run, 2, 33);
        let all = pooled(&reps).lifecycle;
        assert!(all.ejections > 0, "{d:?}: {all:?}");
        let mut sum = 0;
        for k in 0..2 {
            let l = counted(&reps, k);
            let ended = l.successes + l.errors + l.timeouts + l.fast_failures;
            assert_eq!((ended, l.attempts), (l.requests, l.requests - l.fast_failures), "{d:?}");
            assert!(l.errors > 0 && l.timeouts > 0, "{d:?} class {k}: {l:?}");
            sum += l.requests;
        }
        assert_eq!(sum, all.requests, "{d:?}");
    }
}

#[test]
fn a_scenario_with_classes_failed_hosts_errors_health_and_a_queue_limit_runs() {
    // Refused before classes worked with them: `[health]`, a group's `error` and `delay`,
    // `queue_limit` and events that change a host's state. The class rows carry each class's
    // own counts, which add up to the pooled row's.
    let dir = Dir::new("classes-health");
    let text = SCENARIO
        .replacen(
            "groups = [{ count = 10, rate = 1.0 }]",
            "groups = [{ name = \"main\", count = 9, rate = 1.0, error = 0.01, delay = 0.1 }, \
             { name = \"failed\", count = 1, rate = 1.0 }]\nqueue_limit = 8",
            1,
        )
        .replacen("load = 0.7", "load = 0.6", 1)
        + "[client]\ntimeout = 30.0\n\
           [health]\noutlier = { interval = 50.0, base_ejection = 100.0 }\n\
           [[events]]\nat = 500.0\ngroup = \"failed\"\nstate = \"down\"\n\
           [[events]]\nat = 1500.0\ngroup = \"failed\"\nstate = \"up\"\n";
    let f = dir.file("h.toml", &text);
    let csv = lbsim_ok(&["run", &f, "--format", "csv"]);
    assert_eq!(column(&csv, "class"), ["all", "interactive", "batch"], "{csv}");
    let counts = |name: &str| -> Vec<f64> {
        column(&csv, name).iter().map(|v| v.parse().unwrap()).collect()
    };
    let errors = counts("errors");
    assert!(errors[1] > 0.0 && errors[2] > 0.0, "{csv}");
    assert_eq!(errors[1] + errors[2], errors[0], "{csv}");
    assert!(counts("ejections")[0] > 0.0, "the down host is ejected: {csv}");
}

//! The article's remaining experiments: `hetero`, `stale`, `swrr`.

use lbsim::experiment::RunConfig;
use lbsim::experiment::swrr::{smooth_cycle, smoothness};
use lbsim::experiment::{Scenario, Workload, run_replication, stale};
use lbsim::model::{Farm, Information};
use lbsim::policy::{PolicyKind, integer_weights};
use lbsim::rng::StreamKey;
use lbsim::theory::mm1_mean;
use rand::RngExt;

use crate::util::{lbsim, lbsim_ok, pooled, replicate, run_length};

fn csv_rows(csv: &str) -> Vec<Vec<String>> {
    csv.lines().skip(1).map(|l| l.split(',').map(str::to_string).collect()).collect()
}

const SHORT: [&str; 6] = ["--requests", "30000", "--warmup", "3000", "--format", "csv"];

#[test]
fn board_at_period_zero_is_live_information() {
    // Same seed, same numbers: stale's T = 0 rows equal homo's rows at the same load (columns
    // mean, p99, ci95s, drift), and jsq-local at T = 0 equals jsq.
    let stale = lbsim_ok(
        &[&["stale", "--periods", "0", "--policies", "random,p2c,p3c,jsq,jsq-local"], &SHORT[..]]
            .concat(),
    );
    let homo = lbsim_ok(
        &[&["homo", "--loads", "0.9", "--policies", "random,p2c,p3c,jsq"], &SHORT[..]].concat(),
    );
    let (s, h) = (csv_rows(&stale), csv_rows(&homo));
    for (srow, hrow) in s.iter().zip(&h) {
        assert_eq!(srow[1], hrow[1], "same policy order");
        // stale: period,policy,seeds,mean,p99,mean_ci95,p99_ci95,drift,max_queue
        // homo: load,policy,seeds,mean,p99,max_queue,mean_ci95,p99_ci95,drift
        assert_eq!(
            [&srow[3], &srow[4], &srow[5], &srow[6], &srow[7], &srow[8]],
            [&hrow[3], &hrow[4], &hrow[6], &hrow[7], &hrow[8], &hrow[5]],
            "{} at T = 0 differs from live",
            srow[1]
        );
    }
    assert_eq!(s[3][3..], s[4][3..], "jsq-local at T = 0 is jsq");
}

#[test]
fn random_does_not_depend_on_the_period() {
    // Common random numbers: arrivals, demands and the policy's coins do not depend on T, and
    // random reads nothing, so its row is identical at every period.
    let out = lbsim_ok(
        &[&["stale", "--periods", "0,0.5,7,50", "--policies", "random"], &SHORT[..]].concat(),
    );
    let rows = csv_rows(&out);
    assert_eq!(rows.len(), 4);
    for r in &rows[1..] {
        assert_eq!(r[1..], rows[0][1..]);
    }
}

#[test]
fn a_board_that_is_never_posted_makes_jsq_random_and_jsq_local_round_robin_like() {
    // With a period longer than the run, the board stays at its initial all-zero state: jsq sees
    // n ties forever and picks uniformly, so each server is M/M/1 (mean 1/(1-rho) = 5 at 0.8; the
    // pooled mean of 2M requests has sd 0.03, see validation.rs, so 0.15 is 5 sd). jsq-local
    // counts only its own dispatches, so it spreads requests almost evenly like round robin and
    // must be far better than random.
    let farm = Farm::homogeneous(100, 0.8);
    let never = |p| Scenario {
        farm: farm.clone(),
        policy: p,
        info: stale::information(p, 1e12),
        track_levels: false,
        tuning: lbsim::policy::Tuning::default(),
        clients: lbsim::model::Clients::default(),
        workload: Workload::default(),
    };
    let jsq = pooled(&replicate(never(PolicyKind::Jsq), &run_length(100_000, 1_000_000), 2, 4));
    assert!((jsq.mean() - mm1_mean(0.8)).abs() < 0.15, "jsq on an empty board: {}", jsq.mean());
    let local =
        pooled(&replicate(never(PolicyKind::JsqLocal), &run_length(100_000, 1_000_000), 2, 4));
    assert!(local.mean() < 0.7 * mm1_mean(0.8), "jsq-local: {}", local.mean());
}

#[test]
fn old_information_makes_jsq_herd_and_two_choices_degrade_slowest() {
    // Mitzenmacher's bulletin board at n = 100, lambda = 0.9: with fresh information jsq is best;
    // at T = 10 it is worse than random and d = 2 is the best of d = 2, 3 and jsq.
    let out = lbsim_ok(&[
        "stale",
        "--periods",
        "0,10",
        "--policies",
        "random,p2c,p3c,jsq",
        "--requests",
        "300000",
        "--warmup",
        "30000",
        "--format",
        "csv",
        "--seeds",
        "2",
    ]);
    let mean = |period: f64, policy: &str| -> f64 {
        let rows = csv_rows(&out);
        let row = rows.iter().find(|r| r[0].parse::<f64>() == Ok(period) && r[1] == policy);
        row.unwrap()[3].parse().unwrap()
    };
    assert!(mean(0.0, "jsq") < mean(0.0, "p3c") && mean(0.0, "p3c") < mean(0.0, "p2c"));
    assert!(mean(10.0, "jsq") > mean(10.0, "random"), "jsq herds on a 10-unit-old board");
    assert!(mean(10.0, "p2c") < mean(10.0, "p3c") && mean(10.0, "p3c") < mean(10.0, "jsq"));
}

#[test]
fn a_periodic_board_is_stale_and_its_posts_are_events() {
    // With T = 1 jsq reads lengths up to one time unit old and must do worse than live jsq. (The
    // order of a post and a departure at the same instant is the event queue's class order,
    // tested in the engine.)
    let run = RunConfig::new(1000, 20_000, u32::MAX);
    let farm = Farm::homogeneous(20, 0.9);
    let sc = |info| Scenario {
        farm: farm.clone(),
        policy: PolicyKind::Jsq,
        info,
        track_levels: false,
        tuning: lbsim::policy::Tuning::default(),
        clients: lbsim::model::Clients::default(),
        workload: Workload::default(),
    };
    let live = run_replication(&sc(Information::Live), &run, 1, 0);
    let board = run_replication(&sc(Information::Board { period: 1.0, local: false }), &run, 1, 0);
    assert!(board.mean() > live.mean());
    // Posts are events too: about one per time unit on top of arrivals and departures.
    assert!(board.events > live.events);
}

#[test]
fn hetero_swrr_picks_follow_the_weights() {
    // 20 servers of rate 0.5 and 80 of rate 1 get weights 1 and 2; over any window the smooth
    // sequence gives each server its share of the picks within one pick per cycle boundary.
    let rates: Vec<f64> = [vec![0.5; 20], vec![1.0; 80]].concat();
    let w = integer_weights(&rates);
    assert_eq!((w[0], w[99]), (1, 2));
    let total: u64 = w.iter().sum();
    let sc = Scenario::live(Farm::new(rates, 0.8), PolicyKind::Swrr, 10.0);
    let rep = run_replication(&sc, &RunConfig::new(777, 180_000, u32::MAX), 1, 0);
    let n: u64 = rep.picks.iter().sum();
    assert_eq!(n, 180_000);
    for (i, (&picks, &wi)) in rep.picks.iter().zip(&w).enumerate() {
        let expected = n as f64 * wi as f64 / total as f64;
        assert!((picks as f64 - expected).abs() <= 2.0, "server {i}: {picks} vs {expected}");
    }
}

#[test]
fn hetero_marks_static_overload_unstable() {
    let out = lbsim_ok(&[
        "hetero",
        "--policies",
        "random,rr,swrr,p2c",
        "--requests",
        "50000",
        "--warmup",
        "5000",
        "--format",
        "csv",
        "--seeds",
        "2",
    ]);
    let stable: Vec<(String, String)> =
        csv_rows(&out).into_iter().map(|r| (r[0].clone(), r[5].clone())).collect();
    let want = [("random", "false"), ("rr", "false"), ("swrr", "true"), ("p2c", "true")];
    for ((p, s), (wp, ws)) in stable.iter().zip(want) {
        assert_eq!((p.as_str(), s.as_str()), (wp, ws));
    }
    assert!(out.starts_with("policy,seeds,mean,p99,max_queue,stable,mean_ci95,p99_ci95,drift"));
}

#[test]
fn swrr_trace_5_1_1_is_the_nginx_sequence() {
    let out = lbsim_ok(&["swrr", "--trace", "5,1,1", "--format", "csv"]);
    assert_eq!(
        out,
        "step,before,selected,after\n\
         1,5 1 1,a,-2 1 1\n\
         2,3 2 2,a,-4 2 2\n\
         3,1 3 3,b,1 -4 3\n\
         4,6 -3 4,a,-1 -3 4\n\
         5,4 -2 5,c,4 -2 -2\n\
         6,9 -1 -1,a,2 -1 -1\n\
         7,7 0 0,a,0 0 0\n"
    );
}

#[test]
fn smooth_wrr_is_exact_per_cycle_and_deviates_less_than_one_pick_on_up_to_four_servers() {
    // Property over random weight vectors: one cycle gives each server exactly its weight. The
    // running deviation from the ideal share t*w_i/W stays below one pick for every vector drawn
    // here with at most four servers (the article's sets have up to four, plus 1x20 2x80); that
    // is a measurement over these draws, not a proof, and it does not extend to five servers
    // (see the next test).
    let mut rng = StreamKey::new(1, "swrr-property").rng();
    for _ in 0..4000 {
        let n = rng.random_range(1..12);
        let w: Vec<u64> = (0..n).map(|_| rng.random_range(1..50)).collect();
        let seq = smooth_cycle(&w);
        let mut counts = vec![0u64; n];
        for &s in &seq {
            counts[s] += 1;
        }
        assert_eq!(counts, w);
        // And the state is back at zero after one cycle (NGINX: sum of current stays 0).
        let mut alg = lbsim::policy::SmoothWrr::new(&w);
        for _ in 0..seq.len() {
            alg.step();
        }
        assert!(alg.current().iter().all(|&c| c == 0), "weights {w:?}: {:?}", alg.current());
        let (dev, _) = smoothness(&w, &seq);
        if n <= 4 {
            assert!(dev < 1.0, "weights {w:?}: max deviation {dev}");
        }
    }
}

#[test]
fn smooth_wrr_can_deviate_by_more_than_one_pick_with_five_servers() {
    // A counterexample found by the search above: the "below one request" observation of the
    // article holds for its weight sets, not for arbitrary ones.
    let w = [33, 1, 1, 33, 7];
    let (dev, _) = smoothness(&w, &smooth_cycle(&w));
    assert!(dev > 1.0, "{dev}");
    let many: Vec<u64> = [vec![1; 20], vec![2; 80]].concat();
    assert!(smoothness(&many, &smooth_cycle(&many)).0 < 1.0);
}

#[test]
fn bad_input_for_hetero_stale_and_swrr_is_refused() {
    for (args, mention) in [
        (&["hetero", "--slow-rate", "0"][..], "--slow-rate"),
        (&["hetero", "--fast-rate", "-1"], "--fast-rate"),
        (&["hetero", "--fast-rate", "nan"], "--fast-rate"),
        (&["hetero", "--tau", "0"], "--tau"),
        (&["hetero", "--tau", "NaN"], "--tau"),
        (&["hetero", "--load", "1"], "--load"),
        (&["hetero", "--slow", "0", "--fast", "0"], "--slow"),
        (&["hetero", "--policies", "wrr"], "valid policies"),
        (&["stale", "--periods", "-1"], "--periods"),
        (&["stale", "--periods", "0,1,1"], "--periods"),
        (&["stale", "--policies", "p2c-pewma"], "--policies"),
        (&["swrr", "--trace", "5,0,1"], "--trace"),
        (&["swrr", "--trace", "5,-1,1"], "--trace"),
        (&["swrr", "--trace", "1.5,1"], "--trace"),
        (&["swrr", "--trace", ""], "--trace"),
        (&["swrr", "--weights", "1,2;;3"], "--weights"),
    ] {
        let out = lbsim(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(out.stdout.is_empty());
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(mention), "{args:?}: {err}");
    }
}

//! The balancers that learn from feedback, and the per-window series of `run --series`, checked
//! against what they must reduce to. Fixed seeds; each tolerance is derived in its comment.

use lbsim::engine::{SimTime, simulate};
use lbsim::experiment::Scenario;
use lbsim::model::{Clients, Farm, Information, LoadTable, RateChange, RunLength, SimOptions};
use lbsim::policy::{Fleet, Policy, PolicyKind};
use lbsim::rng::{SimRng, StreamKey};
use lbsim::stats::RepStats;
use lbsim::subset::Subsetting;
use lbsim::theory::md1_mean;
use lbsim::workload::{ExpDemands, PoissonGaps};

use crate::util::{Dir, lbsim_ok, replicate, run_length};

/// Each server's share of the measured dispatches, pooled over `reps`.
fn shares(reps: &[RepStats]) -> Vec<f64> {
    let n = reps[0].picks.len();
    let picks: Vec<u64> = (0..n).map(|s| reps.iter().map(|r| r.picks[s]).sum()).collect();
    let total: u64 = picks.iter().sum();
    picks.iter().map(|&p| p as f64 / total as f64).collect()
}

#[test]
fn wrr_orca_learns_weights_proportional_to_rates_and_then_sends_what_swrr_sends() {
    // A static farm of rates 1, 1, 2, 4 at load 0.7. Servers report every 5000 time units; a
    // report's weight is completions over busy time, the inverse of the mean of n exponential
    // service times, n = 0.7 * rate * 5000 >= 3500, so each weight has a relative sd of at most
    // 1/sqrt(3500) = 1.7%. The measured window (1M arrivals at 5.6 per unit, 180k time units,
    // after a 50k-arrival warm-up of 8900 units that covers the first report and the 100-unit
    // blackout) spans 35 report periods, so a server's share, averaged over them, has a relative
    // sd near 1.7% / sqrt(35) = 0.3%: the 5% asked for is over ten sd. The shares of the weights
    // being proportional to the rates is what makes them equal to swrr's (rate / 8); before any
    // report gRPC sends round robin (shares 1/4 each), 100% off for the fastest server, which
    // this test would catch.
    let rates = vec![1.0, 1.0, 2.0, 4.0];
    let run = run_length(50_000, 1_000_000);
    let mut orca = Scenario::live(Farm::new(rates.clone(), 0.7), PolicyKind::WrrOrca, 10.0);
    // Weights expire 1800 after their last report by default: keep them across the period.
    orca.tuning = PolicyKind::WrrOrca.tuning("report_period=5000,expiration_period=20000").unwrap();
    let got = shares(&replicate(orca, &run, 2, 5));
    let swrr = Scenario::live(Farm::new(rates.clone(), 0.7), PolicyKind::Swrr, 10.0);
    let want = shares(&replicate(swrr, &run, 2, 5));
    for s in 0..rates.len() {
        let rate_share = rates[s] / 8.0;
        assert!((got[s] / rate_share - 1.0).abs() < 0.05, "server {s}: {got:?} vs rates");
        assert!((got[s] / want[s] - 1.0).abs() < 0.05, "server {s}: {got:?} vs swrr {want:?}");
    }
}

#[test]
fn wrr_orca_in_a_fleet_still_learns_weights_proportional_to_rates() {
    // The farm, reports and run length of the single-client test above, balanced by 8 clients,
    // each with its own weights and scheduler fed by the reports of its servers. With subsets of
    // all four servers drawn at random, each client holds the servers in an order of its own, so
    // a client that read the reports in farm order would weigh the wrong servers; a client that
    // heard no reports would stay on round robin (a quarter each, 100% off for the fastest).
    // Every client's weights are the same reports' qps / utilization, so each client's shares,
    // and their mix, are the rates' shares: the 5% of the single-client test, over ten standard
    // deviations of the report noise, holds here too (the uniform assignment of arrivals to
    // clients adds a binomial sd of 0.05% of a share over 2M picks).
    let rates = vec![1.0, 1.0, 2.0, 4.0];
    let run = run_length(50_000, 1_000_000);
    for subset in [None, Some((4, Subsetting::Random))] {
        let mut orca = Scenario::live(Farm::new(rates.clone(), 0.7), PolicyKind::WrrOrca, 10.0);
        orca.tuning =
            PolicyKind::WrrOrca.tuning("report_period=5000,expiration_period=20000").unwrap();
        orca.clients = Clients { count: 8, local: true, subset };
        let got = shares(&replicate(orca, &run, 2, 5));
        for s in 0..rates.len() {
            let rate_share = rates[s] / 8.0;
            let off = got[s] / rate_share - 1.0;
            assert!(off.abs() < 0.05, "subset {subset:?}, server {s}: {got:?} vs rates");
        }
    }
}

#[test]
fn wrr_orca_without_reports_is_round_robin() {
    // Reports longer than the run: no weight ever leaves the blackout, so every scheduler is
    // round robin and each of the four servers gets a quarter of the requests, up to the one
    // request by which round robin's count can differ between servers.
    let mut orca =
        Scenario::live(Farm::new(vec![1.0, 1.0, 2.0, 4.0], 0.3), PolicyKind::WrrOrca, 10.0);
    orca.tuning = PolicyKind::WrrOrca.tuning("report_period=1e9").unwrap();
    let reps = replicate(orca, &run_length(1000, 40_000), 1, 1);
    for &p in &reps[0].picks {
        assert!(p.abs_diff(10_000) <= 1, "{:?}", reps[0].picks);
    }
}

#[test]
fn series_windows_add_up_to_the_run() {
    // Every measured request is dispatched in exactly one window and arrives in exactly one, so
    // the windows' counts add up to the replication's own, exactly, with and without rate
    // changes and for a feedback policy as for the article's.
    let events = vec![RateChange { at: 300.0, servers: 0..3, rate: 0.2 }];
    for policy in [PolicyKind::PnC(2), PolicyKind::Random, PolicyKind::WrrOrca] {
        for events in [Vec::new(), events.clone()] {
            let farm = Farm { events, ..Farm::homogeneous(10, 0.7) };
            let sc = Scenario::live(farm, policy, 10.0);
            let mut run = run_length(2_000, 30_000);
            run.series = Some(7.0);
            for rep in replicate(sc, &run, 2, 3) {
                let w = rep.windows.as_ref().expect("windows recorded");
                // No groups given: one group of all servers.
                assert!(w.picks.iter().all(|window| window.len() == 1));
                let picks: u64 = w.picks.iter().flatten().sum();
                assert_eq!(picks, rep.picks.iter().sum::<u64>(), "{policy:?}");
                let departed = w.sojourns();
                assert_eq!(departed, rep.requests, "{policy:?}");
                assert_eq!(rep.picks.iter().sum::<u64>(), 30_000);
            }
        }
    }
}

#[test]
fn the_series_file_adds_up_to_the_rows() {
    // Through the binary: per policy, the `requests` lines of the series add up to the measured
    // requests times the replications, and the group shares of each window add up to 1.
    let dir = std::env::temp_dir().join(format!("lbsim-series-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("series.csv");
    lbsim_ok(&[
        "run",
        "examples/scenarios/slow-backend.toml",
        "--policies",
        "random,wrr-orca",
        "--set",
        "run.requests=20000",
        "--set",
        "run.warmup=2000",
        "--seeds",
        "2",
        "--series",
        file.to_str().unwrap(),
        "--series-window",
        "25",
    ]);
    let text = std::fs::read_to_string(&file).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("policy,time,metric,value"));
    let mut totals = std::collections::BTreeMap::<String, u64>::new();
    let mut shares = std::collections::BTreeMap::<(String, String), f64>::new();
    for line in lines {
        let f: Vec<&str> = line.split(',').collect();
        if f[2] == "requests" {
            *totals.entry(f[0].to_string()).or_default() += f[3].parse::<u64>().unwrap();
        }
        if f[2].starts_with("share.") && !f[3].is_empty() {
            *shares.entry((f[0].to_string(), f[1].to_string())).or_default() +=
                f[3].parse::<f64>().unwrap();
        }
    }
    assert_eq!(totals.get("random"), Some(&40_000));
    assert_eq!(totals.get("wrr-orca"), Some(&40_000));
    assert!(!shares.is_empty());
    for (key, sum) in shares {
        assert!((sum - 1.0).abs() < 1e-12, "{key:?}: {sum}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_series_is_the_same_whatever_the_threads_and_bad_windows_are_refused() {
    let dir = std::env::temp_dir().join(format!("lbsim-series-threads-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let run = |threads: &str, name: &str| {
        let file = dir.join(name);
        lbsim_ok(&[
            "run",
            "examples/scenarios/slow-backend.toml",
            "--policies",
            "p2c,prequal,c3",
            "--set",
            "run.requests=10000",
            "--set",
            "run.warmup=1000",
            "--seeds",
            "3",
            "--threads",
            threads,
            "--series",
            file.to_str().unwrap(),
        ]);
        std::fs::read(file).unwrap()
    };
    assert_eq!(run("1", "a.csv"), run("3", "b.csv"));
    for bad in ["0", "-1", "x"] {
        let out = crate::util::lbsim(&[
            "run",
            "examples/scenarios/slow-backend.toml",
            "--series",
            dir.join("c.csv").to_str().unwrap(),
            "--series-window",
            bad,
        ]);
        assert_eq!(out.status.code(), Some(2), "--series-window {bad}");
        assert_eq!(String::from_utf8_lossy(&out.stderr).lines().count(), 1);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A client that sends at most one request every `gap` time units (a token bucket of one token
/// refilled at rate 1 / gap), holding the others back in its backlog.
#[derive(Debug, Clone)]
struct Pacer {
    gap: f64,
    next: f64,
}

impl Policy for Pacer {
    const TAGGED: bool = true;
    const HOLDS: bool = true;

    fn pick(&mut self, _: &LoadTable, _: SimTime, _: &mut SimRng) -> usize {
        unreachable!("a policy that holds is asked through try_pick")
    }

    fn set_hosts(&mut self, _: u32, _: Option<&[u32]>) {}

    fn try_pick(
        &mut self,
        _: u32,
        _: &LoadTable,
        now: SimTime,
        _: &mut SimRng,
    ) -> Result<usize, f64> {
        let t = now.get();
        if t < self.next {
            return Err(self.next);
        }
        self.next = t + self.gap;
        Ok(0)
    }
}

/// The mean time before dispatch over eight replications of `policy` sending Poisson arrivals
/// of rate `rate` to one server a million times faster than the arrivals (its sojourns add about
/// 1e-6), and the standard error of that mean from the replications' spread.
fn paced_mean<P: Policy + Clone>(policy: P, rate: f64) -> (f64, f64) {
    let farm = Farm::new(vec![1e6], rate / 1e6);
    let len = RunLength { warmup: 20_000, requests: 200_000 };
    let opts = SimOptions::plain(Information::Live);
    let means: Vec<f64> = (0..8)
        .map(|seed| {
            let key = |label| StreamKey::new(seed, label).u64(0).rng();
            let mut gaps = PoissonGaps(rate);
            let (w, c) = (key("workload"), key("policy"));
            let stats =
                simulate(&farm, len, opts.clone(), policy.clone(), &mut gaps, &ExpDemands, w, c);
            assert_eq!(stats.requests, 200_000);
            stats.sum / stats.requests as f64
        })
        .collect();
    let mean = means.iter().sum::<f64>() / 8.0;
    let var = means.iter().map(|m| (m - mean).powi(2)).sum::<f64>() / 7.0;
    (mean, (var / 8.0).sqrt())
}

#[test]
fn a_client_backlog_paced_at_one_per_gap_is_an_md1_queue() {
    // Poisson arrivals at rate 0.5 to a client that lets one request through per unit of time,
    // FIFO: the time a request spends before its dispatch is the wait of an M/D/1 queue with
    // service 1 at rho = 0.5, `md1_mean(0.5) - 1 = 0.5`. The backlog path is exercised by every
    // busy period (half of the requests find it non-empty or the pacer closed). Eight
    // replications of 200k requests: the tolerance is five standard errors of their mean,
    // estimated from the replications themselves; the standard error must also be below 1% of
    // the mean, so a backlog that lost its FIFO order or its wake-ups (the mean would move by far
    // more) fails.
    let (mean, se) = paced_mean(Pacer { gap: 1.0, next: 0.0 }, 0.5);
    let want = md1_mean(0.5) - 1.0;
    assert!(se < 0.01 * want, "se {se}");
    assert!((mean - want).abs() < 5.0 * se, "{mean} vs {want} +- {}", 5.0 * se);
}

#[test]
fn each_client_of_a_fleet_has_a_backlog_of_its_own() {
    // Two pacing clients, each at most one request per unit, share Poisson arrivals of rate 1:
    // each client sees a Poisson stream of rate 0.5 (a random split of one), so with a backlog
    // of its own each is the M/D/1 queue above, wait 0.5. One backlog shared by both would hold a
    // request of one client behind the other's (its wait would be that of the pair, far above).
    // Tolerance as above: five standard errors from eight replications.
    let pacer = Pacer { gap: 1.0, next: 0.0 };
    let fleet =
        Fleet::new(1, vec![pacer; 2], Vec::new(), false, StreamKey::new(3, "clients").rng());
    let (mean, se) = paced_mean(fleet, 1.0);
    let want = md1_mean(0.5) - 1.0;
    assert!(se < 0.01 * want, "se {se}");
    assert!((mean - want).abs() < 5.0 * se, "{mean} vs {want} +- {}", 5.0 * se);
}

#[test]
fn c3_with_rate_control_runs_in_a_fleet_the_same_on_any_number_of_threads() {
    // Sixteen c3 clients, each with its own buckets and backlog, and buckets of one token so that
    // the backlogs are used; the bytes do not depend on --threads, and every row is finite.
    let dir = Dir::new("c3-fleet");
    let text = "policies = [\"c3\", \"c3:max_tokens=1\"]\n[farm]\n\
                groups = [{ name = \"all\", count = 20, rate = 1.0 }]\n[info]\nclients = 16\n\
                [arrivals]\nload = 0.7\n[run]\nrequests = 3e4\nwarmup = 3e3\nseeds = 2\n";
    let file = dir.file("c3.toml", text);
    let one = lbsim_ok(&["run", &file, "--format", "csv", "-q", "--threads", "1"]);
    let two = lbsim_ok(&["run", &file, "--format", "csv", "-q", "--threads", "2"]);
    assert_eq!(one, two);
    assert_eq!(one.lines().count(), 3, "{one}");
    assert!(!one.contains("NaN") && !one.contains("inf"), "{one}");
}

#[test]
fn c3_rate_control_changes_nothing_when_no_bucket_runs_dry_and_holds_requests_when_they_do() {
    // One client over 20 servers at load 0.7: each server's bucket refills at about its receive
    // rate and holds up to 50 tokens, so after the first unit (when every bucket starts empty and
    // the first requests wait) the limit never binds and rate control leaves the mean where the
    // ranking alone puts it (within the sum of the two 95% intervals, Student's t with 3 degrees
    // of freedom over 4 replications). With buckets of one token, no burst passes: each rate
    // follows the server's receive rate down after every hysteresis period, requests wait in the
    // backlog and the mean rises (2.45 against 1.35 measured; asked: more than 1.5 times).
    let farm = || Farm::homogeneous(20, 0.7);
    let run = run_length(10_000, 200_000);
    let with = |params: &str| {
        let mut s = Scenario::live(farm(), PolicyKind::C3, 10.0);
        s.tuning = PolicyKind::C3.tuning(params).unwrap();
        replicate(s, &run, 4, 3)
    };
    let ci = |reps: &[RepStats]| {
        let m: Vec<f64> = reps.iter().map(|r| r.sum / r.requests as f64).collect();
        let mean = m.iter().sum::<f64>() / m.len() as f64;
        let sd = (m.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (m.len() - 1) as f64).sqrt();
        (mean, 3.18 * sd / (m.len() as f64).sqrt())
    };
    let (on, on_ci) = ci(&with(""));
    let (off, off_ci) = ci(&with("rate_control=false"));
    assert!((on - off).abs() < on_ci + off_ci, "{on} +- {on_ci} vs {off} +- {off_ci}");
    let (tight, _) = ci(&with("max_tokens=1"));
    assert!(tight > 1.5 * on, "{tight} vs {on}");
}

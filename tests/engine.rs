//! Farms beyond the article's: several workers per server, processor sharing, and rate changes
//! during the run, checked against closed forms and against the article's one-slot servers. Fixed
//! seeds make every test deterministic; each tolerance is derived from the run length in the
//! comment beside it, at about five standard deviations.

use std::path::Path;

use lbsim::engine::simulate;
use lbsim::experiment::{Scenario, Workload};
use lbsim::model::{Discipline, Farm, Information, RateChange, RunLength, SimOptions};
use lbsim::policy::{PnC, PolicyKind};
use lbsim::rng::SimRng;
use lbsim::rng::StreamKey;
use lbsim::stats::RepStats;
use lbsim::theory::{mm1_mean, mm1_wait_variance_constant, mmn_mean};
use lbsim::workload::{Demands, ExpDemands, Gaps, PoissonGaps, ServiceSpec};

use crate::util::{Dir, lbsim, lbsim_ok, pooled, replicate, run_length};

/// Standard deviation of a pooled mean sojourn over `n` requests of M/M/1 queues at `rho`
/// (service rate 1): Whitt's variance constant for the waiting time, doubled to cover the
/// sojourn's own service time and its covariance with the waits that follow.
fn mm1_mean_sd(rho: f64, n: f64) -> f64 {
    (2.0 * mm1_wait_variance_constant(rho) / n).sqrt()
}

fn random_farm(n: usize, load: f64, slots: u32, discipline: Discipline) -> Scenario {
    let farm = Farm { slots, discipline, ..Farm::homogeneous(n, load) };
    Scenario::live(farm, PolicyKind::Random, 10.0)
}

#[test]
fn random_with_c_slots_is_m_m_c() {
    // Random splitting of a Poisson stream makes each of the 50 servers an M/M/c queue with c
    // rate-1 workers at utilisation 0.8; its mean sojourn is Erlang C's 1 + C(c, a)/(c (1 - rho)).
    // M/M/c waits less and relaxes faster than M/M/1 at the same utilisation, so M/M/1's variance
    // constant bounds the noise: over 2 x 4M requests the sd is at most 0.022, 5 sd = 0.11 (4% of
    // M/M/2's 2.78, 8% of M/M/4's 1.50; M/M/1 would be 5). The warm-up, 100k arrivals, is 1250
    // time units at c = 2 (625 at c = 4), several relaxation times 1/(1 - sqrt(0.8))^2 = 90.
    let rho = 0.8;
    for c in [2, 4] {
        let (seeds, requests) = (2, 4_000_000);
        let sc = random_farm(50, rho, c, Discipline::Fifo);
        let reps = replicate(sc, &run_length(100_000, requests), seeds, 21);
        let (mean, want) = (pooled(&reps).mean(), mmn_mean(c, rho));
        let tol = 5.0 * mm1_mean_sd(rho, (seeds * requests) as f64);
        assert!((mean - want).abs() < tol, "c = {c}: mean {mean} vs M/M/c {want} +- {tol}");
    }
}

/// Mean sojourn per replication and their 95%-ish spread: five standard errors of the mean of
/// the replication means.
fn rep_means(reps: &[RepStats]) -> (f64, f64) {
    let means: Vec<f64> = reps.iter().map(|r| r.mean()).collect();
    let k = means.len() as f64;
    let m = means.iter().sum::<f64>() / k;
    let var = means.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (k - 1.0);
    (m, 5.0 * (var / k).sqrt())
}

#[test]
fn processor_sharing_is_insensitive_to_the_service_distribution() {
    // M/G/1-PS: the mean sojourn is 1/(1 - rho) whatever the service distribution beyond its
    // mean (Kleinrock vol. 1 §4.8). The variance of a PS mean has no simple closed form for
    // general service, so the tolerance is five standard errors of the mean of 8 independent
    // replications (each of 1M requests over 50 servers, 20k per server); it must also be
    // below 4% of the mean, so the check cannot pass by noise alone, and FIFO's M/G/1 means
    // (det: 0.75 and 3.0 at 0.5 and 0.8, hyperexp scv 4: 3.5 and 11) lie far outside.
    for rho in [0.5, 0.8] {
        for (name, spec) in [
            ("exp", ServiceSpec::Exp),
            ("det", ServiceSpec::Det),
            ("hyperexp", ServiceSpec::Hyperexp { scv: 4.0 }),
        ] {
            let mut sc = random_farm(50, rho, 1, Discipline::Ps);
            if name != "exp" {
                let service = spec.build(Path::new(".")).expect("a valid service");
                sc.workload = Workload { arrivals: None, service, key: name.into(), keys: None };
            }
            let reps = replicate(sc, &run_length(100_000, 1_000_000), 8, 5);
            let (mean, tol) = rep_means(&reps);
            let want = mm1_mean(rho);
            assert!(tol < 0.04 * want, "{name} at {rho}: the run is too short ({tol})");
            assert!(
                (mean - want).abs() < tol,
                "{name} at {rho}: PS mean {mean} vs {want} +- {tol}"
            );
        }
    }
}

#[test]
fn processor_sharing_with_c_slots_serves_c_at_full_rate() {
    // With c processors and k <= c requests every request runs at the full rate: at a low load
    // (0.1 per worker, c = 4) nearly nobody shares, so the mean sojourn is close to the demand's
    // mean 1 and below M/M/1-PS's 1/(1 - 0.1) = 1.11 (one processor of the same total rate 4
    // would give 1/(4 (1 - 0.1)) = 0.28, so this also checks the rate per processor). The exact
    // M/M/4 queue length is that of FIFO, so the mean equals M/M/4's (Little): 1.0002 here.
    let (seeds, requests) = (2, 1_000_000);
    let sc = random_farm(50, 0.1, 4, Discipline::Ps);
    let mean = pooled(&replicate(sc, &run_length(10_000, requests), seeds, 3)).mean();
    // Sojourns are about Exp(1): sd of the mean over 2M requests 0.0007; 5 sd = 0.0035.
    let want = mmn_mean(4, 0.1);
    assert!((mean - want).abs() < 0.0035, "PS with 4 slots: {mean} vs M/M/4 {want}");
}

/// A farm of 50 rate-1 servers under `random` at load 0.4 with `events`.
fn with_events(events: Vec<RateChange>) -> Scenario {
    let farm = Farm { events, ..Farm::homogeneous(50, 0.4) };
    Scenario::live(farm, PolicyKind::Random, 10.0)
}

fn all(at: f64, rate: f64) -> RateChange {
    RateChange { at, servers: 0..50, rate }
}

#[test]
fn a_slowdown_shows_in_the_sojourn_and_a_recovery_restores_it() {
    // 50 servers at load 0.4 (20 arrivals per time unit). Halving every server's rate at
    // T = 2500 (about arrival 50k) makes each an M/M/1 queue at 0.8 whose time unit is 2: mean
    // sojourn 2/(1 - 0.8) = 10. Measuring from arrival 100k (t = 5000, 14 relaxation times of
    // 2 x 90 after the change), 2 x 2M requests give a sd of 2 x 0.031, 5 sd = 0.31.
    let (seeds, requests) = (2, 2_000_000);
    let n = (seeds * requests) as f64;
    let slow =
        replicate(with_events(vec![all(2500.0, 0.5)]), &run_length(100_000, requests), seeds, 9);
    let (mean, want) = (pooled(&slow).mean(), 2.0 * mm1_mean(0.8));
    let tol = 5.0 * 2.0 * mm1_mean_sd(0.8, n);
    assert!((mean - want).abs() < tol, "slowed: {mean} vs {want} +- {tol}");

    // Slowed from 1000 to 3000, then back to rate 1: measured from t = 5000 the farm is M/M/1 at
    // 0.4 again (relaxation 7 time units; the backlog of the slow period, a few requests per
    // server, drains in tens). Whitt's constant at 0.4 gives sd 0.0033 over 2 x 2M; 5 sd = 0.016.
    let events = vec![all(1000.0, 0.5), all(3000.0, 1.0)];
    let back = replicate(with_events(events), &run_length(100_000, requests), seeds, 9);
    let (mean, want) = (pooled(&back).mean(), mm1_mean(0.4));
    let tol = 5.0 * mm1_mean_sd(0.4, n);
    assert!((mean - want).abs() < tol, "recovered: {mean} vs {want} +- {tol}");
}

/// One replication through [`simulate`] with the streams given explicitly, so that farms keyed
/// differently can share them.
fn simulate_p2c(farm: &Farm, arrival_rate: f64, info: Information) -> RepStats {
    let key = |label| StreamKey::new(4, label).u64(0).rng();
    let len = RunLength { warmup: 20_000, requests: 200_000 };
    let opts = SimOptions {
        info,
        track_levels: true,
        queue_guard: u32::MAX,
        series: None,
        series_groups: Vec::new(),
        series_spool: false,
    };
    let policy = PnC::<2>::new(farm.rates.len());
    let mut gaps = PoissonGaps(arrival_rate);
    simulate(farm, len, opts, policy, &mut gaps, &ExpDemands, key("workload"), key("policy"))
}

/// One replication of p2c on `farm`, `requests` long, with the given arrivals and demands: with
/// `levels`, the levels are tracked, which makes the loop simulate every departure as an event;
/// without, it counts them when servers are read (the article's runs).
fn p2c_run(
    farm: &Farm,
    gaps: &mut impl Gaps,
    demands: &impl Demands,
    levels: bool,
    queue_guard: u32,
) -> RepStats {
    let key = |label| StreamKey::new(5, label).u64(0).rng();
    let len = RunLength { warmup: 2_000, requests: 100_000 };
    let opts = SimOptions { track_levels: levels, queue_guard, ..simple_options() };
    let policy = PnC::<2>::new(farm.rates.len());
    simulate(farm, len, opts, policy, gaps, demands, key("workload"), key("policy"))
}

fn simple_options() -> SimOptions {
    SimOptions {
        info: Information::Live,
        track_levels: false,
        queue_guard: u32::MAX,
        series: None,
        series_groups: Vec::new(),
        series_spool: false,
    }
}

/// Constant gaps.
#[derive(Clone)]
struct Every(f64);

impl Gaps for Every {
    fn next_gap(&mut self, _: &mut SimRng) -> Option<f64> {
        Some(self.0)
    }
}

/// Constant demands.
struct Always(f64);

impl Demands for Always {
    fn demand(&self, _: &mut SimRng) -> f64 {
        self.0
    }
}

#[test]
fn counting_departures_when_servers_are_read_is_simulating_them() {
    // The same replication with departures as events (levels tracked) and counted when a server
    // is read: the same picks, sojourns, events and series, bit for bit, the sums being
    // independent of the order in which departures are recorded.
    let same = |a: &RepStats, b: &RepStats| {
        assert_eq!((a.events, a.stopped.is_some()), (b.events, b.stopped.is_some()));
        assert_eq!(a.range, b.range);
        assert_eq!([a.quantile(0.5), a.quantile(0.999)], [b.quantile(0.5), b.quantile(0.999)]);
        assert_same(&RepStats { level_area: Vec::new(), ..a.clone() }, b);
    };
    let farm = Farm::new(vec![1.0; 40].into_iter().chain(vec![0.5; 10]).collect(), 0.9);
    let poisson = || PoissonGaps(40.5);
    let (events, counted) = (
        p2c_run(&farm, &mut poisson(), &ExpDemands, true, u32::MAX),
        p2c_run(&farm, &mut poisson(), &ExpDemands, false, u32::MAX),
    );
    assert!(counted.level_area.is_empty() && !events.level_area.is_empty());
    same(&events, &counted);
    // Overloaded (arrivals at 1.2 times the capacity), the queue guard stops the run: the
    // departures recorded are those up to the stop.
    let over = || PoissonGaps(54.0);
    let (events, counted) = (
        p2c_run(&farm, &mut over(), &ExpDemands, true, 20),
        p2c_run(&farm, &mut over(), &ExpDemands, false, 20),
    );
    assert!(events.stopped.is_some());
    same(&events, &counted);
    // Constant gaps and demands put departures at the very instants of arrivals (multiples of
    // 1/4 are exact): a departure at an arrival's instant has left when the policy looks,
    // whichever way departures are kept.
    let two = Farm::new(vec![1.0, 1.0], 0.8);
    let (events, counted) = (
        p2c_run(&two, &mut Every(0.25), &Always(0.25), true, u32::MAX),
        p2c_run(&two, &mut Every(0.25), &Always(0.25), false, u32::MAX),
    );
    same(&events, &counted);
    assert_eq!(counted.max_queue, 1, "each request leaves as the next arrives");
    // A farm large enough (2^14 servers) that the loop fetches the servers of picks to come
    // into the cache: the fetches change nothing.
    let large = Farm::homogeneous(1 << 14, 0.9);
    let poisson = || PoissonGaps(0.9 * f64::from(1 << 14));
    let (events, counted) = (
        p2c_run(&large, &mut poisson(), &ExpDemands, true, u32::MAX),
        p2c_run(&large, &mut poisson(), &ExpDemands, false, u32::MAX),
    );
    same(&events, &counted);
}

fn assert_same(a: &RepStats, b: &RepStats) {
    assert_eq!(a.requests, b.requests);
    assert_eq!(a.sum.to_bits(), b.sum.to_bits());
    assert_eq!(a.first_half, b.first_half);
    assert_eq!(a.second_half, b.second_half);
    assert_eq!(a.max_queue, b.max_queue);
    assert_eq!(a.picks, b.picks);
    assert_eq!(a.level_area, b.level_area);
    assert_eq!(a.quantile(0.99), b.quantile(0.99));
    assert_eq!(a.series, b.series);
}

#[test]
fn a_rate_change_at_time_zero_is_the_farm_with_that_rate() {
    // Same streams, same arrivals: slowing rate-1 servers to 0.5 at time 0 (before the first
    // arrival) is, bit for bit, a farm of rate-0.5 servers. The first runs on servers whose rates
    // can change, the second on the article's one-slot servers; both compute a departure as
    // start + demand / rate. Under a board too.
    for info in [Information::Live, Information::Board { period: 1.0, local: false }] {
        let slowed = Farm { events: vec![all(0.0, 0.5)], ..Farm::homogeneous(50, 0.4) };
        let half = Farm::new(vec![0.5; 50], 0.8);
        let (a, b) = (simulate_p2c(&slowed, 20.0, info), simulate_p2c(&half, 20.0, info));
        assert_same(&a, &b);
        // The rate change is one more event.
        assert_eq!(a.events, b.events + 1);
    }
    // And servers whose rates can change, given a change that changes nothing, are the article's.
    let same = Farm { events: vec![all(0.0, 1.0)], ..Farm::homogeneous(50, 0.9) };
    let plain = Farm::homogeneous(50, 0.9);
    assert_same(
        &simulate_p2c(&same, 45.0, Information::Live),
        &simulate_p2c(&plain, 45.0, Information::Live),
    );
}

#[test]
fn one_slot_fifo_on_servers_whose_rates_can_change_is_the_article_s_farm() {
    // An event far beyond the run leaves every request alone: servers whose rates can change then
    // give the article's replication exactly.
    let late = Farm { events: vec![all(1e9, 0.5)], ..Farm::homogeneous(50, 0.9) };
    let plain = Farm::homogeneous(50, 0.9);
    let info = Information::Board { period: 0.5, local: true };
    assert_same(&simulate_p2c(&late, 45.0, info), &simulate_p2c(&plain, 45.0, info));
}

const FARM: &str = r#"
policies = ["random", "p2c", "jsq"]
[farm]
groups = [{ name = "slow", count = 4, rate = 0.5 }, { name = "fast", count = 16, rate = 1.0 }]
[arrivals]
load = 0.6
[run]
requests = 20000
warmup = 2000
seeds = 2
"#;

#[test]
fn scenario_files_with_slots_ps_and_events_run() {
    let dir = Dir::new("engine-run");
    let events = "[[events]]\nat = 100.0\ngroup = \"slow\"\nrate = 0.1\n\n[[events]]\nat = 300.0\ngroup = \"slow\"\nrate = 0.5\n";
    for (name, extra, set) in [
        ("slots", "", "farm.slots=3"),
        ("ps", "", "farm.discipline=ps"),
        ("ps-slots", "", "farm.slots=2"),
        ("events", events, "farm.slots=1"),
    ] {
        let file = dir.file(&format!("{name}.toml"), &format!("{FARM}{extra}"));
        let mut args = vec!["run", file.as_str(), "--set", set, "--format", "csv", "-q"];
        if name == "ps-slots" {
            args.extend(["--set", "farm.discipline=ps"]);
        }
        let out = lbsim_ok(&args);
        let rows: Vec<&str> = out.lines().collect();
        assert_eq!(rows.len(), 4, "{name}: {out}");
        assert!(rows[0].starts_with("policy,seeds,mean,"), "{name}: {out}");
    }
    // The events file prints them back in its canonical form.
    let file = dir.file("events.toml", &format!("{FARM}{events}"));
    let printed = lbsim_ok(&["run", &file, "--print"]);
    assert!(printed.contains("[[events]]") && printed.contains("rate = 0.1"), "{printed}");
}

#[test]
fn a_slowed_group_shows_in_the_run_output() {
    // The slow group slowed tenfold for the whole run: random keeps sending it a fifth of the
    // traffic, at 0.6 x 0.5 / 0.05 = 6 times its capacity, so its queues grow without bound.
    let dir = Dir::new("engine-slowed");
    let slowed = format!("{FARM}[[events]]\nat = 0.0\ngroup = \"slow\"\nrate = 0.05\n");
    let (plain, slowed) = (dir.file("plain.toml", FARM), dir.file("slowed.toml", &slowed));
    let mean = |file: &str| -> f64 {
        let out = lbsim_ok(&["run", file, "--policies", "random", "--format", "csv", "-q"]);
        out.lines().nth(1).unwrap().split(',').nth(2).unwrap().parse().unwrap()
    };
    let (before, after) = (mean(&plain), mean(&slowed));
    assert!(after > 10.0 * before, "slowed {after} vs {before}");
}

#[test]
fn bad_events_are_exit_2_naming_the_key() {
    let dir = Dir::new("engine-bad");
    for (event, key) in [
        ("at = 1.0\ngroup = \"slow\"\nrte = 0.1\n", "rte"),
        ("at = 1.0\ngroup = \"none\"\nrate = 0.1\n", "events"),
        ("at = -1.0\ngroup = \"slow\"\nrate = 0.1\n", "events"),
        ("at = 1.0\ngroup = \"slow\"\nrate = 0.0\n", "events"),
    ] {
        let file = dir.file("bad.toml", &format!("{FARM}[[events]]\n{event}"));
        let out = lbsim(&["run", &file, "-q"]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{event}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{event}: {err}");
        assert!(err.contains(key), "{event}: {err}");
    }
    for (set, key) in [("farm.slots=0", "farm.slots"), ("farm.slots=1001", "farm.slots")] {
        let file = dir.file("slots.toml", FARM);
        let out = lbsim(&["run", &file, "--set", set, "-q"]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{set}: {err}");
        assert!(err.contains(key), "{set}: {err}");
    }
}

//! Statistical validation against closed forms. Fixed seeds make every test deterministic; each
//! tolerance is derived from the run length in the comment beside it, at about five standard
//! deviations, so a correct simulator fails with negligible probability while a modelling error of
//! a few percent does not pass.

use lbsim::experiment::bins::Variant;
use lbsim::experiment::{Scenario, Workload, bins};
use lbsim::model::{Farm, Information};
use lbsim::policy::PolicyKind;
use lbsim::rng::StreamKey;
use lbsim::stats::median;
use lbsim::theory::*;

use crate::util::{pooled, replicate, run_length};

fn live(n: usize, load: f64, policy: PolicyKind) -> Scenario {
    Scenario::live(Farm::homogeneous(n, load), policy, 10.0)
}

/// Standard deviation of a pooled mean sojourn over `n` requests of M/M/1 queues at `rho`:
/// Whitt's variance constant for the waiting time, doubled to cover the sojourn's own service
/// time and its covariance with the waits that follow. Independent servers pool, so `n` is the
/// total over servers and replications.
fn mm1_mean_sd(rho: f64, n: f64) -> f64 {
    (2.0 * mm1_wait_variance_constant(rho) / n).sqrt()
}

/// Standard deviation of the p99 estimate over `n` M/M/1 sojourns: the iid order-statistic
/// variance `p(1-p) / (n f(q)^2)`, with density `f(q) = (1-rho)(1-p)` at the quantile, inflated by
/// the queue's relaxation time in customers, `(1+rho)/(1-rho)^2`, for their autocorrelation.
fn mm1_p99_sd(rho: f64, n: f64) -> f64 {
    let p = 0.99;
    let iid = (p * (1.0 - p) / n).sqrt() / ((1.0 - rho) * (1.0 - p));
    iid * ((1.0 + rho) / (1.0 - rho).powi(2)).sqrt()
}

#[test]
fn homo_random_is_m_m_1() {
    // Uniform random splitting of a Poisson stream makes each of the 100 servers an M/M/1 queue.
    // At 0.9 the warm-up (1,111 time units) is three relaxation times, 1/(1 - sqrt(0.9))^2 = 380.
    for rho in [0.5, 0.8, 0.9] {
        let (seeds, requests) = (2, 1_000_000);
        let reps =
            replicate(live(100, rho, PolicyKind::Random), &run_length(100_000, requests), seeds, 7);
        let all = pooled(&reps);
        let n = (seeds * requests) as f64;
        let (mean, want) = (all.mean(), mm1_mean(rho));
        let tol = 5.0 * mm1_mean_sd(rho, n);
        assert!((mean - want).abs() < tol, "rho {rho}: mean {mean} vs {want} +- {tol}");
        // p99: plus the histogram's 0.1% resolution.
        let (p99, want) = (all.quantile(0.99), mm1_quantile(rho, 0.99));
        let tol = 5.0 * mm1_p99_sd(rho, n) + 1e-3 * want;
        assert!((p99 - want).abs() < tol, "rho {rho}: p99 {p99} vs {want} +- {tol}");
    }
}

#[test]
fn homo_rr_is_e_k_m_1() {
    // Round robin over k = 100 servers hands each one every 100th Poisson arrival: Erlang-100
    // interarrivals, an E_k/M/1 queue with sojourn Exp(1 - sigma). More regular arrivals are less
    // autocorrelated than Poisson ones, so the M/M/1 variance at the same load is a safe bound.
    for rho in [0.7, 0.9] {
        let (seeds, requests) = (2, 2_000_000);
        let reps = replicate(
            live(100, rho, PolicyKind::RoundRobin),
            &run_length(200_000, requests),
            seeds,
            3,
        );
        let all = pooled(&reps);
        let n = (seeds * requests) as f64;
        let (mean, want) = (all.mean(), ekm1_mean(100, rho));
        let tol = 5.0 * mm1_mean_sd(rho, n);
        assert!((mean - want).abs() < tol, "rho {rho}: mean {mean} vs E_k/M/1 {want} +- {tol}");
        let (p99, want) = (all.quantile(0.99), ekm1_quantile(100, rho, 0.99));
        let tol = 5.0 * mm1_p99_sd(rho, n) + 1e-3 * want;
        assert!((p99 - want).abs() < tol, "rho {rho}: p99 {p99} vs E_k/M/1 {want} +- {tol}");
        // And rr is far from M/M/1, so the check above can tell them apart.
        assert!(mean < 0.7 * mm1_mean(rho));
    }
}

/// Median over replications of the time-averaged fraction of servers with queue >= i.
fn simulated_levels(d: u32, lambda: f64, warmup: u64, requests: u64) -> Vec<f64> {
    let sc = Scenario {
        farm: Farm::homogeneous(1000, lambda),
        policy: PolicyKind::PnC(d),
        info: Information::Live,
        track_levels: true,
        tuning: lbsim::policy::Tuning::default(),
        clients: lbsim::model::Clients::default(),
        workload: Workload::default(),
    };
    let reps = replicate(sc, &run_length(warmup, requests), 3, 1);
    let fractions: Vec<Vec<f64>> = reps.iter().map(|r| r.level_fractions()).collect();
    (0..12)
        .map(|i| {
            median(&fractions.iter().map(|f| f.get(i).copied().unwrap_or(0.0)).collect::<Vec<_>>())
        })
        .collect()
}

/// Asserts `|s_i - fixed point| < tol` for the levels `levels` of `d` choices at `lambda`.
fn assert_levels_near(
    s: &[f64],
    d: u32,
    lambda: f64,
    levels: std::ops::RangeInclusive<usize>,
    tol: f64,
) {
    for i in levels {
        let want = fixed_point(lambda, d, i as u32);
        assert!((s[i] - want).abs() < tol, "d = {d}, s_{i}: {} vs {want} +- {tol}", s[i]);
    }
}

#[test]
fn fixed_d1_matches_the_m_m_1_tail() {
    // d = 1 at lambda = 0.7: each server is M/M/1, s_i = 0.7^i. The relaxation time is
    // 1/(1 - sqrt(0.7))^2 = 38 time units; the warm-up (286 time units) is 7.5 of them, and the
    // window of 1430 time units gives each server's time average a variance of at most
    // 2 * 38 * 0.25 / 1430 = 0.0133; over 1000 independent servers the sd is 0.0036, so 5 sd = 0.018.
    let s = simulated_levels(1, 0.7, 200_000, 1_000_000);
    assert_levels_near(&s, 1, 0.7, 1..=10, 0.018);
}

#[test]
fn fixed_d2_matches_the_mean_field_fixed_point() {
    // The article's setting: d = 2, lambda = 0.9, n = 1000. The mean-field limit is exact only as
    // n -> inf; at n = 1000 the bias is O(1/n) ~ 1e-3, and the noise of a 1M-request window over
    // 1000 servers is of the same order, so |sim - theory| < 0.004 for the levels that matter.
    // The deepest level (s_6 ~ 1e-3) is relatively heavier at finite n (the article saw 0.00149
    // against 0.00131): it must lie above the fixed point and within 30% of it.
    let s = simulated_levels(2, 0.9, 200_000, 1_000_000);
    assert_levels_near(&s, 2, 0.9, 1..=5, 0.004);
    let want = fixed_point(0.9, 2, 6);
    assert!(s[6] > want && s[6] < 1.3 * want, "s_6: {} vs {want}", s[6]);
    // The double-exponential tail: nothing at level 8 (fixed point 1.5e-12).
    assert!(s[8] < 1e-6);
}

#[test]
fn fixed_d3_matches_the_mean_field_fixed_point() {
    // d = 3 at lambda = 0.9, n = 1000: s_1..s_3 are 0.9, 0.656, 0.254 and s_4 = 0.0148. Same
    // reasoning as d = 2: O(1/n) bias plus noise of order 1e-3, so 0.004 absolute; the fixed
    // point's s_5 is 2.9e-6, below what the run resolves, so only its order is checked.
    let s = simulated_levels(3, 0.9, 200_000, 1_000_000);
    assert_levels_near(&s, 3, 0.9, 1..=4, 0.004);
    assert!(s[5] < 1e-4 && s[6] < 1e-6, "triple-exponential tail: {:?}", &s[5..7]);
}

#[test]
fn stale_random_is_m_m_1_at_every_period() {
    // random reads no board, so a periodic board changes nothing: each server is M/M/1 at 0.8
    // whatever T is (the pooled mean of 2M requests has sd 0.031; 5 sd = 0.16), and with common
    // random numbers the replications are identical, not merely close.
    let run = run_length(100_000, 1_000_000);
    let at = |info| {
        let sc = Scenario {
            farm: Farm::homogeneous(100, 0.8),
            policy: PolicyKind::Random,
            info,
            track_levels: false,
            tuning: lbsim::policy::Tuning::default(),
            clients: lbsim::model::Clients::default(),
            workload: Workload::default(),
        };
        pooled(&replicate(sc, &run, 2, 11))
    };
    let live = at(Information::Live);
    let tol = 5.0 * mm1_mean_sd(0.8, 2e6);
    assert!((live.mean() - mm1_mean(0.8)).abs() < tol, "{} vs 5 +- {tol}", live.mean());
    for period in [0.5, 5.0, 50.0] {
        let board = at(Information::Board { period, local: false });
        assert_eq!(board.sum, live.sum, "T = {period}");
        assert_eq!(board.quantile(0.99), live.quantile(0.99));
    }
}

#[test]
fn p2c_and_p3c_are_near_the_mean_field_sojourn_at_n_1000() {
    // T_d(lambda) at n = 1000 with 2M requests: the sojourn's relaxation under P2C is short (a few
    // time units), so the noise of the pooled mean is ~0.1%; the finite-n bias is O(1/n). 1% covers
    // both with room.
    for d in [2, 3] {
        let reps =
            replicate(live(1000, 0.9, PolicyKind::PnC(d)), &run_length(200_000, 2_000_000), 1, 5);
        let (mean, want) = (pooled(&reps).mean(), fixed_point_mean(0.9, d));
        assert!((mean - want).abs() < 0.01 * want, "d {d}: {mean} vs T_d {want}");
    }
}

#[test]
fn jsq_is_never_below_the_m_m_n_bound() {
    // A central FIFO queue (M/M/n) is the best any immediate dispatcher can do. JSQ at n = 100
    // comes close; the pooled mean's noise here is below 0.5%, so allow that much under the bound.
    for rho in [0.5, 0.9, 0.95] {
        let reps =
            replicate(live(100, rho, PolicyKind::Jsq), &run_length(100_000, 1_000_000), 2, 9);
        let (mean, bound) = (pooled(&reps).mean(), mmn_mean(100, rho));
        assert!(mean > bound * 0.995, "rho {rho}: jsq {mean} below M/M/n {bound}");
        // And it beats p2c, as the article says jsq is best with fresh information.
        let p2c = pooled(&replicate(
            live(100, rho, PolicyKind::PnC(2)),
            &run_length(100_000, 1_000_000),
            2,
            9,
        ));
        assert!(mean < p2c.mean());
    }
}

#[test]
fn bins_two_choices_at_a_million_gives_four() {
    // ln ln n / ln 2 = 3.8 at n = 10^6; the survey quotes 4 for two choices and about 12 at most
    // for one. Three seeds, median.
    let loads = |d: u32| -> Vec<f64> {
        (0..3u64)
            .map(|k| {
                let mut rng = StreamKey::new(1, "test-bins").u64(u64::from(d)).u64(k).rng();
                f64::from(bins::max_load(1_000_000, d, Variant::Uniform, &mut rng))
            })
            .collect()
    };
    assert_eq!(median(&loads(2)), 4.0);
    let one = median(&loads(1));
    assert!((8.0..=12.0).contains(&one), "d = 1: {one}");
}

// ---------------------------------------------------------------------------------------------
// Scenario workloads: other service distributions and arrival processes.

use lbsim::stats::Summary;
use lbsim::workload::{ArrivalSpec, ServiceSpec};

/// `random` on `n` rate-1 servers, with the given arrivals and service, as `lbsim run`
/// builds it (the canonical forms key the streams).
fn workload(n: usize, arrivals: ArrivalSpec, service: ServiceSpec) -> Scenario {
    let dir = std::path::Path::new(".");
    let a = arrivals.build(n as f64, dir).expect("valid arrivals");
    let s = service.build(dir).expect("valid service");
    let key = format!("{arrivals:?}|{service:?}");
    let mut sc = live(n, a.load(n as f64), PolicyKind::Random);
    sc.workload = Workload { arrivals: Some(a), service: s, key, keys: None };
    sc
}

fn summary(sc: Scenario, warmup: u64, requests: u64, seeds: u64) -> Summary {
    let reps = replicate(sc, &run_length(warmup, requests), seeds, 3);
    Summary::from_reps(&reps, requests)
}

/// `|got - want|` within `k` half-widths of the 95% t interval over replications; the interval
/// must itself be informative (under 5% of `want`), or the check would prove nothing.
fn within_ci(what: &str, got: &Summary, want: f64, k: f64) {
    let ci = got.mean_ci95.expect("several replications");
    assert!(ci < 0.05 * want, "{what}: interval {ci} too wide to test against {want}");
    assert!((got.mean - want).abs() <= k * ci, "{what}: {} +- {ci}, expected {want}", got.mean);
}

#[test]
fn random_makes_each_server_m_g_1_pollaczek_khinchine() {
    // Random splitting of Poisson arrivals gives each server Poisson arrivals: M/G/1, whose mean
    // sojourn is Pollaczek-Khinchine's. 20 servers, 10 replications of 2e5 requests (1e5 per
    // server in all); the warm-up of 2e4 arrivals is 1,000 time units per server, over twice the
    // relaxation time of the slowest case (hyperexp scv 4 at 0.8: (1 + scv)/(1 - sqrt(rho))^2 ~
    // 450). The tolerance is two half-widths of the t interval over the 10 replications, about
    // 4.5 standard errors of the mean.
    let services = [
        ServiceSpec::Det,
        ServiceSpec::Erlang { k: 4 },
        ServiceSpec::Hyperexp { scv: 4.0 },
        ServiceSpec::Lognormal { scv: 1.5 },
    ];
    for load in [0.5, 0.8] {
        for service in &services {
            let scv = service.scv();
            let arrivals = ArrivalSpec::Poisson { load: Some(load), rate: None };
            let s = summary(workload(20, arrivals, service.clone()), 20_000, 200_000, 10);
            within_ci(&format!("{service:?} at {load}"), &s, mg1_mean(load, scv), 2.0);
        }
    }
}

#[test]
fn renewal_arrivals_with_scv_1_behave_as_poisson() {
    // Gamma gaps with SCV 1 are exponential: the same model as Poisson, drawn differently, so
    // the two means agree within their combined intervals (independent streams: the canonical
    // forms differ), and both match M/M/1.
    let poisson = ArrivalSpec::Poisson { load: Some(0.8), rate: None };
    let renewal = ArrivalSpec::Renewal { load: Some(0.8), rate: None, scv: 1.0 };
    let a = summary(workload(20, poisson, ServiceSpec::Exp), 20_000, 200_000, 10);
    let b = summary(workload(20, renewal, ServiceSpec::Exp), 20_000, 200_000, 10);
    let (ca, cb) = (a.mean_ci95.unwrap(), b.mean_ci95.unwrap());
    assert!(
        (a.mean - b.mean).abs() <= 2.0 * (ca * ca + cb * cb).sqrt(),
        "{} vs {}",
        a.mean,
        b.mean
    );
    within_ci("renewal scv 1", &b, mm1_mean(0.8), 2.0);
}

#[test]
fn round_robin_with_deterministic_arrivals_and_service_never_waits() {
    // Arrivals exactly 1/(0.8 * 10) apart dealt in turn to 10 servers: each server sees one
    // every 1.25 time units and serves it in exactly 1, so nobody waits and every sojourn is 1.
    let arrivals = ArrivalSpec::Renewal { load: Some(0.8), rate: None, scv: 0.0 };
    let mut sc = workload(10, arrivals, ServiceSpec::Det);
    sc.policy = PolicyKind::RoundRobin;
    let s = summary(sc, 1_000, 10_000, 2);
    assert!((s.mean - 1.0).abs() < 1e-9, "{}", s.mean);
    assert!((s.quantile(0.999) - 1.0).abs() < 1e-3);
    assert_eq!(s.max_queue, 1);
}

#[test]
fn uniform_and_bounded_pareto_service_meet_pollaczek_khinchine() {
    // As for the other laws above: random splitting makes each of the 20 servers M/G/1, whose
    // mean sojourn is 1 + rho (1 + scv)/(2 (1 - rho)). scv: uniform on [0, 2] 1/3, on [1, 3]
    // scaled to [0.5, 1.5] 1/12; bounded Pareto alpha 1.5 up to 30 mean demands 2.35, alpha 2.5
    // up to 50 0.61. The warm-up of 2e4 arrivals (1,000 time units per server) is over three
    // relaxation times of the slowest case ((1 + 2.35)/(1 - sqrt(0.8))^2 = 300). Tolerance: two
    // half-widths of the t interval over 10 replications, about 4.5 standard errors.
    let services = [
        ServiceSpec::Uniform { low: 0.0, high: 2.0 },
        ServiceSpec::Uniform { low: 1.0, high: 3.0 },
        ServiceSpec::BoundedPareto { alpha: 1.5, high: 30.0 },
        ServiceSpec::BoundedPareto { alpha: 2.5, high: 50.0 },
    ];
    for load in [0.5, 0.8] {
        for service in &services {
            let scv = service.scv();
            assert!(scv.is_finite() && scv > 0.0, "{service:?}: scv {scv}");
            let arrivals = ArrivalSpec::Poisson { load: Some(load), rate: None };
            let s = summary(workload(20, arrivals, service.clone()), 20_000, 200_000, 10);
            within_ci(&format!("{service:?} at {load}"), &s, mg1_mean(load, scv), 2.0);
        }
    }
}

#[test]
fn weighted_random_puts_every_server_at_the_same_utilisation() {
    // 20 servers of rate 0.5 and 10 of rate 3 (capacity 40) at load 0.8. Drawing servers in
    // proportion to rate splits the Poisson stream into Poisson streams of rate 0.8 mu_i, so
    // server i is M/M/1 at utilisation 0.8 with mean sojourn 1/(mu_i (1 - 0.8)) = 5/mu_i; a
    // request goes to it with probability mu_i/40, so the pooled mean is
    // sum_i (mu_i/40)(5/mu_i) = 5 * 30/40 = 3.75. (Uniform random sends each slow server 1.07,
    // over its rate 0.5: it never settles.) Server i's own mean over its n mu_i/40 requests has
    // the M/M/1 standard deviation `mm1_mean_sd` in its time unit 1/mu_i; the pooled mean's is
    // the root of the sum of (mu_i/40)^2 times their squares. Tolerance: 5 of those. Warm-up:
    // 5e4 arrivals are 1,560 time units, nine relaxation times of a slow server
    // (1/(0.5 (1 - sqrt(0.8))^2) = 178).
    let rates: Vec<f64> = [vec![0.5; 20], vec![3.0; 10]].concat();
    let total: f64 = rates.iter().sum();
    let mut sc = Scenario::live(Farm::new(rates.clone(), 0.8), PolicyKind::Random, 10.0);
    sc.tuning = PolicyKind::Random.tuning("weighted=true").unwrap();
    let (seeds, requests) = (4, 500_000);
    let all = pooled(&replicate(sc, &run_length(50_000, requests), seeds, 11));
    let n = (seeds * requests) as f64;
    let want = rates.len() as f64 / (total * (1.0 - 0.8));
    let var: f64 = rates
        .iter()
        .map(|mu| {
            let share = mu / total;
            (share * mm1_mean_sd(0.8, n * share) / mu).powi(2)
        })
        .sum();
    let tol = 5.0 * var.sqrt();
    let mean = all.mean();
    assert!((mean - want).abs() < tol, "mean {mean} vs {want} +- {tol}");
}

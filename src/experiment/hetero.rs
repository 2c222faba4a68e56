//! `lbsim hetero`: slow and fast servers, where static weights fail.
//!
//! Stability (`stable`) is decided analytically for static splits, which send a fixed share of the
//! arrivals to each server whatever the queues: `random` and `rr` give every server `1/n` of the
//! arrivals, `swrr` gives server `i` the share `w_i / W`; the split is stable when every server's
//! arrival rate is below its service rate. An adaptive policy is marked unstable only when the queue
//! guard stopped one of its replications: growth cannot be told from a slow start-up by the output
//! alone, so a row that still trends is reported as not `steady` (MSER-5, like every row) and the
//! note asks for a longer run. Unstable rows still print their numbers (which only grow with the
//! run length).

use serde::Serialize;

use super::common::{Common, RunConfig};
use super::queueing::{
    baseline, check_farm_size, check_horizon, check_run_size, check_swrr, group, policy_name,
    policy_names, print_scenario, validated_run,
};
use super::{Command, Experiment, Sweep};
use super::{
    Outcome, Reading, STEADY_NOTE, Scenario, params, readings, steadiness_mark, stop_warnings,
};
use crate::cli::Global;
use crate::cli::HeteroArgs;
use crate::error::{UsageError, conflict};
use crate::limits;
use crate::model::Farm;
use crate::output::{Report, plot};
use crate::policy::{PolicyKind, integer_weights};
use crate::stats::Summary;

/// `lbsim hetero`.
#[derive(Debug, Clone, Serialize)]
pub struct HeteroConfig {
    /// Slow servers.
    pub slow: usize,
    /// Rate of a slow server.
    pub slow_rate: f64,
    /// Fast servers.
    pub fast: usize,
    /// Rate of a fast server.
    pub fast_rate: f64,
    /// Utilisation of total capacity.
    pub load: f64,
    /// Policies.
    #[serde(serialize_with = "policy_names")]
    pub policies: Vec<PolicyKind>,
    /// Peak-EWMA decay constant.
    pub tau: f64,
    /// The policy the others are compared with (`--baseline`).
    #[serde(serialize_with = "policy_name")]
    pub baseline: Option<PolicyKind>,
    /// Run length.
    pub run: RunConfig,
}

impl HeteroConfig {
    /// Rates, slow servers first.
    pub fn rates(&self) -> Vec<f64> {
        let mut r = vec![self.slow_rate; self.slow];
        r.resize(self.slow + self.fast, self.fast_rate);
        r
    }
}

/// `lbsim hetero`.
pub struct Hetero;

impl Command for Hetero {
    type Args = HeteroArgs;
    type Config = HeteroConfig;
    type Rows = Vec<HeteroRow>;

    fn plot(a: &HeteroArgs) -> Option<std::path::PathBuf> {
        a.plot.clone()
    }

    fn figure(rows: &Vec<HeteroRow>) -> Option<String> {
        let points: Vec<plot::SweepPoint> = rows
            .iter()
            .map(|r| plot::SweepPoint {
                line: r.policy.clone(),
                x: None,
                mean: r.mean,
                mean_ci95: r.mean_ci95,
                p99: r.p99,
                p99_ci95: r.p99_ci95,
                steady: r.reading.steady,
            })
            .collect();
        Some(plot::sweep("Heterogeneous farm: sojourn per policy", "policy", &points))
    }

    /// Validates `lbsim hetero`: a farm of slow and fast servers and its policies.
    fn config(a: &HeteroArgs, common: &mut Common, _: &Global) -> Result<Experiment, UsageError> {
        let (seeds, threads) = (common.seeds, common.threads);
        let (slow, fast) = (a.slow, a.fast);
        if slow + fast == 0 || (slow + fast) as u64 > limits::SERVERS {
            return Err(conflict(
                "--slow plus --fast",
                format!("must be from 1 to {} servers, got {}", limits::SERVERS, slow + fast),
            ));
        }
        let (slow_rate, fast_rate, load, tau) = (a.slow_rate, a.fast_rate, a.load, a.tau);
        let policies = a.policies.to_vec();
        check_farm_size(&policies, slow + fast, "--slow plus --fast")?;
        let what = format!("--slow plus --fast ({})", slow + fast);
        check_run_size(seeds, policies.len(), threads, slow + fast, &what)?;
        let run = validated_run(&a.run, 1_000_000, 100_000, seeds)?;
        let capacity = slow as f64 * slow_rate + fast as f64 * fast_rate;
        let fastest = [(slow, slow_rate), (fast, fast_rate)]
            .iter()
            .filter(|&&(count, _)| count > 0)
            .fold(0.0, |m, &(_, rate)| f64::max(m, rate));
        check_horizon(&run, load * capacity, fastest)?;
        let baseline = baseline(&a.baseline, &policies)?;
        let cfg =
            HeteroConfig { slow, slow_rate, fast, fast_rate, load, policies, tau, baseline, run };
        check_swrr(&cfg.policies, &cfg.rates())?;
        if a.print_scenario {
            let groups = [group("slow", slow, slow_rate), group("fast", fast, fast_rate)];
            let (first, tau) = ((cfg.load, None), cfg.tau);
            return print_scenario(
                "hetero",
                groups.into_iter().flatten().collect(),
                &cfg.policies,
                tau,
                &cfg.run,
                common,
                first,
                None,
            );
        }
        Ok(Experiment::Hetero(cfg))
    }
}

impl Sweep for Hetero {
    /// The scenarios of `hetero`, in row order: one per policy on the configured farm.
    fn scenarios(cfg: &HeteroConfig) -> Vec<Scenario> {
        let farm = Farm::new(cfg.rates(), cfg.load);
        cfg.policies.iter().map(|&p| Scenario::live(farm.clone(), p, cfg.tau)).collect()
    }

    fn run_length(cfg: &HeteroConfig) -> &RunConfig {
        &cfg.run
    }

    /// The rows of `hetero` and their report (marks, notes, warnings) from the outcomes of its
    /// scenarios, in plan order.
    fn summarise(
        cfg: &HeteroConfig,
        c: &Common,
        scenarios: &[Scenario],
        outcomes: &[Outcome],
    ) -> (Vec<HeteroRow>, Report) {
        let readings = readings(scenarios, outcomes, &cfg.run, cfg.baseline);
        let mut rows = Vec::new();
        let mut marks = Vec::new();
        let mut unstable = false;
        for ((sc, o), reading) in scenarios.iter().zip(outcomes).zip(readings) {
            let s = &o.summary;
            let (stable, why) = stability(sc.policy, &sc.farm, s);
            unstable |= !stable;
            marks.push(why.or_else(|| steadiness_mark(s, &cfg.run)));
            rows.push(HeteroRow {
                policy: sc.policy.name(),
                seeds: s.seeds,
                mean: s.mean,
                p99: s.p99,
                max_queue: s.max_queue,
                stable,
                mean_ci95: s.mean_ci95,
                p99_ci95: s.p99_ci95,
                drift: s.drift,
                reading,
            });
        }
        let mut report = Report::new("hetero", &params(c, cfg), &rows);
        report.marks = marks;
        report.note_column = true;
        report.warnings = stop_warnings(scenarios, outcomes, &cfg.run);
        if unstable {
            report.notes.push(
                "unstable rows still print their numbers: they grow with the run length.".into(),
            );
        }
        if rows.iter().any(|r| !r.reading.steady) {
            report.notes.push(STEADY_NOTE.into());
        }
        (rows, report)
    }
}

/// One row of `hetero`.
#[derive(Debug, Clone, Serialize)]
pub struct HeteroRow {
    /// Policy name.
    pub policy: String,
    /// Replications.
    pub seeds: u64,
    /// Pooled mean sojourn.
    pub mean: f64,
    /// 99th percentile sojourn.
    pub p99: f64,
    /// Largest queue seen.
    pub max_queue: u32,
    /// False when some server receives more than it can serve.
    pub stable: bool,
    /// 95% half-width of the per-replication means.
    pub mean_ci95: Option<f64>,
    /// 95% half-width of the per-replication p99s.
    pub p99_ci95: Option<f64>,
    /// Second-half over first-half mean.
    pub drift: f64,
    /// Steadiness, stops and the optional columns.
    #[serde(flatten)]
    pub reading: Reading,
}

/// Per-server arrival shares of a static split, or `None` for an adaptive policy.
pub fn static_shares(policy: PolicyKind, rates: &[f64]) -> Option<Vec<f64>> {
    let n = rates.len() as f64;
    match policy {
        PolicyKind::Random | PolicyKind::RoundRobin => Some(vec![1.0 / n; rates.len()]),
        PolicyKind::Swrr => {
            let w = integer_weights(rates);
            let total: u64 = w.iter().sum();
            Some(w.iter().map(|&x| x as f64 / total as f64).collect())
        }
        _ => None,
    }
}

/// Stability verdict and, when unstable, why.
pub fn stability(policy: PolicyKind, farm: &Farm, s: &Summary) -> (bool, Option<String>) {
    if let Some(shares) = static_shares(policy, &farm.rates) {
        let lambda = farm.arrival_rate();
        let worst = shares
            .iter()
            .zip(&farm.rates)
            .map(|(share, rate)| share * lambda / rate)
            .fold(0.0, f64::max);
        if worst >= 1.0 {
            let mut why =
                format!("unstable: a server gets {worst:.2}x its capacity (static split)");
            if let Some(stopped) = &s.stopped {
                why = format!("{why}; {stopped}");
            }
            return (false, Some(why));
        }
        return (true, None);
    }
    if let Some(why) = &s.stopped {
        return (false, Some(format!("unstable: {why}")));
    }
    (true, None)
}

//! `lbsim hetero`: slow and fast servers, where static weights fail.
//!
//! Stability (`stable`) is decided analytically for static splits, which send a fixed share of the
//! arrivals to each server whatever the queues: `random` and `rr` give every server `1/n` of the
//! arrivals, `swrr` gives server `i` the share `w_i / W`; the split is stable when every server's
//! arrival rate is below its service rate. Adaptive policies are judged by growth: a drift (second
//! half of the measured requests over the first half) above [`UNSTABLE_DRIFT`], or a replication
//! stopped by the queue guard, marks them unstable. Unstable rows still print their numbers (which
//! only grow with the run length).

use serde::Serialize;

use super::{DRIFT_NOTE, Progress, Scenario, params, run_scenarios, total_events};
use crate::config::{Common, HeteroConfig};
use crate::model::Farm;
use crate::output::Report;
use crate::policy::{PolicyKind, integer_weights};
use crate::stats::Summary;

/// Drift above which an adaptive policy is reported unstable.
pub const UNSTABLE_DRIFT: f64 = 1.25;

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
    if s.drift > UNSTABLE_DRIFT {
        return (false, Some(format!("unstable: drift {:.2} > {UNSTABLE_DRIFT}", s.drift)));
    }
    (true, None)
}

/// Runs `hetero`; returns the report and the number of events simulated.
pub fn run(cfg: &HeteroConfig, c: &Common, progress: Progress) -> (Report, u64) {
    let farm = Farm { rates: cfg.rates(), load: cfg.load };
    let scenarios: Vec<Scenario> =
        cfg.policies.iter().map(|&p| Scenario::live(farm.clone(), p, cfg.tau)).collect();
    let groups = run_scenarios(&scenarios, &cfg.run, c, progress);
    let summaries: Vec<Summary> = groups.iter().map(|g| Summary::from_reps(g)).collect();
    let mut rows = Vec::new();
    let mut marks = Vec::new();
    for (sc, s) in scenarios.iter().zip(&summaries) {
        let (stable, why) = stability(sc.policy, &farm, s);
        marks.push(why.or_else(|| super::steadiness_mark(s)));
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
        });
    }
    let mut report = Report::new("hetero", &params(c, cfg), &rows);
    report.marks = marks;
    report.warnings = super::stop_warnings(&scenarios, &summaries);
    if report.marks.iter().any(Option::is_some) {
        report
            .notes
            .push("unstable rows still print their numbers: they grow with the run length.".into());
        report.notes.push(DRIFT_NOTE.into());
    }
    (report, total_events(&groups))
}

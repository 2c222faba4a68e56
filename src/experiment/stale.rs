//! `lbsim stale`: the periodic bulletin board of Mitzenmacher's *How Useful Is Old Information?*
//! (PODC 1997; IEEE TPDS 11(1), 2000).
//!
//! Every `T` time units all queue lengths are posted at once; policies read the board, not the
//! servers (`T = 0`: live queue lengths). `jsq-local` is `jsq` under the board with
//! update-on-dispatch ([`BoardWithDispatch`](crate::info::BoardWithDispatch)): its dispatches also
//! add one to the chosen server's board entry at once, as a balancer's own in-flight counter does (Envoy's
//! `rq_active`, NGINX's `conns`); each post resets the entries to the truth.

use serde::Serialize;

use super::{
    Outcome, Progress, Reading, STEADY_NOTE, Scenario, Workload, params, readings, run_scenarios,
    steadiness_mark, stop_warnings, total_events,
};
use crate::config::{Common, StaleConfig};
use crate::model::{Farm, Information};
use crate::output::Report;
use crate::policy::PolicyKind;

/// One row of `stale`.
#[derive(Debug, Clone, Serialize)]
pub struct StaleRow {
    /// Board period (0 = live).
    pub period: f64,
    /// Policy name.
    pub policy: String,
    /// Replications.
    pub seeds: u64,
    /// Pooled mean sojourn.
    pub mean: f64,
    /// 99th percentile sojourn.
    pub p99: f64,
    /// 95% half-width of the per-replication means.
    pub mean_ci95: Option<f64>,
    /// 95% half-width of the per-replication p99s.
    pub p99_ci95: Option<f64>,
    /// Second-half over first-half mean.
    pub drift: f64,
    /// Largest queue seen (herding shows here).
    pub max_queue: u32,
    /// Steadiness, stops and the optional columns.
    #[serde(flatten)]
    pub reading: Reading,
}

/// The information model for `policy` at board period `period` (the update-on-dispatch board for
/// a name that [counts its dispatches](PolicyKind::counts_dispatches)).
pub fn information(policy: PolicyKind, period: f64) -> Information {
    if period == 0.0 {
        Information::Live
    } else {
        Information::Board { period, local: policy.counts_dispatches() }
    }
}

/// The scenarios of `stale`, in row order: every policy at each board period.
pub fn plan(cfg: &StaleConfig) -> Vec<Scenario> {
    let farm = Farm::homogeneous(cfg.servers, cfg.load);
    cfg.periods
        .iter()
        .flat_map(|&period| {
            let farm = &farm;
            cfg.policies.iter().map(move |&p| Scenario {
                farm: farm.clone(),
                policy: p,
                info: information(p, period),
                track_levels: false,
                tuning: crate::policy::Tuning::new(crate::policy::Decay { tau: 1.0 }),
                clients: crate::model::Clients::default(),
                workload: Workload::default(),
            })
        })
        .collect()
}

/// Runs `stale`: [`plan`], the replications, [`summarise`]. Returns the rows, the report built
/// from them and the number of events simulated.
pub fn run(cfg: &StaleConfig, c: &Common, progress: Progress) -> (Vec<StaleRow>, Report, u64) {
    let scenarios = plan(cfg);
    let outcomes = run_scenarios(&scenarios, &cfg.run, c, progress);
    let (rows, report) = summarise(cfg, c, &scenarios, &outcomes);
    (rows, report, total_events(&outcomes))
}

/// The rows of `stale` and their report (marks, notes, warnings) from the outcomes of its
/// [`plan`]'s scenarios, in plan order.
pub fn summarise(
    cfg: &StaleConfig,
    c: &Common,
    scenarios: &[Scenario],
    outcomes: &[Outcome],
) -> (Vec<StaleRow>, Report) {
    let readings = readings(scenarios, outcomes, &cfg.run, cfg.baseline);
    let rows: Vec<StaleRow> = scenarios
        .iter()
        .zip(outcomes)
        .zip(readings)
        .map(|((sc, o), reading)| {
            let s = &o.summary;
            StaleRow {
                period: super::period(sc.info),
                policy: sc.policy.name(),
                seeds: s.seeds,
                mean: s.mean,
                p99: s.p99,
                mean_ci95: s.mean_ci95,
                p99_ci95: s.p99_ci95,
                drift: s.drift,
                max_queue: s.max_queue,
                reading,
            }
        })
        .collect();
    let mut report = Report::new("stale", &params(c, cfg), &rows);
    report.marks = outcomes.iter().map(|o| steadiness_mark(&o.summary, &cfg.run)).collect();
    report.note_column = true;
    report.warnings = stop_warnings(scenarios, outcomes, &cfg.run);
    if report.marks.iter().any(Option::is_some) {
        report.notes.push(STEADY_NOTE.into());
    }
    (rows, report)
}

//! `lbsim stale`: the periodic bulletin board of Mitzenmacher's *How Useful Is Old Information?*
//! (PODC 1997; IEEE TPDS 11(1), 2000).
//!
//! Every `T` time units all queue lengths are posted at once; policies read the board, not the
//! servers (`T = 0`: live queue lengths). `jsq-local` is `jsq` under the board with
//! update-on-dispatch ([`BoardWithDispatch`](crate::info::BoardWithDispatch)): its dispatches also
//! add one to the chosen server's board entry at once, as a balancer's own in-flight counter does (Envoy's
//! `rq_active`, NGINX's `conns`); each post resets the entries to the truth.

use serde::Serialize;

use super::common::{Common, RunConfig};
use super::queueing::{
    baseline, check_farm_size, check_horizon, check_run_size, check_swrr, group, policy_name,
    policy_names, print_scenario, validated_run,
};
use super::{Command, Experiment, Sweep};
use super::{
    Outcome, Reading, STEADY_NOTE, Scenario, Workload, params, readings, steadiness_mark,
    stop_warnings,
};
use crate::cli::Global;
use crate::cli::StaleArgs;
use crate::error::{UsageError, too_large};
use crate::limits;
use crate::model::{Farm, Information};
use crate::output::Report;
use crate::output::plot;
use crate::policy::PolicyKind;
use std::path::PathBuf;

/// `lbsim stale`.
#[derive(Debug, Clone, Serialize)]
pub struct StaleConfig {
    /// Servers.
    pub servers: usize,
    /// Utilisation.
    pub load: f64,
    /// Board periods (0 = live).
    pub periods: Vec<f64>,
    /// Policies.
    #[serde(serialize_with = "policy_names")]
    pub policies: Vec<PolicyKind>,
    /// The policy the others are compared with (`--baseline`).
    #[serde(serialize_with = "policy_name")]
    pub baseline: Option<PolicyKind>,
    /// Run length.
    pub run: RunConfig,
}

/// `lbsim stale`.
pub struct Stale;

impl Command for Stale {
    type Args = StaleArgs;
    type Config = StaleConfig;
    type Rows = Vec<StaleRow>;
    fn plot(a: &StaleArgs) -> Option<PathBuf> {
        a.plot.clone()
    }

    fn figure(rows: &Vec<StaleRow>) -> Option<String> {
        let points: Vec<plot::BoardPoint> = rows
            .iter()
            .map(|r| plot::BoardPoint {
                policy: &r.policy,
                period: r.period,
                mean: r.mean,
                steady: r.reading.steady,
            })
            .collect();
        Some(plot::board(&points))
    }

    /// Validates `lbsim stale`: a farm behind a board, its posting periods and policies.
    fn config(a: &StaleArgs, common: &mut Common, _: &Global) -> Result<Experiment, UsageError> {
        let (seeds, threads) = (common.seeds, common.threads);
        let (servers, load) = (a.servers, a.load);
        let (periods, policies) = (a.periods.to_vec(), a.policies.to_vec());
        check_farm_size(&policies, servers, "--servers")?;
        check_swrr(&policies, &vec![1.0; servers])?;
        let what = format!("--servers {servers}");
        check_run_size(seeds, periods.len() * policies.len(), threads, servers, &what)?;
        let run = validated_run(&a.run, 1_000_000, 100_000, seeds)?;
        check_horizon(&run, load * servers as f64, 1.0)?;
        // A post every `period` refreshes every server; the run lasts about
        // arrivals / (load * servers) time units.
        let arrivals = run.most_arrivals() as f64;
        let shortest = periods.iter().copied().filter(|&p| p > 0.0).fold(f64::MAX, f64::min);
        let updates = arrivals / (load * servers as f64) / shortest * servers as f64;
        if shortest < f64::MAX && updates > limits::BOARD_UPDATES {
            return Err(too_large(
                format!("--periods {shortest} at --load {load}"),
                format!(
                    "means about {updates:.1e} board updates (posts x servers) per replication; at most {:.0e} are accepted: raise the period or the load, or lower --requests",
                    limits::BOARD_UPDATES
                ),
            ));
        }
        let baseline = baseline(&a.baseline, &policies)?;
        if a.print_scenario {
            let groups = group("servers", servers, 1.0).into_iter().collect();
            let sweep = Some(("info.period", &periods[..]));
            let ex = print_scenario(
                "stale",
                groups,
                &policies,
                crate::experiment::run::DEFAULT_TAU,
                &run,
                common,
                (load, Some(periods[0])),
                sweep,
            )?;
            return Ok(ex);
        }
        Ok(Experiment::Stale(StaleConfig { servers, load, periods, policies, baseline, run }))
    }
}

impl Sweep for Stale {
    /// The scenarios of `stale`, in row order: every policy at each board period.
    fn scenarios(cfg: &StaleConfig) -> Vec<Scenario> {
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
                    tuning: crate::policy::Tuning::default(),
                    clients: crate::model::Clients::default(),
                    workload: Workload::default(),
                })
            })
            .collect()
    }

    fn run_length(cfg: &StaleConfig) -> &RunConfig {
        &cfg.run
    }

    /// The rows of `stale` and their report (marks, notes, warnings) from the outcomes of its
    /// scenarios, in plan order.
    fn summarise(
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
}

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

//! `lbsim homo`: every policy at every load on a farm of identical servers.

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
use crate::cli::HomoArgs;
use crate::error::UsageError;
use crate::model::Farm;
use crate::output::{Report, plot};
use crate::policy::PolicyKind;

/// `lbsim homo`.
#[derive(Debug, Clone, Serialize)]
pub struct HomoConfig {
    /// Servers.
    pub servers: usize,
    /// Utilisations.
    pub loads: Vec<f64>,
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

/// `lbsim homo`.
pub struct Homo;

impl Command for Homo {
    type Args = HomoArgs;
    type Config = HomoConfig;
    type Rows = Vec<HomoRow>;

    fn plot(a: &HomoArgs) -> Option<std::path::PathBuf> {
        a.plot.clone()
    }

    fn figure(rows: &Vec<HomoRow>) -> Option<String> {
        let points: Vec<plot::SweepPoint> = rows
            .iter()
            .map(|r| plot::SweepPoint {
                line: r.policy.clone(),
                x: Some(r.load),
                mean: r.mean,
                mean_ci95: r.mean_ci95,
                p99: r.p99,
                p99_ci95: r.p99_ci95,
                steady: r.reading.steady,
            })
            .collect();
        Some(plot::sweep("Homogeneous farm: sojourn against the load", "load", &points))
    }

    /// Validates `lbsim homo`: a farm of equal servers, its loads and policies.
    fn config(a: &HomoArgs, common: &mut Common, _: &Global) -> Result<Experiment, UsageError> {
        let (seeds, threads) = (common.seeds, common.threads);
        let (servers, loads, policies, tau) =
            (a.servers, a.loads.to_vec(), a.policies.to_vec(), a.tau);
        check_farm_size(&policies, servers, "--servers")?;
        check_swrr(&policies, &vec![1.0; servers])?;
        let what = format!("--servers {servers}");
        check_run_size(seeds, loads.len() * policies.len(), threads, servers, &what)?;
        let run = validated_run(&a.run, 1_000_000, 100_000, seeds)?;
        let lowest = loads.iter().copied().fold(1.0, f64::min);
        check_horizon(&run, lowest * servers as f64, 1.0)?;
        let baseline = baseline(&a.baseline, &policies)?;
        if a.print_scenario {
            let groups = group("servers", servers, 1.0).into_iter().collect();
            let sweep = Some(("arrivals.load", &loads[..]));
            let first = (loads[0], None);
            return print_scenario("homo", groups, &policies, tau, &run, common, first, sweep);
        }
        Ok(Experiment::Homo(HomoConfig { servers, loads, policies, tau, baseline, run }))
    }
}

impl Sweep for Homo {
    /// The scenarios of `homo`, in row order: every policy at each load.
    fn scenarios(cfg: &HomoConfig) -> Vec<Scenario> {
        cfg.loads
            .iter()
            .flat_map(|&load| {
                cfg.policies
                    .iter()
                    .map(move |&p| Scenario::live(Farm::homogeneous(cfg.servers, load), p, cfg.tau))
            })
            .collect()
    }

    fn run_length(cfg: &HomoConfig) -> &RunConfig {
        &cfg.run
    }

    /// The rows of `homo` and their report (marks, notes, warnings) from the outcomes of its
    /// scenarios, in plan order.
    fn summarise(
        cfg: &HomoConfig,
        c: &Common,
        scenarios: &[Scenario],
        outcomes: &[Outcome],
    ) -> (Vec<HomoRow>, Report) {
        let readings = readings(scenarios, outcomes, &cfg.run, cfg.baseline);
        let rows: Vec<HomoRow> = scenarios
            .iter()
            .zip(outcomes)
            .zip(readings)
            .map(|((sc, o), reading)| {
                let s = &o.summary;
                HomoRow {
                    load: sc.farm.load,
                    policy: sc.policy.name(),
                    seeds: s.seeds,
                    mean: s.mean,
                    p99: s.p99,
                    max_queue: s.max_queue,
                    mean_ci95: s.mean_ci95,
                    p99_ci95: s.p99_ci95,
                    drift: s.drift,
                    reading,
                }
            })
            .collect();
        let mut report = Report::new("homo", &params(c, cfg), &rows);
        report.marks = outcomes.iter().map(|o| steadiness_mark(&o.summary, &cfg.run)).collect();
        report.note_column = true;
        report.warnings = stop_warnings(scenarios, outcomes, &cfg.run);
        if report.marks.iter().any(Option::is_some) {
            report.notes.push(STEADY_NOTE.into());
        }
        (rows, report)
    }
}

/// One row of `homo`.
#[derive(Debug, Clone, Serialize)]
pub struct HomoRow {
    /// Utilisation.
    pub load: f64,
    /// Policy name.
    pub policy: String,
    /// Replications.
    pub seeds: u64,
    /// Pooled mean sojourn.
    pub mean: f64,
    /// 99th percentile sojourn (merged histograms).
    pub p99: f64,
    /// Largest queue seen.
    pub max_queue: u32,
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

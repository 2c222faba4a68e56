//! The experiments, one module per command. Each turns its config into a [`Report`].
//!
//! Replications of every scenario run in parallel on a rayon pool of `--threads` workers. Each
//! replication derives its own random streams from (seed, scenario, replication index) — see
//! [`rng`](crate::rng) — and results are collected in scenario-then-replication order before being
//! merged, so the output is byte-identical whatever the number of threads.

pub mod bins;
pub mod fixed;
pub mod hetero;
pub mod homo;
pub mod stale;
pub mod swrr;

use std::time::Instant;

use rayon::prelude::*;

use crate::config::{Common, Config, Experiment, RunConfig};
use crate::model::{Farm, Information, SimOptions, simulate};
use crate::output::table::format_number;
use crate::output::{Report, RunInfo};
use crate::policy::{PolicyKind, PolicyParams};
use crate::rng::StreamKey;
use crate::stats::{RepStats, Summary};
use crate::with_policy;

/// Called once per finished replication (from any worker thread).
pub type Progress<'a> = &'a (dyn Fn() + Sync);

/// Runs the configured experiment.
pub fn run(cfg: &Config, progress: Progress) -> Report {
    let start = Instant::now();
    let c = &cfg.common;
    let (mut report, events) = in_pool(c, || match &cfg.experiment {
        Experiment::Bins(b) => bins::run(b, c, progress),
        Experiment::Fixed(f) => fixed::run(f, c, progress),
        Experiment::Homo(h) => homo::run(h, c, progress),
        Experiment::Hetero(h) => hetero::run(h, c, progress),
        Experiment::Stale(s) => stale::run(s, c, progress),
        Experiment::Swrr(s) => swrr::run(s),
    });
    let wall = start.elapsed().as_secs_f64();
    report.run = RunInfo { wall_seconds: wall, events, events_per_second: events as f64 / wall };
    report
}

/// The number of replications the configured experiment will run (for progress reporting).
pub fn replications(cfg: &Config) -> u64 {
    let seeds = cfg.common.seeds;
    let scenarios = match &cfg.experiment {
        Experiment::Bins(b) => bins::cases(b).len(),
        Experiment::Fixed(f) => f.d.len() * f.lambda.len(),
        Experiment::Homo(h) => h.loads.len() * h.policies.len(),
        Experiment::Hetero(h) => h.policies.len(),
        Experiment::Stale(s) => s.periods.len() * s.policies.len(),
        Experiment::Swrr(_) => return 0,
    };
    scenarios as u64 * seeds
}

fn in_pool<T: Send>(c: &Common, f: impl FnOnce() -> T + Send) -> T {
    let mut builder = rayon::ThreadPoolBuilder::new();
    if let Some(n) = c.threads {
        builder = builder.num_threads(n);
    }
    match builder.build() {
        Ok(pool) => pool.install(f),
        // Could not start threads: run on the calling thread; the output is the same.
        Err(_) => f(),
    }
}

/// One queueing scenario: a farm, a policy and what the policy sees.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// The workload.
    pub farm: Farm,
    /// The policy.
    pub policy: PolicyKind,
    /// Live queue lengths or a board.
    pub info: Information,
    /// Keep time-averaged queue-length levels (`fixed`).
    pub track_levels: bool,
    /// Peak-EWMA decay constant.
    pub tau: f64,
}

impl Scenario {
    /// Live information, no levels.
    pub fn live(farm: Farm, policy: PolicyKind, tau: f64) -> Scenario {
        Scenario { farm, policy, info: Information::Live, track_levels: false, tau }
    }
}

/// Runs replication `rep` of `sc`.
///
/// Streams: `workload` (arrivals and demands) is keyed by the farm, the load, the seed and `rep`
/// only, so every policy and information model sees the same requests; `policy` (the policy's own
/// coin flips) by the same, under another label.
pub fn run_replication(sc: &Scenario, run: &RunConfig, seed: u64, rep: u64) -> RepStats {
    let key = |label| StreamKey::new(seed, label).f64s(&sc.farm.rates).f64(sc.farm.load).u64(rep);
    let opts =
        SimOptions { info: sc.info, track_levels: sc.track_levels, queue_guard: run.queue_guard };
    let params = PolicyParams { rates: &sc.farm.rates, tau: sc.tau };
    let (workload, coins) = (key("workload").rng(), key("policy").rng());
    with_policy!(sc.policy, &params, |p| simulate(&sc.farm, run.length(), opts, p, workload, coins))
}

/// Runs every replication of every scenario in parallel; returns them grouped by scenario, in
/// replication order.
pub fn run_scenarios(
    scenarios: &[Scenario],
    run: &RunConfig,
    c: &Common,
    progress: Progress,
) -> Vec<Vec<RepStats>> {
    let tasks: Vec<(usize, u64)> =
        (0..scenarios.len()).flat_map(|s| (0..c.seeds).map(move |k| (s, k))).collect();
    // One replication per rayon job: a worker that runs out of work can then steal any pending
    // replication, instead of waiting while another worker runs a whole chunk of them in turn.
    let results: Vec<RepStats> = tasks
        .par_iter()
        .with_max_len(1)
        .map(|&(s, k)| {
            let r = run_replication(&scenarios[s], run, c.seed, k);
            progress();
            r
        })
        .collect();
    let mut results = results.into_iter();
    (0..scenarios.len()).map(|_| results.by_ref().take(c.seeds as usize).collect()).collect()
}

/// The `params` object of a report: the command's parameters plus the shared ones.
pub(crate) fn params(c: &Common, cfg: &impl serde::Serialize) -> serde_json::Value {
    let mut v = serde_json::to_value(cfg).expect("configs serialise");
    if let serde_json::Value::Object(m) = &mut v {
        m.insert("seeds".into(), c.seeds.into());
        m.insert("seed".into(), c.seed.into());
    }
    v
}

/// Total events over all replications.
pub fn total_events(groups: &[Vec<RepStats>]) -> u64 {
    groups.iter().flatten().map(|r| r.events).sum()
}

/// The table note for a row that is not in steady state or was stopped.
pub(crate) fn steadiness_mark(s: &Summary) -> Option<String> {
    if let Some(why) = &s.stopped {
        return Some(why.clone());
    }
    (!s.steady()).then(|| format!("not steady (drift {:.2})", s.drift))
}

/// One warning (for stderr) per scenario whose replication the queue guard stopped, naming the
/// scenario by load, board period and policy.
pub(crate) fn stop_warnings(scenarios: &[Scenario], summaries: &[Summary]) -> Vec<String> {
    scenarios
        .iter()
        .zip(summaries)
        .filter_map(|(sc, s)| {
            let why = s.stopped.as_ref()?;
            let period = match sc.info {
                Information::Board { period, .. } => format!("period {}, ", format_number(period)),
                Information::Live => String::new(),
            };
            let load = format_number(sc.farm.load);
            Some(format!("warning: load {load}, {period}policy {}: {why}", sc.policy.name()))
        })
        .collect()
}

/// The footnote explaining [`steadiness_mark`].
pub(crate) const DRIFT_NOTE: &str = "drift = mean sojourn of the second half of the measured requests / first half; \
outside [0.9, 1.1] the row is not in steady state at this run length: raise --warmup/--requests.";

//! The experiments, one module per command. Each owns its config and its validation, implements
//! [`Command`], and turns its config into typed rows and the [`Report`] built from them
//! ([`Results`]): exporters read the report, while code that reads numbers back (the figures, the
//! article's checks) reads the rows. The commands are listed once, in `commands!` below. A
//! [`Planned`] command's whole run is its [`Plan`] executed in this process ([`Plan::execute`])
//! and summarised by the same [`Planned::merge`] that `lbsim merge` applies to its shards; a
//! [`Direct`] command runs itself.
//!
//! Replications of every scenario run in parallel on a rayon pool of `--threads` workers. Each
//! replication derives its own random streams from (seed, scenario, replication index) — see
//! [`rng`](crate::rng) — and results are collected in scenario-then-replication order before being
//! merged, so the output is byte-identical whatever the number of threads.

pub mod adapt;
pub mod bins;
pub mod capacity;
pub mod command;
pub mod common;
pub mod estimate;
pub mod fixed;
pub mod hash;
pub mod hetero;
pub mod homo;
pub mod limit;
pub mod ordered;
pub mod plan;
pub mod queueing;
pub mod run;
pub mod stale;
pub mod subset;
pub mod swrr;

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Instant;

use serde::Serialize;

use crate::cli::{self, Cli};
use crate::engine::simulate;
use crate::error::UsageError;
use crate::model::Clients;
use crate::model::{Farm, Information, SimOptions};
use crate::output::progress::Reporter;
use crate::output::series::PooledTape;
use crate::output::table::format_number;
use crate::output::{Report, RunInfo};
use crate::policy::{Fleet, Policy, PolicyKind, PolicyParams, Tuning};
use crate::rng::SimRng;
use crate::rng::StreamKey;
use crate::stats::{RepStats, SeriesSum, Summary, Tally, compare};
use crate::subset::subset_keyed;
use crate::with_policy;
use crate::workload::{Arrivals, ExpDemands, KeySpec, PoissonGaps, Service};

pub use crate::options::Quantile;
pub use command::{Command, Direct, Planned, Sweep};
pub use common::{Common, Config, RunConfig};
pub use plan::{Cases, Merged, Plan, Queueing, Tasks};

/// Told of each finished replication and of work added on the way (from any worker thread).
pub type Progress<'a> = &'a dyn Reporter;

/// The way a command of `commands!` runs: `plan` for a [`Planned`] command, `run` for a
/// [`Direct`] one.
macro_rules! way {
    (plan, $command:ty) => {
        command::ByPlan<$command>
    };
    (run, $command:ty) => {
        command::ByRun<$command>
    };
}

/// The commands: each line names a command's variant in [`Experiment`], [`Rows`] and
/// [`cli::Command`], its name on the command line, its way of running (`plan`: [`Planned`],
/// `run`: [`Direct`]) and the type implementing [`Command`] for it. From this list come the two
/// enums and every dispatch over them.
macro_rules! commands {
    ($($variant:ident($name:literal) => $way:ident $command:ty,)*) => {
        /// The experiment to run, with its validated parameters.
        #[derive(Debug, Clone, serde::Serialize)]
        pub enum Experiment {
            $(
                #[doc = concat!("`lbsim ", $name, "`")]
                $variant(<$command as Command>::Config),
            )*
            /// A scenario file to print (`run --print`, `--print-scenario`): the output is this
            /// text.
            Print(String),
        }

        /// The typed rows of one command, in output order.
        #[derive(Debug, Clone)]
        pub enum Rows {
            $(
                #[doc = concat!("`lbsim ", $name, "`")]
                $variant(<$command as Command>::Rows),
            )*
            /// A scenario file printed (`--print`, `--print-scenario`): no rows.
            Print,
        }

        impl Rows {
            /// The figure of a command's rows, for the commands that draw one (`fixed`, `stale`).
            pub fn figure(&self) -> Option<String> {
                match self {
                    $(Rows::$variant(rows) => <$command as Command>::figure(rows),)*
                    Rows::Print => None,
                }
            }
        }

        /// A command's name on the command line.
        pub fn command_name(c: &cli::Command) -> &'static str {
            match c {
                $(cli::Command::$variant(_) => $name,)*
                cli::Command::Merge(_) => "merge",
                cli::Command::Report(_) => "report",
            }
        }

        /// The command's [`Command::check_global`], [`Command::DEFAULT_SEEDS`] and
        /// [`Command::plot`] (`merge` has none of its own).
        fn global_of(
            c: &cli::Command,
            g: &cli::Global,
        ) -> Result<(u64, Option<std::path::PathBuf>), UsageError> {
            match c {
                $(cli::Command::$variant(a) => {
                    <$command as Command>::check_global(g)?;
                    Ok((<$command as Command>::DEFAULT_SEEDS, <$command as Command>::plot(a)))
                })*
                cli::Command::Merge(_) | cli::Command::Report(_) => Ok((5, None)),
            }
        }

        /// The command's [`Command::config`].
        fn config_of(cli: &Cli, common: &mut Common) -> Result<Experiment, UsageError> {
            match &cli.command {
                $(cli::Command::$variant(a) => <$command as Command>::config(a, common, &cli.global),)*
                cli::Command::Merge(_) => Err(UsageError::Other(
                    "merge is read by lbsim::shard::Invocation, not by Config::from_cli".into(),
                )),
                cli::Command::Report(_) => Err(UsageError::Other(
                    "report is run by lbsim::report, not by Config::from_cli".into(),
                )),
            }
        }

        /// Runs the whole experiment: its command's plan, executed and merged, or its
        /// [`Direct::run`].
        fn run_of(e: &Experiment, c: &Common, progress: Progress) -> (Rows, Report, u64) {
            use command::Way;
            match e {
                $(Experiment::$variant(cfg) => {
                    let (rows, report, events) =
                        <way!($way, $command) as Way>::run(cfg, c, progress);
                    (Rows::$variant(rows), report, events)
                })*
                Experiment::Print(text) => {
                    let mut report = Report::new("print", &(), &[] as &[()]);
                    report.text = Some(text.clone());
                    (Rows::Print, report, 0)
                }
            }
        }

        /// The tasks of the experiment, from its command's [`Planned::plan`], with the
        /// summary of their results (its [`Planned::merge`]), or why it has none.
        fn plan_of(e: &Experiment) -> Result<(Plan, command::Summary<'_, Rows>), UsageError> {
            use command::Way;
            match e {
                $(Experiment::$variant(cfg) => {
                    let (plan, merge) = <way!($way, $command) as Way>::plan(cfg)?;
                    let summary: command::Summary<'_, Rows> = Box::new(move |c, p, m| {
                        let (rows, report, events) = merge(c, p, m)?;
                        Ok((Rows::$variant(rows), report, events))
                    });
                    Ok((plan, summary))
                })*
                Experiment::Print(_) => Err(plan::not_sharded(
                    "--print and --print-scenario",
                    "print a scenario file and run nothing",
                )),
            }
        }

        /// The replications of the experiment: its plan's, or its command's
        /// [`Direct::replications`].
        fn replications_of(e: &Experiment, seeds: u64) -> u64 {
            use command::Way;
            match e {
                $(Experiment::$variant(cfg) => {
                    <way!($way, $command) as Way>::replications(cfg, seeds)
                })*
                Experiment::Print(_) => 0,
            }
        }
    };
}

commands! {
    Bins("bins") => plan bins::Bins,
    Fixed("fixed") => plan fixed::Fixed,
    Homo("homo") => plan homo::Homo,
    Hetero("hetero") => plan hetero::Hetero,
    Stale("stale") => plan stale::Stale,
    Swrr("swrr") => run swrr::Swrr,
    Run("run") => plan run::Run,
    Subset("subset") => run subset::Subset,
    Hash("hash") => run hash::Hash,
    Limit("limit") => run limit::Limit,
    Capacity("capacity") => plan capacity::Capacity,
}

/// What a command produced: its typed rows and the report built from them.
#[derive(Debug, Clone)]
pub struct Results {
    /// The rows, typed.
    pub rows: Rows,
    /// The same rows as cells, with the notes, marks, warnings and timing.
    pub report: Report,
}

/// Runs the configured experiment; returns its report.
pub fn run(cfg: &Config, progress: Progress) -> Report {
    execute(cfg, progress).report
}

/// Runs the configured experiment; returns its typed rows and its report.
pub fn execute(cfg: &Config, progress: Progress) -> Results {
    let start = Instant::now();
    let c = &cfg.common;
    let (rows, mut report, events) = in_pool(c, || run_of(&cfg.experiment, c, progress));
    let wall = start.elapsed().as_secs_f64();
    report.run = RunInfo { wall_seconds: wall, events, events_per_second: events as f64 / wall };
    Results { rows, report }
}

/// The number of replications the configured experiment will run (for progress reporting): its
/// plan's ([`Plan::replications`]: twice over with `--warmup auto`; rows that `--precision`
/// doubles add theirs as they go), or what its command counts when it runs itself.
pub fn replications(cfg: &Config) -> u64 {
    replications_of(&cfg.experiment, cfg.common.seeds)
}

/// Runs `f` on a pool of `--threads` workers (on the calling thread when no threads start: the
/// output is the same).
pub(crate) fn in_pool<T: Send>(c: &Common, f: impl FnOnce() -> T + Send) -> T {
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
    /// The policy's parameters.
    pub tuning: Tuning,
    /// The dispatchers and what each sees.
    pub clients: Clients,
    /// The arrival process and the service distribution.
    pub workload: Workload,
}

/// What requests are, beyond the farm's rates and load.
#[derive(Debug, Clone, Default)]
pub struct Workload {
    /// The arrival process; `None`: Poisson at the farm's load (the article's model).
    pub arrivals: Option<Arrivals>,
    /// Service demands (mean 1); the default is `Exp(1)`.
    pub service: Service,
    /// Added to the key of the workload stream: empty for Poisson arrivals with exponential
    /// service, so that the article's commands keep their streams (and their numbers); else the
    /// canonical form of the arrivals and the service, so that every workload has its own.
    pub key: String,
    /// Request keys (`[keys]`), for the hashing policies.
    pub keys: Option<KeySpec>,
}

impl Scenario {
    /// Live information, no levels, the article's workload.
    pub fn live(farm: Farm, policy: PolicyKind, tau: f64) -> Scenario {
        Scenario {
            farm,
            policy,
            info: Information::Live,
            track_levels: false,
            tuning: policy.tuned(crate::policy::Decay { tau }),
            clients: Clients::default(),
            workload: Workload::default(),
        }
    }
}

/// Runs replication `rep` of `sc` with the warm-up and run length of `run`.
///
/// Streams: `workload` (arrivals and demands) is keyed by the farm, the load, the seed and `rep`
/// only, so every policy and information model sees the same requests; `policy` (the policy's own
/// coin flips) by the same, under another label. The warm-up only decides what is measured: the
/// same replication with another warm-up goes through the same states.
pub fn run_replication(sc: &Scenario, run: &RunConfig, seed: u64, rep: u64) -> RepStats {
    let key = |label| {
        let k = StreamKey::new(seed, label).f64s(&sc.farm.rates).f64(sc.farm.load);
        let k = if sc.workload.key.is_empty() { k } else { k.str(&sc.workload.key) };
        k.u64(rep)
    };
    let opts = SimOptions {
        info: sc.info,
        track_levels: sc.track_levels,
        queue_guard: run.queue_guard,
        series: run.series,
        series_groups: run.series_groups.clone(),
        series_spool: run.series_spool,
    };
    let mut params = PolicyParams::new(&sc.farm.rates, &sc.tuning);
    params.stream = key("policy-own");
    params.keys =
        sc.workload.keys.as_ref().map(|k| Rc::new(RefCell::new(k.source(key("keys").rng()))));
    let (workload, coins) = (key("workload").rng(), key("policy").rng());
    let len = run.length();
    let w = &sc.workload;
    if !sc.clients.is_single() {
        let mut gaps = match &w.arrivals {
            Some(a) => a.process(),
            None => Arrivals::poisson(sc.farm.arrival_rate()).process(),
        };
        let (assign, subsets) = (key("clients").rng(), key("subsets"));
        return with_policy!(sc.policy, |make| {
            let fleet = fleet(sc, &params, subsets, assign, make);
            simulate(&sc.farm, len, opts, fleet, &mut gaps, &w.service, workload, coins)
        });
    }
    match &w.arrivals {
        // The article's workload: its own monomorphised loop, one inlined draw per gap and demand.
        None if w.service.is_exp() => {
            let mut gaps = PoissonGaps(sc.farm.arrival_rate());
            with_policy!(sc.policy, &params, |p| {
                simulate(&sc.farm, len, opts, p, &mut gaps, &ExpDemands, workload, coins)
            })
        }
        arrivals => {
            let mut gaps = match arrivals {
                Some(a) => a.process(),
                None => Arrivals::poisson(sc.farm.arrival_rate()).process(),
            };
            with_policy!(sc.policy, &params, |p| {
                simulate(&sc.farm, len, opts, p, &mut gaps, &w.service, workload, coins)
            })
        }
    }
}

/// The clients of `sc`, each with its policy built by `make` over its own servers.
fn fleet<P: Policy>(
    sc: &Scenario,
    params: &PolicyParams,
    subsets: StreamKey,
    assign: SimRng,
    make: impl Fn(&PolicyParams) -> P,
) -> Fleet<P> {
    let c = &sc.clients;
    let n = sc.farm.rates.len();
    let subsets: Vec<Vec<u32>> = match c.subset {
        Some((size, method)) => (0..c.count)
            .map(|client| subset_keyed(method, client, c.count, n, size, subsets))
            .collect(),
        None => Vec::new(),
    };
    let policies = (0..c.count)
        .map(|client| {
            let rates: Vec<f64> = match subsets.get(client) {
                Some(s) => s.iter().map(|&i| sc.farm.rates[i as usize]).collect(),
                None => sc.farm.rates.clone(),
            };
            let own = PolicyParams {
                rates: &rates,
                client,
                clients: c.count,
                stream: params.stream.u64(client as u64),
                ..params.clone()
            };
            make(&own)
        })
        .collect();
    Fleet::new(n, policies, subsets, c.local, assign)
}

/// What one scenario's replications gave: their summary and the little each row reads per
/// replication beyond it. Replications are folded into it one by one ([`Fold`]) and then dropped.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// Their summary.
    pub summary: Summary,
    /// Events simulated for this scenario in all, pilot runs (`--warmup auto`) and shorter runs
    /// (`--precision`) included.
    pub events: u64,
    /// Each replication's time-averaged fraction of servers with queue `>= i` (`fixed`), in
    /// replication order.
    pub levels: Vec<Vec<f64>>,
    /// The replications' `--series` windows, pooled per group.
    pub series: Option<PooledTape>,
    /// Each traffic class's summary, in class order (empty without classes).
    pub classes: Vec<Summary>,
}

/// An [`Outcome`] built one replication at a time, in replication order.
#[derive(Debug, Clone)]
pub struct Fold {
    tally: Tally,
    /// One tally per traffic class, read as the pooled one is.
    classes: Vec<Tally>,
    extra: Vec<f64>,
    requests: u64,
    events: u64,
    levels: Vec<Vec<f64>>,
    series: Option<PooledTape>,
    /// The farm's groups (name, servers) and the replications, to pool `--series` windows.
    groups: Option<(Vec<(String, usize)>, u64)>,
}

impl Fold {
    /// An empty fold for replications of `run` (its quantiles are read); `groups` (with the
    /// number of replications) pools their `--series` windows.
    pub fn new(run: &RunConfig, groups: Option<(Vec<(String, usize)>, u64)>) -> Fold {
        let extra: Vec<f64> = run.quantiles.iter().map(|q| q.q).collect();
        Fold {
            tally: Tally::new(run.requests, &extra),
            classes: Vec::new(),
            extra,
            requests: run.requests,
            events: 0,
            levels: Vec::new(),
            series: None,
            groups,
        }
    }

    /// Adds the next replication.
    pub fn add(&mut self, r: &RepStats) {
        self.tally.add(r);
        if self.classes.len() < r.classes.len() {
            let (requests, extra) = (self.requests, &self.extra);
            self.classes.resize_with(r.classes.len(), || Tally::new(requests, extra));
        }
        for (t, c) in self.classes.iter_mut().zip(&r.classes) {
            t.add(c);
        }
        self.events += r.events;
        self.levels.push(r.level_fractions());
        if let Some((groups, reps)) = &self.groups {
            let pooled = |width| PooledTape::new(groups, width, *reps);
            if let Some(w) = &r.windows {
                self.series.get_or_insert_with(|| pooled(w.width)).add_windows(w);
            } else if let Some(w) = &r.spooled {
                self.series.get_or_insert_with(|| pooled(w.width)).add_spooled(w);
            }
        }
    }

    /// The outcome, with `earlier` events from runs before these replications.
    pub fn finish(self, earlier: u64) -> Outcome {
        Outcome {
            summary: self.tally.finish(),
            events: earlier + self.events,
            levels: self.levels,
            series: self.series,
            classes: self.classes.into_iter().map(Tally::finish).collect(),
        }
    }
}

/// Runs every replication of every scenario in parallel (scenario `s` with `runs[s]`); returns
/// one [`Outcome`] per scenario. `groups[s]` gives the farm's groups for pooling scenario `s`'s
/// `--series` windows (`None`: none kept). This is how a whole run executes a queueing plan.
///
/// With `--warmup auto`, the replications of a scenario first run `--requests` arrivals from
/// empty; MSER-5 on their averaged series (as for the `steady` verdict) gives the warm-up, and
/// they are run again measuring `--requests` arrivals after it (Hoad, Robinson & Davies's
/// procedure: one warm-up for all replications, read from their average).
///
/// With `--precision R`, a scenario whose `mean_ci95 > R * mean`, or that is not steady, is run
/// again with twice the measured requests (up to `--max-requests`), from scratch and with the same
/// streams, so the first arrivals of the longer run are those of the shorter one. Whether a
/// scenario doubles depends only on its own replications: the output is the same for any number
/// of threads and whatever other scenarios the command runs.
///
/// Both stages are further passes over the same tasks (pilot runs, longer runs); neither can be
/// split into shards, which hold only some of a scenario's replications.
pub(crate) fn run_tasks(
    scenarios: &[Scenario],
    runs: &[RunConfig],
    groups: &[Option<Vec<(String, usize)>>],
    c: &Common,
    progress: Progress,
) -> Vec<Outcome> {
    let n = scenarios.len();
    let mut runs: Vec<RunConfig> = runs.to_vec();
    let mut events = vec![0u64; n];
    let mut outcomes: Vec<Option<Outcome>> = vec![None; n];
    let mut pending: Vec<usize> = (0..n).collect();
    while !pending.is_empty() {
        let auto: Vec<usize> = pending.iter().copied().filter(|&s| runs[s].warmup_auto).collect();
        if !auto.is_empty() {
            for &s in &auto {
                runs[s].warmup = 0;
            }
            let mut pilot: Vec<(u64, SeriesSum)> = vec![Default::default(); auto.len()];
            replicate(scenarios, &runs, &auto, c, progress, |j, r| {
                pilot[j].0 += r.events;
                if r.stops == 0 {
                    pilot[j].1.add(&r.series);
                }
            });
            for (&s, (e, sum)) in auto.iter().zip(pilot) {
                events[s] += e;
                runs[s].warmup = sum.average().mser5().map_or(0, |t| t.arrivals);
            }
        }
        let mut folds: Vec<Fold> = pending
            .iter()
            .map(|&s| Fold::new(&runs[s], groups[s].clone().map(|g| (g, c.seeds))))
            .collect();
        replicate(scenarios, &runs, &pending, c, progress, |j, r| folds[j].add(&r));
        let mut next = Vec::new();
        for (&s, fold) in pending.iter().zip(folds) {
            let outcome = fold.finish(events[s]);
            events[s] = outcome.events;
            let run = &mut runs[s];
            if let (Some(r), Some(max)) = (run.precision, run.max_requests)
                && !meets(&outcome.summary, r)
                && run.requests < max
            {
                run.requests = run.requests.saturating_mul(2).min(max);
                next.push(s);
                progress.more(plan::passes(run) * c.seeds);
            }
            outcomes[s] = Some(outcome);
        }
        pending = next;
    }
    outcomes.into_iter().map(|o| o.expect("every scenario ran")).collect()
}

/// Every replication of `scenarios`, each run with `run`, without `--series` windows: one
/// [`Outcome`] per scenario ([`run_tasks`]).
pub fn run_scenarios(
    scenarios: &[Scenario],
    run: &RunConfig,
    c: &Common,
    progress: Progress,
) -> Vec<Outcome> {
    let runs = vec![run.clone(); scenarios.len()];
    run_tasks(scenarios, &runs, &vec![None; scenarios.len()], c, progress)
}

/// Runs the replications of the scenarios `which` (scenario `which[j]` with `runs[which[j]]`) in
/// parallel and gives each to `fold(j, replication)`, scenario by scenario in replication order;
/// only a bounded number of replications is held at once ([`ordered`]).
fn replicate(
    scenarios: &[Scenario],
    runs: &[RunConfig],
    which: &[usize],
    c: &Common,
    progress: Progress,
    mut fold: impl FnMut(usize, RepStats) + Send,
) {
    let seeds = c.seeds as usize;
    ordered::for_each_in_order(
        which.len() * seeds,
        |t| {
            let s = which[t / seeds];
            let r = run_replication(&scenarios[s], &runs[s], c.seed, (t % seeds) as u64);
            progress.done();
            r
        },
        |t, r| fold(t / seeds, r),
    );
}

/// True when `s` meets `--precision r`: steady, no replication stopped, and `mean_ci95 <= r * mean`.
pub fn meets(s: &Summary, r: f64) -> bool {
    s.steady() && s.stops == 0 && s.mean_ci95.is_some_and(|ci| ci <= r * s.mean)
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

/// Total events over all runs.
pub fn total_events(outcomes: &[Outcome]) -> u64 {
    outcomes.iter().map(|o| o.events).sum()
}

/// The columns every queueing row ends with: the steady-state verdict, the stops, and what
/// `--quantiles`, `--baseline` and `--precision` add.
#[derive(Debug, Clone, Serialize)]
pub struct Reading {
    /// False when the measured window still holds the start-up transient or a trend (MSER-5).
    pub steady: bool,
    /// Replications the queue guard stopped.
    pub stopped: u64,
    /// `pXX` columns asked for with `--quantiles`, in the order asked.
    #[serde(flatten)]
    pub quantiles: serde_json::Map<String, serde_json::Value>,
    /// Relative differences to the baseline policy (`--baseline`).
    #[serde(flatten)]
    pub baseline: Option<VsBaseline>,
    /// Measured arrivals per replication (`--precision`, which may have doubled them).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requests: Option<u64>,
}

/// A row against the baseline policy of its scenario: `x / base - 1` with paired 95% half-widths
/// over replications ([`compare`]).
#[derive(Debug, Clone, Serialize)]
pub struct VsBaseline {
    /// Relative difference of the pooled mean sojourn (-0.25 = 25% lower).
    pub mean_vs_base: f64,
    /// Its paired 95% half-width.
    pub mean_vs_base_ci95: Option<f64>,
    /// Relative difference of the p99.
    pub p99_vs_base: f64,
    /// Its paired 95% half-width.
    pub p99_vs_base_ci95: Option<f64>,
}

impl VsBaseline {
    /// `s` against `base`, paired replication by replication.
    pub fn of(s: &Summary, base: &Summary) -> VsBaseline {
        VsBaseline {
            mean_vs_base: s.mean / base.mean - 1.0,
            mean_vs_base_ci95: compare::paired_ci95(&s.rep_means, &base.rep_means),
            p99_vs_base: s.p99 / base.p99 - 1.0,
            p99_vs_base_ci95: compare::paired_ci95(&s.rep_p99s, &base.rep_p99s),
        }
    }
}

impl Reading {
    /// The reading of `s` under `run`, against `base` when a baseline was asked for.
    pub fn of(s: &Summary, run: &RunConfig, base: Option<&Summary>) -> Reading {
        let quantiles = run
            .quantiles
            .iter()
            .map(|q| (q.column.clone(), serde_json::Value::from(s.quantile(q.q))))
            .collect();
        Reading {
            steady: s.steady(),
            stopped: s.stops,
            quantiles,
            baseline: base.map(|b| VsBaseline::of(s, b)),
            requests: run.precision.map(|_| s.requests),
        }
    }
}

/// For each scenario, the index of the scenario with the same workload and information that runs
/// `baseline` (`None` when no baseline was asked for).
pub(crate) fn baselines(
    scenarios: &[Scenario],
    baseline: Option<PolicyKind>,
) -> Vec<Option<usize>> {
    scenarios
        .iter()
        .map(|sc| {
            let base = baseline?;
            scenarios.iter().position(|b| {
                b.policy == base && b.farm == sc.farm && period(b.info) == period(sc.info)
            })
        })
        .collect()
}

/// The board period of an information model (0 = live).
pub fn period(info: Information) -> f64 {
    match info {
        Information::Live => 0.0,
        Information::Board { period, .. } => period,
    }
}

/// The readings of all scenarios.
pub(crate) fn readings(
    scenarios: &[Scenario],
    outcomes: &[Outcome],
    run: &RunConfig,
    baseline: Option<PolicyKind>,
) -> Vec<Reading> {
    baselines(scenarios, baseline)
        .iter()
        .zip(outcomes)
        .map(|(b, o)| Reading::of(&o.summary, run, b.map(|b| &outcomes[b].summary)))
        .collect()
}

/// The table note for a row that was stopped, is not in steady state, or missed `--precision`.
pub(crate) fn steadiness_mark(s: &Summary, run: &RunConfig) -> Option<String> {
    if let Some(why) = &s.stopped {
        return Some(why.to_string());
    }
    if let Some(m) = s.steadiness.message() {
        return Some(m);
    }
    run.precision.filter(|&r| !meets(s, r)).map(|r| {
        format!(
            "--precision {r} not met at --max-requests (mean_ci95 is {:.2}% of the mean)",
            100.0 * s.mean_ci95.unwrap_or(f64::NAN) / s.mean
        )
    })
}

/// One warning (for stderr) per scenario whose replication the queue guard stopped or that missed
/// `--precision`, naming the scenario by load, board period and policy.
pub(crate) fn stop_warnings(
    scenarios: &[Scenario],
    outcomes: &[Outcome],
    run: &RunConfig,
) -> Vec<String> {
    scenarios
        .iter()
        .zip(outcomes)
        .filter_map(|(sc, o)| {
            let s = &o.summary;
            let why = s.stopped.map(|w| w.to_string()).or_else(|| {
                let r = run.precision.filter(|&r| !meets(s, r))?;
                Some(format!(
                    "--precision {r} not met with {} requests (--max-requests): {}",
                    s.requests,
                    s.steadiness.message().unwrap_or_else(|| format!(
                        "mean_ci95 is {:.2}% of the mean",
                        100.0 * s.mean_ci95.unwrap_or(f64::NAN) / s.mean
                    ))
                ))
            })?;
            let period = match sc.info {
                Information::Board { period, .. } => format!("period {}, ", format_number(period)),
                Information::Live => String::new(),
            };
            let load = format_number(sc.farm.load);
            Some(format!("warning: load {load}, {period}policy {}: {why}", sc.policy.name()))
        })
        .collect()
}

/// The footnote explaining `steady` and `drift`.
pub(crate) const STEADY_NOTE: &str = "steady: MSER-5 on the replication-averaged sojourn series, \
warm-up included, finds where the start-up transient ends; a row is not steady when measuring began \
before that point, the series still trends in its second half, or drift (mean sojourn of the second \
half of the measured requests / first half) is outside [0.9, 1.1] and its 95% interval (from the \
spread over replications, or batch means of its series for one replication) excludes 1: raise \
--warmup (or --warmup auto) and --requests.";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::LoadTable;
    use crate::time::SimTime;
    use rand::SeedableRng;

    #[test]
    fn a_fleet_of_c3_counts_its_own_outstanding_requests_once_per_client() {
        // Two servers; every client has heard server 0 answer with a queue of 0 and server 1
        // with a queue of 5 (service 1 each): after one sample (alpha 0.9) server 0 scores
        // 1^3 * 0.9 and server 1 (1 + 4.5)^3 * 0.9 = 150. A client's first request goes to
        // server 0; with it outstanding, q_hat = 1 + 1 * clients there: 2 (score 7.2) if the
        // client were built as one of 1, still below server 1, but 17 (score 4422) as one of 16.
        // So every client of the fleet sends its second request to server 1.
        let mut sc = Scenario::live(Farm::homogeneous(2, 0.5), PolicyKind::C3, 10.0);
        sc.clients = Clients { count: 16, local: true, subset: None };
        let params = PolicyParams::new(&sc.farm.rates, &sc.tuning);
        let (key, assign) = (StreamKey::new(1, "subsets"), SimRng::seed_from_u64(1));
        let picks: Vec<(u32, usize)> = with_policy!(sc.policy, |make| {
            let mut f = fleet(&sc, &params, key, assign, make);
            let now = SimTime::ZERO;
            for c in 0..16 {
                let r = |queue| Response { sojourn: 1.0, service: 1.0, queue };
                f.on_response(0, &r(0), now, c);
                f.on_response(1, &r(5), now, c);
            }
            let (loads, mut coins) = (LoadTable::new(2, false), SimRng::seed_from_u64(2));
            (0..300)
                .map(|_| (f.pick(&loads, now, &mut coins), f.tag()))
                .map(|(s, c)| (c, s))
                .collect()
        });
        for c in 0..16 {
            let first: Vec<usize> =
                picks.iter().filter(|p| p.0 == c).map(|p| p.1).take(2).collect();
            assert_eq!(first, [0, 1], "client {c}");
        }
    }
}

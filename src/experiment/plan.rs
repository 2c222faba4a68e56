//! The tasks of a command, the one form in which a planned command runs: a [`Plan`] lists its
//! tasks (one per scenario and replication; `capacity`: one per policy, its whole search), [`Plan::execute`] runs them all in this process
//! (`--shard` runs some of them), and [`Merged`] holds every task's result, added up in task
//! order, from which the command's [`Planned::merge`](super::Planned::merge) makes its rows. Each
//! command gives its own plan with [`Planned::plan`](super::Planned::plan).

use rayon::prelude::*;

use super::bins::{self, Variant};
use super::capacity::{Search, Searches};
use super::{Common, Config, Outcome, Progress, Results, RunConfig, Scenario};
use crate::error::UsageError;

/// A queueing plan: scenarios, each run with its run length.
#[derive(Debug)]
pub struct Queueing {
    /// The scenarios, in row order.
    pub scenarios: Vec<Scenario>,
    /// Each scenario's run length.
    pub runs: Vec<RunConfig>,
    /// Per scenario, the farm's groups (name, servers) its `--series` windows are pooled by
    /// (`None`: no windows kept).
    pub groups: Vec<Option<Vec<(String, usize)>>>,
    /// How the command spells `--warmup auto` and `--precision`, to refuse them to `--shard`.
    pub adaptive: [&'static str; 2],
}

/// `bins`'s plan: its cases (balls and bins, choices, variant).
#[derive(Debug)]
pub struct Cases(pub Vec<(u64, u32, Variant)>);

/// The tasks of a command, as shards write and read them: one of the kinds of plan.
#[derive(Debug)]
pub enum Plan {
    /// Queueing replications.
    Queueing(Queueing),
    /// `bins`: its cases.
    Bins(Cases),
    /// `capacity`: its policies' searches.
    Searches(Searches),
}

/// The tasks' results, added up in task order as they were read.
#[derive(Debug)]
pub enum Merged {
    /// Queueing replications: one outcome per scenario, folded as one process folds them.
    Outcomes(Vec<Outcome>),
    /// `bins`: max loads, in task order.
    Loads(Vec<u32>),
    /// `capacity`: each policy's search, in policy order.
    Searches(Vec<Search>),
}

/// A kind of plan: what its tasks add up to, how a whole run executes them, and its place in
/// [`Plan`] and [`Merged`], the forms shards write and read.
pub trait Tasks: Sized {
    /// Every task's result, added up in task order.
    type Results;

    /// Runs every task in parallel on the current pool; returns their results, added up in task
    /// order as `merge` adds up a shard's.
    fn execute(&self, c: &Common, progress: Progress) -> Self::Results;

    /// The replications a whole run starts with, for progress reporting.
    fn replications(&self, seeds: u64) -> u64;

    /// The plan as a whole run executes it (the queueing plan spools its `--series` windows).
    fn spooled(self) -> Self {
        self
    }

    /// The plan in the form shards write.
    fn into_plan(self) -> Plan;

    /// This kind's plan and results, from the forms shards read; `None` when they are of
    /// another kind.
    fn typed<'a>(plan: &'a Plan, merged: &'a Merged) -> Option<(&'a Self, &'a Self::Results)>;
}

impl Queueing {
    /// `scenarios`, each run with `run`, keeping no `--series` windows.
    pub fn new(scenarios: Vec<Scenario>, run: &RunConfig) -> Queueing {
        let runs = vec![run.clone(); scenarios.len()];
        let groups = vec![None; scenarios.len()];
        Queueing { scenarios, runs, groups, adaptive: ["--warmup auto", "--precision"] }
    }
}

impl Tasks for Queueing {
    type Results = Vec<Outcome>;

    /// A plan with `--warmup auto` or `--precision` runs in stages ([`super::run_tasks`]).
    fn execute(&self, c: &Common, progress: Progress) -> Vec<Outcome> {
        super::run_tasks(&self.scenarios, &self.runs, &self.groups, c, progress)
    }

    /// Every task, twice over for the scenarios run with `--warmup auto` (its pilot runs); rows
    /// that `--precision` doubles add theirs as they go.
    fn replications(&self, seeds: u64) -> u64 {
        self.runs.iter().map(passes).sum::<u64>() * seeds
    }

    /// Each replication writes its `--series` windows to a temporary file as they close, and
    /// the rows pool them there (a shard's records carry the windows instead).
    fn spooled(mut self) -> Queueing {
        self.runs.iter_mut().for_each(|run| run.series_spool = true);
        self
    }

    fn into_plan(self) -> Plan {
        Plan::Queueing(self)
    }

    fn typed<'a>(plan: &'a Plan, merged: &'a Merged) -> Option<(&'a Self, &'a Vec<Outcome>)> {
        match (plan, merged) {
            (Plan::Queueing(plan), Merged::Outcomes(outcomes)) => Some((plan, outcomes)),
            _ => None,
        }
    }
}

impl Tasks for Cases {
    type Results = Vec<u32>;

    fn execute(&self, c: &Common, progress: Progress) -> Vec<u32> {
        let tasks: Vec<(usize, u64)> =
            (0..self.0.len()).flat_map(|i| (0..c.seeds).map(move |k| (i, k))).collect();
        tasks
            .par_iter()
            .map(|&(i, k)| {
                let m = bins::task(self.0[i], c.seed, k);
                progress.done();
                m
            })
            .collect()
    }

    fn replications(&self, seeds: u64) -> u64 {
        self.0.len() as u64 * seeds
    }

    fn into_plan(self) -> Plan {
        Plan::Bins(self)
    }

    fn typed<'a>(plan: &'a Plan, merged: &'a Merged) -> Option<(&'a Self, &'a Vec<u32>)> {
        match (plan, merged) {
            (Plan::Bins(plan), Merged::Loads(loads)) => Some((plan, loads)),
            _ => None,
        }
    }
}

impl Plan {
    /// The plan of `cfg` to split into shards, or why it cannot be sharded.
    pub fn of(cfg: &Config) -> Result<Plan, UsageError> {
        let plan = Plan::whole(cfg)?;
        plan.check_shardable()?;
        Ok(plan)
    }

    /// The plan a whole run of `cfg` executes, or why its command has none.
    pub fn whole(cfg: &Config) -> Result<Plan, UsageError> {
        super::plan_of(&cfg.experiment).map(|(plan, _)| plan)
    }

    /// Refuses to split a plan whose runs decide what to run from all the replications of a
    /// scenario together (`--warmup auto`, `--precision`), which no shard holds.
    pub fn check_shardable(&self) -> Result<(), UsageError> {
        match self {
            Plan::Queueing(Queueing { runs, adaptive: [auto, precision], .. }) => {
                runs.iter().try_for_each(|run| check_run(run, auto, precision))
            }
            Plan::Bins(_) | Plan::Searches(_) => Ok(()),
        }
    }

    /// The number of tasks: scenarios (or cases) times replications; `capacity`'s policies.
    pub fn tasks(&self, c: &Common) -> u64 {
        let scenarios = match self {
            Plan::Queueing(plan) => plan.scenarios.len(),
            Plan::Bins(cases) => cases.0.len(),
            Plan::Searches(searches) => searches.0.policies.len(),
        };
        scenarios as u64 * self.per_scenario(c)
    }

    /// The tasks of one scenario: its replications (`--seeds`); `capacity`'s one search per
    /// policy. Task `i` is task `i % per_scenario` of scenario `i / per_scenario`.
    pub fn per_scenario(&self, c: &Common) -> u64 {
        match self {
            Plan::Queueing(_) | Plan::Bins(_) => c.seeds,
            Plan::Searches(_) => 1,
        }
    }

    /// The replications one task starts with: one, or a whole search's.
    pub fn per_task(&self, seeds: u64) -> u64 {
        match self {
            Plan::Queueing(_) | Plan::Bins(_) => 1,
            Plan::Searches(searches) => searches.per_task(seeds),
        }
    }

    /// The replications a whole run of the plan starts with ([`Tasks::replications`]).
    pub fn replications(&self, seeds: u64) -> u64 {
        match self {
            Plan::Queueing(plan) => plan.replications(seeds),
            Plan::Bins(cases) => cases.replications(seeds),
            Plan::Searches(searches) => searches.replications(seeds),
        }
    }

    /// Runs every task ([`Tasks::execute`]), its results in the form shards read.
    pub fn execute(&self, c: &Common, progress: Progress) -> Merged {
        match self {
            Plan::Queueing(plan) => Merged::Outcomes(plan.execute(c, progress)),
            Plan::Bins(cases) => Merged::Loads(cases.execute(c, progress)),
            Plan::Searches(searches) => Merged::Searches(searches.execute(c, progress)),
        }
    }
}

/// Runs of `run`: two with `--warmup auto` (the pilot, then the measured run), else one.
pub(crate) fn passes(run: &RunConfig) -> u64 {
    if run.warmup_auto { 2 } else { 1 }
}

/// The command's rows and report from every task's result of its plan, in task order, or why
/// its command has no plan.
pub fn merge(cfg: &Config, merged: &Merged) -> Result<Results, UsageError> {
    let (plan, summary) = super::plan_of(&cfg.experiment)?;
    let (rows, mut report, events) = summary(&cfg.common, &plan, merged)?;
    report.run.events = events;
    Ok(Results { rows, report })
}

/// The refusal of `--shard` for `what`, which `why`.
pub(crate) fn not_sharded(what: &str, why: &str) -> UsageError {
    UsageError::Conflict {
        option: "--shard".into(),
        rule: format!("does not apply to {what}, which {why}"),
    }
}

/// `--warmup auto` and `--precision` decide what to run from all the replications of a scenario
/// together, which no shard holds.
pub(crate) fn check_run(run: &RunConfig, auto: &str, precision: &str) -> Result<(), UsageError> {
    let refuse = |what: &str, why: &str| UsageError::Conflict {
        option: "--shard".into(),
        rule: format!(
            "cannot be combined with {what}: {why}, which no shard holds; give a fixed {}",
            if what == auto { "warm-up" } else { "--requests" }
        ),
    };
    if run.warmup_auto {
        return Err(refuse(auto, "the warm-up is read from every replication of a scenario"));
    }
    if run.precision.is_some() {
        return Err(refuse(
            precision,
            "whether a row doubles its run is read from all of its replications",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::Cli;
    use crate::experiment::execute;
    use clap::Parser;

    fn config(args: &str) -> Config {
        let cli = Cli::try_parse_from(format!("lbsim {args}").split(' ')).unwrap();
        Config::from_cli(&cli).unwrap()
    }

    /// A whole run is its plan executed and merged: the rows are those of `Plan::execute` then
    /// `merge`, adaptive runs (`--warmup auto`, `--precision`) included.
    #[test]
    fn a_whole_run_is_its_plan_executed_and_merged() {
        for args in [
            "homo --loads 0.5,0.9 --policies p2c,jsq --seeds 2 --requests 2000 --warmup 200",
            "homo --loads 0.9 --policies p2c --seeds 2 --requests 2000 --warmup auto",
            "stale --periods 0,2 --policies jsq --seeds 3 --requests 2000 --precision 0.5 \
             --max-requests 8000",
            "bins --n 100 --d 1,2 --seeds 3",
        ] {
            let cfg = config(&args.split_whitespace().collect::<Vec<_>>().join(" "));
            let plan = Plan::whole(&cfg).unwrap();
            let merged = plan.execute(&cfg.common, &|| {});
            let merged = merge(&cfg, &merged).unwrap();
            let whole = execute(&cfg, &|| {});
            assert_eq!(format!("{:?}", merged.rows), format!("{:?}", whole.rows), "{args}");
            assert_eq!(merged.report.run.events, whole.report.run.events, "{args}");
        }
    }

    /// `--warmup auto` and `--precision` are planned (twice the replications with `auto`, its
    /// pilot runs) and refused to `--shard` by the plan itself.
    #[test]
    fn adaptive_plans_run_whole_and_are_refused_to_shards() {
        let base = "homo --loads 0.9 --policies p2c,jsq --seeds 2 --requests 1000";
        let fixed = config(base);
        let auto = config(&format!("{base} --warmup auto"));
        let precision = config(&format!("{base} --precision 0.1"));
        let tasks = Plan::of(&fixed).unwrap().tasks(&fixed.common);
        assert_eq!(tasks, 4);
        assert_eq!(Plan::whole(&auto).unwrap().replications(2), 2 * tasks);
        assert_eq!(Plan::whole(&precision).unwrap().replications(2), tasks);
        for (cfg, option) in [(&auto, "--warmup auto"), (&precision, "--precision")] {
            let refused = Plan::of(cfg).unwrap_err().to_string();
            assert!(refused.contains(option), "{refused}");
            assert!(Plan::whole(cfg).unwrap().check_shardable().is_err());
        }
        let swrr = Plan::whole(&config("swrr")).unwrap_err().to_string();
        assert!(swrr.contains("swrr"), "{swrr}");
    }
}

//! The tasks of a command, the one form in which a planned command runs: a [`Plan`] lists its
//! tasks (one per scenario and replication), [`Plan::execute`] runs them all in this process
//! (`--shard` runs some of them), and [`Merged`] holds every task's result, added up in task
//! order, from which the command's [`Planned::merge`](super::Planned::merge) makes its rows. Each
//! command gives its own plan with [`Planned::plan`](super::Planned::plan).

use rayon::prelude::*;

use super::bins::{self, Variant};
use super::{Common, Config, Outcome, Progress, Results, RunConfig, Scenario};
use crate::error::UsageError;

/// The tasks of a command.
#[derive(Debug)]
pub enum Plan {
    /// Queueing replications: scenario `s` runs with `runs[s]`.
    Queueing {
        /// The scenarios, in row order.
        scenarios: Vec<Scenario>,
        /// Each scenario's run length.
        runs: Vec<RunConfig>,
        /// Per scenario, the farm's groups (name, servers) its `--series` windows are pooled by
        /// (`None`: no windows kept).
        groups: Vec<Option<Vec<(String, usize)>>>,
        /// How the command spells `--warmup auto` and `--precision`, to refuse them to `--shard`.
        adaptive: [&'static str; 2],
    },
    /// `bins`: its cases.
    Bins(Vec<(u64, u32, Variant)>),
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

    /// The plan as a whole run executes it: each replication writes its `--series` windows to
    /// a temporary file as they close, and the rows pool them there (a shard's records carry
    /// the windows instead).
    pub fn spooled(mut self) -> Plan {
        if let Plan::Queueing { runs, .. } = &mut self {
            runs.iter_mut().for_each(|run| run.series_spool = true);
        }
        self
    }

    /// `scenarios`, each run with `run`, keeping no `--series` windows.
    pub fn queueing(scenarios: Vec<Scenario>, run: &RunConfig) -> Plan {
        let runs = vec![run.clone(); scenarios.len()];
        let groups = vec![None; scenarios.len()];
        Plan::Queueing { scenarios, runs, groups, adaptive: ["--warmup auto", "--precision"] }
    }

    /// Refuses to split a plan whose runs decide what to run from all the replications of a
    /// scenario together (`--warmup auto`, `--precision`), which no shard holds.
    pub fn check_shardable(&self) -> Result<(), UsageError> {
        match self {
            Plan::Queueing { runs, adaptive: [auto, precision], .. } => {
                runs.iter().try_for_each(|run| check_run(run, auto, precision))
            }
            Plan::Bins(_) => Ok(()),
        }
    }

    /// The number of tasks: scenarios (or cases) times replications.
    pub fn tasks(&self, c: &Common) -> u64 {
        let scenarios = match self {
            Plan::Queueing { scenarios, .. } => scenarios.len(),
            Plan::Bins(cases) => cases.len(),
        };
        scenarios as u64 * c.seeds
    }

    /// The replications a whole run of the plan starts with, for progress reporting: every task,
    /// twice over for the scenarios run with `--warmup auto` (its pilot runs); rows that
    /// `--precision` doubles add theirs as they go.
    pub fn replications(&self, seeds: u64) -> u64 {
        match self {
            Plan::Queueing { runs, .. } => runs.iter().map(passes).sum::<u64>() * seeds,
            Plan::Bins(cases) => cases.len() as u64 * seeds,
        }
    }

    /// The scenarios of a queueing plan, in row order.
    pub fn scenarios(&self) -> &[Scenario] {
        match self {
            Plan::Queueing { scenarios, .. } => scenarios,
            Plan::Bins(_) => unreachable!("a queueing command has a queueing plan"),
        }
    }

    /// Runs every task in parallel on the current pool; returns their results, added up in task
    /// order as `merge` adds up a shard's. A queueing plan with `--warmup auto` or `--precision`
    /// runs in stages ([`super::run_tasks`]).
    pub fn execute(&self, c: &Common, progress: Progress) -> Merged {
        match self {
            Plan::Queueing { scenarios, runs, groups, .. } => {
                Merged::Outcomes(super::run_tasks(scenarios, runs, groups, c, progress))
            }
            Plan::Bins(cases) => {
                let tasks: Vec<(usize, u64)> =
                    (0..cases.len()).flat_map(|i| (0..c.seeds).map(move |k| (i, k))).collect();
                let loads: Vec<u32> = tasks
                    .par_iter()
                    .map(|&(i, k)| {
                        let m = bins::task(cases[i], c.seed, k);
                        progress.done();
                        m
                    })
                    .collect();
                Merged::Loads(loads)
            }
        }
    }
}

/// Runs of `run`: two with `--warmup auto` (the pilot, then the measured run), else one.
pub(crate) fn passes(run: &RunConfig) -> u64 {
    if run.warmup_auto { 2 } else { 1 }
}

/// The tasks' results, added up in task order as they were read.
#[derive(Debug)]
pub enum Merged {
    /// Queueing replications: one outcome per scenario, folded as one process folds them.
    Outcomes(Vec<Outcome>),
    /// `bins`: max loads.
    Loads(Vec<u32>),
}

impl Merged {
    /// The outcomes of a queueing plan, one per scenario.
    pub fn outcomes(&self) -> &[Outcome] {
        match self {
            Merged::Outcomes(outcomes) => outcomes,
            Merged::Loads(_) => unreachable!("records are read as the plan's kind"),
        }
    }

    /// The max loads of a `bins` plan, in task order.
    pub fn loads(&self) -> &[u32] {
        match self {
            Merged::Loads(loads) => loads,
            Merged::Outcomes(_) => unreachable!("records are read as the plan's kind"),
        }
    }
}

/// The command's rows and report from every task's result of its plan, in task order, or why
/// its command has no plan.
pub fn merge(cfg: &Config, merged: &Merged) -> Result<Results, UsageError> {
    let (plan, summary) = super::plan_of(&cfg.experiment)?;
    let (rows, mut report, events) = summary(&cfg.common, &plan, merged);
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

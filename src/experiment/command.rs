//! The seam every command implements: how its arguments become its validated configuration and,
//! in one of two ways, how it runs. A [`Planned`] command gives its tasks (a [`Plan`]) and how
//! their results become its rows: a whole run executes that plan in this process, `--shard` runs
//! part of it and `merge` summarises the shards, all through the same summary. A [`Direct`]
//! command, which has no replications worth splitting, runs itself. The queueing sweeps (`homo`,
//! `hetero`, `fixed`, `stale`) are [`Sweep`]s: a list of scenarios run alike, planned and merged
//! by one implementation. The one list of commands (`commands!` in [`crate::experiment`]) names
//! each command's way and builds from them the enums of configurations ([`Experiment`]) and rows
//! ([`Rows`](super::Rows)) and every dispatch over them, so a command is added by its file and
//! one line in that list (and its arguments in [`crate::cli`]).

use std::marker::PhantomData;
use std::path::PathBuf;

use super::plan::{Merged, Plan, Queueing, Tasks, not_sharded};
use super::{Common, Experiment, Outcome, Progress, RunConfig, Scenario, total_events};
use crate::cli::Global;
use crate::error::UsageError;
use crate::output::Report;

/// One command of `lbsim`.
pub trait Command {
    /// Its arguments, as clap parses them.
    type Args;
    /// Its validated configuration.
    type Config;
    /// Its typed rows, in output order.
    type Rows;
    /// `--seeds` when not given.
    const DEFAULT_SEEDS: u64 = 5;

    /// Refuses the global options the command has no use for, before any is read.
    fn check_global(_global: &Global) -> Result<(), UsageError> {
        Ok(())
    }

    /// The `--plot` file asked for, for the commands that draw a figure.
    fn plot(_args: &Self::Args) -> Option<PathBuf> {
        None
    }

    /// Validates `args` with the shared options into the experiment to run (a variant of
    /// [`Experiment`], or a scenario file to print). `global` is the shared options as typed:
    /// `run` takes the seeds of its file unless they were given.
    fn config(
        args: &Self::Args,
        common: &mut Common,
        global: &Global,
    ) -> Result<Experiment, UsageError>;

    /// The figure of its rows, for the commands that draw one (`--plot`).
    fn figure(_rows: &Self::Rows) -> Option<String> {
        None
    }
}

/// A command that runs as a plan of tasks, one per scenario (or case) and replication: a whole
/// run executes every task here, `--shard` some of them, and both end in [`Planned::merge`].
pub trait Planned: Command {
    /// The kind of its plan, and so what its tasks' results add up to.
    type Tasks: Tasks;

    /// Its tasks. `--warmup auto` and `--precision` are part of a queueing plan: a whole run
    /// executes them in stages, and `--shard` refuses them ([`Plan::check_shardable`]).
    fn plan(cfg: &Self::Config) -> Self::Tasks;

    /// Its rows, its report and the events simulated, from the results of every task of `plan`
    /// (its [`Planned::plan`]) in task order.
    fn merge(
        cfg: &Self::Config,
        c: &Common,
        plan: &Self::Tasks,
        results: &<Self::Tasks as Tasks>::Results,
    ) -> (Self::Rows, Report, u64);
}

/// A command that runs by itself: it has no replications to split, or none that `--shard` and
/// `merge` take apart.
pub trait Direct: Command {
    /// Runs the experiment: its rows, its report and the events simulated.
    fn run(cfg: &Self::Config, common: &Common, progress: Progress) -> (Self::Rows, Report, u64);

    /// The replications it will run (for progress reporting).
    fn replications(cfg: &Self::Config, seeds: u64) -> u64;

    /// Why `--shard` does not apply to it.
    fn not_planned() -> UsageError {
        not_sharded("this command", "runs no replications to split")
    }
}

/// A queueing sweep: scenarios all run with one run length, each a group of rows. Its plan and
/// merge are those of every sweep ([`Planned`] is implemented for it).
pub trait Sweep: Command {
    /// Its scenarios, in row order.
    fn scenarios(cfg: &Self::Config) -> Vec<Scenario>;

    /// The run length of every scenario.
    fn run_length(cfg: &Self::Config) -> &RunConfig;

    /// Its rows and their report (marks, notes, warnings) from the outcomes of its scenarios, in
    /// order.
    fn summarise(
        cfg: &Self::Config,
        c: &Common,
        scenarios: &[Scenario],
        outcomes: &[Outcome],
    ) -> (Self::Rows, Report);
}

impl<T: Sweep> Planned for T {
    type Tasks = Queueing;

    fn plan(cfg: &T::Config) -> Queueing {
        Queueing::new(T::scenarios(cfg), T::run_length(cfg))
    }

    fn merge(
        cfg: &T::Config,
        c: &Common,
        plan: &Queueing,
        outcomes: &Vec<Outcome>,
    ) -> (T::Rows, Report, u64) {
        let (rows, report) = T::summarise(cfg, c, &plan.scenarios, outcomes);
        (rows, report, total_events(outcomes))
    }
}

/// How the rows of a plan's results are made: its command's [`Planned::merge`] over its
/// configuration, once plan and results are known to be of its kind.
pub(crate) type Summary<'a, R> =
    Box<dyn Fn(&Common, &Plan, &Merged) -> Result<(R, Report, u64), UsageError> + 'a>;

/// The way a command runs, as `commands!` dispatches it: [`ByPlan`] or [`ByRun`].
pub(crate) trait Way {
    /// The command's configuration.
    type Config;
    /// The command's rows.
    type Rows;

    /// Runs the whole experiment.
    fn run(cfg: &Self::Config, c: &Common, progress: Progress) -> (Self::Rows, Report, u64);

    /// The replications a whole run reports progress for.
    fn replications(cfg: &Self::Config, seeds: u64) -> u64;

    /// The plan with the summary of its results, or why the command has none.
    fn plan(cfg: &Self::Config) -> Result<(Plan, Summary<'_, Self::Rows>), UsageError>;
}

/// A [`Planned`] command: a whole run executes its plan and merges the results.
pub(crate) struct ByPlan<C>(PhantomData<C>);

impl<C: Planned> Way for ByPlan<C> {
    type Config = C::Config;
    type Rows = C::Rows;

    fn run(cfg: &C::Config, c: &Common, progress: Progress) -> (C::Rows, Report, u64) {
        let plan = C::plan(cfg).spooled();
        let results = plan.execute(c, progress);
        C::merge(cfg, c, &plan, &results)
    }

    fn replications(cfg: &C::Config, seeds: u64) -> u64 {
        C::plan(cfg).replications(seeds)
    }

    fn plan(cfg: &C::Config) -> Result<(Plan, Summary<'_, C::Rows>), UsageError> {
        let summary: Summary<'_, C::Rows> = Box::new(move |c, plan, merged| {
            let (plan, results) = C::Tasks::typed(plan, merged).ok_or_else(|| {
                UsageError::Other("the records are of another kind than the plan".into())
            })?;
            Ok(C::merge(cfg, c, plan, results))
        });
        Ok((C::plan(cfg).into_plan(), summary))
    }
}

/// A [`Direct`] command: it runs itself and has no plan.
pub(crate) struct ByRun<C>(PhantomData<C>);

impl<C: Direct> Way for ByRun<C> {
    type Config = C::Config;
    type Rows = C::Rows;

    fn run(cfg: &C::Config, c: &Common, progress: Progress) -> (C::Rows, Report, u64) {
        C::run(cfg, c, progress)
    }

    fn replications(cfg: &C::Config, seeds: u64) -> u64 {
        C::replications(cfg, seeds)
    }

    fn plan(_: &C::Config) -> Result<(Plan, Summary<'_, C::Rows>), UsageError> {
        Err(C::not_planned())
    }
}

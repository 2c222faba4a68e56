//! The tasks of a command, the one form in which a command is split into shards and merged back:
//! a [`Plan`] lists its tasks (one per scenario and replication), and [`Merged`] holds every
//! task's result, added up in task order. Each command gives its own with
//! [`Command::plan`](super::Command::plan) and [`Command::merge`](super::Command::merge).

use super::bins::Variant;
use super::{Common, Config, Outcome, Results, RunConfig, Scenario};
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
    },
    /// `bins`: its cases.
    Bins(Vec<(u64, u32, Variant)>),
}

impl Plan {
    /// The plan of `cfg`, or why it cannot be sharded.
    pub fn of(cfg: &Config) -> Result<Plan, UsageError> {
        super::plan_of(&cfg.experiment)
    }

    /// `scenarios`, each run with `run`, or why they cannot be sharded (`--warmup auto`,
    /// `--precision`).
    pub fn queueing(scenarios: Vec<Scenario>, run: &RunConfig) -> Result<Plan, UsageError> {
        check_run(run, "--warmup auto", "--precision")?;
        let runs = vec![run.clone(); scenarios.len()];
        Ok(Plan::Queueing { scenarios, runs })
    }

    /// The number of tasks: scenarios (or cases) times replications.
    pub fn tasks(&self, c: &Common) -> u64 {
        let scenarios = match self {
            Plan::Queueing { scenarios, .. } => scenarios.len(),
            Plan::Bins(cases) => cases.len(),
        };
        scenarios as u64 * c.seeds
    }

    /// The scenarios of a queueing plan, in row order.
    pub fn scenarios(&self) -> &[Scenario] {
        match self {
            Plan::Queueing { scenarios, .. } => scenarios,
            Plan::Bins(_) => unreachable!("a queueing command has a queueing plan"),
        }
    }
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

/// The command's rows and report from every task's result of `plan`, in task order.
pub fn merge(cfg: &Config, plan: &Plan, merged: &Merged) -> Results {
    let (rows, mut report, events) = super::merge_of(&cfg.experiment, &cfg.common, plan, merged);
    report.run.events = events;
    Results { rows, report }
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

//! The seam every command implements: how its arguments become its validated configuration, how
//! it runs, how many replications it runs, and, for the commands that can be sharded, its tasks
//! and how their results become its rows. The one list of commands (`commands!` in
//! [`crate::experiment`]) builds from it the enums of configurations ([`Experiment`]) and rows
//! ([`Rows`](super::Rows)) and every dispatch over them, so a command is added by its file and one
//! line in that list (and its arguments in [`crate::cli`]).

use std::path::PathBuf;

use super::plan::{Merged, Plan, not_sharded};
use super::{Common, Experiment, Progress};
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

    /// Runs the experiment: its rows, its report and the events simulated.
    fn run(cfg: &Self::Config, common: &Common, progress: Progress) -> (Self::Rows, Report, u64);

    /// The replications it will run (for progress reporting), twice over with `--warmup auto`.
    fn replications(cfg: &Self::Config, seeds: u64) -> u64;

    /// Its tasks, for `--shard` and `merge`, or why it cannot be split (by default: it runs no
    /// replications to split).
    fn plan(_cfg: &Self::Config) -> Result<Plan, UsageError> {
        Err(not_sharded("this command", "runs no replications to split"))
    }

    /// Its rows, its report and the events simulated, from the result of every task of `plan` (its
    /// [`Command::plan`]) in task order, as `merge` reads them.
    fn merge(
        _cfg: &Self::Config,
        _c: &Common,
        _plan: &Plan,
        _merged: &Merged,
    ) -> (Self::Rows, Report, u64) {
        unreachable!("only a command with a plan is merged")
    }

    /// The figure of its rows, for the commands that draw one (`--plot`).
    fn figure(_rows: &Self::Rows) -> Option<String> {
        None
    }
}

//! The seam every command implements: how its arguments become its validated configuration, how
//! it runs, and how many replications it runs. The one list of commands (`commands!` in
//! [`crate::experiment`]) builds from it the enums of configurations ([`Experiment`]) and rows
//! ([`Rows`](super::Rows)) and every dispatch over them, so a command is added by its file and one
//! line in that list (and its arguments in [`crate::cli`]).

use std::path::PathBuf;

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

    /// The figure of its rows, for the commands that draw one (`--plot`).
    fn figure(_rows: &Self::Rows) -> Option<String> {
        None
    }
}

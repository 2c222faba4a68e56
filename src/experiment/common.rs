//! What every command shares: the common options, the run length of the queueing commands, the
//! validated command ([`Config`]) and [`Config::from_cli`], which hands each command's arguments to
//! its own validation ([`Command::config`](super::Command::config)), and the size checks that keep
//! any run within memory.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::Experiment;
use crate::cli::Cli;
use crate::error::{UsageError, conflict, too_large};
use crate::limits;
use crate::model::RunLength;
use crate::options::Quantile;
use crate::output::Format;
use crate::output::dest::check_out;

/// Options shared by every command.
#[derive(Debug, Clone, Serialize)]
pub struct Common {
    /// Replications per scenario.
    pub seeds: u64,
    /// Base seed.
    pub seed: u64,
    /// Output format.
    #[serde(skip)]
    pub format: Format,
    /// Worker threads (`None`: all cores).
    #[serde(skip)]
    pub threads: Option<usize>,
    /// Output file (`None`: stdout).
    #[serde(skip)]
    pub out: Option<PathBuf>,
    /// SVG figure file (the commands that draw one; `-`: stdout).
    #[serde(skip)]
    pub plot: Option<PathBuf>,
}

/// Run length, guard and reading of results for the queueing commands.
#[derive(Debug, Clone, Serialize)]
pub struct RunConfig {
    /// Arrivals simulated before measuring (0 with `warmup_auto`).
    pub warmup: u64,
    /// Measured arrivals.
    pub requests: u64,
    /// Queue length at which a replication is stopped.
    pub queue_guard: u32,
    /// `--warmup auto`: each replication's warm-up is where MSER-5 puts the end of its transient.
    pub warmup_auto: bool,
    /// `--precision R`: double a row's requests until `mean_ci95 <= R * mean` and it is steady.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub precision: Option<f64>,
    /// With `precision`: the most measured arrivals per replication.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_requests: Option<u64>,
    /// Extra sojourn quantiles (fractions, e.g. 0.999), in the order asked.
    pub quantiles: Vec<Quantile>,
    /// `run --series`: record per-window series with windows of this width.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub series: Option<f64>,
    /// With `series`: the servers of each of the farm's groups, in order, which the windows
    /// count dispatches by.
    #[serde(skip)]
    pub series_groups: Vec<u32>,
    /// With `series`: each replication writes its windows to a tape as they close, and the
    /// rows pool them there (an unsharded run), instead of keeping them (a shard's records carry
    /// them).
    #[serde(skip)]
    pub series_spool: bool,
}

impl RunConfig {
    /// A fixed warm-up and run length, with nothing else asked for.
    pub fn new(warmup: u64, requests: u64, queue_guard: u32) -> RunConfig {
        RunConfig {
            warmup,
            requests,
            queue_guard,
            warmup_auto: false,
            precision: None,
            max_requests: None,
            quantiles: Vec::new(),
            series: None,
            series_groups: Vec::new(),
            series_spool: false,
        }
    }

    /// As a [`RunLength`].
    pub fn length(&self) -> RunLength {
        RunLength { warmup: self.warmup, requests: self.requests }
    }

    /// The most arrivals one replication may simulate: the largest measured count `--precision`
    /// may reach, plus the warm-up (`auto` may ask for up to the whole first pass).
    pub fn most_arrivals(&self) -> u64 {
        let requests = self.max_requests.unwrap_or(self.requests);
        let warmup = if self.warmup_auto { requests } else { self.warmup };
        requests.saturating_add(warmup)
    }
}

/// Everything a run needs.
#[derive(Debug, Clone)]
pub struct Config {
    /// Shared options.
    pub common: Common,
    /// The experiment.
    pub experiment: Experiment,
    /// Lines for stderr about options that were adjusted (e.g. too many `--threads`).
    pub warnings: Vec<String>,
}

impl Config {
    /// Validates the parsed command line.
    pub fn from_cli(cli: &Cli) -> Result<Config, UsageError> {
        let (mut common, warnings) = common_config(cli)?;
        let experiment = super::config_of(cli, &mut common)?;
        Ok(Config { common, experiment, warnings })
    }
}

/// The options every command shares (`--seeds`, `--seed`, `--threads`, `--out`, `--plot`), with
/// the warnings they give.
fn common_config(cli: &Cli) -> Result<(Common, Vec<String>), UsageError> {
    let g = &cli.global;
    let (default_seeds, plot) = super::global_of(&cli.command, g)?;
    let seeds = g.seeds.unwrap_or(default_seeds);
    let seed = g.seed.unwrap_or(1);
    let mut warnings = Vec::new();
    let threads = match g.threads {
        Some(asked) => {
            let most = limits::THREADS_PER_CORE * available_cores();
            if asked > most {
                warnings.push(format!(
                    "warning: --threads {asked} lowered to {most} ({} per core available; more only add overhead)",
                    limits::THREADS_PER_CORE
                ));
            }
            Some(asked.min(most))
        }
        None => None,
    };
    // `-o -` is stdout, as without `-o`.
    let out = g.out.clone().filter(|out| out != Path::new("-"));
    if let Some(out) = &out {
        check_out("--out", out)?;
    }
    if let Some(plot) = &plot {
        if plot == Path::new("-") {
            if out.is_none() {
                return Err(conflict(
                    "--plot -",
                    "sends the figure to stdout, where the table goes too: send the table to a file with -o FILE",
                ));
            }
        } else {
            check_out("--plot", plot)?;
        }
        let same = out.as_deref().is_some_and(|out| {
            out == plot || crate::output::dest::identity(out) == crate::output::dest::identity(plot)
        });
        if same {
            return Err(conflict("--plot", "and --out name the same file"));
        }
    }
    let common = Common { seeds, seed, format: g.format, threads, out, plot };
    Ok((common, warnings))
}

/// The cores this process may use (1 if unknown).
pub(crate) fn available_cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Refuses runs whose replications in flight would hold more than [`limits::MEMORY`].
pub(crate) fn check_memory(
    threads: Option<usize>,
    replications: u64,
    per_replication: u64,
    what: &str,
) -> Result<(), UsageError> {
    let workers = threads.unwrap_or_else(available_cores) as u64;
    let at_once = workers.min(replications).max(1);
    if at_once.saturating_mul(per_replication) > limits::MEMORY {
        return Err(too_large(
            what,
            format!(
                "needs about {} MiB per replication, and {at_once} would run at once (--threads); \
                 at most {} MiB are accepted: use fewer --threads or a smaller farm",
                per_replication >> 20,
                limits::MEMORY >> 20
            ),
        ));
    }
    Ok(())
}

/// Refuses more than [`limits::REPLICATIONS`] replications in all (`seeds` over `scenarios`).
pub(crate) fn check_replications(seeds: u64, scenarios: usize) -> Result<(), UsageError> {
    let total = seeds.saturating_mul(scenarios as u64);
    if total > limits::REPLICATIONS {
        return Err(too_large(
            format!("--seeds {seeds}"),
            format!(
                "over {scenarios} scenarios is {total} replications; at most {} are accepted \
                 (all shards together)",
                limits::REPLICATIONS
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_counts_the_replications_in_flight() {
        let bins = 100_000_000 * limits::BYTES_PER_BIN;
        assert!(check_memory(Some(1024), 100, bins, "--n").is_err());
        assert!(check_memory(Some(2), 100, bins, "--n").is_ok());
        assert!(check_memory(Some(1024), 2, bins, "--n").is_ok(), "at most 2 run at once");
    }
}

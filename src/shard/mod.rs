//! Sweeps larger than one machine: `--shard K/N`, raw records, and `lbsim merge`.
//!
//! A simulating command is a list of *tasks*, one per (scenario, replication), numbered in the
//! order one process merges them: task `i` is replication `i % seeds` of scenario `i / seeds`,
//! scenarios in row order (`run`: the policies of each sweep point, point by point; `bins`: its
//! cases; `capacity`: one task per policy, its whole bisection, recorded as replication 0 of
//! scenario `i`). Every task's random streams are keyed by (seed, scenario, replication) alone,
//! so a task gives the same bits wherever it runs.
//!
//! `--shard K/N` runs only the tasks whose index modulo `N` is `K`, and writes its *raw records*
//! (JSON Lines, [`records`]) instead of rows: a manifest line (the lbsim version, the command line,
//! a hash of the resolved plan, the task count, `N` and `K`), one line per task with that
//! replication's exact result, and an end line. `lbsim merge` ([`merge`]) checks that the shards
//! belong to one plan and hold every task exactly once, puts the results back in task order and
//! summarises them with the command's own `merge` (the summary of its whole runs too): nothing is
//! pre-merged, so the sums are
//! added in the same order as in one process and the output is the same bytes (JSON's `run`
//! timing apart).
//!
//! Not sharded: `--warmup auto` and `--precision` (both read all the replications of a scenario
//! before deciding what to run next); `swrr` and `--print`/`--print-scenario`, which run no
//! replications. Each is refused with one line. `--format` and `--plot` belong to the merge.

pub mod merge;
pub mod records;

use std::io::{self, Write};
use std::time::Instant;

use crate::cli::{Cli, Command};
use crate::error::UsageError;
use crate::experiment::{self, Progress, Results, Rows, Scenario};
use crate::experiment::{Common, Config, Experiment, RunConfig};
use crate::output::{Format, Report, RunInfo};
use crate::stats::RepStats;

pub use crate::experiment::{Merged, Plan};
pub use crate::options::{MAX_SHARDS, Shard};

/// What a command line asks for: the whole command, one shard of it, or a merge of shards.
#[derive(Debug)]
pub enum Invocation {
    /// The whole command in this process.
    Whole(Config),
    /// One shard of the command: its raw records.
    Shard {
        /// The command.
        cfg: Config,
        /// Which shard.
        shard: Shard,
        /// The command line as given (after `lbsim`), recorded in the manifest.
        argv: Vec<String>,
    },
    /// `lbsim merge`: the output of the command the shards ran.
    Merge {
        /// The command the shards ran, with the merge's output options.
        cfg: Config,
        /// Their results, in task order.
        merged: Merged,
    },
}

impl Invocation {
    /// The job of `cli`; `argv` is the command line after `lbsim` (the shards' manifests record
    /// it, and a merge parses it again).
    pub fn from_cli(cli: &Cli, argv: Vec<String>) -> Result<Invocation, UsageError> {
        if let Command::Merge(args) = &cli.command {
            let (cfg, merged) = merge::read(cli, args)?;
            return Ok(Invocation::Merge { cfg, merged });
        }
        let cfg = Config::from_cli(cli)?;
        let Some(shard) = cli.global.shard else {
            return Ok(Invocation::Whole(cfg));
        };
        if cli.global.format != Format::Table {
            return Err(UsageError::Conflict {
                option: format!("--format {}", format_name(cli.global.format)),
                rule: "does not apply with --shard, which writes raw records (JSON Lines): give \
                       --format to lbsim merge"
                    .into(),
            });
        }
        if cfg.common.plot.is_some() {
            return Err(UsageError::Conflict {
                option: "--plot".into(),
                rule: "does not apply with --shard, which writes raw records: give --plot to \
                       lbsim merge"
                    .into(),
            });
        }
        if let Command::Run(a) = &cli.command
            && a.file == std::path::Path::new("-")
        {
            return Err(UsageError::Conflict {
                option: "--shard".into(),
                rule: "needs a scenario file, not standard input (-): lbsim merge reads the \
                       scenario again"
                    .into(),
            });
        }
        Plan::of(&cfg)?;
        Ok(Invocation::Shard { cfg, shard, argv })
    }

    /// The command's configuration.
    pub fn config(&self) -> &Config {
        match self {
            Invocation::Whole(cfg)
            | Invocation::Shard { cfg, .. }
            | Invocation::Merge { cfg, .. } => cfg,
        }
    }

    /// Replications this process will run (for the progress bar).
    pub fn replications(&self) -> u64 {
        match self {
            Invocation::Whole(cfg) => experiment::replications(cfg),
            Invocation::Shard { cfg, shard, .. } => {
                let seeds = cfg.common.seeds;
                Plan::of(cfg).map_or(0, |p| {
                    shard.tasks(p.tasks(&cfg.common)).count() as u64 * p.per_task(seeds)
                })
            }
            Invocation::Merge { .. } => 0,
        }
    }

    /// Arrivals this process will simulate, warm-ups included (for the progress bar), when its
    /// plan fixes them: not for a merge, nor for what cannot be sharded (`--warmup auto` and
    /// `--precision` decide during the run; some commands simulate no queue).
    pub fn requests(&self) -> Option<u64> {
        let (cfg, shard) = match self {
            Invocation::Whole(cfg) => (cfg, Shard { index: 0, count: 1 }),
            Invocation::Shard { cfg, shard, .. } => (cfg, *shard),
            Invocation::Merge { .. } => return None,
        };
        let Ok(Plan::Queueing(experiment::Queueing { runs, .. })) = Plan::of(cfg) else {
            return None;
        };
        let seeds = cfg.common.seeds;
        let arrivals = |i: u64| {
            let run = &runs[(i / seeds) as usize];
            run.warmup.saturating_add(run.requests)
        };
        Some(shard.tasks(runs.len() as u64 * seeds).map(arrivals).fold(0, u64::saturating_add))
    }

    /// Runs the job: the command's rows, or a shard's raw records as the report's text.
    pub fn execute(&self, progress: Progress) -> Results {
        match self {
            Invocation::Whole(cfg) => experiment::execute(cfg, progress),
            Invocation::Shard { .. } => {
                let mut text = Vec::new();
                let mut results =
                    self.write_records(progress, &mut text).expect("writing to memory");
                results.report.text = Some(String::from_utf8(text).expect("JSON is UTF-8"));
                results
            }
            Invocation::Merge { cfg, merged } => {
                let start = Instant::now();
                let mut results =
                    experiment::plan::merge(cfg, merged).expect("checked when the merge was read");
                results.report.run = run_info(start, results.report.run.events);
                results
            }
        }
    }
}

impl Invocation {
    /// Runs a shard, writing its raw records to `out` as they are made (the report holds only
    /// the timing); an error writing `out` is returned once the tasks have run. Not a shard: runs
    /// the job as [`Invocation::execute`] does, writing nothing.
    pub fn write_records(
        &self,
        progress: Progress,
        out: &mut (dyn Write + Send),
    ) -> io::Result<Results> {
        let Invocation::Shard { cfg, shard, argv } = self else {
            return Ok(self.execute(progress));
        };
        let start = Instant::now();
        let plan = Plan::of(cfg).expect("checked when the job was made");
        let events = records::write(cfg, &plan, *shard, argv, progress, out)?;
        let mut report = Report::new("shard", &(), &[] as &[()]);
        report.run = run_info(start, events);
        Ok(Results { rows: Rows::Print, report })
    }
}

fn run_info(start: Instant, events: u64) -> RunInfo {
    let wall = start.elapsed().as_secs_f64();
    RunInfo { wall_seconds: wall, events, events_per_second: events as f64 / wall }
}

fn format_name(f: Format) -> &'static str {
    match f {
        Format::Table => "table",
        Format::Csv => "csv",
        Format::Json => "json",
    }
}

/// A hash of everything that decides the command's output: the resolved experiment (scenarios,
/// run lengths, what is reported) and the replications and seed. Output options (format, file,
/// threads) are left out: they never change the numbers. xxh64 (seed 0) of the canonical form,
/// [`canonical`], as 16 hex digits.
pub fn plan_hash(cfg: &Config) -> String {
    format!("{:016x}", xxhash_rust::xxh64::xxh64(canonical(cfg).as_bytes(), 0))
}

/// The canonical form of what a shard's plan depends on: the JSON of
/// `{"experiment": …, "seeds": …, "seed": …}`, the experiment as its serde form (the same one a
/// JSON report's `params` shows: fields in declaration order, floats in their shortest
/// round-trip form, values derived from the others such as parsed limiters left out).
fn canonical(cfg: &Config) -> String {
    #[derive(serde::Serialize)]
    struct Canonical<'a> {
        experiment: &'a Experiment,
        seeds: u64,
        seed: u64,
    }
    let c =
        Canonical { experiment: &cfg.experiment, seeds: cfg.common.seeds, seed: cfg.common.seed };
    serde_json::to_string(&c).expect("configs serialise")
}

/// Runs task `i` of a queueing plan: replication `i % seeds` of scenario `i / seeds`.
fn run_task(scenarios: &[Scenario], runs: &[RunConfig], c: &Common, i: u64) -> RepStats {
    let s = (i / c.seeds) as usize;
    experiment::run_replication(&scenarios[s], &runs[s], c.seed, i % c.seeds)
}

/// Runs `f` over the tasks of `shard` in parallel on `--threads` workers and gives each result
/// to `consume` in task order, holding only a bounded number of results at once.
fn run_shard<R: Send>(
    c: &Common,
    tasks: u64,
    shard: Shard,
    f: impl Fn(u64) -> R + Sync + Send,
    mut consume: impl FnMut(u64, R) + Send,
) {
    let indices: Vec<u64> = shard.tasks(tasks).collect();
    let work = || {
        experiment::ordered::for_each_in_order(
            indices.len(),
            |j| f(indices[j]),
            |j, r| consume(indices[j], r),
        );
    };
    experiment::in_pool(c, work);
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[test]
    fn parses_k_of_n() {
        assert_eq!(Shard::parse("0/1").unwrap(), Shard { index: 0, count: 1 });
        assert_eq!(Shard::parse("6/7").unwrap(), Shard { index: 6, count: 7 });
        for bad in ["", "1", "/", "1/", "/2", "2/2", "3/2", "0/0", "-1/2", "+1/2", "1/2/3", " 1/2"]
        {
            assert!(Shard::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn shards_partition_the_tasks() {
        for n in [1, 3, 7, 20] {
            let mut all: Vec<u64> =
                (0..n).flat_map(|k| Shard { index: k, count: n }.tasks(17)).collect();
            all.sort_unstable();
            assert_eq!(all, (0..17).collect::<Vec<_>>(), "N = {n}");
        }
        assert_eq!(Shard { index: 2, count: 3 }.tasks(9).collect::<Vec<_>>(), [2, 5, 8]);
    }

    /// The plan hash of the command line `args` (after `lbsim`).
    fn hash_of(args: &str) -> String {
        let cli = crate::cli::Cli::try_parse_from(format!("lbsim {args}").split(' ')).unwrap();
        plan_hash(&Config::from_cli(&cli).unwrap())
    }

    #[test]
    fn the_plan_hash_reads_what_decides_the_numbers_and_not_the_output_options() {
        let base = "homo --loads 0.9 --policies p2c,jsq --seeds 2 --requests 1000";
        let h = hash_of(base);
        for output in ["--format json", "--format csv", "-o /tmp/x.csv", "--threads 1", "-q"] {
            assert_eq!(hash_of(&format!("{base} {output}")), h, "{output}");
        }
        for changed in [
            "homo --loads 0.8 --policies p2c,jsq --seeds 2 --requests 1000",
            "homo --loads 0.9 --policies jsq,p2c --seeds 2 --requests 1000",
            "homo --loads 0.9 --policies p2c,jsq --seeds 3 --requests 1000",
            "homo --loads 0.9 --policies p2c,jsq --seeds 2 --requests 1001",
            "homo --loads 0.9 --policies p2c,jsq --seeds 2 --requests 1000 --seed 2",
            "homo --loads 0.9 --policies p2c,jsq --seeds 2 --requests 1000 --tau 3",
            "homo --loads 0.9 --policies p2c,jsq --seeds 2 --requests 1000 --servers 11",
        ] {
            assert_ne!(hash_of(changed), h, "{changed}");
        }
    }

    #[test]
    fn the_plan_hash_is_of_the_canonical_json_form() {
        let cli = crate::cli::Cli::try_parse_from("lbsim bins --n 100 --d 2 --seeds 3".split(' '))
            .unwrap();
        let cfg = Config::from_cli(&cli).unwrap();
        assert_eq!(
            canonical(&cfg),
            r#"{"experiment":{"Bins":{"n":[100],"d":[2],"variants":["uniform","left"]}},"seeds":3,"seed":1}"#
        );
        let sum = xxhash_rust::xxh64::xxh64(canonical(&cfg).as_bytes(), 0);
        assert_eq!(plan_hash(&cfg), format!("{sum:016x}"));
    }
}

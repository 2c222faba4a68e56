//! `lbsim subset`: how evenly subsetting spreads connections over the backends (the SRE book's
//! chapter 20; the algorithms are in [`crate::subset`]).
//!
//! For each subset size and method, every replication computes every client's subset and counts
//! each backend's connections (how many clients include it). A row gives, as medians over the
//! replications, the least and the most connected backend over the mean (`clients * subset /
//! backends`) and the coefficient of variation (standard deviation over the mean, over all
//! backends). Replication `k` draws from the key `subset::key(--seed).u64(k)`, so a row does not
//! depend on the other rows, and every subset size of a method shares its shuffles (common random
//! numbers: a random subset of 30 is the head of the same client's subset of 90, and round `r`
//! of the deterministic method shuffles the same way whatever the size).

use rayon::prelude::*;
use serde::Serialize;

use super::common::Common;
use super::{Command, Direct, Experiment};
use super::{Progress, params};
use crate::cancel::cancel_point;
use crate::cli::Global;
use crate::cli::SubsetArgs;
use crate::error::UsageError;
use crate::output::Report;
use crate::stats::median;
use crate::subset::{Spread, Subsetting, connections, key};

/// Largest `--clients` and `--backends`.
pub const MAX_COUNT: u64 = crate::args::SUBSET_MAX;
/// Largest number of list entries shuffled in one command (replications included): about a
/// minute of work on one core.
pub const MAX_WORK: f64 = 1e10;
/// Default `--seeds`.
pub const DEFAULT_SEEDS: u64 = 20;

/// `lbsim subset`.
#[derive(Debug, Clone, Serialize)]
pub struct SubsetConfig {
    /// Clients, each holding one subset.
    pub clients: usize,
    /// Backends.
    pub backends: usize,
    /// Subset sizes.
    pub subsets: Vec<usize>,
    /// Methods.
    pub methods: Vec<Subsetting>,
}

/// One row of `subset`.
#[derive(Debug, Clone, Serialize)]
pub struct SubsetRow {
    /// Clients.
    pub clients: u64,
    /// Backends.
    pub backends: u64,
    /// Backends per client.
    pub subset: u64,
    /// `random` or `deterministic`.
    pub method: Subsetting,
    /// Replications.
    pub seeds: u64,
    /// Median over seeds of the least connected backend's connections over the mean.
    pub min_ratio: f64,
    /// Median over seeds of the most connected backend's connections over the mean.
    pub max_ratio: f64,
    /// Median over seeds of the standard deviation of the connections over their mean.
    pub cv: f64,
    /// Each replication's spread, in replication order (not an output column).
    #[serde(skip)]
    pub per_seed: Vec<Spread>,
}

/// The (subset, method) cases of a config, in output order.
pub fn cases(cfg: &SubsetConfig) -> Vec<(usize, Subsetting)> {
    cfg.subsets.iter().flat_map(|&s| cfg.methods.iter().map(move |&m| (s, m))).collect()
}

/// Entries shuffled by one replication of a case: one list of `backends` per client (random) or
/// per round of `backends / size` clients (deterministic).
fn work(cfg: &SubsetConfig, size: usize, method: Subsetting) -> f64 {
    let lists = match method {
        Subsetting::Random => cfg.clients,
        Subsetting::Deterministic => cfg.clients.div_ceil(cfg.backends / size),
    };
    lists as f64 * cfg.backends as f64
}

/// `lbsim subset`.
pub struct Subset;

impl Command for Subset {
    type Args = SubsetArgs;
    type Config = SubsetConfig;
    type Rows = Vec<SubsetRow>;
    const DEFAULT_SEEDS: u64 = DEFAULT_SEEDS;

    /// Validates `lbsim subset`'s options.
    fn config(a: &SubsetArgs, common: &mut Common, _: &Global) -> Result<Experiment, UsageError> {
        let seeds = common.seeds;
        let (clients, backends) = (a.clients, a.backends);
        let subsets = a.subsets.to_vec();
        if let Some(&s) = subsets.iter().find(|&&s| s > backends) {
            return Err(UsageError::Conflict {
                option: "--subsets".into(),
                rule: format!(
                    "{s} is larger than --backends {backends}: a subset holds distinct backends"
                ),
            });
        }
        let cfg = SubsetConfig { clients, backends, subsets, methods: a.methods.to_vec() };
        let total: f64 =
            cases(&cfg).iter().map(|&(s, m)| work(&cfg, s, m)).sum::<f64>() * seeds as f64;
        if total > MAX_WORK {
            return Err(UsageError::TooLarge {
                option: format!("--clients {clients} with --backends {backends}"),
                limit: format!(
                    "and --seeds {seeds} shuffle about {total:.1e} list entries; at most {MAX_WORK:.0e} are accepted: use fewer clients, backends, subsets or seeds"
                ),
            });
        }
        Ok(Experiment::Subset(cfg))
    }
}

impl Direct for Subset {
    /// Runs `subset`; returns the rows, the report built from them and the connections counted.
    fn run(cfg: &SubsetConfig, c: &Common, progress: Progress) -> (Vec<SubsetRow>, Report, u64) {
        let (seeds, seed) = (c.seeds, c.seed);
        let cases = cases(cfg);
        let tasks: Vec<(usize, u64)> =
            (0..cases.len()).flat_map(|i| (0..seeds).map(move |k| (i, k))).collect();
        let spreads: Vec<Spread> = tasks
            .par_iter()
            .map(|&(i, k)| {
                cancel_point();
                let (size, method) = cases[i];
                let counts = connections(method, cfg.clients, cfg.backends, size, key(seed).u64(k));
                progress.done();
                Spread::of(&counts).expect("every client connects to at least one backend")
            })
            .collect();
        let rows: Vec<SubsetRow> = cases
            .iter()
            .zip(spreads.chunks(seeds as usize))
            .map(|(&(size, method), s)| {
                let med = |f: fn(&Spread) -> f64| median(&s.iter().map(f).collect::<Vec<f64>>());
                SubsetRow {
                    clients: cfg.clients as u64,
                    backends: cfg.backends as u64,
                    subset: size as u64,
                    method,
                    seeds,
                    min_ratio: med(|s| s.min_ratio),
                    max_ratio: med(|s| s.max_ratio),
                    cv: med(|s| s.cv),
                    per_seed: s.to_vec(),
                }
            })
            .collect();
        let connections = cases.iter().map(|&(s, _)| (cfg.clients * s) as u64).sum::<u64>() * seeds;
        let mut report = Report::new("subset", &params(c, cfg), &rows);
        report.marks = rows
            .iter()
            .map(|r| {
                let left = cfg.backends % r.subset as usize;
                (r.method == Subsetting::Deterministic && left > 0).then(|| {
                    format!("{left} of the {} backends left out of every round", cfg.backends)
                })
            })
            .collect();
        report.notes.push(NOTE.into());
        (rows, report, connections)
    }

    fn replications(cfg: &SubsetConfig, seeds: u64) -> u64 {
        cases(cfg).len() as u64 * seeds
    }
}

/// The footnote under the table.
const NOTE: &str = "connections per backend = clients whose subset includes it; min_ratio and \
max_ratio: the least and most connected backend over the mean (clients x subset / backends); cv: \
their standard deviation over the mean; each the median over seeds. Deterministic subsetting \
(SRE book, Example 20-4) leaves the last backends % subset entries of each round's shuffle unused.";

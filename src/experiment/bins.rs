//! `lbsim bins`: `n` balls into `n` bins, each ball joining the least loaded of `d` sampled bins.
//!
//! `uniform`: the `d` samples are independent and uniform (with replacement); ties are broken
//! uniformly at random. Max load is `ln n / ln ln n` for `d = 1` and `ln ln n / ln d + O(1)` for
//! `d >= 2` (Azar, Broder, Karlin, Upfal, *Balanced Allocations*, 1994/1999).
//! `left`: Vöcking's always-go-left: the bins form `d` contiguous groups, choice `i` is uniform in
//! group `i`, and a tie goes to the leftmost group (*How Asymmetry Helps Load Balancing*, 1999).

use serde::Serialize;

use super::params;
use super::{Cases, Command, Experiment, Planned};
use crate::cancel::cancel_every;
use crate::cli::BinsArgs;
use crate::cli::Global;
use crate::error::{UsageError, conflict};
use crate::experiment::common::{Common, check_memory, check_replications};
use crate::limits;
use crate::output::Report;
use crate::policy::uniform;
use crate::rng::{SimRng, StreamKey};
use crate::stats::median;

pub use crate::args::Variant;

/// `lbsim bins`.
#[derive(Debug, Clone, Serialize)]
pub struct BinsConfig {
    /// Balls = bins.
    pub n: Vec<u64>,
    /// Choices.
    pub d: Vec<u32>,
    /// Variants.
    pub variants: Vec<Variant>,
}

/// `lbsim bins`.
pub struct Bins;

impl Command for Bins {
    type Args = BinsArgs;
    type Config = BinsConfig;
    type Rows = Vec<BinsRow>;

    /// Validates `lbsim bins`: the bin counts, choices and variants.
    fn config(a: &BinsArgs, common: &mut Common, _: &Global) -> Result<Experiment, UsageError> {
        let (seeds, threads) = (common.seeds, common.threads);
        let (n, d, variants) = (a.n.to_vec(), a.d.to_vec(), a.variants.to_vec());
        if !variants.contains(&Variant::Uniform) && d.iter().all(|&dd| dd < 2) {
            return Err(conflict(
                "--variants left",
                "runs only for --d 2 or more, and --d gives only 1: nothing to run",
            ));
        }
        if let Some(&dd) = d.iter().find(|&&dd| u64::from(dd) > *n.iter().min().unwrap()) {
            return Err(conflict(
                "--d",
                format!("{dd} is larger than the smallest --n; each ball needs d <= n bins"),
            ));
        }
        check_replications(seeds, n.len() * d.len() * variants.len())?;
        let largest = n.iter().copied().max().unwrap_or(0);
        check_memory(
            threads,
            seeds * n.len() as u64,
            largest * limits::BYTES_PER_BIN,
            &format!("--n {largest}"),
        )?;
        Ok(Experiment::Bins(BinsConfig { n, d, variants }))
    }
}

impl Planned for Bins {
    /// Every replication of every case ([`cases`]).
    type Tasks = Cases;

    fn plan(cfg: &BinsConfig) -> Cases {
        Cases(cases(cfg))
    }

    /// The rows, the report built from them and the number of balls thrown.
    fn merge(
        cfg: &BinsConfig,
        c: &Common,
        _: &Cases,
        loads: &Vec<u32>,
    ) -> (Vec<BinsRow>, Report, u64) {
        summarise(cfg, c, loads)
    }
}

/// One row of `bins`.
#[derive(Debug, Clone, Serialize)]
pub struct BinsRow {
    /// Balls and bins.
    pub n: u64,
    /// Choices.
    pub d: u32,
    /// `uniform` or `left`.
    pub variant: Variant,
    /// Replications.
    pub seeds: u64,
    /// Median over seeds of the max load.
    pub max_load_median: f64,
    /// Smallest max load over seeds.
    pub max_load_min: u32,
    /// Largest max load over seeds.
    pub max_load_max: u32,
}

/// The (n, d, variant) cases of a config, in output order (`left` needs d >= 2).
pub fn cases(cfg: &BinsConfig) -> Vec<(u64, u32, Variant)> {
    let mut out = Vec::new();
    for &n in &cfg.n {
        for &d in &cfg.d {
            for &v in &cfg.variants {
                if v == Variant::Uniform || d >= 2 {
                    out.push((n, d, v));
                }
            }
        }
    }
    out
}

/// Throws `n` balls into `n` bins; returns the max load.
pub fn max_load(n: usize, d: u32, variant: Variant, rng: &mut SimRng) -> u32 {
    let mut bins = vec![0u16; n];
    let d = d as usize;
    let mut max = 0;
    for ball in 0..n as u64 {
        cancel_every(ball);
        let best = match variant {
            Variant::Uniform => {
                let mut best = uniform(rng, n);
                let mut ties = 1;
                for _ in 1..d {
                    let j = uniform(rng, n);
                    if bins[j] < bins[best] {
                        best = j;
                        ties = 1;
                    } else if bins[j] == bins[best] {
                        // Reservoir sampling: each tied sample ends up chosen with prob. 1/ties.
                        ties += 1;
                        if uniform(rng, ties) == 0 {
                            best = j;
                        }
                    }
                }
                best
            }
            Variant::Left => {
                let mut best = usize::MAX;
                for g in 0..d {
                    let (lo, hi) = (g * n / d, (g + 1) * n / d);
                    let j = lo + uniform(rng, hi - lo);
                    if best == usize::MAX || bins[j] < bins[best] {
                        best = j;
                    }
                }
                best
            }
        };
        bins[best] = bins[best].saturating_add(1);
        max = max.max(bins[best]);
    }
    u32::from(max)
}

/// Replication `k` of case `(n, d, variant)`: the max load.
pub fn task((n, d, v): (u64, u32, Variant), seed: u64, k: u64) -> u32 {
    let mut rng = StreamKey::new(seed, "bins").u64(n).u64(u64::from(d)).u64(v as u64).u64(k).rng();
    max_load(n as usize, d, v, &mut rng)
}

/// The rows of `bins`, their report and the number of balls thrown, from the max loads of every
/// replication of every case of [`cases`], in case-then-replication order.
pub fn summarise(cfg: &BinsConfig, c: &Common, loads: &[u32]) -> (Vec<BinsRow>, Report, u64) {
    let cases = cases(cfg);
    let rows: Vec<BinsRow> = cases
        .iter()
        .zip(loads.chunks(c.seeds as usize))
        .map(|(&(n, d, variant), m)| {
            let as_f64: Vec<f64> = m.iter().map(|&x| f64::from(x)).collect();
            BinsRow {
                n,
                d,
                variant,
                seeds: c.seeds,
                max_load_median: median(&as_f64),
                max_load_min: *m.iter().min().unwrap(),
                max_load_max: *m.iter().max().unwrap(),
            }
        })
        .collect();
    let balls = cases.iter().map(|&(n, ..)| n).sum::<u64>() * c.seeds;
    let report = Report::new("bins", &params(c, cfg), &rows);
    (rows, report, balls)
}

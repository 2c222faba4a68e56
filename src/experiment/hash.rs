//! `lbsim hash`: how evenly consistent hashing spreads keys, and how many move when a server is
//! added.
//!
//! The keys are the integers `0..keys`, hashed by [`key_hash`] (xxHash64). For each placement:
//!
//! - `max_over_mean`: the most keys on one of the `n` servers over the mean `keys / n`;
//! - `moved_fraction`: the fraction of keys whose server differs between the placement for `n`
//!   servers and the one for `n + 1`: the ring of `n + 1` servers built with the same seed (it
//!   keeps every point of the ring of `n`), the Maglev table rebuilt for `n + 1`, or `h % n`
//!   against `h % (n + 1)`; the ideal is `1 / (n + 1)`, the new server's share;
//! - `ring-bounded` rows (`--balance F`): the same ring, keys placed one after another with
//!   [`Ring::lookup_bounded`] under HAProxy's cap, each placed key counting as one request in
//!   flight ([`haproxy_slots`] with weight 1 per server, servers listed in index order). This is
//!   how a bounded ring spreads a static key set; with live traffic the cap applies to requests
//!   in flight instead.
//!
//! Each row holds the medians over `--seeds` placements. Replication `k` places the servers with
//! a seed drawn from the stream (`--seed`, `hash-ring` or `hash-maglev`, `k`) of [`crate::rng`],
//! which does not depend on `n` or `vnodes`: the structures for `n` and `n + 1` servers of one
//! replication share their placement, and so do the rings with fewer and more vnodes (a ring
//! with 10 points per server holds the first 10 of the ring with 100). Modulo involves no seed:
//! every replication gives the same numbers.

use rand::Rng;
use rayon::prelude::*;
use serde::Serialize;

use super::common::{Common, check_memory, check_replications};
use super::{Command, Direct, Experiment};
use super::{Progress, params};
use crate::cancel::{cancel_every, cancel_point};
use crate::cli::Global;
use crate::cli::HashArgs;
use crate::error::{UsageError, conflict, too_large};
use crate::hashing::{DEFAULT_TABLE_SIZE, Maglev, Ring, factor_percent, haproxy_slots, key_hash};
use crate::limits;
use crate::output::Report;
use crate::rng::StreamKey;
use crate::stats::median;

pub use crate::args::HashMethod;

/// `lbsim hash`.
#[derive(Debug, Clone, Serialize)]
pub struct HashConfig {
    /// Servers before one is added.
    pub servers: usize,
    /// Keys placed (the integers `0..keys`).
    pub keys: u64,
    /// Points per server on the ring.
    pub vnodes: Vec<usize>,
    /// Placements compared.
    pub methods: Vec<HashMethod>,
    /// Bounded-load factor of the `ring-bounded` rows (`None`: no such rows).
    pub balance: Option<f64>,
}

/// `lbsim hash`.
pub struct Hash;

impl Command for Hash {
    type Args = HashArgs;
    type Config = HashConfig;
    type Rows = Vec<HashRow>;

    /// Validates `lbsim hash`.
    fn config(a: &HashArgs, common: &mut Common, _: &Global) -> Result<Experiment, UsageError> {
        let (seeds, threads) = (common.seeds, common.threads);
        let (servers, keys, balance) = (a.servers, a.keys, a.balance);
        let (vnodes, methods) = (a.vnodes.to_vec(), a.methods.to_vec());
        let ring = methods.contains(&HashMethod::Ring);
        if balance.is_some() && !ring {
            return Err(conflict(
                "--balance",
                "adds ring-bounded rows, which need ring in --methods",
            ));
        }
        if methods.contains(&HashMethod::Maglev) {
            maglev_fits(servers, 1, DEFAULT_TABLE_SIZE)
                .map_err(|rule| conflict("--servers", format!("{servers} with maglev: {rule}")))?;
        }
        let most = vnodes.iter().copied().max().unwrap_or(1);
        let points = (servers as u64 + 1).saturating_mul(most as u64);
        if ring {
            ring_fits(servers + 1, most as u64)
                .map_err(|rule| too_large(format!("--vnodes {most}"), rule.to_string()))?;
        }
        let rows = methods
            .iter()
            .map(|m| match m {
                HashMethod::Ring => vnodes.len() * if balance.is_some() { 2 } else { 1 },
                _ => 1,
            })
            .sum::<usize>();
        check_replications(seeds, rows)?;
        // Per replication in flight: two rings (or tables) and one server per key.
        let rings = if ring { 2 * points * 16 } else { 2 * DEFAULT_TABLE_SIZE as u64 * 4 };
        check_memory(threads, seeds * rows as u64, rings + keys * 4, &format!("--keys {keys}"))?;
        Ok(Experiment::Hash(HashConfig { servers, keys, vnodes, methods, balance }))
    }
}

impl Direct for Hash {
    /// Runs `hash`; returns the rows, the report and the number of key lookups.
    fn run(cfg: &HashConfig, c: &Common, progress: Progress) -> (Vec<HashRow>, Report, u64) {
        let cases = cases(cfg);
        let mut sorted: Vec<u64> = (0..cfg.keys).into_par_iter().map(key_hash).collect();
        sorted.par_sort_unstable();
        let tasks: Vec<(usize, u64)> =
            (0..cases.len()).flat_map(|i| (0..c.seeds).map(move |k| (i, k))).collect();
        let results: Vec<Placement> = tasks
            .par_iter()
            .with_max_len(1)
            .map(|&(i, k)| {
                let p = measure(cases[i], cfg.servers, &sorted, c.seed, k);
                progress.done();
                p
            })
            .collect();
        let n = cfg.servers as u64;
        let rows: Vec<HashRow> = cases
            .iter()
            .zip(results.chunks(c.seeds as usize))
            .map(|(&case, ps)| {
                let of = |f: fn(&Placement) -> f64| median(&ps.iter().map(f).collect::<Vec<_>>());
                HashRow {
                    method: case.method(),
                    servers: n,
                    keys: cfg.keys,
                    vnodes: case.vnodes(),
                    seeds: c.seeds,
                    max_over_mean: of(|p| p.max_over_mean),
                    moved_fraction: of(|p| p.moved_fraction),
                    ideal_moved_fraction: 1.0 / (n + 1) as f64,
                }
            })
            .collect();
        let lookups = 2 * cfg.keys * tasks.len() as u64;
        let mut report = Report::new("hash", &params(c, cfg), &rows);
        report.notes.push(format!(
            "keys 0..{} hashed by xxHash64; max_over_mean: most keys on one of {n} servers over the \
             mean; moved_fraction: keys whose server changes when server {n} is added (ideal \
             1/(n+1)); medians over {} placements{}.",
            cfg.keys,
            c.seeds,
            match cfg.balance {
                Some(f) => format!(
                    "; ring-bounded: keys placed in order under HAProxy's hash-balance-factor {}",
                    factor_percent(f)
                ),
                None => String::new(),
            }
        ));
        (rows, report, lookups)
    }

    fn replications(cfg: &HashConfig, seeds: u64) -> u64 {
        cases(cfg).len() as u64 * seeds
    }
}

/// A rule of a hashing structure broken by a farm's size; displays as the rule broken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unfit {
    /// Maglev's table holds fewer entries than the servers built.
    #[error("its table of {table} entries takes at most {most} servers{}", if *.extra { " (n + 1 are built)" } else { "" })]
    Maglev {
        /// The table's entries.
        table: usize,
        /// The most servers it takes.
        most: usize,
        /// Whether one server more than the farm's is built (`hash`).
        extra: bool,
    },
    /// The ring holds more points than accepted.
    #[error(
        "on {built} servers is {points} points per ring; at most {} are accepted",
        limits::RING_POINTS
    )]
    Ring {
        /// The servers built.
        built: usize,
        /// Their points.
        points: u64,
    },
}

/// Maglev's rule, which `hash` and `run` share: a table of `table` entries holds at most `table`
/// servers. `hash` builds `servers + 1` (`extra` = 1). The rule broken displays as the words
/// after "with maglev: ".
pub fn maglev_fits(servers: usize, extra: usize, table: usize) -> Result<(), Unfit> {
    if servers + extra <= table {
        return Ok(());
    }
    Err(Unfit::Maglev { table, most: table - extra, extra: extra > 0 })
}

/// The ring's rule, which `hash` and `run` share: `built` servers of `vnodes` points each make at
/// most [`limits::RING_POINTS`] points (16 bytes each, per ring and replication in flight). The
/// rule broken displays as the words after the points' option (`--vnodes 100 `).
pub fn ring_fits(built: usize, vnodes: u64) -> Result<(), Unfit> {
    let points = (built as u64).saturating_mul(vnodes);
    if points <= limits::RING_POINTS {
        return Ok(());
    }
    Err(Unfit::Ring { built, points })
}

/// One row of `hash`.
#[derive(Debug, Clone, Serialize)]
pub struct HashRow {
    /// `ring`, `ring-bounded`, `maglev` or `modulo`.
    pub method: &'static str,
    /// Servers before one is added.
    pub servers: u64,
    /// Keys placed.
    pub keys: u64,
    /// Points per server (rings only).
    pub vnodes: Option<u64>,
    /// Placements (replications).
    pub seeds: u64,
    /// Median over seeds of the most keys on one server over the mean.
    pub max_over_mean: f64,
    /// Median over seeds of the fraction of keys whose server changes when server `n` is added.
    pub moved_fraction: f64,
    /// `1 / (servers + 1)`: the new server's share, the least that must move.
    pub ideal_moved_fraction: f64,
}

/// One row to compute.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Case {
    /// The ring with this many vnodes.
    Ring(usize),
    /// The ring with this many vnodes and bounded loads of this factor.
    Bounded(usize, f64),
    /// Maglev's table of [`DEFAULT_TABLE_SIZE`] entries.
    Maglev,
    /// `h % n`.
    Modulo,
}

impl Case {
    /// The `method` column.
    pub fn method(self) -> &'static str {
        match self {
            Case::Ring(_) => "ring",
            Case::Bounded(..) => "ring-bounded",
            Case::Maglev => "maglev",
            Case::Modulo => "modulo",
        }
    }

    /// The `vnodes` column.
    pub fn vnodes(self) -> Option<u64> {
        match self {
            Case::Ring(v) | Case::Bounded(v, _) => Some(v as u64),
            Case::Maglev | Case::Modulo => None,
        }
    }
}

/// The rows of a config, in output order: per method as listed, the ring's rows per vnodes, then
/// (with `--balance`) its bounded rows.
pub fn cases(cfg: &HashConfig) -> Vec<Case> {
    let mut out = Vec::new();
    for m in &cfg.methods {
        match m {
            HashMethod::Ring => {
                out.extend(cfg.vnodes.iter().map(|&v| Case::Ring(v)));
                if let Some(f) = cfg.balance {
                    out.extend(cfg.vnodes.iter().map(|&v| Case::Bounded(v, f)));
                }
            }
            HashMethod::Maglev => out.push(Case::Maglev),
            HashMethod::Modulo => out.push(Case::Modulo),
        }
    }
    out
}

/// The placement seed of replication `k` for `label` (`hash-ring`, `hash-maglev`).
pub fn placement_seed(seed: u64, label: &str, k: u64) -> u64 {
    StreamKey::new(seed, label).u64(k).rng().next_u64()
}

/// What one replication of one row measured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Placement {
    /// The most keys on one server over the mean.
    pub max_over_mean: f64,
    /// The fraction of keys whose server changed when server `n` was added.
    pub moved_fraction: f64,
}

/// Keys per server (for `n` servers) and keys moved, into a [`Placement`].
fn placement(counts: &[u64], moved: u64, keys: u64) -> Placement {
    let max = counts.iter().copied().max().unwrap_or(0);
    Placement {
        max_over_mean: max as f64 * counts.len() as f64 / keys as f64,
        moved_fraction: moved as f64 / keys as f64,
    }
}

/// Replication `k` of `case` on `n` servers. `sorted` holds the hashes of the keys `0..keys` in
/// increasing order (the order does not matter to a placement without bounded loads).
pub fn measure(case: Case, n: usize, sorted: &[u64], seed: u64, k: u64) -> Placement {
    cancel_point();
    let keys = sorted.len() as u64;
    let mut counts = vec![0u64; n];
    let mut moved = 0u64;
    match case {
        Case::Ring(v) => {
            let s = placement_seed(seed, "hash-ring", k);
            let (small, big) = (Ring::new(n, v, s), Ring::new(n + 1, v, s));
            let mut owner = vec![0u32; sorted.len()];
            small.lookup_sorted(sorted, |i, server| {
                owner[i] = server as u32;
                counts[server] += 1;
            });
            big.lookup_sorted(sorted, |i, server| moved += u64::from(owner[i] != server as u32));
        }
        Case::Bounded(v, f) => {
            let s = placement_seed(seed, "hash-ring", k);
            let pct = factor_percent(f);
            let owner = bounded(&Ring::new(n, v, s), pct, keys, &mut counts);
            let mut big_counts = vec![0u64; n + 1];
            let big = bounded(&Ring::new(n + 1, v, s), pct, keys, &mut big_counts);
            moved = owner.iter().zip(&big).filter(|(a, b)| a != b).count() as u64;
        }
        Case::Maglev => {
            let s = placement_seed(seed, "hash-maglev", k);
            let small = Maglev::new(n, DEFAULT_TABLE_SIZE, s);
            let big = Maglev::new(n + 1, DEFAULT_TABLE_SIZE, s);
            for &h in sorted {
                let a = small.lookup(h);
                counts[a] += 1;
                moved += u64::from(a != big.lookup(h));
            }
        }
        Case::Modulo => {
            let (a, b) = (n as u64, n as u64 + 1);
            for &h in sorted {
                counts[(h % a) as usize] += 1;
                moved += u64::from(h % a != h % b);
            }
        }
    }
    placement(&counts, moved, keys)
}

/// Places the keys `0..keys` in order on `ring` with HAProxy's cap at `pct` percent, each placed
/// key counting as one request in flight; fills `counts` and returns each key's server.
pub fn bounded(ring: &Ring, pct: u32, keys: u64, counts: &mut [u64]) -> Vec<u32> {
    let n = counts.len() as u64;
    let mut owner = Vec::with_capacity(keys as usize);
    for (placed, key) in (0..keys).enumerate() {
        cancel_every(key);
        let s = ring.lookup_bounded(key_hash(key), |s| {
            counts[s] < haproxy_slots(pct, placed as u64, s as u64, 1, n)
        });
        counts[s] += 1;
        owner.push(s as u32);
    }
    owner
}

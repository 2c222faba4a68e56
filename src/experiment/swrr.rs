//! `lbsim swrr`: how smooth is smooth weighted round robin?
//!
//! With `--trace W`: one cycle of NGINX's algorithm, step by step. Otherwise, for each weight set,
//! the smooth algorithm against the expanded list (`a a a a a b c`, rotated) over one cycle:
//! `max_deviation` = max over prefixes `t` and servers `i` of `|picks_i(t) - t w_i / W|`, and
//! `max_run` = the longest run of one server in steady operation, where the cycle repeats: a run
//! that ends a cycle goes on into the next (`a a b a c a a | a a b ...` has a run of 4).

use serde::Serialize;

use super::plan::not_sharded;
use super::{Command, Direct, Experiment};
use super::{Common, Progress};
use crate::cancel::cancel_point;
use crate::cli::Global;
use crate::cli::SwrrArgs;
use crate::error::{UsageError, conflict};
use crate::output::Report;
use crate::policy::SmoothWrr;

/// `lbsim swrr`.
#[derive(Debug, Clone, Serialize)]
pub struct SwrrConfig {
    /// Weights to trace, if `--trace` was given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace: Option<Vec<u64>>,
    /// Weight sets to compare (none with `--trace`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sets: Vec<Vec<u64>>,
}

/// `lbsim swrr`.
pub struct Swrr;

impl Command for Swrr {
    type Args = SwrrArgs;
    type Config = SwrrConfig;
    type Rows = SwrrRows;

    /// `swrr` is exact arithmetic: no replications, no randomness, no workers.
    fn check_global(g: &Global) -> Result<(), UsageError> {
        let unused = [("--seeds", g.seeds.is_some()), ("--seed", g.seed.is_some())];
        let unused = unused.into_iter().chain([("--threads", g.threads.is_some())]);
        if let Some((option, _)) = unused.into_iter().find(|&(_, given)| given) {
            return Err(conflict(
                option,
                "is not used by swrr, which runs no replications and draws no random numbers",
            ));
        }
        Ok(())
    }

    /// Validates `lbsim swrr`: the trace and the weight sets compared.
    fn config(a: &SwrrArgs, _: &mut Common, _: &Global) -> Result<Experiment, UsageError> {
        let trace = a.trace.as_ref().map(|w| w.0.clone());
        let sets = match &a.weights {
            Some(sets) => sets.to_vec(),
            // The trace compares nothing.
            None if trace.is_some() => Vec::new(),
            None => default_weight_sets(),
        };
        Ok(Experiment::Swrr(SwrrConfig { trace, sets }))
    }
}

impl Direct for Swrr {
    /// Runs `swrr`; returns the rows, the report built from them and the number of picks made.
    fn run(cfg: &SwrrConfig, _: &Common, _: Progress) -> (SwrrRows, Report, u64) {
        if let Some(w) = &cfg.trace {
            let mut alg = SmoothWrr::new(w);
            let total: u64 = w.iter().sum();
            let rows: Vec<TraceRow> = (1..=total)
                .map(|step| {
                    let (best, before) = alg.step();
                    TraceRow {
                        step,
                        before,
                        selected: server_name(best),
                        after: alg.current().to_vec(),
                    }
                })
                .collect();
            let mut report = Report::new("swrr", cfg, &rows);
            let seq: Vec<String> = rows.iter().map(|r| r.selected.clone()).collect();
            report.notes.push(format!("sequence: {}", seq.join(" ")));
            return (SwrrRows::Trace(rows), report, total);
        }
        let mut rows = Vec::new();
        let mut picks = 0;
        for w in &cfg.sets {
            cancel_point();
            let total: u64 = w.iter().sum();
            for (algorithm, seq) in [("smooth", smooth_cycle(w)), ("expanded", expanded_cycle(w))] {
                let (max_deviation, max_run) = smoothness(w, &seq);
                rows.push(SmoothnessRow {
                    weights: weights_label(w),
                    algorithm,
                    cycle: total,
                    max_deviation,
                    max_run,
                });
                picks += total;
            }
        }
        let report = Report::new("swrr", cfg, &rows);
        (SwrrRows::Sets(rows), report, picks)
    }

    fn not_planned() -> UsageError {
        not_sharded("swrr", "runs no replications")
    }

    fn replications(_: &SwrrConfig, _: u64) -> u64 {
        0
    }
}

/// The weight sets `lbsim swrr` compares by default.
pub fn default_weight_sets() -> Vec<Vec<u64>> {
    let mut many = vec![1; 20];
    many.resize(100, 2);
    vec![
        vec![5, 1, 1],
        vec![1, 1, 1],
        vec![3, 2, 1],
        vec![4, 3, 2, 1],
        vec![10, 1],
        vec![100, 1, 1],
        vec![1, 2],
        many,
    ]
}

/// One step of `--trace`.
#[derive(Debug, Clone, Serialize)]
pub struct TraceRow {
    /// 1-based step.
    pub step: u64,
    /// Current weights after `+= weight` (the values compared); CSV and the table write the
    /// vector space-separated, JSON as an array.
    pub before: Vec<i64>,
    /// The chosen server (a, b, c, ...).
    pub selected: String,
    /// Current weights after `best -= total`.
    pub after: Vec<i64>,
}

/// The rows of `swrr`: one cycle traced, or the comparison of weight sets.
#[derive(Debug, Clone)]
pub enum SwrrRows {
    /// `--trace W`: one row per step.
    Trace(Vec<TraceRow>),
    /// The weight sets, smooth against expanded.
    Sets(Vec<SmoothnessRow>),
}

/// One row of the comparison.
#[derive(Debug, Clone, Serialize)]
pub struct SmoothnessRow {
    /// The weights (`1x20` = twenty servers of weight 1).
    pub weights: String,
    /// `smooth` or `expanded`.
    pub algorithm: &'static str,
    /// Picks in one cycle (sum of weights).
    pub cycle: u64,
    /// Largest deviation of picks from the ideal share over all prefixes.
    pub max_deviation: f64,
    /// Longest run of the same server, the cycle repeating.
    pub max_run: u64,
}

/// Server name: a..z, then aa, ab, ... like spreadsheet columns.
pub fn server_name(mut i: usize) -> String {
    let mut s = Vec::new();
    loop {
        s.push(b'a' + (i % 26) as u8);
        if i < 26 {
            break;
        }
        i = i / 26 - 1;
    }
    s.reverse();
    String::from_utf8(s).expect("ASCII")
}

/// Weights written space-separated, with runs of four or more equal weights as `wxN`.
pub fn weights_label(w: &[u64]) -> String {
    let mut parts = Vec::new();
    let mut i = 0;
    while i < w.len() {
        let j = (i..w.len()).find(|&j| w[j] != w[i]).unwrap_or(w.len());
        if j - i >= 4 {
            parts.push(format!("{}x{}", w[i], j - i));
        } else {
            parts.extend(w[i..j].iter().map(u64::to_string));
        }
        i = j;
    }
    parts.join(" ")
}

/// One cycle of the smooth algorithm.
pub fn smooth_cycle(weights: &[u64]) -> Vec<usize> {
    let mut alg = SmoothWrr::new(weights);
    (0..weights.iter().sum::<u64>()).map(|_| alg.step().0).collect()
}

/// One cycle of the expanded list: server 0 `w_0` times, then server 1, ...
pub fn expanded_cycle(weights: &[u64]) -> Vec<usize> {
    weights.iter().enumerate().flat_map(|(i, &w)| std::iter::repeat_n(i, w as usize)).collect()
}

/// `(max_deviation, max_run)` of a cycle: the deviation over the prefixes of the first cycle,
/// the run over the repeating sequence ([`cyclic_max_run`]).
pub fn smoothness(weights: &[u64], seq: &[usize]) -> (f64, u64) {
    let total: u64 = weights.iter().sum();
    let mut picks = vec![0u64; weights.len()];
    let mut dev = 0.0f64;
    for (t, &s) in seq.iter().enumerate() {
        picks[s] += 1;
        let t = (t + 1) as f64;
        for (p, &w) in picks.iter().zip(weights) {
            dev = dev.max((*p as f64 - t * w as f64 / total as f64).abs());
        }
    }
    (dev, cyclic_max_run(seq))
}

/// The longest run of one server when `cycle` repeats for ever, a run at its end going on into
/// its start. Only a cycle of one server repeated has a longer run than the cycle (it never
/// ends); that case is reported as the cycle's length.
pub fn cyclic_max_run(cycle: &[usize]) -> u64 {
    let n = cycle.len();
    // A position where a run starts: the server differs from the one before (cyclically).
    let Some(start) = (0..n).find(|&i| cycle[i] != cycle[(i + n - 1) % n]) else {
        return n as u64;
    };
    let (mut run, mut longest) = (0u64, 0u64);
    for k in 0..n {
        let i = (start + k) % n;
        run = if k > 0 && cycle[i] == cycle[(i + n - 1) % n] { run + 1 } else { 1 };
        longest = longest.max(run);
    }
    longest
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_labels() {
        assert_eq!(server_name(0), "a");
        assert_eq!(server_name(25), "z");
        assert_eq!(server_name(26), "aa");
        assert_eq!(server_name(27), "ab");
        assert_eq!(weights_label(&[5, 1, 1]), "5 1 1");
        let mut w = vec![1; 20];
        w.resize(100, 2);
        assert_eq!(weights_label(&w), "1x20 2x80");
    }

    #[test]
    fn expanded_5_1_1_has_a_run_of_five() {
        let w = [5, 1, 1];
        assert_eq!(expanded_cycle(&w), [0, 0, 0, 0, 0, 1, 2]);
        let (dev, run) = smoothness(&w, &expanded_cycle(&w));
        assert_eq!(run, 5);
        // After 5 picks of a: ideal 25/7 = 3.571, deviation 1.43 (also b and c at 5/7).
        assert!((dev - (5.0 - 25.0 / 7.0)).abs() < 1e-12);
        let (dev, run) = smoothness(&w, &smooth_cycle(&w));
        assert_eq!(run, 4, "a a b a c a a, then a a again: the wrap joins two runs of 2");
        assert!(dev < 1.0);
    }

    #[test]
    fn runs_are_counted_across_the_end_of_the_cycle() {
        let smooth_run = |w: &[u64]| smoothness(w, &smooth_cycle(w)).1;
        let expanded_run = |w: &[u64]| smoothness(w, &expanded_cycle(w)).1;
        assert_eq!(smooth_run(&[5, 1, 1]), 4);
        assert_eq!(smooth_run(&[10, 1]), 10);
        assert_eq!(smooth_run(&[100, 1, 1]), 67);
        assert_eq!(smooth_run(&[1, 1, 1]), 1);
        // The expanded list ends with another server than it starts with: no run crosses the end.
        assert_eq!(expanded_run(&[5, 1, 1]), 5);
        assert_eq!(expanded_run(&[10, 1]), 10);
        assert_eq!(expanded_run(&[1, 2]), 2);
        assert_eq!(cyclic_max_run(&[0, 1, 1, 0]), 2);
        assert_eq!(cyclic_max_run(&[0, 0, 1, 0, 0]), 4);
        // One server: the run never ends; reported as the cycle.
        assert_eq!(cyclic_max_run(&[0, 0, 0]), 3);
        assert_eq!(cyclic_max_run(&[]), 0);
    }
}

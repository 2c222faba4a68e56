//! `lbsim fixed`: the supermarket model against its mean-field fixed point.
//!
//! With `d` distinct uniform choices (shortest queue, tie to the first sampled) and `n -> inf`, the
//! fraction of servers with at least `i` requests converges to `s_i = lambda^((d^i - 1)/(d - 1))`
//! (`lambda^i` for `d = 1`, the M/M/1 tail); by Little's law the mean sojourn is
//! `T_d = (1/lambda) * sum_{i>=1} s_i` (Mitzenmacher's survey, Lemma 15; Vvedenskaya et al. 1996).

use serde::Serialize;

use super::common::{Common, RunConfig};
use super::queueing::{check_horizon, check_run_size, group, print_scenario, validated_run};
use super::{Command, Experiment, Sweep};
use super::{Outcome, STEADY_NOTE, Scenario, Workload, params, stop_warnings};
use crate::cli::FixedArgs;
use crate::cli::Global;
use crate::error::{UsageError, conflict, too_large};
use crate::limits;
use crate::model::{Farm, Information};
use crate::output::Report;
use crate::output::plot;
use crate::policy::PolicyKind;
use crate::stats::ci95_half_width;
use crate::theory::{fixed_point, fixed_point_mean};
use std::path::PathBuf;

/// `lbsim fixed`.
#[derive(Debug, Clone, Serialize)]
pub struct FixedConfig {
    /// Servers.
    pub n: usize,
    /// Utilisations.
    pub lambda: Vec<f64>,
    /// Choices.
    pub d: Vec<u32>,
    /// Run length.
    pub run: RunConfig,
}

/// `lbsim fixed`.
pub struct Fixed;

impl Command for Fixed {
    type Args = FixedArgs;
    type Config = FixedConfig;
    type Rows = Vec<FixedRow>;
    const DEFAULT_SEEDS: u64 = 3;

    fn plot(a: &FixedArgs) -> Option<PathBuf> {
        a.plot.clone()
    }

    fn figure(rows: &Vec<FixedRow>) -> Option<String> {
        let levels: Vec<plot::Level> = rows
            .iter()
            .map(|r| plot::Level { d: r.d, lambda: r.lambda, i: r.i, sim: r.sim, theory: r.theory })
            .collect();
        Some(plot::supermarket(&levels))
    }

    /// Validates `lbsim fixed`: the farm, loads and choices, with the levels the fixed point lists.
    fn config(a: &FixedArgs, common: &mut Common, _: &Global) -> Result<Experiment, UsageError> {
        let (seeds, threads) = (common.seeds, common.threads);
        let (n, lambda, d) = (a.n, a.lambda.to_vec(), a.d.to_vec());
        if let Some(&dd) = d.iter().find(|&&dd| dd as usize > n) {
            return Err(conflict(
                "--d",
                format!("{dd} is larger than the farm (--n {n}); d distinct choices need d <= n"),
            ));
        }
        for (&l, &dd) in lambda.iter().flat_map(|l| d.iter().map(move |dd| (l, dd))) {
            let levels = fixed_levels(l, dd);
            if levels > limits::LEVELS {
                return Err(too_large(
                    format!("--lambda {l} with --d {dd}"),
                    format!(
                        "lists {levels} levels (s_i >= {}); at most {} are accepted: lower --lambda or raise --d",
                        MIN_THEORY,
                        limits::LEVELS
                    ),
                ));
            }
        }
        check_run_size(seeds, lambda.len() * d.len(), threads, n, &format!("--n {n}"))?;
        let run = validated_run(&a.run, 5_000_000, 500_000, seeds)?;
        if !run.quantiles.is_empty() {
            return Err(conflict(
                "--quantiles",
                "does not apply to fixed, whose rows are queue-length levels",
            ));
        }
        let lowest = lambda.iter().copied().fold(1.0, f64::min);
        check_horizon(&run, lowest * n as f64, 1.0)?;
        if a.print_scenario {
            // d = 1 draws one uniform server, as random does (the same coins).
            let policies: Vec<PolicyKind> = d
                .iter()
                .map(|&d| if d == 1 { PolicyKind::Random } else { PolicyKind::PnC(d) })
                .collect();
            let groups = group("servers", n, 1.0).into_iter().collect();
            let ex = print_scenario(
                "fixed",
                groups,
                &policies,
                crate::experiment::run::DEFAULT_TAU,
                &run,
                common,
                (lambda[0], None),
                Some(("arrivals.load", &lambda[..])),
            )?;
            return Ok(ex);
        }
        Ok(Experiment::Fixed(FixedConfig { n, lambda, d, run }))
    }
}

impl Sweep for Fixed {
    /// The scenarios of `fixed`: `pNc` with each `d` at each `lambda`, keeping queue-length levels.
    fn scenarios(cfg: &FixedConfig) -> Vec<Scenario> {
        cfg.d
            .iter()
            .flat_map(|&d| {
                cfg.lambda.iter().map(move |&lambda| Scenario {
                    farm: Farm::homogeneous(cfg.n, lambda),
                    // d = 1 draws one uniform server: exactly `random`.
                    policy: PolicyKind::PnC(d),
                    info: Information::Live,
                    track_levels: true,
                    tuning: crate::policy::Tuning::default(),
                    clients: crate::model::Clients::default(),
                    workload: Workload::default(),
                })
            })
            .collect()
    }

    fn run_length(cfg: &FixedConfig) -> &RunConfig {
        &cfg.run
    }

    /// The rows of `fixed` and their report (marks, notes, warnings) from the outcomes of its
    /// scenarios, in plan order.
    fn summarise(
        cfg: &FixedConfig,
        c: &Common,
        scenarios: &[Scenario],
        outcomes: &[Outcome],
    ) -> (Vec<FixedRow>, Report) {
        let mut rows = Vec::new();
        let mut marks = Vec::new();
        // The scenarios are each `d` at each `lambda` ([`Fixed::scenarios`]).
        let ds = cfg.d.iter().flat_map(|&d| std::iter::repeat_n(d, cfg.lambda.len()));
        for ((sc, o), d) in scenarios.iter().zip(outcomes).zip(ds) {
            let lambda = sc.farm.load;
            let s = &o.summary;
            let fractions = &o.levels;
            let mean_theory = fixed_point_mean(lambda, d);
            let mut first = true;
            for i in 1.. {
                let theory = fixed_point(lambda, d, i);
                if theory < MIN_THEORY {
                    break;
                }
                let per_rep: Vec<f64> =
                    fractions.iter().map(|f| f.get(i as usize).copied().unwrap_or(0.0)).collect();
                let reached = per_rep.iter().filter(|&&x| x > 0.0).count() as u64;
                let sim = per_rep.iter().sum::<f64>() / per_rep.len() as f64;
                let sim_ci95 = if reached == s.seeds { ci95_half_width(&per_rep) } else { None };
                let theory_in_ci = sim_ci95.is_some_and(|ci| (sim - theory).abs() <= ci);
                let mut mark = if first { super::steadiness_mark(s, &cfg.run) } else { None };
                if reached < s.seeds {
                    let rare = format!(
                        "reached in {reached} of {} replications: too rare to estimate",
                        s.seeds
                    );
                    mark = Some(mark.map_or(rare.clone(), |m| format!("{m}; {rare}")));
                }
                marks.push(mark);
                first = false;
                rows.push(FixedRow {
                    d,
                    lambda,
                    i,
                    sim,
                    theory,
                    sim_ci95,
                    reached,
                    theory_in_ci,
                    mean: s.mean,
                    mean_ci95: s.mean_ci95,
                    mean_theory,
                    steady: s.steady(),
                    stopped: s.stops,
                });
            }
        }
        let mut report = Report::new("fixed", &params(c, cfg), &rows);
        report.marks = marks;
        report.note_column = true;
        report.warnings = stop_warnings(scenarios, outcomes, &cfg.run);
        report.notes.push(
            "s_i: time-averaged fraction of servers with queue >= i (mean over replications, 95% t \
    interval) vs the fixed point lambda^((d^i-1)/(d-1)); mean: pooled mean sojourn vs T_d = (1/lambda) \
    sum s_i (mean_theory)."
                .into(),
        );
        if rows.iter().any(|r| !r.steady) {
            report.notes.push(STEADY_NOTE.into());
        }
        (rows, report)
    }
}

/// Number of levels `fixed` lists for `(lambda, d)`: the `i` with `s_i >= MIN_THEORY`, that is
/// `(1 + d + ... + d^(i-1)) * ln(lambda) >= ln(MIN_THEORY)`; saturates above [`limits::LEVELS`].
fn fixed_levels(lambda: f64, d: u32) -> u64 {
    let budget = MIN_THEORY.ln() / lambda.ln();
    if d == 1 {
        return budget.min(u64::MAX as f64) as u64;
    }
    let (mut exponent, mut power, mut levels) = (0.0, 1.0, 0);
    loop {
        exponent += power;
        if exponent > budget || levels > limits::LEVELS {
            return levels;
        }
        levels += 1;
        power *= f64::from(d);
    }
}

/// Levels are listed while the fixed point is at least this.
pub const MIN_THEORY: f64 = 1e-6;

/// One row of `fixed`: queue-length level `i` of one `(d, lambda)`, with that scenario's mean
/// sojourn repeated on each of its rows (so that every column holds one type).
#[derive(Debug, Clone, Serialize)]
pub struct FixedRow {
    /// Choices.
    pub d: u32,
    /// Utilisation.
    pub lambda: f64,
    /// Queue-length level.
    pub i: u32,
    /// Simulated `s_i`: the mean over replications of the time-averaged fraction of servers with
    /// queue length `>= i`.
    pub sim: f64,
    /// The fixed point `s_i`.
    pub theory: f64,
    /// 95% Student-t half-width of `sim` over replications; empty for one replication or when the
    /// level was not reached in every replication (too rare for an interval to mean anything).
    pub sim_ci95: Option<f64>,
    /// Replications whose measurement window reached level `i` at some server.
    pub reached: u64,
    /// True when `theory` lies inside `sim ± sim_ci95` (false without an interval).
    pub theory_in_ci: bool,
    /// Pooled mean sojourn of the scenario.
    pub mean: f64,
    /// 95% half-width of the per-replication means.
    pub mean_ci95: Option<f64>,
    /// `T_d(lambda) = (1/lambda) sum s_i` from the fixed point.
    pub mean_theory: f64,
    /// False when the scenario's measured window still holds the start-up transient or a trend.
    pub steady: bool,
    /// Replications the queue guard stopped.
    pub stopped: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_levels_match_the_fixed_point() {
        use crate::theory::fixed_point;
        use MIN_THEORY;
        for (lambda, d) in [(0.9, 1), (0.9, 2), (0.5, 3), (0.99, 1), (0.999_999, 2)] {
            let direct = (1..).take_while(|&i| fixed_point(lambda, d, i) >= MIN_THEORY).count();
            assert_eq!(fixed_levels(lambda, d), direct as u64, "lambda {lambda}, d {d}");
        }
        assert!(fixed_levels(0.99999, 1) > limits::LEVELS);
        assert!(fixed_levels(1.0 - 1e-16, 2) < 100);
    }
}

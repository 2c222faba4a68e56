//! `lbsim fixed`: the supermarket model against its mean-field fixed point.
//!
//! With `d` distinct uniform choices (shortest queue, tie to the first sampled) and `n -> inf`, the
//! fraction of servers with at least `i` requests converges to `s_i = lambda^((d^i - 1)/(d - 1))`
//! (`lambda^i` for `d = 1`, the M/M/1 tail); by Little's law the mean sojourn is
//! `T_d = (1/lambda) * sum_{i>=1} s_i` (Mitzenmacher's survey, Lemma 15; Vvedenskaya et al. 1996).

use serde::Serialize;

use super::{Progress, Scenario, params, run_scenarios, total_events};
use crate::config::{Common, FixedConfig};
use crate::model::{Farm, Information};
use crate::output::Report;
use crate::policy::PolicyKind;
use crate::stats::{RepStats, ci95_half_width, median};
use crate::theory::{fixed_point, fixed_point_mean};

/// Levels are listed while the fixed point is at least this.
pub const MIN_THEORY: f64 = 1e-6;

/// One row of `fixed`: a level `i` (quantity `s_i`), or the mean sojourn (quantity `T`, no `i`).
#[derive(Debug, Clone, Serialize)]
pub struct FixedRow {
    /// Choices.
    pub d: u32,
    /// Utilisation.
    pub lambda: f64,
    /// Queue-length level (empty on the `T` row).
    pub i: Option<u32>,
    /// Simulated: median over seeds of the time-averaged `s_i`, or the pooled mean sojourn.
    pub sim: f64,
    /// The fixed point `s_i`, or `T_d(lambda)`.
    pub theory: f64,
    /// `s_i` or `T`.
    pub quantity: &'static str,
    /// 95% Student-t half-width over the per-replication values (empty for one replication).
    pub sim_ci95: Option<f64>,
}

/// Runs `fixed`; returns the report and the number of events simulated.
pub fn run(cfg: &FixedConfig, c: &Common, progress: Progress) -> (Report, u64) {
    let scenarios: Vec<Scenario> = cfg
        .d
        .iter()
        .flat_map(|&d| {
            cfg.lambda.iter().map(move |&lambda| Scenario {
                farm: Farm::homogeneous(cfg.n, lambda),
                // d = 1 draws one uniform server: exactly `random`.
                policy: PolicyKind::PnC(d),
                info: Information::Live,
                track_levels: true,
                tau: 1.0,
            })
        })
        .collect();
    let groups = run_scenarios(&scenarios, &cfg.run, c, progress);
    let mut rows = Vec::new();
    for (sc, reps) in scenarios.iter().zip(&groups) {
        let PolicyKind::PnC(d) = sc.policy else { unreachable!("fixed runs pNc") };
        let lambda = sc.farm.load;
        let fractions: Vec<Vec<f64>> = reps.iter().map(RepStats::level_fractions).collect();
        for i in 1.. {
            let theory = fixed_point(lambda, d, i);
            if theory < MIN_THEORY {
                break;
            }
            let per_rep: Vec<f64> =
                fractions.iter().map(|f| f.get(i as usize).copied().unwrap_or(0.0)).collect();
            rows.push(FixedRow {
                d,
                lambda,
                i: Some(i),
                sim: median(&per_rep),
                theory,
                quantity: "s_i",
                sim_ci95: ci95_half_width(&per_rep),
            });
        }
        let pooled = RepStats::merged(reps);
        rows.push(FixedRow {
            d,
            lambda,
            i: None,
            sim: pooled.mean(),
            theory: fixed_point_mean(lambda, d),
            quantity: "T",
            sim_ci95: ci95_half_width(&reps.iter().map(RepStats::mean).collect::<Vec<_>>()),
        });
    }
    let mut report = Report::new("fixed", &params(c, cfg), &rows);
    report.notes.push(
        "s_i: time-averaged fraction of servers with queue >= i (median over seeds) vs the fixed \
point lambda^((d^i-1)/(d-1)); T: pooled mean sojourn vs T_d = (1/lambda) sum s_i."
            .into(),
    );
    (report, total_events(&groups))
}

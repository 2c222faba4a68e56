//! Statistics: per-replication accumulators that merge exactly, and summaries across replications.
//!
//! A replication returns a [`RepStats`]: counts, sums, a latency histogram and maxima, all
//! mergeable with `+=` in replication order, so a scenario's pooled numbers do not depend on how
//! replications were scheduled (or on which machine they ran). [`Summary`] turns the merged value
//! plus the per-replication values into the numbers lbsim reports.

mod rep;
mod student_t;

pub use rep::{LatencyHistogram, RepStats};
pub use student_t::{ci95_half_width, t_quantile_975};

/// Median of `xs` (the mean of the two middle values for an even count). `NaN` when empty.
pub fn median(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        return f64::NAN;
    }
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    if v.len() % 2 == 1 { v[m] } else { (v[m - 1] + v[m]) / 2.0 }
}

/// What lbsim reports for one scenario (one row of `homo`, `hetero` or `stale`).
#[derive(Debug, Clone)]
pub struct Summary {
    /// Replications.
    pub seeds: u64,
    /// Pooled mean sojourn over all measured requests.
    pub mean: f64,
    /// 99th percentile of the merged histograms.
    pub p99: f64,
    /// Largest queue seen at any server in any replication's measurement window.
    pub max_queue: u32,
    /// 95% Student-t half-width of the per-replication means (`None` for one replication).
    pub mean_ci95: Option<f64>,
    /// Same for the per-replication p99s.
    pub p99_ci95: Option<f64>,
    /// Pooled mean of the second half of the measured requests over the first half.
    pub drift: f64,
    /// Why a replication was stopped early (the queue guard), if one was.
    pub stopped: Option<String>,
}

impl Summary {
    /// Summarises replications given in replication order.
    pub fn from_reps(reps: &[RepStats]) -> Summary {
        let merged = RepStats::merged(reps);
        let means: Vec<f64> = reps.iter().map(RepStats::mean).collect();
        let p99s: Vec<f64> = reps.iter().map(|r| r.quantile(0.99)).collect();
        Summary {
            seeds: reps.len() as u64,
            mean: merged.mean(),
            p99: merged.quantile(0.99),
            max_queue: merged.max_queue,
            mean_ci95: ci95_half_width(&means),
            p99_ci95: ci95_half_width(&p99s),
            drift: merged.drift(),
            stopped: merged.stopped.clone(),
        }
    }

    /// True when the run looks like steady state (drift within [0.9, 1.1]).
    pub fn steady(&self) -> bool {
        (0.9..=1.1).contains(&self.drift)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_even_count_averages_the_middle_pair() {
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
        assert_eq!(median(&[5.0, 1.0, 3.0]), 3.0);
        assert!(median(&[]).is_nan());
    }
}

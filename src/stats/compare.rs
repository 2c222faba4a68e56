//! Relative differences between two policies of one scenario, with paired intervals.
//!
//! Replication `k` of every policy of a scenario sees the same arrivals and demands (common random
//! numbers), so the per-replication values `x_k` (a policy) and `y_k` (the baseline) are positively
//! correlated and the noise they share cancels in their ratio. The relative difference
//! `R - 1 = x̄ / ȳ - 1` gets the ratio estimator's interval, from the paired residuals
//! `e_k = x_k - R y_k`:
//!
//! ```text
//! half-width = t_{0.975, K-1} * sd(e) / (sqrt(K) * ȳ)
//! ```
//!
//! (the delta method; Cochran, *Sampling Techniques*, §6.4). The unpaired interval, which ignores
//! the pairing, is kept for comparison: `R * t * sqrt(s_x²/(K x̄²) + s_y²/(K ȳ²))`.

use super::student_t::t_quantile_975;

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

fn variance(v: &[f64]) -> f64 {
    let m = mean(v);
    v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (v.len() - 1) as f64
}

/// The ratio `x̄ / ȳ` of the per-replication means, and the `t` quantile for `K` pairs; `None`
/// with fewer than two pairs or unequal lengths.
fn ratio(x: &[f64], y: &[f64]) -> Option<(f64, f64)> {
    let k = x.len();
    (k >= 2 && y.len() == k).then(|| (mean(x) / mean(y), t_quantile_975((k - 1) as f64)))
}

/// Half-width of the paired 95% interval of `x̄ / ȳ - 1`.
pub fn paired_ci95(x: &[f64], y: &[f64]) -> Option<f64> {
    let (r, t) = ratio(x, y)?;
    let residuals: Vec<f64> = x.iter().zip(y).map(|(a, b)| a - r * b).collect();
    Some(t * (variance(&residuals) / x.len() as f64).sqrt() / mean(y).abs())
}

/// Half-width of the unpaired 95% interval of `x̄ / ȳ - 1` (as if the runs were independent).
pub fn unpaired_ci95(x: &[f64], y: &[f64]) -> Option<f64> {
    let (r, t) = ratio(x, y)?;
    let k = x.len() as f64;
    let rel = variance(x) / (k * mean(x).powi(2)) + variance(y) / (k * mean(y).powi(2));
    Some(r.abs() * t * rel.sqrt())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_noise_cancels_in_the_paired_interval_only() {
        // x = 1.2 y plus a little noise of its own; y varies a lot from pair to pair.
        let y = [10.0, 14.0, 7.0, 12.0, 9.0, 11.0];
        let own = [0.05, -0.03, 0.02, -0.04, 0.01, -0.01];
        let x: Vec<f64> = y.iter().zip(own).map(|(b, e)| 1.2 * b + e).collect();
        let paired = paired_ci95(&x, &y).unwrap();
        let unpaired = unpaired_ci95(&x, &y).unwrap();
        assert!(paired < 0.01, "{paired}");
        assert!(unpaired > 20.0 * paired, "{unpaired} vs {paired}");
    }

    #[test]
    fn identical_runs_differ_by_nothing() {
        let y = [3.0, 4.0, 5.0];
        assert_eq!(paired_ci95(&y, &y), Some(0.0));
        assert_eq!(paired_ci95(&y[..1], &y[..1]), None);
        assert_eq!(paired_ci95(&y, &y[..2]), None);
    }
}

//! Statistics: per-replication accumulators that merge exactly, and summaries across replications.
//!
//! A replication returns a [`RepStats`]: counts, sums, a latency histogram and maxima, all
//! mergeable with `+=` in replication order, so a scenario's pooled numbers do not depend on how
//! replications were scheduled (or on which machine they ran). [`Summary`] turns the merged value
//! plus the per-replication values into the numbers lbsim reports.

pub mod compare;
mod fixed;
pub mod order;
mod rep;
pub mod series;
mod student_t;
mod tally;
pub mod tape;
mod windows;

pub use fixed::FixedSum;
pub use rep::{LatencyHistogram, LatencyRecorder, RepStats, StopReason};
pub use series::{Series, SeriesRecorder, Truncation};
pub use student_t::{ci95_half_width, t_quantile_975};
pub use tally::{STANDARD_QUANTILES, SeriesSum, Tally};
pub use windows::{
    Buckets, ClassWindow, Health, Outcomes, SpooledWindows, Window, Windows, add_classes,
    add_health, add_outcomes,
};

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

/// Whether a row's measured window is in steady state, read from its output series by MSER-5
/// ([`series`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Steadiness {
    /// The transient ended before measuring started.
    Steady,
    /// MSER-5 puts the end of the transient at `asked` arrivals, after the `warmup` the run used:
    /// the measured window still holds part of the start-up.
    Transient {
        /// The warm-up (arrivals) the output asks for.
        asked: u64,
        /// The warm-up the run used (the mean over replications).
        warmup: u64,
    },
    /// The series still moves in its second half (a trend, or a run far too short for its
    /// transient): no warm-up within the run would do.
    Trend {
        /// Arrivals per replication, warm-up included.
        arrivals: u64,
    },
    /// The mean of the second half of the measured requests is outside [`DRIFT_BAND`] times that
    /// of the first half, by more than the noise of the halves ([`drift_is_significant`]): a
    /// trend across the measured window. MSER-5 reads a start-up bias, but a trend that is slow
    /// next to the noise (an overloaded minority of servers, bursts longer than the run) leaves
    /// its minimum at zero; the halves see it.
    Drift {
        /// Second-half mean over first-half mean.
        drift: f64,
    },
    /// Too few arrivals to judge: MSER-5 needs [`series::MIN_BATCHES`] batches of five, and a
    /// farm whose servers saw fewer than [`MIN_ARRIVALS_PER_SERVER`] arrivals each has not begun
    /// to fill (its transient is longer than the run, so the series shows no trend to read).
    TooShort,
}

/// The drift (second half of the measured requests over the first half) of a steady row lies in
/// this band (SPEC §1), or is within its own noise of 1 ([`drift_is_significant`]).
pub const DRIFT_BAND: std::ops::RangeInclusive<f64> = 0.9..=1.1;

/// Batches per half of the measured window when one replication must estimate the noise of its
/// own drift (batch means, [`drift_is_significant`]).
const DRIFT_BATCHES: usize = 5;

/// Whether a drift outside [`DRIFT_BAND`] is more than noise: its 95% interval (in log scale)
/// excludes 1.
///
/// A fixed band is not scaled to the noise of the halves: at load 0.9 on 10 servers, 2e4 measured
/// requests span about six relaxation times of a server's queue, and the halves' means differ by
/// 10-30% from one replication to the next with no trend at all (6 base seeds in 10 were flagged).
/// The noise is read from what the run holds:
/// - with two or more replications, from the spread of their own drifts: replications are
///   independent, so `ln(drift_k)` has an honest Student-t interval (the pooled drift is close to
///   their mean, every replication measuring the same number of requests);
/// - with one, from batch means: each half of the measured window is cut into
///   [`DRIFT_BATCHES`] batches of its series, and `var ln(m2/m1) = var(m1)/m1^2 + var(m2)/m2^2`
///   with `var(m_h)` the variance of the half's batch means over their count (t with
///   `2 (B - 1)` degrees of freedom). Batches of a correlated series are themselves correlated,
///   which makes this interval too narrow, never too wide: it can only leave a flag that the band
///   alone would raise.
///
/// With no estimate (fewer than two batches' worth of series) the band alone decides, as before.
/// A real trend (a start-up from empty, a queue that grows) moves every replication the same way,
/// so its interval is narrow and it stays flagged; a row inside the band is never flagged for
/// its drift.
pub fn drift_is_significant(noise: &DriftNoise, drift: f64) -> bool {
    match noise.log_ci95() {
        Some(h) if h.is_finite() => drift.ln().abs() > h,
        _ => true,
    }
}

/// What the noise of a pooled drift is read from ([`drift_is_significant`]): the log drift of
/// each replication read, and, for a single replication, its own series and warm-up.
#[derive(Debug, Clone, Copy)]
pub struct DriftNoise<'a> {
    /// `ln(drift)` of each replication, in replication order.
    pub log_drifts: &'a [f64],
    /// The series of the replications read (the replication's own when there is one).
    pub series: &'a Series,
    /// Their warm-up, in arrivals.
    pub warmup: u64,
}

impl DriftNoise<'_> {
    /// The 95% half-width of the pooled `ln(drift)` (see [`drift_is_significant`]).
    fn log_ci95(&self) -> Option<f64> {
        if self.log_drifts.len() >= 2 {
            return ci95_half_width(self.log_drifts);
        }
        if self.log_drifts.len() == 1 { batch_log_ci95(self.series, self.warmup) } else { None }
    }
}

/// The 95% half-width of `ln(drift)` of one replication's series, by batch means of its halves.
fn batch_log_ci95(s: &Series, warmup: u64) -> Option<f64> {
    let first = warmup.div_ceil(s.cell.max(1)) as usize;
    let cells = s.means.get(first..)?;
    let per_batch = cells.len() / (2 * DRIFT_BATCHES);
    if per_batch == 0 {
        return None;
    }
    let half = per_batch * DRIFT_BATCHES;
    let rel_var = |half: &[f64]| {
        let batches: Vec<f64> =
            half.chunks_exact(per_batch).map(|c| c.iter().sum::<f64>() / c.len() as f64).collect();
        let b = batches.len() as f64;
        let m = batches.iter().sum::<f64>() / b;
        let var = batches.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (b - 1.0);
        var / b / (m * m)
    };
    let se = (rel_var(&cells[..half]) + rel_var(&cells[cells.len() - half..])).sqrt();
    Some(t_quantile_975((2 * (DRIFT_BATCHES - 1)) as f64) * se)
}

/// Fewest arrivals per server (warm-up included) a replication needs before its series can show
/// a steady state: at 330 arrivals on 1,000 servers the series is flat only because almost every
/// request still finds an idle server.
pub const MIN_ARRIVALS_PER_SERVER: u64 = 50;

impl Steadiness {
    /// The verdict for replications whose replication-averaged series (the cell-by-cell mean of
    /// their series, Hoad et al.) is `avg`, on a farm of `servers`, run with a mean warm-up of
    /// `warmup` arrivals, whose pooled drift is `drift` (its noise read from `noise`) and whose mean
    /// has the 95% half-width `ci95`. The replications read are those that ran to the end, or all of them when the queue
    /// guard stopped every one ([`Tally`]).
    ///
    /// A truncation point after the warm-up counts only when the transient left in the measured
    /// window matters: when it moves the mean by more than a quarter of its interval (a bias of
    /// `h/4` lowers a 95% interval's coverage to about 92%), or by more than 1% without an
    /// interval. MSER's point is itself an estimate, and a transient that ends a few batches after
    /// measuring starts biases nothing a reader could see.
    pub fn read(
        avg: &Series,
        servers: u64,
        warmup: u64,
        drift: f64,
        noise: &DriftNoise,
        ci95: Option<f64>,
    ) -> Self {
        let arrivals = avg.means.len() as u64 * avg.cell;
        let Some(t) = avg.mser5().filter(|_| arrivals >= MIN_ARRIVALS_PER_SERVER * servers) else {
            return Steadiness::TooShort;
        };
        if !t.trusted {
            return Steadiness::Trend { arrivals: avg.means.len() as u64 * avg.cell };
        }
        if !DRIFT_BAND.contains(&drift) && drift_is_significant(noise, drift) {
            return Steadiness::Drift { drift };
        }
        if t.arrivals > warmup {
            let mean_from = |arrivals: u64| {
                let tail = &avg.means[(arrivals / avg.cell) as usize..];
                tail.iter().sum::<f64>() / tail.len() as f64
            };
            let measured = mean_from(warmup);
            let bias = (measured - mean_from(t.arrivals)).abs();
            if bias > ci95.map_or(0.01 * measured, |h| h / 4.0) {
                return Steadiness::Transient { asked: t.arrivals, warmup };
            }
        }
        Steadiness::Steady
    }

    /// True for [`Steadiness::Steady`].
    pub fn is_steady(self) -> bool {
        self == Steadiness::Steady
    }

    /// What a user should read in the table's note for a row that is not steady.
    pub fn message(self) -> Option<String> {
        let count = |x: u64| if x < 10_000 { x.to_string() } else { format!("{:.1e}", x as f64) };
        match self {
            Steadiness::Steady => None,
            Steadiness::Transient { asked, warmup } => Some(format!(
                "not steady: the output asks for a warm-up of {} arrivals (ran {})",
                count(asked),
                count(warmup)
            )),
            Steadiness::Trend { arrivals } => Some(format!(
                "not steady: still trending after {} arrivals; lengthen the run",
                count(arrivals)
            )),
            Steadiness::Drift { drift } => Some(format!(
                "not steady: drift {drift:.2} (the second half of the measured requests over the first)"
            )),
            Steadiness::TooShort => Some(format!(
                "not steady: too few arrivals to judge (at least {MIN_ARRIVALS_PER_SERVER} per server)"
            )),
        }
    }
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
    /// Largest queue seen at any server in any replication's measurement window (or the queue
    /// that tripped the guard).
    pub max_queue: u32,
    /// 95% Student-t half-width of the per-replication means (`None` for one replication).
    pub mean_ci95: Option<f64>,
    /// Same for the per-replication p99s.
    pub p99_ci95: Option<f64>,
    /// Pooled mean of the second half of the measured requests over the first half.
    pub drift: f64,
    /// Why a replication was stopped early (the queue guard), if one was.
    pub stopped: Option<StopReason>,
    /// Replications the queue guard stopped.
    pub stops: u64,
    /// The steady-state verdict.
    pub steadiness: Steadiness,
    /// Each replication's mean sojourn, in replication order (for paired comparisons).
    pub rep_means: Vec<f64>,
    /// Each replication's p99.
    pub rep_p99s: Vec<f64>,
    /// Sojourn quantiles of the merged histograms: `(q, value)` for the [`STANDARD_QUANTILES`] and
    /// those the run asked for.
    pub quantiles: Vec<(f64, f64)>,
    /// What the admission stage counted, over all replications.
    pub admission: crate::admission::AdmissionStats,
    /// What the request lifecycle counted, over all replications.
    pub lifecycle: crate::lifecycle::LifecycleStats,
    /// Measured arrivals per replication.
    pub requests: u64,
    /// The span of the replications' measurement windows: the earliest first and the latest last
    /// measured arrival (`None` when no replication measured anything).
    pub window: Option<(f64, f64)>,
    /// The replications' measured spans (last minus first measured arrival), summed.
    pub measured_span: f64,
    /// The gaps between measured arrivals inside those spans, summed (measured requests less
    /// one per replication that measured): over `measured_span`, the realised arrival rate.
    pub measured_gaps: u64,
}

impl Summary {
    /// Summarises replications given in replication order, run with `requests` measured arrivals.
    pub fn from_reps(reps: &[RepStats], requests: u64) -> Summary {
        let mut tally = Tally::new(requests, &[]);
        reps.iter().for_each(|r| tally.add(r));
        tally.finish()
    }

    /// The `q`-quantile of the merged sojourns; `NaN` for a `q` the summary was not built to read.
    pub fn quantile(&self, q: f64) -> f64 {
        self.quantiles.iter().find(|(x, _)| *x == q).map_or(f64::NAN, |&(_, v)| v)
    }

    /// True when the measured window is in steady state.
    pub fn steady(&self) -> bool {
        self.steadiness.is_steady()
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

    fn significant(log_drifts: &[f64], series: &Series, drift: f64) -> bool {
        let noise = DriftNoise { log_drifts, series, warmup: 0 };
        drift_is_significant(&noise, drift)
    }

    #[test]
    fn a_drift_is_significant_only_beyond_the_spread_of_the_replications() {
        let none = Series { means: Vec::new(), cell: 1 };
        // Four replications agreeing on ln 1.2 = 0.18: the interval (+- 0.02) excludes 0.
        assert!(significant(&[0.17, 0.19, 0.18, 0.18], &none, 1.2));
        // Four replications scattered +- 0.5 around 0: the pooled 1.2 is inside their noise.
        assert!(!significant(&[0.5, -0.5, 0.4, -0.3], &none, 1.2));
    }

    #[test]
    fn one_replication_reads_its_noise_from_batch_means_of_its_own_series() {
        // A ramp 1..=100: halves of mean 25.5 and 75.5, drift 2.96 (ln 1.09). The trend inside
        // each half inflates its batch variance (the estimate errs towards no flag), to a
        // half-width of about 0.68, still below ln 2.96: flagged.
        let ramp = Series { means: (1..=100).map(f64::from).collect(), cell: 1 };
        let h = batch_log_ci95(&ramp, 0).expect("enough cells");
        assert!((h - 0.68).abs() < 0.02, "half-width {h}");
        assert!(significant(&[(75.5f64 / 25.5).ln()], &ramp, 75.5 / 25.5));
        // Flat noise, uniform on [0.1, 1.9], 50 cells: batch means of 5 cells vary by about
        // 0.23, so the half-width of ln(drift) is about 0.37 (0.25 to 0.5 over seeds), above
        // ln 1.2 = 0.18: a drift of 1.2 read from this series is noise, not a trend.
        use rand::{RngExt, SeedableRng};
        let mut rng = rand_pcg::Pcg64::seed_from_u64(7);
        let flat = Series { means: (0..50).map(|_| rng.random_range(0.1..1.9)).collect(), cell: 1 };
        let h = batch_log_ci95(&flat, 0).expect("enough cells");
        assert!(h > 0.25 && h < 0.5, "half-width {h}");
        assert!(!significant(&[1.2f64.ln()], &flat, 1.2));
    }

    #[test]
    fn too_few_cells_for_batch_means_leave_a_drift_flagged() {
        // Fewer measured cells than two halves of DRIFT_BATCHES batches: no interval, and a drift
        // outside the band stays flagged rather than being excused.
        let short = Series { means: vec![1.0; 2 * DRIFT_BATCHES - 1], cell: 1 };
        assert_eq!(batch_log_ci95(&short, 0), None);
        assert!(significant(&[1.2f64.ln()], &short, 1.2));
        // The warm-up's cells do not count: 20 cells, 15 of them warm-up.
        let long = Series { means: vec![1.0; 20], cell: 1 };
        assert_eq!(batch_log_ci95(&long, 15), None);
    }
}

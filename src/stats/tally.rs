//! A scenario's replications folded one at a time, in replication order, into what its
//! [`Summary`] reads: the merged counts, sums and histogram, each replication's mean and p99, and
//! the replication-averaged series of the steady-state verdict.
//!
//! Nothing is kept per replication but three numbers (its mean, p99 and log drift), so a scenario
//! of 10^5 replications holds about as much as one of five; only while every replication so far
//! was stopped by the queue guard are their series kept, since the verdict then reads them all. The float sums are added in the order [`Summary::from_reps`] always added
//! them (replication order, from zero), so the numbers are the same bits as when every replication
//! was kept.

use super::series::Series;
use super::{DriftNoise, RepStats, Steadiness, Summary, ci95_half_width};

/// The sojourn quantiles every summary reads (the median, p90, p99 and p99.9 of `run`'s columns);
/// `--quantiles` adds its own.
pub const STANDARD_QUANTILES: [f64; 4] = [0.5, 0.9, 0.99, 0.999];

/// The cell-by-cell sum of replications' output series, for their average ([`Series::average`]).
#[derive(Debug, Clone, Default)]
pub struct SeriesSum {
    cell: u64,
    sums: Vec<f64>,
    count: u64,
    /// Series of another cell size than the first (none for replications that ran to the end:
    /// they simulate the same arrivals, hence the same cells).
    odd: Vec<Series>,
}

impl SeriesSum {
    /// Adds one replication's series (an empty one counts for nothing, as in the average).
    pub fn add(&mut self, s: &Series) {
        if s.means.is_empty() {
            return;
        }
        if self.count == 0 {
            self.cell = s.cell;
            self.sums.clone_from(&s.means);
        } else if s.cell == self.cell {
            self.sums.truncate(s.means.len());
            for (x, &y) in self.sums.iter_mut().zip(&s.means) {
                *x += y;
            }
        } else {
            self.odd.push(s.clone());
            return;
        }
        self.count += 1;
    }

    /// The average series: what [`Series::average`] gives for the series added, in the order
    /// added.
    pub fn average(&self) -> Series {
        let k = self.count as f64;
        let avg = Series { means: self.sums.iter().map(|x| x / k).collect(), cell: self.cell };
        if self.odd.is_empty() {
            return avg;
        }
        // Mixed cell sizes: the sum stands for its replications at the coarsest cell.
        let mut all: Vec<&Series> = vec![&avg; self.count as usize];
        all.extend(&self.odd);
        Series::average(all)
    }
}

/// What the steady-state verdict reads from a set of replications.
#[derive(Debug, Clone, Default)]
struct Used {
    count: u64,
    /// Servers of the first replication (its dispatch counts).
    servers: u64,
    warmup: u64,
    first_half: (u64, f64),
    second_half: (u64, f64),
    /// `ln(drift)` of each replication, for the noise of the pooled drift.
    log_drifts: Vec<f64>,
}

impl Used {
    fn add(&mut self, r: &RepStats) {
        if self.count == 0 {
            self.servers = r.picks.len() as u64;
        }
        self.count += 1;
        self.warmup += r.warmup;
        self.first_half.0 += r.first_half.0;
        self.first_half.1 += r.first_half.1;
        self.second_half.0 += r.second_half.0;
        self.second_half.1 += r.second_half.1;
        self.log_drifts.push(r.drift().ln());
    }

    fn drift(&self) -> f64 {
        let halves = RepStats {
            first_half: self.first_half,
            second_half: self.second_half,
            ..RepStats::default()
        };
        halves.drift()
    }
}

/// A [`Summary`] built one replication at a time.
#[derive(Debug, Clone)]
pub struct Tally {
    requests: u64,
    quantiles: Vec<f64>,
    merged: RepStats,
    rep_means: Vec<f64>,
    rep_p99s: Vec<f64>,
    /// The replications that ran to the end (the verdict reads them when there are any).
    complete: Used,
    complete_series: SeriesSum,
    /// All replications (the verdict reads them when the queue guard stopped every one).
    all: Used,
    /// The series of the stopped replications, while no replication has run to the end.
    stopped_series: Vec<Series>,
    /// The span of the measurement windows so far.
    window: Option<(f64, f64)>,
    /// Replications that measured, and the sum of their measured spans.
    spans: (u64, f64),
}

impl Tally {
    /// An empty tally for replications of `requests` measured arrivals; the summary will read the
    /// [`STANDARD_QUANTILES`] and `extra`.
    pub fn new(requests: u64, extra: &[f64]) -> Tally {
        let mut quantiles = STANDARD_QUANTILES.to_vec();
        quantiles.extend(extra.iter().filter(|q| !STANDARD_QUANTILES.contains(q)));
        Tally {
            requests,
            quantiles,
            merged: RepStats::default(),
            rep_means: Vec::new(),
            rep_p99s: Vec::new(),
            complete: Used::default(),
            complete_series: SeriesSum::default(),
            all: Used::default(),
            stopped_series: Vec::new(),
            window: None,
            spans: (0, 0.0),
        }
    }

    /// Adds the next replication (replications must come in replication order).
    pub fn add(&mut self, r: &RepStats) {
        self.merged += r;
        self.rep_means.push(r.mean());
        self.rep_p99s.push(r.quantile(0.99));
        self.all.add(r);
        if let Some((first, last)) = r.window {
            let (f, l) = self.window.unwrap_or((first, last));
            self.window = Some((f.min(first), l.max(last)));
            self.spans = (self.spans.0 + 1, self.spans.1 + (last - first));
        }
        if r.stops == 0 {
            self.complete.add(r);
            self.complete_series.add(&r.series);
            self.stopped_series = Vec::new();
        } else if self.complete.count == 0 {
            self.stopped_series.push(r.series.clone());
        }
    }

    /// The summary of the replications added.
    pub fn finish(self) -> Summary {
        let merged = self.merged;
        let mean_ci95 = ci95_half_width(&self.rep_means);
        let (used, avg) = if self.complete.count > 0 {
            (&self.complete, self.complete_series.average())
        } else {
            (&self.all, Series::average(&self.stopped_series))
        };
        let warmup = used.warmup / used.count.max(1);
        let noise = DriftNoise { log_drifts: &used.log_drifts, series: &avg, warmup };
        let steadiness =
            Steadiness::read(&avg, used.servers, warmup, used.drift(), &noise, mean_ci95);
        let quantiles = self.quantiles.iter().map(|&q| (q, merged.quantile(q))).collect();
        Summary {
            seeds: self.rep_means.len() as u64,
            mean: merged.mean(),
            p99: merged.quantile(0.99),
            max_queue: merged.max_queue,
            mean_ci95,
            p99_ci95: ci95_half_width(&self.rep_p99s),
            drift: merged.drift(),
            stopped: merged.stopped,
            stops: merged.stops,
            steadiness,
            rep_means: self.rep_means,
            rep_p99s: self.rep_p99s,
            quantiles,
            admission: merged.admission,
            lifecycle: merged.lifecycle,
            requests: self.requests,
            window: self.window,
            measured_span: self.spans.1,
            // Every measured arrival: with the request lifecycle, `requests` holds only those
            // answered (the sojourns), the lifecycle's count every request, failed ones too.
            measured_gaps: if merged.lifecycle.is_empty() {
                merged.requests
            } else {
                merged.lifecycle.requests
            }
            .saturating_sub(self.spans.0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_running_sum_averages_as_series_average_does() {
        let a = Series { means: vec![0.1, 0.2, 0.7, 1.3], cell: 2 };
        let b = Series { means: vec![0.3, 0.6, 0.9], cell: 2 };
        let c = Series { means: vec![1.0 / 3.0, 2.0 / 3.0, 0.1 + 0.2, 5.0], cell: 2 };
        let mut sum = SeriesSum::default();
        for s in [&a, &Series::default(), &b, &c] {
            sum.add(s);
        }
        let bits = |s: &Series| s.means.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        let want = Series::average([&a, &b, &c]);
        assert_eq!((bits(&sum.average()), sum.average().cell), (bits(&want), want.cell));
    }
}

//! One replication's statistics, mergeable exactly with `+=`.

use hdrhistogram::Histogram;
use std::ops::AddAssign;

/// Sojourn times in a high-dynamic-range histogram (3 significant digits).
///
/// Times are recorded as integer multiples of [`LatencyHistogram::UNIT`]; quantiles are reported
/// as the upper edge of their bucket, so they are within 0.1% (relative) of the exact order
/// statistic.
#[derive(Debug, Clone)]
pub struct LatencyHistogram(Histogram<u64>);

impl Default for LatencyHistogram {
    fn default() -> Self {
        LatencyHistogram(Histogram::new(3).expect("3 significant digits is a valid precision"))
    }
}

impl LatencyHistogram {
    /// Resolution of the histogram in time units.
    pub const UNIT: f64 = 1e-6;

    /// Records one sojourn time.
    #[inline]
    pub fn record(&mut self, t: f64) {
        let v = (t / Self::UNIT).round() as u64;
        // The histogram grows as needed; only a value beyond its largest possible range fails,
        // and that one is clamped to the top bucket rather than dropped.
        if self.0.record(v).is_err() {
            self.0.saturating_record(v);
        }
    }

    /// The `q`-quantile (0..=1), or `NaN` when empty.
    pub fn quantile(&self, q: f64) -> f64 {
        if self.0.is_empty() {
            return f64::NAN;
        }
        self.0.value_at_quantile(q) as f64 * Self::UNIT
    }

    /// Number of recorded values.
    pub fn len(&self) -> u64 {
        self.0.len()
    }

    /// True when nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl AddAssign<&LatencyHistogram> for LatencyHistogram {
    fn add_assign(&mut self, rhs: &LatencyHistogram) {
        self.0.add(&rhs.0).expect("auto-resizing histograms always merge");
    }
}

/// What one replication measured. All fields merge by addition or maximum, so merging in a fixed
/// order gives the same bits whatever ran where.
#[derive(Debug, Clone, Default)]
pub struct RepStats {
    /// Measured requests (all departed).
    pub requests: u64,
    /// Sum of their sojourn times.
    pub sum: f64,
    /// Requests in the first half of the measured arrivals, and their sojourn sum.
    pub first_half: (u64, f64),
    /// Requests in the second half, and their sojourn sum.
    pub second_half: (u64, f64),
    /// Sojourn times.
    pub hist: LatencyHistogram,
    /// Largest queue length at any server during the measurement window.
    pub max_queue: u32,
    /// Events simulated (arrivals, departures, board posts).
    pub events: u64,
    /// Requests dispatched to each server during the measurement window.
    pub picks: Vec<u64>,
    /// `level_area[i]`: integral over the window of the number of servers with queue `>= i`.
    pub level_area: Vec<f64>,
    /// Server-time of the measurement window: servers × (last − first measured arrival).
    pub server_time: f64,
    /// Set when the replication was stopped before the end, with the reason.
    pub stopped: Option<String>,
}

impl RepStats {
    /// Mean sojourn.
    pub fn mean(&self) -> f64 {
        self.sum / self.requests as f64
    }

    /// A sojourn quantile.
    pub fn quantile(&self, q: f64) -> f64 {
        self.hist.quantile(q)
    }

    /// Mean of the second half of the measured requests over the mean of the first half.
    pub fn drift(&self) -> f64 {
        let (n1, s1) = self.first_half;
        let (n2, s2) = self.second_half;
        (s2 / n2 as f64) / (s1 / n1 as f64)
    }

    /// Time-averaged fraction of servers with queue length `>= i`, for `i = 0, 1, ...`.
    pub fn level_fractions(&self) -> Vec<f64> {
        self.level_area.iter().map(|a| a / self.server_time).collect()
    }
}

fn add_elementwise<T: Copy + Default + AddAssign>(a: &mut Vec<T>, b: &[T]) {
    if a.len() < b.len() {
        a.resize(b.len(), T::default());
    }
    for (x, &y) in a.iter_mut().zip(b) {
        *x += y;
    }
}

impl AddAssign<&RepStats> for RepStats {
    fn add_assign(&mut self, r: &RepStats) {
        self.requests += r.requests;
        self.sum += r.sum;
        self.first_half.0 += r.first_half.0;
        self.first_half.1 += r.first_half.1;
        self.second_half.0 += r.second_half.0;
        self.second_half.1 += r.second_half.1;
        self.hist += &r.hist;
        self.max_queue = self.max_queue.max(r.max_queue);
        self.events += r.events;
        add_elementwise(&mut self.picks, &r.picks);
        add_elementwise(&mut self.level_area, &r.level_area);
        self.server_time += r.server_time;
        if self.stopped.is_none() {
            self.stopped.clone_from(&r.stopped);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merging_equals_recording_everything_in_one() {
        let xs: Vec<f64> = (1..=1000).map(|i| f64::from(i) * 0.01).collect();
        let mut whole = RepStats::default();
        let mut parts = [RepStats::default(), RepStats::default()];
        for (i, &x) in xs.iter().enumerate() {
            for s in [&mut whole, &mut parts[i % 2]] {
                s.requests += 1;
                s.sum += x;
                s.hist.record(x);
            }
        }
        parts[1].max_queue = 7;
        let mut merged = RepStats::default();
        merged += &parts[0];
        merged += &parts[1];
        assert_eq!(merged.requests, whole.requests);
        assert!((merged.sum - whole.sum).abs() < 1e-9);
        assert_eq!(merged.quantile(0.99), whole.quantile(0.99));
        assert_eq!(merged.max_queue, 7);
        // The 99th percentile of 0.01..10.00 is 9.90, within the histogram's 0.1%.
        assert!((whole.quantile(0.99) - 9.90).abs() < 9.90 * 1e-3);
    }
}

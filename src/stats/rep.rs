//! One replication's statistics, mergeable exactly with `+=`.

use hdrhistogram::Histogram;

use super::series::Series;
use std::ops::AddAssign;

/// Sojourn times in a high-dynamic-range histogram (3 significant digits).
///
/// Times are recorded as integer multiples of [`LatencyHistogram::UNIT`] into buckets at most
/// 0.1% wide (relative). A quantile is read by linear interpolation inside the bucket that holds
/// it, as if that bucket's values were spread evenly across it: the reading then errs by about the
/// spacing of neighbouring order statistics (1e-4 time units for the p99 of a million `Exp(1)`
/// samples), not by the bucket width, which at 20 replications is wider than a tenth of a p99's 95%
/// interval. The interpolation costs nothing per record: it walks the buckets once per reading.
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
        let v = round_to_u64(t / Self::UNIT);
        // The histogram grows as needed; only a value beyond its largest possible range fails,
        // and that one is clamped to the top bucket rather than dropped.
        if self.0.record(v).is_err() {
            self.0.saturating_record(v);
        }
    }

    /// The `q`-quantile (0..=1), interpolated inside its bucket; `NaN` when empty.
    ///
    /// The value below which a fraction `q` of the records lie: the bucket where the cumulative
    /// count reaches `q * len` is taken to hold its records evenly over its range (a recorded
    /// integer `v` stands for times in `[v - 1/2, v + 1/2)` units).
    pub fn quantile(&self, q: f64) -> f64 {
        if self.0.is_empty() {
            return f64::NAN;
        }
        let target = q.clamp(0.0, 1.0) * self.0.len() as f64;
        let mut below = 0u64;
        for v in self.0.iter_recorded() {
            let count = v.count_at_value();
            if (below + count) as f64 >= target {
                let high = v.value_iterated_to();
                let low = self.0.lowest_equivalent(high);
                let width = (high - low + 1) as f64;
                let within = ((target - below as f64) / count as f64).clamp(0.0, 1.0);
                return ((low as f64 - 0.5 + within * width) * Self::UNIT).max(0.0);
            }
            below += count;
        }
        (self.0.highest_equivalent(self.0.max()) as f64 + 0.5) * Self::UNIT
    }

    /// The `q`-quantile as hdrhistogram itself reads it: the upper edge of the bucket that holds
    /// it (up to 0.1% high). Kept to measure what [`Self::quantile`]'s interpolation costs and
    /// gains.
    pub fn bucket_edge_quantile(&self, q: f64) -> f64 {
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

impl LatencyHistogram {
    /// An empty [`LatencyRecorder`], the fast way to fill a histogram from a loop.
    pub fn recorder() -> LatencyRecorder {
        LatencyRecorder::default()
    }

    /// Adds `count` records of `v` (in units of [`Self::UNIT`]), clamping like [`Self::record`].
    fn record_units(&mut self, v: u64, count: u64) {
        if self.0.record_n(v, count).is_err() {
            self.0.saturating_record_n(v, count);
        }
    }
}

/// Sojourn times counted in [`LatencyHistogram`]'s own buckets, for the simulation's inner loop.
///
/// hdrhistogram's `record` also keeps a minimum, a maximum and a total and checks for resizing;
/// here a record is an index computation and an increment. The layout is that of the
/// 3-significant-digit histogram with lowest discernible value 1: sub-buckets of 2048 values, the
/// first bucket used whole and every later one (twice as coarse as the one before) in its upper
/// half. [`LatencyRecorder::finish`] adds the counts to a [`LatencyHistogram`], which then holds
/// what recording every value directly would have given: the same counts per bucket, the same
/// total, and a minimum and maximum in the same buckets (a test checks this).
#[derive(Debug, Clone, Default)]
pub struct LatencyRecorder {
    counts: Vec<u64>,
}

/// log2 of half the sub-bucket count (2048 sub-buckets for 3 significant digits).
const HALF_MAGNITUDE: u32 = 10;
/// Leading zeros of the largest value of the first bucket, 2047.
const FIRST_BUCKET_ZEROS: u32 = 53;

impl LatencyRecorder {
    /// Records one sojourn time, rounded to [`LatencyHistogram::UNIT`] as
    /// [`LatencyHistogram::record`] does.
    #[inline]
    pub fn record(&mut self, t: f64) {
        let i = Self::index(round_to_u64(t / LatencyHistogram::UNIT));
        match self.counts.get_mut(i) {
            Some(c) => *c += 1,
            None => self.grow_and_record(i),
        }
    }

    #[cold]
    fn grow_and_record(&mut self, i: usize) {
        self.counts.resize((i + 1).next_power_of_two(), 0);
        self.counts[i] += 1;
    }

    /// Adds everything recorded to `hist`.
    pub fn finish(&self, hist: &mut LatencyHistogram) {
        for (i, &c) in self.counts.iter().enumerate().filter(|(_, c)| **c > 0) {
            hist.record_units(Self::value(i), c);
        }
    }

    /// The bucket of `v`: hdrhistogram's `index_for`.
    #[inline]
    fn index(v: u64) -> usize {
        let bucket = FIRST_BUCKET_ZEROS - (v | 2047).leading_zeros();
        let sub_bucket = v >> bucket;
        (((u64::from(bucket) + 1) << HALF_MAGNITUDE) + sub_bucket - (1 << HALF_MAGNITUDE)) as usize
    }

    /// The smallest value of bucket `i`: hdrhistogram's `value_for`.
    fn value(i: usize) -> u64 {
        let half = 1u64 << HALF_MAGNITUDE;
        let sub_bucket = (i as u64 & (half - 1)) + half;
        match (i >> HALF_MAGNITUDE).checked_sub(1) {
            None => sub_bucket - half,
            Some(bucket) => sub_bucket << bucket,
        }
    }
}

/// `x.round() as u64` (half away from zero, saturating) without a call into libm.
///
/// Below 2^52 the fractional part `x - trunc(x)` is exact, so comparing it with one half decides
/// the rounding exactly, and signed conversions (one instruction each) suffice. From 2^52 on every
/// float is an integer; negative and NaN inputs give 0, as the cast does.
#[inline]
fn round_to_u64(x: f64) -> u64 {
    const INTEGRAL: f64 = 4_503_599_627_370_496.0; // 2^52
    if (0.0..INTEGRAL).contains(&x) {
        let whole = x as i64;
        (whole + i64::from(x - whole as f64 >= 0.5)) as u64
    } else {
        x as u64
    }
}

/// Serialised as its non-empty buckets, `[[value, count], ...]` in increasing order, each bucket
/// named by its lowest value in units of [`LatencyHistogram::UNIT`] (what [`LatencyRecorder`]
/// records): reading them back with the same counts rebuilds the same histogram.
impl serde::Serialize for LatencyHistogram {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let h = &self.0;
        s.collect_seq(
            h.iter_recorded()
                .map(|v| [h.lowest_equivalent(v.value_iterated_to()), v.count_at_value()]),
        )
    }
}

impl<'de> serde::Deserialize<'de> for LatencyHistogram {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let buckets = <Vec<[u64; 2]>>::deserialize(d)?;
        let mut hist = LatencyHistogram::default();
        for [value, count] in buckets {
            hist.record_units(value, count);
        }
        Ok(hist)
    }
}

impl PartialEq for LatencyHistogram {
    fn eq(&self, other: &Self) -> bool {
        self.0 == other.0
    }
}

impl AddAssign<&LatencyHistogram> for LatencyHistogram {
    fn add_assign(&mut self, rhs: &LatencyHistogram) {
        self.0.add(&rhs.0).expect("auto-resizing histograms always merge");
    }
}

/// Why a replication was stopped before its end. Its `Display` is the line the tables and warnings
/// show; a shard's record holds it as `{"queue":{"guard":…,"t":…}}` (or `"backlog"`).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum StopReason {
    /// A server's queue exceeded the queue guard `guard` at time `t`.
    Queue {
        /// The queue guard.
        guard: u32,
        /// When.
        t: f64,
    },
    /// A client's backlog exceeded the queue guard `guard` at time `t`.
    Backlog {
        /// The queue guard.
        guard: u32,
        /// When.
        t: f64,
    },
}

impl std::fmt::Display for StopReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            StopReason::Queue { guard, t } => {
                write!(f, "stopped: a queue exceeded --queue-guard {guard} at t = {t:.1}")
            }
            StopReason::Backlog { guard, t } => {
                write!(
                    f,
                    "stopped: a client's backlog exceeded --queue-guard {guard} at t = {t:.1}"
                )
            }
        }
    }
}

/// What one replication measured. All fields merge by addition or maximum, so merging in a fixed
/// order gives the same bits whatever ran where.
///
/// It serialises (serde) to what a shard's raw record holds for the replication, so that a merge
/// of shards sums the same values in the same order as one process does; every field must
/// round-trip exactly (floats do, through serde_json's `float_roundtrip`).
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
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
    /// The smallest and the largest measured sojourn, exactly (`None` when nothing was
    /// measured): quantiles are read inside this range.
    #[serde(default)]
    pub range: Option<(f64, f64)>,
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
    /// The measurement window: the times of the first and the last measured arrival (`None`
    /// when it never opened). Not merged: each replication keeps its own.
    #[serde(default)]
    pub window: Option<(f64, f64)>,
    /// Set when the replication was stopped before the end, with the reason.
    pub stopped: Option<StopReason>,
    /// Replications stopped before the end (0 or 1 for one replication; summed by merging).
    pub stops: u64,
    /// Mean sojourn per cell of arrivals, warm-up included: what the steady-state detector reads.
    /// Not merged: each replication keeps its own.
    pub series: Series,
    /// Arrivals simulated before measuring (the warm-up this replication ran with).
    pub warmup: u64,
    /// What the admission stage counted (all zero without one).
    pub admission: crate::admission::AdmissionStats,
    /// The per-window series (`run --series`); not merged: each replication keeps its own.
    pub windows: Option<super::Windows>,
    /// The same written to a tape as the windows closed (an unsharded `run --series`); never
    /// in a record.
    #[serde(skip)]
    pub spooled: Option<super::SpooledWindows>,
    /// What the request lifecycle counted (SPEC §11; absent from the record without one).
    #[serde(default, skip_serializing_if = "crate::lifecycle::LifecycleStats::is_empty")]
    pub lifecycle: crate::lifecycle::LifecycleStats,
    /// Each traffic class's requests, sums, halves, histogram and range, in class order
    /// (SPEC §13; empty, and absent from the record, without classes).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub classes: Vec<RepStats>,
}

impl RepStats {
    /// All of `reps` merged, in the order given (so the float sums are the same bits whatever
    /// ran where).
    pub fn merged<'a>(reps: impl IntoIterator<Item = &'a RepStats>) -> RepStats {
        let mut all = RepStats::default();
        for r in reps {
            all += r;
        }
        all
    }

    /// Mean sojourn.
    pub fn mean(&self) -> f64 {
        self.sum / self.requests as f64
    }

    /// A sojourn quantile: the histogram's reading ([`LatencyHistogram::quantile`]) clamped to
    /// the observed [`range`](Self::range).
    ///
    /// The histogram spreads each bucket's records evenly over the bucket, which reads an atom
    /// (every sojourn exactly 1 under deterministic service and no waiting) up to a bucket width
    /// (0.1%) off it, possibly above the largest value observed. No quantile lies outside the
    /// observed range, so a reading outside it is brought back to its edge: a distribution with
    /// a single value reads as that value at every quantile, and the top atom of a bimodal one
    /// never reads above itself.
    pub fn quantile(&self, q: f64) -> f64 {
        let x = self.hist.quantile(q);
        match self.range {
            Some((lo, hi)) => x.clamp(lo, hi),
            None => x,
        }
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
        self.range = match (self.range, r.range) {
            (Some((a, b)), Some((c, d))) => Some((a.min(c), b.max(d))),
            (x, None) | (None, x) => x,
        };
        self.max_queue = self.max_queue.max(r.max_queue);
        self.events += r.events;
        add_elementwise(&mut self.picks, &r.picks);
        add_elementwise(&mut self.level_area, &r.level_area);
        self.server_time += r.server_time;
        if self.stopped.is_none() {
            self.stopped = r.stopped;
        }
        self.stops += r.stops;
        self.admission.merge(&r.admission);
        self.lifecycle.merge(&r.lifecycle);
        if self.classes.len() < r.classes.len() {
            self.classes.resize_with(r.classes.len(), RepStats::default);
        }
        for (a, b) in self.classes.iter_mut().zip(&r.classes) {
            *a += b;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stop_reason_prints_its_line_and_serialises_as_its_fields() {
        let q = StopReason::Queue { guard: 50, t: 1234.56 };
        let b = StopReason::Backlog { guard: 7, t: 0.04 };
        assert_eq!(q.to_string(), "stopped: a queue exceeded --queue-guard 50 at t = 1234.6");
        assert_eq!(
            b.to_string(),
            "stopped: a client's backlog exceeded --queue-guard 7 at t = 0.0"
        );
        let text = serde_json::to_string(&[q, b]).unwrap();
        assert_eq!(
            text,
            r#"[{"queue":{"guard":50,"t":1234.56}},{"backlog":{"guard":7,"t":0.04}}]"#
        );
        assert_eq!(serde_json::from_str::<Vec<StopReason>>(&text).unwrap(), [q, b]);
        for bad in [r#""stopped: a queue""#, r#"{"queue":{"guard":1}}"#, r#"{"other":{}}"#] {
            assert!(serde_json::from_str::<StopReason>(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn rounding_matches_round_then_cast() {
        let cases = [
            0.0,
            0.49999999999999994,
            0.5,
            1.5,
            2.5,
            2.4999999999999996,
            1e-300,
            123_456.5,
            4_503_599_627_370_495.5,
            9_007_199_254_740_993.0,
            1.8446744073709552e19,
            1e30,
            -0.7,
            f64::NAN,
            f64::INFINITY,
        ];
        for x in cases {
            assert_eq!(round_to_u64(x), x.round() as u64, "{x}");
        }
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..100_000 {
            state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            // Up to 2^33 with 20 fraction bits, so exact halves come up often.
            let x = (state >> 11) as f64 / f64::from(1u32 << 20);
            assert_eq!(round_to_u64(x), x.round() as u64, "{x}");
        }
    }

    #[test]
    fn recorder_gives_the_histogram_that_direct_recording_gives() {
        let mut direct = LatencyHistogram::default();
        let mut recorder = LatencyRecorder::default();
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut values = vec![0.0, 1e-7, 5e-7, 2.047e-3, 2.048e-3, 1.0, 1e6, 1.8e13];
        for _ in 0..200_000 {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            // Log-uniform over 1e-7 .. 1e7 time units.
            let e = (state >> 40) as f64 / f64::from(1u32 << 24) * 14.0 - 7.0;
            values.push(10f64.powf(e));
        }
        for &t in &values {
            direct.record(t);
            recorder.record(t);
        }
        let mut via = LatencyHistogram::default();
        recorder.finish(&mut via);
        assert_eq!(via.len(), direct.len());
        assert_eq!(via.0.max(), direct.0.max());
        assert_eq!(via.0.min_nz(), direct.0.min_nz());
        let buckets = |h: &LatencyHistogram| -> Vec<(u64, u64)> {
            h.0.iter_recorded().map(|v| (v.value_iterated_to(), v.count_at_value())).collect()
        };
        assert_eq!(buckets(&via), buckets(&direct));
        for q in [0.0, 0.001, 0.25, 0.5, 0.9, 0.99, 0.999, 1.0] {
            assert_eq!(via.quantile(q), direct.quantile(q), "q = {q}");
        }
        for v in [0, 1, 2047, 2048, 4095, 4096, 1 << 40, u64::MAX] {
            let i = LatencyRecorder::index(v);
            assert!(LatencyRecorder::value(i) <= v);
            assert_eq!(LatencyRecorder::index(LatencyRecorder::value(i)), i, "{v}");
        }
    }

    #[test]
    fn a_quantile_reads_finer_than_its_bucket() {
        // Quantiles of a million Exp(1) samples against the exact order statistics. A bucket is
        // w = 2^-10 of its value wide (0.05-0.1%) and holds c = N f(x) w samples; reading inside
        // it errs like the q-quantile of c uniform points, about w / (2 sqrt(c)): 1.6e-5 at the
        // median (c ~ 250), 3e-4 at the p99 (x = 4.6, w = 0.004, c ~ 40), i.e. 0.007% of it, and
        // 0.015% at the p99.9 (c ~ 4). Without interpolation the error is up to w itself (0.1%).
        // A p99's 95% interval at 20 replications of 1e6 requests is about 0.1% of it, so a
        // tenth of it is 0.01%; the bounds below are three standard errors of the reading.
        use rand::RngExt;
        let mut rng = crate::rng::StreamKey::new(42, "quantile-test").rng();
        let mut samples: Vec<f64> = (0..1_000_000).map(|_| rng.sample(rand_distr::Exp1)).collect();
        let mut hist = LatencyHistogram::default();
        for &x in &samples {
            hist.record(x);
        }
        samples.sort_by(f64::total_cmp);
        for (q, bound) in [(0.5, 1e-4), (0.9, 1e-4), (0.99, 2e-4), (0.999, 5e-4)] {
            let exact = samples[(q * samples.len() as f64).ceil() as usize - 1];
            let read = hist.quantile(q);
            let err = (read / exact - 1.0).abs();
            assert!(err < bound, "q {q}: {read} vs exact {exact} ({err:.1e})");
        }
        // The issue's own bar, 0.1% at the p99, with room to spare.
        let exact = samples[989_999];
        assert!((hist.quantile(0.99) / exact - 1.0).abs() < 1e-3);
    }

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

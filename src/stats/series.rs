//! The output series of a replication and the MSER-5 truncation rule that reads the end of the
//! start-up transient from it.
//!
//! The series is every request's sojourn time in arrival order, warm-up included, kept as the means
//! of consecutive *cells* of `2^shift` arrivals. At most [`CELLS`] cells are held: when the arrivals
//! outgrow them, neighbouring cells are merged pairwise and the cell size doubles, so memory stays
//! flat (40 KiB) however long the run. Each cell's sum is a [`FixedSum`], so the series does not
//! depend on the order in which departures are recorded.
//!
//! MSER-5 (White 1997; White, Cobb & Spratt 2000; evaluated as the best of 42 warm-up methods by
//! Hoad, Robinson & Davies, *J. Oper. Res. Soc.* 61, 2010): group the series into batches of five,
//! `Z_1..Z_m`, and pick the truncation `d` that minimises
//!
//! ```text
//! MSER(d) = sum_{j > d} (Z_j - mean(Z_{d+1..m}))^2 / (m - d)^2
//! ```
//!
//! the squared standard error of the mean that is left once the first `d` batches are discarded.
//! A start-up bias inflates the spread of what is kept, so the minimum lands where the bias ends.
//! The truncation is searched in the first half of the series only, and trusted only when the
//! minimum lies before the half-way bound; a minimum at the bound means the statistic was still
//! falling there: the series still moves (a trend, or a run far too short for its transient), and
//! no truncation point can be read from it.

use super::FixedSum;

/// Cells held at most per replication.
pub const CELLS: usize = 2048;

/// Cells per MSER batch: the 5 of MSER-5.
pub const BATCH: usize = 5;

/// Records sojourn times by arrival index into at most [`CELLS`] cells.
#[derive(Debug, Clone, Default)]
pub struct SeriesRecorder {
    sums: Vec<FixedSum>,
    counts: Vec<u32>,
    shift: u32,
    /// Arrival index at which the cells are full and must be merged.
    limit: u64,
}

impl SeriesRecorder {
    /// An empty recorder (cells of one arrival).
    pub fn new() -> Self {
        SeriesRecorder {
            sums: vec![FixedSum::default(); CELLS],
            counts: vec![0; CELLS],
            shift: 0,
            limit: CELLS as u64,
        }
    }

    /// Called with each arrival's index (0, 1, 2, ...) before the request is recorded: merges the
    /// cells when the index outgrows them.
    #[inline]
    pub fn arrival(&mut self, index: u64) {
        if index == self.limit {
            self.coarsen();
        }
    }

    #[cold]
    fn coarsen(&mut self) {
        for i in 0..CELLS / 2 {
            let mut sum = self.sums[2 * i];
            sum.merge(self.sums[2 * i + 1]);
            self.sums[i] = sum;
            self.counts[i] = self.counts[2 * i] + self.counts[2 * i + 1];
        }
        self.sums[CELLS / 2..].fill(FixedSum::default());
        self.counts[CELLS / 2..].fill(0);
        self.shift += 1;
        self.limit *= 2;
    }

    /// Records the sojourn of the request that arrived `index`-th.
    #[inline]
    pub fn record(&mut self, index: u64, sojourn: f64) {
        let cell = (index >> self.shift) as usize;
        self.sums[cell].add(sojourn);
        self.counts[cell] += 1;
    }

    /// The finished series: the mean of each cell up to the last one that holds a request.
    pub fn finish(&self) -> Series {
        let used = self.counts.iter().rposition(|&c| c > 0).map_or(0, |i| i + 1);
        let means = (0..used)
            .map(|i| {
                if self.counts[i] > 0 {
                    self.sums[i].value() / f64::from(self.counts[i])
                } else {
                    0.0
                }
            })
            .collect();
        Series { means, cell: 1 << self.shift }
    }
}

/// A replication's output series: mean sojourn per cell of `cell` consecutive arrivals.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Series {
    /// Mean sojourn of each cell, in arrival order (warm-up included).
    pub means: Vec<f64>,
    /// Arrivals per cell.
    pub cell: u64,
}

impl Series {
    /// The cell-by-cell mean of several replications' series: the replication-averaged series that
    /// Hoad et al. apply MSER-5 to. Series of other cell sizes (a replication stopped early) are
    /// brought to the coarsest size; the result is as long as the shortest.
    pub fn average<'a>(all: impl IntoIterator<Item = &'a Series>) -> Series {
        let all: Vec<&Series> = all.into_iter().filter(|s| !s.means.is_empty()).collect();
        let Some(cell) = all.iter().map(|s| s.cell).max() else {
            return Series::default();
        };
        let coarse: Vec<Vec<f64>> = all.iter().map(|s| s.coarsened(cell)).collect();
        let len = coarse.iter().map(Vec::len).min().unwrap_or(0);
        let k = coarse.len() as f64;
        let means = (0..len).map(|i| coarse.iter().map(|m| m[i]).sum::<f64>() / k).collect();
        Series { means, cell }
    }

    /// The cell means at a larger cell size (a power-of-two multiple of this one); a trailing
    /// partial cell is dropped.
    fn coarsened(&self, cell: u64) -> Vec<f64> {
        let f = (cell / self.cell) as usize;
        self.means.chunks_exact(f).map(|c| c.iter().sum::<f64>() / f as f64).collect()
    }

    /// MSER-5 over this series.
    pub fn mser5(&self) -> Option<Truncation> {
        let batches: Vec<f64> =
            self.means.chunks_exact(BATCH).map(|c| c.iter().sum::<f64>() / BATCH as f64).collect();
        let d = mser(&batches)?;
        Some(Truncation {
            arrivals: (d * BATCH) as u64 * self.cell,
            batches: batches.len(),
            trusted: d < batches.len() / 2,
        })
    }
}

/// Where MSER-5 puts the end of the transient.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Truncation {
    /// Arrivals to discard (warm-up) from the start of the run.
    pub arrivals: u64,
    /// Batches the rule looked at.
    pub batches: usize,
    /// False when the minimum lies at the half-way bound of the search: the series still moves,
    /// and no steady state is found within the run.
    pub trusted: bool,
}

/// Fewest batches MSER is run on: below this the statistic is noise.
pub const MIN_BATCHES: usize = 10;

/// The MSER truncation (in batches) of `z`: the `d` in `0..=m/2` minimising the squared standard
/// error of what is left, ties to the smaller `d`. The search stops at half the series, as the rule
/// prescribes: near the end of a series a handful of batches can agree by chance and give a
/// meaninglessly small statistic. A minimum *at* the half-way bound means the statistic was still
/// falling there — a trend. `None` when there are fewer than [`MIN_BATCHES`] batches.
pub fn mser(z: &[f64]) -> Option<usize> {
    let m = z.len();
    if m < MIN_BATCHES {
        return None;
    }
    // Suffix sums, added from the end so that each suffix is summed in one fixed order.
    let (mut s1, mut s2) = (0.0, 0.0);
    let mut stats = vec![0.0; m];
    for d in (0..m).rev() {
        s1 += z[d];
        s2 += z[d] * z[d];
        let n = (m - d) as f64;
        // Sum of squared deviations of z[d..] from their mean.
        let ss = (s2 - s1 * s1 / n).max(0.0);
        stats[d] = ss / (n * n);
    }
    let mut best = (f64::INFINITY, 0);
    for (d, &v) in stats.iter().enumerate().take(m / 2 + 1) {
        if v < best.0 {
            best = (v, d);
        }
    }
    Some(best.1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn noise(n: usize, seed: u64) -> Vec<f64> {
        let mut state = seed;
        (0..n)
            .map(|_| {
                state = state
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                (state >> 11) as f64 / (1u64 << 53) as f64 - 0.5
            })
            .collect()
    }

    #[test]
    fn a_stationary_series_is_barely_truncated() {
        let z: Vec<f64> = noise(400, 7).iter().map(|e| 10.0 + e).collect();
        let d = mser(&z).unwrap();
        assert!(d < 40, "truncated {d} of 400 stationary batches");
    }

    #[test]
    fn a_start_up_ramp_is_cut_where_it_ends() {
        // Rises from 0 to 10 over the first 100 batches, then noise of width 1 around 10.
        let z: Vec<f64> = noise(400, 3)
            .iter()
            .enumerate()
            .map(|(i, e)| 10.0 * (i as f64 / 100.0).min(1.0) + e)
            .collect();
        let d = mser(&z).unwrap();
        assert!((85..=110).contains(&d), "cut at {d}, the ramp ends at 100");
    }

    #[test]
    fn a_trend_to_the_end_is_not_trusted() {
        let means: Vec<f64> =
            noise(2000, 5).iter().enumerate().map(|(i, e)| i as f64 * 0.01 + e).collect();
        let t = Series { means, cell: 4 }.mser5().unwrap();
        assert!(!t.trusted, "{t:?}");
    }

    #[test]
    fn the_recorder_keeps_cell_means_through_coarsening() {
        let mut r = SeriesRecorder::new();
        let n = 3 * CELLS as u64 + 17;
        for i in 0..n {
            r.arrival(i);
            r.record(i, i as f64);
        }
        let s = r.finish();
        // 6161 arrivals: cells of 1 up to 2048 arrivals, of 2 up to 4096, then of 4.
        assert_eq!(s.cell, 4);
        assert_eq!(s.means.len(), (n as usize).div_ceil(4));
        // Cell j holds arrivals 4j .. 4j+3: mean 4j + 1.5.
        assert_eq!(s.means[10], 41.5);
        assert_eq!(*s.means.last().unwrap(), (n - 1) as f64);
    }

    #[test]
    fn averaging_brings_series_to_the_coarsest_cell() {
        let a = Series { means: vec![1.0, 3.0, 5.0, 7.0], cell: 1 };
        let b = Series { means: vec![4.0, 8.0], cell: 2 };
        let avg = Series::average([&a, &b]);
        assert_eq!(avg, Series { means: vec![3.0, 7.0], cell: 2 });
    }
}

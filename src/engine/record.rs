//! What a replication measures, called by the loop's handlers ([`super::replication`]): the
//! warm-up and the halves of the measured window, the sojourn series of the steady-state verdict,
//! the latency histogram, queue maxima and the time-averaged levels. The hooks are called in the
//! same order whatever servers and parts a replication has, so its statistics do not depend on
//! them beyond what they simulate.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::model::RunLength;
use crate::stats::{
    FixedSum, LatencyHistogram, LatencyRecorder, RepStats, SeriesRecorder, StopReason,
};

/// Arrivals simulated by every replication of this process so far, for the progress bar: each
/// replication adds [`ARRIVALS_CHUNK`] at a time as it goes, and the rest of its planned
/// arrivals when it ends (stopped early or not), so that a finished replication counts exactly
/// `warmup + requests`. Only ever added to; a reader takes differences.
pub static ARRIVALS: AtomicU64 = AtomicU64::new(0);

/// How many arrivals a replication simulates between two additions to [`ARRIVALS`]: a power of
/// two, so that the loop pays one mask and one compare per arrival.
pub const ARRIVALS_CHUNK: u64 = 1 << 16;

/// Time integral of the number of servers with queue `>= i`, updated lazily per level, so each
/// arrival or departure costs O(1) whatever the number of levels.
#[derive(Debug, Default)]
pub(super) struct Levels {
    count_ge: Vec<u32>,
    pub(super) area: Vec<f64>,
    last: Vec<f64>,
    open: bool,
}

impl Levels {
    pub(super) fn new(n: usize) -> Self {
        Levels { count_ge: vec![n as u32], area: vec![0.0], last: vec![0.0], open: false }
    }

    #[inline]
    pub(super) fn change(&mut self, level: usize, up: bool, t: f64) {
        if level >= self.count_ge.len() {
            self.count_ge.push(0);
            self.area.push(0.0);
            self.last.push(t);
        }
        if self.open {
            self.area[level] += f64::from(self.count_ge[level]) * (t - self.last[level]);
            self.last[level] = t;
        }
        if up {
            self.count_ge[level] += 1;
        } else {
            self.count_ge[level] -= 1;
        }
    }

    pub(super) fn open(&mut self, t: f64) {
        self.open = true;
        self.last.iter_mut().for_each(|l| *l = t);
        self.area.iter_mut().for_each(|a| *a = 0.0);
    }

    pub(super) fn close(&mut self, t: f64) {
        if !self.open {
            return;
        }
        for ((a, &c), l) in self.area.iter_mut().zip(&self.count_ge).zip(&self.last) {
            *a += f64::from(c) * (t - l);
        }
        self.open = false;
    }
}

/// What the measured sojourns of a replication, or of one of its classes, add up to beyond
/// their counts: their histogram, their sums over the two halves of the measured window (by
/// arrival index; the whole sum is their total), and their range. The sums are
/// order-independent ([`FixedSum`]), so servers may record their departures in any order.
#[derive(Debug)]
pub(super) struct Measured {
    latencies: LatencyRecorder,
    halves: [FixedSum; 2],
    lo: f64,
    hi: f64,
}

impl Measured {
    pub(super) fn new() -> Self {
        Measured {
            latencies: LatencyHistogram::recorder(),
            halves: [FixedSum::default(); 2],
            lo: f64::INFINITY,
            hi: f64::NEG_INFINITY,
        }
    }

    /// A measured request left after `sojourn`; it arrived in the window's `second` half.
    #[inline(always)]
    pub(super) fn record(&mut self, stats: &mut RepStats, sojourn: f64, second: bool) {
        stats.requests += 1;
        self.latencies.record(sojourn);
        self.lo = self.lo.min(sojourn);
        self.hi = self.hi.max(sojourn);
        self.halves[usize::from(second)].add(sojourn);
        let half = if second { &mut stats.second_half } else { &mut stats.first_half };
        half.0 += 1;
    }

    /// Writes the histogram, the sums and the range into `stats`.
    pub(super) fn finish(&self, stats: &mut RepStats) {
        self.latencies.finish(&mut stats.hist);
        let mut sum = self.halves[0];
        sum.merge(self.halves[1]);
        stats.sum = sum.value();
        stats.first_half.1 = self.halves[0].value();
        stats.second_half.1 = self.halves[1].value();
        stats.range = (stats.requests > 0).then_some((self.lo, self.hi));
    }
}

/// The measurements of one replication in progress.
pub(super) struct Recorder {
    /// What is reported at the end.
    pub(super) stats: RepStats,
    series: SeriesRecorder,
    measured: Measured,
    levels: Option<Levels>,
    len: RunLength,
    mid: u64,
    servers: usize,
    t_first: f64,
    /// What this replication has added to [`ARRIVALS`].
    counted: u64,
}

impl Recorder {
    /// Measures a run of `len` on `servers` servers; `track_levels` keeps the levels of `fixed`.
    pub(super) fn new(servers: usize, len: RunLength, track_levels: bool) -> Self {
        Recorder {
            stats: RepStats { picks: vec![0; servers], warmup: len.warmup, ..RepStats::default() },
            series: SeriesRecorder::new(),
            measured: Measured::new(),
            levels: track_levels.then(|| Levels::new(servers)),
            len,
            mid: len.warmup + len.requests / 2,
            servers,
            t_first: f64::INFINITY,
            counted: 0,
        }
    }

    /// Adds a chunk of arrivals to [`ARRIVALS`] (out of the loop's way).
    #[cold]
    #[inline(never)]
    fn count_chunk(&mut self) {
        ARRIVALS.fetch_add(ARRIVALS_CHUNK, Ordering::Relaxed);
        self.counted += ARRIVALS_CHUNK;
        crate::cancel::cancel_point();
    }

    /// Arrival number `arrived` (0-based) at `t`, before it is dispatched: opens the measured
    /// window at the end of the warm-up (its queues' maximum from `longest`).
    #[inline]
    pub(super) fn arriving(&mut self, arrived: u64, t: f64, longest: impl FnOnce() -> u32) {
        if arrived == self.len.warmup {
            self.t_first = t;
            self.stats.max_queue = longest();
            if let Some(l) = &mut self.levels {
                l.open(t);
            }
        }
        self.series.arrival(arrived);
        if arrived & (ARRIVALS_CHUNK - 1) == ARRIVALS_CHUNK - 1 {
            self.count_chunk();
        }
    }

    /// Arrival `arrived` joined server `s`, whose queue is now `qlen` long.
    #[inline]
    pub(super) fn joined(&mut self, arrived: u64, s: usize, qlen: u32, t: f64) {
        if let Some(l) = &mut self.levels {
            l.change(qlen as usize, true, t);
        }
        if arrived >= self.len.warmup {
            self.stats.max_queue = self.stats.max_queue.max(qlen);
            self.stats.picks[s] += 1;
        }
    }

    /// Asks for server `s`'s pick count to be brought into the cache (it is about to join).
    #[inline(always)]
    pub(super) fn prefetch_picks(&self, s: usize) {
        crate::cache::prefetch(&self.stats.picks[s]);
    }

    /// The queue guard: true (and the replication marked stopped) when `qlen` exceeds `guard`.
    #[inline]
    pub(super) fn guard(&mut self, qlen: u32, guard: u32, t: f64) -> bool {
        if qlen <= guard {
            return false;
        }
        self.stats.max_queue = self.stats.max_queue.max(qlen);
        self.stats.stops = 1;
        self.stats.stopped = Some(StopReason::Queue { guard, t });
        true
    }

    /// A client's backlog holds `held` requests at `t`: true (and the replication stops) if
    /// that is more than `guard`.
    pub(super) fn guard_backlog(&mut self, held: usize, guard: u32, t: f64) -> bool {
        if held <= guard as usize {
            return false;
        }
        self.stats.stops = 1;
        self.stats.stopped = Some(StopReason::Backlog { guard, t });
        true
    }

    /// The last arrival was at `t`: closes the measured window.
    pub(super) fn arrivals_end(&mut self, t: f64) {
        self.stats.server_time = self.servers as f64 * (t - self.t_first);
        self.stats.window = self.t_first.is_finite().then_some((self.t_first, t));
        if let Some(l) = &mut self.levels {
            l.close(t);
        }
    }

    /// The request that arrived `index`-th left at `t` after `sojourn`, from a server that held
    /// `qlen` requests with it.
    ///
    /// Whether it is measured, and in which half, is decided by its index, as everywhere else
    /// (the series, the picks, the queue maxima): by arrival time, a warm-up request that arrived
    /// at the same instant as the first measured one would be counted too.
    #[inline(always)]
    pub(super) fn departed(&mut self, index: u64, sojourn: f64, qlen: u32, t: f64) {
        self.series.record(index, sojourn);
        if index >= self.len.warmup {
            self.measured.record(&mut self.stats, sojourn, index >= self.mid);
        }
        if let Some(l) = &mut self.levels {
            l.change(qlen as usize, false, t);
        }
    }

    /// Request `index`, which joined servers that count their departures and will leave after
    /// `sojourn`: recorded, and counted as an event, as its departure event would have been (no
    /// level is tracked then, so the departure's time is not needed).
    #[inline(always)]
    pub(super) fn counted_departure(&mut self, index: u64, sojourn: f64) {
        self.stats.events += 1;
        self.departed(index, sojourn, 0, 0.0);
    }

    /// The replication's statistics.
    pub(super) fn finish(mut self) -> RepStats {
        if let Some(l) = &self.levels {
            self.stats.level_area.clone_from(&l.area);
        }
        self.measured.finish(&mut self.stats);
        self.stats.series = self.series.finish();
        let planned = self.len.warmup + self.len.requests;
        ARRIVALS.fetch_add(planned.saturating_sub(self.counted), Ordering::Relaxed);
        self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A replication adds a chunk to the shared count every [`ARRIVALS_CHUNK`] arrivals, and the
    /// rest of its planned arrivals when it ends. Other tests add to the count concurrently, so
    /// only what this recorder says it added is compared exactly, the shared count from below.
    #[test]
    fn a_replication_counts_its_arrivals_as_it_goes_and_all_of_them_at_the_end() {
        let len = RunLength { warmup: 10, requests: 3 * ARRIVALS_CHUNK + 5 };
        let before = ARRIVALS.load(Ordering::Relaxed);
        let mut r = Recorder::new(1, len, false);
        for i in 0..2 * ARRIVALS_CHUNK {
            r.arriving(i, i as f64, || 0);
        }
        assert_eq!(r.counted, 2 * ARRIVALS_CHUNK, "one chunk per 2^16 arrivals");
        assert!(ARRIVALS.load(Ordering::Relaxed) - before >= 2 * ARRIVALS_CHUNK);
        r.finish();
        assert!(ARRIVALS.load(Ordering::Relaxed) - before >= len.warmup + len.requests);
    }
}

//! Traffic classes in a replication (SPEC §13): each arrival's class, drawn from a stream of its
//! own, its demand from its class's law, and what each class measured.
//!
//! This state exists only when the farm has classes: it lives in the [`On`](super::parts::On)
//! parts, so a replication without classes neither draws nor records anything for them (its
//! workload stream, and every number it prints, are those of a run before classes existed).

use rand::RngExt;

use crate::model::{Classes, RunLength};
use crate::rng::{SimRng, StreamKey};
use crate::stats::{FixedSum, LatencyRecorder, RepStats};
use crate::workload::Service;

/// What one class measured so far.
#[derive(Debug, Default)]
struct ClassRecord {
    stats: RepStats,
    latencies: LatencyRecorder,
    /// The sojourns' sum and its halves', summed as the pooled ones are.
    sum: FixedSum,
    halves: [FixedSum; 2],
    lo: f64,
    hi: f64,
}

/// The classes of a replication: the class stream, the laws, and the per-class records.
#[derive(Debug)]
pub(super) struct ClassState {
    /// The class of each arrival is drawn from this stream alone.
    rng: SimRng,
    /// Cumulative shares, the last exactly 1.
    cum: Vec<f64>,
    /// Each class's own service law (`None`: the scenario's).
    laws: Vec<Option<Service>>,
    records: Vec<ClassRecord>,
    warmup: u64,
    /// The first arrival index of the second half of the measured window.
    mid: u64,
}

impl ClassState {
    /// The classes of a replication of `len`; their stream is seeded from `seed` (a draw of
    /// a copy of the workload stream) under its own name.
    pub(super) fn new(classes: &Classes, len: RunLength, seed: u64) -> Self {
        let records = classes
            .classes
            .iter()
            .map(|_| ClassRecord {
                lo: f64::INFINITY,
                hi: f64::NEG_INFINITY,
                ..ClassRecord::default()
            })
            .collect();
        ClassState {
            rng: StreamKey::new(seed, "classes").rng(),
            cum: classes.cumulative(),
            laws: classes.classes.iter().map(|c| c.service.clone()).collect(),
            records,
            warmup: len.warmup,
            mid: len.warmup + len.requests / 2,
        }
    }

    /// The next arrival's class (one uniform draw of the class stream).
    #[inline]
    pub(super) fn draw(&mut self) -> u32 {
        let u: f64 = self.rng.random();
        self.cum.iter().position(|&c| u < c).unwrap_or(self.cum.len() - 1) as u32
    }

    /// Class `k`'s own service law, if it has one.
    #[inline]
    pub(super) fn law(&self, k: u32) -> Option<&Service> {
        self.laws[k as usize].as_ref()
    }

    /// The request that arrived `index`-th, of class `k`, left after `sojourn` (with the request
    /// lifecycle: was answered, `sojourn` after it arrived).
    #[inline]
    pub(super) fn left(&mut self, k: u32, index: u64, sojourn: f64) {
        if index < self.warmup {
            return;
        }
        let r = &mut self.records[k as usize];
        r.stats.requests += 1;
        r.sum.add(sojourn);
        r.latencies.record(sojourn);
        r.lo = r.lo.min(sojourn);
        r.hi = r.hi.max(sojourn);
        let second = index >= self.mid;
        r.halves[usize::from(second)].add(sojourn);
        let half = if second { &mut r.stats.second_half } else { &mut r.stats.first_half };
        half.0 += 1;
    }

    /// Each class's statistics, in class order.
    pub(super) fn finish(self) -> Vec<RepStats> {
        self.records
            .into_iter()
            .map(|mut r| {
                r.latencies.finish(&mut r.stats.hist);
                r.stats.sum = r.sum.value();
                r.stats.first_half.1 = r.halves[0].value();
                r.stats.second_half.1 = r.halves[1].value();
                r.stats.range = (r.stats.requests > 0).then_some((r.lo, r.hi));
                r.stats
            })
            .collect()
    }
}

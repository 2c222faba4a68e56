//! Traffic classes in a replication (SPEC §13): each arrival's class, drawn from a stream of its
//! own, its demand from its class's law, and what each class measured.
//!
//! This state exists only when the farm has classes: it lives in the [`On`](super::parts::On)
//! parts, so a replication without classes neither draws nor records anything for them (its
//! workload stream, and every number it prints, are those of a run before classes existed).

use rand::RngExt;

use super::record::Measured;
use crate::model::{Classes, RunLength};
use crate::rng::{SimRng, StreamKey};
use crate::stats::RepStats;
use crate::workload::Service;

/// What one class measured so far.
#[derive(Debug)]
struct ClassRecord {
    stats: RepStats,
    measured: Measured,
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
            .map(|_| ClassRecord { stats: RepStats::default(), measured: Measured::new() })
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
        r.measured.record(&mut r.stats, sojourn, index >= self.mid);
    }

    /// Each class's statistics, in class order.
    pub(super) fn finish(self) -> Vec<RepStats> {
        self.records
            .into_iter()
            .map(|mut r| {
                r.measured.finish(&mut r.stats);
                r.stats
            })
            .collect()
    }
}

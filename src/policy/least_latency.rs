//! `least-latency`: the lower EWMA latency of two random servers.
//!
//! The steering of NGINX Plus `least_time` and of Linkerd's latency-aware balancing, reduced to
//! latency alone: each server keeps an exponentially weighted moving average of the response
//! times its requests saw, and a pick samples two distinct servers and takes the lower average
//! (the first sampled on a tie). The average is time-decayed as Finagle's and tower's EWMA
//! (`tower/src/load/peak_ewma.rs` without the peak and without the pending-request factor): a
//! response `x` observed `Δ` after the previous one moves the estimate `e` to
//! `e·w + x·(1 − w)` with `w = e^(−Δ/τ)`. The estimate changes only when a response comes back,
//! so a server that stopped receiving traffic keeps the estimate it had: what it costs to steer
//! by latency without probes (a recovered server wins traffic back only through the draws in
//! which it meets another server with a worse estimate).

use super::{Policy, two_distinct};
use crate::engine::SimTime;
use crate::model::LoadTable;
use crate::rng::SimRng;

/// P2C on EWMA latency.
#[derive(Debug, Clone)]
pub struct LeastLatency {
    /// Per server: the estimate and when it was last updated.
    est: Vec<(f64, f64)>,
    tau: f64,
}

impl LeastLatency {
    /// Over `n >= 2` servers, every estimate 1.0 (the mean service time) at time 0.
    pub fn new(n: usize, tau: f64) -> Self {
        assert!(n >= 2 && tau > 0.0);
        LeastLatency { est: vec![(1.0, 0.0); n], tau }
    }

    /// Server `s`'s estimate.
    pub fn estimate(&self, s: usize) -> f64 {
        self.est[s].0
    }
}

impl Policy for LeastLatency {
    #[inline]
    fn pick(&mut self, _loads: &LoadTable, _now: SimTime, rng: &mut SimRng) -> usize {
        let (a, b) = two_distinct(rng, self.est.len());
        if self.est[b].0 < self.est[a].0 { b } else { a }
    }

    #[inline]
    fn on_departure(&mut self, server: usize, sojourn: f64, now: SimTime, _tag: u32) {
        let (e, at) = &mut self.est[server];
        let w = (-(now.get() - *at).max(0.0) / self.tau).exp();
        *e = *e * w + sojourn * (1.0 - w);
        *at = now.get();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn responses_blend_with_the_time_decay() {
        let mut p = LeastLatency::new(2, 10.0);
        p.on_departure(0, 3.0, SimTime::new(10.0), 0);
        let w = (-1.0f64).exp();
        assert_eq!(p.estimate(0), w + 3.0 * (1.0 - w));
        // A second response at the same instant has weight 0.
        let e = p.estimate(0);
        p.on_departure(0, 100.0, SimTime::new(10.0), 0);
        assert_eq!(p.estimate(0), e);
        assert_eq!(p.estimate(1), 1.0, "untouched");
    }

    #[test]
    fn the_lower_estimate_of_the_two_wins_whatever_the_queues() {
        let mut p = LeastLatency::new(2, 10.0);
        p.on_departure(1, 5.0, SimTime::new(50.0), 0);
        let loads = LoadTable::from_values(&[9, 0], false);
        let mut rng = SimRng::seed_from_u64(3);
        assert!((0..100).all(|_| p.pick(&loads, SimTime::new(50.0), &mut rng) == 0));
    }
}

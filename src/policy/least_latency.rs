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
//!
//! With some hosts excluded the two are drawn among the allowed hosts ([`P2c::set_hosts`]); an
//! excluded server keeps its estimate.

use super::Policy;
use super::ewma::Ewma;
use super::load::{Cost, Load};
use super::p2c::{Distinct, P2c};
use crate::model::LoadTable;
use crate::rng::SimRng;
use crate::time::SimTime;

/// Every server's time-decayed EWMA of the response times its requests saw.
#[derive(Debug, Clone)]
pub struct EwmaLatency {
    est: Vec<Ewma>,
    tau: f64,
}

impl EwmaLatency {
    /// Over `n` servers, every estimate 1.0 (the mean service time) at time 0.
    pub fn new(n: usize, tau: f64) -> Self {
        assert!(tau > 0.0);
        EwmaLatency { est: vec![Ewma::new(1.0, 0.0); n], tau }
    }
}

impl Load for EwmaLatency {
    type Metric = Cost;

    /// The estimate as it stands (reading does not decay it).
    #[inline]
    fn load(&mut self, server: usize, _: &LoadTable, _: SimTime) -> Cost {
        Cost(self.est[server].get())
    }
}

/// P2C on EWMA latency.
#[derive(Debug, Clone)]
pub struct LeastLatency(P2c<EwmaLatency, Distinct<2>>);

impl LeastLatency {
    /// Over `n >= 2` servers, every estimate 1.0 (the mean service time) at time 0.
    pub fn new(n: usize, tau: f64) -> Self {
        assert!(n >= 2 && tau > 0.0);
        LeastLatency(P2c::new(n, Distinct::new(2), EwmaLatency::new(n, tau)))
    }

    /// Server `s`'s estimate.
    pub fn estimate(&self, s: usize) -> f64 {
        self.0.load().est[s].get()
    }
}

impl Policy for LeastLatency {
    #[inline]
    fn pick(&mut self, loads: &LoadTable, now: SimTime, rng: &mut SimRng) -> usize {
        self.0.pick(loads, now, rng)
    }

    fn set_hosts(&mut self, _client: u32, hosts: Option<&[u32]>) {
        self.0.set_hosts(hosts);
    }

    #[inline]
    fn on_departure(&mut self, server: usize, sojourn: f64, now: SimTime, _tag: u32) {
        let latency = self.0.load_mut();
        latency.est[server].observe(sojourn, now.get(), latency.tau);
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

//! `p2c-pewma`: P2C on tower's Peak-EWMA cost.
//!
//! tower 0.4.13 `tower/src/load/peak_ewma.rs` (after Finagle's `PeakEwma.scala`): each server keeps
//! an RTT estimate `r`. An observation slower than the estimate replaces it at once (the *peak*);
//! a faster one is blended in with weight `1 - e^(-Δ/τ)`, Δ the time since the estimate was last
//! updated. Reading the load first applies the same update with an observation of 0, so the
//! estimate of a server that has not answered for a while decays toward zero. The cost is
//! `r * (pending + 1)`; P2C samples two distinct servers and the lower cost wins, a tie going to the
//! first sampled. Here `pending` is the true queue length before the new request joins.
//!
//! With some hosts excluded the two are drawn among the allowed hosts ([`P2c::set_hosts`]); the
//! estimates of excluded servers are kept (tower keeps an endpoint's `PeakEwma` with the
//! endpoint) and decay when next read.

use super::ewma::Ewma;
use super::load::{Cost, Load};
use super::p2c::{Distinct, P2c};
use super::{Ahead, Policy};
use crate::model::LoadTable;
use crate::rng::SimRng;
use crate::time::SimTime;

/// One server's Peak-EWMA RTT estimate (tower's `RttEstimate`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RttEstimate(Ewma);

impl RttEstimate {
    /// An estimate of `rtt` made at time `at`.
    pub fn new(rtt: f64, at: f64) -> Self {
        RttEstimate(Ewma::new(rtt, at))
    }

    /// The current estimate.
    pub fn get(&self) -> f64 {
        self.0.get()
    }

    /// Folds in an observation `rtt` made at `now` with decay time constant `tau`.
    #[inline]
    pub fn update(&mut self, rtt: f64, now: f64, tau: f64) -> f64 {
        self.0.observe_peak(rtt, now, tau)
    }
}

/// The Peak-EWMA cost of every server: its RTT estimate times its requests plus one.
#[derive(Debug, Clone)]
pub struct PeakEwma {
    est: Vec<RttEstimate>,
    tau: f64,
}

impl PeakEwma {
    /// Over `n` servers, every estimate 1.0 at time 0, decay constant `tau > 0`.
    pub fn new(n: usize, tau: f64) -> Self {
        assert!(tau > 0.0);
        PeakEwma { est: vec![RttEstimate::new(1.0, 0.0); n], tau }
    }

    /// A response from `server` took `rtt`, observed at `now`.
    #[inline]
    pub fn observe(&mut self, server: usize, rtt: f64, now: f64) {
        self.est[server].update(rtt, now, self.tau);
    }
}

impl Load for PeakEwma {
    type Metric = Cost;

    /// Reading decays the estimate (an observation of 0 at `now`), as tower's `load()` does.
    #[inline]
    fn load(&mut self, server: usize, loads: &LoadTable, now: SimTime) -> Cost {
        let rtt = self.est[server].update(0.0, now.get(), self.tau);
        Cost(rtt * (f64::from(loads.get(server)) + 1.0))
    }

    #[inline(always)]
    fn prefetch(&self, server: usize) {
        crate::cache::prefetch(&self.est[server]);
    }
}

/// P2C + Peak EWMA.
#[derive(Debug, Clone)]
pub struct P2cPeakEwma(P2c<PeakEwma, Distinct<2>>);

impl P2cPeakEwma {
    /// Over `n >= 2` servers, every estimate 1.0 at time 0, decay constant `tau > 0`.
    pub fn new(n: usize, tau: f64) -> Self {
        assert!(n >= 2 && tau > 0.0);
        P2cPeakEwma(P2c::new(n, Distinct::new(2), PeakEwma::new(n, tau)))
    }
}

impl Policy for P2cPeakEwma {
    #[inline]
    fn pick(&mut self, loads: &LoadTable, now: SimTime, rng: &mut SimRng) -> usize {
        self.0.pick(loads, now, rng)
    }

    #[inline(always)]
    fn ahead(&mut self, rng: &mut SimRng) -> Ahead {
        self.0.ahead(rng)
    }

    #[inline(always)]
    fn prefetch(&self, server: usize) {
        self.0.load().prefetch(server);
    }

    fn set_hosts(&mut self, _client: u32, hosts: Option<&[u32]>) {
        self.0.set_hosts(hosts);
    }

    #[inline]
    fn on_departure(&mut self, server: usize, sojourn: f64, now: SimTime, _tag: u32) {
        self.0.load_mut().observe(server, sojourn, now.get());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slower_observation_replaces_the_estimate() {
        let mut e = RttEstimate::new(1.0, 0.0);
        assert_eq!(e.update(3.5, 2.0, 10.0), 3.5);
        assert_eq!(e, RttEstimate::new(3.5, 2.0));
    }

    #[test]
    fn a_faster_observation_is_blended_with_the_decay() {
        let mut e = RttEstimate::new(4.0, 1.0);
        let got = e.update(2.0, 6.0, 10.0);
        let decay = (-0.5f64).exp();
        assert_eq!(got, 4.0 * decay + 2.0 * (1.0 - decay));
        assert_eq!(e.0.at(), 6.0);
    }

    #[test]
    fn an_equal_observation_is_not_a_peak() {
        // tower compares `self.rtt_ns < rtt`: equal goes through the blend, which keeps it equal.
        let mut e = RttEstimate::new(2.0, 0.0);
        assert_eq!(e.update(2.0, 5.0, 10.0), 2.0);
        assert_eq!(e.0.at(), 5.0);
    }

    #[test]
    fn reading_decays_toward_zero_and_resets_the_clock() {
        let mut e = RttEstimate::new(8.0, 0.0);
        // Reading at t = 10 with tau = 10: 8 e^-1.
        assert_eq!(e.update(0.0, 10.0, 10.0), 8.0 * (-1.0f64).exp());
        // A second read at the same instant changes nothing (Δ = 0).
        let v = e.get();
        assert_eq!(e.update(0.0, 10.0, 10.0), v);
        // Compound decay: two reads 5 apart equal one read 10 apart.
        let mut a = RttEstimate::new(8.0, 0.0);
        a.update(0.0, 5.0, 10.0);
        a.update(0.0, 10.0, 10.0);
        assert!((a.get() - 8.0 * (-1.0f64).exp()).abs() < 1e-12);
    }

    #[test]
    fn lower_cost_wins_and_pending_counts() {
        // Equal estimates: the cost is (queue + 1), so the shorter queue wins.
        let t = LoadTable::from_values(&[5, 0], false);
        let mut p = P2cPeakEwma::new(2, 10.0);
        let mut rng = <SimRng as rand::SeedableRng>::seed_from_u64(1);
        assert!((0..100).all(|_| p.pick(&t, SimTime::ZERO, &mut rng) == 1));
        // A large RTT on server 1 outweighs its shorter queue: 1.0 * 6 < 10.0 * 1.
        p.on_departure(1, 10.0, SimTime::ZERO, 0);
        assert!((0..100).all(|_| p.pick(&t, SimTime::ZERO, &mut rng) == 0));
    }

    #[test]
    fn ahead_names_the_two_servers_the_pick_compares() {
        // Loads all distinct, so the pick is one of the two it compares and (with equal
        // estimates) the less loaded; `ahead` on a copy of the stream names both, and leaves the
        // copy where the pick leaves the stream.
        let n = 9;
        let vals: Vec<u32> = (0..n).map(|i| (7 * i as u32) % 11).collect();
        let t = LoadTable::from_values(&vals, false);
        let mut p = P2cPeakEwma::new(n, 10.0);
        let mut rng = <SimRng as rand::SeedableRng>::seed_from_u64(3);
        let mut lead = rng.clone();
        for _ in 0..2000 {
            let named = p.ahead(&mut lead).servers().to_vec();
            let chosen = p.pick(&t, SimTime::ZERO, &mut rng) as u32;
            assert_eq!(named.len(), 2);
            assert_ne!(named[0], named[1]);
            let other = if named[0] == chosen { named[1] } else { named[0] };
            assert!(named.contains(&chosen), "{chosen} not in {named:?}");
            assert!(vals[chosen as usize] < vals[other as usize]);
            assert!(lead == rng, "the copy is where the pick left the stream");
        }
    }
}

//! `random`: a random server, reading no load at all: uniform, or with `weighted=true` in
//! proportion to the servers' rates (every server then at the same utilisation).
//!
//! With some hosts excluded ([`Policy::set_hosts`]) it draws among the allowed ones only, as
//! Envoy's random balancer draws from the host set it is given (`RandomLoadBalancer::peekOrChoose`
//! in `source/extensions/load_balancing_policies/random/random_lb.cc`: `hosts_to_use[random %
//! hosts_to_use.size()]`): uniformly over them, or, weighted, in proportion to their rates (the
//! alias table rebuilt over the allowed hosts).

use rand::RngExt;
use rand_distr::weighted::WeightedAliasIndex;

use super::tuning::{flag, params};
use super::{Ahead, Hosts, Policy};
use crate::model::LoadTable;
use crate::rng::SimRng;
use crate::time::SimTime;

params! {
    /// The parameters of `random`.
    #[derive(Default)]
    pub struct RandomParams {
        /// Draw servers in proportion to their rates (default false: uniform).
        #[serde(deserialize_with = "flag")]
        pub weighted: bool,
    }
}

/// Random choice: uniform, or weighted by rate.
#[derive(Debug, Clone)]
pub struct Random {
    n: usize,
    /// `weighted=true`: Walker's alias table over the rates of the allowed hosts (Vose's
    /// construction, as `rand_distr::weighted::WeightedAliasIndex` builds it), one draw in O(1).
    weights: Option<WeightedAliasIndex<f64>>,
    /// The servers' rates (`weighted=true` only: to rebuild the table).
    rates: Vec<f64>,
    hosts: Hosts,
}

impl Random {
    /// Uniform over `n` servers.
    pub fn new(n: usize) -> Self {
        Random { n, weights: None, rates: Vec::new(), hosts: Hosts::all() }
    }

    /// Over servers of these rates: in proportion to them when `weighted`, else uniform.
    pub fn with_rates(rates: &[f64], weighted: bool) -> Self {
        let weights = weighted
            .then(|| WeightedAliasIndex::new(rates.to_vec()).expect("positive, finite rates"));
        let kept = if weighted { rates.to_vec() } else { Vec::new() };
        Random { n: rates.len(), weights, rates: kept, hosts: Hosts::all() }
    }
}

impl Random {
    /// The server of a pick: uniform, or by the alias table, over the allowed hosts.
    #[inline(always)]
    fn draw(&self, rng: &mut SimRng) -> usize {
        match &self.weights {
            None => self.hosts.uniform(rng, self.n),
            Some(w) => self.hosts.at(rng.sample(w)),
        }
    }
}

impl Policy for Random {
    const READS_LENGTHS_ONLY: bool = true;

    #[inline]
    fn pick(&mut self, _: &LoadTable, _: SimTime, rng: &mut SimRng) -> usize {
        self.draw(rng)
    }

    /// The pick itself: it reads no load.
    #[inline(always)]
    fn ahead(&mut self, rng: &mut SimRng) -> Ahead {
        let mut out = Ahead::default();
        out.push(self.draw(rng));
        out
    }

    fn set_hosts(&mut self, _client: u32, hosts: Option<&[u32]>) {
        self.hosts.set(hosts);
        if self.weights.is_some() {
            let rates = self.hosts.iter(self.n).map(|h| self.rates[h]).collect();
            self.weights = Some(WeightedAliasIndex::new(rates).expect("positive, finite rates"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::uniform;
    use crate::rng::StreamKey;

    #[test]
    fn weighted_draws_follow_the_rates() {
        // 4e5 draws over rates 1, 2, 5: each count is binomial, within 5 standard deviations
        // (sqrt(n p (1 - p)) <= 316) of n p.
        let rates = [1.0, 2.0, 5.0];
        let mut p = Random::with_rates(&rates, true);
        let table = LoadTable::new(3, false);
        let mut rng = StreamKey::new(3, "weighted-random").rng();
        let n = 400_000;
        let mut counts = [0u64; 3];
        for _ in 0..n {
            counts[p.pick(&table, SimTime::ZERO, &mut rng)] += 1;
        }
        for (i, &c) in counts.iter().enumerate() {
            let share = rates[i] / 8.0;
            let sd = (n as f64 * share * (1.0 - share)).sqrt();
            assert!((c as f64 - n as f64 * share).abs() < 5.0 * sd, "server {i}: {counts:?}");
        }
        // Unweighted, it is exactly `uniform`, and `ahead` names the pick from the same draw;
        // weighted, `ahead` names nothing.
        let mut u = Random::with_rates(&rates, false);
        let (mut a, mut b, mut lead) = (rng.clone(), rng.clone(), rng.clone());
        for _ in 0..1000 {
            let named = u.ahead(&mut lead);
            let got = u.pick(&table, SimTime::ZERO, &mut a);
            assert_eq!(got, uniform(&mut b, 3));
            assert_eq!(named.servers(), [got as u32]);
        }
        assert!(lead == a);
        // Weighted, it names the pick from the same draws too.
        let mut lead = rng.clone();
        for _ in 0..1000 {
            let named = p.ahead(&mut lead);
            assert_eq!(named.servers(), [p.pick(&table, SimTime::ZERO, &mut rng) as u32]);
        }
        assert!(lead == rng);
    }
}

//! `random-two`: NGINX's `random two least_conn`.
//!
//! Follows `ngx_http_upstream_get_random2_peer` and `ngx_http_upstream_peek_random_peer` in
//! `src/http/modules/ngx_http_upstream_random_module.c` (nginx/nginx):
//!
//! - a draw is `x = ngx_random() % total_weight`, then a binary search of the peers' cumulative
//!   weight ranges: a peer is drawn with probability `weight / total_weight`;
//! - the first acceptable draw is kept as `prev`; a later draw equal to `prev` is skipped and
//!   drawn again; the second distinct peer `peer` is chosen unless
//!   `peer->conns * prev->weight > prev->conns * peer->weight`, in which case `prev` is (so ties
//!   go to the second);
//! - every skipped draw counts a try, and after more than 20 (`++rp->tries > 20`) NGINX gives up
//!   and falls back to its weighted round robin (`ngx_http_upstream_get_round_robin_peer`):
//!   lbsim does too, with [`SmoothWrr`](super::SmoothWrr). It matters only on tiny farms (two
//!   equal peers repeat a draw 20 times with probability 2^-20).
//!
//! Weights are the servers' rates scaled to the smallest integers, as NGINX's `weight=`.
//! Connections are what the client sees: its own in flight with local information, the true
//! queue lengths otherwise.
//!
//! With some hosts excluded ([`Policy::set_hosts`]) both draws are among the allowed peers, in
//! proportion to their weights (the ranges rebuilt over them), and the round-robin fallback runs
//! over them too: NGINX draws again when the peer drawn is `down` or has failed `max_fails`
//! times (the `peer->down` and `max_fails` tests after `ngx_http_upstream_peek_random_peer`),
//! which gives the same distribution. With one allowed peer there is no second to compare:
//! that peer is picked.

use super::{Hosts, Policy, SmoothWrr, uniform};
use crate::model::LoadTable;
use crate::rng::SimRng;
use crate::time::SimTime;

/// Skipped draws after which NGINX falls back to round robin.
const MAX_TRIES: u32 = 20;

/// NGINX random two least_conn (see the module documentation).
#[derive(Debug, Clone)]
pub struct RandomTwo {
    /// Every server's weight.
    all: Vec<u64>,
    /// The allowed servers' weights, in the order of `hosts`.
    weights: Vec<u64>,
    /// `ranges[i]`: the sum of the weights before peer `i`.
    ranges: Vec<u64>,
    total: u64,
    fallback: SmoothWrr,
    hosts: Hosts,
}

impl RandomTwo {
    /// Over servers of integer weights `weights` (at least two servers).
    pub fn new(weights: &[u64]) -> Self {
        let mut ranges = Vec::with_capacity(weights.len());
        let mut total = 0;
        for &w in weights {
            ranges.push(total);
            total += w;
        }
        RandomTwo {
            all: weights.to_vec(),
            weights: weights.to_vec(),
            ranges,
            total,
            fallback: SmoothWrr::new(weights),
            hosts: Hosts::all(),
        }
    }

    /// `ngx_http_upstream_peek_random_peer`: a peer in proportion to its weight.
    #[inline]
    fn peek(&self, rng: &mut SimRng) -> usize {
        let x = if self.total <= u64::from(u32::MAX) {
            uniform(rng, self.total as usize) as u64
        } else {
            rand::RngExt::random_range(rng, 0..self.total)
        };
        // The last i with ranges[i] <= x.
        self.ranges.partition_point(|&r| r <= x) - 1
    }
}

impl Policy for RandomTwo {
    const READS_LENGTHS_ONLY: bool = true;

    #[inline]
    fn pick(&mut self, loads: &LoadTable, _: SimTime, rng: &mut SimRng) -> usize {
        if self.weights.len() == 1 {
            return self.hosts.at(0);
        }
        let prev = self.peek(rng);
        let mut tries = 0;
        loop {
            let peer = self.peek(rng);
            if peer != prev {
                let (s1, s2) = (self.hosts.at(prev), self.hosts.at(peer));
                let (c1, c2) = (u64::from(loads.get(s1)), u64::from(loads.get(s2)));
                let (w1, w2) = (self.weights[prev], self.weights[peer]);
                return if c2 * w1 > c1 * w2 { s1 } else { s2 };
            }
            tries += 1;
            if tries > MAX_TRIES {
                return self.hosts.at(self.fallback.step().0);
            }
        }
    }

    fn set_hosts(&mut self, _client: u32, hosts: Option<&[u32]>) {
        self.hosts.set(hosts);
        let weights: Vec<u64> = self.hosts.iter(self.all.len()).map(|s| self.all[s]).collect();
        let all = std::mem::take(&mut self.all);
        *self = RandomTwo { all, hosts: self.hosts.clone(), ..RandomTwo::new(&weights) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn draws_follow_the_weights() {
        // Weights 1, 2, 5: 80 000 draws; peer 2's count is Binomial(80 000, 5/8), sd 136.9;
        // 5 sd = 685. Peer 0's: Binomial(80 000, 1/8), sd 93.5; 5 sd = 468.
        let p = RandomTwo::new(&[1, 2, 5]);
        let mut rng = SimRng::seed_from_u64(1);
        let mut counts = [0u32; 3];
        for _ in 0..80_000 {
            counts[p.peek(&mut rng)] += 1;
        }
        assert!((f64::from(counts[2]) - 50_000.0).abs() < 685.0, "{counts:?}");
        assert!((f64::from(counts[0]) - 10_000.0).abs() < 468.0, "{counts:?}");
    }

    #[test]
    fn keeps_the_second_unless_it_has_more_connections_per_weight() {
        let mut p = RandomTwo::new(&[1, 1]);
        let mut rng = SimRng::seed_from_u64(2);
        // Equal loads: always the second draw, which is the peer the first draw was not.
        let loads = LoadTable::from_values(&[1, 1], false);
        for _ in 0..1000 {
            let mut probe = rng.clone();
            let first = p.peek(&mut probe);
            assert_eq!(p.pick(&loads, SimTime::ZERO, &mut rng), 1 - first);
        }
        // Server 0 busier: always server 1, whichever order they were drawn in.
        let loads = LoadTable::from_values(&[3, 1], false);
        assert!((0..1000).all(|_| p.pick(&loads, SimTime::ZERO, &mut rng) == 1));
        // Weighted: 4 conns at weight 4 (1 per weight) beat 2 at weight 1 (2 per weight) in
        // either order; servers 1 and 2 tie, and the second drawn wins. Each pick is checked
        // against the draws it makes (read from a copy of the stream).
        let mut p = RandomTwo::new(&[4, 1, 1]);
        let loads = LoadTable::from_values(&[4, 2, 2], false);
        for _ in 0..2000 {
            let mut probe = rng.clone();
            let first = p.peek(&mut probe);
            let draws: Vec<usize> = (0..=MAX_TRIES).map(|_| p.peek(&mut probe)).collect();
            let got = p.pick(&loads, SimTime::ZERO, &mut rng);
            let Some(&second) = draws.iter().find(|&&d| d != first) else { continue };
            let want = if first == 0 || second == 0 { 0 } else { second };
            assert_eq!(got, want, "draws {first} then {second}");
        }
    }

    #[test]
    fn twenty_repeated_draws_fall_back_to_weighted_round_robin() {
        // Weights 1000 and 1: server 0 is drawn again 20 times in a row with probability
        // 0.999^20 = 0.98, so nearly every pick is the fallback's, which ignores load: server 0
        // (1000 of every 1001 round-robin turns) although it is the busier one. Without the
        // fallback every pick with two distinct draws would go to idle server 1.
        let mut p = RandomTwo::new(&[1000, 1]);
        let loads = LoadTable::from_values(&[5, 0], false);
        let mut rng = SimRng::seed_from_u64(3);
        let busy = (0..1000).filter(|_| p.pick(&loads, SimTime::ZERO, &mut rng) == 0).count();
        assert!(busy > 900, "{busy} of 1000 picks went to the busy server");
    }
}

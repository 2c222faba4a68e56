//! `swrr`: NGINX's smooth weighted round robin.
//!
//! Maxim Dounin's commit 52327e0 ("Upstream: smooth weighted round-robin balancing.", 2012,
//! first in release 1.3.0), as in `ngx_http_upstream_get_peer()` of NGINX 1.26.2: at every pick each
//! server's `current += weight` and `total += weight`; the best is the largest `current` (strict `>`,
//! so the earlier server wins a tie); then `best.current -= total`. Over one cycle of `W = sum(w)`
//! picks each server is chosen exactly `w_i` times, spread out instead of in runs.
//!
//! In the simulation the cycle is computed once and replayed, so a pick is `O(1)` whatever the
//! number of servers; [`SmoothWrr`] is the step-by-step algorithm that produces it (and that
//! `lbsim swrr --trace` prints).
//!
//! With some hosts excluded ([`Policy::set_hosts`]) the cycle is rebuilt over the allowed
//! servers' weights, from every `current` at zero: NGINX's `ngx_http_upstream_get_peer` skips a
//! peer that is `down` or has failed `max_fails` times (`continue` before `current_weight +=
//! effective_weight`), so `total` sums the eligible peers' weights only and each eligible peer
//! gets its weight's share of theirs. (NGINX keeps the skipped peers' and the others'
//! `current_weight` across the change; restarting from zero gives the same shares over every
//! whole cycle.)

use super::{Hosts, Policy};
use crate::model::LoadTable;
use crate::rng::SimRng;
use crate::time::SimTime;

/// The NGINX algorithm, one pick at a time, with its state visible.
#[derive(Debug, Clone)]
pub struct SmoothWrr {
    weights: Vec<i64>,
    current: Vec<i64>,
}

impl SmoothWrr {
    /// Starts with every `current` at zero.
    pub fn new(weights: &[u64]) -> Self {
        SmoothWrr {
            weights: weights.iter().map(|&w| w as i64).collect(),
            current: vec![0; weights.len()],
        }
    }

    /// The current weights.
    pub fn current(&self) -> &[i64] {
        &self.current
    }

    /// One pick: returns the chosen server and the `current` vector after the `+= weight` step
    /// (the values that were compared).
    pub fn step(&mut self) -> (usize, Vec<i64>) {
        let mut total = 0;
        let mut best: Option<usize> = None;
        for i in 0..self.weights.len() {
            self.current[i] += self.weights[i];
            total += self.weights[i];
            if best.is_none_or(|b| self.current[i] > self.current[b]) {
                best = Some(i);
            }
        }
        let before = self.current.clone();
        let best = best.expect("at least one server");
        self.current[best] -= total;
        (best, before)
    }
}

/// `swrr` as a policy: replays one precomputed cycle of [`SmoothWrr`].
#[derive(Debug, Clone)]
pub struct Swrr {
    cycle: Vec<u32>,
    next: usize,
    /// Every server's weight (to rebuild the cycle).
    weights: Vec<u64>,
    /// The cycle over every server (kept to go back to it).
    full: Vec<u32>,
    hosts: Hosts,
}

/// Cycles longer than this are not precomputed; [`Swrr`] then runs the `O(n)` loop per pick.
const MAX_CYCLE: u64 = 1 << 22;

impl Swrr {
    /// Over servers with the given positive integer weights.
    pub fn new(weights: &[u64]) -> Self {
        let total: u64 = weights.iter().sum();
        assert!(total > 0 && total <= MAX_CYCLE, "cycle of {total} picks");
        let mut alg = SmoothWrr::new(weights);
        let cycle: Vec<u32> = (0..total).map(|_| alg.step().0 as u32).collect();
        let weights = weights.to_vec();
        Swrr { full: cycle.clone(), cycle, next: 0, weights, hosts: Hosts::all() }
    }
}

impl Policy for Swrr {
    const READS_LENGTHS_ONLY: bool = true;

    #[inline]
    fn pick(&mut self, _: &LoadTable, _: SimTime, _: &mut SimRng) -> usize {
        let i = self.cycle[self.next];
        self.next += 1;
        if self.next == self.cycle.len() {
            self.next = 0;
        }
        i as usize
    }

    fn set_hosts(&mut self, _client: u32, hosts: Option<&[u32]>) {
        self.hosts.set(hosts);
        self.next = 0;
        self.cycle = match self.hosts.allowed() {
            None => self.full.clone(),
            Some(h) => {
                let w: Vec<u64> = h.iter().map(|&s| self.weights[s as usize]).collect();
                let mut alg = SmoothWrr::new(&w);
                let total: u64 = w.iter().sum();
                (0..total).map(|_| h[alg.step().0]).collect()
            }
        };
    }
}

/// Weights proportional to `rates`, scaled to the smallest integers (rates 0.5 and 1 give 1 and 2).
///
/// Each rate is written as a fraction with a denominator up to 10^6 (exact for rates given with up
/// to six decimals), then the vector is divided by the gcd of the numerators.
pub fn integer_weights(rates: &[f64]) -> Vec<u64> {
    const SCALE: f64 = 1e6;
    let scaled: Vec<u64> = rates.iter().map(|&r| (r * SCALE).round().max(1.0) as u64).collect();
    let g = scaled.iter().fold(0, |g, &x| gcd(g, x));
    scaled.iter().map(|&x| x / g.max(1)).collect()
}

/// Largest cycle a weight vector may have for `swrr` to be used (see [`integer_weights`]).
pub const SWRR_MAX_CYCLE: u64 = MAX_CYCLE;

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 { a } else { gcd(b, a % b) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{RngExt, SeedableRng};

    #[test]
    fn nginx_trace_for_5_1_1() {
        let mut alg = SmoothWrr::new(&[5, 1, 1]);
        let steps: Vec<_> = (0..7).map(|_| alg.step()).collect();
        let names: String = steps.iter().map(|(i, _)| (b'a' + *i as u8) as char).collect();
        assert_eq!(names, "aabacaa");
        // Step 3 (1-based): b and c tie at 3; strict `>` keeps the earlier one.
        assert_eq!(steps[2].1, [1, 3, 3]);
        assert_eq!(steps[2].0, 1);
        assert_eq!(alg.current(), [0, 0, 0]);
    }

    #[test]
    fn one_cycle_gives_each_server_exactly_its_weight() {
        let mut rng = SimRng::seed_from_u64(12);
        for _ in 0..300 {
            let n = rng.random_range(1..9);
            let weights: Vec<u64> = (0..n).map(|_| rng.random_range(1..20)).collect();
            let total: u64 = weights.iter().sum();
            let mut alg = SmoothWrr::new(&weights);
            let mut picks = vec![0u64; n];
            for _ in 0..total {
                picks[alg.step().0] += 1;
            }
            assert_eq!(picks, weights);
            assert!(alg.current().iter().all(|&c| c == 0), "state returns to zero");
        }
    }

    #[test]
    fn policy_replays_the_algorithm() {
        let weights = [3, 1, 2];
        let mut alg = SmoothWrr::new(&weights);
        let mut p = Swrr::new(&weights);
        let t = LoadTable::new(3, false);
        let mut rng = SimRng::seed_from_u64(0);
        for _ in 0..50 {
            assert_eq!(p.pick(&t, SimTime::ZERO, &mut rng), alg.step().0);
        }
    }

    #[test]
    fn weights_from_rates() {
        assert_eq!(integer_weights(&[0.5, 0.5, 1.0]), [1, 1, 2]);
        assert_eq!(integer_weights(&[1.0, 1.0]), [1, 1]);
        assert_eq!(integer_weights(&[0.3, 0.2]), [3, 2]);
        assert_eq!(integer_weights(&[2.5]), [1]);
    }
}

//! Power of d choices: `pNc` (`p2c`, `p3c`, ...) and Envoy's `p2c-repl`.
//!
//! `pNc` samples N *distinct* servers uniformly at random and joins the one with the fewest
//! requests; a tie goes to the server sampled first. With fresh information the queue-length tail
//! of the supermarket model falls doubly exponentially, `s_i = lambda^((d^i - 1)/(d - 1))`
//! (Mitzenmacher, *The Power of Two Choices in Randomized Load Balancing*, IEEE TPDS 12(10), 2001;
//! Vvedenskaya, Dobrushin and Karpelevich, 1996).
//!
//! `p2c-repl` is Envoy v1.31.0's `LeastRequestLoadBalancer::unweightedHostPickNChoices`: two
//! independent samples *with replacement*; the first is the candidate and the second replaces it
//! only if its active-request count is strictly lower. With two hosts the same host is drawn twice
//! half the time, so the busier host is chosen 25% of the time (least_request.proto).
//!
//! Both draw their choices among the allowed hosts only ([`P2c::set_hosts`]).

use super::load::Requests;
use super::p2c::{Distinct, P2c, WithReplacement};
use super::{Ahead, Policy};
use crate::model::LoadTable;
use crate::rng::SimRng;
use crate::time::SimTime;

/// `d` distinct choices, shortest wins, tie to the first sampled. `D` fixes `d` at compile time
/// (the common 2 and 3); `D = 0` reads it from the value instead.
#[derive(Debug, Clone)]
pub struct PnC<const D: usize>(P2c<Requests, Distinct<D>>);

impl<const D: usize> PnC<D> {
    /// `D` choices among `n` servers (`2 <= D <= n`).
    pub fn new(n: usize) -> Self {
        Self::with_choices(n, D)
    }

    /// `d` choices among `n` servers (`1 <= d <= n`).
    pub fn with_choices(n: usize, d: usize) -> Self {
        assert!(d >= 1 && d <= n, "{d} distinct choices need at least {d} servers, got {n}");
        PnC(P2c::new(n, Distinct::new(d), Requests))
    }
}

impl<const D: usize> Policy for PnC<D> {
    const READS_LENGTHS_ONLY: bool = true;

    #[inline(always)]
    fn pick(&mut self, loads: &LoadTable, now: SimTime, rng: &mut SimRng) -> usize {
        self.0.pick(loads, now, rng)
    }

    #[inline(always)]
    fn ahead(&mut self, rng: &mut SimRng) -> Ahead {
        self.0.ahead(rng)
    }

    fn set_hosts(&mut self, _client: u32, hosts: Option<&[u32]>) {
        self.0.set_hosts(hosts);
    }
}

/// Envoy's two choices with replacement.
#[derive(Debug, Clone)]
pub struct P2cRepl(P2c<Requests, WithReplacement>);

impl P2cRepl {
    /// Over `n` servers.
    pub fn new(n: usize) -> Self {
        P2cRepl(P2c::new(n, WithReplacement::new(2), Requests))
    }
}

impl Policy for P2cRepl {
    const READS_LENGTHS_ONLY: bool = true;

    #[inline(always)]
    fn pick(&mut self, loads: &LoadTable, now: SimTime, rng: &mut SimRng) -> usize {
        self.0.pick(loads, now, rng)
    }

    #[inline(always)]
    fn ahead(&mut self, rng: &mut SimRng) -> Ahead {
        self.0.ahead(rng)
    }

    fn set_hosts(&mut self, _client: u32, hosts: Option<&[u32]>) {
        self.0.set_hosts(hosts);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::{two_distinct, uniform};
    use rand::{RngExt, SeedableRng};

    fn random_table(rng: &mut SimRng, n: usize) -> Vec<u32> {
        (0..n).map(|_| rng.random_range(0..3)).collect()
    }

    #[test]
    fn p2c_never_joins_the_longer_of_its_two_samples() {
        let mut rng = SimRng::seed_from_u64(1);
        let mut p = PnC::<2>::new(10);
        for _ in 0..5000 {
            let vals = random_table(&mut rng, 10);
            let t = LoadTable::from_values(&vals, false);
            // Replay the policy's own draws on a copy of its generator to see its two samples.
            let (a, b) = two_distinct(&mut rng.clone(), 10);
            let got = p.pick(&t, SimTime::ZERO, &mut rng);
            assert!(got == a || got == b);
            assert!(vals[got] <= vals[a].min(vals[b]), "joined the longer: {vals:?} {a} {b}");
            if vals[a] == vals[b] {
                assert_eq!(got, a, "a tie goes to the first sampled");
            }
        }
    }

    #[test]
    fn pnc_with_d_choices_joins_the_shortest_sample_first_on_ties() {
        let mut rng = SimRng::seed_from_u64(2);
        for d in [1, 3, 5] {
            let mut p = PnC::<0>::with_choices(8, d);
            for _ in 0..2000 {
                let vals = random_table(&mut rng, 8);
                let t = LoadTable::from_values(&vals, false);
                let mut replay = rng.clone();
                let mut sampled = Vec::new();
                while sampled.len() < d {
                    let i = uniform(&mut replay, 8);
                    if !sampled.contains(&i) {
                        sampled.push(i);
                    }
                }
                let min = sampled.iter().map(|&i| vals[i]).min().unwrap();
                let first_min = *sampled.iter().find(|&&i| vals[i] == min).unwrap();
                assert_eq!(p.pick(&t, SimTime::ZERO, &mut rng), first_min);
            }
        }
    }

    #[test]
    fn p2c_const_and_dynamic_paths_agree_on_distinctness() {
        // Both must sample two *distinct* servers: with two servers, p2c always sees both.
        let t = LoadTable::from_values(&[3, 1], false);
        let mut rng = SimRng::seed_from_u64(4);
        let mut p = PnC::<2>::new(2);
        assert!((0..1000).all(|_| p.pick(&t, SimTime::ZERO, &mut rng) == 1));
        let mut p = PnC::<0>::with_choices(2, 2);
        assert!((0..1000).all(|_| p.pick(&t, SimTime::ZERO, &mut rng) == 1));
    }

    #[test]
    fn p2c_repl_picks_the_busier_of_two_hosts_a_quarter_of_the_time() {
        // Envoy's documented example. The count is Binomial(40_000, 1/4): sd = 86.6, so the
        // +-5 sd band is 10_000 +- 433.
        let t = LoadTable::from_values(&[0, 1], false);
        let mut rng = SimRng::seed_from_u64(8);
        let mut p = P2cRepl::new(2);
        let busier = (0..40_000).filter(|_| p.pick(&t, SimTime::ZERO, &mut rng) == 1).count();
        assert!((busier as f64 - 10_000.0).abs() < 433.0, "busier picked {busier} times");
    }
}

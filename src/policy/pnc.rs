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

use super::{Policy, two_distinct, uniform};
use crate::engine::SimTime;
use crate::model::LoadTable;
use crate::rng::SimRng;

/// `d` distinct choices, shortest wins, tie to the first sampled. `D` fixes `d` at compile time
/// (the common 2 and 3); `D = 0` reads it from the value instead.
#[derive(Debug, Clone)]
pub struct PnC<const D: usize> {
    n: usize,
    d: usize,
    sampled: Vec<usize>,
}

impl<const D: usize> PnC<D> {
    /// `D` choices among `n` servers (`2 <= D <= n`).
    pub fn new(n: usize) -> Self {
        Self::with_choices(n, D)
    }

    /// `d` choices among `n` servers (`1 <= d <= n`).
    pub fn with_choices(n: usize, d: usize) -> Self {
        assert!(d >= 1 && d <= n, "{d} distinct choices need at least {d} servers, got {n}");
        assert!(D == 0 || D == d);
        PnC { n, d, sampled: Vec::with_capacity(d) }
    }
}

impl<const D: usize> Policy for PnC<D> {
    #[inline]
    fn pick(&mut self, loads: &LoadTable, _: SimTime, rng: &mut SimRng) -> usize {
        if D == 2 {
            let (a, b) = two_distinct(rng, self.n);
            return if loads.get(b) < loads.get(a) { b } else { a };
        }
        // Rejection sampling keeps the sampling order (which decides ties) and needs no
        // scratch space of size n; d is small and validated to be at most n.
        self.sampled.clear();
        let mut best = usize::MAX;
        let mut best_load = u32::MAX;
        while self.sampled.len() < self.d {
            let i = uniform(rng, self.n);
            if self.sampled.contains(&i) {
                continue;
            }
            self.sampled.push(i);
            let l = loads.get(i);
            if l < best_load {
                best = i;
                best_load = l;
            }
        }
        best
    }
}

/// Envoy's two choices with replacement.
#[derive(Debug, Clone)]
pub struct P2cRepl {
    n: usize,
}

impl P2cRepl {
    /// Over `n` servers.
    pub fn new(n: usize) -> Self {
        P2cRepl { n }
    }
}

impl Policy for P2cRepl {
    #[inline]
    fn pick(&mut self, loads: &LoadTable, _: SimTime, rng: &mut SimRng) -> usize {
        let candidate = uniform(rng, self.n);
        let sampled = uniform(rng, self.n);
        if loads.get(sampled) < loads.get(candidate) { sampled } else { candidate }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::uniform;
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

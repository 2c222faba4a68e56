//! The power of d choices, written once over a [`Load`].
//!
//! A pick draws `d` servers uniformly at random and takes the one of lowest load, a tie going to
//! the server drawn first (Mitzenmacher, *The Power of Two Choices in Randomized Load
//! Balancing*, IEEE TPDS 12(10), 2001; tower's `balance/p2c/service.rs`, whose `p2c_ready_index`
//! keeps the first of two distinct draws unless the second's load is strictly lower). Servers are
//! drawn either *distinct* ([`Distinct`]: `pNc`, `p2c-pewma`, `least-latency`) or *with
//! replacement* ([`WithReplacement`]: Envoy's `p2c-repl` and `least-request`), each exactly as
//! the policy that uses it always drew them, so that the same seed gives the same picks.
//!
//! With some hosts excluded ([`P2c::set_hosts`]) the same draws are made over the positions of
//! the allowed hosts, so every choice is an allowed host, uniform over them (Envoy draws its
//! choices from the host set given to the balancer: `hosts_to_use[random % hosts_to_use.size()]`
//! in `least_request_lb.cc`, the healthy hosts chosen in `common/load_balancer_impl.cc`'s
//! `hostSourceToUse`). With fewer allowed hosts than distinct choices, every allowed host is
//! drawn. Per-server state (a Peak-EWMA or latency estimate) is kept for every server, excluded
//! or not, as Envoy keeps a host's stats on the host.
//!
//! Everything is generic (the sampling scheme and the load are type parameters), so a policy's
//! pick is monomorphised and inlined into the event loop.

use super::load::Load;
use super::{Ahead, Hosts, two_distinct, uniform};
use crate::model::LoadTable;
use crate::rng::SimRng;
use crate::time::SimTime;

/// The lower of two `(server, load)` pairs, a tie going to the first: the second wins only when
/// its load is strictly lower.
#[inline(always)]
pub fn lower<M: PartialOrd>(first: (usize, M), second: (usize, M)) -> (usize, M) {
    if second.1 < first.1 { second } else { first }
}

/// How a pick draws its servers.
pub trait Sample {
    /// True if the scheme can draw `d` servers among `n`.
    fn fits(&self, n: usize) -> bool;

    /// Draws one pick's servers among `n`, in order, passing each to `visit` (all `n` when
    /// fewer than `d` distinct ones are asked for).
    fn draw(&mut self, n: usize, rng: &mut SimRng, visit: impl FnMut(usize));
}

/// `d` distinct servers. `D` fixes `d` at compile time (`D = 0` reads it from the value). Two
/// are drawn as [`two_distinct`] draws them (two draws, the second over the `n - 1` others) when
/// `D = 2`; otherwise by rejection, which keeps the order of the draws (it decides ties) and
/// needs no scratch space of size `n`.
#[derive(Debug, Clone)]
pub struct Distinct<const D: usize> {
    d: usize,
    drawn: Vec<usize>,
}

impl<const D: usize> Distinct<D> {
    /// `d` distinct servers (`D` must be 0 or `d`).
    pub fn new(d: usize) -> Self {
        assert!(D == 0 || D == d, "Distinct<{D}> draws {D} servers, not {d}");
        Distinct { d, drawn: Vec::with_capacity(if D == 2 { 0 } else { d }) }
    }
}

impl<const D: usize> Sample for Distinct<D> {
    fn fits(&self, n: usize) -> bool {
        self.d >= 1 && self.d <= n
    }

    #[inline(always)]
    fn draw(&mut self, n: usize, rng: &mut SimRng, mut visit: impl FnMut(usize)) {
        if D == 2 && n >= 2 {
            let (a, b) = two_distinct(rng, n);
            visit(a);
            visit(b);
            return;
        }
        self.drawn.clear();
        while self.drawn.len() < self.d.min(n) {
            let i = uniform(rng, n);
            if !self.drawn.contains(&i) {
                self.drawn.push(i);
                visit(i);
            }
        }
    }
}

/// `d` independent uniform draws, so the same server may come up more than once (Envoy's
/// `random_.random() % hosts_to_use.size()`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WithReplacement {
    d: usize,
}

impl WithReplacement {
    /// `d` draws.
    pub fn new(d: usize) -> Self {
        WithReplacement { d }
    }
}

impl Sample for WithReplacement {
    fn fits(&self, n: usize) -> bool {
        self.d >= 1 && n >= 1
    }

    #[inline(always)]
    fn draw(&mut self, n: usize, rng: &mut SimRng, mut visit: impl FnMut(usize)) {
        for _ in 0..self.d {
            visit(uniform(rng, n));
        }
    }
}

/// The power of d choices over the load `L`, drawing with `S`.
#[derive(Debug, Clone)]
pub struct P2c<L, S> {
    n: usize,
    sample: S,
    load: L,
    hosts: Hosts,
}

impl<L: Load, S: Sample> P2c<L, S> {
    /// Over `n` servers, drawing with `sample` and comparing `load`.
    pub fn new(n: usize, sample: S, load: L) -> Self {
        assert!(sample.fits(n), "cannot draw the choices of a pick among {n} servers");
        P2c { n, sample, load, hosts: Hosts::all() }
    }

    /// Draws from `hosts` only from now on (`None`: every server).
    pub fn set_hosts(&mut self, hosts: Option<&[u32]>) {
        self.hosts.set(hosts);
    }

    /// The servers the next pick reads (the first [`Ahead::MAX`]), from the draws it would make
    /// from `rng` ([`Policy::ahead`](super::Policy::ahead)).
    #[inline(always)]
    pub fn ahead(&mut self, rng: &mut SimRng) -> Ahead {
        let P2c { n, sample, hosts, .. } = self;
        let mut out = Ahead::default();
        match hosts.allowed() {
            None => sample.draw(*n, rng, |j| out.push(j)),
            Some(h) => sample.draw(h.len(), rng, |j| out.push(h[j] as usize)),
        }
        out
    }

    /// The load it compares.
    pub fn load(&self) -> &L {
        &self.load
    }

    /// The load it compares, to update (a response comes back).
    pub fn load_mut(&mut self) -> &mut L {
        &mut self.load
    }

    /// Draws the servers, reads the load of each as it comes, and returns the lowest, a tie
    /// going to the first drawn. With every server allowed this is the plain pick (one branch on
    /// the host set per pick, none per draw).
    #[inline(always)]
    pub fn pick(&mut self, loads: &LoadTable, now: SimTime, rng: &mut SimRng) -> usize {
        let P2c { n, sample, load, hosts } = self;
        match hosts.allowed() {
            None => best_of(sample, load, *n, |j| j, loads, now, rng),
            Some(h) => best_of(sample, load, h.len(), |j| h[j] as usize, loads, now, rng),
        }
    }
}

/// The lowest-loaded of the servers `sample` draws among `k`, the `j`-th being server `at(j)`.
#[inline(always)]
fn best_of<L: Load, S: Sample>(
    sample: &mut S,
    load: &mut L,
    k: usize,
    at: impl Fn(usize) -> usize,
    loads: &LoadTable,
    now: SimTime,
    rng: &mut SimRng,
) -> usize {
    let mut best: Option<(usize, L::Metric)> = None;
    // Inlined into each of the draw's calls: left to itself the compiler made it a function of
    // its own (12% of p2c's time at n = 100 in `perf`, around a call per server read).
    sample.draw(
        k,
        rng,
        #[inline(always)]
        |j| {
            let i = at(j);
            let here = (i, load.load(i, loads, now));
            best = Some(match best.take() {
                Some(so_far) => lower(so_far, here),
                None => here,
            });
        },
    );
    best.expect("a pick draws at least one server").0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::load::{Count, Requests};
    use rand::SeedableRng;

    /// Fixed loads, and every server read, in order (tower's `Constant`, with a record).
    struct Fixed {
        loads: Vec<u32>,
        read: Vec<usize>,
    }

    impl Load for Fixed {
        type Metric = Count;

        fn load(&mut self, server: usize, _: &LoadTable, _: SimTime) -> Count {
            self.read.push(server);
            Count(self.loads[server])
        }
    }

    fn fixed(loads: &[u32]) -> Fixed {
        Fixed { loads: loads.to_vec(), read: Vec::new() }
    }

    fn pick<L: Load, S: Sample>(p: &mut P2c<L, S>, rng: &mut SimRng) -> usize {
        p.pick(&LoadTable::new(0, false), SimTime::ZERO, rng)
    }

    #[test]
    fn lower_takes_the_strictly_lower_and_the_first_on_a_tie() {
        assert_eq!(lower((3, 2), (5, 1)), (5, 1));
        assert_eq!(lower((3, 1), (5, 2)), (3, 1));
        assert_eq!(lower((3, 1), (5, 1)), (3, 1));
        assert_eq!(lower((3, 1.0), (5, f64::NAN)).0, 3);
    }

    #[test]
    fn a_tie_goes_to_the_first_drawn() {
        // All loads equal: every pick is the first server drawn, whatever the scheme.
        let mut rng = SimRng::seed_from_u64(11);
        let mut two = P2c::new(6, Distinct::<2>::new(2), fixed(&[4; 6]));
        let mut three = P2c::new(6, Distinct::<0>::new(3), fixed(&[4; 6]));
        let mut repl = P2c::new(6, WithReplacement::new(2), fixed(&[4; 6]));
        for _ in 0..500 {
            assert_eq!(pick(&mut two, &mut rng), *two.load().read.first().unwrap());
            assert_eq!(pick(&mut three, &mut rng), *three.load().read.first().unwrap());
            assert_eq!(pick(&mut repl, &mut rng), *repl.load().read.first().unwrap());
            for loads in [two.load_mut(), three.load_mut(), repl.load_mut()] {
                loads.read.clear();
            }
        }
    }

    #[test]
    fn the_lowest_of_the_drawn_wins_and_each_is_read_once_in_draw_order() {
        let mut rng = SimRng::seed_from_u64(12);
        let vals = [5, 3, 3, 8, 1, 3, 9, 0];
        let mut p = P2c::new(8, Distinct::<0>::new(4), fixed(&vals));
        for _ in 0..2000 {
            let mut replay = rng.clone();
            let mut want = Vec::new();
            while want.len() < 4 {
                let i = uniform(&mut replay, 8);
                if !want.contains(&i) {
                    want.push(i);
                }
            }
            let got = pick(&mut p, &mut rng);
            assert_eq!(p.load().read, want, "read in draw order, each once");
            let min = want.iter().map(|&i| vals[i]).min().unwrap();
            assert_eq!(got, *want.iter().find(|&&i| vals[i] == min).unwrap());
            p.load_mut().read.clear();
        }
    }

    #[test]
    fn with_replacement_may_draw_the_same_server_twice() {
        // Two servers, two draws: both draws land on the same server half the time. The count of
        // such picks among 20 000 is Binomial(20 000, 1/2): sd 70.7, so +-5 sd is +-354.
        let mut rng = SimRng::seed_from_u64(13);
        let mut p = P2c::new(2, WithReplacement::new(2), fixed(&[0, 0]));
        let mut twice = 0;
        for _ in 0..20_000 {
            pick(&mut p, &mut rng);
            let read = &mut p.load_mut().read;
            assert_eq!(read.len(), 2);
            twice += usize::from(read[0] == read[1]);
            read.clear();
        }
        assert!((twice as f64 - 10_000.0).abs() < 354.0, "same server twice {twice} times");
        // Distinct draws never repeat a server.
        let mut p = P2c::new(2, Distinct::<2>::new(2), fixed(&[0, 0]));
        for _ in 0..1000 {
            pick(&mut p, &mut rng);
            let read = &mut p.load_mut().read;
            assert!(read[0] != read[1]);
            read.clear();
        }
    }

    #[test]
    fn d_equal_to_n_without_replacement_is_the_exact_least_loaded() {
        // Every server is drawn, so the pick is a least-loaded server: the first of them in the
        // order drawn when several tie.
        let mut rng = SimRng::seed_from_u64(14);
        let vals = [6, 2, 9, 2, 4, 7];
        let mut p = P2c::new(6, Distinct::<0>::new(6), fixed(&vals));
        for _ in 0..1000 {
            let got = pick(&mut p, &mut rng);
            assert_eq!(vals[got], 2);
            let read = &mut p.load_mut().read;
            assert_eq!(read.len(), 6);
            assert_eq!(got, *read.iter().find(|&&i| vals[i] == 2).unwrap());
            read.clear();
        }
        // Two of two: the exact shortest of the table.
        let t = LoadTable::from_values(&[3, 1], false);
        let mut p = P2c::new(2, Distinct::<2>::new(2), Requests);
        assert!((0..1000).all(|_| p.pick(&t, SimTime::ZERO, &mut rng) == 1));
    }

    #[test]
    fn two_distinct_draws_are_those_of_two_distinct() {
        // `Distinct<2>` draws what `two_distinct` draws; `Distinct<0>` with d = 2 rejects
        // repeats instead (a different draw sequence, as `pNc` with a run-time N always did).
        let (mut a, mut b) = (SimRng::seed_from_u64(15), SimRng::seed_from_u64(15));
        let mut p = P2c::new(9, Distinct::<2>::new(2), fixed(&[0; 9]));
        for _ in 0..1000 {
            pick(&mut p, &mut a);
            let (x, y) = two_distinct(&mut b, 9);
            assert_eq!(p.load().read, [x, y]);
            p.load_mut().read.clear();
        }
    }

    #[test]
    fn ahead_names_the_servers_the_pick_reads_from_the_same_draws() {
        // Each scheme, d up to `Ahead::MAX` and beyond it (the first four named), all hosts or
        // some: `ahead` on a copy of the stream names the servers the pick then reads, in order,
        // and leaves the copy where the pick leaves the stream, so a copy kept picks ahead stays
        // in step.
        fn check<S: Sample>(sample: S, n: usize, hosts: Option<&[u32]>, seed: u64) {
            let mut rng = SimRng::seed_from_u64(seed);
            let mut lead = rng.clone();
            let mut p = P2c::new(n, sample, fixed(&vec![0; n]));
            p.set_hosts(hosts);
            for _ in 0..2000 {
                let named = p.ahead(&mut lead);
                pick(&mut p, &mut rng);
                let read: Vec<u32> = p.load().read.iter().map(|&i| i as u32).collect();
                assert_eq!(named.servers(), &read[..read.len().min(Ahead::MAX)], "of {n}");
                assert!(lead == rng, "the copy is where the pick left the stream");
                p.load_mut().read.clear();
            }
        }
        let some: &[u32] = &[1, 3, 4, 8];
        for hosts in [None, Some(some)] {
            check(Distinct::<2>::new(2), 9, hosts, 21);
            check(Distinct::<0>::new(3), 9, hosts, 22);
            check(Distinct::<0>::new(4), 4, None, 23);
            check(Distinct::<0>::new(4), 9, hosts, 23);
            check(WithReplacement::new(2), 9, hosts, 25);
        }
        check(Distinct::<0>::new(5), 9, None, 24);
    }

    #[test]
    #[should_panic(expected = "cannot draw")]
    fn more_distinct_choices_than_servers_are_refused() {
        P2c::new(2, Distinct::<0>::new(3), Requests);
    }
}

//! The hosts a client may pick from ([`Policy::set_hosts`](super::Policy::set_hosts)).
//!
//! Health (outlier ejection, failed active checks, an open circuit breaker) takes hosts out of
//! what a client's balancer may pick, and panic mode puts them back. A policy keeps the allowed
//! set in a [`Hosts`] and draws through it: with every host allowed (`None`, the state at the
//! start) each draw is exactly the draw the policy always made ([`uniform`], [`two_distinct`]
//! over all `n` servers), so runs without health keep their random draws; with a list, the same
//! draws are made over the list's positions and mapped to its hosts.

use super::{two_distinct, uniform};
use crate::model::LoadTable;
use crate::rng::SimRng;

/// The hosts a client may pick from: every server, or a list of them in server order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Hosts {
    allowed: Option<Vec<u32>>,
}

impl Hosts {
    /// Every server (the state at the start).
    pub fn all() -> Self {
        Hosts { allowed: None }
    }

    /// Sets the allowed hosts: `None` for every server, else the given hosts (put in server
    /// order, each once). Panics on an empty list: the loop never asks a policy to pick from
    /// nothing.
    pub fn set(&mut self, hosts: Option<&[u32]>) {
        self.allowed = hosts.map(|h| {
            assert!(!h.is_empty(), "set_hosts with an empty list");
            let mut v = h.to_vec();
            v.sort_unstable();
            v.dedup();
            v
        });
    }

    /// The allowed hosts in server order, or `None`: every server.
    #[inline]
    pub fn allowed(&self) -> Option<&[u32]> {
        self.allowed.as_deref()
    }

    /// True if every server is allowed.
    #[inline]
    pub fn is_all(&self) -> bool {
        self.allowed.is_none()
    }

    /// How many hosts are allowed among `n` servers.
    #[inline(always)]
    pub fn count(&self, n: usize) -> usize {
        match &self.allowed {
            None => n,
            Some(h) => h.len(),
        }
    }

    /// The `i`-th allowed host (`i` itself when every server is allowed).
    #[inline(always)]
    pub fn at(&self, i: usize) -> usize {
        match &self.allowed {
            None => i,
            Some(h) => h[i] as usize,
        }
    }

    /// True if `server` may be picked.
    #[inline]
    pub fn contains(&self, server: usize) -> bool {
        match &self.allowed {
            None => true,
            Some(h) => h.binary_search(&(server as u32)).is_ok(),
        }
    }

    /// A uniform allowed host among `n` servers: exactly [`uniform`]`(rng, n)` when every server
    /// is allowed.
    #[inline(always)]
    pub fn uniform(&self, rng: &mut SimRng, n: usize) -> usize {
        match &self.allowed {
            None => uniform(rng, n),
            Some(h) => h[uniform(rng, h.len())] as usize,
        }
    }

    /// Two distinct uniform allowed hosts, in sampling order: exactly
    /// [`two_distinct`]`(rng, n)` when every server is allowed. With one host allowed, that
    /// host twice (there is no second to compare).
    #[inline(always)]
    pub fn two_distinct(&self, rng: &mut SimRng, n: usize) -> (usize, usize) {
        match &self.allowed {
            None => two_distinct(rng, n),
            Some(h) if h.len() == 1 => (h[0] as usize, h[0] as usize),
            Some(h) => {
                let (a, b) = two_distinct(rng, h.len());
                (h[a] as usize, h[b] as usize)
            }
        }
    }

    /// The allowed hosts among `n` servers, in server order.
    #[inline]
    pub fn iter(&self, n: usize) -> Iter<'_> {
        match &self.allowed {
            None => Iter::All(0..n),
            Some(h) => Iter::Some(h.iter()),
        }
    }

    /// The least loaded of the allowed hosts among `n` servers, ties uniformly at random
    /// (a scan with reservoir sampling: the `k`-th host found tied replaces the candidate with
    /// probability `1/k`).
    pub fn least_loaded(&self, n: usize, loads: &LoadTable, rng: &mut SimRng) -> usize {
        let mut hosts = self.iter(n);
        let mut best = hosts.next().expect("at least one host");
        let mut tied = 1;
        for h in hosts {
            let (b, v) = (loads.get(best), loads.get(h));
            if v < b {
                best = h;
                tied = 1;
            } else if v == b {
                tied += 1;
                if uniform(rng, tied) == 0 {
                    best = h;
                }
            }
        }
        best
    }
}

/// The allowed hosts, in server order ([`Hosts::iter`]).
#[derive(Debug, Clone)]
pub enum Iter<'a> {
    /// Every server.
    All(std::ops::Range<usize>),
    /// The listed ones.
    Some(std::slice::Iter<'a, u32>),
}

impl Iterator for Iter<'_> {
    type Item = usize;

    #[inline]
    fn next(&mut self) -> Option<usize> {
        match self {
            Iter::All(r) => r.next(),
            Iter::Some(s) => s.next().map(|&h| h as usize),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn every_server_draws_what_the_plain_draws_draw() {
        let h = Hosts::all();
        let (mut a, mut b) = (SimRng::seed_from_u64(1), SimRng::seed_from_u64(1));
        for _ in 0..1000 {
            assert_eq!(h.uniform(&mut a, 7), uniform(&mut b, 7));
            assert_eq!(h.two_distinct(&mut a, 7), two_distinct(&mut b, 7));
        }
        assert_eq!(h.iter(4).collect::<Vec<_>>(), [0, 1, 2, 3]);
        assert_eq!((h.count(4), h.at(3), h.contains(3)), (4, 3, true));
    }

    #[test]
    fn a_list_is_kept_in_server_order_and_draws_stay_in_it() {
        let mut h = Hosts::all();
        h.set(Some(&[5, 1, 3, 1]));
        assert_eq!(h.allowed(), Some(&[1u32, 3, 5][..]));
        assert_eq!(h.iter(9).collect::<Vec<_>>(), [1, 3, 5]);
        assert!(h.contains(3) && !h.contains(2) && !h.is_all());
        let mut rng = SimRng::seed_from_u64(2);
        for _ in 0..1000 {
            assert!(h.contains(h.uniform(&mut rng, 9)));
            let (a, b) = h.two_distinct(&mut rng, 9);
            assert!(a != b && h.contains(a) && h.contains(b));
        }
        h.set(Some(&[4]));
        assert_eq!(h.two_distinct(&mut rng, 9), (4, 4));
        h.set(None);
        assert!(h.is_all());
    }

    #[test]
    #[should_panic(expected = "empty list")]
    fn an_empty_list_is_refused() {
        Hosts::all().set(Some(&[]));
    }
}

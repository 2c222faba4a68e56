//! `rr`: round robin in server index order, starting at server 0 with the very first arrival.
//!
//! With some hosts excluded ([`Policy::set_hosts`]) it goes round the allowed hosts, as Envoy's
//! round robin does over the host set it is given
//! (`source/extensions/load_balancing_policies/round_robin/round_robin_lb.h`): the pick is
//! `hosts_to_use[rr_indexes_[source]++ % hosts_to_use.size()]`, and `refreshHostSource` keeps
//! the index when the host list changes (`insert()` never overwrites it). So each of `k` allowed
//! hosts gets exactly one pick in every `k` in a row, rather than the host after an excluded one
//! taking its turn too (which "skip to the next host" would do).

use super::{Hosts, Policy};
use crate::model::LoadTable;
use crate::rng::SimRng;
use crate::time::SimTime;

/// Round robin.
#[derive(Debug, Clone)]
pub struct RoundRobin {
    n: usize,
    /// The next pick's index: into the servers (below `n`) with every host allowed, else a
    /// counter taken modulo the number of allowed hosts (Envoy's `rr_indexes_`).
    next: usize,
    hosts: Hosts,
}

impl RoundRobin {
    /// Over `n` servers; the first pick is server 0.
    pub fn new(n: usize) -> Self {
        RoundRobin { n, next: 0, hosts: Hosts::all() }
    }
}

impl Policy for RoundRobin {
    #[inline]
    fn pick(&mut self, _: &LoadTable, _: SimTime, _: &mut SimRng) -> usize {
        let i = self.next;
        if let Some(h) = self.hosts.allowed() {
            self.next = i.wrapping_add(1);
            return h[i % h.len()] as usize;
        }
        self.next = if i + 1 == self.n { 0 } else { i + 1 };
        i
    }

    fn set_hosts(&mut self, _client: u32, hosts: Option<&[u32]>) {
        self.hosts.set(hosts);
        if self.hosts.is_all() {
            self.next %= self.n;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn cycles_in_index_order_from_zero() {
        let mut p = RoundRobin::new(3);
        let t = LoadTable::new(3, false);
        let mut rng = SimRng::seed_from_u64(0);
        let picks: Vec<_> = (0..7).map(|_| p.pick(&t, SimTime::ZERO, &mut rng)).collect();
        assert_eq!(picks, [0, 1, 2, 0, 1, 2, 0]);
    }
}

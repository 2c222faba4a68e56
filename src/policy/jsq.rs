//! `jsq`: join the shortest queue among all servers, ties uniformly at random (Winston 1977).
//!
//! The minimum comes from the load table's sorted index, so a pick is `O(1)`, not a scan.
//!
//! With some hosts excluded ([`Policy::set_hosts`]) it takes the minimum over the allowed hosts
//! only, ties uniformly at random among them (a scan with reservoir sampling: the `k`-th host
//! found tied replaces the candidate with probability `1/k`).

use super::{Hosts, Policy};
use crate::model::LoadTable;
use crate::rng::SimRng;
use crate::time::SimTime;

/// Join the shortest queue.
#[derive(Debug, Clone, Default)]
pub struct Jsq {
    hosts: Hosts,
}

impl Jsq {
    /// Over every server.
    pub fn new() -> Self {
        Jsq::default()
    }
}

impl Policy for Jsq {
    const NEEDS_SHORTEST: bool = true;

    #[inline]
    fn pick(&mut self, loads: &LoadTable, _: SimTime, rng: &mut SimRng) -> usize {
        match self.hosts.allowed() {
            None => loads.shortest(rng),
            Some(_) => self.hosts.least_loaded(loads.len(), loads, rng),
        }
    }

    fn set_hosts(&mut self, _client: u32, hosts: Option<&[u32]>) {
        self.hosts.set(hosts);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{RngExt, SeedableRng};

    #[test]
    fn always_joins_a_minimum() {
        let mut rng = SimRng::seed_from_u64(9);
        let mut p = Jsq::new();
        for _ in 0..2000 {
            let vals: Vec<u32> = (0..12).map(|_| rng.random_range(0..4)).collect();
            let t = LoadTable::from_values(&vals, true);
            let i = p.pick(&t, SimTime::ZERO, &mut rng);
            assert_eq!(vals[i], *vals.iter().min().unwrap(), "{vals:?} -> {i}");
        }
    }
}

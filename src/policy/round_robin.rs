//! `rr`: round robin in server index order, starting at server 0 with the very first arrival.
//!
//! With some hosts excluded ([`Policy::set_hosts`]) it goes round the allowed hosts, as Envoy's
//! round robin does over the host set it is given
//! (`source/extensions/load_balancing_policies/round_robin/round_robin_lb.h`): the pick is
//! `hosts_to_use[rr_indexes_[source]++ % hosts_to_use.size()]`, and `refreshHostSource` keeps
//! the index when the host list changes (`insert()` never overwrites it). So each of `k` allowed
//! hosts gets exactly one pick in every `k` in a row, rather than the host after an excluded one
//! taking its turn too (which "skip to the next host" would do).
//!
//! **Slow start** ([`Policy::slow_start`], `[health] slow_start`) follows Envoy's
//! `EdfLoadBalancerBase` (`source/extensions/load_balancing_policies/common/load_balancer_impl.cc`),
//! of which round robin is one: at every refresh of the host set (`refresh`, on every host set
//! change; here also when a host becomes healthy, which is such a change in Envoy) the balancer
//! builds an EDF schedule ([`super::edf`]) instead of its index when some host is in slow start
//! (`hostWeightsAreEqual(hosts) && noHostsAreInSlowStart()` is false), every host of weight 1
//! (lbsim's `rr` has no weights) times its slow-start factor (`RoundRobinLoadBalancer::hostWeight`
//! calls `applySlowStartFactor`). The changing weight is refreshed as Envoy refreshes it: the
//! picked host is re-added with its weight at the pick (`pickAndAdd`), the others keep the
//! deadlines of their last pick ("stale until this host is next picked"). The schedule stays
//! until the next refresh, with every weight 1 once the window is over (a round robin in the
//! schedule's order); the refresh after it goes back to the index, where it stood. Envoy seeds
//! the schedule's start (`createWithPicks(.., seed_)`) as it seeds the index; lbsim's `rr`
//! starts its index at 0, and its schedule with 0 picks. The time of a refresh caused by a set
//! change is that of the last pick before it (a policy hears set changes without the time).

use super::edf::Edf;
use super::{Hosts, Policy};
use crate::lifecycle::health::SlowStart;
use crate::lifecycle::slow_start::Ramp;
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
    /// Slow start: none until a host starts slowly.
    slow: Option<Box<Slow>>,
}

/// Round robin's slow start: the hosts' ramps and, while some host is in slow start (as of the
/// last refresh), the EDF schedule that replaces the index.
#[derive(Debug, Clone)]
struct Slow {
    ramp: Ramp,
    edf: Option<Edf>,
}

impl RoundRobin {
    /// Over `n` servers; the first pick is server 0.
    pub fn new(n: usize) -> Self {
        RoundRobin { n, next: 0, hosts: Hosts::all(), slow: None }
    }

    /// Envoy's `refresh` under slow start: a fresh EDF schedule of the allowed hosts, each of
    /// weight 1 times its factor now, if some host is in slow start; else the index.
    fn refresh(&mut self) {
        let Some(s) = &mut self.slow else { return };
        let now = s.ramp.now();
        let ramp = &s.ramp;
        s.edf = ramp
            .any(now)
            .then(|| Edf::scaled(vec![1.0; self.n], 0.0, &self.hosts, |h| ramp.factor(h, now)));
    }
}

impl Policy for RoundRobin {
    const READS_LENGTHS_ONLY: bool = true;

    #[inline]
    fn pick(&mut self, _: &LoadTable, now: SimTime, _: &mut SimRng) -> usize {
        if let Some(s) = &mut self.slow
            && let Some(edf) = &mut s.edf
        {
            let t = now.get();
            s.ramp.saw(t);
            let ramp = &s.ramp;
            return edf.pick_and_add_scaled(|_| 0, |h| ramp.factor(h, t));
        }
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
        self.refresh();
    }

    fn slow_start(&mut self, _client: u32, host: usize, since: f64, rule: &SlowStart) {
        let n = self.n;
        let s = self
            .slow
            .get_or_insert_with(|| Box::new(Slow { ramp: Ramp::new(*rule, n), edf: None }));
        s.ramp.start(host, since);
        self.refresh();
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

    /// Host 0 of 4 starts slowly at 0 (window 1000, Envoy's linear ramp and 10% floor), picks
    /// every 0.25. The EDF schedule gives host 0 the share `f / (3 + f)` of the picks at
    /// factor `f` (each other host weighs 1): the expected count in the window is the sum of
    /// that share over the picks. The schedule lags the factor by at most one of host 0's gaps
    /// (the weight is refreshed only at its picks), half a pick per doubling of the factor
    /// (0.5 ln 10 = 1.2 over the ramp), plus one pick at each end for the schedule's offsets:
    /// 4 picks. After the window every weight is 1 and the schedule is a round robin: exactly
    /// one pick in 4 (a count within 1 of a quarter, from where the cycle starts).
    #[test]
    fn a_host_in_slow_start_gets_the_share_of_its_weight_then_its_quarter() {
        let rule = SlowStart { window: 1_000.0, ..SlowStart::default() };
        let mut p = RoundRobin::new(4);
        let t = LoadTable::new(4, false);
        let mut rng = SimRng::seed_from_u64(0);
        p.pick(&t, SimTime::ZERO, &mut rng);
        p.slow_start(0, 0, 0.0, &rule);
        let (mut got, mut want) = (0, 0.0);
        for k in 0..4_000 {
            let now = f64::from(k) * 0.25;
            let f = crate::lifecycle::slow_start::factor(&rule, 0.0, now);
            want += f / (3.0 + f);
            got += u32::from(p.pick(&t, SimTime::new(now), &mut rng) == 0);
        }
        assert!((f64::from(got) - want).abs() <= 4.0, "{got} picks of host 0, {want} expected");
        assert!((want - 4_000.0 * 0.138_549).abs() < 1.0, "the integral: {want}");
        let mut late = [0u32; 4];
        for k in 4_040..8_040 {
            late[p.pick(&t, SimTime::new(f64::from(k) * 0.25), &mut rng)] += 1;
        }
        assert!(late.iter().all(|&c| c.abs_diff(1_000) <= 1), "{late:?}");
        p.set_hosts(0, None);
        assert!(p.slow.as_ref().is_some_and(|s| s.edf.is_none()), "back to the index");
        let next: Vec<usize> = (0..4).map(|_| p.pick(&t, SimTime::new(3e3), &mut rng)).collect();
        assert_eq!(next, [1, 2, 3, 0], "where the index stood");
    }
}

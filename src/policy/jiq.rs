//! `jiq`: join-idle-queue (Lu, Xie, Kliot, Geller, Larus & Greenberg, "Join-Idle-Queue: A novel
//! load balancing algorithm for dynamically scalable web services", Performance 2011).
//!
//! The paper's JIQ-Random, as its §3 describes it:
//!
//! - there are `dispatchers` dispatchers, each with an *I-queue* of idle servers; an arrival goes
//!   to a dispatcher uniformly at random;
//! - a dispatcher with a non-empty I-queue sends the request to the first server in it and removes
//!   that server; with an empty I-queue it sends the request to a server uniformly at random;
//! - a server that becomes idle (its last request leaves) joins the I-queue of one dispatcher
//!   chosen uniformly at random (JIQ-Random; the paper's JIQ-SQ(d) variant is not modelled);
//! - a server in an I-queue stays there until a dispatcher takes it, even if a random dispatch
//!   makes it busy in the meantime (the report is only removed when used);
//! - at the start every server is idle and has reported to a random I-queue.
//!
//! JIQ needs no load information at dispatch: the table is not read. It counts its own requests
//! in flight per server to know when one becomes idle, so in a fleet of clients it learns only of
//! the servers its own requests left idle. Idle reports draw from the policy's own stream.
//!
//! With some hosts excluded ([`Policy::set_hosts`]; the paper does not treat failures, so this is
//! the simplest rule that picks only allowed hosts): a dispatcher drops the idle reports of
//! excluded servers it finds at the head of its I-queue, and the random dispatch draws among the
//! allowed servers. When hosts are allowed again, each of them that is idle and in no I-queue
//! reports to one, as at the start.

use std::collections::VecDeque;

use super::tuning::{count, params};
use super::{Hosts, Policy, uniform};
use crate::model::LoadTable;
use crate::rng::SimRng;
use crate::time::SimTime;

params! {
    /// The parameters of `jiq`.
    pub struct JiqParams {
        /// Idle queues, one per dispatcher (default 1).
        #[serde(deserialize_with = "count")]
        pub dispatchers: u32,
    }
}

impl Default for JiqParams {
    fn default() -> Self {
        JiqParams { dispatchers: 1 }
    }
}

/// Join-idle-queue (see the module documentation).
#[derive(Debug, Clone)]
pub struct Jiq {
    n: usize,
    idle: Vec<VecDeque<u32>>,
    in_flight: Vec<u32>,
    reports: SimRng,
    hosts: Hosts,
}

impl Jiq {
    /// Over `n` servers with `dispatchers` I-queues; `reports` picks the I-queue of each report.
    pub fn new(n: usize, dispatchers: usize, mut reports: SimRng) -> Self {
        let mut idle = vec![VecDeque::new(); dispatchers];
        for s in 0..n {
            idle[uniform(&mut reports, dispatchers)].push_back(s as u32);
        }
        Jiq { n, idle, in_flight: vec![0; n], reports, hosts: Hosts::all() }
    }
}

impl Policy for Jiq {
    #[inline]
    fn pick(&mut self, _: &LoadTable, _: SimTime, rng: &mut SimRng) -> usize {
        let k = self.idle.len();
        let d = if k == 1 { 0 } else { uniform(rng, k) };
        let mut s = self.idle[d].pop_front().map(|s| s as usize);
        if !self.hosts.is_all() {
            while s.is_some_and(|s| !self.hosts.contains(s)) {
                s = self.idle[d].pop_front().map(|s| s as usize);
            }
        }
        let s = match s {
            Some(s) => s,
            None => self.hosts.uniform(rng, self.n),
        };
        self.in_flight[s] += 1;
        s
    }

    fn set_hosts(&mut self, _client: u32, hosts: Option<&[u32]>) {
        self.hosts.set(hosts);
        let k = self.idle.len();
        let mut queued = vec![false; self.n];
        for &s in self.idle.iter().flatten() {
            queued[s as usize] = true;
        }
        for s in self.hosts.iter(self.n) {
            if self.in_flight[s] == 0 && !queued[s] {
                let d = if k == 1 { 0 } else { uniform(&mut self.reports, k) };
                self.idle[d].push_back(s as u32);
            }
        }
    }

    #[inline]
    fn on_departure(&mut self, server: usize, _: f64, _: SimTime, _: u32) {
        self.in_flight[server] -= 1;
        if self.in_flight[server] == 0 {
            let k = self.idle.len();
            let d = if k == 1 { 0 } else { uniform(&mut self.reports, k) };
            self.idle[d].push_back(server as u32);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn rng(seed: u64) -> SimRng {
        SimRng::seed_from_u64(seed)
    }

    #[test]
    fn idle_servers_are_used_first_then_random_ones() {
        let mut p = Jiq::new(4, 1, rng(1));
        let t = LoadTable::new(4, false);
        let mut coins = rng(2);
        // The four idle servers first, each once.
        let mut first: Vec<usize> = (0..4).map(|_| p.pick(&t, SimTime::ZERO, &mut coins)).collect();
        first.sort_unstable();
        assert_eq!(first, [0, 1, 2, 3]);
        // Then the I-queue is empty: random servers.
        let s = p.pick(&t, SimTime::ZERO, &mut coins);
        assert_eq!(p.in_flight[s], 2);
        // A server becomes idle only when its last request leaves; then it is next.
        p.on_departure(s, 1.0, SimTime::ZERO, 0);
        assert!(p.idle[0].is_empty());
        p.on_departure(s, 1.0, SimTime::ZERO, 0);
        assert_eq!(p.idle[0], [s as u32]);
        assert_eq!(p.pick(&t, SimTime::ZERO, &mut coins), s);
    }

    #[test]
    fn reports_spread_over_the_dispatchers() {
        // 4000 servers reporting to 4 I-queues: each gets Binomial(4000, 1/4), sd 27.4; 5 sd = 137.
        let p = Jiq::new(4000, 4, rng(3));
        for q in &p.idle {
            assert!((q.len() as f64 - 1000.0).abs() < 137.0);
        }
    }
}

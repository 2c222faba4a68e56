//! `least-conn`: NGINX's `least_conn` (HAProxy's `leastconn` follows the same rule).
//!
//! Follows `ngx_http_upstream_get_least_conn_peer` in
//! `src/http/modules/ngx_http_upstream_least_conn_module.c` (nginx/nginx):
//!
//! - scan the peers in order; `best` is the first peer with the fewest connections per weight:
//!   a peer replaces it only if `peer->conns * best->weight < best->conns * peer->weight`
//!   (strictly), and an equal ratio sets `many`;
//! - with `many`, round robin among the tied peers: from `best` to the end of the list, each tied
//!   peer adds its `effective_weight` to its `current_weight` and to `total`, the one with the
//!   largest `current_weight` wins (strict `>`, so the earliest among equals), and the winner's
//!   `current_weight` drops by `total` — NGINX's smooth weighted round robin, restricted to the
//!   tied peers, with `current_weight` kept from pick to pick.
//!
//! `effective_weight` equals `weight` here (it is lowered only after failures, which lbsim does
//! not model). Weights are the servers' rates scaled to the smallest integers
//! ([`integer_weights`](super::integer_weights)), as NGINX's `weight=` is an integer.
//! Connections are what the client sees: its own requests in flight with local information
//! (NGINX counts `peer->conns` per worker process without a shared zone), the true queue lengths
//! otherwise.
//!
//! With some hosts excluded ([`Policy::set_hosts`]) the scan and the round robin among ties run
//! over the allowed peers only, as NGINX skips a peer that is `down` or has failed `max_fails`
//! times (`if (peer->down) continue;` and the `max_fails` test in both loops of
//! `ngx_http_upstream_get_least_conn_peer`); the skipped peers' `current_weight` stays as it was.

use super::hosts::Iter;
use super::{Hosts, Policy};
use crate::model::LoadTable;
use crate::rng::SimRng;
use crate::time::SimTime;

/// NGINX least_conn (see the module documentation).
#[derive(Debug, Clone)]
pub struct LeastConn {
    weights: Vec<u64>,
    current: Vec<i64>,
    hosts: Hosts,
}

impl LeastConn {
    /// Over servers of integer weights `weights`.
    pub fn new(weights: &[u64]) -> Self {
        LeastConn {
            weights: weights.to_vec(),
            current: vec![0; weights.len()],
            hosts: Hosts::all(),
        }
    }

    /// NGINX's pick over the peers `peers` yields, in server order (at least one).
    #[inline]
    fn pick_among(weights: &[u64], current: &mut [i64], loads: &LoadTable, peers: Iter) -> usize {
        let conns = |i: usize| u64::from(loads.get(i));
        let w = weights;
        let mut rest = peers.clone();
        let mut best = rest.next().expect("at least one peer");
        let mut many = false;
        for i in rest {
            let (lhs, rhs) = (conns(i) * w[best], conns(best) * w[i]);
            if lhs < rhs {
                best = i;
                many = false;
            } else if lhs == rhs {
                many = true;
            }
        }
        if many {
            let first = best;
            let mut total = 0;
            for i in peers.skip_while(|&i| i < first) {
                if conns(i) * w[first] != conns(first) * w[i] {
                    continue;
                }
                current[i] += w[i] as i64;
                total += w[i] as i64;
                if current[i] > current[best] {
                    best = i;
                }
            }
            current[best] -= total;
        }
        best
    }
}

impl Policy for LeastConn {
    fn pick(&mut self, loads: &LoadTable, _: SimTime, _: &mut SimRng) -> usize {
        let peers = self.hosts.iter(self.weights.len());
        Self::pick_among(&self.weights, &mut self.current, loads, peers)
    }

    fn set_hosts(&mut self, _client: u32, hosts: Option<&[u32]>) {
        self.hosts.set(hosts);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn pick(p: &mut LeastConn, vals: &[u32]) -> usize {
        p.pick(&LoadTable::from_values(vals, false), SimTime::ZERO, &mut SimRng::seed_from_u64(0))
    }

    #[test]
    fn fewest_connections_per_weight_wins() {
        let mut p = LeastConn::new(&[1, 1, 1]);
        assert_eq!(pick(&mut p, &[3, 1, 2]), 1);
        // Weight 3 with 5 conns (5/3) beats weight 1 with 2 (2/1).
        let mut p = LeastConn::new(&[1, 3]);
        assert_eq!(pick(&mut p, &[2, 5]), 1);
    }

    #[test]
    fn ties_go_round_robin_by_smooth_weights() {
        // Equal weights, all idle: every pick is a tie among all, and NGINX's smooth round
        // robin visits them in order.
        let mut p = LeastConn::new(&[1, 1, 1]);
        let picks: Vec<usize> = (0..6).map(|_| pick(&mut p, &[0, 0, 0])).collect();
        assert_eq!(picks, [0, 1, 2, 0, 1, 2]);
        // Weights 5, 1, 1, all idle (a tie of ratios 0): NGINX's smooth sequence a a b a c a a.
        let mut p = LeastConn::new(&[5, 1, 1]);
        let picks: String =
            (0..7).map(|_| (b'a' + pick(&mut p, &[0, 0, 0]) as u8) as char).collect();
        assert_eq!(picks, "aabacaa");
    }

    #[test]
    fn only_tied_peers_take_part_in_the_round_robin() {
        // Server 0 is busier; 1 and 2 tie and alternate; server 0's current weight never moves.
        let mut p = LeastConn::new(&[1, 1, 1]);
        let picks: Vec<usize> = (0..4).map(|_| pick(&mut p, &[4, 1, 1])).collect();
        assert_eq!(picks, [1, 2, 1, 2]);
        assert_eq!(p.current[0], 0);
    }
}

//! A fleet of clients: independent dispatchers, each running its own instance of a policy.
//!
//! Real balancers are not one omniscient dispatcher: every Envoy sidecar, NGINX worker or gRPC
//! client balances only the requests it sends, and knows only its own in-flight requests per
//! backend (Envoy's `rq_active` is per host *per worker*; NGINX's `peer->conns` per upstream zone
//! or per worker without one). [`Fleet`] simulates K such clients over one farm:
//!
//! - each arrival belongs to one client, drawn uniformly from a stream of its own keyed by the
//!   workload, so every policy sees the same assignment;
//! - client `c` runs its own policy instance (its own round-robin pointer, EWMA estimates, EDF
//!   schedule...), with its own index order over its servers;
//! - **global** information: a client reads the true queue lengths of its servers; **local**: only
//!   the number of its own requests in flight at each (a request counts from its dispatch to its
//!   departure);
//! - **subsets**: client `c` uses only the servers of its subset, in the order the subsetting
//!   algorithm yields them ([`crate::subset`]);
//! - a client learns from the responses to its own requests only ([`Policy::on_departure`] goes to
//!   the sender, found from the request's tag).
//!
//! The coin flips of every client come from the replication's one policy stream, in arrival order:
//! with global information and no subsets, K clients of a policy without per-client state (p2c,
//! jsq, least-request) make exactly the choices of one, which a test checks.

use super::Policy;
use crate::engine::SimTime;
use crate::model::LoadTable;
use crate::rng::SimRng;

/// One client: its policy, the loads it sees, and its servers.
#[derive(Debug, Clone)]
struct Client<P> {
    policy: P,
    /// What this client sees, indexed by its own server order (unused when it reads the farm's
    /// table directly).
    table: LoadTable,
    /// Its servers in its own order (empty: all, in farm order).
    servers: Vec<u32>,
    /// Farm server -> its index here, `u32::MAX` if not in the subset (empty: identity).
    index: Vec<u32>,
}

impl<P> Client<P> {
    #[inline]
    fn local_index(&self, server: usize) -> Option<usize> {
        if self.index.is_empty() {
            return Some(server);
        }
        let i = self.index[server];
        (i != u32::MAX).then_some(i as usize)
    }

    #[inline]
    fn server(&self, local: usize) -> usize {
        if self.servers.is_empty() { local } else { self.servers[local] as usize }
    }
}

/// What every client reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum View {
    /// The farm's table itself (global information, no subsets).
    Farm,
    /// Its own table of the true queue lengths of its subset, kept by the fleet.
    Global,
    /// Its own table of its own in-flight requests.
    Local,
}

/// K clients, each running a policy `P` (see the module documentation).
#[derive(Debug, Clone)]
pub struct Fleet<P> {
    clients: Vec<Client<P>>,
    view: View,
    /// Which client sends each arrival.
    assign: SimRng,
    /// For [`View::Global`] with subsets: per farm server, the (client, index) pairs that see it.
    watchers: Vec<Vec<(u32, u32)>>,
    /// The client of the last pick.
    last: u32,
}

impl<P: Policy> Fleet<P> {
    /// A fleet over `n` servers. `policies[c]` is client `c`'s policy, `subsets[c]` its servers
    /// (all of them, in farm order, if `subsets` is empty); `local` selects local information;
    /// `assign` draws the client of each arrival.
    pub fn new(
        n: usize,
        policies: Vec<P>,
        subsets: Vec<Vec<u32>>,
        local: bool,
        assign: SimRng,
    ) -> Self {
        assert!(!policies.is_empty(), "a fleet has at least one client");
        assert!(subsets.is_empty() || subsets.len() == policies.len(), "one subset per client");
        let view = match (local, subsets.is_empty()) {
            (true, _) => View::Local,
            (false, true) => View::Farm,
            (false, false) => View::Global,
        };
        let mut watchers = vec![Vec::new(); if view == View::Global { n } else { 0 }];
        let clients = policies
            .into_iter()
            .enumerate()
            .map(|(c, policy)| {
                let servers = subsets.get(c).cloned().unwrap_or_default();
                let mut index = Vec::new();
                if !servers.is_empty() {
                    index = vec![u32::MAX; n];
                    for (i, &s) in servers.iter().enumerate() {
                        index[s as usize] = i as u32;
                        if view == View::Global {
                            watchers[s as usize].push((c as u32, i as u32));
                        }
                    }
                }
                let size = if servers.is_empty() { n } else { servers.len() };
                let table =
                    LoadTable::new(if view == View::Farm { 0 } else { size }, P::NEEDS_SHORTEST);
                Client { policy, table, servers, index }
            })
            .collect();
        Fleet { clients, view, assign, watchers, last: 0 }
    }

    /// Client `c`'s policy (for tests).
    pub fn policy(&self, c: usize) -> &P {
        &self.clients[c].policy
    }
}

impl<P: Policy> Policy for Fleet<P> {
    const NEEDS_SHORTEST: bool = P::NEEDS_SHORTEST;
    const TAGGED: bool = true;

    #[inline]
    fn pick(&mut self, loads: &LoadTable, now: SimTime, rng: &mut SimRng) -> usize {
        let k = self.clients.len();
        let c = if k == 1 { 0 } else { super::uniform(&mut self.assign, k) };
        self.last = c as u32;
        let client = &mut self.clients[c];
        let s = match self.view {
            View::Farm => client.policy.pick(loads, now, rng),
            View::Local | View::Global => {
                let local = client.policy.pick(&client.table, now, rng);
                client.server(local)
            }
        };
        match self.view {
            View::Farm => {}
            View::Local => {
                let i = client.local_index(s).expect("a client picks among its servers");
                client.table.inc(i);
            }
            View::Global => {
                for &(w, i) in &self.watchers[s] {
                    self.clients[w as usize].table.inc(i as usize);
                }
            }
        }
        s
    }

    #[inline]
    fn tag(&self) -> u32 {
        self.last
    }

    #[inline]
    fn on_departure(&mut self, server: usize, sojourn: f64, now: SimTime, tag: u32) {
        if self.view == View::Global {
            for &(w, i) in &self.watchers[server] {
                self.clients[w as usize].table.dec(i as usize);
            }
        }
        let client = &mut self.clients[tag as usize];
        let i = client.local_index(server).expect("a request left a server of its client");
        if self.view == View::Local {
            client.table.dec(i);
        }
        client.policy.on_departure(i, sojourn, now, 0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::{Jsq, RoundRobin};
    use rand::SeedableRng;

    fn rng(seed: u64) -> SimRng {
        SimRng::seed_from_u64(seed)
    }

    #[test]
    fn local_clients_see_only_their_own_requests() {
        // Two jsq clients over 3 servers, local information: a client's table counts its own
        // requests in flight, so the other client's dispatches do not move it.
        let mut f = Fleet::new(3, vec![Jsq, Jsq], Vec::new(), true, rng(1));
        let farm = LoadTable::new(3, true);
        let mut coins = rng(2);
        let mut sent = [[0u32; 3]; 2];
        for _ in 0..30 {
            let s = f.pick(&farm, SimTime::ZERO, &mut coins);
            sent[f.tag() as usize][s] += 1;
        }
        for (c, row) in sent.iter().enumerate() {
            assert_eq!(f.clients[c].table.values(), row, "client {c}");
            // jsq on its own counts alone spreads each client's requests evenly.
            assert!(row.iter().max().unwrap() - row.iter().min().unwrap() <= 1, "{row:?}");
        }
        // A departure is removed from its sender's table only.
        let before = f.clients[1].table.values().to_vec();
        let s = (0..3).find(|&s| sent[0][s] > 0).unwrap();
        f.on_departure(s, 1.0, SimTime::ZERO, 0);
        assert_eq!(f.clients[0].table.get(s), sent[0][s] - 1);
        assert_eq!(f.clients[1].table.values(), &before[..]);
    }

    #[test]
    fn subsets_map_back_to_farm_servers_and_global_views_track_every_client() {
        // Client 0 uses servers [4, 1], client 1 uses [1, 3]; global information. Round robin
        // in each client's own order.
        let subsets = vec![vec![4, 1], vec![1, 3]];
        let mut f =
            Fleet::new(5, vec![RoundRobin::new(2), RoundRobin::new(2)], subsets, false, rng(3));
        let farm = LoadTable::new(5, false);
        let mut coins = rng(4);
        let mut true_len = [0u32; 5];
        for _ in 0..40 {
            let s = f.pick(&farm, SimTime::ZERO, &mut coins);
            let allowed: &[usize] = if f.tag() == 0 { &[4, 1] } else { &[1, 3] };
            assert!(allowed.contains(&s), "client {} picked {s}", f.tag());
            true_len[s] += 1;
        }
        // Every client's table holds the true lengths of its servers, whoever sent them.
        assert_eq!(f.clients[0].table.values(), &[true_len[4], true_len[1]]);
        assert_eq!(f.clients[1].table.values(), &[true_len[1], true_len[3]]);
        f.on_departure(1, 1.0, SimTime::ZERO, 0);
        assert_eq!(f.clients[0].table.get(1), true_len[1] - 1);
        assert_eq!(f.clients[1].table.get(0), true_len[1] - 1);
    }

    #[test]
    fn clients_are_drawn_uniformly() {
        // 8 clients, 80 000 arrivals: each count is Binomial(80 000, 1/8), sd = 93.5; 5 sd = 468.
        let mut f = Fleet::new(4, vec![RoundRobin::new(4); 8], Vec::new(), true, rng(9));
        let farm = LoadTable::new(4, false);
        let mut coins = rng(1);
        let mut counts = [0u32; 8];
        for _ in 0..80_000 {
            let s = f.pick(&farm, SimTime::ZERO, &mut coins);
            counts[f.tag() as usize] += 1;
            f.on_departure(s, 1.0, SimTime::ZERO, f.tag());
        }
        for c in counts {
            assert!((f64::from(c) - 10_000.0).abs() < 468.0, "{counts:?}");
        }
    }
}

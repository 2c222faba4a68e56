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
//! - **health**: [`Policy::set_hosts`] names a client (its tag) and goes to that client's policy
//!   alone, in the client's own server order;
//! - a client learns from the responses to its own requests only ([`Policy::on_departure`] and
//!   [`Policy::on_response`] go to the sender, found from the request's tag).
//!
//! The feedback policies run in fleets too (gRPC runs one `weighted_round_robin` per client
//! channel, C3 one replica selector per client, Prequal one probe pool per client):
//!
//! - **load reports** go to every client, each receiving those of its own servers in its own
//!   order (every client has the same report and timer periods: they are built from the same
//!   parameters, so the fleet uses client 0's);
//! - **timers** fire in every client;
//! - **probes** are sent by the client of the pick they follow, to servers of its own; the engine
//!   carries the tag of that pick with the probe, so the reply comes back to its sender;
//! - **backlogs**: a policy that holds requests back ([`Policy::HOLDS`], c3's rate control) does
//!   so per client: the fleet draws the client of an arrival in [`Policy::assign`] and the engine
//!   keeps a backlog per client, so one client's held request never waits behind another's.
//!
//! The coin flips of every client come from the replication's one policy stream, in arrival order:
//! with global information and no subsets, K clients of a policy without per-client state (p2c,
//! jsq, least-request) make exactly the choices of one, which a test checks.

use super::{LoadReport, Policy, ProbeReply, Response};
use crate::lifecycle::health::SlowStart;
use crate::model::LoadTable;
use crate::rng::SimRng;
use crate::time::SimTime;

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
    /// One client's load reports, in its own server order (reused across reports).
    reports: Vec<LoadReport>,
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
        Fleet { clients, view, assign, watchers, last: 0, reports: Vec::new() }
    }

    /// The client of the next arrival.
    #[inline]
    fn draw(&mut self) -> usize {
        let k = self.clients.len();
        if k == 1 { 0 } else { super::uniform(&mut self.assign, k) }
    }

    /// Client `c` sent a request to farm server `s`: the tables that count it.
    #[inline]
    fn sent(&mut self, c: usize, s: usize) {
        self.last = c as u32;
        match self.view {
            View::Farm => {}
            View::Local => {
                let client = &mut self.clients[c];
                let i = client.local_index(s).expect("a client picks among its servers");
                client.table.inc(i);
            }
            View::Global => {
                for &(w, i) in &self.watchers[s] {
                    self.clients[w as usize].table.inc(i as usize);
                }
            }
        }
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
        let c = self.draw();
        let client = &mut self.clients[c];
        let s = match self.view {
            View::Farm => client.policy.pick(loads, now, rng),
            View::Local | View::Global => {
                let local = client.policy.pick(&client.table, now, rng);
                client.server(local)
            }
        };
        self.sent(c, s);
        s
    }

    #[inline]
    fn tag(&self) -> u32 {
        self.last
    }

    /// Forwards to client `client`'s policy, in its own server order: a client with a subset
    /// gets the allowed hosts of its subset (farm servers outside it are not its to pick).
    fn set_hosts(&mut self, client: u32, hosts: Option<&[u32]>) {
        let cl = &mut self.clients[client as usize];
        match hosts {
            Some(h) if !cl.index.is_empty() => {
                let mut local: Vec<u32> = h
                    .iter()
                    .filter_map(|&s| cl.local_index(s as usize).map(|i| i as u32))
                    .collect();
                local.sort_unstable();
                assert!(!local.is_empty(), "client {client}: no allowed host in its subset");
                cl.policy.set_hosts(0, Some(&local));
            }
            _ => cl.policy.set_hosts(0, hosts),
        }
    }

    /// Forwards to client `client`'s policy, in its own server order (a host outside its
    /// subset is not its concern).
    fn slow_start(&mut self, client: u32, host: usize, since: f64, rule: &SlowStart) {
        let cl = &mut self.clients[client as usize];
        if let Some(local) = cl.local_index(host) {
            cl.policy.slow_start(0, local, since, rule);
        }
    }

    // ----- client backlogs: each client holds back its own requests -----

    const HOLDS: bool = P::HOLDS;

    #[inline]
    fn clients(&self) -> u32 {
        self.clients.len() as u32
    }

    #[inline]
    fn assign(&mut self) -> u32 {
        self.draw() as u32
    }

    /// Every client's policy shares the replication's keys: the first one hears it.
    fn use_key(&mut self, key: u64) {
        if let Some(c) = self.clients.first_mut() {
            c.policy.use_key(key);
        }
    }

    #[inline]
    fn try_pick(
        &mut self,
        client: u32,
        loads: &LoadTable,
        now: SimTime,
        rng: &mut SimRng,
    ) -> Result<usize, f64> {
        let c = client as usize;
        let cl = &mut self.clients[c];
        let s = match self.view {
            View::Farm => cl.policy.try_pick(0, loads, now, rng)?,
            View::Local | View::Global => {
                let local = cl.policy.try_pick(0, &cl.table, now, rng)?;
                cl.server(local)
            }
        };
        self.sent(c, s);
        Ok(s)
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

    // ----- feedback: each client hears about its own requests and servers -----

    const FEEDBACK: bool = P::FEEDBACK;

    #[inline]
    fn on_response(&mut self, server: usize, response: &Response, now: SimTime, tag: u32) {
        let client = &mut self.clients[tag as usize];
        let i = client.local_index(server).expect("a response from a server of its client");
        client.policy.on_response(i, response, now, 0);
    }

    fn report_period(&self) -> Option<f64> {
        self.clients[0].policy.report_period()
    }

    fn on_reports(&mut self, reports: &[LoadReport], now: SimTime) {
        for client in &mut self.clients {
            if client.servers.is_empty() {
                client.policy.on_reports(reports, now);
            } else {
                self.reports.clear();
                self.reports.extend(client.servers.iter().map(|&s| reports[s as usize]));
                client.policy.on_reports(&self.reports, now);
            }
        }
    }

    fn timer_period(&self) -> Option<f64> {
        self.clients[0].policy.timer_period()
    }

    fn on_timer(&mut self, now: SimTime) {
        for client in &mut self.clients {
            client.policy.on_timer(now);
        }
    }

    #[inline]
    fn probes(&mut self, now: SimTime, rng: &mut SimRng, out: &mut Vec<usize>) {
        // Called right after a pick: the probes are that pick's client's, to its own servers.
        let client = &mut self.clients[self.last as usize];
        let start = out.len();
        client.policy.probes(now, rng, out);
        if !client.servers.is_empty() {
            for s in &mut out[start..] {
                *s = client.servers[*s] as usize;
            }
        }
    }

    fn probe_delay(&self) -> f64 {
        self.clients[0].policy.probe_delay()
    }

    fn on_probe(&mut self, server: usize, reply: ProbeReply, now: SimTime, tag: u32) {
        let client = &mut self.clients[tag as usize];
        let i = client.local_index(server).expect("a probe of a server of its client");
        client.policy.on_probe(i, reply, now, 0);
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
        let mut f = Fleet::new(3, vec![Jsq::new(), Jsq::new()], Vec::new(), true, rng(1));
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

    /// What one recording client heard, in its own server indices.
    #[derive(Debug, Default)]
    struct Log {
        /// Its requests not yet answered, per server.
        outstanding: Vec<i64>,
        /// Responses (server, the `queue` field, used as a label).
        responses: Vec<(usize, u32)>,
        /// Every batch of reports (their `qps`, used as a label).
        reports: Vec<Vec<f64>>,
        timers: u32,
        /// Probes sent and not back: (server, when sent).
        probes: Vec<(usize, f64)>,
        /// Probe replies that matched no probe of this client's.
        strays: u32,
        replies: u32,
    }

    /// A feedback policy that picks uniformly among its servers, probes two of them after each
    /// pick, and logs what reaches it (the log is shared, so that it outlives a simulation).
    #[derive(Debug, Clone)]
    struct Recorder {
        n: usize,
        delay: f64,
        log: std::rc::Rc<std::cell::RefCell<Log>>,
    }

    impl Recorder {
        fn new(n: usize, delay: f64) -> Self {
            let log = Log { outstanding: vec![0; n], ..Log::default() };
            Recorder { n, delay, log: std::rc::Rc::new(std::cell::RefCell::new(log)) }
        }
    }

    impl Policy for Recorder {
        const TAGGED: bool = true;
        const FEEDBACK: bool = true;

        fn pick(&mut self, _loads: &LoadTable, _now: SimTime, rng: &mut SimRng) -> usize {
            let s = crate::policy::uniform(rng, self.n);
            self.log.borrow_mut().outstanding[s] += 1;
            s
        }

        fn set_hosts(&mut self, _client: u32, _hosts: Option<&[u32]>) {}

        fn on_response(&mut self, server: usize, r: &Response, _now: SimTime, tag: u32) {
            assert_eq!(tag, 0, "a client is one dispatcher");
            let mut log = self.log.borrow_mut();
            log.outstanding[server] -= 1;
            assert!(log.outstanding[server] >= 0, "a response to a request it did not send");
            log.responses.push((server, r.queue));
        }

        fn report_period(&self) -> Option<f64> {
            Some(5.0)
        }

        fn on_reports(&mut self, reports: &[LoadReport], _now: SimTime) {
            self.log.borrow_mut().reports.push(reports.iter().map(|r| r.qps).collect());
        }

        fn timer_period(&self) -> Option<f64> {
            Some(7.0)
        }

        fn on_timer(&mut self, _now: SimTime) {
            self.log.borrow_mut().timers += 1;
        }

        fn probes(&mut self, now: SimTime, rng: &mut SimRng, out: &mut Vec<usize>) {
            for _ in 0..2 {
                let s = crate::policy::uniform(rng, self.n);
                out.push(s);
                self.log.borrow_mut().probes.push((s, now.get()));
            }
        }

        fn probe_delay(&self) -> f64 {
            self.delay
        }

        fn on_probe(&mut self, server: usize, _reply: ProbeReply, now: SimTime, tag: u32) {
            assert_eq!(tag, 0, "a client is one dispatcher");
            let mut log = self.log.borrow_mut();
            log.replies += 1;
            // The probe it answers: sent to this server one delay ago (up to the rounding of
            // t + d/2 + d/2).
            let delay = self.delay;
            let sent = log
                .probes
                .iter()
                .position(|&(s, at)| s == server && (at + delay - now.get()).abs() < 1e-9);
            match sent {
                Some(i) => {
                    log.probes.swap_remove(i);
                }
                None => log.strays += 1,
            }
        }
    }

    fn response(label: u32) -> Response {
        Response { sojourn: 1.0, service: 1.0, queue: label }
    }

    #[test]
    fn a_response_reaches_its_sender_only_at_its_own_index() {
        // Three clients over subsets of 5 servers (in their own orders), local information.
        // Every response is labelled with the pick's number: each client must hear exactly its
        // own picks' responses, at the index its subset gives the server.
        let subsets = vec![vec![4, 1, 0], vec![1, 3], vec![2, 0, 3, 4]];
        let clients: Vec<Recorder> = subsets.iter().map(|s| Recorder::new(s.len(), 0.0)).collect();
        let logs: Vec<_> = clients.iter().map(|c| c.log.clone()).collect();
        let mut f = Fleet::new(5, clients, subsets.clone(), true, rng(5));
        let farm = LoadTable::new(5, false);
        let mut coins = rng(6);
        let mut want = vec![Vec::new(); 3];
        for label in 0..300 {
            let s = f.pick(&farm, SimTime::ZERO, &mut coins);
            let c = f.tag() as usize;
            let i = subsets[c].iter().position(|&x| x == s as u32).expect("in its subset");
            want[c].push((i, label));
            f.on_response(s, &response(label), SimTime::ZERO, c as u32);
        }
        for (c, log) in logs.iter().enumerate() {
            assert!(want[c].len() > 50, "client {c} sent {}", want[c].len());
            assert_eq!(log.borrow().responses, want[c], "client {c}");
        }
    }

    #[test]
    fn reports_are_split_by_subset_in_each_clients_order_and_timers_reach_every_client() {
        // Server s reports qps = 10 + s: client 0 (servers 4, 1) must read [14, 11], client 1
        // (1, 3) [11, 13]; a fleet without subsets gives every client all five in farm order.
        let subsets = vec![vec![4, 1], vec![1, 3]];
        let clients = vec![Recorder::new(2, 0.0), Recorder::new(2, 0.0)];
        let logs: Vec<_> = clients.iter().map(|c| c.log.clone()).collect();
        let mut f = Fleet::new(5, clients, subsets, false, rng(1));
        assert_eq!((f.report_period(), f.timer_period()), (Some(5.0), Some(7.0)));
        let reports: Vec<LoadReport> =
            (0..5).map(|s| LoadReport { qps: 10.0 + s as f64, utilization: 0.5 }).collect();
        f.on_reports(&reports, SimTime::ZERO);
        f.on_timer(SimTime::ZERO);
        assert_eq!(logs[0].borrow().reports, [[14.0, 11.0]]);
        assert_eq!(logs[1].borrow().reports, [[11.0, 13.0]]);
        assert!(logs.iter().all(|l| l.borrow().timers == 1));

        let all: Vec<Recorder> = (0..3).map(|_| Recorder::new(5, 0.0)).collect();
        let logs: Vec<_> = all.iter().map(|c| c.log.clone()).collect();
        let mut f = Fleet::new(5, all, Vec::new(), true, rng(1));
        f.on_reports(&reports, SimTime::ZERO);
        for log in logs {
            assert_eq!(log.borrow().reports, [[10.0, 11.0, 12.0, 13.0, 14.0]]);
        }
    }

    #[test]
    fn probes_go_to_the_pickers_servers_and_replies_back_to_it() {
        // Through the engine, probes immediate (delay 0) and in flight (delay 3, so that the
        // replies of many clients interleave): every reply must match a probe its client sent
        // to that server one delay earlier, and every probe must come back. Every response must
        // answer a request of its client's (the recorder asserts it) and all must be answered.
        use crate::engine::simulate;
        use crate::model::{Farm, Information, RunLength, SimOptions};
        use crate::workload::{ExpDemands, PoissonGaps};
        let subsets = vec![vec![0, 1, 2], vec![2, 3], vec![5, 4, 3, 1], vec![0, 5]];
        for delay in [0.0, 3.0] {
            let clients: Vec<Recorder> =
                subsets.iter().map(|s| Recorder::new(s.len(), delay)).collect();
            let logs: Vec<_> = clients.iter().map(|c| c.log.clone()).collect();
            let fleet = Fleet::new(6, clients, subsets.clone(), true, rng(7));
            let farm = Farm::homogeneous(6, 0.7);
            let len = RunLength { warmup: 100, requests: 5_000 };
            let opts = SimOptions::plain(Information::Live);
            let mut gaps = PoissonGaps(farm.arrival_rate());
            simulate(&farm, len, opts, fleet, &mut gaps, &ExpDemands, rng(8), rng(9));
            let mut sent = 0;
            for (c, log) in logs.iter().enumerate() {
                let log = log.borrow();
                assert_eq!(log.strays, 0, "delay {delay}: client {c} got others' replies");
                assert!(log.probes.is_empty(), "delay {delay}: client {c}: {:?}", log.probes);
                assert!(log.outstanding.iter().all(|&o| o == 0), "client {c} unanswered");
                assert!(log.replies > 1_000, "client {c}: {} replies", log.replies);
                assert!(log.timers > 0 && !log.reports.is_empty());
                sent += log.responses.len();
            }
            assert_eq!(sent, 5_100);
        }
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

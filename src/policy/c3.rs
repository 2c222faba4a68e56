//! `c3`: C3's replica ranking (Suresh, Canini, Schmid and Feldmann, "C3: Cutting Tail Latency in
//! Cloud Data Stores via Adaptive Replica Selection", NSDI 2015, §3.1).
//!
//! Each server piggy-backs on every response its queue length and the request's service time
//! ([`Response`]); the client keeps, per server, exponentially weighted moving averages of the
//! response time `R`, the service time `1/mu` and the queue `q`, each new sample weighted
//! `alpha = 0.9` (the paper's simulator), and counts its own outstanding requests `os` to the
//! server. A request goes to the server of lowest score
//!
//! ```text
//! psi = R - 1/mu + q_hat^3 / mu,    q_hat = 1 + os * clients + q
//! ```
//!
//! (the cubic penalty, `b = 3`, and the concurrency compensation `os * clients`), ties broken
//! uniformly at random. A server never heard from scores 0, so each is tried early.
//!
//! The authors' implementation in Cassandra (lalithsuresh/cassandra-c3,
//! `src/java/org/apache/cassandra/c3/ScoreTracker.java`) computes the same score:
//! `getEMA(value, previous) = ALPHA * value + (1 - ALPHA) * previous` with `ALPHA = 0.9`, an EMA of
//! `latency - serviceTime` (which is `R - 1/mu` above, the EMAs being linear), and
//! `responseTimeEMA + (1 + queueSizeEMA + concurrencyCompensation)^3 * serviceTimeEMA` with
//! `concurrencyCompensation = pendingRequests.size() * outstanding`, where its comment reads the
//! size of the pending-request map as "the number of clients"; a server without a pending counter
//! scores 0.
//!
//! The paper's second half, cubic rate control (a per-server sending-rate limit with a client
//! backlog when every server is over its limit; `RateController.java` in the same repository:
//! `CUBIC_BETA = 0.2`, `CUBIC_C = 0.000004`, `CUBIC_SMAX = 10`, hysteresis of 4 rate intervals),
//! is **not** modelled: lbsim dispatches every
//! request on arrival, and holding requests back at the client would need a client queue in the
//! engine. This policy is C3's ranking alone.

use super::{Policy, Response, uniform};
use crate::engine::SimTime;
use crate::model::LoadTable;
use crate::rng::SimRng;

/// The weight of a new sample in C3's moving averages.
pub const C3_ALPHA: f64 = 0.9;

/// What the client knows of one server.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct C3Server {
    /// EWMA of response times.
    pub response: f64,
    /// EWMA of service times (`1/mu`).
    pub service: f64,
    /// EWMA of reported queue lengths.
    pub queue: f64,
    /// Requests sent and not yet answered.
    pub outstanding: u32,
}

impl C3Server {
    /// The score `R - 1/mu + q_hat^3 / mu` with `clients` clients.
    pub fn score(&self, clients: f64) -> f64 {
        let q_hat = 1.0 + f64::from(self.outstanding) * clients + self.queue;
        self.response - self.service + q_hat.powi(3) * self.service
    }

    /// Folds in a response.
    pub fn update(&mut self, r: &Response) {
        let ewma = |old: f64, new: f64| C3_ALPHA * new + (1.0 - C3_ALPHA) * old;
        self.response = ewma(self.response, r.sojourn);
        self.service = ewma(self.service, r.service);
        self.queue = ewma(self.queue, f64::from(r.queue));
        self.outstanding = self.outstanding.saturating_sub(1);
    }
}

/// C3's replica ranking.
#[derive(Debug, Clone)]
pub struct C3 {
    servers: Vec<C3Server>,
    clients: f64,
}

impl C3 {
    /// Over `n` servers, one of `clients` clients.
    pub fn new(n: usize, clients: usize) -> Self {
        assert!(n >= 1);
        C3 { servers: vec![C3Server::default(); n], clients: clients as f64 }
    }

    /// What the client knows of server `s`.
    pub fn server(&self, s: usize) -> &C3Server {
        &self.servers[s]
    }
}

impl Policy for C3 {
    const TAGGED: bool = true;
    const FEEDBACK: bool = true;

    fn pick(&mut self, _loads: &LoadTable, _now: SimTime, rng: &mut SimRng) -> usize {
        // Scan from a random start and keep the first strict minimum: ties go to a uniformly
        // random one of them.
        let n = self.servers.len();
        let start = uniform(rng, n);
        let mut best = start;
        let mut best_score = self.servers[start].score(self.clients);
        for k in 1..n {
            let s = (start + k) % n;
            let score = self.servers[s].score(self.clients);
            if score < best_score {
                best = s;
                best_score = score;
            }
        }
        self.servers[best].outstanding += 1;
        best
    }

    fn on_response(&mut self, server: usize, response: &Response, _now: SimTime, _tag: u32) {
        self.servers[server].update(response);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_score_of_a_worked_example() {
        // Two responses from one server, alpha = 0.9:
        //   1st: R = 0.9 * 4 = 3.6, 1/mu = 0.9 * 2 = 1.8, q = 0.9 * 3 = 2.7
        //   2nd: R = 0.9 * 2 + 0.1 * 3.6 = 2.16, 1/mu = 0.9 * 1 + 0.1 * 1.8 = 1.08,
        //        q = 0.9 * 1 + 0.1 * 2.7 = 1.17
        // With 2 outstanding of 3 clients: q_hat = 1 + 2 * 3 + 1.17 = 8.17, and
        //   psi = 2.16 - 1.08 + 8.17^3 * 1.08 = 1.08 + 545.338513 * 1.08 = 590.04559404.
        let mut s = C3Server { outstanding: 4, ..C3Server::default() };
        s.update(&Response { sojourn: 4.0, service: 2.0, queue: 3 });
        s.update(&Response { sojourn: 2.0, service: 1.0, queue: 1 });
        assert_eq!(s.outstanding, 2);
        assert!((s.response - 2.16).abs() < 1e-12);
        assert!((s.service - 1.08).abs() < 1e-12);
        assert!((s.queue - 1.17).abs() < 1e-12);
        assert!((s.score(3.0) - 590.04559404).abs() < 1e-8, "{}", s.score(3.0));
    }

    #[test]
    fn the_lowest_score_wins_and_counts_as_outstanding() {
        let mut c = C3::new(3, 1);
        let mut rng = <SimRng as rand::SeedableRng>::seed_from_u64(9);
        // Servers 0 and 2 answered slowly, server 1 quickly.
        c.on_response(0, &Response { sojourn: 5.0, service: 1.0, queue: 4 }, SimTime::ZERO, 0);
        c.on_response(1, &Response { sojourn: 1.0, service: 1.0, queue: 0 }, SimTime::ZERO, 0);
        c.on_response(2, &Response { sojourn: 5.0, service: 1.0, queue: 4 }, SimTime::ZERO, 0);
        let loads = LoadTable::new(3, false);
        assert_eq!(c.pick(&loads, SimTime::ZERO, &mut rng), 1);
        assert_eq!(c.server(1).outstanding, 1);
    }
}

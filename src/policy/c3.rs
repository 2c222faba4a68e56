//! `c3`: C3's adaptive replica selection (Suresh, Canini, Schmid and Feldmann, "C3: Cutting Tail
//! Latency in Cloud Data Stores via Adaptive Replica Selection", NSDI 2015, §3), as its authors'
//! simulator implements it (lalithsuresh/absim, `simulations/client.py`, strategy `expDelay` with
//! `--backpressure`), cross-checked against their Cassandra implementation
//! (lalithsuresh/cassandra-c3, `src/java/org/apache/cassandra/c3/`).
//!
//! # Ranking
//!
//! Each server piggy-backs on every response its queue length and the request's service time
//! ([`Response`]); the client keeps, per server, exponentially weighted moving averages of the
//! response time `R`, the service time `1/mu` and the queue `q`, each new sample weighted
//! `alpha = 0.9` (`Client.updateEma`), and counts its own outstanding requests `os` to the
//! server. Servers are ranked by
//!
//! ```text
//! psi = R - 1/mu + q_hat^3 / mu,    q_hat = 1 + os * clients + q
//! ```
//!
//! (`Client.computeExpectedDelay`: the cubic penalty `b = 3` and the concurrency compensation
//! `os * clients`), ties in a uniformly random rotation. A server never heard from scores 0, so
//! each is tried early. Cassandra's `ScoreTracker.java` computes the same score
//! (`responseTimeEMA + (1 + queueSizeEMA + concurrencyCompensation)^3 * serviceTimeEMA`, with
//! `ALPHA = 0.9` on the new sample and an EMA of `latency - serviceTime`).
//!
//! # Cubic rate control (`rate_control`, on by default)
//!
//! Each client limits its sending rate to every server with a token bucket and adapts the limit
//! to the rate at which that server answers it, like TCP CUBIC (`Client.updateRates`,
//! `RateLimiter`, `ReceiveRate`, `BackpressureScheduler`):
//!
//! - **Sending.** A request goes to the best-ranked server whose bucket holds a token. If none
//!   does, it waits in the client's backlog (FIFO, which later requests join) until the soonest
//!   bucket refills, and is ranked again then (that bucket is set to exactly one token, as the
//!   simulator does against rounding). A bucket holds at most `max_tokens` (50), starts empty,
//!   and refills at `srate` tokens per rate interval `delta`; `srate` starts at 5.
//! - **Receive rate** `rrate`, per server, in responses per interval: on the first response of a
//!   later interval, `rrate = 0.9 * count + 0.1 * rrate` with `count` the responses since the
//!   last update (the current one included); after 20 intervals or more without one,
//!   `rrate = count`. It starts at 10.
//! - **Cubic update**, on every response, after the receive rate: if `srate < rrate`,
//!   `srate = min(srate + s_max, C * (T - (R0 * beta / C)^(1/3))^3 + R0)`, with `T` the time since
//!   the last decrease and `R0` the rate before it (10 at the start); if `srate > rrate` and
//!   the last increase is more than `hysteresis` intervals ago, `R0 = srate` and
//!   `srate = max(beta * srate, 0.0001)`.
//!
//! Defaults are those the simulator's experiments use (`run-all.sh` of absim: `--rateInterval
//! 20 --cubicC 0.000004 --cubicSmax 10 --cubicBeta 0.2 --hysterisisFactor 2`, service times of
//! 4 ms), converted to lbsim's time unit, the mean service time: `delta = 20 ms = 5` units and
//! `C = 4e-6 / ms^3 = 4e-6 * 4^3 = 2.56e-4` per unit cubed. Cassandra's `RateController.java`
//! uses the same `beta`, `C` and `s_max` with `delta = 20 ms`, a hysteresis of 4 intervals,
//! buckets of 200 tokens that start full and a first `srate` of 1.
//!
//! Not modelled: the replication factor (a C3 client chooses among the 3 replicas of a key; here
//! among all servers), the simulator's shadow reads (duplicates sent to other replicas to
//! refresh their scores) and network delays. In a fleet every client keeps its own buckets,
//! receive rates and backlog.
//!
//! With some hosts excluded ([`Policy::set_hosts`]) the ranking, the random rotation that breaks
//! ties and the search for a token run over the allowed servers only, as a C3 client ranks only
//! the replicas it may send to; the scores and rate controls of excluded servers are kept.

use super::ewma::blend;
use super::min_blocks::MinBlocks;
use super::tuning::{flag, non_negative, number_where, params, positive};
use super::{Hosts, Policy, Response, uniform};
use crate::admission::TokenBucket;
use crate::model::LoadTable;
use crate::rng::SimRng;
use crate::time::SimTime;

/// The weight of a new sample in C3's moving averages.
pub const C3_ALPHA: f64 = 0.9;

/// What a moving average keeps of its old value, `1 - alpha`. [`blend`] weighs the new sample
/// with `1 - (1 - alpha)`, which is exactly `alpha` for any `alpha` in `[0.5, 1]` (both
/// subtractions are exact), so the averages are computed as absim's `alpha * new + (1 - alpha) *
/// old`, to the last bit.
const KEEP: f64 = 1.0 - C3_ALPHA;
const _: () = assert!(1.0 - KEEP == C3_ALPHA && 1.0 - RECEIVE_KEEP == RECEIVE_ALPHA);

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
        self.response = blend(self.response, r.sojourn, KEEP);
        self.service = blend(self.service, r.service, KEEP);
        self.queue = blend(self.queue, f64::from(r.queue), KEEP);
        self.outstanding = self.outstanding.saturating_sub(1);
    }
}

params! {
    /// The parameters of `c3`, in lbsim's time unit (see the module documentation).
    pub struct C3Config {
        /// Cubic rate control with a client backlog (`false`: ranking alone).
        #[serde(deserialize_with = "flag")]
        pub rate_control: bool,
        /// The rate interval `delta`: rates are counted in tokens or responses per interval.
        #[serde(rename = "rate_interval", deserialize_with = "positive")]
        pub interval: f64,
        /// The cubic scaling factor `C`, per time unit cubed.
        #[serde(deserialize_with = "positive")]
        pub cubic_c: f64,
        /// The multiplicative decrease `beta`.
        #[serde(deserialize_with = "beta")]
        pub beta: f64,
        /// The largest increase of one update `s_max`, tokens per interval.
        #[serde(deserialize_with = "positive")]
        pub smax: f64,
        /// No decrease within this many intervals of an increase.
        #[serde(deserialize_with = "non_negative")]
        pub hysteresis: f64,
        /// The most tokens a bucket holds.
        #[serde(deserialize_with = "max_tokens")]
        pub max_tokens: f64,
    }
}

/// `beta`: strictly between 0 and 1.
fn beta<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    number_where(d, |x| x > 0.0 && x < 1.0, "a number between 0 and 1")
}

/// `max_tokens`: at least one token.
fn max_tokens<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    number_where(d, |x| x >= 1.0, "a number >= 1")
}

impl Default for C3Config {
    fn default() -> Self {
        C3Config {
            rate_control: true,
            interval: 5.0,
            cubic_c: 4e-6 * 64.0,
            beta: 0.2,
            smax: 10.0,
            hysteresis: 2.0,
            max_tokens: 50.0,
        }
    }
}

/// The first sending rate, tokens per interval (absim's `RateLimiter.rate`).
pub const C3_FIRST_RATE: f64 = 5.0;
/// The first receive rate, responses per interval (absim's `ReceiveRate.rate`).
pub const C3_FIRST_RECEIVE_RATE: f64 = 10.0;
/// The first `R0` (absim's `valueOfLastDecrease`).
pub const C3_FIRST_R0: f64 = 10.0;
/// Intervals without a response after which the receive rate restarts from the count (absim
/// compares the number of intervals elapsed with the interval's length in milliseconds, 20).
pub const C3_RECEIVE_RESET: i64 = 20;
/// The weight of the newest count in the receive rate.
const RECEIVE_ALPHA: f64 = 0.9;
/// What the receive rate keeps of its old value (see [`KEEP`]).
const RECEIVE_KEEP: f64 = 1.0 - RECEIVE_ALPHA;
/// The lowest sending rate a decrease leaves.
const LOWEST_RATE: f64 = 0.0001;

/// One client's rate control towards one server: its token bucket, the server's receive rate
/// and the cubic state.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateControl {
    /// The sending-rate limit `srate`, tokens per interval.
    rate: f64,
    /// The token bucket, refilled at `srate / interval` per time unit.
    bucket: TokenBucket,
    /// The receive rate `rrate`, responses per interval.
    pub receive: f64,
    /// The interval of the last receive-rate update.
    tick: i64,
    /// Responses since then.
    count: u64,
    /// `R0`: the sending rate before the last decrease.
    pub r0: f64,
    /// [`cubic_k`] of the `R0` in `k_of` (under the one configuration this rate control is
    /// made and updated with): a cube root per decrease, not per response.
    k: f64,
    k_of: f64,
    last_decrease: f64,
    last_increase: f64,
}

impl RateControl {
    /// Rate control under `cfg`, as it starts: an empty bucket, the first rates.
    pub fn new(cfg: &C3Config) -> Self {
        RateControl {
            rate: C3_FIRST_RATE,
            bucket: TokenBucket::empty(C3_FIRST_RATE / cfg.interval, cfg.max_tokens),
            receive: C3_FIRST_RECEIVE_RATE,
            tick: 0,
            count: 0,
            r0: C3_FIRST_R0,
            k: cubic_k(C3_FIRST_R0, cfg),
            k_of: C3_FIRST_R0,
            last_decrease: 0.0,
            last_increase: 0.0,
        }
    }

    /// The sending-rate limit `srate`, tokens per interval.
    pub fn rate(&self) -> f64 {
        self.rate
    }

    fn set_rate(&mut self, rate: f64, cfg: &C3Config) {
        self.rate = rate;
        self.bucket.set_rate(rate / cfg.interval);
    }

    /// Tokens in the bucket at `t` (`RateLimiter.getTokens`).
    pub fn tokens_at(&self, t: f64) -> f64 {
        self.bucket.level(t)
    }

    /// Takes a token at `t` if there is one (`tryAcquire` then `update`); otherwise the time
    /// until there is one.
    pub fn try_acquire(&mut self, t: f64, cfg: &C3Config) -> Result<(), f64> {
        self.bucket.try_take(t).map_err(|tokens| self.wait_for(tokens, cfg))
    }

    /// The time until a bucket holding `tokens` (fewer than one) holds a token.
    #[inline]
    fn wait_for(&self, tokens: f64, cfg: &C3Config) -> f64 {
        (1.0 - tokens) * cfg.interval / self.rate
    }

    /// Counts `k` responses at `t` into the receive rate (`ReceiveRate.add`).
    pub fn received(&mut self, k: u64, t: f64, cfg: &C3Config) {
        let x = t / cfg.interval;
        // Truncation is the floor of a time that is not negative, without a call to `floor`.
        let tick = if x >= 0.0 { x as i64 } else { x.floor() as i64 };
        if tick - self.tick < C3_RECEIVE_RESET {
            self.count += k;
            if tick > self.tick {
                self.receive = blend(self.receive, self.count as f64, RECEIVE_KEEP);
                self.tick = tick;
                self.count = 0;
            }
        } else {
            self.receive = self.count as f64;
            self.tick = tick;
            self.count = 0;
        }
    }

    /// The cubic update after a response at `t` (`Client.updateRates`).
    pub fn update(&mut self, t: f64, cfg: &C3Config) {
        self.received(0, t, cfg);
        let (send, receive) = (self.rate, self.receive);
        if send < receive {
            let since = t - self.last_decrease;
            self.last_increase = t;
            if self.k_of.to_bits() != self.r0.to_bits() {
                self.k = cubic_k(self.r0, cfg);
                self.k_of = self.r0;
            }
            let k = self.k;
            let cubic = cfg.cubic_c * (since - k).powi(3) + self.r0;
            self.set_rate(if cubic - send > cfg.smax { send + cfg.smax } else { cubic }, cfg);
        } else if send > receive && t - self.last_increase > cfg.interval * cfg.hysteresis {
            self.r0 = send;
            self.set_rate((send * cfg.beta).max(LOWEST_RATE), cfg);
            self.last_decrease = t;
        }
    }
}

/// The cubic's `K = cbrt(R0 * beta / C)`: when, after a decrease from `R0`, the rate is back at it.
fn cubic_k(r0: f64, cfg: &C3Config) -> f64 {
    (r0 * cfg.beta / cfg.cubic_c).cbrt()
}

/// C3: replica ranking, with cubic rate control unless `rate_control = false`.
#[derive(Debug, Clone)]
pub struct C3 {
    servers: Vec<C3Server>,
    /// `servers[s].score(clients)`, brought up to date whenever `servers[s]` changes, so a
    /// ranking reads each score instead of computing it (the same bits), with the lowest of
    /// every block of eight.
    scores: MinBlocks,
    clients: f64,
    cfg: C3Config,
    rates: Vec<RateControl>,
    /// The server whose bucket the client's backlog waits for.
    waiting: Option<usize>,
    hosts: Hosts,
    /// Per server with rate control, its score if it is known to hold a token from the last
    /// ranking on (until its bucket next changes: a bucket left alone only fills), else
    /// infinity: the servers [`Self::taker_among_all`] ranks.
    keys: MinBlocks,
    /// The servers whose key is infinity: without a token at the last ranking, or whose bucket
    /// changed since (and did not keep a token for good).
    unsure: Vec<u32>,
    /// Per server with rate control, whether it is in `unsure`.
    is_unsure: Vec<bool>,
}

impl C3 {
    /// Over `n` servers, one of `clients` clients.
    pub fn new(n: usize, clients: usize, cfg: C3Config) -> Self {
        assert!(n >= 1);
        let clients = clients as f64;
        let rate_controls = if cfg.rate_control { n } else { 0 };
        // Every bucket starts empty: every server unsure.
        C3 {
            servers: vec![C3Server::default(); n],
            scores: MinBlocks::new(n, C3Server::default().score(clients)),
            clients,
            cfg,
            rates: vec![RateControl::new(&cfg); rate_controls],
            waiting: None,
            hosts: Hosts::all(),
            keys: MinBlocks::new(rate_controls, f64::INFINITY),
            unsure: (0..rate_controls as u32).collect(),
            is_unsure: vec![true; rate_controls],
        }
    }

    /// What the client knows of server `s`.
    pub fn server(&self, s: usize) -> &C3Server {
        &self.servers[s]
    }

    /// The rate control towards server `s` (with `rate_control`).
    pub fn rate_control(&self, s: usize) -> &RateControl {
        &self.rates[s]
    }

    /// Brings server `s`'s cached score up to date after its state changed.
    #[inline]
    fn rescore(&mut self, s: usize) {
        let score = self.servers[s].score(self.clients);
        self.scores.set(s, score);
        if self.cfg.rate_control && !self.is_unsure[s] {
            self.keys.set(s, score);
        }
    }

    /// After server `s`'s bucket changed: unless it keeps a whole token (its level then never
    /// falls below one before the next change: a bucket holds at least one, `max_tokens >= 1`,
    /// and fills at a positive rate), it is unsure until the next ranking looks.
    #[inline]
    fn rebucketed(&mut self, s: usize) {
        if self.rates[s].bucket.state().0 < 1.0 && !self.is_unsure[s] {
            self.is_unsure[s] = true;
            self.unsure.push(s as u32);
            self.keys.set(s, f64::INFINITY);
        }
    }

    /// Before a ranking at `t`: every unsure server whose bucket holds a token at `t` is sure
    /// again, with its score as key. A bucket left alone only fills (its level is monotone in
    /// time), so it holds one at every later ranking until it changes.
    fn settle(&mut self, t: f64) {
        let mut i = 0;
        while i < self.unsure.len() {
            let s = self.unsure[i] as usize;
            if self.rates[s].tokens_at(t) >= 1.0 {
                self.unsure.swap_remove(i);
                self.is_unsure[s] = false;
                self.keys.set(s, self.scores.get(s));
            } else {
                i += 1;
            }
        }
    }

    /// Takes a token from `s`'s bucket at `t`, if it has one.
    #[inline]
    fn acquire(&mut self, s: usize, t: f64) -> Result<(), f64> {
        self.rates[s].try_acquire(t, &self.cfg)?;
        self.rebucketed(s);
        Ok(())
    }

    /// One more request outstanding at `s`.
    #[inline]
    fn sent(&mut self, s: usize) {
        self.servers[s].outstanding += 1;
        self.rescore(s);
    }

    /// The best-ranked allowed server, scanning them from the `start`-th (ties: the first in
    /// that rotation). The rotation is two ranges, `start + 1..n` then `0..start`, not a
    /// remainder per server: the same order without a division per step. With every server
    /// allowed, [`MinBlocks::lowest_from`]: the same server.
    fn best(&self, start: usize) -> usize {
        if self.hosts.is_all() {
            return self.scores.lowest_from(start);
        }
        let n = self.hosts.count(self.servers.len());
        let mut best = self.hosts.at(start);
        let mut best_score = self.scores.get(best);
        let mut scan = |positions: std::ops::Range<usize>| {
            for i in positions {
                let s = self.hosts.at(i);
                let score = self.scores.get(s);
                if score < best_score {
                    best = s;
                    best_score = score;
                }
            }
        };
        scan(start + 1..n);
        scan(0..start);
        best
    }
}

impl C3 {
    /// With every server allowed, the server that takes a request at `t` when the best-ranked
    /// has no token: the best-ranked with a token (ties: the first in the rotation from `start`),
    /// found as [`MinBlocks::lowest_from`] of the keys once the unsure servers are settled.
    /// `None` when no server has one, and when the lowest such score is zero or infinite: the
    /// ranking orders scores by [`f64::total_cmp`], in which -0 is below 0 and an infinite score
    /// may tie with the servers left out, so the caller's scan, which follows that order,
    /// decides those.
    fn taker_among_all(&mut self, t: f64, start: usize) -> Option<usize> {
        if !self.hosts.is_all() {
            return None;
        }
        self.settle(t);
        let s = self.keys.lowest_from(start);
        let low = self.keys.get(s);
        (low.is_finite() && low != 0.0).then_some(s)
    }
}

impl Policy for C3 {
    const TAGGED: bool = true;
    const FEEDBACK: bool = true;
    const HOLDS: bool = true;

    fn pick(&mut self, _loads: &LoadTable, _now: SimTime, rng: &mut SimRng) -> usize {
        let best = self.best(uniform(rng, self.hosts.count(self.servers.len())));
        self.sent(best);
        best
    }

    fn try_pick(
        &mut self,
        _client: u32,
        loads: &LoadTable,
        now: SimTime,
        rng: &mut SimRng,
    ) -> Result<usize, f64> {
        if !self.cfg.rate_control {
            return Ok(self.pick(loads, now, rng));
        }
        let t = now.get();
        if let Some(s) = self.waiting.take() {
            // The wait was for this bucket's next token (the simulator sets it to exactly one,
            // which rounding might miss).
            self.rates[s].bucket.set(1.0, t);
            self.rebucketed(s);
        }
        let n = self.hosts.count(self.servers.len());
        let start = uniform(rng, n);
        // The best-ranked server usually has a token: try it before ranking the rest.
        let best = self.best(start);
        let soonest = match self.acquire(best, t) {
            Ok(()) => {
                self.sent(best);
                return Ok(best);
            }
            Err(wait) => wait,
        };
        if let Some(s) = self.taker_among_all(t, start) {
            self.acquire(s, t).expect("a bucket with a token");
            self.sent(s);
            return Ok(s);
        }
        // The rest in rank order (score, ties in the rotation from `start`): the first with a
        // token takes the request, else the soonest to have one is waited for (ties: the first
        // in rank order, `best` before all). One pass finds both, as trying them in a sorted
        // order would: a bucket without a token is left as it was.
        let mut taker: Option<(f64, usize)> = None;
        let mut soonest = (soonest, best, None::<f64>);
        for i in (start..n).chain(0..start) {
            let s = self.hosts.at(i);
            if s == best {
                continue;
            }
            let score = self.scores.get(s);
            let tokens = self.rates[s].tokens_at(t);
            if tokens >= 1.0 {
                if taker.is_none_or(|(b, _)| score.total_cmp(&b).is_lt()) {
                    taker = Some((score, s));
                }
            } else if taker.is_none() {
                // Once a server has a token nobody waits: the waits of the rest are not needed.
                let wait = self.rates[s].wait_for(tokens, &self.cfg);
                let (w, _, rank) = soonest;
                // Later in the rotation: earlier in rank order only by a lower score.
                let before = rank.is_some_and(|r| score.total_cmp(&r).is_lt());
                if wait < w || (wait == w && before) {
                    soonest = (wait, s, Some(score));
                }
            }
        }
        if let Some((_, s)) = taker {
            self.acquire(s, t).expect("a bucket with a token");
            self.sent(s);
            return Ok(s);
        }
        self.waiting = Some(soonest.1);
        Err(t + soonest.0)
    }

    fn set_hosts(&mut self, _client: u32, hosts: Option<&[u32]>) {
        self.hosts.set(hosts);
        if self.waiting.is_some_and(|s| !self.hosts.contains(s)) {
            self.waiting = None;
        }
    }

    fn on_response(&mut self, server: usize, response: &Response, now: SimTime, _tag: u32) {
        self.servers[server].update(response);
        self.rescore(server);
        if self.cfg.rate_control {
            let t = now.get();
            let rc = &mut self.rates[server];
            rc.received(1, t, &self.cfg);
            rc.update(t, &self.cfg);
            self.rebucketed(server);
        }
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

    fn cfg() -> C3Config {
        C3Config::default()
    }

    #[test]
    fn a_bucket_starts_empty_refills_at_the_sending_rate_and_holds_at_most_max_tokens() {
        // srate = 5 tokens per interval of 5 units: one token per unit.
        let mut rc = RateControl::new(&cfg());
        assert_eq!(rc.try_acquire(0.0, &cfg()), Err(1.0));
        assert_eq!(rc.try_acquire(0.25, &cfg()), Err(0.75));
        assert_eq!(rc.try_acquire(1.0, &cfg()), Ok(()));
        assert_eq!(rc.bucket.state(), (0.0, 1.0));
        // A failed attempt leaves the bucket alone.
        assert!(rc.try_acquire(1.5, &cfg()).is_err());
        assert_eq!(rc.bucket.state(), (0.0, 1.0));
        // After a long idle time the bucket holds max_tokens = 50, not 999.
        assert_eq!(rc.tokens_at(1000.0), 50.0);
        assert_eq!(rc.try_acquire(1000.0, &cfg()), Ok(()));
        assert_eq!(rc.bucket.state().0, 49.0);
    }

    #[test]
    fn the_receive_rate_folds_counts_at_interval_changes_and_restarts_after_twenty() {
        let mut rc = RateControl::new(&cfg());
        // Two responses in interval 0 (t < 5): counted, the rate (10) not yet updated.
        rc.received(1, 1.0, &cfg());
        rc.received(1, 2.0, &cfg());
        assert_eq!((rc.receive, rc.count), (10.0, 2));
        // The first of interval 1 folds the count, itself included: 0.9 * 3 + 0.1 * 10.
        rc.received(1, 6.0, &cfg());
        assert!((rc.receive - 3.7).abs() < 1e-12, "{}", rc.receive);
        assert_eq!((rc.tick, rc.count), (1, 0));
        // Interval 21, 20 intervals on: the rate restarts from the count, 0, and the response
        // that triggers it is not counted (as the simulator does).
        rc.received(1, 106.0, &cfg());
        assert_eq!((rc.receive, rc.tick, rc.count), (0.0, 21, 0));
    }

    #[test]
    fn the_cubic_update_grows_towards_r0_caps_at_smax_and_backs_off_by_beta() {
        // srate = 5 < rrate = 10, R0 = 10, last decrease at 0; at t = 2:
        //   K = cbrt(R0 * beta / C) = cbrt(10 * 0.2 / 2.56e-4) = cbrt(7812.5) = 19.8425,
        //   srate = C (2 - K)^3 + R0 = 2.56e-4 * (-17.8425)^3 + 10 = 10 - 1.45415 = 8.54585.
        let mut rc = RateControl::new(&cfg());
        rc.update(2.0, &cfg());
        assert!((rc.rate - 8.545_854).abs() < 1e-5, "{}", rc.rate);
        // Far from R0 the step is capped at s_max = 10.
        let mut far = RateControl { r0: 1000.0, receive: 2000.0, ..RateControl::new(&cfg()) };
        far.update(2.0, &cfg());
        assert_eq!(far.rate, 15.0);
        // srate > rrate within the hysteresis (2 intervals = 10 units after the increase at 2):
        // nothing; after it, R0 = srate and srate = 0.2 srate.
        rc.receive = 3.0;
        rc.update(11.0, &cfg());
        assert!((rc.rate - 8.545_854).abs() < 1e-5);
        rc.update(12.5, &cfg());
        assert!((rc.r0 - 8.545_854).abs() < 1e-5);
        assert!((rc.rate - 0.2 * 8.545_854).abs() < 1e-5);
        assert_eq!(rc.last_decrease, 12.5);
        // The growth after a decrease starts at (1 - beta) R0 (the cubic at T = 0).
        rc.receive = 100.0;
        rc.update(12.5, &cfg());
        assert!((rc.rate - 0.8 * 8.545_854).abs() < 1e-5, "{}", rc.rate);
    }

    #[test]
    fn a_request_goes_to_the_best_ranked_server_with_a_token_or_waits_for_the_soonest() {
        let mut c = C3::new(3, 1, cfg());
        let mut rng = <SimRng as rand::SeedableRng>::seed_from_u64(5);
        let loads = LoadTable::new(3, false);
        // Server 1 answers fastest, then 0, then 2 (no token yet anywhere).
        let r = |sojourn| Response { sojourn, service: 1.0, queue: 0 };
        c.on_response(0, &r(2.0), SimTime::ZERO, 0);
        c.on_response(1, &r(1.0), SimTime::ZERO, 0);
        c.on_response(2, &r(3.0), SimTime::ZERO, 0);
        for s in 0..3 {
            c.rates[s] = RateControl::new(&cfg());
            c.rebucketed(s);
        }
        // At t = 0 every bucket is empty: the soonest token is 1 unit away; all three tie, so
        // the first in rank order (server 1) is the one waited for.
        assert_eq!(c.try_pick(0, &loads, SimTime::ZERO, &mut rng), Err(1.0));
        assert_eq!(c.waiting, Some(1));
        // At t = 1 the wait is over: server 1 gets exactly one token and the request.
        let t1 = SimTime::new(1.0);
        assert_eq!(c.try_pick(0, &loads, t1, &mut rng), Ok(1));
        assert_eq!(c.server(1).outstanding, 1);
        // Server 1 is empty again; server 0 (next in rank) has one token by now.
        assert_eq!(c.try_pick(0, &loads, t1, &mut rng), Ok(0));
        assert_eq!(c.try_pick(0, &loads, t1, &mut rng), Ok(2));
        assert!(c.try_pick(0, &loads, t1, &mut rng).is_err());
        // Without rate control the best-ranked server always takes it.
        let mut plain = C3::new(3, 1, C3Config { rate_control: false, ..cfg() });
        plain.on_response(0, &r(2.0), SimTime::ZERO, 0);
        plain.on_response(1, &r(1.0), SimTime::ZERO, 0);
        plain.on_response(2, &r(3.0), SimTime::ZERO, 0);
        assert_eq!(plain.try_pick(0, &loads, SimTime::ZERO, &mut rng), Ok(1));
    }

    #[test]
    fn the_lowest_score_wins_and_counts_as_outstanding() {
        let mut c = C3::new(3, 1, C3Config::default());
        let mut rng = <SimRng as rand::SeedableRng>::seed_from_u64(9);
        // Servers 0 and 2 answered slowly, server 1 quickly.
        c.on_response(0, &Response { sojourn: 5.0, service: 1.0, queue: 4 }, SimTime::ZERO, 0);
        c.on_response(1, &Response { sojourn: 1.0, service: 1.0, queue: 0 }, SimTime::ZERO, 0);
        c.on_response(2, &Response { sojourn: 5.0, service: 1.0, queue: 4 }, SimTime::ZERO, 0);
        let loads = LoadTable::new(3, false);
        assert_eq!(c.pick(&loads, SimTime::ZERO, &mut rng), 1);
        assert_eq!(c.server(1).outstanding, 1);
    }

    /// The ranking reads cached scores: after every kind of change (a pick with and without
    /// rate control, a response) each cached score is the one computed from the server's state,
    /// to the bit. Exact: the cache must hold the very value `score` gives, or rankings (and
    /// the results) would move.
    #[test]
    fn cached_scores_follow_every_change_of_a_server() {
        use rand::RngExt;
        let mut rng = <SimRng as rand::SeedableRng>::seed_from_u64(3);
        let loads = LoadTable::new(8, false);
        for rate_control in [true, false] {
            let mut c = C3::new(8, 2, C3Config { rate_control, ..cfg() });
            for step in 0..2000 {
                let t = SimTime::new(f64::from(step) * 0.01);
                if rng.random::<f64>() < 0.5 {
                    let _ = c.try_pick(0, &loads, t, &mut rng);
                } else {
                    let s = rng.random_range(0..8);
                    let queue = rng.random_range(0..5);
                    let response = Response { sojourn: rng.random(), service: 0.5, queue };
                    c.on_response(s, &response, t, 0);
                }
                for s in 0..8 {
                    assert_eq!(c.scores.get(s).to_bits(), c.server(s).score(2.0).to_bits());
                }
            }
        }
    }

    /// The ranking as first written: every server but the best-ranked sorted by score (stable,
    /// ties in the rotation), each tried in turn; the soonest wait kept with a strict `<`.
    fn sorted_try_pick(c: &mut C3, t: f64, rng: &mut SimRng) -> Result<usize, f64> {
        if let Some(s) = c.waiting.take() {
            c.rates[s].bucket.set(1.0, t);
        }
        let n = c.hosts.count(c.servers.len());
        let start = uniform(rng, n);
        // The first strictly lower score in the rotation from `start`, from scores computed
        // afresh (not the cached ones the policy ranks).
        let scores: Vec<f64> = (0..n).map(|s| c.server(s).score(c.clients)).collect();
        let best = crate::policy::min_blocks::tests::scan(&scores, start);
        let mut soonest = match c.rates[best].try_acquire(t, &c.cfg) {
            Ok(()) => {
                c.sent(best);
                return Ok(best);
            }
            Err(wait) => (wait, best),
        };
        let mut order: Vec<(f64, usize)> = (0..n)
            .map(|k| c.hosts.at((start + k) % n))
            .filter(|&s| s != best)
            .map(|s| (c.server(s).score(c.clients), s))
            .collect();
        order.sort_by(|a, b| a.0.total_cmp(&b.0));
        for (_, s) in order {
            match c.rates[s].try_acquire(t, &c.cfg) {
                Ok(()) => {
                    c.sent(s);
                    return Ok(s);
                }
                Err(wait) if wait < soonest.0 => soonest = (wait, s),
                Err(_) => {}
            }
        }
        c.waiting = Some(soonest.1);
        Err(t + soonest.0)
    }

    /// The one-pass ranking of `try_pick` answers as sorting and trying each server in rank
    /// order does, step by step over a long random history (picks, responses, ties in score
    /// from servers never heard from, buckets with and without tokens, waits that tie), over
    /// one block of eight servers and a half and over five: the same server or the same wait,
    /// the same state after, and every key what it stands for (infinity while unsure, else the
    /// score of a server whose bucket holds a token). Exact, since the results' bytes depend on
    /// it.
    #[test]
    fn one_pass_ranking_picks_as_the_sorted_order_does() {
        use rand::RngExt;
        let mut rng = <SimRng as rand::SeedableRng>::seed_from_u64(11);
        for n in [12, 37] {
            let loads = LoadTable::new(n, false);
            let mut c = C3::new(n, 3, cfg());
            let (mut waits, mut picks) = (0, 0);
            for step in 0..20_000 {
                // About as many tokens as picks, so both picks and waits are common.
                let t = f64::from(step) * 0.6 / n as f64;
                if rng.random::<f64>() < 0.6 {
                    let mut reference = c.clone();
                    let mut coins = rng.clone();
                    let expected = sorted_try_pick(&mut reference, t, &mut coins);
                    let got = c.try_pick(0, &loads, SimTime::new(t), &mut rng);
                    assert_eq!(got, expected, "step {step}");
                    assert_eq!(
                        (c.waiting, &c.servers, &c.rates),
                        (reference.waiting, &reference.servers, &reference.rates)
                    );
                    if got.is_ok() { picks += 1 } else { waits += 1 }
                } else {
                    let s = rng.random_range(0..n);
                    let sojourn = f64::from(rng.random_range(1..4u32));
                    let queue = rng.random_range(0..3);
                    c.on_response(
                        s,
                        &Response { sojourn, service: 1.0, queue },
                        SimTime::new(t),
                        0,
                    );
                }
                for s in 0..n {
                    let rc = &c.rates[s];
                    assert_eq!(c.is_unsure[s], c.unsure.contains(&(s as u32)), "step {step}");
                    if c.is_unsure[s] {
                        assert_eq!(c.keys.get(s), f64::INFINITY, "step {step}");
                    } else {
                        assert_eq!(c.keys.get(s).to_bits(), c.scores.get(s).to_bits());
                        assert!(rc.tokens_at(t) >= 1.0, "step {step}: {s} has no token");
                    }
                }
            }
            // Both branches were exercised, many times.
            assert!(picks > 1000 && waits > 1000, "n {n}: picks {picks}, waits {waits}");
        }
    }
}

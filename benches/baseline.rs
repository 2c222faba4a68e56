//! The yardstick: p2c on the supermarket model as one single-purpose loop, with no event list.
//!
//! Arrivals are processed in time order. Each server keeps a FIFO of the departure times of the
//! requests it holds; a request that joins server `s` at time `t` departs at
//! `max(t, last departure of s) + service`, and the queue length of `s` at `t` is the number of
//! departure times in its FIFO that are later than `t` (older ones are dropped lazily, only when `s`
//! is looked at). That is the same FIFO queue as in the engine, computed without simulating the
//! departures as events.
//!
//! The loop draws from the same random streams in the same order as
//! [`lbsim::experiment::run_replication`] for `p2c` (the `workload` stream: first gap, then per
//! arrival a demand and the next gap; the `policy` stream: two distinct uniform servers), so it
//! produces the same sojourn times, bit for bit, and records them in the same histogram type. The
//! only difference in the outputs is how the sojourns are summed (floats in arrival order here,
//! exact fixed-point terms in the engine), which moves the mean by a few ulps at most.

use lbsim::rng::StreamKey;
use lbsim::stats::LatencyHistogram;
use rand::RngExt;
use rand_distr::Exp1;

/// What the loop measured, in the engine's terms.
pub struct BaselineRun {
    /// Measured requests.
    pub requests: u64,
    /// Sum of their sojourn times.
    pub sum: f64,
    /// Their sojourn times.
    pub hist: LatencyHistogram,
    /// Arrivals plus departures, counted as the engine counts events.
    pub events: u64,
}

impl BaselineRun {
    /// Mean sojourn.
    pub fn mean(&self) -> f64 {
        self.sum / self.requests as f64
    }
}

/// Departure times of the requests at each server: one ring of `cap` slots per server, all in one
/// allocation; doubled (rarely) when some server's queue outgrows it.
struct Fifos {
    times: Vec<f64>,
    head: Vec<u32>,
    len: Vec<u32>,
    cap: usize,
}

impl Fifos {
    fn new(n: usize) -> Self {
        let cap = 32;
        Fifos { times: vec![0.0; n * cap], head: vec![0; n], len: vec![0; n], cap }
    }

    /// Queue length of server `s` at time `t`: drops the departures that happened by `t`.
    #[inline]
    fn len_at(&mut self, s: usize, t: f64) -> u32 {
        let mask = self.cap - 1;
        while self.len[s] > 0 && self.times[s * self.cap + self.head[s] as usize] <= t {
            self.head[s] = (self.head[s] + 1) & mask as u32;
            self.len[s] -= 1;
        }
        self.len[s]
    }

    #[inline]
    fn push(&mut self, s: usize, departure: f64) {
        if self.len[s] as usize == self.cap {
            self.grow();
        }
        let slot = (self.head[s] + self.len[s]) as usize & (self.cap - 1);
        self.times[s * self.cap + slot] = departure;
        self.len[s] += 1;
    }

    #[cold]
    fn grow(&mut self) {
        let (n, old, cap) = (self.head.len(), self.cap, self.cap * 2);
        let mut times = vec![0.0; n * cap];
        for s in 0..n {
            for k in 0..self.len[s] as usize {
                times[s * cap + k] = self.times[s * old + (self.head[s] as usize + k) % old];
            }
        }
        self.head.iter_mut().for_each(|h| *h = 0);
        (self.times, self.cap) = (times, cap);
    }
}

/// Replication `rep` of `p2c` on `n` rate-1 servers at utilisation `load`, seed `seed`.
pub fn p2c(n: usize, load: f64, warmup: u64, requests: u64, seed: u64, rep: u64) -> BaselineRun {
    let rates = vec![1.0; n];
    let key = |label| StreamKey::new(seed, label).f64s(&rates).f64(load).u64(rep);
    let (mut workload, mut coins) = (key("workload").rng(), key("policy").rng());
    let arrival_rate = load * rates.iter().sum::<f64>();
    let total = warmup + requests;

    let mut fifos = Fifos::new(n);
    let mut last_departure = vec![0.0f64; n];
    let mut out =
        BaselineRun { requests: 0, sum: 0.0, hist: LatencyHistogram::default(), events: 2 * total };

    let mut t = workload.sample::<f64, _>(Exp1) / arrival_rate;
    for i in 0..total {
        let demand: f64 = workload.sample(Exp1);
        // Two distinct servers, in sampling order; the shorter queue wins, a tie the first.
        let a = coins.random_range(0..n);
        let mut b = coins.random_range(0..n - 1);
        if b >= a {
            b += 1;
        }
        let s = if fifos.len_at(b, t) < fifos.len_at(a, t) { b } else { a };

        let departure = t.max(last_departure[s]) + demand / rates[s];
        last_departure[s] = departure;
        fifos.push(s, departure);
        if i >= warmup {
            let sojourn = departure - t;
            out.requests += 1;
            out.sum += sojourn;
            out.hist.record(sojourn);
        }
        if i + 1 < total {
            let gap: f64 = workload.sample(Exp1);
            t += gap / arrival_rate;
        }
    }
    out
}

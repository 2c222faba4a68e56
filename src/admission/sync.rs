//! Local limiting with periodic synchronisation (`instances = N, sync = T`): the rate-limiting
//! chapter's §39.17 scheme 3, "each gateway limits locally (a rough quota) and every 1-5 s
//! reports its actual use to a centre and adjusts its quota" (`DistributedRateLimiter`: a local
//! token bucket of `total_rate / num_instances` to start, a `local_count` of what passed since
//! the last sync, and `sync_with_redis`, which reports it and adjusts the local quota).
//!
//! The chapter leaves the adjustment as `# ...`; lbsim's is this. At every multiple of `T`,
//! each instance `i` reports `u_i`, the requests it passed since the last sync, as a rate
//! `u_i / T` capped at its current quota `q_i` (a full bucket's burst is not use the quota
//! gave); the global headroom `H = R - sum(min(u_i / T, q_i))` (never negative) is shared
//! evenly, and the new quota is `q_i = min(u_i / T, q_i) + H / N`. The quotas always add up to
//! the global rate `R`, so the instances together never pass more than `R t` plus their
//! buckets' capacities in any `t`; an instance that used its whole quota gains a share of what
//! the others left unused, so a skewed split converges to the global limit geometrically (the
//! headroom shrinks by at least `1 / N` of itself per sync while one instance is short); an idle
//! instance keeps `H / N`, never nothing. Each instance's bucket keeps its capacity (`burst /
//! N`, at least 1); only the rate moves.
//!
//! Lazy arithmetic, as every limiter here: the syncs due are done when the next request
//! arrives, each bucket first brought up to the sync's instant at its old rate. Syncs with no
//! request in between report nothing and give every instance `R / N`.

use super::{Limiter, TokenBucket};

/// The quotas of `N` token-bucket instances, rebalanced every `period`.
#[derive(Debug, Clone)]
pub struct QuotaSync {
    /// The global rate `R` the quotas share.
    rate: f64,
    period: f64,
    /// The index of the next sync: it happens at `next * period`.
    next: u64,
    /// Requests each instance passed since the last sync.
    used: Vec<u64>,
    /// Each instance's quota (its bucket's rate).
    quota: Vec<f64>,
    /// Syncs done so far.
    pub syncs: u64,
}

impl QuotaSync {
    /// `n` instances of a global `rate`, each with `rate / n` to start, synced every `period`.
    pub fn new(rate: f64, n: u32, period: f64) -> QuotaSync {
        let n = n as usize;
        QuotaSync {
            rate,
            period,
            next: 1,
            used: vec![0; n],
            quota: vec![rate / n as f64; n],
            syncs: 0,
        }
    }

    /// Instance `i` passed a request.
    #[inline]
    pub fn passed(&mut self, i: usize) {
        self.used[i] += 1;
    }

    /// The quotas now.
    pub fn quotas(&self) -> &[f64] {
        &self.quota
    }

    /// Does the syncs due at or before `t` on `instances` (token buckets).
    #[inline]
    pub fn catch_up(&mut self, t: f64, instances: &mut [Limiter]) {
        if t < self.next as f64 * self.period {
            return;
        }
        self.sync(instances);
        // The syncs after it heard nothing: the first of them gives every instance R / N, and
        // the others change nothing (they are counted, not done).
        if t >= self.next as f64 * self.period {
            self.sync(instances);
            let due = (t / self.period).floor() as u64;
            if due >= self.next {
                self.syncs += due + 1 - self.next;
                self.next = due + 1;
            }
        }
    }

    /// The sync at `next * period`, from the use reported since the last.
    fn sync(&mut self, instances: &mut [Limiter]) {
        let at = self.next as f64 * self.period;
        let n = self.quota.len() as f64;
        let reported: Vec<f64> = (self.used.iter().zip(&self.quota))
            .map(|(&u, &q)| (u as f64 / self.period).min(q))
            .collect();
        let headroom = (self.rate - reported.iter().sum::<f64>()).max(0.0);
        for (i, limiter) in instances.iter_mut().enumerate() {
            self.quota[i] = reported[i] + headroom / n;
            let Limiter::TokenBucket(b) = limiter else {
                unreachable!("sync applies to token buckets (checked by resolve)")
            };
            rebalance(b, at, self.quota[i]);
        }
        self.used.iter_mut().for_each(|u| *u = 0);
        self.next += 1;
        self.syncs += 1;
    }
}

/// `b` brought up to `at` at its old rate, then given `rate`.
fn rebalance(b: &mut TokenBucket, at: f64, rate: f64) {
    let (_, last) = b.state();
    let at = at.max(last);
    b.set(b.level(at), at);
    b.set_rate(rate);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn buckets(n: usize, rate: f64, burst: f64) -> Vec<Limiter> {
        (0..n).map(|_| Limiter::TokenBucket(TokenBucket::new(rate, burst))).collect()
    }

    #[test]
    fn the_headroom_goes_evenly_and_the_quotas_add_up_to_the_rate() {
        // R = 100 over 4 instances, T = 1: instance 0 passed 25 (its whole quota), the others
        // 5 each. Reported 25 + 15 = 40, headroom 60, so 25 + 15 and 5 + 15 each.
        let mut s = QuotaSync::new(100.0, 4, 1.0);
        let mut l = buckets(4, 25.0, 1.0);
        for _ in 0..25 {
            s.passed(0);
        }
        for i in 1..4 {
            for _ in 0..5 {
                s.passed(i);
            }
        }
        s.catch_up(1.0, &mut l);
        assert_eq!(s.quotas(), &[40.0, 20.0, 20.0, 20.0]);
        assert_eq!(s.syncs, 1);
        // Nothing passed after t = 1: the sync at 2 hears nothing and gives R / N, the one at 3
        // hears nothing either; the next is at 4.
        s.catch_up(3.5, &mut l);
        assert_eq!(s.quotas(), &[25.0; 4]);
        assert_eq!((s.syncs, s.next), (3, 4));
        // Syncs that hear nothing after one that heard nothing change nothing: counted, not
        // done, up to the one at 10.
        s.catch_up(10.5, &mut l);
        assert_eq!(s.quotas(), &[25.0; 4]);
        assert_eq!((s.syncs, s.next), (10, 11));
    }

    #[test]
    fn a_burst_is_not_reported_beyond_the_quota() {
        // Instance 0 passed 30 in a second on a quota of 25 (its bucket's capacity helped):
        // it reports 25, so the others keep their share of the headroom and nobody goes below 0.
        let mut s = QuotaSync::new(100.0, 4, 1.0);
        let mut l = buckets(4, 25.0, 10.0);
        for _ in 0..30 {
            s.passed(0);
        }
        for _ in 0..25 {
            s.passed(1);
        }
        s.catch_up(1.2, &mut l);
        assert_eq!(s.quotas(), &[37.5, 37.5, 12.5, 12.5]);
    }
}

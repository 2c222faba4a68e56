//! `wrr-orca`: gRPC's `weighted_round_robin` fed by ORCA load reports (gRFC A58).
//!
//! Follows grpc-go `balancer/weightedroundrobin/balancer.go` and `scheduler.go`:
//!
//! - **Weights** (`endpointWeight.OnLoadReport`): a report with utilisation `u` and `qps`
//!   (`rps_fractional`) sets the weight `qps / (u + eps/qps * penalty)`, `eps` the errors per
//!   second (none in lbsim, so the weight is completions per busy time: the server's rate); a
//!   report with `u == 0` or `qps == 0` is ignored. The first report after none sets
//!   `nonEmptySince`; every report sets `lastUpdated`.
//! - **Blackout and expiry** (`endpointWeight.weight`): a weight whose last update is
//!   `expiration_period` old or more is 0 and resets `nonEmptySince` (the blackout applies again
//!   when reports resume); a weight less than `blackout_period` after `nonEmptySince` is 0.
//! - **The scheduler** is rebuilt every `weight_update_period` (`regenerateScheduler`) from the
//!   weights at that instant (`newScheduler`): round robin if fewer than two weights are non-zero
//!   or all scaled weights are equal; else the weights are scaled so the largest is 65535,
//!   rounded, and a zero weight takes the mean of the others. Picks go through the *static stride
//!   scheduler* of gRPC core (`static_stride_scheduler.cc`), which grpc-go ports under the name
//!   `edfScheduler`: a counter `idx` shared across schedulers picks backend `idx % n` in
//!   generation `idx / n` unless `(w * generation + backend * 32767) % 65535 < 65535 - w`, in
//!   which case the counter moves on. Both gRPC implementations use this scheduler today (the
//!   original EDF heap of A58 was replaced by it), so lbsim does too; its long-run shares are
//!   the weights' shares, as EDF's are.
//! - The counter starts at a random value (`rand.Uint32()` in grpc-go's picker), drawn here from
//!   the policy's own stream.
//!
//! Servers report every `report_period` over the period just ended (ORCA's out-of-band stream;
//! see the engine's feedback support). Times are in mean service times: the defaults are
//! gRPC's (`weight_update_period` 1 s, `blackout_period` 10 s, `weight_expiration_period` 3 min,
//! out-of-band `oob_reporting_period` 10 s) with one second taken as 10 service times, except the
//! report period, which is 1 s (10) rather than 10 s so that utilisation is reported as often as
//! weights are updated.
//!
//! With some hosts excluded ([`Policy::set_hosts`]) the scheduler is built over the allowed
//! backends' weights only (their shares renormalised among them) and its backend index maps to
//! them, at once and at every update: grpc-go builds the picker over the READY endpoints only
//! (`balancer.go`, `updateEndpointsLocked` / `regenerateScheduler` over `p.weightedPickers`),
//! and a backend that leaves and comes back keeps its `endpointWeight` (the balancer keeps it per
//! address). The change uses the weights of the last update.

use super::tuning::{non_negative, params, positive};
use super::{Hosts, LoadReport, Policy};
use crate::model::LoadTable;
use crate::rng::SimRng;
use crate::time::SimTime;

params! {
    /// The parameters of `wrr-orca`, in mean service times.
    pub struct OrcaConfig {
        /// `blackout_period` (gRPC default 10 s).
        #[serde(rename = "blackout_period", deserialize_with = "non_negative")]
        pub blackout: f64,
        /// `weight_expiration_period` (gRPC default 3 min).
        #[serde(rename = "expiration_period", deserialize_with = "positive")]
        pub expiration: f64,
        /// `weight_update_period` (gRPC default 1 s).
        #[serde(rename = "weight_update_period", deserialize_with = "positive")]
        pub update: f64,
        /// How often servers report.
        #[serde(rename = "report_period", deserialize_with = "positive")]
        pub report: f64,
        /// `error_utilization_penalty` (gRPC default 1.0).
        #[serde(deserialize_with = "non_negative")]
        pub penalty: f64,
    }
}

impl Default for OrcaConfig {
    fn default() -> Self {
        OrcaConfig { blackout: 100.0, expiration: 1800.0, update: 10.0, report: 10.0, penalty: 1.0 }
    }
}

/// gRPC core's `kMaxWeight` (grpc-go `maxWeight`).
const MAX_WEIGHT: u64 = u16::MAX as u64;

/// One backend's weight state (grpc-go `endpointWeight`).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct EndpointWeight {
    value: f64,
    non_empty_since: Option<f64>,
    last_updated: f64,
}

impl EndpointWeight {
    /// `OnLoadReport`.
    fn on_report(&mut self, r: &LoadReport, eps: f64, penalty: f64, now: f64) {
        if r.utilization == 0.0 || r.qps == 0.0 {
            return;
        }
        let error_rate = eps / r.qps;
        self.value = r.qps / (r.utilization + error_rate * penalty);
        self.last_updated = now;
        if self.non_empty_since.is_none() {
            self.non_empty_since = Some(now);
        }
    }

    /// `weight(now, weightExpirationPeriod, blackoutPeriod)`.
    fn weight(&mut self, now: f64, cfg: &OrcaConfig) -> f64 {
        if now - self.last_updated >= cfg.expiration {
            self.non_empty_since = None;
            return 0.0;
        }
        if cfg.blackout != 0.0 && self.non_empty_since.is_none_or(|t| now - t < cfg.blackout) {
            return 0.0;
        }
        self.value
    }
}

/// The picker's scheduler.
#[derive(Debug, Clone, PartialEq)]
pub enum Scheduler {
    /// `rrScheduler`.
    RoundRobin,
    /// The static stride scheduler over these scaled weights.
    Stride(Vec<u16>),
}

impl Scheduler {
    /// `newScheduler` over `weights` (`n >= 2`).
    pub fn new(weights: &[f64]) -> Scheduler {
        let n = weights.len();
        let (mut sum, mut max, mut zeros) = (0.0, 0.0f64, 0);
        for &w in weights {
            sum += w;
            if w > max {
                max = w;
            }
            if w == 0.0 {
                zeros += 1;
            }
        }
        if n < 2 || zeros >= n - 1 {
            return Scheduler::RoundRobin;
        }
        let unscaled_mean = sum / (n - zeros) as f64;
        let scaling = MAX_WEIGHT as f64 / max;
        let mean = (scaling * unscaled_mean).round() as u16;
        let mut all_equal = true;
        let scaled: Vec<u16> = weights
            .iter()
            .map(|&w| {
                if w == 0.0 {
                    mean
                } else {
                    let s = (scaling * w).round() as u16;
                    all_equal &= s == mean;
                    s
                }
            })
            .collect();
        if all_equal { Scheduler::RoundRobin } else { Scheduler::Stride(scaled) }
    }

    /// The next backend, advancing `counter` (`inc()`) once per candidate looked at.
    pub fn next(&self, n: usize, counter: &mut u32) -> usize {
        match self {
            Scheduler::RoundRobin => {
                *counter = counter.wrapping_add(1);
                (*counter % n as u32) as usize
            }
            Scheduler::Stride(weights) => {
                const OFFSET: u64 = MAX_WEIGHT / 2;
                let len = weights.len() as u64;
                loop {
                    *counter = counter.wrapping_add(1);
                    let idx = u64::from(*counter);
                    let backend = idx % len;
                    let generation = idx / len;
                    let w = u64::from(weights[backend as usize]);
                    let m = (w * generation + backend * OFFSET) % MAX_WEIGHT;
                    if m < MAX_WEIGHT - w {
                        continue;
                    }
                    return backend as usize;
                }
            }
        }
    }
}

/// gRPC weighted round robin with ORCA reports.
#[derive(Debug, Clone)]
pub struct WrrOrca {
    cfg: OrcaConfig,
    weights: Vec<EndpointWeight>,
    scheduler: Scheduler,
    counter: u32,
    /// Every backend's weight at the last update (to rebuild the scheduler when hosts change).
    last: Vec<f64>,
    hosts: Hosts,
}

impl WrrOrca {
    /// Over `n` servers, the counter starting at `start`.
    pub fn new(n: usize, cfg: OrcaConfig, start: u32) -> Self {
        assert!(n >= 1);
        WrrOrca {
            cfg,
            weights: vec![EndpointWeight::default(); n],
            scheduler: Scheduler::RoundRobin,
            counter: start,
            last: vec![0.0; n],
            hosts: Hosts::all(),
        }
    }

    /// The weights the scheduler would be built from at `now` (0: blacked out, expired or never
    /// reported).
    pub fn weights(&mut self, now: f64) -> Vec<f64> {
        let cfg = self.cfg;
        self.weights.iter_mut().map(|w| w.weight(now, &cfg)).collect()
    }

    /// The current scheduler.
    pub fn scheduler(&self) -> &Scheduler {
        &self.scheduler
    }

    /// The scheduler over the allowed backends' weights in `last`.
    fn rebuild(&mut self) {
        self.scheduler = match self.hosts.allowed() {
            None => Scheduler::new(&self.last),
            Some(h) => {
                let w: Vec<f64> = h.iter().map(|&s| self.last[s as usize]).collect();
                Scheduler::new(&w)
            }
        };
    }
}

impl Policy for WrrOrca {
    const TAGGED: bool = true;
    const FEEDBACK: bool = true;

    #[inline]
    fn pick(&mut self, _loads: &LoadTable, _now: SimTime, _rng: &mut SimRng) -> usize {
        let k = self.hosts.count(self.weights.len());
        self.hosts.at(self.scheduler.next(k, &mut self.counter))
    }

    fn set_hosts(&mut self, _client: u32, hosts: Option<&[u32]>) {
        self.hosts.set(hosts);
        self.rebuild();
    }

    fn report_period(&self) -> Option<f64> {
        Some(self.cfg.report)
    }

    fn on_reports(&mut self, reports: &[LoadReport], now: SimTime) {
        for (w, r) in self.weights.iter_mut().zip(reports) {
            w.on_report(r, 0.0, self.cfg.penalty, now.get());
        }
    }

    fn timer_period(&self) -> Option<f64> {
        Some(self.cfg.update)
    }

    fn on_timer(&mut self, now: SimTime) {
        self.last = self.weights(now.get());
        self.rebuild();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(qps: f64, utilization: f64) -> LoadReport {
        LoadReport { qps, utilization }
    }

    #[test]
    fn the_weight_is_qps_over_utilization_plus_the_error_penalty() {
        let mut w = EndpointWeight::default();
        w.on_report(&report(100.0, 0.5), 10.0, 2.0, 1.0);
        // 100 / (0.5 + 10/100 * 2) = 100 / 0.7
        assert_eq!(w.value, 100.0 / 0.7);
        // Zero utilisation or zero qps: ignored.
        w.on_report(&report(50.0, 0.0), 0.0, 1.0, 2.0);
        w.on_report(&report(0.0, 0.3), 0.0, 1.0, 3.0);
        assert_eq!((w.value, w.last_updated, w.non_empty_since), (100.0 / 0.7, 1.0, Some(1.0)));
    }

    #[test]
    fn blackout_then_weight_then_expiry_resets_the_blackout() {
        let cfg = OrcaConfig { blackout: 10.0, expiration: 100.0, ..OrcaConfig::default() };
        let mut w = EndpointWeight::default();
        assert_eq!(w.weight(0.0, &cfg), 0.0, "never reported");
        w.on_report(&report(2.0, 0.5), 0.0, 1.0, 5.0);
        assert_eq!(w.weight(14.9, &cfg), 0.0, "in the blackout");
        assert_eq!(w.weight(15.0, &cfg), 4.0);
        assert_eq!(w.weight(104.9, &cfg), 4.0);
        assert_eq!(w.weight(105.0, &cfg), 0.0, "expired");
        assert_eq!(w.non_empty_since, None);
        // Reports resume: a new blackout from the first of them.
        w.on_report(&report(3.0, 1.0), 0.0, 1.0, 200.0);
        assert_eq!(w.weight(205.0, &cfg), 0.0);
        assert_eq!(w.weight(210.0, &cfg), 3.0);
    }

    #[test]
    fn fewer_than_two_weights_or_equal_weights_mean_round_robin() {
        assert_eq!(Scheduler::new(&[0.0, 0.0, 5.0]), Scheduler::RoundRobin);
        assert_eq!(Scheduler::new(&[2.0, 2.0, 2.0]), Scheduler::RoundRobin);
        // Zeros take the mean of the others: 65535 * mean(1, 3)/3 = 43690.
        assert_eq!(Scheduler::new(&[1.0, 0.0, 3.0]), Scheduler::Stride(vec![21845, 43690, 65535]));
        // Round robin goes through the backends in order from the counter.
        let mut c = 7;
        let picks: Vec<usize> = (0..4).map(|_| Scheduler::RoundRobin.next(3, &mut c)).collect();
        assert_eq!(picks, [2, 0, 1, 2]);
    }

    #[test]
    fn the_stride_scheduler_picks_in_proportion_to_weight() {
        // Weights 1 : 2 : 4 scaled to 16384, 32768, 65535 (rounded from 16383.75 and 32767.5).
        let s = Scheduler::new(&[1.0, 2.0, 4.0]);
        assert_eq!(s, Scheduler::Stride(vec![16384, 32768, 65535]));
        let mut counts = [0u64; 3];
        let mut c = 12345;
        let picks = 70_000;
        for _ in 0..picks {
            counts[s.next(3, &mut c)] += 1;
        }
        // Over whole generations each backend is picked w / 65535 of the time per generation, so
        // the shares are exact up to one partial generation pass: within 3 picks of 1/7, 2/7, 4/7
        // of the total (allowing the weights' rounding, 1e-4 relative).
        let total = picks as f64;
        for (i, share) in [1.0, 2.0, 4.0].iter().enumerate() {
            let want = total * share / 7.0;
            assert!((counts[i] as f64 - want).abs() < 3.0 + want * 1e-4, "{counts:?}");
        }
    }
}

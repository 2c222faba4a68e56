//! `least-request`: Envoy's least-request load balancer.
//!
//! Follows `source/extensions/load_balancing_policies/least_request/least_request_lb.cc` and the
//! EDF scheduler of `source/common/upstream/edf_scheduler.h` (envoyproxy/envoy):
//!
//! - **Equal weights, `N_CHOICES`** (`unweightedHostPickNChoices`, the default): `choice_count`
//!   (`choices`, default 2) hosts drawn uniformly *with replacement*
//!   (`random_.random() % hosts_to_use.size()`); the first draw is the candidate, and a later one
//!   replaces it only if it has strictly fewer active requests (`sampled_active_rq <
//!   candidate_active_rq`). With two hosts and two choices the busier host is picked exactly when
//!   both draws land on it: probability 1/4, as Envoy's documentation says.
//! - **Equal weights, `FULL_SCAN`** (`unweightedHostPickFullScan`, `mode=full-scan`): every host
//!   in order; a host with fewer active requests becomes the candidate, and the `k`-th host found
//!   tied with the candidate replaces it with probability `1/k` (`random_.random() %
//!   num_hosts_known_tied_for_least == 0`, reservoir sampling), so ties go uniformly at random.
//! - **Unequal weights**: the EDF schedule of Envoy's weighted round robin, where a host's weight
//!   is `hostWeight()`: `load_balancing_weight / (active_requests + 1)^active_request_bias`
//!   (`bias`, default 1.0; `bias = 0` is plain weighted round robin). `pickAndAdd` pops the entry
//!   with the earliest deadline (ties to the earliest added, `order_offset_`), moves the
//!   scheduler's time to it, and re-adds the host with deadline `now + 1 / weight`, its weight
//!   computed at that moment (before the new request counts as active). Only the picked host's
//!   entry is refreshed: the others keep the deadlines their weights gave when last picked.
//!   A fresh schedule adds every host in order (deadline `1/w`) and, as Envoy's
//!   `EdfScheduler::createWithPicks` does with its per-balancer seed, is advanced by a random
//!   number of picks (here uniform in `0..hosts`, from the policy's own stream) so that the
//!   clients of a fleet do not start in step.
//!
//! lbsim's weights are the servers' rates (Envoy's `load_balancing_weight` is an integer set by
//! the operator; a float changes nothing in the EDF arithmetic). Active requests are what the
//! client sees: its own in flight with local information, the true queue length otherwise.
//!
//! With some hosts excluded ([`Policy::set_hosts`]) every path works over the allowed hosts, as
//! Envoy's works over the host set `hostSourceToUse` gives it (the healthy hosts, or all of them
//! in panic): `N_CHOICES` draws among them, `FULL_SCAN` scans them, and the weighted path's EDF
//! schedule is rebuilt over them, as `EdfLoadBalancerBase::refresh` rebuilds it on every host
//! set change (`EdfScheduler::createWithPicks(hosts, ..., seed_)`, the same per-balancer seed
//! each time): here advanced by `seed % hosts` picks, `seed` drawn once when the policy is built.
//!
//! **Slow start** ([`Policy::slow_start`], `[health] slow_start`) is Envoy's
//! (`source/extensions/load_balancing_policies/common/load_balancer_impl.cc`,
//! `EdfLoadBalancerBase::refresh` and `applySlowStartFactor`; least request's `hostWeight()`
//! multiplies its weight by the factor while `noHostsAreInSlowStart()` is false): at every
//! refresh (a host set change, or a host becoming healthy) the weighted schedule is rebuilt if
//! the weights differ *or* some host is in slow start, so equal weights take the weighted path
//! — `weight / (active + 1)^bias` times the factor — while a host ramps up. The factor is
//! refreshed at each pick of the host (`pickAndAdd` re-adds it with its weight then), and the
//! schedule stays until the next refresh, after the window too (as Envoy's does); the refresh
//! after it goes back to `N_CHOICES` or `FULL_SCAN` when the weights are equal. The time of a
//! refresh caused by a set change is that of the last pick before it.

use super::edf::Edf;
use super::load::Requests;
use super::p2c::{P2c, WithReplacement};
use super::tuning::{count, number_where, params, text};
use super::{Hosts, Policy, uniform};
use crate::lifecycle::health::SlowStart;
use crate::lifecycle::slow_start::Ramp;
use crate::model::LoadTable;
use crate::rng::SimRng;
use crate::time::SimTime;
use rand::Rng;

params! {
    /// The parameters of `least-request`.
    pub struct LeastRequestParams {
        /// Hosts sampled per pick (Envoy's `choice_count`, default 2).
        #[serde(deserialize_with = "count")]
        pub choices: u32,
        /// `mode=full-scan` (Envoy's `FULL_SCAN`) instead of `n-choices`.
        #[serde(rename = "mode", deserialize_with = "full_scan")]
        pub full_scan: bool,
        /// `active_request_bias` of the weighted path (default 1.0).
        #[serde(deserialize_with = "bias")]
        pub bias: f64,
    }
}

impl Default for LeastRequestParams {
    fn default() -> Self {
        LeastRequestParams { choices: 2, full_scan: false, bias: 1.0 }
    }
}

/// `mode`: `n-choices` or `full-scan`.
fn full_scan<'de, D: serde::Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    match text(d)? {
        "full-scan" => Ok(true),
        "n-choices" => Ok(false),
        _ => Err(serde::de::Error::custom("must be n-choices or full-scan")),
    }
}

/// `bias`: from 0 to 100.
fn bias<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    number_where(d, |b| (0.0..=100.0).contains(&b), "a number from 0 to 100")
}

/// Envoy's least request (see the module documentation).
#[derive(Debug, Clone)]
pub struct LeastRequest {
    n: usize,
    /// `N_CHOICES`: `choices` draws with replacement, the first unless a later one is strictly
    /// less loaded.
    n_choices: P2c<Requests, WithReplacement>,
    full_scan: bool,
    /// The weighted path, when the hosts' weights differ.
    edf: Option<Edf>,
    /// The seed a rebuilt weighted schedule is advanced by (Envoy's `seed_`).
    seed: u64,
    hosts: Hosts,
    /// The weights and the bias, for the schedules slow start builds.
    rates: Vec<f64>,
    bias: f64,
    /// Slow start's ramps: none until a host starts slowly.
    slow: Option<Box<Ramp>>,
}

impl LeastRequest {
    /// Over servers of rates `rates` (the weights), sampling `choices` hosts, or scanning all of
    /// them with `full_scan`; `bias` is the active-request bias of the weighted path, and
    /// `stream` gives the number of picks a fresh weighted schedule is advanced by.
    pub fn new(
        rates: &[f64],
        choices: u32,
        full_scan: bool,
        bias: f64,
        stream: &mut SimRng,
    ) -> Self {
        let n = rates.len();
        let equal = rates.iter().all(|&r| r == rates[0]);
        let edf = (!equal).then(|| {
            let mut edf = Edf::new(rates.to_vec(), bias);
            for _ in 0..uniform(stream, n) {
                edf.pick_and_add(|_| 0);
            }
            edf
        });
        // Drawn after the advance above, from a stream used for nothing else.
        let seed = stream.next_u64();
        let n_choices = P2c::new(n, WithReplacement::new(choices as usize), Requests);
        LeastRequest {
            n,
            n_choices,
            full_scan,
            edf,
            seed,
            hosts: Hosts::all(),
            rates: rates.to_vec(),
            bias,
            slow: None,
        }
    }

    /// Envoy's `refresh` under slow start: a fresh weighted schedule of the allowed hosts (each
    /// weight times its factor now, advanced by `seed % hosts` picks) when the weights differ
    /// or some host is in slow start, else the unweighted paths.
    fn refresh_slow(&mut self) {
        let Some(ramp) = &self.slow else { return };
        let now = ramp.now();
        let equal = self.rates.iter().all(|&r| r == self.rates[0]);
        if equal && !ramp.any(now) {
            self.edf = None;
            return;
        }
        let scale = |h| ramp.factor(h, now);
        let mut fresh = Edf::scaled(self.rates.clone(), self.bias, &self.hosts, scale);
        let k = self.hosts.count(self.n) as u64;
        for _ in 0..self.seed % k {
            fresh.pick_and_add_scaled(|_| 0, scale);
        }
        self.edf = Some(fresh);
    }
}

impl Policy for LeastRequest {
    #[inline]
    fn pick(&mut self, loads: &LoadTable, now: SimTime, rng: &mut SimRng) -> usize {
        if let Some(edf) = &mut self.edf {
            if let Some(ramp) = &mut self.slow {
                let t = now.get();
                ramp.saw(t);
                return edf.pick_and_add_scaled(|h| loads.get(h), |h| ramp.factor(h, t));
            }
            return edf.pick_and_add(|h| loads.get(h));
        }
        if self.full_scan {
            self.hosts.least_loaded(self.n, loads, rng)
        } else {
            self.n_choices.pick(loads, now, rng)
        }
    }

    fn set_hosts(&mut self, _client: u32, hosts: Option<&[u32]>) {
        self.hosts.set(hosts);
        self.n_choices.set_hosts(hosts);
        if self.slow.is_some() {
            self.refresh_slow();
        } else if let Some(edf) = &mut self.edf {
            let mut fresh = Edf::over(std::mem::take(&mut edf.weights), edf.bias, &self.hosts);
            let k = self.hosts.count(self.n) as u64;
            for _ in 0..self.seed % k {
                fresh.pick_and_add(|_| 0);
            }
            *edf = fresh;
        }
    }

    fn slow_start(&mut self, _client: u32, host: usize, since: f64, rule: &SlowStart) {
        let n = self.n;
        self.slow.get_or_insert_with(|| Box::new(Ramp::new(*rule, n))).start(host, since);
        self.refresh_slow();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::P2cRepl;
    use rand::SeedableRng;

    fn rng(seed: u64) -> SimRng {
        SimRng::seed_from_u64(seed)
    }

    #[test]
    fn two_hosts_two_choices_pick_the_busier_a_quarter_of_the_time() {
        // Envoy's documentation: "the host with the most active requests is chosen with
        // probability 1/4" (both draws land on it). 100 000 picks: sd of the frequency is
        // sqrt(0.25 * 0.75 / 1e5) = 0.00137; 4 sd = 0.0055.
        let mut p = LeastRequest::new(&[1.0, 1.0], 2, false, 1.0, &mut rng(0));
        let loads = LoadTable::from_values(&[5, 1], false);
        let mut coins = rng(1);
        let busy = (0..100_000).filter(|_| p.pick(&loads, SimTime::ZERO, &mut coins) == 0).count();
        let f = busy as f64 / 1e5;
        assert!((f - 0.25).abs() < 0.0055, "busier host picked {f} of the time");
    }

    #[test]
    fn n_choices_replaces_only_with_strictly_fewer_and_is_p2c_repl_at_two() {
        // Ties keep the first draw: on equal loads, the pick is the first draw, as p2c-repl's.
        let loads = LoadTable::from_values(&[3, 1, 4, 1, 5, 9, 2, 6], false);
        let mut lr = LeastRequest::new(&[1.0; 8], 2, false, 1.0, &mut rng(0));
        let mut repl = P2cRepl::new(8);
        let (mut a, mut b) = (rng(7), rng(7));
        for _ in 0..10_000 {
            assert_eq!(
                lr.pick(&loads, SimTime::ZERO, &mut a),
                repl.pick(&loads, SimTime::ZERO, &mut b)
            );
        }
        // Three choices: the first of the least loaded among the three draws.
        let mut lr3 = LeastRequest::new(&[1.0; 8], 3, false, 1.0, &mut rng(0));
        let mut coins = rng(3);
        let mut probe = coins.clone();
        for _ in 0..1000 {
            let draws: Vec<usize> = (0..3).map(|_| uniform(&mut probe, 8)).collect();
            let mut want = draws[0];
            for &d in &draws[1..] {
                if loads.get(d) < loads.get(want) {
                    want = d;
                }
            }
            assert_eq!(lr3.pick(&loads, SimTime::ZERO, &mut coins), want);
        }
    }

    #[test]
    fn full_scan_takes_the_minimum_with_ties_uniform() {
        // Hosts 1, 3 and 6 tie at 0. 30 000 picks: each count is Binomial(30 000, 1/3), sd 81.6;
        // 5 sd = 408.
        let loads = LoadTable::from_values(&[2, 0, 5, 0, 1, 3, 0], false);
        let mut p = LeastRequest::new(&[1.0; 7], 2, true, 1.0, &mut rng(0));
        let mut coins = rng(5);
        let mut counts = [0u32; 7];
        for _ in 0..30_000 {
            counts[p.pick(&loads, SimTime::ZERO, &mut coins)] += 1;
        }
        assert_eq!(counts.iter().sum::<u32>(), counts[1] + counts[3] + counts[6]);
        for h in [1, 3, 6] {
            assert!((f64::from(counts[h]) - 10_000.0).abs() < 408.0, "{counts:?}");
        }
    }

    #[test]
    fn edf_with_idle_hosts_is_weighted_round_robin() {
        // Weights 4 and 1 (exact in binary), nobody active: host 0 at deadlines 1/4, 1/2, 3/4,
        // then 1, where it ties host 1's first deadline; host 1 was added earlier, so it goes
        // first (FIFO among equal deadlines). Then host 0 four times to 2, and host 1 at 2 again.
        let mut edf = Edf::new(vec![4.0, 1.0], 1.0);
        let picks: Vec<usize> = (0..9).map(|_| edf.pick_and_add(|_| 0)).collect();
        assert_eq!(picks, [0, 0, 0, 1, 0, 0, 0, 0, 1]);
    }

    #[test]
    fn edf_weight_is_divided_by_active_plus_one_to_the_bias() {
        let edf = Edf::new(vec![4.0, 1.0], 1.0);
        assert_eq!(edf.weight(0, 3), 1.0);
        let edf = Edf::new(vec![4.0, 1.0], 2.0);
        assert_eq!(edf.weight(0, 1), 1.0);
        let edf = Edf::new(vec![4.0, 1.0], 0.0);
        assert_eq!(edf.weight(0, 7), 4.0);
        // A busy heavy host is re-added far away: weight 4 with 3 active is weight 1, so after
        // its pick its next deadline is 1 later, and the light idle host comes first.
        let mut edf = Edf::new(vec![4.0, 1.0], 1.0);
        let active = [3u32, 0];
        assert_eq!(edf.pick_and_add(|h| active[h]), 0); // deadline 1/4 -> re-added at 1.25
        assert_eq!(edf.pick_and_add(|h| active[h]), 1); // deadline 1
        assert_eq!(edf.pick_and_add(|h| active[h]), 0); // 1.25
    }

    /// Equal weights take the weighted path while a host is in slow start (Envoy's `refresh`
    /// builds the schedule when `noHostsAreInSlowStart()` is false), with the factor on the
    /// host's weight: idle hosts (weight 1 / (0 + 1)) give host 0 the share `f / (3 + f)` of
    /// the picks, as round robin's schedule does (its test derives the tolerance of 4 picks).
    /// The schedule stays after the window; the next set change goes back to `N_CHOICES`.
    #[test]
    fn slow_start_weighs_equal_hosts_on_the_schedule_until_the_next_refresh() {
        let rule = SlowStart { window: 1_000.0, ..SlowStart::default() };
        let mut p = LeastRequest::new(&[1.0; 4], 2, false, 1.0, &mut rng(0));
        let loads = LoadTable::new(4, false);
        let mut coins = rng(9);
        p.slow_start(0, 0, 0.0, &rule);
        assert!(p.edf.is_some(), "the weighted path");
        let (mut got, mut want) = (0, 0.0);
        for k in 0..4_000 {
            let now = f64::from(k) * 0.25;
            let f = crate::lifecycle::slow_start::factor(&rule, 0.0, now);
            want += f / (3.0 + f);
            got += u32::from(p.pick(&loads, SimTime::new(now), &mut coins) == 0);
        }
        assert!((f64::from(got) - want).abs() <= 4.0, "{got} picks of host 0, {want} expected");
        p.pick(&loads, SimTime::new(1_500.0), &mut coins);
        assert!(p.edf.is_some(), "until the next refresh");
        p.set_hosts(0, None);
        assert!(p.edf.is_none(), "equal weights, none in slow start: N_CHOICES");
        let unequal = &mut LeastRequest::new(&[1.0, 2.0], 2, false, 1.0, &mut rng(0));
        unequal.slow_start(0, 1, 0.0, &rule);
        unequal.pick(&loads, SimTime::new(2_000.0), &mut coins);
        unequal.set_hosts(0, None);
        assert!(unequal.edf.is_some(), "unequal weights keep the weighted path");
    }

    #[test]
    fn unequal_weights_take_the_weighted_path_equal_ones_the_unweighted() {
        assert!(LeastRequest::new(&[1.0, 2.0], 2, false, 1.0, &mut rng(0)).edf.is_some());
        assert!(LeastRequest::new(&[2.0, 2.0], 2, false, 1.0, &mut rng(0)).edf.is_none());
    }
}

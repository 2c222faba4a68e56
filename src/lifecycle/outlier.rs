//! Outlier detection (SPEC §12, `[health] outlier`): one client's detector over its hosts, as
//! Envoy's `source/common/upstream/outlier_detection_impl.cc` (`DetectorImpl`,
//! `DetectorHostMonitorImpl`) runs it, with gRFC A50's ejection-time multiplier
//! (grpc/proposal `A50-xds-outlier-detection.md`, "Outlier Detection Behavior").
//!
//! The rules, and which source each follows where the two differ:
//! - **Consecutive errors** (Envoy; A50 has none, see its "Rationale"): every failed attempt
//!   (an error, a refusal or a timeout: without `split_external_local_origin_errors`, Envoy
//!   maps a local timeout to 504 and a failed connect to 503, both 5xx) adds one to the host's
//!   count, a success resets it (`putHttpResponseCode`). When the count reaches
//!   `consecutive_errors` (`++consecutive_5xx_ == consecutive5xx()`) the host is ejected at once
//!   (`onConsecutive5xx`), unless it is ejected already (`onConsecutiveErrorWorker` returns
//!   first, leaving the count to run on); the count is reset whether or not `max_ejection`
//!   allowed the ejection, so an overflowed host needs `consecutive_errors` more errors.
//!   `enforcing_consecutive_5xx` is Envoy's default 100%: no draw.
//! - **The most ejected at once** (Envoy): `ejectHost` ejects only if
//!   `100 * (ejected + 1) / hosts <= max_ejection_percent`; otherwise it ejects nothing
//!   (`ejections_overflow`). Here `(ejected + 1) / hosts <= max_ejection`, the same test on
//!   fractions (`0.1` and `1 / 10` are the same double). A50 instead stops once the ejected
//!   share is `>= max_ejection_percent` before each ejection, which can overshoot it (10 hosts,
//!   15%: A50 ejects a second host, Envoy does not); lbsim follows Envoy.
//! - **Ejection time and its multiplier** (A50, as SPEC §12 asks): an ejection adds 1 to the
//!   host's multiplier (from 0, without Envoy's cap of `max + base` in `ejectHost`); at each
//!   interval an ejected host comes back once `now` is after
//!   `ejected_at + min(base_ejection * multiplier, max(base_ejection, 300 s))`, and a host not
//!   ejected loses 1 of its multiplier (if above 0). Envoy (`checkHostForUneject`,
//!   `onIntervalTimer`) un-ejects when the elapsed time is `>=` the same duration, and
//!   decrements only once an interval has passed since the un-ejection; both review only at
//!   the interval, so un-ejection happens at the first review after the ejection time, and
//!   neither decrements a host at the review that takes it back (A50 decrements "if the
//!   address is not ejected" before its un-ejection test).
//!   `max_ejection_time` is the default of both, 300 s (lbsim's times are read as ms, as the
//!   defaults of `[health]` are), or `base_ejection` if larger. Envoy's
//!   `max_ejection_time_jitter` is its default 0.
//! - **Success rate** (Envoy's `processSuccessRateEjections`, `[health] success_rate`): each
//!   host's successes and attempts are counted in two buckets swapped at each interval
//!   (`SuccessRateAccumulator`); at an interval, among the hosts not ejected with at least
//!   `request_volume` (100) attempts in the interval that ended, if there are at least
//!   `minimum_hosts` (5), the mean and population standard deviation of their success rates
//!   (in percent) give the threshold `mean - 1.9 * stdev`, and each host below it is ejected
//!   (in host order, each through the `max_ejection` test; `enforcing_success_rate` 100%).
//!   A50's success rate also counts ejected hosts in the statistics; Envoy's does not.
//! - **The order of a review** (Envoy's `onIntervalTimer`): un-ejections due, then the bucket
//!   swap, then success-rate ejections, then the multiplier decay of the hosts not ejected.
//! - **An active check that passes** un-ejects an ejected host (Envoy's
//!   `successful_active_health_check_uneject_host`, default true, in `DetectorImpl::initialize`):
//!   [`Detector::uneject`]. An un-ejected host's consecutive count starts again from 0
//!   (`unejectHost` resets it "to avoid re-ejection on very few new errors").

use super::health::Outlier;

/// Envoy's and A50's default `max_ejection_time`: 300 s, in ms.
pub const MAX_EJECTION_TIME: f64 = 300_000.0;
/// Envoy's `success_rate_minimum_hosts` default.
pub const SUCCESS_RATE_MINIMUM_HOSTS: usize = 5;
/// Envoy's `success_rate_request_volume` default.
pub const SUCCESS_RATE_REQUEST_VOLUME: u64 = 100;
/// Envoy's `success_rate_stdev_factor` default, 1900 / 1000.
pub const SUCCESS_RATE_STDEV_FACTOR: f64 = 1.9;

/// What one host's record holds.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Host {
    /// Consecutive failed attempts since the last success, ejection or un-ejection.
    consecutive: u32,
    /// When it was ejected, while it is.
    ejected_at: Option<f64>,
    /// A50's ejection-time multiplier.
    multiplier: u32,
    /// Attempts and successes in the interval under way (counted with `success_rate` only).
    total: u64,
    successes: u64,
    /// The same over the last interval that ended.
    last_total: u64,
    last_successes: u64,
}

/// What an interval's review changed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Review {
    /// Hosts un-ejected, in host order.
    pub restored: Vec<usize>,
    /// Hosts ejected by the success rate, in host order.
    pub ejected: Vec<usize>,
}

/// One client's outlier detector over `n` hosts (see the module's rules).
#[derive(Debug, Clone, PartialEq)]
pub struct Detector {
    rule: Outlier,
    success_rate: bool,
    hosts: Vec<Host>,
    ejected: usize,
    ejections: u64,
    overflows: u64,
}

impl Detector {
    /// A detector over `n` hosts, none ejected; `success_rate` adds Envoy's success-rate
    /// ejection to the consecutive errors.
    pub fn new(rule: Outlier, success_rate: bool, n: usize) -> Detector {
        Detector {
            rule,
            success_rate,
            hosts: vec![Host::default(); n],
            ejected: 0,
            ejections: 0,
            overflows: 0,
        }
    }

    /// The client learned an attempt's outcome at `host` (`ok`: answered without error) at
    /// `now`. True when it ejected the host (the caller then takes it out of the client's
    /// view).
    pub fn observe(&mut self, host: usize, ok: bool, now: f64) -> bool {
        let threshold = self.rule.consecutive_errors;
        let h = &mut self.hosts[host];
        if self.success_rate {
            h.total += 1;
            h.successes += u64::from(ok);
        }
        if ok {
            h.consecutive = 0;
            return false;
        }
        h.consecutive += 1;
        if h.consecutive != threshold || h.ejected_at.is_some() {
            return false;
        }
        h.consecutive = 0;
        self.eject(host, now)
    }

    /// Ejects `host` at `now` if `max_ejection` allows one more; true if it did.
    fn eject(&mut self, host: usize, now: f64) -> bool {
        let share = (self.ejected + 1) as f64 / self.hosts.len() as f64;
        if share > self.rule.max_ejection {
            self.overflows += 1;
            return false;
        }
        let h = &mut self.hosts[host];
        h.ejected_at = Some(now);
        h.multiplier += 1;
        self.ejected += 1;
        self.ejections += 1;
        true
    }

    /// How long the `host`'s current ejection lasts: A50's
    /// `min(base * multiplier, max(base, max_ejection_time))`.
    pub fn ejection_time(&self, host: usize) -> f64 {
        let base = self.rule.base_ejection;
        (base * f64::from(self.hosts[host].multiplier)).min(base.max(MAX_EJECTION_TIME))
    }

    /// The review every `interval` (at `now`): un-ejections due, success-rate ejections, the
    /// multipliers' decay, in Envoy's order (see the module's rules).
    pub fn interval(&mut self, now: f64) -> Review {
        let mut review = Review::default();
        for host in 0..self.hosts.len() {
            if let Some(at) = self.hosts[host].ejected_at
                && now > at + self.ejection_time(host)
            {
                self.restore(host);
                review.restored.push(host);
            }
            let h = &mut self.hosts[host];
            h.last_total = std::mem::take(&mut h.total);
            h.last_successes = std::mem::take(&mut h.successes);
        }
        if self.success_rate {
            self.success_rate_ejections(now, &mut review.ejected);
        }
        for (host, h) in self.hosts.iter_mut().enumerate() {
            let back_now = review.restored.binary_search(&host).is_ok();
            if h.ejected_at.is_none() && h.multiplier > 0 && !back_now {
                h.multiplier -= 1;
            }
        }
        review
    }

    /// Envoy's success-rate ejection over the interval that just ended.
    fn success_rate_ejections(&mut self, now: f64, ejected: &mut Vec<usize>) {
        let rates: Vec<(usize, f64)> = (self.hosts.iter().enumerate())
            .filter(|(_, h)| h.ejected_at.is_none() && h.last_total >= SUCCESS_RATE_REQUEST_VOLUME)
            .map(|(i, h)| (i, h.last_successes as f64 * 100.0 / h.last_total as f64))
            .collect();
        if rates.is_empty() || rates.len() < SUCCESS_RATE_MINIMUM_HOSTS {
            return;
        }
        let threshold = success_rate_threshold(&rates);
        for (host, rate) in rates {
            if rate < threshold && self.eject(host, now) {
                ejected.push(host);
            }
        }
    }

    /// Takes `host` back: not ejected, its consecutive count from 0.
    fn restore(&mut self, host: usize) {
        let h = &mut self.hosts[host];
        h.ejected_at = None;
        h.consecutive = 0;
        self.ejected -= 1;
    }

    /// An active check of `host` passed while its checker finds it healthy: an ejected host
    /// comes back at once (Envoy's `successful_active_health_check_uneject_host`). True if it
    /// was ejected.
    pub fn uneject(&mut self, host: usize) -> bool {
        if self.hosts[host].ejected_at.is_none() {
            return false;
        }
        self.restore(host);
        true
    }

    /// Whether `host` is ejected now.
    pub fn is_ejected(&self, host: usize) -> bool {
        self.hosts[host].ejected_at.is_some()
    }

    /// Hosts ejected now.
    pub fn ejected(&self) -> usize {
        self.ejected
    }

    /// Ejections so far (the column `ejections` sums them).
    pub fn ejections(&self) -> u64 {
        self.ejections
    }

    /// Ejections `max_ejection` refused (Envoy's `ejections_overflow`).
    pub fn overflows(&self) -> u64 {
        self.overflows
    }

    /// `host`'s ejection-time multiplier.
    pub fn multiplier(&self, host: usize) -> u32 {
        self.hosts[host].multiplier
    }
}

/// Envoy's `successRateEjectionThreshold`: `mean - 1.9 * stdev` of the rates (in percent),
/// the standard deviation over the hosts themselves (variance divided by their number).
pub fn success_rate_threshold(rates: &[(usize, f64)]) -> f64 {
    let n = rates.len() as f64;
    let mean = rates.iter().map(|r| r.1).sum::<f64>() / n;
    let variance = rates.iter().map(|r| (r.1 - mean).powi(2)).sum::<f64>() / n;
    mean - SUCCESS_RATE_STDEV_FACTOR * variance.sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn detector(n: usize, success_rate: bool) -> Detector {
        Detector::new(Outlier::default(), success_rate, n)
    }

    /// Envoy: the 5th consecutive error ejects, a success in between starts the count again.
    #[test]
    fn the_fifth_consecutive_error_ejects_and_a_success_resets_the_count() {
        let mut d = detector(10, false);
        for _ in 0..4 {
            assert!(!d.observe(3, false, 1.0));
        }
        assert!(!d.observe(3, true, 2.0), "a success resets");
        for k in 1..=4 {
            assert!(!d.observe(3, false, 3.0), "error {k} after the success");
        }
        assert!(d.observe(3, false, 4.0), "the 5th consecutive error ejects");
        assert!(d.is_ejected(3));
        assert_eq!((d.ejected(), d.ejections(), d.multiplier(3)), (1, 1, 1));
        for _ in 0..20 {
            assert!(!d.observe(3, false, 5.0), "an ejected host is not ejected again");
        }
        assert_eq!(d.ejections(), 1);
    }

    /// Envoy's `ejectHost`: `(ejected + 1) / hosts <= 10%` ejects one host of 10, the second
    /// overflows, and its count starts again (5 more errors before the next try).
    #[test]
    fn max_ejection_lets_one_host_of_ten_out_and_counts_the_overflow() {
        let mut d = detector(10, false);
        for _ in 0..5 {
            d.observe(0, false, 0.0);
        }
        assert!(d.is_ejected(0));
        for _ in 0..4 {
            assert!(!d.observe(1, false, 0.0));
        }
        assert!(!d.observe(1, false, 0.0), "2 / 10 > 10%: overflow");
        assert_eq!((d.ejected(), d.overflows()), (1, 1));
        for _ in 0..4 {
            d.observe(1, false, 0.0);
        }
        assert_eq!(d.overflows(), 1, "the count started again after the overflow");
        d.observe(1, false, 0.0);
        assert_eq!(d.overflows(), 2);
        // 15% of 10 hosts: Envoy still refuses the second (20% > 15%), where A50 would not.
        let rule = Outlier { max_ejection: 0.15, ..Outlier::default() };
        let mut d = Detector::new(rule, false, 10);
        for h in 0..2 {
            for _ in 0..5 {
                d.observe(h, false, 0.0);
            }
        }
        assert_eq!(d.ejected(), 1);
        // max_ejection = 0: never.
        let mut d = Detector::new(Outlier { max_ejection: 0.0, ..Outlier::default() }, false, 10);
        for _ in 0..5 {
            d.observe(0, false, 0.0);
        }
        assert_eq!((d.ejected(), d.overflows()), (0, 1));
    }

    /// A50: ejected at t, back at the first review after `t + base * multiplier`; the
    /// multiplier decays by one per review out, so a host ejected again soon stays out longer.
    #[test]
    fn ejection_lasts_base_times_the_multiplier_and_the_multiplier_decays() {
        let (base, interval) = (30_000.0, 10_000.0);
        let mut d = detector(10, false);
        let eject = |d: &mut Detector, t: f64| {
            for _ in 0..5 {
                d.observe(2, false, t);
            }
            assert!(d.is_ejected(2));
        };
        eject(&mut d, 1_000.0);
        assert_eq!(d.ejection_time(2), base);
        for k in 1..=3 {
            assert!(d.interval(k as f64 * interval).restored.is_empty(), "review {k}");
        }
        assert_eq!(d.interval(4.0 * interval).restored, vec![2], "31 s after: back");
        assert_eq!(d.multiplier(2), 1, "not decayed at the review that restored it");
        eject(&mut d, 4.0 * interval + 1.0);
        assert_eq!(d.multiplier(2), 2);
        assert_eq!(d.ejection_time(2), 2.0 * base);
        for k in 5..=10 {
            assert!(d.interval(k as f64 * interval).restored.is_empty(), "review {k}");
        }
        assert_eq!(d.interval(11.0 * interval).restored, vec![2]);
        d.interval(12.0 * interval);
        assert_eq!(d.multiplier(2), 1);
        d.interval(13.0 * interval);
        d.interval(14.0 * interval);
        assert_eq!(d.multiplier(2), 0, "never below 0");
        // Uncapped multiplier (A50), time capped at max(base, 300 s).
        let mut d = detector(10, false);
        for k in 0..15 {
            let t = k as f64 * 1e6;
            eject(&mut d, t);
            assert_eq!(d.interval(t + 1e6 - 1.0).restored, vec![2]);
        }
        assert_eq!(d.multiplier(2), 15);
        assert_eq!(d.ejection_time(2), MAX_EJECTION_TIME);
        let rule = Outlier { base_ejection: 400_000.0, ..Outlier::default() };
        let mut d = Detector::new(rule, false, 10);
        eject(&mut d, 0.0);
        assert_eq!(d.ejection_time(2), 400_000.0, "max(base, 300 s) when base is larger");
    }

    /// Un-ejection starts the consecutive count again, and a passed check un-ejects at once.
    #[test]
    fn an_unejected_host_counts_from_zero_and_a_passed_check_unejects() {
        let mut d = detector(10, false);
        for _ in 0..5 {
            d.observe(0, false, 0.0);
        }
        for _ in 0..3 {
            d.observe(0, false, 1.0);
        }
        assert!(d.uneject(0));
        assert!(!d.uneject(0), "not ejected any more");
        assert_eq!(d.ejected(), 0);
        for _ in 0..4 {
            assert!(!d.observe(0, false, 2.0), "count from 0, not from the 3 while ejected");
        }
        assert!(d.observe(0, false, 2.0));
    }

    /// Envoy's own example (`successRateEjectionThreshold`): rates {50, 100, 100, 100, 100}
    /// have mean 90, stdev 20, threshold 90 - 1.9 * 20 = 52.
    #[test]
    fn the_success_rate_threshold_is_envoys_example() {
        let rates: Vec<(usize, f64)> =
            [50.0, 100.0, 100.0, 100.0, 100.0].into_iter().enumerate().collect();
        assert!((success_rate_threshold(&rates) - 52.0).abs() < 1e-12);
    }

    /// Success rate: the host at 50% among four at 100% is ejected at the review after its
    /// interval; with 4 hosts of enough volume (fewer than 5) or 99 attempts, nothing is.
    #[test]
    fn success_rate_ejects_the_outlier_only_with_five_hosts_of_a_hundred_attempts() {
        let run = |n: usize, volume: u64| {
            let mut d = Detector::new(Outlier { max_ejection: 0.5, ..Outlier::default() }, true, n);
            for host in 0..n {
                for k in 0..volume {
                    // Host 0 fails every other attempt (never 5 in a row); the others never.
                    d.observe(host, host != 0 || k % 2 == 0, 1.0);
                }
            }
            d.interval(10_000.0)
        };
        assert_eq!(run(5, 100).ejected, vec![0]);
        assert!(run(4, 100).ejected.is_empty(), "fewer than minimum_hosts");
        assert!(run(5, 99).ejected.is_empty(), "below request_volume");
        // Without success_rate nothing is counted or ejected at the review.
        let mut d = detector(5, false);
        for k in 0..100 {
            d.observe(0, k % 2 == 0, 1.0);
        }
        assert!(d.interval(10_000.0).ejected.is_empty());
    }

    /// The buckets swap at each review: the review judges the interval that just ended, not
    /// the one before.
    #[test]
    fn success_rate_judges_only_the_interval_that_ended() {
        let mut d = Detector::new(Outlier { max_ejection: 0.5, ..Outlier::default() }, true, 5);
        for host in 0..5 {
            for k in 0..100 {
                d.observe(host, host != 0 || k % 2 == 0, 1.0);
            }
        }
        d.observe(1, true, 1.0);
        assert_eq!(d.interval(10_000.0).ejected, vec![0]);
        // Next interval: no attempts anywhere, so no host has volume and nothing happens.
        assert!(d.interval(20_000.0).ejected.is_empty());
    }
}

//! Slow start (SPEC §12, `[health] slow_start`): the weight of a host that became healthy, as
//! Envoy's `EdfLoadBalancerBase::applySlowStartFactor`
//! (`source/extensions/load_balancing_policies/common/load_balancer_impl.cc`) computes it for
//! `slow_start_config` (`RoundRobin` and `LeastRequest` only: the EDF-scheduled policies;
//! Envoy's random, ring hash and Maglev have none).
//!
//! - A host is **in slow start** while it is healthy and the time since it last became healthy
//!   is below the window (`in_healthy_state_duration < slow_start_window_`). That time starts
//!   at `lastHcPassTime`: the active check that turned it healthy (`handleSuccess` sets it), or,
//!   without active checks, when the host joined the cluster (`recalculateHostsInSlowStart`).
//!   An outlier un-ejection does not set it: a host back from ejection is not in slow start.
//! - Its **weight** is its own times `max(min_weight, time_factor^(1 / aggression))`, with
//!   `time_factor = max(1 ms, t) / window` (`applyAggressionFactor` skips the power when
//!   `aggression` is 1). Envoy's durations are whole milliseconds; lbsim's time is continuous
//!   (read as ms, as the defaults of `[health]` are), so only the 1 ms floor is kept.
//! - In lbsim a host **becomes healthy** at its `up` after `down` or `hang` when the scenario
//!   has no active checks (its return to the cluster, as a host added to it), and at the
//!   checks' healthy verdict when it has them (`lastHcPassTime`). The hosts of the start have
//!   served since before the run: they are not in slow start.
//! - Each balancer keeps a [`Ramp`]: when each host became healthy and the latest of them
//!   (Envoy's `latest_host_added_time_`, which `noHostsAreInSlowStart` reads). The policies
//!   that follow Envoy (`rr`, `least-request`) weigh hosts by it on an EDF schedule.

use super::health::SlowStart;

/// Whether a host that became healthy at `since` is in slow start at `now`.
pub fn in_slow_start(rule: &SlowStart, since: f64, now: f64) -> bool {
    now - since < rule.window
}

/// The factor on the weight of a host that became healthy at `since`, at `now`: 1 once out of
/// slow start.
pub fn factor(rule: &SlowStart, since: f64, now: f64) -> f64 {
    if !in_slow_start(rule, since, now) {
        return 1.0;
    }
    let time_factor = (now - since).max(1.0) / rule.window;
    let ramp = if rule.aggression == 1.0 || time_factor == 1.0 {
        time_factor
    } else {
        time_factor.powf(1.0 / rule.aggression)
    };
    ramp.max(rule.min_weight)
}

/// The hosts of one balancer and when each last became healthy, for slow start: what Envoy's
/// `EdfLoadBalancerBase` keeps in each host's `lastHcPassTime` and in its own
/// `latest_host_added_time_` (`recalculateHostsInSlowStart`).
///
/// The hosts of a run's start are not in slow start (they have served since long before, as a
/// running Envoy's hosts have); a host enters it when it becomes healthy again ([`Ramp::start`]).
#[derive(Debug, Clone)]
pub struct Ramp {
    rule: SlowStart,
    /// Per host: when it last became healthy (`-inf`: before the run).
    since: Vec<f64>,
    /// The latest of them (Envoy's `latest_host_added_time_`).
    latest: f64,
    /// The latest time the balancer has seen: a pick, or a host becoming healthy.
    now: f64,
}

impl Ramp {
    /// `n` hosts under `rule`, none in slow start.
    pub fn new(rule: SlowStart, n: usize) -> Self {
        Ramp { rule, since: vec![f64::NEG_INFINITY; n], latest: f64::NEG_INFINITY, now: 0.0 }
    }

    /// `host` became healthy at `since`: in slow start from then on, for `window`.
    pub fn start(&mut self, host: usize, since: f64) {
        self.since[host] = since;
        self.latest = self.latest.max(since);
        self.now = self.now.max(since);
    }

    /// The balancer acts at `now` (a pick).
    #[inline]
    pub fn saw(&mut self, now: f64) {
        self.now = self.now.max(now);
    }

    /// The latest time the balancer has seen.
    pub fn now(&self) -> f64 {
        self.now
    }

    /// Whether some host is in slow start at `now`: the negation of Envoy's
    /// `noHostsAreInSlowStart` (`now - latest_host_added_time_ <= slow_start_window_`).
    pub fn any(&self, now: f64) -> bool {
        now - self.latest <= self.rule.window
    }

    /// The factor on `host`'s weight at `now` ([`factor`]; 1 for a host not in slow start).
    #[inline]
    pub fn factor(&self, host: usize, now: f64) -> f64 {
        factor(&self.rule, self.since[host], now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Envoy's formula at a few points of the 60 s window: linear with aggression 1, the
    /// square root with 2, never below 10%, 1 from the end of the window on.
    #[test]
    fn the_weight_ramps_as_envoys_formula_and_stops_at_the_window() {
        let linear = SlowStart::default();
        assert_eq!(factor(&linear, 1_000.0, 31_000.0), 0.5);
        assert_eq!(factor(&linear, 0.0, 3_000.0), 0.1, "0.05 is below min_weight");
        assert_eq!(factor(&linear, 0.0, 0.0), 0.1, "at 0: max(1 ms / 60 s, 0.1)");
        assert_eq!(factor(&linear, 0.0, 59_999.0), 59_999.0 / 60_000.0);
        assert!(in_slow_start(&linear, 0.0, 59_999.0));
        assert!(!in_slow_start(&linear, 0.0, 60_000.0), "the window is open at its end");
        assert_eq!(factor(&linear, 0.0, 60_000.0), 1.0);
        let steep = SlowStart { aggression: 2.0, ..linear };
        assert_eq!(factor(&steep, 0.0, 15_000.0), 0.5, "(1/4)^(1/2)");
        let none = SlowStart { min_weight: 0.0, ..linear };
        assert_eq!(factor(&none, 0.0, 0.0), 1.0 / 60_000.0, "the 1 ms floor");
        let steep = SlowStart { aggression: 3.0, min_weight: 0.0, ..linear };
        assert_eq!(factor(&steep, 0.0, 7_500.0), 0.125f64.powf(1.0 / 3.0), "(1/8)^(1/3)");
        assert_eq!(factor(&linear, f64::NEG_INFINITY, 0.0), 1.0, "a host of the start");
    }

    /// A ramp keeps each host's start and the latest of them: some host is in slow start up
    /// to `window` after the latest (Envoy's `<=`), each host's factor its own.
    #[test]
    fn a_ramp_knows_which_hosts_are_in_slow_start() {
        let rule = SlowStart { window: 100.0, ..SlowStart::default() };
        let mut r = Ramp::new(rule, 3);
        assert!(!r.any(0.0) && r.factor(0, 0.0) == 1.0, "none at the start");
        r.start(1, 50.0);
        r.start(2, 20.0);
        assert_eq!(r.now(), 50.0);
        assert_eq!((r.factor(0, 70.0), r.factor(1, 70.0), r.factor(2, 70.0)), (1.0, 0.2, 0.5));
        assert!(r.any(150.0) && !r.any(150.5));
        assert_eq!(r.factor(2, 120.0), 1.0, "host 2's window is over");
        r.saw(60.0);
        r.saw(55.0);
        assert_eq!(r.now(), 60.0);
    }
}

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
    }
}

//! Active health checks (SPEC §12, `[health] checks`): one client's checker over its hosts, as
//! Envoy's `HealthCheckerImplBase::ActiveHealthCheckSession`
//! (`source/common/upstream/health_checker_impl.cc`, later `health_checker_base_impl.cc`) runs
//! it, with the fields of `api/envoy/config/core/v3/health_check.proto`.
//!
//! - **Thresholds**: a passed check resets the host's failures (`num_unhealthy_ = 0`); an
//!   unhealthy host turns healthy after `healthy` consecutive passes (`++num_healthy_ ==
//!   healthy_threshold_`). A failed check resets the passes (`num_healthy_ = 0`); a healthy
//!   host turns unhealthy after `unhealthy` consecutive failures (`++num_unhealthy_ ==
//!   unhealthy_threshold_`). That count is Envoy's rule for network failures (a refused
//!   connection, a check timed out), the only failures a lbsim host gives: a `down` host
//!   refuses, a `hang` host never answers. (Envoy marks a host unhealthy at once on an
//!   active failure, such as an HTTP 503 from the health endpoint, which lbsim has no
//!   counterpart of.)
//! - **Timing**: a check not answered within `timeout` fails when the timeout fires
//!   (`onTimeoutBase`); the next check of a host goes `interval` after the last one's result
//!   (`handleSuccess` / `handleFailure` re-arm the interval timer then), so a host is checked
//!   every `interval` plus the check's own duration. Envoy's `interval_jitter`,
//!   `initial_jitter` and the `unhealthy_interval` / `healthy_edge_interval` variants are
//!   left at their defaults (no jitter, the same interval everywhere). The first check of
//!   each host goes at the start.
//! - **The start**: every host starts healthy. Envoy initialises a host added to a cluster with
//!   a health checker as unhealthy (`FAILED_ACTIVE_HC`, `upstream_impl.cc`: "If we are
//!   depending on a health checker, we initialize to unhealthy"), but it does not finish the
//!   cluster's initialisation before every host's first check, and a first check that passes
//!   marks a host healthy at once (`first_check_`, "This makes startup faster"). A lbsim run
//!   is a client already running at time 0, past its start-up; starting its up hosts healthy
//!   is where Envoy is after that first round, and a host that fails needs `unhealthy`
//!   failures to leave, as in a running Envoy.

use super::health::Checks;

/// How a host answered a check.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Reply {
    /// It answered at this time (an `up` host).
    Answer(f64),
    /// It refused at this time (a `down` host): a network failure.
    Refused(f64),
    /// It never answers (a `hang` host).
    Silent,
}

/// One host's record.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Host {
    healthy: bool,
    passes: u32,
    failures: u32,
}

/// One client's active health checker over `n` hosts (see the module's rules).
#[derive(Debug, Clone, PartialEq)]
pub struct Checker {
    rule: Checks,
    hosts: Vec<Host>,
}

impl Checker {
    /// A checker over `n` hosts, all healthy.
    pub fn new(rule: Checks, n: usize) -> Checker {
        Checker { rule, hosts: vec![Host { healthy: true, passes: 0, failures: 0 }; n] }
    }

    /// The result of a check sent at `sent` that got `reply`: whether it passed, and when the
    /// client knows (an answer after the timeout, or none, fails at `sent + timeout`).
    pub fn resolve(&self, sent: f64, reply: Reply) -> (bool, f64) {
        let deadline = sent + self.rule.timeout;
        match reply {
            Reply::Answer(at) if at < deadline => (true, at),
            Reply::Refused(at) if at < deadline => (false, at),
            _ => (false, deadline),
        }
    }

    /// When the next check of a host goes, its last one's result known at `done`.
    pub fn next_check(&self, done: f64) -> f64 {
        done + self.rule.interval
    }

    /// A check of `host` passed: true when the host turns healthy by it.
    pub fn passed(&mut self, host: usize) -> bool {
        let threshold = self.rule.healthy;
        let h = &mut self.hosts[host];
        h.failures = 0;
        if h.healthy {
            return false;
        }
        h.passes += 1;
        if h.passes == threshold {
            h.healthy = true;
            h.passes = 0;
            return true;
        }
        false
    }

    /// A check of `host` failed: true when the host turns unhealthy by it.
    pub fn failed(&mut self, host: usize) -> bool {
        let threshold = self.rule.unhealthy;
        let h = &mut self.hosts[host];
        h.passes = 0;
        if !h.healthy {
            return false;
        }
        h.failures += 1;
        if h.failures == threshold {
            h.healthy = false;
            h.failures = 0;
            return true;
        }
        false
    }

    /// Records a check's result (see [`Checker::passed`], [`Checker::failed`]): `Some(healthy)`
    /// when the host's health changed.
    pub fn record(&mut self, host: usize, passed: bool) -> Option<bool> {
        let changed = if passed { self.passed(host) } else { self.failed(host) };
        changed.then_some(passed)
    }

    /// Whether the checker finds `host` healthy.
    pub fn is_healthy(&self, host: usize) -> bool {
        self.hosts[host].healthy
    }

    /// How many hosts it finds healthy.
    pub fn healthy(&self) -> usize {
        self.hosts.iter().filter(|h| h.healthy).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Envoy's thresholds with lbsim's defaults (3 to leave, 2 to come back): a pass between
    /// failures starts the count again, and so does a failure between passes.
    #[test]
    fn three_failures_in_a_row_mark_unhealthy_and_two_passes_healthy() {
        let mut c = Checker::new(Checks::default(), 4);
        assert_eq!(c.healthy(), 4, "every host starts healthy");
        assert!(!c.failed(1) && !c.failed(1));
        assert!(!c.passed(1), "a pass resets the failures");
        assert!(!c.failed(1) && !c.failed(1));
        assert!(c.failed(1), "the third failure in a row");
        assert!(!c.is_healthy(1));
        assert!(!c.failed(1), "already unhealthy");
        assert!(!c.passed(1));
        assert!(!c.failed(1), "a failure resets the passes");
        assert!(!c.passed(1));
        assert_eq!(c.record(1, true), Some(true), "the second pass in a row");
        assert!(c.is_healthy(1));
        assert_eq!(c.record(1, true), None);
        assert_eq!(c.healthy(), 4);
        let mut c = Checker::new(Checks { unhealthy: 1, healthy: 1, ..Checks::default() }, 1);
        assert_eq!(c.record(0, false), Some(false));
        assert_eq!(c.record(0, true), Some(true));
    }

    /// The timing: an answer within the timeout passes when it comes; a refusal fails when
    /// it comes; silence or a late answer fails at the timeout; the next check goes an
    /// interval after the result.
    #[test]
    fn a_check_resolves_at_its_answer_or_its_timeout_and_the_next_goes_an_interval_later() {
        let c = Checker::new(Checks::default(), 1);
        assert_eq!(c.resolve(100.0, Reply::Answer(101.5)), (true, 101.5));
        assert_eq!(c.resolve(100.0, Reply::Refused(100.5)), (false, 100.5));
        assert_eq!(c.resolve(100.0, Reply::Silent), (false, 1_100.0));
        assert_eq!(c.resolve(100.0, Reply::Answer(1_100.0)), (false, 1_100.0), "not within");
        assert_eq!(c.next_check(1_100.0), 6_100.0);
    }
}

//! Each client's view of the hosts' health during a replication (SPEC §12): for each client
//! and host, why the client keeps its balancer off the host — a small set of [`Reason`]s — and
//! what follows: the hosts the client's policy may pick ([`HealthView::hosts`], given to the
//! policy by [`Policy::set_hosts`](crate::policy::Policy::set_hosts) whenever the set
//! changes), Envoy's panic threshold, and the fraction of hosts the client considers healthy.
//!
//! The rules that exclude and include hosts call [`HealthView::exclude`] and
//! [`HealthView::include`]; the rules themselves are kept here: the circuit breakers
//! ([`crate::lifecycle::breaker`]) and outlier detectors ([`crate::lifecycle::outlier`]), one
//! per client (per host for the breakers), and the active health checker
//! ([`crate::lifecycle::checks`]). The view lives in the lifecycle's state and exists only
//! when the scenario has `[health]` or `[client] breaker`.
//!
//! One checker serves every client. Each client checks each host at the same instants (the
//! first check of every host at time 0, Envoy's default `initial_jitter` of 0, then `interval`
//! after each result) and a probe's reply depends only on the host's state (a probe travels in
//! no time: an `up` host answers at once, a `down` host refuses at once, a `hang` host never
//! answers and the check fails at its `timeout`), so every client's checker would hold the same
//! counts and reach the same verdicts at the same instants: one checker is all of them, and its
//! verdicts are applied to every client's view (a client that appears later starts with the
//! hosts the checker finds unhealthy excluded, as its own checker, running since time 0, would
//! have them). Probes do not load the servers: they join no queue and take no service.
//!
//! The panic threshold is Envoy's `healthy_panic_threshold`
//! (source/common/upstream/load_balancer_impl.cc, `LoadBalancerBase::isHostSetInPanic`: a host
//! set is in panic when its healthy percentage is below the threshold, and the balancer then
//! picks among all its hosts, healthy or not). A client not in panic whose hosts are all
//! excluded has no host to pick: its requests fail fast, as Envoy's router answers 503 "no
//! healthy upstream" itself when the balancer returns no host (source/common/router/router.cc,
//! `Filter::sendNoHealthyUpstreamResponse`).

use crate::lifecycle::breaker::{BreakerState, CircuitBreaker, Transition};
use crate::lifecycle::checks::{Checker, Reply};
use crate::lifecycle::health::{Breaker, Health, Outlier};
use crate::lifecycle::outlier::Detector;

/// Why a client excludes a host: each is one bit of a host's reasons.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reason {
    /// Ejected by outlier detection.
    Ejected = 1,
    /// Marked unhealthy by active health checks.
    Unhealthy = 2,
    /// Its circuit breaker is OPEN (or HALF_OPEN with its trial out).
    Open = 4,
}

/// What one client keeps.
#[derive(Debug, Clone)]
struct ClientView {
    /// Per host: its reasons, one bit each.
    reasons: Vec<u8>,
    /// Hosts with at least one reason.
    excluded: u32,
    /// The set last given to the policy (`None`: all hosts).
    given: Option<Vec<u32>>,
    /// Per host: its breaker (empty without `[client] breaker`).
    breakers: Vec<CircuitBreaker>,
    /// Its outlier detector (without `[health] outlier`, none).
    detector: Option<Detector>,
}

/// Every client's view of the hosts.
#[derive(Debug, Clone)]
pub(crate) struct HealthView {
    /// The number of hosts.
    n: usize,
    /// Envoy's `healthy_panic_threshold` as a fraction (0 = never).
    panic: f64,
    breaker: Option<Breaker>,
    /// Per client, grown as clients appear.
    clients: Vec<ClientView>,
    /// Clients whose set may have changed since it was last given to the policy.
    changed: Vec<u32>,
    /// The earliest end of an OPEN breaker's recovery (infinite: none open).
    due: f64,
    /// Outlier detection's rule and whether it adds the success rate (each client's detector
    /// is made from them).
    outlier: Option<(Outlier, bool)>,
    /// The active health checker of every client (see the module's documentation).
    checker: Option<Checker>,
    /// Per host: the result of its check under way, known at its next check event (a check
    /// that waits for its timeout).
    pending: Vec<Option<bool>>,
    /// With `--series` only ([`Self::log_changes`]): each change of a client's count of
    /// excluded hosts, `(time, +1 or -1)`, until the loop takes it ([`Self::logged`]).
    log: Option<Vec<(f64, i32)>>,
    /// The hosts the checker found healthy again since last asked ([`Self::risen`]): they
    /// start slowly with `[health] slow_start`.
    risen: Vec<usize>,
}

impl HealthView {
    /// A view of `n` hosts, all allowed, with Envoy's panic threshold `panic` (0 = never) and a
    /// breaker per client per host if `breaker` is given.
    pub(crate) fn new(n: usize, panic: f64, breaker: Option<Breaker>) -> Self {
        HealthView {
            n,
            panic,
            breaker,
            clients: Vec::new(),
            changed: Vec::new(),
            due: f64::INFINITY,
            outlier: None,
            checker: None,
            pending: Vec::new(),
            log: None,
            risen: Vec::new(),
        }
    }

    /// From now on, logs each change of a client's count of excluded hosts with its time (for
    /// the series' `healthy`).
    pub(crate) fn log_changes(&mut self) {
        self.log = Some(Vec::new());
    }

    /// The changes logged since last asked, in order: `(time, d)`, some client's count of
    /// excluded hosts grew by `d` (`-1`: a host is healthy again to it) at `time`.
    pub(crate) fn logged(&mut self) -> impl Iterator<Item = (f64, i32)> + '_ {
        self.log.iter_mut().flat_map(|l| l.drain(..))
    }

    /// Logs a change `d` of a client's count of excluded hosts at `now`, if asked to.
    fn note(&mut self, now: f64, d: i32) {
        if let Some(l) = &mut self.log {
            l.push((now, d));
        }
    }

    /// The view with `health`'s outlier detection (a detector per client) and active health
    /// checks (see the module's documentation), if it asks for them.
    pub(crate) fn with_rules(mut self, health: &Health) -> Self {
        self.outlier = health.outlier.map(|o| (o, health.success_rate));
        self.checker = health.checks.map(|c| Checker::new(c, self.n));
        self.pending = vec![None; self.n];
        if self.checker.is_some() {
            // The one client of a run without a fleet hears the checks from the start; a
            // fleet's other clients appear with their first request ([`Self::meet`]).
            self.client(0, 0.0);
        }
        self
    }

    /// Client `c` is about to send: its view exists from now on (with the hosts the checker
    /// finds unhealthy excluded, see [`Self::client`]).
    pub(crate) fn meet(&mut self, c: u32, now: f64) {
        self.client(c, now);
    }

    /// Client `c`'s view, a fresh one the first time: breakers closed, nothing ejected, the
    /// hosts the checker finds unhealthy excluded (and every other host allowed), logged at
    /// `now` for the series.
    fn client(&mut self, c: u32, now: f64) -> &mut ClientView {
        let i = c as usize;
        if self.clients.len() <= i {
            let mut fresh = ClientView {
                reasons: vec![0; self.n],
                excluded: 0,
                given: None,
                breakers: self.breaker.map_or(Vec::new(), |b| vec![CircuitBreaker::new(b); self.n]),
                detector: self.outlier.map(|(o, rate)| Detector::new(o, rate, self.n)),
            };
            if let Some(ch) = &self.checker {
                for host in (0..self.n).filter(|&h| !ch.is_healthy(h)) {
                    fresh.reasons[host] = Reason::Unhealthy as u8;
                    fresh.excluded += 1;
                }
            }
            for new in self.clients.len()..=i {
                if fresh.excluded > 0 {
                    self.changed.push(new as u32);
                    self.note(now, fresh.excluded as i32);
                }
            }
            self.clients.resize(i + 1, fresh);
        }
        &mut self.clients[i]
    }

    /// Client `c` excludes `host` for `reason` from `now` (a reason already given changes
    /// nothing).
    pub(crate) fn exclude(&mut self, c: u32, host: usize, reason: Reason, now: f64) {
        let v = self.client(c, now);
        let had = v.reasons[host];
        if had & reason as u8 != 0 {
            return;
        }
        v.reasons[host] = had | reason as u8;
        if had == 0 {
            v.excluded += 1;
            self.changed.push(c);
            self.note(now, 1);
        }
    }

    /// Client `c` no longer excludes `host` for `reason` from `now`; the host is allowed again
    /// once no reason is left.
    pub(crate) fn include(&mut self, c: u32, host: usize, reason: Reason, now: f64) {
        let v = self.client(c, now);
        let had = v.reasons[host];
        if had & reason as u8 == 0 {
            return;
        }
        v.reasons[host] = had & !(reason as u8);
        if v.reasons[host] == 0 {
            v.excluded -= 1;
            self.changed.push(c);
            self.note(now, -1);
        }
    }

    /// The fraction of hosts client `c` considers healthy (excludes for no reason).
    pub(crate) fn healthy(&self, c: u32) -> f64 {
        let excluded = self.clients.get(c as usize).map_or(0, |v| v.excluded);
        1.0 - f64::from(excluded) / self.n as f64
    }

    /// Whether client `c` is in panic: fewer hosts healthy than the threshold (Envoy's strict
    /// `healthy_percent < panic_threshold`), so it balances over all of them.
    pub(crate) fn in_panic(&self, c: u32) -> bool {
        self.healthy(c) < self.panic
    }

    /// Whether client `c` may send to `host` now: it excludes it for no reason, or it panics.
    pub(crate) fn allowed(&self, c: u32, host: usize) -> bool {
        match self.clients.get(c as usize) {
            None => true,
            Some(v) => v.reasons[host] == 0 || self.in_panic(c),
        }
    }

    /// Host ejections by outlier detection so far, summed over the clients' detectors.
    pub(crate) fn ejections(&self) -> u64 {
        self.clients.iter().filter_map(|v| v.detector.as_ref()).map(Detector::ejections).sum()
    }

    /// The hosts client `c`'s policy may pick, in server order, into `out`: `None` for all of
    /// them (none excluded, or a panic), `Some` of an empty list when every host is excluded
    /// without a panic (its requests then fail fast).
    pub(crate) fn hosts<'a>(&self, c: u32, out: &'a mut Vec<u32>) -> Option<&'a [u32]> {
        out.clear();
        let v = self.clients.get(c as usize)?;
        if v.excluded == 0 || self.in_panic(c) {
            return None;
        }
        out.extend((0..self.n as u32).filter(|&h| v.reasons[h as usize] == 0));
        Some(out)
    }

    /// The next client whose set changed since it was last given to its policy, with the set
    /// to give it (into `out`, as [`Self::hosts`]); `None` when none is left. An empty set is
    /// never given: the policy keeps its last one and every pick fails fast
    /// ([`Self::allowed`]).
    pub(crate) fn next_change<'a>(
        &mut self,
        out: &'a mut Vec<u32>,
    ) -> Option<(u32, Option<&'a [u32]>)> {
        while let Some(c) = self.changed.pop() {
            let some = self.hosts(c, out).is_some();
            if some && out.is_empty() {
                continue;
            }
            let now = some.then(|| out.clone());
            let v = &mut self.clients[c as usize];
            if v.given == now {
                continue;
            }
            v.given = now;
            return Some((c, some.then_some(&out[..])));
        }
        None
    }

    /// Client `c` sends a request to `host` now: if that host's breaker is HALF_OPEN, this is
    /// its trial, and the host is excluded until the trial's answer.
    pub(crate) fn sent(&mut self, c: u32, host: usize, now: f64) {
        if self.breaker.is_none() {
            return;
        }
        if self.client(c, now).breakers[host].sent() {
            self.exclude(c, host, Reason::Open, now);
        }
    }

    /// Client `c` heard the outcome of an attempt at `host` at `now`: its outlier detector
    /// and its breaker (if any) count it; an ejection excludes the host.
    pub(crate) fn observe(&mut self, c: u32, host: usize, ok: bool, now: f64) {
        if self.outlier.is_some() {
            let v = self.client(c, now);
            let d = v.detector.as_mut().expect("a detector with outlier detection");
            if d.observe(host, ok, now) {
                self.exclude(c, host, Reason::Ejected, now);
            }
        }
        if self.breaker.is_none() {
            return;
        }
        match self.client(c, now).breakers[host].observe(ok, now) {
            Transition::None => {}
            Transition::Opened(until) => {
                self.due = self.due.min(until);
                self.exclude(c, host, Reason::Open, now);
            }
            Transition::Closed => self.include(c, host, Reason::Open, now),
        }
    }

    /// The breakers whose recovery is over by `now` become HALF_OPEN, and their hosts may
    /// take a trial. True when any did.
    pub(crate) fn recover_due(&mut self, now: f64) -> bool {
        if now < self.due {
            return false;
        }
        let (mut due, mut back) = (f64::INFINITY, Vec::new());
        for (c, v) in self.clients.iter_mut().enumerate() {
            for (host, b) in v.breakers.iter_mut().enumerate() {
                if b.recover(now) {
                    back.push((c as u32, host));
                } else if let BreakerState::Open { until } = b.state() {
                    due = due.min(until);
                }
            }
        }
        self.due = due;
        for &(c, host) in &back {
            self.include(c, host, Reason::Open, now);
        }
        !back.is_empty()
    }
}

impl HealthView {
    /// Outlier detection's review at `now` (every `interval`): each client's detector
    /// restores the hosts whose ejection is over and ejects by success rate (see
    /// [`Detector::interval`]); its view follows.
    pub(crate) fn review(&mut self, now: f64) {
        for c in 0..self.clients.len() {
            let Some(d) = self.clients[c].detector.as_mut() else { continue };
            let review = d.interval(now);
            for &host in &review.restored {
                self.include(c as u32, host, Reason::Ejected, now);
            }
            for &host in &review.ejected {
                self.exclude(c as u32, host, Reason::Ejected, now);
            }
        }
    }

    /// The hosts the checks found healthy again since last asked, in order (Envoy sets a
    /// host's `lastHcPassTime` at each pass while it is marked failed, so its value is that of
    /// the pass that turned it healthy: `HealthCheckerImplBase::ActiveHealthCheckSession::
    /// handleSuccess`, source/common/upstream/health_checker_base_impl.cc).
    pub(crate) fn risen(&mut self) -> std::vec::Drain<'_, usize> {
        self.risen.drain(..)
    }

    /// The check event of `host` at `now`, the host being in `state`: if a check of it is
    /// under way (one that waited for its timeout), its result is recorded; otherwise a check
    /// is sent, and its result recorded now if it is known now (an answer or a refusal: a
    /// probe travels in no time). The time of the host's next check event.
    pub(crate) fn check(&mut self, host: usize, reply: Reply, now: f64) -> f64 {
        let checker = self.checker.as_ref().expect("checks");
        let passed = match self.pending[host].take() {
            Some(passed) => passed,
            None => {
                let (passed, at) = checker.resolve(now, reply);
                if at > now {
                    self.pending[host] = Some(passed);
                    return at;
                }
                passed
            }
        };
        self.record(host, passed, now);
        self.checker.as_ref().expect("checks").next_check(now)
    }

    /// A check of `host` at `now` `passed` or not: a change of health excludes or includes
    /// the host (`Unhealthy`) for every client; a pass while the host is healthy un-ejects it
    /// (Envoy's `successful_active_health_check_uneject_host`, default true:
    /// source/common/upstream/outlier_detection_impl.cc, `DetectorImpl::initialize`, calls
    /// `unejectHost` when a host's active health check passes).
    fn record(&mut self, host: usize, passed: bool, now: f64) {
        let checker = self.checker.as_mut().expect("checks");
        let change = checker.record(host, passed);
        let healthy = checker.is_healthy(host);
        if change == Some(true) {
            self.risen.push(host);
        }
        for c in 0..self.clients.len() as u32 {
            match change {
                Some(true) => self.include(c, host, Reason::Unhealthy, now),
                Some(false) => self.exclude(c, host, Reason::Unhealthy, now),
                None => {}
            }
            let v = &mut self.clients[c as usize];
            if passed && healthy && v.detector.as_mut().is_some_and(|d| d.uneject(host)) {
                self.include(c, host, Reason::Ejected, now);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn given(v: &mut HealthView) -> Vec<(u32, Option<Vec<u32>>)> {
        let mut out = Vec::new();
        let mut got = Vec::new();
        while let Some((c, h)) = v.next_change(&mut out) {
            got.push((c, h.map(<[u32]>::to_vec)));
        }
        got
    }

    #[test]
    fn reasons_add_up_and_a_host_comes_back_when_none_is_left() {
        let mut v = HealthView::new(4, 0.0, None);
        v.exclude(0, 1, Reason::Ejected, 0.0);
        v.exclude(0, 1, Reason::Unhealthy, 0.0);
        v.exclude(0, 1, Reason::Ejected, 0.0);
        assert_eq!(v.ejections(), 0, "only the detectors count ejections");
        assert!(!v.allowed(0, 1) && v.allowed(0, 0) && v.allowed(1, 1));
        assert_eq!(v.healthy(0), 0.75);
        assert_eq!(given(&mut v), [(0, Some(vec![0, 2, 3]))]);
        v.include(0, 1, Reason::Ejected, 1.0);
        assert!(!v.allowed(0, 1), "still unhealthy");
        assert!(given(&mut v).is_empty(), "nothing changed for the policy");
        v.include(0, 1, Reason::Unhealthy, 2.0);
        assert!(v.allowed(0, 1));
        assert_eq!(given(&mut v), [(0, None)]);
    }

    /// The log for the series holds a change of a client's count of excluded hosts, not a
    /// reason added to a host already excluded, nor anything before it is asked for.
    #[test]
    fn the_log_holds_each_change_of_a_clients_excluded_count_with_its_time() {
        let mut v = HealthView::new(4, 0.0, None);
        v.exclude(0, 0, Reason::Ejected, 1.0);
        assert_eq!(v.logged().count(), 0, "not asked for");
        v.log_changes();
        v.exclude(1, 2, Reason::Ejected, 2.0);
        v.exclude(1, 2, Reason::Unhealthy, 3.0);
        v.include(1, 2, Reason::Ejected, 4.0);
        v.include(1, 2, Reason::Unhealthy, 5.0);
        v.include(0, 0, Reason::Ejected, 6.0);
        assert_eq!(v.logged().collect::<Vec<_>>(), [(2.0, 1), (5.0, -1), (6.0, -1)]);
        assert_eq!(v.logged().count(), 0, "taken");
    }

    /// Envoy's `isHostSetInPanic` is a strict `healthy < threshold`: 5 of 10 healthy at 0.5 is
    /// not a panic, 4 of 10 is, and then every host is allowed and the policy gets them all.
    #[test]
    fn below_the_panic_threshold_every_host_is_allowed() {
        let mut v = HealthView::new(10, 0.5, None);
        for h in 0..5 {
            v.exclude(0, h, Reason::Open, 0.0);
        }
        assert!(!v.in_panic(0) && !v.allowed(0, 0));
        assert_eq!(given(&mut v), [(0, Some(vec![5, 6, 7, 8, 9]))]);
        v.exclude(0, 5, Reason::Open, 0.0);
        assert!(v.in_panic(0) && v.allowed(0, 0));
        assert_eq!(given(&mut v), [(0, None)]);
    }

    #[test]
    fn an_empty_set_without_panic_is_never_given_and_allows_nothing() {
        let mut v = HealthView::new(2, 0.0, None);
        v.exclude(0, 0, Reason::Open, 0.0);
        assert_eq!(given(&mut v), [(0, Some(vec![1]))]);
        v.exclude(0, 1, Reason::Open, 0.0);
        assert!(given(&mut v).is_empty(), "the policy keeps its last set");
        assert!(!v.allowed(0, 0) && !v.allowed(0, 1));
        let mut out = Vec::new();
        assert_eq!(v.hosts(0, &mut out), Some(&[][..]));
    }

    #[test]
    fn a_breaker_excludes_its_host_while_open_and_during_its_trial() {
        let b = Breaker { failures: 2, recovery: 10.0 };
        let mut v = HealthView::new(3, 0.0, Some(b));
        v.observe(1, 2, false, 0.0);
        assert!(v.allowed(1, 2));
        v.observe(1, 2, false, 1.0);
        assert!(!v.allowed(1, 2) && v.allowed(0, 2), "each client has its own breakers");
        assert!(!v.recover_due(5.0), "its recovery is due at 11");
        assert!(!v.allowed(1, 2));
        assert!(v.recover_due(11.0));
        assert!(v.allowed(1, 2), "half open: the trial may go");
        v.sent(1, 2, 11.5);
        assert!(!v.allowed(1, 2), "one trial only");
        assert!(!v.recover_due(1e9), "nothing is open");
        v.observe(1, 2, true, 12.0);
        assert!(v.allowed(1, 2), "the trial's success closes it");
        assert_eq!(v.ejections(), 0, "a breaker is not an ejection");
    }

    /// The rules in the view: an ejection excludes the host for its client only, the review
    /// after the ejection time takes it back; a passed check of a healthy host un-ejects it
    /// at once (Envoy's `successful_active_health_check_uneject_host`); three failed checks
    /// exclude a host for every client, and a client that appears later starts without it.
    #[test]
    fn ejections_reviews_and_checks_exclude_and_include() {
        use crate::lifecycle::health::Checks;
        let o = Outlier {
            consecutive_errors: 2,
            interval: 10.0,
            base_ejection: 30.0,
            ..Outlier::default()
        };
        let health =
            Health { outlier: Some(o), checks: Some(Checks::default()), ..Health::default() };
        let mut v = HealthView::new(10, 0.0, None).with_rules(&health);
        v.observe(0, 3, false, 1.0);
        v.observe(1, 4, true, 1.0);
        assert!(v.allowed(0, 3));
        v.observe(0, 3, false, 2.0);
        assert!(!v.allowed(0, 3) && v.allowed(1, 3), "ejected by client 0 only");
        assert_eq!(v.ejections(), 1);
        v.review(30.0);
        assert!(!v.allowed(0, 3), "2 + 30 is not over at 30");
        v.review(40.0);
        assert!(v.allowed(0, 3), "back at the first review after 32");
        v.observe(0, 3, false, 41.0);
        v.observe(0, 3, false, 42.0);
        assert!(!v.allowed(0, 3) && v.ejections() == 2);
        assert_eq!(v.check(3, Reply::Answer(43.0), 43.0), 5_043.0, "the next check");
        assert!(v.allowed(0, 3), "a passed check of a healthy host un-ejects it");
        for k in 0..3 {
            let t = 100.0 + f64::from(k);
            assert!(v.allowed(1, 5), "check {k}");
            assert_eq!(v.check(5, Reply::Silent, t), t + 1_000.0, "fails at its timeout");
            assert_eq!(v.check(5, Reply::Silent, t + 1_000.0), t + 6_000.0);
        }
        v.observe(7, 4, true, 200.0);
        assert!(!v.allowed(0, 5) && !v.allowed(1, 5) && !v.allowed(7, 5), "unhealthy for all");
        assert!(v.allowed(7, 4));
        assert_eq!(v.ejections(), 2, "checks do not eject");
    }
}

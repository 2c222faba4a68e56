//! The loop's handlers of health (SPEC §12), on the one loop of [`Replication`], inside the
//! request lifecycle: each client's view of the hosts ([`HealthView`](super::super::health)),
//! its circuit breakers, and the requests that fail fast.
//!
//! - Every point where a client learns an attempt's outcome (an answer, an error, a refusal by a
//!   server, a timeout) calls [`Replication::lc_observe`], where the health rules hear it; the
//!   breakers count it there; an OPEN breaker whose recovery is over is HALF_OPEN at the next pick
//!   ([`Replication::lc_before_pick`]). A change of a client's allowed hosts is given to its policy
//!   ([`Policy::set_hosts`]) at once, before the next pick.
//! - A request fails fast, without an attempt (`fast_failures`), when the host its policy
//!   picked is one its client excludes while not in panic (the set is empty, or the policy
//!   did not hear of the exclusion), when its client already has `max_requests` attempts in
//!   flight, or when it would join a client backlog holding `max_pending`. Envoy's cluster
//!   circuit breakers (api/envoy/config/cluster/v3/circuit_breaker.proto:
//!   `max_pending_requests`, `max_requests`, 1024 each) fail a request the connection pool
//!   cannot take (source/common/conn_pool/conn_pool_base.cc, `newStreamImpl`: an overflow,
//!   `upstream_rq_pending_overflow`), and its router never retries an overflow
//!   (source/common/router/retry_state_impl.cc, `wouldRetryFromReset`: "we never retry if the
//!   reset reason is overflow"); the "no healthy upstream" 503 is the router's own answer, sent
//!   without an upstream request and so without a retry. So a fast failure is never retried,
//!   whatever `retry_on` says: the request fails (a hedged request whose other attempts are
//!   still awaited waits for them).
//! - Outlier detection: each client's detector hears every outcome in
//!   [`Replication::lc_observe`] (an ejection excludes the host at once); its review is an
//!   event every `interval` ([`Replication::lc_review`]). Active health checks are an event
//!   per host ([`Replication::lc_check`]) that sends a check or learns its result (see
//!   [`HealthView`](super::super::health)'s documentation: one checker for every client, probes
//!   that travel in no time and do not load the servers). Both timers stop once the run has
//!   all its arrivals, as the board's posts do, so that they do not stretch the run: the
//!   requests still in flight then finish under the verdicts already reached.
//! - Slow start (`[health] slow_start`): a host that becomes healthy again — its `up` after
//!   `down` or `hang` without active checks, the checks' healthy verdict with them — starts
//!   slowly in every client's policy ([`Replication::lc_slow_start`], [`Policy::slow_start`]).

use super::super::event::{Event, Job, schedule};
use super::super::lifecycle::NONE;
use super::{Parts, Replication, Servers};
use crate::info::InfoModel;
use crate::lifecycle::checks::Reply;
use crate::lifecycle::health::{HostState, SlowStart};
use crate::policy::Policy;
use crate::time::SimTime;
use crate::workload::{Demands, Gaps};

impl<P: Policy, A: Gaps, S: Demands, I: InfoModel, V: Servers, F: Parts>
    Replication<'_, P, A, S, I, V, F>
{
    /// Client `client` learned at `now` the outcome of an attempt at `server`: `ok`, or a
    /// failure (an error, a refusal, a timeout). The health rules hear it here.
    pub(super) fn lc_observe(&mut self, client: u32, server: usize, ok: bool, now: SimTime) {
        let lc = self.parts.lifecycle().expect("a lifecycle");
        let Some(h) = lc.health.as_mut() else { return };
        h.observe(client, server, ok, now.get());
        self.lc_sync_hosts();
    }

    /// Gives each client whose allowed hosts changed its new set, and the changes of the
    /// clients' healthy hosts to the series.
    pub(super) fn lc_sync_hosts(&mut self) {
        let lc = self.parts.lifecycle().expect("a lifecycle");
        let Some(h) = lc.health.as_mut() else { return };
        while let Some((c, hosts)) = h.next_change(&mut lc.hosts) {
            self.policy.set_hosts(c, hosts);
        }
        self.parts.health_logged();
    }

    /// Before a pick: the breakers whose recovery is over by now are HALF_OPEN, and their
    /// clients' policies hear it. (Done when a pick needs it rather than by an event at the
    /// end of each recovery, so that a long recovery leaves nothing in the queue to stretch
    /// the run.)
    pub(super) fn lc_before_pick(&mut self) {
        let t = self.sim.now().get();
        let lc = self.parts.lifecycle().expect("a lifecycle");
        let Some(h) = lc.health.as_mut() else { return };
        if h.recover_due(t) {
            self.lc_sync_hosts();
        }
    }

    /// Whether client `client` may not send an attempt to `s` now: it excludes `s` and is not in
    /// panic, or it has `max_requests` attempts in flight. When it may, a breaker of `s`
    /// that is HALF_OPEN takes this attempt as its trial.
    pub(super) fn lc_refuses(&mut self, client: u32, s: usize) -> bool {
        let t = self.sim.now().get();
        let lc = self.parts.lifecycle().expect("a lifecycle");
        let max = u64::from(lc.cfg.client.max_requests);
        if lc.client(client).in_flight >= max {
            return true;
        }
        let Some(h) = lc.health.as_mut() else { return false };
        h.meet(client, t);
        let refused = !h.allowed(client, s);
        if !refused {
            h.sent(client, s, t);
        }
        self.lc_sync_hosts();
        refused
    }

    /// Outlier detection's review at `t`: every client's detector restores and ejects, their
    /// policies hear it; the next review is scheduled while arrivals go on.
    pub(super) fn lc_review(&mut self, t: f64) {
        self.rec.stats.events += 1;
        let lc = self.parts.lifecycle().expect("a lifecycle");
        let h = lc.health.as_mut().expect("outlier detection");
        h.review(t);
        let interval = lc.cfg.health.and_then(|h| h.outlier).expect("outlier").interval;
        self.lc_sync_hosts();
        if !self.arrivals_over {
            schedule(&mut self.sim, t + interval, Event::Review);
        }
    }

    /// Host `s`'s check event at `t`: a check is sent (an `up` host answers at once, a `down`
    /// host refuses at once, a `hang` host is silent until the check's timeout) or a check's
    /// result arrives; a verdict changes every client's view. The next check event is
    /// scheduled while arrivals go on.
    pub(super) fn lc_check(&mut self, s: usize, t: f64) {
        self.rec.stats.events += 1;
        let lc = self.parts.lifecycle().expect("a lifecycle");
        let reply = match lc.states[s] {
            HostState::Up => Reply::Answer(t),
            HostState::Down => Reply::Refused(t),
            HostState::Hang => Reply::Silent,
        };
        let h = lc.health.as_mut().expect("checks");
        let next = h.check(s, reply, t);
        let risen: Vec<usize> = h.risen().collect();
        let rule = lc.cfg.health.and_then(|h| h.slow_start);
        self.lc_sync_hosts();
        if let Some(rule) = rule {
            for host in risen {
                self.lc_slow_start(host, t, &rule);
            }
        }
        if !self.arrivals_over {
            schedule(&mut self.sim, next, Event::Check(s as u32));
        }
    }

    /// Host `s` became healthy again at `t`: it starts slowly in every client's policy
    /// (`[health] slow_start`; see [`Policy::slow_start`]).
    pub(super) fn lc_slow_start(&mut self, s: usize, t: f64, rule: &SlowStart) {
        for c in 0..self.policy.clients() {
            self.policy.slow_start(c, s, t, rule);
        }
    }

    /// Whether a client backlog holding `held` is at `max_pending`.
    pub(super) fn lc_backlog_full(&mut self, held: usize) -> bool {
        let lc = self.parts.lifecycle().expect("a lifecycle");
        held >= lc.cfg.client.max_pending as usize
    }

    /// The request `job` names would join a full backlog: it fails fast.
    pub(super) fn lc_overflow(&mut self, job: Job) -> bool {
        let r = job.index as u32;
        let lc = self.parts.lifecycle().expect("a lifecycle");
        lc.requests[r as usize].sending -= 1;
        self.lc_fast_failure(r)
    }

    /// Request `r`'s attempt, on its way and no longer counted as sending, fails fast without
    /// being sent (see the module's documentation): never retried; the request fails unless
    /// other attempts of it (hedges) are still awaited.
    pub(super) fn lc_fast_failure(&mut self, r: u32) -> bool {
        let warmup = self.len.warmup;
        let lc = self.parts.lifecycle().expect("a lifecycle");
        let req = lc.requests[r as usize];
        if req.attempts > 0 && lc.cfg.client.hedge == 0.0 {
            // A retry on its way was an active retry of its client.
            lc.client(req.client).active_retries -= 1;
        }
        if req.live == NONE {
            if req.measured(warmup) {
                lc.count(req.class, |s| s.fast_failures += 1);
            }
            self.lc_finish(r, false);
        } else {
            lc.release_request(r);
        }
        false
    }
}

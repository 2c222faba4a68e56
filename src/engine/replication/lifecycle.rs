//! The loop's handlers of the request lifecycle (SPEC §11), on the one loop of
//! [`Replication`]: the state they drive is [`LifecycleState`](super::super::lifecycle), kept
//! in the replication's parts and absent without a lifecycle (each hook in the loop is behind
//! `self.parts.lifecycle().is_some()`, a constant `false` for [`Off`](super::Off)).
//!
//! - A request arrives ([`Self::lc_open`]): it is opened, its deadline (if any) scheduled; the
//!   job that travels to the policy names the request.
//! - An attempt is sent ([`Self::lc_dispatch`]): its demand is the workload's draw for the first,
//!   for the others the first's again (`same_work`) or a draw from the lifecycle's own stream (one
//!   for retries, one for hedges); a server holding `queue_limit` or more rejects it at once;
//!   otherwise it joins the server, and its timeout and the request's next hedge (if any) are
//!   scheduled. The timeout is the request's class's own (`[[classes]] timeout`, SPEC §13) if it
//!   has one, else `[client] timeout`; a class with a law of its own draws its retries' and hedges'
//!   demands from it. The client of a request is the one that sent its first attempt; its retries
//!   and hedges go out from the same client, whose budget and throttle they use.
//! - A server finishes an attempt ([`Self::lc_departure`]): the server is free; the response
//!   is an error with the group's probability and reaches the client after the group's delay
//!   ([`Self::lc_respond`]).
//! - The client stops waiting for an attempt when its response comes, when it times out, when
//!   the request's deadline passes, or when another hedge answered first: the client's
//!   in-flight count at the server drops then (the policy hears it as a departure). Without
//!   `cancel` the server goes on serving it and its busy time is `wasted`; with `cancel` an
//!   attempt left without its answer ([`Self::lc_abandon`]) is taken from its server's queue
//!   or aborted in service, and the work it received is `wasted`.
//! - A failed attempt is retried when the failure is in `retry_on`, gRPC's throttle allows it
//!   (consulted first, as grpc-go's `shouldRetry` does, only for retryable failures), retries
//!   remain, and Envoy's budget allows it; after its backoff ([`Self::lc_resend`]) the retry is
//!   picked by the policy like any request.
//! - Hedging ([`Self::lc_hedge`]) follows gRFC A6's hedging policy: another attempt every
//!   `hedge` until one answers, at most `hedge_max` in all; a failure in `retry_on` (A6's
//!   non-fatal status codes) sends the next hedge at once, any other failure fails the request.
//! - Host states (SPEC §12, set by changes, [`Self::lc_change`]): an attempt sent to a `down`
//!   host is an `error` at once, without service (its policy hears it leave at once, as a
//!   fast refusal); a `hang` host takes attempts and never answers them (they never join its
//!   server, so they are not in its queue length as the server and the queue limit see it; the
//!   information model and the policy count them in flight until the client stops waiting, at
//!   its timeout or deadline). A host that goes `down` or hangs loses what it holds, queued or
//!   in service ([`Self::lc_lose`]): its clients go on waiting for those attempts until their
//!   timeout or deadline (without either, for ever), and the work they had received is
//!   `wasted`; a response already on its way back (the group's `delay`) still arrives. `up`
//!   finds the host empty.

use super::super::event::{Event, Job, schedule};
use super::super::lifecycle::{Attempt, NONE};
use super::{Parts, Replication, Servers};
use crate::admission::{Decision, Scope};
use crate::info::InfoModel;
use crate::lifecycle::Failure;
use crate::lifecycle::health::HostState;
use crate::policy::Policy;
use crate::time::SimTime;
use crate::workload::{Demands, Gaps};

impl<P: Policy, A: Gaps, S: Demands, I: InfoModel, V: Servers, F: Parts>
    Replication<'_, P, A, S, I, V, F>
{
    /// A request arrived at `t` with `job`: opened, `job` now names it.
    #[inline(never)]
    pub(super) fn lc_open(&mut self, job: &mut Job, t: f64) {
        if job.index >= self.len.warmup {
            self.parts.request_arrived(t, job.class);
        }
        let lc = self.parts.lifecycle().expect("a lifecycle");
        let r = lc.open(t, job.index, job.work, job.class);
        let deadline = lc.cfg.client.deadline;
        job.index = u64::from(r);
        if deadline > 0.0 {
            schedule(&mut self.sim, t + deadline, Event::Deadline(r));
        }
    }

    /// The admission stage refused an attempt of request `r`: a refusal (`reject`) its client
    /// hears at once, retried as one from a server would be when `retry_on` has `reject`. A
    /// first attempt refused and not retried leaves its request without a client (none was
    /// needed), so a fleet draws no client for it; one retried goes out from `client` when the
    /// fleet assigned it before the stage (a composite's per-client layer), else from a client
    /// drawn now. True when the queue guard stops the replication.
    #[inline(never)]
    pub(super) fn lc_refused(&mut self, r: u32, client: Option<u32>) -> bool {
        let warmup = self.len.warmup;
        let lc = self.parts.lifecycle().expect("a lifecycle");
        lc.requests[r as usize].sending -= 1;
        let req = lc.requests[r as usize];
        if req.measured(warmup) {
            lc.count(req.class, |s| {
                s.attempts += 1;
                s.errors += 1;
                s.rejects += 1;
            });
        }
        let c = &lc.cfg.client;
        let (hedge, retried) = (c.hedge, c.retry_on.retries(Failure::Reject));
        let again = retried && (c.retries > 0 || hedge > 0.0);
        if req.attempts == 0 && !again {
            self.lc_finish(r, false);
            return false;
        }
        if req.attempts == 0 {
            let client = client.unwrap_or_else(|| if P::TAGGED { self.policy.assign() } else { 0 });
            let lc = self.parts.lifecycle().expect("a lifecycle");
            lc.requests[r as usize].client = client;
            lc.client(client).active_requests += 1;
        } else if hedge == 0.0 {
            // A retry on its way was an active retry of its client.
            lc.client(req.client).active_retries -= 1;
        }
        let lc = self.parts.lifecycle().expect("a lifecycle");
        lc.requests[r as usize].attempts += 1;
        self.lc_failed(r, Failure::Reject)
    }

    /// The client a request's attempt goes out from: its request's, once it has sent one.
    pub(super) fn lc_client(&mut self, job: &Job) -> Option<u32> {
        let lc = self.parts.lifecycle().expect("a lifecycle");
        let req = &lc.requests[job.index as usize];
        (req.attempts > 0).then_some(req.client)
    }

    /// Sends an attempt of the request `job` names to server `s`. True when the queue guard
    /// stops the replication.
    #[inline(never)]
    pub(super) fn lc_dispatch(&mut self, s: usize, job: Job) -> bool {
        let now = self.sim.now();
        let t = now.get();
        let warmup = self.len.warmup;
        let tag = if P::TAGGED { self.policy.tag() } else { 0 };
        let r = job.index as u32;
        let lc = self.parts.lifecycle().expect("a lifecycle");
        lc.requests[r as usize].sending -= 1;
        let req = lc.requests[r as usize];
        if req.done {
            // Its deadline passed on the way (in the admission stage or a policy's backlog):
            // the client drops it, and the policy hears its pick leave at once. A retry on
            // its way was an active retry of its client.
            if req.attempts > 0 && lc.cfg.client.hedge == 0.0 {
                lc.client(req.client).active_retries -= 1;
            }
            lc.release_request(r);
            self.policy.on_departure(s, 0.0, now, tag);
            return false;
        }
        let client = if req.attempts == 0 { tag } else { req.client };
        if self.lc_refuses(client, s) {
            // The policy hears its pick leave at once; the request fails fast, unsent.
            self.policy.on_departure(s, 0.0, now, tag);
            return self.lc_fast_failure(r);
        }
        let lc = self.parts.lifecycle().expect("a lifecycle");
        if req.attempts == 0 {
            lc.requests[r as usize].client = tag;
            lc.client(tag).active_requests += 1;
        }
        let timeout = lc.timeout(req.class);
        let c = &lc.cfg.client;
        let (hedge, hedge_max) = (c.hedge, c.hedge_max);
        // A retry or a hedge of a class with a law of its own draws from that law.
        let law = lc.class_laws.get(req.class as usize).and_then(Option::as_ref);
        let work = if req.attempts == 0 || c.same_work {
            req.work
        } else {
            let rng = if hedge > 0.0 { &mut lc.hedges } else { &mut lc.demands };
            match law {
                Some(l) => l.demand(rng),
                None => self.service.demand(rng),
            }
        };
        lc.requests[r as usize].attempts += 1;
        let measured = req.measured(warmup);
        if measured {
            lc.count(req.class, |s| s.attempts += 1);
        }
        let retry = req.attempts > 0 && hedge == 0.0;
        let state = lc.states[s];
        let full = lc.cfg.queue_limit.is_some_and(|l| self.servers.len(s) >= l);
        if full || !self.parts.accepts(self.servers.len(s), t, measured) {
            // A server holding `queue_limit` requests or more (or, under adaptive throttling,
            // its backend limit) refuses the attempt.
            return self.lc_fail_fast(s, r, tag, measured, retry, Failure::Reject);
        }
        if state == HostState::Down {
            // Past the admission stage (counted as admitted; adaptive throttling counts only
            // its backend limit's refusals, not a failed host's errors), the host refuses.
            return self.lc_fail_fast(s, r, tag, measured, retry, Failure::Error);
        }
        let hung = state == HostState::Hang;
        let lc = self.parts.lifecycle().expect("a lifecycle");
        let a = lc.attempt(Attempt {
            request: r,
            server: s as u32,
            sent: t,
            work,
            tag,
            awaited: true,
            at_server: !hung,
            timer: timeout > 0.0,
            error: false,
            measured,
            retry,
            served: false,
            next: NONE,
            class: req.class,
        });
        lc.link(r, a);
        lc.client(client).in_flight += 1;
        if hedge > 0.0 && req.attempts + 1 < hedge_max {
            let q = &mut lc.requests[r as usize];
            q.hedge_at = t + hedge;
            q.hedges_pending += 1;
            schedule(&mut self.sim, t + hedge, Event::Hedge(r));
        }
        if !hung {
            let job = Job { arrival: t, work, index: u64::from(a), tag, class: req.class };
            self.servers.arrive(s, job, t, &mut self.sim);
        }
        if timeout > 0.0 {
            schedule(&mut self.sim, t + timeout, Event::Timeout(a));
        }
        let qlen = self.servers.len(s);
        self.info.on_dispatch(s);
        self.rec.joined(req.index, s, qlen, t);
        self.parts.joined(s, qlen, t, measured, req.class);
        if P::FEEDBACK {
            self.feedback_on_dispatch(s, qlen, tag, now);
        }
        self.rec.guard(qlen, self.queue_guard, t)
    }

    /// Server `s` finished the attempt `job` names: the response is drawn (an error or not)
    /// and sent back, at once or after the group's delay.
    #[inline(never)]
    pub(super) fn lc_departure(&mut self, s: usize, job: Job, now: SimTime) {
        let t = now.get();
        self.rec.stats.events += 1;
        let a = job.index as u32;
        let left = self.servers.len(s);
        let lc = self.parts.lifecycle().expect("a lifecycle");
        let x = lc.attempts[a as usize];
        let p = lc.cfg.error[s];
        let error = p > 0.0 && {
            use rand::RngExt;
            lc.errors.random::<f64>() < p
        };
        let delay = lc.cfg.delay[s];
        let busy = job.work / lc.rates[s];
        let at = &mut lc.attempts[a as usize];
        at.work = busy;
        at.error = error;
        at.served = true;
        if x.measured {
            lc.count(x.class, |s| s.busy += busy);
        }
        self.parts.left(s, left, t, &job, t - job.arrival, x.measured);
        if P::FEEDBACK
            && let Some(m) = &mut self.fb.monitor
        {
            let response = m.departed(s, job.work, t - job.arrival, left, t);
            if x.awaited && delay == 0.0 {
                self.policy.on_response(s, &response, now, x.tag);
            }
        }
        if delay > 0.0 {
            schedule(&mut self.sim, t + delay, Event::Respond(a));
        } else {
            self.lc_respond(a, now);
        }
    }

    /// Attempt `a`'s response reaches its client (or nobody, if the client stopped waiting).
    pub(super) fn lc_respond(&mut self, a: u32, now: SimTime) -> bool {
        let lc = self.parts.lifecycle().expect("a lifecycle");
        let x = lc.attempts[a as usize];
        lc.attempts[a as usize].at_server = false;
        if !x.awaited {
            if x.measured {
                lc.count(x.class, |s| s.wasted += x.work);
            }
            lc.release_attempt(a);
            return false;
        }
        self.lc_stop_waiting(a, now);
        let r = x.request;
        let client = self.parts.lifecycle().expect("a lifecycle").requests[r as usize].client;
        self.lc_observe(client, x.server as usize, !x.error, now);
        let stop = if x.error {
            let lc = self.parts.lifecycle().expect("a lifecycle");
            if x.measured {
                lc.count(x.class, |s| s.errors += 1);
            }
            self.lc_failed(r, Failure::Error)
        } else {
            self.lc_succeeded(r, now);
            false
        };
        self.parts.lifecycle().expect("a lifecycle").release_attempt(a);
        stop
    }

    /// Attempt `a`'s per-attempt timeout: if the client still waits, it stops, and the attempt
    /// failed.
    pub(super) fn lc_timeout(&mut self, a: u32, now: SimTime) -> bool {
        self.rec.stats.events += 1;
        let lc = self.parts.lifecycle().expect("a lifecycle");
        lc.attempts[a as usize].timer = false;
        let x = lc.attempts[a as usize];
        let mut stop = false;
        if x.awaited {
            if x.measured {
                lc.count(x.class, |s| s.timeouts += 1);
            }
            self.lc_abandon(a, now);
            let lc = self.parts.lifecycle().expect("a lifecycle");
            let client = lc.requests[x.request as usize].client;
            self.lc_observe(client, x.server as usize, false, now);
            stop = self.lc_failed(x.request, Failure::Timeout);
        }
        self.parts.lifecycle().expect("a lifecycle").release_attempt(a);
        stop
    }

    /// Request `r`'s deadline: if it is not finished, the client stops waiting and it failed.
    pub(super) fn lc_deadline(&mut self, r: u32, now: SimTime) -> bool {
        self.rec.stats.events += 1;
        let warmup = self.len.warmup;
        let lc = self.parts.lifecycle().expect("a lifecycle");
        lc.requests[r as usize].deadline_pending = false;
        let req = lc.requests[r as usize];
        if !req.done {
            if req.measured(warmup) {
                lc.count(req.class, |s| s.timeouts += 1);
            }
            self.lc_abandon_all(r, now);
            self.lc_finish(r, false);
        } else {
            lc.release_request(r);
        }
        false
    }

    /// Request `r`'s backoff is over: its retry is sent (picked by the policy like any
    /// request), unless the request finished meanwhile.
    pub(super) fn lc_resend(&mut self, r: u32, now: SimTime) -> bool {
        self.rec.stats.events += 1;
        let _ = now;
        let lc = self.parts.lifecycle().expect("a lifecycle");
        lc.requests[r as usize].backoff_pending = false;
        if lc.requests[r as usize].done {
            lc.release_request(r);
            return false;
        }
        self.lc_send_again(r)
    }

    /// Request `r`'s hedging delay passed without an answer: its next hedge is sent, if this
    /// event is not stale (the request finished, or a failure sent the hedge early) and gRPC's
    /// throttle allows it (gRFC A6, "Throttling Retry Attempts and Hedged RPCs": a hedge is
    /// sent only while the tokens are above half).
    pub(super) fn lc_hedge(&mut self, r: u32, now: SimTime) -> bool {
        self.rec.stats.events += 1;
        let lc = self.parts.lifecycle().expect("a lifecycle");
        let req = &mut lc.requests[r as usize];
        req.hedges_pending -= 1;
        if req.done || req.hedge_at != now.get() {
            lc.release_request(r);
            return false;
        }
        req.hedge_at = f64::NAN;
        let (client, live) = (req.client, req.live);
        if lc.client(client).throttle.as_ref().is_some_and(|th| !th.allows()) {
            if live == NONE {
                self.lc_finish(r, false);
            }
            return false;
        }
        self.lc_send_again(r)
    }

    /// The lifecycle's change `i`: its servers take its `delay`, `error` and state; a server
    /// that goes from `up` to `down` or `hang` loses what it holds.
    pub(super) fn lc_change(&mut self, i: u32) {
        self.rec.stats.events += 1;
        let t = self.sim.now().get();
        let lc = self.parts.lifecycle().expect("a lifecycle");
        let c = lc.cfg.changes[i as usize].clone();
        // Slow start from an `up` without active checks (with them, from their verdict).
        let ramp = lc.cfg.health.filter(|h| h.checks.is_none()).and_then(|h| h.slow_start);
        for s in c.servers {
            let lc = self.parts.lifecycle().expect("a lifecycle");
            if let Some(d) = c.delay {
                lc.cfg.delay[s] = d;
            }
            if let Some(e) = c.error {
                lc.cfg.error[s] = e;
            }
            if let Some(state) = c.state {
                let was = std::mem::replace(&mut lc.states[s], state);
                if was == HostState::Up && state != HostState::Up {
                    self.lc_lose(s, t);
                }
                if let Some(rule) = ramp.filter(|_| was != HostState::Up && state == HostState::Up)
                {
                    self.lc_slow_start(s, t, &rule);
                }
            }
        }
    }

    // ===== helpers =====

    /// An attempt of request `r` to server `s` fails at once, without service: `failure` is
    /// `reject` (a queue limit or the backend limit) or `error` (a `down` host). The sender's
    /// policy hears of it as a request that left at once (what a client sees of a fast
    /// refusal). True when the queue guard stops the replication.
    fn lc_fail_fast(
        &mut self,
        s: usize,
        r: u32,
        tag: u32,
        measured: bool,
        retry: bool,
        failure: Failure,
    ) -> bool {
        let now = self.sim.now();
        self.policy.on_departure(s, 0.0, now, tag);
        let lc = self.parts.lifecycle().expect("a lifecycle");
        if measured {
            let reject = u64::from(failure == Failure::Reject);
            lc.count(lc.requests[r as usize].class, |s| {
                s.errors += 1;
                s.rejects += reject;
            });
        }
        let client = lc.requests[r as usize].client;
        if retry {
            lc.client(client).active_retries -= 1;
        }
        self.lc_observe(client, s, false, now);
        self.lc_failed(r, failure)
    }

    /// Server `s` goes down or hangs at `t`: every attempt it holds, queued or in service,
    /// leaves it unanswered (the work it received is busy and `wasted`); a client that waits
    /// for one goes on waiting until its timeout or deadline. Responses already served and on
    /// their way back are not held.
    fn lc_lose(&mut self, s: usize, t: f64) {
        let mut a = 0;
        loop {
            let lc = self.parts.lifecycle().expect("a lifecycle");
            let Some(&x) = lc.attempts.get(a) else { return };
            let id = a as u32;
            a += 1;
            if !x.at_server || x.served || x.server as usize != s {
                continue;
            }
            self.lc_take_back(id, &x, t);
            self.parts.lifecycle().expect("a lifecycle").release_attempt(id);
        }
    }

    /// Attempt `a` (`x`), queued or in service at its server, leaves it unanswered at `t`: the
    /// work it received counts as busy and `wasted`, and the server's queue length drops.
    fn lc_take_back(&mut self, a: u32, x: &Attempt, t: f64) {
        let s = x.server as usize;
        let (job, received) = self.servers.cancel(s, u64::from(a), t, &mut self.sim);
        let lc = self.parts.lifecycle().expect("a lifecycle");
        lc.attempts[a as usize].at_server = false;
        if x.measured {
            let busy = received / lc.rates[s];
            lc.count(x.class, |k| {
                k.busy += busy;
                k.wasted += busy;
            });
        }
        let left = self.servers.len(s);
        self.parts.left(s, left, t, &job, t - job.arrival, false);
        if P::FEEDBACK
            && let Some(m) = &mut self.fb.monitor
        {
            m.changed(s, left, t);
        }
    }

    /// The client stops waiting for attempt `a`: it leaves the request's awaited attempts, and
    /// its in-flight count at the server drops (the policy and the information model hear a
    /// departure), whatever the server does with it.
    fn lc_stop_waiting(&mut self, a: u32, now: SimTime) {
        let lc = self.parts.lifecycle().expect("a lifecycle");
        let x = lc.attempts[a as usize];
        lc.unlink(a);
        lc.attempts[a as usize].awaited = false;
        let c = lc.requests[x.request as usize].client;
        if x.retry {
            lc.client(c).active_retries -= 1;
        }
        lc.client(c).in_flight -= 1;
        let s = x.server as usize;
        self.info.on_departure(s);
        self.policy.on_departure(s, now.get() - x.sent, now, x.tag);
    }

    /// The client gives up attempt `a` without its answer (a timeout, the deadline, another
    /// hedge's answer): with `cancel`, an attempt still queued or in service leaves its server
    /// now, the work it received counted as busy and wasted; then the client stops waiting.
    fn lc_abandon(&mut self, a: u32, now: SimTime) {
        let t = now.get();
        let lc = self.parts.lifecycle().expect("a lifecycle");
        let x = lc.attempts[a as usize];
        if lc.cfg.client.cancel && x.at_server && !x.served {
            self.lc_take_back(a, &x, t);
        }
        self.lc_stop_waiting(a, now);
    }

    /// The client gives up every attempt of request `r` it still waits for.
    fn lc_abandon_all(&mut self, r: u32, now: SimTime) {
        loop {
            let lc = self.parts.lifecycle().expect("a lifecycle");
            let a = lc.requests[r as usize].live;
            if a == NONE {
                return;
            }
            self.lc_abandon(a, now);
            self.parts.lifecycle().expect("a lifecycle").release_attempt(a);
        }
    }

    /// Sends another attempt of request `r` now (a retry or a hedge), from its client. True
    /// when a guard stops the replication.
    fn lc_send_again(&mut self, r: u32) -> bool {
        let t = self.sim.now().get();
        let lc = self.parts.lifecycle().expect("a lifecycle");
        let req = &mut lc.requests[r as usize];
        req.sending += 1;
        let job = Job { arrival: t, work: req.work, index: u64::from(r), tag: 0, class: req.class };
        let (client, measured, key) = (req.client, req.measured(self.len.warmup), req.key);
        // Every attempt passes the admission stage in front of the farm, as the first did,
        // under the request's key and client when the stage counts per key or per client.
        let (by_key, by_client) = self.parts.scopes();
        let scope = Scope { key: by_key.then_some(key), client: by_client.then_some(client) };
        match self.parts.offer(t, measured, scope) {
            Decision::Admit => self.send_scoped(job, Scope { client: Some(client), ..scope }),
            Decision::Delay(at) => {
                self.parts.delay(job, scope);
                schedule(&mut self.sim, at, Event::Release);
                false
            }
            Decision::Reject => self.lc_refused(r, None),
        }
    }

    /// Request `r`'s attempt failed with `failure`: a retry is scheduled, or sent at once
    /// without backoff, if the rules allow it; otherwise the request is over, failed. With
    /// hedging, see [`Self::lc_hedge_failed`]. True when the queue guard stops the replication.
    fn lc_failed(&mut self, r: u32, failure: Failure) -> bool {
        let t = self.sim.now().get();
        let lc = self.parts.lifecycle().expect("a lifecycle");
        let req = lc.requests[r as usize];
        if req.done {
            return false;
        }
        let c = &lc.cfg.client;
        if c.hedge > 0.0 {
            return self.lc_hedge_failed(r, failure);
        }
        let (retry_on, retries, backoff, budget) = (c.retry_on, c.retries, c.backoff, lc.budget);
        // grpc-go's order: a retryable failure costs a throttle token first, then the number
        // of attempts is checked; Envoy's budget is checked last. Each client has its own.
        let retryable = retry_on.retries(failure);
        let cl = lc.client(req.client);
        let throttled = retryable && cl.throttle.as_mut().is_some_and(|th| !th.failed());
        let left = req.attempts <= retries;
        let within = budget.is_none_or(|b| b.allows(cl.active_retries, cl.active_requests));
        if !(retryable && !throttled && left && within) {
            self.lc_finish(r, false);
            return false;
        }
        cl.active_retries += 1;
        let wait = if backoff.draws() {
            use rand::RngExt;
            backoff.wait(req.attempts, lc.backoff.random::<f64>())
        } else {
            0.0
        };
        if wait > 0.0 {
            lc.requests[r as usize].backoff_pending = true;
            schedule(&mut self.sim, t + wait, Event::Resend(r));
            false
        } else {
            self.lc_send_again(r)
        }
    }

    /// A hedged request's attempt failed with `failure` (gRFC A6, "Hedging Policy" and
    /// "Summary of Retry and Hedging Logic", cases 2 and 3): a non-fatal failure (one in
    /// `retry_on`) costs a throttle token and sends the next hedge at once, if any remain and
    /// the throttle allows it (later ones follow `hedge` after it); a fatal one gives up the
    /// other attempts and fails the request. "If all instances of a hedged RPC fail, there are
    /// no additional retry attempts": the request fails once no attempt is awaited and no
    /// hedge may follow.
    fn lc_hedge_failed(&mut self, r: u32, failure: Failure) -> bool {
        let now = self.sim.now();
        let lc = self.parts.lifecycle().expect("a lifecycle");
        let req = lc.requests[r as usize];
        let c = &lc.cfg.client;
        let (nonfatal, hedge_max) = (c.retry_on.retries(failure), c.hedge_max);
        if !nonfatal {
            self.lc_abandon_all(r, now);
            self.lc_finish(r, false);
            return false;
        }
        let allowed = lc.client(req.client).throttle.as_mut().is_none_or(|th| th.failed());
        if allowed && req.attempts < hedge_max {
            return self.lc_send_again(r);
        }
        if req.live == NONE {
            self.lc_finish(r, false);
        }
        false
    }

    /// Request `r` is answered without error within its deadline: the client gives up its
    /// other attempts (losing hedges).
    fn lc_succeeded(&mut self, r: u32, now: SimTime) {
        let t = now.get();
        self.lc_abandon_all(r, now);
        let in_window = self.arrived > self.len.warmup && !self.arrivals_over;
        let lc = self.parts.lifecycle().expect("a lifecycle");
        let req = lc.requests[r as usize];
        if let Some(th) = &mut lc.client(req.client).throttle {
            th.succeeded();
        }
        if in_window {
            lc.count(req.class, |s| s.good_in_window += 1);
        }
        if req.measured(self.len.warmup) {
            lc.count(req.class, |s| s.successes += 1);
        }
        let (index, sojourn) = (req.index, t - req.arrival);
        self.rec.departed(index, sojourn, 1, t);
        if let Some(c) = self.parts.classes() {
            c.left(req.class, index, sojourn);
        }
        self.lc_finish(r, true);
    }

    /// Request `r` is over (answered, failed for good, past its deadline, or refused by the
    /// admission stage).
    pub(super) fn lc_finish(&mut self, r: u32, success: bool) {
        let warmup = self.len.warmup;
        let lc = self.parts.lifecycle().expect("a lifecycle");
        let req = &mut lc.requests[r as usize];
        req.done = true;
        let req = *req;
        if req.attempts > 0 {
            lc.client(req.client).active_requests -= 1;
        }
        if req.backoff_pending {
            lc.client(req.client).active_retries -= 1;
        }
        let measured = req.measured(warmup);
        if measured {
            lc.count(req.class, |s| s.requests += 1);
        }
        lc.release_request(r);
        if measured {
            self.parts.request_ended(self.sim.now().get(), success, req.class);
        }
    }
}

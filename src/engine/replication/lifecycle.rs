//! The loop's handlers of the request lifecycle (SPEC §11), on the one loop of
//! [`Replication`]: the state they drive is [`LifecycleState`](super::super::lifecycle), kept
//! in the replication's parts and absent without a lifecycle (each hook in the loop is behind
//! `self.parts.lifecycle().is_some()`, a constant `false` for [`Off`](super::Off)).
//!
//! - A request arrives ([`Self::lc_open`]): it is opened, its deadline (if any) scheduled; the
//!   job that travels to the policy names the request.
//! - An attempt is sent ([`Self::lc_dispatch`]): its demand is the workload's draw for the
//!   first, a draw from the lifecycle's own stream for the others; a server holding
//!   `queue_limit` or more rejects it at once; otherwise it joins the server and its timeout
//!   (if any) is scheduled.
//! - A server finishes an attempt ([`Self::lc_departure`]): the server is free; the response
//!   is an error with the group's probability and reaches the client after the group's delay
//!   ([`Self::lc_respond`]).
//! - The client stops waiting for an attempt when its response comes, when it times out, or
//!   when the request's deadline passes: the client's in-flight count at the server drops then
//!   (the policy hears it as a departure), whether or not the server goes on serving it (a
//!   timed-out attempt is served anyway, and its busy time is `wasted`).
//! - A failed attempt is retried when the failure is in `retry_on`, gRPC's throttle allows it
//!   (consulted first, as grpc-go's `shouldRetry` does, only for retryable failures), retries
//!   remain, and Envoy's budget allows it; after its backoff ([`Self::lc_resend`]) the retry is
//!   picked by the policy like any request.

use super::super::event::{Event, Job, schedule};
use super::super::lifecycle::{Attempt, NONE};
use super::{Parts, Replication, Servers};
use crate::info::InfoModel;
use crate::lifecycle::Failure;
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
            self.parts.request_arrived(t);
        }
        let lc = self.parts.lifecycle().expect("a lifecycle");
        let r = lc.open(t, job.index, job.work);
        let deadline = lc.cfg.client.deadline;
        job.index = u64::from(r);
        if deadline > 0.0 {
            schedule(&mut self.sim, t + deadline, Event::Deadline(r));
        }
    }

    /// The admission stage rejected request `r`: it is over, unanswered.
    #[inline(never)]
    pub(super) fn lc_refused(&mut self, r: u32, t: f64) {
        let _ = t;
        self.lc_finish(r, false);
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
        let req = lc.requests[r as usize];
        let measured = req.measured(warmup);
        let work = if req.attempts == 0 { req.work } else { self.service.demand(&mut lc.demands) };
        lc.requests[r as usize].attempts += 1;
        if measured {
            lc.stats.attempts += 1;
        }
        let retry = req.attempts > 0;
        let full = lc.cfg.queue_limit.is_some_and(|l| self.servers.len(s) >= l);
        if full || !self.parts.accepts(self.servers.len(s), t, measured) {
            // A server holding `queue_limit` requests or more (or, under adaptive throttling,
            // its backend limit) refuses the attempt.
            // An immediate error: the sender's policy hears of it as a request that left at
            // once (what a client sees of a fast refusal).
            self.policy.on_departure(s, 0.0, now, tag);
            let lc = self.parts.lifecycle().expect("a lifecycle");
            if measured {
                lc.stats.errors += 1;
                lc.stats.rejects += 1;
            }
            if retry {
                lc.active_retries -= 1;
            }
            return self.lc_failed(r, Failure::Reject);
        }
        let lc = self.parts.lifecycle().expect("a lifecycle");
        let timeout = lc.cfg.client.timeout;
        let a = lc.attempt(Attempt {
            request: r,
            server: s as u32,
            sent: t,
            work,
            tag,
            awaited: true,
            at_server: true,
            timer: timeout > 0.0,
            error: false,
            measured,
            retry,
        });
        lc.requests[r as usize].current = a;
        self.servers.arrive(
            s,
            Job { arrival: t, work, index: u64::from(a), tag },
            t,
            &mut self.sim,
        );
        if timeout > 0.0 {
            schedule(&mut self.sim, t + timeout, Event::Timeout(a));
        }
        let qlen = self.servers.len(s);
        self.info.on_dispatch(s);
        self.rec.joined(req.index, s, qlen, t);
        self.parts.joined(s, qlen, t, measured);
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
        if x.measured {
            lc.stats.busy += busy;
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
                lc.stats.wasted += x.work;
            }
            lc.release_attempt(a);
            return false;
        }
        self.lc_stop_waiting(a, now);
        let r = x.request;
        let stop = if x.error {
            let lc = self.parts.lifecycle().expect("a lifecycle");
            if x.measured {
                lc.stats.errors += 1;
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
                lc.stats.timeouts += 1;
            }
            self.lc_stop_waiting(a, now);
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
                lc.stats.timeouts += 1;
            }
            if req.current != NONE {
                let a = req.current;
                self.lc_stop_waiting(a, now);
                self.parts.lifecycle().expect("a lifecycle").release_attempt(a);
            }
            self.lc_finish(r, false);
        } else {
            self.parts.lifecycle().expect("a lifecycle").release_request(r);
        }
        false
    }

    /// Request `r`'s backoff is over: its retry is sent (picked by the policy like any
    /// request), unless the request finished meanwhile.
    pub(super) fn lc_resend(&mut self, r: u32, now: SimTime) -> bool {
        self.rec.stats.events += 1;
        let lc = self.parts.lifecycle().expect("a lifecycle");
        lc.requests[r as usize].backoff_pending = false;
        let req = lc.requests[r as usize];
        if req.done {
            lc.release_request(r);
            return false;
        }
        self.send(Job { arrival: now.get(), work: req.work, index: u64::from(r), tag: 0 })
    }

    /// The lifecycle's change `i`: its servers take its `delay` and `error`.
    pub(super) fn lc_change(&mut self, i: u32) {
        self.rec.stats.events += 1;
        let lc = self.parts.lifecycle().expect("a lifecycle");
        let c = lc.cfg.changes[i as usize].clone();
        for s in c.servers {
            if let Some(d) = c.delay {
                lc.cfg.delay[s] = d;
            }
            if let Some(e) = c.error {
                lc.cfg.error[s] = e;
            }
        }
    }

    // ===== helpers =====

    /// The client stops waiting for attempt `a`: its in-flight count at the server drops (the
    /// policy and the information model hear a departure), whatever the server does with it.
    fn lc_stop_waiting(&mut self, a: u32, now: SimTime) {
        let lc = self.parts.lifecycle().expect("a lifecycle");
        let x = lc.attempts[a as usize];
        lc.attempts[a as usize].awaited = false;
        lc.requests[x.request as usize].current = NONE;
        if x.retry {
            lc.active_retries -= 1;
        }
        let s = x.server as usize;
        self.info.on_departure(s);
        self.policy.on_departure(s, now.get() - x.sent, now, x.tag);
    }

    /// Request `r`'s attempt failed with `failure`: a retry is scheduled, or sent at once
    /// without backoff, if the rules allow it; otherwise the request is over, failed. True when
    /// the queue guard stops the replication.
    fn lc_failed(&mut self, r: u32, failure: Failure) -> bool {
        let t = self.sim.now().get();
        let lc = self.parts.lifecycle().expect("a lifecycle");
        let req = lc.requests[r as usize];
        if req.done {
            return false;
        }
        let c = &lc.cfg.client;
        // grpc-go's order: a retryable failure costs a throttle token first, then the number
        // of attempts is checked; Envoy's budget is checked last.
        let retryable = c.retry_on.retries(failure);
        let throttled = retryable && lc.throttle.as_mut().is_some_and(|th| !th.failed());
        let left = req.attempts <= c.retries;
        let budget = lc.budget.is_none_or(|b| b.allows(lc.active_retries, lc.active_requests));
        if !(retryable && !throttled && left && budget) {
            self.lc_finish(r, false);
            return false;
        }
        lc.active_retries += 1;
        let backoff = c.backoff;
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
            self.send(Job { arrival: t, work: req.work, index: u64::from(r), tag: 0 })
        }
    }

    /// Request `r` is answered without error within its deadline.
    fn lc_succeeded(&mut self, r: u32, now: SimTime) {
        let t = now.get();
        let in_window = self.arrived > self.len.warmup && !self.arrivals_over;
        let lc = self.parts.lifecycle().expect("a lifecycle");
        let req = lc.requests[r as usize];
        if let Some(th) = &mut lc.throttle {
            th.succeeded();
        }
        if in_window {
            lc.stats.good_in_window += 1;
        }
        if req.measured(self.len.warmup) {
            lc.stats.successes += 1;
        }
        let (index, sojourn) = (req.index, t - req.arrival);
        self.rec.departed(index, sojourn, 1, t);
        self.lc_finish(r, true);
    }

    /// Request `r` is over (answered, failed for good, past its deadline, or refused by the
    /// admission stage).
    fn lc_finish(&mut self, r: u32, success: bool) {
        let warmup = self.len.warmup;
        let lc = self.parts.lifecycle().expect("a lifecycle");
        let req = &mut lc.requests[r as usize];
        req.done = true;
        let (measured, backoff) = (req.measured(warmup), req.backoff_pending);
        lc.active_requests -= 1;
        if backoff {
            lc.active_retries -= 1;
        }
        if measured {
            lc.stats.requests += 1;
        }
        lc.release_request(r);
        if measured {
            self.parts.request_ended(self.sim.now().get(), success);
        }
    }
}

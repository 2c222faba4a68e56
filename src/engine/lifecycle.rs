//! The request lifecycle's state during a replication (SPEC §11): the requests a client is working
//! on, their attempts, the random streams of errors, retry and hedge demands and backoff, each
//! client's retry budget and throttle, and what is counted. The loop's handlers that drive it are
//! in `replication/lifecycle.rs`; this part lives in [`On`](super::parts::On) and is absent
//! (`None`, or the [`Off`](super::parts::Off) parts) when the farm has no lifecycle, so the
//! article's loop does not pay for it.
//!
//! A request is what arrives; an attempt is one sending of it to a server. Between the loop's
//! handlers the job a server holds names its attempt (`Job::index`), and a job on its way to a
//! server (admission stage, a policy's backlog, a retry, a hedge) names its request.
//!
//! Events that name a request or an attempt are never searched for in the queue: each is
//! counted or flagged on what it names, which is not reused while one is pending, and a
//! handler that finds its request finished or its attempt no longer awaited does nothing.

use super::health::HealthView;
use crate::lifecycle::budget::{RetryBudget, Throttle};
use crate::lifecycle::health::HostState;
use crate::lifecycle::{Lifecycle, LifecycleStats};
use crate::model::Classes;
use crate::rng::{SimRng, StreamKey};
use crate::workload::Service;

/// No attempt.
pub(super) const NONE: u32 = u32::MAX;

/// A request a client is working on.
#[derive(Debug, Clone, Copy)]
pub(super) struct Request {
    /// When it arrived.
    pub(super) arrival: f64,
    /// Its arrival index (0 = the run's first, warm-up included).
    pub(super) index: u64,
    /// The first attempt's demand: the workload stream's draw.
    pub(super) work: f64,
    /// Attempts sent so far.
    pub(super) attempts: u32,
    /// The client that sends it (the policy's tag of its first attempt; 0 with one client).
    pub(super) client: u32,
    /// Its traffic class (0 without classes).
    pub(super) class: u32,
    /// Its key, with a composite limiter's per-key layer (its retries are counted under it and
    /// hashed by it); 0 otherwise.
    pub(super) key: u64,
    /// The attempts the client waits for, latest first, linked by [`Attempt::next`]; [`NONE`]
    /// when there is none (more than one only with hedging).
    pub(super) live: u32,
    /// Answered, failed for good, or past its deadline.
    pub(super) done: bool,
    /// A deadline event is pending for it.
    pub(super) deadline_pending: bool,
    /// A retry waits out its backoff.
    pub(super) backoff_pending: bool,
    /// Jobs naming it on their way to a server (admission stage, a policy's backlog).
    pub(super) sending: u32,
    /// Hedge events pending for it; only the one due at `hedge_at` is not stale.
    pub(super) hedges_pending: u32,
    /// When its next hedge is due (NaN: none).
    pub(super) hedge_at: f64,
}

impl Request {
    /// Whether it is past the warm-up.
    pub(super) fn measured(&self, warmup: u64) -> bool {
        self.index >= warmup
    }
}

/// One sending of a request to a server.
#[derive(Debug, Clone, Copy)]
pub(super) struct Attempt {
    pub(super) request: u32,
    pub(super) server: u32,
    /// When it was sent.
    pub(super) sent: f64,
    /// Its demand until it is served, then the server's busy time on it.
    pub(super) work: f64,
    /// The policy's tag it was sent under.
    pub(super) tag: u32,
    /// The client still waits for its answer.
    pub(super) awaited: bool,
    /// At its server (queued, in service, or its response on the way back).
    pub(super) at_server: bool,
    /// Its timeout event is pending.
    pub(super) timer: bool,
    /// Its response (on the way back) is an error.
    pub(super) error: bool,
    /// Its request is measured.
    pub(super) measured: bool,
    /// It is a retry (counted in the budget's active retries while awaited).
    pub(super) retry: bool,
    /// Its server finished it (its response may still be on the way back).
    pub(super) served: bool,
    /// The next attempt of its request that the client waits for ([`Request::live`]).
    pub(super) next: u32,
    /// Its request's traffic class (0 without classes): kept here, as its request may be
    /// finished and its number reused while the attempt is still served.
    pub(super) class: u32,
}

/// What each client of a fleet keeps for itself, as each Envoy or gRPC channel does: its retry
/// budget's counts and its retry throttle.
#[derive(Debug, Clone)]
pub(super) struct ClientState {
    /// Its requests sent and not finished.
    pub(super) active_requests: u64,
    /// Its retries in backoff or in flight.
    pub(super) active_retries: u64,
    /// Its attempts in flight (awaited), for Envoy's `max_requests`.
    pub(super) in_flight: u64,
    pub(super) throttle: Option<Throttle>,
}

/// The lifecycle of one replication.
pub(super) struct LifecycleState {
    /// The configuration; `error` and `delay` follow the changes.
    pub(super) cfg: Lifecycle,
    /// Each server's rate at time 0: an attempt's busy time is its demand over it.
    pub(super) rates: Vec<f64>,
    pub(super) requests: Vec<Request>,
    free_requests: Vec<u32>,
    pub(super) attempts: Vec<Attempt>,
    free_attempts: Vec<u32>,
    /// Whether a response is an error.
    pub(super) errors: SimRng,
    /// The demands of retries.
    pub(super) demands: SimRng,
    /// The demands of hedges: a stream of their own, so that hedging changes no other draw.
    pub(super) hedges: SimRng,
    /// Backoff jitter.
    pub(super) backoff: SimRng,
    pub(super) budget: Option<RetryBudget>,
    /// Per client (grown as clients appear).
    pub(super) clients: Vec<ClientState>,
    /// Per server: its state, set by the changes (all `Up` at the start).
    pub(super) states: Vec<HostState>,
    /// Each client's view of the hosts' health (SPEC §12): only with `[health]` or
    /// `[client] breaker`.
    pub(super) health: Option<HealthView>,
    /// Scratch room for the hosts given to a policy.
    pub(super) hosts: Vec<u32>,
    pub(super) stats: LifecycleStats,
    /// With traffic classes (SPEC §13), each class's per-attempt timeout (0: the client's),
    /// service law for retries and hedges (`None`: the scenario's), and counts; all empty
    /// without classes.
    pub(super) class_timeouts: Vec<f64>,
    pub(super) class_laws: Vec<Option<Service>>,
    pub(super) class_stats: Vec<LifecycleStats>,
}

impl LifecycleState {
    /// The lifecycle `cfg` on servers of `rates`; its streams are seeded from `seed` (a word
    /// of a copy of the workload stream), one per purpose.
    pub(super) fn new(cfg: &Lifecycle, rates: &[f64], seed: u64) -> Self {
        let c = &cfg.client;
        LifecycleState {
            cfg: cfg.clone(),
            rates: rates.to_vec(),
            requests: Vec::new(),
            free_requests: Vec::new(),
            attempts: Vec::new(),
            free_attempts: Vec::new(),
            errors: StreamKey::new(seed, "lifecycle-errors").rng(),
            demands: StreamKey::new(seed, "lifecycle-demands").rng(),
            hedges: StreamKey::new(seed, "lifecycle-hedges").rng(),
            backoff: StreamKey::new(seed, "lifecycle-backoff").rng(),
            budget: (c.budget > 0.0)
                .then_some(RetryBudget { fraction: c.budget, min: c.budget_min }),
            clients: Vec::new(),
            states: vec![HostState::Up; rates.len()],
            // Without `[health]` there is no panic threshold: a client whose breakers are all
            // open fails fast (SPEC §12).
            health: (c.breaker.is_some() || cfg.health.is_some()).then(|| {
                let view =
                    HealthView::new(rates.len(), cfg.health.map_or(0.0, |h| h.panic), c.breaker);
                match &cfg.health {
                    Some(h) => view.with_rules(h),
                    None => view,
                }
            }),
            hosts: Vec::new(),
            stats: LifecycleStats::default(),
            class_timeouts: Vec::new(),
            class_laws: Vec::new(),
            class_stats: Vec::new(),
        }
    }

    /// The same with `classes`: each class's timeout, law and counts.
    pub(super) fn with_classes(mut self, classes: &Classes) -> Self {
        let cs = &classes.classes;
        self.class_timeouts = cs.iter().map(|c| c.timeout.unwrap_or(0.0)).collect();
        self.class_laws = cs.iter().map(|c| c.service.clone()).collect();
        self.class_stats = vec![LifecycleStats::default(); cs.len()];
        self
    }

    /// Counts with `f`, in the pooled counts and in class `class`'s (with classes).
    #[inline]
    pub(super) fn count(&mut self, class: u32, f: impl Fn(&mut LifecycleStats)) {
        f(&mut self.stats);
        if let Some(s) = self.class_stats.get_mut(class as usize) {
            f(s);
        }
    }

    /// The per-attempt timeout of class `class`'s requests: its own, else the client's (0:
    /// none).
    #[inline]
    pub(super) fn timeout(&self, class: u32) -> f64 {
        match self.class_timeouts.get(class as usize) {
            Some(&t) if t > 0.0 => t,
            _ => self.cfg.client.timeout,
        }
    }

    /// Client `c`'s state, a fresh one (no requests, a full bucket) the first time.
    pub(super) fn client(&mut self, c: u32) -> &mut ClientState {
        let c = c as usize;
        if self.clients.len() <= c {
            let k = &self.cfg.client;
            let fresh = ClientState {
                active_requests: 0,
                active_retries: 0,
                in_flight: 0,
                throttle: (k.throttle_tokens > 0.0)
                    .then(|| Throttle::new(k.throttle_tokens, k.throttle_ratio)),
            };
            self.clients.resize(c + 1, fresh);
        }
        &mut self.clients[c]
    }

    /// A request arrived at `t`, the `index`-th, of class `class`, with the demand `work`: its
    /// number. The job that names it is on its way to a server.
    pub(super) fn open(&mut self, t: f64, index: u64, work: f64, class: u32) -> u32 {
        let r = Request {
            arrival: t,
            index,
            work,
            attempts: 0,
            client: 0,
            class,
            key: 0,
            live: NONE,
            done: false,
            deadline_pending: self.cfg.client.deadline > 0.0,
            backoff_pending: false,
            sending: 1,
            hedges_pending: 0,
            hedge_at: f64::NAN,
        };
        match self.free_requests.pop() {
            Some(i) => {
                self.requests[i as usize] = r;
                i
            }
            None => {
                self.requests.push(r);
                (self.requests.len() - 1) as u32
            }
        }
    }

    /// A new attempt: its number.
    pub(super) fn attempt(&mut self, a: Attempt) -> u32 {
        match self.free_attempts.pop() {
            Some(i) => {
                self.attempts[i as usize] = a;
                i
            }
            None => {
                self.attempts.push(a);
                (self.attempts.len() - 1) as u32
            }
        }
    }

    /// Frees request `r` once nothing refers to it any more.
    pub(super) fn release_request(&mut self, r: u32) {
        let q = &self.requests[r as usize];
        if q.done
            && !q.deadline_pending
            && !q.backoff_pending
            && q.sending == 0
            && q.hedges_pending == 0
        {
            self.free_requests.push(r);
        }
    }

    /// Frees attempt `a` once nothing refers to it any more.
    pub(super) fn release_attempt(&mut self, a: u32) {
        let x = &self.attempts[a as usize];
        if !x.awaited && !x.at_server && !x.timer {
            self.free_attempts.push(a);
        }
    }

    /// Links attempt `a` into its request's awaited attempts.
    pub(super) fn link(&mut self, r: u32, a: u32) {
        self.attempts[a as usize].next = self.requests[r as usize].live;
        self.requests[r as usize].live = a;
    }

    /// Unlinks attempt `a` from its request's awaited attempts.
    pub(super) fn unlink(&mut self, a: u32) {
        let x = self.attempts[a as usize];
        let req = &mut self.requests[x.request as usize];
        if req.live == a {
            req.live = x.next;
            return;
        }
        let mut at = req.live;
        while at != NONE {
            let next = self.attempts[at as usize].next;
            if next == a {
                self.attempts[at as usize].next = x.next;
                return;
            }
            at = next;
        }
        unreachable!("attempt {a} is not awaited by its request");
    }
}

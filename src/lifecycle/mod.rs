//! The request lifecycle (SPEC §11): what servers do besides serving (errors, a response delay,
//! a queue limit) and what a client does with its requests (per-attempt timeouts, an overall
//! deadline, cancellation, retries with backoff, a retry budget and retry throttling, hedging).
//!
//! This module holds the configuration as a replication reads it ([`Lifecycle`]) and the rules,
//! each following a cited source: [`backoff`] (Envoy, gRPC, the chapter's anti-pattern),
//! [`budget`] (Envoy's retry budget, gRPC's retry throttling), and for health (SPEC §12)
//! [`breaker`] (the chapter's circuit breaker), [`outlier`] (Envoy's outlier detection with
//! gRFC A50's multiplier), [`checks`] (Envoy's active health checks) and [`slow_start`]
//! (Envoy's slow-start weight). The engine
//! (`engine/lifecycle.rs`) runs them on the one event loop; a replication without a
//! [`Lifecycle`] has none of it.

pub mod backoff;
pub mod breaker;
pub mod budget;
pub mod checks;
pub mod health;
pub mod outlier;
pub mod slow_start;

use std::ops::Range;

use serde::{Deserialize, Serialize};

pub use backoff::Backoff;

/// What a replication with a lifecycle simulates besides the farm.
#[derive(Debug, Clone, PartialEq)]
pub struct Lifecycle {
    /// Per server: the probability that a response is an error (drawn after service).
    pub error: Vec<f64>,
    /// Per server: a constant added to each response after its service; the server is free
    /// meanwhile, the client's in-flight count includes it.
    pub delay: Vec<f64>,
    /// A server rejects at once (`reject`) a request that would find this many or more there.
    pub queue_limit: Option<u32>,
    /// Changes of `delay`, `error` and host states during the run, in time order.
    pub changes: Vec<Change>,
    /// What each client does with its requests.
    pub client: Client,
    /// What each client does about failed hosts (`[health]`, SPEC §12); `None`: nothing.
    pub health: Option<health::Health>,
}

/// At `at`, every server of `servers` takes the `delay`, `error` and state given.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    /// Absolute simulated time (warm-up included).
    pub at: f64,
    /// Server indices.
    pub servers: Range<usize>,
    /// The new response delay, if it changes.
    pub delay: Option<f64>,
    /// The new error probability, if it changes.
    pub error: Option<f64>,
    /// The hosts' new state, if it changes.
    pub state: Option<health::HostState>,
}

/// A client's rules (`[client]`): the defaults are SPEC §11's.
#[derive(Debug, Clone, PartialEq)]
pub struct Client {
    /// Per-attempt timeout (Envoy `per_try_timeout`); 0 = none.
    pub timeout: f64,
    /// Overall deadline, retries included (Envoy's route timeout); 0 = none.
    pub deadline: f64,
    /// An attempt the client stops waiting for without its answer (timed out, past the
    /// deadline, a losing hedge) is removed from its server's queue or aborted in service;
    /// false: it is served anyway and its busy time is `wasted`.
    pub cancel: bool,
    /// Retries after the first attempt (Envoy `num_retries`).
    pub retries: u32,
    /// Which failures are retried.
    pub retry_on: RetryOn,
    /// The wait before each retry.
    pub backoff: Backoff,
    /// Envoy's retry budget: active retries may reach `budget` times the active requests (0 =
    /// no budget).
    pub budget: f64,
    /// The budget's floor (Envoy `min_retry_concurrency`).
    pub budget_min: u32,
    /// gRPC retry throttling: `max_tokens` (0 = off).
    pub throttle_tokens: f64,
    /// gRPC retry throttling: `token_ratio`.
    pub throttle_ratio: f64,
    /// gRPC hedging's `hedgingDelay`: another attempt every `hedge` until one answers; 0 = no
    /// hedging. Hedging and retries exclude each other, as in gRFC A6 (a method has a retry
    /// policy or a hedging policy): the scenario refuses both at once, and with `hedge > 0`
    /// the retry rules are not used (`retry_on` then names the non-fatal failures, after
    /// which the next hedge goes at once).
    pub hedge: f64,
    /// gRPC hedging's `maxAttempts`: the most attempts in all, the first included.
    pub hedge_max: u32,
    /// Retries and hedges carry the first attempt's demand (else each draws its own).
    pub same_work: bool,
    /// The chapter's circuit breaker per backend (§39.20); `None`: none.
    pub breaker: Option<health::Breaker>,
    /// Envoy's cluster circuit breaker `max_pending_requests` (1024): a request fails fast
    /// when its client already holds this many waiting to be sent (a policy's backlog).
    pub max_pending: u32,
    /// Envoy's cluster circuit breaker `max_requests` (1024): an attempt fails fast when its
    /// client already has this many in flight.
    pub max_requests: u32,
}

impl Default for Client {
    fn default() -> Self {
        Client {
            timeout: 0.0,
            deadline: 0.0,
            retries: 0,
            retry_on: RetryOn::ALL,
            backoff: Backoff::None,
            budget: 0.0,
            budget_min: 3,
            throttle_tokens: 0.0,
            throttle_ratio: 0.1,
            cancel: false,
            hedge: 0.0,
            hedge_max: 2,
            same_work: false,
            breaker: None,
            max_pending: ENVOY_MAX_REQUESTS,
            max_requests: ENVOY_MAX_REQUESTS,
        }
    }
}

/// Envoy's default of `max_pending_requests` and `max_requests` (circuit_breaker.proto:
/// "If not specified, the default is 1024").
pub const ENVOY_MAX_REQUESTS: u32 = 1024;

/// How an attempt failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Failure {
    /// No answer within the per-attempt timeout.
    Timeout,
    /// The server answered with an error.
    Error,
    /// The server refused it at once (its queue was at `queue_limit`).
    Reject,
}

/// The failures a client retries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryOn {
    /// Retry attempts that timed out.
    pub timeout: bool,
    /// Retry attempts answered with an error.
    pub error: bool,
    /// Retry attempts a server refused.
    pub reject: bool,
}

impl RetryOn {
    /// Every failure.
    pub const ALL: RetryOn = RetryOn { timeout: true, error: true, reject: true };

    /// The set of `failures`.
    pub fn of(failures: &[Failure]) -> RetryOn {
        RetryOn {
            timeout: failures.contains(&Failure::Timeout),
            error: failures.contains(&Failure::Error),
            reject: failures.contains(&Failure::Reject),
        }
    }

    /// Whether `f` is retried.
    pub fn retries(self, f: Failure) -> bool {
        match f {
            Failure::Timeout => self.timeout,
            Failure::Error => self.error,
            Failure::Reject => self.reject,
        }
    }
}

/// What the lifecycle counted over the measured requests (each request counted once it is
/// finished: answered, failed, or still open when the run ended). Merges by addition, in the
/// order given, like every other float sum.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct LifecycleStats {
    /// Measured requests.
    pub requests: u64,
    /// Those answered without error within their deadline.
    pub successes: u64,
    /// Successful answers that came inside the measured window (by their time, whichever
    /// request they answer): over the measured arrivals, the goodput.
    pub good_in_window: u64,
    /// Attempts of the measured requests.
    pub attempts: u64,
    /// Attempts that timed out, and requests whose deadline expired.
    pub timeouts: u64,
    /// Attempts answered with an error or rejected.
    pub errors: u64,
    /// Of `errors`, the rejections.
    pub rejects: u64,
    /// Requests failed fast, without an attempt: a breaker, an overflow of `max_pending` or
    /// `max_requests`, or a client with no healthy host (SPEC §12).
    #[serde(default)]
    pub fast_failures: u64,
    /// Host ejections by outlier detection, over the whole run.
    #[serde(default)]
    pub ejections: u64,
    /// Server busy time of the measured requests' attempts.
    pub busy: f64,
    /// Of `busy`, the time spent on attempts whose answer nobody waited for.
    pub wasted: f64,
}

impl LifecycleStats {
    /// Nothing counted (a replication without a lifecycle).
    pub fn is_empty(&self) -> bool {
        *self == LifecycleStats::default()
    }

    /// Adds `other` in.
    pub fn merge(&mut self, other: &LifecycleStats) {
        self.requests += other.requests;
        self.successes += other.successes;
        self.good_in_window += other.good_in_window;
        self.attempts += other.attempts;
        self.timeouts += other.timeouts;
        self.errors += other.errors;
        self.rejects += other.rejects;
        self.fast_failures += other.fast_failures;
        self.ejections += other.ejections;
        self.busy += other.busy;
        self.wasted += other.wasted;
    }

    /// The fraction of requests answered without error within their deadline.
    pub fn success(&self) -> f64 {
        self.successes as f64 / self.requests.max(1) as f64
    }

    /// Successful answers per unit time over the offered rate (both over the measured window).
    pub fn goodput(&self) -> f64 {
        self.good_in_window as f64 / self.requests.max(1) as f64
    }

    /// Attempts per request.
    pub fn attempts_per_request(&self) -> f64 {
        self.attempts as f64 / self.requests.max(1) as f64
    }

    /// The share of busy time spent on answers nobody waited for.
    pub fn wasted_share(&self) -> f64 {
        if self.busy > 0.0 { self.wasted / self.busy } else { 0.0 }
    }
}

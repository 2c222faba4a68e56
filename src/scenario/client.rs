//! `[client]` and the server side of the request lifecycle in a scenario (SPEC §11): a group's
//! `error` and `delay`, `[farm] queue_limit`, events that change `delay`, `error` and the hosts'
//! `state`, and what each client does with its requests. [`Spec::lifecycle`] turns them into
//! what a replication simulates ([`Lifecycle`]); without any of them it is `None` and the run
//! is the same, byte for byte, as before they existed.

use serde::{Deserialize, Serialize};

use super::{EventSpec, Invalid, Spec, invalid, num};
use crate::lifecycle::backoff::BackoffKind;
use crate::lifecycle::health::Breaker;
use crate::lifecycle::{Backoff, Change, Client, ENVOY_MAX_REQUESTS, Failure, Lifecycle, RetryOn};

/// The most retries a request may have.
pub const MAX_RETRIES: u32 = 100;

/// The most attempts of a hedged request: gRFC A6 ("Limits on Retries and Hedges") caps
/// `maxAttempts` at 5 on the client by default.
pub const MAX_HEDGE_ATTEMPTS: u32 = 5;

/// The most tokens of gRPC's retry throttling (gRFC A6: `maxTokens` is at most 1000).
pub const MAX_THROTTLE_TOKENS: f64 = 1000.0;

/// `[client]`: the defaults are SPEC §11's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ClientSpec {
    /// Per-attempt timeout (Envoy `per_try_timeout`); 0 = none.
    pub timeout: f64,
    /// Overall deadline, retries included (Envoy's route timeout); 0 = none.
    pub deadline: f64,
    /// false: a timed-out attempt (or a losing hedge) keeps its place and is served anyway
    /// (its work `wasted`); true: it is removed from its server's queue or aborted in service.
    pub cancel: bool,
    /// Retries after the first attempt (Envoy `num_retries`; 1 in Envoy, 0 here).
    pub retries: u32,
    /// The failures retried.
    pub retry_on: Vec<Failure>,
    /// `envoy`, `grpc`, `exponential` or `none` (see [`crate::lifecycle::backoff`]).
    pub backoff: BackoffKind,
    /// The backoff's base interval.
    pub backoff_base: f64,
    /// The backoff's cap.
    pub backoff_max: f64,
    /// The growth factor of `grpc`'s backoff.
    pub multiplier: f64,
    /// Envoy's retry budget: active retries below `budget` times the active requests (0.2 in
    /// Envoy); 0 = no budget.
    pub budget: f64,
    /// The budget's floor (Envoy `min_retry_concurrency`, 3).
    pub budget_min: u32,
    /// gRPC retry throttling's `max_tokens`; 0 = off.
    pub throttle_tokens: f64,
    /// gRPC retry throttling's `token_ratio`.
    pub throttle_ratio: f64,
    /// gRPC hedging's `hedgingDelay`: another attempt every `hedge` until one answers; 0 = no
    /// hedging. As in gRFC A6 a request has a retry policy or a hedging policy, not both:
    /// `hedge > 0` with `retries > 0` is refused. `retry_on` names the non-fatal failures (a
    /// failed hedge in it sends the next at once; any other failure fails the request).
    pub hedge: f64,
    /// gRPC hedging's `maxAttempts`: the most attempts in all, the first included (1 to
    /// [`MAX_HEDGE_ATTEMPTS`]).
    pub hedge_max: u32,
    /// Retries and hedges carry the first attempt's demand (else each draws its own).
    pub same_work: bool,
    /// The chapter's circuit breaker per backend (§39.20): `{ failures = 5, recovery = 30000.0 }`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub breaker: Option<Breaker>,
    /// Envoy's `max_pending_requests` (1024): a request that would join a client's backlog
    /// holding this many fails fast.
    #[serde(skip_serializing_if = "is_envoy_default")]
    pub max_pending: u32,
    /// Envoy's `max_requests` (1024): an attempt fails fast when its client has this many in
    /// flight.
    #[serde(skip_serializing_if = "is_envoy_default")]
    pub max_requests: u32,
}

impl Default for ClientSpec {
    fn default() -> Self {
        ClientSpec {
            timeout: 0.0,
            deadline: 0.0,
            cancel: false,
            retries: 0,
            retry_on: vec![Failure::Timeout, Failure::Error, Failure::Reject],
            backoff: BackoffKind::Envoy,
            backoff_base: 25.0,
            backoff_max: 250.0,
            multiplier: 1.6,
            budget: 0.0,
            budget_min: 3,
            throttle_tokens: 0.0,
            throttle_ratio: 0.1,
            hedge: 0.0,
            hedge_max: 2,
            same_work: false,
            breaker: None,
            max_pending: ENVOY_MAX_REQUESTS,
            max_requests: ENVOY_MAX_REQUESTS,
        }
    }
}

/// Whether a limit is Envoy's default, 1024 (left out of the canonical form, as before the
/// key existed).
fn is_envoy_default(x: &u32) -> bool {
    *x == ENVOY_MAX_REQUESTS
}

/// Whether `x` is 0 (a group's `error` and `delay` are written only when set).
pub(super) fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

/// A probability in `[0, 1]`.
fn probability(key: &str, what: &str, p: f64) -> Result<(), Invalid> {
    if (0.0..=1.0).contains(&p) {
        Ok(())
    } else {
        Err(invalid(key, format!("{what}error {} is not a probability from 0 to 1", num(p))))
    }
}

/// A duration `>= 0`.
fn duration(key: &str, what: &str, name: &str, d: f64) -> Result<(), Invalid> {
    if d.is_finite() && d >= 0.0 {
        Ok(())
    } else {
        Err(invalid(key, format!("{what}{name} {} is not a time >= 0", num(d))))
    }
}

/// An event's `delay` and `error`, and that it changes something (`state` is checked when read).
pub(super) fn validate_event(e: &EventSpec, which: &str) -> Result<(), Invalid> {
    if e.rate.is_none() && e.delay.is_none() && e.error.is_none() && e.state.is_none() {
        return Err(invalid(
            "events",
            format!("{which}: changes nothing: give rate, delay, error or state"),
        ));
    }
    if let Some(d) = e.delay {
        duration("events", &format!("{which}: "), "delay", d)?;
    }
    if let Some(p) = e.error {
        probability("events", &format!("{which}: "), p)?;
    }
    Ok(())
}

impl Spec {
    /// The request lifecycle of this scenario: `None` when no group has an `error` or a
    /// `delay`, no event changes them, there is no `queue_limit`, no `[client]`, no `[health]`
    /// and no class has a `timeout`.
    pub fn lifecycle(&self) -> Option<Lifecycle> {
        let server_side = self.farm.groups.iter().any(|g| g.error > 0.0 || g.delay > 0.0)
            || self
                .events
                .iter()
                .any(|e| e.delay.is_some() || e.error.is_some() || e.state.is_some());
        if !server_side
            && self.farm.queue_limit.is_none()
            && self.client.is_none()
            && self.health.is_none()
            && !self.class_timeouts()
        {
            return None;
        }
        let per_server = |f: fn(&super::Group) -> f64| {
            self.farm
                .groups
                .iter()
                .flat_map(|g| std::iter::repeat_n(f(g), g.count as usize))
                .collect::<Vec<f64>>()
        };
        let ranges = self.group_ranges();
        let mut changes: Vec<Change> = self
            .events
            .iter()
            .filter(|e| e.delay.is_some() || e.error.is_some() || e.state.is_some())
            .map(|e| {
                let (_, servers) =
                    ranges.iter().find(|(name, _)| *name == e.group).expect("a validated group");
                Change {
                    at: e.at,
                    servers: servers.clone(),
                    delay: e.delay,
                    error: e.error,
                    state: e.state,
                }
            })
            .collect();
        changes.sort_by(|a, b| a.at.total_cmp(&b.at));
        let c = self.client.clone().unwrap_or_default();
        let client = Client {
            timeout: c.timeout,
            deadline: c.deadline,
            retries: c.retries,
            retry_on: RetryOn::of(&c.retry_on),
            backoff: Backoff::new(c.backoff, c.backoff_base, c.backoff_max, c.multiplier),
            budget: c.budget,
            budget_min: c.budget_min,
            throttle_tokens: c.throttle_tokens,
            throttle_ratio: c.throttle_ratio,
            cancel: c.cancel,
            hedge: c.hedge,
            hedge_max: c.hedge_max,
            same_work: c.same_work,
            breaker: c.breaker,
            max_pending: c.max_pending,
            max_requests: c.max_requests,
        };
        Some(Lifecycle {
            error: per_server(|g| g.error),
            delay: per_server(|g| g.delay),
            queue_limit: self.farm.queue_limit,
            changes,
            client,
            health: self.health,
        })
    }

    /// Whether the rows carry the lifecycle's columns: with `[client]`, a class's timeout,
    /// errors (a group's or an event's) or a queue limit.
    pub fn lifecycle_columns(&self) -> bool {
        self.client.is_some()
            || self.class_timeouts()
            || self.health.is_some()
            || self.events.iter().any(|e| e.state.is_some())
            || self.farm.queue_limit.is_some()
            || self.farm.groups.iter().any(|g| g.error > 0.0)
            || self.events.iter().any(|e| e.error.is_some())
    }

    /// Whether a class has its own timeout (`[[classes]] timeout`): the request lifecycle
    /// then runs, with or without `[client]`.
    fn class_timeouts(&self) -> bool {
        self.classes.iter().any(|c| c.timeout.is_some())
    }

    /// The groups' `error` and `delay`, `farm.queue_limit` and `[client]`.
    pub(super) fn validate_lifecycle(&self) -> Result<(), Invalid> {
        for g in &self.farm.groups {
            let what = format!("group '{}': ", g.name);
            probability("farm.groups", &what, g.error)?;
            duration("farm.groups", &what, "delay", g.delay)?;
        }
        if self.farm.queue_limit == Some(0) {
            return Err(invalid(
                "farm.queue_limit",
                "expected a queue length of at least 1, got 0",
            ));
        }
        match &self.client {
            Some(c) => validate_client(c),
            None => Ok(()),
        }
    }
}

/// `[client]`'s values.
fn validate_client(c: &ClientSpec) -> Result<(), Invalid> {
    duration("client.timeout", "", "timeout", c.timeout)?;
    duration("client.deadline", "", "deadline", c.deadline)?;
    validate_hedging(c)?;
    if c.retries > MAX_RETRIES {
        return Err(invalid(
            "client.retries",
            format!("expected 0 to {MAX_RETRIES} retries, got {}", c.retries),
        ));
    }
    if c.backoff != BackoffKind::None {
        if !(c.backoff_base.is_finite() && c.backoff_base > 0.0) {
            return Err(invalid(
                "client.backoff_base",
                format!("expected a time > 0, got {}", num(c.backoff_base)),
            ));
        }
        if !(c.backoff_max.is_finite() && c.backoff_max >= c.backoff_base) {
            return Err(invalid(
                "client.backoff_max",
                format!(
                    "expected a time >= backoff_base ({}), got {}",
                    num(c.backoff_base),
                    num(c.backoff_max)
                ),
            ));
        }
    }
    if !(c.multiplier.is_finite() && c.multiplier >= 1.0) {
        return Err(invalid(
            "client.multiplier",
            format!("expected a factor >= 1, got {}", num(c.multiplier)),
        ));
    }
    if !(0.0..=1.0).contains(&c.budget) {
        return Err(invalid(
            "client.budget",
            format!("expected a fraction from 0 to 1 (0.2 = Envoy's 20%), got {}", num(c.budget)),
        ));
    }
    for (key, v) in [("client.max_pending", c.max_pending), ("client.max_requests", c.max_requests)]
    {
        if v == 0 {
            return Err(invalid(key, "expected at least 1 (Envoy's default is 1024), got 0"));
        }
    }
    if !(0.0..=MAX_THROTTLE_TOKENS).contains(&c.throttle_tokens) {
        return Err(invalid(
            "client.throttle_tokens",
            format!(
                "expected 0 (off) to {MAX_THROTTLE_TOKENS} tokens, got {}",
                num(c.throttle_tokens)
            ),
        ));
    }
    if !(c.throttle_ratio.is_finite() && c.throttle_ratio > 0.0) {
        return Err(invalid(
            "client.throttle_ratio",
            format!("expected a ratio > 0, got {}", num(c.throttle_ratio)),
        ));
    }
    Ok(())
}

/// `hedge` and `hedge_max`, and that hedging and retries are not asked for at once.
fn validate_hedging(c: &ClientSpec) -> Result<(), Invalid> {
    if !(c.hedge.is_finite() && c.hedge >= 0.0) {
        return Err(invalid(
            "client.hedge",
            format!("expected a time >= 0 (0 = no hedging), got {}", num(c.hedge)),
        ));
    }
    if !(1..=MAX_HEDGE_ATTEMPTS).contains(&c.hedge_max) {
        return Err(invalid(
            "client.hedge_max",
            format!(
                "expected 1 to {MAX_HEDGE_ATTEMPTS} attempts in all (gRFC A6's cap), got {}",
                c.hedge_max
            ),
        ));
    }
    if c.hedge > 0.0 && c.retries > 0 {
        return Err(invalid(
            "client.hedge",
            format!(
                "hedging and retries exclude each other (gRFC A6: a request has a retry policy \
                 or a hedging policy, not both); set client.retries = 0 (got {}) or \
                 client.hedge = 0",
                c.retries
            ),
        ));
    }
    Ok(())
}

//! Health (SPEC §12) as a replication reads it: host states set by events, and what each client
//! does to keep its balancer off failed hosts — outlier detection, active health checks, the panic
//! threshold, slow start — and the client's circuit breakers.
//!
//! Each client keeps its own view, as each Envoy cluster or gRPC channel does: the hosts it has
//! ejected, found unhealthy or broken off are not offered to its policy
//! ([`Policy::set_hosts`](crate::policy::Policy)) until they come back.

use serde::{Deserialize, Serialize};

/// A host's state, set by an event (`state = "up" | "down" | "hang"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HostState {
    /// Serving (the state at the start). After `down` or `hang` it starts empty.
    Up,
    /// Refuses every attempt at once: an error without service. What it held when it went
    /// down is lost, as with `Hang`: its clients wait for their timeout or deadline.
    Down,
    /// Accepts attempts and never answers them, not even after `up`; what it held is lost.
    /// Its attempts are not in its queue length as the server sees it, but the policies count
    /// them in flight until their clients stop waiting.
    Hang,
}

/// Envoy's outlier detection (`outlier_detection.proto`), with gRFC A50's rules where they differ
/// (see [`crate::lifecycle::health`]'s rules). Defaults are Envoy's.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Outlier {
    /// Consecutive errors that eject a host (`consecutive_5xx`, 5).
    pub consecutive_errors: u32,
    /// How often ejections are reviewed (`interval`, 10 s).
    pub interval: f64,
    /// A host is ejected for `base_ejection` × the times it has been ejected
    /// (`base_ejection_time`, 30 s).
    pub base_ejection: f64,
    /// The most hosts ejected at once, as a fraction (`max_ejection_percent`, 10%).
    pub max_ejection: f64,
}

impl Default for Outlier {
    fn default() -> Self {
        Outlier {
            consecutive_errors: 5,
            interval: 10_000.0,
            base_ejection: 30_000.0,
            max_ejection: 0.1,
        }
    }
}

/// Active health checks: every `interval` each client probes each host; a probe that a `down` or
/// `hang` host fails (or that takes longer than `timeout`) counts against it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Checks {
    /// Between checks of a host (Envoy `interval`).
    pub interval: f64,
    /// A check not answered within it fails (Envoy `timeout`).
    pub timeout: f64,
    /// Consecutive failed checks that mark a host unhealthy (`unhealthy_threshold`).
    pub unhealthy: u32,
    /// Consecutive passed checks that mark it healthy again (`healthy_threshold`).
    pub healthy: u32,
}

impl Default for Checks {
    fn default() -> Self {
        Checks { interval: 5_000.0, timeout: 1_000.0, unhealthy: 3, healthy: 2 }
    }
}

/// Envoy's `slow_start_config`: a host that becomes healthy has weight
/// `max(min_weight, (t / window)^(1 / aggression))` of its own for `window`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SlowStart {
    /// `slow_start_window`.
    pub window: f64,
    /// `aggression` (1 = linear).
    pub aggression: f64,
    /// `min_weight_percent`, as a fraction.
    pub min_weight: f64,
}

impl Default for SlowStart {
    fn default() -> Self {
        SlowStart { window: 60_000.0, aggression: 1.0, min_weight: 0.1 }
    }
}

/// The chapter's circuit breaker (§39.20), one per backend per client.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Breaker {
    /// Consecutive failures that open it (CLOSED → OPEN).
    pub failures: u32,
    /// How long it stays OPEN before HALF_OPEN lets one trial request through.
    pub recovery: f64,
}

impl Default for Breaker {
    fn default() -> Self {
        Breaker { failures: 5, recovery: 30_000.0 }
    }
}

/// `[health]`: what each client does about failed hosts.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Health {
    /// Outlier detection (none when left out).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outlier: Option<Outlier>,
    /// Envoy's success-rate ejection besides the consecutive errors (minimum hosts 5, request
    /// volume 100, stdev factor 1.9); needs `outlier`.
    pub success_rate: bool,
    /// Active health checks (none when left out).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checks: Option<Checks>,
    /// Envoy's `healthy_panic_threshold`: below this fraction of healthy hosts, balance over all
    /// of them (0 = never).
    pub panic: f64,
    /// Slow start for hosts that become healthy (none when left out).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slow_start: Option<SlowStart>,
}

impl Default for Health {
    fn default() -> Self {
        Health { outlier: None, success_rate: false, checks: None, panic: 0.5, slow_start: None }
    }
}

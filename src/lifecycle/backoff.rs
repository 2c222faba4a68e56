//! The wait before a retry, by law. `n` is the retry's number (1 for the first retry) and `u`
//! a uniform draw in `[0, 1)` from the client's backoff stream; every law is a function of
//! them, so each is tested exactly at the edges of its range.
//!
//! - [`Backoff::Envoy`]: SPEC §11's `U[0, (2^n - 1) * base)` capped at `max` (by default
//!   `10 * base`). This is Envoy's `JitteredBackOffStrategy::nextBackOffMs` in
//!   `source/common/common/backoff_strategy.cc` as it was until Envoy replaced it by
//!   `JitteredExponentialBackOffStrategy` (the 1.1x releases): `multiplier = (1 << current_retry_)
//!   - 1`, `current_retry_` starting at 1, and `std::min(random() % (multiplier * base), max)`;
//!   the router's defaults (`retry_state_impl.cc`: base 25 ms, max 10 × base) and
//!   `router_filter.rst` ("in the range [0, (2^N-1)B)") say the same. Current Envoy
//!   (`JitteredExponentialBackOffStrategy`) draws `random() % next_interval_` with
//!   `next_interval_` = base, 2 base, 4 base, ... capped at max: `U[0, min(2^(n-1) base, max))`.
//!   SPEC is the contract, so lbsim follows the older code; the current one waits less on the
//!   first retry (`U[0, base)` both) and differs from the second on (`[0, 2B)` against
//!   `[0, 3B)`), and caps the interval rather than the draw.
//! - [`Backoff::Grpc`]: SPEC §11's `min(base * multiplier^(n-1), max) * U(0.8, 1.2)`: the
//!   jittered exponential of gRPC's connection backoff (`doc/connection-backoff.md`, jitter 0.2).
//!   gRFC A6 (`A6-client-retries.md`) draws a retry's wait as `random(0, min(initialBackoff *
//!   backoffMultiplier^(n-1), maxBackoff))` instead (full jitter); SPEC's law is kept, the
//!   difference noted here.
//! - [`Backoff::Exponential`]: chapter 39's anti-pattern 4, `request_with_backoff`: `wait =
//!   min(2 ** attempt + random.uniform(0, 1), 30)` seconds, where `attempt` counts from 0 (the
//!   first retry waits 1 to 2 units). In units of `base`, with the cap `max` a time like the
//!   other laws' (the chapter's 30 s): `min((2^(n-1) + U(0, 1)) * base, max)`.
//! - [`Backoff::None`]: no wait.

use serde::{Deserialize, Serialize};

/// A backoff law (`[client] backoff`), with its parameters: `base` (`backoff_base`), `max`
/// (`backoff_max`) and `multiplier`.
#[derive(Debug, Clone, Copy, PartialEq)]
#[allow(missing_docs)]
pub enum Backoff {
    /// `min(U[0, (2^n - 1) base), max)` (Envoy before `JitteredExponentialBackOffStrategy`).
    Envoy { base: f64, max: f64 },
    /// `min(base * multiplier^(n-1), max) * U(0.8, 1.2)`.
    Grpc { base: f64, max: f64, multiplier: f64 },
    /// `min((2^(n-1) + U(0, 1)) base, max)`.
    Exponential { base: f64, max: f64 },
    /// Retries go at once.
    None,
}

/// The law's name in a scenario file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BackoffKind {
    /// [`Backoff::Envoy`].
    #[default]
    Envoy,
    /// [`Backoff::Grpc`].
    Grpc,
    /// [`Backoff::Exponential`].
    Exponential,
    /// [`Backoff::None`].
    None,
}

impl Backoff {
    /// The law `kind` with its parameters.
    pub fn new(kind: BackoffKind, base: f64, max: f64, multiplier: f64) -> Backoff {
        match kind {
            BackoffKind::Envoy => Backoff::Envoy { base, max },
            BackoffKind::Grpc => Backoff::Grpc { base, max, multiplier },
            BackoffKind::Exponential => Backoff::Exponential { base, max },
            BackoffKind::None => Backoff::None,
        }
    }

    /// Whether a wait is drawn (all laws but [`Backoff::None`]).
    pub fn draws(self) -> bool {
        self != Backoff::None
    }

    /// The wait before retry number `n` (1 for the first), from the uniform draw `u` in `[0, 1)`.
    pub fn wait(self, n: u32, u: f64) -> f64 {
        // 2^k for k up to 1023 is finite; beyond every cap anyway.
        let pow2 = |k: u32| 2f64.powi(k.min(1023) as i32);
        match self {
            Backoff::Envoy { base, max } => (u * (pow2(n) - 1.0) * base).min(max),
            Backoff::Grpc { base, max, multiplier } => {
                let step = (base * multiplier.powi(n.saturating_sub(1).min(1023) as i32)).min(max);
                step * (0.8 + 0.4 * u)
            }
            Backoff::Exponential { base, max } => ((pow2(n.saturating_sub(1)) + u) * base).min(max),
            Backoff::None => 0.0,
        }
    }

    /// The mean wait before retry `n` (u uniform on [0, 1)).
    pub fn mean(self, n: u32) -> f64 {
        match self {
            Backoff::Envoy { base, max } => {
                // E[min(U w, max)] with w = (2^n - 1) base: w/2 when w <= max, else
                // max - max^2 / (2 w).
                let w = (2f64.powi(n.min(1023) as i32) - 1.0) * base;
                if w <= max { w / 2.0 } else { max - max * max / (2.0 * w) }
            }
            Backoff::Grpc { base, max, multiplier } => {
                (base * multiplier.powi(n.saturating_sub(1).min(1023) as i32)).min(max)
            }
            Backoff::Exponential { base, max } => {
                let lo = 2f64.powi(n.saturating_sub(1).min(1023) as i32) * base;
                let hi = lo + base;
                if hi <= max {
                    (lo + hi) / 2.0
                } else if lo >= max {
                    max
                } else {
                    // Uniform on [lo, hi) capped at max.
                    let below = (max - lo) / base;
                    below * (lo + max) / 2.0 + (1.0 - below) * max
                }
            }
            Backoff::None => 0.0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ENVOY: Backoff = Backoff::Envoy { base: 25.0, max: 250.0 };
    const GRPC: Backoff = Backoff::Grpc { base: 1.0, max: 120.0, multiplier: 1.6 };
    const EXP: Backoff = Backoff::Exponential { base: 1.0, max: 30.0 };

    fn below(x: f64) -> f64 {
        x - x * f64::EPSILON
    }

    /// Older Envoy: retry 1 in [0, 25), retry 2 in [0, 75), retry 3 in [0, 175), then the draw
    /// is capped at 250 (`std::min(random() % (multiplier * base), max)`).
    #[test]
    fn envoy_draws_below_2n_minus_1_bases_capped_at_max() {
        for (n, top) in [(1, 25.0), (2, 75.0), (3, 175.0)] {
            assert_eq!(ENVOY.wait(n, 0.0), 0.0);
            let hi = ENVOY.wait(n, below(1.0));
            assert!(hi < top && hi > top * 0.999_999, "retry {n}: {hi}");
            assert_eq!(ENVOY.mean(n), top / 2.0);
        }
        // Retry 4: U[0, 375) capped at 250: P(cap) = 1/3, mean = 250 - 250^2 / 750.
        assert_eq!(ENVOY.wait(4, 0.9), 250.0);
        assert_eq!(ENVOY.wait(4, 0.5), 187.5);
        assert!((ENVOY.mean(4) - (250.0 - 62500.0 / 750.0)).abs() < 1e-12);
        assert_eq!(ENVOY.wait(1000, 0.5), 250.0, "no overflow");
    }

    /// SPEC's gRPC law: the step grows by `multiplier` up to `max`, jittered by ±20%.
    #[test]
    fn grpc_is_the_capped_exponential_step_jittered_by_a_fifth() {
        assert_eq!(GRPC.wait(1, 0.0), 0.8);
        assert!((GRPC.wait(2, 0.5) - 1.6).abs() < 1e-12);
        assert!((GRPC.wait(3, 0.0) - 0.8 * 2.56).abs() < 1e-12);
        assert!((GRPC.wait(100, below(1.0)) - 144.0).abs() < 1e-9);
        assert_eq!(GRPC.mean(100), 120.0);
        assert!((GRPC.mean(2) - 1.6).abs() < 1e-12);
    }

    /// The chapter's `min(2 ** attempt + uniform(0, 1), 30)` with `attempt` from 0.
    #[test]
    fn exponential_is_2_to_the_attempt_plus_a_uniform_capped() {
        assert_eq!(EXP.wait(1, 0.0), 1.0);
        assert_eq!(EXP.wait(1, 0.5), 1.5);
        assert_eq!(EXP.wait(3, 0.25), 4.25);
        assert_eq!(EXP.mean(3), 4.5);
        assert_eq!(EXP.wait(6, 0.5), 30.0, "2^5 + 0.5 > 30");
        assert_eq!(EXP.mean(6), 30.0);
        // 2^4 = 16 < 30: uncapped.
        assert!((EXP.wait(5, 0.99) - 16.99).abs() < 1e-12);
        let near = Backoff::Exponential { base: 1.0, max: 16.5 };
        // Uniform on [16, 17) capped at 16.5: half at mean 16.25, half at 16.5.
        assert!((near.mean(5) - 16.375).abs() < 1e-12);
    }

    #[test]
    fn none_waits_nothing() {
        assert_eq!(Backoff::None.wait(3, 0.7), 0.0);
        assert!(!Backoff::None.draws());
        assert_eq!(
            Backoff::new(BackoffKind::Grpc, 1.0, 2.0, 3.0),
            Backoff::Grpc { base: 1.0, max: 2.0, multiplier: 3.0 }
        );
    }
}

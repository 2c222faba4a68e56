//! What limits retries besides their number: Envoy's retry budget and gRPC's retry throttling.

/// Envoy's retry budget (cluster circuit breakers, `retry_budget`), as
/// `source/common/upstream/resource_manager_impl.h` computes it: `RetryBudgetImpl::max()` is
/// `std::max<uint64_t>(budget_percent / 100 * (requests_.count() + pending_requests_.count()),
/// min_retry_concurrency)`, and a retry may start while the active retries are fewer
/// (`canCreate()`: `count() < max()`). Envoy's defaults are `budget_percent` 20% and
/// `min_retry_concurrency` 3. SPEC §11: the active requests are those arrived and not finished,
/// the active retries those in backoff or in flight.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetryBudget {
    /// `budget_percent / 100` (0.2 in Envoy).
    pub fraction: f64,
    /// `min_retry_concurrency`.
    pub min: u32,
}

impl RetryBudget {
    /// The most retries active at once with `active_requests` requests active: the product
    /// truncated to an integer (the conversion to `uint64_t`), at least `min`.
    pub fn max(self, active_requests: u64) -> u64 {
        ((self.fraction * active_requests as f64) as u64).max(u64::from(self.min))
    }

    /// Whether another retry may start while `active_retries` are active.
    pub fn allows(self, active_retries: u64, active_requests: u64) -> bool {
        active_retries < self.max(active_requests)
    }
}

/// gRPC retry throttling (gRFC A6, "Throttling Retry Attempts and Hedged RPCs"; grpc-go
/// `clientconn.go`, `retryThrottler`): the token count starts at `max_tokens`; each failed
/// attempt takes one token (not below 0: `throttle()`), each successful request adds
/// `token_ratio` (not above `max_tokens`: `successfulRPC()`); a retry is allowed only while
/// the count, after the failure's token is taken, is above `max_tokens / 2` (`throttle()`
/// returns `tokens <= thresh`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Throttle {
    max: f64,
    ratio: f64,
    tokens: f64,
}

impl Throttle {
    /// A full bucket of `max_tokens`, refilled by `token_ratio` per success.
    pub fn new(max_tokens: f64, token_ratio: f64) -> Throttle {
        Throttle { max: max_tokens, ratio: token_ratio, tokens: max_tokens }
    }

    /// An attempt failed: takes a token; true when a retry is allowed.
    pub fn failed(&mut self) -> bool {
        self.tokens = (self.tokens - 1.0).max(0.0);
        self.tokens > self.max / 2.0
    }

    /// Whether a hedge may be sent now (gRFC A6: "subsequent hedged RPCs will only be sent if
    /// token_count is greater than the threshold"); takes nothing.
    pub fn allows(&self) -> bool {
        self.tokens > self.max / 2.0
    }

    /// A request succeeded: adds `token_ratio`.
    pub fn succeeded(&mut self) {
        self.tokens = (self.tokens + self.ratio).min(self.max);
    }

    /// The tokens now.
    pub fn tokens(&self) -> f64 {
        self.tokens
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Envoy's defaults: 20% of the active requests, at least 3.
    #[test]
    fn the_budget_is_a_fifth_of_the_active_requests_but_at_least_three() {
        let b = RetryBudget { fraction: 0.2, min: 3 };
        assert_eq!(b.max(0), 3);
        assert_eq!(b.max(19), 3, "0.2 * 19 = 3.8 truncates to 3");
        assert_eq!(b.max(20), 4);
        assert_eq!(b.max(1000), 200);
        assert!(b.allows(2, 0));
        assert!(!b.allows(3, 10));
        assert!(b.allows(199, 1000));
        assert!(!b.allows(200, 1000));
    }

    /// gRFC A6's example shape: max 10, ratio 0.1. Retries stop once 5 tokens are gone (the
    /// count is no longer above 5), and come back after 10 successes per token.
    #[test]
    fn throttling_stops_retries_at_half_the_tokens_and_successes_refill_them() {
        let mut t = Throttle::new(10.0, 0.1);
        for k in 1..=4 {
            assert!(t.failed(), "failure {k}: {} tokens left", t.tokens());
        }
        assert!(!t.failed(), "5 tokens left: not above 5");
        assert_eq!(t.tokens(), 5.0);
        for _ in 0..11 {
            t.succeeded();
        }
        assert!(t.tokens() > 6.0);
        assert!(t.failed(), "6.1 - 1 > 5");
        for _ in 0..100 {
            t.failed();
        }
        assert_eq!(t.tokens(), 0.0, "never below 0");
        for _ in 0..1000 {
            t.succeeded();
        }
        assert_eq!(t.tokens(), 10.0, "never above max");
    }
}

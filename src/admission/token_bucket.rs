//! Token bucket (Turner 1986; RFC 2697's committed bucket), as the rate-limiting chapter writes it
//! (§39.1): `tokens = min(burst, tokens + elapsed * rate)`, a request takes one token or is
//! rejected, and the bucket starts full.
//!
//! Lazy arithmetic: the bucket is brought up to date when a request arrives, never by a timer.
//! A bucket of capacity `B` lets through at most `B + r t` requests in any interval of length `t`
//! (it holds at most `B` tokens at the interval's start and gains `r t` during it).

/// A token bucket of `rate` tokens per time unit and capacity `burst`, full at time 0.
#[derive(Debug, Clone, PartialEq)]
pub struct TokenBucket {
    rate: f64,
    burst: f64,
    tokens: f64,
    last: f64,
}

impl TokenBucket {
    /// A full bucket at time 0.
    pub fn new(rate: f64, burst: f64) -> TokenBucket {
        TokenBucket { rate, burst, tokens: burst, last: 0.0 }
    }

    /// A request at `t` (non-decreasing): true when it takes a token.
    pub fn offer(&mut self, t: f64) -> bool {
        self.tokens = self.burst.min(self.tokens + (t - self.last) * self.rate);
        self.last = t;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_bucket_passes_burst_at_once_then_one_per_interval() {
        // rate 2, burst 3: three at t = 0, the fourth rejected; at t = 0.5 one token is back.
        let mut b = TokenBucket::new(2.0, 3.0);
        let at0: Vec<bool> = (0..4).map(|_| b.offer(0.0)).collect();
        assert_eq!(at0, [true, true, true, false]);
        assert!(!b.offer(0.25));
        assert!(b.offer(0.5));
        assert!(!b.offer(0.5));
    }

    #[test]
    fn tokens_never_exceed_the_capacity() {
        // After a long idle period the bucket holds `burst`, not `rate * idle`.
        let mut b = TokenBucket::new(10.0, 2.0);
        let after: Vec<bool> = (0..3).map(|_| b.offer(100.0)).collect();
        assert_eq!(after, [true, true, false]);
    }
}

//! Token bucket (Turner 1986; RFC 2697's committed bucket), as the rate-limiting chapter writes it
//! (§39.1): `tokens = min(burst, tokens + elapsed * rate)`, a request takes one token or is
//! rejected, and the bucket starts full.
//!
//! Lazy arithmetic: the bucket is brought up to date when a request arrives, never by a timer.
//! A bucket of capacity `B` lets through at most `B + r t` requests in any interval of length `t`
//! (it holds at most `B` tokens at the interval's start and gains `r t` during it).
//!
//! The one token bucket of lbsim: admission's limiter ([`TokenBucket::offer`]) and C3's
//! sending-rate limit ([`TokenBucket::try_take`], after absim's `RateLimiter`, whose rate the
//! cubic control changes as it goes: [`TokenBucket::set_rate`]).

/// A token bucket of `rate` tokens per time unit and capacity `burst`.
#[derive(Debug, Clone, Copy, PartialEq)]
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

    /// An empty bucket at time 0.
    pub fn empty(rate: f64, burst: f64) -> TokenBucket {
        TokenBucket { tokens: 0.0, ..TokenBucket::new(rate, burst) }
    }

    /// The tokens it holds at `t` (not before the last update).
    #[inline]
    pub fn level(&self, t: f64) -> f64 {
        self.burst.min(self.tokens + (t - self.last) * self.rate)
    }

    /// A request at `t` (non-decreasing): true when it takes a token. The bucket is brought up
    /// to date whether it does or not.
    pub fn offer(&mut self, t: f64) -> bool {
        self.tokens = self.level(t);
        self.last = t;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }

    /// Takes a token at `t` if there is one; otherwise leaves the bucket as it was (absim's
    /// `tryAcquire`) and returns the tokens it holds at `t`, less than one.
    pub fn try_take(&mut self, t: f64) -> Result<(), f64> {
        let tokens = self.level(t);
        if tokens >= 1.0 {
            self.tokens = tokens - 1.0;
            self.last = t;
            Ok(())
        } else {
            Err(tokens)
        }
    }

    /// Sets the rate, which counts from the last update on (tokens are added lazily, so the
    /// new rate also applies to the time since then).
    pub fn set_rate(&mut self, rate: f64) {
        self.rate = rate;
    }

    /// Sets the bucket to hold `tokens` at `t`.
    pub fn set(&mut self, tokens: f64, t: f64) {
        self.tokens = tokens;
        self.last = t;
    }

    /// The tokens at the last update, and when that was.
    pub fn state(&self) -> (f64, f64) {
        (self.tokens, self.last)
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

    #[test]
    fn a_failed_take_leaves_the_bucket_alone_and_says_how_full_it_is() {
        // Empty, one token per 4 units: at 1 it holds a quarter and stays as it was (a failed
        // `offer` would have brought it up to date); at 4 the token is taken; at 6 it holds half
        // of the next.
        let mut b = TokenBucket::empty(0.25, 3.0);
        assert_eq!(b.try_take(1.0), Err(0.25));
        assert_eq!(b.state(), (0.0, 0.0));
        assert_eq!(b.try_take(4.0), Ok(()));
        assert_eq!(b.state(), (0.0, 4.0));
        assert_eq!(b.try_take(6.0), Err(0.5));
        // A new rate counts from the last take: at 6 with rate 1, two tokens.
        b.set_rate(1.0);
        assert_eq!(b.level(6.0), 2.0);
        assert_eq!(b.level(100.0), 3.0, "capped at the capacity");
        b.set(1.0, 7.0);
        assert_eq!((b.try_take(7.0), b.try_take(7.0)), (Ok(()), Err(0.0)));
    }
}

//! Client-side adaptive throttling (Beyer et al., *Site Reliability Engineering*, O'Reilly 2016,
//! ch. 21 "Handling Overload"): each client keeps, over the last `window` of history (the book
//! uses two minutes), `requests` (attempted by the application, including those the throttle
//! rejected itself) and `accepts` (those the backend accepted), and rejects a new request locally
//! with probability `max(0, (requests - K * accepts) / (requests + 1))`. `K = 2` by default: the
//! client sends until the backend rejects more than half of what it is sent, and from then on
//! sends about `K` times what the backend accepts.
//!
//! The throttle decides before the backend is tried; the backend's answer comes back through
//! [`Adaptive::accepted`].

use std::collections::VecDeque;

/// One client's throttle.
#[derive(Debug, Clone, PartialEq)]
pub struct Adaptive {
    k: f64,
    window: f64,
    requests: VecDeque<f64>,
    accepts: VecDeque<f64>,
}

impl Adaptive {
    /// Multiplier `k`, history `window`.
    pub fn new(k: f64, window: f64) -> Adaptive {
        Adaptive { k, window, requests: VecDeque::new(), accepts: VecDeque::new() }
    }

    fn expire(&mut self, t: f64) {
        let since = t - self.window;
        while self.requests.front().is_some_and(|&s| s <= since) {
            self.requests.pop_front();
        }
        while self.accepts.front().is_some_and(|&s| s <= since) {
            self.accepts.pop_front();
        }
    }

    /// The local rejection probability at `t`.
    pub fn probability(&mut self, t: f64) -> f64 {
        self.expire(t);
        let requests = self.requests.len() as f64;
        let accepts = self.accepts.len() as f64;
        ((requests - self.k * accepts) / (requests + 1.0)).max(0.0)
    }

    /// A request at `t` with a uniform draw `u` in [0, 1): true when the client sends it. The
    /// request is counted either way.
    pub fn offer(&mut self, t: f64, u: f64) -> bool {
        let p = self.probability(t);
        self.requests.push_back(t);
        u >= p
    }

    /// The backend accepted a request at `t`.
    pub fn accepted(&mut self, t: f64) {
        self.accepts.push_back(t);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sre_formula() {
        let mut a = Adaptive::new(2.0, 10.0);
        // 10 requests, 3 accepted: (10 - 6) / 11.
        for i in 0..10 {
            assert!(a.offer(f64::from(i) * 0.1, 0.999));
        }
        for i in 0..3 {
            a.accepted(f64::from(i) * 0.1);
        }
        assert!((a.probability(1.0) - 4.0 / 11.0).abs() < 1e-15);
        // Half accepted: 10 - 2 * 5 = 0, no throttling.
        a.accepted(0.5);
        a.accepted(0.6);
        assert_eq!(a.probability(1.0), 0.0);
        // Everything forgotten after the window.
        assert_eq!(a.probability(20.0), 0.0);
        assert!(a.requests.is_empty() && a.accepts.is_empty());
    }

    #[test]
    fn a_locally_rejected_request_still_counts() {
        let mut a = Adaptive::new(2.0, 100.0);
        for _ in 0..4 {
            a.offer(0.0, 0.999);
        }
        // p = 4 / 5; u = 0.5 is below it: rejected, and requests becomes 5.
        assert!(!a.offer(1.0, 0.5));
        assert!((a.probability(1.0) - 5.0 / 6.0).abs() < 1e-15);
    }
}

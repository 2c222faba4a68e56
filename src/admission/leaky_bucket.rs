//! NGINX `limit_req`: the leaky bucket of `src/http/modules/ngx_http_limit_req_module.c`.
//!
//! NGINX keeps per key an `excess` (in thousandths of a request) and the time `last` of the last
//! accounted request. `ngx_http_limit_req_lookup` computes
//! `excess = lr->excess - ctx->rate * ms / 1000 + 1000` (the bucket drains at `rate` since `last`,
//! and the request adds one), clamps it at 0, and answers `NGX_BUSY` (status 503, the state left
//! as it was) when `excess > limit->burst`; otherwise it stores `excess` and `last = now`. A key
//! seen for the first time gets a node with `excess = 0` and passes. `ngx_http_limit_req_account`
//! then delays the request by `(excess - delay) * 1000 / rate` milliseconds, where `delay` is 0
//! by default and `nodelay` makes it unbounded (no delay at all): the request waits on a timer
//! (`ngx_add_timer`) and then continues through the phases.
//!
//! Here time is continuous and `excess` a float in requests (NGINX counts milliseconds and
//! thousandths of a request; its rounding is left out). Time is kept in units of the interval
//! `1 / rate`, as [`super::gcra`] does: the state is the instant `drain` (in intervals) at which
//! the bucket would be empty, `excess(now) = max(0, drain - now + 1)` after adding the request,
//! and a delayed request leaves at the new `drain = max(now, drain + 1)`. Each request then adds
//! exactly 1 to the schedule (float arithmetic on `excess` would accumulate rounding over a long
//! busy period and let releases drift a little closer than `1 / rate`). Consequences, each
//! pinned by a test:
//!
//! - the clamp comes after adding the request, so a bucket of `burst = B` passes `B + 1`
//!   requests at once (the first at excess 0, then 1, ..., B);
//! - without `nodelay`, a request passed at excess `x` leaves at `t + x / rate`: while the bucket
//!   is not empty, requests leave exactly `1 / rate` apart, whatever the input (the constant
//!   output spacing of a leaky bucket);
//! - with `nodelay` the same requests pass at once: that is a token bucket of capacity `B + 1`
//!   (`tokens = B - excess`), full at start.

/// NGINX's verdict on one request.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Verdict {
    /// Passed, to be sent on at the given time (the arrival time when not delayed).
    Pass(f64),
    /// Rejected (503).
    Busy,
}

/// One key's `limit_req` state.
#[derive(Debug, Clone, PartialEq)]
pub struct LeakyBucket {
    rate: f64,
    burst: f64,
    nodelay: bool,
    /// When the bucket would be empty, in intervals `1 / rate` (NGINX's `last + excess / rate`,
    /// times the rate); `None` until the key's first request.
    drain: Option<f64>,
}

impl LeakyBucket {
    /// `limit_req_zone ... rate=RATE; limit_req burst=BURST [nodelay];`.
    pub fn new(rate: f64, burst: f64, nodelay: bool) -> LeakyBucket {
        LeakyBucket { rate, burst, nodelay, drain: None }
    }

    /// A request at `t` (non-decreasing).
    pub fn offer(&mut self, t: f64) -> Verdict {
        let now = t * self.rate;
        let Some(drain) = self.drain else {
            // A new node: excess 0, passes undelayed.
            self.drain = Some(now);
            return Verdict::Pass(t);
        };
        // NGINX's `excess - rate * ms / 1000 + 1000`, clamped at 0, is `max(0, drain + 1 - now)`
        // requests: the request leaves at `max(now, drain + 1)`.
        let leave = now.max(drain + 1.0);
        if leave - now > self.burst {
            return Verdict::Busy;
        }
        self.drain = Some(leave);
        if self.nodelay || leave == now {
            Verdict::Pass(t)
        } else {
            Verdict::Pass(leave / self.rate)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn burst_b_passes_b_plus_one_at_once() {
        let mut b = LeakyBucket::new(10.0, 3.0, true);
        let v: Vec<bool> = (0..5).map(|_| b.offer(1.0) != Verdict::Busy).collect();
        assert_eq!(v, [true, true, true, true, false]);
    }

    #[test]
    fn without_nodelay_excess_requests_wait_excess_over_rate() {
        // rate 10, burst 3, four at t = 1: they leave at 1, 1.1, 1.2, 1.3.
        let mut b = LeakyBucket::new(10.0, 3.0, false);
        let v: Vec<Verdict> = (0..5).map(|_| b.offer(1.0)).collect();
        let leave = |x: f64| Verdict::Pass(x);
        assert_eq!(v[0], leave(1.0));
        for (i, want) in [1.1, 1.2, 1.3].into_iter().enumerate() {
            let Verdict::Pass(at) = v[i + 1] else { panic!("request {} rejected", i + 1) };
            assert!((at - want).abs() < 1e-12, "{at} vs {want}");
        }
        assert_eq!(v[4], Verdict::Busy);
    }

    #[test]
    fn a_long_busy_period_keeps_releases_one_interval_apart() {
        // 10^5 simultaneous-ish requests at 3x the rate: the bucket never empties, and every
        // release is `k / rate` for consecutive integers k, so the gaps are 1/rate up to the
        // rounding of one division (float excess drifted by many units in the last place).
        let mut b = LeakyBucket::new(100.0, 1e9, false);
        let mut last = None;
        for i in 0..100_000 {
            let Verdict::Pass(at) = b.offer(i as f64 / 300.0) else { panic!("rejected") };
            if let Some(prev) = last {
                let gap: f64 = at - prev;
                assert!((gap - 0.01).abs() <= 4.0 * f64::EPSILON * at, "{i}: gap {gap}");
            }
            last = Some(at);
        }
    }

    #[test]
    fn a_rejected_request_leaves_the_state_as_it_was() {
        let mut a = LeakyBucket::new(1.0, 0.0, true);
        let mut b = a.clone();
        assert_eq!(a.offer(0.0), Verdict::Pass(0.0));
        assert_eq!(b.offer(0.0), Verdict::Pass(0.0));
        // `a` sees a rejected request at 0.5; `b` does not; both pass at 1.0.
        assert_eq!(a.offer(0.5), Verdict::Busy);
        assert_eq!(a.offer(1.0), Verdict::Pass(1.0));
        assert_eq!(b.offer(1.0), Verdict::Pass(1.0));
        assert_eq!(a, b);
    }

    #[test]
    fn the_drain_clamps_after_adding_the_request() {
        // rate 1, burst 0: after a long idle time excess is max(0, 0 - 100 + 1) = 0, so the
        // request is not delayed (clamping before adding would give 1 and a delay of 1).
        let mut b = LeakyBucket::new(1.0, 0.0, false);
        assert_eq!(b.offer(0.0), Verdict::Pass(0.0));
        assert_eq!(b.offer(100.0), Verdict::Pass(100.0));
        // Exactly one interval later: excess 0 - 1 + 1 = 0, passes undelayed.
        assert_eq!(b.offer(101.0), Verdict::Pass(101.0));
        assert_eq!(b.offer(101.5), Verdict::Busy);
    }
}

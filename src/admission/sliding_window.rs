//! Two-window counter (§39.3 method 3; Cloudflare's 2017 approximation): counts of the previous
//! and the current aligned window; a request at fraction `f` of the current window passes when
//! `prev * (1 - f) + curr < limit`. When more than one window has gone by, the previous count is
//! zero.
//!
//! The approximation assumes the previous window's requests were spread evenly. Requests bunched
//! at the end of a window count `1 - f` of their number while all of them are still inside the
//! sliding window, so the exact count in a window of length `w` can reach about `2 limit`
//! (`limit` at the end of one window and `f limit` more as `f -> 1`): see the tests and
//! `lbsim limit`.

/// A two-window counter.
#[derive(Debug, Clone, PartialEq)]
pub struct SlidingWindow {
    limit: f64,
    window: f64,
    current: i64,
    prev: u64,
    curr: u64,
}

impl SlidingWindow {
    /// About `limit` per window of length `window`.
    pub fn new(limit: u64, window: f64) -> SlidingWindow {
        SlidingWindow { limit: limit as f64, window, current: 0, prev: 0, curr: 0 }
    }

    /// A request at `t` (non-decreasing, from 0): true when it passes.
    pub fn offer(&mut self, t: f64) -> bool {
        let k = (t / self.window).floor() as i64;
        if k != self.current {
            self.prev = if k == self.current + 1 { self.curr } else { 0 };
            self.curr = 0;
            self.current = k;
        }
        let elapsed = t / self.window - k as f64;
        let approx = self.prev as f64 * (1.0 - elapsed) + self.curr as f64;
        if approx < self.limit {
            self.curr += 1;
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
    fn the_previous_window_weighs_by_its_overlap() {
        // limit 10, window 1: 10 pass in [0, 1); at t = 1.4 the estimate is 10 * 0.6 + curr, so
        // 4 more pass (6, 7, 8, 9 < 10) and the fifth does not.
        let mut s = SlidingWindow::new(10, 1.0);
        for i in 0..10 {
            assert!(s.offer(0.05 * f64::from(i)));
        }
        let v: Vec<bool> = (0..5).map(|_| s.offer(1.4)).collect();
        assert_eq!(v, [true, true, true, true, false]);
        // Two windows later the previous count is gone.
        assert!((0..10).all(|_| s.offer(3.0)));
    }
}

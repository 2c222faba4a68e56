//! Sliding-window log (§39.3 method 1; §39.13's Redis sorted set): the times of the requests
//! passed in the last `window` are kept; a request passes when fewer than `limit` are, and is
//! logged. Entries at or before `now - window` are dropped (`timestamps[0] <= now - window`;
//! `ZREMRANGEBYSCORE key 0 now-window`), so the window is `(now - window, now]` and no window of
//! that length ever holds more than `limit` passed requests. Only passed requests are logged.

use std::collections::VecDeque;

/// A sliding-window log.
#[derive(Debug, Clone, PartialEq)]
pub struct SlidingLog {
    limit: usize,
    window: f64,
    log: VecDeque<f64>,
}

impl SlidingLog {
    /// At most `limit` in any window of length `window`.
    pub fn new(limit: u64, window: f64) -> SlidingLog {
        SlidingLog { limit: limit as usize, window, log: VecDeque::new() }
    }

    /// A request at `t` (non-decreasing): true when it passes.
    pub fn offer(&mut self, t: f64) -> bool {
        while self.log.front().is_some_and(|&s| s <= t - self.window) {
            self.log.pop_front();
        }
        if self.log.len() >= self.limit {
            return false;
        }
        self.log.push_back(t);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_expires_exactly_one_window_later() {
        let mut s = SlidingLog::new(1, 1.0);
        assert!(s.offer(0.5));
        assert!(!s.offer(1.49));
        assert!(s.offer(1.5));
    }
}

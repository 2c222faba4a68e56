//! Fixed-window counter: at most `limit` requests in each window `[k w, (k + 1) w)`, as the
//! chapter's "N per second" counter (§39.1) and its Redis script (§39.13: `GET`, refuse at
//! `limit`, else `INCR`; the key expires after the window). Windows are aligned to time 0, as a
//! key named after the current second is; the Redis script's `EXPIRE` on the first request starts
//! a window at that request instead. Requests on both sides of a boundary pass: up to `2 limit`
//! in a window of length `w` that straddles one (§39.1's 198 in one second at 100 per second).

/// A fixed-window counter.
#[derive(Debug, Clone, PartialEq)]
pub struct FixedWindow {
    limit: u64,
    window: f64,
    current: i64,
    count: u64,
}

impl FixedWindow {
    /// At most `limit` per window of length `window`.
    pub fn new(limit: u64, window: f64) -> FixedWindow {
        FixedWindow { limit, window, current: i64::MIN, count: 0 }
    }

    /// A request at `t` (non-decreasing): true when it passes.
    pub fn offer(&mut self, t: f64) -> bool {
        let k = (t / self.window).floor() as i64;
        if k != self.current {
            self.current = k;
            self.count = 0;
        }
        if self.count >= self.limit {
            return false;
        }
        self.count += 1;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_count_resets_at_each_boundary() {
        let mut w = FixedWindow::new(2, 1.0);
        let v: Vec<bool> = [0.1, 0.2, 0.99, 1.0, 1.5, 1.7].iter().map(|&t| w.offer(t)).collect();
        assert_eq!(v, [true, true, false, true, true, false]);
    }
}

//! GCRA, the generic cell rate algorithm (ITU-T I.371, virtual scheduling form), as redis-cell
//! implements it (`src/cell/mod.rs`, `RateLimiter::rate_limit`).
//!
//! redis-cell keeps one time per key, the theoretical arrival time `tat` (a missing key counts
//! as `tat = now`). With the emission interval `T = 1 / rate` and the delay variation tolerance
//! `dvt = T * (max_burst + 1)`, a request computes `new_tat = max(now, tat) + T` and is blocked
//! when `now < new_tat - dvt`; otherwise `tat = new_tat`. A blocked request does not move `tat`.
//! `CL.THROTTLE` reports the limit as `max_burst + 1`: a fresh key passes `burst + 1` requests at
//! once, and so does the chapter's GCRA (§39.8, which rejects when
//! `new_tat - now > burst * T + T`).
//!
//! redis-cell's snapshot compares `diff.num_seconds() < 0`, which truncates the difference to
//! whole seconds (a request blocked by less than a second passes); the rule it documents, and the
//! one here, is the exact comparison.
//!
//! Mapping: GCRA with `(rate, burst)` makes the same decisions as a token bucket with rate `rate`
//! and capacity `burst + 1` that starts full (`tokens = burst + 1 - max(0, tat - now) / T`), and
//! as NGINX's `limit_req` with `nodelay` and the same `burst`.

/// One key's GCRA state.
#[derive(Debug, Clone, PartialEq)]
pub struct Gcra {
    interval: f64,
    tolerance: f64,
    tat: Option<f64>,
}

impl Gcra {
    /// `CL.THROTTLE key burst count period` with `rate = count / period`.
    pub fn new(rate: f64, burst: f64) -> Gcra {
        let interval = 1.0 / rate;
        Gcra { interval, tolerance: interval * (burst + 1.0), tat: None }
    }

    /// A request at `t` (non-decreasing): true when allowed.
    pub fn offer(&mut self, t: f64) -> bool {
        let tat = self.tat.unwrap_or(t);
        let new_tat = tat.max(t) + self.interval;
        if t < new_tat - self.tolerance {
            return false;
        }
        self.tat = Some(new_tat);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redis_cells_own_case_table() {
        // redis-cell's `it_rate_limits`: max_burst 4 at 1 per second (limit 5).
        let mut g = Gcra::new(1.0, 4.0);
        let at0: Vec<bool> = (0..6).map(|_| g.offer(0.0)).collect();
        assert_eq!(at0, [true, true, true, true, true, false]);
        // 3 s later three have drained: passes; at 3.1 and 4.0 one each; at 8.0 and 9.5 too.
        assert!(g.offer(3.0));
        assert!(g.offer(3.1));
        assert!(g.offer(4.0));
        assert!(g.offer(8.0));
        assert!(g.offer(9.5));
    }

    #[test]
    fn a_blocked_request_does_not_move_the_schedule() {
        let mut g = Gcra::new(1.0, 0.0);
        assert!(g.offer(0.0));
        assert!(!g.offer(0.4));
        assert!(!g.offer(0.9));
        assert!(g.offer(1.0));
    }
}

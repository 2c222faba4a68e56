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

/// One key's GCRA state, kept in units of the emission interval (time times the rate), so that
/// each request adds exactly 1 to the schedule, as redis-cell's integer nanoseconds add exactly
/// `T`: `burst + 1` simultaneous requests then pass exactly, whatever the rate.
#[derive(Debug, Clone, PartialEq)]
pub struct Gcra {
    rate: f64,
    /// `dvt / T = burst + 1`.
    tolerance: f64,
    /// The theoretical arrival time, in intervals.
    tat: Option<f64>,
}

impl Gcra {
    /// `CL.THROTTLE key burst count period` with `rate = count / period`.
    pub fn new(rate: f64, burst: f64) -> Gcra {
        Gcra { rate, tolerance: burst + 1.0, tat: None }
    }

    /// A request at `t` (non-decreasing): true when allowed.
    pub fn offer(&mut self, t: f64) -> bool {
        let now = t * self.rate;
        let tat = self.tat.unwrap_or(now);
        // Blocked when `now < new_tat - dvt` with `new_tat = max(tat, now) + 1`, i.e. when
        // `max(tat - now, 0) > dvt - 1`: the same inequality, arranged so that a request after
        // `tat` is never blocked by the rounding of `(now + 1) - 1`.
        if (tat - now).max(0.0) > self.tolerance - 1.0 {
            return false;
        }
        self.tat = Some(tat.max(now) + 1.0);
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
    fn burst_plus_one_pass_at_once_at_any_rate() {
        for rate in [0.1, 3.0, 100.0, 1e6] {
            let mut g = Gcra::new(rate, 20.0);
            assert_eq!((0..100).filter(|_| g.offer(7.0)).count(), 21, "rate {rate}");
        }
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

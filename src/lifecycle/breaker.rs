//! The chapter's circuit breaker (§39.20), one per backend per client: a pure state machine.
//!
//! CLOSED counts consecutive failures (a success resets the count, as SPEC §12 says
//! "consecutive"); at `failures` it opens. OPEN lets nothing through; `recovery` after the
//! failure that opened it, it is HALF_OPEN. HALF_OPEN lets one trial request through: its
//! success closes the breaker, its failure opens it again for another `recovery`. As in the
//! chapter's `record_failure`, a failure heard while OPEN (an answer to an attempt sent before
//! it opened, or one sent while the balancer panics) restarts the recovery time; a success
//! heard while OPEN changes nothing (the chapter's `record_success` acts only in HALF_OPEN).

use super::health::Breaker;

/// Where a breaker is.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum BreakerState {
    /// Requests pass; `failures` consecutive failures so far.
    Closed {
        /// Consecutive failures counted.
        failures: u32,
    },
    /// Nothing passes until `until`.
    Open {
        /// When it becomes HALF_OPEN.
        until: f64,
    },
    /// One trial passes; `trial` once it is sent.
    HalfOpen {
        /// The trial request is out.
        trial: bool,
    },
}

/// What an outcome or the clock did to a breaker.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Transition {
    /// Nothing that changes whether the backend may be picked.
    None,
    /// It opened (or its recovery restarted): nothing passes until the time given.
    Opened(f64),
    /// It closed: requests pass again.
    Closed,
}

/// One backend's breaker for one client.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CircuitBreaker {
    cfg: Breaker,
    state: BreakerState,
}

impl CircuitBreaker {
    /// A CLOSED breaker with no failure counted.
    pub fn new(cfg: Breaker) -> Self {
        CircuitBreaker { cfg, state: BreakerState::Closed { failures: 0 } }
    }

    /// Its state.
    pub fn state(&self) -> BreakerState {
        self.state
    }

    /// Whether a request may be sent now: CLOSED, or HALF_OPEN before its trial is out.
    pub fn allows(&self) -> bool {
        matches!(self.state, BreakerState::Closed { .. } | BreakerState::HalfOpen { trial: false })
    }

    /// A request was sent through it: in HALF_OPEN it is the trial, and no other passes. True
    /// when that closed the door.
    pub fn sent(&mut self) -> bool {
        if self.state == (BreakerState::HalfOpen { trial: false }) {
            self.state = BreakerState::HalfOpen { trial: true };
            return true;
        }
        false
    }

    /// The answer to a request sent through it was heard at `now`: `ok` or a failure.
    pub fn observe(&mut self, ok: bool, now: f64) -> Transition {
        let open = |b: &mut Self| {
            let until = now + b.cfg.recovery;
            b.state = BreakerState::Open { until };
            Transition::Opened(until)
        };
        match (self.state, ok) {
            (BreakerState::Closed { .. }, true) => {
                self.state = BreakerState::Closed { failures: 0 };
                Transition::None
            }
            (BreakerState::Closed { failures }, false) => {
                if failures + 1 >= self.cfg.failures {
                    open(self)
                } else {
                    self.state = BreakerState::Closed { failures: failures + 1 };
                    Transition::None
                }
            }
            (BreakerState::Open { .. }, true) => Transition::None,
            (BreakerState::Open { .. } | BreakerState::HalfOpen { .. }, false) => open(self),
            (BreakerState::HalfOpen { .. }, true) => {
                self.state = BreakerState::Closed { failures: 0 };
                Transition::Closed
            }
        }
    }

    /// The clock reached `now`: an OPEN breaker whose recovery is over becomes HALF_OPEN (true
    /// then: the backend may take its trial).
    pub fn recover(&mut self, now: f64) -> bool {
        match self.state {
            BreakerState::Open { until } if now >= until => {
                self.state = BreakerState::HalfOpen { trial: false };
                true
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn breaker() -> CircuitBreaker {
        CircuitBreaker::new(Breaker { failures: 3, recovery: 10.0 })
    }

    #[test]
    fn consecutive_failures_open_it_and_a_success_resets_the_count() {
        let mut b = breaker();
        assert_eq!(b.observe(false, 1.0), Transition::None);
        assert_eq!(b.observe(false, 2.0), Transition::None);
        assert_eq!(b.observe(true, 3.0), Transition::None);
        assert_eq!(b.state(), BreakerState::Closed { failures: 0 });
        assert_eq!(b.observe(false, 4.0), Transition::None);
        assert_eq!(b.observe(false, 5.0), Transition::None);
        assert!(b.allows());
        assert_eq!(b.observe(false, 6.0), Transition::Opened(16.0));
        assert!(!b.allows());
    }

    #[test]
    fn open_waits_its_recovery_then_lets_one_trial_through() {
        let mut b = breaker();
        for t in 0..3 {
            b.observe(false, f64::from(t));
        }
        assert!(!b.recover(11.9), "recovery runs from the failure that opened it, at 2");
        assert!(b.recover(12.0));
        assert!(b.allows());
        assert!(b.sent(), "the first request is the trial");
        assert!(!b.allows(), "one trial only");
        assert!(!b.sent());
        assert_eq!(b.observe(true, 13.0), Transition::Closed);
        assert!(b.allows());
    }

    #[test]
    fn a_failed_trial_opens_it_again_and_a_late_failure_restarts_the_recovery() {
        let mut b = breaker();
        for t in 0..3 {
            b.observe(false, f64::from(t));
        }
        assert_eq!(b.observe(true, 3.0), Transition::None, "a late success while open");
        assert_eq!(b.observe(false, 5.0), Transition::Opened(15.0), "a late failure");
        assert!(!b.recover(12.0));
        assert!(b.recover(15.0));
        b.sent();
        assert_eq!(b.observe(false, 16.0), Transition::Opened(26.0));
        assert!(!b.allows());
    }
}

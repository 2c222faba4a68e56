//! Simulated time: a non-negative, finite `f64` with a total order.

use std::cmp::Ordering;
use std::fmt;

/// A point in simulated time (unit: the mean service time of a rate-1 server).
///
/// Always finite and `>= 0`, so it is totally ordered, and its IEEE bit pattern orders the same way
/// as its value, which the event queue uses as a cheap integer key.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct SimTime(f64);

impl SimTime {
    /// Time zero.
    pub const ZERO: SimTime = SimTime(0.0);

    /// Wraps `t`. Panics if `t` is negative, NaN or infinite: such a time is a bug in the model,
    /// never a consequence of user input (inputs are validated before a simulation starts).
    #[inline]
    pub fn new(t: f64) -> SimTime {
        assert!(t.is_finite() && t >= 0.0, "invalid simulated time {t}");
        // -0.0 has a different bit pattern from 0.0; normalise it.
        SimTime(t + 0.0)
    }

    /// The value as `f64`.
    #[inline]
    pub fn get(self) -> f64 {
        self.0
    }

    /// An integer key that orders like the time itself (valid because the time is non-negative).
    #[inline]
    pub(crate) fn key(self) -> u64 {
        self.0.to_bits()
    }

    #[inline]
    pub(crate) fn from_key(key: u64) -> SimTime {
        SimTime(f64::from_bits(key))
    }
}

impl Eq for SimTime {}

impl PartialOrd for SimTime {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for SimTime {
    fn cmp(&self, other: &Self) -> Ordering {
        self.key().cmp(&other.key())
    }
}

impl fmt::Display for SimTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_orders_like_the_value() {
        let ts = [0.0, 1e-300, 0.5, 1.0, 1.0 + f64::EPSILON, 3.0, 1e12];
        for w in ts.windows(2) {
            assert!(SimTime::new(w[0]).key() < SimTime::new(w[1]).key());
        }
        assert_eq!(SimTime::new(-0.0).key(), SimTime::ZERO.key());
    }

    #[test]
    #[should_panic(expected = "invalid simulated time")]
    fn nan_is_refused() {
        SimTime::new(f64::NAN);
    }
}

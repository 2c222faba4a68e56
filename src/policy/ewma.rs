//! The exponentially weighted moving average every estimating policy uses.
//!
//! [`blend`] is the one update, `old * keep + new * (1 - keep)`. A fixed weight gives C3's
//! averages (`keep = 1 - alpha`); [`Ewma`] gives the time-decayed average of Finagle and tower
//! (`tower/src/load/peak_ewma.rs`, `RttEstimate::update`): an observation made `Δ` after the
//! previous update keeps `e^(-Δ/τ)` of the old estimate, so the weight of the past depends on
//! how long ago it was, not on how many observations came since. [`Ewma::observe_peak`] is
//! tower's Peak EWMA: an observation above the estimate replaces it at once.

use super::tuning::{params, positive};

/// Decay time constant when a policy does not give `tau`.
pub const DEFAULT_TAU: f64 = 10.0;

params! {
    /// The parameters of the policies that decay a time-weighted EWMA (`p2c-pewma`,
    /// `least-latency`).
    pub struct Decay {
        /// The decay time constant `τ` (default [`DEFAULT_TAU`]).
        #[serde(deserialize_with = "positive")]
        pub tau: f64,
    }
}

impl Default for Decay {
    fn default() -> Self {
        Decay { tau: DEFAULT_TAU }
    }
}

/// `old * keep + new * (1 - keep)`: the new estimate after observing `new`, keeping `keep` of
/// `old`.
#[inline(always)]
pub fn blend(old: f64, new: f64, keep: f64) -> f64 {
    old * keep + new * (1.0 - keep)
}

/// A time-decayed EWMA: an estimate and when it was last updated.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ewma {
    value: f64,
    at: f64,
}

impl Ewma {
    /// An estimate `value` made at time `at`.
    pub const fn new(value: f64, at: f64) -> Self {
        Ewma { value, at }
    }

    /// The estimate.
    #[inline]
    pub fn get(&self) -> f64 {
        self.value
    }

    /// When it was last updated.
    pub fn at(&self) -> f64 {
        self.at
    }

    /// Folds in `x` observed at `now`, with decay time constant `tau` (`now` before the last
    /// update counts as no time at all); returns the new estimate.
    #[inline]
    pub fn observe(&mut self, x: f64, now: f64, tau: f64) -> f64 {
        let keep = (-(now - self.at).max(0.0) / tau).exp();
        self.value = blend(self.value, x, keep);
        self.at = now;
        self.value
    }

    /// As [`Self::observe`], except that an observation above the estimate replaces it (tower
    /// compares `self.rtt_ns < rtt`: an equal one is blended, which keeps it equal).
    #[inline]
    pub fn observe_peak(&mut self, x: f64, now: f64, tau: f64) -> f64 {
        if self.value < x {
            self.value = x;
            self.at = now;
            x
        } else {
            self.observe(x, now, tau)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blend_keeps_its_share_of_the_old_estimate() {
        assert_eq!(blend(4.0, 2.0, 0.25), 2.5);
        assert_eq!(blend(4.0, 2.0, 1.0), 4.0);
        assert_eq!(blend(4.0, 2.0, 0.0), 2.0);
    }

    #[test]
    fn an_observation_keeps_e_to_the_minus_elapsed_over_tau_of_the_estimate() {
        let mut e = Ewma::new(4.0, 1.0);
        let keep = (-0.5f64).exp();
        assert_eq!(e.observe(2.0, 6.0, 10.0), 4.0 * keep + 2.0 * (1.0 - keep));
        assert_eq!(e.at(), 6.0);
        // At the same instant nothing of the observation is kept, and time going backwards
        // counts as none.
        let v = e.get();
        assert_eq!(e.observe(100.0, 6.0, 10.0), v);
        assert_eq!(e.observe(100.0, 5.0, 10.0), v);
        assert_eq!(e.at(), 5.0);
    }

    #[test]
    fn decay_compounds() {
        // Two reads of 0 five apart equal one ten apart, up to rounding: 8 e^-1.
        let mut a = Ewma::new(8.0, 0.0);
        a.observe(0.0, 5.0, 10.0);
        a.observe(0.0, 10.0, 10.0);
        assert!((a.get() - 8.0 * (-1.0f64).exp()).abs() < 1e-12);
    }

    #[test]
    fn a_peak_replaces_the_estimate_and_anything_else_is_blended() {
        let mut e = Ewma::new(1.0, 0.0);
        assert_eq!(e.observe_peak(3.5, 2.0, 10.0), 3.5);
        assert_eq!(e, Ewma::new(3.5, 2.0));
        // Equal is not a peak: blended, which keeps it equal and moves the clock.
        assert_eq!(e.observe_peak(3.5, 7.0, 10.0), 3.5);
        assert_eq!(e.at(), 7.0);
        // Lower is blended.
        let keep = (-0.1f64).exp();
        assert_eq!(e.observe_peak(1.5, 8.0, 10.0), 3.5 * keep + 1.5 * (1.0 - keep));
    }
}

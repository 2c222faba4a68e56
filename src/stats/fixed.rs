//! A sum whose value does not depend on the order of its terms.
//!
//! A replication sums its sojourn times as requests leave. Floating-point addition is not
//! associative, so a float sum depends on the order in which departures are recorded: servers
//! that record their departures lazily (per server, when the server is next looked at) would
//! give a mean a few ulps away from servers that record them in time order. [`FixedSum`] rounds
//! each term once, to a multiple of `2^-60`, and adds the results as integers, which is exact;
//! the total is then the same for every order, and it is converted to a float once, at the end.
//!
//! The rounding of each term is below `2^-60 ≈ 8.7e-19` (absolute), far under what a float sum of
//! the same terms loses; the total may reach `2^67 ≈ 1.5e20` before it overflows.

/// `2^60`: terms are multiples of its inverse.
const SCALE: f64 = (1u64 << 60) as f64;

/// An order-independent sum of floats: each term rounded (toward zero) to a multiple of `2^-60`,
/// the multiples added exactly.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FixedSum(i128);

impl FixedSum {
    /// Adds `x`.
    #[inline]
    pub fn add(&mut self, x: f64) {
        let m = x * SCALE;
        // The common case converts through i64, one instruction; larger terms take the slow path.
        self.0 += if m.abs() < 9.0e18 { m as i64 as i128 } else { m as i128 };
    }

    /// Adds another sum.
    #[inline]
    pub fn merge(&mut self, other: FixedSum) {
        self.0 += other.0;
    }

    /// The sum, rounded once to the nearest float.
    #[inline]
    pub fn value(self) -> f64 {
        self.0 as f64 / SCALE
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{RngExt, SeedableRng};

    /// Summing the same terms in two orders gives the same bits, where a float sum does not;
    /// the value is within a float rounding of the exact sum of the terms as rounded.
    #[test]
    fn the_order_of_the_terms_does_not_change_the_sum() {
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(3);
        let xs: Vec<f64> = (0..10_000).map(|_| -rng.random::<f64>().ln() * 3.0).collect();
        let (mut a, mut b) = (FixedSum::default(), FixedSum::default());
        xs.iter().for_each(|&x| a.add(x));
        xs.iter().rev().for_each(|&x| b.add(x));
        assert_eq!(a, b);
        let forward: f64 = xs.iter().sum();
        let backward: f64 = xs.iter().rev().sum();
        assert_ne!(forward.to_bits(), backward.to_bits(), "the float sums of this draw differ");
        // Each term loses under 2^-60 and the float sums under n * 2^-52 * sum: both close.
        assert!((a.value() - forward).abs() < 1e-9 * forward);
    }

    #[test]
    fn small_large_and_merged_terms() {
        let mut s = FixedSum::default();
        s.add(0.5); // through i64
        s.add(10.0); // 10 * 2^60 > 9e18: through i128
        s.add(1.0e12);
        assert_eq!(s.value(), 1.0e12 + 10.5);
        let mut t = FixedSum::default();
        t.add(0.25);
        s.merge(t);
        assert_eq!(s.value(), 1.0e12 + 10.75);
        let mut big = FixedSum::default();
        big.add(1.0e19);
        big.add(1.0e19);
        assert_eq!(big.value(), 2.0e19);
    }
}

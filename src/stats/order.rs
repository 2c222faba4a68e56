//! Order statistics of a few values, by counting ranks instead of partitioning.
//!
//! Prequal selects a quantile of the requests-in-flight of its pool (16 probes by default) per
//! pick. `select_nth_unstable` does that by partitioning, whose comparisons of random values the
//! branch predictor misses about half the time. Counting, for each candidate, the values below
//! it and at or below it is quadratic but has no branch that depends on the data except the one
//! that stops at the answer: on 16 values it is a few hundred compare-and-add steps the
//! processor runs in parallel. The answer is the same value.

/// The `k`-th smallest (from 0) of `v`: the value `x` of `v` with fewer than `k + 1` values
/// below it and at least `k + 1` at or below it (ties are one value, so any of them is the
/// answer). The order must be total on the values given.
///
/// # Panics
/// If `k >= v.len()`.
#[inline]
pub fn kth_smallest<T: Copy + Ord>(v: &[T], k: usize) -> T {
    assert!(k < v.len(), "rank {k} of {} values", v.len());
    for &x in v {
        let (mut below, mut at_or_below) = (0, 0);
        for &y in v {
            below += usize::from(y < x);
            at_or_below += usize::from(y <= x);
        }
        if below <= k && k < at_or_below {
            return x;
        }
    }
    unreachable!("every rank from 0 to len - 1 belongs to a value")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SimRng;
    use rand::{RngExt, SeedableRng};

    /// Every rank of many random arrays (1 to 32 values, half of them drawn from a few values so
    /// that ties are common, half from the whole range) is the value partitioning puts there.
    /// Exact.
    #[test]
    fn ranks_counted_are_the_values_selected() {
        let mut rng = SimRng::seed_from_u64(3);
        for round in 0..4000 {
            let len = rng.random_range(1..=32);
            let v: Vec<u32> = (0..len)
                .map(|_| if round % 2 == 0 { rng.random_range(0..4) } else { rng.random() })
                .collect();
            for k in 0..len {
                let mut sorted = v.clone();
                assert_eq!(kth_smallest(&v, k), *sorted.select_nth_unstable(k).1, "{v:?} {k}");
            }
        }
    }

    #[test]
    #[should_panic(expected = "rank 3 of 3 values")]
    fn a_rank_beyond_the_values_is_refused() {
        kth_smallest(&[1, 2, 3], 3);
    }
}

//! Order statistics of a few values, by counting ranks instead of partitioning.
//!
//! Prequal selects a quantile of the requests-in-flight of its pool (16 probes by default) per
//! pick. `select_nth_unstable` does that by partitioning, whose comparisons of random values the
//! branch predictor misses about half the time. Counting, for each candidate, the values below
//! it and at or below it is quadratic but has no branch that depends on the data except the one
//! that stops at the answer: on 16 values it is a few hundred compare-and-add steps the
//! processor runs in parallel. The answer is the same value.
//!
//! A rank near the top (Prequal's default quantile, 0.84, is the 3rd largest of 16) is found in
//! one pass instead ([`nth_largest`]): the [`TOP`] largest values seen so far are kept in order,
//! each new value passing down them by max and min, which the processor does without branches.

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

/// The deepest rank from the top [`nth_largest`] finds.
pub const TOP: usize = 4;

/// The `j`-th largest (from 1) of `values`, `1 <= j <= TOP`, in one pass: the value `x` with
/// fewer than `j` values above it and at least `j` at or above it, as [`kth_smallest`] finds it
/// at `k = len - j`. The largest `TOP` values so far are kept, largest first, starting from
/// zeros: a zero never rises above a value, so with at least `j` values the `j`-th is theirs.
///
/// # Panics
/// If `j` is 0 or above [`TOP`] (fewer than `j` values return 0).
#[inline]
pub fn nth_largest(values: impl IntoIterator<Item = u32>, j: usize) -> u32 {
    assert!((1..=TOP).contains(&j), "rank {j} from the top");
    let mut top = [0u32; TOP];
    for mut x in values {
        for t in &mut top {
            let higher = (*t).max(x);
            x = (*t).min(x);
            *t = higher;
        }
    }
    top[j - 1]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SimRng;
    use rand::{RngExt, SeedableRng};

    /// Every rank of many random arrays (1 to 32 values, half of them drawn from a few values so
    /// that ties are common, zeros included, half from the whole range) is the value
    /// partitioning puts there, counted ([`kth_smallest`]) and, for the top [`TOP`] ranks, in
    /// one pass ([`nth_largest`]). Exact.
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
                let at = *sorted.select_nth_unstable(k).1;
                assert_eq!(kth_smallest(&v, k), at, "{v:?} {k}");
                if len - k <= TOP {
                    assert_eq!(nth_largest(v.iter().copied(), len - k), at, "{v:?} {k}");
                }
            }
        }
    }

    #[test]
    #[should_panic(expected = "rank 3 of 3 values")]
    fn a_rank_beyond_the_values_is_refused() {
        kth_smallest(&[1, 2, 3], 3);
    }
}

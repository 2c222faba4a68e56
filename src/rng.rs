//! Seeded random streams, derived by a fixed hash from the run's parameters.
//!
//! A replication never draws from a generator shared with another one, and no stream depends on
//! thread identity or on the order in which work is executed: replication `k` of a scenario uses
//! streams hashed from (`--seed`, a label naming the stream's purpose, the scenario's parameters,
//! `k`). Two consequences are relied on and tested:
//!
//! - output is byte-identical whatever the number of threads, and a row does not change when other
//!   rows are added to the same command;
//! - *common random numbers*: the `workload` stream (arrival times and service demands) is keyed by
//!   the workload alone (farm, load, seed, replication), so every policy and every information
//!   model sees the same arrivals and demands; a policy's own coin flips come from a separate stream.
//!
//! The generator is PCG-64 MCG (`rand_pcg::Pcg64Mcg`): 128-bit state, fast, statistically strong.

use rand::RngExt;
use rand_pcg::Pcg64Mcg;

/// The generator used everywhere in lbsim.
pub type SimRng = Pcg64Mcg;

/// Builds a stream key word by word; [`StreamKey::rng`] turns it into a generator.
#[derive(Debug, Clone, Copy)]
pub struct StreamKey {
    a: u64,
    b: u64,
}

/// SplitMix64's finaliser: a bijective, well-mixing 64-bit function.
#[inline]
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl StreamKey {
    /// A key for the stream named `label` under base seed `seed`.
    pub fn new(seed: u64, label: &str) -> Self {
        StreamKey { a: mix(seed ^ 0x6c62_7369_6d00_0001), b: mix(seed.wrapping_add(0x9e37_79b9)) }
            .str(label)
    }

    /// Adds an integer.
    pub fn u64(self, x: u64) -> Self {
        StreamKey {
            a: mix(self.a ^ mix(x.wrapping_add(0x9e37_79b9_7f4a_7c15))),
            b: mix(self.b.wrapping_add(x).rotate_left(23) ^ 0xd1b5_4a32_d192_ed03),
        }
    }

    /// Adds a float by its bit pattern (so 0.9 and 0.90000001 are different streams).
    pub fn f64(self, x: f64) -> Self {
        self.u64(x.to_bits())
    }

    /// Adds a string (length-prefixed, so ("ab","c") and ("a","bc") differ).
    pub fn str(self, s: &str) -> Self {
        s.bytes().fold(self.u64(s.len() as u64), |k, byte| k.u64(u64::from(byte)))
    }

    /// Adds a list of floats (length-prefixed).
    pub fn f64s(self, xs: &[f64]) -> Self {
        xs.iter().fold(self.u64(xs.len() as u64), |k, &x| k.f64(x))
    }

    /// The generator for this key.
    pub fn rng(self) -> SimRng {
        Pcg64Mcg::new((u128::from(self.a) << 64) | u128::from(self.b))
    }
}

/// A uniform index in `0..n`.
///
/// For `n` up to 2^32, rand draws a `usize` range through its `u32` sampler; calling that sampler
/// directly gives the same numbers from the same draws, in a body small enough to be inlined.
#[inline]
pub(crate) fn uniform(rng: &mut SimRng, n: usize) -> usize {
    match u32::try_from(n) {
        Ok(m) => rng.random_range(0..m) as usize,
        Err(_) => rng.random_range(0..n),
    }
}

/// Two distinct uniform indices in `0..n` (`n >= 2`), in sampling order.
#[inline]
pub(crate) fn two_distinct(rng: &mut SimRng, n: usize) -> (usize, usize) {
    let a = uniform(rng, n);
    let mut b = uniform(rng, n - 1);
    if b >= a {
        b += 1;
    }
    (a, b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    #[test]
    fn same_key_same_stream_and_different_keys_differ() {
        let k = StreamKey::new(1, "workload").f64(0.9).u64(3);
        assert_eq!(k.rng().next_u64(), k.rng().next_u64());
        let others = [
            StreamKey::new(2, "workload").f64(0.9).u64(3),
            StreamKey::new(1, "policy").f64(0.9).u64(3),
            StreamKey::new(1, "workload").f64(0.95).u64(3),
            StreamKey::new(1, "workload").f64(0.9).u64(4),
            StreamKey::new(1, "workload").u64(3).f64(0.9),
        ];
        let first = k.rng().next_u64();
        for o in others {
            assert_ne!(o.rng().next_u64(), first);
        }
    }

    #[test]
    fn uniform_draws_what_random_range_draws() {
        let mut a = SimRng::seed_from_u64(21);
        let mut b = a.clone();
        for n in (1..200).chain([1000, 65_537, 1 << 31, u32::MAX as usize, 1 << 33]) {
            for _ in 0..50 {
                assert_eq!(uniform(&mut a, n), b.random_range(0..n), "n = {n}");
            }
        }
    }
}

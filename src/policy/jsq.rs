//! `jsq`: join the shortest queue among all servers, ties uniformly at random (Winston 1977).
//!
//! The minimum comes from the load table's sorted index, so a pick is `O(1)`, not a scan.

use super::Policy;
use crate::model::LoadTable;
use crate::rng::SimRng;
use crate::time::SimTime;

/// Join the shortest queue.
#[derive(Debug, Clone, Copy, Default)]
pub struct Jsq;

impl Policy for Jsq {
    const NEEDS_SHORTEST: bool = true;

    #[inline]
    fn pick(&mut self, loads: &LoadTable, _: SimTime, rng: &mut SimRng) -> usize {
        loads.shortest(rng)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{RngExt, SeedableRng};

    #[test]
    fn always_joins_a_minimum() {
        let mut rng = SimRng::seed_from_u64(9);
        let mut p = Jsq;
        for _ in 0..2000 {
            let vals: Vec<u32> = (0..12).map(|_| rng.random_range(0..4)).collect();
            let t = LoadTable::from_values(&vals, true);
            let i = p.pick(&t, SimTime::ZERO, &mut rng);
            assert_eq!(vals[i], *vals.iter().min().unwrap(), "{vals:?} -> {i}");
        }
    }
}

//! `rr`: round robin in server index order, starting at server 0 with the very first arrival.

use super::Policy;
use crate::model::LoadTable;
use crate::rng::SimRng;
use crate::time::SimTime;

/// Round robin.
#[derive(Debug, Clone)]
pub struct RoundRobin {
    n: usize,
    next: usize,
}

impl RoundRobin {
    /// Over `n` servers; the first pick is server 0.
    pub fn new(n: usize) -> Self {
        RoundRobin { n, next: 0 }
    }
}

impl Policy for RoundRobin {
    #[inline]
    fn pick(&mut self, _: &LoadTable, _: SimTime, _: &mut SimRng) -> usize {
        let i = self.next;
        self.next = if i + 1 == self.n { 0 } else { i + 1 };
        i
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn cycles_in_index_order_from_zero() {
        let mut p = RoundRobin::new(3);
        let t = LoadTable::new(3, false);
        let mut rng = SimRng::seed_from_u64(0);
        let picks: Vec<_> = (0..7).map(|_| p.pick(&t, SimTime::ZERO, &mut rng)).collect();
        assert_eq!(picks, [0, 1, 2, 0, 1, 2, 0]);
    }
}

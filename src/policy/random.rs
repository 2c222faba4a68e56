//! `random`: a uniformly random server, reading no load at all.

use super::{Policy, uniform};
use crate::engine::SimTime;
use crate::model::LoadTable;
use crate::rng::SimRng;

/// Uniform random choice.
#[derive(Debug, Clone)]
pub struct Random {
    n: usize,
}

impl Random {
    /// Over `n` servers.
    pub fn new(n: usize) -> Self {
        Random { n }
    }
}

impl Policy for Random {
    #[inline]
    fn pick(&mut self, _: &LoadTable, _: SimTime, rng: &mut SimRng) -> usize {
        uniform(rng, self.n)
    }
}

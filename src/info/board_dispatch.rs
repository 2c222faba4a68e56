//! The bulletin board with update-on-dispatch: Mitzenmacher's periodic board (PODC 1997; IEEE
//! TPDS 11(1), 2000), where the dispatcher also counts its own dispatches since the last post.
//! Departures still show only at the next post, so the view over-estimates the load between posts.

use super::InfoModel;
use crate::model::LoadTable;

/// A board posted every `period` time units, to which each dispatch adds one at once.
#[derive(Debug, Clone)]
pub struct BoardWithDispatch {
    table: LoadTable,
    period: f64,
}

impl BoardWithDispatch {
    /// `n` servers posted empty, reposted every `period` (> 0); `sorted` keeps the index
    /// [`LoadTable::shortest`] needs.
    pub fn new(n: usize, sorted: bool, period: f64) -> BoardWithDispatch {
        BoardWithDispatch { table: LoadTable::new(n, sorted), period }
    }
}

impl InfoModel for BoardWithDispatch {
    #[inline(always)]
    fn view(&self) -> &LoadTable {
        &self.table
    }

    #[inline(always)]
    fn on_dispatch(&mut self, server: usize) {
        self.table.inc(server);
    }

    #[inline(always)]
    fn on_departure(&mut self, _server: usize) {}

    #[inline(always)]
    fn post_period(&self) -> Option<f64> {
        Some(self.period)
    }

    fn on_post(&mut self, true_lengths: impl Iterator<Item = u32>) {
        self.table.set_all(true_lengths);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn view_counts_dispatches_but_not_departures_until_a_post() {
        let mut m = BoardWithDispatch::new(3, true, 0.5);
        assert_eq!(m.post_period(), Some(0.5));
        m.on_dispatch(1);
        m.on_dispatch(1);
        assert_eq!(m.view().values(), [0, 2, 0]);
        m.on_departure(1);
        assert_eq!(m.view().values(), [0, 2, 0]);
        m.on_post([0, 1, 0].into_iter());
        assert_eq!(m.view().values(), [0, 1, 0]);
        m.on_dispatch(0);
        assert_eq!(m.view().values(), [1, 1, 0]);
        let mut rng = <crate::rng::SimRng as rand::SeedableRng>::seed_from_u64(1);
        assert_eq!(m.view().shortest(&mut rng), 2);
    }
}

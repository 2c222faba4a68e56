//! The periodic bulletin board of Mitzenmacher, *How Useful Is Old Information?* (PODC 1997;
//! IEEE TPDS 11(1), 2000): every `T` time units the true queue lengths are posted, and policies
//! read only the last post. With update-on-dispatch ([`BoardWithDispatch`]) the dispatcher also
//! counts its own dispatches since the last post at once, as a balancer's in-flight counter does;
//! departures still show only at the next post, so that view over-estimates the load between
//! posts.

use super::InfoModel;
use crate::model::LoadTable;

/// A board posted every `period` time units. Departures do not show until the next post;
/// dispatches do not either, unless `DISPATCH` (update-on-dispatch) is set.
#[derive(Debug, Clone)]
pub struct Board<const DISPATCH: bool = false> {
    table: LoadTable,
    period: f64,
}

/// The board with update-on-dispatch: each dispatch adds one to the chosen server's entry at once.
pub type BoardWithDispatch = Board<true>;

impl<const DISPATCH: bool> Board<DISPATCH> {
    /// `n` servers posted empty, reposted every `period` (> 0); `sorted` keeps the index
    /// [`LoadTable::shortest`] needs.
    pub fn new(n: usize, sorted: bool, period: f64) -> Self {
        Board { table: LoadTable::new(n, sorted), period }
    }
}

impl<const DISPATCH: bool> InfoModel for Board<DISPATCH> {
    #[inline(always)]
    fn view(&self) -> &LoadTable {
        &self.table
    }

    #[inline(always)]
    fn on_dispatch(&mut self, server: usize) {
        if DISPATCH {
            self.table.inc(server);
        }
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
    fn a_board_moves_only_at_posts() {
        let mut m: Board = Board::new(3, true, 2.5);
        assert_eq!(m.post_period(), Some(2.5));
        m.on_dispatch(1);
        m.on_dispatch(2);
        assert_eq!(m.view().values(), [0, 0, 0]);
        m.on_post([0, 1, 1].into_iter());
        assert_eq!(m.view().values(), [0, 1, 1]);
        m.on_departure(1);
        m.on_dispatch(0);
        assert_eq!(m.view().values(), [0, 1, 1], "until the next post");
    }

    #[test]
    fn update_on_dispatch_counts_dispatches_but_not_departures_until_a_post() {
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

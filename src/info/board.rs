//! The periodic bulletin board of Mitzenmacher, *How Useful Is Old Information?* (PODC 1997;
//! IEEE TPDS 11(1), 2000): every `T` time units the true queue lengths are posted, and policies
//! read only the last post.

use super::InfoModel;
use crate::model::LoadTable;

/// A board posted every `period` time units; dispatches and departures do not show until the next
/// post.
#[derive(Debug, Clone)]
pub struct Board {
    table: LoadTable,
    period: f64,
}

impl Board {
    /// `n` servers posted empty, reposted every `period` (> 0); `sorted` keeps the index
    /// [`LoadTable::shortest`] needs.
    pub fn new(n: usize, sorted: bool, period: f64) -> Board {
        Board { table: LoadTable::new(n, sorted), period }
    }
}

impl InfoModel for Board {
    #[inline(always)]
    fn view(&self) -> &LoadTable {
        &self.table
    }

    #[inline(always)]
    fn on_dispatch(&mut self, _server: usize) {}

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
    fn view_moves_only_at_posts() {
        let mut m = Board::new(3, true, 2.5);
        assert_eq!(m.post_period(), Some(2.5));
        m.on_dispatch(1);
        m.on_dispatch(2);
        assert_eq!(m.view().values(), [0, 0, 0]);
        m.on_post([0, 1, 1].into_iter());
        assert_eq!(m.view().values(), [0, 1, 1]);
        m.on_departure(1);
        m.on_dispatch(0);
        assert_eq!(m.view().values(), [0, 1, 1]);
        m.on_post([1, 0, 1].into_iter());
        assert_eq!(m.view().values(), [1, 0, 1]);
    }
}

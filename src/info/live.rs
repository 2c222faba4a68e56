//! Live information: the table always holds the true queue lengths.

use super::InfoModel;
use crate::model::LoadTable;

/// True queue lengths at every instant: each dispatch adds one, each departure removes one.
#[derive(Debug, Clone)]
pub struct Live {
    table: LoadTable,
}

impl Live {
    /// `n` empty servers; `sorted` keeps the index [`LoadTable::shortest`] needs.
    pub fn new(n: usize, sorted: bool) -> Live {
        Live { table: LoadTable::new(n, sorted) }
    }
}

impl InfoModel for Live {
    const LIVE: bool = true;

    #[inline(always)]
    fn view(&self) -> &LoadTable {
        &self.table
    }

    #[inline(always)]
    fn on_dispatch(&mut self, server: usize) {
        self.table.inc(server);
    }

    #[inline(always)]
    fn on_departure(&mut self, server: usize) {
        self.table.dec(server);
    }

    #[inline(always)]
    fn post_period(&self) -> Option<f64> {
        None
    }

    /// Nothing to do: the table already holds the true lengths (and no posts are scheduled).
    #[inline(always)]
    fn on_post(&mut self, _true_lengths: impl Iterator<Item = u32>) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn view_follows_every_dispatch_and_departure() {
        let mut m = Live::new(3, true);
        assert_eq!(m.post_period(), None);
        m.on_dispatch(1);
        m.on_dispatch(1);
        m.on_dispatch(2);
        assert_eq!(m.view().values(), [0, 2, 1]);
        m.on_departure(1);
        assert_eq!(m.view().values(), [0, 1, 1]);
        m.on_post([0, 1, 1].into_iter());
        assert_eq!(m.view().values(), [0, 1, 1]);
    }
}

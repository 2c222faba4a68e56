//! What a balancer compares: one metric per server, lower preferred.
//!
//! After tower's `Load` (`tower/src/load/mod.rs`: `trait Load { type Metric: PartialOrd; fn
//! load(&self) -> Self::Metric; }`, "lesser values should be preferred"). The balancer written
//! once over it, [`P2c`](super::P2c), only compares two metrics, so it never knows which
//! estimator it is using:
//!
//! - [`Requests`]: the requests at a server as the load table shows them (the live queue length,
//!   the board's posted value, or the client's own requests in flight with local information):
//!   `pNc`, `p2c-repl` and `least-request`'s `N_CHOICES`;
//! - [`PeakEwma`](super::PeakEwma): tower's Peak-EWMA cost `rtt * (pending + 1)` (`p2c-pewma`);
//! - [`EwmaLatency`](super::EwmaLatency): an EWMA of response times (`least-latency`).
//!
//! Unlike tower's, `load` takes `&mut self`: reading a Peak-EWMA cost decays the estimate (tower
//! keeps it behind a mutex), so a pick reads the servers it draws in the order it draws them.

use crate::model::LoadTable;
use crate::time::SimTime;

/// A comparable load per server; lower values are preferred.
pub trait Load {
    /// The metric (only `PartialOrd`: costs are floats).
    type Metric: PartialOrd;

    /// Server `server`'s load at `now`, given the table the information model fills. Reading may
    /// update the estimator (a Peak-EWMA estimate decays when read).
    fn load(&mut self, server: usize, loads: &LoadTable, now: SimTime) -> Self::Metric;

    /// Asks for what [`Self::load`] reads of `server`'s own state (beside the table) to be
    /// brought into the cache: a hint ([`crate::cache::prefetch`]), for a pick to come. The
    /// default has no state per server to fetch.
    #[inline(always)]
    fn prefetch(&self, _server: usize) {}
}

/// A number of requests (tower's `Count`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Count(pub u32);

/// A cost or a time (tower's `Cost`).
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd)]
pub struct Cost(pub f64);

/// The requests at a server as the load table shows them (tower's `PendingRequests`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Requests;

impl Load for Requests {
    type Metric = Count;

    #[inline(always)]
    fn load(&mut self, server: usize, loads: &LoadTable, _: SimTime) -> Count {
        Count(loads.get(server))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_read_the_table_and_fewer_is_lower() {
        let t = LoadTable::from_values(&[4, 0, 7], false);
        let got: Vec<Count> = (0..3).map(|s| Requests.load(s, &t, SimTime::ZERO)).collect();
        assert_eq!(got, [Count(4), Count(0), Count(7)]);
        assert!(Count(0) < Count(4) && Cost(0.5) < Cost(1.0));
    }
}

//! `ring-hash` and `maglev`: consistent hashing of request keys, as Envoy's `RING_HASH` and
//! `MAGLEV` balancers, with HAProxy's bounded loads on the ring.
//!
//! Each request carries a key (`[keys]` in a scenario: [`crate::workload::keys`]), hashed with
//! [`key_hash`] (xxHash64, as Envoy hashes request keys). The placement structures are those of
//! [`crate::hashing`]:
//!
//! - `ring-hash` (`vnodes`, default 100): the first server point clockwise from the key's hash
//!   ([`Ring::lookup`], Envoy's `ring_hash_lb.cc`). With `balance = F` (HAProxy's
//!   `hash-balance-factor`, `F = percentage / 100`, off by default), HAProxy's bounded-load walk
//!   (`src/lb_chash.c`, `chash_get_server_hash`): from the key's point, go clockwise past every
//!   server that is not eligible, where a server with `load` requests in flight is eligible while
//!   `load` is below its share (by weight) of `ceil((in flight + 1) * F)`
//!   ([`bounded_load_eligible`]); the loads are what the client sees.
//! - `maglev` (`table`, a prime, default 65537): the lookup table of Eisenbud et al. (NSDI 2016,
//!   §3.4), entry `key_hash % table` ([`Maglev::lookup`], Envoy's `maglev_lb.cc`).
//!
//! Every client of a fleet builds the same ring or table over the same servers (as proxies fed
//! the same host list do): the placement seed is the replication's, not the client's. Server
//! weights are the rates (used by the bounded-load shares; Envoy's ring and Maglev scale points
//! by weight, which lbsim does not: every server gets `vnodes` points and an equal turn).
//!
//! With some hosts excluded ([`Policy::set_hosts`]) both place keys over the allowed hosts, as
//! Envoy builds the ring or the table from the hosts to use on every host set change
//! (`ThreadAwareLoadBalancerBase::refresh` creates a new `RingHashLoadBalancer::Ring` or
//! `MaglevTable` over the healthy hosts, or all hosts in panic):
//!
//! - `ring-hash`: a ring of the allowed hosts' points. A point's position depends only on its
//!   server and index, so that ring is this one without the excluded servers' points, and a
//!   lookup goes clockwise past them ([`Ring::lookup_bounded`] with the allowed hosts eligible):
//!   exactly the keys of the excluded servers move, each to the next allowed server clockwise.
//!   With `balance`, the bounded loads are shares of the allowed hosts' requests and weights.
//! - `maglev`: a new table over the allowed hosts ([`Maglev::with_hosts`]), each with the
//!   permutation it always has; the excluded servers' entries move, and a few others do (Maglev
//!   trades that for its balance: Eisenbud et al., §3.4, "minimal disruption" is a goal it
//!   meets only approximately).

use super::tuning::{count, number_where, params, text};
use super::{Hosts, Policy};
use crate::hashing::{Maglev, Ring, bounded_load_eligible, key_hash};
use crate::model::LoadTable;
use crate::rng::SimRng;
use crate::time::SimTime;
use crate::workload::SharedKeys;

params! {
    /// The parameters of `ring-hash`.
    pub struct RingHashParams {
        /// Points per server (default 100).
        #[serde(deserialize_with = "count")]
        pub vnodes: u32,
        /// Bounded-load factor (HAProxy's `hash-balance-factor` / 100); `None`: off.
        #[serde(deserialize_with = "balance")]
        pub balance: Option<f64>,
    }
}

impl Default for RingHashParams {
    fn default() -> Self {
        RingHashParams { vnodes: 100, balance: None }
    }
}

/// `balance`: a factor above 1, at most 100.
fn balance<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    let what = "a factor > 1 (1.25 = 25% above the mean)";
    number_where(d, |b| b > 1.0 && b <= 100.0, what).map(Some)
}

params! {
    /// The parameters of `maglev`.
    pub struct MaglevParams {
        /// Lookup table size, a prime (default 65537).
        #[serde(deserialize_with = "table")]
        pub table: u32,
    }
}

impl Default for MaglevParams {
    fn default() -> Self {
        MaglevParams { table: 65_537 }
    }
}

/// `table`: a prime from 3 to 10000019.
fn table<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
    let t = text(d)?.parse::<u32>().ok().filter(|&t| (3..=10_000_019).contains(&t));
    let message = "must be a prime from 3 to 10000019 (65537 by default)";
    t.filter(|&t| is_prime(t)).ok_or_else(|| serde::de::Error::custom(message))
}

fn is_prime(n: u32) -> bool {
    n >= 2 && (2..).take_while(|d| d * d <= n).all(|d| !n.is_multiple_of(d))
}

/// The next request's key, hashed (key 0 without a key source).
fn next_hash(keys: &Option<SharedKeys>) -> u64 {
    key_hash(keys.as_ref().map_or(0, |k| k.borrow_mut().next_key()))
}

/// The next request's key is `key` ([`Policy::use_key`]).
fn use_key(keys: &Option<SharedKeys>, key: u64) {
    if let Some(k) = keys {
        k.borrow_mut().set_next(key);
    }
}

/// Ring hash, optionally with bounded loads (see the module documentation).
#[derive(Debug, Clone)]
pub struct RingHash {
    ring: Ring,
    balance: Option<f64>,
    weights: Vec<f64>,
    total_weight: f64,
    keys: Option<SharedKeys>,
    hosts: Hosts,
}

impl RingHash {
    /// A ring over servers of rates `rates` with `vnodes` points each, placed by `seed`.
    pub fn new(
        rates: &[f64],
        vnodes: usize,
        balance: Option<f64>,
        seed: u64,
        keys: Option<SharedKeys>,
    ) -> Self {
        RingHash {
            ring: Ring::new(rates.len(), vnodes, seed),
            balance,
            weights: rates.to_vec(),
            total_weight: rates.iter().sum(),
            keys,
            hosts: Hosts::all(),
        }
    }

    /// The server for a key hash under `loads`.
    pub(super) fn place(&self, h: u64, loads: &LoadTable) -> usize {
        if !self.hosts.is_all() {
            return self.place_among(h, loads);
        }
        match self.balance {
            None => self.ring.lookup(h),
            Some(f) => {
                let total: u64 = loads.values().iter().map(|&v| u64::from(v)).sum();
                self.ring.lookup_bounded(h, |s| {
                    bounded_load_eligible(
                        f,
                        loads.get(s),
                        total,
                        self.weights[s],
                        self.total_weight,
                    )
                })
            }
        }
    }
}

impl RingHash {
    /// [`Self::place`] on the ring of the allowed hosts.
    fn place_among(&self, h: u64, loads: &LoadTable) -> usize {
        let hosts = &self.hosts;
        let allowed = |s: usize| hosts.contains(s);
        let Some(f) = self.balance else {
            return self.ring.lookup_bounded(h, allowed);
        };
        let n = self.weights.len();
        let total: u64 = hosts.iter(n).map(|s| u64::from(loads.get(s))).sum();
        let total_weight: f64 = hosts.iter(n).map(|s| self.weights[s]).sum();
        let s = self.ring.lookup_bounded(h, |s| {
            allowed(s)
                && bounded_load_eligible(f, loads.get(s), total, self.weights[s], total_weight)
        });
        if allowed(s) { s } else { self.ring.lookup_bounded(h, allowed) }
    }
}

impl Policy for RingHash {
    #[inline]
    fn pick(&mut self, loads: &LoadTable, _: SimTime, _: &mut SimRng) -> usize {
        let h = next_hash(&self.keys);
        self.place(h, loads)
    }

    fn use_key(&mut self, key: u64) {
        use_key(&self.keys, key);
    }

    fn set_hosts(&mut self, _client: u32, hosts: Option<&[u32]>) {
        self.hosts.set(hosts);
    }
}

/// Maglev hashing (see the module documentation).
#[derive(Debug, Clone)]
pub struct MaglevHash {
    table: Maglev,
    keys: Option<SharedKeys>,
    /// The table over the allowed hosts, when some are excluded.
    pub(super) among: Option<Maglev>,
    /// The table size and seed (to rebuild it).
    size: usize,
    seed: u64,
}

impl MaglevHash {
    /// A table of `size` entries over `n` servers, populated by `seed`.
    pub fn new(n: usize, size: usize, seed: u64, keys: Option<SharedKeys>) -> Self {
        MaglevHash { table: Maglev::new(n, size, seed), keys, among: None, size, seed }
    }
}

impl Policy for MaglevHash {
    #[inline]
    fn pick(&mut self, _: &LoadTable, _: SimTime, _: &mut SimRng) -> usize {
        let h = next_hash(&self.keys);
        match &self.among {
            None => self.table.lookup(h),
            Some(t) => t.lookup(h),
        }
    }

    fn use_key(&mut self, key: u64) {
        use_key(&self.keys, key);
    }

    fn set_hosts(&mut self, _client: u32, hosts: Option<&[u32]>) {
        let mut allowed = Hosts::all();
        allowed.set(hosts);
        self.among = allowed.allowed().map(|h| Maglev::with_hosts(h, self.size, self.seed));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::Count;
    use crate::workload::KeySpec;
    use rand::SeedableRng;
    use std::cell::RefCell;
    use std::rc::Rc;

    fn keys(count: u64, seed: u64) -> SharedKeys {
        let spec = KeySpec { count: Count(count), ..KeySpec::default() };
        Rc::new(RefCell::new(spec.source(SimRng::seed_from_u64(seed))))
    }

    #[test]
    fn a_key_always_goes_to_the_server_its_hash_names() {
        // Without bounds the load does not matter: each request goes where the ring puts its key.
        let mut p = RingHash::new(&[1.0; 10], 50, None, 7, Some(keys(100, 1)));
        let probe = keys(100, 1);
        let ring = Ring::new(10, 50, 7);
        let busy = LoadTable::from_values(&[9; 10], false);
        let mut rng = SimRng::seed_from_u64(0);
        for _ in 0..1000 {
            let k = probe.borrow_mut().next_key();
            assert_eq!(p.pick(&busy, SimTime::ZERO, &mut rng), ring.lookup(key_hash(k)));
        }
    }

    #[test]
    fn bounded_loads_skip_full_servers_clockwise() {
        // Factor 1.25, 10 servers of weight 1, 20 requests in flight: ceil(21 * 1.25) = 27 slots,
        // ceil(2.7) = 3 each. The key's own server holds 3: full, so the key goes to the next
        // eligible server clockwise on the ring.
        let p = RingHash::new(&[1.0; 10], 20, Some(1.25), 3, None);
        let h = key_hash(42);
        let own = p.ring.lookup(h);
        let mut vals = [2u32; 10];
        vals[own] = 3;
        vals[(own + 1) % 10] = 1; // keep the total at 20
        vals[(own + 2) % 10] = 1;
        vals[(own + 3) % 10] = 3;
        assert_eq!(vals.iter().sum::<u32>(), 20);
        let loads = LoadTable::from_values(&vals, false);
        let want = p.ring.lookup_bounded(h, |s| vals[s] < 3);
        assert_ne!(want, own);
        assert_eq!(p.place(h, &loads), want);
        // Below the cap, the key's own server.
        let light = LoadTable::from_values(&[2; 10], false);
        assert_eq!(p.place(h, &light), own);
    }

    #[test]
    fn maglev_follows_its_table() {
        let mut p = MaglevHash::new(7, 251, 5, Some(keys(1000, 2)));
        let probe = keys(1000, 2);
        let table = Maglev::new(7, 251, 5);
        let t = LoadTable::new(7, false);
        let mut rng = SimRng::seed_from_u64(0);
        for _ in 0..500 {
            let k = probe.borrow_mut().next_key();
            assert_eq!(p.pick(&t, SimTime::ZERO, &mut rng), table.lookup(key_hash(k)));
        }
    }
}

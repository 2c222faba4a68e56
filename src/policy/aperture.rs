//! `aperture`: Finagle's deterministic aperture with P2C inside the slice.
//!
//! Follows `finagle-core/src/main/scala/com/twitter/finagle/loadbalancer/aperture/`
//! (twitter/finagle): `DeterministicAperture.scala`, `Ring.scala` and `WeightedP2CPick.scala`.
//!
//! - **Ring.** Servers `0..n` sit on a ring of circumference 1, server `i` on `[i/n, (i+1)/n)`;
//!   client `c` of `K` on `[c/K, (c+1)/K)` (`ProcessCoordinate`: `offset = c / K`, `unitWidth =
//!   1/K`).
//! - **Width.** The logical aperture is `min(min_aperture, n)` (`min`, with Finagle's
//!   `MinDeterministicAperture` = 12; deterministic aperture does not grow it with load).
//!   `dApertureWidth` turns it into a slice of the ring that is a whole number of client units:
//!   `width = min(1, ceil(aperture * (1/n) / (1/K)) / K)`, so the slices of all clients cover the
//!   ring evenly, and a client's slice holds at least `aperture` servers and at least its share
//!   `n/K`. A server only partly inside the slice takes part with `weight` = the fraction of its
//!   range inside (`Ring.weight`).
//! - **Pick.** `Ring.pick`: `a = index(offset + u * width)` for a uniform `u`; `tryPickSecond`:
//!   `b` is drawn from the slice with `a`'s range taken out, uniformly over the remaining length
//!   (`pos = offset + u * (width - overlap)`, shifted past `a`'s range). Then `WeightedP2CPick`:
//!   if the two weights are equal within 1e-4, `a` unless `b`'s load is strictly lower (ties to
//!   `a`); otherwise compare `load / weight`, ties to `a`. The comparison is every P2C's,
//!   [`lower`]; the pick is not a [`P2c`](super::P2c) over a [`Load`](super::Load), because its
//!   draws are positions on the ring and what it compares depends on both candidates' weights.
//!
//! The load is Finagle's least-loaded metric, requests outstanding: the client's own in flight
//! with local information, the true queue length otherwise. Server weights (rates) are not
//! used: Finagle's `WeightedAperture` is a separate balancer.
//!
//! With some hosts excluded ([`Policy::set_hosts`]) the ring is rebuilt over the allowed hosts,
//! in server order, as Finagle's balancer rebuilds its distributor over the endpoints it is
//! given when the set changes (`Balancer.update` then `rebuild`, a new `DeterministicAperture`
//! over the new vector): the client's slice, the aperture and the weights are those of a ring of
//! the allowed hosts. (Finagle also keeps a node that is not `Open` in the ring and retries the
//! pick; here an excluded host is simply not on the ring.)

use super::p2c::lower;
use super::tuning::{count, params};
use super::{Hosts, Policy};
use crate::model::LoadTable;
use crate::rng::SimRng;
use crate::time::SimTime;
use rand::RngExt;

/// Ranges closer than this are not told apart (`Ring.epsilon`).
const EPSILON: f64 = 1e-6;

/// The length of the intersection of `[b0, e0)` and `[b1, e1)`.
fn intersect(b0: f64, e0: f64, b1: f64, e1: f64) -> f64 {
    (e0.min(e1) - b0.max(b1)).max(0.0)
}

params! {
    /// The parameters of `aperture`.
    pub struct ApertureParams {
        /// The smallest aperture (Finagle's default 12).
        #[serde(deserialize_with = "count")]
        pub min_aperture: u32,
    }
}

impl Default for ApertureParams {
    fn default() -> Self {
        ApertureParams { min_aperture: 12 }
    }
}

/// One client's slice of the ring (see the module documentation).
#[derive(Debug, Clone)]
pub struct Aperture {
    /// Servers on the ring (the allowed ones).
    n: usize,
    unit: f64,
    offset: f64,
    width: f64,
    /// Every server, this client, the clients and the smallest aperture (to rebuild the ring).
    shape: (usize, usize, usize, usize),
    hosts: Hosts,
}

impl Aperture {
    /// Client `client` of `clients`, over `n` servers, with the smallest aperture `min_aperture`.
    pub fn new(n: usize, client: usize, clients: usize, min_aperture: usize) -> Self {
        let aperture = min_aperture.min(n);
        let local_unit = 1.0 / clients as f64;
        let unit = 1.0 / n as f64;
        let units = (aperture as f64 * unit / local_unit).ceil();
        let width = (units * local_unit).min(1.0);
        let offset = client as f64 * local_unit;
        let shape = (n, client, clients, min_aperture);
        Aperture { n, unit, offset, width, shape, hosts: Hosts::all() }
    }

    /// `Ring.index`: the server at ring position `pos` in `[0, 1)`.
    fn index(&self, pos: f64) -> usize {
        ((pos * self.n as f64).floor() as usize) % self.n
    }

    /// The start of server `i`'s range, moved past 1 when the slice wraps around to it.
    fn start(&self, i: usize) -> f64 {
        let b = i as f64 * self.unit;
        if b + 1.0 < self.offset + self.width { b + 1.0 } else { b }
    }

    /// `Ring.weight`: the fraction of the range of the ring's server `i` (the `i`-th allowed
    /// host) inside the slice.
    pub fn weight(&self, i: usize) -> f64 {
        let b = self.start(i);
        intersect(b, b + self.unit, self.offset, self.offset + self.width) / self.unit
    }

    /// `Ring.range`: how many servers the slice touches.
    pub fn servers(&self) -> usize {
        if 1.0 - self.width <= EPSILON {
            return self.n;
        }
        let first = self.index(self.offset);
        let last = self.index(((self.offset + self.width) * (1.0 - EPSILON)) % 1.0);
        let diff = last as isize - first as isize + 1;
        if diff < 0 { (diff + self.n as isize) as usize } else { diff as usize }
    }

    /// `Ring.pick`.
    fn pick_one(&self, rng: &mut SimRng) -> usize {
        let u: f64 = rng.random();
        self.index((self.offset + u * self.width) % 1.0)
    }

    /// `Ring.tryPickSecond`.
    fn pick_second(&self, a: usize, rng: &mut SimRng) -> usize {
        let ab = self.start(a);
        let ae = ab + self.unit;
        let overlap = intersect(ab, ae, self.offset, self.offset + self.width);
        let rest = self.width - overlap;
        if rest <= EPSILON {
            return a;
        }
        let u: f64 = rng.random();
        let mut pos = self.offset + u * rest;
        if pos >= ae - overlap {
            pos += overlap;
        }
        self.index(pos % 1.0)
    }
}

impl Policy for Aperture {
    #[inline]
    fn pick(&mut self, loads: &LoadTable, _: SimTime, rng: &mut SimRng) -> usize {
        let a = self.pick_one(rng);
        let b = self.pick_second(a, rng);
        let (sa, sb) = (self.hosts.at(a), self.hosts.at(b));
        let (la, lb) = (f64::from(loads.get(sa)), f64::from(loads.get(sb)));
        let aw = Some(self.weight(a)).filter(|&w| w != 0.0).unwrap_or(1.0);
        let bw = Some(self.weight(b)).filter(|&w| w != 0.0).unwrap_or(1.0);
        // `WeightedP2CPick`: the loads if the weights are (nearly) equal, else load per weight.
        let (ma, mb) = if (aw - bw).abs() < 0.0001 { (la, lb) } else { (la / aw, lb / bw) };
        lower((sa, ma), (sb, mb)).0
    }

    fn set_hosts(&mut self, _client: u32, hosts: Option<&[u32]>) {
        let (n, client, clients, min_aperture) = self.shape;
        self.hosts.set(hosts);
        let ring = Aperture::new(self.hosts.count(n), client, clients, min_aperture);
        *self = Aperture { shape: self.shape, hosts: std::mem::take(&mut self.hosts), ..ring };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn width_covers_whole_client_units_and_at_least_the_aperture() {
        // 100 servers, 100 clients: 12 servers' worth is 12 client units.
        let a = Aperture::new(100, 0, 100, 12);
        assert!((a.width - 0.12).abs() < 1e-12);
        assert_eq!(a.servers(), 12);
        // 100 servers, 4 clients: ceil(0.12 / 0.25) = 1 unit: a quarter of the ring, 25 servers.
        let a = Aperture::new(100, 1, 4, 12);
        assert!((a.width - 0.25).abs() < 1e-12 && (a.offset - 0.25).abs() < 1e-12);
        assert_eq!(a.servers(), 25);
        // One client: the whole ring.
        assert_eq!(Aperture::new(100, 0, 1, 12).servers(), 100);
        // Fewer servers than the minimum: all of them.
        assert_eq!(Aperture::new(5, 2, 3, 12).servers(), 5);
    }

    #[test]
    fn partly_covered_servers_take_part_by_their_overlap() {
        // 10 servers, 3 clients, aperture 2: width = ceil(0.2 / (1/3)) / 3 = 1/3. Client 1 covers
        // [1/3, 2/3): servers 3 (from 0.333 to 0.4: 2/3 of it), 4, 5, and 6 (0.6 to 0.667: 2/3).
        let a = Aperture::new(10, 1, 3, 2);
        assert_eq!(a.servers(), 4);
        assert!((a.weight(3) - 2.0 / 3.0).abs() < 1e-9);
        assert!((a.weight(4) - 1.0).abs() < 1e-9 && (a.weight(5) - 1.0).abs() < 1e-9);
        assert!((a.weight(6) - 2.0 / 3.0).abs() < 1e-9);
        assert_eq!(a.weight(7), 0.0);
        // Picks stay in the slice, in proportion to the overlap: 60 000 first picks over a slice
        // of length 1/3: servers 4 and 5 get 0.3 of them each (sd of a count 112; 5 sd = 561).
        let mut rng = SimRng::seed_from_u64(4);
        let mut counts = [0u32; 10];
        for _ in 0..60_000 {
            counts[a.pick_one(&mut rng)] += 1;
        }
        assert_eq!(counts.iter().sum::<u32>(), counts[3..=6].iter().sum::<u32>());
        for s in [4, 5] {
            assert!((f64::from(counts[s]) - 18_000.0).abs() < 561.0, "{counts:?}");
        }
    }

    #[test]
    fn the_second_pick_differs_from_the_first_and_the_less_loaded_wins() {
        let mut a = Aperture::new(100, 7, 100, 12);
        let mut rng = SimRng::seed_from_u64(1);
        for _ in 0..10_000 {
            let x = a.pick_one(&mut rng);
            let y = a.pick_second(x, &mut rng);
            assert_ne!(x, y);
            assert!(a.weight(x) > 0.0 && a.weight(y) > 0.0);
        }
        // All idle but one: the busy server is never picked when another is drawn with it.
        let mut vals = vec![0u32; 100];
        vals[8] = 5;
        let loads = LoadTable::from_values(&vals, false);
        assert!((0..10_000).all(|_| a.pick(&loads, SimTime::ZERO, &mut rng) != 8));
    }

    #[test]
    fn deterministic_slices_spread_clients_evenly() {
        // 100 servers, 50 clients: each slice is ceil(0.12 / 0.02) = 6 client units, 0.12 of the
        // ring (12 servers); every point of the ring lies in 50 * 0.12 = 6 slices, so every
        // server is covered by the same total weight, 6.
        let clients: Vec<Aperture> = (0..50).map(|c| Aperture::new(100, c, 50, 12)).collect();
        for s in 0..100 {
            let total: f64 = clients.iter().map(|a| a.weight(s)).sum();
            assert!((total - 6.0).abs() < 1e-6, "server {s}: {total}");
        }
    }
}

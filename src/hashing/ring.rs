//! The hash ring with virtual nodes (Karger et al., *Consistent Hashing and Random Trees*, STOC
//! 1997), as Envoy builds and searches it, with HAProxy's bounded-load walk.

use super::hash_words;

/// One point of the ring: its position and its server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Point {
    hash: u64,
    server: u32,
    vnode: u32,
}

/// A hash ring: `servers` servers with `vnodes` points each on the 64-bit circle.
///
/// Following Envoy (`ring_hash_lb.cc`, `RingHashLoadBalancer::Ring::Ring`): each point is the
/// xxHash64 (seed 0) of a name made of the server and the point's index (Envoy hashes the string
/// `"<host address>_<i>"`; lbsim hashes the words (placement seed, server, vnode)), and the points
/// are sorted by hash. Differences: Envoy sizes the ring from `minimum_ring_size` (1024) and
/// scales it by weight; here every server has exactly `vnodes` points (`hash` compares by
/// `vnodes`, weights are equal). Envoy's `std::sort` leaves equal hashes in any order; here ties
/// (never seen in practice: 64-bit hashes) go to the lower (server, vnode), so the ring is a
/// pure function of its arguments.
#[derive(Debug, Clone)]
pub struct Ring {
    points: Vec<Point>,
    servers: usize,
}

impl Ring {
    /// `servers` servers with `vnodes` points each; point positions depend only on (seed, server,
    /// vnode), so a ring of n+1 servers built with the same seed keeps every point of the ring of
    /// n (and a ring with more vnodes keeps every point of one with fewer).
    ///
    /// Panics when `servers` or `vnodes` is 0, or either exceeds `u32::MAX`.
    pub fn new(servers: usize, vnodes: usize, seed: u64) -> Ring {
        assert!(servers > 0 && vnodes > 0, "a ring needs servers and points");
        let (s, v) = (u32::try_from(servers).unwrap(), u32::try_from(vnodes).unwrap());
        let mut points: Vec<Point> = (0..s)
            .flat_map(|server| {
                (0..v).map(move |vnode| Point {
                    hash: point_hash(seed, server, vnode),
                    server,
                    vnode,
                })
            })
            .collect();
        points.sort_unstable();
        Ring { points, servers }
    }

    /// Servers on the ring.
    pub fn servers(&self) -> usize {
        self.servers
    }

    /// Points on the ring (servers x vnodes).
    pub fn len(&self) -> usize {
        self.points.len()
    }

    /// Never: a ring has at least one point.
    pub fn is_empty(&self) -> bool {
        self.points.is_empty()
    }

    /// The index of the first point clockwise from `key_hash`: the first whose hash is `>=` it,
    /// wrapping to the first point past the largest (Envoy's `Ring::chooseHost`, ported from
    /// ketama: `h <= midval && h > midval1`, and index 0 past the end).
    #[inline]
    fn first_point(&self, key_hash: u64) -> usize {
        let i = self.points.partition_point(|p| p.hash < key_hash);
        if i == self.points.len() { 0 } else { i }
    }

    /// The server of the first point clockwise from `key_hash` (wrapping around).
    #[inline]
    pub fn lookup(&self, key_hash: u64) -> usize {
        self.points[self.first_point(key_hash)].server as usize
    }

    /// The servers of many keys at once, `sorted_hashes` in increasing order: one merge walk
    /// over the keys and the points instead of a binary search per key (the same answers as
    /// [`Ring::lookup`]). Calls `visit(key index in sorted order, server)`.
    pub fn lookup_sorted(&self, sorted_hashes: &[u64], mut visit: impl FnMut(usize, usize)) {
        let mut j = 0;
        let n = self.points.len();
        for (i, &h) in sorted_hashes.iter().enumerate() {
            debug_assert!(i == 0 || sorted_hashes[i - 1] <= h, "hashes must be sorted");
            while j < n && self.points[j].hash < h {
                j += 1;
            }
            let p = if j == n { 0 } else { j };
            visit(i, self.points[p].server as usize);
        }
    }

    /// Bounded loads: walk clockwise from the key's point and return the first server `s` with
    /// `eligible(s)` true (each server considered once).
    ///
    /// HAProxy's rule (`src/lb_chash.c`, `chash_get_server_hash`): from the key's node, step to
    /// the next node (`eb32_next`, wrapping to `eb32_first`) while the node's server fails
    /// `chash_server_is_eligible` (see [`super::bounded_load_eligible`]), so overflow goes to the
    /// servers that follow on the ring. Differences: HAProxy starts from whichever of the two
    /// neighbouring nodes is closer to the hash, lbsim from the first point clockwise (Envoy's
    /// [`Ring::lookup`]), so that without a cap the bounded ring places keys as the plain one
    /// does; HAProxy re-tests a server each time one of its nodes comes up, lbsim asks
    /// `eligible` once per server (the answer cannot change within a lookup). When no server is
    /// eligible (impossible with HAProxy's cap and a factor above 1: the slots add up to more
    /// than the load), HAProxy stops after wrapping twice; lbsim returns the key's own server.
    /// (Envoy's bounded loads probe the other hosts in a random order seeded by the hash, not
    /// clockwise.)
    pub fn lookup_bounded(&self, key_hash: u64, mut eligible: impl FnMut(usize) -> bool) -> usize {
        let start = self.first_point(key_hash);
        let own = self.points[start].server as usize;
        if eligible(own) {
            return own;
        }
        // Servers already asked, as bits; only allocated when the first choice is full.
        let mut asked = vec![0u64; self.servers.div_ceil(64)];
        asked[own / 64] |= 1 << (own % 64);
        let mut remaining = self.servers - 1;
        let n = self.points.len();
        let mut i = start;
        while remaining > 0 {
            i = if i + 1 == n { 0 } else { i + 1 };
            if i == start {
                break;
            }
            let s = self.points[i].server as usize;
            if asked[s / 64] & (1 << (s % 64)) != 0 {
                continue;
            }
            asked[s / 64] |= 1 << (s % 64);
            remaining -= 1;
            if eligible(s) {
                return s;
            }
        }
        own
    }

    /// Each server's share of the circle: the arcs that end at its points (the keys hashed into
    /// them go to it), as fractions of 2^64.
    pub fn shares(&self) -> Vec<f64> {
        let mut share = vec![0.0; self.servers];
        let n = self.points.len();
        for (i, p) in self.points.iter().enumerate() {
            let prev = self.points[(i + n - 1) % n].hash;
            // The arc from the previous point (exclusive) to this one, wrapping at 2^64; a ring
            // of one point owns the whole circle.
            let arc = if n == 1 { u64::MAX } else { p.hash.wrapping_sub(prev) };
            share[p.server as usize] += arc as f64 / 2f64.powi(64);
        }
        share
    }
}

/// The position of point `vnode` of `server` under placement seed `seed`.
#[inline]
fn point_hash(seed: u64, server: u32, vnode: u32) -> u64 {
    hash_words(&[seed, u64::from(server), u64::from(vnode)], 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A ring with hand-placed points.
    fn ring_of(points: &[(u64, u32)], servers: usize) -> Ring {
        let mut points: Vec<Point> =
            points.iter().map(|&(hash, server)| Point { hash, server, vnode: 0 }).collect();
        points.sort_unstable();
        Ring { points, servers }
    }

    #[test]
    fn a_key_goes_to_the_first_point_at_or_after_its_hash_and_wraps_around() {
        let r = ring_of(&[(100, 0), (200, 1), (300, 2)], 3);
        assert_eq!(r.lookup(0), 0);
        assert_eq!(r.lookup(100), 0, "a key on a point goes to that point");
        assert_eq!(r.lookup(101), 1);
        assert_eq!(r.lookup(300), 2);
        assert_eq!(r.lookup(301), 0, "past the last point: wrap to the first");
        assert_eq!(r.lookup(u64::MAX), 0);
    }

    #[test]
    fn the_merge_walk_agrees_with_lookup() {
        let r = Ring::new(37, 11, 5);
        let mut hashes: Vec<u64> = (0..20_000).map(super::super::key_hash).collect();
        hashes.extend([0, u64::MAX, r.points[0].hash, r.points[5].hash]);
        hashes.sort_unstable();
        r.lookup_sorted(&hashes, |i, s| assert_eq!(s, r.lookup(hashes[i]), "hash {}", hashes[i]));
    }

    #[test]
    fn bounded_lookup_skips_ineligible_servers_in_clockwise_order() {
        // Points clockwise: 0 at 100, 1 at 200, 0 at 250, 2 at 300, 3 at 400.
        let r = ring_of(&[(100, 0), (200, 1), (250, 0), (300, 2), (400, 3)], 4);
        let full = |full: &'static [usize]| move |s: usize| !full.contains(&s);
        assert_eq!(r.lookup_bounded(150, full(&[])), 1);
        assert_eq!(r.lookup_bounded(150, full(&[1])), 0, "the next point clockwise");
        assert_eq!(r.lookup_bounded(150, full(&[1, 0])), 2);
        assert_eq!(r.lookup_bounded(150, full(&[1, 0, 2])), 3);
        // Wrapping: from 400 (server 3) on to 100 (server 0).
        assert_eq!(r.lookup_bounded(350, full(&[3])), 0);
        assert_eq!(r.lookup_bounded(350, full(&[3, 0])), 1);
        // Nobody eligible: the key's own server.
        assert_eq!(r.lookup_bounded(350, full(&[0, 1, 2, 3])), 3);
    }

    #[test]
    fn bounded_lookup_asks_each_server_once() {
        let r = Ring::new(20, 50, 9);
        let mut asked = Vec::new();
        let s = r.lookup_bounded(12345, |s| {
            asked.push(s);
            false
        });
        let mut sorted = asked.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), asked.len(), "asked twice: {asked:?}");
        assert_eq!(asked.len(), 20, "every server asked");
        assert_eq!(s, r.lookup(12345));
        // And the order is the order of first appearance clockwise from the key's point.
        let start = r.first_point(12345);
        let mut clockwise = Vec::new();
        for k in 0..r.len() {
            let s = r.points[(start + k) % r.len()].server as usize;
            if !clockwise.contains(&s) {
                clockwise.push(s);
            }
        }
        assert_eq!(asked, clockwise);
    }

    #[test]
    fn adding_a_server_keeps_every_old_point_and_moves_keys_only_to_it() {
        let (small, big) = (Ring::new(30, 40, 77), Ring::new(31, 40, 77));
        let old: Vec<Point> = big.points.iter().copied().filter(|p| p.server < 30).collect();
        assert_eq!(old, small.points, "the old points, in the same order");
        for k in 0..50_000u64 {
            let h = super::super::key_hash(k);
            let (a, b) = (small.lookup(h), big.lookup(h));
            assert!(a == b || b == 30, "key {k} moved from {a} to {b}, not to the new server");
        }
        // More vnodes keep the points of fewer.
        let fewer = Ring::new(30, 10, 77);
        let kept: Vec<Point> = small.points.iter().copied().filter(|p| p.vnode < 10).collect();
        assert_eq!(kept, fewer.points);
    }

    #[test]
    fn shares_cover_the_circle_and_each_point_counts_once() {
        let r = Ring::new(10, 25, 3);
        assert_eq!(r.len(), 250);
        let total: f64 = r.shares().iter().sum();
        assert!((total - 1.0).abs() < 1e-12, "{total}");
        let one = Ring::new(1, 1, 3);
        assert_eq!(one.lookup(0), 0);
        assert!((one.shares()[0] - 1.0).abs() < 1e-12);
    }

    #[test]
    fn seeds_place_the_points_differently() {
        let (a, b) = (Ring::new(5, 5, 1), Ring::new(5, 5, 2));
        assert_ne!(a.points, b.points);
        assert_eq!(Ring::new(5, 5, 1).points, a.points);
    }
}

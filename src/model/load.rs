//! What a policy sees of the farm: one load value per server.
//!
//! [`LoadTable`] is the single place where policies read load. The information model (the
//! `info` module, one layer up: it fills this table) decides what goes into it and when: with live
//! information every arrival and departure updates it at once; with a bulletin board it is
//! overwritten with the true queue lengths every `T` time units (and, for update-on-dispatch, also
//! incremented at each dispatch). The same policy code therefore runs on fresh or stale information
//! without knowing which.
//!
//! When a policy needs the minimum (JSQ), the table also keeps its servers sorted by value in a
//! bucketed permutation, so that increments, decrements and "a uniformly random server among the
//! least loaded" are all `O(1)`: no scan of the farm per arrival.
//!
//! A table may also hold, per server, the departure times of the requests there
//! ([`LoadTable::with_departures`]), when each is known as the request joins (a FIFO server with
//! one worker and a fixed rate; laid out as `super::departures` says). A server's value is then the number of those departures later
//! than the table's present ([`LoadTable::set_now`]): departures are not simulated as events,
//! they are counted as past when a policy reads the server, and dropped from the table when a
//! request joins it; [`LoadTable::join`] returns the joining request's departure time, so the
//! request is recorded as it joins. A policy that only [`get`](LoadTable::get)s values reads
//! the same numbers from either table.

use super::departures::Departures;
use crate::rng::SimRng;

/// Per-server load values as the policy sees them (queue lengths, live or posted).
#[derive(Debug, Clone)]
pub struct LoadTable {
    vals: Vec<u32>,
    sorted: Option<SortedIndex>,
    departures: Option<Departures>,
}

/// Servers sorted by value: `order` is a permutation of the servers in non-decreasing value
/// order, `pos` its inverse, and `start[v]` the first position in `order` whose value is `>= v`
/// (positions `start[v]..start[v + 1]` hold exactly the servers of value `v`).
#[derive(Debug, Clone)]
struct SortedIndex {
    order: Vec<u32>,
    pos: Vec<u32>,
    start: Vec<u32>,
}

impl LoadTable {
    /// `n` servers, all at zero. `sorted` keeps the index that [`Self::shortest`] needs.
    pub fn new(n: usize, sorted: bool) -> Self {
        let mut table = LoadTable { vals: vec![0; n], sorted: None, departures: None };
        if sorted {
            table.sorted =
                Some(SortedIndex { order: Vec::new(), pos: Vec::new(), start: Vec::new() });
            table.rebuild();
        }
        table
    }

    /// A table holding `vals` (for tests and for callers that post a snapshot).
    pub fn from_values(vals: &[u32], sorted: bool) -> Self {
        let mut table = LoadTable::new(vals.len(), sorted);
        table.set_all(vals.iter().copied());
        table
    }

    /// Number of servers.
    #[inline]
    pub fn len(&self) -> usize {
        self.departures.as_ref().map_or(self.vals.len(), Departures::len)
    }

    /// True for a table without servers.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Empty FIFO servers of these rates whose values are counted from their departure times
    /// (see the module's documentation), at time 0. Such a table has no sorted index and is only
    /// read by [`Self::get`].
    pub fn with_departures(rates: &[f64]) -> Self {
        let departures = Departures::new(rates);
        LoadTable { vals: Vec::new(), sorted: None, departures: Some(departures) }
    }

    /// Load of server `i`.
    #[inline]
    pub fn get(&self, i: usize) -> u32 {
        match &self.departures {
            None => self.vals[i],
            Some(d) => d.count(i),
        }
    }

    /// Asks for what [`Self::get`] reads of server `i` to be brought into the cache: a hint
    /// ([`crate::cache::prefetch`]).
    #[inline(always)]
    pub fn prefetch(&self, i: usize) {
        match &self.departures {
            None => crate::cache::prefetch(&self.vals[i]),
            Some(d) => d.prefetch(i),
        }
    }

    /// All values, in server order. Not for a table with departures.
    pub fn values(&self) -> &[u32] {
        debug_assert!(self.departures.is_none(), "a table with departures is read by `get`");
        &self.vals
    }

    /// The present of a table with departures: its values count the departures after `t`.
    #[inline]
    pub fn set_now(&mut self, t: f64) {
        if let Some(d) = &mut self.departures {
            d.set_now(t);
        }
    }

    /// A request arriving at `arrival` (the table's present) joins FIFO server `i` with `work`: it
    /// leaves `work / rate` after the last one there, or after `arrival` if that is later; that
    /// departure time is returned. The server's departures at or before the present are dropped.
    /// Panics for a table without departures.
    #[inline(always)]
    pub fn join(&mut self, i: usize, work: f64, arrival: f64) -> f64 {
        self.departures.as_mut().expect("a table with departures").join(i, work, arrival)
    }

    /// Adds one to server `i`. `O(1)`.
    #[inline(always)]
    pub fn inc(&mut self, i: usize) {
        let v = self.vals[i];
        self.vals[i] = v + 1;
        if let Some(s) = &mut self.sorted {
            let v = v as usize;
            // Invariant: `start` covers values up to max + 2, so `shortest` can read start[min + 1].
            if s.start.len() < v + 4 {
                s.start.push(s.order.len() as u32);
            }
            // Swap `i` with the last server of bucket v, then move the boundary left over it.
            let last = s.start[v + 1] as usize - 1;
            s.swap(s.pos[i] as usize, last);
            s.start[v + 1] -= 1;
        }
    }

    /// Subtracts one from server `i`, whose value must be positive. `O(1)`.
    #[inline(always)]
    pub fn dec(&mut self, i: usize) {
        let v = self.vals[i];
        debug_assert!(v > 0, "load of server {i} would go negative");
        self.vals[i] = v - 1;
        if let Some(s) = &mut self.sorted {
            // Swap `i` with the first server of bucket v, then move the boundary right over it.
            let v = v as usize;
            let first = s.start[v] as usize;
            s.swap(s.pos[i] as usize, first);
            s.start[v] += 1;
        }
    }

    /// Overwrites every value (a bulletin-board post). `O(n + max value)`.
    pub fn set_all(&mut self, vals: impl IntoIterator<Item = u32>) {
        let mut count = 0;
        for (slot, v) in self.vals.iter_mut().zip(vals) {
            *slot = v;
            count += 1;
        }
        assert_eq!(count, self.vals.len(), "set_all needs one value per server");
        if self.sorted.is_some() {
            self.rebuild();
        }
    }

    /// A server with the smallest value, uniformly at random among ties. `O(1)`.
    ///
    /// Panics if the table was built without the sorted index.
    #[inline]
    pub fn shortest(&self, rng: &mut SimRng) -> usize {
        let s = self.sorted.as_ref().expect("LoadTable::shortest needs the sorted index");
        let min = self.vals[s.order[0] as usize] as usize;
        let ties = s.start[min + 1] as usize;
        let k = if ties == 1 { 0 } else { crate::rng::uniform(rng, ties) };
        s.order[k] as usize
    }

    /// Counting sort of the servers into the sorted index.
    fn rebuild(&mut self) {
        let Some(s) = &mut self.sorted else { return };
        let n = self.vals.len();
        let max = self.vals.iter().copied().max().unwrap_or(0) as usize;
        s.start.clear();
        s.start.resize(max + 3, 0);
        for &v in &self.vals {
            s.start[v as usize + 1] += 1;
        }
        for v in 1..s.start.len() {
            s.start[v] += s.start[v - 1];
        }
        s.order.resize(n, 0);
        s.pos.resize(n, 0);
        let mut next = s.start.clone();
        for (i, &v) in self.vals.iter().enumerate() {
            let p = &mut next[v as usize];
            s.order[*p as usize] = i as u32;
            s.pos[i] = *p;
            *p += 1;
        }
    }
}

impl SortedIndex {
    #[inline]
    fn swap(&mut self, a: usize, b: usize) {
        let (sa, sb) = (self.order[a], self.order[b]);
        self.order[a] = sb;
        self.order[b] = sa;
        self.pos[sb as usize] = a as u32;
        self.pos[sa as usize] = b as u32;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{RngExt, SeedableRng};

    fn check_index(t: &LoadTable) {
        let s = t.sorted.as_ref().unwrap();
        let mut seen = vec![false; t.len()];
        for (p, &srv) in s.order.iter().enumerate() {
            assert_eq!(s.pos[srv as usize] as usize, p);
            seen[srv as usize] = true;
            let v = t.vals[srv as usize] as usize;
            assert!(s.start[v] as usize <= p && p < s.start[v + 1] as usize);
        }
        assert!(seen.iter().all(|&x| x));
    }

    #[test]
    fn sorted_index_survives_random_updates() {
        let mut rng = SimRng::seed_from_u64(11);
        let mut t = LoadTable::new(37, true);
        for step in 0..20_000 {
            let i = rng.random_range(0..37);
            if t.get(i) > 0 && rng.random_bool(0.5) {
                t.dec(i);
            } else {
                t.inc(i);
            }
            if step % 1000 == 999 {
                let vals: Vec<u32> = t.values().iter().map(|&v| v / 2).collect();
                t.set_all(vals);
            }
            check_index(&t);
            let min = *t.values().iter().min().unwrap();
            assert_eq!(t.get(t.shortest(&mut rng)), min);
        }
    }

    #[test]
    fn shortest_spreads_ties_uniformly() {
        // Servers 1, 3 and 4 tie at the minimum; each should get a third of 30_000 picks.
        // The count of one server is Binomial(30_000, 1/3): sd = 81.6, so +-5 sd is +-408.
        let t = LoadTable::from_values(&[2, 0, 5, 0, 0, 1], true);
        let mut rng = SimRng::seed_from_u64(5);
        let mut counts = [0u32; 6];
        for _ in 0..30_000 {
            counts[t.shortest(&mut rng)] += 1;
        }
        assert_eq!(counts[0] + counts[2] + counts[5], 0);
        for i in [1, 3, 4] {
            assert!((f64::from(counts[i]) - 10_000.0).abs() < 408.0, "{counts:?}");
        }
    }
}

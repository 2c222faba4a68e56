//! The departure times of FIFO servers with one worker and a fixed rate, laid out so that reading
//! a server's length touches one cache line.
//!
//! A server's length at the present is the number of its departures later than the present (see
//! [`LoadTable::with_departures`](super::LoadTable::with_departures)). A policy reads it for a few
//! servers drawn at random per arrival; on a large farm each read is a cache miss, and where the
//! departure times sat behind a per-server queue header (a header, then its buffer) each read was
//! two misses, one waiting on the other. Here each server's first [`INLINE`] departure times, in
//! a ring, share one 64-byte line with the ring's start and length and with the server's rate (the
//! join reads it), so the read is one miss and the join that follows none. What recording a
//! departure also needs (its arrival time and index) sits in a parallel array, read only when the
//! departure is taken out; departures beyond the ring spill to the server's overflow queue, in
//! order after the ring's, and move into the ring as it empties (the line counts them, so that
//! reading the length needs the overflow only when every departure in the ring is past).
//!
//! All of it is allocated and written when the table is made: its memory does not grow with the
//! run while no server holds more than [`INLINE`] requests (under p2c at load 0.9 a server holds
//! 7 or more with probability `0.9^127`, about `1.5e-6`).

use std::collections::VecDeque;

/// Departure times kept in a server's line; later ones spill.
pub(super) const INLINE: usize = 6;

/// A request at a server whose departure time was known when it joined: what recording its
/// departure needs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Departing {
    /// When it leaves.
    pub at: f64,
    /// When it arrived.
    pub arrival: f64,
    /// Its arrival index.
    pub index: u64,
}

/// What a free slot of a ring holds: later than any present, so never counted as past.
const FREE: f64 = f64::INFINITY;

/// One server's earliest departure times (the ring `at[head..]` then `at[..]`, `len` of them;
/// the other slots [`FREE`]), its rate, and where its later departures spill: one cache line.
#[derive(Debug, Clone, Copy)]
#[repr(C, align(64))]
struct Line {
    at: [f64; INLINE],
    rate: f64,
    head: u8,
    len: u8,
    /// How many of this server's departures wait in its overflow queue, after those in the ring.
    /// Only a full ring spills: while this is positive, `len` is [`INLINE`].
    extra: u32,
}

/// The rest of a departure in a ring: what recording it needs besides its time.
#[derive(Debug, Clone, Copy, Default)]
struct Rest {
    arrival: f64,
    index: u64,
}

/// Per server, in departure order, the departures not yet taken out; a server's count is the
/// number later than `now`.
#[derive(Debug, Clone)]
pub(super) struct Departures {
    now: f64,
    lines: Vec<Line>,
    /// `rest[s][k]` goes with `lines[s].at[k]`.
    rest: Vec<[Rest; INLINE]>,
    /// Per server, its departures after those in its ring (empty, unallocated, for most).
    overflow: Vec<VecDeque<Departing>>,
}

impl Line {
    /// The ring position of the `j`-th departure from the front.
    #[inline(always)]
    fn slot(&self, j: usize) -> usize {
        (usize::from(self.head) + j) % INLINE
    }
}

/// The ring position after `k`.
#[inline(always)]
fn next(k: usize) -> usize {
    if k + 1 == INLINE { 0 } else { k + 1 }
}

impl Departures {
    /// Empty servers of these rates, at time 0.
    pub(super) fn new(rates: &[f64]) -> Self {
        let line = |&rate| Line { at: [FREE; INLINE], rate, head: 0, len: 0, extra: 0 };
        Departures {
            now: 0.0,
            lines: rates.iter().map(line).collect(),
            rest: vec![[Rest::default(); INLINE]; rates.len()],
            overflow: vec![VecDeque::new(); rates.len()],
        }
    }

    /// Number of servers.
    #[inline]
    pub(super) fn len(&self) -> usize {
        self.lines.len()
    }

    /// The present: counts are of the departures after it.
    #[inline]
    pub(super) fn set_now(&mut self, t: f64) {
        debug_assert!(t >= self.now, "the present goes from {} back to {t}", self.now);
        self.now = t;
    }

    /// The number of server `i`'s departures after the present.
    ///
    /// The ring's free slots hold `+inf`, so the departures at or before `now` are the slots at or
    /// before it, counted over the whole line without a branch: a loop that stopped at the first
    /// later departure mispredicted its exit about once per read (the number past is random).
    #[inline(always)]
    pub(super) fn count(&self, i: usize) -> u32 {
        let line = &self.lines[i];
        let now = self.now;
        let gone = line.at.iter().map(|&at| u32::from(at <= now)).sum::<u32>();
        let len = u32::from(line.len);
        // One branch, rarely taken: the whole ring is past and more wait in the overflow.
        if (gone == len) & (line.extra != 0) {
            return self.count_overflow(i);
        }
        len - gone + line.extra
    }

    /// [`Self::count`] of server `i` when every departure in its ring is past: those of its
    /// overflow after the present.
    #[cold]
    #[inline(never)]
    fn count_overflow(&self, i: usize) -> u32 {
        self.overflow[i].iter().filter(|r| r.at > self.now).count() as u32
    }

    /// A request that arrived `index`-th at `arrival` joins server `i` with `work`: it starts when
    /// the last one there leaves, or at once, and leaves `work / rate` later (the arithmetic of
    /// a simulated FIFO server, so the same departure time).
    #[inline(always)]
    pub(super) fn join(&mut self, i: usize, work: f64, arrival: f64, index: u64) {
        let line = &self.lines[i];
        let last = if line.extra != 0 {
            self.overflow[i].back().map(|r| r.at)
        } else if line.len > 0 {
            Some(line.at[line.slot(usize::from(line.len) - 1)])
        } else {
            None
        };
        let start = last.map_or(arrival, |d| d.max(arrival));
        let at = start + work / line.rate;
        self.push(i, Departing { at, arrival, index });
    }

    /// Appends `r` to server `i`'s departures, after all of them.
    #[inline(always)]
    fn push(&mut self, i: usize, r: Departing) {
        // A ring with room has nothing in the overflow.
        if usize::from(self.lines[i].len) < INLINE {
            self.ring_push(i, r);
        } else {
            self.overflow[i].push_back(r);
            self.lines[i].extra += 1;
        }
    }

    /// Puts `r` at the end of server `i`'s ring, which has room for it.
    #[inline(always)]
    fn ring_push(&mut self, i: usize, r: Departing) {
        let line = &mut self.lines[i];
        let k = line.slot(usize::from(line.len));
        line.at[k] = r.at;
        self.rest[i][k] = Rest { arrival: r.arrival, index: r.index };
        line.len += 1;
    }

    /// Takes out server `i`'s departures at or before the present, earliest first, handing each
    /// to `left`.
    #[inline(always)]
    pub(super) fn take_departed(&mut self, i: usize, mut left: impl FnMut(Departing)) {
        loop {
            let line = &mut self.lines[i];
            let k = usize::from(line.head);
            // An empty ring's front slot is free (`+inf`), later than any present.
            if line.at[k] > self.now {
                return;
            }
            let Rest { arrival, index } = self.rest[i][k];
            let r = Departing { at: line.at[k], arrival, index };
            line.at[k] = FREE;
            line.head = next(k) as u8;
            line.len -= 1;
            if line.extra != 0 {
                // The ring has room again: the first of the overflow moves in.
                line.extra -= 1;
                let first = self.overflow[i].pop_front().expect("as many as `extra` says");
                self.ring_push(i, first);
            }
            left(r);
        }
    }

    /// Takes out every departure left, server by server, each earliest first, handing each to
    /// `left`: the end of a replication. Those after `until` stay.
    pub(super) fn take_all_departed(&mut self, until: f64, mut left: impl FnMut(Departing)) {
        self.now = self.now.max(until);
        for i in 0..self.lines.len() {
            self.take_departed(i, &mut left);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{RngExt, SeedableRng};

    /// The same departures kept in plain queues: what the lines and spills must agree with.
    struct Plain {
        now: f64,
        rates: Vec<f64>,
        queues: Vec<VecDeque<Departing>>,
    }

    impl Plain {
        fn count(&self, i: usize) -> u32 {
            self.queues[i].iter().filter(|r| r.at > self.now).count() as u32
        }

        fn join(&mut self, i: usize, work: f64, arrival: f64, index: u64) {
            let start = self.queues[i].back().map_or(arrival, |r| r.at.max(arrival));
            let at = start + work / self.rates[i];
            self.queues[i].push_back(Departing { at, arrival, index });
        }

        fn take_departed(&mut self, i: usize) -> Vec<Departing> {
            let mut out = Vec::new();
            while self.queues[i].front().is_some_and(|r| r.at <= self.now) {
                out.extend(self.queues[i].pop_front());
            }
            out
        }
    }

    /// Random joins and reads on a few servers, some loaded far past the ring (so they spill and
    /// empty again, and now and then every departure in a full ring is past), against plain queues: every count, every
    /// departure taken out (time, arrival, index, in order) and the end's leftovers agree.
    #[test]
    fn lines_and_spills_keep_the_departures_of_plain_queues() {
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(7);
        let rates = [0.5, 1.0, 2.0, 8.0, 0.25];
        let mut d = Departures::new(&rates);
        let mut plain =
            Plain { now: 0.0, rates: rates.to_vec(), queues: vec![VecDeque::new(); rates.len()] };
        let (mut t, mut spilled) = (0.0, 0);
        for index in 0..200_000u64 {
            // Bursts of arrivals (small steps) and lulls, so queues grow past INLINE and drain.
            t += if (index / 500) % 2 == 0 { 0.05 } else { 2.0 } * rng.random::<f64>();
            d.set_now(t);
            plain.now = t;
            for i in 0..rates.len() {
                assert_eq!(d.count(i), plain.count(i), "server {i} at {t}");
            }
            let i = rng.random_range(0..rates.len());
            let mut taken = Vec::new();
            d.take_departed(i, |r| taken.push(r));
            assert_eq!(taken, plain.take_departed(i));
            let work = -rng.random::<f64>().ln();
            d.join(i, work, t, index);
            plain.join(i, work, t, index);
            spilled = spilled.max(d.overflow.iter().map(VecDeque::len).max().unwrap());
        }
        assert!(spilled > 0, "some server spilled");
        let mut left = Vec::new();
        d.take_all_departed(f64::MAX, |r| left.push(r));
        plain.now = f64::MAX;
        let want: Vec<_> = (0..rates.len()).flat_map(|i| plain.take_departed(i)).collect();
        assert_eq!(left, want);
        assert!(d.lines.iter().all(|l| l.len == 0 && l.extra == 0));
        assert!(d.overflow.iter().all(VecDeque::is_empty));
    }

    #[test]
    fn a_line_is_one_cache_line() {
        assert_eq!(std::mem::size_of::<Line>(), 64);
        assert_eq!(std::mem::align_of::<Line>(), 64);
    }
}

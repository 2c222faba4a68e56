//! The departure times of FIFO servers with one worker and a fixed rate, laid out so that reading
//! a server's length touches one cache line.
//!
//! A server's length at the present is the number of its departures later than the present (see
//! [`LoadTable::with_departures`](super::LoadTable::with_departures)). A policy reads it for a few
//! servers drawn at random per arrival; on a large farm each read is a cache miss, and where the
//! departure times sat behind a per-server queue header (a header, then its buffer) each read was
//! two misses, one waiting on the other. Here each server's first [`INLINE`] departure times, in
//! a ring, share one 64-byte line with the ring's start and length and with the server's rate (the
//! join reads it), so the read is one miss and the join that follows none. A request's departure
//! time is all that is kept of it: [`Departures::join`] returns it, and the caller records the
//! request then. Departures beyond the ring spill to the server's overflow queue, in order after
//! the ring's, and move into the ring as it empties (the line counts them, so that reading the
//! length needs the overflow only when every departure in the ring is past).
//!
//! All of it is allocated and written when the table is made: its memory does not grow with the
//! run while no server holds more than [`INLINE`] requests (under p2c at load 0.9 a server holds
//! 7 or more with probability `0.9^127`, about `1.5e-6`).

use std::collections::VecDeque;

/// Departure times kept in a server's line; later ones spill.
pub(super) const INLINE: usize = 6;

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

/// Per server, in departure order, the departure times not yet dropped; a server's count is the
/// number later than `now`.
#[derive(Debug, Clone)]
pub(super) struct Departures {
    now: f64,
    lines: Vec<Line>,
    /// Per server, its departures after those in its ring (empty, unallocated, for most).
    overflow: Vec<VecDeque<f64>>,
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
            overflow: vec![VecDeque::new(); rates.len()],
        }
    }

    /// Number of servers.
    #[inline]
    pub(super) fn len(&self) -> usize {
        self.lines.len()
    }

    /// Asks for server `i`'s line to be brought into the cache ([`crate::cache::prefetch`]).
    #[inline(always)]
    pub(super) fn prefetch(&self, i: usize) {
        crate::cache::prefetch(&self.lines[i]);
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
        self.overflow[i].iter().filter(|&&at| at > self.now).count() as u32
    }

    /// A request that arrives at `arrival` (the present) joins server `i` with `work`: it starts
    /// when the last one there leaves, or at once, and leaves `work / rate` later (the arithmetic
    /// of a simulated FIFO server, so the same departure time), which is returned. The server's
    /// departures at or before the present are dropped (after the last is read: were it past,
    /// the request would start at `arrival` either way).
    #[inline(always)]
    pub(super) fn join(&mut self, i: usize, work: f64, arrival: f64) -> f64 {
        let line = &self.lines[i];
        let last = if line.extra != 0 {
            self.overflow[i].back().copied()
        } else if line.len > 0 {
            Some(line.at[line.slot(usize::from(line.len) - 1)])
        } else {
            None
        };
        let start = last.map_or(arrival, |d| d.max(arrival));
        let at = start + work / line.rate;
        self.drop_departed(i);
        // A ring with room has nothing in the overflow.
        if usize::from(self.lines[i].len) < INLINE {
            self.ring_push(i, at);
        } else {
            self.overflow[i].push_back(at);
            self.lines[i].extra += 1;
        }
        at
    }

    /// Puts `at` at the end of server `i`'s ring, which has room for it.
    #[inline(always)]
    fn ring_push(&mut self, i: usize, at: f64) {
        let line = &mut self.lines[i];
        let k = line.slot(usize::from(line.len));
        line.at[k] = at;
        line.len += 1;
    }

    /// Drops server `i`'s departures at or before the present: the ring's first slots from its
    /// start (a FIFO server's departures are in order; an empty ring's front slot is free,
    /// `+inf`, later than any present), then, if the ring had spilled, the overflow moves in
    /// behind what is left.
    #[inline(always)]
    fn drop_departed(&mut self, i: usize) {
        let now = self.now;
        let line = &mut self.lines[i];
        let mut k = usize::from(line.head);
        while line.at[k] <= now {
            line.at[k] = FREE;
            k = next(k);
            line.len -= 1;
        }
        line.head = k as u8;
        if (line.extra != 0) & (usize::from(line.len) < INLINE) {
            self.refill(i);
        }
    }

    /// Moves server `i`'s overflow into its ring as far as it has room, dropping those at or
    /// before the present (only when the ring had emptied: otherwise all are after what is left
    /// in the ring).
    #[inline(never)]
    fn refill(&mut self, i: usize) {
        while usize::from(self.lines[i].len) < INLINE && self.lines[i].extra != 0 {
            let at = self.overflow[i].pop_front().expect("as many as `extra` says");
            self.lines[i].extra -= 1;
            if at > self.now {
                self.ring_push(i, at);
            }
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
        queues: Vec<VecDeque<f64>>,
    }

    impl Plain {
        fn count(&self, i: usize) -> u32 {
            self.queues[i].iter().filter(|&&at| at > self.now).count() as u32
        }

        fn join(&mut self, i: usize, work: f64, arrival: f64) -> f64 {
            let start = self.queues[i].back().map_or(arrival, |&at| at.max(arrival));
            let at = start + work / self.rates[i];
            self.queues[i].push_back(at);
            at
        }
    }

    /// Random joins and reads on a few servers, some loaded far past the ring (so they spill and
    /// empty again, and now and then every departure in a full ring is past), against plain
    /// queues: every count and every departure time a join returns agree, and what the table
    /// keeps of a server is exactly its departures after the present (at its last join).
    #[test]
    fn lines_and_spills_keep_the_departures_of_plain_queues() {
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(7);
        let rates = [0.5, 1.0, 2.0, 8.0, 0.25];
        let mut d = Departures::new(&rates);
        let mut plain =
            Plain { now: 0.0, rates: rates.to_vec(), queues: vec![VecDeque::new(); rates.len()] };
        let (mut t, mut spilled, mut emptied_full) = (0.0, 0, 0);
        for index in 0..200_000u64 {
            // Bursts of arrivals (small steps) and lulls, so queues grow past INLINE and drain.
            t += if (index / 500) % 2 == 0 { 0.05 } else { 2.0 } * rng.random::<f64>();
            d.set_now(t);
            plain.now = t;
            for i in 0..rates.len() {
                assert_eq!(d.count(i), plain.count(i), "server {i} at {t}");
            }
            let i = rng.random_range(0..rates.len());
            let line = d.lines[i];
            if line.extra != 0 && line.at.iter().all(|&at| at <= t) {
                emptied_full += 1;
            }
            let work = -rng.random::<f64>().ln();
            assert_eq!(d.join(i, work, t), plain.join(i, work, t));
            let kept: Vec<f64> = {
                let l = &d.lines[i];
                let ring = (0..usize::from(l.len)).map(|j| l.at[l.slot(j)]);
                ring.chain(d.overflow[i].iter().copied()).collect()
            };
            let want: Vec<f64> = plain.queues[i].iter().copied().filter(|&at| at > t).collect();
            assert_eq!(kept, want, "server {i} at {t}");
            let l = &d.lines[i];
            let free = (usize::from(l.len)..INLINE).map(|j| l.at[l.slot(j)]);
            assert!(free.into_iter().all(|at| at == FREE), "free slots hold +inf");
            spilled = spilled.max(d.overflow.iter().map(VecDeque::len).max().unwrap());
        }
        assert!(spilled > 0, "some server spilled");
        assert!(emptied_full > 0, "some join found a full ring all past with more spilled");
    }

    #[test]
    fn a_line_is_one_cache_line() {
        assert_eq!(std::mem::size_of::<Line>(), 64);
        assert_eq!(std::mem::align_of::<Line>(), 64);
    }
}

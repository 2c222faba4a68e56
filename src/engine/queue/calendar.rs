//! The large queue's form: pending events in time buckets, sorted only when reached.
//!
//! A heap of a million pending departures is walked from its root to a leaf per event, and every
//! level below the few the cache holds is a miss (`perf` put 47% of `jsq`'s time at n = 10^6 in
//! the sift-down). Here an event is written once into the bucket of its time and read once when
//! its bucket comes up; the buckets ahead are read in order, so the reads stream.
//!
//! The buckets cover a window of time: the earliest half of the events that are beyond it when it
//! is built (`far`, kept unsorted, appended to), cut into buckets of about [`PER_BUCKET`] events
//! each. Events pushed meanwhile go to their bucket if they fall in the window and to `far` if
//! they do not. A bucket is sorted when it becomes the current one; an event that falls in the
//! current bucket or before it, once that is sorted, is handed back to the caller, who keeps such
//! events in a heap of their own (the [`super::EventQueue`]'s): they are earlier than everything
//! in the buckets after the current one, so the earliest event is the earlier of that heap's root
//! and the current bucket's first. When the window is spent, the next one is built from `far`.
//! Each build reads all of `far` and takes half of it, so an event is read `O(1)` times on
//! average before it is taken: a ladder queue (Tang, Goh and Thng 2005) with one rung.
//!
//! The bucket of a time is `(t - t0) * inv`, cut to the window's buckets: a monotone function of
//! the time, so a later bucket holds only later events, and the order within a bucket is the
//! queue's full key. Which events pop, and in what order, is therefore exactly the heap's.

use std::cmp::Reverse;

use super::Entry;

/// Events per bucket that a window aims at.
const PER_BUCKET: usize = 4;

/// How many buckets after the current one [`Calendar::front_ahead`] names the events of.
pub(super) const AHEAD_BUCKETS: usize = 2;

/// Pending events in time buckets, and those beyond them.
#[derive(Debug, Clone)]
pub(super) struct Calendar<E> {
    /// The window's buckets (`nb` of them in use; those after stay empty, their room kept).
    buckets: Vec<Vec<Entry<E>>>,
    nb: usize,
    /// The current bucket; `nb` when the window is spent.
    cur: usize,
    /// The current bucket is sorted, latest first, so that its earliest is its last.
    sorted: bool,
    /// The window: events whose time key is below `end`, from `t0` at `inv` buckets per second.
    end: u64,
    t0: f64,
    inv: f64,
    /// Events in the buckets.
    in_buckets: usize,
    /// Events beyond the window, in no order.
    far: Vec<Entry<E>>,
}

impl<E: Copy> Calendar<E> {
    /// A calendar of `entries` (in any order); its first window is built when it is read.
    pub(super) fn new(entries: Vec<Entry<E>>) -> Self {
        Calendar {
            buckets: Vec::new(),
            nb: 0,
            cur: 0,
            sorted: false,
            end: 0,
            t0: 0.0,
            inv: 0.0,
            in_buckets: 0,
            far: entries,
        }
    }

    /// Events held.
    #[inline]
    pub(super) fn len(&self) -> usize {
        self.in_buckets + self.far.len()
    }

    /// The bucket of time key `time` in the current window, cut to its buckets.
    #[inline(always)]
    fn bucket(&self, time: u64) -> usize {
        bucket_of(time, self.t0, self.inv, self.nb)
    }

    /// Adds `entry`; gives it back when it belongs in the current bucket (sorted already) or
    /// before it, for the caller to keep apart.
    #[inline]
    pub(super) fn insert(&mut self, entry: Entry<E>) -> Option<Entry<E>> {
        if self.cur >= self.nb || entry.time >= self.end {
            self.far.push(entry);
            return None;
        }
        let b = self.bucket(entry.time);
        if b <= self.cur && self.sorted {
            return Some(entry);
        }
        self.buckets[b.max(self.cur)].push(entry);
        self.in_buckets += 1;
        None
    }

    /// The earliest event in the buckets and beyond: the current bucket's earliest, going on to
    /// the next buckets, and to a new window, as they empty.
    #[inline]
    pub(super) fn front(&mut self) -> Option<Entry<E>> {
        self.front_ahead(|_, _| {})
    }

    /// [`Self::front`]; and each time a bucket becomes the current one, `ahead(ev, k)` is called
    /// with every event `ev` then in the `k`-th bucket after it, for `k` in `1..=AHEAD_BUCKETS`
    /// (within the window): the events to come a few buckets on, for the caller to fetch what
    /// they will read.
    #[inline]
    pub(super) fn front_ahead(&mut self, mut ahead: impl FnMut(E, usize)) -> Option<Entry<E>> {
        loop {
            if self.cur < self.nb {
                if !self.sorted {
                    self.buckets[self.cur].sort_unstable_by_key(|e| Reverse(e.key()));
                    self.sorted = true;
                    let last = self.nb.min(self.cur + AHEAD_BUCKETS + 1);
                    for (k, b) in self.buckets[self.cur + 1..last].iter().enumerate() {
                        b.iter().for_each(|e| ahead(e.ev, k + 1));
                    }
                }
                let bucket = &mut self.buckets[self.cur];
                if let Some(&e) = bucket.last() {
                    return Some(e);
                }
                self.cur += 1;
                self.sorted = false;
                continue;
            }
            if self.far.is_empty() {
                return None;
            }
            self.next_window();
        }
    }

    /// Takes out the event [`Self::front`] returned.
    #[inline]
    pub(super) fn pop_front(&mut self) {
        debug_assert!(self.sorted, "front() first");
        self.buckets[self.cur].pop();
        self.in_buckets -= 1;
    }

    /// Every event held, in no order; the calendar is left empty.
    pub(super) fn drain(&mut self) -> Vec<Entry<E>> {
        let mut all = std::mem::take(&mut self.far);
        for b in &mut self.buckets[self.cur..self.nb] {
            all.append(b);
        }
        self.in_buckets = 0;
        self.cur = self.nb;
        all
    }

    /// Builds the next window over the earliest half of `far` (the buckets are all empty).
    #[cold]
    #[inline(never)]
    fn next_window(&mut self) {
        debug_assert_eq!(self.in_buckets, 0);
        let m = self.far.len().div_ceil(2);
        let (_, nth, _) = self.far.select_nth_unstable_by_key(m - 1, |e| e.time);
        let last = nth.time;
        let first = self.far[..m].iter().map(|e| e.time).min().expect("m >= 1");
        // Every event at the m-th earliest time or before: at least m of them.
        self.end = last + 1;
        self.nb = (m / PER_BUCKET).max(1);
        self.t0 = f64::from_bits(first);
        let span = f64::from_bits(last) - self.t0;
        self.inv = if span > 0.0 { self.nb as f64 / span } else { 0.0 };
        if self.buckets.len() < self.nb {
            self.buckets.resize_with(self.nb, Vec::new);
        }
        self.cur = 0;
        self.sorted = false;
        let (t0, inv, nb, end) = (self.t0, self.inv, self.nb, self.end);
        let mut kept = 0;
        for i in 0..self.far.len() {
            let e = self.far[i];
            if e.time < end {
                self.buckets[bucket_of(e.time, t0, inv, nb)].push(e);
                self.in_buckets += 1;
            } else {
                self.far[kept] = e;
                kept += 1;
            }
        }
        self.far.truncate(kept);
    }
}

/// `(t - t0) * inv` cut to `0..nb`: monotone in `t` (a float subtraction and a product by a
/// non-negative factor keep the order, and so does the saturating cast), so a later bucket holds
/// no earlier event.
#[inline(always)]
fn bucket_of(time: u64, t0: f64, inv: f64, nb: usize) -> usize {
    let x = (f64::from_bits(time) - t0) * inv;
    (x as usize).min(nb - 1)
}

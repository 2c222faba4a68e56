//! A 4-ary min-heap of events keyed by `(time, class, insertion sequence)`, which turns into
//! time buckets ([`calendar`]) while it holds many.

mod calendar;

use calendar::Calendar;

use super::SimTime;

/// Pending events at which the heap turns into a calendar: about where its levels stop fitting
/// in a core's cache (32,768 entries of 24 bytes are 768 KiB).
const CALENDAR_AT: usize = 1 << 15;

/// Bits of the tie-breaker given to the insertion counter; the class sits above them.
const SEQ_BITS: u32 = 56;

/// Children per node of the heap. Four halves the depth of a binary heap, and the four children
/// of a node sit side by side in memory.
const ARITY: usize = 4;

#[derive(Debug, Clone, Copy)]
struct Entry<E> {
    time: u64,
    /// `class << SEQ_BITS | seq`: lower classes first, then first-in first-out.
    tie: u64,
    ev: E,
}

impl<E> Entry<E> {
    /// The full key as one integer, so that comparing two entries is a single branch-free
    /// 128-bit comparison.
    #[inline(always)]
    fn key(&self) -> u128 {
        (u128::from(self.time) << 64) | u128::from(self.tie)
    }

    #[inline(always)]
    fn before(&self, other: &Self) -> bool {
        self.key() < other.key()
    }
}

/// Pending events, earliest first; equal times pop by class, then in insertion order.
///
/// Two tricks keep the common patterns cheap; neither changes which event pops next, since every
/// entry's key `(time, class, seq)` is unique.
///
/// - **A slot beside the heap.** One entry may live outside the heap, in `slot`, and `pop` takes
///   the earlier of the slot and the heap's root. A `push` goes to the slot when it is free, and
///   when the new entry is earlier than the one there (which then moves into the heap). In a
///   queueing model the next arrival is almost always the earliest pending event; it stays in the
///   slot and never travels through the heap.
/// - **Replace top.** `pop` from the heap does not restore it at once: it leaves a hole at the root,
///   and a `push` that follows fills the hole with one sift-down. Any other operation first repairs
///   the hole by moving the last entry into it.
///
/// Every operation is `O(log n)`.
///
/// **Many pending events.** From [`CALENDAR_AT`] pending events the queue keeps them in time
/// buckets instead ([`calendar`]), and the heap holds only those pushed into the bucket being
/// taken (or before it); it turns back into one heap below a quarter of that. Each push and pop is
/// then `O(1)` on average and touches one bucket, where the heap's walk from root to leaf misses
/// the cache at each of its lower levels. The order of the pops is the same.
#[derive(Debug, Clone)]
pub struct EventQueue<E> {
    heap: Vec<Entry<E>>,
    /// `heap[0]` has been taken and must be refilled before the heap is read.
    hole: bool,
    /// One pending entry kept outside the heap.
    slot: Option<Entry<E>>,
    seq: u64,
    /// The events in time buckets, while there are many.
    calendar: Option<Calendar<E>>,
    /// Pending events at which the heap turns into a calendar.
    calendar_at: usize,
    /// A push goes straight to the heap while the heap holds fewer: `calendar_at - 1` while
    /// there is no calendar, 0 while there is one. One compare on the push of the heap alone.
    heap_limit: usize,
}

impl<E: Copy> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E: Copy> EventQueue<E> {
    /// An empty queue.
    pub fn new() -> Self {
        Self::with_capacity(0)
    }

    /// An empty queue with room for `cap` events.
    pub fn with_capacity(cap: usize) -> Self {
        Self::with_calendar_at(cap, CALENDAR_AT)
    }

    /// An empty queue with room for `cap` events that turns into a calendar at `calendar_at`
    /// pending events (at least 4).
    fn with_calendar_at(cap: usize, calendar_at: usize) -> Self {
        let calendar_at = calendar_at.max(4);
        let (heap, hole, slot, seq, calendar) = (Vec::with_capacity(cap), false, None, 0, None);
        let heap_limit = calendar_at - 1;
        EventQueue { heap, hole, slot, seq, calendar, calendar_at, heap_limit }
    }

    /// Number of pending events. `O(1)`.
    #[inline]
    pub fn len(&self) -> usize {
        let cal = self.calendar.as_ref().map_or(0, Calendar::len);
        self.heap.len() - usize::from(self.hole) + usize::from(self.slot.is_some()) + cal
    }

    /// True when no event is pending. `O(1)`.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Inserts `ev` at `time` in `class` (0..=255). `O(log n)`.
    #[inline]
    pub fn push(&mut self, time: SimTime, class: u8, ev: E) {
        debug_assert!(self.seq < 1 << SEQ_BITS);
        let entry = Entry { time: time.key(), tie: (u64::from(class) << SEQ_BITS) | self.seq, ev };
        self.seq += 1;
        let entry = match self.slot {
            None => {
                self.slot = Some(entry);
                return;
            }
            Some(held) if entry.before(&held) => {
                self.slot = Some(entry);
                held
            }
            Some(_) => entry,
        };
        if self.heap.len() < self.heap_limit {
            self.heap_push(entry);
        } else {
            self.push_beyond(entry);
        }
    }

    /// Removes and returns the earliest event with its time. `O(log n)`.
    #[inline(always)]
    pub fn pop(&mut self) -> Option<(SimTime, E)> {
        self.pop_ahead(|_, _| {})
    }

    /// [`Self::pop`]; and while the events are in time buckets, each time a bucket comes up,
    /// `ahead(ev, k)` is called with each event `ev` pending in the `k`-th bucket after it (`k`
    /// from 1 to `calendar::AHEAD_BUCKETS`, 2; events a few to a dozen pops away, the nearer the
    /// smaller `k`), so that the caller may fetch what they will read before they come. Which
    /// event pops is the same.
    #[inline(always)]
    pub fn pop_ahead(&mut self, ahead: impl FnMut(E, usize)) -> Option<(SimTime, E)> {
        self.repair();
        if self.calendar.is_some() {
            return self.pop_calendar(ahead);
        }
        let top = match (self.slot, self.heap.first()) {
            (Some(held), Some(root)) if root.before(&held) => {
                let root = *root;
                self.hole = true;
                root
            }
            (Some(held), _) => {
                self.slot = None;
                held
            }
            (None, Some(&root)) => {
                self.hole = true;
                root
            }
            (None, None) => return None,
        };
        Some((SimTime::from_key(top.time), top.ev))
    }

    /// The earliest event's time and value, without removing it. `O(log n)` after a `pop`, else `O(1)`.
    pub fn peek(&mut self) -> Option<(SimTime, E)> {
        self.repair();
        if let Some(cal) = &mut self.calendar {
            let (_, top) = earliest(self.slot, self.heap.first().copied(), cal.front())?;
            return Some((SimTime::from_key(top.time), top.ev));
        }
        let top = match (self.slot, self.heap.first()) {
            (Some(held), Some(root)) if root.before(&held) => *root,
            (Some(held), _) => held,
            (None, root) => *root?,
        };
        Some((SimTime::from_key(top.time), top.ev))
    }

    /// Removes every event (the insertion counter keeps counting).
    pub fn clear(&mut self) {
        self.heap.clear();
        self.hole = false;
        self.slot = None;
        self.calendar = None;
        self.heap_limit = self.calendar_at - 1;
    }

    /// [`Self::push`] of `entry` (not kept in the slot) from [`Self::heap_limit`] on: while the
    /// events are in a calendar, into the calendar, or the heap if the calendar gives it back;
    /// else into the heap, which then turns into a calendar if it has reached
    /// [`Self::calendar_at`]. Out of line, like [`Self::pop_calendar`], so that the heap's push
    /// and pop stay as small as without a calendar: a calendar's events miss the cache anyway,
    /// and a call costs nothing beside that.
    #[inline(never)]
    fn push_beyond(&mut self, entry: Entry<E>) {
        let Some(cal) = &mut self.calendar else {
            self.heap_push(entry);
            if self.heap.len() >= self.calendar_at {
                self.turn_into_calendar();
            }
            return;
        };
        if let Some(early) = cal.insert(entry) {
            self.heap_push(early);
        }
    }

    /// [`Self::pop`] while the events are in a calendar: the earliest of the slot, the heap (the
    /// calendar's early events) and the calendar's front. When the calendar holds fewer than a
    /// quarter of [`Self::calendar_at`] events the queue turns back into one heap.
    #[inline(never)]
    fn pop_calendar(&mut self, ahead: impl FnMut(E, usize)) -> Option<(SimTime, E)> {
        let cal = self.calendar.as_mut().expect("a calendar");
        let (from, top) = earliest(self.slot, self.heap.first().copied(), cal.front_ahead(ahead))?;
        match from {
            Source::Slot => self.slot = None,
            Source::Heap => self.hole = true,
            Source::Calendar => {
                cal.pop_front();
                if cal.len() < self.calendar_at / 4 {
                    self.turn_into_heap();
                }
            }
        }
        Some((SimTime::from_key(top.time), top.ev))
    }

    /// The heap's events go into a calendar (the heap is left empty, for the calendar's early
    /// events).
    #[cold]
    #[inline(never)]
    fn turn_into_calendar(&mut self) {
        let entries = std::mem::take(&mut self.heap);
        self.heap = Vec::with_capacity(64);
        self.calendar = Some(Calendar::new(entries));
        self.heap_limit = 0;
    }

    /// The calendar's events and the heap's become one heap again: sorted, which is a heap.
    #[cold]
    #[inline(never)]
    fn turn_into_heap(&mut self) {
        self.repair();
        let mut all = self.calendar.take().expect("a calendar").drain();
        all.append(&mut self.heap);
        all.sort_unstable_by_key(Entry::key);
        self.heap = all;
        self.heap_limit = self.calendar_at - 1;
    }

    /// Adds `entry` to the heap: into the hole if there is one, else at the bottom.
    #[inline]
    fn heap_push(&mut self, entry: Entry<E>) {
        if self.hole {
            self.hole = false;
            self.sift_down(entry);
        } else {
            self.heap.push(entry);
            self.sift_up(self.heap.len() - 1);
        }
    }

    #[inline]
    fn repair(&mut self) {
        if self.hole {
            self.hole = false;
            let last = self.heap.pop().expect("a hole implies a non-empty heap");
            if !self.heap.is_empty() {
                self.sift_down(last);
            }
        }
    }

    #[inline]
    fn sift_up(&mut self, mut i: usize) {
        let heap = &mut self.heap[..];
        let entry = heap[i];
        while i > 0 {
            let parent = (i - 1) / ARITY;
            if !entry.before(&heap[parent]) {
                break;
            }
            heap[i] = heap[parent];
            i = parent;
        }
        heap[i] = entry;
    }

    /// Puts `entry` at the root (whose old content is discarded) and restores the heap.
    ///
    /// Bottom-up (Floyd): the hole first descends to a leaf along the smallest children, without
    /// testing `entry` on the way, then `entry` rises from there. A new event is usually later
    /// than most pending ones, so it rises little; and the choice of the smallest child is a
    /// branch-free tournament (conditional moves) instead of unpredictable branches.
    #[inline]
    fn sift_down(&mut self, entry: Entry<E>) {
        let heap = &mut self.heap[..];
        let n = heap.len();
        let mut i = 0;
        loop {
            let first = ARITY * i + 1;
            let child = if first + ARITY <= n {
                let a = first + usize::from(heap[first + 1].before(&heap[first]));
                let b = first + 2 + usize::from(heap[first + 3].before(&heap[first + 2]));
                if heap[b].before(&heap[a]) { b } else { a }
            } else if first < n {
                // The last, partial group: its children are leaves.
                (first + 1..n).fold(first, |c, j| if heap[j].before(&heap[c]) { j } else { c })
            } else {
                break;
            };
            heap[i] = heap[child];
            i = child;
        }
        while i > 0 {
            let parent = (i - 1) / ARITY;
            if !entry.before(&heap[parent]) {
                break;
            }
            heap[i] = heap[parent];
            i = parent;
        }
        heap[i] = entry;
    }
}

/// Where the earliest pending event is while the events are in a calendar.
enum Source {
    Slot,
    Heap,
    Calendar,
}

/// The earliest of the slot's entry, the heap's root and the calendar's front, and where it is.
#[inline(always)]
fn earliest<E: Copy>(
    slot: Option<Entry<E>>,
    root: Option<Entry<E>>,
    front: Option<Entry<E>>,
) -> Option<(Source, Entry<E>)> {
    let mut best = slot.map(|e| (Source::Slot, e));
    for (from, e) in [(Source::Heap, root), (Source::Calendar, front)] {
        if let Some(e) = e
            && best.as_ref().is_none_or(|(_, b)| e.before(b))
        {
            best = Some((from, e));
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::calendar::AHEAD_BUCKETS;
    use super::*;
    use rand::{RngExt, SeedableRng};

    fn t(x: f64) -> SimTime {
        SimTime::new(x)
    }

    #[test]
    fn equal_times_pop_in_insertion_order() {
        let mut q = EventQueue::new();
        for i in 0..10 {
            q.push(t(1.0), 0, i);
        }
        q.push(t(0.5), 0, 100);
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).map(|(_, e)| e).collect();
        assert_eq!(order, [100, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    }

    #[test]
    fn equal_times_pop_in_insertion_order_across_pop_push_interleaving() {
        // The hole path (pop then push) must keep FIFO among equal keys too.
        let mut q = EventQueue::new();
        q.push(t(2.0), 0, 'a');
        q.push(t(1.0), 0, 'x');
        assert_eq!(q.pop(), Some((t(1.0), 'x')));
        q.push(t(2.0), 0, 'b');
        q.push(t(2.0), 0, 'c');
        assert_eq!(q.pop(), Some((t(2.0), 'a')));
        q.push(t(2.0), 0, 'd');
        let rest: String = std::iter::from_fn(|| q.pop()).map(|(_, e)| e).collect();
        assert_eq!(rest, "bcd");
    }

    #[test]
    fn lower_class_wins_at_equal_times() {
        let mut q = EventQueue::new();
        q.push(t(1.0), 1, "post");
        q.push(t(1.0), 0, "departure");
        q.push(t(0.9), 1, "early post");
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).map(|(_, e)| e).collect();
        assert_eq!(order, ["early post", "departure", "post"]);
    }

    /// A queue that turns into a calendar at 16 pending events against one that stays a heap
    /// (checked against a sorted reference below). Each of 20 rounds grows to hundreds of
    /// pending events through random pushes and pops, then drains to none, so that the queue
    /// turns both ways every round. Times mix exponential delays, coarse ones (ties), zero delays
    /// (into the bucket being taken), far ones (beyond any window) and, now and then, times
    /// before the present (which the queue allows). Every pop and peek agrees, and so does the
    /// count.
    #[test]
    fn a_calendar_pops_exactly_as_the_heap_does() {
        fn pop_both(cal: &mut EventQueue<u32>, heap: &mut EventQueue<u32>) -> f64 {
            let want = heap.pop().map(|(t, e)| (t.key(), e));
            assert_eq!(cal.peek().map(|(t, e)| (t.key(), e)), want);
            assert_eq!(cal.pop().map(|(t, e)| (t.key(), e)), want);
            want.map_or(0.0, |(k, _)| SimTime::from_key(k).get())
        }
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(11);
        let mut cal = EventQueue::with_calendar_at(0, 16);
        let mut heap = EventQueue::with_calendar_at(0, usize::MAX);
        let (mut now, mut id, mut turned) = (0.0f64, 0u32, [0u32; 2]);
        for _ in 0..20 {
            let mut was = cal.calendar.is_some();
            for _ in 0..3_000 {
                if rng.random_bool(0.6) || heap.is_empty() {
                    let at = match rng.random_range(0..10u32) {
                        0..=4 => now - rng.random::<f64>().ln(),
                        5 | 6 => now.floor() + f64::from(rng.random_range(0..4u32)),
                        7 => now,
                        8 => now + 1e3 * rng.random::<f64>(),
                        _ => now * rng.random::<f64>(),
                    };
                    let class = rng.random_range(0..3u8);
                    cal.push(t(at), class, id);
                    heap.push(t(at), class, id);
                    id += 1;
                } else {
                    now = now.max(pop_both(&mut cal, &mut heap));
                }
                assert_eq!(cal.len(), heap.len());
                turned[usize::from(was)] += u32::from(was != cal.calendar.is_some());
                was = cal.calendar.is_some();
            }
            while !heap.is_empty() {
                now = now.max(pop_both(&mut cal, &mut heap));
                assert_eq!(cal.len(), heap.len());
                turned[usize::from(was)] += u32::from(was != cal.calendar.is_some());
                was = cal.calendar.is_some();
            }
            assert_eq!(cal.pop(), None);
        }
        assert!(
            turned[0] >= 20 && turned[1] >= 20,
            "turned into and out of a calendar: {turned:?}"
        );
    }

    /// `pop_ahead` against `pop` on a queue that turns into a calendar: the same events pop, and
    /// what it names ahead is pending, later than what pops, and bucket by bucket: at each
    /// naming every event named one bucket on is earlier than every one named two on.
    #[test]
    fn pop_ahead_pops_as_pop_does_and_names_pending_events_in_bucket_order() {
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(5);
        let mut ahead = EventQueue::with_calendar_at(0, 16);
        let mut plain = EventQueue::with_calendar_at(0, 16);
        let (mut now, mut times, mut pending) = (0.0f64, Vec::new(), Vec::new());
        let mut named = 0usize;
        for step in 0..40_000u32 {
            if step % 10_000 < 6_000 && rng.random_bool(0.6) || plain.is_empty() {
                let at = now - rng.random::<f64>().ln();
                let id = u32::try_from(times.len()).unwrap();
                ahead.push(t(at), 0, id);
                plain.push(t(at), 0, id);
                times.push(t(at).key());
                pending.push(true);
                continue;
            }
            // A pop may bring up several buckets (passing empty ones), each naming its own
            // round: events one bucket on, then two on.
            let mut rounds: Vec<[Vec<u64>; AHEAD_BUCKETS]> = vec![Default::default()];
            let got = ahead.pop_ahead(|id: u32, k| {
                assert!(pending[id as usize], "{id} named but not pending");
                if k == 1 && !rounds.last().unwrap()[1].is_empty() {
                    rounds.push(Default::default());
                }
                rounds.last_mut().unwrap()[k - 1].push(times[id as usize]);
            });
            let (at, id) = plain.pop().expect("an event");
            assert_eq!(got, Some((at, id)));
            pending[id as usize] = false;
            now = at.get();
            for [one, two] in &rounds {
                assert!(one.iter().chain(two).all(|&k| k >= at.key()));
                named += one.len() + two.len();
                if let (Some(one), Some(two)) = (one.iter().max(), two.iter().min()) {
                    assert!(one < two, "one bucket on {one} after two on {two}");
                }
            }
        }
        assert!(named > 10_000, "named {named}");
    }

    #[test]
    fn matches_a_sorted_reference_under_random_operations() {
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(3);
        let mut q = EventQueue::new();
        let mut reference: Vec<(u64, u64, u32)> = Vec::new(); // (time bits, seq, id)
        let mut seq = 0;
        for id in 0..20_000u32 {
            if rng.random_bool(0.55) || reference.is_empty() {
                // Coarse times so that ties are frequent.
                let time = t(f64::from(rng.random_range(0..50u32)));
                q.push(time, 0, id);
                reference.push((time.key(), seq, id));
                seq += 1;
            } else {
                let (i, _) = reference.iter().enumerate().min_by_key(|(_, e)| (e.0, e.1)).unwrap();
                let want = reference.swap_remove(i);
                let got = q.pop().unwrap();
                assert_eq!((got.0.key(), got.1), (want.0, want.2));
            }
            assert_eq!(q.len(), reference.len());
        }
    }
}

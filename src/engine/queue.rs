//! A binary min-heap of events keyed by `(time, class, insertion sequence)`.

use super::SimTime;

/// Bits of the tie-breaker given to the insertion counter; the class sits above them.
const SEQ_BITS: u32 = 56;

#[derive(Debug, Clone, Copy)]
struct Entry<E> {
    time: u64,
    /// `class << SEQ_BITS | seq`: lower classes first, then first-in first-out.
    tie: u64,
    ev: E,
}

impl<E> Entry<E> {
    #[inline(always)]
    fn before(&self, other: &Self) -> bool {
        (self.time, self.tie) < (other.time, other.tie)
    }
}

/// Pending events, earliest first; equal times pop by class, then in insertion order.
///
/// `pop` does not restore the heap at once: it leaves a hole at the root, and a `push` that follows
/// fills the hole with one sift-down (the "replace top" of a heap). Any other operation first
/// repairs the hole by moving the last entry into it. Either way, every operation is `O(log n)`.
#[derive(Debug, Clone)]
pub struct EventQueue<E> {
    heap: Vec<Entry<E>>,
    /// `heap[0]` has been taken and must be refilled before the heap is read.
    hole: bool,
    seq: u64,
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
        EventQueue { heap: Vec::with_capacity(cap), hole: false, seq: 0 }
    }

    /// Number of pending events. `O(1)`.
    #[inline]
    pub fn len(&self) -> usize {
        self.heap.len() - usize::from(self.hole)
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
        if self.hole {
            self.hole = false;
            self.heap[0] = entry;
            self.sift_down(0);
        } else {
            self.heap.push(entry);
            self.sift_up(self.heap.len() - 1);
        }
    }

    /// Removes and returns the earliest event with its time. `O(log n)`.
    #[inline]
    pub fn pop(&mut self) -> Option<(SimTime, E)> {
        self.repair();
        let top = *self.heap.first()?;
        self.hole = true;
        Some((SimTime::from_key(top.time), top.ev))
    }

    /// The earliest event's time and value, without removing it. `O(log n)` after a `pop`, else `O(1)`.
    pub fn peek(&mut self) -> Option<(SimTime, E)> {
        self.repair();
        self.heap.first().map(|e| (SimTime::from_key(e.time), e.ev))
    }

    /// Removes every event (the insertion counter keeps counting).
    pub fn clear(&mut self) {
        self.heap.clear();
        self.hole = false;
    }

    #[inline]
    fn repair(&mut self) {
        if self.hole {
            self.hole = false;
            let last = self.heap.pop().expect("a hole implies a non-empty heap");
            if !self.heap.is_empty() {
                self.heap[0] = last;
                self.sift_down(0);
            }
        }
    }

    #[inline]
    fn sift_up(&mut self, mut i: usize) {
        let entry = self.heap[i];
        while i > 0 {
            let parent = (i - 1) / 2;
            if !entry.before(&self.heap[parent]) {
                break;
            }
            self.heap[i] = self.heap[parent];
            i = parent;
        }
        self.heap[i] = entry;
    }

    #[inline]
    fn sift_down(&mut self, mut i: usize) {
        let n = self.heap.len();
        let entry = self.heap[i];
        loop {
            let left = 2 * i + 1;
            if left >= n {
                break;
            }
            let right = left + 1;
            let child =
                if right < n && self.heap[right].before(&self.heap[left]) { right } else { left };
            if !self.heap[child].before(&entry) {
                break;
            }
            self.heap[i] = self.heap[child];
            i = child;
        }
        self.heap[i] = entry;
    }
}

#[cfg(test)]
mod tests {
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

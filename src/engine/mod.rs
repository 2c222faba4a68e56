//! The discrete-event engine: a clock, a time-ordered event queue, and the replication loops.
//!
//! [`simulate`] runs one replication of a [`Farm`](crate::model::Farm) under a policy, an
//! information model and a workload. `replication.rs` holds the one event loop, built once per
//! replication from its parts: `event.rs` (the one `Event` and the one `Job`), `servers.rs` (FIFO
//! with `c` workers, processor sharing, and the article's one-worker FIFO), `parts.rs` (the
//! admission stage and the series, or nothing), `feedback.rs` (what feedback policies hear) and
//! `record.rs` (what a replication measures), and `lifecycle.rs` (the request lifecycle's state:
//! requests, attempts, retries) with `health.rs` (each client's view of the hosts' health,
//! SPEC §12). This is the one place events are handled.
//!
//! Events are kept in [`EventQueue`], a 4-ary min-heap keyed by `(time, class, sequence)`.
//! Equal times pop in class order and then in insertion order, so a run is a deterministic function
//! of its inputs. [`Simulation`] owns the queue and the clock: it refuses to schedule into the past,
//! and its clock never goes backwards.
//!
//! The queue is tuned for the pattern of a queueing model, where almost every event schedules
//! exactly one follow-up (an arrival schedules the next arrival, a departure the next departure of
//! the same server):
//!
//! - one entry is held beside the heap and `pop` takes the earlier of it and the heap's root; the
//!   next arrival, nearly always the earliest pending event, lives there and skips the heap;
//! - [`EventQueue::pop`] leaves a hole at the root that the next [`EventQueue::push`] fills with a
//!   single sift-down, so the common pop-then-push costs one `log n` pass instead of two;
//! - the sift-down is bottom-up and branch-free in its choice of child;
//! - from 32,768 pending events (a farm of tens of thousands of busy servers whose departures are
//!   events) the events go into time buckets sorted only when reached, and the heap keeps only
//!   those pushed into the bucket being taken: a push or pop then touches one bucket instead of a
//!   path through a heap larger than the cache. The order of the pops is the same.

mod classes;
mod event;
mod feedback;
mod health;
mod lifecycle;
mod parts;
mod queue;
mod record;
mod replication;
mod scheduled;
mod servers;

pub use crate::cancel::{CANCEL, Cancelled, cancel_point};
pub use crate::time::SimTime;
pub use feedback::{
    BUCKETS, Buckets, LoadReport, ProbeReply, Response, SpooledWindows, Window, Windows, bucket,
    bucket_quantile, bucket_upper,
};
pub use queue::EventQueue;
pub use record::{ARRIVALS, ARRIVALS_CHUNK};
pub use replication::{simulate, simulate_with};

/// Scheduling an event before the current time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PastEvent {
    /// The current time of the simulation.
    pub now: SimTime,
    /// The requested (earlier) time.
    pub at: SimTime,
}

impl std::fmt::Display for PastEvent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "event scheduled at {} before the current time {}", self.at, self.now)
    }
}

impl std::error::Error for PastEvent {}

/// A clock plus an event queue. Events of type `E` are handled by the caller's loop:
///
/// ```
/// use lbsim::engine::{SimTime, Simulation};
/// let mut sim = Simulation::new();
/// sim.schedule(SimTime::new(2.0), "b").unwrap();
/// sim.schedule(SimTime::new(1.0), "a").unwrap();
/// let mut seen = Vec::new();
/// while let Some(ev) = sim.next_event() {
///     seen.push((sim.now().get(), ev));
/// }
/// assert_eq!(seen, [(1.0, "a"), (2.0, "b")]);
/// ```
#[derive(Debug, Clone)]
pub struct Simulation<E> {
    now: SimTime,
    queue: EventQueue<E>,
}

impl<E: Copy> Default for Simulation<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E: Copy> Simulation<E> {
    /// An empty simulation at time 0.
    pub fn new() -> Self {
        Simulation { now: SimTime::ZERO, queue: EventQueue::new() }
    }

    /// An empty simulation whose queue has room for `cap` pending events.
    pub fn with_capacity(cap: usize) -> Self {
        Simulation { now: SimTime::ZERO, queue: EventQueue::with_capacity(cap) }
    }

    /// The current time: the time of the last event taken.
    #[inline]
    pub fn now(&self) -> SimTime {
        self.now
    }

    /// Schedules `ev` at `at` (class 0). Fails if `at` is before [`Self::now`].
    #[inline]
    pub fn schedule(&mut self, at: SimTime, ev: E) -> Result<(), PastEvent> {
        self.schedule_class(at, 0, ev)
    }

    /// Schedules `ev` at `at` in `class`: among events at the same time, lower classes pop first.
    #[inline]
    pub fn schedule_class(&mut self, at: SimTime, class: u8, ev: E) -> Result<(), PastEvent> {
        if at < self.now {
            return Err(PastEvent { now: self.now, at });
        }
        self.queue.push(at, class, ev);
        Ok(())
    }

    /// Takes the earliest event, advancing the clock to its time; `None` when nothing is pending.
    #[inline(always)]
    pub fn next_event(&mut self) -> Option<E> {
        self.next_event_ahead(|_, _| {})
    }

    /// [`Self::next_event`], naming events to come to `ahead` as [`EventQueue::pop_ahead`]
    /// does: `ahead(ev, k)` for an event `k` time buckets on (1 or 2), called only while many
    /// events are pending.
    #[inline(always)]
    pub fn next_event_ahead(&mut self, ahead: impl FnMut(E, usize)) -> Option<E> {
        let (t, ev) = self.queue.pop_ahead(ahead)?;
        debug_assert!(t >= self.now);
        self.now = t;
        Some(ev)
    }

    /// Number of pending events.
    pub fn pending(&self) -> usize {
        self.queue.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scheduling_into_the_past_is_an_error() {
        let mut sim = Simulation::new();
        sim.schedule(SimTime::new(5.0), 1).unwrap();
        assert_eq!(sim.next_event(), Some(1));
        let err = sim.schedule(SimTime::new(4.0), 2).unwrap_err();
        assert_eq!(err.at, SimTime::new(4.0));
        assert_eq!(sim.pending(), 0);
        // The present is allowed.
        sim.schedule(SimTime::new(5.0), 3).unwrap();
        assert_eq!(sim.next_event(), Some(3));
    }

    #[test]
    fn time_never_goes_backwards() {
        use rand::{RngExt, SeedableRng};
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(7);
        let mut sim = Simulation::new();
        for i in 0..100u32 {
            sim.schedule(SimTime::new(rng.random::<f64>() * 10.0), i).unwrap();
        }
        let mut last = sim.now();
        let mut taken = 0;
        while let Some(i) = sim.next_event() {
            assert!(sim.now() >= last, "clock went from {last} back to {}", sim.now());
            last = sim.now();
            taken += 1;
            // Each of the first events schedules a follow-up at a random time in the future.
            if i < 1000 {
                let dt = rng.random::<f64>();
                sim.schedule(SimTime::new(sim.now().get() + dt), i + 100).unwrap();
            }
        }
        assert_eq!(taken, 1100);
    }
}

//! The one `Event` and the one `Job` of the event loop ([`super::replication`]).
//!
//! An event is small (16 bytes), so that the queue's entries stay 32 bytes: what a probe reply
//! carries back is kept beside the queue and the event names it.

use super::{SimTime, Simulation};

/// Something that happens at an instant of a replication.
#[derive(Debug, Clone, Copy)]
pub(super) enum Event {
    Arrival,
    /// The departure from worker `id` (FIFO with slots), server `id` (one slot, PS), if `version`
    /// is still current.
    Departure {
        id: u32,
        version: u32,
    },
    /// `farm.events[i]` takes effect.
    Rate(u32),
    /// The board posts the queue lengths (in [`POST_CLASS`]).
    Post,
    /// The earliest request the admission stage delayed is let through.
    Release,
    /// The policy asks again for the request at the head of `client`'s backlog
    /// ([`Policy::HOLDS`](crate::policy::Policy::HOLDS)).
    Retry {
        client: u32,
    },
    // ----- feedback (see `feedback.rs`) -----
    /// The servers send their load reports.
    Report,
    /// The policy's timer.
    Timer,
    /// A probe sent by client `tag` (the tag of the request it was sent after) reaches server
    /// `server`.
    ProbeAt {
        server: u32,
        tag: u32,
    },
    /// A probe from `server` is back at client `tag` with what it read, kept as the loop's
    /// pending reply number `reply`.
    ProbeBack {
        server: u32,
        tag: u32,
        reply: u32,
    },
}

/// Board posts go after departures at the same instant: a request that leaves exactly when the
/// board is posted counts as gone.
pub(super) const POST_CLASS: u8 = 1;

/// A request.
#[derive(Debug, Clone, Copy)]
pub(super) struct Job {
    pub(super) arrival: f64,
    /// Demand: service time at rate 1.
    pub(super) work: f64,
    /// Arrival index (0 = the first arrival of the run, warm-up included).
    pub(super) index: u64,
    /// The policy's tag ([`Policy::tag`](crate::policy::Policy::tag)): which client sent it.
    pub(super) tag: u32,
}

/// Schedules `ev` at `at` (class 0), which is not in the past.
#[inline]
pub(super) fn schedule(sim: &mut Simulation<Event>, at: f64, ev: Event) {
    sim.schedule(SimTime::new(at), ev).expect("future");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_is_sixteen_bytes() {
        // The queue moves entries of (time, tie, event): 32 bytes with a 16-byte event.
        assert_eq!(std::mem::size_of::<Event>(), 16);
    }
}

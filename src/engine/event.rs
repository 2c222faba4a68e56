//! The one `Event` and the one `Job` of the event loop ([`super::replication`]).
//!
//! An event is small: its payload is one `u32` except for a departure, which carries the servers'
//! token ([`Servers::Token`](super::servers::Servers::Token)). With the article's servers the
//! token is a server index, so an event is 8 bytes and the queue's entries 24; servers whose
//! departures may go stale carry `(id, version)`, and their entries are 32 bytes. What a probe
//! carries is kept beside the queue and the event names it.

use super::{SimTime, Simulation};

/// Something that happens at an instant of a replication.
#[derive(Debug, Clone, Copy)]
pub(super) enum Event<D> {
    Arrival,
    /// A departure, as the servers name it: a server (one slot), or a worker (FIFO with slots) or
    /// server (PS) and the version under which it was scheduled.
    Departure(D),
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
    /// The probe in flight number `i` (which names its server and client) reaches its server.
    ProbeAt(u32),
    /// The probe in flight number `i` is back at its client with what it read.
    ProbeBack(u32),
    // ----- the request lifecycle (see `lifecycle.rs`) -----
    /// Attempt `a`'s response, delayed after its service, reaches its client.
    Respond(u32),
    /// Attempt `a`'s per-attempt timeout.
    Timeout(u32),
    /// Request `r`'s deadline.
    Deadline(u32),
    /// Request `r`'s retry is sent, its backoff over.
    Resend(u32),
    /// Request `r`'s next hedge is due (stale unless it is the time the request expects).
    Hedge(u32),
    /// The lifecycle's change `i` (a group's `delay` or `error`) takes effect.
    Change(u32),
    /// Outlier detection's review, every `[health] outlier.interval`.
    Review,
    /// Host `h`'s active health check: sent, or its result known (`[health] checks`).
    Check(u32),
}

/// Arrivals go after the other events at the same instant (departures above all): a request that
/// leaves exactly when another arrives has left when the policy looks. Servers that expire their
/// departures lazily, when they are next looked at, count a departure at the arrival's instant as
/// gone, and this makes every kind of server agree with them.
pub(super) const ARRIVAL_CLASS: u8 = 1;

/// Board posts go after departures and arrivals at the same instant: a request that leaves
/// exactly when the board is posted counts as gone, one that arrives then as present.
pub(super) const POST_CLASS: u8 = 2;

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
    /// Its traffic class (`[[classes]]`; 0 without classes). It fits in the padding after
    /// `tag`: a job is 32 bytes either way.
    pub(super) class: u32,
}

/// Schedules the next arrival at `at` (in [`ARRIVAL_CLASS`]), which is not in the past.
#[inline]
pub(super) fn schedule_arrival<D: Copy>(sim: &mut Simulation<Event<D>>, at: f64) {
    sim.schedule_class(SimTime::new(at), ARRIVAL_CLASS, Event::Arrival).expect("future");
}

/// Schedules `ev` at `at` (class 0), which is not in the past.
#[inline]
pub(super) fn schedule<D: Copy>(sim: &mut Simulation<Event<D>>, at: f64, ev: Event<D>) {
    sim.schedule(SimTime::new(at), ev).expect("future");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_is_eight_bytes_with_a_server_index() {
        // The queue moves entries of (time, tie, event): 24 bytes with an 8-byte event.
        assert_eq!(std::mem::size_of::<Event<u32>>(), 8);
        assert_eq!(std::mem::size_of::<Event<(u32, u32)>>(), 12);
        assert_eq!(std::mem::size_of::<Job>(), 32);
    }
}

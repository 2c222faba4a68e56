//! The servers: who is in service, and when they leave. One implementation of [`Servers`] per
//! kind, chosen once per replication ([`super::replication`]).
//!
//! What is modelled, per server `s` of rate `r_s` (the rate of each of its workers) with `c`
//! workers (`slots`):
//!
//! - **FIFO with `c` workers.** The server's requests form one FIFO queue; the `c` earliest
//!   present are in service, each at rate `r_s`, the others wait. Under `random` each server is
//!   an M/M/c queue, whose mean sojourn is given by Erlang's C formula (A. K. Erlang 1917; see
//!   Kleinrock, *Queueing Systems* vol. 1, §3.5, or [`mmn_mean`](crate::theory::mmn_mean)).
//!   With `c = 1` this is the article's server.
//! - **Processor sharing.** All `k` requests present are in service at once, each receiving work
//!   at `r_s * min(1, c / k)`: `c` processors shared equally, none idle while `c` or more
//!   requests are present (`c = 1` is Kleinrock's processor sharing, vol. 1 §4.8 and vol. 2
//!   §4.4; its M/G/1 mean sojourn `E[S] / (1 - rho)` does not depend on the service
//!   distribution beyond its mean).
//! - **Rate changes** ([`RateChange`](crate::model::RateChange)): at time `t` a group's servers take a
//!   new rate, which applies from then on to the work remaining at each of them, the requests in
//!   service included: a request in service with departure `d` under rate `r` has `(d - t) r` of
//!   work left, which now takes `(d - t) r / r'`.
//! - **The article's server** is FIFO with one worker. With fixed rates it is served by
//!   [`OneSlot`]: a queue per server whose front request is in service, and one pending
//!   departure per busy server; with rate changes, by [`FifoWorkers`] with `c = 1`. Both give
//!   the same departures at the same instants.
//!
//! Queue length, as policies and statistics see it, is the number of requests at the server,
//! waiting and in service.
//!
//! # Bookkeeping
//!
//! FIFO keeps, per server, a queue of the requests waiting and an array of its `c` workers, with
//! a stack of the idle ones: an arrival takes an idle worker in `O(1)` or joins the queue; the
//! departure event names its worker (`Departure((worker, version))`), so the request that leaves is
//! found in `O(1)`, and the worker takes the next waiting request.
//!
//! Processor sharing keeps, per server, its *virtual work* `V`: the work each request present has
//! received since the server was last empty (it grows at the per-request rate
//! `r_s min(1, c/k)`). A request arriving when `V = v` with demand `w` leaves when `V` reaches
//! its tag `v + w`, so the requests present are a min-heap of tags and the next departure is
//! `(min tag - V) / (r_s min(1, c/k))` away. Each server has one pending departure event,
//! rescheduled on every arrival, departure and rate change there.
//!
//! A request may also leave before it is served ([`Servers::cancel`], the request lifecycle's
//! `cancel = true`): FIFO removes it from its queue (searched from the head, where the requests
//! that time out first are) or frees its worker, which takes the next waiting request; PS
//! removes it from its heap and reschedules. [`OneSlot`] cannot (its departures never go
//! stale), so a replication that cancels uses [`FifoWorkers`] with one worker.
//!
//! Rescheduling leaves the old event in the queue. Each worker (FIFO) or server (PS) carries a
//! version, bumped whenever its departure is rescheduled; the event carries the version it was
//! scheduled under and is ignored when it no longer matches (a lazy deletion).

use std::cmp::{Ordering, Reverse};
use std::collections::{BinaryHeap, VecDeque};

use super::Simulation;
use super::event::{Event, Job, schedule};
use crate::model::LoadTable;

/// The servers of one discipline: who is in service, and when they leave.
pub(super) trait Servers {
    /// What a departure event carries to name the departure.
    type Token: Copy + std::fmt::Debug;
    /// Requests at server `s`, waiting and in service.
    fn len(&self, s: usize) -> u32;
    /// `job` joins server `s` at `t`.
    fn arrive(&mut self, s: usize, job: Job, t: f64, sim: &mut Simulation<Event<Self::Token>>);
    /// The departure event `token` at `t`: the server and the request that leaves, or `None` for
    /// a stale event.
    fn depart(
        &mut self,
        token: Self::Token,
        t: f64,
        sim: &mut Simulation<Event<Self::Token>>,
    ) -> Option<(usize, Job)>;
    /// True for servers whose departures are not events ([`CountedSlot`]): they keep the table the
    /// policy reads ([`Self::counted`]), the loop sets its present at each arrival and joins a
    /// request through it, recording the request then, with the departure time the join returns.
    const COUNTS_DEPARTURES: bool = false;

    /// The table of [`Self::COUNTS_DEPARTURES`] servers; `None` for the others.
    #[inline(always)]
    fn counted(&self) -> Option<&LoadTable> {
        None
    }

    /// The same table, to update.
    #[inline(always)]
    fn counted_mut(&mut self) -> Option<&mut LoadTable> {
        None
    }

    /// Asks for what a request joining server `s`, or leaving it, reads of the server to be
    /// brought into the cache: a hint ([`crate::cache::prefetch`]) for a pick or a departure to
    /// come. The default fetches nothing.
    #[inline(always)]
    fn prefetch(&self, _s: usize) {}

    /// The server a departure event names, for the loop to fetch it before its turn; `None` (the
    /// default) where the loop does not.
    #[inline(always)]
    fn departing(_token: Self::Token) -> Option<usize> {
        None
    }

    /// Server `s`'s request next in line (the one a departure puts in service) is brought into
    /// the cache, once [`Self::prefetch`] has brought in the server: the second step of a fetch
    /// for a departure to come. The default fetches nothing.
    #[inline(always)]
    fn prefetch_next(&self, _s: usize) {}

    /// Server `s` works at `rate` from `t` on.
    fn set_rate(&mut self, s: usize, rate: f64, t: f64, sim: &mut Simulation<Event<Self::Token>>);
    /// The request whose `Job::index` is `index` leaves server `s` at `t`, served or not: it
    /// and the work it received (0 if it was waiting). Panics if it is not there.
    fn cancel(
        &mut self,
        s: usize,
        index: u64,
        t: f64,
        sim: &mut Simulation<Event<Self::Token>>,
    ) -> (Job, f64);
}

/// A departure event of the servers that name it by worker or server and version.
type Versioned = Event<(u32, u32)>;

// ===== The article's server: FIFO, one worker, fixed rate =====

/// Per-server FIFO queues whose front request is in service: FIFO with one worker, for farms
/// whose rates never change (the departure of a request is scheduled once, when it starts, so
/// no event is ever stale: the event names the server alone).
///
/// The request in service, the server's length and its rate share one cache line; the requests
/// waiting behind it are in the server's queue of its own (unallocated until one waits). Joining
/// an idle server or leaving one that nobody waits at then reads one line: on a large farm a
/// miss, where a queue's header, its buffer and the rate were three (`perf` put 30% of
/// p2c-pewma's time at n = 10^6 on the header's).
#[derive(Debug)]
pub(super) struct OneSlot {
    lines: Vec<SlotLine>,
    waiting: Vec<VecDeque<Job>>,
}

/// One [`OneSlot`] server: its request in service (meaningful while `len > 0`), how many it
/// holds in all (that one and those waiting), and its rate.
#[derive(Debug, Clone, Copy)]
#[repr(C, align(64))]
struct SlotLine {
    front: Job,
    rate: f64,
    len: u32,
}

impl OneSlot {
    pub(super) fn new(rates: &[f64]) -> Self {
        let idle = Job { arrival: 0.0, work: 0.0, index: 0, tag: 0, class: 0 };
        let line = |&rate| SlotLine { front: idle, rate, len: 0 };
        OneSlot {
            lines: rates.iter().map(line).collect(),
            waiting: vec![VecDeque::new(); rates.len()],
        }
    }
}

impl Servers for OneSlot {
    type Token = u32;

    #[inline(always)]
    fn len(&self, s: usize) -> u32 {
        self.lines[s].len
    }

    #[inline(always)]
    fn arrive(&mut self, s: usize, job: Job, t: f64, sim: &mut Simulation<Event<u32>>) {
        let line = &mut self.lines[s];
        line.len += 1;
        if line.len == 1 {
            line.front = job;
            let done = t + job.work / line.rate;
            schedule(sim, done, Event::Departure(s as u32));
        } else {
            self.waiting[s].push_back(job);
        }
    }

    /// The line and the header of the waiting queue (the queue's buffer is read through the
    /// header: [`Self::prefetch_next`] fetches it once the header is in).
    #[inline(always)]
    fn prefetch(&self, s: usize) {
        crate::cache::prefetch(&self.lines[s]);
        crate::cache::prefetch(&self.waiting[s]);
    }

    #[inline(always)]
    fn departing(id: u32) -> Option<usize> {
        Some(id as usize)
    }

    #[inline(always)]
    fn prefetch_next(&self, s: usize) {
        if let Some(next) = self.waiting[s].front() {
            crate::cache::prefetch(next);
        }
    }

    #[inline(always)]
    fn depart(
        &mut self,
        id: u32,
        t: f64,
        sim: &mut Simulation<Event<u32>>,
    ) -> Option<(usize, Job)> {
        let s = id as usize;
        let line = &mut self.lines[s];
        debug_assert!(line.len > 0, "a departure from an empty server");
        let job = line.front;
        line.len -= 1;
        if line.len > 0 {
            let next = self.waiting[s].pop_front().expect("as many waiting as the line counts");
            line.front = next;
            let done = t + next.work / line.rate;
            schedule(sim, done, Event::Departure(id));
        }
        Some((s, job))
    }

    fn set_rate(&mut self, _s: usize, _rate: f64, _t: f64, _sim: &mut Simulation<Event<u32>>) {
        unreachable!("one-slot servers serve only farms whose rates do not change")
    }

    fn cancel(&mut self, _: usize, _: u64, _: f64, _: &mut Simulation<Event<u32>>) -> (Job, f64) {
        unreachable!("one-slot servers serve only replications that do not cancel")
    }
}

// ===== The article's server, its departures counted when read =====

/// FIFO with one worker and fixed rates, as [`OneSlot`], whose departures are not events: a
/// request's departure time is known when it joins (`max(arrival, the last departure there) +
/// work / rate`), so each server keeps the departure times of its requests in the table the
/// policy reads ([`LoadTable::with_departures`]), and a server's length at `t` is the number of
/// them after `t`. Chosen only for policies that read lengths alone
/// ([`Policy::READS_LENGTHS_ONLY`](crate::policy::Policy::READS_LENGTHS_ONLY)) under live
/// information, with no part that hears departures as they happen; each request is then recorded
/// as it joins ([`LoadTable::join`], the same arithmetic as [`OneSlot`]'s, so the same
/// departure times), with the departure it will have, instead of in time order as it
/// leaves, which changes nothing the replication reports (its sums do not depend on the order)
/// unless a guard stops the replication before some have left: the loop then runs it again with
/// [`OneSlot`]. The event queue holds only the next arrival.
#[derive(Debug)]
pub(super) struct CountedSlot {
    table: LoadTable,
}

impl CountedSlot {
    pub(super) fn new(rates: &[f64]) -> Self {
        CountedSlot { table: LoadTable::with_departures(rates) }
    }
}

impl Servers for CountedSlot {
    type Token = u32;
    const COUNTS_DEPARTURES: bool = true;

    #[inline(always)]
    fn len(&self, s: usize) -> u32 {
        self.table.get(s)
    }

    /// The loop joins a request through the table ([`LoadTable::join`]), which returns its
    /// departure time.
    fn arrive(&mut self, _: usize, _: Job, _: f64, _: &mut Simulation<Event<u32>>) {
        unreachable!("a request joins counted servers through `join`")
    }

    fn depart(&mut self, _: u32, _: f64, _: &mut Simulation<Event<u32>>) -> Option<(usize, Job)> {
        unreachable!("counted servers schedule no departures")
    }

    #[inline(always)]
    fn counted(&self) -> Option<&LoadTable> {
        Some(&self.table)
    }

    #[inline(always)]
    fn counted_mut(&mut self) -> Option<&mut LoadTable> {
        Some(&mut self.table)
    }

    fn set_rate(&mut self, _s: usize, _rate: f64, _t: f64, _sim: &mut Simulation<Event<u32>>) {
        unreachable!("counted servers serve only farms whose rates do not change")
    }

    fn cancel(&mut self, _: usize, _: u64, _: f64, _: &mut Simulation<Event<u32>>) -> (Job, f64) {
        unreachable!("counted servers serve only replications that do not cancel")
    }
}

// ===== FIFO with c workers =====

/// One worker of a server with `c` of them (FIFO here, by priority in
/// [`super::scheduled::PriorityWorkers`]): what it serves, when that leaves at the current rate,
/// and the version its departure event carries.
#[derive(Debug, Clone, Copy)]
pub(super) struct Worker {
    pub(super) job: Job,
    /// When `job` leaves at the current rate.
    pub(super) done: f64,
    pub(super) version: u32,
    pub(super) busy: bool,
}

impl Worker {
    /// An idle worker.
    pub(super) const IDLE: Worker = Worker {
        job: Job { arrival: 0.0, work: 0.0, index: 0, tag: 0, class: 0 },
        done: 0.0,
        version: 0,
        busy: false,
    };
}

/// Per-server FIFO queues, each served by `c` workers.
#[derive(Debug)]
pub(super) struct FifoWorkers {
    c: usize,
    rates: Vec<f64>,
    waiting: Vec<VecDeque<Job>>,
    /// Busy workers per server.
    busy: Vec<u32>,
    /// Worker `s * c + j` is server `s`'s `j`-th.
    workers: Vec<Worker>,
    /// `idle[s * c..s * c + c - busy[s]]`: server `s`'s idle workers (a stack).
    idle: Vec<u32>,
}

impl FifoWorkers {
    pub(super) fn new(rates: &[f64], c: usize) -> Self {
        let n = rates.len();
        FifoWorkers {
            c,
            rates: rates.to_vec(),
            waiting: vec![VecDeque::new(); n],
            busy: vec![0; n],
            workers: vec![Worker::IDLE; n * c],
            idle: (0..(n * c) as u32).collect(),
        }
    }

    /// Worker `w` of server `s` starts `job` at `t`.
    #[inline]
    fn start(&mut self, s: usize, w: usize, job: Job, t: f64, sim: &mut Simulation<Versioned>) {
        let worker = &mut self.workers[w];
        worker.version = worker.version.wrapping_add(1);
        worker.job = job;
        worker.busy = true;
        worker.done = t + job.work / self.rates[s];
        schedule(sim, worker.done, Event::Departure((w as u32, worker.version)));
    }
}

impl Servers for FifoWorkers {
    type Token = (u32, u32);

    #[inline]
    fn len(&self, s: usize) -> u32 {
        self.busy[s] + self.waiting[s].len() as u32
    }

    #[inline]
    fn arrive(&mut self, s: usize, job: Job, t: f64, sim: &mut Simulation<Versioned>) {
        let busy = self.busy[s] as usize;
        if busy < self.c {
            let w = self.idle[s * self.c + self.c - busy - 1] as usize;
            self.busy[s] += 1;
            self.start(s, w, job, t, sim);
        } else {
            self.waiting[s].push_back(job);
        }
    }

    #[inline]
    fn depart(
        &mut self,
        (id, version): (u32, u32),
        t: f64,
        sim: &mut Simulation<Versioned>,
    ) -> Option<(usize, Job)> {
        let w = id as usize;
        let worker = self.workers[w];
        if !worker.busy || worker.version != version {
            return None;
        }
        let s = w / self.c;
        if let Some(next) = self.waiting[s].pop_front() {
            self.start(s, w, next, t, sim);
        } else {
            self.workers[w].busy = false;
            let busy = self.busy[s] as usize;
            self.idle[s * self.c + self.c - busy] = id;
            self.busy[s] -= 1;
        }
        Some((s, worker.job))
    }

    fn set_rate(&mut self, s: usize, rate: f64, t: f64, sim: &mut Simulation<Versioned>) {
        let old = std::mem::replace(&mut self.rates[s], rate);
        if old == rate {
            return;
        }
        for w in s * self.c..(s + 1) * self.c {
            let worker = &mut self.workers[w];
            if worker.busy {
                let remaining = (worker.done - t) * old;
                worker.done = t + remaining / rate;
                worker.version = worker.version.wrapping_add(1);
                let ev = Event::Departure((w as u32, worker.version));
                schedule(sim, worker.done, ev);
            }
        }
    }

    fn cancel(
        &mut self,
        s: usize,
        index: u64,
        t: f64,
        sim: &mut Simulation<Versioned>,
    ) -> (Job, f64) {
        let waiting = &mut self.waiting[s];
        if let Some(i) = waiting.iter().position(|j| j.index == index) {
            return (waiting.remove(i).expect("a position found"), 0.0);
        }
        let w = (s * self.c..(s + 1) * self.c)
            .find(|&w| self.workers[w].busy && self.workers[w].job.index == index)
            .expect("a cancelled request is at its server");
        let worker = self.workers[w];
        let received = worker.job.work - (worker.done - t) * self.rates[s];
        // As at a departure: the worker takes the next waiting request or goes idle (its
        // pending departure is then stale: the worker is idle, or its version has moved on).
        if let Some(next) = self.waiting[s].pop_front() {
            self.start(s, w, next, t, sim);
        } else {
            self.workers[w].busy = false;
            let busy = self.busy[s] as usize;
            self.idle[s * self.c + self.c - busy] = w as u32;
            self.busy[s] -= 1;
        }
        (worker.job, received.max(0.0))
    }
}

// ===== Processor sharing =====

/// A request at a PS server and the virtual work at which it leaves.
#[derive(Debug, Clone, Copy)]
struct Tagged {
    tag: f64,
    job: Job,
}

impl Tagged {
    /// Tags are non-negative, so their bits order like them; the arrival index breaks ties.
    fn key(&self) -> (u64, u64) {
        (self.tag.to_bits(), self.job.index)
    }
}

impl PartialEq for Tagged {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}

impl Eq for Tagged {}

impl PartialOrd for Tagged {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Tagged {
    fn cmp(&self, other: &Self) -> Ordering {
        self.key().cmp(&other.key())
    }
}

/// Processor-sharing servers with `c` processors each.
#[derive(Debug)]
pub(super) struct SharedServers {
    c: f64,
    rates: Vec<f64>,
    /// Work each request present has received since the server was last empty.
    virtual_work: Vec<f64>,
    /// When `virtual_work` was last brought up to date.
    since: Vec<f64>,
    present: Vec<BinaryHeap<Reverse<Tagged>>>,
    version: Vec<u32>,
}

impl SharedServers {
    pub(super) fn new(rates: &[f64], c: u32) -> Self {
        let n = rates.len();
        SharedServers {
            c: f64::from(c),
            rates: rates.to_vec(),
            virtual_work: vec![0.0; n],
            since: vec![0.0; n],
            present: vec![BinaryHeap::new(); n],
            version: vec![0; n],
        }
    }

    /// The rate at which each request present at `s` receives work (`s` not empty).
    #[inline]
    fn share(&self, s: usize) -> f64 {
        let k = self.present[s].len() as f64;
        self.rates[s] * (self.c / k).min(1.0)
    }

    /// Brings `s`'s virtual work up to `t`.
    #[inline]
    fn advance(&mut self, s: usize, t: f64) {
        if !self.present[s].is_empty() {
            self.virtual_work[s] += (t - self.since[s]) * self.share(s);
        }
        self.since[s] = t;
    }

    /// Replaces `s`'s pending departure by one for its current state.
    #[inline]
    fn reschedule(&mut self, s: usize, t: f64, sim: &mut Simulation<Versioned>) {
        self.version[s] = self.version[s].wrapping_add(1);
        if let Some(Reverse(first)) = self.present[s].peek() {
            let dt = ((first.tag - self.virtual_work[s]) / self.share(s)).max(0.0);
            schedule(sim, t + dt, Event::Departure((s as u32, self.version[s])));
        }
    }
}

impl Servers for SharedServers {
    type Token = (u32, u32);

    #[inline]
    fn len(&self, s: usize) -> u32 {
        self.present[s].len() as u32
    }

    #[inline]
    fn arrive(&mut self, s: usize, job: Job, t: f64, sim: &mut Simulation<Versioned>) {
        self.advance(s, t);
        self.present[s].push(Reverse(Tagged { tag: self.virtual_work[s] + job.work, job }));
        self.reschedule(s, t, sim);
    }

    #[inline]
    fn depart(
        &mut self,
        (id, version): (u32, u32),
        t: f64,
        sim: &mut Simulation<Versioned>,
    ) -> Option<(usize, Job)> {
        let s = id as usize;
        if self.version[s] != version {
            return None;
        }
        let Reverse(first) = self.present[s].pop().expect("a departure from an empty server");
        // The event fires when the virtual work reaches the tag: take the tag itself, so that
        // rounding does not accumulate.
        self.virtual_work[s] = if self.present[s].is_empty() { 0.0 } else { first.tag };
        self.since[s] = t;
        self.reschedule(s, t, sim);
        Some((s, first.job))
    }

    fn set_rate(&mut self, s: usize, rate: f64, t: f64, sim: &mut Simulation<Versioned>) {
        if self.rates[s] == rate {
            return;
        }
        self.advance(s, t);
        self.rates[s] = rate;
        self.reschedule(s, t, sim);
    }

    fn cancel(
        &mut self,
        s: usize,
        index: u64,
        t: f64,
        sim: &mut Simulation<Versioned>,
    ) -> (Job, f64) {
        self.advance(s, t);
        let mut present = std::mem::take(&mut self.present[s]).into_vec();
        let i = present
            .iter()
            .position(|Reverse(x)| x.job.index == index)
            .expect("a cancelled request is at its server");
        let Reverse(gone) = present.swap_remove(i);
        self.present[s] = BinaryHeap::from(present);
        // It has received the virtual work since it arrived: its demand less what it lacked.
        let received = gone.job.work - (gone.tag - self.virtual_work[s]);
        if self.present[s].is_empty() {
            self.virtual_work[s] = 0.0;
        }
        self.reschedule(s, t, sim);
        (gone.job, received.max(0.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::SimTime;

    /// Runs the servers through `arrivals` (time, server, work; in time order) and returns the
    /// departures (time, arrival index) in order.
    fn trace<V: Servers>(mut servers: V, arrivals: &[(f64, usize, f64)]) -> Vec<(f64, u64)> {
        let mut sim = Simulation::new();
        let mut out = Vec::new();
        let mut next = 0;
        loop {
            // The earliest pending departure, peeked on a copy.
            let mut probe = sim.clone();
            let departure = probe.next_event().map(|_| probe.now().get());
            match (arrivals.get(next), departure) {
                (Some(&(t, s, work)), d) if d.is_none_or(|d| t < d) => {
                    let job = Job { arrival: t, work, index: next as u64, tag: 0, class: 0 };
                    servers.arrive(s, job, t, &mut sim);
                    next += 1;
                }
                (_, Some(_)) => {
                    let Some(Event::Departure(token)) = sim.next_event() else {
                        unreachable!("only departures are scheduled")
                    };
                    let t = sim.now().get();
                    if let Some((_, job)) = servers.depart(token, t, &mut sim) {
                        out.push((t, job.index));
                    }
                }
                _ => return out,
            }
        }
    }

    #[test]
    fn two_workers_serve_the_two_earliest_and_either_may_leave_first() {
        // Server 0 with two workers: jobs of work 5, 1, 1 at t = 0, 0.5, 0.6. The first two start
        // at once; the second leaves at 1.5 and the third takes its worker, leaving at 2.5; the
        // first leaves at 5.
        let out =
            trace(FifoWorkers::new(&[1.0], 2), &[(0.0, 0, 5.0), (0.5, 0, 1.0), (0.6, 0, 1.0)]);
        assert_eq!(out, [(1.5, 1), (2.5, 2), (5.0, 0)]);
    }

    #[test]
    fn one_slot_is_fifo_with_one_worker() {
        // Server 0 (rate 1): work 2 and 1 at t = 0 and 0.5 leave at 2 and 3. Server 1 (rate
        // 0.5): work 1 at t = 1 leaves at 3 too, and first: its departure was scheduled at 1,
        // that of server 0's second request at 2.
        let arrivals = [(0.0, 0, 2.0), (0.5, 0, 1.0), (1.0, 1, 1.0)];
        let expected = [(2.0, 0), (3.0, 2), (3.0, 1)];
        assert_eq!(trace(OneSlot::new(&[1.0, 0.5]), &arrivals), expected);
        assert_eq!(trace(FifoWorkers::new(&[1.0, 0.5], 1), &arrivals), expected);
    }

    #[test]
    fn processor_sharing_splits_the_rate_among_those_present() {
        // One processor: work 2 at t = 0 alone until 1 (1 done), then shared with work 0.5 from
        // t = 1: each gets 1/2, so the second leaves at 2 and the first, with 0.5 left, at 2.5.
        let out = trace(SharedServers::new(&[1.0], 1), &[(0.0, 0, 2.0), (1.0, 0, 0.5)]);
        assert_eq!(out, [(2.0, 1), (2.5, 0)]);
        // Two processors: two requests present each get a full processor.
        let out = trace(SharedServers::new(&[1.0], 2), &[(0.0, 0, 2.0), (1.0, 0, 0.5)]);
        assert_eq!(out, [(1.5, 1), (2.0, 0)]);
    }

    /// Cancels attempt `index` at server 0 at `t` after `arrivals` (all at server 0), then
    /// returns the work it received and the departures that follow.
    fn cancel_trace<V: Servers>(
        mut servers: V,
        arrivals: &[(f64, f64)],
        index: u64,
        at: f64,
    ) -> (f64, Vec<(f64, u64)>) {
        let mut sim = Simulation::new();
        for (i, &(t, work)) in arrivals.iter().enumerate() {
            servers.arrive(
                0,
                Job { arrival: t, work, index: i as u64, tag: 0, class: 0 },
                t,
                &mut sim,
            );
        }
        let mut out = Vec::new();
        let mut received = None;
        sim.schedule(SimTime::new(at), Event::Rate(0)).unwrap();
        while let Some(ev) = sim.next_event() {
            let t = sim.now().get();
            match ev {
                Event::Rate(_) => {
                    let (job, r) = servers.cancel(0, index, t, &mut sim);
                    assert_eq!(job.index, index);
                    received = Some(r);
                }
                Event::Departure(token) => {
                    if let Some((_, j)) = servers.depart(token, t, &mut sim) {
                        out.push((t, j.index));
                    }
                }
                _ => unreachable!(),
            }
        }
        (received.unwrap(), out)
    }

    #[test]
    fn a_cancelled_request_leaves_its_queue_or_frees_its_worker() {
        // FIFO, one worker: work 2, 1, 1 at t = 0. Cancelling the waiting second at t = 1 leaves
        // the others as if it never came (0 received); cancelling the first in service at t = 1
        // (1 received) starts the second at once: it leaves at 2, the third at 3.
        let jobs = [(0.0, 2.0), (0.0, 1.0), (0.0, 1.0)];
        let (r, out) = cancel_trace(FifoWorkers::new(&[1.0], 1), &jobs, 1, 1.0);
        assert_eq!((r, out), (0.0, vec![(2.0, 0), (3.0, 2)]));
        let (r, out) = cancel_trace(FifoWorkers::new(&[1.0], 1), &jobs, 0, 1.0);
        assert_eq!((r, out), (1.0, vec![(2.0, 1), (3.0, 2)]));
        // Two workers: the second in service is cancelled at 0.5; the third takes its worker.
        let (r, out) = cancel_trace(FifoWorkers::new(&[1.0], 2), &jobs, 1, 0.5);
        assert_eq!((r, out), (0.5, vec![(1.5, 2), (2.0, 0)]));
    }

    #[test]
    fn a_cancelled_request_leaves_processor_sharing() {
        // Work 2 and 1 shared from t = 0: each receives 0.5 by t = 1, when the first is
        // cancelled; the second, alone, has 0.5 left and leaves at 1.5.
        let (r, out) =
            cancel_trace(SharedServers::new(&[1.0], 1), &[(0.0, 2.0), (0.0, 1.0)], 0, 1.0);
        assert_eq!((r, out), (0.5, vec![(1.5, 1)]));
        // The last one present is cancelled: nothing is left to leave.
        let (r, out) = cancel_trace(SharedServers::new(&[1.0], 1), &[(0.0, 2.0)], 0, 1.0);
        assert_eq!((r, out), (1.0, vec![]));
    }

    #[test]
    fn a_rate_change_applies_to_the_request_in_service() {
        // Work 2 from t = 0 at rate 1; at t = 1 the rate halves: 1 left takes 2 more, so it
        // leaves at 3 (the departure scheduled for 2 is stale).
        fn halved(mut servers: impl Servers<Token = (u32, u32)>) -> Option<(f64, u64)> {
            let mut sim = Simulation::new();
            let job = Job { arrival: 0.0, work: 2.0, index: 0, tag: 0, class: 0 };
            servers.arrive(0, job, 0.0, &mut sim);
            sim.schedule(SimTime::new(1.0), Event::Rate(0)).unwrap();
            let mut left = None;
            while let Some(ev) = sim.next_event() {
                let t = sim.now().get();
                match ev {
                    Event::Rate(_) => servers.set_rate(0, 0.5, t, &mut sim),
                    Event::Departure(token) => {
                        if let Some((_, j)) = servers.depart(token, t, &mut sim) {
                            left = Some((t, j.index));
                        }
                    }
                    _ => unreachable!(),
                }
            }
            left
        }
        assert_eq!(halved(FifoWorkers::new(&[1.0], 1)), Some((3.0, 0)), "fifo");
        assert_eq!(halved(SharedServers::new(&[1.0], 1)), Some((3.0, 0)), "ps");
    }
}

//! The general event loop: servers with several workers, processor sharing, and rate changes.
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
//!
//! Queue length, as policies and statistics see it, is the number of requests at the server,
//! waiting and in service.
//!
//! # Bookkeeping
//!
//! FIFO keeps, per server, a queue of the requests waiting and an array of its `c` workers, with
//! a stack of the idle ones: an arrival takes an idle worker in `O(1)` or joins the queue; the
//! departure event names its worker (`Departure { id: worker }`), so the request that leaves is
//! found in `O(1)`, and the worker takes the next waiting request.
//!
//! Processor sharing keeps, per server, its *virtual work* `V`: the work each request present has
//! received since the server was last empty (it grows at the per-request rate
//! `r_s min(1, c/k)`). A request arriving when `V = v` with demand `w` leaves when `V` reaches
//! its tag `v + w`, so the requests present are a min-heap of tags and the next departure is
//! `(min tag - V) / (r_s min(1, c/k))` away. Each server has one pending departure event,
//! rescheduled on every arrival, departure and rate change there.
//!
//! Rescheduling leaves the old event in the queue. Each worker (FIFO) or server (PS) carries a
//! version, bumped whenever its departure is rescheduled; the event carries the version it was
//! scheduled under and is ignored when it no longer matches (a lazy deletion).

use std::cmp::{Ordering, Reverse};
use std::collections::{BinaryHeap, VecDeque};

use super::feedback::{Monitor, ProbeReply, WindowRecorder};
use super::record::Recorder;
use super::replication::POST_CLASS;
use super::{SimTime, Simulation};
use crate::admission::{Decision, Gate};
use crate::info::InfoModel;
use crate::model::{Discipline, Farm, RunLength, SimOptions};
use crate::policy::Policy;
use crate::rng::{SimRng, StreamKey};
use crate::stats::RepStats;
use crate::workload::{Demands, Gaps};

#[derive(Debug, Clone, Copy)]
enum Event {
    Arrival,
    /// The departure from worker `id` (FIFO) or server `id` (PS), if `version` is still current.
    Departure {
        id: u32,
        version: u32,
    },
    /// `farm.events[i]` takes effect.
    Rate(u32),
    Post,
    /// The earliest request the admission stage delayed is let through.
    Release,
    /// The policy asks again for the request at the head of `client`'s backlog
    /// ([`Policy::HOLDS`]).
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
    /// A probe from `server` is back at client `tag` with what it read.
    ProbeBack {
        server: u32,
        tag: u32,
        rif: u32,
        latency: f64,
    },
}

#[derive(Debug, Clone, Copy)]
struct Job {
    arrival: f64,
    /// Demand: service time at rate 1.
    work: f64,
    /// Arrival index (0 = the first arrival of the run, warm-up included).
    index: u64,
    /// The policy's tag ([`Policy::tag`]): which client sent the request.
    tag: u32,
}

#[inline]
fn schedule(sim: &mut Simulation<Event>, at: f64, ev: Event) {
    sim.schedule(SimTime::new(at), ev).expect("future");
}

/// The servers of one discipline: who is in service, and when they leave.
trait Servers {
    /// Requests at server `s`, waiting and in service.
    fn len(&self, s: usize) -> u32;
    /// `job` joins server `s` at `t`.
    fn arrive(&mut self, s: usize, job: Job, t: f64, sim: &mut Simulation<Event>);
    /// The departure event `id`/`version` at `t`: the server and the request that leaves, or
    /// `None` for a stale event.
    fn depart(
        &mut self,
        id: u32,
        version: u32,
        t: f64,
        sim: &mut Simulation<Event>,
    ) -> Option<(usize, Job)>;
    /// Server `s` works at `rate` from `t` on.
    fn set_rate(&mut self, s: usize, rate: f64, t: f64, sim: &mut Simulation<Event>);
}

// ===== FIFO with c workers =====

#[derive(Debug, Clone, Copy)]
struct Worker {
    job: Job,
    /// When `job` leaves at the current rate.
    done: f64,
    version: u32,
    busy: bool,
}

/// Per-server FIFO queues, each served by `c` workers.
#[derive(Debug)]
struct FifoWorkers {
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
    fn new(rates: &[f64], c: usize) -> Self {
        let n = rates.len();
        let none = Job { arrival: 0.0, work: 0.0, index: 0, tag: 0 };
        FifoWorkers {
            c,
            rates: rates.to_vec(),
            waiting: vec![VecDeque::new(); n],
            busy: vec![0; n],
            workers: vec![Worker { job: none, done: 0.0, version: 0, busy: false }; n * c],
            idle: (0..(n * c) as u32).collect(),
        }
    }

    /// Worker `w` of server `s` starts `job` at `t`.
    #[inline]
    fn start(&mut self, s: usize, w: usize, job: Job, t: f64, sim: &mut Simulation<Event>) {
        let worker = &mut self.workers[w];
        worker.version = worker.version.wrapping_add(1);
        worker.job = job;
        worker.busy = true;
        worker.done = t + job.work / self.rates[s];
        schedule(sim, worker.done, Event::Departure { id: w as u32, version: worker.version });
    }
}

impl Servers for FifoWorkers {
    #[inline]
    fn len(&self, s: usize) -> u32 {
        self.busy[s] + self.waiting[s].len() as u32
    }

    #[inline]
    fn arrive(&mut self, s: usize, job: Job, t: f64, sim: &mut Simulation<Event>) {
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
        id: u32,
        version: u32,
        t: f64,
        sim: &mut Simulation<Event>,
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

    fn set_rate(&mut self, s: usize, rate: f64, t: f64, sim: &mut Simulation<Event>) {
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
                let ev = Event::Departure { id: w as u32, version: worker.version };
                schedule(sim, worker.done, ev);
            }
        }
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
struct SharedServers {
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
    fn new(rates: &[f64], c: u32) -> Self {
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
    fn reschedule(&mut self, s: usize, t: f64, sim: &mut Simulation<Event>) {
        self.version[s] = self.version[s].wrapping_add(1);
        if let Some(Reverse(first)) = self.present[s].peek() {
            let dt = ((first.tag - self.virtual_work[s]) / self.share(s)).max(0.0);
            schedule(sim, t + dt, Event::Departure { id: s as u32, version: self.version[s] });
        }
    }
}

impl Servers for SharedServers {
    #[inline]
    fn len(&self, s: usize) -> u32 {
        self.present[s].len() as u32
    }

    #[inline]
    fn arrive(&mut self, s: usize, job: Job, t: f64, sim: &mut Simulation<Event>) {
        self.advance(s, t);
        self.present[s].push(Reverse(Tagged { tag: self.virtual_work[s] + job.work, job }));
        self.reschedule(s, t, sim);
    }

    #[inline]
    fn depart(
        &mut self,
        id: u32,
        version: u32,
        t: f64,
        sim: &mut Simulation<Event>,
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

    fn set_rate(&mut self, s: usize, rate: f64, t: f64, sim: &mut Simulation<Event>) {
        if self.rates[s] == rate {
            return;
        }
        self.advance(s, t);
        self.rates[s] = rate;
        self.reschedule(s, t, sim);
    }
}

// ===== The loop =====

/// Runs one replication of any farm; see [`simulate`](super::simulate).
#[allow(clippy::too_many_arguments)]
pub(super) fn simulate<P: Policy, A: Gaps, S: Demands, I: InfoModel>(
    farm: &Farm,
    len: RunLength,
    opts: SimOptions,
    policy: P,
    info: I,
    arrivals: &mut A,
    service: &S,
    workload: SimRng,
    coins: SimRng,
) -> RepStats {
    match farm.discipline {
        Discipline::Fifo => {
            let servers = FifoWorkers::new(&farm.rates, farm.slots as usize);
            run(farm, len, opts, policy, info, arrivals, service, workload, coins, servers)
        }
        Discipline::Ps => {
            let servers = SharedServers::new(&farm.rates, farm.slots);
            run(farm, len, opts, policy, info, arrivals, service, workload, coins, servers)
        }
    }
}

/// One replication in progress: the farm and its servers, the policy and what it sees, the
/// streams, and the bookkeeping. Each kind of event has its handler below; [`run`] is the loop
/// that hands each event to its handler.
struct Replication<'a, P, A, S, I, V> {
    farm: &'a Farm,
    len: RunLength,
    opts: SimOptions,
    policy: P,
    info: I,
    arrivals: &'a mut A,
    service: &'a S,
    workload: SimRng,
    coins: SimRng,
    servers: V,
    /// The number of servers.
    n: usize,
    /// The arrivals of the run, warm-up included.
    total: u64,
    rec: Recorder,
    sim: Simulation<Event>,
    /// Requests arrived so far: the index of the next.
    arrived: u64,
    gate: Option<Gate>,
    /// Requests the admission stage delayed, in the order they are let through.
    delayed: VecDeque<Job>,
    /// Requests the policy holds back (`Policy::HOLDS`), per client, in arrival order.
    held: Vec<VecDeque<Job>>,
    /// Set once no further arrival is scheduled: board posts stop then too.
    arrivals_over: bool,
    fb: Feedback,
}

#[allow(clippy::too_many_arguments)]
fn run<P: Policy, A: Gaps, S: Demands, I: InfoModel, V: Servers>(
    farm: &Farm,
    len: RunLength,
    opts: SimOptions,
    policy: P,
    info: I,
    arrivals: &mut A,
    service: &S,
    mut workload: SimRng,
    coins: SimRng,
    servers: V,
) -> RepStats {
    let n = farm.rates.len();
    let mut sim = Simulation::with_capacity(n * farm.slots as usize + farm.events.len() + 2);
    // The admission stage draws from its own stream, seeded from a copy of the workload stream
    // (which it leaves where it was): policies still see the same requests.
    let gate = farm.admission.map(|adm| {
        use rand::Rng;
        Gate::new(&adm, StreamKey::new(workload.clone().next_u64(), "admission").rng())
    });

    // Rate changes first: one at the instant of an arrival applies before it.
    for (i, e) in farm.events.iter().enumerate() {
        schedule(&mut sim, e.at, Event::Rate(i as u32));
    }
    let mut arrivals_over = true;
    if let Some(first) = arrivals.next_gap(&mut workload) {
        schedule(&mut sim, first, Event::Arrival);
        arrivals_over = false;
    }
    if let Some(period) = info.post_period() {
        sim.schedule_class(SimTime::new(period), POST_CLASS, Event::Post).expect("future");
    }
    // ----- feedback and series (see `feedback.rs`) -----
    let fb = Feedback {
        monitor: P::FEEDBACK.then(|| Monitor::new(&farm.rates, farm.slots)),
        windows: opts.series.map(|width| WindowRecorder::new(n, width)),
        probes: Vec::new(),
    };
    if P::FEEDBACK {
        if let Some(p) = policy.report_period() {
            schedule(&mut sim, p, Event::Report);
        }
        if let Some(p) = policy.timer_period() {
            schedule(&mut sim, p, Event::Timer);
        }
    }
    // ----- end feedback -----

    let mut r = Replication {
        farm,
        len,
        opts,
        policy,
        info,
        arrivals,
        service,
        workload,
        coins,
        servers,
        n,
        total: len.warmup + len.requests,
        rec: Recorder::new(n, len, opts.track_levels),
        sim,
        arrived: 0,
        gate,
        delayed: VecDeque::new(),
        held: Vec::new(),
        arrivals_over,
        fb,
    };
    while let Some(event) = r.sim.next_event() {
        let now = r.sim.now();
        let t = now.get();
        let stop = match event {
            Event::Arrival => r.arrival(t),
            Event::Departure { id, version } => {
                r.departure(id, version, now);
                false
            }
            Event::Rate(i) => {
                r.rate_change(i, t);
                false
            }
            Event::Release => r.release(),
            Event::Retry { client } => r.retry(client, now),
            Event::Post => {
                r.post(t);
                false
            }
            // ----- feedback (see `feedback.rs`) -----
            Event::Report => {
                r.report(now);
                false
            }
            Event::Timer => {
                r.timer(now);
                false
            }
            Event::ProbeAt { server, tag } => {
                r.probe_at(server, tag, t);
                false
            }
            Event::ProbeBack { server, tag, rif, latency } => {
                r.probe_back(server, tag, ProbeReply { rif, latency }, now);
                false
            } // ----- end feedback -----
        };
        if stop {
            break;
        }
    }
    r.finish()
}

/// The handlers, one per kind of event; those that return a `bool` return true when a guard
/// stops the replication.
impl<P: Policy, A: Gaps, S: Demands, I: InfoModel, V: Servers> Replication<'_, P, A, S, I, V> {
    /// A request arrives: the admission stage admits it (it is sent now), delays it (an
    /// [`Event::Release`] sends it later) or rejects it; then the next arrival is scheduled,
    /// unless the run has all its arrivals.
    #[inline(always)]
    fn arrival(&mut self, t: f64) -> bool {
        self.rec.stats.events += 1;
        let (n, servers) = (self.n, &self.servers);
        self.rec.arriving(self.arrived, t, || (0..n).map(|s| servers.len(s)).max().unwrap_or(0));
        let work = self.service.demand(&mut self.workload);
        let gap = self.arrivals.next_gap(&mut self.workload);
        let job = Job { arrival: t, work, index: self.arrived, tag: 0 };
        let decision = match &mut self.gate {
            None => Decision::Admit,
            Some(g) => g.offer(t, self.arrived >= self.len.warmup),
        };
        let stop = match decision {
            Decision::Admit => self.send(job),
            Decision::Delay(at) => {
                self.delayed.push_back(job);
                schedule(&mut self.sim, at, Event::Release);
                false
            }
            Decision::Reject => false,
        };
        if stop {
            return true;
        }
        self.arrived += 1;
        if let Some(gap) = gap.filter(|_| self.arrived < self.total) {
            schedule(&mut self.sim, t + gap, Event::Arrival);
        } else {
            self.arrivals_over = true;
            self.rec.arrivals_end(t);
        }
        false
    }

    /// Sends an admitted request (see [`send`]).
    #[inline(always)]
    fn send(&mut self, job: Job) -> bool {
        let mut farm_side = (&mut self.policy, &mut self.info, &mut self.servers, &mut self.coins);
        let ctx = (&mut self.gate, &mut self.rec, &mut self.sim, &mut self.fb);
        send(&mut farm_side, ctx, &mut self.held, job, self.len, self.opts)
    }

    /// A departure from worker (FIFO) or server (PS) `id`, ignored if `version` is stale.
    #[inline(always)]
    fn departure(&mut self, id: u32, version: u32, now: SimTime) {
        let t = now.get();
        let Some((s, job)) = self.servers.depart(id, version, t, &mut self.sim) else {
            return;
        };
        self.rec.stats.events += 1;
        let sojourn = t - job.arrival;
        self.rec.departed(job.index, sojourn, self.servers.len(s) + 1, t);
        self.policy.on_departure(s, sojourn, now, job.tag);
        self.info.on_departure(s);
        // ----- feedback and series -----
        let left = self.servers.len(s);
        if let Some(w) = &mut self.fb.windows {
            w.changed(s, left, t);
            if job.index >= self.len.warmup {
                w.departed(job.arrival, sojourn);
            }
        }
        if let Some(m) = &mut self.fb.monitor {
            let response = m.departed(s, job.work, sojourn, left, t);
            self.policy.on_response(s, &response, now, job.tag);
        }
        // ----- end feedback -----
    }

    /// `farm.events[i]` takes effect: its servers take its rate.
    #[inline(always)]
    fn rate_change(&mut self, i: u32, t: f64) {
        self.rec.stats.events += 1;
        let change = &self.farm.events[i as usize];
        for s in change.servers.clone() {
            self.servers.set_rate(s, change.rate, t, &mut self.sim);
            if let Some(m) = &mut self.fb.monitor {
                m.set_rate(s, change.rate);
            }
        }
    }

    /// The earliest request the admission stage delayed is sent.
    #[inline(always)]
    fn release(&mut self) -> bool {
        self.rec.stats.events += 1;
        let job = self.delayed.pop_front().expect("a release without a delayed request");
        self.send(job)
    }

    /// The policy asks again for `client`'s backlog, sending from its head for as long as it
    /// picks a server; when it says wait, it is asked again then.
    #[inline(always)]
    fn retry(&mut self, client: u32, now: SimTime) -> bool {
        self.rec.stats.events += 1;
        let backlog = &mut self.held[client as usize];
        while let Some(&job) = backlog.front() {
            match self.policy.try_pick(client, self.info.view(), now, &mut self.coins) {
                Ok(s) => {
                    backlog.pop_front();
                    let mut farm_side =
                        (&mut self.policy, &mut self.info, &mut self.servers, &mut self.coins);
                    let ctx = (&mut self.gate, &mut self.rec, &mut self.sim, &mut self.fb);
                    if dispatch(&mut farm_side, ctx, s, job, self.len, self.opts) {
                        return true;
                    }
                }
                Err(at) => {
                    schedule(&mut self.sim, at, Event::Retry { client });
                    break;
                }
            }
        }
        false
    }

    /// The board posts the queue lengths; the next post is scheduled while arrivals go on.
    #[inline(always)]
    fn post(&mut self, t: f64) {
        self.rec.stats.events += 1;
        let (n, servers) = (self.n, &self.servers);
        self.info.on_post((0..n).map(|s| servers.len(s)));
        if !self.arrivals_over
            && let Some(period) = self.info.post_period()
        {
            self.sim
                .schedule_class(SimTime::new(t + period), POST_CLASS, Event::Post)
                .expect("future");
        }
    }

    // ----- feedback (see `feedback.rs`) -----

    /// The servers send their load reports to the policy.
    #[inline(always)]
    fn report(&mut self, now: SimTime) {
        self.rec.stats.events += 1;
        let t = now.get();
        let m = self.fb.monitor.as_mut().expect("reports only with feedback");
        self.policy.on_reports(&m.reports(t), now);
        if !self.arrivals_over
            && let Some(p) = self.policy.report_period()
        {
            schedule(&mut self.sim, t + p, Event::Report);
        }
    }

    /// The policy's timer fires.
    #[inline(always)]
    fn timer(&mut self, now: SimTime) {
        self.rec.stats.events += 1;
        self.policy.on_timer(now);
        if !self.arrivals_over
            && let Some(p) = self.policy.timer_period()
        {
            schedule(&mut self.sim, now.get() + p, Event::Timer);
        }
    }

    /// A probe from client `tag` reaches `server`, reads it, and heads back.
    #[inline(always)]
    fn probe_at(&mut self, server: u32, tag: u32, t: f64) {
        self.rec.stats.events += 1;
        let s = server as usize;
        let m = self.fb.monitor.as_ref().expect("probes only with feedback");
        let ProbeReply { rif, latency } = m.probe(s, self.servers.len(s));
        let back = t + self.policy.probe_delay() / 2.0;
        schedule(&mut self.sim, back, Event::ProbeBack { server, tag, rif, latency });
    }

    /// A probe is back at client `tag` with what it read at `server`.
    #[inline(always)]
    fn probe_back(&mut self, server: u32, tag: u32, reply: ProbeReply, now: SimTime) {
        self.rec.stats.events += 1;
        self.policy.on_probe(server as usize, reply, now, tag);
    }

    // ----- end feedback -----

    /// The replication's statistics, once the loop is over.
    fn finish(self) -> RepStats {
        let mut stats = self.rec.finish();
        if let Some(g) = self.gate {
            stats.admission = g.stats;
        }
        let end = self.sim.now().get();
        stats.windows = self.fb.windows.map(|w| w.finish(end));
        stats
    }
}

/// What the feedback policies and `--series` keep during a replication (see `feedback.rs`).
struct Feedback {
    monitor: Option<Monitor>,
    windows: Option<WindowRecorder>,
    probes: Vec<usize>,
}

/// The farm side of a dispatch: the policy, what it sees, the servers, the policy's coins.
type FarmSide<'a, P, I, V> = (&'a mut P, &'a mut I, &'a mut V, &'a mut SimRng);
/// The bookkeeping side of a dispatch.
type Context<'a> =
    (&'a mut Option<Gate>, &'a mut Recorder, &'a mut Simulation<Event>, &'a mut Feedback);

/// Sends an admitted request: the policy picks its server now, or, for a policy that holds
/// requests back ([`Policy::HOLDS`]), the request joins its client's backlog if that is not
/// empty or the policy says wait (a [`Event::Retry`] asks again then). True when a guard stops
/// the replication.
#[inline(always)]
fn send<P: Policy, I: InfoModel, V: Servers>(
    farm_side: &mut FarmSide<'_, P, I, V>,
    ctx: Context<'_>,
    held: &mut Vec<VecDeque<Job>>,
    job: Job,
    len: RunLength,
    opts: SimOptions,
) -> bool {
    let (policy, info, _, coins) = farm_side;
    let now = ctx.2.now();
    if !P::HOLDS {
        let s = policy.pick(info.view(), now, coins);
        return dispatch(farm_side, ctx, s, job, len, opts);
    }
    let client = policy.assign();
    let c = client as usize;
    if held.len() <= c {
        held.resize_with(c + 1, VecDeque::new);
    }
    if held[c].is_empty() {
        match policy.try_pick(client, info.view(), now, coins) {
            Ok(s) => return dispatch(farm_side, ctx, s, job, len, opts),
            Err(at) => schedule(ctx.2, at, Event::Retry { client }),
        }
    }
    held[c].push_back(job);
    ctx.1.guard_backlog(held[c].len(), opts.queue_guard, now.get())
}

/// Sends `job` into the farm now, to server `s`; under adaptive throttling a server holding
/// `queue_limit` requests or more rejects it (and the client's throttle hears the answer). True
/// when the queue guard stops the replication.
#[inline]
fn dispatch<P: Policy, I: InfoModel, V: Servers>(
    (policy, info, servers, coins): &mut FarmSide<'_, P, I, V>,
    (gate, rec, sim, fb): Context<'_>,
    s: usize,
    mut job: Job,
    len: RunLength,
    opts: SimOptions,
) -> bool {
    let now = sim.now();
    let t = now.get();
    job.tag = if P::TAGGED { policy.tag() } else { 0 };
    if let Some(g) = gate {
        let measured = job.index >= len.warmup;
        if let Some(limit) = g.queue_limit {
            let accepted = servers.len(s) < limit;
            g.backend(t, accepted, measured);
            if !accepted {
                // The rejection is an immediate response: the sender's policy hears of it as
                // a request that left at once (what a client sees of a fast error).
                policy.on_departure(s, 0.0, now, job.tag);
                return false;
            }
        }
        g.admitted(t, measured);
    }
    servers.arrive(s, job, t, sim);
    let qlen = servers.len(s);
    info.on_dispatch(s);
    rec.joined(job.index, s, qlen, t);
    // ----- feedback and series -----
    if let Some(w) = &mut fb.windows {
        w.changed(s, qlen, t);
        if job.index >= len.warmup {
            w.dispatched(s, t);
        }
    }
    if let Some(m) = &mut fb.monitor {
        m.changed(s, qlen, t);
        policy.probes(now, coins, &mut fb.probes);
        let half = policy.probe_delay() / 2.0;
        for server in fb.probes.drain(..) {
            if half > 0.0 {
                schedule(sim, t + half, Event::ProbeAt { server: server as u32, tag: job.tag });
            } else {
                policy.on_probe(server, m.probe(server, servers.len(server)), now, job.tag);
            }
        }
    }
    // ----- end feedback -----
    rec.guard(qlen, opts.queue_guard, t)
}

#[cfg(test)]
mod tests {
    use super::*;

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
                    let job = Job { arrival: t, work, index: next as u64, tag: 0 };
                    servers.arrive(s, job, t, &mut sim);
                    next += 1;
                }
                (_, Some(_)) => {
                    let Some(Event::Departure { id, version }) = sim.next_event() else {
                        unreachable!("only departures are scheduled")
                    };
                    let t = sim.now().get();
                    if let Some((_, job)) = servers.depart(id, version, t, &mut sim) {
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
    fn processor_sharing_splits_the_rate_among_those_present() {
        // One processor: work 2 at t = 0 alone until 1 (1 done), then shared with work 0.5 from
        // t = 1: each gets 1/2, so the second leaves at 2 and the first, with 0.5 left, at 2.5.
        let out = trace(SharedServers::new(&[1.0], 1), &[(0.0, 0, 2.0), (1.0, 0, 0.5)]);
        assert_eq!(out, [(2.0, 1), (2.5, 0)]);
        // Two processors: two requests present each get a full processor.
        let out = trace(SharedServers::new(&[1.0], 2), &[(0.0, 0, 2.0), (1.0, 0, 0.5)]);
        assert_eq!(out, [(1.5, 1), (2.0, 0)]);
    }

    #[test]
    fn a_rate_change_applies_to_the_request_in_service() {
        // Work 2 from t = 0 at rate 1; at t = 1 the rate halves: 1 left takes 2 more, so it
        // leaves at 3 (the departure scheduled for 2 is stale).
        for ps in [false, true] {
            let mut sim = Simulation::new();
            let job = Job { arrival: 0.0, work: 2.0, index: 0, tag: 0 };
            let mut fifo = FifoWorkers::new(&[1.0], 1);
            let mut shared = SharedServers::new(&[1.0], 1);
            let servers: &mut dyn Servers = if ps { &mut shared } else { &mut fifo };
            servers.arrive(0, job, 0.0, &mut sim);
            sim.schedule(SimTime::new(1.0), Event::Rate(0)).unwrap();
            let mut left = None;
            while let Some(ev) = sim.next_event() {
                let t = sim.now().get();
                match ev {
                    Event::Rate(_) => servers.set_rate(0, 0.5, t, &mut sim),
                    Event::Departure { id, version } => {
                        if let Some((_, j)) = servers.depart(id, version, t, &mut sim) {
                            left = Some((t, j.index));
                        }
                    }
                    _ => unreachable!(),
                }
            }
            assert_eq!(left, Some((3.0, 0)), "ps = {ps}");
        }
    }
}

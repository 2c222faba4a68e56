//! Servers that schedule by traffic class (SPEC §13): priority (non-preemptive, with aging, and
//! preemptive resume) with `c` workers, weighted fair queueing and the chapter's CFS. Each
//! implements [`Servers`]; the replication chooses one from `[farm] discipline`.
//!
//! Queue length, as policies and statistics see it, stays the number of requests at the server,
//! waiting and in service, whatever the discipline.
//!
//! - **Priority** ([`PriorityWorkers`]): one FIFO queue per priority level; a free worker takes
//!   the head of the highest non-empty level (level 0 first). Non-preemptive, a request in
//!   service finishes; under M/G/1 the mean wait of class `k` is Cobham's (1954)
//!   `W0 / ((1 - sigma_{k-1})(1 - sigma_k))` with `W0 = sum lambda_i E[S_i^2] / 2` and `sigma_k`
//!   the load of classes 0..=k. With `aging = A` (the chapter's §39.6 `apply_aging`: a waiting
//!   task whose wait exceeds `aging_seconds` is moved up `priority_boost = 1` level, never above
//!   0) a waiting request's level is its class's less one per `A` it has waited; a free worker
//!   takes the request of the lowest such level, the earliest arrival on a tie (the chapter's
//!   `Task` orders by `(priority, timestamp)`), which is always the head of some level's queue.
//! - **Preemptive resume**: an arrival of a higher priority (a lower level) than the lowest
//!   priority in service takes that worker at once; the preempted request goes back to its
//!   level's queue in arrival order (so ahead of later arrivals of its level) with the work it
//!   still lacks, and resumes there. Kleinrock vol. 2, §3.7: `T_k = (E[S_k](1 - sigma_{k-1}) +
//!   R_k) / ((1 - sigma_{k-1})(1 - sigma_k))`, `R_k = sum_{i<=k} lambda_i E[S_i^2] / 2`.
//! - **Fair** ([`FairServers`]): generalised processor sharing between classes (Parekh &
//!   Gallager 1993), FIFO within a class: while classes `B` have work, the head of each class
//!   `k` in `B` receives work at `rate * w_k / sum_{j in B} w_j`. Kept as a virtual time `V`
//!   with `dV/dt = rate / sum_B w`: a head that starts at `V = v` with demand `d` leaves at
//!   `V = v + d / w_k`, and the next of its class starts then.
//! - **Fair with `c` slots** ([`FairSlots`]): GPS between classes with capacity `c * rate` in
//!   which no request receives more than `rate`, one slot's worth (a request is sequential
//!   work, as under processor sharing with `c` processors). Class `k` with `n_k` requests gets
//!   `x_k` slots by weighted water-filling (Parekh & Gallager's GPS with each session's rate
//!   capped, the max-min fair share weighted by `w`): `x_k = min(n_k, w_k * theta)` with
//!   `theta` such that the `x_k` sum to `min(c, sum n_k)`; its first `floor(x_k)` requests
//!   get a slot each and the next the fraction left, FIFO within the class. With `c = 1` this
//!   is the single-slot rule above (each class's head only, `x_k <= 1`). The shares change at
//!   each arrival and departure, so the servers keep each request's work left and recompute
//!   them then (`O(c + k)` requests receive work at a time).
//! - **CFS** ([`CfsServers`]): the chapter's `SimpleCFS` (§39.22) with classes as its tasks:
//!   the class with the least vruntime runs its oldest request for at most `slice`; its vruntime
//!   grows by the time it ran times `1024 / weight` (here `1 / w`, the weight relative to nice
//!   0); a class that wakes (its first request after none) starts from the least vruntime of
//!   the classes with work (`add_process`'s `_min_vruntime`), or keeps its own if larger, so
//!   that sleeping earns no credit.
//! - **CFS with `c` slots**: the `c` slots (CPUs) of a server share one queue of classes, as
//!   `SimpleCFS` keeps one tree; a class is a task group whose requests are its threads.
//!   Whenever a slot is free or its run ends, it runs the class with the least vruntime among
//!   those with a request no slot is running, and that class's oldest such request, for at
//!   most `slice`; a class's vruntime grows by the time each of its runs lasted over its weight,
//!   on every slot that runs it (Linux's `update_curr` in `kernel/sched/fair.c` charges each
//!   CPU's running entity; here every run of a server is brought up to date whenever one of
//!   its slots picks, so the pick sees current vruntimes). Linux keeps a runqueue per CPU and
//!   balances load between them (`load_balance`); one shared queue is that with perfect
//!   balancing. Backlogged classes then share `c * rate` by weight (vruntimes equal when class
//!   `k` holds `c * w_k / sum w` slots), as long as each has requests for its share.
//!
//! A rate change ([`Servers::set_rate`]) applies, as under FIFO, to the work each request still
//! lacks: a request in service keeps what it received and its departure moves (a preempted one
//! waits with what it lacks); fair queueing brings its virtual time up to the change at the old
//! rate and runs it at the new one from there (its finish tags stay); under CFS the running
//! request's work is counted up to the change, the slice keeps its end (a slice is time, a CPU's
//! quantum), and the run ends then or when the request is done at the new rate, if earlier.

use std::collections::VecDeque;

use super::Simulation;
use super::event::{Event, Job, schedule};
use super::servers::{Servers, Worker};
use crate::model::Classes;

/// A departure event of servers that name it by worker or server and version.
type Versioned = Event<(u32, u32)>;

/// The distinct priority levels of `classes`, ascending, and each class's index among them.
fn levels(classes: &Classes) -> (Vec<u32>, Vec<u32>) {
    let mut prio = classes.priorities();
    prio.sort_unstable();
    prio.dedup();
    let of = classes
        .priorities()
        .iter()
        .map(|p| prio.binary_search(p).expect("a class's own level") as u32)
        .collect();
    (prio, of)
}

/// A waiting request and the work it still lacks (its demand, unless it was preempted).
#[derive(Debug, Clone, Copy)]
struct Waiting {
    job: Job,
    left: f64,
}

/// The class and the position in its class's queue of request `index`, among one server's
/// class queues `queues` (fair and cfs keep one per class, FIFO), whose entries name their
/// request by `index_of`.
fn queued<T>(queues: &[VecDeque<T>], index: u64, index_of: impl Fn(&T) -> u64) -> (usize, usize) {
    queues
        .iter()
        .enumerate()
        .find_map(|(c, q)| q.iter().position(|x| index_of(x) == index).map(|i| (c, i)))
        .expect("a cancelled request is at its server")
}

/// A request's place in arrival order: its arrival at the server, then its index. Without the
/// request lifecycle the index alone orders them (arrivals come in index order); with it the
/// index names an attempt, whose numbers are reused, and the arrival orders them. Arrival
/// times are non-negative, so their bits order like them.
#[inline]
fn order(job: &Job) -> (u64, u64) {
    (job.arrival.to_bits(), job.index)
}

// ===== Priority: non-preemptive (with aging) and preemptive resume =====

/// Per-server priority queues served by `c` workers each.
#[derive(Debug)]
pub(super) struct PriorityWorkers {
    c: usize,
    rates: Vec<f64>,
    preemptive: bool,
    /// `[farm] aging`: a waiting request gains one level per this much waiting.
    aging: Option<f64>,
    /// The priority of each level, ascending (level 0 first).
    prio: Vec<u32>,
    /// Each class's level.
    level_of: Vec<u32>,
    /// `waiting[s * levels + l]`: server `s`'s requests waiting at level `l`, in arrival order.
    waiting: Vec<VecDeque<Waiting>>,
    /// Requests waiting per server.
    queued: Vec<u32>,
    /// Busy workers per server.
    busy: Vec<u32>,
    /// Worker `s * c + j` is server `s`'s `j`-th.
    workers: Vec<Worker>,
}

impl PriorityWorkers {
    /// `c` workers per server at `rates`, scheduling `classes` by priority.
    pub(super) fn new(rates: &[f64], c: u32, classes: &Classes, preemptive: bool) -> Self {
        let (n, c) = (rates.len(), c as usize);
        let (prio, level_of) = levels(classes);
        PriorityWorkers {
            c,
            rates: rates.to_vec(),
            preemptive,
            aging: classes.aging,
            waiting: vec![VecDeque::new(); n * prio.len()],
            prio,
            level_of,
            queued: vec![0; n],
            busy: vec![0; n],
            workers: vec![Worker::IDLE; n * c],
        }
    }

    /// Worker `w` of server `s` starts (or resumes) `job`, which lacks `left`, at `t`.
    fn start(
        &mut self,
        s: usize,
        w: usize,
        job: Job,
        left: f64,
        t: f64,
        sim: &mut Simulation<Versioned>,
    ) {
        let worker = &mut self.workers[w];
        worker.version = worker.version.wrapping_add(1);
        worker.job = job;
        worker.busy = true;
        worker.done = t + left / self.rates[s];
        schedule(sim, worker.done, Event::Departure((w as u32, worker.version)));
    }

    /// Puts `x` in its level's queue at `s`, in arrival order.
    fn enqueue(&mut self, s: usize, x: Waiting) {
        let l = self.level_of[x.job.class as usize] as usize;
        let q = &mut self.waiting[s * self.prio.len() + l];
        // Arrivals come in order, so this is the back but for a preempted request.
        let at = q.partition_point(|y| order(&y.job) < order(&x.job));
        q.insert(at, x);
        self.queued[s] += 1;
    }

    /// The next request to serve at `s` at `t`, taken from its queue.
    fn next(&mut self, s: usize, t: f64) -> Option<Waiting> {
        if self.queued[s] == 0 {
            return None;
        }
        let k = self.prio.len();
        let queues = &self.waiting[s * k..(s + 1) * k];
        let l = match self.aging {
            None => queues.iter().position(|q| !q.is_empty())?,
            Some(a) => {
                // Each level's head has waited longest in it: the best of the heads wins.
                let aged = |l: usize, x: &Waiting| {
                    let gained = ((t - x.job.arrival) / a).floor().max(0.0);
                    let level = (f64::from(self.prio[l]) - gained).max(0.0);
                    (level, x.job.arrival, x.job.index)
                };
                (0..k)
                    .filter_map(|l| queues[l].front().map(|x| (aged(l, x), l)))
                    .min_by(|(a, _), (b, _)| a.partial_cmp(b).expect("finite"))?
                    .1
            }
        };
        self.queued[s] -= 1;
        self.waiting[s * k + l].pop_front()
    }

    /// Under preemption: the worker of `s` serving the lowest priority, if it is below `level`
    /// (the latest arrival among equals).
    fn victim(&self, s: usize, level: u32) -> Option<usize> {
        (s * self.c..(s + 1) * self.c)
            .filter(|&w| self.workers[w].busy)
            .map(|w| {
                (self.level_of[self.workers[w].job.class as usize], order(&self.workers[w].job), w)
            })
            .max()
            .filter(|&(l, _, _)| l > level)
            .map(|(_, _, w)| w)
    }
}

impl Servers for PriorityWorkers {
    type Token = (u32, u32);

    #[inline]
    fn len(&self, s: usize) -> u32 {
        self.busy[s] + self.queued[s]
    }

    fn arrive(&mut self, s: usize, job: Job, t: f64, sim: &mut Simulation<Versioned>) {
        if (self.busy[s] as usize) < self.c {
            let w = (s * self.c..(s + 1) * self.c)
                .find(|&w| !self.workers[w].busy)
                .expect("an idle worker");
            self.busy[s] += 1;
            return self.start(s, w, job, job.work, t, sim);
        }
        if self.preemptive {
            let level = self.level_of[job.class as usize];
            if let Some(w) = self.victim(s, level) {
                let out = self.workers[w];
                let left = ((out.done - t) * self.rates[s]).max(0.0);
                self.enqueue(s, Waiting { job: out.job, left });
                return self.start(s, w, job, job.work, t, sim);
            }
        }
        self.enqueue(s, Waiting { job, left: job.work });
    }

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
        match self.next(s, t) {
            Some(x) => self.start(s, w, x.job, x.left, t, sim),
            None => {
                self.workers[w].busy = false;
                self.busy[s] -= 1;
            }
        }
        Some((s, worker.job))
    }

    fn set_rate(&mut self, s: usize, rate: f64, t: f64, sim: &mut Simulation<Versioned>) {
        let old = std::mem::replace(&mut self.rates[s], rate);
        if old == rate {
            return;
        }
        // As FIFO's workers: the work a request in service lacks goes at the new rate. A
        // preempted request waits with the work it lacks, which no rate changes.
        for w in s * self.c..(s + 1) * self.c {
            let worker = &mut self.workers[w];
            if worker.busy {
                let remaining = (worker.done - t) * old;
                worker.done = t + remaining / rate;
                worker.version = worker.version.wrapping_add(1);
                schedule(sim, worker.done, Event::Departure((w as u32, worker.version)));
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
        let k = self.prio.len();
        for q in &mut self.waiting[s * k..(s + 1) * k] {
            if let Some(i) = q.iter().position(|x| x.job.index == index) {
                // A preempted request has received the work it no longer lacks.
                let x = q.remove(i).expect("a position found");
                self.queued[s] -= 1;
                return (x.job, x.job.work - x.left);
            }
        }
        let w = (s * self.c..(s + 1) * self.c)
            .find(|&w| self.workers[w].busy && self.workers[w].job.index == index)
            .expect("a cancelled request is at its server");
        let worker = self.workers[w];
        let received = worker.job.work - (worker.done - t) * self.rates[s];
        // As at a departure: the worker takes the next request by priority or goes idle (its
        // pending departure is then stale: the worker is idle, or its version has moved on).
        match self.next(s, t) {
            Some(x) => self.start(s, w, x.job, x.left, t, sim),
            None => {
                self.workers[w].busy = false;
                self.busy[s] -= 1;
            }
        }
        (worker.job, received.max(0.0))
    }
}

// ===== Weighted fair queueing =====

/// Per-server generalised processor sharing between classes, FIFO within each.
#[derive(Debug)]
pub(super) struct FairServers {
    rates: Vec<f64>,
    weights: Vec<f64>,
    /// `queues[s * k + class]`.
    queues: Vec<VecDeque<Job>>,
    /// `finish[s * k + class]`: the virtual time at which that class's head leaves.
    finish: Vec<f64>,
    virtual_time: Vec<f64>,
    since: Vec<f64>,
    present: Vec<u32>,
    version: Vec<u32>,
}

impl FairServers {
    /// Servers at `rates` sharing themselves among `classes` by weight.
    pub(super) fn new(rates: &[f64], classes: &Classes) -> Self {
        let (n, k) = (rates.len(), classes.classes.len());
        FairServers {
            rates: rates.to_vec(),
            weights: classes.weights(),
            queues: vec![VecDeque::new(); n * k],
            finish: vec![0.0; n * k],
            virtual_time: vec![0.0; n],
            since: vec![0.0; n],
            present: vec![0; n],
            version: vec![0; n],
        }
    }

    /// The weights of the classes with work at `s`, summed.
    fn active(&self, s: usize) -> f64 {
        let k = self.weights.len();
        (0..k).filter(|&c| !self.queues[s * k + c].is_empty()).map(|c| self.weights[c]).sum()
    }

    /// Brings `s`'s virtual time up to `t`.
    fn advance(&mut self, s: usize, t: f64) {
        let w = self.active(s);
        if w > 0.0 {
            self.virtual_time[s] += (t - self.since[s]) * self.rates[s] / w;
        }
        self.since[s] = t;
    }

    /// The class whose head leaves first at `s`, and its virtual finish.
    fn first(&self, s: usize) -> Option<(usize, f64)> {
        let k = self.weights.len();
        (0..k)
            .filter(|&c| !self.queues[s * k + c].is_empty())
            .map(|c| (c, self.finish[s * k + c]))
            .min_by(|a, b| a.1.total_cmp(&b.1))
    }

    /// Replaces `s`'s pending departure by one for its current state.
    fn reschedule(&mut self, s: usize, t: f64, sim: &mut Simulation<Versioned>) {
        self.version[s] = self.version[s].wrapping_add(1);
        if let Some((_, f)) = self.first(s) {
            let dt = ((f - self.virtual_time[s]) * self.active(s) / self.rates[s]).max(0.0);
            schedule(sim, t + dt, Event::Departure((s as u32, self.version[s])));
        }
    }
}

impl Servers for FairServers {
    type Token = (u32, u32);

    #[inline]
    fn len(&self, s: usize) -> u32 {
        self.present[s]
    }

    fn arrive(&mut self, s: usize, job: Job, t: f64, sim: &mut Simulation<Versioned>) {
        self.advance(s, t);
        let k = self.weights.len();
        let c = job.class as usize;
        let q = &mut self.queues[s * k + c];
        if q.is_empty() {
            self.finish[s * k + c] = self.virtual_time[s] + job.work / self.weights[c];
        }
        q.push_back(job);
        self.present[s] += 1;
        self.reschedule(s, t, sim);
    }

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
        let k = self.weights.len();
        let (c, f) = self.first(s).expect("a departure from an empty server");
        // The event fires when the virtual time reaches the tag: take the tag itself.
        self.virtual_time[s] = f;
        self.since[s] = t;
        let q = &mut self.queues[s * k + c];
        let job = q.pop_front().expect("a head");
        if let Some(next) = q.front() {
            self.finish[s * k + c] = f + next.work / self.weights[c];
        }
        self.present[s] -= 1;
        if self.present[s] == 0 {
            self.virtual_time[s] = 0.0;
        }
        self.reschedule(s, t, sim);
        Some((s, job))
    }

    fn set_rate(&mut self, s: usize, rate: f64, t: f64, sim: &mut Simulation<Versioned>) {
        if self.rates[s] == rate {
            return;
        }
        // The virtual time reaches `t` at the old rate; the finish tags stay, and the virtual
        // time moves at the new rate from here.
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
        let k = self.weights.len();
        let (c, i) = queued(&self.queues[s * k..(s + 1) * k], index, |j| j.index);
        self.present[s] -= 1;
        if i > 0 {
            // Waiting behind its class's head: nothing else changes.
            let job = self.queues[s * k + c].remove(i).expect("a position found");
            return (job, 0.0);
        }
        // The head, in service: it received its weight's share of the virtual time since it
        // started; the next of its class starts now.
        self.advance(s, t);
        let v = self.virtual_time[s];
        let w = self.weights[c];
        let q = &mut self.queues[s * k + c];
        let job = q.pop_front().expect("a head");
        let received = job.work - (self.finish[s * k + c] - v) * w;
        if let Some(next) = q.front() {
            self.finish[s * k + c] = v + next.work / w;
        }
        if self.present[s] == 0 {
            self.virtual_time[s] = 0.0;
        }
        self.reschedule(s, t, sim);
        (job, received.max(0.0))
    }
}

// ===== CFS =====

/// A request at a CFS server: the work it still lacks, and whether a slot is running it.
#[derive(Debug, Clone, Copy)]
struct Entry {
    job: Job,
    left: f64,
    on: bool,
}

/// What a CFS slot is running: a class's request (by index), since when its class's vruntime
/// and its work are counted (the run's start, or the last time they were brought up to date),
/// the work it lacked then, the end of its slice, and whether the run ends with the request
/// done (else at the end of the slice).
#[derive(Debug, Clone, Copy)]
struct Run {
    class: usize,
    index: u64,
    from: f64,
    left: f64,
    until: f64,
    completes: bool,
}

/// Per-server CFS over the classes with `c` slots (CPUs) each, FIFO within each class.
#[derive(Debug)]
pub(super) struct CfsServers {
    c: usize,
    rates: Vec<f64>,
    weights: Vec<f64>,
    slice: f64,
    /// `queues[s * k + class]`: the class's requests at `s`, in arrival order.
    queues: Vec<VecDeque<Entry>>,
    /// `serving[s * k + class]`: how many of them a slot is running.
    serving: Vec<u32>,
    /// `vruntime[s * k + class]`.
    vruntime: Vec<f64>,
    /// The least vruntime of the classes picked, never decreasing.
    min_vruntime: Vec<f64>,
    /// Slot `s * c + j` is server `s`'s `j`-th.
    slots: Vec<Option<Run>>,
    version: Vec<u32>,
    present: Vec<u32>,
}

impl CfsServers {
    /// Servers at `rates` with `c` slots each, running `classes` as CFS tasks, for
    /// `classes.slice` at a time.
    pub(super) fn new(rates: &[f64], c: u32, classes: &Classes) -> Self {
        let (n, k, c) = (rates.len(), classes.classes.len(), c as usize);
        CfsServers {
            c,
            rates: rates.to_vec(),
            weights: classes.weights(),
            slice: classes.slice,
            queues: vec![VecDeque::new(); n * k],
            serving: vec![0; n * k],
            vruntime: vec![0.0; n * k],
            min_vruntime: vec![0.0; n],
            slots: vec![None; n * c],
            version: vec![0; n * c],
            present: vec![0; n],
        }
    }

    /// Brings the runs of `s` up to `t` (Linux's `update_curr`, on each CPU): each running
    /// class's vruntime grows by the time its slot ran over its weight, each request's work
    /// by the time it ran at the rate.
    fn charge(&mut self, s: usize, t: f64) {
        let k = self.weights.len();
        for run in self.slots[s * self.c..(s + 1) * self.c].iter_mut().flatten() {
            let elapsed = t - run.from;
            self.vruntime[s * k + run.class] += elapsed / self.weights[run.class];
            run.left = (run.left - elapsed * self.rates[s]).max(0.0);
            run.from = t;
        }
    }

    /// The least vruntime of the classes at `s` with a request no slot is running.
    fn least(&self, s: usize) -> Option<(usize, f64)> {
        let k = self.weights.len();
        (0..k)
            .filter(|&c| self.queues[s * k + c].len() > self.serving[s * k + c] as usize)
            .map(|c| (c, self.vruntime[s * k + c]))
            .min_by(|a, b| a.1.total_cmp(&b.1))
    }

    /// Slot `j` (of server `s = j / c`) picks the class with the least vruntime among those
    /// with a request no slot runs and runs its oldest such request from `t`; or goes idle.
    fn pick(&mut self, j: usize, t: f64, sim: &mut Simulation<Versioned>) {
        self.version[j] = self.version[j].wrapping_add(1);
        let (s, k) = (j / self.c, self.weights.len());
        let Some((c, v)) = self.least(s) else {
            self.slots[j] = None;
            return;
        };
        self.min_vruntime[s] = self.min_vruntime[s].max(v);
        self.serving[s * k + c] += 1;
        let e = self.queues[s * k + c].iter_mut().find(|e| !e.on).expect("a request not run");
        e.on = true;
        let need = e.left / self.rates[s];
        let completes = need <= self.slice;
        let until = t + self.slice;
        let (index, left) = (e.job.index, e.left);
        self.slots[j] = Some(Run { class: c, index, from: t, left, until, completes });
        let end = if completes { t + need } else { until };
        schedule(sim, end, Event::Departure((j as u32, self.version[j])));
    }

    /// Request `index` of class `c` at `s` leaves or waits, the work it lacks `left`: with
    /// `done`, it leaves and is returned; else it waits again for a slot.
    fn stop(&mut self, s: usize, c: usize, index: u64, left: f64, done: bool) -> Option<Job> {
        let i = s * self.weights.len() + c;
        let q = &mut self.queues[i];
        let p = q.iter().position(|e| e.job.index == index).expect("a running request");
        self.serving[i] -= 1;
        if done {
            self.present[s] -= 1;
            return q.remove(p).map(|e| e.job);
        }
        q[p].on = false;
        q[p].left = left;
        None
    }
}

impl Servers for CfsServers {
    type Token = (u32, u32);

    #[inline]
    fn len(&self, s: usize) -> u32 {
        self.present[s]
    }

    fn arrive(&mut self, s: usize, job: Job, t: f64, sim: &mut Simulation<Versioned>) {
        let k = self.weights.len();
        let i = s * k + job.class as usize;
        if self.queues[i].is_empty() {
            // A class that wakes starts from the least vruntime, or keeps its own if larger.
            self.vruntime[i] = self.vruntime[i].max(self.min_vruntime[s]);
        }
        self.queues[i].push_back(Entry { job, left: job.work, on: false });
        self.present[s] += 1;
        // A free slot runs it at once (every other request present is running).
        if let Some(j) = (s * self.c..(s + 1) * self.c).find(|&j| self.slots[j].is_none()) {
            self.charge(s, t);
            self.pick(j, t, sim);
        }
    }

    fn depart(
        &mut self,
        (id, version): (u32, u32),
        t: f64,
        sim: &mut Simulation<Versioned>,
    ) -> Option<(usize, Job)> {
        let j = id as usize;
        if self.version[j] != version {
            return None;
        }
        let s = j / self.c;
        self.charge(s, t);
        let run = self.slots[j].expect("a run in progress");
        let done = self.stop(s, run.class, run.index, run.left, run.completes);
        self.pick(j, t, sim);
        done.map(|job| (s, job))
    }

    fn set_rate(&mut self, s: usize, rate: f64, t: f64, sim: &mut Simulation<Versioned>) {
        if self.rates[s] == rate {
            return;
        }
        // Each running request keeps the work it received at the old rate; the rest goes at the
        // new one. The slice is time (a CPU's quantum), so it ends when it would have; the run
        // ends then or when the request is done at the new rate, whichever comes first.
        self.charge(s, t);
        self.rates[s] = rate;
        for j in s * self.c..(s + 1) * self.c {
            let Some(run) = &mut self.slots[j] else { continue };
            let done = t + run.left / rate;
            run.completes = done <= run.until;
            let end = if run.completes { done } else { run.until };
            self.version[j] = self.version[j].wrapping_add(1);
            schedule(sim, end, Event::Departure((j as u32, self.version[j])));
        }
    }

    fn cancel(
        &mut self,
        s: usize,
        index: u64,
        t: f64,
        sim: &mut Simulation<Versioned>,
    ) -> (Job, f64) {
        let k = self.weights.len();
        let (c, p) = queued(&self.queues[s * k..(s + 1) * k], index, |e| e.job.index);
        let i = s * k + c;
        let e = self.queues[i][p];
        if !e.on {
            // Waiting (perhaps after slices that ran it): nothing else changes.
            self.queues[i].remove(p);
            self.present[s] -= 1;
            return (e.job, e.job.work - e.left);
        }
        // Running: its class's vruntime is charged as at the end of a slice, and its slot
        // picks again.
        self.charge(s, t);
        let j = (s * self.c..(s + 1) * self.c)
            .find(|&j| self.slots[j].is_some_and(|r| r.class == c && r.index == index))
            .expect("the slot running it");
        let left = self.slots[j].expect("a run").left;
        let job = self.stop(s, c, index, left, true).expect("it leaves");
        self.pick(j, t, sim);
        (job, (job.work - left).max(0.0))
    }
}

// ===== Weighted fair sharing of c slots =====

/// The rate at which the `i`-th request of a class (from 0, in arrival order) holding `x` slots
/// of rate `r` is served: the first `floor(x)` a whole slot each, the next the fraction left.
#[inline]
fn slot_rate(x: f64, i: usize, r: f64) -> f64 {
    (x - i as f64).clamp(0.0, 1.0) * r
}

/// Per-server weighted fair sharing of `c` slots between classes, FIFO within each: GPS with
/// capacity `c * rate` in which no request receives more than `rate` (one slot).
#[derive(Debug)]
pub(super) struct FairSlots {
    c: f64,
    rates: Vec<f64>,
    weights: Vec<f64>,
    /// `queues[s * k + class]`: the class's requests and the work each lacks, in arrival order.
    queues: Vec<VecDeque<Waiting>>,
    /// `slots[s * k + class]`: the slots the class has (at most its requests), summed to
    /// `min(c, requests present)` at each server.
    slots: Vec<f64>,
    /// When the work left was last brought up to date, per server.
    since: Vec<f64>,
    /// The request whose departure is pending, per server: its class and index.
    first: Vec<(usize, u64)>,
    present: Vec<u32>,
    version: Vec<u32>,
    /// Scratch: the classes with work at a server, by requests over weight.
    order: Vec<usize>,
}

impl FairSlots {
    /// Servers at `rates` with `c` slots each, shared among `classes` by weight.
    pub(super) fn new(rates: &[f64], c: u32, classes: &Classes) -> Self {
        let (n, k) = (rates.len(), classes.classes.len());
        FairSlots {
            c: f64::from(c),
            rates: rates.to_vec(),
            weights: classes.weights(),
            queues: vec![VecDeque::new(); n * k],
            slots: vec![0.0; n * k],
            since: vec![0.0; n],
            first: vec![(0, 0); n],
            present: vec![0; n],
            version: vec![0; n],
            order: Vec::with_capacity(k),
        }
    }

    /// The requests of class `c` at `s` that receive work, and the rate each receives: the
    /// class's `x` slots go to its first `floor(x)` requests whole and the next takes the rest.
    fn served(&self, s: usize, c: usize) -> impl Iterator<Item = (usize, f64)> {
        let k = self.weights.len();
        let (x, r) = (self.slots[s * k + c], self.rates[s]);
        (0..self.queues[s * k + c].len())
            .map(move |i| (i, slot_rate(x, i, r)))
            .take_while(|&(_, rate)| rate > 0.0)
    }

    /// Brings the work left of `s`'s requests up to `t`.
    fn advance(&mut self, s: usize, t: f64) {
        let (k, dt) = (self.weights.len(), t - self.since[s]);
        self.since[s] = t;
        if dt <= 0.0 {
            return;
        }
        for c in 0..k {
            let (x, r) = (self.slots[s * k + c], self.rates[s]);
            for (i, w) in self.queues[s * k + c].iter_mut().enumerate() {
                let rate = slot_rate(x, i, r);
                if rate <= 0.0 {
                    break;
                }
                w.left = (w.left - rate * dt).max(0.0);
            }
        }
    }

    /// Shares `s`'s slots among its classes by weighted water-filling: with `R` requests
    /// present, `min(c, R)` slots; a class whose weight's share exceeds its requests has one
    /// slot per request, and the slots it leaves go to the others by weight.
    fn allocate(&mut self, s: usize) {
        let k = self.weights.len();
        let n = |c: usize| self.queues[s * k + c].len() as f64;
        let mut order = std::mem::take(&mut self.order);
        order.clear();
        order.extend((0..k).filter(|&c| n(c) > 0.0));
        order.sort_by(|&a, &b| (n(a) / self.weights[a]).total_cmp(&(n(b) / self.weights[b])));
        let (mut cap, mut weight) = (self.c, order.iter().map(|&c| self.weights[c]).sum::<f64>());
        for c in 0..k {
            self.slots[s * k + c] = 0.0;
        }
        for &c in &order {
            let fair = self.weights[c] * cap / weight;
            let x = n(c).min(fair);
            self.slots[s * k + c] = x;
            if x < fair {
                cap -= x;
                weight -= self.weights[c];
            }
        }
        self.order = order;
    }

    /// Replaces `s`'s pending departure by one for its current shares.
    fn reschedule(&mut self, s: usize, t: f64, sim: &mut Simulation<Versioned>) {
        self.version[s] = self.version[s].wrapping_add(1);
        let k = self.weights.len();
        let next = (0..k)
            .flat_map(|c| self.served(s, c).map(move |(i, rate)| (c, i, rate)))
            .map(|(c, i, rate)| (self.queues[s * k + c][i].left / rate, c, i))
            .min_by(|a, b| a.0.total_cmp(&b.0));
        if let Some((dt, c, i)) = next {
            self.first[s] = (c, self.queues[s * k + c][i].job.index);
            schedule(sim, t + dt, Event::Departure((s as u32, self.version[s])));
        }
    }

    /// Request `index` of class `c` leaves `s` at `t`; the others' shares change.
    fn remove(
        &mut self,
        s: usize,
        c: usize,
        index: u64,
        t: f64,
        sim: &mut Simulation<Versioned>,
    ) -> Waiting {
        let q = &mut self.queues[s * self.weights.len() + c];
        let p = q.iter().position(|x| x.job.index == index).expect("a request present");
        let x = q.remove(p).expect("a position found");
        self.present[s] -= 1;
        self.allocate(s);
        self.reschedule(s, t, sim);
        x
    }
}

impl Servers for FairSlots {
    type Token = (u32, u32);

    #[inline]
    fn len(&self, s: usize) -> u32 {
        self.present[s]
    }

    fn arrive(&mut self, s: usize, job: Job, t: f64, sim: &mut Simulation<Versioned>) {
        self.advance(s, t);
        let k = self.weights.len();
        self.queues[s * k + job.class as usize].push_back(Waiting { job, left: job.work });
        self.present[s] += 1;
        self.allocate(s);
        self.reschedule(s, t, sim);
    }

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
        self.advance(s, t);
        let (c, index) = self.first[s];
        Some((s, self.remove(s, c, index, t, sim).job))
    }

    fn set_rate(&mut self, s: usize, rate: f64, t: f64, sim: &mut Simulation<Versioned>) {
        if self.rates[s] == rate {
            return;
        }
        // The work left is brought up to the change at the old rate; the shares, in slots,
        // stay.
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
        let k = self.weights.len();
        let (c, _) = queued(&self.queues[s * k..(s + 1) * k], index, |x| x.job.index);
        let x = self.remove(s, c, index, t, sim);
        (x.job, (x.job.work - x.left).max(0.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Class, DEFAULT_SLICE};
    use crate::time::SimTime;

    /// Classes with these priorities and weights.
    fn classes(prio: &[u32], weights: &[f64], aging: Option<f64>) -> Classes {
        let classes = prio
            .iter()
            .zip(weights)
            .enumerate()
            .map(|(i, (&priority, &weight))| Class {
                name: format!("c{i}"),
                share: 1.0 / prio.len() as f64,
                priority,
                weight,
                service: None,
                timeout: None,
            })
            .collect();
        Classes { classes, aging, slice: DEFAULT_SLICE }
    }

    /// Runs one server through `jobs` (arrival time, class, work), each arriving at its time
    /// (as an `Event::Rate` marker), until `until`; returns the departures (time, index).
    fn serve<V: Servers<Token = (u32, u32)>>(
        mut v: V,
        jobs: &[(f64, u32, f64)],
        until: f64,
    ) -> Vec<(f64, u64)> {
        let mut sim = Simulation::new();
        for (i, &(t, _, _)) in jobs.iter().enumerate() {
            sim.schedule(SimTime::new(t), Event::Rate(i as u32)).unwrap();
        }
        let mut out = Vec::new();
        while let Some(ev) = sim.next_event() {
            let t = sim.now().get();
            if t > until {
                break;
            }
            match ev {
                Event::Rate(i) => {
                    let (_, class, work) = jobs[i as usize];
                    let job = Job { arrival: t, work, index: u64::from(i), tag: 0, class };
                    v.arrive(0, job, t, &mut sim);
                }
                Event::Departure(token) => {
                    if let Some((_, j)) = v.depart(token, t, &mut sim) {
                        out.push((t, j.index));
                    }
                }
                _ => unreachable!(),
            }
        }
        out
    }

    /// Runs one server through `jobs` as [`serve`] does and cancels request `index` at `at`;
    /// returns the work it had received and the departures.
    fn serve_cancel<V: Servers<Token = (u32, u32)>>(
        mut v: V,
        jobs: &[(f64, u32, f64)],
        (index, at): (u64, f64),
    ) -> (f64, Vec<(f64, u64)>) {
        let mut sim = Simulation::new();
        for (i, &(t, _, _)) in jobs.iter().enumerate() {
            sim.schedule(SimTime::new(t), Event::Rate(i as u32)).unwrap();
        }
        sim.schedule(SimTime::new(at), Event::Timeout(0)).unwrap();
        let (mut out, mut received) = (Vec::new(), f64::NAN);
        while let Some(ev) = sim.next_event() {
            let t = sim.now().get();
            match ev {
                Event::Rate(i) => {
                    let (_, class, work) = jobs[i as usize];
                    let job = Job { arrival: t, work, index: u64::from(i), tag: 0, class };
                    v.arrive(0, job, t, &mut sim);
                }
                Event::Timeout(_) => {
                    let (job, r) = v.cancel(0, index, t, &mut sim);
                    assert_eq!(job.index, index);
                    received = r;
                }
                Event::Departure(token) => {
                    if let Some((_, j)) = v.depart(token, t, &mut sim) {
                        out.push((t, j.index));
                    }
                }
                _ => unreachable!(),
            }
        }
        assert_eq!(v.len(0), 0, "the server ends empty");
        (received, out)
    }

    /// Runs one server through `jobs` as [`serve`] does, its rate changed to `rate` at `at` for
    /// each `(at, rate)` of `changes`; returns the departures.
    fn serve_changing<V: Servers<Token = (u32, u32)>>(
        mut v: V,
        jobs: &[(f64, u32, f64)],
        changes: &[(f64, f64)],
    ) -> Vec<(f64, u64)> {
        let mut sim = Simulation::new();
        for (i, &(t, _, _)) in jobs.iter().enumerate() {
            sim.schedule(SimTime::new(t), Event::Rate(i as u32)).unwrap();
        }
        for (i, &(at, _)) in changes.iter().enumerate() {
            sim.schedule(SimTime::new(at), Event::Timeout(i as u32)).unwrap();
        }
        let mut out = Vec::new();
        while let Some(ev) = sim.next_event() {
            let t = sim.now().get();
            match ev {
                Event::Rate(i) => {
                    let (_, class, work) = jobs[i as usize];
                    let job = Job { arrival: t, work, index: u64::from(i), tag: 0, class };
                    v.arrive(0, job, t, &mut sim);
                }
                Event::Timeout(i) => v.set_rate(0, changes[i as usize].1, t, &mut sim),
                Event::Departure(token) => {
                    if let Some((_, j)) = v.depart(token, t, &mut sim) {
                        out.push((t, j.index));
                    }
                }
                _ => unreachable!(),
            }
        }
        assert_eq!(v.len(0), 0, "the server ends empty");
        out
    }

    #[test]
    fn a_rate_change_moves_the_work_left_under_priority() {
        // Class 1 (work 2) from 0, class 0 (work 1) at 0.5; the rate halves at 1. Non-preemptive:
        // class 1's request has 1 left at 1, which takes 2: it leaves at 3, and class 0's then
        // takes 1 / 0.5 = 2: 5.
        let c = classes(&[0, 1], &[1.0, 1.0], None);
        let jobs = [(0.0, 1, 2.0), (0.5, 0, 1.0)];
        let half = [(1.0, 0.5)];
        let np = PriorityWorkers::new(&[1.0], 1, &c, false);
        assert_eq!(serve_changing(np, &jobs, &half), [(3.0, 0), (5.0, 1)]);
        // Preemptive resume: class 0 takes the worker at 0.5 and has 0.5 left at 1, which
        // takes 1: it leaves at 2. The preempted request waited with 1.5 left, which the rate
        // change does not touch and which now takes 3: it leaves at 5.
        let pr = PriorityWorkers::new(&[1.0], 1, &c, true);
        assert_eq!(serve_changing(pr, &jobs, &half), [(2.0, 1), (5.0, 0)]);
        // Two workers, each request in service moves: work 2 and 4 from 0, the rate doubles
        // at 1: 1 left takes 0.5 (1.5), 3 left takes 1.5 (2.5).
        let two = PriorityWorkers::new(&[1.0], 2, &c, false);
        let jobs = [(0.0, 1, 2.0), (0.0, 0, 4.0)];
        assert_eq!(serve_changing(two, &jobs, &[(1.0, 2.0)]), [(1.5, 0), (2.5, 1)]);
    }

    #[test]
    fn a_rate_change_moves_the_virtual_time_of_fair_queueing() {
        // Weights 3:1, class 0 (work 6) and class 1 (work 1) from 0 at rate 1: by 2 they have
        // received 1.5 and 0.5. The rate halves then: 0.375 and 0.125 a unit of time, so class
        // 1's request leaves at 2 + 0.5 / 0.125 = 6, when class 0's has 3 left; alone at rate
        // 0.5, 6 more: 12. (Without the change: 4 and 7.)
        let c = classes(&[0, 0], &[3.0, 1.0], None);
        let jobs = [(0.0, 0, 6.0), (0.0, 1, 1.0)];
        let out = serve_changing(FairServers::new(&[1.0], &c), &jobs, &[(2.0, 0.5)]);
        let want = [(6.0, 1), (12.0, 0)];
        assert_eq!(out.iter().map(|x| x.1).collect::<Vec<_>>(), [1, 0]);
        for ((t, _), (w, _)) in out.iter().zip(want) {
            assert!((t - w).abs() < 1e-9, "{out:?}");
        }
        // A change on an empty server applies to what comes later: rate 2 from 0.5.
        let late = [(1.0, 1, 1.0)];
        let out = serve_changing(FairServers::new(&[1.0], &c), &late, &[(0.5, 2.0)]);
        assert_eq!(out, [(1.5, 0)]);
    }

    #[test]
    fn a_rate_change_moves_a_cfs_departure_or_leaves_the_slice_to_end() {
        // Slices of 1, weights 1:1, class 0 (work 1.5) and class 1 (work 1) from 0: class 0
        // runs first (a tie of vruntimes goes to the first class). At 0.5 it has 1 left and the
        // rate becomes 4: it needs 0.25, within its slice, so it leaves at 0.75; class 1 then
        // takes 0.25 and leaves at 1.
        let c = Classes { slice: 1.0, ..classes(&[0, 0], &[1.0, 1.0], None) };
        let cfs = || CfsServers::new(&[1.0], 1, &c);
        let jobs = [(0.0, 0, 1.5), (0.0, 1, 1.0)];
        assert_eq!(serve_changing(cfs(), &jobs, &[(0.5, 4.0)]), [(0.75, 0), (1.0, 1)]);
        // Class 0's request (work 1) would end with its slice at 1; the rate halves at 0.5, so
        // 0.5 left needs 1 more and the slice ends first, at 1, with 0.25 left. Class 1 (vruntime
        // 0 against 1) runs its slice to 2 (0.5 done, 0.5 left); the tie of vruntimes goes to
        // class 0, which leaves at 2 + 0.25 / 0.5 = 2.5, and class 1 at 2.5 + 1 = 3.5.
        let jobs = [(0.0, 0, 1.0), (0.0, 1, 1.0)];
        assert_eq!(serve_changing(cfs(), &jobs, &[(0.5, 0.5)]), [(2.5, 0), (3.5, 1)]);
    }

    #[test]
    fn a_cancelled_request_leaves_a_priority_server() {
        // Class 1 (work 2) from 0, class 0 (work 1) at 0.5, class 1 (work 1) at 0.6.
        // Non-preemptive: cancelling the waiting class-0 request at 1 (0 received) leaves the
        // others as if it never came; cancelling the one in service at 1 (1 received) starts
        // the next by priority, the class-0 request, at once.
        let c = classes(&[0, 1], &[1.0, 1.0], None);
        let jobs = [(0.0, 1, 2.0), (0.5, 0, 1.0), (0.6, 1, 1.0)];
        let np = || PriorityWorkers::new(&[1.0], 1, &c, false);
        assert_eq!(serve_cancel(np(), &jobs, (1, 1.0)), (0.0, vec![(2.0, 0), (3.0, 2)]));
        assert_eq!(serve_cancel(np(), &jobs, (0, 1.0)), (1.0, vec![(2.0, 1), (3.0, 2)]));
        // Preemptive resume: the class-0 arrival at 0.5 takes the worker; the preempted
        // request, waiting with 1.5 left, is cancelled at 1 having received 0.5; the class-0
        // request leaves at 1.5 and the last starts then.
        let pr = || PriorityWorkers::new(&[1.0], 1, &c, true);
        assert_eq!(serve_cancel(pr(), &jobs, (0, 1.0)), (0.5, vec![(1.5, 1), (2.5, 2)]));
        // The preempting request cancelled in service at 1: the preempted one resumes.
        assert_eq!(serve_cancel(pr(), &jobs, (1, 1.0)), (0.5, vec![(2.5, 0), (3.5, 2)]));
    }

    #[test]
    fn a_cancelled_request_leaves_a_fair_server() {
        // Weights 3:1: class 0 (work 3) and class 1 (work 1, then another of work 1) from 0
        // receive work at 0.75 and 0.25. At t = 2 class 1's head has received 0.5 and is
        // cancelled; the next of class 1 starts then. Class 0 lacks 1.5: it leaves at 4; class
        // 1's second has received 0.5 by then, and alone it leaves at 4.5.
        let c = classes(&[0, 0], &[3.0, 1.0], None);
        let jobs = [(0.0, 0, 3.0), (0.0, 1, 1.0), (0.0, 1, 1.0)];
        let out = serve_cancel(FairServers::new(&[1.0], &c), &jobs, (1, 2.0));
        assert_eq!(out, (0.5, vec![(4.0, 0), (4.5, 2)]));
        // A request waiting behind its class's head leaves without changing anything else.
        let out = serve_cancel(FairServers::new(&[1.0], &c), &jobs, (2, 2.0));
        // Class 1's head then ends at V = 1 with class 0's (t = 4): the earlier class first.
        assert_eq!(out, (0.0, vec![(4.0, 0), (4.0, 1)]));
    }

    #[test]
    fn a_cancelled_request_leaves_a_cfs_server() {
        // A slice longer than any request: class 0's request (work 1) runs [0, 1), class 1's
        // two (work 1 each) after it. Cancelled in service at 0.5 (0.5 received), class 1
        // runs at once: 1.5 and 2.5. Class 1's head, cancelled at 0.5 before it ran (0
        // received), and its second, cancelled waiting, leave the others as they were.
        let c = Classes { slice: 10.0, ..classes(&[0, 0], &[1.0, 1.0], None) };
        let jobs = [(0.0, 0, 1.0), (0.0, 1, 1.0), (0.0, 1, 1.0)];
        let cfs = || CfsServers::new(&[1.0], 1, &c);
        assert_eq!(serve_cancel(cfs(), &jobs, (0, 0.5)), (0.5, vec![(1.5, 1), (2.5, 2)]));
        assert_eq!(serve_cancel(cfs(), &jobs, (1, 0.5)), (0.0, vec![(1.0, 0), (2.0, 2)]));
        assert_eq!(serve_cancel(cfs(), &jobs, (2, 0.5)), (0.0, vec![(1.0, 0), (2.0, 1)]));
        // Slices of 0.1 alternate the two classes: by 0.45 or 0.55 class 0's request has had
        // about half the time, and the server never pauses, so class 1's request (work 1)
        // leaves at 1 + what the cancelled one received (to rounding).
        let c = classes(&[0, 0], &[1.0, 1.0], None);
        for at in [0.45, 0.55] {
            let (r, out) = serve_cancel(CfsServers::new(&[1.0], 1, &c), &jobs[..2], (0, at));
            assert!((0.2 - 1e-9..=0.3 + 1e-9).contains(&r), "{at}: {r}");
            assert!(out.len() == 1 && out[0].1 == 1, "{at}: {out:?}");
            assert!((out[0].0 - (1.0 + r)).abs() < 1e-9, "{at}: {r} {out:?}");
        }
    }

    #[test]
    fn cfs_slots_run_the_least_vruntime_class_on_each_free_slot() {
        // Two slots, slices longer than any request, weights 1:1: class 0's requests (work 2
        // and 1) take both slots at 0 (class 0 has the least vruntime, a tie to the first
        // class, and a request no slot runs); class 1's (work 1) waits. At 1 the second leaves:
        // class 0's vruntime is 2 (one unit on each slot), so the free slot runs class 1's
        // request, which leaves at 2 with class 0's first.
        let c = Classes { slice: 10.0, ..classes(&[0, 0], &[1.0, 1.0], None) };
        let jobs = [(0.0, 0, 2.0), (0.0, 0, 1.0), (0.0, 1, 1.0)];
        let out = serve(CfsServers::new(&[1.0], 2, &c), &jobs, 1e9);
        assert_eq!(out, [(1.0, 1), (2.0, 0), (2.0, 2)]);
        // One slot: the same requests one at a time, class 0's first then (vruntime 2 against
        // 0) class 1's, then class 0's second.
        let out = serve(CfsServers::new(&[1.0], 1, &c), &jobs, 1e9);
        assert_eq!(out, [(2.0, 0), (3.0, 2), (4.0, 1)]);
    }

    #[test]
    fn cfs_on_two_slots_shares_them_by_weight() {
        // Weights 3:1 on two slots, both classes backlogged with requests of work 1, slices of
        // 0.1. Both slots are always busy, so 2t of work is done by t: 3 v_0 + v_1 = 2t (the
        // vruntimes counted to t). A slot picks the least vruntime; the other class can then
        // run ahead by at most the slices in flight, two of 0.1 over its weight (<= 0.2), so
        // |v_0 - v_1| <= 0.2, v_0 = t/2 + (v_0 - v_1)/4 and class 0's work 3 v_0 = 1.5 t within
        // 0.15 (75% of the service), class 1's 0.5 t within 0.15 (25%). A class has at most two
        // requests part-served (one a slot), so by t = 1000 class 0 has completed 1498 to 1500
        // and class 1 498 to 500 (the ranges below are one wider).
        let c = classes(&[0, 0], &[3.0, 1.0], None);
        let done = completed(CfsServers::new(&[1.0], 2, &c), 2, 2500, 1000.0);
        assert!((1497..=1500).contains(&done[0]) && (497..=500).contains(&done[1]), "{done:?}");
    }

    #[test]
    fn fair_slots_give_each_request_at_most_a_slot_and_share_the_rest_by_weight() {
        // Two slots, weights 1:1. Class 0's request (work 2) and class 1's (work 1) from 0: fewer
        // requests than slots, each runs at the full rate: 1 and 2. With class 0's second (work
        // 1) at 0.5, three requests share two slots: each class has one (its weight's share, no
        // more than its requests), class 0's going to its first request; class 1's leaves at
        // 1, and then class 0's two run at once: 1 left and 1, both at 2.
        let c = classes(&[0, 0], &[1.0, 1.0], None);
        let jobs = [(0.0, 0, 2.0), (0.0, 1, 1.0)];
        assert_eq!(serve(FairSlots::new(&[1.0], 2, &c), &jobs, 1e9), [(1.0, 1), (2.0, 0)]);
        let jobs = [(0.0, 0, 2.0), (0.0, 1, 1.0), (0.5, 0, 1.0)];
        let out = serve(FairSlots::new(&[1.0], 2, &c), &jobs, 1e9);
        assert_eq!(out, [(1.0, 1), (2.0, 0), (2.0, 2)]);
        // Weights 3:1 with class 0's two requests and class 1's one, work 1 each: class 0 has
        // 1.5 slots (its first request a whole one, its second half), class 1 half of one. At 1
        // class 0's first leaves, its second and class 1's having received 0.5; then one
        // request a class, a slot each: both leave at 1.5.
        let c = classes(&[0, 0], &[3.0, 1.0], None);
        let jobs = [(0.0, 0, 1.0), (0.0, 0, 1.0), (0.0, 1, 1.0)];
        let out = serve(FairSlots::new(&[1.0], 2, &c), &jobs, 1e9);
        assert_eq!(out.iter().map(|x| x.1).collect::<Vec<_>>(), [0, 1, 2]);
        for (t, w) in out.iter().map(|x| x.0).zip([1.0, 1.5, 1.5]) {
            assert!((t - w).abs() < 1e-12, "{out:?}");
        }
    }

    #[test]
    fn fair_on_two_slots_shares_them_by_weight() {
        // Weights 3:1 on two rate-1 slots, both classes backlogged with requests of work 1:
        // class 0 has 1.5 slots and class 1 0.5 (75% and 25% of the service). Class 1's head
        // alone receives 0.5 a unit of time: its requests leave every 2, exactly, 99 by 199.9.
        // Class 0 receives 1.5 a unit of time, 299.85 by 199.9, of which at most its two
        // part-served requests' work (< 2) is in requests not yet done: 298 or 299 completed.
        let c = classes(&[0, 0], &[3.0, 1.0], None);
        let done = completed(FairSlots::new(&[1.0], 2, &c), 2, 400, 199.9);
        assert!((298..=299).contains(&done[0]) && done[1] == 99, "{done:?}");
    }

    #[test]
    fn priority_serves_the_higher_class_next_and_preemption_resumes() {
        // Class 1 (work 2) from t = 0, class 0 (work 1) at 0.5. Non-preemptive: 2 then 3.
        // Preemptive resume: class 0 takes the worker at 0.5 and leaves at 1.5; class 1
        // resumes with 1.5 left and leaves at 3.
        let c = classes(&[0, 1], &[1.0, 1.0], None);
        let jobs = [(0.0, 1, 2.0), (0.5, 0, 1.0)];
        let out = serve(PriorityWorkers::new(&[1.0], 1, &c, false), &jobs, 1e9);
        assert_eq!(out, [(2.0, 0), (3.0, 1)]);
        let out = serve(PriorityWorkers::new(&[1.0], 1, &c, true), &jobs, 1e9);
        assert_eq!(out, [(1.5, 1), (3.0, 0)]);
        // Among waiting requests of one class, arrival order; a higher class first.
        let jobs = [(0.0, 1, 1.0), (0.1, 1, 1.0), (0.2, 1, 1.0), (0.3, 0, 1.0)];
        let out = serve(PriorityWorkers::new(&[1.0], 1, &c, false), &jobs, 1e9);
        assert_eq!(out.iter().map(|x| x.1).collect::<Vec<_>>(), [0, 3, 1, 2]);
    }

    #[test]
    fn aging_lifts_a_waiting_request_one_level_per_period() {
        // Class 0 (work 10) in service from 0; class 1 waits from 0.1; class 0 again at 5. At
        // t = 10 plain priority serves the class-0 request (leaves 11, class 1 at 12); with
        // aging 2, class 1 has waited 9.9 (four periods: level 1 - 4, held at 0) and arrived
        // first, so it goes first (11), the class-0 request after (12).
        let jobs = [(0.0, 0, 10.0), (0.1, 1, 1.0), (5.0, 0, 1.0)];
        let plain = classes(&[0, 1], &[1.0, 1.0], None);
        let out = serve(PriorityWorkers::new(&[1.0], 1, &plain, false), &jobs, 1e9);
        assert_eq!(out, [(10.0, 0), (11.0, 2), (12.0, 1)]);
        let aged = classes(&[0, 1], &[1.0, 1.0], Some(2.0));
        let out = serve(PriorityWorkers::new(&[1.0], 1, &aged, false), &jobs, 1e9);
        assert_eq!(out, [(10.0, 0), (11.0, 1), (12.0, 2)]);
        // An aging period longer than the wait changes nothing.
        let slow = classes(&[0, 1], &[1.0, 1.0], Some(20.0));
        let out = serve(PriorityWorkers::new(&[1.0], 1, &slow, false), &jobs, 1e9);
        assert_eq!(out, [(10.0, 0), (11.0, 2), (12.0, 1)]);
    }

    /// Requests of each class completed by `until` when `per_class` requests of work 1 of
    /// each class are present from time 0.
    fn completed<V: Servers<Token = (u32, u32)>>(
        v: V,
        k: u32,
        per_class: usize,
        until: f64,
    ) -> Vec<usize> {
        let jobs: Vec<(f64, u32, f64)> =
            (0..per_class).flat_map(|_| (0..k).map(|c| (0.0, c, 1.0))).collect();
        let out = serve(v, &jobs, until);
        (0..k).map(|c| out.iter().filter(|(_, i)| jobs[*i as usize].1 == c).count()).collect()
    }

    #[test]
    fn fair_queueing_shares_the_server_by_weight() {
        // Two classes always backlogged with weights 3:1 on a rate-1 server: class 0's requests
        // (work 1) leave every 1/0.75, class 1's every 1/0.25, exactly. By t = 199.9: 149 and
        // 49 (the 150th and 50th leave at 200).
        let c = classes(&[0, 0], &[3.0, 1.0], None);
        assert_eq!(completed(FairServers::new(&[1.0], &c), 2, 400, 199.9), [149, 49]);
        // A class alone has the whole server: one class present leaves every 1.
        let jobs = [(0.0, 1, 1.0), (0.0, 1, 1.0)];
        let out = serve(FairServers::new(&[1.0], &c), &jobs, 1e9);
        assert_eq!(out, [(1.0, 0), (2.0, 1)]);
    }

    #[test]
    fn cfs_shares_the_server_by_nice_weight() {
        // nice 0 and nice 5: weights 1024 and 335 (kernel/sched/core.c), shares 1024/1359 =
        // 0.7535 and 0.2465. Both backlogged with requests of work 1, slices of 0.1: CFS keeps
        // the vruntimes within one slice's increment of each other (0.1 * 1024/335 = 0.31), so
        // the work each received by t = 1000 is its share of 1000 within 0.31 * 0.33 < 0.1,
        // and the requests completed within one of share * 1000: 753.5 and 246.5.
        let c = classes(&[0, 0], &[1.0, crate::model::nice_weight(5)], None);
        let done = completed(CfsServers::new(&[1.0], 1, &c), 2, 1500, 1000.0);
        assert!((752..=755).contains(&done[0]) && (245..=248).contains(&done[1]), "{done:?}");
        // Work-conserving: 1000 units of work by t = 1000, the last request perhaps just then.
        assert!((999..=1000).contains(&(done[0] + done[1])), "{done:?}");
    }
}

//! One replication: the event loop of a farm under a policy and an information model.
//!
//! This is the one loop. [`simulate_with`] builds a [`Replication`] from the farm, the workload,
//! the policy and the run's length, choosing its parts once:
//!
//! - the servers ([`Servers`]): [`OneSlot`] for FIFO with one worker and fixed rates (the
//!   article's farm), [`FifoWorkers`] for FIFO with `c` workers or changing rates,
//!   [`SharedServers`] for processor sharing;
//! - the admission stage and the series ([`Parts`]): [`Off`] when the farm has no limiter and no
//!   series is asked for, [`On`] otherwise;
//! - feedback, held requests and tags by the policy's constants ([`Policy::FEEDBACK`],
//!   [`Policy::HOLDS`], [`Policy::TAGGED`]), tested where they apply;
//! - rate changes by the farm's events, scheduled at the start;
//! - the request lifecycle (errors, response delays, a queue limit, timeouts, retries: SPEC
//!   §11) as part of [`On`], absent otherwise; its handlers are in `replication/lifecycle.rs`.
//!
//! Each choice is a type, so the loop is compiled once per combination and a part that is off
//! costs nothing. [`Replication::run`] takes the events in order and hands each to its handler,
//! one per kind of [`Event`]; every handler records through [`record`](super::record). A new part
//! plugs in as a field called from the handlers it concerns (and, if it schedules events, an
//! [`Event`] variant and its handler).

use std::collections::VecDeque;

use super::event::{Event, Job, POST_CLASS, schedule, schedule_arrival};
use super::feedback::{Monitor, ProbeReply};
use super::parts::{Off, On, Parts};
use super::record::Recorder;
use super::scheduled::{CfsServers, FairServers, FairSlots, PriorityWorkers};
use super::servers::{CountedSlot, FifoWorkers, OneSlot, Servers, SharedServers};
use super::{SimTime, Simulation};
use crate::admission::{Decision, Scope};
use crate::info::{Board, BoardWithDispatch, InfoModel, Live};
use crate::model::{Discipline, Farm, Information, RunLength, SimOptions};
use crate::policy::Policy;
use crate::rng::SimRng;
use crate::stats::RepStats;
use crate::workload::{Demands, Gaps};

mod health;
mod lifecycle;

/// Runs one replication: `arrivals` and `service` draw the gaps and demands from `workload`,
/// `coins` is the policy's own stream. A trace that ends before `len` asks ends the arrivals.
///
/// The information model is built here, once, from `opts.info`: [`Live`], [`Board`], or
/// [`BoardWithDispatch`] for a board with `local` set.
#[allow(clippy::too_many_arguments)]
pub fn simulate<P: Policy, A: Gaps, S: Demands>(
    farm: &Farm,
    len: RunLength,
    opts: SimOptions,
    policy: P,
    arrivals: &mut A,
    service: &S,
    workload: SimRng,
    coins: SimRng,
) -> RepStats {
    let n = farm.rates.len();
    let sorted = P::NEEDS_SHORTEST;
    match opts.info {
        Information::Live => {
            let info = Live::new(n, sorted);
            simulate_with(farm, len, opts, policy, info, arrivals, service, workload, coins)
        }
        Information::Board { period, local: false } => {
            let info: Board = Board::new(n, sorted, period);
            simulate_with(farm, len, opts, policy, info, arrivals, service, workload, coins)
        }
        Information::Board { period, local: true } => {
            let info = BoardWithDispatch::new(n, sorted, period);
            simulate_with(farm, len, opts, policy, info, arrivals, service, workload, coins)
        }
    }
}

/// Runs one replication under the information model `info`, with the servers and parts the farm
/// and `opts` ask for (see the module's documentation).
#[allow(clippy::too_many_arguments)]
pub fn simulate_with<P: Policy, A: Gaps, S: Demands, I: InfoModel>(
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
    let fixed_rates = farm.events.is_empty();
    let bare = farm.admission.is_none()
        && opts.series.is_none()
        && farm.lifecycle.is_none()
        && farm.classes.is_none();
    // One-slot servers cannot take a request back (their departures never go stale): a host
    // that goes down or hangs loses what it holds, as a cancelled attempt leaves.
    let cancels = farm
        .lifecycle
        .as_ref()
        .is_some_and(|l| l.client.cancel || l.changes.iter().any(|c| c.state.is_some()));
    let parts = opts.clone();
    let clients = policy.clients();
    let on = || On::new(farm, &parts, &workload, clients, len);
    // Departures need not be events when nothing hears them as they happen: the policy reads
    // lengths alone, from live information, and no level is tracked.
    let counted = bare
        && P::READS_LENGTHS_ONLY
        && I::LIVE
        && !(P::NEEDS_SHORTEST || P::FEEDBACK || P::HOLDS || P::TAGGED)
        && !opts.track_levels;
    let b = Builder { farm, len, opts, policy, info, arrivals, service };
    match farm.discipline {
        Discipline::Fifo if farm.slots == 1 && fixed_rates && counted => {
            b.run_counted(workload, coins)
        }
        Discipline::Fifo if farm.slots == 1 && fixed_rates && bare => {
            b.build(OneSlot::new(&farm.rates), Off, workload, coins).run()
        }
        Discipline::Fifo if farm.slots == 1 && fixed_rates && !cancels => {
            let parts = on();
            b.build(OneSlot::new(&farm.rates), parts, workload, coins).run()
        }
        Discipline::Fifo => {
            let (servers, parts) = (FifoWorkers::new(&farm.rates, farm.slots as usize), on());
            b.build(servers, parts, workload, coins).run()
        }
        Discipline::Ps => {
            let (servers, parts) = (SharedServers::new(&farm.rates, farm.slots), on());
            b.build(servers, parts, workload, coins).run()
        }
        d @ (Discipline::Priority | Discipline::PriorityPreemptive) => {
            let c = farm.classes.as_deref().expect("a class discipline has classes");
            let preemptive = d == Discipline::PriorityPreemptive;
            let servers = PriorityWorkers::new(&farm.rates, farm.slots, c, preemptive);
            let parts = on();
            b.build(servers, parts, workload, coins).run()
        }
        Discipline::Fair if farm.slots == 1 => {
            let c = farm.classes.as_deref().expect("a class discipline has classes");
            let (servers, parts) = (FairServers::new(&farm.rates, c), on());
            b.build(servers, parts, workload, coins).run()
        }
        Discipline::Fair => {
            let c = farm.classes.as_deref().expect("a class discipline has classes");
            let (servers, parts) = (FairSlots::new(&farm.rates, farm.slots, c), on());
            b.build(servers, parts, workload, coins).run()
        }
        Discipline::Cfs => {
            let c = farm.classes.as_deref().expect("a class discipline has classes");
            let (servers, parts) = (CfsServers::new(&farm.rates, farm.slots, c), on());
            b.build(servers, parts, workload, coins).run()
        }
    }
}

/// The table the policy reads: the servers' own when they count their departures, else the
/// information model's.
#[inline(always)]
fn view<'a, V: Servers, I: InfoModel>(servers: &'a V, info: &'a I) -> &'a crate::model::LoadTable {
    if V::COUNTS_DEPARTURES { servers.counted().expect("counted servers") } else { info.view() }
}

/// What a replication is made of before its servers and parts are chosen.
struct Builder<'a, P, A, S, I> {
    farm: &'a Farm,
    len: RunLength,
    opts: SimOptions,
    policy: P,
    info: I,
    arrivals: &'a mut A,
    service: &'a S,
}

impl<'a, P: Policy, A: Gaps, S: Demands, I: InfoModel> Builder<'a, P, A, S, I> {
    /// Runs the replication on [`CountedSlot`] servers, which record each request as it joins.
    /// When a guard stops it, some of those had not left by then and must not count: it is run
    /// again from the same start (policy, information, arrivals and streams as they were) with
    /// [`OneSlot`] servers, whose departures are events, which gives what the counted run would
    /// have given had it recorded departures as they happened
    /// (`counting_departures_when_servers_are_read_is_simulating_them` in `tests/engine.rs`
    /// checks the two kinds bit for bit).
    fn run_counted(self, workload: SimRng, coins: SimRng) -> RepStats {
        let mut arrivals = self.arrivals.clone();
        let again = Builder {
            farm: self.farm,
            len: self.len,
            opts: self.opts.clone(),
            policy: self.policy.clone(),
            info: self.info.clone(),
            arrivals: &mut arrivals,
            service: self.service,
        };
        let farm = self.farm;
        let stats =
            self.build(CountedSlot::new(&farm.rates), Off, workload.clone(), coins.clone()).run();
        if stats.stopped.is_none() {
            return stats;
        }
        again.build(OneSlot::new(&farm.rates), Off, workload, coins).run()
    }

    /// The replication at time 0, its first events scheduled: the rate changes first (one at
    /// the instant of an arrival applies before it), the first arrival, the first board post,
    /// and the feedback policies' first report and timer.
    fn build<V: Servers, F: Parts>(
        self,
        servers: V,
        parts: F,
        mut workload: SimRng,
        coins: SimRng,
    ) -> Replication<'a, P, A, S, I, V, F> {
        let Builder { farm, len, opts, mut policy, info, arrivals, service } = self;
        let n = farm.rates.len();
        let mut sim = Simulation::with_capacity(n * farm.slots as usize + farm.events.len() + 2);
        for (i, e) in farm.events.iter().enumerate() {
            schedule(&mut sim, e.at, Event::Rate(i as u32));
        }
        if let Some(l) = &farm.lifecycle {
            for (i, c) in l.changes.iter().enumerate() {
                schedule(&mut sim, c.at, Event::Change(i as u32));
            }
            // Health's timers (SPEC §12): the first outlier review after one interval, the
            // first check of every host at time 0, after the changes at 0.
            if let Some(h) = &l.health {
                if let Some(o) = &h.outlier {
                    schedule(&mut sim, o.interval, Event::Review);
                }
                if h.checks.is_some() {
                    for s in 0..n {
                        schedule(&mut sim, 0.0, Event::Check(s as u32));
                    }
                }
            }
        }
        let mut arrivals_over = true;
        if let Some(first) = arrivals.next_gap(&mut workload) {
            schedule_arrival(&mut sim, first);
            arrivals_over = false;
        }
        if let Some(period) = info.post_period() {
            sim.schedule_class(SimTime::new(period), POST_CLASS, Event::Post).expect("future");
        }
        if P::FEEDBACK {
            if let Some(p) = policy.report_period() {
                schedule(&mut sim, p, Event::Report);
            }
            if let Some(p) = policy.timer_period() {
                schedule(&mut sim, p, Event::Timer);
            }
        }
        let fb = Feedback {
            monitor: P::FEEDBACK.then(|| Monitor::new(&farm.rates, farm.slots)),
            probes: Vec::new(),
            in_flight: Vec::new(),
            free: Vec::new(),
        };
        let lead = (n >= AHEAD_FROM).then(|| {
            let mut lead = coins.clone();
            for _ in 0..AHEAD_PICKS {
                policy.ahead(&mut lead);
            }
            lead
        });
        Replication {
            lead,
            farm,
            len,
            queue_guard: opts.queue_guard,
            policy,
            info,
            arrivals,
            service,
            workload,
            coins,
            servers,
            parts,
            n,
            total: len.warmup + len.requests,
            rec: Recorder::new(n, len, opts.track_levels),
            sim,
            arrived: 0,
            held: Vec::new(),
            arrivals_over,
            fb,
        }
    }
}

/// One replication in progress: the farm and its servers, the policy and what it sees, the
/// streams, the parts, and the bookkeeping.
struct Replication<'a, P, A, S, I, V: Servers, F> {
    farm: &'a Farm,
    len: RunLength,
    queue_guard: u32,
    policy: P,
    info: I,
    arrivals: &'a mut A,
    service: &'a S,
    workload: SimRng,
    coins: SimRng,
    servers: V,
    parts: F,
    /// The number of servers.
    n: usize,
    /// The arrivals of the run, warm-up included.
    total: u64,
    rec: Recorder,
    sim: Simulation<Event<V::Token>>,
    /// Requests arrived so far: the index of the next.
    arrived: u64,
    /// Requests the policy holds back (`Policy::HOLDS`), per client, in arrival order.
    held: Vec<VecDeque<Job>>,
    /// Set once no further arrival is scheduled: board posts, reports and timers stop then too.
    arrivals_over: bool,
    fb: Feedback,
    /// On a large farm, a copy of the policy's stream [`AHEAD_PICKS`] picks ahead of it, from
    /// which the servers of the pick that many arrivals on are drawn and fetched into the cache
    /// ([`Policy::ahead`]); `None` otherwise.
    lead: Option<SimRng>,
}

/// The farms from which the loop fetches the servers of picks to come (those of departures to
/// come it fetches while the event queue keeps time buckets): from 2^14 servers their lines (64
/// bytes each, counted or one-slot) fill a megabyte, a core's second-level cache on the machine
/// this was measured on, and reading one drawn at random is a miss to a slower level.
/// Below, the fetches cost more than they save (p2c at n = 100: 6 to 10% slower with them).
const AHEAD_FROM: usize = 1 << 14;

/// How many picks ahead the loop fetches their servers: far enough that the fetch has come when
/// the pick reads them, a miss to memory taking a few arrivals' work. p2c at n = 10^6 took 2.4
/// to 2.8 CPU s without fetches, 2.2 to 2.3 one pick ahead, 1.2 two, 0.8 to 0.9 four, 0.8 six
/// and 0.7 to 0.9 eight (the command of the README's Performance section).
const AHEAD_PICKS: usize = 6;

/// What the feedback policies keep during a replication (see `feedback.rs`).
struct Feedback {
    monitor: Option<Monitor>,
    /// The servers the policy probes after a dispatch.
    probes: Vec<usize>,
    /// The probes in flight ([`Event::ProbeAt`] and [`Event::ProbeBack`] name one), and the
    /// numbers free for reuse.
    in_flight: Vec<Probe>,
    free: Vec<u32>,
}

/// A probe in flight: sent by client `tag` (the tag of the request it was sent after) to
/// `server`, and, once there, what it read.
#[derive(Debug, Clone, Copy)]
struct Probe {
    server: u32,
    tag: u32,
    read: ProbeReply,
}

impl<P: Policy, A: Gaps, S: Demands, I: InfoModel, V: Servers, F: Parts>
    Replication<'_, P, A, S, I, V, F>
{
    /// The loop: takes the events in time order (ties in class, then scheduling, order) and
    /// hands each to its handler until none is left or a guard stops the replication. Arrivals
    /// and departures, nearly every event, are handled in its body; the other kinds go through
    /// [`Self::rare`], out of line.
    fn run(mut self) -> RepStats {
        while let Some(event) = self.next_event() {
            let now = self.sim.now();
            let stop = match event {
                Event::Departure(token) => {
                    self.departure(token, now);
                    false
                }
                Event::Arrival => self.arrival(now.get()),
                other => self.rare(other, now),
            };
            if stop {
                break;
            }
        }
        self.finish()
    }

    /// The next event. While many are pending (the queue's time buckets), the servers of the
    /// departures a few buckets on are fetched into the cache as each bucket comes up: two
    /// buckets on, the server (its state and what the policy keeps of it, [`Servers::prefetch`],
    /// [`Policy::prefetch`]) and its load; one bucket on, its request next in line, through
    /// the server fetched a bucket before ([`Servers::prefetch_next`]). A hint only.
    #[inline(always)]
    fn next_event(&mut self) -> Option<Event<V::Token>> {
        let (servers, info, policy) = (&self.servers, &self.info, &self.policy);
        self.sim.next_event_ahead(|ev, k| {
            let Event::Departure(token) = ev else { return };
            let Some(s) = V::departing(token) else { return };
            if k == 1 {
                servers.prefetch_next(s);
            } else {
                servers.prefetch(s);
                view(servers, info).prefetch(s);
                policy.prefetch(s);
            }
        })
    }

    /// The events other than arrivals and departures, kept out of the loop's body: the article's
    /// runs have none of them, and the others few.
    #[inline(never)]
    fn rare(&mut self, event: Event<V::Token>, now: SimTime) -> bool {
        let t = now.get();
        match event {
            Event::Arrival | Event::Departure(_) => unreachable!("handled in the loop"),
            Event::Rate(i) => self.rate_change(i, t),
            Event::Release => return self.release(),
            Event::Retry { client } => return self.retry(client, now),
            Event::Post => self.post(t),
            Event::Report => self.report(now),
            Event::Timer => self.timer(now),
            Event::ProbeAt(i) => self.probe_at(i, t),
            Event::ProbeBack(i) => self.probe_back(i, now),
            Event::Respond(a) => return self.lc_respond(a, now),
            Event::Timeout(a) => return self.lc_timeout(a, now),
            Event::Deadline(r) => return self.lc_deadline(r, now),
            Event::Resend(r) => return self.lc_resend(r, now),
            Event::Hedge(r) => return self.lc_hedge(r, now),
            Event::Change(i) => self.lc_change(i),
            Event::Review => self.lc_review(t),
            Event::Check(s) => self.lc_check(s as usize, t),
        }
        false
    }

    /// The replication's statistics, once the loop is over.
    fn finish(self) -> RepStats {
        let mut stats = self.rec.finish();
        self.parts.finish(&mut stats, self.sim.now().get());
        stats
    }

    // ===== The handlers, one per kind of event =====
    // Those that return a `bool` return true when a guard stops the replication.

    /// A request arrives: the admission stage admits it (it is sent now), delays it (an
    /// [`Event::Release`] sends it later) or rejects it; then the next arrival is scheduled,
    /// unless the run has all its arrivals.
    #[inline(always)]
    fn arrival(&mut self, t: f64) -> bool {
        self.rec.stats.events += 1;
        if let Some(table) = self.servers.counted_mut() {
            table.set_now(t);
        }
        let (n, servers) = (self.n, &self.servers);
        self.rec.arriving(self.arrived, t, || (0..n).map(|s| servers.len(s)).max().unwrap_or(0));
        // With classes, the class comes from its own stream and the demand from its law; the
        // branch is never taken without them (and compiled out without parts).
        let (work, class) = match self.parts.classes() {
            Some(c) => {
                let k = c.draw();
                let work = match c.law(k) {
                    Some(law) => law.demand(&mut self.workload),
                    None => self.service.demand(&mut self.workload),
                };
                (work, k)
            }
            None => (self.service.demand(&mut self.workload), 0),
        };
        // The gap to the next arrival is the stream's next draw; taking it here (the last
        // arrival's is never used) lets its division overlap with the dispatch.
        let gap = self.arrivals.next_gap(&mut self.workload);
        let mut job = Job { arrival: t, work, index: self.arrived, tag: 0, class };
        if self.parts.lifecycle().is_some() {
            self.lc_open(&mut job, t);
        }
        let measured = self.arrived >= self.len.warmup;
        let (by_key, by_client) = self.parts.scopes();
        let (decision, scope) = if by_key || by_client {
            self.offer_scoped(&job, t, measured)
        } else {
            (self.parts.offer(t, measured, Scope::default()), Scope::default())
        };
        let stop = match decision {
            Decision::Admit if by_key || by_client => self.send_scoped(job, scope),
            Decision::Admit => self.send(job),
            Decision::Delay(at) => {
                self.parts.delay(job, scope);
                schedule(&mut self.sim, at, Event::Release);
                false
            }
            Decision::Reject => {
                self.parts.lifecycle().is_some() && self.lc_refused(job.index as u32, scope.client)
            }
        };
        if stop {
            return true;
        }
        self.fetch_ahead();
        self.arrived += 1;
        if let Some(gap) = gap.filter(|_| self.arrived < self.total) {
            schedule_arrival(&mut self.sim, t + gap);
        } else {
            self.arrivals_over = true;
            self.rec.arrivals_end(t);
        }
        false
    }

    /// On a large farm, draws the servers of the pick [`AHEAD_PICKS`] arrivals on and asks for
    /// what that pick reads of them (their lines and loads, the policy's own state of them,
    /// their pick counts) to be fetched into the cache. Only the policy's picks draw from its
    /// stream on such a farm, so the copy stays as many picks ahead and names exactly the
    /// servers those picks read; were it to fall out of step, only the fetches would be wasted.
    #[inline(always)]
    fn fetch_ahead(&mut self) {
        let Some(lead) = &mut self.lead else { return };
        let ahead = self.policy.ahead(lead);
        let table = view(&self.servers, &self.info);
        for &s in ahead.servers() {
            let s = s as usize;
            table.prefetch(s);
            self.servers.prefetch(s);
            self.policy.prefetch(s);
            self.rec.prefetch_picks(s);
        }
    }

    /// The departure `token` names, ignored if it is stale.
    #[inline(always)]
    fn departure(&mut self, token: V::Token, now: SimTime) {
        let t = now.get();
        let Some((s, job)) = self.servers.depart(token, t, &mut self.sim) else {
            return;
        };
        if self.parts.lifecycle().is_some() {
            self.lc_departure(s, job, now);
            return;
        }
        self.rec.stats.events += 1;
        let sojourn = t - job.arrival;
        let left = self.servers.len(s);
        self.rec.departed(job.index, sojourn, left + 1, t);
        if let Some(c) = self.parts.classes() {
            c.left(job.class, job.index, sojourn);
        }
        self.policy.on_departure(s, sojourn, now, job.tag);
        self.info.on_departure(s);
        let measured = job.index >= self.len.warmup;
        self.parts.left(s, left, t, &job, sojourn, measured);
        if P::FEEDBACK
            && let Some(m) = &mut self.fb.monitor
        {
            let response = m.departed(s, job.work, sojourn, left, t);
            self.policy.on_response(s, &response, now, job.tag);
        }
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
        let (job, scope) = self.parts.release();
        // A retry or hedge the admission stage held goes out from its request's client.
        let client = if self.parts.lifecycle().is_some() { self.lc_client(&job) } else { None };
        self.send_scoped(job, Scope { client: client.or(scope.client), ..scope })
    }

    /// The admission stage's decision on the arrival `job` at `t` when it counts requests per
    /// key or per client (a composite limiter): the fleet assigns the request's client first
    /// (a policy that is not a fleet has none to give), the stage draws its key, and both are
    /// the request's own from then on ([`Scope`]): it is sent from that client, a hashing
    /// policy hashes that key, and its retries are counted under them.
    #[inline(never)]
    fn offer_scoped(&mut self, job: &Job, t: f64, measured: bool) -> (Decision, Scope) {
        let (_, by_client) = self.parts.scopes();
        let fleet = P::TAGGED && self.policy.clients() > 1;
        let client = (by_client && fleet).then(|| self.policy.assign());
        let decision = self.parts.offer(t, measured, Scope { key: None, client });
        let scope = Scope { key: self.parts.offered_key(), client };
        if let (Some(key), Some(lc)) = (scope.key, self.parts.lifecycle()) {
            lc.requests[job.index as usize].key = key;
        }
        (decision, scope)
    }

    /// Sends `job` as [`Self::send_from`] does, from the scope's client if it has one; a
    /// hashing policy hashes the scope's key, if it has one.
    #[inline(always)]
    fn send_scoped(&mut self, job: Job, scope: Scope) -> bool {
        if let Some(key) = scope.key {
            self.policy.use_key(key);
        }
        self.send_from(job, scope.client)
    }

    /// The policy asks again for `client`'s backlog, sending from its head for as long as it
    /// picks a server; when it says wait, it is asked again then.
    #[inline(always)]
    fn retry(&mut self, client: u32, now: SimTime) -> bool {
        self.rec.stats.events += 1;
        let c = client as usize;
        while let Some(&job) = self.held[c].front() {
            if self.parts.lifecycle().is_some() {
                self.lc_before_pick();
            }
            match self.policy.try_pick(
                client,
                view(&self.servers, &self.info),
                now,
                &mut self.coins,
            ) {
                Ok(s) => {
                    self.held[c].pop_front();
                    if self.dispatch(s, job) {
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

    /// Probe `i` reaches its server, reads it, and heads back.
    #[inline(always)]
    fn probe_at(&mut self, i: u32, t: f64) {
        self.rec.stats.events += 1;
        let probe = &mut self.fb.in_flight[i as usize];
        let s = probe.server as usize;
        let m = self.fb.monitor.as_mut().expect("probes only with feedback");
        probe.read = m.probe(s, self.servers.len(s));
        let back = t + self.policy.probe_delay() / 2.0;
        schedule(&mut self.sim, back, Event::ProbeBack(i));
    }

    /// Probe `i` is back at its client with what it read at its server.
    #[inline(always)]
    fn probe_back(&mut self, i: u32, now: SimTime) {
        self.rec.stats.events += 1;
        let Probe { server, tag, read } = self.fb.in_flight[i as usize];
        self.fb.free.push(i);
        self.policy.on_probe(server as usize, read, now, tag);
    }

    // ----- end feedback -----

    // ===== Sending a request =====

    /// Sends an admitted request: the policy picks its server now, or, for a policy that holds
    /// requests back ([`Policy::HOLDS`]), the request joins its client's backlog if that is not
    /// empty or the policy says wait (an [`Event::Retry`] asks again then). True when a guard
    /// stops the replication.
    #[inline(always)]
    fn send(&mut self, job: Job) -> bool {
        self.send_from(job, None)
    }

    /// Sends a request as [`Self::send`] does, from `client` if given (a retry or a hedge goes
    /// out from the client that sent its first attempt), else from the client the policy
    /// assigns.
    #[inline(always)]
    fn send_from(&mut self, job: Job, client: Option<u32>) -> bool {
        let now = self.sim.now();
        if self.parts.lifecycle().is_some() {
            self.lc_before_pick();
        }
        if !P::HOLDS {
            let s = match client {
                // A policy that never holds requests back picks at once.
                Some(c) if P::TAGGED => self
                    .policy
                    .try_pick(c, view(&self.servers, &self.info), now, &mut self.coins)
                    .expect("a policy that does not hold requests picks at once"),
                _ => self.policy.pick(view(&self.servers, &self.info), now, &mut self.coins),
            };
            return self.dispatch(s, job);
        }
        let client = client.unwrap_or_else(|| self.policy.assign());
        let c = client as usize;
        if self.held.len() <= c {
            self.held.resize_with(c + 1, VecDeque::new);
        }
        if self.held[c].is_empty() {
            match self.policy.try_pick(
                client,
                view(&self.servers, &self.info),
                now,
                &mut self.coins,
            ) {
                Ok(s) => return self.dispatch(s, job),
                Err(at) => schedule(&mut self.sim, at, Event::Retry { client }),
            }
        }
        if self.parts.lifecycle().is_some() && self.lc_backlog_full(self.held[c].len()) {
            return self.lc_overflow(job);
        }
        self.held[c].push_back(job);
        self.rec.guard_backlog(self.held[c].len(), self.queue_guard, now.get())
    }

    /// Sends `job` into the farm now, to server `s`; under adaptive throttling a server holding
    /// `queue_limit` requests or more rejects it (and the client's throttle hears the answer).
    /// True when the queue guard stops the replication.
    #[inline(always)]
    fn dispatch(&mut self, s: usize, mut job: Job) -> bool {
        if self.parts.lifecycle().is_some() {
            return self.lc_dispatch(s, job);
        }
        let now = self.sim.now();
        let t = now.get();
        job.tag = if P::TAGGED { self.policy.tag() } else { 0 };
        let measured = job.index >= self.len.warmup;
        if !self.parts.accepts(self.servers.len(s), t, measured) {
            // The rejection is an immediate response: the sender's policy hears of it as a
            // request that left at once (what a client sees of a fast error).
            self.policy.on_departure(s, 0.0, now, job.tag);
            return false;
        }
        if V::COUNTS_DEPARTURES {
            self.join_counted(s, &job, t);
        } else {
            self.servers.arrive(s, job, t, &mut self.sim);
        }
        let qlen = self.servers.len(s);
        if !V::COUNTS_DEPARTURES {
            self.info.on_dispatch(s);
        }
        self.rec.joined(job.index, s, qlen, t);
        self.parts.joined(s, qlen, t, measured, job.class);
        if P::FEEDBACK {
            self.feedback_on_dispatch(s, qlen, job.tag, now);
        }
        self.rec.guard(qlen, self.queue_guard, t)
    }

    /// `job` joins `s` at `t`, the present, on servers that count their departures
    /// ([`Servers::COUNTS_DEPARTURES`]), and is recorded at once with the departure time the join
    /// gives it, as its departure event would have recorded it (the level is not tracked with
    /// such servers).
    #[inline(always)]
    fn join_counted(&mut self, s: usize, job: &Job, t: f64) {
        let table = self.servers.counted_mut().expect("counted servers");
        let at = table.join(s, job.work, t);
        self.rec.counted_departure(job.index, at - t);
    }

    /// The monitor hears of a dispatch to `s`, which now holds `qlen`; the policy sends its
    /// probes: each is read at once without a probe delay, or reaches its server later.
    #[inline]
    fn feedback_on_dispatch(&mut self, s: usize, qlen: u32, tag: u32, now: SimTime) {
        let t = now.get();
        let Some(m) = &mut self.fb.monitor else { return };
        m.changed(s, qlen, t);
        self.policy.probes(now, &mut self.coins, &mut self.fb.probes);
        let half = self.policy.probe_delay() / 2.0;
        for server in self.fb.probes.drain(..) {
            if half > 0.0 {
                let probe =
                    Probe { server: server as u32, tag, read: ProbeReply { rif: 0, latency: 0.0 } };
                let i = match self.fb.free.pop() {
                    Some(i) => {
                        self.fb.in_flight[i as usize] = probe;
                        i
                    }
                    None => {
                        self.fb.in_flight.push(probe);
                        (self.fb.in_flight.len() - 1) as u32
                    }
                };
                schedule(&mut self.sim, t + half, Event::ProbeAt(i));
            } else {
                self.policy.on_probe(server, m.probe(server, self.servers.len(server)), now, tag);
            }
        }
    }
}

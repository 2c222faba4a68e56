//! One replication: the event loop of a farm under a policy and an information model.
//!
//! [`simulate`] picks one of two monomorphised event loops: the article's farm (one FIFO worker
//! per server, rates fixed) runs the loop below, whose only per-server state is a queue; any
//! other farm (slots, processor sharing, rate changes) runs the general loop of
//! [`general`](super::general). Both draw the same streams in the same order, and both record
//! through [`record`](super::record).

use std::collections::VecDeque;

use super::record::Recorder;
use super::{SimTime, Simulation};
use crate::info::{Board, BoardWithDispatch, InfoModel, Live};
use crate::model::{Farm, Information, RunLength, SimOptions};
use crate::policy::Policy;
use crate::rng::SimRng;
use crate::stats::RepStats;
use crate::workload::{Demands, Gaps};

#[derive(Debug, Clone, Copy)]
enum Event {
    Arrival,
    Departure(u32),
    Post,
}

/// Board posts go after departures at the same instant: a request that leaves exactly when the
/// board is posted counts as gone.
pub(crate) const POST_CLASS: u8 = 1;

#[derive(Debug, Clone, Copy)]
struct Job {
    arrival: f64,
    service: f64,
    /// Arrival index (0 = the first arrival of the run, warm-up included).
    index: u64,
}

/// Runs one replication: `arrivals` and `service` draw the gaps and demands from `workload`,
/// `coins` is the policy's own stream. A trace that ends before `len` asks ends the arrivals.
///
/// The article's farm ([`Farm::is_plain`]) runs a loop of its own; every other farm runs the
/// general loop. Given the same farm, both give the same replication.
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

/// Runs one replication under the information model `info`: the article's loop for the article's
/// farm under a policy without tags, the general loop otherwise.
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
    if farm.is_plain() && !P::TAGGED && !P::HOLDS && opts.series.is_none() {
        simulate_plain(farm, len, opts, policy, info, arrivals, service, workload, coins)
    } else {
        super::general::simulate(farm, len, opts, policy, info, arrivals, service, workload, coins)
    }
}

/// The loop of the article's farm: per-server FIFO queues whose front request is in service, and
/// one pending departure per busy server.
#[allow(clippy::too_many_arguments)]
fn simulate_plain<P: Policy, A: Gaps, S: Demands, I: InfoModel>(
    farm: &Farm,
    len: RunLength,
    opts: SimOptions,
    mut policy: P,
    mut info: I,
    arrivals: &mut A,
    service: &S,
    mut workload: SimRng,
    mut coins: SimRng,
) -> RepStats {
    let n = farm.rates.len();
    let total = len.warmup + len.requests;

    let mut rec = Recorder::new(n, len, opts.track_levels);
    let mut queues: Vec<VecDeque<Job>> = vec![VecDeque::new(); n];
    let mut sim = Simulation::with_capacity(n + 2);
    let mut arrived = 0u64;

    // Set once no further arrival is scheduled: board posts stop then too.
    let mut arrivals_over = true;
    if let Some(first) = arrivals.next_gap(&mut workload) {
        sim.schedule(SimTime::new(first), Event::Arrival).expect("future");
        arrivals_over = false;
    }
    if let Some(period) = info.post_period() {
        sim.schedule_class(SimTime::new(period), POST_CLASS, Event::Post).expect("future");
    }

    while let Some(event) = sim.next_event() {
        rec.stats.events += 1;
        let now = sim.now();
        let t = now.get();
        match event {
            Event::Arrival => {
                rec.arriving(arrived, t, || {
                    queues.iter().map(|q| q.len() as u32).max().unwrap_or(0)
                });
                let demand = service.demand(&mut workload);
                // The gap to the next arrival is the stream's next draw; taking it here (the last
                // arrival's is never used) lets its division overlap with the dispatch.
                let gap = arrivals.next_gap(&mut workload);
                let s = policy.pick(info.view(), now, &mut coins);
                let service = demand / farm.rates[s];
                let q = &mut queues[s];
                q.push_back(Job { arrival: t, service, index: arrived });
                let qlen = q.len() as u32;
                if qlen == 1 {
                    sim.schedule(SimTime::new(t + service), Event::Departure(s as u32))
                        .expect("future");
                }
                info.on_dispatch(s);
                rec.joined(arrived, s, qlen, t);
                if rec.guard(qlen, opts.queue_guard, t) {
                    break;
                }
                arrived += 1;
                if let Some(gap) = gap.filter(|_| arrived < total) {
                    sim.schedule(SimTime::new(t + gap), Event::Arrival).expect("future");
                } else {
                    arrivals_over = true;
                    rec.arrivals_end(t);
                }
            }
            Event::Departure(s) => {
                let s = s as usize;
                let q = &mut queues[s];
                let qlen = q.len() as u32;
                let job = q.pop_front().expect("a departure from an empty queue");
                let sojourn = t - job.arrival;
                rec.departed(job.index, sojourn, qlen, t);
                policy.on_departure(s, sojourn, now, 0);
                info.on_departure(s);
                if let Some(next) = q.front() {
                    sim.schedule(SimTime::new(t + next.service), Event::Departure(s as u32))
                        .expect("future");
                }
            }
            Event::Post => {
                info.on_post(queues.iter().map(|q| q.len() as u32));
                if !arrivals_over && let Some(period) = info.post_period() {
                    sim.schedule_class(SimTime::new(t + period), POST_CLASS, Event::Post)
                        .expect("future");
                }
            }
        }
    }
    rec.finish()
}

//! What servers tell balancers, and the per-window series: the loop's support for the balancers
//! that learn from feedback (gRPC `weighted_round_robin`, Prequal, C3).
//!
//! - **Responses carry feedback** ([`Response`]): the sojourn, the service time (the request's
//!   demand over the server's rate when it leaves) and the server's queue length after the request
//!   left, as C3's servers piggy-back their queue size and service time on each response.
//! - **Load reports** ([`LoadReport`]): every [`Policy::report_period`](crate::policy::Policy) the
//!   servers report their completions per unit time and their utilisation (the time-averaged
//!   fraction of busy workers) over the period just ended, as an ORCA out-of-band stream reports
//!   `rps_fractional` and `cpu_utilization`. All servers report at the same instants.
//! - **Timers**: [`Policy::timer_period`](crate::policy::Policy) calls the policy back
//!   periodically (gRPC's `weight_update_period`).
//! - **Probes** ([`ProbeReply`]): a probe sent at `t` with delay `d` reaches its server at
//!   `t + d/2`, reads the server's state there (requests in flight, and the server's estimate of
//!   the latency of a request joining it now), and is back at the sender at `t + d`. With `d = 0`
//!   it reads the state at the instant it is sent. Prequal's servers estimate latency as the
//!   median latency of recent requests that ran at the current RIF; lbsim's servers estimate the
//!   same quantity from their model: the median service time of their last [`RECENT`]
//!   completions times the number of service times a request joining now waits for (its own, and
//!   with `c` workers, `(rif + 1 - c) / c` more when all are busy).
//!
//! The loop calls into [`Monitor`] only when [`Policy::FEEDBACK`](crate::policy::Policy) is set
//! (a constant, so other policies pay nothing); a policy that uses it is also `TAGGED`, so that
//! each response and probe reply names the client it goes back to.
//!
//! [`Windows`] is the time series of `lbsim run --series`: per window of simulated time, the
//! requests dispatched to each server, each server's time-averaged queue, and a histogram of the
//! sojourns of the requests that arrived in it. Only measured requests (after the warm-up) count,
//! so the per-window counts add up to the run's totals.

pub use crate::signal::{LoadReport, ProbeReply, Response};
use std::collections::{BTreeMap, VecDeque};

use crate::stats::tape::TapeWriter;
pub use crate::stats::{Buckets, ClassWindow, Health, Outcomes, SpooledWindows, Window, Windows};

/// Completions a server remembers for its latency estimate.
pub const RECENT: usize = 16;

/// Per-server accounting for reports and probes.
#[derive(Debug, Clone)]
pub(super) struct Monitor {
    slots: f64,
    rates: Vec<f64>,
    /// Busy-worker fraction integrated since the last report.
    busy: Vec<f64>,
    /// Current busy-worker fraction.
    level: Vec<f64>,
    /// When `busy` was last brought up to date.
    since: Vec<f64>,
    /// Completions since the last report.
    done: Vec<u64>,
    last_report: f64,
    /// Per server, its last [`RECENT`] service times and their median.
    recent: Vec<Recent>,
}

/// Completions a server's order catches up with one at a time; after more it is sorted again.
const CATCH_UP: usize = 4;

/// A server's last [`RECENT`] service times (a ring) and how many were recorded, and the same
/// values in order as of the last probe, from which the median is read.
///
/// The order is brought up to date when a probe asks, not at each completion (policies that do
/// not probe never pay for it): after up to [`CATCH_UP`] completions one completion at a time,
/// by taking out the value it overwrote and putting in the new one (a shift of at most
/// [`RECENT`] values each), after more by sorting the ring. Probes between two completions read
/// the same order. The median is the value a selection in the ring finds: the order is
/// [`f64::total_cmp`]'s, in which equal means the same bits, so every way of keeping it gives
/// the same values.
#[derive(Debug, Clone, Copy)]
struct Recent {
    ring: [f64; RECENT],
    count: usize,
    /// The values the last [`CATCH_UP`] completions overwrote in the ring (once it was full):
    /// completion `c` (from 1) overwrote `evicted[(c - 1) % CATCH_UP]`.
    evicted: [f64; CATCH_UP],
    /// The first `min(ordered, RECENT)` values are the ring's after `ordered` completions, in
    /// order.
    sorted: [f64; RECENT],
    ordered: usize,
}

impl Recent {
    const EMPTY: Recent = Recent {
        ring: [0.0; RECENT],
        count: 0,
        evicted: [0.0; CATCH_UP],
        sorted: [0.0; RECENT],
        ordered: 0,
    };

    /// Records a completion's service time.
    #[inline]
    fn record(&mut self, service: f64) {
        let slot = &mut self.ring[self.count % RECENT];
        self.evicted[self.count % CATCH_UP] = *slot;
        *slot = service;
        self.count += 1;
    }

    /// The median of the last `min(count, RECENT)` service times (the lower middle of an even
    /// count); 1 if none.
    fn median(&mut self) -> f64 {
        let m = self.count.min(RECENT);
        if m == 0 {
            return 1.0;
        }
        if self.count - self.ordered <= CATCH_UP {
            for c in self.ordered + 1..=self.count {
                self.catch_up(c);
            }
        } else {
            self.sorted = self.ring;
            self.sorted[..m].sort_unstable_by(f64::total_cmp);
        }
        self.ordered = self.count;
        self.sorted[(m - 1) / 2]
    }

    /// Brings the order from completion `c - 1` to completion `c` (no later completion has
    /// overwritten what `c` wrote or took out: at most [`CATCH_UP`] are behind).
    #[inline]
    fn catch_up(&mut self, c: usize) {
        let new = self.ring[(c - 1) % RECENT];
        let mut len = (c - 1).min(RECENT);
        if c > RECENT {
            let evicted = self.evicted[(c - 1) % CATCH_UP];
            let gone = self.sorted[..len]
                .iter()
                .position(|x| x.to_bits() == evicted.to_bits())
                .expect("the value overwritten was in order");
            self.sorted.copy_within(gone + 1..len, gone);
            len -= 1;
        }
        let at = self.sorted[..len].partition_point(|x| x.total_cmp(&new).is_lt());
        self.sorted.copy_within(at..len, at + 1);
        self.sorted[at] = new;
    }
}

impl Monitor {
    pub(super) fn new(rates: &[f64], slots: u32) -> Self {
        let n = rates.len();
        Monitor {
            slots: f64::from(slots),
            rates: rates.to_vec(),
            busy: vec![0.0; n],
            level: vec![0.0; n],
            since: vec![0.0; n],
            done: vec![0; n],
            last_report: 0.0,
            recent: vec![Recent::EMPTY; n],
        }
    }

    /// Server `s` holds `len` requests from `t` on.
    #[inline]
    pub(super) fn changed(&mut self, s: usize, len: u32, t: f64) {
        self.integrate(s, t);
        self.level[s] = (f64::from(len) / self.slots).min(1.0);
    }

    /// Brings `s`'s busy time up to `t`.
    #[inline]
    fn integrate(&mut self, s: usize, t: f64) {
        self.busy[s] += self.level[s] * (t - self.since[s]);
        self.since[s] = t;
    }

    /// A request of demand `work` left `s` at `t` after `sojourn`, leaving `len` there.
    #[inline]
    pub(super) fn departed(
        &mut self,
        s: usize,
        work: f64,
        sojourn: f64,
        len: u32,
        t: f64,
    ) -> Response {
        self.changed(s, len, t);
        self.done[s] += 1;
        let service = work / self.rates[s];
        self.recent[s].record(service);
        Response { sojourn, service, queue: len }
    }

    /// Server `s` works at `rate` from now on.
    pub(super) fn set_rate(&mut self, s: usize, rate: f64) {
        self.rates[s] = rate;
    }

    /// Every server's report over the period ending at `t`; starts the next period.
    pub(super) fn reports(&mut self, t: f64) -> Vec<LoadReport> {
        let span = t - self.last_report;
        self.last_report = t;
        (0..self.rates.len())
            .map(|s| {
                self.integrate(s, t);
                let r = if span > 0.0 {
                    LoadReport { qps: self.done[s] as f64 / span, utilization: self.busy[s] / span }
                } else {
                    LoadReport::default()
                };
                self.busy[s] = 0.0;
                self.done[s] = 0;
                r
            })
            .collect()
    }

    /// What a probe reads at `s`, which holds `len` requests.
    pub(super) fn probe(&mut self, s: usize, len: u32) -> ProbeReply {
        let waits = 1.0 + ((f64::from(len) + 1.0 - self.slots) / self.slots).max(0.0);
        ProbeReply { rif: len, latency: self.recent[s].median() * waits }
    }
}

// ===== the series of `run --series` =====

/// Latency histogram buckets per decade.
pub const BUCKETS_PER_DECADE: u32 = 100;
/// The smallest bucketed sojourn (below it: the first bucket).
pub const BUCKET_FLOOR: f64 = 1e-3;
/// Buckets: eight decades from [`BUCKET_FLOOR`], plus one below and one above.
pub const BUCKETS: usize = 8 * BUCKETS_PER_DECADE as usize + 2;

/// The bucket of a sojourn: 0 below [`BUCKET_FLOOR`], then [`BUCKETS_PER_DECADE`] per decade.
#[inline]
pub fn bucket(x: f64) -> usize {
    if x < BUCKET_FLOOR {
        return 0;
    }
    let b = ((x / BUCKET_FLOOR).log10() * f64::from(BUCKETS_PER_DECADE)).floor() as usize + 1;
    b.min(BUCKETS - 1)
}

/// The upper edge of bucket `b` (the bucket's value in quantiles).
pub fn bucket_upper(b: usize) -> f64 {
    BUCKET_FLOOR * 10f64.powf(b as f64 / f64::from(BUCKETS_PER_DECADE))
}

/// The `q`-quantile of bucket counts: the upper edge of the bucket holding it; `NaN` if empty.
pub fn bucket_quantile(counts: &[u64], q: f64) -> f64 {
    let total: u64 = counts.iter().sum();
    if total == 0 {
        return f64::NAN;
    }
    let rank = ((q * total as f64).ceil() as u64).clamp(1, total);
    let mut seen = 0;
    for (b, &c) in counts.iter().enumerate() {
        seen += c;
        if seen >= rank {
            return bucket_upper(b);
        }
    }
    bucket_upper(counts.len() - 1)
}

/// Counts a sojourn in bucket `b` of a dense histogram (allocated at the first).
#[inline]
fn count(dense: &mut Vec<u64>, b: usize) {
    if dense.is_empty() {
        dense.resize(BUCKETS, 0);
    }
    dense[b] += 1;
}

/// Windows a window stays open after it ends: it is closed (written to its tape, or kept as
/// [`Buckets`]) once `OPEN_AFTER` more have ended. A request is counted in the window it arrived
/// in, when it leaves, mostly within a few windows; one later still is added aside ([`Sink`]).
const OPEN_AFTER: usize = 4;

/// A window not closed yet: its histogram dense (empty until a sojourn is counted).
#[derive(Debug, Clone)]
struct Open {
    picks: Vec<u64>,
    queue: Vec<f64>,
    dense: Vec<u64>,
    outcomes: Outcomes,
    health: Health,
    /// With traffic classes, each class's part (empty without).
    classes: Vec<OpenClass>,
}

/// A traffic class's part of a window not closed yet: its dispatches, its histogram dense
/// (empty until a sojourn is counted) and its outcomes.
#[derive(Debug, Clone, Default)]
struct OpenClass {
    picks: u64,
    dense: Vec<u64>,
    outcomes: Outcomes,
}

/// Where closed windows go.
#[derive(Debug)]
enum Sink {
    /// Kept, all of them (a shard's records carry them).
    Memory(Windows),
    /// Written to a tape as they close (or the first error writing it); the sojourns counted
    /// after their window was written, per window, and with classes per window and class.
    Tape(Result<TapeWriter, std::io::Error>, BTreeMap<usize, Buckets>, Late),
}

/// Sojourns of a class counted after their window was written, per window and class.
type Late = BTreeMap<(usize, usize), Buckets>;

/// What a replication's window recorder gives at the end.
#[derive(Debug)]
pub(super) enum Recorded {
    /// Every window.
    Memory(Windows),
    /// The windows on a tape.
    Spooled(SpooledWindows),
}

/// Builds a replication's series: the windows still open in memory, the closed ones in its
/// [`Sink`]. A window closes once time has passed [`OPEN_AFTER`] windows beyond its end: every busy
/// server's queue is integrated up to its end first, the term the next change of the server's
/// queue would have added to it, so the areas are the same bits whenever windows close.
#[derive(Debug)]
pub(super) struct WindowRecorder {
    width: f64,
    n: usize,
    /// Each server's group.
    group_of: Vec<u32>,
    groups: usize,
    /// Per server: its queue length and since when (integrated up to then).
    len: Vec<(u32, f64)>,
    /// Windows `base..`, oldest first.
    open: VecDeque<Open>,
    base: usize,
    sink: Sink,
    /// The windows carry the request lifecycle's [`Outcomes`].
    outcomes: bool,
    /// With a health view, the windows carry its [`Health`]: see [`Healthy`].
    health: Option<Healthy>,
    /// Traffic classes the windows are split by (0: none, and then no window holds a part).
    classes: usize,
}

/// The clients' health view as the series integrates it: the hosts excluded, summed over the
/// clients, since when (integrated up to then), and the clients times the hosts.
#[derive(Debug, Clone, Copy)]
struct Healthy {
    excluded: u64,
    since: f64,
    pairs: f64,
}

impl WindowRecorder {
    /// Windows `width` wide on `n` servers in groups of `groups` servers (in order; none or not
    /// adding up to `n`: one group of all); `spool` writes them to a tape as they close.
    pub(super) fn new(n: usize, groups: &[u32], width: f64, spool: bool) -> Self {
        let group_of: Vec<u32> = if groups.iter().map(|&c| c as usize).sum::<usize>() == n {
            (groups.iter().enumerate()).flat_map(|(g, &c)| vec![g as u32; c as usize]).collect()
        } else {
            vec![0; n]
        };
        let groups = group_of.iter().max().map_or(1, |&g| g as usize + 1);
        let sink = if spool {
            Sink::Tape(TapeWriter::new(), BTreeMap::new(), BTreeMap::new())
        } else {
            Sink::Memory(Windows { width, ..Windows::default() })
        };
        WindowRecorder {
            width,
            n,
            group_of,
            groups,
            len: vec![(0, 0.0); n],
            open: VecDeque::new(),
            base: 0,
            sink,
            outcomes: false,
            health: None,
            classes: 0,
        }
    }

    /// The same recorder, its windows split by `classes` traffic classes (SPEC §13): each
    /// dispatch, sojourn and outcome counts for the window and for its request's class.
    pub(super) fn with_classes(self, classes: usize) -> Self {
        WindowRecorder { classes, ..self }
    }

    /// The same recorder, its windows carrying the request lifecycle's [`Outcomes`].
    pub(super) fn with_outcomes(self) -> Self {
        WindowRecorder { outcomes: true, ..self }
    }

    /// The same recorder, its windows carrying the [`Health`] of `clients` clients' views of
    /// the hosts, all healthy at time 0.
    pub(super) fn with_health(self, clients: u32) -> Self {
        let pairs = f64::from(clients) * self.n as f64;
        WindowRecorder { health: Some(Healthy { excluded: 0, since: 0.0, pairs }), ..self }
    }

    /// The window holding time `t`, opened (with those before it) if it is not yet: the one
    /// whose end, `(w + 1) * width` as the recorder computes it, lies past `t`. (`t / width`
    /// alone can round below an edge that `t` has reached, e.g. `t = 43 * 0.1`: integrating from
    /// that edge would then never move on.)
    fn window(&mut self, t: f64) -> usize {
        let mut w = (t / self.width) as usize;
        if ((w + 1) as f64) * self.width <= t {
            w += 1;
        }
        while self.base + self.open.len() <= w {
            let (groups, n) = (self.groups, self.n);
            self.open.push_back(Open {
                picks: vec![0; groups],
                queue: vec![0.0; n],
                dense: Vec::new(),
                outcomes: [0; 3],
                health: [0.0; 2],
                classes: vec![OpenClass::default(); self.classes],
            });
        }
        w
    }

    /// Open window `w`.
    fn at(&mut self, w: usize) -> &mut Open {
        debug_assert!(w >= self.base, "window {w} already closed");
        &mut self.open[w.saturating_sub(self.base)]
    }

    /// Integrates server `s`'s queue up to `to`, window by window.
    fn integrate(&mut self, s: usize, to: f64) {
        let (old, mut from) = self.len[s];
        if old == 0 {
            return;
        }
        while from < to {
            let w = self.window(from);
            let end = (((w + 1) as f64) * self.width).min(to);
            self.at(w).queue[s] += f64::from(old) * (end - from);
            from = end;
        }
        self.len[s].1 = from;
    }

    /// Integrates the fraction of hosts the clients consider healthy up to `to`, window by
    /// window (nothing without a health view).
    fn integrate_health(&mut self, to: f64) {
        let Some(Healthy { excluded, since, pairs }) = self.health else { return };
        let healthy = 1.0 - excluded as f64 / pairs;
        let mut from = since;
        while from < to {
            let w = self.window(from);
            let end = (((w + 1) as f64) * self.width).min(to);
            let h = &mut self.at(w).health;
            h[0] += end - from;
            h[1] += healthy * (end - from);
            from = end;
        }
        if let Some(h) = &mut self.health {
            h.since = from;
        }
    }

    /// Closes the windows that ended [`OPEN_AFTER`] windows before `t`.
    fn close_before(&mut self, t: f64) {
        while !self.open.is_empty() && ((self.base + 1 + OPEN_AFTER) as f64) * self.width <= t {
            let end = ((self.base + 1) as f64) * self.width;
            for s in 0..self.n {
                self.integrate(s, end);
            }
            self.integrate_health(end);
            self.close();
        }
    }

    /// Closes the oldest open window.
    fn close(&mut self) {
        let Some(o) = self.open.pop_front() else { return };
        let outcomes = self.outcomes;
        let classes = (o.classes.into_iter())
            .map(|c| ClassWindow {
                picks: c.picks,
                latency: Buckets::from_counts(&c.dense),
                outcomes: outcomes.then_some(c.outcomes),
            })
            .collect();
        let w = Window {
            picks: o.picks,
            queue: o.queue,
            latency: Buckets::from_counts(&o.dense),
            outcomes: self.outcomes.then_some(o.outcomes),
            health: self.health.map(|_| o.health),
            classes,
        };
        self.base += 1;
        match &mut self.sink {
            Sink::Memory(all) => all.push(w),
            Sink::Tape(out, _, _) => {
                if let Ok(tape) = out
                    && let Err(e) = w.write(tape)
                {
                    *out = Err(e);
                }
            }
        }
    }

    /// Server `s` holds `len` requests from `t` on.
    #[inline]
    pub(super) fn changed(&mut self, s: usize, len: u32, t: f64) {
        if !self.open.is_empty() && ((self.base + 1 + OPEN_AFTER) as f64) * self.width <= t {
            self.close_before(t);
        }
        self.integrate(s, t);
        self.len[s] = (len, t);
    }

    /// A measured request of class `k` (0 without classes) was dispatched to `s` at `t`.
    #[inline]
    pub(super) fn dispatched(&mut self, s: usize, t: f64, k: u32) {
        let w = self.window(t);
        let g = self.group_of[s] as usize;
        let open = self.at(w);
        open.picks[g] += 1;
        if let Some(c) = open.classes.get_mut(k as usize) {
            c.picks += 1;
        }
    }

    /// A measured request of class `k` (0 without classes) that arrived at `arrival` left after
    /// `sojourn`.
    #[inline]
    pub(super) fn departed(&mut self, arrival: f64, sojourn: f64, k: u32) {
        let w = self.window(arrival);
        let b = bucket(sojourn);
        let k = k as usize;
        if w >= self.base {
            let open = self.at(w);
            count(&mut open.dense, b);
            if let Some(c) = open.classes.get_mut(k) {
                count(&mut c.dense, b);
            }
            return;
        }
        let one = Buckets::from_pairs([(b, 1)]);
        let split = self.classes > k;
        match &mut self.sink {
            Sink::Memory(all) => {
                all.latency[w].add(&one);
                if split {
                    all.classes[w][k].latency.add(&one);
                }
            }
            Sink::Tape(_, late, classes) => {
                late.entry(w).or_default().add(&one);
                if split {
                    classes.entry((w, k)).or_default().add(&one);
                }
            }
        }
    }

    /// A measured request of class `k` (0 without classes) arrived at `t` (the request
    /// lifecycle's outcomes).
    pub(super) fn request_arrived(&mut self, t: f64, k: u32) {
        let w = self.window(t);
        let open = self.at(w);
        open.outcomes[0] += 1;
        if let Some(c) = open.classes.get_mut(k as usize) {
            c.outcomes[0] += 1;
        }
    }

    /// A measured request of class `k` (0 without classes) ended at `t`, answered (`success`)
    /// or failed for good: counted in the window where it ends (the current one, never closed
    /// yet).
    pub(super) fn request_ended(&mut self, t: f64, success: bool, k: u32) {
        let w = self.window(t);
        let open = self.at(w);
        let ends = |o: &mut Outcomes| {
            o[1] += 1;
            o[2] += u64::from(success);
        };
        ends(&mut open.outcomes);
        if let Some(c) = open.classes.get_mut(k as usize) {
            ends(&mut c.outcomes);
        }
    }

    /// Some client's count of excluded hosts changed by `d` at `t` (no earlier than the last
    /// change): the health view's log.
    pub(super) fn health_changed(&mut self, t: f64, d: i32) {
        self.integrate_health(t);
        if let Some(h) = &mut self.health {
            h.excluded = h.excluded.saturating_add_signed(i64::from(d));
        }
    }

    /// The series, every server's queue and the health view integrated up to `t`.
    pub(super) fn finish(mut self, t: f64) -> Recorded {
        for s in 0..self.n {
            let len = self.len[s].0;
            self.changed(s, len, t);
        }
        self.integrate_health(t);
        while !self.open.is_empty() {
            self.close();
        }
        match self.sink {
            Sink::Memory(all) => Recorded::Memory(all),
            Sink::Tape(out, late, late_classes) => Recorded::Spooled(SpooledWindows {
                width: self.width,
                groups: self.groups,
                servers: self.n,
                count: self.base,
                tape: out.and_then(TapeWriter::finish).map_err(std::sync::Arc::new),
                late,
                late_classes,
            }),
        }
    }

    /// Windows held in memory: those still open, and with [`Sink::Memory`] the closed ones.
    #[cfg(test)]
    fn held(&self) -> usize {
        let closed = match &self.sink {
            Sink::Memory(all) => all.picks.len(),
            Sink::Tape(_, late, classes) => late.len() + classes.len(),
        };
        self.open.len() + closed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_are_completions_and_busy_time_over_the_period() {
        let mut m = Monitor::new(&[1.0, 2.0], 1);
        // Server 0 busy from 1 to 4 (one completion at 4), server 1 idle: over [0, 10] the
        // report says 0.1 per unit time and 30% busy, then 0 and 0.
        m.changed(0, 1, 1.0);
        let r = m.departed(0, 3.0, 3.0, 0, 4.0);
        assert_eq!(r, Response { sojourn: 3.0, service: 3.0, queue: 0 });
        let reps = m.reports(10.0);
        assert_eq!(reps[0], LoadReport { qps: 0.1, utilization: 0.3 });
        assert_eq!(reps[1], LoadReport { qps: 0.0, utilization: 0.0 });
        // A server busy across the report boundary: its busy time is split at the report.
        m.changed(1, 2, 15.0);
        let reps = m.reports(20.0);
        assert_eq!(reps[1].utilization, 0.5);
        assert_eq!(m.reports(30.0)[1].utilization, 1.0);
        // Service time is the demand over the rate at departure.
        assert_eq!(m.departed(1, 3.0, 9.0, 1, 31.0).service, 1.5);
    }

    #[test]
    fn probes_read_the_median_service_time_times_the_requests_ahead() {
        let mut m = Monitor::new(&[1.0], 1);
        // Nothing completed: a service time of 1, times 3 + 1 requests.
        assert_eq!(m.probe(0, 3), ProbeReply { rif: 3, latency: 4.0 });
        for (i, x) in [5.0, 1.0, 3.0].into_iter().enumerate() {
            m.departed(0, x, 9.0, 0, i as f64);
        }
        assert_eq!(m.probe(0, 0).latency, 3.0);
        assert_eq!(m.probe(0, 1).latency, 6.0);
        // Only the last RECENT count: after RECENT service times of 10 the old ones are gone.
        for i in 0..RECENT {
            m.departed(0, 10.0, 1.0, 0, 10.0 + i as f64);
        }
        assert_eq!(m.probe(0, 0).latency, 10.0);
        // Two workers: a request joining one busy worker waits for nothing; joining two busy
        // workers, for the first of two departures (half a service time); joining them and one
        // waiting request, for two departures (one service time).
        let mut two = Monitor::new(&[1.0], 2);
        assert_eq!(two.probe(0, 1).latency, 1.0);
        assert_eq!(two.probe(0, 2).latency, 1.5);
        assert_eq!(two.probe(0, 3).latency, 2.0);
    }

    /// The median of the first `min(k, RECENT)` values of `ring`, selected afresh in a copy
    /// (the lower middle of an even count); 1 if none.
    fn selected_median(ring: &[f64; RECENT], k: usize) -> f64 {
        let m = k.min(RECENT);
        if m == 0 {
            return 1.0;
        }
        let mut v = *ring;
        *v[..m].select_nth_unstable_by((m - 1) / 2, f64::total_cmp).1
    }

    /// The median a probe reads, from the order kept across completions, is the one selected
    /// afresh from the ring, to the bit, over a random history of completions and probes on a
    /// few servers: several probes between two completions (the order kept), one completion
    /// (a value out, one in), up to [`CATCH_UP`] (one at a time), more (sorted again), rings
    /// not yet full and full, and repeated values (drawn from a few, zeros of both signs among
    /// them, so the value taken out has twins). Exact: probes feed Prequal's choices, and results/ depends on their bits.
    #[test]
    fn the_median_kept_in_order_is_the_one_selected_afresh() {
        use rand::RngExt;
        let mut rng = <crate::rng::SimRng as rand::SeedableRng>::seed_from_u64(5);
        let mut m = Monitor::new(&[1.0, 0.5, 2.0], 1);
        let few = [0.0, -0.0, 1.0, 2.5, 3.0];
        let (mut kept, mut one, mut few_more, mut several) = (0, 0, 0, 0);
        for step in 0..40_000_u32 {
            let s = rng.random_range(0..3);
            if rng.random::<f64>() < 0.4 {
                let work = if step % 2 == 0 { rng.random::<f64>() } else { few[step as usize % 5] };
                m.departed(s, work, 1.0, 0, f64::from(step));
            } else {
                let r = m.recent[s];
                match r.count - r.ordered {
                    0 => kept += 1,
                    1 => one += 1,
                    2..=CATCH_UP => few_more += 1,
                    _ => several += 1,
                }
                let fresh = selected_median(&r.ring, r.count);
                assert_eq!(m.probe(s, 0).latency.to_bits(), fresh.to_bits(), "step {step}");
            }
        }
        // Each way of bringing the order up to date was taken many times.
        assert!(
            kept > 3000 && one > 3000 && few_more > 2000 && several > 100,
            "{kept} {one} {few_more} {several}"
        );
    }

    #[test]
    fn buckets_are_a_hundred_per_decade_and_quantiles_read_upper_edges() {
        assert_eq!(bucket(0.0), 0);
        assert_eq!(bucket(1e-3), 1);
        assert_eq!(bucket(1.0), 301);
        assert_eq!(bucket(1e9), BUCKETS - 1);
        assert!(bucket_upper(bucket(2.5)) >= 2.5 && bucket_upper(bucket(2.5)) < 2.5 * 1.024);
        let mut counts = vec![0u64; BUCKETS];
        counts[bucket(1.0)] = 99;
        counts[bucket(50.0)] = 1;
        assert_eq!(bucket_quantile(&counts, 0.5), bucket_upper(bucket(1.0)));
        assert_eq!(bucket_quantile(&counts, 0.99), bucket_upper(bucket(1.0)));
        assert_eq!(bucket_quantile(&counts, 0.995), bucket_upper(bucket(50.0)));
    }

    /// The windows a recorder gives, read back from its tape if it wrote one.
    fn windows(r: Recorded) -> Windows {
        match r {
            Recorded::Memory(w) => w,
            Recorded::Spooled(s) => s.load().expect("the tape reads back"),
        }
    }

    #[test]
    fn a_time_on_a_window_edge_is_in_the_window_that_starts_there() {
        // With width 0.1, (k * 0.1) / 0.1 rounds below k for 13,099 of these k (43, 81, 86, 91,
        // 162, ...: 43 * 0.1 = 4.3 and 4.3 / 0.1 = 42.99999999999999); the recorder must still
        // place the edge in window k, or integrating from it stalls.
        let mut w = WindowRecorder::new(1, &[], 0.1, false);
        for k in 0..200_000usize {
            let t = k as f64 * 0.1;
            let i = w.window(t);
            assert!(((i + 1) as f64) * 0.1 > t, "edge {k}: window {i} ends at or before {t}");
        }
        // One request held from 0 to 2000 (20,000 windows of 0.1): the areas add up to 2000.
        let mut w = WindowRecorder::new(1, &[], 0.1, false);
        w.changed(0, 1, 0.0);
        let out = windows(w.finish(2000.0));
        let area: f64 = out.queue.iter().map(|q| q[0]).sum();
        assert!(out.queue.iter().all(|q| q[0] >= 0.0));
        assert!((area - 2000.0).abs() < 1e-6, "area {area}");
    }

    #[test]
    fn queue_integrals_split_at_window_edges() {
        let mut w = WindowRecorder::new(1, &[], 10.0, false);
        w.changed(0, 2, 5.0);
        w.changed(0, 1, 25.0);
        let out = windows(w.finish(30.0));
        // 2 over [5, 10], [10, 20], [20, 25]; then 1 over [25, 30].
        assert_eq!(out.queue, [[10.0], [20.0], [15.0]]);
    }

    #[test]
    fn a_window_keeps_its_groups_dispatches_and_the_buckets_it_uses() {
        // 100 servers in groups of 20 and 80; 1000 requests in window 0, their sojourns in
        // three buckets, one of them counted after five more windows opened.
        let mut w = WindowRecorder::new(100, &[20, 80], 10.0, false);
        for i in 0..1000 {
            w.dispatched(i % 100, 1.0, 0);
            w.departed(1.0, [0.5, 1.0][i % 2], 0);
        }
        w.changed(0, 0, 55.0);
        w.dispatched(0, 55.0, 0);
        w.departed(2.0, 3.0, 0);
        let out = windows(w.finish(60.0));
        assert_eq!(out.picks[0], [200, 800]);
        assert_eq!(out.picks.len(), 6);
        let used: Vec<(usize, u64)> = out.latency[0].iter().collect();
        assert_eq!(used, [(bucket(0.5), 500), (bucket(1.0), 500), (bucket(3.0), 1)]);
        // Per window, a few bytes for the buckets used, not 8 for each of the 802 buckets.
        assert!(out.latency[0].bytes() <= 12, "{} bytes", out.latency[0].bytes());
        assert!(out.latency[1..].iter().all(Buckets::is_empty));
    }

    #[test]
    fn the_health_view_is_integrated_window_by_window_over_the_time_covered() {
        // 2 clients of 5 hosts (10 pairs), windows of 10: one host excluded at 5, another at 12,
        // the first back at 25; the run ends at 74. Healthy: 1 until 5, 0.9 until 12, 0.8 until
        // 25, then 0.9. Window 0: 5 * 1 + 5 * 0.9; window 1: 2 * 0.9 + 8 * 0.8; window 2:
        // 5 * 0.8 + 5 * 0.9; then 0.9 over 10 (windows 3 to 6) and over the 4 units of window 7.
        let want = [9.5, 8.2, 8.5, 9.0, 9.0, 9.0, 9.0, 3.6];
        for spool in [false, true] {
            let mut w = WindowRecorder::new(5, &[], 10.0, spool).with_health(2);
            w.health_changed(5.0, 1);
            w.health_changed(12.0, 1);
            w.health_changed(25.0, -1);
            let out = windows(w.finish(74.0));
            assert_eq!(out.health.len(), want.len());
            for (k, (&[span, area], &want)) in out.health.iter().zip(&want).enumerate() {
                assert_eq!(span, if k < 7 { 10.0 } else { 4.0 }, "window {k}");
                assert!((area - want).abs() < 1e-12, "window {k}: {area}");
            }
            assert_eq!(out.damage(BUCKETS), None);
        }
        // Without a view the windows carry none, and a record shows no trace of them.
        let out = windows(WindowRecorder::new(1, &[], 10.0, true).finish(30.0));
        assert!(out.health.is_empty());
        assert!(!serde_json::to_string(&out).unwrap().contains("health"));
    }

    #[test]
    fn a_request_counts_where_it_arrives_and_where_it_ends() {
        // Windows of 10: a request arriving at 5 and answered at 25 is window 0's arrival and
        // window 2's success; one arriving at 12 and failing at 13 is window 1's arrival and end.
        for spool in [false, true] {
            let mut w = WindowRecorder::new(1, &[], 10.0, spool).with_outcomes();
            w.request_arrived(5.0, 0);
            w.request_arrived(12.0, 0);
            w.request_ended(13.0, false, 0);
            w.request_ended(25.0, true, 0);
            let out = windows(w.finish(30.0));
            assert_eq!(out.outcomes, [[1, 0, 0], [1, 1, 0], [0, 1, 1]]);
            assert_eq!(out.damage(BUCKETS), None);
        }
        // Without the lifecycle the windows carry none, and a record shows no trace of them.
        let out = windows(WindowRecorder::new(1, &[], 10.0, false).finish(30.0));
        assert!(out.outcomes.is_empty());
        assert!(!serde_json::to_string(&out).unwrap().contains("outcomes"));
    }

    /// A long run through a recorder that writes its windows to a tape and one that keeps them:
    /// the first holds a few windows whatever the run's length (those still open, and those a
    /// late request was counted in after they closed), and both give the same windows, whose
    /// queue areas are the bits of integrating each server's queue change by change, window by
    /// window, with no window ever closed.
    #[test]
    fn a_spooling_recorder_holds_a_few_windows_and_gives_the_bits_of_one_that_keeps_them() {
        let (n, width, windows_run) = (3, 2.5, 20_000usize);
        let mut spooled = WindowRecorder::new(n, &[1, 2], width, true);
        let mut kept = WindowRecorder::new(n, &[1, 2], width, false);
        // The reference: every change integrated at once, as if no window ever closed.
        let mut queue: Vec<Vec<f64>> = Vec::new();
        let mut len = vec![(0u32, 0.0f64); n];
        let integrate = |queue: &mut Vec<Vec<f64>>, (old, mut from): (u32, f64), s, t: f64| {
            while old > 0 && from < t {
                let w = (from / width) as usize;
                if queue.len() <= w {
                    queue.resize(w + 1, vec![0.0; n]);
                }
                let end = (((w + 1) as f64) * width).min(t);
                queue[w][s] += f64::from(old) * (end - from);
                from = end;
            }
        };
        let mut x = 12_345u64;
        let mut next = move || {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            x >> 33
        };
        let (mut t, mut most, mut late) = (0.0f64, 0, 0);
        while t < windows_run as f64 * width {
            t += (next() % 1000) as f64 / 1000.0 * width;
            let (s, q) = ((next() % n as u64) as usize, (next() % 4) as u32);
            for r in [&mut spooled, &mut kept] {
                r.changed(s, q, t);
            }
            integrate(&mut queue, len[s], s, t);
            len[s] = (q, t);
            // A dispatch, and a departure of a request that arrived up to two windows ago, or
            // now and then one that arrived 50 windows ago (counted after its window closed).
            let back = if next() % 3000 == 0 {
                late += 1;
                50.0 * width
            } else {
                (next() % 2000) as f64 / 1000.0 * width
            };
            let arrival = (t - back).max(0.0);
            for r in [&mut spooled, &mut kept] {
                r.dispatched(s, t, 0);
                r.departed(arrival, t - arrival, 0);
            }
            most = most.max(spooled.held());
        }
        assert!(late > 0, "some requests were counted late");
        assert!(most <= OPEN_AFTER + 2 + late, "held {most} windows of {windows_run}");
        let end = t + 0.5;
        for (s, &l) in len.iter().enumerate() {
            integrate(&mut queue, l, s, end);
        }
        let (spooled, kept) = (windows(spooled.finish(end)), windows(kept.finish(end)));
        assert!(kept.picks.len() >= windows_run);
        assert_eq!(spooled, kept);
        let bits = |q: &[Vec<f64>]| -> Vec<Vec<u64>> {
            q.iter().map(|w| w.iter().map(|x| x.to_bits()).collect()).collect()
        };
        assert_eq!(bits(&spooled.queue[..queue.len()]), bits(&queue));
        assert!(spooled.queue[queue.len()..].iter().flatten().all(|&q| q == 0.0));
        assert_eq!(spooled.sojourns(), spooled.picks.iter().flatten().sum::<u64>());
    }
}

//! `lbsim run --series FILE`: what happened when, per window of simulated time.
//!
//! Each replication records [`Windows`] (per window and group: measured dispatches; per window and
//! server: the integral of the queue length; per window: a histogram of the sojourns of the
//! measured requests that arrived in it, as the buckets it uses). [`Pooled::of`] adds the
//! replications up, window by window, and groups the servers by the farm's groups; [`csv`] writes it in long format, one line per
//! `(policy, time, metric)`:
//!
//! - `requests`: measured requests dispatched in the window (over all replications; the windows
//!   add up to the run's measured requests times its replications);
//! - `share.GROUP`: the fraction of them sent to the group;
//! - `queue.GROUP`: the group's mean queue length per server, time-averaged over the window;
//! - `p50`, `p99`: sojourn quantiles of the requests that arrived in the window (upper edges of
//!   histogram buckets 2.3% wide: [`crate::engine::bucket`]), empty when none arrived.
//!
//! `time` is the start of the window.

use crate::engine::{BUCKETS, Buckets, Windows, bucket_quantile};
use crate::stats::RepStats;

/// The replications of one row, added up per window and group.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Pooled {
    /// The window width.
    pub width: f64,
    /// The groups' names, in farm order.
    pub groups: Vec<String>,
    /// Replications pooled.
    pub reps: u64,
    /// `picks[w][g]`: measured dispatches to group `g` in window `w`, over all replications.
    pub picks: Vec<Vec<u64>>,
    /// `queue[w][g]`: group `g`'s mean queue per server over window `w` (averaged over
    /// replications).
    pub queue: Vec<Vec<f64>>,
    /// `latency[w]`: sojourn bucket counts of window `w`'s arrivals, over all replications.
    pub latency: Vec<Buckets>,
    /// Each server's group.
    pub(crate) group_of: Vec<usize>,
    /// Per group: `1 / (servers * width * reps)`, the scale of a queue integral.
    pub(crate) scale: Vec<f64>,
}

impl Pooled {
    /// Pools `reps`' windows; `groups` are the farm's groups (name, servers) in order.
    pub fn of(reps: &[RepStats], groups: &[(String, usize)]) -> Option<Pooled> {
        let all: Vec<&Windows> = reps.iter().filter_map(|r| r.windows.as_ref()).collect();
        let mut out = Pooled::new(groups, all.first()?.width, all.len() as u64);
        all.iter().for_each(|w| out.add(w));
        Some(out)
    }

    /// Nothing pooled yet, for `reps` replications (each of them must be [`Pooled::add`]ed: the
    /// queue lengths are averaged over them as they come) with windows `width` wide.
    pub fn new(groups: &[(String, usize)], width: f64, reps: u64) -> Pooled {
        Pooled {
            width,
            groups: groups.iter().map(|(n, _)| n.clone()).collect(),
            group_of: groups.iter().enumerate().flat_map(|(i, (_, c))| vec![i; *c]).collect(),
            scale: groups.iter().map(|(_, c)| 1.0 / (*c as f64 * width * reps as f64)).collect(),
            reps,
            ..Pooled::default()
        }
    }

    /// Adds one replication's windows (replications in replication order): dispatches and
    /// histograms are counts, added in any order; the queue integrals are added server by server,
    /// so that a group's queue is the same bits however the replications were run.
    pub fn add(&mut self, w: &Windows) {
        let (g, windows) = (self.groups.len(), w.picks.len());
        if self.picks.len() < windows {
            self.picks.resize(windows, vec![0; g]);
            self.queue.resize(windows, vec![0.0; g]);
            self.latency.resize(windows, Buckets::default());
        }
        let (group_of, scale) = (&self.group_of, &self.scale);
        for (k, picks) in w.picks.iter().enumerate() {
            for (sum, &p) in self.picks[k].iter_mut().zip(picks) {
                *sum += p;
            }
            for (s, &q) in w.queue[k].iter().enumerate() {
                self.queue[k][group_of[s]] += q * scale[group_of[s]];
            }
            self.latency[k].add(&w.latency[k]);
        }
    }

    /// Measured requests dispatched in window `w`.
    pub fn requests(&self, w: usize) -> u64 {
        self.picks[w].iter().sum()
    }

    /// Group `g`'s share of window `w`'s dispatches (`NaN` if none).
    pub fn share(&self, w: usize, g: usize) -> f64 {
        self.picks[w][g] as f64 / self.requests(w) as f64
    }

    /// Group `g`'s share of the dispatches over windows `from..to`.
    pub fn share_over(&self, from: usize, to: usize, g: usize) -> f64 {
        let to = to.min(self.picks.len());
        let (mut mine, mut all) = (0, 0);
        for w in from..to {
            mine += self.picks[w][g];
            all += self.requests(w);
        }
        mine as f64 / all as f64
    }

    /// The `q`-quantile of the sojourns of requests arriving in windows `from..to`.
    pub fn quantile_over(&self, from: usize, to: usize, q: f64) -> f64 {
        let mut counts = vec![0u64; BUCKETS];
        for h in &self.latency[from.min(self.latency.len())..to.min(self.latency.len())] {
            h.add_to(&mut counts);
        }
        bucket_quantile(&counts, q)
    }

    /// The window holding time `t`.
    pub fn window_of(&self, t: f64) -> usize {
        (t / self.width) as usize
    }
}

/// The long-format CSV of the rows `(lead, series)`: `lead` is the row's leading cells (the
/// swept values and the policy), `head` their column names.
pub fn csv(head: &[String], rows: &[(Vec<String>, &Pooled)]) -> String {
    let mut w = ::csv::Writer::from_writer(Vec::new());
    let mut columns = head.to_vec();
    columns.extend(["time", "metric", "value"].map(String::from));
    w.write_record(&columns).expect("writing to memory");
    let num = |x: f64| if x.is_finite() { format!("{x}") } else { String::new() };
    for (lead, p) in rows {
        for k in 0..p.picks.len() {
            let t = num(k as f64 * p.width);
            let mut line = |metric: &str, value: String| {
                let mut record = lead.clone();
                record.extend([t.clone(), metric.to_string(), value]);
                w.write_record(&record).expect("writing to memory");
            };
            line("requests", p.requests(k).to_string());
            for (g, name) in p.groups.iter().enumerate() {
                line(&format!("share.{name}"), num(p.share(k, g)));
            }
            for (g, name) in p.groups.iter().enumerate() {
                line(&format!("queue.{name}"), num(p.queue[k][g]));
            }
            line("p50", num(p.quantile_over(k, k + 1, 0.5)));
            line("p99", num(p.quantile_over(k, k + 1, 0.99)));
        }
    }
    String::from_utf8(w.into_inner().expect("writing to memory")).expect("UTF-8")
}

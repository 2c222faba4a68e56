//! `lbsim run --series FILE`: what happened when, per window of simulated time.
//!
//! Each replication records [`Windows`] (per window and server: measured dispatches and the
//! integral of the queue length; per window: a histogram of the sojourns of the measured requests
//! that arrived in it). [`Pooled::of`] adds the replications up, window by window, and groups the
//! servers by the farm's groups; [`csv`] writes it in long format, one line per
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

use crate::engine::{BUCKETS, Windows, bucket_quantile};
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
    pub latency: Vec<Vec<u64>>,
}

impl Pooled {
    /// Pools `reps`' windows; `groups` are the farm's groups (name, servers) in order.
    pub fn of(reps: &[RepStats], groups: &[(String, usize)]) -> Option<Pooled> {
        let all: Vec<&Windows> = reps.iter().filter_map(|r| r.windows.as_ref()).collect();
        let first = all.first()?;
        let windows = all.iter().map(|w| w.picks.len()).max().unwrap_or(0);
        let g = groups.len();
        let mut out = Pooled {
            width: first.width,
            groups: groups.iter().map(|(n, _)| n.clone()).collect(),
            reps: all.len() as u64,
            picks: vec![vec![0; g]; windows],
            queue: vec![vec![0.0; g]; windows],
            latency: vec![vec![0; BUCKETS]; windows],
        };
        let mut group_of = Vec::new();
        for (i, (_, count)) in groups.iter().enumerate() {
            group_of.extend(std::iter::repeat_n(i, *count));
        }
        let scale: Vec<f64> = groups
            .iter()
            .map(|(_, c)| 1.0 / (*c as f64 * first.width * all.len() as f64))
            .collect();
        for w in &all {
            for (k, picks) in w.picks.iter().enumerate() {
                for (s, &p) in picks.iter().enumerate() {
                    out.picks[k][group_of[s]] += p;
                }
                for (s, &q) in w.queue[k].iter().enumerate() {
                    out.queue[k][group_of[s]] += q * scale[group_of[s]];
                }
                for (b, &c) in w.latency[k].iter().enumerate() {
                    out.latency[k][b] += c;
                }
            }
        }
        Some(out)
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
            for (c, x) in counts.iter_mut().zip(h) {
                *c += x;
            }
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

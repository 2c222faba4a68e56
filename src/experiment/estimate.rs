//! How long a run will take, estimated before it starts: a run estimated over an hour says so.
//!
//! The estimate is the events the plan implies (two per arrival: the arrival and its departure,
//! over the warm-up and the measured requests, every replication of every scenario), times a
//! per-policy cost factor where the cost grows with the farm, plus the server reports of
//! `wrr-orca`, divided by [`EVENTS_PER_SECOND`] per worker thread.

use super::{Config, Plan, Queueing, RunConfig};
use crate::policy::{PolicyKind, Tuning};

/// Events per second of one thread, conservatively: the README's Performance section measures
/// 23 to 33 million for the article's policies at n = 100 (`cargo bench --bench throughput`); the
/// scenario engine and richer policies are slower, so a third of the slowest figure.
pub const EVENTS_PER_SECOND: f64 = 8e6;

/// A run estimated longer than this (seconds) is announced on stderr before it starts.
pub const WARN_AFTER: f64 = 3600.0;

/// One kind of replication: its policy, its farm's size and arrival rate, and its arrivals.
struct Case<'a> {
    policy: PolicyKind,
    tuning: &'a Tuning,
    servers: usize,
    arrival_rate: f64,
    arrivals: f64,
}

/// The cost of one arrival relative to the article's policies: a scan of every server costs
/// about `servers / 100` times as much.
fn cost_factor(policy: PolicyKind, tuning: &Tuning, servers: usize) -> f64 {
    let scans = matches!(policy, PolicyKind::LeastConn | PolicyKind::C3)
        || (matches!(policy, PolicyKind::LeastRequest)
            && tuning.of::<crate::policy::LeastRequestParams>().full_scan);
    if scans { (servers as f64 / 100.0).max(1.0) } else { 1.0 }
}

/// The events of one replication of `c`.
fn events(c: &Case) -> f64 {
    let mut events = 2.0 * c.arrivals * cost_factor(c.policy, c.tuning, c.servers);
    if matches!(c.policy, PolicyKind::WrrOrca) && c.arrival_rate > 0.0 {
        // A report per server per period, over the simulated time the arrivals span.
        events += c.servers as f64 / c.tuning.of::<crate::policy::OrcaConfig>().report
            * (c.arrivals / c.arrival_rate);
    }
    events
}

fn arrivals(run: &RunConfig) -> f64 {
    let passes = if run.warmup_auto { 2.0 } else { 1.0 };
    (run.warmup as f64 + run.requests as f64) * passes
}

/// The events the configured run implies, from its plan, or `None` for the commands not
/// estimated (those without a queueing plan).
pub fn planned_events(cfg: &Config) -> Option<f64> {
    let Ok(Plan::Queueing(Queueing { scenarios, runs, .. })) = Plan::whole(cfg) else {
        return None;
    };
    let per_seed: f64 = scenarios
        .iter()
        .zip(&runs)
        .map(|(s, r)| {
            events(&Case {
                policy: s.policy,
                tuning: &s.tuning,
                servers: s.farm.rates.len(),
                arrival_rate: s.farm.arrival_rate(),
                arrivals: arrivals(r),
            })
        })
        .sum();
    Some(per_seed * cfg.common.seeds as f64)
}

/// The events and seconds of the part of the configured run that a job runs (`replications` of
/// the command's [`replications`](super::replications): all of them for a whole run, a shard's
/// share, none for `merge`) on `threads` workers, or `None` for the commands not estimated.
pub fn estimate(cfg: &Config, replications: u64, threads: usize) -> Option<(f64, f64)> {
    let share = replications as f64 / super::replications(cfg).max(1) as f64;
    let events = planned_events(cfg)? * share.min(1.0);
    let workers = (threads as u64).min(replications).max(1) as f64;
    Some((events, events / (EVENTS_PER_SECOND * workers)))
}

/// The line to print before a job of `replications` estimated over [`WARN_AFTER`], or `None`.
pub fn warning(cfg: &Config, replications: u64) -> Option<String> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let (events, s) = estimate(cfg, replications, cfg.common.threads.unwrap_or(cores))?;
    (s > WARN_AFTER).then(|| {
        format!(
            "warning: this run is estimated to take about {} ({events:.1e} events at {:.0e} \
             events/s per thread); fewer --requests, --seeds, loads or policies shorten it",
            human(s),
            EVENTS_PER_SECOND
        )
    })
}

fn human(s: f64) -> String {
    if s < 2.0 * 86400.0 {
        format!("{:.1} hours", s / 3600.0)
    } else if s < 2.0 * 365.0 * 86400.0 {
        format!("{:.0} days", s / 86400.0)
    } else {
        format!("{:.0} years", s / (365.0 * 86400.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scanning_policies_cost_more_on_large_farms() {
        let t = Tuning::default();
        assert_eq!(cost_factor(PolicyKind::PnC(2), &t, 100_000), 1.0);
        assert_eq!(cost_factor(PolicyKind::LeastConn, &t, 100_000), 1000.0);
        assert_eq!(cost_factor(PolicyKind::C3, &t, 10), 1.0);
    }

    #[test]
    fn orca_reports_add_events_per_period() {
        let t = PolicyKind::WrrOrca.tuning("report_period=1e-6").unwrap();
        let c = Case {
            policy: PolicyKind::WrrOrca,
            tuning: &t,
            servers: 100,
            arrival_rate: 90.0,
            arrivals: 9e5,
        };
        // 1e4 time units of 100 servers reporting 1e6 times each.
        assert!((events(&c) - (1.8e6 + 1e12)).abs() < 1e3);
    }

    #[test]
    fn durations_read_as_people_say_them() {
        assert_eq!(human(7200.0), "2.0 hours");
        assert_eq!(human(10.0 * 86400.0), "10 days");
    }
}

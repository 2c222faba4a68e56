//! `lbsim limit`: one limiter against one arrival pattern, or, with no limiter, every numeric
//! claim of the rate-limiting chapter (`seeds/003`, §39.1–39.17) tested against simulation.
//!
//! The limiters are those of [`crate::admission`], driven directly by arrival times (no farm):
//! what passes, what is delayed, what is rejected, and the most passed in any window of the
//! limiter's period. The adaptive throttle needs a backend that rejects: here one server of rate
//! `--capacity` and deterministic service that rejects a request finding `queue_limit` there.
//!
//! Each claim row says what the chapter states (`claimed`), what the simulation gives
//! (`simulated`), an exact value where one is derived (`reference`), and `holds`: the claim
//! tested against the simulation with the tolerance the `tolerance` column states (an interval
//! from the replications, an exact count, or a bound).

use std::path::Path;

use serde::Serialize;

use super::Progress;
use super::common::Common;
use super::{Command, Direct, Experiment};
use crate::admission::{Admission, AdmissionStats, Decision, Gate};
use crate::cancel::{cancel_every, cancel_point};
use crate::cli::Global;
use crate::cli::LimitArgs;
use crate::error::{UsageError, conflict, shown, too_large};
use crate::limits;
use crate::output::dest::check_inputs_kept;
use crate::output::table::format_number;
use crate::output::{Report, plot};
use crate::rng::{SimRng, StreamKey};
pub use crate::workload::Pattern;

/// `lbsim limit`.
pub struct Limit;

impl Command for Limit {
    type Args = LimitArgs;
    type Config = LimitConfig;
    type Rows = LimitRows;

    fn plot(a: &LimitArgs) -> Option<std::path::PathBuf> {
        a.plot.clone()
    }

    /// Validates `lbsim limit`: a limiter, its pattern, duration and capacity (or the claims).
    /// `--plot` needs a limiter: the claims are statements of different kinds and units, with
    /// no common axis to draw them on.
    fn config(a: &LimitArgs, common: &mut Common, _: &Global) -> Result<Experiment, UsageError> {
        if a.limiter.is_none() {
            let given = [
                ("--pattern", a.pattern.is_some()),
                ("--duration", a.duration.is_some()),
                ("--capacity", a.capacity.is_some()),
            ];
            if let Some((option, _)) = given.iter().find(|(_, g)| *g) {
                return Err(conflict(
                    option,
                    "needs --limiter (without one, limit runs the chapter's claims)",
                ));
            }
            if a.plot.is_some() {
                return Err(conflict(
                    "--plot",
                    "needs --limiter: the chapter's claims (limit without one) are a table of \
                     statements in different units, with no figure",
                ));
            }
        }
        let pattern = match &a.pattern {
            Some(p) => p.clone(),
            None => crate::args::pattern(DEFAULT_PATTERN).expect("the default pattern reads"),
        };
        let cfg = LimitConfig {
            limiter: a.limiter.as_ref().map(|l| l.given.clone()),
            admission: a.limiter.as_ref().map(|l| l.admission.clone()),
            pattern: pattern.given,
            arrivals: pattern.pattern,
            duration: a.duration.unwrap_or(100.0),
            capacity: a.capacity.unwrap_or(100.0),
        };
        if let Pattern::Trace { file, .. } = &cfg.arrivals {
            let trace = [("the trace", Path::new(file))];
            check_inputs_kept(&[("--out", common.out.as_deref())], &trace)?;
        }
        check_limit_size(&cfg, common.seeds)?;
        Ok(Experiment::Limit(cfg))
    }

    /// With a limiter, its counts as bars ([`Limit::columns`]); the claims draw none.
    fn figure(rows: &LimitRows) -> Option<String> {
        match rows {
            LimitRows::One(rows) => rows.first().map(Limit::columns),
            LimitRows::Claims(_) => None,
        }
    }
}

impl Limit {
    /// The figure of one limiter's row: the requests offered, admitted, rejected and delayed,
    /// summed over the replications, as bars.
    fn columns(r: &LimitRow) -> String {
        let counts = [
            ("offered", r.offered as f64),
            ("admitted", r.admitted as f64),
            ("rejected", r.rejected as f64),
            ("delayed", r.delayed as f64),
        ];
        let caption = format!("{} against {}", r.limiter, r.pattern);
        let y = format!("requests (over {} replications)", r.seeds);
        plot::columns(&caption, &y, &counts)
    }
}

impl Direct for Limit {
    /// Runs `limit`.
    fn run(cfg: &LimitConfig, c: &Common, progress: Progress) -> (LimitRows, Report, u64) {
        match (&cfg.admission, &cfg.limiter) {
            (Some(adm), Some(label)) => {
                let mut stats = AdmissionStats::default();
                let (mut delay, mut events, mut span) = (0.0, 0u64, 0.0);
                for rep in 0..c.seeds {
                    cancel_point();
                    let mut rng = stream(c, "one", rep);
                    let times = cfg.arrivals.times(cfg.duration, &mut rng);
                    span += times.last().map_or(cfg.duration, |&t| t.max(cfg.duration));
                    events += times.len() as u64;
                    let p = drive(adm, &times, 0.0, cfg.capacity, rng);
                    stats.merge(&p.stats);
                    delay += p.delay;
                }
                let row = LimitRow {
                    limiter: label.clone(),
                    pattern: cfg.pattern.clone(),
                    seeds: c.seeds,
                    offered: stats.offered,
                    admitted: stats.admitted,
                    rejected: stats.rejected,
                    admitted_rate: stats.admitted as f64 / span,
                    max_in_window: stats.max_in_window,
                    delayed: stats.delayed,
                    mean_delay: if stats.delayed > 0 { delay / stats.delayed as f64 } else { 0.0 },
                };
                let report =
                    Report::new("limit", &super::params(c, cfg), std::slice::from_ref(&row));
                (LimitRows::One(vec![row]), report, events)
            }
            _ => {
                let (rows, events) = claims(c, progress);
                // The pattern and its options do not enter the claims: only the seeds do.
                let params = super::params(c, &serde_json::Map::new());
                let mut report = Report::new("limit", &params, &rows);
                report.notes.push(CLAIMS_NOTE.into());
                (LimitRows::Claims(rows), report, events)
            }
        }
    }

    /// Replications `limit` reports progress for.
    fn replications(cfg: &LimitConfig, seeds: u64) -> u64 {
        if cfg.admission.is_some() { 0 } else { 3 + 6 + 5 * seeds }
    }
}

/// Refuses a `limit` run whose pattern makes too many arrivals, counted from the pattern's
/// parameters (nothing is built): more than [`limits::LIMIT_ARRIVALS`] in all, or more than one
/// replication's arrivals fit in [`limits::MEMORY`] (a replication holds its arrival times, its
/// decisions and its release times, about [`limits::BYTES_PER_LIMIT_ARRIVAL`] bytes each).
fn check_limit_size(cfg: &LimitConfig, seeds: u64) -> Result<(), UsageError> {
    let per_rep = cfg.arrivals.count_bound(cfg.duration);
    let total = per_rep * seeds as f64;
    let per_rep_max = (limits::MEMORY / limits::BYTES_PER_LIMIT_ARRIVAL) as f64;
    let (size, most) = if per_rep > per_rep_max {
        (format!("{} arrivals per replication", format_number(per_rep.ceil())), per_rep_max)
    } else if total > limits::LIMIT_ARRIVALS {
        let total = format_number(total.ceil());
        (format!("{total} arrivals over --seeds {seeds}"), limits::LIMIT_ARRIVALS)
    } else {
        return Ok(());
    };
    Err(too_large(
        "--pattern",
        format!(
            "{} over --duration {} makes up to {size}; at most {} are accepted",
            shown(&cfg.pattern),
            format_number(cfg.duration),
            format_number(most)
        ),
    ))
}

/// A server of rate `capacity` with deterministic service that rejects a request finding
/// `limit` requests there: the backend the adaptive throttle hears from. Lazy: its work left
/// drains with time.
#[derive(Debug, Clone)]
pub struct Backend {
    capacity: f64,
    limit: u32,
    work: f64,
    last: f64,
}

impl Backend {
    /// An empty backend.
    pub fn new(capacity: f64, limit: u32) -> Backend {
        Backend { capacity, limit, work: 0.0, last: 0.0 }
    }

    /// A request at `t`: true when accepted.
    pub fn offer(&mut self, t: f64) -> bool {
        self.work = (self.work - (t - self.last)).max(0.0);
        self.last = t;
        // Requests present: the work left in whole services (the one in service counts).
        let present = (self.work * self.capacity - 1e-9).ceil().max(0.0);
        if present >= f64::from(self.limit) {
            return false;
        }
        self.work += 1.0 / self.capacity;
        true
    }
}

/// What a limiter did with a sequence of arrivals.
#[derive(Debug, Clone, Default)]
pub struct Pass {
    /// Counts over the measured arrivals.
    pub stats: AdmissionStats,
    /// The decision on each arrival (true: passed, possibly delayed).
    pub decisions: Vec<bool>,
    /// When each passed request went through (after its delay), in order.
    pub released: Vec<f64>,
    /// Total delay of the delayed requests.
    pub delay: f64,
    /// Requests sent to the backend (adaptive).
    pub sent: u64,
}

/// Runs `adm` over `times`; arrivals before `from` are not counted. The adaptive throttle talks
/// to a [`Backend`] of rate `capacity`.
pub fn drive(adm: &Admission, times: &[f64], from: f64, capacity: f64, rng: SimRng) -> Pass {
    let mut gate = Gate::new(adm, rng);
    let mut backend = gate.queue_limit.map(|l| Backend::new(capacity, l));
    let mut pass = Pass::default();
    let mut pending: std::collections::VecDeque<(f64, bool)> = Default::default();
    for (i, &t) in times.iter().enumerate() {
        cancel_every(i as u64);
        while let Some(&(at, measured)) = pending.front().filter(|(at, _)| *at <= t) {
            gate.admitted(at, measured);
            pass.released.push(at);
            pending.pop_front();
        }
        let measured = t >= from;
        match gate.offer(t, measured) {
            Decision::Admit => {
                let ok = match &mut backend {
                    Some(b) => {
                        pass.sent += u64::from(measured);
                        let ok = b.offer(t);
                        gate.backend(t, ok, measured);
                        ok
                    }
                    None => true,
                };
                if ok {
                    gate.admitted(t, measured);
                    pass.released.push(t);
                }
                pass.decisions.push(true);
            }
            Decision::Delay(at) => {
                pending.push_back((at, measured));
                if measured {
                    pass.delay += at - t;
                }
                pass.decisions.push(true);
            }
            Decision::Reject => pass.decisions.push(false),
        }
    }
    for (at, measured) in pending {
        gate.admitted(at, measured);
        pass.released.push(at);
    }
    pass.stats = gate.stats;
    pass
}

/// `lbsim limit`, validated.
#[derive(Debug, Clone, Serialize)]
pub struct LimitConfig {
    /// The limiter as written and resolved; `None`: the chapter's claims.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limiter: Option<String>,
    /// It, resolved.
    #[serde(skip)]
    pub admission: Option<Admission>,
    /// The arrival pattern as written.
    pub pattern: String,
    /// It, parsed.
    #[serde(skip)]
    pub arrivals: Pattern,
    /// Simulated time per replication.
    pub duration: f64,
    /// The adaptive throttle's backend rate.
    pub capacity: f64,
}

/// `--pattern` when not given.
const DEFAULT_PATTERN: &str = "poisson:rate=200";

/// One limiter against one pattern, summed over replications.
#[derive(Debug, Clone, Serialize)]
pub struct LimitRow {
    /// The limiter as written.
    pub limiter: String,
    /// The pattern as written.
    pub pattern: String,
    /// Replications.
    pub seeds: u64,
    /// Requests that arrived.
    pub offered: u64,
    /// Requests passed (accepted by the backend under adaptive).
    pub admitted: u64,
    /// Requests rejected.
    pub rejected: u64,
    /// Passed per time unit.
    pub admitted_rate: f64,
    /// The most passed in any window of the limiter's period (largest over replications).
    pub max_in_window: u64,
    /// Requests delayed (leaky-bucket without nodelay).
    pub delayed: u64,
    /// Mean delay of the delayed requests.
    pub mean_delay: f64,
}

/// One claim of the chapter against the simulation.
#[derive(Debug, Clone, Serialize)]
pub struct ClaimRow {
    /// Where, and what is simulated.
    pub case: String,
    /// The chapter's statement.
    pub claim: String,
    /// The quantity compared.
    pub quantity: String,
    /// The chapter's value.
    pub claimed: String,
    /// The simulation's.
    pub simulated: f64,
    /// Whether the claim survives the test in `tolerance`.
    pub holds: bool,
    /// An exact value where one is derived (empty otherwise).
    pub reference: String,
    /// The test.
    pub tolerance: String,
}

/// The rows of `limit`.
#[derive(Debug, Clone)]
pub enum LimitRows {
    /// One limiter against one pattern.
    One(Vec<LimitRow>),
    /// The chapter's claims.
    Claims(Vec<ClaimRow>),
}

fn stream(c: &Common, case: &str, rep: u64) -> SimRng {
    StreamKey::new(c.seed, "limit").str(case).u64(rep).rng()
}

mod claims;

pub use claims::CLAIMS_NOTE;
use claims::claims;

#[cfg(test)]
mod tests {
    use super::*;

    fn rng(seed: u64) -> SimRng {
        StreamKey::new(seed, "count-bound").rng()
    }

    /// Exact but for the rounding of the time stamps: never below, at most one step (one
    /// arrival, one boundary of `2 count`) above.
    #[test]
    fn the_counted_size_of_a_deterministic_pattern_is_its_size() {
        let patterns = [
            (Pattern::Constant { rate: 7.3 }, 1.0),
            (Pattern::Constant { rate: 1000.0 }, 1.0),
            (Pattern::Boundary { count: 99, window: 1.0 }, 198.0),
            (Pattern::Boundary { count: 5, window: 0.3 }, 10.0),
        ];
        for (p, step) in &patterns {
            for duration in [0.2, 1.0, 2.0, 2.5, 3.0, 3.1, 10.0, 17.7, 18.0] {
                let exact = p.times(duration, &mut rng(1)).len() as f64;
                let bound = p.count_bound(duration);
                assert!(exact <= bound && bound <= exact + step, "{p:?} over {duration}: {bound}");
            }
        }
        assert_eq!(Pattern::Boundary { count: 99, window: 1.0 }.count_bound(10.0), 5.0 * 198.0);
        assert_eq!(Pattern::Boundary { count: 99, window: 1.0 }.count_bound(1.0), 0.0);
        assert_eq!(Pattern::Constant { rate: 1000.0 }.count_bound(3.0), 3000.0);
    }

    /// The Poisson patterns: the bound is the mean plus six standard deviations, so a run never
    /// exceeds it and stays within 12 standard deviations below it (a fixed seed: deterministic).
    #[test]
    fn the_counted_size_of_a_poisson_pattern_bounds_its_size_tightly() {
        let patterns = [
            Pattern::Poisson { rate: 200.0 },
            Pattern::OnOff { rate: 500.0, on: 1.0, off: 3.0 },
            Pattern::OnOff { rate: 50.0, on: 0.5, off: 0.25 },
        ];
        for p in &patterns {
            for duration in [1.0, 10.0, 101.3] {
                for seed in 0..5 {
                    let n = p.times(duration, &mut rng(seed)).len() as f64;
                    let bound = p.count_bound(duration);
                    let sd = n.max(1.0).sqrt();
                    assert!(n <= bound && bound <= n + 12.0 * sd, "{p:?}: {n} > {bound}");
                }
            }
        }
    }

    #[test]
    fn a_pattern_of_billions_is_counted_without_being_built() {
        let p = Pattern::Boundary { count: 5_000_000, window: 1.0 };
        assert_eq!(p.count_bound(100.0), 2.0 * 5e6 * 50.0);
        assert!(Pattern::Poisson { rate: 1e10 }.count_bound(100.0) > 1e12);
        assert!(Pattern::Constant { rate: 1e9 }.count_bound(100.0) >= 1e11);
    }
}

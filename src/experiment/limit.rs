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

use rand::RngExt;
use serde::Serialize;

use super::common::{Common, RunConfig};
use super::{Command, Experiment};
use super::{Progress, Scenario, Workload, run_scenarios};
use crate::admission::{Admission, AdmissionSpec, AdmissionStats, Decision, Gate};
use crate::cli::Global;
use crate::cli::LimitArgs;
use crate::error::{KeyError, UsageError, conflict, shown, too_large};
use crate::limits;
use crate::model::{Farm, Information};
use crate::options::parse_f64;
use crate::output::Report;
use crate::output::dest::check_inputs_kept;
use crate::output::table::format_number;
use crate::policy::PolicyKind;
use crate::rng::{SimRng, StreamKey};
use crate::stats::ci95_half_width;
use crate::theory;
use crate::workload::{ArrivalSpec, ServiceSpec};

/// `lbsim limit`.
pub struct Limit;

impl Command for Limit {
    type Args = LimitArgs;
    type Config = LimitConfig;
    type Rows = LimitRows;

    /// Validates `lbsim limit`: a limiter, its pattern, duration and capacity (or the claims).
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
        }
        let positive = |option: &str, s: &Option<String>, default: &str| {
            let s = s.as_deref().unwrap_or(default);
            parse_f64(option, s, |x| x > 0.0 && x <= 1e9, "a number > 0, at most 1e9")
        };
        let duration = positive("--duration", &a.duration, "100")?;
        let capacity = positive("--capacity", &a.capacity, "100")?;
        let pattern = a.pattern.as_deref().unwrap_or("poisson:rate=200");
        let cfg = LimitConfig::new(a.limiter.as_deref(), pattern, duration, capacity)?;
        if let Pattern::Trace { file, .. } = &cfg.arrivals {
            let trace = [("the trace", Path::new(file))];
            check_inputs_kept(&[("--out", common.out.as_deref())], &trace)?;
        }
        check_limit_size(&cfg, common.seeds)?;
        Ok(Experiment::Limit(cfg))
    }

    /// Runs `limit`.
    fn run(cfg: &LimitConfig, c: &Common, progress: Progress) -> (LimitRows, Report, u64) {
        match (&cfg.admission, &cfg.limiter) {
            (Some(adm), Some(label)) => {
                let mut stats = AdmissionStats::default();
                let (mut delay, mut events, mut span) = (0.0, 0u64, 0.0);
                for rep in 0..c.seeds {
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

/// An arrival pattern.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Pattern {
    /// Poisson arrivals of `rate`.
    Poisson {
        /// Requests per time unit.
        rate: f64,
    },
    /// Evenly spaced arrivals of `rate` (a constant-rate burst).
    Constant {
        /// Requests per time unit.
        rate: f64,
    },
    /// Poisson at `rate` for `on`, silent for `off`, repeated.
    OnOff {
        /// Rate while on.
        rate: f64,
        /// On period.
        on: f64,
        /// Off period.
        off: f64,
    },
    /// §39.1's adversary: `count` requests spread evenly over the last half of every other
    /// `window` and `count` over the first half of the next.
    Boundary {
        /// Requests on each side of a boundary.
        count: u64,
        /// The window.
        window: f64,
    },
    /// The timestamps of a CSV column `time`, replayed as they are (absolute times).
    Trace {
        /// The file.
        file: String,
        /// Its timestamps.
        #[serde(skip)]
        times: Vec<f64>,
    },
}

fn key_values(text: &str) -> Result<(String, Vec<(String, String)>), KeyError> {
    let (name, params) = text.split_once(':').unwrap_or((text, ""));
    let mut kv = Vec::new();
    for item in params.split(',').filter(|s| !s.trim().is_empty()) {
        let (k, v) = item
            .split_once('=')
            .ok_or_else(|| KeyError::unkeyed(format!("'{item}' is not key=value")))?;
        let (k, v) = (k.trim(), v.trim());
        if let Some((_, first)) = kv.iter().find(|(g, _): &&(String, String)| g == k) {
            return Err(KeyError::unkeyed(format!(
                "parameter '{k}' is given twice ({k}={first} and {k}={v})"
            )));
        }
        kv.push((k.to_string(), v.to_string()));
    }
    Ok((name.trim().to_string(), kv))
}

impl Pattern {
    /// Reads `NAME:key=value,...`: `poisson:rate=R`, `constant:rate=R`,
    /// `on-off:rate=R,on=A,off=B`, `boundary:count=N,window=W`, `trace:file=F`.
    pub fn parse(text: &str) -> Result<Pattern, KeyError> {
        let (name, kv) = key_values(text)?;
        let refused = |message: String| KeyError::new(name.as_str(), message);
        let allowed: &[&str] = match name.as_str() {
            "poisson" | "constant" => &["rate"],
            "on-off" => &["rate", "on", "off"],
            "boundary" => &["count", "window"],
            "trace" => &["file"],
            other => {
                return Err(KeyError::unkeyed(format!(
                    "'{other}' is not a pattern; expected poisson, constant, on-off, boundary or trace"
                )));
            }
        };
        if let Some((k, _)) = kv.iter().find(|(k, _)| !allowed.contains(&k.as_str())) {
            return Err(refused(format!("unknown key '{k}'; expected {}", allowed.join(", "))));
        }
        let num = |key: &str, default: Option<f64>| -> Result<f64, KeyError> {
            match kv.iter().find(|(k, _)| k == key) {
                Some((_, v)) => match v.parse::<f64>() {
                    Ok(x) if x.is_finite() && x > 0.0 => Ok(x),
                    _ => Err(refused(format!("{key} = '{v}' is not a number > 0"))),
                },
                None => default.ok_or_else(|| refused(format!("{key} is missing"))),
            }
        };
        Ok(match name.as_str() {
            "poisson" => Pattern::Poisson { rate: num("rate", None)? },
            "constant" => Pattern::Constant { rate: num("rate", None)? },
            "on-off" => Pattern::OnOff {
                rate: num("rate", None)?,
                on: num("on", Some(1.0))?,
                off: num("off", Some(1.0))?,
            },
            "boundary" => {
                let count = num("count", None)?;
                if count.fract() != 0.0 {
                    return Err(refused(format!("count = {count} is not an integer")));
                }
                Pattern::Boundary { count: count as u64, window: num("window", Some(1.0))? }
            }
            _ => {
                let file = kv
                    .iter()
                    .find(|(k, _)| k == "file")
                    .map(|(_, v)| v.clone())
                    .ok_or_else(|| refused("file is missing".into()))?;
                let spec: ArrivalSpec =
                    toml::from_str(&format!("kind = \"trace\"\nfile = {file:?}"))
                        .map_err(|e| refused(e.message().trim().into()))?;
                let arrivals = spec.build(1.0, Path::new("."))?;
                // Replayed at their own timestamps: window limiters count from time 0, so the
                // time base decides where their boundaries fall.
                let times = arrivals.trace_times().expect("a trace").to_vec();
                Pattern::Trace { file, times }
            }
        })
    }

    /// How many arrivals [`Pattern::times`] makes over `duration`, computed from the pattern's
    /// parameters without building them: exact for `trace`, at most one rounding step above
    /// (one arrival, one boundary) for `constant` and `boundary`; for the
    /// Poisson patterns (`poisson`, `on-off`) the mean `n` plus six standard deviations
    /// (`6 * sqrt(n)`), a count that a run exceeds with probability under 1e-9. A size check can
    /// then refuse a pattern of 10^12 arrivals in no time and no memory.
    pub fn count_bound(&self, duration: f64) -> f64 {
        let poisson = |mean: f64| mean + 6.0 * mean.sqrt();
        match self {
            Pattern::Poisson { rate } => poisson(rate * duration),
            Pattern::Constant { rate } => (duration * rate).ceil(),
            Pattern::OnOff { rate, on, off } => {
                let cycle = on + off;
                let full = (duration / cycle).floor();
                let rest = (duration - full * cycle).clamp(0.0, *on);
                poisson(rate * (full * on + rest))
            }
            // Edges at window, 3 window, 5 window, ... below `duration`, `2 count` arrivals each
            // (one more edge where `duration` falls on one: the edges are summed in floating
            // point, so the last may fall just below it).
            Pattern::Boundary { count, window } => {
                let edges = if duration > *window {
                    ((duration - window) / (2.0 * window)).floor() + 1.0
                } else {
                    0.0
                };
                2.0 * *count as f64 * edges
            }
            Pattern::Trace { times, .. } => times.len() as f64,
        }
    }

    /// The arrival times in `[0, duration)` (a trace: all of them).
    pub fn times(&self, duration: f64, rng: &mut SimRng) -> Vec<f64> {
        let mut out = Vec::new();
        match self {
            Pattern::Poisson { rate } => {
                let mut t = 0.0;
                loop {
                    t += rng.sample::<f64, _>(rand_distr::Exp1) / rate;
                    if t >= duration {
                        break;
                    }
                    out.push(t);
                }
            }
            Pattern::Constant { rate } => {
                let n = (duration * rate).ceil() as u64;
                out.extend((0..n).map(|k| k as f64 / rate).filter(|&t| t < duration));
            }
            Pattern::OnOff { rate, on, off } => {
                let mut start = 0.0;
                while start < duration {
                    let mut t = start;
                    loop {
                        t += rng.sample::<f64, _>(rand_distr::Exp1) / rate;
                        if t >= start + on || t >= duration {
                            break;
                        }
                        out.push(t);
                    }
                    start += on + off;
                }
            }
            Pattern::Boundary { count, window } => {
                let half = window / 2.0;
                let mut edge = *window;
                while edge < duration {
                    let n = *count as f64;
                    out.extend((0..*count).map(|i| edge - half + half * i as f64 / n));
                    out.extend((0..*count).map(|i| edge + half * i as f64 / n));
                    edge += 2.0 * window;
                }
            }
            Pattern::Trace { times, .. } => out.clone_from(times),
        }
        out
    }
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
    for &t in times {
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

impl LimitConfig {
    /// Validates the options.
    pub fn new(
        limiter: Option<&str>,
        pattern: &str,
        duration: f64,
        capacity: f64,
    ) -> Result<LimitConfig, UsageError> {
        let param = |option: &str| {
            let option = option.to_string();
            move |error| UsageError::Param { option, error }
        };
        let admission = limiter
            .map(|l| AdmissionSpec::parse(l).and_then(|s| s.resolve()))
            .transpose()
            .map_err(param("--limiter"))?;
        let arrivals = Pattern::parse(pattern).map_err(param("--pattern"))?;
        Ok(LimitConfig {
            limiter: limiter.map(str::to_string),
            admission,
            pattern: pattern.to_string(),
            arrivals,
            duration,
            capacity,
        })
    }
}

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

/// The footnote of the claims table.
pub const CLAIMS_NOTE: &str = "claims of seeds/003 (the rate-limiting chapter), section by \
section; holds = the claim survives the test in tolerance; ci95 = 95% Student-t half-width over \
the replications; rates per second, windows of one second";

fn adm(text: &str) -> Admission {
    AdmissionSpec::parse(text).and_then(|s| s.resolve()).expect("a built-in limiter")
}

fn f(x: f64) -> String {
    format_number(x)
}

/// The rows of the claims, and the requests simulated to test them.
struct Claims {
    rows: Vec<ClaimRow>,
    events: u64,
}

impl Claims {
    #[allow(clippy::too_many_arguments)]
    fn push(
        &mut self,
        case: &str,
        claim: &str,
        quantity: &str,
        claimed: String,
        simulated: f64,
        holds: bool,
        reference: String,
        tolerance: String,
    ) {
        self.rows.push(ClaimRow {
            case: case.into(),
            claim: claim.into(),
            quantity: quantity.into(),
            claimed,
            simulated,
            holds,
            reference,
            tolerance,
        });
    }
}

/// One section of the chapter: pushes its claims' rows, in the table's order.
type Section = fn(&Common, Progress, &mut Claims);

/// The sections, in the order of the table.
const SECTIONS: &[Section] = &[
    fixed_window_boundary,
    most_in_one_second,
    two_window_counter_error,
    burst_duration,
    drop_probability,
    gcra_is_a_token_bucket,
    nginx_burst,
    leaky_bucket_spacing,
    smooth_weighted_round_robin,
    consistent_hashing,
    adaptive_throttling,
    distributed_limiting,
    latency,
];

/// Every claim; returns the rows and the number of requests simulated.
pub fn claims(c: &Common, progress: Progress) -> (Vec<ClaimRow>, u64) {
    let mut out = Claims { rows: Vec::new(), events: 0 };
    for section in SECTIONS {
        section(c, progress, &mut out);
    }
    (out.rows, out.events)
}

/// The stream of the deterministic patterns and limiters (fresh, so each starts alike).
fn deterministic(c: &Common) -> SimRng {
    stream(c, "deterministic", 0)
}

/// §39.1's adversary: 99 requests at each side of every other one-second boundary, for 2 s.
fn boundary(c: &Common) -> Vec<f64> {
    Pattern::Boundary { count: 99, window: 1.0 }.times(2.0, &mut deterministic(c))
}

/// A hundred requests at once.
const AT_ONCE: [f64; 100] = [0.0; 100];

/// How many of [`AT_ONCE`] the limiter `text` passes at once.
fn passed_at_once(c: &Common, text: &str) -> usize {
    drive(&adm(text), &AT_ONCE, 0.0, 1.0, deterministic(c)).decisions.iter().filter(|d| **d).count()
}

/// §39.1: the fixed window's boundary.
fn fixed_window_boundary(c: &Common, _: Progress, out: &mut Claims) {
    let boundary = boundary(c);
    let p = drive(&adm("fixed-window:limit=100,window=1"), &boundary, 0.0, 1.0, deterministic(c));
    let sim = p.stats.max_in_window as f64;
    out.push(
        "§39.1 fixed-window 100/s; 99 in [0.5, 1) and 99 in [1, 1.5)",
        "198 pass in one second, almost twice the limit",
        "most passed in any 1-s window",
        "198".into(),
        sim,
        sim == 198.0,
        "198".into(),
        "exact count".into(),
    );
}

/// §39.1, §39.2, §39.3: the most any limiter passes in a one-second window under the worst
/// of three patterns.
fn most_in_one_second(c: &Common, _: Progress, out: &mut Claims) {
    let none = || deterministic(c);
    let mut worst_patterns = vec![boundary(c)];
    worst_patterns.push(Pattern::Constant { rate: 10_000.0 }.times(3.0, &mut none()));
    let mut edge: Vec<f64> = (0..100).map(|i| 0.999 + 0.001 * f64::from(i) / 100.0).collect();
    edge.extend((0..10_000).map(|i| 1.0 + f64::from(i) / 10_000.0));
    worst_patterns.push(edge);
    let worst = |text: &str| -> f64 {
        worst_patterns
            .iter()
            .map(|times| drive(&adm(text), times, 0.0, 1.0, none()).stats.max_in_window)
            .max()
            .unwrap_or(0) as f64
    };
    let tb = worst("token-bucket:rate=100,burst=100");
    let same_as_bucket = format!("= the token bucket's ({})", f(tb));
    type Check = Box<dyn Fn(f64) -> bool>;
    let cases: [(&str, &str, &str, f64, &str, Check); 7] = [
        (
            "fixed-window:limit=100,window=1",
            "§39.1 fixed window: up to twice the limit across a boundary",
            "<= 200 (2 x limit)",
            200.0,
            "bound 2 x limit",
            Box::new(|s| (198.0..=200.0).contains(&s)),
        ),
        (
            "token-bucket:rate=100,burst=100",
            "§39.1 token bucket: no window-boundary problem",
            "<= 100 (the limit)",
            200.0,
            "at most the limit; B + r t = 200 is its true bound",
            Box::new(|s| s <= 100.0),
        ),
        (
            "gcra:rate=100,burst=99",
            "§39.8 GCRA (capacity burst + 1 = 100) is a token bucket",
            "<= 100 (the limit)",
            200.0,
            "at most the limit; (burst + 1) + r t = 200 is its true bound",
            Box::new(|s| s <= 100.0),
        ),
        (
            "leaky-bucket:rate=100,burst=99,nodelay=true",
            "§39.12 nodelay turns limit_req into a token bucket",
            &same_as_bucket,
            200.0,
            "equal to token-bucket:rate=100,burst=100's",
            Box::new(move |s| s == tb),
        ),
        (
            "leaky-bucket:rate=100,burst=99",
            "§39.2 leaky bucket: output rate strictly constant",
            "<= 101 (r t + 1)",
            101.0,
            "bound r t + 1",
            Box::new(|s| s <= 101.0),
        ),
        (
            "sliding-log:limit=100,window=1",
            "§39.3 sliding log: exact, no boundary problem",
            "<= 100 (exact)",
            100.0,
            "bound: the limit",
            Box::new(|s| s <= 100.0),
        ),
        (
            "sliding-window:limit=100,window=1",
            "§39.3 two-window counter: worst error about 12.5%",
            "<= 112.5 (limit + 12.5%)",
            200.0,
            "bound limit x 1.125; ~2 x limit is its true bound",
            Box::new(|s| s <= 112.5),
        ),
    ];
    for (text, claim, claimed, bound, tolerance, holds) in cases {
        let sim = worst(text);
        out.push(
            &format!("{text}, worst of 3 patterns"),
            claim,
            "most passed in any 1-s window",
            claimed.into(),
            sim,
            holds(sim),
            format!("<= {}", f(bound)),
            tolerance.into(),
        );
    }
}

/// §39.3: the two-window counter's error under random (Poisson) traffic, twice the limit.
fn two_window_counter_error(c: &Common, _: Progress, out: &mut Claims) {
    let maxima: Vec<f64> = (0..c.seeds)
        .map(|rep| {
            let mut rng = stream(c, "sliding-window poisson", rep);
            let times = Pattern::Poisson { rate: 200.0 }.times(100.0, &mut rng);
            out.events += times.len() as u64;
            let s = drive(&adm("sliding-window:limit=100,window=1"), &times, 0.0, 1.0, rng).stats;
            s.max_in_window as f64 / 100.0 - 1.0
        })
        .collect();
    let worst_random = maxima.iter().copied().fold(0.0, f64::max);
    out.push(
        "§39.3 sliding-window:limit=100,window=1, Poisson 200/s for 100 s",
        "two-window counter: worst error about 12.5%",
        "most passed in any 1-s window over the limit, minus 1 (worst replication)",
        "<= 0.125".into(),
        worst_random,
        worst_random <= 0.125,
        String::new(),
        "bound 0.125".into(),
    );
}

/// §39.7: burst duration T = B / (R - r) with r = 100, B = 500, R = 600.
fn burst_duration(c: &Common, _: Progress, out: &mut Claims) {
    let none = || deterministic(c);
    let times = Pattern::Constant { rate: 600.0 }.times(3.0, &mut none());
    let p = drive(&adm("token-bucket:rate=100,burst=500"), &times, 0.0, 1.0, none());
    let first_reject = p.decisions.iter().position(|d| !d).map_or(f64::NAN, |i| times[i]);
    let first_second = times.iter().zip(&p.decisions).filter(|(t, d)| **d && **t < 1.0).count();
    out.push(
        "§39.7 token-bucket r=100 B=500, constant 600/s from full",
        "the burst lasts T = B / (R - r) = 1 s",
        "time of the first rejection (s)",
        "1".into(),
        first_reject,
        (first_reject - 1.0).abs() <= 2.0 / 600.0,
        "0.9983 (request 599, the first with < 1 token)".into(),
        "within 2 arrival gaps (2/600 s)".into(),
    );
    out.push(
        "§39.7 token-bucket r=100 B=500, constant 600/s from full",
        "600 requests pass in that second",
        "passed in [0, 1) s",
        "600".into(),
        first_second as f64,
        (first_second as f64 - 600.0).abs() <= 2.0,
        "599".into(),
        "within 2 requests".into(),
    );
    out.events += times.len() as u64;
}

/// §39.7: drop probability under Poisson input against 1 - r / lambda, with the exact
/// M/D/1/B blocking probability beside it.
fn drop_probability(c: &Common, progress: Progress, out: &mut Claims) {
    let mut model_rows = Vec::new();
    for burst in [1u32, 10, 100] {
        for x in [1.5, 2.0, 5.0, 10.0] {
            let text = format!("token-bucket:rate=100,burst={burst}");
            let limiter = adm(&text);
            let lambda = 100.0 * x;
            // 2e5 arrivals per replication, the first 10% a warm-up (the bucket starts full).
            let duration = 200_000.0 / lambda;
            let drops: Vec<f64> = (0..c.seeds)
                .map(|rep| {
                    let mut rng = stream(c, &format!("drop {burst} {x}"), rep);
                    let times = Pattern::Poisson { rate: lambda }.times(duration, &mut rng);
                    out.events += times.len() as u64;
                    let s = drive(&limiter, &times, duration / 10.0, 1.0, rng).stats;
                    s.rejected as f64 / s.offered as f64
                })
                .collect();
            let mean = drops.iter().sum::<f64>() / drops.len() as f64;
            let ci = ci95_half_width(&drops).unwrap_or(f64::NAN);
            let claimed = 1.0 - 1.0 / x;
            let exact = theory::md1k_blocking(x, burst as usize);
            if x == 1.5 {
                model_rows.push((text.clone(), lambda, burst, exact, mean, ci));
            }
            out.push(
                &format!("§39.7 {text}, Poisson {}/s", f(lambda)),
                "P_drop ~ 1 - r / lambda",
                "fraction rejected",
                f(claimed),
                mean,
                (claimed - mean).abs() <= ci,
                format!("{} (M/D/1/{burst} blocking)", f(exact)),
                format!("claimed inside simulated +- ci95 ({})", f(ci)),
            );
        }
        progress.done();
    }

    for (text, lambda, burst, exact, mean, ci) in model_rows {
        out.push(
            &format!("§39.7 {text}, Poisson {}/s", f(lambda)),
            &format!("the token bucket is an M/D/1/K queue with K = burst = {burst}"),
            "fraction rejected",
            format!("{} (M/D/1/{burst} blocking)", f(exact)),
            mean,
            (exact - mean).abs() <= ci,
            f(exact),
            format!("claimed inside simulated +- ci95 ({})", f(ci)),
        );
    }
}

/// §39.8: GCRA is a token bucket; redis-cell's capacity is burst + 1. On-off arrivals (300/s
/// for 0.2 s, then 0.3 s of silence) let the bucket refill, so its capacity matters.
fn gcra_is_a_token_bucket(c: &Common, _: Progress, out: &mut Claims) {
    let none = || deterministic(c);
    let mut rng = stream(c, "gcra", 0);
    let on_off = Pattern::OnOff { rate: 300.0, on: 0.2, off: 0.3 };
    let times = on_off.times(100_000.0 / 120.0, &mut rng);
    out.events += 3 * times.len() as u64;
    let decide = |text: &str| drive(&adm(text), &times, 0.0, 1.0, none()).decisions;
    let bucket = decide("token-bucket:rate=100,burst=21");
    let differ = |other: &[bool]| bucket.iter().zip(other).filter(|(a, b)| a != b).count() as f64;
    for (text, claim) in [
        ("gcra:rate=100,burst=20", "§39.8 GCRA is equivalent to a token bucket"),
        (
            "leaky-bucket:rate=100,burst=20,nodelay=true",
            "§39.12 limit_req with nodelay is a token bucket",
        ),
    ] {
        let d = differ(&decide(text));
        out.push(
            &format!("{text} vs token-bucket:rate=100,burst=21, {} on-off arrivals", times.len()),
            claim,
            "decisions that differ",
            "0".into(),
            d,
            d == 0.0,
            "0 with capacity = burst + 1".into(),
            "exact count".into(),
        );
    }
    let d = differ(&drive(&adm("gcra:rate=100,burst=21"), &times, 0.0, 1.0, none()).decisions);
    out.push(
        &format!(
            "gcra:rate=100,burst=21 vs token-bucket:rate=100,burst=21, {} on-off arrivals",
            times.len()
        ),
        "§39.8 GCRA with burst_tolerance = burst x T is the token bucket of the same burst",
        "decisions that differ",
        "0".into(),
        d,
        d == 0.0,
        "the same burst differs: GCRA's capacity is burst + 1".into(),
        "exact count".into(),
    );
    let n = passed_at_once(c, "gcra:rate=0.5,burst=10");
    out.push(
        "§39.13 CL.THROTTLE user:123 10 30 60 (gcra:rate=0.5,burst=10), 100 requests at once",
        "the total capacity is burst + 1",
        "passed at once",
        "11".into(),
        n as f64,
        n == 11,
        "11".into(),
        "exact count".into(),
    );
}

/// §39.12: NGINX's example, rate=10r/s burst=20.
fn nginx_burst(c: &Common, _: Progress, out: &mut Claims) {
    let p = drive(&adm("leaky-bucket:rate=10,burst=20"), &AT_ONCE, 0.0, 1.0, deterministic(c));
    out.push(
        "§39.12 limit_req rate=10r/s burst=20, 100 requests at once",
        "burst=20: at most 20 requests wait in the bucket",
        "requests delayed",
        "20".into(),
        p.stats.delayed as f64,
        p.stats.delayed == 20,
        "20 (and one passes at once)".into(),
        "exact count".into(),
    );
    let n = passed_at_once(c, "leaky-bucket:rate=10,burst=20,nodelay=true");
    out.push(
        "§39.12 limit_req rate=10r/s burst=20 nodelay, 100 requests at once",
        "with nodelay, requests pass at once while the burst-20 bucket is not full",
        "passed at once",
        "20".into(),
        n as f64,
        n == 20,
        "21 (excess 0, then 1 .. 20)".into(),
        "exact count".into(),
    );
}

/// §39.2 / §39.12: the leaky bucket's output spacing, and what nodelay changes.
fn leaky_bucket_spacing(c: &Common, _: Progress, out: &mut Claims) {
    let mut rng = stream(c, "spacing", 0);
    let times = Pattern::Poisson { rate: 150.0 }.times(100.0, &mut rng);
    out.events += times.len() as u64;
    let p = drive(&adm("leaky-bucket:rate=100,burst=50"), &times, 0.0, 1.0, deterministic(c));
    let min_gap = p.released.windows(2).map(|w| w[1] - w[0]).fold(f64::INFINITY, f64::min);
    out.push(
        "§39.2 leaky-bucket:rate=100,burst=50 (delay), Poisson 150/s for 100 s",
        "output leaves at a constant rate r",
        "smallest gap between requests let through (s)",
        "0.01".into(),
        min_gap,
        min_gap >= 0.01 * (1.0 - 1e-9),
        "0.01".into(),
        "at least 1/r (relative 1e-9)".into(),
    );
}

/// §39.5 and §39.10: NGINX's smooth weighted round robin on {A: 5, B: 1, C: 1}.
fn smooth_weighted_round_robin(_: &Common, _: Progress, out: &mut Claims) {
    let cycle: Vec<String> = super::swrr::smooth_cycle(&[5, 1, 1])
        .iter()
        .map(|&i| super::swrr::server_name(i).to_uppercase())
        .collect();
    for (section, claimed) in [("§39.5", "A,A,B,A,C,A,A"), ("§39.10", "A,B,A,C,A,A,A")] {
        let differ = claimed.split(',').zip(&cycle).filter(|(a, b)| a != b).count() as f64;
        out.push(
            &format!("{section} smooth weighted round robin, weights A 5, B 1, C 1"),
            "the selection sequence of one cycle",
            "positions that differ from the claimed sequence (of 7)",
            claimed.into(),
            differ,
            differ == 0.0,
            cycle.join(","),
            "exact sequence".into(),
        );
    }
    let sets: [&[u64]; 4] = [&[5, 1, 1], &[3, 2, 1], &[4, 3, 2, 1], &[100, 1, 1]];
    let off = sets
        .iter()
        .map(|w| {
            let cycle = super::swrr::smooth_cycle(w);
            w.iter()
                .enumerate()
                .map(|(i, &wi)| {
                    (cycle.iter().filter(|&&s| s == i).count() as i64 - wi as i64).abs()
                })
                .max()
                .unwrap_or(0)
        })
        .max()
        .unwrap_or(0);
    out.push(
        "§39.10 smooth weighted round robin, weights 5,1,1; 3,2,1; 4,3,2,1; 100,1,1",
        "in a cycle of W = sum of weights picks, server i is picked exactly w_i times",
        "largest |picks - w_i|",
        "0".into(),
        off as f64,
        off == 0,
        "0".into(),
        "exact count".into(),
    );
}

/// §39.5 and §39.9: consistent hashing with virtual nodes, against modulo hashing.
fn consistent_hashing(c: &Common, _: Progress, out: &mut Claims) {
    let (servers, keys, vnodes) = (10u64, 200_000usize, 150u64);
    let mut spread = Vec::new();
    let mut rms = Vec::new();
    let mut ring_moved = Vec::new();
    let mut modulo_moved = Vec::new();
    for rep in 0..c.seeds {
        let mut rng = stream(c, "hashing", rep);
        let ring = |n: u64| -> Vec<(u64, u64)> {
            let mut points: Vec<(u64, u64)> = (0..n)
                .flat_map(|s| (0..vnodes).map(move |v| (s, v)))
                .map(|(s, v)| {
                    let point = rand::Rng::next_u64(
                        &mut StreamKey::new(c.seed, "vnode").u64(rep).u64(s).u64(v).rng(),
                    );
                    (point, s)
                })
                .collect();
            points.sort_unstable();
            points
        };
        let owner = |points: &[(u64, u64)], key: u64| -> u64 {
            let i = points.partition_point(|&(p, _)| p < key);
            points[i % points.len()].1
        };
        let (before, after) = (ring(servers), ring(servers + 1));
        let key_hashes: Vec<u64> = (0..keys).map(|_| rand::Rng::next_u64(&mut rng)).collect();
        out.events += keys as u64;
        let mut load = vec![0u64; servers as usize];
        let (mut moved, mut moved_mod) = (0u64, 0u64);
        for &k in &key_hashes {
            let s = owner(&before, k);
            load[s as usize] += 1;
            moved += u64::from(owner(&after, k) != s);
            moved_mod += u64::from(k % servers != k % (servers + 1));
        }
        let mean = keys as f64 / servers as f64;
        spread.push(load.iter().map(|&l| (l as f64 / mean - 1.0).abs()).fold(0.0, f64::max));
        let square = load.iter().map(|&l| (l as f64 / mean - 1.0).powi(2)).sum::<f64>();
        rms.push((square / servers as f64).sqrt());
        ring_moved.push(moved as f64 / keys as f64);
        modulo_moved.push(moved_mod as f64 / keys as f64);
    }
    let avg = |xs: &[f64]| xs.iter().sum::<f64>() / xs.len() as f64;
    let worst_spread = spread.iter().copied().fold(0.0, f64::max);
    // A server's share of the ring is Beta(k, (n - 1) k) for k virtual nodes of n servers:
    // relative sd sqrt((n - 1) / (n k + 1)).
    let share_sd = ((servers - 1) as f64 / ((servers * vnodes) as f64 + 1.0)).sqrt();
    out.push(
        &format!(
            "§39.5 consistent hashing, {servers} servers x {vnodes} virtual nodes, {keys} keys"
        ),
        "with 150 virtual nodes each server's load is within 5-10% of the mean",
        "largest |load / mean - 1| (worst replication)",
        "<= 0.10".into(),
        worst_spread,
        worst_spread <= 0.10,
        format!("{} = sd of one server's share", f(share_sd)),
        "bound 0.10".into(),
    );
    let typical = avg(&rms);
    out.push(
        &format!(
            "§39.5 consistent hashing, {servers} servers x {vnodes} virtual nodes, {keys} keys"
        ),
        "with 150 virtual nodes each server's load is within 5-10% of the mean",
        "root mean square of load / mean - 1 (mean over replications)",
        "0.05 to 0.10".into(),
        typical,
        (0.05..=0.10).contains(&typical),
        format!("{} = sd of one server's share", f(share_sd)),
        "inside [0.05, 0.10]".into(),
    );
    let (ci_ring, ci_mod) = (
        ci95_half_width(&ring_moved).unwrap_or(0.0),
        ci95_half_width(&modulo_moved).unwrap_or(0.0),
    );
    let ideal = 1.0 / (servers + 1) as f64;
    out.push(
        &format!(
            "§39.9 consistent hashing, {servers} -> {} servers, {vnodes} virtual nodes",
            servers + 1
        ),
        "adding a node moves m / (n + 1) keys",
        "fraction of keys that move",
        f(ideal),
        avg(&ring_moved),
        (avg(&ring_moved) - ideal).abs() <= ci_ring,
        f(ideal),
        format!("claimed inside simulated +- ci95 ({})", f(ci_ring)),
    );
    let modulo = servers as f64 / (servers + 1) as f64;
    out.push(
        &format!("§39.9 modulo hashing, {servers} -> {} servers", servers + 1),
        "hash(key) % N moves m n / (n + 1) keys",
        "fraction of keys that move",
        f(modulo),
        avg(&modulo_moved),
        (avg(&modulo_moved) - modulo).abs()
            <= ci_mod.max(4.0 * (modulo * (1.0 - modulo) / keys as f64).sqrt()),
        f(modulo),
        "within ci95 or 4 binomial sd".into(),
    );
}

/// §39.15: SRE client-side throttling with K = 2 against a backend of 100/s that rejects
/// above 10 requests.
fn adaptive_throttling(c: &Common, progress: Progress, out: &mut Claims) {
    for x in [1.0, 1.5, 2.0, 3.0, 5.0, 10.0] {
        let limiter = adm("adaptive:k=2,window=120,queue_limit=10");
        let lambda = 100.0 * x;
        let duration = 600.0;
        let sent: Vec<f64> = (0..c.seeds)
            .map(|rep| {
                let mut rng = stream(c, &format!("sre {x}"), rep);
                let times = Pattern::Poisson { rate: lambda }.times(duration, &mut rng);
                out.events += times.len() as u64;
                let p = drive(&limiter, &times, 120.0, 100.0, rng);
                p.sent as f64 / p.stats.offered as f64
            })
            .collect();
        let mean = sent.iter().sum::<f64>() / sent.len() as f64;
        let claimed = (2.0 / x).min(1.0);
        out.push(
            &format!("§39.15 adaptive K=2, backend 100/s, offered {}x", f(x)),
            "no throttling while over half succeed; then about K x accepts are sent",
            "fraction of requests sent to the backend",
            f(claimed),
            mean,
            (mean - claimed).abs() <= 0.05,
            String::new(),
            "within 0.05 of min(1, K / load)".into(),
        );
        progress.done();
    }
}

/// §39.17: distributed limiting without coordination.
fn distributed_limiting(c: &Common, _: Progress, out: &mut Claims) {
    let distributed = [
        (
            "token-bucket:rate=500,burst=500,instances=5",
            1000.0,
            "5 instances each allowing 100/s let a user through at 500/s",
            500.0,
        ),
        (
            "token-bucket:rate=100,burst=100,instances=5",
            100.0,
            "quotas of 100/5 = 20/s per instance: a user at its limit spread evenly",
            100.0,
        ),
        (
            "token-bucket:rate=100,burst=100,instances=5,split=skewed,skew=0.6",
            100.0,
            "quotas of 20/s per instance: a user at its limit, 60% on one instance",
            100.0,
        ),
    ];
    for (text, lambda, claim, claimed) in distributed {
        let limiter = adm(text);
        let duration = 600.0;
        let rates: Vec<f64> = (0..c.seeds)
            .map(|rep| {
                let mut rng = stream(c, &format!("distributed {text}"), rep);
                let times = Pattern::Poisson { rate: lambda }.times(duration, &mut rng);
                out.events += times.len() as u64;
                let s = drive(&limiter, &times, 60.0, 1.0, rng).stats;
                s.admitted as f64 / (duration - 60.0)
            })
            .collect();
        let mean = rates.iter().sum::<f64>() / rates.len() as f64;
        out.push(
            &format!("§39.17 {text}, Poisson {}/s", f(lambda)),
            claim,
            "admitted per second",
            f(claimed),
            mean,
            (mean / claimed - 1.0).abs() <= 0.02,
            String::new(),
            "within 2% of the claimed rate".into(),
        );
    }
}

/// §39.11: latency of round robin and JSQ, simulated on the scenario engine.
fn latency(c: &Common, progress: Progress, out: &mut Claims) {
    let (n, rho) = (10usize, 0.8);
    let run = RunConfig::new(50_000, 500_000, 100_000);
    let det = ServiceSpec::Det.build(Path::new(".")).expect("det");
    let det_key = format!(
        "{}|{}",
        serde_json::to_string(&ArrivalSpec::Poisson { load: Some(rho), rate: None })
            .expect("serialises"),
        serde_json::to_string(&ServiceSpec::Det).expect("serialises")
    );
    let farm = Farm::homogeneous(n, rho);
    let scenario = |policy, workload: Workload| Scenario {
        farm: farm.clone(),
        policy,
        info: Information::Live,
        track_levels: false,
        tuning: crate::policy::Tuning::default(),
        clients: crate::model::Clients::default(),
        workload,
    };
    let det_workload = Workload {
        arrivals: Some(crate::workload::Arrivals::poisson(farm.arrival_rate())),
        service: det,
        key: det_key,
        keys: None,
    };
    let high = |policy| Scenario {
        farm: Farm::homogeneous(n, 0.95),
        ..scenario(policy, Workload::default())
    };
    let scenarios = [
        scenario(PolicyKind::RoundRobin, det_workload),
        scenario(PolicyKind::RoundRobin, Workload::default()),
        scenario(PolicyKind::Jsq, Workload::default()),
        high(PolicyKind::RoundRobin),
        high(PolicyKind::Jsq),
    ];
    let outcomes = run_scenarios(&scenarios, &run, c, progress);
    out.events += super::total_events(&outcomes);
    let jsq_claim = 1.0 + rho.powi(n as i32) / (n as f64 * (1.0 - rho));
    let latency = [
        (
            "round robin, deterministic service",
            "is an M/D/1 queue per server: 1 + rho / (2 (1 - rho))",
            theory::md1_mean(rho),
            "below M/D/1: each server sees Erlang-10 gaps, not Poisson".to_string(),
        ),
        (
            "round robin, exponential service",
            "is N independent M/M/1: 1 / (mu - lambda / N)",
            theory::mm1_mean(rho),
            format!("{} (E_10/M/1)", f(theory::ekm1_mean(n as u32, rho))),
        ),
        (
            "jsq, exponential service",
            "close to M/M/N: 1/mu + rho^N / (N mu (1 - rho))",
            jsq_claim,
            format!(">= {} (M/M/N, a lower bound)", f(theory::mmn_mean(n as u32, rho))),
        ),
    ];
    for ((what, claim, claimed, reference), o) in latency.into_iter().zip(&outcomes[..3]) {
        let s = &o.summary;
        let ci = s.mean_ci95.unwrap_or(f64::NAN);
        out.push(
            &format!("§39.11 {what}, N = {n}, rho = {rho}"),
            claim,
            "mean response time (service times)",
            f(claimed),
            s.mean,
            (claimed - s.mean).abs() <= ci,
            reference,
            format!("claimed inside simulated +- ci95 ({})", f(ci)),
        );
    }
    let ratio = outcomes[3].summary.mean / outcomes[4].summary.mean;
    out.push(
        &format!("§39.11 round robin vs jsq, exponential service, N = {n}, rho = 0.95"),
        "at high load JSQ is an order of magnitude better than round robin",
        "mean response time of rr over jsq's",
        ">= 10".into(),
        ratio,
        ratio >= 10.0,
        format!(
            "{} (E_10/M/1 over M/M/10)",
            f(theory::ekm1_mean(10, 0.95) / theory::mmn_mean(10, 0.95))
        ),
        "ratio of the pooled means >= 10".into(),
    );
}

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

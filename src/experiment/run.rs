//! `lbsim run FILE.toml`: the policies of a scenario file at every point of its sweep.
//!
//! Plan: each sweep point ([`crate::scenario`]) is a workload; each policy on it is a row. A point
//! resolves into the same [`Scenario`] values the built-in commands run, so a file written by a
//! command's `--print-scenario` gives that command's numbers to the bit: the random streams are
//! keyed by the workload (rates, load), the seed and the replication, as everywhere. Slots, the
//! discipline and `[[events]]` do not enter the key: the same file with another discipline, or
//! without its events, sees the same requests (common random numbers).

use serde::Serialize;
use serde_json::{Map, Value};

use super::common::{Common, RunConfig};
use super::{Command, Experiment, Planned, Queueing};
use super::{Outcome, STEADY_NOTE, Scenario, VsBaseline, Workload, steadiness_mark, stop_warnings};
use crate::cli::Global;
use crate::cli::ScenarioArgs;
use crate::error::UsageError;
use crate::model::{Farm, Information};
use crate::output::series::{PooledTape, SeriesCsv};
use crate::output::table::format_number;
use crate::output::{Report, plot};
use crate::policy::{PolicyKind, Tuning};
use crate::scenario::{InfoKind, Spec, Warmup};

pub use crate::policy::DEFAULT_TAU;

pub(crate) mod validate;
pub(crate) use validate::config;

/// A policy of a scenario file: its name as written, the kind and its parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct PolicySpec {
    /// As written (`p2c-pewma:tau=5`): the `policy` column.
    pub label: String,
    /// The policy.
    pub kind: PolicyKind,
    /// Its parameters.
    pub tuning: Tuning,
}

/// `lbsim run`.
pub struct Run;

impl Command for Run {
    type Args = ScenarioArgs;
    type Config = RunScenario;
    type Rows = Vec<RunRow>;

    fn config(a: &ScenarioArgs, common: &mut Common, g: &Global) -> Result<Experiment, UsageError> {
        config(a, common, g.seeds.is_some(), g.seed.is_some())
    }

    fn plot(a: &ScenarioArgs) -> Option<std::path::PathBuf> {
        a.plot.clone()
    }

    /// With `--series`, the p99 sojourn per window against time, one line per row
    /// ([`series_figure`]). Otherwise mean and p99 against the first sweep key (the other keys
    /// name the lines with the policy), or bars per policy when the file sweeps nothing or the
    /// key is not a number.
    fn figure(rows: &Vec<RunRow>) -> Option<String> {
        if rows.iter().any(|r| r.series.is_some()) {
            return Some(series_figure(rows));
        }
        let first = rows.first().and_then(|r| r.keys.keys().next().cloned());
        let numeric = rows.iter().all(|r| r.keys.values().next().is_some_and(Value::is_number));
        let x_key = first.filter(|_| numeric);
        let points: Vec<plot::SweepPoint> = rows
            .iter()
            .map(|r| {
                let rest: Vec<String> =
                    r.keys.iter().skip(1).map(|(k, v)| format!("{k}={}", json_cell(v))).collect();
                let line = if rest.is_empty() {
                    r.policy.clone()
                } else {
                    format!("{} ({})", r.policy, rest.join(", "))
                };
                plot::SweepPoint {
                    line,
                    x: x_key.as_ref().and_then(|_| r.keys.values().next()?.as_f64()),
                    mean: r.mean,
                    mean_ci95: r.mean_ci95,
                    p99: r.p99,
                    p99_ci95: r.p99_ci95,
                    steady: r.steady,
                }
            })
            .collect();
        let name = x_key.unwrap_or_else(|| "policy".into());
        Some(plot::sweep("Scenario: sojourn per policy", &name, &points))
    }
}

impl Planned for Run {
    /// The policies of every point, point by point, each with its point's run length and, with
    /// `--series`, its farm's groups.
    type Tasks = Queueing;

    fn plan(cfg: &RunScenario) -> Queueing {
        let (mut scenarios, mut runs, mut series) = (Vec::new(), Vec::new(), Vec::new());
        for point in &cfg.points {
            let s = point.scenarios();
            runs.extend(std::iter::repeat_n(point.run.clone(), s.len()));
            let groups = point.run.series.map(|_| groups(point));
            series.extend(std::iter::repeat_n(groups, s.len()));
            scenarios.extend(s);
        }
        let adaptive = ["[run] warmup = \"auto\"", "precision"];
        Queueing { scenarios, runs, groups: series, adaptive }
    }

    /// The rows, the report built from them and the number of events simulated.
    fn merge(
        cfg: &RunScenario,
        c: &Common,
        _: &Queueing,
        all: &Vec<Outcome>,
    ) -> (Vec<RunRow>, Report, u64) {
        let mut outcomes = all.iter().cloned();
        let per_point: Vec<Vec<Outcome>> =
            cfg.points.iter().map(|p| outcomes.by_ref().take(p.policies.len()).collect()).collect();
        let (rows, report) = summarise(cfg, c, &per_point);
        (rows, report, super::total_events(all))
    }
}

/// One point of the sweep, ready to run.
#[derive(Debug, Clone)]
pub struct Point {
    /// The swept keys and their values at this point (the first columns of its rows).
    pub keys: Vec<(String, toml::Value)>,
    /// The resolved file.
    pub spec: Spec,
    /// Its policies.
    pub policies: Vec<PolicySpec>,
    /// Its run length.
    pub run: RunConfig,
    /// Utilisation (the arrival rate over the farm's capacity).
    pub load: f64,
    /// The arrival process and the service distribution.
    pub workload: Workload,
    /// The service variance is infinite (pareto with alpha <= 2): the mean wait diverges.
    pub heavy_tail: bool,
    /// A trace shorter than the warm-up plus the requests asked: what it measures instead.
    pub short_trace: Option<String>,
    /// The traffic classes (`[[classes]]`), their service laws built.
    pub classes: Option<Box<crate::model::Classes>>,
}

/// The note and warning for a point whose service variance is infinite.
pub const HEAVY_TAIL: &str = "infinite service variance (pareto alpha <= 2): the mean waiting time \
diverges (Pollaczek-Khinchine), so the mean grows with the run and has no interval";

/// `lbsim run`, validated.
#[derive(Debug, Clone, serde::Serialize)]
pub struct RunScenario {
    /// The scenario file.
    pub file: String,
    /// The scenario's name.
    pub name: String,
    /// The swept keys, in column order.
    pub sweep: Vec<String>,
    /// The scenario as read: every key, defaults filled in, overrides applied, the sweep as
    /// written (what `--print` shows), so that a JSON output says what produced it.
    pub scenario: Box<Spec>,
    /// The points.
    #[serde(skip)]
    pub points: Vec<Point>,
    /// `--series FILE`: where the per-window series goes.
    #[serde(skip)]
    pub series: Option<std::path::PathBuf>,
    /// `--baseline`: the label of the policy every row is compared with, at its own point.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub baseline: Option<String>,
}

impl Point {
    /// The runnable scenarios of this point, one per policy.
    pub fn scenarios(&self) -> Vec<Scenario> {
        let farm = Farm {
            rates: self.spec.rates(),
            load: self.load,
            slots: self.spec.farm.slots,
            discipline: self.spec.farm.discipline,
            events: self.spec.rate_changes(),
            admission: self.spec.admission.as_ref().map(|a| {
                let a = a.resolve().expect("validated");
                a.with_scopes(Some(&self.spec.keys), self.spec.info.clients).expect("validated")
            }),
            lifecycle: self.spec.lifecycle().map(Box::new),
            classes: self.classes.clone(),
        };
        self.policies
            .iter()
            .map(|p| Scenario {
                farm: farm.clone(),
                policy: p.kind,
                info: match self.spec.info.kind() {
                    Ok(InfoKind::Board) => {
                        let period = self.spec.info.period.unwrap_or(0.0);
                        let local = self.spec.info.local || p.kind.counts_dispatches();
                        if period == 0.0 {
                            Information::Live
                        } else {
                            Information::Board { period, local }
                        }
                    }
                    // Validated: an unknown word never reaches a run.
                    Ok(InfoKind::Live | InfoKind::Global | InfoKind::Local) | Err(_) => {
                        Information::Live
                    }
                },
                track_levels: false,
                tuning: p.tuning.clone(),
                clients: self.spec.info.clients(),
                workload: self.workload.clone(),
            })
            .collect()
    }
}

/// The run length of a validated spec.
pub fn run_length_of(spec: &Spec) -> RunConfig {
    let (warmup, auto) = match &spec.run.warmup {
        Warmup::Arrivals(w) => (w.0, false),
        Warmup::Auto | Warmup::Other(_) => (0, true),
    };
    let mut run = RunConfig::new(warmup, spec.run.requests.0, spec.run.queue_guard.0 as u32);
    run.warmup_auto = auto;
    run.precision = spec.run.precision;
    run.max_requests = spec.run.precision.map(|_| spec.run.max_requests());
    run
}

/// One row of `run`: the swept keys, then the SPEC's columns, then drift and load.
#[derive(Debug, Clone, Serialize)]
pub struct RunRow {
    /// The swept keys and their values at this point, in sweep order.
    #[serde(flatten)]
    pub keys: Map<String, Value>,
    /// The policy as written in the file.
    pub policy: String,
    /// With `[[classes]]`: the class of the row, `all` for the pooled one (SPEC §13); absent
    /// without classes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub class: Option<String>,
    /// Replications.
    pub seeds: u64,
    /// Pooled mean sojourn.
    pub mean: f64,
    /// Median sojourn (merged histograms).
    pub p50: f64,
    /// 90th percentile sojourn.
    pub p90: f64,
    /// 99th percentile sojourn.
    pub p99: f64,
    /// 99.9th percentile sojourn.
    #[serde(rename = "p99.9")]
    pub p99_9: f64,
    /// Largest queue seen.
    pub max_queue: u32,
    /// 95% half-width of the per-replication means; empty when the service variance is infinite.
    pub mean_ci95: Option<f64>,
    /// 95% half-width of the per-replication p99s.
    pub p99_ci95: Option<f64>,
    /// False when the measured window still holds the start-up transient or a trend (MSER-5),
    /// or when an `[[events]]` change falls inside it.
    pub steady: bool,
    /// Replications the queue guard stopped.
    pub stopped: u64,
    /// Second-half over first-half mean.
    pub drift: f64,
    /// Utilisation: the arrival rate over the farm's capacity at time 0 (a trace's is measured
    /// from its timestamps).
    pub load: f64,
    /// With `[admission]`: what the limiter let through, summed over replications.
    #[serde(flatten)]
    pub admission: Option<AdmissionColumns>,
    /// `pXX` columns asked for with `--quantiles` beyond p50, p90, p99 and p99.9, in the order
    /// asked.
    #[serde(flatten)]
    pub quantiles: Map<String, Value>,
    /// Relative differences to the baseline policy of the same point (`--baseline`).
    #[serde(flatten)]
    pub baseline: Option<VsBaseline>,
    /// Measured arrivals per replication where `--precision` left the row.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requests: Option<u64>,
    /// The load the run saw: measured arrivals over the measured span (summed over
    /// replications), over the farm's capacity at time 0; `load` is the nominal one.
    pub realised_load: f64,
    /// The request lifecycle's columns (SPEC §11), with `[client]`, errors or a queue limit.
    #[serde(flatten)]
    pub lifecycle: Option<LifecycleColumns>,
    /// `--series`: the replications' windows, pooled per group.
    #[serde(skip)]
    pub series: Option<PooledTape>,
}

/// The columns `[admission]` adds: measured requests offered, admitted and rejected, summed over
/// replications, and the most admitted in any window of the limiter's period (the largest of any
/// replication).
#[derive(Debug, Clone, Serialize)]
pub struct AdmissionColumns {
    /// Requests that arrived.
    pub offered: u64,
    /// Requests that reached a server.
    pub admitted: u64,
    /// Requests rejected (by the limiter or, under adaptive throttling, by a server).
    pub rejected: u64,
    /// The most admitted in any window of the limiter's period.
    pub max_in_window: u64,
}

/// The rows of the scenario and their report from the outcomes of each point's scenarios (one
/// per policy), point by point in sweep order.
pub fn summarise(
    cfg: &RunScenario,
    c: &Common,
    outcomes: &[Vec<Outcome>],
) -> (Vec<RunRow>, Report) {
    let mut rows = Vec::new();
    let mut marks = Vec::new();
    let mut warnings = Vec::new();
    for (point, outcomes) in cfg.points.iter().zip(outcomes) {
        warnings.extend(stop_warnings(&point.scenarios(), outcomes, &point.run));
        let base_outcome = cfg.baseline.as_ref().and_then(|b| {
            let k = point.policies.iter().position(|p| p.label == *b)?;
            Some(&outcomes[k])
        });
        let base = base_outcome.map(|o| &o.summary);
        let base_of = |_: &Outcome| base_outcome.map(|b| b.classes.as_slice());
        for (p, o) in point.policies.iter().zip(outcomes) {
            let mut r = row(point, p, o);
            r.baseline = base.map(|b| VsBaseline::of(&o.summary, b));
            let mut mark = steadiness_mark(&o.summary, &point.run);
            if let Some(at) = change_inside_window(point, o) {
                r.steady = false;
                let change = format!(
                    "not stationary: the farm changes at t = {} inside the measured window",
                    format_number(at)
                );
                mark = Some(mark.map_or(change.clone(), |m| format!("{change}; {m}")));
            }
            if let Some(short) = short_of_cycles(point, o) {
                r.steady = false;
                mark = Some(mark.map_or(short.clone(), |m| format!("{short}; {m}")));
            }
            if point.heavy_tail {
                r.mean_ci95 = None;
                if let Some(b) = &mut r.baseline {
                    b.mean_vs_base_ci95 = None;
                }
                mark = Some(mark.map_or("infinite service variance: no interval".into(), |m| {
                    format!("infinite service variance: no interval; {m}")
                }));
            }
            let demands = (o.summary.seeds * o.summary.requests) as f64;
            if let Some(why) = point.workload.service.untrusted_mean(demands) {
                r.mean_ci95 = None;
                r.p99_ci95 = None;
                if let Some(b) = &mut r.baseline {
                    b.mean_vs_base_ci95 = None;
                    b.p99_vs_base_ci95 = None;
                }
                let warning = format!("warning: {why}");
                if !warnings.contains(&warning) {
                    warnings.push(warning);
                }
                mark = Some(mark.map_or_else(|| why.clone(), |m| format!("{why}; {m}")));
            }
            if let Some(short) = &point.short_trace {
                mark = Some(mark.map_or_else(|| short.clone(), |m| format!("{short}; {m}")));
            }
            let split = point.classes.as_ref().map(|c| class_rows(point, &r, o, base_of(o), c));
            if let Some(split) = split {
                r.class = Some("all".into());
                rows.push(r);
                marks.push(mark.clone());
                for c in split {
                    rows.push(c);
                    marks.push(mark.clone());
                }
            } else {
                rows.push(r);
                marks.push(mark);
            }
        }
        if let Some(short) = &point.short_trace {
            let warning = format!("warning: {short}");
            if !warnings.contains(&warning) {
                warnings.push(warning);
            }
        }
    }
    if cfg.points.iter().any(|p| p.heavy_tail) {
        warnings.insert(0, format!("warning: {HEAVY_TAIL}"));
    }
    let mut report = Report::new("run", &super::params(c, cfg), &rows);
    report.marks = marks;
    report.note_column = true;
    report.warnings = warnings;
    if rows.iter().any(|r| !r.steady) {
        report.notes.push(STEADY_NOTE.into());
    }
    if cfg.points.iter().any(|p| p.heavy_tail) {
        report.notes.push(HEAVY_TAIL.into());
    }
    // ----- --series -----
    if cfg.series.is_some() {
        let mut head = cfg.sweep.clone();
        head.push("policy".into());
        // With classes, a `class` column follows `policy` (SPEC §13): the pooled lines' `all`,
        // then each class's lines.
        let classes: Vec<String> = (cfg.points.iter().find_map(|p| p.classes.as_ref()))
            .map(|c| c.classes.iter().map(|k| k.name.clone()).collect())
            .unwrap_or_default();
        if !classes.is_empty() {
            head.push("class".into());
        }
        let rows = rows
            .iter()
            .filter_map(|r| {
                let mut lead: Vec<String> = r.keys.values().map(json_cell).collect();
                lead.push(r.policy.clone());
                r.series.clone().map(|s| (lead, s))
            })
            .collect();
        report.series = Some(SeriesCsv { head, rows, classes });
    }
    (rows, report)
}

/// The time of the first `[[events]]` change that falls inside the span of `o`'s measurement
/// windows (from the earliest first to the latest last measured arrival of its replications), if
/// any.
///
/// A farm that changes while it is measured is not stationary: the row averages over the
/// change, whatever the series looks like (a mild change, or one the policy absorbs, leaves it
/// flat and MSER-5 content). A change during the warm-up only, or after the last measured
/// arrival, leaves the measured window to one farm.
fn change_inside_window(point: &Point, o: &Outcome) -> Option<f64> {
    point
        .spec
        .events
        .iter()
        .map(|e| e.at)
        .find(|&at| o.summary.window.is_some_and(|(first, last)| first < at && at < last))
}

/// Modulation cycles a replication must measure, on average, for its row to be steady.
///
/// An mmpp2 run's mean is carried by its bursts: a replication's mean averages over the high
/// phases its measured span happens to hold, about Poisson in number with the span's count of
/// cycles `c` as mean. Below one cycle most replications see no burst, or part of one, and read
/// the low phase's wait (ratio 50, high 100, low 1e5 on 1e5 requests: 1.79 +- 0.017, against
/// 667 +- 632 on 5e7); below 10 the number of bursts a replication holds still varies by over
/// 30% (`1/sqrt(c)`), so replication means are set by how many bursts each caught, skewed, and
/// neither the mean nor its t interval is a steady-state reading.
pub const MIN_CYCLES: f64 = 10.0;

/// Why the row of `o` cannot be steady when its arrival process has a time scale of its own
/// (mmpp2's modulation cycle) that the replications' measured spans barely cover, with what to do.
fn short_of_cycles(point: &Point, o: &Outcome) -> Option<String> {
    let cycle = point.spec.arrivals.cycle()?;
    let s = &o.summary;
    let cycles = s.measured_span / s.seeds.max(1) as f64 / cycle;
    (cycles < MIN_CYCLES).then(|| {
        let needed = (s.requests as f64 * MIN_CYCLES / cycles.max(f64::MIN_POSITIVE)).ceil();
        format!(
            "not steady: each replication measures {} of the arrivals' modulation cycle \
             (high_time + low_time = {}) where {MIN_CYCLES} are needed; the bursts that \
             carry the mean are barely sampled: lengthen the run to about {} requests",
            format_number(cycles),
            format_number(cycle),
            format_number(needed)
        )
    })
}

/// The request lifecycle's columns (SPEC §11): over the measured requests of every
/// replication; `mean` and the quantiles are then over the successful ones.
#[derive(Debug, Clone, Serialize)]
pub struct LifecycleColumns {
    /// The fraction of requests answered without error within their deadline.
    pub success: f64,
    /// Successful answers per unit time over the offered rate, in the measured window.
    pub goodput: f64,
    /// Attempts per request.
    pub attempts: f64,
    /// Attempts that timed out and requests past their deadline, summed over replications.
    pub timeouts: u64,
    /// Attempts answered with an error or rejected, summed over replications.
    pub errors: u64,
    /// Server busy time spent on attempts whose answer nobody waited for, over all busy time.
    pub wasted: f64,
    /// Host ejections by outlier detection, summed over replications (SPEC §12).
    pub ejections: u64,
    /// Requests failed fast, without an attempt (a breaker, an overflow of `max_pending` or
    /// `max_requests`, no healthy host), summed over replications (SPEC §12).
    pub fast_failures: u64,
}

impl LifecycleColumns {
    fn of(l: &crate::lifecycle::LifecycleStats) -> Self {
        LifecycleColumns {
            success: l.success(),
            goodput: l.goodput(),
            attempts: l.attempts_per_request(),
            timeouts: l.timeouts,
            errors: l.errors,
            wasted: l.wasted_share(),
            ejections: l.ejections,
            fast_failures: l.fast_failures,
        }
    }
}

/// The rows of each traffic class of `pooled`'s policy (its pooled row), read from the class
/// summaries as the pooled row is from its own: sojourns and, with the request lifecycle, its
/// columns (`success`, `goodput`, `attempts`, `timeouts`, `errors`, `wasted`, `fast_failures`
/// of that class's requests; `goodput` over the class's own arrivals). What is not per class
/// (queues, the steady verdict, the load, the admission columns, `ejections`) is the pooled
/// row's. With a baseline, each class is compared with the same class of the baseline policy.
fn class_rows(
    point: &Point,
    pooled: &RunRow,
    o: &Outcome,
    base: Option<&[crate::stats::Summary]>,
    classes: &crate::model::Classes,
) -> Vec<RunRow> {
    classes
        .classes
        .iter()
        .zip(&o.classes)
        .enumerate()
        .map(|(k, (c, s))| {
            let mut r = pooled.clone();
            r.class = Some(c.name.clone());
            r.mean = s.mean;
            r.p50 = s.quantile(0.5);
            r.p90 = s.quantile(0.9);
            r.p99 = s.p99;
            r.p99_9 = s.quantile(0.999);
            r.mean_ci95 = if pooled.mean_ci95.is_some() { s.mean_ci95 } else { None };
            r.p99_ci95 = if pooled.p99_ci95.is_some() { s.p99_ci95 } else { None };
            r.drift = s.drift;
            r.quantiles = point
                .run
                .quantiles
                .iter()
                .map(|q| (q.column.clone(), Value::from(s.quantile(q.q))))
                .collect();
            r.baseline = base.and_then(|b| b.get(k)).map(|b| VsBaseline::of(s, b));
            r.lifecycle = pooled.lifecycle.as_ref().map(|p| LifecycleColumns {
                ejections: p.ejections,
                ..LifecycleColumns::of(&s.lifecycle)
            });
            r.series = None;
            r
        })
        .collect()
}

/// The row of policy `p` at `point`.
fn row(point: &Point, p: &PolicySpec, o: &Outcome) -> RunRow {
    let s = &o.summary;
    RunRow {
        keys: point.keys.iter().map(|(key, value)| (key.clone(), toml_to_json(value))).collect(),
        policy: p.label.clone(),
        class: None,
        seeds: s.seeds,
        mean: s.mean,
        p50: s.quantile(0.5),
        p90: s.quantile(0.9),
        p99: s.p99,
        p99_9: s.quantile(0.999),
        max_queue: s.max_queue,
        mean_ci95: s.mean_ci95,
        p99_ci95: s.p99_ci95,
        steady: s.steady(),
        stopped: s.stops,
        drift: s.drift,
        load: point.load,
        admission: point.spec.admission.as_ref().map(|_| {
            let a = s.admission;
            AdmissionColumns {
                offered: a.offered,
                admitted: a.admitted,
                rejected: a.rejected,
                max_in_window: a.max_in_window,
            }
        }),
        quantiles: point
            .run
            .quantiles
            .iter()
            .map(|q| (q.column.clone(), Value::from(s.quantile(q.q))))
            .collect(),
        baseline: None,
        requests: point.run.precision.map(|_| s.requests),
        lifecycle: point.spec.lifecycle_columns().then(|| LifecycleColumns::of(&s.lifecycle)),
        realised_load: s.measured_gaps as f64 / s.measured_span / point.spec.capacity(),
        series: o.series.clone(),
    }
}

/// The figure of `run --series`: the p99 sojourn of each window's arrivals (the series' `p99`
/// line) against the window's start, one line per row that has a series, named by its policy
/// and its swept values; a log axis when the values span more than a decade. A row whose
/// series cannot be read back draws no line.
pub fn series_figure(rows: &[RunRow]) -> String {
    let lines: Vec<(String, Vec<(f64, f64)>)> = rows
        .iter()
        .filter_map(|r| {
            let line = r.series.as_ref()?.quantile_line(0.99).ok()?;
            let keys: Vec<String> =
                r.keys.iter().map(|(k, v)| format!("{k}={}", json_cell(v))).collect();
            let name = if keys.is_empty() {
                r.policy.clone()
            } else {
                format!("{} ({})", r.policy, keys.join(", "))
            };
            Some((name, line))
        })
        .collect();
    let width = rows.iter().find_map(|r| Some(r.series.as_ref()?.head.width)).unwrap_or(0.0);
    let caption = format!("Scenario: p99 sojourn per window of {}", format_number(width));
    plot::over_time(&caption, "p99 sojourn of the window's arrivals", &lines)
}

/// The farm's groups at `point`: name and number of servers, in farm order.
pub(crate) fn groups(point: &Point) -> Vec<(String, usize)> {
    point.spec.farm.groups.iter().map(|g| (g.name.clone(), g.count as usize)).collect()
}

/// A swept value as a CSV cell of `--series`.
fn json_cell(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// A swept value as a cell.
fn toml_to_json(v: &toml::Value) -> Value {
    match v {
        toml::Value::Integer(i) => (*i).into(),
        toml::Value::Float(f) => (*f).into(),
        toml::Value::Boolean(b) => (*b).into(),
        toml::Value::String(s) => s.clone().into(),
        other => other.to_string().into(),
    }
}

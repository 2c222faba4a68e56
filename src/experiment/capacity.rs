//! `lbsim capacity FILE.toml --target METRIC=VALUE [--over KEY]`: for each policy of a scenario
//! file, the largest load (or the fewest servers) at which a latency or success target holds.
//!
//! The search is a bisection on the key, policy by policy. Each probe is a comparison of the
//! metric with the target: the probe's replications run with `--requests` measured arrivals,
//! then with twice as many (from scratch, the same streams: the longer run begins with the
//! shorter one's requests) until the 95% Student-t interval of the metric over replications lies
//! on one side of the target, or `--max-requests` is reached and the probe is undecided, which
//! ends that policy's search (its row says so). A probe "holds" only when its run is also steady
//! (MSER-5), and "fails" when the interval lies above the target or the queue guard stopped a
//! replication. Probes use the same `--seed` and replication indices at every value (common
//! random numbers: the workload's streams are keyed by the workload, so the policies probed at
//! one value see the same requests). The probes of all policies run together, one bisection step
//! at a time, so the output does not depend on `--threads`.
//!
//! The answer is the last value at which the target held, with `value_lo,value_hi` the bracket
//! the threshold lies in: between that value and the nearest one at which it failed. Bisection
//! stops when the bracket is at most `--precision` wide (a count stops at adjacent counts).
//!
//! Each policy's search depends on its own verdicts alone, so the policies are the command's
//! tasks: `--shard K/N` runs the searches of the policies whose index modulo `N` is `K` (each
//! bisected whole, its probes in this process) and records each search; `merge` makes the rows
//! from them, the bytes of the unsharded command. A search cannot be split further: each probe
//! depends on the verdict of the one before.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::common::{Common, RunConfig};
use super::plan::{Merged, Plan, Tasks};
use super::run::Point;
use super::run::validate::{check_set_keys, resolve_point};
use super::{Command, Experiment, Planned, Progress, Scenario, ordered, run_replication};
use crate::args::Metric;
use crate::cli::{CapacityArgs, Global};
use crate::error::{KeyError, ScenarioError, UsageError, bad, conflict};
use crate::limits;
use crate::options::{WarmupArg, parse_count};
use crate::output::Report;
use crate::output::plot;
use crate::output::table::format_number;
use crate::scenario::{Source, Spec, Warmup};
use crate::stats::{Summary, Tally, ci95_half_width};
use crate::workload::ArrivalSpec;

/// The lowest and highest loads `--over arrivals.load` searches.
pub const LOAD_RANGE: (f64, f64) = (0.01, 0.99);

/// `--precision` for a load when not given.
pub const DEFAULT_LOAD_PRECISION: f64 = 0.005;

/// `--max-requests` when not given: this many times `--requests` (four doublings).
pub const DEFAULT_DOUBLINGS: u64 = 16;

/// `lbsim capacity`.
pub struct Capacity;

/// The key searched.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Axis {
    /// `arrivals.load`: the largest load.
    Load,
    /// `farm.slots`: the fewest slots per server, at the file's arrival rate.
    Slots {
        /// The arrival rate held fixed.
        rate: f64,
    },
    /// `farm.groups.N.count`: the fewest servers of group `index`, at the file's arrival rate.
    Count {
        /// The group.
        index: usize,
        /// The arrival rate held fixed.
        rate: f64,
    },
}

impl Axis {
    /// True for a count, searched downward (the fewest at which the target holds).
    pub fn is_count(self) -> bool {
        !matches!(self, Axis::Load)
    }
}

/// `lbsim capacity`, validated.
#[derive(Debug, Clone, Serialize)]
pub struct CapacityConfig {
    /// The scenario file.
    pub file: String,
    /// The scenario's name.
    pub name: String,
    /// The target as written (`p99=20`).
    pub target: String,
    /// The key searched.
    pub over: String,
    /// The searched range of the key, `[low, high]`.
    pub range: [f64; 2],
    /// The bracket width at which bisection stops.
    pub precision: f64,
    /// Arrivals simulated before measuring, in every probe.
    pub warmup: u64,
    /// Measured arrivals per replication of a probe's first run.
    pub requests: u64,
    /// The most measured arrivals per replication a probe may double to.
    pub max_requests: u64,
    /// The queue guard of every probe.
    pub queue_guard: u32,
    /// The policies, as written.
    pub policies: Vec<String>,
    /// What the target bounds.
    #[serde(skip)]
    pub metric: Metric,
    /// The target's value.
    #[serde(skip)]
    pub goal: f64,
    /// The key searched, resolved.
    #[serde(skip)]
    pub axis: Axis,
    /// The scenario file, read, with `--set` and `--policies` applied.
    #[serde(skip)]
    pub source: Box<Source>,
    /// Its resolved spec.
    #[serde(skip)]
    pub spec: Box<Spec>,
}

/// One row of `capacity`: a policy's answer.
#[derive(Debug, Clone, Serialize)]
pub struct CapacityRow {
    /// The policy, as written in the file.
    pub policy: String,
    /// The target, as written (`p99=20`).
    pub target: String,
    /// The key searched.
    pub over: String,
    /// The largest load (fewest servers) at which the target was shown to hold; at an
    /// undecided probe, that probe's value; empty when the target holds nowhere or everywhere in
    /// the range.
    pub value: Option<Value>,
    /// The low end of the bracket the threshold lies in.
    pub value_lo: Option<Value>,
    /// The high end of that bracket.
    pub value_hi: Option<Value>,
    /// Replications per probe.
    pub seeds: u64,
    /// False when a probe could not be decided within `--max-requests`, or the target holds
    /// nowhere or everywhere in the range.
    pub decided: bool,
    /// Probes run (values of the key compared with the target).
    pub probes: u32,
    /// The most measured arrivals per replication any of its probes needed.
    pub requests: u64,
}

impl Command for Capacity {
    type Args = CapacityArgs;
    type Config = CapacityConfig;
    type Rows = Vec<CapacityRow>;

    fn plot(a: &CapacityArgs) -> Option<std::path::PathBuf> {
        a.plot.clone()
    }

    fn config(a: &CapacityArgs, common: &mut Common, g: &Global) -> Result<Experiment, UsageError> {
        config(a, common, g).map(Experiment::Capacity)
    }

    fn figure(rows: &Vec<CapacityRow>) -> Option<String> {
        let bars: Vec<plot::Bar> = rows
            .iter()
            .map(|r| plot::Bar {
                label: &r.policy,
                value: r.value.as_ref().and_then(Value::as_f64),
                lo: r.value_lo.as_ref().and_then(Value::as_f64),
                hi: r.value_hi.as_ref().and_then(Value::as_f64),
                solid: r.decided,
            })
            .collect();
        let over = rows.first().map_or("", |r| r.over.as_str());
        let target = rows.first().map_or("", |r| r.target.as_str());
        let caption = format!("Capacity: {over} at which {target} holds");
        Some(plot::bars(&caption, over, &bars))
    }
}

/// `capacity`'s plan: one task per policy, its whole bisection.
#[derive(Debug)]
pub struct Searches(pub Box<CapacityConfig>);

impl Tasks for Searches {
    type Results = Vec<Search>;

    /// Every policy's search, bisected together a step at a time.
    fn execute(&self, c: &Common, progress: Progress) -> Vec<Search> {
        let all: Vec<usize> = (0..self.0.policies.len()).collect();
        search(&self.0, c, &all, progress)
    }

    /// The replications of the searches at most: both ends of the range and one probe per
    /// bisection step, each at `--requests` (probes that double add theirs as they go).
    fn replications(&self, seeds: u64) -> u64 {
        self.0.policies.len() as u64 * self.per_task(seeds)
    }

    fn into_plan(self) -> Plan {
        Plan::Searches(self)
    }

    fn typed<'a>(plan: &'a Plan, merged: &'a Merged) -> Option<(&'a Self, &'a Vec<Search>)> {
        match (plan, merged) {
            (Plan::Searches(plan), Merged::Searches(searches)) => Some((plan, searches)),
            _ => None,
        }
    }
}

impl Searches {
    /// The replications one policy's search starts with: both ends and every bisection step.
    pub fn per_task(&self, seeds: u64) -> u64 {
        let [lo, hi] = self.0.range;
        let steps = ((hi - lo) / self.0.precision.max(1e-9)).log2().ceil().max(0.0) as u64;
        seeds * (2 + steps)
    }

    /// The search of policy `task` alone: the same as in a run of every policy.
    pub fn task(&self, c: &Common, task: u64, progress: Progress) -> Search {
        search(&self.0, c, &[task as usize], progress).remove(0)
    }
}

impl Planned for Capacity {
    type Tasks = Searches;

    fn plan(cfg: &CapacityConfig) -> Searches {
        Searches(Box::new(cfg.clone()))
    }

    fn merge(
        cfg: &CapacityConfig,
        c: &Common,
        _: &Searches,
        searches: &Vec<Search>,
    ) -> (Vec<CapacityRow>, Report, u64) {
        let mut rows = Vec::new();
        let mut marks = Vec::new();
        let mut warnings = Vec::new();
        for (label, s) in cfg.policies.iter().zip(searches) {
            let (row, note) = s.row(cfg, label, c.seeds);
            if let Some(note) = &note {
                warnings.push(format!("warning: policy {label}: {note}"));
            }
            rows.push(row);
            marks.push(note);
        }
        let mut report = Report::new("capacity", &super::params(c, cfg), &rows);
        report.marks = marks;
        report.note_column = true;
        report.warnings = warnings;
        report.notes.push(format!(
            "each probe: {} replications from {} measured arrivals, doubled up to {} until the \
             95% interval of {} lies on one side of {}; value: the last {} at which it held; \
             value_lo..value_hi: the bracket of the threshold",
            c.seeds,
            cfg.requests,
            cfg.max_requests,
            metric_name(cfg),
            format_number(cfg.goal),
            cfg.over
        ));
        (rows, report, searches.iter().map(|s| s.events).sum())
    }
}

fn metric_name(cfg: &CapacityConfig) -> &str {
    cfg.target.split_once('=').map_or("", |(m, _)| m)
}

// ===== validation =====

/// Validates `lbsim capacity`.
fn config(a: &CapacityArgs, common: &mut Common, g: &Global) -> Result<CapacityConfig, UsageError> {
    let mut source = Source::given(&a.file, a.text.as_deref())?;
    check_set_keys(&a.set)?;
    for assignment in &a.set {
        source.set(assignment)?;
    }
    if let Some(list) = &a.policies {
        let value = toml::Value::Array(list.0.iter().cloned().map(toml::Value::String).collect());
        source.table.insert("policies".into(), value);
    }
    let mut points = source.points()?;
    let keyed = |key: &str, message: String| -> UsageError {
        ScenarioError::at_key(&source.file, None, KeyError::new(key, message)).into()
    };
    if points.len() != 1 || !points[0].0.is_empty() {
        return Err(keyed("sweep", "capacity searches one key (--over): leave [sweep] out".into()));
    }
    let spec = points.remove(0).1;
    if g.seeds.is_none() {
        common.seeds = spec.run.seeds.0;
    }
    if g.seed.is_none() {
        common.seed = spec.run.seed.0;
    }
    if common.seeds < 2 {
        return Err(conflict(
            "--seeds",
            "must be 2 or more for capacity: each comparison's interval comes from the spread \
             between replications",
        ));
    }
    let target = &a.target;
    if target.metric == Metric::Success && spec.client.is_none() {
        return Err(conflict(
            &format!("--target {}", target.given),
            "needs a [client] section: without timeouts or errors every request succeeds",
        ));
    }
    let warmup = match (a.warmup, &spec.run.warmup) {
        (Some(WarmupArg::Arrivals(w)), _) => w,
        (None, Warmup::Arrivals(w)) => w.0,
        (Some(WarmupArg::Auto), _) => {
            return Err(conflict("--warmup auto", "does not apply to capacity: give a count"));
        }
        (None, _) => return Err(keyed("run.warmup", "capacity needs a count, not auto".into())),
    };
    let requests = a.requests.unwrap_or(spec.run.requests.0);
    let max_requests = match &a.max_requests {
        Some(s) => parse_count("--max-requests", s, requests, limits::ARRIVALS)?,
        None => requests.saturating_mul(DEFAULT_DOUBLINGS).min(limits::ARRIVALS.max(requests)),
    };
    let (axis, range) = axis(&a.over, &spec)?;
    let precision =
        a.precision.unwrap_or(if axis.is_count() { 1.0 } else { DEFAULT_LOAD_PRECISION });
    if precision >= range[1] - range[0] {
        let e = format!(
            "expected a width below the searched range [{}, {}]",
            format_number(range[0]),
            format_number(range[1])
        );
        return Err(bad("--precision", &precision.to_string(), e));
    }
    let servers = spec.rates().len();
    let policies: Vec<String> = spec.policies.iter().map(|p| p.trim().to_string()).collect();
    super::queueing::check_run_size(
        common.seeds,
        2 * policies.len(),
        common.threads,
        servers,
        "farm.groups",
    )?;
    let cfg = CapacityConfig {
        file: source.file.clone(),
        name: spec.name.clone(),
        target: target.given.clone(),
        over: a.over.trim().to_string(),
        range,
        precision,
        warmup,
        requests,
        max_requests,
        queue_guard: a.queue_guard.unwrap_or(spec.run.queue_guard.0 as u32),
        policies,
        metric: target.metric,
        goal: target.value,
        axis,
        source: Box::new(source),
        spec: Box::new(spec),
    };
    // Both ends of the range must make a valid scenario (policies on the farm, loads in range).
    for x in cfg.range {
        point_at(&cfg, x, requests)?;
    }
    Ok(cfg)
}

/// The key `over` names, and the range it is searched in.
fn axis(over: &str, spec: &Spec) -> Result<(Axis, [f64; 2]), UsageError> {
    let over = over.trim();
    let load_rate = spec.arrivals.load_rate();
    let file_rate = || {
        let (load, rate) = load_rate.expect("checked: not a trace");
        rate.unwrap_or_else(|| load.unwrap_or(0.0) * spec.capacity())
    };
    if load_rate.is_none() {
        return Err(conflict(
            &format!("--over {over}"),
            "needs arrivals with a rate or a load: a trace (arrivals.kind = \"trace\") keeps its own",
        ));
    }
    if over == "arrivals.load" {
        let hi = LOAD_RANGE.1.min(spec.max_load() - 0.01);
        return Ok((Axis::Load, [LOAD_RANGE.0, hi]));
    }
    let (axis, top) = if over == "farm.slots" {
        (Axis::Slots { rate: file_rate() }, u64::from(spec.farm.slots))
    } else if let Some(n) = over.strip_prefix("farm.groups.").and_then(|r| r.strip_suffix(".count"))
    {
        let index =
            n.parse::<usize>().ok().filter(|&i| i < spec.farm.groups.len()).ok_or_else(|| {
                let e = format!(
                    "the farm has {} group(s): expected farm.groups.N.count with N from 0 to {}",
                    spec.farm.groups.len(),
                    spec.farm.groups.len() - 1
                );
                bad("--over", over, e)
            })?;
        (Axis::Count { index, rate: file_rate() }, spec.farm.groups[index].count)
    } else {
        return Err(not_searchable(over, spec));
    };
    // The fewest that keeps the load below its bound and the policies on enough servers.
    let policies: Vec<crate::policy::PolicyKind> = spec
        .policies
        .iter()
        .filter_map(|p| {
            let name = p.split_once(':').map_or(p.as_str(), |(n, _)| n).trim();
            crate::policy::registry::resolve(name, crate::policy::Info::Live)
                .or_else(|_| crate::policy::registry::resolve(name, crate::policy::Info::Board))
                .ok()
        })
        .collect();
    let least = policies.iter().map(|p| p.min_servers()).max().unwrap_or(1);
    let fits = |c: u64| {
        let mut s = spec.clone();
        set_axis(&mut s, axis, c as f64);
        s.rates().len() >= least && file_rate() / s.capacity() < s.max_load()
    };
    let low = (1..=top).find(|&c| fits(c)).ok_or_else(|| {
        conflict(
            &format!("--over {over}"),
            format!("at the file's value ({top}) the load is already at or above its bound"),
        )
    })?;
    Ok((axis, [low as f64, top as f64]))
}

/// Why `--over KEY` cannot be searched: not a key of the scenario, not numeric, or a number
/// capacity does not search.
fn not_searchable(over: &str, spec: &Spec) -> UsageError {
    let accepted = "expected arrivals.load, farm.slots or farm.groups.N.count";
    let value = toml::Value::try_from(spec).ok().and_then(|v| lookup(&v, over).cloned());
    match value {
        None => bad("--over", over, format!("no such key in the scenario; {accepted}")),
        Some(v @ (toml::Value::Integer(_) | toml::Value::Float(_))) => bad(
            "--over",
            over,
            format!("capacity searches a load or a count, not this key (it is {v}); {accepted}"),
        ),
        Some(v) => bad("--over", over, format!("the key is not numeric (it is {v}); {accepted}")),
    }
}

/// The value at dotted `key` (numeric parts index arrays) in `v`.
fn lookup<'a>(v: &'a toml::Value, key: &str) -> Option<&'a toml::Value> {
    key.split('.').try_fold(v, |v, part| match v {
        toml::Value::Table(t) => t.get(part),
        toml::Value::Array(a) => part.parse::<usize>().ok().and_then(|i| a.get(i)),
        _ => None,
    })
}

/// Sets the searched key of `spec` to `x` (with the file's arrival rate for a count).
fn set_axis(spec: &mut Spec, axis: Axis, x: f64) {
    let (load, rate) = match axis {
        Axis::Load => (Some(x), None),
        Axis::Slots { rate } => {
            spec.farm.slots = x as u32;
            (None, Some(rate))
        }
        Axis::Count { index, rate } => {
            spec.farm.groups[index].count = x as u64;
            (None, Some(rate))
        }
    };
    match &mut spec.arrivals {
        ArrivalSpec::Poisson { load: l, rate: r }
        | ArrivalSpec::Renewal { load: l, rate: r, .. }
        | ArrivalSpec::Mmpp2 { load: l, rate: r, .. } => {
            *l = load;
            *r = rate;
        }
        ArrivalSpec::Trace { .. } => {}
    }
}

/// The scenario with the key at `x`, run with `requests` measured arrivals per replication.
fn point_at(cfg: &CapacityConfig, x: f64, requests: u64) -> Result<Point, UsageError> {
    let mut spec = (*cfg.spec).clone();
    set_axis(&mut spec, cfg.axis, x);
    spec.validate().map_err(|e| ScenarioError::keyed(&cfg.source.file, None, &e.message))?;
    let value =
        if cfg.axis.is_count() { toml::Value::Integer(x as i64) } else { toml::Value::Float(x) };
    let mut point = resolve_point(&cfg.source, vec![(cfg.over.clone(), value)], spec, &[])?;
    let run = &mut point.run;
    run.warmup = cfg.warmup;
    run.warmup_auto = false;
    run.requests = requests;
    run.queue_guard = cfg.queue_guard;
    run.precision = None;
    run.max_requests = None;
    Ok(point)
}

// ===== the search =====

/// What one probe found.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub enum Verdict {
    /// The interval lies below the target (above it for `success`), and the run is steady.
    Holds,
    /// The interval lies on the wrong side of the target, or the queue guard stopped a run.
    Fails,
    /// Neither, at `--max-requests`.
    Undecided,
}

/// A probe's verdict with the metric's estimate, its 95% half-width and the measured arrivals
/// per replication it took.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct Probe {
    /// The verdict.
    pub verdict: Verdict,
    /// The pooled metric; `None` when the probe measured no number (a value the scenario
    /// refused).
    pub estimate: Option<f64>,
    /// Its 95% half-width over replications.
    pub ci95: Option<f64>,
    /// Measured arrivals per replication.
    pub requests: u64,
    /// Whether the probe's run was steady (MSER-5).
    pub steady: bool,
}

/// The verdict on the target from a probe's replications (`values`: the metric of each).
pub fn judge(
    metric: Metric,
    goal: f64,
    s: &Summary,
    values: &[f64],
) -> (Verdict, f64, Option<f64>) {
    let estimate = match metric {
        Metric::Mean => s.mean,
        Metric::Quantile(q) => s.quantile(q),
        Metric::Success => s.lifecycle.success(),
    };
    let ci = ci95_half_width(values);
    // Positive: the target is violated by that much.
    let excess = if metric.higher_is_better() { goal - estimate } else { estimate - goal };
    let verdict = match ci {
        _ if s.stops > 0 => Verdict::Fails,
        Some(h) if excess - h > 0.0 => Verdict::Fails,
        Some(h) if excess + h < 0.0 && s.steady() => Verdict::Holds,
        _ => Verdict::Undecided,
    };
    (verdict, estimate, ci)
}

/// The metric of one replication.
fn metric_of(metric: Metric, r: &crate::stats::RepStats) -> f64 {
    match metric {
        Metric::Mean => r.mean(),
        Metric::Quantile(q) => r.quantile(q),
        Metric::Success => r.lifecycle.success(),
    }
}

/// Runs the probes `(policy, value)`, each doubling its requests until decided or at
/// `--max-requests`; returns their verdicts and the events each simulated.
fn probe(
    cfg: &CapacityConfig,
    c: &Common,
    probes: &[(usize, f64)],
    progress: Progress,
) -> (Vec<Probe>, Vec<u64>) {
    let seeds = c.seeds as usize;
    let extra: Vec<f64> = match cfg.metric {
        Metric::Quantile(q) => vec![q],
        _ => Vec::new(),
    };
    let mut out: Vec<Option<Probe>> = vec![None; probes.len()];
    let mut events = vec![0; probes.len()];
    let mut requests = cfg.requests;
    let mut pending: Vec<usize> = (0..probes.len()).collect();
    while !pending.is_empty() {
        // A value the scenario refuses (none should: both ends were checked) fails the target.
        let runs: Vec<Option<(Scenario, RunConfig)>> = pending
            .iter()
            .map(|&j| {
                let (policy, x) = probes[j];
                let point = point_at(cfg, x, requests).ok()?;
                Some((point.scenarios().swap_remove(policy), point.run))
            })
            .collect();
        let mut tallies: Vec<(Tally, Vec<f64>)> =
            pending.iter().map(|_| (Tally::new(requests, &extra), Vec::new())).collect();
        ordered::for_each_in_order(
            pending.len() * seeds,
            |t| {
                let (sc, run) = runs[t / seeds].as_ref()?;
                let r = run_replication(sc, run, c.seed, (t % seeds) as u64);
                progress.done();
                Some(r)
            },
            |t, r| {
                if let Some(r) = r {
                    events[pending[t / seeds]] += r.events;
                    let (tally, values) = &mut tallies[t / seeds];
                    tally.add(&r);
                    values.push(metric_of(cfg.metric, &r));
                }
            },
        );
        let mut next = Vec::new();
        for ((&j, run), (tally, values)) in pending.iter().zip(&runs).zip(tallies) {
            let (verdict, estimate, ci95, steady) = match run {
                Some(_) => {
                    let s = tally.finish();
                    let (v, e, h) = judge(cfg.metric, cfg.goal, &s, &values);
                    (v, e, h, s.steady())
                }
                None => (Verdict::Fails, f64::NAN, None, true),
            };
            // What JSON can hold, for a shard's record: a number that is not finite is none.
            let estimate = Some(estimate).filter(|e| e.is_finite());
            let ci95 = ci95.filter(|h| h.is_finite());
            if verdict == Verdict::Undecided && requests < cfg.max_requests {
                next.push(j);
            } else {
                out[j] = Some(Probe { verdict, estimate, ci95, requests, steady });
            }
        }
        requests = requests.saturating_mul(2).min(cfg.max_requests);
        progress.more(next.len() as u64 * c.seeds);
        pending = next;
    }
    (out.into_iter().map(|p| p.expect("every probe ends")).collect(), events)
}

/// How a policy's search ended.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub enum End {
    /// Still bisecting.
    Open,
    /// The bracket is within `--precision`.
    Answer,
    /// The target fails at the range's better end.
    Nowhere(Probe),
    /// The target holds at the range's worse end.
    Everywhere,
    /// A probe at this value could not be decided.
    Undecided(f64, Probe),
}

/// One policy's bisection: the value where the target last held, the one where it last failed.
/// It is what a shard records of its task.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Search {
    /// Where it holds (the better end first).
    pub good: f64,
    /// Where it fails (the worse end first).
    pub bad: f64,
    /// How it ended.
    pub end: End,
    /// Probes run.
    pub probes: u32,
    /// The most measured arrivals per replication a probe needed.
    pub requests: u64,
    /// Events simulated by its probes.
    pub events: u64,
}

/// The searches of `policies` (indices into the file's), bisecting all of them a step at a
/// time. A policy's search reads only its own verdicts, so it is the same whichever policies
/// are searched with it.
fn search(cfg: &CapacityConfig, c: &Common, policies: &[usize], progress: Progress) -> Vec<Search> {
    let [lo, hi] = cfg.range;
    // The better end: the lowest load, or the most servers.
    let (good, bad) = if cfg.axis.is_count() { (hi, lo) } else { (lo, hi) };
    let fresh = Search { good, bad, end: End::Open, probes: 0, requests: 0, events: 0 };
    let mut searches = vec![fresh; policies.len()];
    let ends: Vec<(usize, f64)> = policies.iter().flat_map(|&p| [(p, good), (p, bad)]).collect();
    let (verdicts, events) = probe(cfg, c, &ends, progress);
    for (k, s) in searches.iter_mut().enumerate() {
        let (at_good, at_bad) = (verdicts[2 * k], verdicts[2 * k + 1]);
        s.probes = 2;
        s.requests = at_good.requests.max(at_bad.requests);
        s.events = events[2 * k] + events[2 * k + 1];
        s.end = match (at_good.verdict, at_bad.verdict) {
            (Verdict::Fails, _) => End::Nowhere(at_good),
            (Verdict::Undecided, _) => End::Undecided(good, at_good),
            (_, Verdict::Holds) if cfg.axis.is_count() => {
                s.good = bad;
                End::Answer
            }
            (_, Verdict::Holds) => End::Everywhere,
            (_, Verdict::Undecided) => End::Undecided(bad, at_bad),
            (Verdict::Holds, Verdict::Fails) => End::Open,
        };
    }
    loop {
        // (position in `searches`, (policy, value probed))
        let mut asked: Vec<(usize, (usize, f64))> = Vec::new();
        for (k, s) in searches.iter_mut().enumerate() {
            if !matches!(s.end, End::Open) {
                continue;
            }
            match midpoint(s.good, s.bad, cfg.precision, cfg.axis.is_count()) {
                Some(mid) => asked.push((k, (policies[k], mid))),
                None => s.end = End::Answer,
            }
        }
        if asked.is_empty() {
            break;
        }
        let probes: Vec<(usize, f64)> = asked.iter().map(|&(_, probe)| probe).collect();
        let (verdicts, events) = probe(cfg, c, &probes, progress);
        for ((&(k, (_, mid)), v), e) in asked.iter().zip(verdicts).zip(events) {
            let s = &mut searches[k];
            s.probes += 1;
            s.requests = s.requests.max(v.requests);
            s.events += e;
            match v.verdict {
                Verdict::Holds => s.good = mid,
                Verdict::Fails => s.bad = mid,
                Verdict::Undecided => s.end = End::Undecided(mid, v),
            }
        }
    }
    searches
}

/// The next value to probe between `good` and `bad`, or `None` when they are within `precision`
/// (adjacent for a count).
fn midpoint(good: f64, bad: f64, precision: f64, count: bool) -> Option<f64> {
    if count {
        let (lo, hi) = (good.min(bad), good.max(bad));
        if hi - lo <= precision.max(1.0) {
            return None;
        }
        return Some(((lo + hi) / 2.0).floor());
    }
    ((bad - good).abs() > precision).then(|| (good + bad) / 2.0)
}

impl Search {
    /// Its row, and the note that goes with it.
    fn row(&self, cfg: &CapacityConfig, policy: &str, seeds: u64) -> (CapacityRow, Option<String>) {
        let count = cfg.axis.is_count();
        // The bracket of the threshold: [good, bad] for a load; (bad, good] for a count.
        let bracket = if count {
            (Some((self.bad + 1.0).min(self.good)), Some(self.good))
        } else {
            (Some(self.good.min(self.bad)), Some(self.good.max(self.bad)))
        };
        let [lo, hi] = cfg.range.map(format_number);
        let shown = |p: &Probe| {
            let unsteady = if p.steady { "" } else { ", not steady" };
            let Some(estimate) = p.estimate else {
                return format!("no measurement{unsteady}");
            };
            match p.ci95 {
                Some(h) => format!("{} +- {}{unsteady}", format_number(estimate), format_number(h)),
                None => format!("{}{unsteady}", format_number(estimate)),
            }
        };
        let metric = metric_name(cfg);
        let (value, (value_lo, value_hi), decided, note) = match self.end {
            End::Answer | End::Open => (Some(self.good), bracket, true, None),
            End::Nowhere(p) => {
                let at = if count { &hi } else { &lo };
                let note = format!(
                    "the target holds nowhere in [{lo}, {hi}] ({} = {at}: {metric} {})",
                    cfg.over,
                    shown(&p)
                );
                (None, (Some(cfg.range[0]), Some(cfg.range[1])), false, Some(note))
            }
            End::Everywhere => {
                let note = format!(
                    "the target holds everywhere in [{lo}, {hi}]: the answer is above {hi}"
                );
                (None, (Some(cfg.range[1]), None), false, Some(note))
            }
            End::Undecided(at, p) => {
                let note = format!(
                    "undecided at {} = {}: {metric} {} against {} with {} requests \
                     (--max-requests); the answer lies in the bracket",
                    cfg.over,
                    format_number(at),
                    shown(&p),
                    format_number(cfg.goal),
                    p.requests
                );
                (Some(at), bracket, false, Some(note))
            }
        };
        // A count is written as an integer.
        let cell =
            |x: Option<f64>| x.map(|x| if count { Value::from(x as u64) } else { Value::from(x) });
        let row = CapacityRow {
            policy: policy.to_string(),
            target: cfg.target.clone(),
            over: cfg.over.clone(),
            value: cell(value),
            value_lo: cell(value_lo),
            value_hi: cell(value_hi),
            seeds,
            decided,
            probes: self.probes,
            requests: self.requests,
        };
        (row, note)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_count_is_bisected_to_adjacent_values_and_a_load_to_the_precision() {
        assert_eq!(midpoint(10.0, 4.0, 1.0, true), Some(7.0));
        assert_eq!(midpoint(5.0, 4.0, 1.0, true), None);
        assert_eq!(midpoint(6.0, 4.0, 1.0, true), Some(5.0));
        assert_eq!(midpoint(0.5, 0.75, 0.01, false), Some(0.625));
        assert_eq!(midpoint(0.5, 0.505, 0.01, false), None);
    }
}

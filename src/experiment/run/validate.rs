//! `lbsim run`'s validation: reads the scenario file, applies `--set` and the command line, checks
//! the outputs against the inputs, and resolves every sweep point into a runnable [`Point`].

use std::path::{Path, PathBuf};

use super::{Point, PolicySpec, RunScenario, run_length_of};
use crate::cli;
use crate::error::{KeyError, ScenarioError, UsageError, bad, conflict, shown};
use crate::experiment::Experiment;
use crate::experiment::common::Common;
use crate::experiment::hash::{maglev_fits, ring_fits};
use crate::experiment::queueing::{check_horizon, check_run_size, check_swrr};
use crate::limits;
use crate::options::{Quantile, WarmupArg, parse_count};
use crate::output::Format;
use crate::output::dest::{check_out, check_run_outputs};
use crate::policy::registry::{self, NameError};
use crate::policy::{Info, PolicyKind};
use crate::scenario::{Assignment, SchemaError};

/// The most windows `run --series` records per replication (about 1 kB each on 100 servers in
/// the temporary files of the replication and its row; a shard's records carry them).
pub const SERIES_WINDOWS: f64 = 20_000.0;

/// The files `run` reads: the scenario file and the traces and empirical files of every sweep
/// point, each with what it is.
fn run_inputs(
    a: &cli::ScenarioArgs,
    source: &crate::scenario::Source,
    points: &[(crate::scenario::SweepPoint, crate::scenario::Spec)],
) -> Vec<(&'static str, PathBuf)> {
    let mut inputs: Vec<(&str, PathBuf)> = Vec::new();
    if a.file != Path::new("-") && a.text.is_none() {
        inputs.push(("the scenario file", a.file.clone()));
    }
    for (_, spec) in points {
        let files = [("the trace", spec.arrivals.file()), ("the demands", spec.service.file())];
        for (what, file) in files {
            inputs.extend(file.map(|f| (what, source.dir.join(f))));
        }
    }
    inputs
}

/// `lbsim run`: reads the file, applies `--set` and the command line, and resolves every sweep
/// point.
pub(crate) fn config(
    a: &cli::ScenarioArgs,
    common: &mut Common,
    seeds_given: bool,
    seed_given: bool,
) -> Result<Experiment, UsageError> {
    use crate::scenario::Source;
    let mut source = Source::given(&a.file, a.text.as_deref())?;
    check_set_keys(&a.set)?;
    for assignment in &a.set {
        source.set(assignment)?;
    }
    apply_overrides(a, &mut source)?;
    let points = source.points()?;
    let inputs = run_inputs(a, &source, &points);
    let inputs: Vec<(&str, &Path)> = inputs.iter().map(|(w, p)| (*w, p.as_path())).collect();
    check_run_outputs(common.out.as_deref(), a.series.as_deref(), &inputs)?;
    let keyed =
        |e: SchemaError| UsageError::from(ScenarioError::keyed(&source.file, None, &e.to_string()));
    let first = points[0].1.clone();
    if a.print {
        check_print_options(a, common, seeds_given, seed_given)?;
        let base = source.spec_of(&source.table).map_err(keyed)?;
        return Ok(Experiment::Print(base.to_toml()));
    }
    if !seeds_given {
        common.seeds = first.run.seeds.0;
    }
    if !seed_given {
        common.seed = first.run.seed.0;
    }
    if common.seeds < 2 && points.iter().any(|(_, spec)| spec.run.precision.is_some()) {
        let option = if a.run.precision.is_some() { "--precision" } else { "run.precision" };
        return Err(conflict(
            option,
            "needs --seeds 2 or more: the interval comes from the spread between replications",
        ));
    }
    // p50, p90, p99 and p99.9 are columns of every row already.
    let always = ["p50", "p90", "p99", "p99.9"];
    let quantiles = a.run.quantiles.as_ref().map_or_else(Vec::new, |q| q.beyond(&always));
    let mut resolved = Vec::new();
    for (keys, spec) in points {
        resolved.push(resolve_point(&source, keys, spec, &quantiles)?);
    }
    let baseline = match &a.run.baseline {
        None => None,
        Some(b) => {
            let labels: Vec<&str> = resolved[0].policies.iter().map(|p| p.label.as_str()).collect();
            if !labels.contains(&b.label()) {
                let e = format!("expected one of the scenario's policies ({})", labels.join(", "));
                return Err(bad("--baseline", &b.given, e));
            }
            Some(b.label().to_string())
        }
    };
    let scenarios: usize = resolved.iter().map(|p| p.policies.len()).sum();
    let servers = resolved.iter().map(|p| p.spec.rates().len()).max().unwrap_or(0);
    check_run_size(common.seeds, scenarios, common.threads, servers, "farm.groups")?;
    let scenario = source.spec_of(&source.table).map_err(keyed)?;
    let series = series_option(a, &mut resolved)?;
    Ok(Experiment::Run(RunScenario {
        series,
        file: source.file.clone(),
        name: first.name.clone(),
        sweep: resolved[0].keys.iter().map(|(k, _)| k.clone()).collect(),
        scenario: Box::new(scenario),
        points: resolved,
        baseline,
    }))
}

/// One point of a scenario's sweep, checked and made runnable.
pub(crate) fn resolve_point(
    source: &crate::scenario::Source,
    keys: crate::scenario::SweepPoint,
    spec: crate::scenario::Spec,
    quantiles: &[Quantile],
) -> Result<Point, UsageError> {
    let keyed = |e: KeyError| UsageError::from(ScenarioError::at_key(&source.file, None, e));
    let board = spec.info.kind() == Ok(crate::scenario::InfoKind::Board);
    let policies = scenario_policies("policies", &spec.policies, board).map_err(keyed)?;
    let servers = spec.rates().len();
    for p in &policies {
        if servers < p.kind.min_servers() {
            let e = UsageError::TooFewServers {
                policy: p.label.clone(),
                needs: p.kind.min_servers(),
                option: "farm.groups".into(),
                servers,
            };
            return Err(ScenarioError::File {
                file: source.file.clone(),
                line: None,
                message: e.to_string(),
            }
            .into());
        }
    }
    check_hash_policies(&policies, servers).map_err(keyed)?;
    if let Some(a) = &spec.admission {
        // A composite's per-key layers need the file's [keys], its per-client ones clients.
        let keys = source.table.contains_key("keys").then_some(&spec.keys);
        a.resolve().and_then(|a| a.with_scopes(keys, spec.info.clients)).map_err(keyed)?;
    }
    if spec.info.subset.is_some()
        && let Some(p) = policies.iter().find(|p| p.kind == PolicyKind::Aperture)
    {
        let e = format!("'{}' chooses its own servers (its ring slice); leave subset out", p.label);
        return Err(keyed(KeyError::new("info.subset", e)));
    }
    check_swrr(&policies.iter().map(|p| p.kind).collect::<Vec<_>>(), &spec.rates())?;
    let mut run = run_length_of(&spec);
    run.quantiles = quantiles.to_vec();
    let (arrivals, service) = spec.workload(&source.dir).map_err(keyed)?;
    // A trace ends the run: measure what it holds after the warm-up, and say so when that is
    // fewer requests than asked.
    let mut short_trace = None;
    if let Some(len) = arrivals.trace_len() {
        let len = len as u64;
        if len < run.warmup + 2 {
            return Err(ScenarioError::Key {
                file: source.file.clone(),
                line: None,
                key: "run.warmup".into(),
                message: format!(
                    "the trace holds {len} arrivals, not enough for a warm-up of {} and 2 measured",
                    run.warmup
                ),
            }
            .into());
        }
        let asked = run.requests;
        run.requests = run.requests.min(len - run.warmup);
        if run.requests < asked {
            short_trace = Some(format!(
                "the trace holds {len} arrivals: {} measured after the warm-up of {}, not the {asked} asked",
                run.requests, run.warmup
            ));
        }
    }
    let load = arrivals.load(spec.capacity());
    let classes = spec.classes(&source.dir).map_err(keyed)?.map(Box::new);
    let heavy_tail = service.infinite_variance()
        || classes.as_ref().is_some_and(|c| {
            c.classes.iter().filter_map(|c| c.service.as_ref()).any(|s| s.infinite_variance())
        });
    if !(limits::MIN_LOAD..spec.max_load()).contains(&load) {
        return Err(ScenarioError::Key {
            file: source.file.clone(),
            line: None,
            key: "arrivals".into(),
            message: format!(
                "the trace's rate is {load:.3} of the farm's capacity; {}",
                crate::scenario::load_expected(spec.max_load(), load)
            ),
        }
        .into());
    }
    let fastest = spec.rates().iter().copied().fold(0.0, f64::max);
    check_horizon(&run, arrivals.rate(), fastest)?;
    // Poisson with exponential service is the article's workload: its fast loop and its
    // streams, so that `--print-scenario` files give the commands' numbers.
    let mut workload = if arrivals.is_poisson() && service.is_exp() {
        crate::experiment::Workload::default()
    } else {
        let canonical = |v: &dyn erased::Canonical| v.canonical();
        let key = format!("{}|{}", canonical(&spec.arrivals), canonical(&spec.service));
        crate::experiment::Workload { arrivals: Some(arrivals), service, key, keys: None }
    };
    workload.keys = Some(spec.keys.clone());
    Ok(Point { keys, spec, policies, run, load, workload, heavy_tail, short_trace, classes })
}

/// The policies of a scenario file: `NAME` or `NAME:key=value,...` (`p2c-pewma:tau=5`).
fn scenario_policies(key: &str, list: &[String], board: bool) -> Result<Vec<PolicySpec>, KeyError> {
    let refused = |message: String| KeyError::new(key, message);
    let mut out: Vec<PolicySpec> = Vec::new();
    for label in list {
        // Names are trimmed wherever the command line or a file gives them.
        let label = label.trim();
        let (name, params) = label.split_once(':').unwrap_or((label, ""));
        let name = name.trim();
        let info = if board { Info::Board } else { Info::Live };
        let kind = registry::resolve(name, info).map_err(|e| match e {
            NameError::Unknown => refused(format!(
                "unknown policy '{name}'; valid policies: {}",
                registry::names(None)
            )),
            NameError::OutOfRange { family, min, max } => {
                refused(format!("'{name}': {family} takes {min} <= N <= {max}"))
            }
            NameError::NotAllowed => {
                let with =
                    if board { "a board (info.kind = \"board\")" } else { "live information" };
                refused(format!(
                    "'{name}' is not available with {with}; valid: {}",
                    registry::names(Some(info))
                ))
            }
        })?;
        let tuning = kind.tuning(params).map_err(|e| refused(format!("'{label}': {e}")))?;
        if out.iter().any(|p| p.label == label) {
            return Err(refused(format!("'{label}' is listed twice")));
        }
        out.push(PolicySpec { label: label.to_string(), kind, tuning });
    }
    Ok(out)
}

mod erased {
    /// A value's canonical text (its JSON), for keying random streams.
    pub trait Canonical {
        fn canonical(&self) -> String;
    }

    impl<T: serde::Serialize> Canonical for T {
        fn canonical(&self) -> String {
            serde_json::to_string(self).expect("specs serialise")
        }
    }
}

/// `lbsim run`'s command line over the file, after `--set`: `--policies`, `--admission`, and the
/// run options, each of which replaces its `[run]` key.
fn apply_overrides(
    a: &cli::ScenarioArgs,
    source: &mut crate::scenario::Source,
) -> Result<(), UsageError> {
    if let Some(list) = &a.policies {
        let value = toml::Value::Array(list.0.iter().cloned().map(toml::Value::String).collect());
        source.table.insert("policies".into(), value);
    }
    if let Some(spec) = &a.admission {
        let value = toml::Value::try_from(&**spec).expect("an admission spec serialises");
        source.table.insert("admission".into(), value);
    }
    let r = &a.run;
    let file_precision = source.table.get("run").and_then(|run| run.get("precision")).is_some();
    if r.max_requests.is_some() && r.precision.is_none() && !file_precision {
        return Err(conflict(
            "--max-requests",
            "only applies with --precision (or run.precision in the file)",
        ));
    }
    let mut values: Vec<(&str, String)> = Vec::new();
    if let Some(n) = r.requests {
        values.push(("requests", n.to_string()));
    }
    if let Some(w) = r.warmup {
        let w = match w {
            WarmupArg::Auto => "\"auto\"".to_string(),
            WarmupArg::Arrivals(n) => n.to_string(),
        };
        values.push(("warmup", w));
    }
    if let Some(n) = r.queue_guard {
        values.push(("queue_guard", n.to_string()));
    }
    if let Some(r) = r.precision {
        values.push(("precision", format!("{r:?}")));
    }
    if let Some(s) = &r.max_requests {
        let n = parse_count("--max-requests", s, 2, limits::ARRIVALS)?;
        values.push(("max_requests", n.to_string()));
    }
    for (key, value) in values {
        source.set(&Assignment::parse(&format!("run.{key}={value}"))?)?;
    }
    Ok(())
}

/// Refuses, with `run --print`, the options that would change nothing: the printed file is
/// TOML whatever the format, and it holds the seeds of its `[run]`.
fn check_print_options(
    a: &cli::ScenarioArgs,
    common: &Common,
    seeds_given: bool,
    seed_given: bool,
) -> Result<(), UsageError> {
    if common.format != Format::Table {
        let format = match common.format {
            Format::Csv => "csv",
            _ => "json",
        };
        return Err(conflict(
            &format!("--format {format}"),
            "does not apply to --print, which prints the scenario file as TOML: leave one out",
        ));
    }
    let unused = [
        ("--quantiles", a.run.quantiles.is_some()),
        ("--baseline", a.run.baseline.is_some()),
        ("--series", a.series.is_some()),
        ("--series-window", a.series_window.is_some()),
    ];
    if let Some((option, _)) = unused.into_iter().find(|&(_, given)| given) {
        return Err(conflict(
            option,
            "is not part of a scenario file, and --print runs nothing: leave it out",
        ));
    }
    let seeds = [("--seeds", "run.seeds", seeds_given), ("--seed", "run.seed", seed_given)];
    if let Some((option, key, _)) = seeds.into_iter().find(|&(_, _, given)| given) {
        return Err(conflict(
            option,
            format!(
                "does not change the file --print prints: set its key with --set {key}=..., or \
                 leave --print out"
            ),
        ));
    }
    Ok(())
}

/// Refuses two `--set` of one key: the second would silently replace the first.
pub(crate) fn check_set_keys(assignments: &[Assignment]) -> Result<(), UsageError> {
    for (i, a) in assignments.iter().enumerate() {
        if let Some(first) = assignments[..i].iter().find(|b| b.key == a.key) {
            return Err(conflict(
                "--set",
                format!(
                    "sets key '{}' twice ('{}' and '{}'): give it once",
                    shown(&a.key),
                    shown(first.given.trim()),
                    shown(a.given.trim())
                ),
            ));
        }
    }
    Ok(())
}

/// A scenario's `ring-hash` and `maglev` on its `servers`, under the rules `hash` applies.
fn check_hash_policies(policies: &[PolicySpec], servers: usize) -> Result<(), KeyError> {
    use crate::policy::{MaglevParams, RingHashParams};
    for p in policies {
        let fits = match p.kind {
            PolicyKind::Maglev => {
                let table = p.tuning.of::<MaglevParams>().table as usize;
                maglev_fits(servers, 0, table)
                    .map_err(|rule| format!("on {servers} servers (farm.groups): {rule}"))
            }
            PolicyKind::RingHash => {
                let vnodes = p.tuning.of::<RingHashParams>().vnodes;
                ring_fits(servers, u64::from(vnodes))
                    .map_err(|rule| format!("with vnodes {vnodes} {rule}"))
            }
            _ => Ok(()),
        };
        fits.map_err(|rule| KeyError::new("policies", format!("'{}' {rule}", p.label)))?;
    }
    Ok(())
}

/// `--series FILE` and `--series-window W`: the file, with every point's window set.
fn series_option(
    a: &cli::ScenarioArgs,
    resolved: &mut [Point],
) -> Result<Option<PathBuf>, UsageError> {
    match (&a.series, &a.series_window) {
        (None, Some(_)) => Err(UsageError::Other("--series-window needs --series FILE".into())),
        (None, None) => Ok(None),
        (Some(path), w) => {
            check_out("--series", path)?;
            let width = w.unwrap_or(10.0);
            for p in resolved {
                let horizon = (p.run.warmup + p.run.requests) as f64
                    / (p.load * p.spec.capacity()).max(f64::MIN_POSITIVE);
                if horizon / width > SERIES_WINDOWS {
                    let e = format!(
                        "expected at most {SERIES_WINDOWS} windows over the run (about {horizon:.0} \
                         time units)"
                    );
                    return Err(bad("--series-window", &width.to_string(), &e));
                }
                p.run.series = Some(width);
                p.run.series_groups = p.spec.farm.groups.iter().map(|g| g.count as u32).collect();
            }
            Ok(Some(path.clone()))
        }
    }
}

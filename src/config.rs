//! Validated, typed configuration, built once from the parsed command line.
//!
//! Every check lives here, so a bad value is refused before anything runs, with one line that
//! names the option and says what is accepted. Nothing below this module sees clap types.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::cli::{self, Cli, Command};
use crate::model::RunLength;
use crate::output::Format;
use crate::output::table::format_number;
use crate::policy::registry::{self, NameError};
use crate::policy::{Info, PolicyKind, SWRR_MAX_CYCLE, integer_weights};

pub use crate::error::UsageError;
use crate::error::{ScenarioError, shown};

fn bad(option: &str, value: &str, accepted: impl fmt::Display) -> UsageError {
    UsageError::InvalidValue {
        option: option.into(),
        value: value.into(),
        accepted: accepted.to_string(),
    }
}

/// A rule about `option` and the others given, stated after its name.
fn conflict(option: &str, rule: impl Into<String>) -> UsageError {
    UsageError::Conflict { option: option.into(), rule: rule.into() }
}

/// A size beyond a limit, stated after the option's name.
fn too_large(option: impl Into<String>, limit: impl Into<String>) -> UsageError {
    UsageError::TooLarge { option: option.into(), limit: limit.into() }
}

pub use crate::limits;

/// Parses a count: digits with optional `_` separators (each between two digits, as in
/// `1_000_000`), or an exact integer in `1e6` notation.
pub fn parse_count(option: &str, s: &str, min: u64, max: u64) -> Result<u64, UsageError> {
    let accepted = || format!("expected an integer from {min} to {max}");
    let b = s.trim().as_bytes();
    let between_digits = |i: usize| {
        i > 0 && i + 1 < b.len() && b[i - 1].is_ascii_digit() && b[i + 1].is_ascii_digit()
    };
    if (0..b.len()).any(|i| b[i] == b'_' && !between_digits(i)) {
        return Err(bad(option, s, accepted()));
    }
    let t = s.trim().replace('_', "");
    let v = if let Some((m, e)) = t.split_once(['e', 'E']) {
        // `1.5e6` is the integer 15 times 10^5: the exponent must cover the decimals.
        let (int, frac) = m.split_once('.').unwrap_or((m, ""));
        let digits = || int.bytes().chain(frac.bytes());
        if int.is_empty() || !digits().all(|b| b.is_ascii_digit()) {
            return Err(bad(option, s, accepted()));
        }
        let m: u64 = format!("{int}{frac}").parse().map_err(|_| bad(option, s, accepted()))?;
        let e: u32 = e.parse().map_err(|_| bad(option, s, accepted()))?;
        let e = e.checked_sub(frac.len() as u32).ok_or_else(|| bad(option, s, accepted()))?;
        10u64
            .checked_pow(e)
            .and_then(|p| m.checked_mul(p))
            .ok_or_else(|| bad(option, s, accepted()))?
    } else {
        t.parse::<u64>().map_err(|_| bad(option, s, accepted()))?
    };
    if v < min || v > max {
        return Err(bad(option, s, accepted()));
    }
    Ok(v)
}

/// The most windows `run --series` records per replication (memory: about 7 kB each).
pub const SERIES_WINDOWS: f64 = 20_000.0;

/// Parses a finite float and checks it with `ok`, whose description `accepted` ends the message.
pub fn parse_f64(
    option: &str,
    s: &str,
    ok: impl Fn(f64) -> bool,
    accepted: &str,
) -> Result<f64, UsageError> {
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && ok(v) => Ok(v),
        _ => Err(bad(option, s, accepted)),
    }
}

/// Splits a comma-separated list, refusing empty lists, empty items and duplicates.
pub fn parse_list<T: PartialEq>(
    option: &str,
    s: &str,
    item: impl Fn(&str) -> Result<T, UsageError>,
) -> Result<Vec<T>, UsageError> {
    if s.trim().is_empty() {
        return Err(UsageError::EmptyList { option: option.into(), what: "value".into() });
    }
    let mut out: Vec<T> = Vec::new();
    for part in s.split(',') {
        if part.trim().is_empty() {
            return Err(UsageError::EmptyItem {
                option: option.into(),
                what: "item".into(),
                list: s.into(),
            });
        }
        let v = item(part.trim())?;
        if out.contains(&v) {
            return Err(UsageError::Duplicate { option: option.into(), item: part.trim().into() });
        }
        out.push(v);
    }
    Ok(out)
}

fn load(option: &str, s: &str) -> Result<f64, UsageError> {
    parse_f64(
        option,
        s,
        |x| (limits::MIN_LOAD..1.0).contains(&x),
        "expected a utilisation with 0 < load < 1 (at least 1e-6)",
    )
}

fn rate(option: &str, s: &str) -> Result<f64, UsageError> {
    parse_f64(
        option,
        s,
        |x| (limits::MIN_RATE..=limits::RATE).contains(&x),
        "expected a rate from 1e-6 to 1e6",
    )
}

/// Refuses an `--out` (or `--plot`) that cannot name a file: empty, a directory, or in a missing directory.
fn check_out(option: &str, out: &Path) -> Result<(), UsageError> {
    let text = out.to_string_lossy();
    if text.is_empty() || text.ends_with('/') || out.is_dir() || out.file_name().is_none() {
        return Err(bad(option, &text, "expected a file name, not a directory"));
    }
    let dir = out.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    if !dir.is_dir() {
        let dir = shown(&dir.to_string_lossy());
        return Err(bad(option, &text, format!("directory '{dir}' does not exist")));
    }
    if let Some(target) = crate::output::dest::link_target(out) {
        let dir = target.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
        if !dir.is_dir() {
            let (target, dir) = (target.to_string_lossy(), dir.to_string_lossy());
            return Err(bad(
                option,
                &text,
                format!(
                    "a symbolic link to '{}', whose directory '{}' does not exist",
                    shown(&target),
                    shown(&dir)
                ),
            ));
        }
    }
    Ok(())
}

/// Refuses an output option that names one of the files the command reads (by device and
/// inode, so through links too): writing the output would replace its input. `outputs` pairs
/// each option with its file; `inputs` says what each input is.
pub fn check_inputs_kept(
    outputs: &[(&str, Option<&Path>)],
    inputs: &[(&str, &Path)],
) -> Result<(), UsageError> {
    for &(option, out) in outputs {
        let Some(out) = out.filter(|o| *o != Path::new("-")) else { continue };
        if let Some((what, input)) =
            inputs.iter().find(|(_, input)| crate::output::dest::same_file(out, input))
        {
            let input = shown(&input.to_string_lossy());
            return Err(conflict(
                option,
                format!(
                    "names {what} '{input}', which the output would replace: write it elsewhere"
                ),
            ));
        }
    }
    Ok(())
}

/// `run`'s outputs against its inputs (the scenario file, its traces and empirical files at
/// every sweep point) and against each other.
fn check_run_outputs(
    a: &cli::ScenarioArgs,
    out: Option<&Path>,
    source: &crate::scenario::Source,
    points: &[(crate::scenario::SweepPoint, crate::scenario::Spec)],
) -> Result<(), UsageError> {
    let mut inputs: Vec<(&str, PathBuf)> = Vec::new();
    if a.file != Path::new("-") {
        inputs.push(("the scenario file", a.file.clone()));
    }
    for (_, spec) in points {
        let files = [("the trace", spec.arrivals.file()), ("the demands", spec.service.file())];
        for (what, file) in files {
            inputs.extend(file.map(|f| (what, source.dir.join(f))));
        }
    }
    let inputs: Vec<(&str, &Path)> = inputs.iter().map(|(w, p)| (*w, p.as_path())).collect();
    check_inputs_kept(&[("--out", out), ("--series", a.series.as_deref())], &inputs)?;
    check_series_apart(a.series.as_deref(), out)
}

/// `--series` and `--out` may not name the same file (by device and inode, through links).
pub fn check_series_apart(series: Option<&Path>, out: Option<&Path>) -> Result<(), UsageError> {
    match (series, out) {
        (Some(series), Some(out)) if crate::output::dest::same_file(series, out) => {
            Err(conflict("--series", "and --out name the same file"))
        }
        _ => Ok(()),
    }
}

/// Number of levels `fixed` lists for `(lambda, d)`: the `i` with `s_i >= MIN_THEORY`, that is
/// `(1 + d + ... + d^(i-1)) * ln(lambda) >= ln(MIN_THEORY)`; saturates above [`limits::LEVELS`].
fn fixed_levels(lambda: f64, d: u32) -> u64 {
    let budget = crate::experiment::fixed::MIN_THEORY.ln() / lambda.ln();
    if d == 1 {
        return budget.min(u64::MAX as f64) as u64;
    }
    let (mut exponent, mut power, mut levels) = (0.0, 1.0, 0);
    loop {
        exponent += power;
        if exponent > budget || levels > limits::LEVELS {
            return levels;
        }
        levels += 1;
        power *= f64::from(d);
    }
}

/// Refuses runs whose clock would outgrow its precision: `run` arrivals at total rate `arrival_rate`
/// last about `arrivals / arrival_rate` time units, measured against the fastest service time.
fn check_horizon(run: &RunConfig, arrival_rate: f64, fastest: f64) -> Result<(), UsageError> {
    let arrivals = run.most_arrivals() as f64;
    let horizon = arrivals / arrival_rate * fastest;
    if horizon > limits::HORIZON {
        return Err(too_large(
            "--requests plus --warmup",
            format!(
                "({arrivals:.0e}) at this load and farm size simulate about {horizon:.1e} service times, beyond the clock's precision (at most {:.0e}): raise the load or the number of servers, or lower --requests",
                limits::HORIZON
            ),
        ));
    }
    Ok(())
}

/// Refuses `swrr` on farms whose cycle (sum of the integer weights) times servers is too long to
/// precompute.
fn check_swrr(policies: &[PolicyKind], rates: &[f64]) -> Result<(), UsageError> {
    if !policies.contains(&PolicyKind::Swrr) {
        return Ok(());
    }
    let cycle: u64 = integer_weights(rates).iter().sum();
    if cycle > SWRR_MAX_CYCLE {
        return Err(too_large(
            "--policies",
            format!(
                "swrr: the rates give integer weights whose cycle ({cycle}) exceeds {SWRR_MAX_CYCLE}; use rates with fewer decimals"
            ),
        ));
    }
    let work = cycle.saturating_mul(rates.len() as u64);
    if work > limits::SWRR_SETUP {
        return Err(too_large(
            "--policies",
            format!(
                "swrr: a cycle of {cycle} picks over {} servers is {work} steps to set up; at most {} are accepted: use fewer servers",
                rates.len(),
                limits::SWRR_SETUP
            ),
        ));
    }
    Ok(())
}

/// The cores this process may use (1 if unknown).
fn available_cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Refuses runs whose replications in flight would hold more than [`limits::MEMORY`].
fn check_memory(
    threads: Option<usize>,
    replications: u64,
    per_replication: u64,
    what: &str,
) -> Result<(), UsageError> {
    let workers = threads.unwrap_or_else(available_cores) as u64;
    let at_once = workers.min(replications).max(1);
    if at_once.saturating_mul(per_replication) > limits::MEMORY {
        return Err(too_large(
            what,
            format!(
                "needs about {} MiB per replication, and {at_once} would run at once (--threads); \
                 at most {} MiB are accepted: use fewer --threads or a smaller farm",
                per_replication >> 20,
                limits::MEMORY >> 20
            ),
        ));
    }
    Ok(())
}

/// Refuses a `limit` run whose pattern makes too many arrivals, counted from the pattern's
/// parameters (nothing is built): more than [`limits::LIMIT_ARRIVALS`] in all, or more than one
/// replication's arrivals fit in [`limits::MEMORY`] (a replication holds its arrival times, its
/// decisions and its release times, about [`limits::BYTES_PER_LIMIT_ARRIVAL`] bytes each).
fn check_limit_size(
    cfg: &crate::experiment::limit::LimitConfig,
    seeds: u64,
) -> Result<(), UsageError> {
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

/// Options shared by every command.
#[derive(Debug, Clone, Serialize)]
pub struct Common {
    /// Replications per scenario.
    pub seeds: u64,
    /// Base seed.
    pub seed: u64,
    /// Output format.
    #[serde(skip)]
    pub format: Format,
    /// Worker threads (`None`: all cores).
    #[serde(skip)]
    pub threads: Option<usize>,
    /// Output file (`None`: stdout).
    #[serde(skip)]
    pub out: Option<PathBuf>,
    /// SVG figure file (`fixed` and `stale` only; `-`: stdout).
    #[serde(skip)]
    pub plot: Option<PathBuf>,
}

/// Run length, guard and reading of results for the queueing commands.
#[derive(Debug, Clone, Serialize)]
pub struct RunConfig {
    /// Arrivals simulated before measuring (0 with `warmup_auto`).
    pub warmup: u64,
    /// Measured arrivals.
    pub requests: u64,
    /// Queue length at which a replication is stopped.
    pub queue_guard: u32,
    /// `--warmup auto`: each replication's warm-up is where MSER-5 puts the end of its transient.
    pub warmup_auto: bool,
    /// `--precision R`: double a row's requests until `mean_ci95 <= R * mean` and it is steady.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub precision: Option<f64>,
    /// With `precision`: the most measured arrivals per replication.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_requests: Option<u64>,
    /// Extra sojourn quantiles (fractions, e.g. 0.999), in the order asked.
    pub quantiles: Vec<Quantile>,
    /// `run --series`: record per-window series with windows of this width.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub series: Option<f64>,
}

/// A sojourn quantile asked for with `--quantiles`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Quantile {
    /// Its column name (`p50`, `p99.9`).
    pub column: String,
    /// The fraction (0.5, 0.999).
    pub q: f64,
}

impl RunConfig {
    /// A fixed warm-up and run length, with nothing else asked for.
    pub fn new(warmup: u64, requests: u64, queue_guard: u32) -> RunConfig {
        RunConfig {
            warmup,
            requests,
            queue_guard,
            warmup_auto: false,
            precision: None,
            max_requests: None,
            quantiles: Vec::new(),
            series: None,
        }
    }

    /// As a [`RunLength`].
    pub fn length(&self) -> RunLength {
        RunLength { warmup: self.warmup, requests: self.requests }
    }

    /// The most arrivals one replication may simulate: the largest measured count `--precision`
    /// may reach, plus the warm-up (`auto` may ask for up to the whole first pass).
    pub fn most_arrivals(&self) -> u64 {
        let requests = self.max_requests.unwrap_or(self.requests);
        let warmup = if self.warmup_auto { requests } else { self.warmup };
        requests.saturating_add(warmup)
    }
}

/// `bins` variant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Variant {
    /// d independent uniform choices.
    Uniform,
    /// Vöcking's always-go-left.
    Left,
}

/// `lbsim bins`.
#[derive(Debug, Clone, Serialize)]
pub struct BinsConfig {
    /// Balls = bins.
    pub n: Vec<u64>,
    /// Choices.
    pub d: Vec<u32>,
    /// Variants.
    pub variants: Vec<Variant>,
}

/// `lbsim fixed`.
#[derive(Debug, Clone, Serialize)]
pub struct FixedConfig {
    /// Servers.
    pub n: usize,
    /// Utilisations.
    pub lambda: Vec<f64>,
    /// Choices.
    pub d: Vec<u32>,
    /// Run length.
    pub run: RunConfig,
}

/// `lbsim homo`.
#[derive(Debug, Clone, Serialize)]
pub struct HomoConfig {
    /// Servers.
    pub servers: usize,
    /// Utilisations.
    pub loads: Vec<f64>,
    /// Policies.
    #[serde(serialize_with = "policy_names")]
    pub policies: Vec<PolicyKind>,
    /// Peak-EWMA decay constant.
    pub tau: f64,
    /// The policy the others are compared with (`--baseline`).
    #[serde(serialize_with = "policy_name")]
    pub baseline: Option<PolicyKind>,
    /// Run length.
    pub run: RunConfig,
}

/// `lbsim hetero`.
#[derive(Debug, Clone, Serialize)]
pub struct HeteroConfig {
    /// Slow servers.
    pub slow: usize,
    /// Rate of a slow server.
    pub slow_rate: f64,
    /// Fast servers.
    pub fast: usize,
    /// Rate of a fast server.
    pub fast_rate: f64,
    /// Utilisation of total capacity.
    pub load: f64,
    /// Policies.
    #[serde(serialize_with = "policy_names")]
    pub policies: Vec<PolicyKind>,
    /// Peak-EWMA decay constant.
    pub tau: f64,
    /// The policy the others are compared with (`--baseline`).
    #[serde(serialize_with = "policy_name")]
    pub baseline: Option<PolicyKind>,
    /// Run length.
    pub run: RunConfig,
}

impl HeteroConfig {
    /// Rates, slow servers first.
    pub fn rates(&self) -> Vec<f64> {
        let mut r = vec![self.slow_rate; self.slow];
        r.resize(self.slow + self.fast, self.fast_rate);
        r
    }
}

/// `lbsim stale`.
#[derive(Debug, Clone, Serialize)]
pub struct StaleConfig {
    /// Servers.
    pub servers: usize,
    /// Utilisation.
    pub load: f64,
    /// Board periods (0 = live).
    pub periods: Vec<f64>,
    /// Policies.
    #[serde(serialize_with = "policy_names")]
    pub policies: Vec<PolicyKind>,
    /// The policy the others are compared with (`--baseline`).
    #[serde(serialize_with = "policy_name")]
    pub baseline: Option<PolicyKind>,
    /// Run length.
    pub run: RunConfig,
}

/// `lbsim swrr`.
#[derive(Debug, Clone, Serialize)]
pub struct SwrrConfig {
    /// Weights to trace, if `--trace` was given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace: Option<Vec<u64>>,
    /// Weight sets to compare (none with `--trace`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sets: Vec<Vec<u64>>,
}

/// A placement compared by `hash`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum HashMethod {
    /// The hash ring with virtual nodes.
    Ring,
    /// Maglev's lookup table.
    Maglev,
    /// `hash % n`.
    Modulo,
}

/// `lbsim hash`.
#[derive(Debug, Clone, Serialize)]
pub struct HashConfig {
    /// Servers before one is added.
    pub servers: usize,
    /// Keys placed (the integers `0..keys`).
    pub keys: u64,
    /// Points per server on the ring.
    pub vnodes: Vec<usize>,
    /// Placements compared.
    pub methods: Vec<HashMethod>,
    /// Bounded-load factor of the `ring-bounded` rows (`None`: no such rows).
    pub balance: Option<f64>,
}

fn policy_name<S: serde::Serializer>(p: &Option<PolicyKind>, s: S) -> Result<S::Ok, S::Error> {
    match p {
        Some(k) => s.serialize_str(&k.name()),
        None => s.serialize_none(),
    }
}

fn policy_names<S: serde::Serializer>(p: &[PolicyKind], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(p.iter().map(|k| k.name()))
}

/// The experiment to run, with its validated parameters.
#[derive(Debug, Clone)]
pub enum Experiment {
    /// `bins`
    Bins(BinsConfig),
    /// `fixed`
    Fixed(FixedConfig),
    /// `homo`
    Homo(HomoConfig),
    /// `hetero`
    Hetero(HeteroConfig),
    /// `stale`
    Stale(StaleConfig),
    /// `swrr`
    Swrr(SwrrConfig),
    /// `hash`
    Hash(HashConfig),
    /// `run FILE.toml`
    Run(crate::experiment::run::RunScenario),
    /// `subset`
    Subset(crate::experiment::subset::SubsetConfig),
    /// `limit`
    Limit(crate::experiment::limit::LimitConfig),
    /// A scenario file to print (`run --print`, `--print-scenario`): the output is this text.
    Print(String),
}

/// Everything a run needs.
#[derive(Debug, Clone)]
pub struct Config {
    /// Shared options.
    pub common: Common,
    /// The experiment.
    pub experiment: Experiment,
    /// Lines for stderr about options that were adjusted (e.g. too many `--threads`).
    pub warnings: Vec<String>,
}

pub use crate::limits::DEFAULT_MAX_REQUESTS;

fn run_config(
    a: &cli::RunArgs,
    requests: u64,
    warmup: u64,
    seeds: u64,
) -> Result<RunConfig, UsageError> {
    let requests = match &a.requests {
        Some(s) => parse_count("--requests", s, 2, limits::ARRIVALS)?,
        None => requests,
    };
    let (warmup, warmup_auto) = match a.warmup.as_deref().map(str::trim) {
        Some("auto") => (0, true),
        Some(s) => (parse_count("--warmup", s, 0, limits::ARRIVALS)?, false),
        None => (warmup, false),
    };
    let precision = a.precision.as_deref().map(parse_precision).transpose()?;
    if precision.is_some() && seeds < 2 {
        return Err(conflict(
            "--precision",
            "needs --seeds 2 or more: the interval comes from the spread between replications",
        ));
    }
    let max_requests = match (&a.max_requests, precision) {
        (Some(_), None) => {
            return Err(conflict("--max-requests", "only applies with --precision"));
        }
        (Some(s), Some(_)) => {
            Some(parse_count("--max-requests", s, requests, limits::ARRIVALS).map_err(|_| {
                bad(
                    "--max-requests",
                    s,
                    format!(
                        "expected an integer from --requests ({requests}) to {}",
                        limits::ARRIVALS
                    ),
                )
            })?)
        }
        (None, Some(_)) => Some(DEFAULT_MAX_REQUESTS.max(requests)),
        (None, None) => None,
    };
    let quantiles = match &a.quantiles {
        None => Vec::new(),
        Some(s) => parse_quantiles(s, &["p99"])?,
    };
    if requests + warmup > limits::ARRIVALS {
        return Err(too_large(
            "--requests plus --warmup",
            format!(
                "is {}; at most {} arrivals per replication are accepted",
                requests + warmup,
                limits::ARRIVALS
            ),
        ));
    }
    let queue_guard = parse_count("--queue-guard", &a.queue_guard, 1, limits::QUEUE_GUARD)? as u32;
    Ok(RunConfig {
        warmup,
        requests,
        queue_guard,
        warmup_auto,
        precision,
        max_requests,
        quantiles,
        series: None,
    })
}

/// `--precision R`: a relative half-width.
fn parse_precision(s: &str) -> Result<f64, UsageError> {
    parse_f64(
        "--precision",
        s,
        |x| (1e-6..=0.5).contains(&x),
        "expected a relative half-width R with 1e-6 <= R <= 0.5 (0.01 = +-1%)",
    )
}

/// `--quantiles LIST`: percentiles as columns, less those the command always prints (`always`).
fn parse_quantiles(s: &str, always: &[&str]) -> Result<Vec<Quantile>, UsageError> {
    Ok(parse_list("--quantiles", s, |p| {
        let pct = parse_f64(
            "--quantiles",
            p,
            |x| x > 0.0 && x < 100.0,
            "expected percentiles above 0 and below 100, e.g. 50,90,99.9",
        )?;
        Ok(Quantile { column: format!("p{pct}"), q: pct / 100.0 })
    })?
    .into_iter()
    .filter(|q| !always.contains(&q.column.as_str()))
    .collect())
}

fn policies(option: &str, s: &str, info: Info) -> Result<Vec<PolicyKind>, UsageError> {
    parse_list(option, s, |p| {
        registry::resolve(p, info).map_err(|e| {
            let why = match e {
                NameError::Unknown => {
                    format!("unknown policy; valid policies: {}", registry::names(None))
                }
                NameError::OutOfRange { family, min, max } => {
                    format!("{family} takes {min} <= N <= {max}")
                }
                NameError::NotAllowed => format!(
                    "not available in this command; valid here: {}",
                    registry::names(Some(info))
                ),
            };
            bad(option, p, why)
        })
    })
}

/// The policies of a scenario file: `NAME` or `NAME:key=value,...` (`p2c-pewma:tau=5`).
fn scenario_policies(
    key: &str,
    list: &[String],
    board: bool,
) -> Result<Vec<crate::experiment::run::PolicySpec>, String> {
    use crate::experiment::run::PolicySpec;
    let mut out: Vec<PolicySpec> = Vec::new();
    for label in list {
        // Names are trimmed wherever the command line or a file gives them.
        let label = label.trim();
        let (name, params) = label.split_once(':').unwrap_or((label, ""));
        let name = name.trim();
        let info = if board { Info::Board } else { Info::Live };
        let kind = registry::resolve(name, info).map_err(|e| match e {
            NameError::Unknown => {
                format!("{key}: unknown policy '{name}'; valid policies: {}", registry::names(None))
            }
            NameError::OutOfRange { family, min, max } => {
                format!("{key}: '{name}': {family} takes {min} <= N <= {max}")
            }
            NameError::NotAllowed => {
                let with =
                    if board { "a board (info.kind = \"board\")" } else { "live information" };
                format!(
                    "{key}: '{name}' is not available with {with}; valid: {}",
                    registry::names(Some(info))
                )
            }
        })?;
        let tuning = kind.tuning(params).map_err(|e| format!("{key}: '{label}': {e}"))?;
        if out.iter().any(|p| p.label == label) {
            return Err(format!("{key}: '{label}' is listed twice"));
        }
        out.push(PolicySpec { label: label.to_string(), kind, tuning });
    }
    Ok(out)
}

/// Splits `--policies` for `run`: commas separate policies, except inside a policy's parameters
/// (`a:x=1,y=2,b` is `a:x=1,y=2` and `b`).
fn split_policies(s: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for part in s.split(',') {
        match out.last_mut() {
            Some(last) if last.contains(':') && part.contains('=') && !part.contains(':') => {
                last.push(',');
                last.push_str(part);
            }
            _ => out.push(part.trim().to_string()),
        }
    }
    out
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
        let parts = split_policies(list);
        if parts.iter().any(String::is_empty) {
            return Err(UsageError::EmptyItem {
                option: "--policies".into(),
                what: "item".into(),
                list: list.clone(),
            });
        }
        let value = toml::Value::Array(parts.into_iter().map(toml::Value::String).collect());
        source.table.insert("policies".into(), value);
    }
    if let Some(text) = &a.admission {
        let spec = crate::admission::AdmissionSpec::parse(text)
            .and_then(|spec| spec.resolve().map(|_| spec))
            .map_err(|e| bad("--admission", text, e))?;
        let value = toml::Value::try_from(&spec).expect("an admission spec serialises");
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
    if let Some(s) = &r.requests {
        values.push(("requests", parse_count("--requests", s, 2, limits::ARRIVALS)?.to_string()));
    }
    if let Some(s) = &r.warmup {
        let w = match s.trim() {
            "auto" => "\"auto\"".to_string(),
            s => parse_count("--warmup", s, 0, limits::ARRIVALS)?.to_string(),
        };
        values.push(("warmup", w));
    }
    if let Some(s) = &r.queue_guard {
        let n = parse_count("--queue-guard", s, 1, limits::QUEUE_GUARD)?;
        values.push(("queue_guard", n.to_string()));
    }
    if let Some(s) = &r.precision {
        values.push(("precision", format!("{:?}", parse_precision(s)?)));
    }
    if let Some(s) = &r.max_requests {
        let n = parse_count("--max-requests", s, 2, limits::ARRIVALS)?;
        values.push(("max_requests", n.to_string()));
    }
    for (key, value) in values {
        source.set(&format!("run.{key}={value}"))?;
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
fn check_set_keys(assignments: &[String]) -> Result<(), UsageError> {
    let key = |a: &str| a.split_once('=').map(|(k, _)| k.trim().to_string());
    for (i, a) in assignments.iter().enumerate() {
        let Some(k) = key(a) else { continue };
        if let Some(first) = assignments[..i].iter().find(|b| key(b).as_ref() == Some(&k)) {
            return Err(conflict(
                "--set",
                format!(
                    "sets key '{}' twice ('{}' and '{}'): give it once",
                    shown(&k),
                    shown(first.trim()),
                    shown(a.trim())
                ),
            ));
        }
    }
    Ok(())
}

/// `lbsim run`: reads the file, applies `--set` and the command line, and resolves every sweep
/// point.
fn run_scenario(
    a: &cli::ScenarioArgs,
    common: &mut Common,
    seeds_given: bool,
    seed_given: bool,
) -> Result<Experiment, UsageError> {
    use crate::experiment::run::RunScenario;
    use crate::scenario::Source;
    let mut source = Source::read(&a.file)?;
    check_set_keys(&a.set)?;
    for assignment in &a.set {
        source.set(assignment)?;
    }
    apply_overrides(a, &mut source)?;
    let points = source.points()?;
    check_run_outputs(a, common.out.as_deref(), &source, &points)?;
    let keyed = |e: String| UsageError::from(ScenarioError::keyed(&source.file, None, &e));
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
    let quantiles = match &a.run.quantiles {
        Some(s) => parse_quantiles(s, &["p50", "p90", "p99", "p99.9"])?,
        None => Vec::new(),
    };
    let mut resolved = Vec::new();
    for (keys, spec) in points {
        resolved.push(resolve_point(&source, keys, spec, &quantiles)?);
    }
    let baseline = match &a.run.baseline {
        None => None,
        Some(b) => {
            let labels: Vec<&str> = resolved[0].policies.iter().map(|p| p.label.as_str()).collect();
            if !labels.contains(&b.trim()) {
                let e = format!("expected one of the scenario's policies ({})", labels.join(", "));
                return Err(bad("--baseline", b, e));
            }
            Some(b.trim().to_string())
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
fn resolve_point(
    source: &crate::scenario::Source,
    keys: crate::scenario::SweepPoint,
    spec: crate::scenario::Spec,
    quantiles: &[Quantile],
) -> Result<crate::experiment::run::Point, UsageError> {
    use crate::experiment::run::{Point, run_config};
    let keyed = |e: String| UsageError::from(ScenarioError::keyed(&source.file, None, &e));
    let board = spec.info.kind() == "board";
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
    if spec.info.subset.is_some()
        && let Some(p) = policies.iter().find(|p| p.kind == PolicyKind::Aperture)
    {
        let e = format!(
            "info.subset: '{}' chooses its own servers (its ring slice); leave subset out",
            p.label
        );
        return Err(keyed(e));
    }
    check_swrr(&policies.iter().map(|p| p.kind).collect::<Vec<_>>(), &spec.rates())?;
    let mut run = run_config(&spec);
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
    let heavy_tail = service.infinite_variance();
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
    Ok(Point { keys, spec, policies, run, load, workload, heavy_tail, short_trace })
}

/// A scenario's `ring-hash` and `maglev` on its `servers`, under the rules `hash` applies.
fn check_hash_policies(
    policies: &[crate::experiment::run::PolicySpec],
    servers: usize,
) -> Result<(), String> {
    use crate::policy::{MaglevParams, RingHashParams};
    for p in policies {
        let (ring, maglev) = (p.tuning.get::<RingHashParams>(), p.tuning.get::<MaglevParams>());
        let (vnodes, table) = (ring.vnodes, maglev.table as usize);
        let fits = match p.kind {
            PolicyKind::Maglev => maglev_fits(servers, 0, table)
                .map_err(|rule| format!("on {servers} servers (farm.groups): {rule}")),
            PolicyKind::RingHash => ring_fits(servers, u64::from(vnodes))
                .map_err(|rule| format!("with vnodes {vnodes} {rule}")),
            _ => Ok(()),
        };
        fits.map_err(|rule| format!("policies: '{}' {rule}", p.label))?;
    }
    Ok(())
}

/// `--series FILE` and `--series-window W`: the file, with every point's window set.
fn series_option(
    a: &cli::ScenarioArgs,
    resolved: &mut [crate::experiment::run::Point],
) -> Result<Option<PathBuf>, UsageError> {
    match (&a.series, &a.series_window) {
        (None, Some(_)) => Err(UsageError::Other("--series-window needs --series FILE".into())),
        (None, None) => Ok(None),
        (Some(path), w) => {
            check_out("--series", path)?;
            let width = match w {
                Some(w) => parse_f64("--series-window", w, |x| x > 0.0, "expected a width > 0")?,
                None => 10.0,
            };
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
            }
            Ok(Some(path.clone()))
        }
    }
}

/// `--print-scenario`: the scenario file that `lbsim run` turns into this command's numbers.
/// `groups` are the farm's; a board `period` (0 = live) makes the information a board; `sweep` is
/// a key and its values, written when there is more than one.
#[allow(clippy::too_many_arguments)]
fn print_scenario(
    name: &str,
    groups: Vec<crate::scenario::Group>,
    policies: &[PolicyKind],
    tau: f64,
    run: &RunConfig,
    common: &Common,
    (load, period): (f64, Option<f64>),
    sweep: Option<(&str, &[f64])>,
) -> Result<Experiment, UsageError> {
    use crate::scenario::{Count, Spec, Warmup};
    if !run.quantiles.is_empty() {
        return Err(conflict(
            "--print-scenario",
            "writes the workload and run length; --quantiles is not part of a scenario file (give it to `lbsim run`)",
        ));
    }
    let mut spec = Spec { name: name.into(), ..Spec::default() };
    spec.policies = policies
        .iter()
        .map(|p| match p {
            p if p.entry().params.contains(&"tau")
                && tau != crate::experiment::run::DEFAULT_TAU =>
            {
                format!("{}:tau={tau}", p.name())
            }
            p => p.name(),
        })
        .collect();
    spec.farm.groups = groups;
    spec.arrivals = crate::workload::ArrivalSpec::Poisson { load: Some(load), rate: None };
    if let Some(period) = period {
        spec.info.kind = Some("board".into());
        spec.info.period = Some(period);
    }
    if let Some((key, values)) = sweep.filter(|(_, v)| v.len() > 1) {
        let list = values.iter().map(|&v| toml::Value::Float(v)).collect();
        spec.sweep.insert(key.into(), toml::Value::Array(list));
    }
    spec.run.requests = Count(run.requests);
    spec.run.warmup = if run.warmup_auto {
        Warmup::Auto("auto".into())
    } else {
        Warmup::Arrivals(Count(run.warmup))
    };
    spec.run.seeds = Count(common.seeds);
    spec.run.seed = Count(common.seed);
    spec.run.queue_guard = Count(u64::from(run.queue_guard));
    spec.run.precision = run.precision;
    spec.run.max_requests = run.precision.and(run.max_requests).map(Count);
    Ok(Experiment::Print(spec.to_toml()))
}

/// One group of `count` servers of rate `rate`, or none when `count` is 0.
fn group(name: &str, count: usize, rate: f64) -> Option<crate::scenario::Group> {
    (count > 0).then(|| crate::scenario::Group { name: name.into(), count: count as u64, rate })
}

/// `--baseline`: one of the command's policies.
fn baseline(
    a: &cli::BaselineArgs,
    policies: &[PolicyKind],
) -> Result<Option<PolicyKind>, UsageError> {
    let Some(s) = &a.baseline else { return Ok(None) };
    match PolicyKind::parse(s.trim()).filter(|p| policies.contains(p)) {
        Some(p) => Ok(Some(p)),
        None => Err(bad(
            "--baseline",
            s,
            format!(
                "expected one of --policies ({})",
                policies.iter().map(|p| p.name()).collect::<Vec<_>>().join(", ")
            ),
        )),
    }
}

fn check_farm_size(
    policies: &[PolicyKind],
    servers: usize,
    option: &str,
) -> Result<(), UsageError> {
    for &p in policies {
        if servers < p.min_servers() {
            return Err(UsageError::TooFewServers {
                policy: p.name(),
                needs: p.min_servers(),
                option: option.into(),
                servers,
            });
        }
    }
    Ok(())
}

fn check_replications(seeds: u64, scenarios: usize) -> Result<(), UsageError> {
    let total = seeds.saturating_mul(scenarios as u64);
    if total > limits::REPLICATIONS {
        return Err(too_large(
            format!("--seeds {seeds}"),
            format!(
                "over {scenarios} scenarios is {total} replications; at most {} are accepted \
                 (all shards together)",
                limits::REPLICATIONS
            ),
        ));
    }
    Ok(())
}

/// The size checks of a queueing command: at most [`limits::REPLICATIONS`] replications in all,
/// and the replications in flight (each holding `servers` servers) within [`limits::MEMORY`].
fn check_run_size(
    seeds: u64,
    scenarios: usize,
    threads: Option<usize>,
    servers: usize,
    what: &str,
) -> Result<(), UsageError> {
    check_replications(seeds, scenarios)?;
    check_memory(threads, seeds * scenarios as u64, servers as u64 * limits::BYTES_PER_SERVER, what)
}

fn weights(option: &str, s: &str, max_work: u64) -> Result<Vec<u64>, UsageError> {
    let w: Vec<u64> = s
        .split(',')
        .map(|x| parse_count(option, x, 1, limits::RATE as u64))
        .collect::<Result<_, _>>()
        .map_err(|_| {
            bad(option, s, "expected comma-separated integer weights from 1 to 1000000")
        })?;
    let work = w.iter().sum::<u64>().saturating_mul(w.len() as u64);
    if work > max_work {
        return Err(bad(
            option,
            s,
            format!("a cycle (sum of weights) times servers must be at most {max_work}"),
        ));
    }
    Ok(w)
}

impl Config {
    /// Validates the parsed command line.
    pub fn from_cli(cli: &Cli) -> Result<Config, UsageError> {
        let g = &cli.global;
        let (mut common, warnings) = common_config(cli)?;
        let (seeds, threads) = (common.seeds, common.threads);
        let experiment = match &cli.command {
            Command::Run(a) => run_scenario(a, &mut common, g.seeds.is_some(), g.seed.is_some())?,
            Command::Subset(a) => Experiment::Subset(crate::experiment::subset::config(a, seeds)?),
            Command::Limit(a) => limit_config(a, &common)?,
            Command::Bins(a) => bins_config(a, &common)?,
            Command::Fixed(a) => fixed_config(a, &common)?,
            Command::Homo(a) => homo_config(a, &common)?,
            Command::Hetero(a) => hetero_config(a, &common)?,
            Command::Stale(a) => stale_config(a, &common)?,
            Command::Swrr(a) => swrr_config(a)?,
            Command::Hash(a) => Experiment::Hash(hash_config(a, seeds, threads)?),
            Command::Merge(_) => {
                return Err(UsageError::Other(
                    "merge is read by lbsim::shard::Job, not by Config::from_cli".into(),
                ));
            }
        };
        Ok(Config { common, experiment, warnings })
    }
}

/// The options every command shares (`--seeds`, `--seed`, `--threads`, `--out`, `--plot`), with
/// the warnings they give.
fn common_config(cli: &Cli) -> Result<(Common, Vec<String>), UsageError> {
    let g = &cli.global;
    if let Command::Swrr(_) = cli.command {
        // `swrr` is exact arithmetic: no replications, no randomness, no workers.
        let unused = [("--seeds", g.seeds.is_some()), ("--seed", g.seed.is_some())];
        let unused = unused.into_iter().chain([("--threads", g.threads.is_some())]);
        if let Some((option, _)) = unused.into_iter().find(|&(_, given)| given) {
            return Err(conflict(
                option,
                "is not used by swrr, which runs no replications and draws no random numbers",
            ));
        }
    }
    let default_seeds = match cli.command {
        Command::Fixed(_) => 3,
        Command::Subset(_) => crate::experiment::subset::DEFAULT_SEEDS,
        _ => 5,
    };
    let seeds = match &g.seeds {
        Some(s) => parse_count("--seeds", s, 1, limits::REPLICATIONS)?,
        None => default_seeds,
    };
    let seed = match &g.seed {
        Some(s) => parse_count("--seed", s, 0, u64::MAX)?,
        None => 1,
    };
    let mut warnings = Vec::new();
    let threads = match &g.threads {
        Some(s) => {
            let asked = parse_count("--threads", s, 1, limits::THREADS)? as usize;
            let most = limits::THREADS_PER_CORE * available_cores();
            if asked > most {
                warnings.push(format!(
                    "warning: --threads {asked} lowered to {most} ({} per core available; more only add overhead)",
                    limits::THREADS_PER_CORE
                ));
            }
            Some(asked.min(most))
        }
        None => None,
    };
    // `-o -` is stdout, as without `-o`.
    let out = g.out.clone().filter(|out| out != Path::new("-"));
    if let Some(out) = &out {
        check_out("--out", out)?;
    }
    let plot = match &cli.command {
        Command::Fixed(a) => a.plot.clone(),
        Command::Stale(a) => a.plot.clone(),
        _ => None,
    };
    if let Some(plot) = &plot {
        if plot == Path::new("-") {
            if out.is_none() {
                return Err(conflict(
                    "--plot -",
                    "sends the figure to stdout, where the table goes too: send the table to a file with -o FILE",
                ));
            }
        } else {
            check_out("--plot", plot)?;
        }
        let same = out.as_deref().is_some_and(|out| {
            out == plot || crate::output::dest::identity(out) == crate::output::dest::identity(plot)
        });
        if same {
            return Err(conflict("--plot", "and --out name the same file"));
        }
    }
    let common = Common { seeds, seed, format: g.format, threads, out, plot };
    Ok((common, warnings))
}

/// A server count from `min` to [`limits::SERVERS`].
fn server_count(option: &str, s: &str, min: u64) -> Result<usize, UsageError> {
    Ok(parse_count(option, s, min, limits::SERVERS)? as usize)
}

/// Validates `lbsim limit`: a limiter, its pattern, duration and capacity (or the claims).
fn limit_config(a: &cli::LimitArgs, common: &Common) -> Result<Experiment, UsageError> {
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
    let cfg = crate::experiment::limit::LimitConfig::new(
        a.limiter.as_deref(),
        pattern,
        duration,
        capacity,
    )
    .map_err(UsageError::Other)?;
    if let crate::experiment::limit::Pattern::Trace { file, .. } = &cfg.arrivals {
        let trace = [("the trace", Path::new(file))];
        check_inputs_kept(&[("--out", common.out.as_deref())], &trace)?;
    }
    check_limit_size(&cfg, common.seeds)?;
    Ok(Experiment::Limit(cfg))
}

/// Validates `lbsim bins`: the bin counts, choices and variants.
fn bins_config(a: &cli::BinsArgs, common: &Common) -> Result<Experiment, UsageError> {
    let (seeds, threads) = (common.seeds, common.threads);
    let n = parse_list("--n", &a.n, |s| parse_count("--n", s, 1, limits::BINS))?;
    let d = parse_list("--d", &a.d, |s| Ok(parse_count("--d", s, 1, 64)? as u32))?;
    let variants = parse_list("--variants", &a.variants, |s| match s {
        "uniform" => Ok(Variant::Uniform),
        "left" => Ok(Variant::Left),
        _ => Err(bad("--variants", s, "expected uniform or left")),
    })?;
    if !variants.contains(&Variant::Uniform) && d.iter().all(|&dd| dd < 2) {
        return Err(conflict(
            "--variants left",
            "runs only for --d 2 or more, and --d gives only 1: nothing to run",
        ));
    }
    if let Some(&dd) = d.iter().find(|&&dd| u64::from(dd) > *n.iter().min().unwrap()) {
        return Err(conflict(
            "--d",
            format!("{dd} is larger than the smallest --n; each ball needs d <= n bins"),
        ));
    }
    check_replications(seeds, n.len() * d.len() * variants.len())?;
    let largest = n.iter().copied().max().unwrap_or(0);
    check_memory(
        threads,
        seeds * n.len() as u64,
        largest * limits::BYTES_PER_BIN,
        &format!("--n {largest}"),
    )?;
    Ok(Experiment::Bins(BinsConfig { n, d, variants }))
}

/// Validates `lbsim fixed`: the farm, loads and choices, with the levels the fixed point lists.
fn fixed_config(a: &cli::FixedArgs, common: &Common) -> Result<Experiment, UsageError> {
    let (seeds, threads) = (common.seeds, common.threads);
    let n = server_count("--n", &a.n, 1)?;
    let lambda = parse_list("--lambda", &a.lambda, |s| load("--lambda", s))?;
    let d = parse_list("--d", &a.d, |s| {
        Ok(parse_count("--d", s, 1, u64::from(limits::CHOICES))? as u32)
    })?;
    if let Some(&dd) = d.iter().find(|&&dd| dd as usize > n) {
        return Err(conflict(
            "--d",
            format!("{dd} is larger than the farm (--n {n}); d distinct choices need d <= n"),
        ));
    }
    for (&l, &dd) in lambda.iter().flat_map(|l| d.iter().map(move |dd| (l, dd))) {
        let levels = fixed_levels(l, dd);
        if levels > limits::LEVELS {
            return Err(too_large(
                format!("--lambda {l} with --d {dd}"),
                format!(
                    "lists {levels} levels (s_i >= {}); at most {} are accepted: lower --lambda or raise --d",
                    crate::experiment::fixed::MIN_THEORY,
                    limits::LEVELS
                ),
            ));
        }
    }
    check_run_size(seeds, lambda.len() * d.len(), threads, n, &format!("--n {n}"))?;
    let run = run_config(&a.run, 5_000_000, 500_000, seeds)?;
    if !run.quantiles.is_empty() {
        return Err(conflict(
            "--quantiles",
            "does not apply to fixed, whose rows are queue-length levels",
        ));
    }
    let lowest = lambda.iter().copied().fold(1.0, f64::min);
    check_horizon(&run, lowest * n as f64, 1.0)?;
    if a.print_scenario {
        // d = 1 draws one uniform server, as random does (the same coins).
        let policies: Vec<PolicyKind> = d
            .iter()
            .map(|&d| if d == 1 { PolicyKind::Random } else { PolicyKind::PnC(d) })
            .collect();
        let groups = group("servers", n, 1.0).into_iter().collect();
        let ex = print_scenario(
            "fixed",
            groups,
            &policies,
            crate::experiment::run::DEFAULT_TAU,
            &run,
            common,
            (lambda[0], None),
            Some(("arrivals.load", &lambda[..])),
        )?;
        return Ok(ex);
    }
    Ok(Experiment::Fixed(FixedConfig { n, lambda, d, run }))
}

/// Validates `lbsim homo`: a farm of equal servers, its loads and policies.
fn homo_config(a: &cli::HomoArgs, common: &Common) -> Result<Experiment, UsageError> {
    let (seeds, threads) = (common.seeds, common.threads);
    let servers = server_count("--servers", &a.servers, 1)?;
    let loads = parse_list("--loads", &a.loads, |s| load("--loads", s))?;
    let policies = policies("--policies", &a.policies, Info::Live)?;
    check_farm_size(&policies, servers, "--servers")?;
    check_swrr(&policies, &vec![1.0; servers])?;
    let tau = parse_f64("--tau", &a.tau, |x| x > 0.0, "expected a time constant > 0")?;
    let what = format!("--servers {servers}");
    check_run_size(seeds, loads.len() * policies.len(), threads, servers, &what)?;
    let run = run_config(&a.run, 1_000_000, 100_000, seeds)?;
    let lowest = loads.iter().copied().fold(1.0, f64::min);
    check_horizon(&run, lowest * servers as f64, 1.0)?;
    let baseline = baseline(&a.baseline, &policies)?;
    if a.print_scenario {
        let groups = group("servers", servers, 1.0).into_iter().collect();
        let sweep = Some(("arrivals.load", &loads[..]));
        let first = (loads[0], None);
        return print_scenario("homo", groups, &policies, tau, &run, common, first, sweep);
    }
    Ok(Experiment::Homo(HomoConfig { servers, loads, policies, tau, baseline, run }))
}

/// Validates `lbsim hetero`: a farm of slow and fast servers and its policies.
fn hetero_config(a: &cli::HeteroArgs, common: &Common) -> Result<Experiment, UsageError> {
    let (seeds, threads) = (common.seeds, common.threads);
    let slow = server_count("--slow", &a.slow, 0)?;
    let fast = server_count("--fast", &a.fast, 0)?;
    if slow + fast == 0 || (slow + fast) as u64 > limits::SERVERS {
        return Err(conflict(
            "--slow plus --fast",
            format!("must be from 1 to {} servers, got {}", limits::SERVERS, slow + fast),
        ));
    }
    let slow_rate = rate("--slow-rate", &a.slow_rate)?;
    let fast_rate = rate("--fast-rate", &a.fast_rate)?;
    let load = load("--load", &a.load)?;
    let policies = policies("--policies", &a.policies, Info::Live)?;
    check_farm_size(&policies, slow + fast, "--slow plus --fast")?;
    let tau = parse_f64("--tau", &a.tau, |x| x > 0.0, "expected a time constant > 0")?;
    let what = format!("--slow plus --fast ({})", slow + fast);
    check_run_size(seeds, policies.len(), threads, slow + fast, &what)?;
    let run = run_config(&a.run, 1_000_000, 100_000, seeds)?;
    let capacity = slow as f64 * slow_rate + fast as f64 * fast_rate;
    let fastest = [(slow, slow_rate), (fast, fast_rate)]
        .iter()
        .filter(|&&(count, _)| count > 0)
        .fold(0.0, |m, &(_, rate)| f64::max(m, rate));
    check_horizon(&run, load * capacity, fastest)?;
    let baseline = baseline(&a.baseline, &policies)?;
    let cfg = HeteroConfig { slow, slow_rate, fast, fast_rate, load, policies, tau, baseline, run };
    check_swrr(&cfg.policies, &cfg.rates())?;
    if a.print_scenario {
        let groups = [group("slow", slow, slow_rate), group("fast", fast, fast_rate)];
        let (first, tau) = ((cfg.load, None), cfg.tau);
        return print_scenario(
            "hetero",
            groups.into_iter().flatten().collect(),
            &cfg.policies,
            tau,
            &cfg.run,
            common,
            first,
            None,
        );
    }
    Ok(Experiment::Hetero(cfg))
}

/// Validates `lbsim stale`: a farm behind a board, its posting periods and policies.
fn stale_config(a: &cli::StaleArgs, common: &Common) -> Result<Experiment, UsageError> {
    let (seeds, threads) = (common.seeds, common.threads);
    let servers = server_count("--servers", &a.servers, 1)?;
    let load = load("--load", &a.load)?;
    let periods = parse_list("--periods", &a.periods, |s| {
        parse_f64(
            "--periods",
            s,
            |x| x == 0.0 || x >= limits::MIN_PERIOD,
            &format!("expected 0 (live) or a period >= {}", limits::MIN_PERIOD),
        )
    })?;
    let policies = policies("--policies", &a.policies, Info::Board)?;
    check_farm_size(&policies, servers, "--servers")?;
    check_swrr(&policies, &vec![1.0; servers])?;
    let what = format!("--servers {servers}");
    check_run_size(seeds, periods.len() * policies.len(), threads, servers, &what)?;
    let run = run_config(&a.run, 1_000_000, 100_000, seeds)?;
    check_horizon(&run, load * servers as f64, 1.0)?;
    // A post every `period` refreshes every server; the run lasts about
    // arrivals / (load * servers) time units.
    let arrivals = run.most_arrivals() as f64;
    let shortest = periods.iter().copied().filter(|&p| p > 0.0).fold(f64::MAX, f64::min);
    let updates = arrivals / (load * servers as f64) / shortest * servers as f64;
    if shortest < f64::MAX && updates > limits::BOARD_UPDATES {
        return Err(too_large(
            format!("--periods {shortest} at --load {load}"),
            format!(
                "means about {updates:.1e} board updates (posts x servers) per replication; at most {:.0e} are accepted: raise the period or the load, or lower --requests",
                limits::BOARD_UPDATES
            ),
        ));
    }
    let baseline = baseline(&a.baseline, &policies)?;
    if a.print_scenario {
        let groups = group("servers", servers, 1.0).into_iter().collect();
        let sweep = Some(("info.period", &periods[..]));
        let ex = print_scenario(
            "stale",
            groups,
            &policies,
            crate::experiment::run::DEFAULT_TAU,
            &run,
            common,
            (load, Some(periods[0])),
            sweep,
        )?;
        return Ok(ex);
    }
    Ok(Experiment::Stale(StaleConfig { servers, load, periods, policies, baseline, run }))
}

/// Validates `lbsim swrr`: the trace and the weight sets compared.
fn swrr_config(a: &cli::SwrrArgs) -> Result<Experiment, UsageError> {
    let trace =
        a.trace.as_deref().map(|s| weights("--trace", s, limits::TRACE_CELLS)).transpose()?;
    let sets = match &a.weights {
        Some(s) => {
            if s.trim().is_empty() {
                return Err(UsageError::EmptyList {
                    option: "--weights".into(),
                    what: "set".into(),
                });
            }
            let mut sets: Vec<Vec<u64>> = Vec::new();
            for set in s.split(';') {
                if set.trim().is_empty() {
                    return Err(UsageError::EmptyItem {
                        option: "--weights".into(),
                        what: "set".into(),
                        list: s.clone(),
                    });
                }
                let w = weights("--weights", set.trim(), limits::SWRR_WORK)?;
                if w.len() < 2 {
                    return Err(bad(
                        "--weights",
                        set.trim(),
                        "a set needs two servers or more (one server is picked every time)",
                    ));
                }
                if sets.contains(&w) {
                    return Err(UsageError::Duplicate {
                        option: "--weights".into(),
                        item: set.trim().into(),
                    });
                }
                sets.push(w);
            }
            sets
        }
        // The trace compares nothing.
        None if trace.is_some() => Vec::new(),
        None => default_weight_sets(),
    };
    Ok(Experiment::Swrr(SwrrConfig { trace, sets }))
}

/// Validates `lbsim hash`.
fn hash_config(
    a: &cli::HashArgs,
    seeds: u64,
    threads: Option<usize>,
) -> Result<HashConfig, UsageError> {
    use crate::hashing::DEFAULT_TABLE_SIZE;
    let servers = parse_count("--servers", &a.servers, 1, limits::SERVERS)? as usize;
    let keys = parse_count("--keys", &a.keys, 1, limits::HASH_KEYS)?;
    let vnodes = parse_list("--vnodes", &a.vnodes, |s| {
        Ok(parse_count("--vnodes", s, 1, limits::RING_POINTS)? as usize)
    })?;
    let methods = parse_list("--methods", &a.methods, |s| match s {
        "ring" => Ok(HashMethod::Ring),
        "maglev" => Ok(HashMethod::Maglev),
        "modulo" => Ok(HashMethod::Modulo),
        _ => Err(bad("--methods", s, "expected ring, maglev or modulo")),
    })?;
    let ring = methods.contains(&HashMethod::Ring);
    let balance = match &a.balance {
        Some(s) => {
            let f = parse_f64(
                "--balance",
                s,
                |f| f > 1.0 && f <= 100.0 && ((f * 100.0).round() - f * 100.0).abs() < 1e-9,
                "expected a factor above 1 and at most 100 in whole percent (1.25 is HAProxy's \
                 hash-balance-factor 125)",
            )?;
            if !ring {
                return Err(conflict(
                    "--balance",
                    "adds ring-bounded rows, which need ring in --methods",
                ));
            }
            Some(f)
        }
        None => None,
    };
    if methods.contains(&HashMethod::Maglev) {
        maglev_fits(servers, 1, DEFAULT_TABLE_SIZE)
            .map_err(|rule| conflict("--servers", format!("{servers} with maglev: {rule}")))?;
    }
    let most = vnodes.iter().copied().max().unwrap_or(1);
    let points = (servers as u64 + 1).saturating_mul(most as u64);
    if ring {
        ring_fits(servers + 1, most as u64)
            .map_err(|rule| too_large(format!("--vnodes {most}"), rule))?;
    }
    let rows = methods
        .iter()
        .map(|m| match m {
            HashMethod::Ring => vnodes.len() * if balance.is_some() { 2 } else { 1 },
            _ => 1,
        })
        .sum::<usize>();
    check_replications(seeds, rows)?;
    // Per replication in flight: two rings (or tables) and one server per key.
    let rings = if ring { 2 * points * 16 } else { 2 * DEFAULT_TABLE_SIZE as u64 * 4 };
    check_memory(threads, seeds * rows as u64, rings + keys * 4, &format!("--keys {keys}"))?;
    Ok(HashConfig { servers, keys, vnodes, methods, balance })
}

/// Maglev's rule, which `hash` and `run` share: a table of `table` entries holds at most `table`
/// servers. `hash` builds `servers + 1` (`extra` = 1). The rule broken, as the words after
/// "with maglev: ".
pub fn maglev_fits(servers: usize, extra: usize, table: usize) -> Result<(), String> {
    if servers + extra <= table {
        return Ok(());
    }
    let note = if extra > 0 { " (n + 1 are built)" } else { "" };
    Err(format!("its table of {table} entries takes at most {} servers{note}", table - extra))
}

/// The ring's rule, which `hash` and `run` share: `built` servers of `vnodes` points each make at
/// most [`limits::RING_POINTS`] points (16 bytes each, per ring and replication in flight). The
/// rule broken, as the words after the points' option (`--vnodes 100 `).
pub fn ring_fits(built: usize, vnodes: u64) -> Result<(), String> {
    let points = (built as u64).saturating_mul(vnodes);
    if points <= limits::RING_POINTS {
        return Ok(());
    }
    Err(format!(
        "on {built} servers is {points} points per ring; at most {} are accepted",
        limits::RING_POINTS
    ))
}

/// The weight sets `lbsim swrr` compares by default.
pub fn default_weight_sets() -> Vec<Vec<u64>> {
    let mut many = vec![1; 20];
    many.resize(100, 2);
    vec![
        vec![5, 1, 1],
        vec![1, 1, 1],
        vec![3, 2, 1],
        vec![4, 3, 2, 1],
        vec![10, 1],
        vec![100, 1, 1],
        vec![1, 2],
        many,
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_accept_separators_and_exponents() {
        assert_eq!(parse_count("--n", "1_000_000", 1, u64::MAX), Ok(1_000_000));
        assert_eq!(parse_count("--n", "1e6", 1, u64::MAX), Ok(1_000_000));
        assert_eq!(parse_count("--n", "25e2", 1, u64::MAX), Ok(2500));
        assert_eq!(parse_count("--n", "1.5e6", 1, u64::MAX), Ok(1_500_000));
        assert_eq!(parse_count("--n", "2.50e2", 1, u64::MAX), Ok(250));
        for bad in [
            "",
            "-1",
            "1.5",
            "1e",
            "e3",
            "nan",
            "1e30",
            "99999999999999999999",
            "0",
            "1.25e1",
            ".5e3",
            "1.e3x",
            "+1.5e3",
            "1e-3",
            "_10",
            "1__0",
            "10_",
            "_",
            "1_e3",
        ] {
            assert!(parse_count("--n", bad, 1, u64::MAX).is_err(), "{bad}");
        }
        assert_eq!(parse_count("--n", "1_5e2", 1, u64::MAX), Ok(1500));
    }

    #[test]
    fn memory_counts_the_replications_in_flight() {
        let bins = 100_000_000 * limits::BYTES_PER_BIN;
        assert!(check_memory(Some(1024), 100, bins, "--n").is_err());
        assert!(check_memory(Some(2), 100, bins, "--n").is_ok());
        assert!(check_memory(Some(1024), 2, bins, "--n").is_ok(), "at most 2 run at once");
    }

    #[test]
    fn fixed_levels_match_the_fixed_point() {
        use crate::experiment::fixed::MIN_THEORY;
        use crate::theory::fixed_point;
        for (lambda, d) in [(0.9, 1), (0.9, 2), (0.5, 3), (0.99, 1), (0.999_999, 2)] {
            let direct = (1..).take_while(|&i| fixed_point(lambda, d, i) >= MIN_THEORY).count();
            assert_eq!(fixed_levels(lambda, d), direct as u64, "lambda {lambda}, d {d}");
        }
        assert!(fixed_levels(0.99999, 1) > limits::LEVELS);
        assert!(fixed_levels(1.0 - 1e-16, 2) < 100);
    }

    #[test]
    fn messages_stay_on_one_line() {
        assert_eq!(shown("a\nb\tc"), "a\\nb\\tc");
        assert_eq!(shown(&"x".repeat(100)).len(), 63);
        let e = bad("--loads", "0.5\n0.9", "expected a load").to_string();
        assert_eq!(e.lines().count(), 1, "{e}");
    }

    #[test]
    fn out_must_name_a_file_in_an_existing_directory() {
        assert!(check_out("--out", Path::new("results.csv")).is_ok());
        for bad in ["", "/", "/tmp", "/tmp/", "..", "/nonexistent-dir/x.csv"] {
            let e = check_out("--out", Path::new(bad)).unwrap_err().to_string();
            assert!(e.contains("--out"), "{bad}: {e}");
        }
    }

    #[test]
    fn lists_refuse_empty_items_and_duplicates() {
        let p = |s| parse_list("--loads", s, |x| load("--loads", x));
        assert_eq!(p("0.5,0.9"), Ok(vec![0.5, 0.9]));
        assert!(p("").is_err());
        assert!(p("0.5,,0.9").is_err());
        assert!(p("0.5,0.5").is_err());
        assert!(p("0.5,1").is_err());
        assert!(p("nan").is_err());
        assert!(p("inf").is_err());
        let e = p("0.5,1.2").unwrap_err().to_string();
        assert!(e.contains("--loads") && e.contains("0 < load < 1"), "{e}");
    }
}

//! The commands' own options, typed by clap's value parsers: counts and numbers with their ranges
//! checked, comma-separated lists ([`List`]), policy kinds, hash methods, limiters, arrival
//! patterns and `--set` assignments. Each parser refuses a bad value with the one line the
//! option has always printed ([`crate::options::refused`] hands it back from clap); what depends
//! on other options (a subset larger than `--backends`, `--baseline` among `--policies`, the
//! run's length) is still checked by each command's `config`.

use std::ops::Deref;

use serde::Serialize;

use crate::admission::{Admission, AdmissionSpec};
use crate::error::{UsageError, bad};
use crate::limits;
use crate::options::{load, parse_count, parse_f64, parse_list, policies, rate, server_count};
use crate::policy::{Info, PolicyKind};
use crate::scenario::Assignment;
use crate::subset::Subsetting;
use crate::workload::Pattern;

/// A comma-separated list as given: no item empty, none twice, each of them checked.
#[derive(Debug, Clone, PartialEq)]
pub struct List<T>(pub Vec<T>);

impl<T> Deref for List<T> {
    type Target = Vec<T>;

    fn deref(&self) -> &Vec<T> {
        &self.0
    }
}

impl<T> From<List<T>> for Vec<T> {
    fn from(list: List<T>) -> Vec<T> {
        list.0
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

/// `--baseline POLICY`: the policy as given, and the kind it names, if any (whether it is one of
/// the command's policies is the command's check).
#[derive(Debug, Clone, PartialEq)]
pub struct Baseline {
    /// The value as given.
    pub given: String,
    /// The policy it names, parameters left out (`None`: no policy of that name).
    pub kind: Option<PolicyKind>,
}

impl Baseline {
    /// The policy as written, spaces around it left out (`p2c-pewma:tau=5`).
    pub fn label(&self) -> &str {
        self.given.trim()
    }
}

/// A rate limiter given as `NAME:key=value,...` (`limit --limiter`), resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct Limiter {
    /// The limiter as written.
    pub given: String,
    /// It, resolved.
    pub admission: Admission,
}

/// An arrival pattern given as `NAME:key=value,...` (`limit --pattern`), read.
#[derive(Debug, Clone, PartialEq)]
pub struct PatternArg {
    /// The pattern as written.
    pub given: String,
    /// It, parsed (a trace with its timestamps).
    pub pattern: Pattern,
}

/// `run --policies LIST`: each policy as written, `NAME` or `NAME:key=value,...` (commas
/// separate policies except inside a policy's parameters: `a:x=1,y=2,b` is `a:x=1,y=2` and `b`).
/// The scenario's validation resolves them, as it does the file's `policies`.
#[derive(Debug, Clone, PartialEq)]
pub struct PolicyLabels(pub Vec<String>);

// ===== bins =====

/// `bins --n LIST`: balls (= bins), each 1 to [`limits::BINS`].
pub fn bins_n(s: &str) -> Result<List<u64>, UsageError> {
    parse_list("--n", s, |s| parse_count("--n", s, 1, limits::BINS)).map(List)
}

/// `bins --d LIST`: choices per ball, each 1 to 64.
pub fn bins_d(s: &str) -> Result<List<u32>, UsageError> {
    parse_list("--d", s, |s| Ok(parse_count("--d", s, 1, 64)? as u32)).map(List)
}

/// `bins --variants LIST`: `uniform`, `left`.
pub fn variants(s: &str) -> Result<List<Variant>, UsageError> {
    parse_list("--variants", s, |s| match s {
        "uniform" => Ok(Variant::Uniform),
        "left" => Ok(Variant::Left),
        _ => Err(bad("--variants", s, "expected uniform or left")),
    })
    .map(List)
}

// ===== fixed =====

/// `fixed --n N`: servers, 1 to [`limits::SERVERS`].
pub fn fixed_n(s: &str) -> Result<usize, UsageError> {
    server_count("--n", s, 1)
}

/// `fixed --lambda LIST`: utilisations.
pub fn lambda(s: &str) -> Result<List<f64>, UsageError> {
    parse_list("--lambda", s, |s| load("--lambda", s)).map(List)
}

/// `fixed --d LIST`: choices, each 1 to [`limits::CHOICES`].
pub fn fixed_d(s: &str) -> Result<List<u32>, UsageError> {
    parse_list("--d", s, |s| Ok(parse_count("--d", s, 1, u64::from(limits::CHOICES))? as u32))
        .map(List)
}

// ===== the queueing commands (homo, hetero, stale) =====

/// `--servers N`: 1 to [`limits::SERVERS`] (`homo`, `stale`, `hash`).
pub fn servers(s: &str) -> Result<usize, UsageError> {
    server_count("--servers", s, 1)
}

/// `homo --loads LIST`: utilisations.
pub fn loads(s: &str) -> Result<List<f64>, UsageError> {
    parse_list("--loads", s, |s| load("--loads", s)).map(List)
}

/// `--load LOAD`: one utilisation (`hetero`, `stale`).
pub fn one_load(s: &str) -> Result<f64, UsageError> {
    load("--load", s)
}

/// `--policies LIST` of the commands with live information (`homo`, `hetero`).
pub fn live_policies(s: &str) -> Result<List<PolicyKind>, UsageError> {
    policies("--policies", s, Info::Live).map(List)
}

/// `stale --policies LIST`: the bulletin board's policies.
pub fn board_policies(s: &str) -> Result<List<PolicyKind>, UsageError> {
    policies("--policies", s, Info::Board).map(List)
}

/// `--tau T`: Peak-EWMA's decay time constant, above 0.
pub fn tau(s: &str) -> Result<f64, UsageError> {
    parse_f64("--tau", s, |x| x > 0.0, "expected a time constant > 0")
}

/// `--baseline POLICY`: read; each command checks it is one of its policies.
pub fn baseline(s: &str) -> Result<Baseline, UsageError> {
    Ok(Baseline { given: s.to_string(), kind: PolicyKind::parse(s.trim()) })
}

/// `hetero --slow N`: 0 to [`limits::SERVERS`].
pub fn slow(s: &str) -> Result<usize, UsageError> {
    server_count("--slow", s, 0)
}

/// `hetero --fast N`: 0 to [`limits::SERVERS`].
pub fn fast(s: &str) -> Result<usize, UsageError> {
    server_count("--fast", s, 0)
}

/// `hetero --slow-rate RATE`.
pub fn slow_rate(s: &str) -> Result<f64, UsageError> {
    rate("--slow-rate", s)
}

/// `hetero --fast-rate RATE`.
pub fn fast_rate(s: &str) -> Result<f64, UsageError> {
    rate("--fast-rate", s)
}

/// `stale --periods LIST`: 0 (live) or at least [`limits::MIN_PERIOD`].
pub fn periods(s: &str) -> Result<List<f64>, UsageError> {
    parse_list("--periods", s, |s| {
        parse_f64(
            "--periods",
            s,
            |x| x == 0.0 || x >= limits::MIN_PERIOD,
            &format!("expected 0 (live) or a period >= {}", limits::MIN_PERIOD),
        )
    })
    .map(List)
}

// ===== swrr =====

/// Integer weights `a,b,...`, each 1 to 10^6, whose cycle times servers is at most `max_work`.
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

/// Integer weights, one per server, in order (a weight may repeat).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Weights(pub Vec<u64>);

/// `swrr --trace WEIGHTS`: one cycle of at most [`limits::TRACE_CELLS`] cells.
pub fn trace(s: &str) -> Result<Weights, UsageError> {
    weights("--trace", s, limits::TRACE_CELLS).map(Weights)
}

/// `swrr --weights SETS`: weight sets separated by `;`, each two weights or more, none twice.
pub fn weight_sets(s: &str) -> Result<List<Vec<u64>>, UsageError> {
    if s.trim().is_empty() {
        return Err(UsageError::EmptyList { option: "--weights".into(), what: "set".into() });
    }
    let mut sets: Vec<Vec<u64>> = Vec::new();
    for set in s.split(';') {
        if set.trim().is_empty() {
            return Err(UsageError::EmptyItem {
                option: "--weights".into(),
                what: "set".into(),
                list: s.into(),
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
    Ok(List(sets))
}

// ===== hash =====

/// `hash --keys N`: 1 to [`limits::HASH_KEYS`].
pub fn keys(s: &str) -> Result<u64, UsageError> {
    parse_count("--keys", s, 1, limits::HASH_KEYS)
}

/// `hash --vnodes LIST`: points per server, each 1 to [`limits::RING_POINTS`].
pub fn vnodes(s: &str) -> Result<List<usize>, UsageError> {
    parse_list("--vnodes", s, |s| Ok(parse_count("--vnodes", s, 1, limits::RING_POINTS)? as usize))
        .map(List)
}

/// `hash --methods LIST`: `ring`, `maglev`, `modulo`.
pub fn hash_methods(s: &str) -> Result<List<HashMethod>, UsageError> {
    parse_list("--methods", s, |s| match s {
        "ring" => Ok(HashMethod::Ring),
        "maglev" => Ok(HashMethod::Maglev),
        "modulo" => Ok(HashMethod::Modulo),
        _ => Err(bad("--methods", s, "expected ring, maglev or modulo")),
    })
    .map(List)
}

/// `hash --balance F`: above 1, at most 100, in whole percent.
pub fn balance(s: &str) -> Result<f64, UsageError> {
    parse_f64(
        "--balance",
        s,
        |f| f > 1.0 && f <= 100.0 && ((f * 100.0).round() - f * 100.0).abs() < 1e-9,
        "expected a factor above 1 and at most 100 in whole percent (1.25 is HAProxy's \
         hash-balance-factor 125)",
    )
}

// ===== subset =====

/// The most clients, backends or subset size `subset` takes.
pub const SUBSET_MAX: u64 = 1_000_000;

/// `subset --clients N`: 1 to [`SUBSET_MAX`].
pub fn clients(s: &str) -> Result<usize, UsageError> {
    Ok(parse_count("--clients", s, 1, SUBSET_MAX)? as usize)
}

/// `subset --backends N`: 1 to [`SUBSET_MAX`].
pub fn backends(s: &str) -> Result<usize, UsageError> {
    Ok(parse_count("--backends", s, 1, SUBSET_MAX)? as usize)
}

/// `subset --subsets LIST`: sizes, each 1 to [`SUBSET_MAX`] (at most `--backends`: `subset`'s
/// check).
pub fn subsets(s: &str) -> Result<List<usize>, UsageError> {
    parse_list("--subsets", s, |s| Ok(parse_count("--subsets", s, 1, SUBSET_MAX)? as usize))
        .map(List)
}

/// `subset --methods LIST`: `random`, `deterministic`.
pub fn subset_methods(s: &str) -> Result<List<Subsetting>, UsageError> {
    parse_list("--methods", s, |s| {
        Subsetting::parse(s).ok_or_else(|| bad("--methods", s, "expected random or deterministic"))
    })
    .map(List)
}

// ===== limit =====

/// `limit --limiter SPEC`: read and resolved.
pub fn limiter(s: &str) -> Result<Limiter, UsageError> {
    let admission = AdmissionSpec::parse(s)
        .and_then(|spec| spec.resolve())
        .map_err(|error| UsageError::Param { option: "--limiter".into(), error })?;
    Ok(Limiter { given: s.to_string(), admission })
}

/// `limit --pattern SPEC`: read (a trace's file with it).
pub fn pattern(s: &str) -> Result<PatternArg, UsageError> {
    let pattern = Pattern::parse(s)
        .map_err(|error| UsageError::Param { option: "--pattern".into(), error })?;
    Ok(PatternArg { given: s.to_string(), pattern })
}

/// A number above 0 and at most 10^9 (`limit --duration`, `--capacity`).
fn positive(option: &str, s: &str) -> Result<f64, UsageError> {
    parse_f64(option, s, |x| x > 0.0 && x <= 1e9, "a number > 0, at most 1e9")
}

/// `limit --duration T`.
pub fn duration(s: &str) -> Result<f64, UsageError> {
    positive("--duration", s)
}

/// `limit --capacity RATE`.
pub fn capacity(s: &str) -> Result<f64, UsageError> {
    positive("--capacity", s)
}

// ===== run =====

/// `run --set KEY=VALUE`: split at its first `=`.
pub fn set(s: &str) -> Result<Assignment, UsageError> {
    Ok(Assignment::parse(s)?)
}

/// `run --policies LIST`: the policies as written, none empty.
pub fn policy_labels(s: &str) -> Result<PolicyLabels, UsageError> {
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
    if out.iter().any(String::is_empty) {
        return Err(UsageError::EmptyItem {
            option: "--policies".into(),
            what: "item".into(),
            list: s.into(),
        });
    }
    Ok(PolicyLabels(out))
}

/// `run --admission SPEC`: read, and checked by resolving it.
pub fn admission(s: &str) -> Result<Box<AdmissionSpec>, UsageError> {
    AdmissionSpec::parse(s)
        .and_then(|spec| spec.resolve().map(|_| Box::new(spec)))
        .map_err(|e| bad("--admission", s, e))
}

/// `run --series-window W`: above 0.
pub fn series_window(s: &str) -> Result<f64, UsageError> {
    parse_f64("--series-window", s, |x| x > 0.0, "expected a width > 0")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_arrive_typed_and_refuse_with_their_lines() {
        assert_eq!(bins_n("1e3, 10").map(|l| l.0), Ok(vec![1000, 10]));
        assert_eq!(
            variants("left,uniform").map(|l| l.0),
            Ok(vec![Variant::Left, Variant::Uniform])
        );
        assert_eq!(weight_sets("1,2; 3,4").map(|l| l.0), Ok(vec![vec![1, 2], vec![3, 4]]));
        assert_eq!(trace("5,1,1"), Ok(Weights(vec![5, 1, 1])));
        let e = subsets("3,3").unwrap_err().to_string();
        assert_eq!(e, "--subsets lists '3' twice");
        let p = policy_labels("p2c-pewma:tau=5,decay=1, jsq").unwrap().0;
        assert_eq!(p, ["p2c-pewma:tau=5,decay=1", "jsq"]);
        assert!(policy_labels("p2c,,jsq").is_err());
    }
}

// ===== capacity =====

/// What `capacity --target` bounds: the mean sojourn, a sojourn percentile, or the fraction of
/// requests that succeed.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Metric {
    /// Mean sojourn: the target holds while it is at most the value.
    Mean,
    /// A sojourn quantile (the fraction: 0.99 for `p99`): held while at most the value.
    Quantile(f64),
    /// The fraction of requests answered without error within their deadline (`[client]`):
    /// held while at least the value.
    Success,
}

impl Metric {
    /// True when a larger value of the metric is better (`success`), false for latencies.
    pub fn higher_is_better(self) -> bool {
        matches!(self, Metric::Success)
    }
}

/// `capacity --target METRIC=VALUE`, parsed.
#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    /// As written, spaces left out (`p99=20`): the `target` column.
    pub given: String,
    /// The metric's name (`mean`, `p99.9`, `success`).
    pub name: String,
    /// What it bounds.
    pub metric: Metric,
    /// The bound.
    pub value: f64,
}

/// `capacity --target METRIC=VALUE`: `mean=V` or `pXX=V` (0 < XX < 100) with V > 0 in mean
/// service times, or `success=F` with 0 < F < 1.
pub fn target(s: &str) -> Result<Target, UsageError> {
    let expected = "expected METRIC=VALUE with METRIC mean, p50 ... p99.9 (any pXX, 0 < XX < 100) \
                    or success, e.g. p99=50";
    let (name, value) = s.split_once('=').ok_or_else(|| bad("--target", s, expected))?;
    let name = name.trim();
    let metric = match name {
        "mean" => Metric::Mean,
        "success" => Metric::Success,
        _ => {
            let pct = name
                .strip_prefix('p')
                .and_then(|p| p.parse::<f64>().ok())
                .filter(|p| *p > 0.0 && *p < 100.0)
                .ok_or_else(|| {
                    bad("--target", s, format!("unknown metric '{name}'; {expected}"))
                })?;
            Metric::Quantile(pct / 100.0)
        }
    };
    let value = if metric == Metric::Success {
        parse_f64("--target", value, |v| v > 0.0 && v < 1.0, "expected success=F with 0 < F < 1")?
    } else {
        let what = format!("expected {name}=V with V > 0 (mean service times)");
        parse_f64("--target", value, |v| v > 0.0, &what)?
    };
    let given = format!("{name}={value}");
    Ok(Target { given, name: name.to_string(), metric, value })
}

/// `capacity --precision P`: the width of the answer's bracket at which the bisection stops, in
/// the searched key's units, above 0.
pub fn capacity_precision(s: &str) -> Result<f64, UsageError> {
    parse_f64(
        "--precision",
        s,
        |x| x > 0.0 && x <= 1e6,
        "expected a width above 0 (in the searched key's units, e.g. 0.005 for a load)",
    )
}

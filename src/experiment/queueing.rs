//! What the queueing commands (`fixed`, `homo`, `hetero`, `stale`, and `run`'s points) share:
//! the run options, the checks of run length, clock and farm size, `--baseline`, and
//! `--print-scenario`, which writes a command's run as a scenario file.

use super::Experiment;
use super::common::{Common, RunConfig, check_memory, check_replications};
use crate::cli;
use crate::error::{UsageError, bad, conflict, too_large};
use crate::limits;
use crate::options::{WarmupArg, parse_count};
use crate::policy::{PolicyKind, SWRR_MAX_CYCLE, integer_weights};

use crate::limits::DEFAULT_MAX_REQUESTS;

/// The run options of a queueing command (`--requests`, `--warmup`, `--precision`,
/// `--max-requests`, `--quantiles`, `--queue-guard`), with its default run length.
pub(crate) fn validated_run(
    a: &cli::RunArgs,
    requests: u64,
    warmup: u64,
    seeds: u64,
) -> Result<RunConfig, UsageError> {
    let requests = a.requests.unwrap_or(requests);
    let (warmup, warmup_auto) = match a.warmup {
        Some(WarmupArg::Auto) => (0, true),
        Some(WarmupArg::Arrivals(w)) => (w, false),
        None => (warmup, false),
    };
    let precision = a.precision;
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
    let quantiles = a.quantiles.as_ref().map_or_else(Vec::new, |q| q.beyond(&["p99"]));
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
    let queue_guard = a.queue_guard;
    Ok(RunConfig {
        warmup,
        requests,
        queue_guard,
        warmup_auto,
        precision,
        max_requests,
        quantiles,
        series: None,
        series_groups: Vec::new(),
        series_spool: false,
    })
}

/// Refuses runs whose clock would outgrow its precision: `run` arrivals at total rate `arrival_rate`
/// last about `arrivals / arrival_rate` time units, measured against the fastest service time.
pub(crate) fn check_horizon(
    run: &RunConfig,
    arrival_rate: f64,
    fastest: f64,
) -> Result<(), UsageError> {
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
pub(crate) fn check_swrr(policies: &[PolicyKind], rates: &[f64]) -> Result<(), UsageError> {
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

/// Refuses a farm of `servers` too small for one of `policies` (`option` sizes the farm).
pub(crate) fn check_farm_size(
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

/// The size checks of a queueing command: at most [`limits::REPLICATIONS`] replications in all,
/// and the replications in flight (each holding `servers` servers) within [`limits::MEMORY`].
pub(crate) fn check_run_size(
    seeds: u64,
    scenarios: usize,
    threads: Option<usize>,
    servers: usize,
    what: &str,
) -> Result<(), UsageError> {
    check_replications(seeds, scenarios)?;
    check_memory(threads, seeds * scenarios as u64, servers as u64 * limits::BYTES_PER_SERVER, what)
}

/// `--baseline`: one of the command's policies.
pub(crate) fn baseline(
    a: &cli::BaselineArgs,
    policies: &[PolicyKind],
) -> Result<Option<PolicyKind>, UsageError> {
    let Some(b) = &a.baseline else { return Ok(None) };
    match b.kind.filter(|p| policies.contains(p)) {
        Some(p) => Ok(Some(p)),
        None => Err(bad(
            "--baseline",
            &b.given,
            format!(
                "expected one of --policies ({})",
                policies.iter().map(|p| p.name()).collect::<Vec<_>>().join(", ")
            ),
        )),
    }
}

/// One group of `count` servers of rate `rate`, or none when `count` is 0.
pub(crate) fn group(name: &str, count: usize, rate: f64) -> Option<crate::scenario::Group> {
    (count > 0).then(|| crate::scenario::Group {
        name: name.into(),
        count: count as u64,
        rate,
        error: 0.0,
        delay: 0.0,
    })
}

/// `--print-scenario`: the scenario file that `lbsim run` turns into this command's numbers.
/// `groups` are the farm's; a board `period` (0 = live) makes the information a board; `sweep` is
/// a key and its values, written when there is more than one.
#[allow(clippy::too_many_arguments)]
pub(crate) fn print_scenario(
    name: &str,
    groups: Vec<crate::scenario::Group>,
    policies: &[PolicyKind],
    tau: f64,
    run: &RunConfig,
    common: &Common,
    (load, period): (f64, Option<f64>),
    sweep: Option<(&str, &[f64])>,
) -> Result<Experiment, UsageError> {
    use crate::named::Named;
    use crate::scenario::{Count, InfoKind, Spec, Warmup};
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
        spec.info.kind = Some(Named::Is(InfoKind::Board));
        spec.info.period = Some(period);
    }
    if let Some((key, values)) = sweep.filter(|(_, v)| v.len() > 1) {
        let list = values.iter().map(|&v| toml::Value::Float(v)).collect();
        spec.sweep.insert(key.into(), toml::Value::Array(list));
    }
    spec.run.requests = Count(run.requests);
    spec.run.warmup =
        if run.warmup_auto { Warmup::Auto } else { Warmup::Arrivals(Count(run.warmup)) };
    spec.run.seeds = Count(common.seeds);
    spec.run.seed = Count(common.seed);
    spec.run.queue_guard = Count(u64::from(run.queue_guard));
    spec.run.precision = run.precision;
    spec.run.max_requests = run.precision.and(run.max_requests).map(Count);
    Ok(Experiment::Print(spec.to_toml()))
}

/// Serialises an optional policy by its name.
pub(crate) fn policy_name<S: serde::Serializer>(
    p: &Option<PolicyKind>,
    s: S,
) -> Result<S::Ok, S::Error> {
    match p {
        Some(k) => s.serialize_str(&k.name()),
        None => s.serialize_none(),
    }
}

/// Serialises policies by their names.
pub(crate) fn policy_names<S: serde::Serializer>(
    p: &[PolicyKind],
    s: S,
) -> Result<S::Ok, S::Error> {
    s.collect_seq(p.iter().map(|k| k.name()))
}

//! The option parsers every command shares: counts, floats, lists, loads, rates, server counts,
//! policy lists, `--precision` and `--quantiles`. Each refuses a bad value with one line that
//! names the option and says what is accepted.
//!
//! The value parsers of the command line (`seeds`, `seed`, `threads`, `shard`, and the run
//! options `requests`, `warmup`, `queue_guard`, `precision`, `quantiles`) give clap typed values;
//! a value they refuse is reported with the same one line as any other usage error
//! ([`refused`]).

use serde::Serialize;

use crate::error::{UsageError, bad};
use crate::limits;
use crate::policy::registry::{self, NameError};
use crate::policy::{Info, PolicyKind};

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

/// A utilisation: `0 < load < 1`, at least [`limits::MIN_LOAD`].
pub fn load(option: &str, s: &str) -> Result<f64, UsageError> {
    parse_f64(
        option,
        s,
        |x| (limits::MIN_LOAD..1.0).contains(&x),
        "expected a utilisation with 0 < load < 1 (at least 1e-6)",
    )
}

/// A service rate from [`limits::MIN_RATE`] to [`limits::RATE`].
pub fn rate(option: &str, s: &str) -> Result<f64, UsageError> {
    parse_f64(
        option,
        s,
        |x| (limits::MIN_RATE..=limits::RATE).contains(&x),
        "expected a rate from 1e-6 to 1e6",
    )
}

/// A server count from `min` to [`limits::SERVERS`].
pub fn server_count(option: &str, s: &str, min: u64) -> Result<usize, UsageError> {
    Ok(parse_count(option, s, min, limits::SERVERS)? as usize)
}

/// A sojourn quantile asked for with `--quantiles`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Quantile {
    /// Its column name (`p50`, `p99.9`).
    pub column: String,
    /// The fraction (0.5, 0.999).
    pub q: f64,
}

/// `--precision R`: a relative half-width.
pub fn parse_precision(s: &str) -> Result<f64, UsageError> {
    parse_f64(
        "--precision",
        s,
        |x| (1e-6..=0.5).contains(&x),
        "expected a relative half-width R with 1e-6 <= R <= 0.5 (0.01 = +-1%)",
    )
}

/// `--quantiles LIST`: percentiles as columns, less those the command always prints (`always`).
pub fn parse_quantiles(s: &str, always: &[&str]) -> Result<Vec<Quantile>, UsageError> {
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

/// A list of the registry's policies available with `info` information.
pub fn policies(option: &str, s: &str, info: Info) -> Result<Vec<PolicyKind>, UsageError> {
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

/// The usage error of a command line that a value parser refused, if that is why clap failed.
pub fn refused(e: &clap::Error) -> Option<&UsageError> {
    use std::error::Error;
    match e.kind() {
        clap::error::ErrorKind::ValueValidation => e.source()?.downcast_ref::<UsageError>(),
        _ => None,
    }
}

/// `--seeds N`: replications per scenario, 1 to [`limits::REPLICATIONS`].
pub fn seeds(s: &str) -> Result<u64, UsageError> {
    parse_count("--seeds", s, 1, limits::REPLICATIONS)
}

/// `--seed S`: the base seed, any `u64`.
pub fn seed(s: &str) -> Result<u64, UsageError> {
    parse_count("--seed", s, 0, u64::MAX)
}

/// `--threads N`: worker threads asked for, 1 to [`limits::THREADS`].
pub fn threads(s: &str) -> Result<usize, UsageError> {
    Ok(parse_count("--threads", s, 1, limits::THREADS)? as usize)
}

/// `--requests N`: measured arrivals per replication, 2 to [`limits::ARRIVALS`].
pub fn requests(s: &str) -> Result<u64, UsageError> {
    parse_count("--requests", s, 2, limits::ARRIVALS)
}

/// `--warmup N|auto`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WarmupArg {
    /// This many arrivals before measuring.
    Arrivals(u64),
    /// Where MSER-5 puts the end of each replication's transient.
    Auto,
}

/// `--warmup N|auto`: 0 to [`limits::ARRIVALS`] arrivals, or `auto`.
pub fn warmup(s: &str) -> Result<WarmupArg, UsageError> {
    match s.trim() {
        "auto" => Ok(WarmupArg::Auto),
        t => Ok(WarmupArg::Arrivals(parse_count("--warmup", t, 0, limits::ARRIVALS)?)),
    }
}

/// `--queue-guard N`: 1 to [`limits::QUEUE_GUARD`].
pub fn queue_guard(s: &str) -> Result<u32, UsageError> {
    Ok(parse_count("--queue-guard", s, 1, limits::QUEUE_GUARD)? as u32)
}

/// `--quantiles LIST`: the percentiles asked for, in order.
#[derive(Debug, Clone, PartialEq)]
pub struct Quantiles(pub Vec<Quantile>);

impl Quantiles {
    /// Those asked for, less the columns a command always prints (`always`).
    pub fn beyond(&self, always: &[&str]) -> Vec<Quantile> {
        self.0.iter().filter(|q| !always.contains(&q.column.as_str())).cloned().collect()
    }
}

/// `--quantiles LIST`: every percentile asked for (a command leaves out those it always prints:
/// [`Quantiles::beyond`]).
pub fn quantiles(s: &str) -> Result<Quantiles, UsageError> {
    parse_quantiles(s, &[]).map(Quantiles)
}

/// Shard `index` of a split into `count` (`--shard index/count`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// `K`: this shard runs the tasks whose index modulo `count` is `index`.
    pub index: u64,
    /// `N`: the number of shards.
    pub count: u64,
}

/// Most shards a command may be split into.
pub const MAX_SHARDS: u64 = 1_000_000;

impl Shard {
    /// Parses `K/N` with `0 <= K < N <= MAX_SHARDS`.
    pub fn parse(s: &str) -> Result<Shard, UsageError> {
        let bad = || UsageError::InvalidValue {
            option: "--shard".into(),
            value: s.into(),
            accepted: format!(
                "expected K/N with 0 <= K < N <= {MAX_SHARDS} (shard K of N, counted from 0)"
            ),
        };
        let (k, n) = s.split_once('/').ok_or_else(bad)?;
        let number = |x: &str| {
            if x.is_empty() || !x.bytes().all(|b| b.is_ascii_digit()) {
                return Err(bad());
            }
            x.parse::<u64>().map_err(|_| bad())
        };
        let (index, count) = (number(k)?, number(n)?);
        if count == 0 || count > MAX_SHARDS || index >= count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }

    /// The task indices of this shard among `tasks`, in increasing order.
    pub fn tasks(self, tasks: u64) -> impl Iterator<Item = u64> {
        (self.index..tasks).step_by(self.count as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refused_values_keep_their_one_line() {
        use clap::Parser;
        #[derive(Debug, Parser)]
        struct T {
            #[arg(long, allow_hyphen_values = true, value_parser = seeds)]
            seeds: Option<u64>,
            #[arg(long, allow_hyphen_values = true, value_parser = warmup)]
            warmup: Option<WarmupArg>,
        }
        let t = T::try_parse_from(["t", "--seeds", "1e3", "--warmup", " auto"]).unwrap();
        assert_eq!((t.seeds, t.warmup), (Some(1000), Some(WarmupArg::Auto)));
        let e = T::try_parse_from(["t", "--seeds", "0"]).unwrap_err();
        assert_eq!(
            refused(&e).map(ToString::to_string).as_deref(),
            Some("invalid value '0' for --seeds: expected an integer from 1 to 10000000")
        );
        let e = T::try_parse_from(["t", "--warmup", "-1"]).unwrap_err();
        assert_eq!(
            refused(&e),
            Some(&bad("--warmup", "-1", "expected an integer from 0 to 1000000000000"))
        );
        let e = T::try_parse_from(["t", "--bogus"]).unwrap_err();
        assert_eq!(refused(&e), None, "clap's own errors stay clap's");
    }

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

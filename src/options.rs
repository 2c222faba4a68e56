//! The option parsers every command shares: counts, floats, lists, loads, rates, server counts,
//! policy lists, `--precision` and `--quantiles`. Each refuses a bad value with one line that
//! names the option and says what is accepted.

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

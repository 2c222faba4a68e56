//! An arrival pattern for `lbsim limit`, given as `NAME:key=value,...`: Poisson, constant,
//! on-off, the window-boundary adversary of §39.1, or a trace's timestamps.

use std::path::Path;

use rand::RngExt;
use serde::Serialize;

use super::ArrivalSpec;
use crate::cancel::cancel_every;
use crate::error::KeyError;
use crate::rng::SimRng;

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

    /// The arrival times in `[0, duration)` (a trace: all of them). A random pattern looks at
    /// [`crate::cancel::CANCEL`] every [`crate::cancel::EVERY`] times it draws.
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
                    push(&mut out, t);
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
                        push(&mut out, t);
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

/// Appends a drawn time, first looking at [`crate::cancel::CANCEL`] every [`crate::cancel::EVERY`] times.
#[inline]
fn push(out: &mut Vec<f64>, t: f64) {
    cancel_every(out.len() as u64);
    out.push(t);
}

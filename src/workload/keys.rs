//! Request keys, for the hashing policies (`ring-hash`, `maglev`): `[keys]` in a scenario.
//!
//! A request's key stands for what a hash balancer hashes (a user id, a cache key, a session).
//! Keys are the integers `0..count`, drawn independently per request:
//!
//! - `popularity = "uniform"`: every key equally likely;
//! - `popularity = "zipf"`: key `k` (rank `k + 1`) with probability proportional to
//!   `1 / (k + 1)^s` (`rand_distr::Zipf`), the skew of real key populations (Breslau et al.,
//!   "Web caching and Zipf-like distributions", INFOCOM 1999, measured `s` from 0.64 to 0.83 on
//!   web proxies; caches often see `s` near 1).
//!
//! One stream of keys serves the whole replication, keyed like the workload (seed, farm, load,
//! replication) under its own label, and each arrival draws exactly one key whichever policy or
//! client takes it: every policy sees the same keys for the same requests.

use std::cell::RefCell;
use std::rc::Rc;

use rand::RngExt;
use rand_distr::Zipf;
use serde::{Deserialize, Serialize};

use crate::error::KeyError;
use crate::named::{Name, Named};
use crate::rng::SimRng;

/// `[keys]` of a scenario file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct KeySpec {
    /// Distinct keys (`0..count`).
    pub count: crate::count::Count,
    /// `uniform` or `zipf`.
    pub popularity: Named<Popularity>,
    /// Zipf exponent (`zipf` only).
    pub s: f64,
}

impl Default for KeySpec {
    fn default() -> Self {
        KeySpec {
            count: crate::count::Count(10_000),
            popularity: Named::Is(Popularity::Uniform),
            s: 1.0,
        }
    }
}

/// How often each key is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Popularity {
    /// Every key equally likely (`uniform`).
    Uniform,
    /// Key `k` with probability proportional to `1 / (k + 1)^s` (`zipf`).
    Zipf,
}

impl Name for Popularity {
    fn parse(s: &str) -> Option<Self> {
        [Popularity::Uniform, Popularity::Zipf].into_iter().find(|p| p.name() == s)
    }

    fn name(self) -> &'static str {
        match self {
            Popularity::Uniform => "uniform",
            Popularity::Zipf => "zipf",
        }
    }
}

/// The most distinct keys.
pub const MAX_KEYS: u64 = 1 << 40;

impl KeySpec {
    /// Checks the parameters; the message names the key.
    pub fn validate(&self) -> Result<(), KeyError> {
        if !(1..=MAX_KEYS).contains(&self.count.0) {
            let message = format!("expected 1 to 2^40 keys, got {}", self.count.0);
            return Err(KeyError::new("keys.count", message));
        }
        match self.popularity.get() {
            Ok(Popularity::Uniform) => Ok(()),
            Ok(Popularity::Zipf) if self.s.is_finite() && self.s > 0.0 && self.s <= 10.0 => Ok(()),
            Ok(Popularity::Zipf) => {
                Err(KeyError::new("keys.s", format!("expected 0 < s <= 10, got {}", self.s)))
            }
            Err(other) => Err(KeyError::new(
                "keys.popularity",
                format!("'{other}': expected \"uniform\" or \"zipf\""),
            )),
        }
    }

    /// The key source for one replication, drawing from `rng`.
    pub fn source(&self, rng: SimRng) -> KeySource {
        let n = self.count.0;
        let law = match self.popularity.get().expect("validated popularity") {
            Popularity::Zipf => {
                Law::Zipf(Zipf::new(n as f64, self.s).expect("validated zipf parameters"))
            }
            Popularity::Uniform => Law::Uniform(n),
        };
        KeySource { rng, law, next: None }
    }
}

#[derive(Debug, Clone)]
enum Law {
    Uniform(u64),
    Zipf(Zipf<f64>),
}

/// The keys of one replication's requests, in arrival order.
#[derive(Debug, Clone)]
pub struct KeySource {
    rng: SimRng,
    law: Law,
    /// The next request's key, when the admission stage drew it ([`KeySource::set_next`]).
    next: Option<u64>,
}

impl KeySource {
    /// The next request's key: the one [`KeySource::set_next`] gave, or else a draw.
    pub fn next_key(&mut self) -> u64 {
        if let Some(key) = self.next.take() {
            return key;
        }
        match &self.law {
            Law::Uniform(n) => self.rng.random_range(0..*n),
            // Zipf draws ranks 1..=n as floats holding integers.
            Law::Zipf(z) => self.rng.sample(z) as u64 - 1,
        }
    }
}

impl KeySource {
    /// The next request's key is `key`, drawn elsewhere (a composite limiter's per-key layer
    /// counted the request under it): the next [`KeySource::next_key`] returns it without a
    /// draw. Never called in a run without such a layer.
    pub fn set_next(&mut self, key: u64) {
        self.next = Some(key);
    }
}

/// The key source shared by every dispatcher of a replication (each arrival draws one key from it,
/// whichever client sends the request).
pub type SharedKeys = Rc<RefCell<KeySource>>;

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn zipf_keys_follow_their_law() {
        // s = 1 over 10 keys: P(key 0) = 1 / H_10 = 0.3414. 200 000 draws: the standard error of
        // the frequency is sqrt(p (1 - p) / N) = 0.00106, so 4 standard errors is 0.0042.
        let spec = KeySpec {
            count: crate::count::Count(10),
            popularity: Named::Is(Popularity::Zipf),
            s: 1.0,
        };
        let mut src = spec.source(SimRng::seed_from_u64(3));
        let n = 200_000;
        let mut counts = [0u32; 10];
        for _ in 0..n {
            counts[src.next_key() as usize] += 1;
        }
        let h10: f64 = (1..=10).map(|k| 1.0 / k as f64).sum();
        for (k, &c) in counts.iter().enumerate() {
            let p = 1.0 / ((k + 1) as f64 * h10);
            let se = (p * (1.0 - p) / n as f64).sqrt();
            let f = f64::from(c) / n as f64;
            assert!((f - p).abs() < 4.0 * se, "key {k}: frequency {f}, law {p}");
        }
    }

    #[test]
    fn uniform_keys_stay_in_range_and_bad_parameters_are_named() {
        let spec = KeySpec { count: crate::count::Count(7), ..KeySpec::default() };
        let mut src = spec.source(SimRng::seed_from_u64(1));
        assert!((0..1000).all(|_| src.next_key() < 7));
        let bad = KeySpec { popularity: Named::Is(Popularity::Zipf), s: 0.0, ..KeySpec::default() };
        let e = bad.validate().unwrap_err();
        assert_eq!(
            (e.key.as_str(), e.to_string()),
            ("keys.s", "keys.s: expected 0 < s <= 10, got 0".into())
        );
        let bad = KeySpec { popularity: Named::Other("pareto".into()), ..KeySpec::default() };
        let e = bad.validate().unwrap_err();
        let message = "keys.popularity: 'pareto': expected \"uniform\" or \"zipf\"";
        assert_eq!((e.key.as_str(), e.to_string()), ("keys.popularity", message.into()));
        let bad = KeySpec { count: crate::count::Count(0), ..KeySpec::default() };
        let message = "keys.count: expected 1 to 2^40 keys, got 0";
        assert_eq!(bad.validate().unwrap_err().to_string(), message);
    }
}

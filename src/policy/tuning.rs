//! Policy parameters, as written after a policy's name in a scenario (`NAME:key=value,...`).
//!
//! Each row of the policy table lists the keys its policy accepts; [`Tuning::set`] parses and
//! checks one value, with a message that says what is expected.

/// The parameters of every policy that has some, with their defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct Tuning {
    /// `random`: draw servers in proportion to their rates (default false: uniform).
    pub weighted: bool,
    /// `p2c-pewma`: Peak-EWMA decay time constant.
    pub tau: f64,
    /// `least-request`: hosts sampled per pick (Envoy's `choice_count`, default 2).
    pub choices: u32,
    /// `least-request`: `mode=full-scan` (Envoy's `FULL_SCAN`) instead of `n-choices`.
    pub full_scan: bool,
    /// `least-request`: `active_request_bias` of the weighted path (default 1.0).
    pub bias: f64,
    /// `ring-hash`: points per server (default 100).
    pub vnodes: u32,
    /// `ring-hash`: bounded-load factor (HAProxy's `hash-balance-factor` / 100); `None`: off.
    pub balance: Option<f64>,
    /// `maglev`: lookup table size, a prime (default 65537).
    pub table: u32,
    /// `aperture`: the smallest aperture (Finagle's default 12).
    pub min_aperture: u32,
    /// `jiq`: idle queues, one per dispatcher (default 1).
    pub dispatchers: u32,
    /// `wrr-orca`: blackout, expiration, weight update and report periods, error penalty.
    pub orca: super::wrr_orca::OrcaConfig,
    /// `prequal`: probe rate, pool size, probe age limit, RIF quantile, probe delay.
    pub prequal: super::prequal::PrequalConfig,
    /// `c3`: cubic rate control and its parameters.
    pub c3: super::c3::C3Config,
}

/// Peak-EWMA decay constant when a policy does not give `tau`.
pub const DEFAULT_TAU: f64 = 10.0;

impl Default for Tuning {
    fn default() -> Self {
        Tuning {
            weighted: false,
            tau: DEFAULT_TAU,
            choices: 2,
            full_scan: false,
            bias: 1.0,
            vnodes: 100,
            balance: None,
            table: 65_537,
            min_aperture: 12,
            dispatchers: 1,
            orca: super::wrr_orca::OrcaConfig::default(),
            prequal: super::prequal::PrequalConfig::default(),
            c3: super::c3::C3Config::default(),
        }
    }
}

/// The largest count parameter (`choices`, `vnodes`, `dispatchers`, `min_aperture`).
const MAX_COUNT: u32 = 100_000;

/// One `key=value` being set, with the parsers the keys share.
struct Value<'a> {
    key: &'a str,
    value: &'a str,
}

impl Value<'_> {
    /// The value as a finite number, if it is one.
    fn number(&self) -> Option<f64> {
        self.value.parse::<f64>().ok().filter(|x| x.is_finite())
    }

    /// The value as an integer from `min` to [`MAX_COUNT`].
    fn count(&self, min: u32) -> Result<u32, String> {
        let key = self.key;
        self.value
            .parse::<u32>()
            .ok()
            .filter(|&c| (min..=MAX_COUNT).contains(&c))
            .ok_or_else(|| format!("{key} must be an integer from {min} to {MAX_COUNT}"))
    }

    /// The value as `true` or `false`.
    fn flag(&self) -> Result<bool, String> {
        match self.value {
            "true" => Ok(true),
            "false" => Ok(false),
            _ => Err(format!("{} must be true or false", self.key)),
        }
    }
}

impl Tuning {
    /// Sets `key` to `value`; the error says what is expected.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), String> {
        let v = Value { key, value };
        match key {
            "probe_rate" | "pool" | "max_age" | "q_rif" | "probe_delay" => self.set_prequal(&v),
            "rate_control" | "rate_interval" | "cubic_c" | "smax" | "max_tokens" | "beta"
            | "hysteresis" => self.set_c3(&v),
            "blackout_period"
            | "expiration_period"
            | "weight_update_period"
            | "report_period"
            | "penalty" => self.set_orca(&v),
            _ => self.set_simple(&v),
        }
    }

    /// The keys of the policies with a few plain parameters (random, p2c-pewma,
    /// least-request, ring-hash, maglev, aperture, jiq).
    fn set_simple(&mut self, v: &Value) -> Result<(), String> {
        match v.key {
            "tau" => {
                self.tau =
                    v.number().filter(|&t| t > 0.0).ok_or("tau must be a number > 0".to_string())?
            }
            "weighted" => self.weighted = v.flag()?,
            "choices" => self.choices = v.count(1)?,
            "mode" => {
                self.full_scan = match v.value {
                    "full-scan" => true,
                    "n-choices" => false,
                    _ => return Err("mode must be n-choices or full-scan".into()),
                }
            }
            "bias" => {
                self.bias = v
                    .number()
                    .filter(|&b| (0.0..=100.0).contains(&b))
                    .ok_or("bias must be a number from 0 to 100".to_string())?
            }
            "vnodes" => self.vnodes = v.count(1)?,
            "balance" => {
                self.balance = Some(
                    v.number()
                        .filter(|&b| b > 1.0 && b <= 100.0)
                        .ok_or("balance must be a factor > 1 (1.25 = 25% above the mean)")?,
                )
            }
            "table" => {
                let t = v.value.parse::<u32>().ok().filter(|&t| (3..=10_000_019).contains(&t));
                self.table = t
                    .filter(|&t| is_prime(t))
                    .ok_or("table must be a prime from 3 to 10000019 (65537 by default)")?
            }
            "min_aperture" => self.min_aperture = v.count(1)?,
            "dispatchers" => self.dispatchers = v.count(1)?,
            key => return Err(format!("no parameter {key}")),
        }
        Ok(())
    }

    /// The keys of `prequal`.
    fn set_prequal(&mut self, v: &Value) -> Result<(), String> {
        let p = &mut self.prequal;
        match v.key {
            "probe_rate" => {
                p.probe_rate = v
                    .number()
                    .filter(|&x| (0.0..=100.0).contains(&x))
                    .ok_or("probe_rate must be a number from 0 to 100")?
            }
            "pool" => p.pool = v.count(1)? as usize,
            "max_age" => {
                p.max_age = v.number().filter(|&x| x > 0.0).ok_or("max_age must be a number > 0")?
            }
            "q_rif" => {
                p.q_rif = v
                    .number()
                    .filter(|&x| (0.0..=1.0).contains(&x))
                    .ok_or("q_rif must be a number from 0 to 1")?
            }
            _ => {
                p.probe_delay =
                    v.number().filter(|&x| x >= 0.0).ok_or("probe_delay must be a number >= 0")?
            }
        }
        Ok(())
    }

    /// The keys of `c3`.
    fn set_c3(&mut self, v: &Value) -> Result<(), String> {
        let c = &mut self.c3;
        match v.key {
            "rate_control" => c.rate_control = v.flag()?,
            "rate_interval" | "cubic_c" | "smax" => {
                let key = v.key;
                let x =
                    v.number().filter(|&x| x > 0.0).ok_or(format!("{key} must be a number > 0"))?;
                match key {
                    "rate_interval" => c.interval = x,
                    "cubic_c" => c.cubic_c = x,
                    _ => c.smax = x,
                }
            }
            "max_tokens" => {
                c.max_tokens =
                    v.number().filter(|&x| x >= 1.0).ok_or("max_tokens must be a number >= 1")?
            }
            "beta" => {
                c.beta = v
                    .number()
                    .filter(|&x| x > 0.0 && x < 1.0)
                    .ok_or("beta must be a number between 0 and 1")?
            }
            _ => {
                c.hysteresis =
                    v.number().filter(|&x| x >= 0.0).ok_or("hysteresis must be a number >= 0")?
            }
        }
        Ok(())
    }

    /// The keys of `wrr-orca`: periods and the error penalty.
    fn set_orca(&mut self, v: &Value) -> Result<(), String> {
        let key = v.key;
        let positive = !matches!(key, "blackout_period" | "penalty");
        let x =
            v.number().filter(|&x| if positive { x > 0.0 } else { x >= 0.0 }).ok_or_else(|| {
                format!("{key} must be a number {}", if positive { "> 0" } else { ">= 0" })
            })?;
        let o = &mut self.orca;
        match key {
            "blackout_period" => o.blackout = x,
            "expiration_period" => o.expiration = x,
            "weight_update_period" => o.update = x,
            "report_period" => o.report = x,
            _ => o.penalty = x,
        }
        Ok(())
    }
}

fn is_prime(n: u32) -> bool {
    n >= 2 && (2..).take_while(|d| d * d <= n).all(|d| !n.is_multiple_of(d))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_parsed_and_checked() {
        let mut t = Tuning::default();
        t.set("choices", "3").unwrap();
        t.set("mode", "full-scan").unwrap();
        t.set("balance", "1.25").unwrap();
        t.set("table", "251").unwrap();
        assert_eq!((t.choices, t.full_scan, t.balance, t.table), (3, true, Some(1.25), 251));
        assert!(t.set("choices", "0").is_err());
        assert!(t.set("balance", "1").is_err());
        assert!(t.set("table", "250").is_err(), "not prime");
        assert!(t.set("mode", "scan").is_err());
        assert!(t.set("tau", "-1").is_err());
    }
}

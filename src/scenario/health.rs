//! `[health]` and `[client]`'s breakers in a scenario (SPEC §12): their values checked, each
//! error naming its key. What they do is in [`crate::lifecycle::health`].

use super::{Invalid, Spec, invalid, num};
use crate::lifecycle::health::{Breaker, Health};

/// A time `> 0`.
fn positive(key: &str, d: f64) -> Result<(), Invalid> {
    if d.is_finite() && d > 0.0 {
        Ok(())
    } else {
        Err(invalid(key, format!("expected a time > 0, got {}", num(d))))
    }
}

/// A fraction in `[0, 1]`.
fn fraction(key: &str, f: f64, what: &str) -> Result<(), Invalid> {
    if (0.0..=1.0).contains(&f) {
        Ok(())
    } else {
        Err(invalid(key, format!("expected a fraction from 0 to 1 ({what}), got {}", num(f))))
    }
}

/// A count `>= 1`.
fn at_least_one(key: &str, n: u32) -> Result<(), Invalid> {
    if n >= 1 { Ok(()) } else { Err(invalid(key, "expected at least 1, got 0")) }
}

/// `[health]`'s values.
pub(super) fn validate_health(h: &Health) -> Result<(), Invalid> {
    if let Some(o) = &h.outlier {
        at_least_one("health.outlier.consecutive_errors", o.consecutive_errors)?;
        positive("health.outlier.interval", o.interval)?;
        positive("health.outlier.base_ejection", o.base_ejection)?;
        fraction("health.outlier.max_ejection", o.max_ejection, "0.1 = Envoy's 10%")?;
    } else if h.success_rate {
        return Err(invalid(
            "health.success_rate",
            "success-rate ejection is part of outlier detection: add health.outlier",
        ));
    }
    if let Some(c) = &h.checks {
        positive("health.checks.interval", c.interval)?;
        positive("health.checks.timeout", c.timeout)?;
        at_least_one("health.checks.unhealthy", c.unhealthy)?;
        at_least_one("health.checks.healthy", c.healthy)?;
    }
    fraction("health.panic", h.panic, "0.5 = Envoy's 50%, 0 = never")?;
    if let Some(s) = &h.slow_start {
        positive("health.slow_start.window", s.window)?;
        if !(s.aggression.is_finite() && s.aggression > 0.0) {
            return Err(invalid(
                "health.slow_start.aggression",
                format!("expected a number > 0 (1 = linear), got {}", num(s.aggression)),
            ));
        }
        if !(s.min_weight > 0.0 && s.min_weight <= 1.0) {
            return Err(invalid(
                "health.slow_start.min_weight",
                format!(
                    "expected a fraction above 0 and at most 1 (0.1 = Envoy's 10%), got {}",
                    num(s.min_weight)
                ),
            ));
        }
    }
    Ok(())
}

/// `[client] breaker`'s values.
pub(super) fn validate_breaker(b: &Breaker) -> Result<(), Invalid> {
    at_least_one("client.breaker.failures", b.failures)?;
    positive("client.breaker.recovery", b.recovery)
}

impl Spec {
    /// `[health]` and `[client] breaker`: their values. `[health]` alone needs one of its
    /// rules (outlier detection, checks, slow start) or a breaker: its `panic` acts only on
    /// hosts they exclude. Slow start applies to `rr` and `least-request` (Envoy's EDF
    /// balancers); the other policies have no weights of that kind and ignore it.
    pub(super) fn validate_health(&self) -> Result<(), Invalid> {
        let breaker = self.client.as_ref().and_then(|c| c.breaker.as_ref());
        if let Some(b) = breaker {
            validate_breaker(b)?;
        }
        if let Some(h) = &self.health {
            validate_health(h)?;
            let rules = h.outlier.is_some() || h.checks.is_some() || h.slow_start.is_some();
            if breaker.is_none() && !rules {
                return Err(invalid(
                    "health.panic",
                    "nothing excludes hosts without health.outlier, health.checks or \
                     client.breaker: the panic threshold has nothing to act on; add one of them \
                     or leave out [health]",
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lifecycle::health::{Checks, Outlier, SlowStart};

    #[test]
    fn the_defaults_are_valid_and_each_bad_value_names_its_key() {
        let ok = Health {
            outlier: Some(Outlier::default()),
            success_rate: true,
            checks: Some(Checks::default()),
            ..Health::default()
        };
        assert!(validate_health(&ok).is_ok());
        let bad = |h: Health| validate_health(&h).unwrap_err().message;
        let e = bad(Health { panic: 1.5, ..Health::default() });
        assert!(e.contains("health.panic"), "{e}");
        let e = bad(Health { success_rate: true, ..Health::default() });
        assert!(e.contains("health.success_rate"), "{e}");
        let e = bad(Health {
            outlier: Some(Outlier { consecutive_errors: 0, ..Outlier::default() }),
            ..Health::default()
        });
        assert!(e.contains("health.outlier.consecutive_errors"), "{e}");
        let slow = |s: SlowStart| bad(Health { slow_start: Some(s), ..Health::default() });
        for (s, key) in [
            (SlowStart { window: 0.0, ..SlowStart::default() }, "window"),
            (SlowStart { aggression: 0.0, ..SlowStart::default() }, "aggression"),
            (SlowStart { aggression: f64::NAN, ..SlowStart::default() }, "aggression"),
            (SlowStart { min_weight: 0.0, ..SlowStart::default() }, "min_weight"),
            (SlowStart { min_weight: 1.5, ..SlowStart::default() }, "min_weight"),
        ] {
            let e = slow(s);
            assert!(e.contains(&format!("health.slow_start.{key}")), "{e}");
        }
        let full = SlowStart { min_weight: 1.0, ..SlowStart::default() };
        assert!(validate_health(&Health { slow_start: Some(full), ..Health::default() }).is_ok());
        let e = validate_breaker(&Breaker { failures: 5, recovery: -1.0 }).unwrap_err();
        assert_eq!(e.key, "client.breaker.recovery");
    }
}

#[cfg(test)]
mod parse_tests {
    use crate::lifecycle::health::{HostState, Outlier};
    use crate::scenario::Source;

    #[test]
    fn a_file_with_health_and_host_states_reads_into_the_lifecycle() {
        let text = r#"
            [farm]
            groups = [{ name = "a", count = 4, rate = 1.0 }]
            [health]
            outlier = { consecutive_errors = 3 }
            [client]
            breaker = { failures = 2 }
            [[events]]
            at = 10.0
            group = "a"
            state = "down"
        "#;
        let source = Source::parse("f.toml", text).unwrap();
        let spec = source.spec_of(&source.table).unwrap();
        let l = spec.lifecycle().expect("a lifecycle");
        let h = l.health.expect("health");
        assert_eq!(h.outlier, Some(Outlier { consecutive_errors: 3, ..Outlier::default() }));
        assert_eq!(h.panic, 0.5);
        assert_eq!(l.changes[0].state, Some(HostState::Down));
        assert_eq!(l.client.breaker.map(|b| (b.failures, b.recovery)), Some((2, 30_000.0)));
        assert!(spec.lifecycle_columns());
        // Outlier detection runs, and slow start (alone too); a bad slow start names its key;
        // the breaker alone, and with [health]'s panic, runs.
        assert!(source.points().is_ok());
        let slow = text.replace("[client]", "slow_start = { window = 10.0 }\n[client]");
        assert!(Source::parse("f.toml", &slow).unwrap().points().is_ok());
        let alone = slow.replace("outlier = { consecutive_errors = 3 }", "");
        let alone = alone.replace("breaker = { failures = 2 }", "");
        assert!(Source::parse("f.toml", &alone).unwrap().points().is_ok());
        let bad = slow.replace("window = 10.0", "window = 0.0");
        let e = Source::parse("f.toml", &bad).unwrap().points().unwrap_err().to_string();
        assert!(e.contains("health.slow_start.window"), "{e}");
        let panic_only = text.replace("outlier = { consecutive_errors = 3 }", "panic = 0.3");
        assert!(Source::parse("f.toml", &panic_only).unwrap().points().is_ok());
        let no_breaker = panic_only.replace("breaker = { failures = 2 }", "");
        let e = Source::parse("f.toml", &no_breaker).unwrap().points().unwrap_err().to_string();
        assert!(e.contains("health.panic"), "{e}");
        let bad = text.replace("\"down\"", "\"sideways\"");
        let e = Source::parse("f.toml", &bad).unwrap_err().to_string();
        assert!(e.contains("sideways") && e.contains("events[0].state"), "{e}");
    }
}

//! Counts as scenario files write them: `100`, or `1e2` (a float in TOML) when it is an exact
//! integer. Scenarios and workloads both read them.

use std::fmt;

use serde::{Deserialize, Serialize};

/// A count: a TOML integer, or a float that is an exact integer (`1e6` is a float in TOML).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct Count(pub u64);

impl<'de> Deserialize<'de> for Count {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Count, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = Count;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a non-negative integer (1e6 is accepted)")
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Count, E> {
                u64::try_from(v)
                    .map(Count)
                    .map_err(|_| E::custom(format!("expected a count >= 0, got {v}")))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Count, E> {
                Ok(Count(v))
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Count, E> {
                if v.is_finite() && v >= 0.0 && v.fract() == 0.0 && v < 1.8e19 {
                    Ok(Count(v as u64))
                } else {
                    Err(E::custom(format!(
                        "expected a non-negative integer, got {}",
                        crate::output::table::format_number(v)
                    )))
                }
            }
        }
        d.deserialize_any(Visitor)
    }
}

//! `[[classes]]` (SPEC §13): traffic classes, their shares, priorities, weights and service laws,
//! with the `[farm]` keys that schedule by class (`discipline`, `aging`, `slice`).
//!
//! ```toml
//! [farm]
//! discipline = "priority"      # or priority-preemptive, fair, cfs
//! [[classes]]
//! name = "interactive"
//! share = 0.3
//! priority = 0
//! weight = 3.0                 # or nice = -5 (CFS's table)
//! [[classes]]
//! name = "batch"
//! share = 0.7
//! priority = 1
//! service = { kind = "lognormal", scv = 4.0 }
//! ```

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::{Discipline, Invalid, Spec, invalid, keyed, num};
use crate::error::KeyError;
use crate::model::{Class, Classes, DEFAULT_SLICE, nice_weight};
use crate::workload::ServiceSpec;

/// The most classes a scenario may have.
pub const MAX_CLASSES: usize = 64;

/// The highest priority level (the lowest priority).
pub const MAX_PRIORITY: u32 = 1000;

/// How close to 1 the shares must sum.
pub const SHARE_TOLERANCE: f64 = 1e-9;

/// One `[[classes]]` entry as written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClassSpec {
    /// The class's name (the `class` column); unique.
    pub name: String,
    /// Fraction of arrivals, in `(0, 1]`; the shares sum to 1.
    pub share: f64,
    /// Priority level, 0 the highest (0 by default).
    #[serde(default)]
    pub priority: u32,
    /// Weight under `fair` and `cfs` (> 0; 1 by default, or from `nice`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weight: Option<f64>,
    /// Nice value, -20 to 19: the weight from Linux's `sched_prio_to_weight` (nice 0 = weight 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nice: Option<i32>,
    /// The class's own service law, a `[service]` table (the scenario's by default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service: Option<ServiceSpec>,
    /// The per-attempt timeout of this class's requests (Envoy's `per_try_timeout`, as
    /// `[client] timeout`), which replaces `[client] timeout` for them; without `[client]`,
    /// the client's defaults hold (no retries, no deadline, `cancel = false`). `> 0`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<f64>,
}

impl ClassSpec {
    /// The weight relative to nice 0: `weight`, or `nice` through the kernel's table, or 1.
    pub fn weight(&self) -> f64 {
        match (self.weight, self.nice) {
            (Some(w), _) => w,
            (None, Some(n)) => nice_weight(n),
            (None, None) => 1.0,
        }
    }
}

impl Spec {
    /// `[[classes]]` and the `[farm]` keys that read them: one line naming the key.
    pub(super) fn validate_classes(&self) -> Result<(), Invalid> {
        let farm = &self.farm;
        if self.classes.is_empty() {
            if farm.discipline.by_class() {
                return Err(invalid(
                    "farm.discipline",
                    format!("\"{}\" schedules by class: add [[classes]]", farm.discipline.name()),
                ));
            }
            return self.validate_class_keys();
        }
        if self.classes.len() > MAX_CLASSES {
            return Err(invalid(
                "classes",
                format!("{} classes; at most {MAX_CLASSES}", self.classes.len()),
            ));
        }
        let mut total = 0.0;
        for (i, c) in self.classes.iter().enumerate() {
            let at = |key: &str| format!("classes[{i}].{key}");
            if c.name.trim().is_empty() || c.name == "all" {
                return Err(invalid(&at("name"), format!("'{}' cannot name a class", c.name)));
            }
            if self.classes[..i].iter().any(|o| o.name == c.name) {
                return Err(invalid(&at("name"), format!("two classes are named '{}'", c.name)));
            }
            if !(c.share > 0.0 && c.share <= 1.0) {
                return Err(invalid(
                    &at("share"),
                    format!("expected 0 < share <= 1, got {}", num(c.share)),
                ));
            }
            total += c.share;
            if c.priority > MAX_PRIORITY {
                return Err(invalid(
                    &at("priority"),
                    format!("expected 0 to {MAX_PRIORITY} (0 = highest), got {}", c.priority),
                ));
            }
            if let Some(w) = c.weight
                && !(w > 0.0 && w.is_finite())
            {
                return Err(invalid(
                    &at("weight"),
                    format!("expected a weight > 0, got {}", num(w)),
                ));
            }
            if let Some(n) = c.nice
                && !(-20..=19).contains(&n)
            {
                return Err(invalid(&at("nice"), format!("expected -20 to 19, got {n}")));
            }
            if c.weight.is_some() && c.nice.is_some() {
                return Err(invalid(&at("nice"), "give weight or nice, not both"));
            }
            if let Some(s) = &c.service {
                s.validate().map_err(|e| keyed(e.under(&format!("classes[{i}]"))))?;
            }
            if let Some(t) = c.timeout
                && !(t > 0.0 && t.is_finite())
            {
                return Err(invalid(
                    &at("timeout"),
                    format!("expected a time > 0, got {}", num(t)),
                ));
            }
        }
        if (total - 1.0).abs() > SHARE_TOLERANCE {
            return Err(invalid(
                "classes",
                format!("the shares sum to {}; they must sum to 1", num(total)),
            ));
        }
        self.validate_class_keys()
    }

    /// `farm.aging` (priority only) and `farm.slice` (cfs only).
    fn validate_class_keys(&self) -> Result<(), Invalid> {
        let farm = &self.farm;
        let d = farm.discipline;
        if let Some(a) = farm.aging {
            if d != Discipline::Priority {
                return Err(invalid("farm.aging", "applies to discipline = \"priority\""));
            }
            if !(a > 0.0 && a.is_finite()) {
                return Err(invalid("farm.aging", format!("expected a time > 0, got {}", num(a))));
            }
        }
        if let Some(s) = farm.slice {
            if d != Discipline::Cfs {
                return Err(invalid("farm.slice", "applies to discipline = \"cfs\""));
            }
            if !(s > 0.0 && s.is_finite()) {
                return Err(invalid("farm.slice", format!("expected a time > 0, got {}", num(s))));
            }
        }
        Ok(())
    }

    /// The classes, their service laws built (files relative to `dir`); `None` without
    /// `[[classes]]`. The spec must be valid.
    pub fn classes(&self, dir: &Path) -> Result<Option<Classes>, KeyError> {
        if self.classes.is_empty() {
            return Ok(None);
        }
        let classes = self
            .classes
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let service = match &c.service {
                    Some(s) => Some(s.build(dir).map_err(|e| e.under(&format!("classes[{i}]")))?),
                    None => None,
                };
                Ok(Class {
                    name: c.name.clone(),
                    share: c.share,
                    priority: c.priority,
                    weight: c.weight(),
                    service,
                    timeout: c.timeout,
                })
            })
            .collect::<Result<Vec<_>, KeyError>>()?;
        Ok(Some(Classes {
            classes,
            aging: self.farm.aging,
            slice: self.farm.slice.unwrap_or(DEFAULT_SLICE),
        }))
    }
}

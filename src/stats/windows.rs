//! The time series of `lbsim run --series`, as a replication's result holds it.
//!
//! The engine records it (its window recorder fills one per replication); it lives here, beside
//! the rest of a replication's result, so that statistics do not depend on the engine.

use serde::{Deserialize, Serialize};

/// One replication's series: per window of `width` time units from time 0.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Windows {
    /// The window width.
    pub width: f64,
    /// `picks[w][s]`: measured requests dispatched to server `s` during window `w`.
    pub picks: Vec<Vec<u64>>,
    /// `queue[w][s]`: the integral over window `w` of server `s`'s queue length.
    pub queue: Vec<Vec<f64>>,
    /// `latency[w]`: sojourn bucket counts (the engine's `bucket`) of the measured requests that
    /// arrived in window `w`.
    pub latency: Vec<Vec<u64>>,
}

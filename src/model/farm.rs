//! What a replication simulates: the farm (rates, slots, discipline, rate changes), what the
//! policy sees, and how long it runs. The event loop that simulates it is the engine's, a layer
//! above this one.

use std::ops::Range;

/// The workload: the servers, how they serve, how their rates change, and the utilisation.
#[derive(Debug, Clone, PartialEq)]
pub struct Farm {
    /// Service rate of each server (of each of its workers), at time 0.
    pub rates: Vec<f64>,
    /// Utilisation: arrivals come at `load * slots * sum(rates)`.
    pub load: f64,
    /// Workers per server (at least 1), sharing the server's one queue.
    pub slots: u32,
    /// How a server shares its workers among the requests it holds.
    pub discipline: Discipline,
    /// Rate changes during the run, in the order given (simultaneous ones apply in that order).
    pub events: Vec<RateChange>,
    /// A rate limiter in front of the balancer (`[admission]`).
    pub admission: Option<crate::admission::Admission>,
    /// Errors, response delays, a queue limit and what clients do with their requests
    /// (`[client]`, SPEC §11); `None` leaves the request lifecycle out of the replication.
    pub lifecycle: Option<Box<crate::lifecycle::Lifecycle>>,
    /// Traffic classes (`[[classes]]`, SPEC §13); `None` leaves them out of the replication.
    pub classes: Option<Box<super::Classes>>,
}

/// How a server serves the requests it holds.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Discipline {
    /// First in, first out: the `slots` earliest requests present are in service, each at the
    /// server's rate; the others wait.
    #[default]
    Fifo,
    /// Processor sharing: all `k` requests present are in service at once, each at
    /// `rate * min(1, slots / k)` (Kleinrock, *Queueing Systems* vol. 1, §4.8; with `slots = c`,
    /// `c` processors shared equally, none idle while requests wait).
    Ps,
    /// Non-preemptive priority: a free worker takes the waiting request of the highest
    /// priority (the lowest level), FIFO within a level (Cobham 1954; Kleinrock vol. 2, §3.6).
    Priority,
    /// Preemptive-resume priority: a request of a higher priority than one in service takes
    /// its worker at once; the one preempted waits, first of its level, and resumes where it
    /// stopped.
    #[serde(rename = "priority-preemptive")]
    PriorityPreemptive,
    /// Weighted fair queueing: the classes with work share the server in proportion to their
    /// weights (generalised processor sharing, Parekh & Gallager 1993), FIFO within a class.
    Fair,
    /// The chapter's CFS (§39.22): the class with the least vruntime runs its oldest request
    /// for a slice; its vruntime grows by the time it ran over its weight.
    Cfs,
}

impl Discipline {
    /// Whether the discipline schedules by class (it needs `[[classes]]`).
    pub fn by_class(self) -> bool {
        !matches!(self, Discipline::Fifo | Discipline::Ps)
    }

    /// The word a scenario file writes.
    pub fn name(self) -> &'static str {
        match self {
            Discipline::Fifo => "fifo",
            Discipline::Ps => "ps",
            Discipline::Priority => "priority",
            Discipline::PriorityPreemptive => "priority-preemptive",
            Discipline::Fair => "fair",
            Discipline::Cfs => "cfs",
        }
    }
}

/// At time `at`, every server in `servers` changes its rate to `rate`. The change applies to the
/// work remaining at each of them, the requests in service included.
#[derive(Debug, Clone, PartialEq)]
pub struct RateChange {
    /// Absolute simulated time (warm-up included), `>= 0`.
    pub at: f64,
    /// Server indices.
    pub servers: Range<usize>,
    /// The new rate (> 0).
    pub rate: f64,
}

impl Farm {
    /// `rates.len()` single-worker FIFO servers with these rates and no rate changes.
    pub fn new(rates: Vec<f64>, load: f64) -> Farm {
        Farm {
            rates,
            load,
            slots: 1,
            discipline: Discipline::Fifo,
            events: Vec::new(),
            admission: None,
            lifecycle: None,
            classes: None,
        }
    }

    /// `n` servers of rate 1.
    pub fn homogeneous(n: usize, load: f64) -> Farm {
        Farm::new(vec![1.0; n], load)
    }

    /// Total arrival rate: `load` times the capacity at time 0, `slots * sum(rates)`.
    pub fn arrival_rate(&self) -> f64 {
        self.load * self.rates.iter().sum::<f64>() * f64::from(self.slots)
    }
}

/// What the policy sees: the configuration of an information model (the `info` module, one layer
/// up, runs it).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Information {
    /// True queue lengths at every instant.
    Live,
    /// A bulletin board: every `period` time units all true queue lengths are posted at once; in
    /// between the board is stale, except that with `local` each dispatch adds one to the chosen
    /// server's entry at once.
    Board {
        /// Posting period (> 0).
        period: f64,
        /// Update-on-dispatch.
        local: bool,
    },
}

/// How many arrivals are simulated.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RunLength {
    /// Arrivals simulated before measuring.
    pub warmup: u64,
    /// Arrivals measured (at least 2, so that both halves of the drift ratio are non-empty).
    pub requests: u64,
}

/// Everything else a replication needs.
#[derive(Debug, Clone, PartialEq)]
pub struct SimOptions {
    /// What the policy sees.
    pub info: Information,
    /// Keep the time-averaged fraction of servers at each queue length (`fixed`).
    pub track_levels: bool,
    /// Stop the replication when a queue exceeds this length.
    pub queue_guard: u32,
    /// Record the per-window series (`run --series`) with windows of this width.
    pub series: Option<f64>,
    /// With `series`: the servers of each of the farm's groups, in order (empty: one group).
    pub series_groups: Vec<u32>,
    /// With `series`: write the windows to a tape as they close instead of keeping them.
    pub series_spool: bool,
}

impl SimOptions {
    /// A replication under `info` with nothing else: no levels, no series, no queue guard.
    pub fn plain(info: Information) -> SimOptions {
        SimOptions {
            info,
            track_levels: false,
            queue_guard: u32::MAX,
            series: None,
            series_groups: Vec::new(),
            series_spool: false,
        }
    }
}

//! Admission control: a rate limiter in front of the balancer.
//!
//! Each limiter follows the rate-limiting chapter (`seeds/003`, §39.1–39.17) and, where it names
//! one, the real system's source: [`token_bucket`] (§39.1), [`leaky_bucket`] (NGINX `limit_req`,
//! `ngx_http_limit_req_module.c`), [`gcra`] (redis-cell's `src/cell/mod.rs`), [`fixed_window`],
//! [`sliding_log`] and [`sliding_window`] (§39.3, §39.13), and [`adaptive`] (the SRE book's
//! client-side throttling, §39.15). All are lazy arithmetic on the arrival times: no timer
//! events, nothing at all when a scenario has no `[admission]`.
//!
//! [`Admission`] is a validated limiter: its kind, `instances = N` uncoordinated copies each of
//! a `1/N` share (rate, burst or limit; §39.17's per-instance quotas), how traffic is split among
//! them, and the `period` over which `max_in_window` counts what passed. [`Gate`] runs one in a
//! replication and counts [`AdmissionStats`].

pub mod adaptive;
pub mod composite;
pub mod fixed_window;
pub mod gcra;
pub mod leaky_bucket;
pub mod sliding_log;
pub mod sliding_window;
pub mod sync;
pub mod token_bucket;

use std::collections::VecDeque;

use rand::RngExt;
use serde::{Deserialize, Serialize};

use crate::error::KeyError;
use crate::named::{Name, Named};
use crate::output::table::format_number;
use crate::rng::SimRng;

pub use adaptive::Adaptive;
pub use composite::{Composite, Layer, Per, PerName, Scope};
pub use fixed_window::FixedWindow;
pub use gcra::Gcra;
pub use leaky_bucket::{LeakyBucket, Verdict};
pub use sliding_log::SlidingLog;
pub use sliding_window::SlidingWindow;
pub use sync::QuotaSync;
pub use token_bucket::TokenBucket;

/// The limiter names, as `--admission NAME:...` and `[admission] kind` take them
/// (`composite` only in a scenario file: its `layers` are a list of tables).
pub const KINDS: [&str; 8] = [
    "token-bucket",
    "leaky-bucket",
    "gcra",
    "fixed-window",
    "sliding-log",
    "sliding-window",
    "adaptive",
    "composite",
];

/// A limiter by its name (one of [`KINDS`], in that order).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimiterName {
    /// `token-bucket`.
    TokenBucket,
    /// `leaky-bucket`.
    LeakyBucket,
    /// `gcra`.
    Gcra,
    /// `fixed-window`.
    FixedWindow,
    /// `sliding-log`.
    SlidingLog,
    /// `sliding-window`.
    SlidingWindow,
    /// `adaptive`.
    Adaptive,
    /// `composite`: layers a request must all pass (§39.16, §39.21).
    Composite,
}

impl LimiterName {
    /// Every limiter, in the order of [`KINDS`].
    pub const ALL: [LimiterName; 8] = {
        use LimiterName::*;
        [
            TokenBucket,
            LeakyBucket,
            Gcra,
            FixedWindow,
            SlidingLog,
            SlidingWindow,
            Adaptive,
            Composite,
        ]
    };
}

impl Name for LimiterName {
    fn parse(s: &str) -> Option<Self> {
        KINDS.iter().position(|k| *k == s).map(|i| LimiterName::ALL[i])
    }

    fn name(self) -> &'static str {
        KINDS[self as usize]
    }
}

/// How requests spread over the instances, by name (`split = "uniform"` or `"skewed"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SplitName {
    /// `uniform`: each instance equally likely.
    Uniform,
    /// `skewed`: the first instance gets the fraction `skew`.
    Skewed,
}

impl Name for SplitName {
    fn parse(s: &str) -> Option<Self> {
        match s {
            "uniform" => Some(SplitName::Uniform),
            "skewed" => Some(SplitName::Skewed),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            SplitName::Uniform => "uniform",
            SplitName::Skewed => "skewed",
        }
    }
}

/// `[admission]` as written: every key optional but `kind`; [`AdmissionSpec::resolve`] checks
/// which apply and fills in the defaults.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AdmissionSpec {
    /// The limiter: one of [`KINDS`], or a word naming none (refused by
    /// [`AdmissionSpec::resolve`]).
    pub kind: Named<LimiterName>,
    /// Requests per time unit (token-bucket, leaky-bucket, gcra).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate: Option<f64>,
    /// Bucket size: token-bucket's capacity (default 1), NGINX's and redis-cell's `burst`
    /// (default 0; both pass `burst + 1` at once).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub burst: Option<f64>,
    /// leaky-bucket: pass excess requests at once instead of delaying them (default false).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nodelay: Option<bool>,
    /// Requests per window (fixed-window, sliding-log, sliding-window).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit: Option<u64>,
    /// Window length (default 1); adaptive: the history kept (default 120).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub window: Option<f64>,
    /// adaptive: the multiplier K (default 2).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub k: Option<f64>,
    /// adaptive: a server holding this many requests rejects the next (default 10).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue_limit: Option<u32>,
    /// Uncoordinated local limiters, each with a 1/N share (default 1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instances: Option<u32>,
    /// How requests spread over the instances: "uniform" (default) or "skewed", or a word
    /// naming neither (refused by [`AdmissionSpec::resolve`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub split: Option<Named<SplitName>>,
    /// skewed: the fraction of requests the first instance receives (default 0.5); the others
    /// share the rest evenly.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skew: Option<f64>,
    /// The window of `max_in_window` (default: `window` for window limiters, else 1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub period: Option<f64>,
    /// composite: the layers, each a limiter with its `per`, checked in order.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub layers: Option<Vec<AdmissionSpec>>,
    /// A layer of a composite: one limiter for all (`global`, the default), one per key of
    /// `[keys]` (`key`) or one per client (`client`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub per: Option<Named<PerName>>,
    /// With `instances`: the period of the quotas' rebalancing (§39.17 scheme 3; token-bucket).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sync: Option<f64>,
    /// A central limiter: the round trip each decision costs (§39.17 scheme 1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rtt: Option<f64>,
}

/// A limiter's kind and parameters, validated.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Kind {
    /// [`TokenBucket`].
    TokenBucket {
        /// Tokens per time unit.
        rate: f64,
        /// Capacity.
        burst: f64,
    },
    /// [`LeakyBucket`].
    LeakyBucket {
        /// Drain rate.
        rate: f64,
        /// NGINX's `burst`.
        burst: f64,
        /// NGINX's `nodelay`.
        nodelay: bool,
    },
    /// [`Gcra`].
    Gcra {
        /// Requests per time unit.
        rate: f64,
        /// redis-cell's `max_burst`.
        burst: f64,
    },
    /// [`FixedWindow`].
    FixedWindow {
        /// Requests per window.
        limit: u64,
        /// Window length.
        window: f64,
    },
    /// [`SlidingLog`].
    SlidingLog {
        /// Requests per window.
        limit: u64,
        /// Window length.
        window: f64,
    },
    /// [`SlidingWindow`].
    SlidingWindow {
        /// Requests per window.
        limit: u64,
        /// Window length.
        window: f64,
    },
    /// [`Adaptive`], with servers that reject above `queue_limit`.
    Adaptive {
        /// K.
        k: f64,
        /// History.
        window: f64,
        /// Server-side rejection threshold.
        queue_limit: u32,
    },
    /// [`Composite`]: the layers are [`Admission::layers`].
    Composite,
}

/// How requests spread over the instances.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Split {
    /// Each instance equally likely.
    Uniform,
    /// The first instance gets this fraction, the others share the rest evenly.
    Skewed(f64),
}

/// A validated admission stage.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Admission {
    /// The limiter (the whole rate, burst or limit, before the split into instances).
    #[serde(flatten)]
    pub kind: Kind,
    /// Instances, each with a 1/N share: uncoordinated, or rebalanced every `sync`.
    pub instances: u32,
    /// How requests spread over them.
    pub split: Split,
    /// The window of `max_in_window`.
    pub period: f64,
    /// [`Kind::Composite`]'s layers, in the order a request is checked (empty otherwise).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub layers: Vec<Layer>,
    /// The period at which the instances' quotas are rebalanced ([`QuotaSync`]); none:
    /// uncoordinated instances.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sync: Option<f64>,
    /// A central limiter's round trip: every admitted request reaches the balancer this much
    /// later (none: a local limiter, no cost).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rtt: Option<f64>,
    /// The request keys a `per = "key"` layer draws from (`[keys]`), set by
    /// [`Admission::with_scopes`].
    #[serde(skip)]
    pub keys: Option<crate::workload::KeySpec>,
    /// The clients a `per = "client"` layer tells apart (`[info] clients`), set by
    /// [`Admission::with_scopes`] (default 1).
    #[serde(skip)]
    pub clients: u32,
}

/// `message` about `admission.KEY`.
fn refused(key: &str, message: impl std::fmt::Display) -> KeyError {
    KeyError::new(format!("admission.{key}"), message)
}

fn positive(key: &str, v: Option<f64>, default: Option<f64>) -> Result<f64, KeyError> {
    match v.or(default) {
        Some(x) if x.is_finite() && x > 0.0 => Ok(x),
        Some(x) => Err(refused(key, format!("expected a number > 0, got {}", format_number(x)))),
        None => Err(refused(key, "missing (the limiter needs it)")),
    }
}

fn non_negative(key: &str, v: Option<f64>, default: f64) -> Result<f64, KeyError> {
    match v.unwrap_or(default) {
        x if x.is_finite() && x >= 0.0 => Ok(x),
        x => Err(refused(key, format!("expected a number >= 0, got {}", format_number(x)))),
    }
}

impl AdmissionSpec {
    /// Reads `NAME` or `NAME:key=value,key=value` (`--admission`, `lbsim limit --limiter`).
    pub fn parse(text: &str) -> Result<AdmissionSpec, KeyError> {
        let whole = |message: String| KeyError::new("admission", message);
        let (name, params) = text.split_once(':').unwrap_or((text, ""));
        let mut table = toml::Table::new();
        table.insert("kind".into(), toml::Value::String(name.trim().into()));
        for kv in params.split(',').filter(|s| !s.trim().is_empty()) {
            let (key, value) =
                kv.split_once('=').ok_or_else(|| whole(format!("'{kv}' is not key=value")))?;
            let value = value.trim();
            let parsed = format!("v = {value}")
                .parse::<toml::Table>()
                .ok()
                .and_then(|mut t| t.remove("v"))
                .unwrap_or_else(|| toml::Value::String(value.into()));
            if let Some(first) = table.insert(key.trim().into(), parsed) {
                let key = key.trim();
                return Err(whole(format!(
                    "parameter '{key}' is given twice ({key}={first} and {key}={value})"
                )));
            }
        }
        table.try_into().map_err(|e: toml::de::Error| whole(e.message().trim().to_string()))
    }

    /// Checks the keys against the kind and fills in the defaults.
    pub fn resolve(&self) -> Result<Admission, KeyError> {
        let kind = self.kind()?;
        if self.per.is_some() {
            return Err(refused("per", "applies to a layer of kind = \"composite\""));
        }
        let layers = match kind {
            Kind::Composite => self.layers()?,
            _ if self.layers.is_some() => {
                return Err(refused("layers", "applies to kind = \"composite\""));
            }
            _ => Vec::new(),
        };
        let instances = self.instances.unwrap_or(1);
        if !(1..=10_000).contains(&instances) {
            return Err(refused("instances", format!("expected 1 to 10000, got {instances}")));
        }
        let split = self.split(instances)?;
        if kind == Kind::Composite
            && let Some(key) =
                [("instances", self.instances), ("split", self.split.as_ref().map(|_| 1))]
                    .iter()
                    .find_map(|(key, v)| v.map(|_| *key))
        {
            return Err(refused(key, "does not apply to kind = \"composite\" (one set of layers)"));
        }
        let sync = self.sync(kind, instances)?;
        let rtt = self.rtt(kind, instances)?;
        let window = match kind {
            Kind::FixedWindow { window, .. }
            | Kind::SlidingLog { window, .. }
            | Kind::SlidingWindow { window, .. } => window,
            _ => 1.0,
        };
        let period = positive("period", self.period, Some(window))?;
        Ok(Admission { kind, instances, split, period, layers, sync, rtt, keys: None, clients: 1 })
    }

    /// A composite's layers, each a limiter that decides at once and its `per`; refusals name
    /// `admission.layers[i].KEY`.
    fn layers(&self) -> Result<Vec<Layer>, KeyError> {
        let layers = match &self.layers {
            None => {
                return Err(refused(
                    "layers",
                    "missing (a composite needs its layers: a list of tables, written in a scenario file)",
                ));
            }
            Some(l) if l.is_empty() => {
                return Err(refused("layers", "expected at least one layer, got an empty list"));
            }
            Some(l) => l,
        };
        let mut out = Vec::with_capacity(layers.len());
        for (i, layer) in layers.iter().enumerate() {
            let at = |e: KeyError| {
                let key = e.key.replacen("admission.", &format!("admission.layers[{i}]."), 1);
                KeyError::new(key, e.message)
            };
            let own = |key: &str, message: &str| at(refused(key, message));
            let kind = layer.kind().map_err(at)?;
            match kind {
                Kind::Composite => return Err(own("kind", "a layer cannot be a composite")),
                Kind::Adaptive { .. } => {
                    return Err(own(
                        "kind",
                        "a layer decides at once; \"adaptive\" waits for the servers",
                    ));
                }
                Kind::LeakyBucket { nodelay: false, .. } => {
                    return Err(own(
                        "nodelay",
                        "a layer decides at once: a leaky bucket needs nodelay = true",
                    ));
                }
                _ => {}
            }
            let whole = [
                ("layers", layer.layers.is_some()),
                ("instances", layer.instances.is_some()),
                ("split", layer.split.is_some()),
                ("skew", layer.skew.is_some()),
                ("period", layer.period.is_some()),
                ("sync", layer.sync.is_some()),
                ("rtt", layer.rtt.is_some()),
            ];
            if let Some((key, _)) = whole.iter().find(|(_, given)| *given) {
                return Err(own(key, "applies to the whole [admission], not to a layer"));
            }
            let per = match layer.per.as_ref().map_or(Ok(PerName::Global), Named::get) {
                Ok(PerName::Global) => Per::Global,
                Ok(PerName::Key) => Per::Key,
                Ok(PerName::Client) => Per::Client,
                Err(other) => {
                    let message = format!("'{other}': expected \"global\", \"key\" or \"client\"");
                    return Err(at(refused("per", message)));
                }
            };
            out.push(Layer { kind, per });
        }
        Ok(out)
    }

    /// `sync`: a token bucket's instances rebalanced every `sync`.
    fn sync(&self, kind: Kind, instances: u32) -> Result<Option<f64>, KeyError> {
        let Some(sync) = self.sync else { return Ok(None) };
        let sync = positive("sync", Some(sync), None)?;
        if !matches!(kind, Kind::TokenBucket { .. }) {
            return Err(refused(
                "sync",
                "applies to kind = \"token-bucket\" (its rate is the quota)",
            ));
        }
        if instances < 2 {
            return Err(refused("sync", "needs instances >= 2 (quotas to rebalance)"));
        }
        Ok(Some(sync))
    }

    /// `rtt`: one central limiter whose every decision takes a round trip.
    fn rtt(&self, kind: Kind, instances: u32) -> Result<Option<f64>, KeyError> {
        let Some(rtt) = self.rtt else { return Ok(None) };
        let rtt = non_negative("rtt", Some(rtt), 0.0)?;
        if instances > 1 {
            return Err(refused("rtt", "a central limiter is one shared instance: drop instances"));
        }
        match kind {
            Kind::Adaptive { .. } => Err(refused(
                "rtt",
                "does not apply to kind = \"adaptive\" (a client-side throttle)",
            )),
            Kind::LeakyBucket { nodelay: false, .. } => Err(refused(
                "rtt",
                "a central leaky bucket must decide at once: set nodelay = true",
            )),
            _ => Ok(Some(rtt)),
        }
    }

    /// The limiter of `kind`, with its own keys checked and the others refused.
    fn kind(&self) -> Result<Kind, KeyError> {
        use LimiterName as L;
        let name = self.kind.get().map_err(|other| {
            let expected = KINDS.join(", ");
            refused("kind", format!("'{other}' is not a limiter; expected one of {expected}"))
        })?;
        let unused = |keys: &[(&str, bool)]| -> Result<(), KeyError> {
            match keys.iter().find(|(_, given)| *given) {
                Some((key, _)) => {
                    Err(refused(key, format!("does not apply to kind = \"{}\"", name.name())))
                }
                None => Ok(()),
            }
        };
        let rate_keys = [
            ("limit", self.limit.is_some()),
            ("k", self.k.is_some()),
            ("queue_limit", self.queue_limit.is_some()),
        ];
        let window_keys = [
            ("rate", self.rate.is_some()),
            ("burst", self.burst.is_some()),
            ("nodelay", self.nodelay.is_some()),
            ("k", self.k.is_some()),
            ("queue_limit", self.queue_limit.is_some()),
        ];
        let limit = || match self.limit {
            Some(l) if l >= 1 => Ok(l),
            Some(l) => Err(refused("limit", format!("expected an integer >= 1, got {l}"))),
            None => Err(refused("limit", "missing (the limiter needs it)")),
        };
        Ok(match name {
            L::TokenBucket | L::Gcra | L::LeakyBucket => {
                unused(&rate_keys)?;
                unused(&[("window", self.window.is_some())])?;
                let rate = positive("rate", self.rate, None)?;
                match name {
                    L::TokenBucket => {
                        unused(&[("nodelay", self.nodelay.is_some())])?;
                        let burst = non_negative("burst", self.burst, 1.0)?;
                        if burst < 1.0 {
                            return Err(refused(
                                "burst",
                                format!(
                                    "a token bucket needs a capacity >= 1 (one token per request), got {burst}"
                                ),
                            ));
                        }
                        Kind::TokenBucket { rate, burst }
                    }
                    L::Gcra => {
                        unused(&[("nodelay", self.nodelay.is_some())])?;
                        Kind::Gcra { rate, burst: non_negative("burst", self.burst, 0.0)? }
                    }
                    _ => Kind::LeakyBucket {
                        rate,
                        burst: non_negative("burst", self.burst, 0.0)?,
                        nodelay: self.nodelay.unwrap_or(false),
                    },
                }
            }
            L::FixedWindow | L::SlidingLog | L::SlidingWindow => {
                unused(&window_keys)?;
                let (limit, window) = (limit()?, positive("window", self.window, Some(1.0))?);
                match name {
                    L::FixedWindow => Kind::FixedWindow { limit, window },
                    L::SlidingLog => Kind::SlidingLog { limit, window },
                    _ => Kind::SlidingWindow { limit, window },
                }
            }
            L::Adaptive => {
                unused(&[
                    ("rate", self.rate.is_some()),
                    ("burst", self.burst.is_some()),
                    ("nodelay", self.nodelay.is_some()),
                    ("limit", self.limit.is_some()),
                ])?;
                let k = positive("k", self.k, Some(2.0))?;
                let window = positive("window", self.window, Some(120.0))?;
                let queue_limit = self.queue_limit.unwrap_or(10);
                if queue_limit == 0 {
                    return Err(refused("queue_limit", "expected an integer >= 1, got 0"));
                }
                Kind::Adaptive { k, window, queue_limit }
            }
            L::Composite => {
                unused(&[
                    ("rate", self.rate.is_some()),
                    ("burst", self.burst.is_some()),
                    ("nodelay", self.nodelay.is_some()),
                    ("limit", self.limit.is_some()),
                    ("window", self.window.is_some()),
                    ("k", self.k.is_some()),
                    ("queue_limit", self.queue_limit.is_some()),
                ])?;
                Kind::Composite
            }
        })
    }

    /// How the rate is split over `instances`.
    fn split(&self, instances: u32) -> Result<Split, KeyError> {
        let name = self.split.as_ref().map_or(Ok(SplitName::Uniform), Named::get);
        Ok(match name {
            Ok(SplitName::Uniform) => {
                if self.skew.is_some() {
                    return Err(refused("skew", "applies to split = \"skewed\""));
                }
                Split::Uniform
            }
            Ok(SplitName::Skewed) => match self.skew.unwrap_or(0.5) {
                s if (0.0..=1.0).contains(&s) && instances > 1 => Split::Skewed(s),
                s if (0.0..=1.0).contains(&s) => {
                    return Err(refused("split", "\"skewed\" needs instances >= 2"));
                }
                s => return Err(refused("skew", format!("expected 0 to 1, got {s}"))),
            },
            Err(other) => {
                return Err(refused(
                    "split",
                    format!("'{other}': expected \"uniform\" or \"skewed\""),
                ));
            }
        })
    }
}

impl Admission {
    /// The admission with what its `per = "key"` and `per = "client"` layers tell apart: the
    /// keys of `[keys]` (if the scenario has that table) and the `[info] clients`. Refuses a
    /// layer whose scope is missing, naming `admission.layers[i].per`.
    pub fn with_scopes(
        mut self,
        keys: Option<&crate::workload::KeySpec>,
        clients: u32,
    ) -> Result<Admission, KeyError> {
        for (i, layer) in self.layers.iter().enumerate() {
            let key = format!("admission.layers[{i}].per");
            match layer.per {
                Per::Key if keys.is_none() => {
                    return Err(KeyError::new(
                        key,
                        "\"key\" needs a [keys] table (the keys' count and popularity)",
                    ));
                }
                Per::Client if clients < 2 => {
                    return Err(KeyError::new(
                        key,
                        format!("\"client\" needs [info] clients >= 2, got {clients}"),
                    ));
                }
                _ => {}
            }
        }
        self.keys = keys.cloned();
        self.clients = clients;
        Ok(self)
    }
}

/// One local limiter.
#[derive(Debug, Clone, PartialEq)]
pub enum Limiter {
    /// [`TokenBucket`].
    TokenBucket(TokenBucket),
    /// [`LeakyBucket`].
    LeakyBucket(LeakyBucket),
    /// [`Gcra`].
    Gcra(Gcra),
    /// [`FixedWindow`].
    FixedWindow(FixedWindow),
    /// [`SlidingLog`].
    SlidingLog(SlidingLog),
    /// [`SlidingWindow`].
    SlidingWindow(SlidingWindow),
    /// [`Adaptive`].
    Adaptive(Adaptive),
}

/// What the admission stage does with a request.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Decision {
    /// Passes now.
    Admit,
    /// Passes at this later time (NGINX's delay without `nodelay`).
    Delay(f64),
    /// Rejected.
    Reject,
}

impl Limiter {
    /// The limiter of `kind` with a `1/share` part of its rate, burst or limit.
    pub fn new(kind: Kind, share: u32) -> Limiter {
        let n = f64::from(share);
        let part = |limit: u64| ((limit as f64 / n).floor() as u64).max(1);
        match kind {
            Kind::TokenBucket { rate, burst } => {
                Limiter::TokenBucket(TokenBucket::new(rate / n, (burst / n).max(1.0)))
            }
            Kind::LeakyBucket { rate, burst, nodelay } => {
                Limiter::LeakyBucket(LeakyBucket::new(rate / n, burst / n, nodelay))
            }
            Kind::Gcra { rate, burst } => Limiter::Gcra(Gcra::new(rate / n, burst / n)),
            Kind::FixedWindow { limit, window } => {
                Limiter::FixedWindow(FixedWindow::new(part(limit), window))
            }
            Kind::SlidingLog { limit, window } => {
                Limiter::SlidingLog(SlidingLog::new(part(limit), window))
            }
            Kind::SlidingWindow { limit, window } => {
                Limiter::SlidingWindow(SlidingWindow::new(part(limit), window))
            }
            Kind::Adaptive { k, window, .. } => Limiter::Adaptive(Adaptive::new(k, window)),
            Kind::Composite => unreachable!("a composite is its layers' limiters"),
        }
    }

    /// A request at `t` (non-decreasing); `u` is a uniform draw in [0, 1) that only the
    /// adaptive throttle uses.
    pub fn offer(&mut self, t: f64, u: f64) -> Decision {
        let pass = match self {
            Limiter::TokenBucket(l) => l.offer(t),
            Limiter::Gcra(l) => l.offer(t),
            Limiter::FixedWindow(l) => l.offer(t),
            Limiter::SlidingLog(l) => l.offer(t),
            Limiter::SlidingWindow(l) => l.offer(t),
            Limiter::Adaptive(l) => l.offer(t, u),
            Limiter::LeakyBucket(l) => {
                return match l.offer(t) {
                    Verdict::Pass(at) if at > t => Decision::Delay(at),
                    Verdict::Pass(_) => Decision::Admit,
                    Verdict::Busy => Decision::Reject,
                };
            }
        };
        if pass { Decision::Admit } else { Decision::Reject }
    }
}

/// What the admission stage counted over the measured requests. Merges by addition (the counts)
/// and maximum (`max_in_window`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct AdmissionStats {
    /// Requests that arrived.
    pub offered: u64,
    /// Requests that passed the limiter (and, under `adaptive`, that a server accepted).
    pub admitted: u64,
    /// Requests rejected by the limiter (or, under `adaptive`, by a server).
    pub rejected: u64,
    /// The most requests passed in any window of the admission's period.
    pub max_in_window: u64,
    /// Requests delayed by the limiter (leaky-bucket without `nodelay`; every admitted one
    /// under a central limiter's `rtt`).
    pub delayed: u64,
}

impl AdmissionStats {
    /// Adds `other` in.
    pub fn merge(&mut self, other: &AdmissionStats) {
        self.offered += other.offered;
        self.admitted += other.admitted;
        self.rejected += other.rejected;
        self.delayed += other.delayed;
        self.max_in_window = self.max_in_window.max(other.max_in_window);
    }
}

/// The most events in any window `(t - period, t]`, kept exactly from their times. Two times one
/// period apart up to rounding (a few units in the last place of `t`, as when a leaky bucket's
/// releases `k / rate` are computed by division) count as one period apart: they never share a
/// window.
#[derive(Debug, Clone)]
pub struct WindowMax {
    period: f64,
    times: VecDeque<f64>,
    /// The maximum so far.
    pub max: u64,
}

impl WindowMax {
    /// An empty count over windows of length `period`.
    pub fn new(period: f64) -> WindowMax {
        WindowMax { period, times: VecDeque::new(), max: 0 }
    }

    /// An event at `t` (non-decreasing).
    pub fn record(&mut self, t: f64) {
        let rounding = 8.0 * f64::EPSILON * t.abs().max(self.period);
        while self.times.front().is_some_and(|&s| s <= t - self.period + rounding) {
            self.times.pop_front();
        }
        self.times.push_back(t);
        self.max = self.max.max(self.times.len() as u64);
    }
}

/// An admission stage at work in one replication: the instances, their split, and the counts;
/// a composite's layers, the instances' quota sync and a central limiter's round trip when the
/// admission has them (absent otherwise: the branches on them are never taken).
#[derive(Debug, Clone)]
pub struct Gate {
    instances: Vec<Limiter>,
    split: Split,
    /// Servers reject above this queue length (adaptive).
    pub queue_limit: Option<u32>,
    last: usize,
    rng: SimRng,
    window: WindowMax,
    /// The counts so far.
    pub stats: AdmissionStats,
    /// A composite's layers (`kind = "composite"`).
    pub composite: Option<Box<Composite>>,
    /// The instances' quotas (`sync`).
    pub sync: Option<Box<QuotaSync>>,
    rtt: Option<f64>,
}

impl Gate {
    /// `adm` at time 0, drawing its coins (the split, the adaptive throttle, a composite's
    /// keys and clients) from `rng`.
    pub fn new(adm: &Admission, mut rng: SimRng) -> Gate {
        let n = adm.instances;
        let composite = (adm.kind == Kind::Composite).then(|| {
            Box::new(Composite::new(&adm.layers, adm.keys.as_ref(), adm.clients, &mut rng))
        });
        let sync = match (adm.kind, adm.sync) {
            (Kind::TokenBucket { rate, .. }, Some(period)) => {
                Some(Box::new(QuotaSync::new(rate, n, period)))
            }
            _ => None,
        };
        Gate {
            instances: match adm.kind {
                Kind::Composite => Vec::new(),
                kind => (0..n).map(|_| Limiter::new(kind, n)).collect(),
            },
            split: adm.split,
            queue_limit: match adm.kind {
                Kind::Adaptive { queue_limit, .. } => Some(queue_limit),
                _ => None,
            },
            last: 0,
            rng,
            window: WindowMax::new(adm.period),
            stats: AdmissionStats::default(),
            composite,
            sync,
            rtt: adm.rtt,
        }
    }

    /// The instance a request goes to.
    fn pick(&mut self) -> usize {
        let n = self.instances.len();
        if n == 1 {
            return 0;
        }
        let u: f64 = self.rng.random();
        let i = match self.split {
            Split::Uniform => (u * n as f64) as usize,
            Split::Skewed(s) if u < s => 0,
            Split::Skewed(s) => 1 + ((u - s) / (1.0 - s) * (n - 1) as f64) as usize,
        };
        i.min(n - 1)
    }

    /// The limiters' decision on a request at `t`.
    #[inline]
    fn decide(&mut self, t: f64, scope: Scope) -> Decision {
        if let Some(c) = &mut self.composite {
            return c.offer(t, &mut self.rng, scope);
        }
        if let Some(s) = &mut self.sync {
            s.catch_up(t, &mut self.instances);
        }
        self.last = self.pick();
        let u = match self.instances[self.last] {
            Limiter::Adaptive(_) => self.rng.random(),
            _ => 0.0,
        };
        let d = self.instances[self.last].offer(t, u);
        if let Some(s) = &mut self.sync
            && d == Decision::Admit
        {
            s.passed(self.last);
        }
        d
    }

    /// A request at `t`; `measured` says whether it counts. A central limiter's admitted
    /// request is let through one round trip later.
    pub fn offer(&mut self, t: f64, measured: bool) -> Decision {
        self.offer_scoped(t, measured, Scope::default())
    }

    /// [`Gate::offer`] for a request that brings its key or client (`scope`: a composite's
    /// per-key and per-client layers count it under them).
    pub fn offer_scoped(&mut self, t: f64, measured: bool, scope: Scope) -> Decision {
        let d = match (self.decide(t, scope), self.rtt) {
            (Decision::Admit, Some(rtt)) => Decision::Delay(t + rtt),
            (d, _) => d,
        };
        if measured {
            self.stats.offered += 1;
            match d {
                Decision::Reject => self.stats.rejected += 1,
                Decision::Delay(_) => self.stats.delayed += 1,
                Decision::Admit => {}
            }
        }
        d
    }

    /// The backend's answer to the request last offered (adaptive): accepted or rejected at `t`.
    pub fn backend(&mut self, t: f64, accepted: bool, measured: bool) {
        if let Limiter::Adaptive(a) = &mut self.instances[self.last]
            && accepted
        {
            a.accepted(t);
        }
        if measured && !accepted {
            self.stats.rejected += 1;
        }
    }

    /// A request passed into the farm at `t`.
    pub fn admitted(&mut self, t: f64, measured: bool) {
        if measured {
            self.stats.admitted += 1;
            self.window.record(t);
            self.stats.max_in_window = self.window.max;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gate(text: &str) -> Gate {
        let adm = AdmissionSpec::parse(text).unwrap().resolve().unwrap();
        Gate::new(&adm, crate::rng::StreamKey::new(1, "test").rng())
    }

    #[test]
    fn specs_parse_and_refuse_what_does_not_apply() {
        let a = AdmissionSpec::parse("leaky-bucket:rate=10,burst=20,nodelay=true").unwrap();
        assert_eq!(
            a.resolve().unwrap().kind,
            Kind::LeakyBucket { rate: 10.0, burst: 20.0, nodelay: true }
        );
        let err =
            |s: &str| AdmissionSpec::parse(s).and_then(|a| a.resolve()).unwrap_err().to_string();
        assert!(err("token-bucket:rate=1,limit=3").contains("admission.limit"));
        assert!(err("fixed-window:limit=0").contains("admission.limit"));
        assert!(err("gcra").contains("admission.rate: missing"));
        assert!(err("bucket:rate=1").contains("not a limiter"));
        assert!(err("gcra:rate=1,colour=3").contains("colour"));
        assert!(err("gcra:rate=1,split=skewed").contains("instances >= 2"));
    }

    #[test]
    fn limiter_names_read_and_write_as_written() {
        for (i, name) in LimiterName::ALL.into_iter().enumerate() {
            assert_eq!(name.name(), KINDS[i]);
            assert_eq!(LimiterName::parse(KINDS[i]), Some(name));
        }
        let spec = AdmissionSpec::parse("gcra:rate=2").unwrap();
        assert_eq!(spec.kind, Named::Is(LimiterName::Gcra));
        let toml = toml::to_string(&spec).unwrap();
        assert!(toml.starts_with("kind = \"gcra\"\n"), "{toml}");
        let spec = AdmissionSpec::parse("Gcra:rate=2").unwrap();
        assert_eq!(spec.kind, Named::Other("Gcra".into()));
        let e = spec.resolve().unwrap_err();
        assert_eq!(e.key, "admission.kind");
        assert!(e.message.starts_with("'Gcra' is not a limiter; expected one of token-bucket, "));
    }

    #[test]
    fn split_names_read_and_write_as_written() {
        let spec = AdmissionSpec::parse("gcra:rate=2,instances=2,split=skewed").unwrap();
        assert_eq!(spec.split, Some(Named::Is(SplitName::Skewed)));
        assert!(toml::to_string(&spec).unwrap().contains("split = \"skewed\"\n"));
        assert_eq!(spec.resolve().unwrap().split, Split::Skewed(0.5));
        let spec = AdmissionSpec::parse("gcra:rate=2,split=uniform").unwrap();
        assert_eq!(spec.split, Some(Named::Is(SplitName::Uniform)));
        let spec = AdmissionSpec::parse("gcra:rate=2,split=Skewed").unwrap();
        assert_eq!(spec.split, Some(Named::Other("Skewed".into())));
        assert!(toml::to_string(&spec).unwrap().contains("split = \"Skewed\"\n"));
        let e = spec.resolve().unwrap_err();
        assert_eq!(e.key, "admission.split");
        assert_eq!(e.message, "'Skewed': expected \"uniform\" or \"skewed\"");
    }

    #[test]
    fn refusals_carry_their_key() {
        let err = |s: &str| AdmissionSpec::parse(s).and_then(|a| a.resolve()).unwrap_err();
        for (text, key, message) in [
            ("gcra", "admission.rate", "missing (the limiter needs it)"),
            ("gcra:rate=1,split=skewed", "admission.split", "\"skewed\" needs instances >= 2"),
            ("gcra:rate", "admission", "'rate' is not key=value"),
            (
                "gcra:rate=1,rate=2",
                "admission",
                "parameter 'rate' is given twice (rate=1 and rate=2)",
            ),
        ] {
            let e = err(text);
            assert_eq!((e.key.as_str(), e.message.as_str()), (key, message), "{text}");
            assert_eq!(e.to_string(), format!("{key}: {message}"));
        }
    }

    #[test]
    fn one_instance_is_the_plain_limiter() {
        // The same decisions on the same arrivals, for every kind that draws no coins.
        let mut state = 7u64;
        let mut t = 0.0;
        let times: Vec<f64> = (0..20_000)
            .map(|_| {
                state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                t += (state >> 11) as f64 / (1u64 << 53) as f64 * 0.02;
                t
            })
            .collect();
        for (text, plain) in [
            (
                "token-bucket:rate=40,burst=5,instances=1",
                Limiter::TokenBucket(TokenBucket::new(40.0, 5.0)),
            ),
            ("gcra:rate=40,burst=5,instances=1", Limiter::Gcra(Gcra::new(40.0, 5.0))),
            ("fixed-window:limit=30,instances=1", Limiter::FixedWindow(FixedWindow::new(30, 1.0))),
            (
                "sliding-window:limit=30,instances=1",
                Limiter::SlidingWindow(SlidingWindow::new(30, 1.0)),
            ),
        ] {
            let mut g = gate(text);
            let mut p = plain;
            for &t in &times {
                assert_eq!(g.offer(t, true), p.offer(t, 0.0), "{text} at {t}");
            }
        }
    }

    #[test]
    fn instances_split_the_rate_and_the_skew_sends_the_share_asked() {
        // 4 instances of a 40/s bucket are 10/s each: a constant 40/s stream spread uniformly
        // gets about 40/s through in the long run, less when skewed (one instance saturates).
        let mut g = gate("token-bucket:rate=40,burst=4,instances=4,split=skewed,skew=0.7");
        let mut first = 0u64;
        for i in 0..40_000 {
            g.offer(f64::from(i) / 40.0, true);
            first += u64::from(g.last == 0);
        }
        // 70% of 40000 with a binomial standard deviation of 92: 5 sigma either side.
        assert!((first as f64 - 28_000.0).abs() < 460.0, "{first}");
        // Instance 0 passes at most 10/s over 1000 s (+1 burst); the others get all of their
        // 4/s each: at most 10_001 + 3 * 4000 * 1.05.
        assert!(g.stats.offered - g.stats.rejected < 10_001 + 12_600);
    }

    #[test]
    fn window_max_counts_the_busiest_window() {
        let mut w = WindowMax::new(1.0);
        for t in [0.0, 0.5, 0.9, 1.0, 1.4, 3.0] {
            w.record(t);
        }
        // (0.4, 1.4] holds 0.5, 0.9, 1.0, 1.4.
        assert_eq!(w.max, 4);
    }
}

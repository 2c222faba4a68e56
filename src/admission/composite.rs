//! A composite limiter (`kind = "composite"`): layers a request must all pass, each one limiter
//! for everyone (`per = "global"`), one per request key of `[keys]` (`per = "key"`) or one per
//! client (`per = "client"`), as the rate-limiting chapter's §39.16 `CompositeRateLimiter` (a
//! global bucket, one per user, one per IP) and §39.21's `MultiDimensionRateLimiter` (global,
//! per IP, per user, per endpoint) build them.
//!
//! The layers are checked in the order written and the check stops at the first that rejects,
//! as both of the chapter's `allow`/`check` do: `if not self.global_limiter.allow(): return
//! False` before the user's bucket is even looked at. So a layer that admitted a request keeps
//! what it spent on it (a token, a slot of its window) when a later layer rejects it: nothing
//! is refunded, and the layers after the rejecting one are not charged. Order matters: a
//! strict layer first shields the ones after it. A key's or a client's limiter is made at its
//! first request, full, as the chapter's `if user_id not in self.user_limiters` makes it.
//!
//! Where the request's key and client come from: the admission stage draws them itself, from
//! its own stream, with the laws the rest of the run uses (a key from `[keys]`'s popularity,
//! a client uniformly among `[info] clients`, as a fleet assigns arrivals). A hashing policy
//! or a fleet draws its own from theirs, so the key a layer counts is not the one the
//! policy hashes; counts per key and per client follow the same laws.

use std::collections::HashMap;

use rand::RngExt;
use serde::Serialize;

use super::{Decision, Kind, Limiter};
use crate::named::Name;
use crate::rng::SimRng;
use crate::workload::{KeySource, KeySpec};

/// What a layer keeps one limiter for, by name (`per = "global" | "key" | "client"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PerName {
    /// `global`.
    Global,
    /// `key`.
    Key,
    /// `client`.
    Client,
}

impl Name for PerName {
    fn parse(s: &str) -> Option<Self> {
        [PerName::Global, PerName::Key, PerName::Client].into_iter().find(|p| p.name() == s)
    }

    fn name(self) -> &'static str {
        match self {
            PerName::Global => "global",
            PerName::Key => "key",
            PerName::Client => "client",
        }
    }
}

/// What a layer keeps one limiter for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Per {
    /// One limiter for every request.
    Global,
    /// One per request key.
    Key,
    /// One per client.
    Client,
}

/// One validated layer: a limiter that decides at once, and its scope.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Layer {
    /// The limiter, with its whole rate, burst or limit (each scope's limiter gets it all).
    #[serde(flatten)]
    pub kind: Kind,
    /// Its scope.
    pub per: Per,
}

/// A layer's limiters.
#[derive(Debug, Clone)]
enum Scoped {
    Global(Limiter),
    Key(Kind, HashMap<u64, Limiter>),
    Client(Vec<Limiter>),
}

/// A composite at work in one replication.
#[derive(Debug, Clone)]
pub struct Composite {
    layers: Vec<Scoped>,
    keys: Option<KeySource>,
    clients: u32,
    /// Requests each layer admitted (whatever the later layers said), in layer order, over
    /// every request offered (warm-up included).
    pub admitted: Vec<u64>,
    /// The key of the last request offered (0 without a per-key layer).
    pub last_key: u64,
}

impl Composite {
    /// `layers` at time 0, for `clients` clients and the keys of `keys` (needed when a layer is
    /// per key); the key stream is seeded from `rng`.
    pub fn new(
        layers: &[Layer],
        keys: Option<&KeySpec>,
        clients: u32,
        rng: &mut SimRng,
    ) -> Composite {
        let by_key = layers.iter().any(|l| l.per == Per::Key);
        let keys = by_key.then(|| {
            let spec = keys.expect("a per-key layer has its [keys] (checked by with_scopes)");
            spec.source(
                crate::rng::StreamKey::new(rand::Rng::next_u64(rng), "admission keys").rng(),
            )
        });
        let by_client = layers.iter().any(|l| l.per == Per::Client);
        let layers = layers
            .iter()
            .map(|l| match l.per {
                Per::Global => Scoped::Global(Limiter::new(l.kind, 1)),
                Per::Key => Scoped::Key(l.kind, HashMap::new()),
                Per::Client => {
                    Scoped::Client((0..clients).map(|_| Limiter::new(l.kind, 1)).collect())
                }
            })
            .collect::<Vec<_>>();
        let admitted = vec![0; layers.len()];
        Composite {
            layers,
            keys,
            clients: if by_client { clients } else { 1 },
            admitted,
            last_key: 0,
        }
    }

    /// A request at `t` (non-decreasing): its key and client are drawn, then the layers are
    /// asked in order until one rejects.
    pub fn offer(&mut self, t: f64, rng: &mut SimRng) -> Decision {
        let key = self.keys.as_mut().map_or(0, KeySource::next_key);
        self.last_key = key;
        let client = if self.clients > 1 { rng.random_range(0..self.clients) as usize } else { 0 };
        for (i, layer) in self.layers.iter_mut().enumerate() {
            let limiter = match layer {
                Scoped::Global(l) => l,
                Scoped::Key(kind, map) => map.entry(key).or_insert_with(|| Limiter::new(*kind, 1)),
                Scoped::Client(v) => &mut v[client],
            };
            if limiter.offer(t, 0.0) == Decision::Reject {
                return Decision::Reject;
            }
            self.admitted[i] += 1;
        }
        Decision::Admit
    }
}

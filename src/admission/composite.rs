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
//! Where the request's key and client come from: they are the request's own. With a per-key
//! layer the admission stage draws each arrival's key from `[keys]` (its popularity, on the
//! stage's stream), and the request carries it: a hashing policy (ring hash, Maglev) hashes
//! that key ([`crate::policy::Policy::use_key`]) instead of drawing one, and a retry of the
//! request is counted under the same key. With a per-client layer the fleet assigns the
//! arrival's client before the stage is asked ([`crate::policy::Policy::assign`]), and the
//! request is sent from that client, its retries too. So a per-key layer limits exactly the
//! requests of that key, and a per-client layer those of that client. (A policy that is not a
//! fleet has no clients of its own; a per-client layer then draws the client uniformly among
//! `[info] clients` on the stage's stream.) A run without these layers draws nothing for
//! them, and its policy draws its keys and clients as before.

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
    by_key: bool,
}

/// What a request brings to the admission stage of its own: its key (a retry's, drawn at its
/// first offer) and the client that sends it (`None`: the stage draws them).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Scope {
    /// The request's key.
    pub key: Option<u64>,
    /// The client that sends it.
    pub client: Option<u32>,
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
            by_key,
        }
    }

    /// Whether a layer is per key.
    pub fn by_key(&self) -> bool {
        self.by_key
    }

    /// Whether a layer is per client.
    pub fn by_client(&self) -> bool {
        self.clients > 1
    }

    /// A request at `t` (non-decreasing) of `scope`: its key and client, those it brings or
    /// else drawn, then the layers asked in order until one rejects.
    pub fn offer(&mut self, t: f64, rng: &mut SimRng, scope: Scope) -> Decision {
        let key = match scope.key {
            Some(k) if self.by_key => k,
            _ => self.keys.as_mut().map_or(0, KeySource::next_key),
        };
        self.last_key = key;
        let client = match scope.client {
            Some(c) if self.clients > 1 => c.min(self.clients - 1) as usize,
            _ if self.clients > 1 => rng.random_range(0..self.clients) as usize,
            _ => 0,
        };
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

//! Load-balancing policies.
//!
//! A policy picks the server for each arriving request. It reads load only through
//! [`LoadTable`], which the simulation fills with live queue lengths or with
//! a stale bulletin board, so every policy runs unchanged under every information model. Randomness
//! is injected (`rng`), never global, so every replication reproduces exactly.
//!
//! Each policy lives in its own file, which cites the code or paper it follows; the table in
//! [`registry`] lists them all (names, rules, where each may run) and is where a policy is added.
//!
//! The power of d choices is written once, [`P2c`] over a [`Load`] (after tower's `balance::p2c`
//! and `load`): `pNc`, `p2c-repl`, `least-request`'s `N_CHOICES`, `p2c-pewma` and
//! `least-latency` differ only in how they draw their servers and which load they compare.
//! Estimates decay through the one [`ewma`].
//!
//! Every policy respects health: [`Policy::set_hosts`] narrows the hosts a client may pick from
//! (outlier ejection, failed checks, an open breaker) and widens them again, and each policy
//! draws, scans or schedules over the allowed hosts only, through one [`Hosts`]. With every host
//! allowed (`None`, the start) every draw is the one it always was.
//!
//! Policies are concrete types behind the small [`Policy`] trait; the simulation is generic over it,
//! so the per-arrival call is monomorphised (no boxing, no dynamic dispatch in the event loop).
//! [`PolicyKind`] is the parsed name; [`with_policy!`](crate::with_policy) builds the concrete policy
//! and calls generic code with it.

mod aperture;
mod c3;
mod edf;
pub mod ewma;
mod fleet;
#[cfg(test)]
mod health_tests;
pub mod hosts;
mod jiq;
mod jsq;
mod least_conn;
mod least_latency;
mod least_request;
pub mod load;
mod min_blocks;
pub mod p2c;
mod peak_ewma;
mod pnc;
mod prequal;
mod random;
mod random_two;
pub mod registry;
mod ring_hash;
mod round_robin;
mod swrr;
pub mod tuning;
mod wrr_orca;

pub use aperture::{Aperture, ApertureParams};
pub use c3::{C3, C3_ALPHA, C3Config, C3Server, RateControl};
pub use ewma::{DEFAULT_TAU, Decay};
pub use fleet::Fleet;
pub use hosts::Hosts;
pub use jiq::{Jiq, JiqParams};
pub use jsq::Jsq;
pub use least_conn::LeastConn;
pub use least_latency::{EwmaLatency, LeastLatency};
pub use least_request::{LeastRequest, LeastRequestParams};
pub use load::Load;
pub use p2c::P2c;
pub use peak_ewma::{P2cPeakEwma, PeakEwma, RttEstimate};
pub use pnc::{P2cRepl, PnC};
pub use prequal::{Prequal, PrequalConfig};
pub use random::{Random, RandomParams};
pub use random_two::RandomTwo;
pub use registry::{Info, PolicyKind, PolicyParams};
pub use ring_hash::{MaglevHash, MaglevParams, RingHash, RingHashParams};
pub use round_robin::RoundRobin;
pub use swrr::{SWRR_MAX_CYCLE, SmoothWrr, Swrr, integer_weights};
pub use tuning::{NoParams, ParamError, Params, Tuning};
pub use wrr_orca::{OrcaConfig, Scheduler as OrcaScheduler, WrrOrca};

use crate::lifecycle::health::SlowStart;
use crate::model::LoadTable;
use crate::rng::SimRng;
pub(crate) use crate::rng::{two_distinct, uniform};
pub use crate::signal::{LoadReport, ProbeReply, Response};
use crate::time::SimTime;

/// The servers a pick will read, up to [`Ahead::MAX`], named ahead of it ([`Policy::ahead`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Ahead {
    servers: [u32; Ahead::MAX],
    len: u8,
}

impl Ahead {
    /// The most servers named (a pick reading more is named by its first four).
    pub const MAX: usize = 4;

    /// Adds `server`, unless [`Self::MAX`] are named already.
    #[inline(always)]
    pub fn push(&mut self, server: usize) {
        if usize::from(self.len) < Self::MAX {
            self.servers[usize::from(self.len)] = server as u32;
            self.len += 1;
        }
    }

    /// The servers named, in the order the pick reads them.
    #[inline(always)]
    pub fn servers(&self) -> &[u32] {
        &self.servers[..usize::from(self.len)]
    }
}

/// A load-balancing policy: picks a server for each arrival.
///
/// A policy is `Clone` so that a replication can be run again from its start (see
/// [`READS_LENGTHS_ONLY`](Self::READS_LENGTHS_ONLY)); a clone must behave as the original from
/// there, so state shared between clones (an `Rc` log) is seen twice in such a run.
pub trait Policy: Clone {
    /// True if the policy calls [`LoadTable::shortest`], which needs the table's sorted index.
    const NEEDS_SHORTEST: bool = false;

    /// True if the policy reads the table only through [`LoadTable::get`] and hears nothing of
    /// departures (its [`Self::on_departure`] does nothing; no feedback, no tags, no backlog):
    /// the loop may then count the departures of FIFO one-worker servers when a server is read
    /// ([`LoadTable::with_departures`]) instead of simulating each as an event, and record each
    /// request as it joins; when a guard stops such a run, it is run again from a clone of the
    /// policy made at its start, with departures as events. The numbers are the same either way.
    const READS_LENGTHS_ONLY: bool = false;

    /// The server for a request arriving at `now`, given the loads the policy is allowed to see.
    fn pick(&mut self, loads: &LoadTable, now: SimTime, rng: &mut SimRng) -> usize;

    /// Draws from `rng` what [`Self::pick`] would draw from it now and names the servers that
    /// pick would read: the loop keeps a copy of the policy's stream a few picks ahead and
    /// fetches those servers' state into the cache before their picks come (on a large farm
    /// each read is otherwise a cache miss). A hint only: what it names changes no value, and a
    /// pick that draws otherwise (its hosts changed in between) only makes it useless. The
    /// default draws nothing and names none.
    #[inline(always)]
    fn ahead(&mut self, _rng: &mut SimRng) -> Ahead {
        Ahead::default()
    }

    /// Asks for the policy's own state of `server` (what a pick reads of it beside the load
    /// table) to be brought into the cache, for a pick [`Self::ahead`] named. A hint only; the
    /// default keeps no state per server worth fetching.
    #[inline(always)]
    fn prefetch(&self, _server: usize) {}

    /// The hosts `client` may pick from now, in server order, or `None`: every server (the state at
    /// the start). Called by the loop only when a client's set changes, never with an empty list (the
    /// loop fails such requests fast instead of picking). A policy goes on picking over the hosts
    /// given as the system it follows does when its host set changes (see each policy's doc).
    fn set_hosts(&mut self, client: u32, hosts: Option<&[u32]>);

    /// `host` became healthy again for `client` at `since` (an `up` after `down` or `hang`, or
    /// an active check's healthy verdict) and starts slowly under `rule`: Envoy's slow start
    /// ([`crate::lifecycle::slow_start`]). Called only with `[health] slow_start`. Envoy applies
    /// it to its EDF-scheduled balancers, round robin and least request, which `rr` and
    /// `least-request` follow; a policy without weights of that kind ignores it (the default).
    fn slow_start(&mut self, _client: u32, _host: usize, _since: f64, _rule: &SlowStart) {}

    /// True if the policy tags each request it dispatches ([`Self::tag`]) and needs the tag back
    /// at its departure: the engine then keeps one with every request (0 otherwise).
    const TAGGED: bool = false;

    /// The tag of the request just dispatched by [`Self::pick`] (which client sent it); only read
    /// when [`Self::TAGGED`].
    #[inline]
    fn tag(&self) -> u32 {
        0
    }

    /// A request left `server` at `now` after spending `sojourn` there (for latency-aware
    /// policies); `tag` is what [`Self::tag`] said when it was dispatched (0 if not
    /// [`Self::TAGGED`]).
    #[inline]
    fn on_departure(&mut self, _server: usize, _sojourn: f64, _now: SimTime, _tag: u32) {}

    // ----- feedback, timers and probes (see `engine::feedback`) -----

    /// True if the policy reads server feedback, load reports, timers or probes: the loop then
    /// calls the hooks below (a policy that sets it sets [`Self::TAGGED`] too, so that each
    /// response and probe reply names its client).
    const FEEDBACK: bool = false;

    /// The response to a request the policy sent to `server`, with what the server attached;
    /// called after [`Self::on_departure`], only when [`Self::FEEDBACK`].
    #[inline]
    fn on_response(&mut self, _server: usize, _response: &Response, _now: SimTime, _tag: u32) {}

    /// How often the servers send load reports ([`Self::on_reports`]); `None`: never.
    fn report_period(&self) -> Option<f64> {
        None
    }

    /// Every server's load report over the period just ended, in server order.
    fn on_reports(&mut self, _reports: &[LoadReport], _now: SimTime) {}

    /// How often [`Self::on_timer`] runs; `None`: never.
    fn timer_period(&self) -> Option<f64> {
        None
    }

    /// The policy's periodic timer.
    fn on_timer(&mut self, _now: SimTime) {}

    /// Probes to send right after a pick: pushes their servers onto `out` (drawing from `rng`).
    /// They belong to that pick's sender: each comes back to [`Self::on_probe`] with its tag.
    #[inline]
    fn probes(&mut self, _now: SimTime, _rng: &mut SimRng, _out: &mut Vec<usize>) {}

    /// How long a probe takes to come back (it reads its server half way).
    fn probe_delay(&self) -> f64 {
        0.0
    }

    /// A probe sent to `server` came back with `reply`; `tag` is what [`Self::tag`] said for the
    /// pick the probe was sent after (the client that sent it).
    fn on_probe(&mut self, _server: usize, _reply: ProbeReply, _now: SimTime, _tag: u32) {}

    // ----- client-side rate limits -----

    /// True if the policy may hold a request back at the client (a client-side sending-rate
    /// limit): the loop then asks [`Self::assign`] which client sends each arrival and
    /// [`Self::try_pick`] for its server, instead of [`Self::pick`], and keeps each client's
    /// requests held back in a FIFO backlog of its own, which a new arrival of that client joins
    /// while it is not empty.
    const HOLDS: bool = false;

    /// The clients the policy dispatches for (SPEC §8): 1 for one balancer, a fleet's count.
    /// Tags ([`Self::tag`]) and [`Self::assign`] name clients below it.
    #[inline]
    fn clients(&self) -> u32 {
        1
    }

    /// The client that sends the next arrival (a fleet draws it here); only called when
    /// [`Self::HOLDS`], or before the admission stage when a composite limiter has a
    /// per-client layer (the request is then sent from that client).
    #[inline]
    fn assign(&mut self) -> u32 {
        0
    }

    /// The next request this policy picks a server for has key `key` (a composite limiter's
    /// per-key layer drew it): a hashing policy hashes it instead of drawing one from `[keys]`;
    /// others ignore it. Only called when such a layer exists.
    #[inline]
    fn use_key(&mut self, _key: u64) {}

    /// The server for the request at the head of `client`'s backlog, or `Err(t)`: no server
    /// may take it now, ask again at `t` (after `now`). Only called when [`Self::HOLDS`].
    #[inline]
    fn try_pick(
        &mut self,
        _client: u32,
        loads: &LoadTable,
        now: SimTime,
        rng: &mut SimRng,
    ) -> Result<usize, f64> {
        Ok(self.pick(loads, now, rng))
    }
}

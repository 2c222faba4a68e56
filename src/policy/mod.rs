//! Load-balancing policies.
//!
//! A policy picks the server for each arriving request. It reads load only through
//! [`LoadTable`](crate::model::LoadTable), which the simulation fills with live queue lengths or with
//! a stale bulletin board, so every policy runs unchanged under every information model. Randomness
//! is injected (`rng`), never global, so every replication reproduces exactly.
//!
//! | name | rule | source |
//! |---|---|---|
//! | `random` | uniform server | |
//! | `rr` | round robin in index order | |
//! | `swrr` | smooth weighted round robin | NGINX `ngx_http_upstream_get_peer`, commit 52327e0 |
//! | `pNc` (`p2c`, `p3c`, ...) | N distinct uniform samples, shortest queue, tie to the first sampled | Mitzenmacher, *The Power of Two Choices* |
//! | `p2c-repl` | two samples with replacement, the second wins only if strictly shorter | Envoy `unweightedHostPickNChoices` |
//! | `jsq` | shortest queue of all, ties uniformly at random | Winston 1977 |
//! | `p2c-pewma` | P2C on cost `rtt * (queue + 1)` with a Peak-EWMA RTT estimate | tower `load::PeakEwma`, Finagle |
//!
//! Policies are concrete types behind the small [`Policy`] trait; the simulation is generic over it,
//! so the per-arrival call is monomorphised (no boxing, no dynamic dispatch in the event loop).
//! [`PolicyKind`] is the parsed name; [`with_policy!`](crate::with_policy) builds the concrete policy
//! and calls generic code with it.
//!
//! To add a policy: write a type implementing [`Policy`] in its own file, add a [`PolicyKind`]
//! variant with its name in `parse`/`name`, and an arm in `with_policy!`.

mod jsq;
mod peak_ewma;
mod pnc;
mod random;
mod round_robin;
mod swrr;

pub use jsq::Jsq;
pub use peak_ewma::{P2cPeakEwma, RttEstimate};
pub use pnc::{P2cRepl, PnC};
pub use random::Random;
pub use round_robin::RoundRobin;
pub use swrr::{SWRR_MAX_CYCLE, SmoothWrr, Swrr, integer_weights};

use crate::engine::SimTime;
use crate::model::LoadTable;
use crate::rng::SimRng;
use rand::RngExt;

/// A load-balancing policy: picks a server for each arrival.
pub trait Policy {
    /// True if the policy calls [`LoadTable::shortest`], which needs the table's sorted index.
    const NEEDS_SHORTEST: bool = false;

    /// The server for a request arriving at `now`, given the loads the policy is allowed to see.
    fn pick(&mut self, loads: &LoadTable, now: SimTime, rng: &mut SimRng) -> usize;

    /// A request left `server` at `now` after spending `sojourn` there (for latency-aware policies).
    #[inline]
    fn on_departure(&mut self, _server: usize, _sojourn: f64, _now: SimTime) {}
}

/// A uniform index in `0..n`.
///
/// For `n` up to 2^32, rand draws a `usize` range through its `u32` sampler; calling that sampler
/// directly gives the same numbers from the same draws, in a body small enough to be inlined.
#[inline]
pub(crate) fn uniform(rng: &mut SimRng, n: usize) -> usize {
    match u32::try_from(n) {
        Ok(m) => rng.random_range(0..m) as usize,
        Err(_) => rng.random_range(0..n),
    }
}

/// Two distinct uniform indices in `0..n` (`n >= 2`), in sampling order.
#[inline]
pub(crate) fn two_distinct(rng: &mut SimRng, n: usize) -> (usize, usize) {
    let a = uniform(rng, n);
    let mut b = uniform(rng, n - 1);
    if b >= a {
        b += 1;
    }
    (a, b)
}

/// The policies, by their CLI/CSV names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PolicyKind {
    /// `random`
    Random,
    /// `rr`
    RoundRobin,
    /// `swrr`
    Swrr,
    /// `pNc`: N distinct choices (`p2c`, `p3c`, ...).
    PnC(u32),
    /// `p2c-repl`
    P2cRepl,
    /// `jsq`
    Jsq,
    /// `jsq-local`: `jsq` whose dispatches also update the (stale) board at once.
    JsqLocal,
    /// `p2c-pewma`
    P2cPewma,
}

/// The names accepted by [`PolicyKind::parse`], for error messages.
pub const POLICY_NAMES: &str =
    "random, rr, swrr, p2c, p3c (pNc for N >= 2), p2c-repl, jsq, jsq-local, p2c-pewma";

impl PolicyKind {
    /// Parses a policy name.
    pub fn parse(s: &str) -> Option<PolicyKind> {
        Some(match s {
            "random" => PolicyKind::Random,
            "rr" => PolicyKind::RoundRobin,
            "swrr" => PolicyKind::Swrr,
            "p2c-repl" => PolicyKind::P2cRepl,
            "jsq" => PolicyKind::Jsq,
            "jsq-local" => PolicyKind::JsqLocal,
            "p2c-pewma" => PolicyKind::P2cPewma,
            _ => {
                let digits = s.strip_prefix('p')?.strip_suffix('c')?;
                if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                    return None;
                }
                let d: u32 = digits.parse().ok()?;
                if d < 2 || digits.starts_with('0') {
                    return None;
                }
                PolicyKind::PnC(d)
            }
        })
    }

    /// The policy's name, as parsed.
    pub fn name(self) -> String {
        match self {
            PolicyKind::Random => "random".into(),
            PolicyKind::RoundRobin => "rr".into(),
            PolicyKind::Swrr => "swrr".into(),
            PolicyKind::PnC(d) => format!("p{d}c"),
            PolicyKind::P2cRepl => "p2c-repl".into(),
            PolicyKind::Jsq => "jsq".into(),
            PolicyKind::JsqLocal => "jsq-local".into(),
            PolicyKind::P2cPewma => "p2c-pewma".into(),
        }
    }

    /// The smallest farm the policy can work on.
    pub fn min_servers(self) -> usize {
        match self {
            PolicyKind::PnC(d) => d as usize,
            PolicyKind::P2cPewma => 2,
            _ => 1,
        }
    }
}

/// Parameters some policies need beyond the farm size.
#[derive(Debug, Clone, Copy)]
pub struct PolicyParams<'a> {
    /// Service rates of the servers (`swrr` derives its weights from them).
    pub rates: &'a [f64],
    /// Peak-EWMA decay time constant.
    pub tau: f64,
}

/// Builds the concrete policy for `$kind` and evaluates `$body` with it bound to `$p`.
///
/// ```ignore
/// let stats = with_policy!(kind, &params, |p| simulate(p, ...));
/// ```
#[macro_export]
macro_rules! with_policy {
    ($kind:expr, $params:expr, |$p:ident| $body:expr) => {{
        use $crate::policy::*;
        let params: &PolicyParams = $params;
        let n = params.rates.len();
        match $kind {
            PolicyKind::Random => {
                let $p = Random::new(n);
                $body
            }
            PolicyKind::RoundRobin => {
                let $p = RoundRobin::new(n);
                $body
            }
            PolicyKind::Swrr => {
                let $p = Swrr::new(&integer_weights(params.rates));
                $body
            }
            PolicyKind::PnC(2) => {
                let $p = PnC::<2>::new(n);
                $body
            }
            PolicyKind::PnC(3) => {
                let $p = PnC::<3>::new(n);
                $body
            }
            PolicyKind::PnC(d) => {
                let $p = PnC::<0>::with_choices(n, d as usize);
                $body
            }
            PolicyKind::P2cRepl => {
                let $p = P2cRepl::new(n);
                $body
            }
            PolicyKind::Jsq | PolicyKind::JsqLocal => {
                let $p = Jsq;
                $body
            }
            PolicyKind::P2cPewma => {
                let $p = P2cPeakEwma::new(n, params.tau);
                $body
            }
        }
    }};
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn uniform_draws_what_random_range_draws() {
        let mut a = SimRng::seed_from_u64(21);
        let mut b = a.clone();
        for n in (1..200).chain([1000, 65_537, 1 << 31, u32::MAX as usize, 1 << 33]) {
            for _ in 0..50 {
                assert_eq!(uniform(&mut a, n), b.random_range(0..n), "n = {n}");
            }
        }
    }

    #[test]
    fn names_round_trip() {
        for name in [
            "random",
            "rr",
            "swrr",
            "p2c",
            "p3c",
            "p10c",
            "p2c-repl",
            "jsq",
            "jsq-local",
            "p2c-pewma",
        ] {
            assert_eq!(PolicyKind::parse(name).unwrap().name(), name);
        }
        for bad in ["", "p1c", "p0c", "pc", "p02c", "P2C", "p2c ", "least-loaded", "p99999999999c"]
        {
            assert_eq!(PolicyKind::parse(bad), None, "{bad:?}");
        }
    }
}

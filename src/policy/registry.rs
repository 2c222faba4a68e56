//! The policy table: every policy lbsim knows, in one place.
//!
//! [`POLICIES`] holds one [`Entry`] per policy (or family of policies, such as `pNc`). Everything
//! else is derived from it: [`PolicyKind`] (generated with the table), [`PolicyKind::parse`] and
//! [`PolicyKind::name`], [`PolicyKind::min_servers`], which information model a policy may run
//! under ([`Info`]), the list of valid names in error messages ([`names`]), and the `--policies`
//! help lines and the policy table of `lbsim --help` (built at compile time, since clap takes
//! `&'static str`).
//!
//! The table also holds how each policy is built: the event loop is generic over the concrete
//! type (monomorphised, no boxing), so [`with_policy!`](crate::with_policy) is a `match` with one
//! arm per constructor, generated from the same rows. The `dispatch_builds_the_type_each_entry_names`
//! test checks that each arm builds the type its entry names.
//!
//! # Adding a policy
//!
//! 1. Write the type implementing [`Policy`](super::Policy) in its own file under `src/policy/`,
//!    citing its source, and re-export it from `policy/mod.rs`. If it has parameters, declare
//!    them in the same file as one serde struct implementing [`Params`] (see
//!    [`tuning`](super::tuning): `deny_unknown_fields`, defaults, one value parser per field).
//! 2. Add one row to the table in this file: the variant (with its doc comment), its parameter
//!    struct ([`NoParams`] if none), its [`Entry`] (name, type, one-line rule; `.live_only()`,
//!    `.board_only()`, `.min_servers(n)` as needed) and its constructor `|p, t| ...` from the
//!    [`PolicyParams`] `p` and the parsed parameters `t`. `NAME:key=value,...` is then parsed
//!    into the struct ([`PolicyKind::tuning`]), [`with_policy!`](crate::with_policy) builds it,
//!    and the tests below check the row from the table itself.

use super::tuning::{NoParams, ParamError, Params, Tuning, parse};
use super::*;
use crate::rng::StreamKey;
use crate::workload::SharedKeys;

/// Where load information comes from, as far as the choice of policies goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Info {
    /// Live queue lengths (`homo`, `hetero`, and `run` without a board).
    Live,
    /// A bulletin board posted periodically (`stale`, and `run` with `info.kind = "board"`).
    Board,
}

/// The smallest farm a policy works on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MinServers {
    /// At least this many servers.
    AtLeast(usize),
    /// At least the family's parameter N (N distinct samples need N servers).
    Choices,
}

/// One row of the policy table.
#[derive(Debug, Clone, Copy)]
pub struct Entry {
    /// The name as typed; a family writes its parameter as `N` (`pNc`).
    pub name: &'static str,
    /// The concrete type [`with_policy!`](crate::with_policy) builds (checked by a test).
    pub policy: &'static str,
    /// What the policy does, in one line (shown by `lbsim --help`).
    pub rule: &'static str,
    /// The code or paper the policy follows (empty for the textbook ones), as the README's
    /// policy table gives it.
    pub source: &'static str,
    /// For a family: the accepted range of N, inclusive.
    pub family: Option<(u32, u32)>,
    /// Allowed with live information.
    pub live: bool,
    /// Allowed with a bulletin board.
    pub board: bool,
    /// The smallest farm it works on.
    pub min_servers: MinServers,
    /// Parameters accepted as `NAME:key=value` in a scenario's policy list: the keys of its
    /// parameter struct ([`Entry::params`]).
    pub params: &'static [&'static str],
    /// Parses the text after `NAME:` into the parameter struct (`NAME` for the messages).
    pub parse: fn(&str, &str) -> Result<Tuning, ParamError>,
    /// Holds the given parameters if they are this row's struct (see [`PolicyKind::tuned`]).
    pub hold: fn(&dyn std::any::Any) -> Option<Tuning>,
    /// The fields serde reads into the parameter struct (to check them against `params`).
    #[cfg(test)]
    pub fields: fn() -> &'static [&'static str],
    /// Counts its own dispatches on the board: the name selects the update-on-dispatch board
    /// ([`BoardWithDispatch`](crate::info::BoardWithDispatch)) rather than a different policy.
    pub counts_dispatches: bool,
}

impl Entry {
    /// A policy named `name`, built as type `policy`, allowed everywhere, on one server or more.
    pub const fn new(name: &'static str, policy: &'static str, rule: &'static str) -> Entry {
        Entry {
            name,
            policy,
            rule,
            source: "",
            family: None,
            live: true,
            board: true,
            min_servers: MinServers::AtLeast(1),
            params: NoParams::KEYS,
            parse: parse_into::<NoParams>,
            hold: hold_as::<NoParams>,
            #[cfg(test)]
            fields: super::tuning::tests::fields::<NoParams>,
            counts_dispatches: false,
        }
    }

    /// Cites the code or paper the policy follows.
    pub const fn source(self, source: &'static str) -> Entry {
        Entry { source, ..self }
    }

    /// Makes the entry a family over N in `min..=max`, needing N servers.
    pub const fn family(self, min: u32, max: u32) -> Entry {
        Entry { family: Some((min, max)), min_servers: MinServers::Choices, ..self }
    }

    /// Allowed with live information only.
    pub const fn live_only(self) -> Entry {
        Entry { board: false, ..self }
    }

    /// Allowed with a bulletin board only.
    pub const fn board_only(self) -> Entry {
        Entry { live: false, ..self }
    }

    /// Runs on a board only, a board to which each of its dispatches adds one at once
    /// (update-on-dispatch).
    pub const fn counts_dispatches(self) -> Entry {
        Entry { live: false, counts_dispatches: true, ..self }
    }

    /// Needs at least `n` servers.
    pub const fn min_servers(self, n: usize) -> Entry {
        Entry { min_servers: MinServers::AtLeast(n), ..self }
    }

    /// Takes the parameters of struct `P` (`NAME:key=value`).
    pub const fn params<P: Params>(self) -> Entry {
        Entry {
            params: P::KEYS,
            parse: parse_into::<P>,
            hold: hold_as::<P>,
            #[cfg(test)]
            fields: super::tuning::tests::fields::<P>,
            ..self
        }
    }

    /// True if the policy may run under `info`.
    pub const fn allows(&self, info: Info) -> bool {
        match info {
            Info::Live => self.live,
            Info::Board => self.board,
        }
    }

    /// The family's name split around its parameter: `("p", "c")` for `pNc`.
    fn affixes(&self) -> (&'static str, &'static str) {
        self.name.split_once('N').expect("a family's name holds N")
    }

    /// The name with the family's parameter written out (`p2c` for `pNc` and 2).
    fn name_with(&self, n: u32) -> String {
        match self.family {
            Some(_) => {
                let (prefix, suffix) = self.affixes();
                format!("{prefix}{n}{suffix}")
            }
            None => self.name.to_string(),
        }
    }

    /// The family's N if `s` names a member with N >= its minimum (the maximum is checked by
    /// [`resolve`], which says so in its error).
    fn member(&self, s: &str) -> Option<u32> {
        let (min, _) = self.family?;
        let (prefix, suffix) = self.affixes();
        let digits = s.strip_prefix(prefix)?.strip_suffix(suffix)?;
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        if digits.starts_with('0') {
            return None;
        }
        digits.parse::<u32>().ok().filter(|&n| n >= min)
    }
}

/// Parses `text` into a `P`, held as the run's [`Tuning`].
fn parse_into<P: Params>(policy: &str, text: &str) -> Result<Tuning, ParamError> {
    parse::<P>(policy, text).map(Tuning::new)
}

/// `params` held as a [`Tuning`] if they are a `P`.
fn hold_as<P: Params>(params: &dyn std::any::Any) -> Option<Tuning> {
    params.downcast_ref::<P>().cloned().map(Tuning::new)
}

/// Generates, from one list of rows, [`PolicyKind`], [`POLICIES`], the mapping between the two,
/// and the dispatch behind [`with_policy!`](crate::with_policy).
///
/// A row is `Variant: Params => entry, constructor;`: a family's variant carries its parameter
/// (`PnC(n)`); `Params` is the policy's parameter struct (added to the entry as
/// [`Entry::params`]); the constructor `|p, t| ...` builds the policy from the [`PolicyParams`]
/// `p` and the parsed parameters `t` (of type `Params`). A row may give several constructors,
/// each after a pattern of the variant's parameter in brackets (`pNc` has one for N = 2 and 3,
/// whose sample count is a compile-time constant, and one for any other N). The first token is
/// `$`, which the dispatch macro needs for its own variables.
macro_rules! policy_table {
    ($d:tt $(
        $(#[$doc:meta])* $variant:ident $(($n:ident))?: $params:ty => $entry:expr,
        $( $([$arg:pat])? |$p:ident, $t:pat_param| $make:expr ),+ ;
    )*) => {
        /// A parsed policy name: one variant per row of [`POLICIES`] (a family's variant carries
        /// its N).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum PolicyKind {
            $( $(#[$doc])* $variant $((policy_table!(@u32 $n)))?, )*
        }

        /// The policy table, in the order names are listed.
        pub const POLICIES: &[Entry] = &[$($entry.params::<$params>()),*];

        impl PolicyKind {
            /// This policy's row in [`POLICIES`], and its family parameter (0 if none).
            #[allow(unused_assignments)]
            fn row(self) -> (usize, u32) {
                let mut row = 0;
                $(
                    if let PolicyKind::$variant $(($n))? = self {
                        return (row, 0 $(+ $n)?);
                    }
                    row += 1;
                )*
                unreachable!("every variant has a row")
            }

            /// The policy of row `row` with family parameter `param`.
            #[allow(unused_assignments)]
            fn from_row(row: usize, param: u32) -> PolicyKind {
                let _ = param;
                let mut i = 0;
                $(
                    if row == i {
                        return PolicyKind::$variant $((policy_table!(@arg $n param)))?;
                    }
                    i += 1;
                )*
                unreachable!("row {row} is in the table")
            }
        }

        /// The dispatch of [`with_policy!`](crate::with_policy): one arm per constructor of the
        /// table, each binding `$make` to a closure that builds that row's policy.
        macro_rules! dispatch {
            ($d kind:expr, |$d make:ident| $d body:expr) => {{
                #[allow(unused_imports)]
                use rand::Rng as _;
                use $d crate::policy::*;
                match $d kind {
                    $($(
                        PolicyKind::$variant $(($arg))? => {
                            let $d make = |$p: &PolicyParams| {
                                let $t = $p.tuning.of::<$params>();
                                $make
                            };
                            $d body
                        }
                    )+)*
                }
            }};
        }
        pub(crate) use dispatch;
    };
    (@u32 $n:ident) => { u32 };
    (@arg $n:ident $param:ident) => { $param };
}

policy_table! { $
    /// `random`
    Random: RandomParams => Entry::new("random", "Random", "a uniform server (weighted=true: in proportion to rate)"),
        |p, t| Random::with_rates(p.rates, t.weighted);
    /// `rr`
    RoundRobin: NoParams => Entry::new("rr", "RoundRobin", "round robin in index order"),
        |p, _| RoundRobin::new(p.rates.len());
    /// `swrr`
    Swrr: NoParams => Entry::new("swrr", "Swrr", "smooth weighted round robin, weights from rates (NGINX)").source("NGINX ngx_http_upstream_round_robin.c"),
        |p, _| Swrr::new(&integer_weights(p.rates));
    /// `pNc`: N distinct choices (`p2c`, `p3c`, ...).
    PnC(n): NoParams => Entry::new("pNc", "PnC", "shortest of N distinct uniform samples, first on ties").source("Mitzenmacher 1996").family(2, MAX_CHOICES),
        [2] |p, _| PnC::<2>::new(p.rates.len()),
        [3] |p, _| PnC::<3>::new(p.rates.len()),
        [n] |p, _| PnC::<0>::with_choices(p.rates.len(), n as usize);
    /// `p2c-repl`
    P2cRepl: NoParams => Entry::new("p2c-repl", "P2cRepl", "two samples with replacement, 2nd if strictly shorter (Envoy)").source("Envoy least_request_lb.cc"),
        |p, _| P2cRepl::new(p.rates.len());
    /// `jsq`
    Jsq: NoParams => Entry::new("jsq", "Jsq", "shortest queue of all, ties uniformly at random"),
        |p, _| Jsq::new();
    /// `jsq-local`: `jsq` under the board with update-on-dispatch.
    JsqLocal: NoParams => Entry::new("jsq-local", "Jsq", "jsq whose own dispatches update the board at once").source("Mitzenmacher 2000").counts_dispatches(),
        |p, _| Jsq::new();
    /// `p2c-pewma`
    P2cPewma: Decay => Entry::new("p2c-pewma", "P2cPeakEwma", "p2c on rtt x (queue + 1), Peak-EWMA rtt (tower)").source("tower peak_ewma.rs, Finagle").live_only().min_servers(2),
        |p, t| P2cPeakEwma::new(p.rates.len(), t.tau);
    /// `least-request`
    LeastRequest: LeastRequestParams => Entry::new("least-request", "LeastRequest", "Envoy least_request: N choices, full scan, or EDF").source("Envoy least_request_lb.cc, edf_scheduler.h"),
        |p, t| LeastRequest::new(p.rates, t.choices, t.full_scan, t.bias, &mut p.stream.str("edf").rng());
    /// `least-conn`
    LeastConn: NoParams => Entry::new("least-conn", "LeastConn", "NGINX least_conn: fewest active per weight, round robin among ties").source("NGINX ngx_http_upstream_least_conn_module.c"),
        |p, _| LeastConn::new(&integer_weights(p.rates));
    /// `random-two`
    RandomTwo: NoParams => Entry::new("random-two", "RandomTwo", "NGINX random two least_conn: 2 weighted draws, the 2nd unless busier").source("NGINX ngx_http_upstream_random_module.c").min_servers(2),
        |p, _| RandomTwo::new(&integer_weights(p.rates));
    /// `aperture`
    Aperture: ApertureParams => Entry::new("aperture", "Aperture", "Finagle deterministic aperture: p2c in the client's ring slice").source("Finagle DeterministicAperture.scala, Ring.scala, WeightedP2CPick.scala"),
        |p, t| Aperture::new(p.rates.len(), p.client, p.clients, t.min_aperture as usize);
    /// `jiq`
    Jiq: JiqParams => Entry::new("jiq", "Jiq", "join-idle-queue: a server that reported idle, else a random one").source("Lu et al., Performance 2011"),
        |p, t| Jiq::new(p.rates.len(), t.dispatchers as usize, p.stream.str("jiq").rng());
    /// `ring-hash`
    RingHash: RingHashParams => Entry::new("ring-hash", "RingHash", "key's server on a hash ring, optionally bounded (HAProxy)").source("Envoy ring_hash_lb.cc, HAProxy lb_chash.c"),
        |p, t| RingHash::new(p.rates, t.vnodes as usize, t.balance, p.shared.str("ring").rng().next_u64(), p.keys.clone());
    /// `maglev`
    Maglev: MaglevParams => Entry::new("maglev", "MaglevHash", "key's server in a Maglev lookup table").source("Eisenbud et al., NSDI 2016; Envoy maglev_lb.cc"),
        |p, t| MaglevHash::new(p.rates.len(), t.table as usize, p.shared.str("maglev").rng().next_u64(), p.keys.clone());
    /// `wrr-orca`
    WrrOrca: OrcaConfig => Entry::new("wrr-orca", "WrrOrca", "gRPC weighted_round_robin: weights qps/utilization from server reports").source("gRFC A58, grpc-go balancer/weightedroundrobin").live_only(),
        |p, t| WrrOrca::new(p.rates.len(), t, p.stream.str("wrr-orca").rng().next_u32());
    /// `prequal`
    Prequal: PrequalConfig => Entry::new("prequal", "Prequal", "Prequal: probe pool, hot-cold rule on requests in flight and latency").source("Wydrowski et al., NSDI 2024 (from the paper)").live_only(),
        |p, t| Prequal::new(p.rates.len(), t);
    /// `c3`
    C3: C3Config => Entry::new("c3", "C3", "C3: replicas ranked by R - 1/mu + q_hat^3/mu from feedback, cubic rate control").source("Suresh et al., NSDI 2015; its simulator absim client.py; cassandra-c3 ScoreTracker.java, RateController.java").live_only(),
        |p, t| C3::new(p.rates.len(), p.clients, t);
    /// `least-latency`
    LeastLatency: Decay => Entry::new("least-latency", "LeastLatency", "lower EWMA latency of two random servers (least_time style)").source("NGINX Plus least_time, Linkerd").live_only().min_servers(2),
        |p, t| LeastLatency::new(p.rates.len(), t.tau);
}

/// The largest N of `pNc` (a pick samples N distinct servers, in O(N^2)).
pub const MAX_CHOICES: u32 = crate::limits::CHOICES;

/// Parameters some policies need beyond the farm size: the farm as one dispatcher sees it, the
/// policy's own parameters, and what it draws besides its coin flips.
#[derive(Debug, Clone)]
pub struct PolicyParams<'a> {
    /// Service rates of the servers this dispatcher may use, in its own index order (`swrr` and
    /// the weighted policies derive their weights from them).
    pub rates: &'a [f64],
    /// The policy's parameters (`NAME:key=value`).
    pub tuning: &'a Tuning,
    /// This dispatcher's index among `clients` (aperture places both on a ring).
    pub client: usize,
    /// The number of dispatchers.
    pub clients: usize,
    /// The keys of requests, for the hashing policies (`None`: every request has key 0). One
    /// stream for the whole run, drawn once per arrival by whichever dispatcher takes it, so every
    /// policy sees the same keys.
    pub keys: Option<SharedKeys>,
    /// A stream of the policy's own for draws outside a pick (`jiq`'s idle reports); each
    /// client of a fleet has its own.
    pub stream: StreamKey,
    /// A stream the same for every client of the replication, for what all clients agree on
    /// (where the hash ring puts the servers, as proxies fed the same host list do).
    pub shared: StreamKey,
}

impl<'a> PolicyParams<'a> {
    /// One dispatcher over `rates` with `tuning`, no keys.
    pub fn new(rates: &'a [f64], tuning: &'a Tuning) -> Self {
        PolicyParams {
            rates,
            tuning,
            client: 0,
            clients: 1,
            keys: None,
            stream: StreamKey::new(0, "policy-own"),
            shared: StreamKey::new(0, "policy-shared"),
        }
    }
}

/// Builds the concrete policy for `$kind` and evaluates `$body` with `$make` bound to a closure
/// `|&PolicyParams| -> P` that builds one (a fleet of clients builds one per client).
///
/// The arms are generated from the rows of [`POLICIES`] (`policy_table!`): each row's
/// constructor, given its parameter struct as parsed.
///
/// ```ignore
/// let stats = with_policy!(kind, |make| simulate(make(&params), ...));
/// let stats = with_policy!(kind, &params, |p| simulate(p, ...));
/// ```
#[macro_export]
macro_rules! with_policy {
    ($kind:expr, $params:expr, |$p:ident| $body:expr) => {
        $crate::with_policy!($kind, |make| {
            let $p = make($params);
            $body
        })
    };
    ($kind:expr, |$make:ident| $body:expr) => {
        $crate::policy::registry::dispatch!($kind, |$make| $body)
    };
}

impl PolicyKind {
    /// Parses a policy name (a family member needs N at least the family's minimum; its maximum
    /// is checked by [`resolve`]).
    pub fn parse(s: &str) -> Option<PolicyKind> {
        let single = POLICIES.iter().position(|e| e.family.is_none() && e.name == s);
        if let Some(row) = single {
            return Some(PolicyKind::from_row(row, 0));
        }
        POLICIES
            .iter()
            .enumerate()
            .find_map(|(row, e)| e.member(s).map(|n| PolicyKind::from_row(row, n)))
    }

    /// The policy's name, as parsed.
    pub fn name(self) -> String {
        let (row, n) = self.row();
        POLICIES[row].name_with(n)
    }

    /// Parses the text after `NAME:` (`key=value,...`) into the policy's parameter struct.
    pub fn tuning(self, text: &str) -> Result<Tuning, ParamError> {
        (self.entry().parse)(&self.name(), text)
    }

    /// `params` for this policy if it takes that struct, else its defaults: a setting that
    /// concerns only some policies (the `--tau` of the policies that take a [`Decay`]).
    pub fn tuned<P: Params>(self, params: P) -> Tuning {
        (self.entry().hold)(&params).unwrap_or_default()
    }

    /// The policy's row in the table.
    pub fn entry(self) -> &'static Entry {
        &POLICIES[self.row().0]
    }

    /// True if the name selects the board with update-on-dispatch (`jsq-local`: the policy is
    /// `jsq`, and its dispatches count on the board).
    pub fn counts_dispatches(self) -> bool {
        self.entry().counts_dispatches
    }

    /// The smallest farm the policy can work on.
    pub fn min_servers(self) -> usize {
        let (row, n) = self.row();
        match POLICIES[row].min_servers {
            MinServers::AtLeast(m) => m,
            MinServers::Choices => n as usize,
        }
    }
}

/// Why a policy name was refused by [`resolve`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NameError {
    /// No policy has this name.
    Unknown,
    /// A family member whose N is above the family's maximum.
    OutOfRange {
        /// The family's name (`pNc`).
        family: &'static str,
        /// The smallest N.
        min: u32,
        /// The largest N.
        max: u32,
    },
    /// A known policy that cannot run under the given information.
    NotAllowed,
}

/// Parses `s` and checks that it is a policy allowed under `info`.
pub fn resolve(s: &str, info: Info) -> Result<PolicyKind, NameError> {
    let kind = PolicyKind::parse(s).ok_or(NameError::Unknown)?;
    let (row, n) = kind.row();
    let entry = &POLICIES[row];
    if let Some((min, max)) = entry.family
        && n > max
    {
        return Err(NameError::OutOfRange { family: entry.name, min, max });
    }
    if !entry.allows(info) {
        return Err(NameError::NotAllowed);
    }
    Ok(kind)
}

/// The policies valid under `info` (or all of them), in one line for error messages:
/// `random, rr, ..., pNc (p2c, p3c, ... N from 2 to 100), ...`.
pub fn names(info: Option<Info>) -> String {
    let text = list(Text::<LIST_CAP>::new(), info);
    text.as_str().to_string()
}

// ===== help text, built at compile time =====

/// Room for one generated help text, in bytes (a too small room fails the build).
const LIST_CAP: usize = 1024;
const TABLE_CAP: usize = 4096;

/// A string of at most `CAP` bytes built in a `const` context (clap's help texts are
/// `&'static str`).
#[derive(Clone, Copy)]
pub struct Text<const CAP: usize> {
    buf: [u8; CAP],
    len: usize,
}

impl<const CAP: usize> Text<CAP> {
    const fn new() -> Self {
        Text { buf: [0; CAP], len: 0 }
    }

    const fn push(mut self, s: &str) -> Self {
        let bytes = s.as_bytes();
        assert!(self.len + bytes.len() <= CAP, "generated help text too long");
        let mut i = 0;
        while i < bytes.len() {
            self.buf[self.len] = bytes[i];
            self.len += 1;
            i += 1;
        }
        self
    }

    const fn push_u32(mut self, n: u32) -> Self {
        if n >= 10 {
            self = self.push_u32(n / 10);
        }
        assert!(self.len < CAP, "generated help text too long");
        self.buf[self.len] = b'0' + (n % 10) as u8;
        self.len += 1;
        self
    }

    /// Pads with spaces to column `col` of the current line (at least one space).
    const fn pad_to(mut self, col: usize) -> Self {
        let mut start = self.len;
        while start > 0 && self.buf[start - 1] != b'\n' {
            start -= 1;
        }
        self = self.push(" ");
        while self.len - start < col {
            self = self.push(" ");
        }
        self
    }

    /// A family's name with N written out (`p2c`).
    const fn push_member(self, name: &str, n: u32) -> Self {
        let bytes = name.as_bytes();
        let mut out = self;
        let mut i = 0;
        while i < bytes.len() {
            if bytes[i] == b'N' {
                out = out.push_u32(n);
            } else {
                let (_, rest) = bytes.split_at(i);
                let (one, _) = rest.split_at(1);
                out = out.push(match core::str::from_utf8(one) {
                    Ok(s) => s,
                    Err(_) => panic!("policy names are ASCII"),
                });
            }
            i += 1;
        }
        out
    }

    /// The text.
    pub const fn as_str(&self) -> &str {
        let (used, _) = self.buf.split_at(self.len);
        match core::str::from_utf8(used) {
            Ok(s) => s,
            Err(_) => panic!("generated help text is UTF-8"),
        }
    }
}

/// Appends the names valid under `info` (all if `None`), comma-separated.
const fn list<const CAP: usize>(mut t: Text<CAP>, info: Option<Info>) -> Text<CAP> {
    let mut i = 0;
    let mut first = true;
    while i < POLICIES.len() {
        let e = &POLICIES[i];
        i += 1;
        if let Some(info) = info
            && !e.allows(info)
        {
            continue;
        }
        if !first {
            t = t.push(", ");
        }
        first = false;
        t = t.push(e.name);
        if let Some((min, max)) = e.family {
            t = t.push(" (").push_member(e.name, min).push(", ").push_member(e.name, min + 1);
            t = t.push(", ... N from ").push_u32(min).push(" to ").push_u32(max).push(")");
        }
    }
    t
}

/// The `--policies` help of a command whose information is `info`.
const fn policies_help(info: Info) -> Text<LIST_CAP> {
    list(Text::new().push("Policies, comma-separated: "), Some(info))
}

/// Opens the bracket of a table line's tags, or separates the next tag.
const fn tag<const CAP: usize>(t: Text<CAP>, tags: &mut usize) -> Text<CAP> {
    *tags += 1;
    t.push(if *tags == 1 { " [" } else { ", " })
}

/// The policy table of `lbsim --help`, after `head`.
const fn policy_table(head: &str) -> Text<TABLE_CAP> {
    let mut t = Text::new().push(head).push("Policies (--policies):");
    let mut i = 0;
    while i < POLICIES.len() {
        let e = &POLICIES[i];
        i += 1;
        t = t.push("\n  ").push(e.name).pad_to(16).push(e.rule);
        let mut tags = 0;
        if let Some((min, max)) = e.family {
            t = tag(t, &mut tags).push("N from ").push_u32(min).push(" to ").push_u32(max);
        }
        if !e.live {
            t = tag(t, &mut tags).push("board only");
        }
        if !e.board {
            t = tag(t, &mut tags).push("live only");
        }
        match e.min_servers {
            MinServers::AtLeast(1) => {}
            MinServers::AtLeast(n) => t = tag(t, &mut tags).push_u32(n as u32).push("+ servers"),
            MinServers::Choices => t = tag(t, &mut tags).push("N+ servers"),
        }
        let mut p = 0;
        while p < e.params.len() {
            t = if p == 0 {
                let word = if e.params.len() == 1 { "param " } else { "params " };
                tag(t, &mut tags).push(word)
            } else {
                t.push(" ")
            };
            t = t.push(e.params[p]);
            p += 1;
        }
        if tags > 0 {
            t = t.push("]");
        }
    }
    t
}

const LIVE_HELP: Text<LIST_CAP> = policies_help(Info::Live);
const BOARD_HELP: Text<LIST_CAP> = policies_help(Info::Board);

/// `--policies` help of the commands with live information (`homo`, `hetero`).
pub const LIVE_POLICIES_HELP: &str = LIVE_HELP.as_str();
/// `--policies` help of the commands with a bulletin board (`stale`).
pub const BOARD_POLICIES_HELP: &str = BOARD_HELP.as_str();

/// A generated help text: `lbsim --help`'s policy table.
pub type HelpText = Text<TABLE_CAP>;

/// `head`, the policy table, a blank line and `tail` (for `lbsim --help`).
pub const fn with_table(head: &str, tail: &str) -> HelpText {
    policy_table(head).push("\n\n").push(tail)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every policy name and family member, from the table.
    fn samples() -> Vec<PolicyKind> {
        let mut out = Vec::new();
        for (row, e) in POLICIES.iter().enumerate() {
            match e.family {
                Some((min, max)) => {
                    for n in [min, min + 1, (min + max) / 2, max] {
                        out.push(PolicyKind::from_row(row, n));
                    }
                }
                None => out.push(PolicyKind::from_row(row, 0)),
            }
        }
        out
    }

    #[test]
    fn names_round_trip_through_parse() {
        for kind in samples() {
            assert_eq!(PolicyKind::parse(&kind.name()), Some(kind), "{kind:?}");
        }
        for bad in
            ["", "p1c", "p0c", "pc", "pNc", "p02c", "P2C", "p2c ", "least-loaded", "p99999999999c"]
        {
            assert_eq!(PolicyKind::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn every_row_maps_back_to_itself_and_no_name_is_ambiguous() {
        for (row, e) in POLICIES.iter().enumerate() {
            let n = e.family.map_or(0, |(min, _)| min);
            assert_eq!(PolicyKind::from_row(row, n).row(), (row, n), "{}", e.name);
            if e.family.is_some() {
                assert_eq!(e.name.matches('N').count(), 1, "{}: one N", e.name);
            }
            // A single name is never also a family member, and no two rows share a name.
            for (other, f) in POLICIES.iter().enumerate() {
                if other != row {
                    assert_ne!(e.name, f.name);
                    if e.family.is_none() {
                        assert_eq!(f.member(e.name), None, "{} is also {}", e.name, f.name);
                    }
                }
            }
        }
    }

    #[test]
    fn pnc_takes_n_from_2_to_100() {
        assert_eq!(PolicyKind::parse("p1c"), None);
        assert_eq!(resolve("p2c", Info::Live), Ok(PolicyKind::PnC(2)));
        assert_eq!(resolve("p100c", Info::Board), Ok(PolicyKind::PnC(100)));
        let out = NameError::OutOfRange { family: "pNc", min: 2, max: 100 };
        assert_eq!(resolve("p101c", Info::Live), Err(out));
        assert_eq!(resolve("p1c", Info::Live), Err(NameError::Unknown));
        assert_eq!(MAX_CHOICES, crate::limits::CHOICES);
    }

    #[test]
    fn each_name_resolves_under_the_information_its_row_allows() {
        for kind in samples() {
            let e = kind.entry();
            assert!(e.live || e.board, "{} runs somewhere", e.name);
            for (info, allowed) in [(Info::Live, e.live), (Info::Board, e.board)] {
                let want = if allowed { Ok(kind) } else { Err(NameError::NotAllowed) };
                assert_eq!(resolve(&kind.name(), info), want, "{info:?}");
                let listed =
                    names(Some(info)).split(", ").any(|n| n.split(' ').next() == Some(e.name));
                assert_eq!(listed, allowed, "{} in the names of {info:?}", e.name);
            }
        }
        assert_eq!(resolve("nope", Info::Board), Err(NameError::Unknown));
    }

    #[test]
    fn a_name_that_counts_dispatches_is_another_row_s_policy_on_a_board() {
        for kind in samples().into_iter().filter(|k| k.counts_dispatches()) {
            let e = kind.entry();
            assert!(!e.live && e.board, "{}: board only", e.name);
            let plain = POLICIES.iter().find(|f| f.policy == e.policy && !f.counts_dispatches);
            assert!(plain.is_some(), "{} is another row's {}", e.name, e.policy);
        }
        let local = PolicyKind::parse("jsq-local").unwrap();
        assert!(local.counts_dispatches() && !PolicyKind::Jsq.counts_dispatches());
    }

    #[test]
    fn every_policy_picks_on_its_smallest_farm() {
        // Built on exactly `min_servers()` servers (and the smallest farm a family allows for its
        // N), each policy picks a server of that farm: a minimum below what a policy needs (two
        // distinct samples on one server) panics or picks out of range here.
        let mut rng = <SimRng as rand::SeedableRng>::seed_from_u64(1);
        for kind in samples() {
            let n = kind.min_servers();
            let rates = vec![1.0; n];
            let tuning = kind.tuning("").unwrap();
            let params = PolicyParams::new(&rates, &tuning);
            let loads = crate::model::LoadTable::new(n, true);
            let picks = with_policy!(kind, &params, |p| {
                let mut p = p;
                (0..20).map(|_| p.pick(&loads, SimTime::ZERO, &mut rng)).collect::<Vec<_>>()
            });
            assert!(picks.iter().all(|&s| s < n), "{}: {picks:?} on {n}", kind.name());
        }
    }

    #[test]
    fn dispatch_builds_the_type_each_entry_names() {
        // `with_policy!`'s arms are generated from the rows; this checks that each arm builds
        // the type its row names.
        let rates = vec![1.0; 100];
        for kind in samples() {
            let tuning = kind.tuning("").unwrap();
            let params = PolicyParams::new(&rates, &tuning);
            let built = with_policy!(kind, &params, |p| std::any::type_name_of_val(&p));
            let base = built.split('<').next().unwrap().rsplit("::").next().unwrap();
            assert_eq!(base, kind.entry().policy, "{} builds {built}", kind.name());
        }
    }

    #[test]
    fn every_key_of_a_row_is_a_field_of_its_parameter_struct() {
        for kind in samples() {
            let (e, name) = (kind.entry(), kind.name());
            assert_eq!((e.fields)(), e.params, "{name}: the keys are the struct's fields");
            assert_eq!(kind.tuning(""), kind.tuning(" , "), "{name}: no parameters, defaults");
            for key in e.params {
                let err = kind.tuning(&format!("{key}=?")).unwrap_err().to_string();
                assert!(err.starts_with(&format!("{key} must be ")), "{name}: {err}");
            }
            let err = kind.tuning("nope=1").unwrap_err().to_string();
            assert_eq!(err, format!("unknown parameter 'nope=1' for {name}"));
        }
    }

    #[test]
    fn parameters_keep_their_messages() {
        let cases = [
            ("random", "weighted=1", "weighted must be true or false"),
            ("p2c-pewma", "tau=0", "tau must be a number > 0"),
            ("least-latency", "tau=NaN", "tau must be a number > 0"),
            ("least-request", "choices=0", "choices must be an integer from 1 to 100000"),
            ("least-request", "mode=scan", "mode must be n-choices or full-scan"),
            ("least-request", "bias=101", "bias must be a number from 0 to 100"),
            ("aperture", "min_aperture=x", "min_aperture must be an integer from 1 to 100000"),
            ("jiq", "dispatchers=100001", "dispatchers must be an integer from 1 to 100000"),
            ("ring-hash", "vnodes=0", "vnodes must be an integer from 1 to 100000"),
            ("ring-hash", "balance=1", "balance must be a factor > 1 (1.25 = 25% above the mean)"),
            ("maglev", "table=250", "table must be a prime from 3 to 10000019 (65537 by default)"),
            ("wrr-orca", "blackout_period=-1", "blackout_period must be a number >= 0"),
            ("wrr-orca", "expiration_period=0", "expiration_period must be a number > 0"),
            ("wrr-orca", "weight_update_period=0", "weight_update_period must be a number > 0"),
            ("wrr-orca", "report_period=inf", "report_period must be a number > 0"),
            ("wrr-orca", "penalty=-1", "penalty must be a number >= 0"),
            ("prequal", "probe_rate=101", "probe_rate must be a number from 0 to 100"),
            ("prequal", "pool=0", "pool must be an integer from 1 to 100000"),
            ("prequal", "max_age=0", "max_age must be a number > 0"),
            ("prequal", "q_rif=2", "q_rif must be a number from 0 to 1"),
            ("prequal", "probe_delay=-1", "probe_delay must be a number >= 0"),
            ("c3", "rate_control=1", "rate_control must be true or false"),
            ("c3", "rate_interval=0", "rate_interval must be a number > 0"),
            ("c3", "cubic_c=0", "cubic_c must be a number > 0"),
            ("c3", "smax=0", "smax must be a number > 0"),
            ("c3", "max_tokens=0.5", "max_tokens must be a number >= 1"),
            ("c3", "beta=1", "beta must be a number between 0 and 1"),
            ("c3", "hysteresis=-1", "hysteresis must be a number >= 0"),
            ("p3c", "tau=1", "unknown parameter 'tau=1' for p3c"),
            ("jsq-local", " x", "unknown parameter ' x' for jsq-local"),
            ("c3", "beta=2,x=1", "beta must be a number between 0 and 1"),
            ("c3", "x=1,beta=2", "unknown parameter 'x=1' for c3"),
            (
                "jiq",
                "dispatchers=2, dispatchers = 3",
                "parameter 'dispatchers' is given twice \
              (dispatchers=2 and dispatchers=3)",
            ),
        ];
        for (name, text, message) in cases {
            let err = PolicyKind::parse(name).unwrap().tuning(text).unwrap_err();
            assert_eq!(err.to_string(), message, "{name}:{text}");
        }
    }

    #[test]
    fn parameters_reach_their_struct() {
        let get = |name, text| PolicyKind::parse(name).unwrap().tuning(text).unwrap();
        let lr = get("least-request", "choices=3, mode=full-scan").of::<LeastRequestParams>();
        assert_eq!(lr, LeastRequestParams { choices: 3, full_scan: true, bias: 1.0 });
        let ring = get("ring-hash", "balance=1.25").of::<RingHashParams>();
        assert_eq!(ring, RingHashParams { vnodes: 100, balance: Some(1.25) });
        assert_eq!(get("maglev", "table=251").of::<MaglevParams>().table, 251);
        let orca = get("wrr-orca", "report_period=5,blackout_period=0").of::<OrcaConfig>();
        assert_eq!((orca.report, orca.blackout, orca.update), (5.0, 0.0, 10.0));
        let c3 = get("c3", "rate_interval=7,rate_control=false").of::<C3Config>();
        assert_eq!((c3.interval, c3.rate_control, c3.beta), (7.0, false, 0.2));
        assert_eq!(get("prequal", "pool=4").of::<PrequalConfig>().pool, 4);
        assert_eq!(get("p2c-pewma", "tau=2.5").of::<Decay>().tau, 2.5);
        assert_eq!(get("least-latency", "").of::<Decay>().tau, DEFAULT_TAU);
        assert!(get("random", "weighted=true").of::<RandomParams>().weighted);
        assert_eq!(get("aperture", "min_aperture=3").of::<ApertureParams>().min_aperture, 3);
        assert_eq!(get("jiq", "dispatchers=7").of::<JiqParams>().dispatchers, 7);
    }

    #[test]
    fn a_setting_reaches_only_the_policies_that_take_it() {
        let tau = Decay { tau: 1.5 };
        for kind in samples() {
            let takes = matches!(kind, PolicyKind::P2cPewma | PolicyKind::LeastLatency);
            let want = if takes { Tuning::new(tau) } else { Tuning::default() };
            assert_eq!(kind.tuned(tau), want, "{}", kind.name());
            // Every policy is built from what `tuned` gives it.
            let rates = vec![1.0; 100];
            let tuning = kind.tuned(tau);
            let params = PolicyParams::new(&rates, &tuning);
            let _ = with_policy!(kind, &params, |p| std::any::type_name_of_val(&p));
        }
    }

    #[test]
    #[should_panic(expected = "parameters Decay given to a policy that takes RandomParams")]
    fn a_policy_given_another_s_parameters_is_not_built_with_defaults() {
        let (rates, tuning) = (vec![1.0; 4], Tuning::new(Decay { tau: 1.0 }));
        let params = PolicyParams::new(&rates, &tuning);
        let _ = with_policy!(PolicyKind::Random, &params, |p| std::any::type_name_of_val(&p));
    }

    #[test]
    fn names_and_help_list_the_table_in_one_line() {
        let all = names(None);
        assert!(!all.contains('\n'));
        let mut rest = all.as_str();
        for e in POLICIES {
            let shown = match e.family {
                Some((min, max)) => format!(
                    "{} ({}, {}, ... N from {min} to {max})",
                    e.name,
                    e.name_with(min),
                    e.name_with(min + 1)
                ),
                None => e.name.to_string(),
            };
            rest = rest.strip_prefix(&shown).unwrap_or_else(|| panic!("{shown} in {all}"));
            rest = rest.strip_prefix(", ").unwrap_or(rest);
        }
        assert_eq!(rest, "");
        assert_eq!(
            LIVE_POLICIES_HELP,
            format!("Policies, comma-separated: {}", names(Some(Info::Live)))
        );
        assert_eq!(
            BOARD_POLICIES_HELP,
            format!("Policies, comma-separated: {}", names(Some(Info::Board)))
        );
        let table = with_table("", "").as_str().to_string();
        for e in POLICIES {
            let keys = e.params.join(" ");
            assert!(table.contains(e.name) && table.contains(e.rule), "{table}");
            assert!(table.contains(&keys), "{}: {keys} in {table}", e.name);
        }
    }

    /// The README's policy table cites, for each policy, the source its registry row gives
    /// (without the Markdown quoting), and lists every policy of the table.
    #[test]
    fn the_readme_cites_each_policys_source_from_the_table() {
        let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md"))
            .expect("README.md");
        let start = readme.find("| policy | rule | follows |").expect("the README's policy table");
        let mut cited = std::collections::BTreeMap::new();
        for line in readme[start..].lines().skip(2).take_while(|l| l.starts_with('|')) {
            let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
            let name = cells[0].split('`').nth(1).expect("a quoted name");
            cited.insert(name.to_string(), cells[2].replace('`', ""));
        }
        assert_eq!(cited.len(), POLICIES.len(), "{cited:?}");
        for e in POLICIES {
            assert_eq!(cited.get(e.name).map(String::as_str), Some(e.source), "{}", e.name);
        }
    }
}

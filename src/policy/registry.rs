//! The policy table: every policy lbsim knows, in one place.
//!
//! [`POLICIES`] holds one [`Entry`] per policy (or family of policies, such as `pNc`). Everything
//! else is derived from it: [`PolicyKind`] (generated with the table), [`PolicyKind::parse`] and
//! [`PolicyKind::name`], [`PolicyKind::min_servers`], which information model a policy may run
//! under ([`Info`]), the list of valid names in error messages ([`names`]), and the `--policies`
//! help lines and the policy table of `lbsim --help` (built at compile time, since clap takes
//! `&'static str`).
//!
//! The one thing a table cannot hold is the concrete type, because the event loop is generic over
//! it (monomorphised, no boxing): [`with_policy!`](crate::with_policy), just below the table, has
//! one arm per entry. Its `match` has no wildcard, so an entry without an arm does not compile, and
//! the `dispatch_builds_the_type_each_entry_names` test checks that each arm builds the type its
//! entry names.
//!
//! # Adding a policy
//!
//! 1. Write the type implementing [`Policy`](super::Policy) in its own file under `src/policy/`,
//!    citing its source, and re-export it from `policy/mod.rs`.
//! 2. Add one line to the table in this file: the variant (with its doc comment) and its [`Entry`]
//!    (name, type, one-line rule; `.live_only()`, `.board_only()`, `.min_servers(n)`,
//!    `.param("key")` as needed).
//! 3. Add its arm to [`with_policy!`](crate::with_policy), building the type from the farm size
//!    `n` and [`PolicyParams`].

use super::Tuning;
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
    /// For a family: the accepted range of N, inclusive.
    pub family: Option<(u32, u32)>,
    /// Allowed with live information.
    pub live: bool,
    /// Allowed with a bulletin board.
    pub board: bool,
    /// The smallest farm it works on.
    pub min_servers: MinServers,
    /// Parameters accepted as `NAME:key=value` in a scenario's policy list.
    pub params: &'static [&'static str],
    /// Counts its own dispatches on the board: the name selects the update-on-dispatch board
    /// ([`BoardWithDispatch`](crate::info::BoardWithDispatch)) rather than a different policy.
    pub counts_dispatches: bool,
    /// Runs with one client only (`info.clients = 1`, no local information, no subsets), for the
    /// reason given, which the refusal quotes. No policy needs it today: the feedback policies
    /// run in fleets, each client learning from its own requests, probes and servers.
    pub one_client: Option<&'static str>,
}

impl Entry {
    /// A policy named `name`, built as type `policy`, allowed everywhere, on one server or more.
    pub const fn new(name: &'static str, policy: &'static str, rule: &'static str) -> Entry {
        Entry {
            name,
            policy,
            rule,
            family: None,
            live: true,
            board: true,
            min_servers: MinServers::AtLeast(1),
            params: &[],
            counts_dispatches: false,
            one_client: None,
        }
    }

    /// Runs with one client only, because `why` (see [`Entry::one_client`]).
    pub const fn one_client(self, why: &'static str) -> Entry {
        Entry { one_client: Some(why), ..self }
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

    /// Accepts the parameters `params` (`NAME:key=value`).
    pub const fn params(self, params: &'static [&'static str]) -> Entry {
        Entry { params, ..self }
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

/// Generates [`PolicyKind`] and [`POLICIES`] from one list of `Variant => entry` lines (a family's
/// variant carries its parameter: `PnC(n)`), and the mapping between the two.
macro_rules! policy_table {
    ($( $(#[$doc:meta])* $variant:ident $(($n:ident))? => $entry:expr, )*) => {
        /// A parsed policy name: one variant per row of [`POLICIES`] (a family's variant carries
        /// its N).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum PolicyKind {
            $( $(#[$doc])* $variant $((policy_table!(@u32 $n)))?, )*
        }

        /// The policy table, in the order names are listed.
        pub const POLICIES: &[Entry] = &[$($entry),*];

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
    };
    (@u32 $n:ident) => { u32 };
    (@arg $n:ident $param:ident) => { $param };
}

policy_table! {
    /// `random`
    Random => Entry::new("random", "Random", "a uniform server (weighted=true: in proportion to rate)").params(&["weighted"]),
    /// `rr`
    RoundRobin => Entry::new("rr", "RoundRobin", "round robin in index order"),
    /// `swrr`
    Swrr => Entry::new("swrr", "Swrr", "smooth weighted round robin, weights from rates (NGINX)"),
    /// `pNc`: N distinct choices (`p2c`, `p3c`, ...).
    PnC(n) => Entry::new("pNc", "PnC", "shortest of N distinct uniform samples, first on ties").family(2, MAX_CHOICES),
    /// `p2c-repl`
    P2cRepl => Entry::new("p2c-repl", "P2cRepl", "two samples with replacement, 2nd if strictly shorter (Envoy)"),
    /// `jsq`
    Jsq => Entry::new("jsq", "Jsq", "shortest queue of all, ties uniformly at random"),
    /// `jsq-local`: `jsq` under the board with update-on-dispatch.
    JsqLocal => Entry::new("jsq-local", "Jsq", "jsq whose own dispatches update the board at once").counts_dispatches(),
    /// `p2c-pewma`
    P2cPewma => Entry::new("p2c-pewma", "P2cPeakEwma", "p2c on rtt x (queue + 1), Peak-EWMA rtt (tower)").live_only().min_servers(2).params(&["tau"]),
    /// `least-request`
    LeastRequest => Entry::new("least-request", "LeastRequest", "Envoy least_request: N choices, full scan, or EDF").params(&["choices", "mode", "bias"]),
    /// `least-conn`
    LeastConn => Entry::new("least-conn", "LeastConn", "NGINX least_conn: fewest active per weight, round robin among ties"),
    /// `random-two`
    RandomTwo => Entry::new("random-two", "RandomTwo", "NGINX random two least_conn: 2 weighted draws, the 2nd unless busier").min_servers(2),
    /// `aperture`
    Aperture => Entry::new("aperture", "Aperture", "Finagle deterministic aperture: p2c in the client's ring slice").params(&["min_aperture"]),
    /// `jiq`
    Jiq => Entry::new("jiq", "Jiq", "join-idle-queue: a server that reported idle, else a random one").params(&["dispatchers"]),
    /// `ring-hash`
    RingHash => Entry::new("ring-hash", "RingHash", "key's server on a hash ring, optionally bounded (HAProxy)").params(&["vnodes", "balance"]),
    /// `maglev`
    Maglev => Entry::new("maglev", "MaglevHash", "key's server in a Maglev lookup table").params(&["table"]),
    /// `wrr-orca`
    WrrOrca => Entry::new("wrr-orca", "WrrOrca", "gRPC weighted_round_robin: weights qps/utilization from server reports").live_only().params(&["blackout_period", "expiration_period", "weight_update_period", "report_period", "penalty"]),
    /// `prequal`
    Prequal => Entry::new("prequal", "Prequal", "Prequal: probe pool, hot-cold rule on requests in flight and latency").live_only().params(&["probe_rate", "pool", "max_age", "q_rif", "probe_delay"]),
    /// `c3`
    C3 => Entry::new("c3", "C3", "C3: replicas ranked by R - 1/mu + q_hat^3/mu from feedback, cubic rate control").live_only().params(&["rate_control", "rate_interval", "cubic_c", "beta", "smax", "hysteresis", "max_tokens"]),
    /// `least-latency`
    LeastLatency => Entry::new("least-latency", "LeastLatency", "lower EWMA latency of two random servers (least_time style)").live_only().min_servers(2).params(&["tau"]),
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
/// One arm per row of [`POLICIES`]; `pNc` has extra arms for N = 2 and 3, whose sample count is a
/// compile-time constant.
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
    ($kind:expr, |$make:ident| $body:expr) => {{
        #[allow(unused_imports)]
        use rand::Rng as _;
        use $crate::policy::*;
        match $kind {
            PolicyKind::Random => {
                let $make = |p: &PolicyParams| Random::with_rates(p.rates, p.tuning.weighted);
                $body
            }
            PolicyKind::RoundRobin => {
                let $make = |p: &PolicyParams| RoundRobin::new(p.rates.len());
                $body
            }
            PolicyKind::Swrr => {
                let $make = |p: &PolicyParams| Swrr::new(&integer_weights(p.rates));
                $body
            }
            PolicyKind::PnC(2) => {
                let $make = |p: &PolicyParams| PnC::<2>::new(p.rates.len());
                $body
            }
            PolicyKind::PnC(3) => {
                let $make = |p: &PolicyParams| PnC::<3>::new(p.rates.len());
                $body
            }
            PolicyKind::PnC(d) => {
                let $make = |p: &PolicyParams| PnC::<0>::with_choices(p.rates.len(), d as usize);
                $body
            }
            PolicyKind::P2cRepl => {
                let $make = |p: &PolicyParams| P2cRepl::new(p.rates.len());
                $body
            }
            // `jsq-local` is `jsq`; its name selects the information model instead.
            PolicyKind::Jsq | PolicyKind::JsqLocal => {
                let $make = |_: &PolicyParams| Jsq;
                $body
            }
            PolicyKind::P2cPewma => {
                let $make = |p: &PolicyParams| P2cPeakEwma::new(p.rates.len(), p.tuning.tau);
                $body
            }
            PolicyKind::LeastRequest => {
                let $make = |p: &PolicyParams| {
                    let t = p.tuning;
                    let mut stream = p.stream.str("edf").rng();
                    LeastRequest::new(p.rates, t.choices, t.full_scan, t.bias, &mut stream)
                };
                $body
            }
            PolicyKind::LeastConn => {
                let $make = |p: &PolicyParams| LeastConn::new(&integer_weights(p.rates));
                $body
            }
            PolicyKind::RandomTwo => {
                let $make = |p: &PolicyParams| RandomTwo::new(&integer_weights(p.rates));
                $body
            }
            PolicyKind::Aperture => {
                let $make = |p: &PolicyParams| {
                    Aperture::new(
                        p.rates.len(),
                        p.client,
                        p.clients,
                        p.tuning.min_aperture as usize,
                    )
                };
                $body
            }
            PolicyKind::RingHash => {
                let $make = |p: &PolicyParams| {
                    let (t, seed) = (p.tuning, p.shared.str("ring").rng().next_u64());
                    RingHash::new(p.rates, t.vnodes as usize, t.balance, seed, p.keys.clone())
                };
                $body
            }
            PolicyKind::Maglev => {
                let $make = |p: &PolicyParams| {
                    let (t, seed) = (p.tuning, p.shared.str("maglev").rng().next_u64());
                    MaglevHash::new(p.rates.len(), t.table as usize, seed, p.keys.clone())
                };
                $body
            }
            PolicyKind::WrrOrca => {
                let $make = |p: &PolicyParams| {
                    let start = p.stream.str("wrr-orca").rng().next_u32();
                    WrrOrca::new(p.rates.len(), p.tuning.orca, start)
                };
                $body
            }
            PolicyKind::Prequal => {
                let $make = |p: &PolicyParams| Prequal::new(p.rates.len(), p.tuning.prequal);
                $body
            }
            PolicyKind::C3 => {
                let $make = |p: &PolicyParams| C3::new(p.rates.len(), p.clients, p.tuning.c3);
                $body
            }
            PolicyKind::LeastLatency => {
                let $make = |p: &PolicyParams| LeastLatency::new(p.rates.len(), p.tuning.tau);
                $body
            }
            PolicyKind::Jiq => {
                let $make = |p: &PolicyParams| {
                    Jiq::new(
                        p.rates.len(),
                        p.tuning.dispatchers as usize,
                        p.stream.str("jiq").rng(),
                    )
                };
                $body
            }
        }
    }};
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
        for name in [
            "random",
            "rr",
            "swrr",
            "p2c",
            "p3c",
            "p10c",
            "p100c",
            "p2c-repl",
            "jsq",
            "jsq-local",
            "p2c-pewma",
        ] {
            assert_eq!(PolicyKind::parse(name).unwrap().name(), name);
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
    fn jsq_local_needs_a_board_and_p2c_pewma_live_information() {
        let live: Vec<&str> =
            POLICIES.iter().filter(|e| e.allows(Info::Live)).map(|e| e.name).collect();
        let board: Vec<&str> =
            POLICIES.iter().filter(|e| e.allows(Info::Board)).map(|e| e.name).collect();
        let fleet =
            ["least-request", "least-conn", "random-two", "aperture", "jiq", "ring-hash", "maglev"];
        let common = ["random", "rr", "swrr", "pNc", "p2c-repl", "jsq"];
        let feedback = ["wrr-orca", "prequal", "c3", "least-latency"];
        assert_eq!(live, [&common[..], &["p2c-pewma"], &fleet, &feedback].concat());
        assert_eq!(board, [&common[..], &["jsq-local"], &fleet].concat());
        assert_eq!(resolve("jsq-local", Info::Live), Err(NameError::NotAllowed));
        assert_eq!(resolve("p2c-pewma", Info::Board), Err(NameError::NotAllowed));
        assert_eq!(resolve("nope", Info::Board), Err(NameError::Unknown));
    }

    #[test]
    fn jsq_local_is_jsq_counting_its_dispatches() {
        let counting: Vec<&str> =
            POLICIES.iter().filter(|e| e.counts_dispatches).map(|e| e.name).collect();
        assert_eq!(counting, ["jsq-local"]);
        let local = PolicyKind::parse("jsq-local").unwrap();
        assert!(local.counts_dispatches() && !PolicyKind::Jsq.counts_dispatches());
        assert_eq!(local.entry().policy, PolicyKind::Jsq.entry().policy);
        assert_eq!(local.name(), "jsq-local");
    }

    #[test]
    fn min_servers_follow_the_table() {
        let min: Vec<(String, usize)> =
            samples().into_iter().map(|k| (k.name(), k.min_servers())).collect();
        let expected = [
            ("random", 1),
            ("rr", 1),
            ("swrr", 1),
            ("p2c", 2),
            ("p3c", 3),
            ("p51c", 51),
            ("p100c", 100),
            ("p2c-repl", 1),
            ("jsq", 1),
            ("jsq-local", 1),
            ("p2c-pewma", 2),
            ("least-request", 1),
            ("least-conn", 1),
            ("random-two", 2),
            ("aperture", 1),
            ("jiq", 1),
            ("ring-hash", 1),
            ("maglev", 1),
            ("wrr-orca", 1),
            ("prequal", 1),
            ("c3", 1),
            ("least-latency", 2),
        ];
        let expected: Vec<(String, usize)> =
            expected.iter().map(|&(n, m)| (n.to_string(), m)).collect();
        assert_eq!(min, expected);
    }

    #[test]
    fn dispatch_builds_the_type_each_entry_names() {
        // `with_policy!` matches without a wildcard, so a row without an arm (or an arm without
        // a row) does not compile; this checks that each arm builds its row's type.
        let rates = vec![1.0; 100];
        let tuning = Tuning::default();
        let params = PolicyParams::new(&rates, &tuning);
        for kind in samples() {
            let built = with_policy!(kind, &params, |p| std::any::type_name_of_val(&p));
            let base = built.split('<').next().unwrap().rsplit("::").next().unwrap();
            assert_eq!(base, kind.entry().policy, "{} builds {built}", kind.name());
        }
    }

    #[test]
    fn names_and_help_list_the_table_in_one_line() {
        let all = names(None);
        assert_eq!(
            all,
            "random, rr, swrr, pNc (p2c, p3c, ... N from 2 to 100), p2c-repl, jsq, jsq-local, \
             p2c-pewma, least-request, least-conn, random-two, aperture, jiq, ring-hash, maglev, \
             wrr-orca, prequal, c3, least-latency"
        );
        assert!(!all.contains('\n'));
        assert_eq!(
            LIVE_POLICIES_HELP,
            format!("Policies, comma-separated: {}", names(Some(Info::Live)))
        );
        assert!(
            BOARD_POLICIES_HELP.contains("jsq-local") && !BOARD_POLICIES_HELP.contains("pewma")
        );
        let table = with_table("", "").as_str().to_string();
        for e in POLICIES {
            assert!(table.contains(e.name) && table.contains(e.rule), "{table}");
        }
    }
}

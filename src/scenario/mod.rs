//! Scenario files: a workload and the policies to compare on it, described in TOML (`lbsim run`).
//!
//! ```toml
//! name = "two-tier"
//! policies = ["p2c", "jsq", "p2c-pewma:tau=5"]
//! [farm]
//! groups = [{ name = "slow", count = 20, rate = 0.5 }, { name = "fast", count = 80, rate = 1.0 }]
//! [arrivals]
//! kind = "poisson"
//! load = 0.8
//! [run]
//! requests = 1e6
//! [sweep]
//! "arrivals.load" = [0.5, 0.7, 0.9]
//! ```
//!
//! Every key has a default ([`Spec::default`]): an empty file is 100 rate-1 servers at load 0.9
//! under `random`, `p2c` and `jsq`. Reading a file is three steps, each refusing bad input with
//! one line that names the key (and, for the file's own text, the line):
//!
//! 1. the text is parsed and deserialised as it is, so unknown keys and wrong types point at their
//!    line;
//! 2. `--set KEY=VALUE` overrides are applied to the parsed table by dotted path, and each point of
//!    the `[sweep]` grid sets its keys the same way;
//! 3. each resulting [`Spec`] is validated ([`Spec::validate`]) and resolved into runnable
//!    scenarios by the `run` experiment.
//!
//! [`Spec::to_toml`] writes the canonical form: every key, defaults filled in, in a fixed order.
//! `lbsim run --print` shows it, and the Part I commands' `--print-scenario` writes it.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use toml::{Table, Value};

use crate::error::KeyError;
use crate::input;
use crate::lifecycle::health::{Health, HostState};
use crate::limits;
use crate::model::RateChange;
use crate::named::Named;
use crate::output::table::format_number as num;
use crate::subset::Subsetting;
use crate::workload::{ArrivalSpec, Arrivals, KeySpec, Service, ServiceSpec};

mod classes;
mod client;
mod health;
pub use classes::{ClassSpec, MAX_CLASSES};
pub use client::ClientSpec;

/// How a scenario read from standard input (`lbsim run -`) is named in messages.
pub const STDIN: &str = "standard input";

/// The default policies of a scenario.
pub const DEFAULT_POLICIES: [&str; 3] = ["random", "p2c", "jsq"];

/// A scenario file, deserialised. Field order is the canonical key order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Spec {
    /// Shown in the output's parameters.
    pub name: String,
    /// Policies to compare, each `NAME` or `NAME:key=value,key=value`.
    pub policies: Vec<String>,
    /// The servers.
    pub farm: FarmSpec,
    /// How requests arrive (`kind` defaults to `"poisson"`).
    #[serde(deserialize_with = "with_default_kind::<_, ArrivalSpec, 0>")]
    pub arrivals: ArrivalSpec,
    /// How long requests take (mean 1, divided by the server's rate; `kind` defaults to `"exp"`).
    #[serde(deserialize_with = "with_default_kind::<_, ServiceSpec, 1>")]
    pub service: ServiceSpec,
    /// What the balancer sees.
    pub info: InfoSpec,
    /// Request keys, for the hashing policies.
    pub keys: KeySpec,
    /// Run length and replications.
    pub run: RunSpec,
    /// A rate limiter in front of the balancer (none by default); see [`crate::admission`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub admission: Option<crate::admission::AdmissionSpec>,
    /// Keys swept over lists of values: `"arrivals.load" = [0.5, 0.9]`; several keys form a grid.
    #[serde(skip_serializing_if = "Table::is_empty")]
    pub sweep: Table,
    /// Rate changes during the run (`[[events]]`), applied in time order, and in file order at
    /// equal times.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<EventSpec>,
    /// What each client does with its requests: timeouts, retries (`[client]`, SPEC §11; see
    /// `client.rs`). Absent by default.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client: Option<ClientSpec>,
    /// What each client does about failed hosts: outlier detection, health checks, panic, slow
    /// start (`[health]`, SPEC §12; see `health.rs`). Absent by default.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub health: Option<Health>,
    /// Traffic classes (`[[classes]]`, SPEC §13; see `classes.rs`). None by default.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub classes: Vec<ClassSpec>,
}

impl Default for Spec {
    fn default() -> Self {
        Spec {
            name: "scenario".into(),
            policies: DEFAULT_POLICIES.iter().map(|p| p.to_string()).collect(),
            farm: FarmSpec::default(),
            arrivals: ArrivalSpec::default(),
            service: ServiceSpec::default(),
            info: InfoSpec::default(),
            keys: KeySpec::default(),
            run: RunSpec::default(),
            admission: None,
            sweep: Table::new(),
            events: Vec::new(),
            client: None,
            health: None,
            classes: Vec::new(),
        }
    }
}

/// Reads a `kind`-tagged table whose `kind` may be left out: `"poisson"` for the arrivals
/// (`KIND` 0), `"exp"` for the service (`KIND` 1).
fn with_default_kind<'de, D, T, const KIND: usize>(d: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::de::DeserializeOwned,
{
    let mut table = Table::deserialize(d)?;
    if !table.contains_key("kind") {
        let kind = if KIND == 0 { "poisson" } else { "exp" };
        table.insert("kind".into(), Value::String(kind.into()));
    }
    table.try_into::<T>().map_err(|e| {
        let section = if KIND == 0 { "arrivals" } else { "service" };
        serde::de::Error::custom(format!("{section}: {}", e.message().trim()))
    })
}

/// `[farm]`: groups of identical servers, listed in order (server indices follow it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FarmSpec {
    /// The groups; a group without a `name` is named by its position (`g0`, `g1`, ...).
    #[serde(deserialize_with = "named_groups")]
    pub groups: Vec<Group>,
    /// Queueing discipline at each server.
    pub discipline: Discipline,
    /// Parallel workers per server (1 to 1000), sharing its FIFO queue, or its processor time
    /// under `ps`; each works at the server's rate.
    pub slots: u32,
    /// A server rejects at once a request that would find this many or more there (none by
    /// default).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue_limit: Option<u32>,
    /// Under `priority`: a waiting request gains one level every `aging` (off by default).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub aging: Option<f64>,
    /// Under `cfs`: how long a class runs before the server chooses again (0.1 by default).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slice: Option<f64>,
}

impl Default for FarmSpec {
    fn default() -> Self {
        FarmSpec {
            groups: vec![Group {
                name: "servers".into(),
                count: 100,
                rate: 1.0,
                error: 0.0,
                delay: 0.0,
            }],
            discipline: Discipline::Fifo,
            slots: 1,
            queue_limit: None,
            aging: None,
            slice: None,
        }
    }
}

/// Servers of one kind.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Group {
    /// The group's name (events refer to it); `g0`, `g1`, ... by position when the file gives none.
    pub name: String,
    /// Servers in the group.
    pub count: u64,
    /// Service rate of each (requests per mean service time of a rate-1 server).
    pub rate: f64,
    /// The probability that a response is an error, drawn after its service (0 by default).
    #[serde(skip_serializing_if = "client::is_zero")]
    pub error: f64,
    /// A constant added to each response after its service, the server free meanwhile (0 by
    /// default).
    #[serde(skip_serializing_if = "client::is_zero")]
    pub delay: f64,
}

/// A group as written: the name may be left out, the count written `1e2`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GroupText {
    name: Option<String>,
    #[serde(deserialize_with = "group_count")]
    count: Count,
    rate: f64,
    #[serde(default)]
    error: f64,
    #[serde(default)]
    delay: f64,
}

/// A group's `count`, read as every count of a file is ([`Count`]: `100` or `1e2`); a refusal
/// names the key.
fn group_count<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Count, D::Error> {
    Count::deserialize(d).map_err(|e| serde::de::Error::custom(format!("farm.groups: count: {e}")))
}

/// `[farm] groups`, each group's missing name filled in from its position.
fn named_groups<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<Group>, D::Error> {
    let groups = Vec::<GroupText>::deserialize(d)?;
    Ok(groups
        .into_iter()
        .enumerate()
        .map(|(i, g)| Group {
            name: g.name.unwrap_or_else(|| format!("g{i}")),
            count: g.count.0,
            rate: g.rate,
            error: g.error,
            delay: g.delay,
        })
        .collect())
}

pub use crate::model::Discipline;

/// `[[events]]`: at time `at`, every server of `group` changes its rate to `rate`, its response
/// delay to `delay`, its error probability to `error` (at least one of them).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EventSpec {
    /// Absolute simulated time (warm-up included), `>= 0`.
    pub at: f64,
    /// The name of a group of `farm.groups`.
    pub group: String,
    /// The group's new rate (per worker), from 1e-6 to 1e6.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<f64>,
    /// The group's new response delay.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay: Option<f64>,
    /// The group's new error probability.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<f64>,
    /// The group's hosts' new state: `up`, `down` (refuse at once) or `hang` (never answer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<HostState>,
}

/// The most workers a server may have (`farm.slots`).
pub const MAX_SLOTS: u32 = 1000;

/// The highest offered load in front of an admission stage (overload is what it is for).
pub const MAX_ADMITTED_LOAD: f64 = 1000.0;

/// What a load outside `(0, max_load)` is told.
pub fn load_expected(max_load: f64, load: f64) -> String {
    if max_load == 1.0 {
        format!("expected 0 < load < 1, got {}", num(load))
    } else {
        format!("expected 0 < load < {} (with [admission]), got {}", num(max_load), num(load))
    }
}

/// The load when a file gives neither `arrivals.load` nor `arrivals.rate`.
pub const DEFAULT_LOAD: f64 = 0.9;

/// `[info]`: what the balancer sees.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct InfoSpec {
    /// `live` (true queue lengths; `global` is the same), `board` (posted every `period`) or
    /// `local` (each client's own in-flight requests). Left out: `local` with several clients,
    /// else `live`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<Named<InfoKind>>,
    /// Board period (`board` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub period: Option<f64>,
    /// Board with update-on-dispatch (`board` only).
    pub local: bool,
    /// Independent dispatchers, each running its own instance of the policy.
    pub clients: u32,
    /// Servers each client uses (left out: all of them).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subset: Option<u32>,
    /// How subsets are chosen: `deterministic` (the SRE book's algorithm) or `random`.
    pub subsetting: Named<Subsetting>,
}

impl Default for InfoSpec {
    fn default() -> Self {
        InfoSpec {
            kind: None,
            period: None,
            local: false,
            clients: 1,
            subset: None,
            subsetting: Named::Is(Subsetting::Deterministic),
        }
    }
}

/// What the balancer sees, as `info.kind` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InfoKind {
    /// True queue lengths (`live`).
    Live,
    /// The same as [`InfoKind::Live`], kept apart so that `--print` shows the word written
    /// (`global`).
    Global,
    /// A board posted every `period` (`board`).
    Board,
    /// Each client's own in-flight requests (`local`).
    Local,
}

impl crate::named::Name for InfoKind {
    fn parse(s: &str) -> Option<Self> {
        use InfoKind::*;
        [Live, Global, Board, Local].into_iter().find(|k| k.name() == s)
    }

    fn name(self) -> &'static str {
        match self {
            InfoKind::Live => "live",
            InfoKind::Global => "global",
            InfoKind::Board => "board",
            InfoKind::Local => "local",
        }
    }
}

/// The most clients of a fleet.
pub const MAX_CLIENTS: u32 = 100_000;

impl InfoSpec {
    /// The kind, defaults resolved: `Live`, `Board` or `Local` (`global` reads as `Live`); the
    /// word written when it names no kind (refused by validation).
    pub fn kind(&self) -> Result<InfoKind, &str> {
        match &self.kind {
            Some(k) => k.get().map(|k| if k == InfoKind::Global { InfoKind::Live } else { k }),
            None if self.clients > 1 => Ok(InfoKind::Local),
            None => Ok(InfoKind::Live),
        }
    }

    /// The dispatchers this describes (validated).
    pub fn clients(&self) -> crate::model::Clients {
        crate::model::Clients {
            count: self.clients as usize,
            local: self.kind() == Ok(InfoKind::Local),
            subset: self
                .subset
                .map(|s| (s as usize, self.subsetting.get().expect("validated subsetting"))),
        }
    }
}

/// `[run]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RunSpec {
    /// Measured arrivals per replication (an integer; `1e6` is accepted).
    pub requests: Count,
    /// Arrivals before measuring, or `"auto"`.
    pub warmup: Warmup,
    /// Replications.
    pub seeds: Count,
    /// Base seed.
    pub seed: Count,
    /// Stop a replication when a queue exceeds this.
    pub queue_guard: Count,
    /// Double a row's `requests` until `mean_ci95 <= precision * mean` and it is steady (off when
    /// left out).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub precision: Option<f64>,
    /// With `precision`: the most measured arrivals a row may double to (left out: 10^8, or
    /// `requests` if larger).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_requests: Option<Count>,
}

impl Default for RunSpec {
    fn default() -> Self {
        RunSpec {
            requests: Count(1_000_000),
            warmup: Warmup::Arrivals(Count(100_000)),
            seeds: Count(5),
            seed: Count(1),
            queue_guard: Count(100_000),
            precision: None,
            max_requests: None,
        }
    }
}

impl RunSpec {
    /// The most measured arrivals `precision` may double a row to.
    pub fn max_requests(&self) -> u64 {
        self.max_requests.map_or(limits::DEFAULT_MAX_REQUESTS.max(self.requests.0), |m| m.0)
    }
}

/// A warm-up: a number of arrivals, or `"auto"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(from = "text::Warmup", into = "text::Warmup")]
pub enum Warmup {
    /// Arrivals.
    Arrivals(Count),
    /// `"auto"`: until the queues look steady.
    Auto,
    /// Any other string, refused by validation (naming the key and the word).
    Other(String),
}

mod text {
    use super::Count;
    use serde::{Deserialize, Serialize};

    /// A warm-up as a file writes it: a count or a string. Named as the type it is read into, for
    /// serde's message when it is neither (`... untagged enum Warmup`).
    #[derive(Serialize, Deserialize)]
    #[serde(untagged)]
    pub enum Warmup {
        Arrivals(Count),
        Word(String),
    }

    impl From<Warmup> for super::Warmup {
        fn from(w: Warmup) -> super::Warmup {
            match w {
                Warmup::Arrivals(c) => super::Warmup::Arrivals(c),
                Warmup::Word(s) if s == "auto" => super::Warmup::Auto,
                Warmup::Word(s) => super::Warmup::Other(s),
            }
        }
    }

    impl From<super::Warmup> for Warmup {
        fn from(w: super::Warmup) -> Warmup {
            match w {
                super::Warmup::Arrivals(c) => Warmup::Arrivals(c),
                super::Warmup::Auto => Warmup::Word("auto".into()),
                super::Warmup::Other(s) => Warmup::Word(s),
            }
        }
    }
}

pub use crate::count::Count;
pub use crate::error::ScenarioError;

/// The 1-based line of byte `offset` in `text`.
fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].bytes().filter(|&b| b == b'\n').count() + 1
}

/// A TOML error as one line: `FILE:LINE: KEY: message`, the key being the one at the error's
/// place in the file (`FILE:LINE: message` when there is none).
fn toml_error(file: &str, text: &str, e: &toml::de::Error) -> ScenarioError {
    let mut message = e.message().trim().replace('\n', " ");
    let line = e.span().map(|span| line_of(text, span.start));
    let Some(key) = e.span().and_then(|span| key_at(text, span)) else {
        return ScenarioError::File { file: file.into(), line, message };
    };
    if key == "policies" && message.starts_with("invalid type") {
        message = "expected a list, e.g. [\"p2c\"] or [\"p2c\", \"jsq\"]".into();
    }
    ScenarioError::Key { file: file.into(), line, key, message }
}

/// The dotted key of `text` at byte range `span`: the innermost key whose name or value holds
/// its start, else (a key the reader refused, such as a duplicate) the key written there.
fn key_at(text: &str, span: std::ops::Range<usize>) -> Option<String> {
    let (doc, _) = toml::de::DeTable::parse_recoverable(text);
    key_in(doc.get_ref(), span.start, "").or_else(|| key_written(text, span))
}

/// The innermost key of `table` (under `prefix`) whose name or value holds byte `at`.
fn key_in(table: &toml::de::DeTable, at: usize, prefix: &str) -> Option<String> {
    use toml::de::DeValue;
    for (k, v) in table.iter() {
        let name = if prefix.is_empty() {
            k.get_ref().to_string()
        } else {
            format!("{prefix}.{}", k.get_ref())
        };
        if k.span().contains(&at) {
            return Some(name);
        }
        // A table's span need not hold its keys (`[farm]` then its lines): look inside always.
        let inner = match v.get_ref() {
            DeValue::Table(t) => key_in(t, at, &name),
            DeValue::Array(items) => items.iter().enumerate().find_map(|(i, item)| {
                let name = format!("{name}[{i}]");
                match item.get_ref() {
                    DeValue::Table(t) => key_in(t, at, &name),
                    _ => None,
                }
                .or_else(|| item.span().contains(&at).then_some(name))
            }),
            _ => None,
        };
        if inner.is_some() {
            return inner;
        }
        if v.span().contains(&at) {
            return Some(name);
        }
    }
    None
}

/// The key written at `span` (`a.b = 1` or a header `[a.b]`), under the table whose header comes
/// before it.
fn key_written(text: &str, span: std::ops::Range<usize>) -> Option<String> {
    let written = text.get(span.clone())?.split('=').next()?.trim();
    let header = |s: &str| {
        s.trim()
            .strip_prefix('[')
            .map(|h| h.trim_matches(|c| c == '[' || c == ']').trim().to_string())
    };
    if let Some(h) = header(written) {
        return Some(h).filter(|h| !h.is_empty());
    }
    let key = written.trim_matches('"').to_string();
    if key.is_empty() || key.contains(char::is_whitespace) {
        return None;
    }
    let table = text[..span.start].lines().rev().find_map(header);
    Some(match table {
        Some(t) if !t.is_empty() => format!("{t}.{key}"),
        _ => key,
    })
}

/// The swept keys and their values at one point of the grid, in the sweep's key order.
pub type SweepPoint = Vec<(String, Value)>;

/// A parsed scenario file: its table (for overrides and sweeps) and where it came from.
#[derive(Debug, Clone)]
pub struct Source {
    /// The file's name as given (for messages).
    pub file: String,
    /// The directory relative paths inside the file are resolved against.
    pub dir: PathBuf,
    /// The file's text.
    pub text: String,
    /// The file as a table, with `--set` overrides applied.
    pub table: Table,
}

/// `--set KEY=VALUE`, split at its first `=` (key and value trimmed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assignment {
    /// The assignment as given.
    pub given: String,
    /// The dotted key.
    pub key: String,
    /// The value's text: read as TOML, or as a string when it is not one.
    pub value: String,
}

impl Assignment {
    /// Splits `KEY=VALUE`; refuses text without `=`.
    pub fn parse(s: &str) -> Result<Assignment, ScenarioError> {
        let (key, value) =
            s.split_once('=').ok_or_else(|| ScenarioError::SetSyntax { assignment: s.into() })?;
        Ok(Assignment { given: s.into(), key: key.trim().into(), value: value.trim().into() })
    }
}
impl Source {
    /// Parses `text` (read from `file`); unknown keys and wrong types are errors naming their line.
    pub fn parse(file: &str, text: &str) -> Result<Source, ScenarioError> {
        let table: Table = toml::from_str(text).map_err(|e| toml_error(file, text, &e))?;
        // Deserialise the text itself once, so that errors point at the file's lines.
        toml::from_str::<Spec>(text).map_err(|e| toml_error(file, text, &e))?;
        let dir = Path::new(file).parent().map(Path::to_path_buf).unwrap_or_default();
        Ok(Source { file: file.into(), dir, text: text.into(), table })
    }

    /// The scenario `text` when a program that links lbsim hands it over (`file` then only names
    /// it in messages), else the file read ([`Source::read`]).
    pub fn given(file: &Path, text: Option<&str>) -> Result<Source, ScenarioError> {
        match text {
            Some(text) => Source::parse(&file.display().to_string(), text),
            None => Source::read(file),
        }
    }

    /// Reads and parses a scenario file, or standard input for `-` (its relative `file` keys
    /// are then taken from the current directory). A file must be a regular file; either is
    /// read up to [`input::SCENARIO_BYTES`].
    pub fn read(file: &Path) -> Result<Source, ScenarioError> {
        let stdin = file == Path::new("-");
        let name = if stdin { STDIN.to_string() } else { file.display().to_string() };
        let text = if stdin {
            input::read_text(std::io::stdin().lock(), input::SCENARIO_BYTES)
        } else {
            input::open_regular(file).and_then(|f| input::read_text(f, input::SCENARIO_BYTES))
        };
        let text = text.map_err(|reason| ScenarioError::Read {
            file: name.clone(),
            reason: reason.to_string(),
        })?;
        Source::parse(&name, &text)
    }

    /// Applies `--set KEY=VALUE`: VALUE is read as a TOML value (`0.8`, `"ps"`, `[1, 2]`), or as a
    /// string when it is not one (`--set farm.discipline=ps`).
    pub fn set(&mut self, assignment: &Assignment) -> Result<(), ScenarioError> {
        let refused =
            |message: String| ScenarioError::Set { assignment: assignment.given.clone(), message };
        let value = parse_value(&assignment.value);
        set_path(&mut self.table, &assignment.key, value).map_err(|e| refused(e.to_string()))?;
        // The override must still make a valid file.
        self.spec_of(&self.table).map_err(|e| refused(e.to_string()))?;
        Ok(())
    }

    /// The [`Spec`] of `table`, with the defaults that depend on other keys filled in.
    pub fn spec_of(&self, table: &Table) -> Result<Spec, SchemaError> {
        let mut spec = table
            .clone()
            .try_into::<Spec>()
            .map_err(|e| SchemaError(e.message().trim().replace('\n', " ")))?;
        spec.arrivals.fill_default_load(DEFAULT_LOAD);
        Ok(spec)
    }

    /// The scenario's points: one [`Spec`] per point of the sweep grid (the first key varies
    /// slowest), each with its sweep values `(key, value)`, validated.
    pub fn points(&self) -> Result<Vec<(SweepPoint, Spec)>, ScenarioError> {
        let base = self
            .spec_of(&self.table)
            .map_err(|e| ScenarioError::keyed(&self.file, None, &e.to_string()))?;
        let mut grid: Vec<SweepPoint> = vec![Vec::new()];
        for (key, values) in &base.sweep {
            let err = |message: String| ScenarioError::Key {
                file: self.file.clone(),
                line: None,
                key: format!("sweep.\"{key}\""),
                message,
            };
            let Value::Array(values) = values else {
                return Err(err("expected a list of values".into()));
            };
            if values.is_empty() {
                return Err(err("the list is empty".into()));
            }
            if values.iter().any(|v| matches!(v, Value::Array(_) | Value::Table(_))) {
                return Err(err("sweep values must be numbers, strings or booleans".into()));
            }
            if let Some(v) = repeated(values) {
                return Err(err(format!("lists {v} twice: each point would run twice")));
            }
            if key.starts_with("sweep") || key == "policies" || key.starts_with("run.seed") {
                return Err(err(
                    "cannot be swept (policies are a list already; seeds and seed are the run's)"
                        .into(),
                ));
            }
            grid = grid
                .into_iter()
                .flat_map(|point| {
                    values.iter().map(move |v| {
                        let mut p = point.clone();
                        p.push((key.clone(), v.clone()));
                        p
                    })
                })
                .collect();
        }
        // Each point's spec leaves the grid out: a sweep of n points would otherwise hold the
        // grid n times (n^2 values: gigabytes at 5000 points).
        let mut gridless = self.table.clone();
        gridless.remove("sweep");
        grid.into_iter()
            .map(|point| {
                let mut table = gridless.clone();
                for (key, value) in &point {
                    set_path(&mut table, key, value.clone()).map_err(|e| ScenarioError::Key {
                        file: self.file.clone(),
                        line: None,
                        key: format!("sweep.\"{key}\""),
                        message: e.to_string(),
                    })?;
                }
                let spec = self.spec_of(&table).map_err(|e| {
                    let at = point.iter().map(|(k, v)| format!("{k} = {v}")).collect::<Vec<_>>();
                    ScenarioError::SweepPoint {
                        file: self.file.clone(),
                        point: at.join(", "),
                        message: e.to_string(),
                    }
                })?;
                spec.validate().map_err(|e| {
                    let line = self.line_of_key(&e.key);
                    match e.message.strip_prefix(&format!("{}: ", e.key)) {
                        Some(message) => ScenarioError::Key {
                            file: self.file.clone(),
                            line,
                            key: e.key.clone(),
                            message: message.into(),
                        },
                        None => ScenarioError::File {
                            file: self.file.clone(),
                            line,
                            message: e.message.clone(),
                        },
                    }
                })?;
                Ok((point, spec))
            })
            .collect()
    }

    /// The line where dotted `key` is set in the file, if it is.
    fn line_of_key(&self, key: &str) -> Option<usize> {
        let doc = toml::de::DeTable::parse(&self.text).ok()?;
        let mut table = doc.get_ref();
        let mut parts = key.split('.').peekable();
        while let Some(part) = parts.next() {
            let (k, v) = table.iter().find(|(k, _)| k.get_ref().as_ref() == part)?;
            if parts.peek().is_none() {
                return Some(line_of(&self.text, k.span().start));
            }
            match v.get_ref() {
                toml::de::DeValue::Table(t) => table = t,
                _ => return Some(line_of(&self.text, v.span().start)),
            }
        }
        None
    }
}

/// The first sweep value that equals an earlier one (numbers by value: `1` and `1.0` are one).
fn repeated(values: &[Value]) -> Option<&Value> {
    let same = |a: &Value, b: &Value| match (a, b) {
        (Value::Integer(_) | Value::Float(_), Value::Integer(_) | Value::Float(_)) => {
            let f = |v: &Value| v.as_float().or(v.as_integer().map(|i| i as f64));
            f(a) == f(b)
        }
        _ => a == b,
    };
    values.iter().enumerate().find(|&(i, v)| values[..i].iter().any(|w| same(v, w))).map(|(_, v)| v)
}

/// A `--set` value: TOML if it parses as a value, else the text as a string.
fn parse_value(text: &str) -> Value {
    toml::from_str::<Table>(&format!("v = {text}"))
        .ok()
        .and_then(|mut t| t.remove("v"))
        .unwrap_or_else(|| Value::String(text.to_string()))
}

/// The parts of a dotted key; a part in double quotes may hold dots (`sweep."arrivals.load"`).
fn key_parts(key: &str) -> Option<Vec<String>> {
    let mut parts = Vec::new();
    let mut rest = key.trim();
    loop {
        let (part, after) = match rest.strip_prefix('"') {
            Some(quoted) => {
                let end = quoted.find('"')?;
                (quoted[..end].to_string(), &quoted[end + 1..])
            }
            None => {
                let end = rest.find('.').unwrap_or(rest.len());
                (rest[..end].trim().to_string(), &rest[end..])
            }
        };
        if part.is_empty() {
            return None;
        }
        parts.push(part);
        match after.strip_prefix('.') {
            Some(next) => rest = next,
            None if after.trim().is_empty() => return Some(parts),
            None => return None,
        }
    }
}

/// What the TOML reader says of a table that is not a scenario (an unknown key, a wrong type),
/// on one line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SchemaError(String);

/// Why a dotted key cannot be set.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    /// Not `a.b.c` (an empty part, an unclosed quote).
    #[error("'{0}' is not a dotted key")]
    NotDotted(String),
    /// A part of the key that holds a value, not a table.
    #[error("'{part}' in '{key}' is not a table")]
    NotTable {
        /// The part.
        part: String,
        /// The whole key.
        key: String,
    },
}

/// Sets dotted `key` in `table`, creating tables on the way.
fn set_path(table: &mut Table, key: &str, value: Value) -> Result<(), PathError> {
    let parts = key_parts(key).ok_or_else(|| PathError::NotDotted(key.into()))?;
    let (last, path) = parts.split_last().expect("at least one part");
    let mut t = table;
    for part in path {
        let entry = t.entry(part.clone()).or_insert_with(|| Value::Table(Table::new()));
        t = match entry {
            Value::Table(inner) => inner,
            _ => return Err(PathError::NotTable { part: part.clone(), key: key.into() }),
        };
    }
    t.insert(last.clone(), value);
    Ok(())
}

/// A value refused by [`Spec::validate`]: the dotted key and the message (which names it).
#[derive(Debug, Clone, PartialEq)]
pub struct Invalid {
    /// The key, for finding its line.
    pub key: String,
    /// One line.
    pub message: String,
}

fn invalid(key: &str, message: impl fmt::Display) -> Invalid {
    Invalid { key: key.into(), message: format!("{key}: {message}") }
}

/// A refusal naming its key (as the workload's and admission's validation give) as an
/// [`Invalid`].
fn keyed(e: KeyError) -> Invalid {
    Invalid { message: e.to_string(), key: e.key }
}

/// `c` if it lies in `min..=max`.
fn count(key: &'static str, c: Count, min: u64, max: u64) -> Result<u64, Invalid> {
    if (min..=max).contains(&c.0) {
        Ok(c.0)
    } else {
        Err(invalid(key, format!("expected an integer from {min} to {max}, got {}", c.0)))
    }
}

impl Spec {
    /// Refuses impossible values, naming the key.
    pub fn validate(&self) -> Result<(), Invalid> {
        if self.policies.is_empty() {
            return Err(invalid("policies", "needs at least one policy"));
        }
        let servers = self.validate_farm()?;
        self.validate_events()?;
        self.validate_arrivals()?;
        self.service.validate().map_err(keyed)?;
        self.validate_info(servers)?;
        self.keys.validate().map_err(keyed)?;
        self.validate_run()?;
        self.validate_precision()?;
        self.validate_lifecycle()?;
        self.validate_health()?;
        self.validate_classes()
    }

    /// `farm.groups` and `farm.slots`; the number of servers.
    fn validate_farm(&self) -> Result<u64, Invalid> {
        if self.farm.groups.is_empty() {
            return Err(invalid("farm.groups", "needs at least one group"));
        }
        let mut servers = 0u64;
        for (i, g) in self.farm.groups.iter().enumerate() {
            if g.count == 0 {
                return Err(invalid(
                    "farm.groups",
                    format!("group {} ('{}') has count 0", i + 1, g.name),
                ));
            }
            if !(limits::MIN_RATE..=limits::RATE).contains(&g.rate) {
                return Err(invalid(
                    "farm.groups",
                    format!("group '{}': rate {} is outside 1e-6 to 1e6", g.name, num(g.rate)),
                ));
            }
            if self.farm.groups[..i].iter().any(|o| o.name == g.name) {
                return Err(invalid("farm.groups", format!("two groups are named '{}'", g.name)));
            }
            servers += g.count;
        }
        if servers > limits::SERVERS {
            return Err(invalid(
                "farm.groups",
                format!("{servers} servers; at most {}", limits::SERVERS),
            ));
        }
        if !(1..=MAX_SLOTS).contains(&self.farm.slots) {
            return Err(invalid(
                "farm.slots",
                format!("expected an integer from 1 to {MAX_SLOTS}, got {}", self.farm.slots),
            ));
        }
        let workers = servers.saturating_mul(u64::from(self.farm.slots));
        if workers > limits::SERVERS {
            return Err(invalid(
                "farm.slots",
                format!("{workers} workers (servers times slots); at most {}", limits::SERVERS),
            ));
        }
        Ok(servers)
    }

    /// `events`: each at a time >= 0, for a group of the farm, with a possible rate.
    fn validate_events(&self) -> Result<(), Invalid> {
        for (i, e) in self.events.iter().enumerate() {
            let key = "events";
            let which = format!("event {} (at = {})", i + 1, num(e.at));
            if !(e.at.is_finite() && e.at >= 0.0) {
                return Err(invalid(
                    key,
                    format!("event {}: at = {} is not a time >= 0", i + 1, num(e.at)),
                ));
            }
            if !self.farm.groups.iter().any(|g| g.name == e.group) {
                return Err(invalid(
                    key,
                    format!("{which}: group '{}' is not a group of farm.groups", e.group),
                ));
            }
            if let Some(rate) = e.rate
                && !(limits::MIN_RATE..=limits::RATE).contains(&rate)
            {
                return Err(invalid(
                    key,
                    format!("{which}: rate {} is outside 1e-6 to 1e6", num(rate)),
                ));
            }
            client::validate_event(e, &which)?;
        }
        Ok(())
    }

    /// `arrivals` and `admission`, and the load against the farm's capacity.
    fn validate_arrivals(&self) -> Result<(), Invalid> {
        self.arrivals.validate().map_err(keyed)?;
        if let Some(a) = &self.admission {
            a.resolve().map_err(keyed)?;
        }
        // Overload is allowed in front of an admission stage, which is there to cut it.
        let max_load = self.max_load();
        match self.arrivals.load_rate() {
            Some((Some(load), _)) if !(limits::MIN_LOAD..max_load).contains(&load) => {
                Err(invalid("arrivals.load", load_expected(max_load, load)))
            }
            Some((None, Some(rate))) if rate >= self.capacity() * max_load => Err(invalid(
                "arrivals.rate",
                format!(
                    "{} is at or above the farm's capacity {}",
                    num(rate),
                    num(self.capacity())
                ),
            )),
            _ => Ok(()),
        }
    }

    /// `info`: its kind and period, clients and subsets (of at most `servers`).
    fn validate_info(&self, servers: u64) -> Result<(), Invalid> {
        match self.info.kind() {
            Ok(InfoKind::Live | InfoKind::Global | InfoKind::Local) => {
                if self.info.period.is_some() || self.info.local {
                    return Err(invalid(
                        "info.period",
                        "period and local apply to kind = \"board\"",
                    ));
                }
            }
            Ok(InfoKind::Board) => match self.info.period {
                Some(p) if p == 0.0 || (p >= limits::MIN_PERIOD && p.is_finite()) => {}
                Some(p) => {
                    return Err(invalid(
                        "info.period",
                        format!("expected 0 (live) or a period >= 0.001, got {}", num(p)),
                    ));
                }
                None => return Err(invalid("info.period", "a board needs a period")),
            },
            Err(other) => {
                return Err(invalid(
                    "info.kind",
                    format!("'{other}': expected \"live\", \"global\", \"local\" or \"board\""),
                ));
            }
        }
        if !(1..=MAX_CLIENTS).contains(&self.info.clients) {
            return Err(invalid(
                "info.clients",
                format!("expected 1 to {MAX_CLIENTS} clients, got {}", self.info.clients),
            ));
        }
        if self.info.clients > 1 && self.info.kind() == Ok(InfoKind::Board) {
            return Err(invalid(
                "info.kind",
                "a board is one dispatcher's view; with several clients use \"live\" or \"local\"",
            ));
        }
        if let Err(other) = self.info.subsetting.get() {
            return Err(invalid(
                "info.subsetting",
                format!("'{other}': expected \"deterministic\" or \"random\""),
            ));
        }
        if let Some(size) = self.info.subset
            && !(1..=servers).contains(&u64::from(size))
        {
            return Err(invalid(
                "info.subset",
                format!("expected 1 to {servers} servers (the farm's), got {size}"),
            ));
        }
        if self.info.subset.is_some() && self.info.kind() == Ok(InfoKind::Board) {
            return Err(invalid("info.subset", "subsets need \"live\" or \"local\" information"));
        }
        Ok(())
    }

    /// `run.requests`, `run.warmup`, `run.seeds` and `run.queue_guard`.
    fn validate_run(&self) -> Result<(), Invalid> {
        count("run.requests", self.run.requests, 2, limits::ARRIVALS)?;
        match &self.run.warmup {
            Warmup::Arrivals(w) => {
                count("run.warmup", *w, 0, limits::ARRIVALS)?;
            }
            Warmup::Auto => {}
            Warmup::Other(s) => {
                return Err(invalid(
                    "run.warmup",
                    format!("expected a count or \"auto\", got \"{s}\""),
                ));
            }
        }
        count("run.seeds", self.run.seeds, 1, limits::REPLICATIONS)?;
        count("run.queue_guard", self.run.queue_guard, 1, limits::QUEUE_GUARD)?;
        Ok(())
    }

    /// `run.precision` and `run.max_requests`.
    fn validate_precision(&self) -> Result<(), Invalid> {
        let Some(r) = self.run.precision else {
            return match self.run.max_requests {
                Some(_) => Err(invalid("run.max_requests", "only applies with run.precision")),
                None => Ok(()),
            };
        };
        if !(1e-6..=0.5).contains(&r) {
            return Err(invalid(
                "run.precision",
                format!(
                    "expected a relative half-width R with 1e-6 <= R <= 0.5 (0.01 = +-1%), got {}",
                    num(r)
                ),
            ));
        }
        if let ArrivalSpec::Trace { .. } = self.arrivals {
            return Err(invalid(
                "run.precision",
                "a trace ends the run, so it cannot be lengthened: leave precision out",
            ));
        }
        if let Some(m) = self.run.max_requests {
            count("run.max_requests", m, self.run.requests.0, limits::ARRIVALS)?;
        }
        Ok(())
    }

    /// The load must be below this: 1, or [`MAX_ADMITTED_LOAD`] with an admission stage.
    pub fn max_load(&self) -> f64 {
        if self.admission.is_some() { MAX_ADMITTED_LOAD } else { 1.0 }
    }

    /// Server rates in index order (groups in order).
    pub fn rates(&self) -> Vec<f64> {
        self.farm
            .groups
            .iter()
            .flat_map(|g| std::iter::repeat_n(g.rate, g.count as usize))
            .collect()
    }

    /// The farm's capacity at time 0: the sum over servers of rate times slots.
    pub fn capacity(&self) -> f64 {
        self.rates().iter().sum::<f64>() * f64::from(self.farm.slots)
    }

    /// Each group's name and the range of server indices it holds (groups in file order).
    pub fn group_ranges(&self) -> Vec<(&str, std::ops::Range<usize>)> {
        let mut start = 0;
        self.farm
            .groups
            .iter()
            .map(|g| {
                let r = start..start + g.count as usize;
                start = r.end;
                (g.name.as_str(), r)
            })
            .collect()
    }

    /// The `[[events]]` as rate changes of server index ranges (groups in order), sorted by time;
    /// events at the same time keep their file order. The spec must be valid.
    pub fn rate_changes(&self) -> Vec<RateChange> {
        let ranges = self.group_ranges();
        let mut changes: Vec<RateChange> = self
            .events
            .iter()
            .filter_map(|e| {
                let (_, servers) =
                    ranges.iter().find(|(name, _)| *name == e.group).expect("a validated group");
                Some(RateChange { at: e.at, servers: servers.clone(), rate: e.rate? })
            })
            .collect();
        changes.sort_by(|a, b| a.at.total_cmp(&b.at));
        changes
    }

    /// The arrival process and the service distribution, files read (relative to `dir`).
    pub fn workload(&self, dir: &Path) -> Result<(Arrivals, Service), KeyError> {
        let arrivals = self.arrivals.build(self.capacity(), dir)?;
        let service = self.service.build(dir)?;
        Ok((arrivals, service))
    }

    /// The canonical form: every key, defaults filled in, in a fixed order.
    pub fn to_toml(&self) -> String {
        toml::to_string(self).expect("a scenario serialises")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dotted_keys_split_outside_quotes() {
        let parts = |k| key_parts(k);
        assert_eq!(parts("a.b"), Some(vec!["a".into(), "b".into()]));
        assert_eq!(
            parts("sweep.\"arrivals.load\""),
            Some(vec!["sweep".into(), "arrivals.load".into()])
        );
        for bad in ["", "a..b", ".a", "a.", "\"a", "a.\"b\"c"] {
            assert_eq!(parts(bad), None, "{bad}");
        }
    }

    #[test]
    fn set_values_are_toml_or_else_strings() {
        assert_eq!(parse_value("0.8"), Value::Float(0.8));
        assert_eq!(parse_value("[1, 2]"), Value::Array(vec![Value::Integer(1), Value::Integer(2)]));
        assert_eq!(parse_value("ps"), Value::String("ps".into()));
        let mut t = Table::new();
        set_path(&mut t, "farm.slots", Value::Integer(2)).unwrap();
        assert_eq!(t["farm"]["slots"], Value::Integer(2));
        let e = set_path(&mut t, "farm.slots.x", Value::Integer(1)).unwrap_err();
        assert_eq!(e.to_string(), "'slots' in 'farm.slots.x' is not a table");
        let e = set_path(&mut t, "farm..x", Value::Integer(1)).unwrap_err();
        assert_eq!(e, PathError::NotDotted("farm..x".into()));
        assert_eq!(e.to_string(), "'farm..x' is not a dotted key");
    }

    #[test]
    fn errors_point_at_the_line_of_the_key() {
        let text = "name = \"x\"\n\n[arrivals]\nload = 3.0\n";
        let source = Source::parse("f.toml", text).unwrap();
        let e = source.points().unwrap_err();
        assert!(
            matches!(&e, ScenarioError::Key { line: Some(4), key, .. } if key == "arrivals.load"),
            "{e:?}"
        );
        let e = e.to_string();
        assert!(e.starts_with("f.toml:4: arrivals.load"), "{e}");
        assert_eq!(source.line_of_key("arrivals"), Some(3));
    }

    #[test]
    fn named_values_read_and_print_as_written() {
        let text = "[info]\nkind = \"global\"\nsubsetting = \"random\"\n[keys]\npopularity = \"zipf\"\n[run]\nwarmup = \"auto\"\n";
        let spec = Source::parse("f.toml", text).unwrap().points().unwrap().remove(0).1;
        assert_eq!(spec.info.kind, Some(Named::Is(InfoKind::Global)));
        assert_eq!(spec.info.kind(), Ok(InfoKind::Live));
        assert_eq!(spec.info.subsetting, Named::Is(Subsetting::Random));
        assert_eq!(spec.run.warmup, Warmup::Auto);
        let printed = spec.to_toml();
        for line in text.lines().filter(|l| l.contains('=')) {
            assert!(printed.lines().any(|l| l == line), "{line} in {printed}");
        }
        // A warm-up that is neither a count nor a string is refused by serde naming `Warmup`.
        let mut source = Source::parse("f.toml", "").unwrap();
        let e = source.set(&Assignment::parse("run.warmup=true").unwrap()).unwrap_err().to_string();
        assert!(e.ends_with("data did not match any variant of untagged enum Warmup"), "{e}");
        source.set(&Assignment::parse("run.warmup=sometimes").unwrap()).unwrap();
        let e = source.points().unwrap_err().to_string();
        assert!(e.ends_with("run.warmup: expected a count or \"auto\", got \"sometimes\""), "{e}");
    }

    #[test]
    fn a_sweep_point_holds_its_own_values_and_not_the_grid() {
        // Every point used to carry the whole grid in its spec: n points held n^2 values.
        let text = "[sweep]\n\"arrivals.load\" = [0.5, 0.6, 0.7]\n\"farm.slots\" = [1, 2]\n";
        let points = Source::parse("f.toml", text).unwrap().points().unwrap();
        assert_eq!(points.len(), 6);
        for (values, spec) in &points {
            assert_eq!(values.len(), 2);
            assert!(spec.sweep.is_empty(), "{:?}", spec.sweep);
        }
        assert_eq!(points[3].1.farm.slots, 2);
    }
}

//! Typed errors: a usage error names the option or the file key, the value, and what is
//! accepted, as fields; its `Display` is one line, which the binary prints after `error: ` before
//! exiting with status 2.

use std::fmt;

use thiserror::Error;

/// A user's value as it may appear in a one-line message: control characters escaped, and cut
/// short if very long.
pub fn shown(value: &str) -> String {
    const MAX: usize = 60;
    let mut out = String::new();
    for (i, c) in value.chars().enumerate() {
        if i == MAX {
            out.push_str("...");
            break;
        }
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

/// Text of any origin made safe for one line (line breaks and other control characters escaped;
/// not shortened).
fn one_line(text: &str) -> String {
    text.chars()
        .flat_map(|c| {
            let escaped: Vec<char> =
                if c.is_control() { c.escape_default().collect() } else { vec![c] };
            escaped
        })
        .collect()
}

/// `:LINE` when the line is known, else nothing.
fn at(line: &Option<usize>) -> String {
    line.map(|l| format!(":{l}")).unwrap_or_default()
}

/// A usage error: bad input, reported as one line and exit status 2.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum UsageError {
    /// A value an option does not accept.
    #[error("invalid value '{}' for {option}: {accepted}", shown(value))]
    InvalidValue {
        /// The option, e.g. `--loads`.
        option: String,
        /// The value as given.
        value: String,
        /// What the option accepts.
        accepted: String,
    },
    /// A list option given no value.
    #[error("{option} needs at least one {what}")]
    EmptyList {
        /// The option.
        option: String,
        /// What an item of the list is (`value`, `set`).
        what: String,
    },
    /// A list with an empty item.
    #[error("{option} has an empty {what} in '{}'", shown(list))]
    EmptyItem {
        /// The option.
        option: String,
        /// What an item of the list is (`item`, `set`).
        what: String,
        /// The list as given.
        list: String,
    },
    /// A list naming one item twice.
    #[error("{option} lists '{}' twice", shown(item))]
    Duplicate {
        /// The option.
        option: String,
        /// The repeated item as given.
        item: String,
    },
    /// An option that does not go with the others given (or missing ones); `rule` follows the
    /// option's name and says what is accepted.
    #[error("{option} {}", one_line(rule))]
    Conflict {
        /// The option, as written at the start of the message (`--plot -`, `--variants left`).
        option: String,
        /// The rule it breaks.
        rule: String,
    },
    /// A run too large for the limits that keep it within memory, precision or time; `limit`
    /// follows the option's name and says what is accepted.
    #[error("{option} {}", one_line(limit))]
    TooLarge {
        /// The option or options and their values, as written at the start of the message.
        option: String,
        /// The size asked for and the largest accepted.
        limit: String,
    },
    /// A policy that needs more servers than the farm has.
    #[error("policy {policy} needs at least {needs} servers, but {option} gives {servers}")]
    TooFewServers {
        /// The policy's name.
        policy: String,
        /// The servers it needs.
        needs: usize,
        /// The option (or key) that sizes the farm.
        option: String,
        /// The servers the farm has.
        servers: usize,
    },
    /// A `NAME:key=value,...` value refused by its reader (`--limiter`, `--pattern`).
    #[error("{option}: {}", one_line(&error.to_string()))]
    Param {
        /// The option.
        option: String,
        /// The key refused (the limiter's or pattern's) and why.
        error: KeyError,
    },
    /// A bad scenario file or override.
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
    /// An error reported by the command-line parser, already one line.
    #[error("{}", one_line(.0))]
    Other(String),
}

/// A value `option` does not accept; `accepted` says what it does.
pub fn bad(option: &str, value: &str, accepted: impl fmt::Display) -> UsageError {
    UsageError::InvalidValue {
        option: option.into(),
        value: value.into(),
        accepted: accepted.to_string(),
    }
}

/// A rule about `option` and the others given, stated after its name.
pub fn conflict(option: &str, rule: impl Into<String>) -> UsageError {
    UsageError::Conflict { option: option.into(), rule: rule.into() }
}

/// A size beyond a limit, stated after the option's name.
pub fn too_large(option: impl Into<String>, limit: impl Into<String>) -> UsageError {
    UsageError::TooLarge { option: option.into(), limit: limit.into() }
}

/// A value refused under a key of a scenario or of a `NAME:key=value,...` option
/// (`arrivals.load`, `admission.rate`, `policies`): displays as `key: message`, or as the message
/// alone when it names no key (a distribution's constructor, a list that is not `key=value`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyError {
    /// The dotted key, or empty when the message names none.
    pub key: String,
    /// The value and what is accepted.
    pub message: String,
}

impl KeyError {
    /// `message` about `key`.
    pub fn new(key: impl Into<String>, message: impl fmt::Display) -> KeyError {
        KeyError { key: key.into(), message: message.to_string() }
    }

    /// A message naming no key.
    pub fn unkeyed(message: impl fmt::Display) -> KeyError {
        KeyError::new(String::new(), message)
    }

    /// The same refusal for a key nested under `prefix` (`service.scv` under `classes[1]` is
    /// `classes[1].service.scv`).
    pub fn under(self, prefix: &str) -> KeyError {
        let key =
            if self.key.is_empty() { prefix.to_string() } else { format!("{prefix}.{}", self.key) };
        KeyError { key, message: self.message }
    }
}

impl fmt::Display for KeyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.key.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", self.key, self.message)
        }
    }
}

impl std::error::Error for KeyError {}

/// A bad scenario: one line naming the file, the line when known, and the key.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ScenarioError {
    /// The file cannot be read.
    #[error("cannot read scenario '{}': {}", one_line(file), one_line(reason))]
    Read {
        /// The file as given.
        file: String,
        /// Why (the system's message).
        reason: String,
    },
    /// A key with an unaccepted value.
    #[error("{file}{}: {key}: {}", at(line), one_line(message))]
    Key {
        /// The file.
        file: String,
        /// The key's line, when it is set in the file.
        line: Option<usize>,
        /// The dotted key (`farm.groups[0].rate`, `sweep."arrivals.load"`).
        key: String,
        /// The value and what is accepted.
        message: String,
    },
    /// A file the TOML reader refuses (syntax, unknown key, wrong type); the reader's message
    /// names the key.
    #[error("{file}{}: {}", at(line), one_line(message))]
    File {
        /// The file.
        file: String,
        /// The line, when known.
        line: Option<usize>,
        /// The reader's message.
        message: String,
    },
    /// A sweep point whose values make the file invalid.
    #[error("{file}: at sweep point {point}: {}", one_line(message))]
    SweepPoint {
        /// The file.
        file: String,
        /// The point's `key = value` pairs.
        point: String,
        /// The reader's message.
        message: String,
    },
    /// A `--set` that is not `KEY=VALUE`.
    #[error("invalid value '{}' for --set: expected KEY=VALUE", one_line(assignment))]
    SetSyntax {
        /// The assignment as given.
        assignment: String,
    },
    /// A `--set` whose key or value is refused.
    #[error("--set {}: {}", one_line(assignment), one_line(message))]
    Set {
        /// The assignment as given.
        assignment: String,
        /// Why.
        message: String,
    },
}

impl ScenarioError {
    /// A refusal of `key` in `file` as a [`Key`] error, or as a [`File`] error when it names
    /// no key.
    ///
    /// [`Key`]: ScenarioError::Key
    /// [`File`]: ScenarioError::File
    pub fn at_key(file: &str, line: Option<usize>, e: KeyError) -> ScenarioError {
        match e.key.is_empty() {
            false => ScenarioError::Key { file: file.into(), line, key: e.key, message: e.message },
            true => ScenarioError::File { file: file.into(), line, message: e.message },
        }
    }

    /// A message of the form `key: ...` about `file` (as validation gives) as a [`Key`] error,
    /// or as a [`File`] error when it names no key.
    ///
    /// [`Key`]: ScenarioError::Key
    /// [`File`]: ScenarioError::File
    pub fn keyed(file: &str, line: Option<usize>, message: &str) -> ScenarioError {
        match message.split_once(": ") {
            Some((key, rest)) if !key.is_empty() && !key.contains(' ') => ScenarioError::Key {
                file: file.into(),
                line,
                key: key.into(),
                message: rest.into(),
            },
            _ => ScenarioError::File { file: file.into(), line, message: message.into() },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One error of each variant, with a value holding a line break, and the option or key it
    /// must name.
    fn every_variant() -> Vec<(UsageError, &'static str)> {
        let s = |x: &str| x.to_string();
        let scenario = |e: ScenarioError| UsageError::Scenario(e);
        vec![
            (
                UsageError::InvalidValue {
                    option: s("--loads"),
                    value: s("0.5\n0.9"),
                    accepted: s("expected a load"),
                },
                "--loads",
            ),
            (UsageError::EmptyList { option: s("--d"), what: s("value") }, "--d"),
            (UsageError::EmptyItem { option: s("--n"), what: s("item"), list: s("1,\n,2") }, "--n"),
            (UsageError::Duplicate { option: s("--policies"), item: s("p2c\n") }, "--policies"),
            (UsageError::Conflict { option: s("--plot"), rule: s("and --out\nclash") }, "--plot"),
            (UsageError::TooLarge { option: s("--seeds 9"), limit: s("is\ntoo many") }, "--seeds"),
            (
                UsageError::TooFewServers {
                    policy: s("p2c"),
                    needs: 2,
                    option: s("--servers"),
                    servers: 1,
                },
                "--servers",
            ),
            (UsageError::Other(s("unexpected argument '--x'\nmore")), "--x"),
            (
                UsageError::Param {
                    option: s("--pattern"),
                    error: KeyError::new("poisson", "rate = 'x\ny' is not a number > 0"),
                },
                "--pattern: poisson: rate",
            ),
            (scenario(ScenarioError::Read { file: s("a\n.toml"), reason: s("gone") }), "a"),
            (
                scenario(ScenarioError::Key {
                    file: s("f.toml"),
                    line: Some(4),
                    key: s("arrivals.load"),
                    message: s("expected\n0 < load < 1"),
                }),
                "f.toml:4: arrivals.load: ",
            ),
            (
                scenario(ScenarioError::File {
                    file: s("f.toml"),
                    line: None,
                    message: s("unknown field `x`"),
                }),
                "f.toml: unknown field `x`",
            ),
            (
                scenario(ScenarioError::SweepPoint {
                    file: s("f.toml"),
                    point: s("farm.slots = 0"),
                    message: s("bad\nvalue"),
                }),
                "farm.slots",
            ),
            (scenario(ScenarioError::SetSyntax { assignment: s("x\ny") }), "--set"),
            (
                scenario(ScenarioError::Set { assignment: s("a.b=1"), message: s("no\nkey") }),
                "--set a.b=1",
            ),
        ]
    }

    #[test]
    fn messages_stay_on_one_line() {
        assert_eq!(shown("a\nb\tc"), "a\\nb\\tc");
        assert_eq!(shown(&"x".repeat(100)).len(), 63);
        let e = bad("--loads", "0.5\n0.9", "expected a load").to_string();
        assert_eq!(e.lines().count(), 1, "{e}");
    }

    #[test]
    fn every_variant_is_one_line_naming_its_option_or_key() {
        for (e, names) in every_variant() {
            let text = e.to_string();
            assert_eq!(text.lines().count(), 1, "{e:?}: {text}");
            assert!(text.contains(names), "{e:?} should name {names}: {text}");
        }
    }

    #[test]
    fn messages_keep_their_wording() {
        let s = |x: &str| x.to_string();
        let e = UsageError::InvalidValue {
            option: s("--loads"),
            value: s("1.2"),
            accepted: s("expected a utilisation with 0 < load < 1"),
        };
        assert_eq!(
            e.to_string(),
            "invalid value '1.2' for --loads: expected a utilisation with 0 < load < 1"
        );
        let e = UsageError::Duplicate { option: s("--loads"), item: s("0.5") };
        assert_eq!(e.to_string(), "--loads lists '0.5' twice");
        let e = UsageError::EmptyList { option: s("--weights"), what: s("set") };
        assert_eq!(e.to_string(), "--weights needs at least one set");
        let e = ScenarioError::File { file: s("f.toml"), line: Some(3), message: s("oops") };
        assert_eq!(e.to_string(), "f.toml:3: oops");
    }

    #[test]
    fn keyed_messages_split_at_the_key() {
        let e = ScenarioError::keyed("f.toml", None, "policies: unknown policy 'x'");
        assert!(matches!(&e, ScenarioError::Key { key, .. } if key == "policies"), "{e:?}");
        assert_eq!(e.to_string(), "f.toml: policies: unknown policy 'x'");
        let e = ScenarioError::keyed("f.toml", None, "missing field `name`");
        assert!(matches!(e, ScenarioError::File { .. }), "{e:?}");
        assert_eq!(e.to_string(), "f.toml: missing field `name`");
    }
}

//! Policy parameters, as written after a policy's name in a scenario (`NAME:key=value,...`).
//!
//! Each policy with parameters declares them as one struct in its own file, with [`params!`]:
//! deserialised with serde (`deny_unknown_fields`, every field defaulted), its keys
//! ([`Params::KEYS`]) taken from its fields; its row of the policy table names it
//! (`C3: C3Config => ...`). The text is parsed once, by [`parse`], into
//! that struct, held for the run by a [`Tuning`]. A field's parser is one of the functions below
//! (`#[serde(deserialize_with = "...")]`): each says what it expects, and [`parse`] puts the key in
//! front (`tau must be a number > 0`).

use std::any::Any;
use std::fmt;
use std::sync::Arc;

use serde::de::value::{BorrowedStrDeserializer, MapAccessDeserializer};
use serde::de::{DeserializeOwned, DeserializeSeed, MapAccess};
use serde::{Deserialize, Deserializer};

/// A policy's parameter struct: the keys, in the order `lbsim --help` lists them, and their
/// defaults ([`Default`]). Declared with [`params!`], which writes the keys from the fields.
pub trait Params:
    DeserializeOwned + Default + Clone + PartialEq + fmt::Debug + Send + Sync + 'static
{
    /// The keys accepted as `NAME:key=value`: the struct's serde field names, in order.
    const KEYS: &'static [&'static str];
}

/// Declares a parameter struct and its [`Params`]: the struct as written (each field with its
/// value parser, `#[serde(deserialize_with = "...")]`, and `rename = "key"` first where the key
/// is not the field's name), deserialised with `deny_unknown_fields` and every field defaulted,
/// and [`Params::KEYS`] from its fields, so that a key is written once.
macro_rules! params {
    (
        $(#[$attr:meta])*
        pub struct $name:ident {
            $(
                $(#[doc = $doc:literal])*
                #[serde($(rename = $key:literal,)? deserialize_with = $with:literal)]
                pub $field:ident: $ty:ty,
            )*
        }
    ) => {
        $(#[$attr])*
        #[derive(Debug, Clone, Copy, PartialEq, serde::Deserialize)]
        #[serde(deny_unknown_fields, default)]
        pub struct $name {
            $(
                $(#[doc = $doc])*
                #[serde($(rename = $key,)? deserialize_with = $with)]
                pub $field: $ty,
            )*
        }

        impl $crate::policy::tuning::Params for $name {
            const KEYS: &'static [&'static str] =
                &[$($crate::policy::tuning::params!(@key $field $($key)?)),*];
        }
    };
    (@key $field:ident) => { stringify!($field) };
    (@key $field:ident $key:literal) => { $key };
}
pub(crate) use params;

params! {
    /// The parameters of a policy that has none.
    #[derive(Default)]
    pub struct NoParams {}
}

/// The parameters of the run's policy: its parameter struct as parsed, or nothing (every
/// parameter at its default).
#[derive(Clone, Default)]
pub struct Tuning(Option<Arc<dyn Held>>);

impl Tuning {
    /// Holds `params`.
    pub fn new<P: Params>(params: P) -> Tuning {
        Tuning(Some(Arc::new(params)))
    }

    /// The parameters held if they are a `P`, `P`'s defaults if none are held, or an error if
    /// they are another struct (another policy's parameters).
    pub fn get<P: Params>(&self) -> Result<P, ParamError> {
        let Some(held) = self.0.as_deref() else {
            return Ok(P::default());
        };
        match held.as_any().downcast_ref::<P>() {
            Some(params) => Ok(params.clone()),
            None => Err(ParamError::Mismatch { held: held.name(), wanted: type_name::<P>() }),
        }
    }

    /// The parameters of a policy that takes a `P`, as [`Tuning::get`]; panics if they are
    /// another struct: a tuning is made for its policy ([`PolicyKind::tuning`],
    /// [`PolicyKind::tuned`]), so that is a fault of the program, not of its input.
    ///
    /// [`PolicyKind::tuning`]: super::PolicyKind::tuning
    /// [`PolicyKind::tuned`]: super::PolicyKind::tuned
    pub fn of<P: Params>(&self) -> P {
        self.get().unwrap_or_else(|e| panic!("{e}"))
    }
}

/// The last segment of `P`'s path (`Decay`), for messages.
fn type_name<P>() -> &'static str {
    let full = std::any::type_name::<P>();
    full.rsplit("::").next().unwrap_or(full)
}

impl fmt::Debug for Tuning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Some(held) => held.fmt(f),
            None => f.write_str("Defaults"),
        }
    }
}

impl PartialEq for Tuning {
    fn eq(&self, other: &Tuning) -> bool {
        match (&self.0, &other.0) {
            (Some(a), Some(b)) => a.same(b.as_any()),
            (a, b) => a.is_none() && b.is_none(),
        }
    }
}

/// A parameter struct behind [`Tuning`].
trait Held: fmt::Debug + Send + Sync {
    fn as_any(&self) -> &dyn Any;
    fn same(&self, other: &dyn Any) -> bool;
    fn name(&self) -> &'static str;
}

impl<P: Params> Held for P {
    fn as_any(&self) -> &dyn Any {
        self
    }

    fn name(&self) -> &'static str {
        type_name::<P>()
    }

    fn same(&self, other: &dyn Any) -> bool {
        other.downcast_ref::<P>() == Some(self)
    }
}

/// Why a policy's parameters were refused; the message says what is expected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParamError {
    /// A key the policy does not take, or a parameter without `=` (as written).
    Unknown {
        /// The parameter as written.
        param: String,
        /// The policy's name.
        policy: String,
    },
    /// A key given twice, with both values.
    Twice {
        /// The key.
        key: String,
        /// Its first value.
        first: String,
        /// Its second value.
        second: String,
    },
    /// A value out of its range or of the wrong kind.
    Value(String),
    /// A policy given another policy's parameter struct (a fault of the program).
    Mismatch {
        /// The struct held.
        held: &'static str,
        /// The struct the policy takes.
        wanted: &'static str,
    },
}

impl fmt::Display for ParamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParamError::Unknown { param, policy } => {
                write!(f, "unknown parameter '{param}' for {policy}")
            }
            ParamError::Twice { key: k, first, second } => {
                write!(f, "parameter '{k}' is given twice ({k}={first} and {k}={second})")
            }
            ParamError::Value(message) => f.write_str(message),
            ParamError::Mismatch { held, wanted } => {
                write!(f, "parameters {held} given to a policy that takes {wanted}")
            }
        }
    }
}

impl std::error::Error for ParamError {}

impl serde::de::Error for ParamError {
    fn custom<T: fmt::Display>(message: T) -> Self {
        ParamError::Value(message.to_string())
    }
}

/// Parses `text`, the `key=value,...` after `policy:`, into `P`.
///
/// Parameters are read left to right and the first fault is the one reported: a key not in
/// [`Params::KEYS`] or a parameter without `=`, a key given twice, a value its field refuses.
pub fn parse<P: Params>(policy: &str, text: &str) -> Result<P, ParamError> {
    let params = text.split(',').filter(|p| !p.trim().is_empty());
    let pairs = Pairs { policy, keys: P::KEYS, params, given: Vec::new() };
    P::deserialize(MapAccessDeserializer::new(pairs))
}

/// The parameters of one policy, as serde reads them: one key and its value at a time.
struct Pairs<'a, I> {
    policy: &'a str,
    keys: &'a [&'a str],
    params: I,
    given: Vec<(&'a str, &'a str)>,
}

impl<'a, I: Iterator<Item = &'a str>> MapAccess<'a> for Pairs<'a, I> {
    type Error = ParamError;

    fn next_key_seed<K: DeserializeSeed<'a>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, ParamError> {
        let Some(param) = self.params.next() else {
            return Ok(None);
        };
        let (key, value) = match param.split_once('=').map(|(k, v)| (k.trim(), v.trim())) {
            Some((k, v)) if self.keys.contains(&k) => (k, v),
            _ => {
                let policy = self.policy.to_string();
                return Err(ParamError::Unknown { param: param.to_string(), policy });
            }
        };
        if let Some(&(_, first)) = self.given.iter().find(|(g, _)| *g == key) {
            let (key, first, second) = (key.to_string(), first.to_string(), value.to_string());
            return Err(ParamError::Twice { key, first, second });
        }
        self.given.push((key, value));
        seed.deserialize(BorrowedStrDeserializer::new(key)).map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'a>>(&mut self, seed: V) -> Result<V::Value, ParamError> {
        let (key, value) = *self.given.last().expect("a value follows its key");
        seed.deserialize(BorrowedStrDeserializer::new(value)).map_err(|e| match e {
            ParamError::Value(message) => ParamError::Value(format!("{key} {message}")),
            other => other,
        })
    }
}

// ===== the values parameters take =====

/// The largest count parameter (`choices`, `vnodes`, `dispatchers`, `min_aperture`, `pool`).
const MAX_COUNT: u32 = 100_000;

/// The value as text.
pub fn text<'de, D: Deserializer<'de>>(d: D) -> Result<&'de str, D::Error> {
    <&str>::deserialize(d)
}

/// The value as a finite number, else `must be {what}`.
pub fn number_where<'de, D: Deserializer<'de>>(
    d: D,
    ok: impl Fn(f64) -> bool,
    what: &str,
) -> Result<f64, D::Error> {
    let x = text(d)?.parse::<f64>().ok().filter(|x| x.is_finite() && ok(*x));
    x.ok_or_else(|| serde::de::Error::custom(format!("must be {what}")))
}

/// `true` or `false`.
pub fn flag<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    match text(d)? {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(serde::de::Error::custom("must be true or false")),
    }
}

/// An integer from 1 to [`MAX_COUNT`].
pub fn count<'de, D: Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
    let c = text(d)?.parse::<u32>().ok().filter(|c| (1..=MAX_COUNT).contains(c));
    let message = || serde::de::Error::custom(format!("must be an integer from 1 to {MAX_COUNT}"));
    c.ok_or_else(message)
}

/// Like [`count`], as a `usize`.
pub fn count_usize<'de, D: Deserializer<'de>>(d: D) -> Result<usize, D::Error> {
    count(d).map(|c| c as usize)
}

/// A number > 0.
pub fn positive<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    number_where(d, |x| x > 0.0, "a number > 0")
}

/// A number >= 0.
pub fn non_negative<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    number_where(d, |x| x >= 0.0, "a number >= 0")
}

/// A number from 0 to 1.
pub fn fraction<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    number_where(d, |x| (0.0..=1.0).contains(&x), "a number from 0 to 1")
}

/// A number from 0 to 100.
pub fn percent<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    number_where(d, |x| (0.0..=100.0).contains(&x), "a number from 0 to 100")
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// The fields serde reads into `P`, from a deserialiser that only records them.
    pub(crate) fn fields<P: Params>() -> &'static [&'static str] {
        struct Fields(Option<&'static [&'static str]>);
        impl<'de> Deserializer<'de> for &mut Fields {
            type Error = ParamError;
            fn deserialize_struct<V: serde::de::Visitor<'de>>(
                self,
                _: &'static str,
                fields: &'static [&'static str],
                _: V,
            ) -> Result<V::Value, ParamError> {
                self.0 = Some(fields);
                Err(ParamError::Value("recorded".into()))
            }
            fn deserialize_any<V: serde::de::Visitor<'de>>(
                self,
                _: V,
            ) -> Result<V::Value, Self::Error> {
                Err(ParamError::Value("not a struct".into()))
            }
            serde::forward_to_deserialize_any! {
                bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
                option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier
                ignored_any
            }
        }
        let mut f = Fields(None);
        let _ = P::deserialize(&mut f);
        f.0.expect("a parameter struct")
    }

    params! {
        #[derive(Default)]
        pub struct Two {
            #[serde(deserialize_with = "count")]
            pub n: u32,
            #[serde(rename = "switch", deserialize_with = "flag")]
            pub on: bool,
        }
    }

    #[test]
    fn parameters_are_read_left_to_right_and_the_first_fault_is_reported() {
        let two = |text| parse::<Two>("two", text).map_err(|e| e.to_string());
        assert_eq!(two(" n = 3 ,, switch=true,"), Ok(Two { n: 3, on: true }));
        assert_eq!(two(""), Ok(Two::default()));
        assert_eq!(two("n=0,x=1"), Err("n must be an integer from 1 to 100000".into()));
        assert_eq!(two("x=1,n=0"), Err("unknown parameter 'x=1' for two".into()));
        assert_eq!(two("n=1, switch"), Err("unknown parameter ' switch' for two".into()));
        assert_eq!(two("n=1,n=2,on=x"), Err("parameter 'n' is given twice (n=1 and n=2)".into()));
        assert_eq!(two("switch=yes"), Err("switch must be true or false".into()));
        assert_eq!(two("on=true"), Err("unknown parameter 'on=true' for two".into()));
        assert_eq!(Two::KEYS, ["n", "switch"]);
        assert_eq!(fields::<Two>(), Two::KEYS);
        assert_eq!(NoParams::KEYS, [] as [&str; 0]);
    }

    #[test]
    fn a_tuning_gives_what_it_holds_or_the_defaults() {
        let held = Tuning::new(Two { n: 5, on: true });
        assert_eq!(held.get::<Two>(), Ok(Two { n: 5, on: true }));
        assert_eq!(held.of::<Two>(), Two { n: 5, on: true });
        assert_eq!(Tuning::default().get::<Two>(), Ok(Two::default()));
        assert_eq!(Tuning::default().of::<NoParams>(), NoParams {});
        assert_eq!(held, Tuning::new(Two { n: 5, on: true }));
        assert_ne!(held, Tuning::new(Two { n: 4, on: true }));
        assert_ne!(held, Tuning::default());
        assert_eq!(format!("{held:?}"), "Two { n: 5, on: true }");
    }

    #[test]
    fn another_policy_s_parameters_are_refused() {
        let other = Tuning::new(NoParams {});
        let err = ParamError::Mismatch { held: "NoParams", wanted: "Two" };
        assert_eq!(other.get::<Two>(), Err(err.clone()));
        assert_eq!(err.to_string(), "parameters NoParams given to a policy that takes Two");
    }

    #[test]
    #[should_panic(expected = "parameters NoParams given to a policy that takes Two")]
    fn a_policy_is_never_built_with_another_policy_s_parameters() {
        Tuning::new(NoParams {}).of::<Two>();
    }
}

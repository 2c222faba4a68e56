//! A value named by a fixed word in a scenario file (`subsetting = "random"`), or a word that
//! names none of them.
//!
//! The file is read first and validated after, so that `--set` overrides and `[sweep]` points
//! are refused the way the file's own text is, each by the scenario's validation with a message
//! naming the key and the accepted words. [`Named`] keeps an unknown word until then
//! ([`Named::Other`]), and reads and writes exactly the word of the file: serde sees a string.

use serde::{Deserialize, Serialize};

/// A type whose values each have one name.
pub trait Name: Copy + 'static {
    /// The value named `s`, if any.
    fn parse(s: &str) -> Option<Self>;
    /// The value's name.
    fn name(self) -> &'static str;
}

/// A value of `T` by its name, or a word naming none (refused by validation, naming the key).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Named<T: Name> {
    /// A known value.
    Is(T),
    /// A word that names no value of `T`.
    Other(String),
}

impl<T: Name> Named<T> {
    /// The value, or the unknown word.
    pub fn get(&self) -> Result<T, &str> {
        match self {
            Named::Is(t) => Ok(*t),
            Named::Other(s) => Err(s),
        }
    }
}

impl<T: Name> Serialize for Named<T> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Named::Is(t) => s.serialize_str(t.name()),
            Named::Other(word) => s.serialize_str(word),
        }
    }
}

impl<'de, T: Name> Deserialize<'de> for Named<T> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d).map(Named::from)
    }
}

impl<T: Name> From<T> for Named<T> {
    fn from(t: T) -> Self {
        Named::Is(t)
    }
}

impl<T: Name> From<String> for Named<T> {
    fn from(s: String) -> Self {
        T::parse(&s).map_or(Named::Other(s), Named::Is)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Clone, Copy, PartialEq)]
    enum Subsetting {
        Random,
    }

    impl Name for Subsetting {
        fn parse(s: &str) -> Option<Self> {
            (s == "random").then_some(Subsetting::Random)
        }

        fn name(self) -> &'static str {
            "random"
        }
    }

    #[test]
    fn a_word_reads_and_writes_as_itself() {
        #[derive(Debug, PartialEq, Serialize, Deserialize)]
        struct T {
            m: Named<Subsetting>,
        }
        for (text, expected) in [
            ("m = \"random\"", Named::Is(Subsetting::Random)),
            ("m = \"Random\"", Named::Other("Random".into())),
            ("m = \"\"", Named::Other(String::new())),
        ] {
            let t: T = toml::from_str(text).unwrap();
            assert_eq!(t.m, expected);
            assert_eq!(toml::to_string(&t).unwrap().trim(), text);
        }
        let e = toml::from_str::<T>("m = 3").unwrap_err();
        assert!(e.message().contains("invalid type: integer `3`, expected a string"), "{e}");
    }
}

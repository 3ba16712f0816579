//! The values of a config file as serde reads them: a scalar ([`Scalar`]), a scalar or a section
//! ([`ScalarOr`]), one section or a list ([`OneOrMany`]), a scalar or a list ([`Scalars`]).

use std::fmt;

use serde::Deserialize;
use serde::de::value::{MapAccessDeserializer, SeqAccessDeserializer};
use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};

/// A scalar value of the file: a number, a string or a boolean (YAML's null is absent).
#[derive(Clone, Debug, PartialEq)]
pub enum Scalar {
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
}

impl fmt::Display for Scalar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scalar::Bool(b) => write!(f, "{b}"),
            Scalar::Int(i) => write!(f, "{i}"),
            // A whole float is written as an integer, so that `30.0` is accepted where a count is.
            Scalar::Float(x) if x.fract() == 0.0 && x.abs() < 1e15 => write!(f, "{}", *x as i64),
            Scalar::Float(x) => write!(f, "{x}"),
            Scalar::Str(s) => f.write_str(s),
        }
    }
}

struct ScalarVisitor;

impl<'de> Visitor<'de> for ScalarVisitor {
    type Value = Scalar;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a number, a string or true/false")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Scalar, E> {
        Ok(Scalar::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Scalar, E> {
        Ok(Scalar::Int(v))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Scalar, E> {
        i64::try_from(v).map(Scalar::Int).map_err(|_| E::custom(format!("{v} is too large")))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Scalar, E> {
        Ok(Scalar::Float(v))
    }
    fn visit_str<E>(self, v: &str) -> Result<Scalar, E> {
        Ok(Scalar::Str(v.to_string()))
    }
}

impl<'de> Deserialize<'de> for Scalar {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ScalarVisitor)
    }
}

/// A value that is either a scalar shorthand or a section (`tokenizer: NAME` or
/// `tokenizer: {name: NAME}`; `rateRamp: 30s` or `rateRamp: {duration: 30s}`).
#[derive(Clone, Debug)]
pub enum ScalarOr<T> {
    Scalar(Scalar),
    Section(T),
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for ScalarOr<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = ScalarOr<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a value or a section")
            }
            fn visit_bool<E>(self, v: bool) -> Result<Self::Value, E> {
                Ok(ScalarOr::Scalar(Scalar::Bool(v)))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Self::Value, E> {
                Ok(ScalarOr::Scalar(Scalar::Int(v)))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
                ScalarVisitor.visit_u64(v).map(ScalarOr::Scalar)
            }
            fn visit_f64<E>(self, v: f64) -> Result<Self::Value, E> {
                Ok(ScalarOr::Scalar(Scalar::Float(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(ScalarOr::Scalar(Scalar::Str(v.to_string())))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                T::deserialize(MapAccessDeserializer::new(map)).map(ScalarOr::Section)
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

/// One section or a list of them (`phases: {type: …}` or `phases: [{…}, {…}]`).
#[derive(Clone, Debug)]
pub enum OneOrMany<T> {
    One(T),
    Many(Vec<T>),
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for OneOrMany<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = OneOrMany<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a section or a list of sections")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                T::deserialize(MapAccessDeserializer::new(map)).map(OneOrMany::One)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
                Vec::<T>::deserialize(SeqAccessDeserializer::new(seq)).map(OneOrMany::Many)
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

/// A scalar or a list of scalars (`urls: URL` or `urls: [URL, …]`).
#[derive(Clone, Debug)]
pub struct Scalars(pub Vec<Scalar>);

impl<'de> Deserialize<'de> for Scalars {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Scalars;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a value or a list of values")
            }
            fn visit_bool<E>(self, v: bool) -> Result<Scalars, E> {
                Ok(Scalars(vec![Scalar::Bool(v)]))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Scalars, E> {
                Ok(Scalars(vec![Scalar::Int(v)]))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Scalars, E> {
                ScalarVisitor.visit_u64(v).map(|s| Scalars(vec![s]))
            }
            fn visit_f64<E>(self, v: f64) -> Result<Scalars, E> {
                Ok(Scalars(vec![Scalar::Float(v)]))
            }
            fn visit_str<E>(self, v: &str) -> Result<Scalars, E> {
                Ok(Scalars(vec![Scalar::Str(v.to_string())]))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Scalars, A::Error> {
                Vec::<Scalar>::deserialize(SeqAccessDeserializer::new(seq)).map(Scalars)
            }
        }
        d.deserialize_any(V)
    }
}

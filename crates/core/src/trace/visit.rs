//! The serde visitors of a trace row: hot fields go straight into typed values and the id arena
//! without a `serde_json::Value` tree; a field of the wrong type records which field and why in
//! [`Ctx`], so the error reads `field 'input_length': expected an integer, found "abc"`.

use std::cell::RefCell;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use super::model::Number;
use super::raw::{FieldError, RawRow, describe};

/// Where a field-level failure is recorded while serde unwinds.
#[derive(Default)]
pub(super) struct Ctx {
    pub(super) failure: RefCell<Option<FieldError>>,
}

impl Ctx {
    pub(super) fn fail<E: de::Error>(&self, field: impl Into<String>, reason: impl Into<String>) -> E {
        let (field, reason) = (field.into(), reason.into());
        let msg = format!("field '{field}': {reason}");
        self.failure.borrow_mut().get_or_insert((Some(field), reason));
        E::custom(msg)
    }
}

/// Reads one row's fields into a [`RawRow`], its hash ids into `ids` (the trace's arena).
pub(super) struct RowVisitor<'a> {
    pub(super) ctx: &'a Ctx,
    pub(super) ids: &'a mut Vec<u64>,
}

impl<'de> Visitor<'de> for RowVisitor<'_> {
    type Value = Option<RawRow>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let ctx = self.ctx;
        let mut raw = RawRow::default();
        let mut seen: u32 = 0;
        while let Some(key) = map.next_key_seed(KeySeed)? {
            let name = match &key {
                Key::Known(i) => {
                    if seen & (1 << i) != 0 {
                        return Err(ctx.fail(KNOWN[*i], "appears twice in the row"));
                    }
                    seen |= 1 << i;
                    KNOWN[*i]
                }
                Key::Unknown(_) => "",
            };
            match name {
                "input_length" => {
                    raw.input_length =
                        map.next_value_seed(IntSeed { ctx, field: "input_length", signed: true })?.map(|v| v as i64)
                }
                "output_length" => {
                    raw.output_length =
                        map.next_value_seed(IntSeed { ctx, field: "output_length", signed: false })?.map(|v| v as u64)
                }
                "hash_ids" => raw.hash_ids_present = map.next_value_seed(IdsSeed { ctx, ids: &mut *self.ids })?,
                "timestamp" => raw.timestamp = map.next_value_seed(NumberSeed { ctx, field: "timestamp" })?,
                "delay" => raw.delay = map.next_value_seed(NumberSeed { ctx, field: "delay" })?,
                "session_id" => raw.session_id = map.next_value_seed(StringSeed { ctx, field: "session_id" })?,
                "conversation_id" => {
                    raw.conversation_id = map.next_value_seed(StringSeed { ctx, field: "conversation_id" })?
                }
                "text_input" => raw.text_input = map.next_value_seed(StringSeed { ctx, field: "text_input" })?,
                "messages" => raw.messages = value_list(ctx, "messages", map.next_value()?)?,
                "tools" => raw.tools = value_list(ctx, "tools", map.next_value()?)?,
                "payload" => raw.payload = value_object(ctx, "payload", map.next_value()?)?,
                "extra" => raw.extra = value_object(ctx, "extra", map.next_value()?)?,
                _ => {
                    let Key::Unknown(key) = key else { unreachable!("every known key is matched above") };
                    let value: Value = map.next_value()?;
                    if raw.unknown.iter().any(|(k, _)| *k == key) {
                        return Err(ctx.fail(key, "appears twice in the row"));
                    }
                    raw.unknown.push((key, value));
                }
            }
        }
        Ok(Some(raw))
    }

    // Any other JSON value is a well-formed line that is not a row.
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<de::IgnoredAny>()?.is_some() {}
        Ok(None)
    }
}

/// An object key: one of the format's fields (index into [`KNOWN`]) or anything else.
enum Key {
    Known(usize),
    Unknown(String),
}

struct KeySeed;

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = Key;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Key, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeySeed {
    type Value = Key;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a field name")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Key, E> {
        Ok(KNOWN.iter().position(|k| *k == v).map_or_else(|| Key::Unknown(v.to_owned()), Key::Known))
    }
}

const KNOWN: [&str; 12] = [
    "input_length",
    "output_length",
    "hash_ids",
    "timestamp",
    "delay",
    "session_id",
    "text_input",
    "messages",
    "tools",
    "payload",
    "extra",
    "conversation_id",
];

fn value_list<E: de::Error>(ctx: &Ctx, field: &str, v: Value) -> Result<Option<Vec<Value>>, E> {
    match v {
        Value::Null => Ok(None),
        Value::Array(a) => Ok(Some(a)),
        other => Err(ctx.fail(field, format!("expected a list, found {}", describe(&other)))),
    }
}

fn value_object<E: de::Error>(ctx: &Ctx, field: &str, v: Value) -> Result<Option<Map<String, Value>>, E> {
    match v {
        Value::Null => Ok(None),
        Value::Object(o) => Ok(Some(o)),
        other => Err(ctx.fail(field, format!("expected an object, found {}", describe(&other)))),
    }
}

/// Rejects any JSON value with `found <description>`; the typed visitors below call it for the
/// value types they do not accept.
macro_rules! reject_others {
    ($($method:ident($ty:ty) => $desc:expr;)*) => {
        $(fn $method<E: de::Error>(self, v: $ty) -> Result<Self::Value, E> {
            let _ = &v;
            Err(self.ctx.fail(self.field_name(), format!("{}, found {}", self.expected(), $desc(v))))
        })*
    };
}

/// Rejects lists and objects for a scalar field.
macro_rules! reject_containers {
    () => {
        fn visit_seq<A: SeqAccess<'de>>(self, _: A) -> Result<Self::Value, A::Error> {
            Err(self.ctx.fail(self.field_name(), format!("{}, found a list", self.expected())))
        }
        fn visit_map<A: MapAccess<'de>>(self, _: A) -> Result<Self::Value, A::Error> {
            Err(self.ctx.fail(self.field_name(), format!("{}, found an object", self.expected())))
        }
    };
}

/// The rest of a number field's visitor: `null` is the field left out; strings, booleans, lists
/// and objects are refused with what was expected and what was found.
macro_rules! numeric_field_rest {
    () => {
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        reject_others! {
            visit_str(&str) => quoted;
            visit_bool(bool) => |b: bool| b.to_string();
        }
        reject_containers!();
    };
}

/// A seed for one scalar field: the struct (the context and the field's name), the name and
/// expectation used in messages, and its `DeserializeSeed`; the caller writes the `Visitor`.
macro_rules! field_seed {
    ($(#[$doc:meta])* $name:ident -> $value:ty, $expected:literal) => {
        $(#[$doc])*
        struct $name<'a> {
            ctx: &'a Ctx,
            field: &'static str,
        }

        impl $name<'_> {
            fn field_name(&self) -> &'static str {
                self.field
            }
            fn expected(&self) -> &'static str {
                $expected
            }
        }

        impl<'de> DeserializeSeed<'de> for $name<'_> {
            type Value = $value;
            fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
                d.deserialize_any(self)
            }
        }
    };
}

fn quoted(s: &str) -> String {
    describe(&Value::String(s.to_owned()))
}

/// An integer field (`input_length` signed, `output_length` non-negative); whole floats accepted.
struct IntSeed<'a> {
    ctx: &'a Ctx,
    field: &'static str,
    signed: bool,
}

impl IntSeed<'_> {
    fn field_name(&self) -> &'static str {
        self.field
    }
    fn expected(&self) -> &'static str {
        if self.signed { "expected an integer" } else { "expected a non-negative integer" }
    }
    fn check(self, v: i128) -> Result<Option<i128>, String> {
        let ok = if self.signed { i64::try_from(v).is_ok() } else { u64::try_from(v).is_ok() };
        if ok { Ok(Some(v)) } else { Err(format!("{}, found {v}", self.expected())) }
    }
}

impl<'de> DeserializeSeed<'de> for IntSeed<'_> {
    type Value = Option<i128>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for IntSeed<'_> {
    type Value = Option<i128>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(self.expected())
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        let (ctx, field) = (self.ctx, self.field);
        self.check(v.into()).map_err(|r| ctx.fail(field, r))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        let (ctx, field) = (self.ctx, self.field);
        self.check(v.into()).map_err(|r| ctx.fail(field, r))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        // Pydantic (the reference) accepts floats with no fractional part as integers.
        if v.fract() == 0.0 && v.abs() < 9.0e15 {
            let (ctx, field) = (self.ctx, self.field);
            return self.check(v as i128).map_err(|r| ctx.fail(field, r));
        }
        Err(self.ctx.fail(self.field, format!("{}, found {v}", self.expected())))
    }
    numeric_field_rest!();
}

field_seed! {
    /// A number field (`timestamp`, `delay`), integer or float.
    NumberSeed -> Option<Number>, "expected a number of milliseconds"
}

impl<'de> Visitor<'de> for NumberSeed<'_> {
    type Value = Option<Number>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(self.expected())
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        Ok(Some(i64::try_from(v).map_or(Number::Float(v as f64), Number::Int)))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        Ok(Some(Number::Int(v)))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        Ok(Some(Number::Float(v)))
    }
    numeric_field_rest!();
}

field_seed! {
    /// A string field (`session_id`, `text_input`).
    StringSeed -> Option<String>, "expected a string"
}

impl<'de> Visitor<'de> for StringSeed<'_> {
    type Value = Option<String>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(self.expected())
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Some(v.to_owned()))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
        Ok(Some(v))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    reject_others! {
        visit_u64(u64) => |v: u64| v.to_string();
        visit_i64(i64) => |v: i64| v.to_string();
        visit_f64(f64) => |v: f64| v.to_string();
        visit_bool(bool) => |b: bool| b.to_string();
    }
    reject_containers!();
}

/// `hash_ids`: a list of unsigned integers, pushed straight into the arena.
/// Yields whether the field was present (not null).
struct IdsSeed<'a> {
    ctx: &'a Ctx,
    ids: &'a mut Vec<u64>,
}

impl<'de> DeserializeSeed<'de> for IdsSeed<'_> {
    type Value = bool;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for IdsSeed<'_> {
    type Value = bool;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of unsigned integers")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut i = 0usize;
        while let Some(id) = seq.next_element_seed(IdSeed { ctx: self.ctx, index: i })? {
            self.ids.push(id);
            i += 1;
        }
        Ok(true)
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(false)
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Err(self.ctx.fail("hash_ids", format!("expected a list of unsigned integers, found {}", quoted(v))))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        Err(self.ctx.fail("hash_ids", format!("expected a list of unsigned integers, found {v}")))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        Err(self.ctx.fail("hash_ids", format!("expected a list of unsigned integers, found {v}")))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        Err(self.ctx.fail("hash_ids", format!("expected a list of unsigned integers, found {v}")))
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
        Err(self.ctx.fail("hash_ids", format!("expected a list of unsigned integers, found {v}")))
    }
    fn visit_map<A: MapAccess<'de>>(self, _: A) -> Result<Self::Value, A::Error> {
        Err(self.ctx.fail("hash_ids", "expected a list of unsigned integers, found an object"))
    }
}

struct IdSeed<'a> {
    ctx: &'a Ctx,
    index: usize,
}

impl IdSeed<'_> {
    fn bad<E: de::Error>(&self, found: String) -> E {
        self.ctx.fail(format!("hash_ids[{}]", self.index), format!("expected an unsigned integer, found {found}"))
    }
}

impl<'de> DeserializeSeed<'de> for IdSeed<'_> {
    type Value = u64;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for IdSeed<'_> {
    type Value = u64;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an unsigned integer")
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<u64, E> {
        Ok(v)
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<u64, E> {
        u64::try_from(v).map_err(|_| self.bad(v.to_string()))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<u64, E> {
        if v.fract() == 0.0 && (0.0..9.0e15).contains(&v) { Ok(v as u64) } else { Err(self.bad(v.to_string())) }
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<u64, E> {
        Err(self.bad(quoted(v)))
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<u64, E> {
        Err(self.bad(v.to_string()))
    }
    fn visit_unit<E: de::Error>(self) -> Result<u64, E> {
        Err(self.bad("null".into()))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, _: A) -> Result<u64, A::Error> {
        Err(self.bad("a list".into()))
    }
    fn visit_map<A: MapAccess<'de>>(self, _: A) -> Result<u64, A::Error> {
        Err(self.bad("an object".into()))
    }
}

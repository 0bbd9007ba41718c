//! I4's prediction (R6, R7): the whole error list of an invalid input, worked out from the
//! oracle's own reading of the argument text, of the tool's published schema and of the
//! SPEC — never from ward's validator. I4 then compares the runtime's list with the first
//! [`FIELD_ERRORS_MAX`](crate::catalogue::FIELD_ERRORS_MAX) of these, element by element.
//!
//! # Reading the text (R6)
//!
//! Empty or all-white-space text is `{}`. Text that is not JSON is one error at `/`:
//! `is not valid JSON: <the parser's reason> (line L, column C)`, where `L` and `C` are where
//! `serde_json` stops reading (1-based; a column counts bytes); the reason is the parser's
//! own (its `Display` without ` at line L column C`), one of the reasons listed below, and
//! only its position is predicted. An object that repeats a key is one error at that
//! object's path: `repeats a key (line L, column C)`, at the position just past the repeated
//! key (the first repetition the reading meets), in text that is JSON all through: R6 names
//! a repeat of JSON, and a path must point into the input. Text that repeats a key and then
//! stops being JSON is text that is not JSON, at the position where a reading that passes
//! over repeats stops.
//!
//! # The documented order
//!
//! The input's values are visited in pre-order: object members in key order, byte-wise,
//! array items by index. At each value its own errors come first, in the order of the table
//! below (one error per missing `required` property, in the schema's order); then its members
//! or items. A member whose key the schema does not allow (`additionalProperties: false`) is
//! one error at `/<key>`, where that key stands among its siblings.
//!
//! Every list keeps this order, predicted or not: its paths never go back in the input's
//! pre-order, and two errors at one path never go back in the first table's order below (the
//! `const` row, whose `must be {value}` other rows' messages could also read as, ranks none;
//! nor do the second table's rows, which the core ranks after the first's).
//!
//! # The wording
//!
//! The messages are the rows of [`super::wording`]'s tables: the structural keywords
//! ([`STRUCTURAL`](super::wording::STRUCTURAL)), which are predicted; every other keyword
//! ([`OTHER`](super::wording::OTHER)), whose messages are only checked to be one of the
//! table's; and the parser's reasons ([`REASONS`](super::wording::REASONS)).
//!
//! The same tables stand in the core's validation docs (`core/src/validation/mod.rs`); a test
//! fails when the two differ, and I4 fails when the core's messages differ from these. A schema that uses a keyword outside the first table (apart from annotations
//! such as `title` and `description`) or several types in `type` is not predicted (an `enum`
//! of no value or of more than 16 is, by the second table's rows): I4 then checks only the
//! rules every list obeys (1 to 5 errors, the prefix, paths, the documented order, no echo),
//! and the campaign counts the input as not predicted.

use std::cmp::Ordering;
use std::fmt::{self, Write as _};

use regex::Regex;

use super::wording;
use crate::catalogue::Patterns;
use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

/// One predicted field error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Expected {
    /// The JSON Pointer, the root written `/`.
    pub path: String,
    /// What the message must be.
    pub message: Wording,
}

/// What a predicted message must be.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Wording {
    /// This text exactly.
    Exact(String),
    /// `is not valid JSON: <any reason> (line L, column C)`.
    NotJson {
        /// The line.
        line: usize,
        /// The column.
        column: usize,
    },
}

impl Wording {
    /// Whether `message` has this wording.
    pub fn matches(&self, message: &str) -> bool {
        match self {
            Wording::Exact(text) => message == text,
            Wording::NotJson { line, column } => message
                .strip_prefix(NOT_JSON)
                .and_then(|rest| rest.strip_suffix(&format!(" (line {line}, column {column})")))
                .is_some_and(is_reason),
        }
    }
}

/// Whether `reason` is one of the parser's reasons of the module docs' table.
fn is_reason(reason: &str) -> bool {
    static LISTED: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    LISTED
        .get_or_init(|| {
            (wording::REASONS.iter())
                .map(|(reason, _)| reason.trim_matches('`').trim().to_owned())
                .collect()
        })
        .iter()
        .any(|documented| documented == reason)
}

/// How `fields` (path and message) break the documented order over `input`, which every list
/// keeps, predicted or not: the first error that goes back in the input's pre-order, or in
/// the first table's order at one path. A path that names no value of the input (one guarded
/// by R22 names a key with a secret in it) has no known place and is passed over.
pub(crate) fn out_of_order<'f>(
    input: &Value,
    fields: impl IntoIterator<Item = (&'f str, &'f str)>,
) -> Option<String> {
    let mut last: Option<(&str, &str, Option<usize>)> = None;
    for (path, message) in fields {
        let pointer = if path == "/" { "" } else { path };
        if input.pointer(pointer).is_none() {
            continue;
        }
        let rank = table_rank(message);
        if let Some((before, before_pointer, before_rank)) = last {
            let back = match preorder(input, pointer, before_pointer) {
                Some(Ordering::Less) => true,
                Some(Ordering::Equal) => rank.zip(before_rank).is_some_and(|(r, b)| r < b),
                Some(Ordering::Greater) | None => false,
            };
            if back {
                return Some(format!(
                    "`{path}: {message}` comes after `{before}`, against the documented order"
                ));
            }
        }
        last = Some((path, pointer, rank));
    }
    None
}

/// Where the value at pointer `a` stands against the one at `b` in `input`'s pre-order
/// (members in key order, byte-wise; items by index; a value before its members and items),
/// for two pointers that name values of `input` (the root the empty string); `None` when a
/// segment does not read as its container's.
fn preorder(input: &Value, a: &str, b: &str) -> Option<Ordering> {
    let unescaped = |segment: &str| segment.replace("~1", "/").replace("~0", "~");
    let (mut left, mut right) = (a.split('/').skip(1), b.split('/').skip(1));
    let mut container = input;
    loop {
        let (x, y) = match (left.next(), right.next()) {
            (None, None) => return Some(Ordering::Equal),
            (None, Some(_)) => return Some(Ordering::Less),
            (Some(_), None) => return Some(Ordering::Greater),
            (Some(x), Some(y)) => (unescaped(x), unescaped(y)),
        };
        container = match container {
            Value::Array(items) => {
                let (x, y) = (x.parse::<usize>().ok()?, y.parse::<usize>().ok()?);
                if x != y {
                    return Some(x.cmp(&y));
                }
                items.get(x)?
            }
            Value::Object(members) => {
                if x != y {
                    return Some(x.cmp(&y));
                }
                members.get(&x)?
            }
            _ => return None,
        };
    }
}

/// The row of the first wording table whose wording `message` has, `const`'s passed over;
/// `None` for a message of no other row.
fn table_rank(message: &str) -> Option<usize> {
    static ROWS: std::sync::OnceLock<Vec<(usize, Vec<Regex>)>> = std::sync::OnceLock::new();
    ROWS.get_or_init(|| {
        (wording::STRUCTURAL.iter())
            .enumerate()
            .filter(|(_, (keyword, _))| *keyword != "`const`")
            .map(|(rank, (_, cell))| {
                let templates = templates_of(cell)
                    .iter()
                    .filter_map(|template| Regex::new(template).ok())
                    .collect();
                (rank, templates)
            })
            .collect()
    })
    .iter()
    .find(|(_, templates)| templates.iter().any(|template| template.is_match(message)))
    .map(|(rank, _)| *rank)
}

impl fmt::Display for Expected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.message {
            Wording::Exact(text) => write!(f, "{}: {text}", self.path),
            Wording::NotJson { line, column } => write!(
                f,
                "{}: {NOT_JSON}<one of the parser's reasons> (line {line}, column {column})",
                self.path
            ),
        }
    }
}

const NOT_JSON: &str = "is not valid JSON: ";

/// The whole error list of `arguments` under `schema` in the documented order, or `None`
/// when the schema is outside what this module predicts. Empty for a valid input.
pub(crate) fn predict(
    arguments: &str,
    schema: &Value,
    patterns: &Patterns,
) -> Option<Vec<Expected>> {
    let value = match read(arguments) {
        Ok(value) => value,
        Err(expected) => return Some(vec![expected]),
    };
    let mut errors = Vec::new();
    let mut path = String::new();
    Walk {
        patterns,
        errors: &mut errors,
    }
    .value(schema, &value, &mut path)?;
    Some(errors)
}

/// The argument text as R6 reads it, or its one error.
fn read(arguments: &str) -> Result<Value, Expected> {
    if arguments.trim().is_empty() {
        return Ok(Value::Object(Map::new()));
    }
    let mut repeated = None;
    let mut path = String::new();
    let mut deserializer = serde_json::Deserializer::from_str(arguments);
    let read = Reading {
        path: &mut path,
        repeated: &mut repeated,
    }
    .deserialize(&mut deserializer)
    .and_then(|value| deserializer.end().map(|()| value));
    read.map_err(|error| {
        let not_json = |error: &serde_json::Error| Expected {
            path: "/".to_owned(),
            message: Wording::NotJson {
                line: error.line(),
                column: error.column(),
            },
        };
        let Some((at, _)) = repeated else {
            return not_json(&error);
        };
        // serde_json's own reading keeps the last of repeated keys and reads on.
        if let Err(error) = serde_json::from_str::<Value>(arguments) {
            return not_json(&error);
        }
        let (line, column) = (error.line(), error.column());
        Expected {
            path: root_written(at),
            message: Wording::Exact(format!("repeats a key (line {line}, column {column})")),
        }
    })
}

/// Why R6 refuses `arguments` before any schema is read, if it does: its text is not JSON
/// (the parser's reason and position), or an object repeats a key (the object's path and the
/// key, and the position). `None` for text R6 reads.
pub(crate) fn unread(arguments: &str) -> Option<String> {
    if arguments.trim().is_empty() {
        return None;
    }
    let mut repeated = None;
    let mut path = String::new();
    let mut deserializer = serde_json::Deserializer::from_str(arguments);
    let error = Reading {
        path: &mut path,
        repeated: &mut repeated,
    }
    .deserialize(&mut deserializer)
    .and_then(|_| deserializer.end())
    .err()?;
    let position =
        |error: &serde_json::Error| format!("(line {}, column {})", error.line(), error.column());
    if let (Some((at, key)), Ok(_)) = (repeated, serde_json::from_str::<Value>(arguments)) {
        return Some(format!(
            "the object at {} repeats the key {key:?} {} (R6)",
            root_written(at),
            position(&error)
        ));
    }
    let error = serde_json::from_str::<Value>(arguments)
        .err()
        .unwrap_or(error);
    Some(format!("its text is not JSON {} (R6)", position(&error)))
}

fn root_written(pointer: String) -> String {
    if pointer.is_empty() {
        "/".to_owned()
    } else {
        pointer
    }
}

/// Appends one JSON Pointer segment (RFC 6901: `~` is `~0`, `/` is `~1`).
fn push_segment(pointer: &mut String, segment: &str) {
    pointer.push('/');
    pointer.push_str(&segment.replace('~', "~0").replace('/', "~1"));
}

/// A reading that keeps the path of the value being read and stops at a repeated key,
/// noting the path of its object and the key.
struct Reading<'r> {
    path: &'r mut String,
    repeated: &'r mut Option<(String, String)>,
}

impl<'de> DeserializeSeed<'de> for Reading<'_> {
    type Value = Value;
    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Reading<'_> {
    type Value = Value;
    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("JSON")
    }
    fn visit_bool<E>(self, value: bool) -> Result<Value, E> {
        Ok(Value::Bool(value))
    }
    fn visit_i64<E>(self, value: i64) -> Result<Value, E> {
        Ok(value.into())
    }
    fn visit_u64<E>(self, value: u64) -> Result<Value, E> {
        Ok(value.into())
    }
    fn visit_f64<E>(self, value: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(value).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E>(self, value: &str) -> Result<Value, E> {
        Ok(Value::String(value.to_owned()))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut items: A) -> Result<Value, A::Error> {
        let mut array = Vec::new();
        loop {
            let length = self.path.len();
            let _ = write!(self.path, "/{}", array.len());
            let item = items.next_element_seed(Reading {
                path: self.path,
                repeated: self.repeated,
            })?;
            self.path.truncate(length);
            match item {
                Some(item) => array.push(item),
                None => return Ok(Value::Array(array)),
            }
        }
    }
    fn visit_map<A: MapAccess<'de>>(self, mut members: A) -> Result<Value, A::Error> {
        let mut object = Map::new();
        while let Some(key) = members.next_key::<String>()? {
            if object.contains_key(&key) {
                *self.repeated = Some((self.path.clone(), key));
                return Err(de::Error::custom("a key repeats"));
            }
            let length = self.path.len();
            push_segment(self.path, &key);
            let value = members.next_value_seed(Reading {
                path: self.path,
                repeated: self.repeated,
            })?;
            self.path.truncate(length);
            object.insert(key, value);
        }
        Ok(Value::Object(object))
    }
}

/// Keywords that carry no rule.
const ANNOTATIONS: &[&str] = &[
    "title",
    "description",
    "default",
    "examples",
    "$comment",
    "deprecated",
    "readOnly",
    "writeOnly",
    "$schema",
];

/// The keywords of the wording table, in its order, with the members and items keywords.
const PREDICTED: &[&str] = &[
    "type",
    "const",
    "enum",
    "minLength",
    "maxLength",
    "pattern",
    "minimum",
    "exclusiveMinimum",
    "maximum",
    "exclusiveMaximum",
    "minItems",
    "maxItems",
    "uniqueItems",
    "minProperties",
    "maxProperties",
    "required",
    "properties",
    "additionalProperties",
    "items",
];

const ENUM_LISTED_MAX: usize = 16;

/// A number bound: its keyword, when a value breaks it, and the rule's words.
type Bound = (&'static str, fn(f64, f64) -> bool, &'static str);

struct Walk<'w> {
    patterns: &'w Patterns,
    errors: &'w mut Vec<Expected>,
}

impl Walk<'_> {
    fn error(&mut self, path: &str, message: String) {
        self.errors.push(Expected {
            path: if path.is_empty() {
                "/".to_owned()
            } else {
                path.to_owned()
            },
            message: Wording::Exact(message),
        });
    }

    /// The errors of `value` under `schema` at `path`, in the documented order; `None` when
    /// the schema is outside the table.
    fn value(&mut self, schema: &Value, value: &Value, path: &mut String) -> Option<()> {
        let schema = match schema {
            Value::Bool(true) => return Some(()),
            Value::Object(schema) => schema,
            _ => return None,
        };
        if schema.keys().any(|keyword| {
            !PREDICTED.contains(&keyword.as_str()) && !ANNOTATIONS.contains(&keyword.as_str())
        }) {
            return None;
        }
        self.kind(schema, value, path)?;
        match value {
            Value::String(text) => self.string(schema, text, path)?,
            Value::Number(number) => self.number(schema, number.as_f64()?, path)?,
            Value::Array(items) => {
                self.array(schema, items, path)?;
                self.items(schema, items, path)?;
            }
            Value::Object(members) => self.object(schema, members, path)?,
            Value::Null | Value::Bool(_) => {}
        }
        Some(())
    }

    /// `type`, `const` and `enum`: the rows every value has.
    fn kind(&mut self, schema: &Map<String, Value>, value: &Value, path: &str) -> Option<()> {
        if let Some(kind) = schema.get("type") {
            let kind = kind.as_str()?;
            if !is_of_type(value, kind)? {
                self.error(path, format!("must be {}", with_article(kind)));
            }
        }
        if let Some(constant) = schema.get("const")
            && !same(constant, value)
        {
            self.error(path, format!("must be {}", written(constant)));
        }
        if let Some(allowed) = schema.get("enum") {
            let allowed = allowed.as_array()?;
            if !allowed.iter().any(|option| same(option, value)) {
                let message = match allowed.len() {
                    0 => "is not allowed".to_owned(),
                    1..=ENUM_LISTED_MAX => {
                        let listed: Vec<String> = allowed.iter().map(written).collect();
                        format!("must be one of: {}", listed.join(", "))
                    }
                    _ => "must be one of the allowed values".to_owned(),
                };
                self.error(path, message);
            }
        }
        Some(())
    }

    /// A string's rows: `minLength`, `maxLength` (in characters), `pattern`.
    fn string(&mut self, schema: &Map<String, Value>, text: &str, path: &str) -> Option<()> {
        let characters = text.chars().count() as u64;
        if let Some(limit) = schema.get("minLength") {
            let limit = limit.as_u64()?;
            if characters < limit {
                let message = format!("must be at least {limit} character{} long", s(limit));
                self.error(path, message);
            }
        }
        if let Some(limit) = schema.get("maxLength") {
            let limit = limit.as_u64()?;
            if characters > limit {
                let message = format!("must be at most {limit} character{} long", s(limit));
                self.error(path, message);
            }
        }
        if let Some(pattern) = schema.get("pattern") {
            let pattern = pattern.as_str()?;
            if !self.patterns.get(pattern)?.is_match(text) {
                self.error(path, format!("must match the pattern {pattern}"));
            }
        }
        Some(())
    }

    /// A number's rows: the four bounds, in the table's order.
    fn number(&mut self, schema: &Map<String, Value>, number: f64, path: &str) -> Option<()> {
        let checks: [Bound; 4] = [
            ("minimum", |v, l| v < l, "must be at least"),
            ("exclusiveMinimum", |v, l| v <= l, "must be greater than"),
            ("maximum", |v, l| v > l, "must be at most"),
            ("exclusiveMaximum", |v, l| v >= l, "must be less than"),
        ];
        for (keyword, fails, rule) in checks {
            if let Some(limit) = schema.get(keyword)
                && fails(number, limit.as_f64()?)
            {
                self.error(path, format!("{rule} {limit}"));
            }
        }
        Some(())
    }

    /// An array's own rows: `minItems`, `maxItems`, `uniqueItems`.
    fn array(&mut self, schema: &Map<String, Value>, items: &[Value], path: &str) -> Option<()> {
        let count = items.len() as u64;
        if let Some(limit) = schema.get("minItems") {
            let limit = limit.as_u64()?;
            if count < limit {
                self.error(path, format!("must have at least {limit} item{}", s(limit)));
            }
        }
        if let Some(limit) = schema.get("maxItems") {
            let limit = limit.as_u64()?;
            if count > limit {
                self.error(path, format!("must have at most {limit} item{}", s(limit)));
            }
        }
        let repeats = || {
            (items.iter().enumerate())
                .any(|(at, item)| items[..at].iter().any(|earlier| same(earlier, item)))
        };
        if schema.get("uniqueItems").and_then(Value::as_bool) == Some(true) && repeats() {
            self.error(path, "must not contain duplicate items".to_owned());
        }
        Some(())
    }

    /// An array's items, each under `items`, by index.
    fn items(
        &mut self,
        schema: &Map<String, Value>,
        items: &[Value],
        path: &mut String,
    ) -> Option<()> {
        let Some(sub_schema) = schema.get("items") else {
            return Some(());
        };
        for (index, item) in items.iter().enumerate() {
            let length = path.len();
            let _ = write!(path, "/{index}");
            self.value(sub_schema, item, path)?;
            path.truncate(length);
        }
        Some(())
    }

    /// An object's own rows (`minProperties`, `maxProperties`, `required`), then its members
    /// in key order, each under its `properties` schema or `additionalProperties`.
    fn object(
        &mut self,
        schema: &Map<String, Value>,
        members: &Map<String, Value>,
        path: &mut String,
    ) -> Option<()> {
        let count = members.len() as u64;
        if let Some(limit) = schema.get("minProperties") {
            let limit = limit.as_u64()?;
            if count < limit {
                self.error(
                    path,
                    format!("must have at least {limit} propert{}", y(limit)),
                );
            }
        }
        if let Some(limit) = schema.get("maxProperties") {
            let limit = limit.as_u64()?;
            if count > limit {
                self.error(
                    path,
                    format!("must have at most {limit} propert{}", y(limit)),
                );
            }
        }
        if let Some(required) = schema.get("required") {
            for name in required.as_array()? {
                let name = name.as_str()?;
                if !members.contains_key(name) {
                    self.error(path, format!("missing required property '{name}'"));
                }
            }
        }
        let declared = match schema.get("properties") {
            Some(declared) => Some(declared.as_object()?),
            None => None,
        };
        let additional = schema.get("additionalProperties");
        for (key, member) in members {
            let length = path.len();
            push_segment(path, key);
            match (declared.and_then(|declared| declared.get(key)), additional) {
                (Some(sub_schema), _) => self.value(sub_schema, member, path)?,
                (None, Some(Value::Bool(false))) => {
                    self.error(path, "is not an allowed property".to_owned());
                }
                (None, Some(sub_schema)) => self.value(sub_schema, member, path)?,
                (None, None) => {}
            }
            path.truncate(length);
        }
        Some(())
    }
}

/// Whether `value` is of the JSON Schema type `kind` (`None`: not a type name). An integer is
/// a number without a fractional part, `1.0` included.
fn is_of_type(value: &Value, kind: &str) -> Option<bool> {
    Some(match kind {
        "null" => value.is_null(),
        "boolean" => value.is_boolean(),
        "string" => value.is_string(),
        "array" => value.is_array(),
        "object" => value.is_object(),
        "number" => value.is_number(),
        "integer" => match value {
            Value::Number(number) => {
                number.is_i64()
                    || number.is_u64()
                    || number.as_f64().is_some_and(|float| float.fract() == 0.0)
            }
            _ => false,
        },
        _ => return None,
    })
}

fn with_article(kind: &str) -> String {
    match kind {
        "null" => "null".to_owned(),
        "integer" | "object" | "array" => format!("an {kind}"),
        _ => format!("a {kind}"),
    }
}

/// JSON Schema's equality: numbers by value (`1` is `1.0`), objects by members.
fn same(left: &Value, right: &Value) -> bool {
    match (left, right) {
        (Value::Number(left), Value::Number(right)) => {
            match (left.as_i64(), right.as_i64(), left.as_u64(), right.as_u64()) {
                (Some(left), Some(right), _, _) => left == right,
                (_, _, Some(left), Some(right)) => left == right,
                _ => left.as_f64() == right.as_f64(),
            }
        }
        (Value::Array(left), Value::Array(right)) => {
            left.len() == right.len() && left.iter().zip(right).all(|(l, r)| same(l, r))
        }
        (Value::Object(left), Value::Object(right)) => {
            left.len() == right.len()
                && left
                    .iter()
                    .all(|(key, member)| right.get(key).is_some_and(|other| same(member, other)))
        }
        _ => left == right,
    }
}

/// A schema value in a message: a string bare, anything else as JSON.
fn written(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

fn s(count: u64) -> &'static str {
    if count == 1 { "" } else { "s" }
}

fn y(count: u64) -> &'static str {
    if count == 1 { "y" } else { "ies" }
}

/// Whether `message` has the wording of a row of this module's tables (placeholders stand for
/// anything): what a message of a keyword outside the structural set must be.
pub(crate) fn is_documented(message: &str) -> bool {
    static TEMPLATES: std::sync::OnceLock<Vec<Regex>> = std::sync::OnceLock::new();
    TEMPLATES
        .get_or_init(|| {
            let rows = wording::STRUCTURAL.iter().chain(wording::OTHER);
            rows.flat_map(|(_, message)| templates_of(message))
                .filter_map(|template| Regex::new(&template).ok())
                .collect()
        })
        .iter()
        .any(|template| template.is_match(message))
}

/// The anchored patterns of a table cell: each code span is one message (`must be …` shared by
/// the type row's alternatives), `{s}` and `{y}` their plural endings, any other placeholder
/// any text.
fn templates_of(cell: &str) -> Vec<String> {
    let spans: Vec<&str> = cell.split('`').skip(1).step_by(2).collect();
    spans
        .iter()
        .map(|span| {
            let span = if span.starts_with("must ")
                || span.starts_with("is ")
                || span.starts_with("missing ")
                || span.starts_with("has ")
                || span.starts_with("could ")
            {
                (*span).to_owned()
            } else {
                format!("must be {span}")
            };
            let mut pattern = String::from("^");
            let mut rest = span.as_str();
            while let Some(open) = rest.find('{') {
                pattern.push_str(&regex::escape(&rest[..open]));
                let close = rest[open..].find('}').map_or(rest.len(), |at| open + at);
                pattern.push_str(match &rest[open..=close.min(rest.len() - 1)] {
                    "{s}" => "s?",
                    "{y}" => "(?:y|ies)",
                    _ => ".+",
                });
                rest = &rest[(close + 1).min(rest.len())..];
            }
            pattern.push_str(&regex::escape(rest));
            pattern.push('$');
            pattern
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The rows of a wording table in a module's docs, between its `(begin, end)` markers:
    /// `(first cell, second cell)`, in order.
    fn wording_rows(source: &str, (begin, end): (&str, &str)) -> Vec<(String, String)> {
        let begin = source.find(begin);
        let end = source.find(end);
        let (Some(begin), Some(end)) = (begin, end) else {
            return Vec::new();
        };
        source[begin..end]
            .lines()
            .filter_map(|line| {
                let row = line.trim_start_matches("//!").trim();
                let cells: Vec<&str> = row.trim_matches('|').split(" | ").map(str::trim).collect();
                let header = row.starts_with("| keyword") || row.starts_with("| reason");
                (row.starts_with("| ") && !header && cells.len() == 2)
                    .then(|| (cells[0].to_owned(), cells[1].to_owned()))
            })
            .collect()
    }

    #[test]
    fn a_segment_is_escaped_as_rfc_6901_says() {
        let mut path = String::new();
        push_segment(&mut path, "a/b~c");
        push_segment(&mut path, "plain");
        assert_eq!(path, "/a~1b~0c/plain");
    }

    fn paths_and_messages(arguments: &str, schema: &Value) -> Vec<String> {
        let mut patterns = Patterns::default();
        patterns.add(schema);
        predict(arguments, schema, &patterns)
            .unwrap()
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn the_order_is_pre_order_with_each_values_own_errors_by_the_table() {
        let schema = json!({
            "type": "object",
            "additionalProperties": false,
            "minProperties": 5,
            "required": ["z", "a"],
            "properties": {
                "b": {"type": "array", "minItems": 4, "items": {"type": "integer", "maximum": 9}},
                "c": {"type": "string", "minLength": 2, "pattern": "^[a-z]+$"},
                "d": {"enum": ["x", "y"], "type": "string"}
            }
        });
        let listed = paths_and_messages(r#"{"d":5,"c":"É","b":[1,10,"q"],"a~/":1}"#, &schema);
        assert_eq!(
            listed,
            [
                "/: must have at least 5 properties",
                "/: missing required property 'z'",
                "/: missing required property 'a'",
                "/a~0~1: is not an allowed property",
                "/b: must have at least 4 items",
                "/b/1: must be at most 9",
                "/b/2: must be an integer",
                "/c: must be at least 2 characters long",
                "/c: must match the pattern ^[a-z]+$",
                "/d: must be a string",
                "/d: must be one of: x, y",
            ]
        );
    }

    #[test]
    fn text_that_is_not_json_or_repeats_a_key_is_one_error() {
        let schema = json!({"type": "object"});
        assert_eq!(paths_and_messages("  ", &schema), Vec::<String>::new());
        assert_eq!(
            paths_and_messages("{\"a\":\n [1, {\"b\": 1, \"b\": 2}]}", &schema),
            ["/a/1: repeats a key (line 2, column 17)"]
        );
        assert_eq!(
            paths_and_messages("{\"a\": tru}", &schema),
            ["/: is not valid JSON: <one of the parser's reasons> (line 1, column 10)"]
        );
        // A repeat, then text that is not JSON: not JSON, where the reading stops.
        assert_eq!(
            paths_and_messages("{\"a\": [{\"b\": 1, \"b\": 2}], \"c\": \"cut", &schema),
            ["/: is not valid JSON: <one of the parser's reasons> (line 1, column 35)"]
        );
        let wording = Wording::NotJson {
            line: 1,
            column: 10,
        };
        assert!(wording.matches("is not valid JSON: expected ident (line 1, column 10)"));
        assert!(wording.matches("is not valid JSON: expected `,` or `}` (line 1, column 10)"));
        assert!(!wording.matches("is not valid JSON: expected a key (line 1, column 10)"));
        assert!(!wording.matches("is not valid JSON:  (line 1, column 10)"));
        assert!(!wording.matches("is not valid JSON: expected ident (line 1, column 9)"));
    }

    #[test]
    fn numbers_compare_by_value_and_integers_may_be_written_with_a_point() {
        let schema = json!({"properties": {"n": {"type": "integer", "exclusiveMinimum": 0,
            "maximum": 1000000000.0, "const": 2}}});
        assert_eq!(
            paths_and_messages(r#"{"n": 2.0}"#, &schema),
            Vec::<String>::new()
        );
        assert_eq!(
            paths_and_messages(r#"{"n": 0.5}"#, &schema),
            ["/n: must be an integer", "/n: must be 2"]
        );
        assert_eq!(
            paths_and_messages(r#"{"n": 1e10}"#, &schema),
            ["/n: must be 2", "/n: must be at most 1000000000.0"]
        );
    }

    #[test]
    fn schemas_outside_the_table_are_not_predicted() {
        let patterns = Patterns::default();
        for schema in [
            json!({"anyOf": [{"type": "string"}]}),
            json!({"type": ["string", "null"]}),
            json!({"properties": {"a": {"multipleOf": 2}}}),
        ] {
            assert_eq!(predict(r#"{"a": 1}"#, &schema, &patterns), None, "{schema}");
        }
    }

    #[test]
    fn the_wording_tables_are_the_cores() {
        let cores = include_str!("../../../core/src/validation/mod.rs");
        let owned = |rows: &[(&str, &str)]| -> Vec<(String, String)> {
            (rows.iter())
                .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
                .collect()
        };
        for (rows, markers, count) in [
            (
                wording::STRUCTURAL,
                ("<!-- wording: begin -->", "<!-- wording: end -->"),
                17,
            ),
            (
                wording::OTHER,
                ("<!-- wording: other -->", "<!-- wording: end other -->"),
                21,
            ),
        ] {
            assert_eq!(rows.len(), count, "{markers:?}");
            assert_eq!(owned(rows), wording_rows(cores, markers), "{markers:?}");
        }
        let markers = ("<!-- wording: reasons -->", "<!-- wording: end reasons -->");
        let reasons: Vec<String> = wording_rows(cores, markers)
            .into_iter()
            .map(|(reason, _)| reason)
            .collect();
        assert_eq!(wording::REASONS.len(), 21);
        let ours: Vec<&str> = wording::REASONS.iter().map(|(reason, _)| *reason).collect();
        assert_eq!(ours, reasons);
    }

    #[test]
    fn text_r6_does_not_read_is_named_with_its_fault() {
        assert_eq!(unread(r#"{"a": 1}"#), None);
        assert_eq!(unread("  "), None);
        assert_eq!(
            unread(r#"{"q":[{"k":1,"k":2}]}"#).as_deref(),
            Some(r#"the object at /q/0 repeats the key "k" (line 1, column 16) (R6)"#)
        );
        // A repeat, then text that is not JSON: not JSON, where the reading stops.
        assert_eq!(
            unread(r#"{"k":1,"k":2"#).as_deref(),
            Some("its text is not JSON (line 1, column 12) (R6)")
        );
        assert_eq!(
            unread("{'k': 1}").as_deref(),
            Some("its text is not JSON (line 1, column 2) (R6)")
        );
    }

    #[test]
    fn the_order_is_checked_on_any_list() {
        let input = json!({"a": 1, "a~/b": 2, "list": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10]});
        let order = |fields: &[(&str, &str)]| out_of_order(&input, fields.iter().copied());
        // Pre-order: the root before its members, members in key order, items by index.
        let kept = [
            ("/", "missing required property 'z'"),
            ("/a", "must be a string"),
            ("/a", "must be at least 2"),
            ("/a~0~1b", "is not an allowed property"),
            ("/list/2", "must be a string"),
            ("/list/10", "must be a string"),
        ];
        assert_eq!(order(&kept), None);
        for broken in [
            [
                ("/a", "must be a string"),
                ("/", "must have at most 1 property"),
            ],
            [
                ("/list/10", "must be a string"),
                ("/list/2", "must be a string"),
            ],
            [("/a~0~1b", "must be a string"), ("/a", "must be a string")],
            [("/a", "must be at least 2"), ("/a", "must be a string")],
            [
                ("/a", "is not an allowed property"),
                ("/a", "must be at most 3"),
            ],
        ] {
            assert!(order(&broken).is_some(), "{broken:?}");
        }
        // Unranked messages and paths that name nothing are passed over.
        assert_eq!(
            order(&[("/a", "must be 3"), ("/a", "must be a string")]),
            None
        );
        assert_eq!(
            order(&[("/list/3", "must be a string"), ("/b/[REDACTED]", "x")]),
            None
        );
    }

    #[test]
    fn documented_messages_are_told_from_others() {
        for message in [
            "must be an integer",
            "must be null",
            "must have at most 1 property",
            "must have at least 3 items",
            "must match one of the allowed forms",
            "must be one of the types: string, null",
            "missing required property 'a'",
        ] {
            assert!(is_documented(message), "{message}");
        }
        for message in [
            "",
            "does not match",
            "must be",
            "must have at least 3 itemz",
            "xyzzy",
        ] {
            assert!(!is_documented(message), "{message}");
        }
    }
}

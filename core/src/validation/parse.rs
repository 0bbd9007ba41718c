//! The argument text to a [`Value`] (R6): empty or all-white-space text means `{}`; text that
//! is not JSON gives one error at `/` with the parser's line and column; an object that
//! repeats a key gives one error at that object's path. JSON Pointer segments are built here
//! too, for every path a field error names.

use std::fmt::{self, Write as _};

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use crate::envelope::FieldError;

/// Parses raw argument text (R6): empty text means `{}`; text that is not JSON gives one field
/// error at `/`, and JSON that repeats a key one at that object's path, each naming the line
/// and column.
///
/// A repeated key is named only in text that is JSON all through: R6's duplicate-key error is
/// for JSON with a duplicate key, and its path must point into the input, which text that is
/// not JSON has none of. So text that repeats a key and then stops being JSON is reported as
/// not JSON, at the position where reading it stops.
///
/// ```
/// use ward_core::validation::parse_arguments;
/// assert_eq!(parse_arguments("  ").unwrap(), serde_json::json!({}));
/// let error = parse_arguments(r#"{"a": 1, "a": 2}"#).unwrap_err();
/// assert_eq!(error.path, "/");
/// assert!(error.message.contains("repeats a key"));
/// let error = parse_arguments(r#"{"a": 1, "a": 2"#).unwrap_err();
/// assert!(error.message.starts_with("is not valid JSON"));
/// ```
pub fn parse_arguments(text: &str) -> Result<Value, FieldError> {
    if text.trim().is_empty() {
        return Ok(Value::Object(Map::new()));
    }
    // Valid text is parsed once, without keeping a path. Only text that repeats a key is
    // read again: through to its end, passing over repeats, to learn whether it is JSON at
    // all; if it is, once more keeping the path, to name the object where a key repeats.
    let mut state = ParseState::new(Repeats::Refuse, false);
    let parsed = parse_with(text, &mut state);
    if state.duplicate_at.is_none() {
        return parsed.map_err(|error| not_json(&error));
    }
    parse_with(text, &mut ParseState::new(Repeats::PassOver, false))
        .map_err(|error| not_json(&error))?;
    let mut state = ParseState::new(Repeats::Refuse, true);
    let error = match parse_with(text, &mut state) {
        Ok(value) => return Ok(value),
        Err(error) => error,
    };
    let (line, column) = (error.line(), error.column());
    Err(match state.duplicate_at {
        Some(path) => FieldError {
            path: display_path(&path).to_owned(),
            message: format!("repeats a key (line {line}, column {column})"),
        },
        None => not_json(&error),
    })
}

/// The one error of text that is not JSON, at `/`.
fn not_json(error: &serde_json::Error) -> FieldError {
    FieldError {
        path: "/".to_owned(),
        message: format!(
            "is not valid JSON: {} (line {}, column {})",
            parser_reason(error),
            error.line(),
            error.column()
        ),
    }
}

fn parse_with(text: &str, state: &mut ParseState) -> Result<Value, serde_json::Error> {
    let mut deserializer = serde_json::Deserializer::from_str(text);
    ValueSeed { state }
        .deserialize(&mut deserializer)
        .and_then(|value| deserializer.end().map(|()| value))
}

/// The parser's reason without its position suffix. serde_json's syntax messages describe
/// the grammar (`expected value`, `trailing characters`), never the input's content.
fn parser_reason(error: &serde_json::Error) -> String {
    let text = error.to_string();
    match text.rfind(" at line ") {
        Some(index) => text[..index].to_owned(),
        None => text,
    }
}

struct ParseState {
    /// JSON Pointer of the value being parsed; the root is the empty string.
    path: String,
    /// Set when an object repeats a key: that object's path (`/` unless paths are tracked).
    duplicate_at: Option<String>,
    /// Whether `path` is kept up to date.
    tracks_path: bool,
    /// What a repeated key does to the reading.
    repeats: Repeats,
}

impl ParseState {
    fn new(repeats: Repeats, tracks_path: bool) -> ParseState {
        ParseState {
            path: String::new(),
            duplicate_at: None,
            tracks_path,
            repeats,
        }
    }
}

/// What a repeated key does to the reading.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Repeats {
    /// It ends the reading with an error (and `duplicate_at` set).
    Refuse,
    /// It is read like any member (the later value kept), so that the reading goes on to
    /// the end of the text.
    PassOver,
}

struct ValueSeed<'s> {
    state: &'s mut ParseState,
}

impl<'de> DeserializeSeed<'de> for ValueSeed<'_> {
    type Value = Value;

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(ValueVisitor { state: self.state })
    }
}

struct ValueVisitor<'s> {
    state: &'s mut ParseState,
}

impl<'de> Visitor<'de> for ValueVisitor<'_> {
    type Value = Value;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a JSON value")
    }

    fn visit_bool<E>(self, value: bool) -> Result<Value, E> {
        Ok(Value::Bool(value))
    }

    fn visit_i64<E>(self, value: i64) -> Result<Value, E> {
        Ok(Value::from(value))
    }

    fn visit_u64<E>(self, value: u64) -> Result<Value, E> {
        Ok(Value::from(value))
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

    fn visit_seq<A: SeqAccess<'de>>(self, mut sequence: A) -> Result<Value, A::Error> {
        let mut items = Vec::with_capacity(sequence.size_hint().unwrap_or(0).min(4096));
        loop {
            let length = self.state.path.len();
            if self.state.tracks_path {
                let _ = write!(self.state.path, "/{}", items.len());
            }
            let item = sequence.next_element_seed(ValueSeed { state: self.state })?;
            self.state.path.truncate(length);
            match item {
                Some(item) => items.push(item),
                None => return Ok(Value::Array(items)),
            }
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Value, A::Error> {
        let mut map = Map::new();
        while let Some(key) = access.next_key::<String>()? {
            if self.state.repeats == Repeats::Refuse && map.contains_key(&key) {
                self.state.duplicate_at = Some(self.state.path.clone());
                return Err(de::Error::custom("duplicate key"));
            }
            let length = self.state.path.len();
            if self.state.tracks_path {
                push_pointer_segment(&mut self.state.path, &key);
            }
            let value = access.next_value_seed(ValueSeed { state: self.state })?;
            self.state.path.truncate(length);
            map.insert(key, value);
        }
        Ok(Value::Object(map))
    }
}

/// Appends `/<segment>` to a JSON Pointer, escaping `~` and `/` (RFC 6901).
pub fn push_pointer_segment(pointer: &mut String, segment: &str) {
    pointer.push('/');
    for character in segment.chars() {
        match character {
            '~' => pointer.push_str("~0"),
            '/' => pointer.push_str("~1"),
            other => pointer.push(other),
        }
    }
}

/// The root pointer is written `/` in field errors (R6).
pub(super) fn display_path(pointer: &str) -> &str {
    if pointer.is_empty() { "/" } else { pointer }
}

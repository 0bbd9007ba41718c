//! Input validation (SPEC §3, R5–R8).
//!
//! Every tool's `parameters` schema is compiled once, at registration, into a
//! [`ToolSchema`]: the `jsonschema` validator for the whole schema (the verdict), plus a tree
//! of validators for its object and array sub-schemas (the bounded error walk of R8).
//!
//! # Parsing (R6)
//!
//! [`parse_arguments`] turns the raw argument text into a [`Value`]: empty or all-white-space
//! text means `{}`; text that is not JSON gives one error at `/` with the parser's line and
//! column; an object that repeats a key gives one error at that object's path (parsers
//! disagree on which value wins, so ward refuses to guess).
//!
//! # Verdict and errors (R6–R8)
//!
//! The verdict is always `jsonschema`'s `is_valid` on the whole schema. Only an invalid input
//! pays for error reporting, and only for the first [`FIELD_ERRORS_MAX`] errors: the walk
//! skips every sub-tree whose own validator says it is valid and stops at the limit, so a
//! 100,000-element array with an error in every element costs five element checks, not
//! 100,000 error records (the crate's `iter_errors` collects everything before returning).
//!
//! # The documented order
//!
//! Errors come in a fixed order over the input: its values are visited in pre-order
//! (object members in key order, byte-wise, as parsed objects keep them; array items by
//! index); at each value, its own
//! errors come first, ranked by keyword (`type`, `const`, `enum`, string bounds and
//! `pattern`, number bounds, array bounds, object bounds, then missing `required` properties
//! in the schema's order); an unexpected property is reported at `/<key>` where that key
//! stands among its siblings. [`ToolSchema::all_errors`] produces the complete list in this
//! order from `iter_errors` (an unbounded baseline for tests and benches); the bounded walk
//! returns exactly its first five.
//!
//! # Messages (R7)
//!
//! ward writes every message from the error kind and the schema: `must be a string`,
//! `must be at most 798`, `must be one of: daily, weekly`, `missing required property
//! 'symbol'`. No message quotes a value taken from the input; object keys from the input
//! appear only in paths.
//!
//! Sub-schemas that use keywords outside the structural set this walk understands
//! (`anyOf`, `oneOf`, `allOf`, `not`, `if`, `patternProperties`, tuple `items`, …)
//! are treated as leaves: their errors come from `iter_errors` on that sub-tree alone,
//! sorted into the same order. ward's own tool schemas use none of them.
//!
//! # Any schema (R8a)
//!
//! Runtime developers register schemas of their own, often without `$schema` (TypeBox and Zod
//! emit none). [`ToolSchema::compile`] reads such a schema as draft 2020-12;
//! [`ToolSchema::compile_as`] names the draft to assume instead (`$schema` still wins).
//!
//! - **References.** A sub-schema compiled on its own loses the document around it, so a
//!   `$ref` inside it (`#/properties/foo`, `#`, an anchor, a `$defs` entry, a `$dynamicRef`)
//!   would resolve against the wrong root. A document that holds a reference keyword
//!   anywhere is therefore never split: its whole schema is one leaf, and its errors come
//!   from `iter_errors` of the whole document, where every reference resolves as it does
//!   for the verdict.
//! - **Remote documents.** ward never fetches a document (R5: no network). A schema whose
//!   reference needs one is refused at registration with an error naming the document.
//! - **Messages.** Every error kind of the validator has a message that states its rule
//!   (`unevaluatedProperties` and `additionalProperties` name the key in the path,
//!   `additionalItems` and `unevaluatedItems` the extra item, `dependentRequired` the missing
//!   property, `contains` the rule, `propertyNames` the key); the match over kinds is
//!   exhaustive, so a new kind cannot fall back to a generic message unnoticed.

use std::collections::BTreeMap;
use std::fmt::{self, Write as _};

use jsonschema::error::{TypeKind, ValidationErrorKind};
use jsonschema::{ReferencingError, ValidationError, Validator};
use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use crate::envelope::FieldError;

/// At most this many field errors go back to the model (R6).
pub const FIELD_ERRORS_MAX: usize = 5;

/// The largest argument text accepted, in bytes (R3, `PAYLOAD_TOO_LARGE`).
pub const ARGUMENT_BYTES_MAX: usize = 256 * 1024;

/// The JSON Schema draft a schema without `$schema` is read as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Draft {
    /// Draft 7 (`http://json-schema.org/draft-07/schema#`).
    Draft7,
    /// Draft 2020-12 (`https://json-schema.org/draft/2020-12/schema`), the default.
    #[default]
    Draft202012,
}

impl Draft {
    fn engine(self) -> jsonschema::Draft {
        match self {
            Draft::Draft7 => jsonschema::Draft::Draft7,
            Draft::Draft202012 => jsonschema::Draft::Draft202012,
        }
    }
}

/// A schema that cannot be compiled (R2).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the parameters schema does not compile: {reason}")]
pub struct SchemaError {
    /// What the compiler said.
    pub reason: String,
}

// ---------------------------------------------------------------------------------------------
// Parsing.

/// Parses raw argument text (R6): empty text means `{}`; invalid JSON or a duplicate key gives
/// one field error naming the line and column.
///
/// ```
/// use ward_core::validation::parse_arguments;
/// assert_eq!(parse_arguments("  ").unwrap(), serde_json::json!({}));
/// let error = parse_arguments(r#"{"a": 1, "a": 2}"#).unwrap_err();
/// assert_eq!(error.path, "/");
/// assert!(error.message.contains("repeats a key"));
/// ```
pub fn parse_arguments(text: &str) -> Result<Value, FieldError> {
    if text.trim().is_empty() {
        return Ok(Value::Object(Map::new()));
    }
    // Valid text is parsed once, without keeping a path; only text that repeats a key is parsed
    // again, keeping the path, to name the object where it does.
    let mut state = ParseState {
        path: String::new(),
        duplicate_at: None,
        tracks_path: false,
    };
    let mut parsed = parse_with(text, &mut state);
    if state.duplicate_at.is_some() {
        state = ParseState {
            path: String::new(),
            duplicate_at: None,
            tracks_path: true,
        };
        parsed = parse_with(text, &mut state);
    }
    match parsed {
        Ok(value) => Ok(value),
        Err(error) => {
            let (line, column) = (error.line(), error.column());
            Err(match state.duplicate_at {
                Some(path) => FieldError {
                    path: display_path(&path).to_owned(),
                    message: format!("repeats a key (line {line}, column {column})"),
                },
                None => FieldError {
                    path: "/".to_owned(),
                    message: format!(
                        "is not valid JSON: {} (line {line}, column {column})",
                        parser_reason(&error)
                    ),
                },
            })
        }
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

    fn visit_string<E>(self, value: String) -> Result<Value, E> {
        Ok(Value::String(value))
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
            if map.contains_key(&key) {
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
fn display_path(pointer: &str) -> &str {
    if pointer.is_empty() { "/" } else { pointer }
}

// ---------------------------------------------------------------------------------------------
// Compiled schemas.

/// A tool's compiled `parameters` schema: the verdict validator plus the bounded error walk.
#[derive(Debug)]
pub struct ToolSchema {
    root: Node,
}

#[derive(Debug)]
struct Node {
    /// The whole sub-schema: the verdict for this sub-tree.
    whole: Validator,
    shape: Shape,
}

#[derive(Debug)]
enum Shape {
    /// Errors come from `iter_errors` of `whole`, sorted into the documented order.
    Leaf,
    /// Own keywords are checked by `local`; members and items by the child nodes.
    Structured {
        /// The sub-schema without `properties`, `additionalProperties` and `items`.
        local: Validator,
        properties: BTreeMap<String, Node>,
        additional: Additional,
        items: Option<Box<Node>>,
    },
}

#[derive(Debug)]
enum Additional {
    Allowed,
    Forbidden,
    Schema(Box<Node>),
}

/// Keywords the structural walk understands. A sub-schema using any other keyword is a leaf.
const STRUCTURAL_KEYWORDS: &[&str] = &[
    "type",
    "const",
    "enum",
    "minLength",
    "maxLength",
    "pattern",
    "format",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minItems",
    "maxItems",
    "uniqueItems",
    "minProperties",
    "maxProperties",
    "required",
    "properties",
    "additionalProperties",
    "items",
    "title",
    "description",
    "default",
    "examples",
    "$comment",
    "deprecated",
    "readOnly",
    "writeOnly",
];

impl ToolSchema {
    /// Compiles a `parameters` schema. The draft is taken from `$schema` when present, else
    /// 2020-12, and every sub-schema is compiled under the same draft.
    pub fn compile(schema: &Value) -> Result<ToolSchema, SchemaError> {
        ToolSchema::compile_as(schema, Draft::default())
    }

    /// Compiles a `parameters` schema read as `draft` unless its `$schema` names another.
    ///
    /// ```
    /// use serde_json::json;
    /// use ward_core::validation::{Draft, ToolSchema};
    /// // Draft 7's tuple `items`, no `$schema`, a `$ref` into the root document.
    /// let schema = ToolSchema::compile_as(&json!({
    ///     "properties": {"pair": {"items": [{"$ref": "#/definitions/n"}], "additionalItems": false}},
    ///     "definitions": {"n": {"type": "integer"}}
    /// }), Draft::Draft7).unwrap();
    /// let errors = schema.validate(&json!({"pair": ["x", 2]})).unwrap_err();
    /// assert_eq!(errors[0].to_string(), "/pair: must have at most 1 item");
    /// assert_eq!(errors[1].to_string(), "/pair/0: must be an integer");
    /// ```
    pub fn compile_as(schema: &Value, draft: Draft) -> Result<ToolSchema, SchemaError> {
        let declares_draft = schema
            .as_object()
            .is_some_and(|object| object.contains_key("$schema"));
        let whole = if declares_draft {
            jsonschema::validator_for(schema)
        } else {
            jsonschema::options()
                .with_draft(draft.engine())
                .build(schema)
        }
        .map_err(schema_error)?;
        let draft = whole.draft();
        let root = if holds_reference(schema) {
            Node {
                whole,
                shape: Shape::Leaf,
            }
        } else {
            Node::compile_with(schema, whole, draft)?
        };
        Ok(ToolSchema { root })
    }

    /// Whether `input` satisfies the schema (`jsonschema`'s verdict).
    pub fn is_valid(&self, input: &Value) -> bool {
        self.root.whole.is_valid(input)
    }

    /// Validates `input`: `Ok` when valid, else the first [`FIELD_ERRORS_MAX`] errors in the
    /// documented order.
    ///
    /// ```
    /// use serde_json::json;
    /// use ward_core::validation::ToolSchema;
    /// let schema = ToolSchema::compile(&json!({
    ///     "type": "object",
    ///     "properties": {"limit": {"type": "integer", "maximum": 798}},
    ///     "additionalProperties": false
    /// })).unwrap();
    /// let errors = schema.validate(&json!({"limit": 9000, "extra": true})).unwrap_err();
    /// assert_eq!(errors[0].to_string(), "/extra: is not an allowed property");
    /// assert_eq!(errors[1].to_string(), "/limit: must be at most 798");
    /// ```
    pub fn validate(&self, input: &Value) -> Result<(), Vec<FieldError>> {
        self.validate_at_most(input, FIELD_ERRORS_MAX)
    }

    /// [`validate`](Self::validate) with another bound: the first `errors_max` errors in the
    /// documented order (at least one for an invalid input). The bounded walk stops there.
    ///
    /// ```
    /// use serde_json::json;
    /// use ward_core::validation::ToolSchema;
    /// let schema = ToolSchema::compile(&json!({
    ///     "type": "object",
    ///     "properties": {"a": {"type": "string"}, "b": {"type": "string"}}
    /// })).unwrap();
    /// let errors = schema.validate_at_most(&json!({"a": 1, "b": 2}), 1).unwrap_err();
    /// assert_eq!(errors.len(), 1);
    /// assert_eq!(errors[0].to_string(), "/a: must be a string");
    /// ```
    pub fn validate_at_most(
        &self,
        input: &Value,
        errors_max: usize,
    ) -> Result<(), Vec<FieldError>> {
        if self.is_valid(input) {
            return Ok(());
        }
        let mut walk = Walk {
            errors: Vec::new(),
            errors_max: errors_max.max(1),
        };
        let mut path = String::new();
        self.root.walk(input, &mut path, &mut walk);
        if walk.errors.is_empty() {
            // The walk mirrors the verdict, so this does not happen for any schema of the
            // JSON Schema Test Suite; should a schema defeat the split, the whole document's
            // own errors still state the rules.
            walk.errors = self.all_errors(input);
            walk.errors.truncate(walk.errors_max);
        }
        Err(walk.errors)
    }

    /// Every error of `input`, in the documented order, from `iter_errors`. Unbounded: for
    /// tests and as the benchmark baseline, never on the call path.
    pub fn all_errors(&self, input: &Value) -> Vec<FieldError> {
        let mut ranked = Vec::new();
        rank_errors(&self.root.whole, input, "", &mut ranked);
        sort_ranked(input, &mut ranked);
        ranked.into_iter().map(|(_, error)| error).collect()
    }
}

fn schema_error(error: ValidationError<'_>) -> SchemaError {
    let reason = match error.kind() {
        ValidationErrorKind::Referencing(ReferencingError::Unretrievable { uri, .. }) => format!(
            "it refers to the remote document '{uri}', and ward never fetches documents \
             (put the referenced schema under `$defs` in this one)"
        ),
        ValidationErrorKind::Referencing(ReferencingError::UnknownSpecification {
            specification,
        }) => format!(
            "its `$schema` names the meta-schema '{specification}', which is neither draft 7 \
             nor draft 2020-12, and ward never fetches documents"
        ),
        _ => error.to_string(),
    };
    SchemaError { reason }
}

/// Keywords that refer to another part of a document (or to another document).
const REFERENCE_KEYWORDS: &[&str] = &["$ref", "$dynamicRef", "$recursiveRef"];

/// Whether `schema` holds a reference keyword anywhere (a property named `$ref` counts too:
/// the document is then not split, which costs speed, never correctness).
fn holds_reference(schema: &Value) -> bool {
    match schema {
        Value::Object(object) => object.iter().any(|(key, value)| {
            REFERENCE_KEYWORDS.contains(&key.as_str()) || holds_reference(value)
        }),
        Value::Array(elements) => elements.iter().any(holds_reference),
        _ => false,
    }
}

fn compile_under(schema: &Value, draft: jsonschema::Draft) -> Result<Validator, SchemaError> {
    jsonschema::options()
        .with_draft(draft)
        .build(schema)
        .map_err(schema_error)
}

impl Node {
    fn compile_with(
        schema: &Value,
        whole: Validator,
        draft: jsonschema::Draft,
    ) -> Result<Node, SchemaError> {
        let Some(object) = schema.as_object().filter(|object| is_structural(object)) else {
            return Ok(Node {
                whole,
                shape: Shape::Leaf,
            });
        };
        let mut local_schema = object.clone();
        local_schema.remove("properties");
        local_schema.remove("additionalProperties");
        local_schema.remove("items");
        let local = compile_under(&Value::Object(local_schema), draft)?;
        let mut properties = BTreeMap::new();
        if let Some(declared) = object.get("properties").and_then(Value::as_object) {
            for (name, sub_schema) in declared {
                properties.insert(name.clone(), Node::compile(sub_schema, draft)?);
            }
        }
        let additional = match object.get("additionalProperties") {
            None | Some(Value::Bool(true)) => Additional::Allowed,
            Some(Value::Bool(false)) => Additional::Forbidden,
            Some(sub_schema) => Additional::Schema(Box::new(Node::compile(sub_schema, draft)?)),
        };
        let items = match object.get("items") {
            None => None,
            Some(sub_schema) => Some(Box::new(Node::compile(sub_schema, draft)?)),
        };
        Ok(Node {
            whole,
            shape: Shape::Structured {
                local,
                properties,
                additional,
                items,
            },
        })
    }

    fn compile(schema: &Value, draft: jsonschema::Draft) -> Result<Node, SchemaError> {
        let whole = compile_under(schema, draft)?;
        Node::compile_with(schema, whole, draft)
    }

    /// Appends this sub-tree's errors, in the documented order, until the walk is full.
    fn walk(&self, value: &Value, path: &mut String, walk: &mut Walk) {
        if walk.is_full() || self.whole.is_valid(value) {
            return;
        }
        let Shape::Structured {
            local,
            properties,
            additional,
            items,
        } = &self.shape
        else {
            let mut ranked = Vec::new();
            rank_errors(&self.whole, value, path, &mut ranked);
            sort_ranked_at(value, path.len(), &mut ranked);
            for (_, error) in ranked {
                walk.push(error);
            }
            return;
        };
        // A stable sort: missing properties keep the schema order `iter_errors` gives them.
        let mut own: Vec<(Rank, FieldError)> = local
            .iter_errors(value)
            .map(|error| (keyword_rank(error.kind()), field_error(&error, path)))
            .collect();
        own.sort_by_key(|(rank, _)| *rank);
        for (_, error) in own {
            walk.push(error);
        }
        match value {
            Value::Object(members) => {
                for (key, member) in members {
                    if walk.is_full() {
                        return;
                    }
                    let length = path.len();
                    push_pointer_segment(path, key);
                    match (properties.get(key), additional) {
                        (Some(node), _) => node.walk(member, path, walk),
                        (None, Additional::Schema(node)) => node.walk(member, path, walk),
                        (None, Additional::Forbidden) => walk.push(FieldError {
                            path: path.clone(),
                            message: UNEXPECTED_PROPERTY.to_owned(),
                        }),
                        (None, Additional::Allowed) => {}
                    }
                    path.truncate(length);
                }
            }
            Value::Array(elements) => {
                let Some(items) = items else { return };
                for (index, element) in elements.iter().enumerate() {
                    if walk.is_full() {
                        return;
                    }
                    let length = path.len();
                    let _ = write!(path, "/{index}");
                    items.walk(element, path, walk);
                    path.truncate(length);
                }
            }
            _ => {}
        }
    }
}

fn is_structural(object: &Map<String, Value>) -> bool {
    object
        .keys()
        .all(|keyword| STRUCTURAL_KEYWORDS.contains(&keyword.as_str()))
        && object.get("items").is_none_or(|items| !items.is_array())
}

struct Walk {
    errors: Vec<FieldError>,
    errors_max: usize,
}

impl Walk {
    fn is_full(&self) -> bool {
        self.errors.len() >= self.errors_max
    }

    fn push(&mut self, error: FieldError) {
        if !self.is_full() {
            self.errors.push(error);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Ranking and messages.

/// Position of an error among the errors of one value.
type Rank = u8;

const UNEXPECTED_PROPERTY: &str = "is not an allowed property";

/// Keyword rank of the documented order.
fn keyword_rank(kind: &ValidationErrorKind) -> Rank {
    match kind {
        ValidationErrorKind::Type { .. } => 0,
        ValidationErrorKind::Constant { .. } => 1,
        ValidationErrorKind::Enum { .. } => 2,
        ValidationErrorKind::MinLength { .. } => 3,
        ValidationErrorKind::MaxLength { .. } => 4,
        ValidationErrorKind::Pattern { .. } => 5,
        ValidationErrorKind::Format { .. } => 6,
        ValidationErrorKind::Minimum { .. } => 7,
        ValidationErrorKind::ExclusiveMinimum { .. } => 8,
        ValidationErrorKind::Maximum { .. } => 9,
        ValidationErrorKind::ExclusiveMaximum { .. } => 10,
        ValidationErrorKind::MultipleOf { .. } => 11,
        ValidationErrorKind::MinItems { .. } => 12,
        ValidationErrorKind::MaxItems { .. } => 13,
        ValidationErrorKind::UniqueItems => 14,
        ValidationErrorKind::MinProperties { .. } => 15,
        ValidationErrorKind::MaxProperties { .. } => 16,
        ValidationErrorKind::Required { .. } => 17,
        ValidationErrorKind::AdditionalProperties { .. }
        | ValidationErrorKind::UnevaluatedProperties { .. } => 18,
        _ => 19,
    }
}

/// The message for one error kind: the rule, never the value (R7).
fn message(kind: &ValidationErrorKind) -> String {
    match kind {
        ValidationErrorKind::Type { kind } => match kind {
            TypeKind::Single(json_type) => format!("must be {}", with_article(json_type.as_str())),
            TypeKind::Multiple(types) => {
                let names: Vec<&str> = types.iter().map(|json_type| json_type.as_str()).collect();
                format!("must be one of the types: {}", names.join(", "))
            }
        },
        ValidationErrorKind::Constant { expected_value } => {
            format!("must be {}", schema_value(expected_value))
        }
        ValidationErrorKind::Enum { options } => match options.as_array() {
            Some(allowed) if allowed.is_empty() => "is not allowed".to_owned(),
            Some(allowed) if allowed.len() <= 16 => {
                let names: Vec<String> = allowed.iter().map(schema_value).collect();
                format!("must be one of: {}", names.join(", "))
            }
            _ => "must be one of the allowed values".to_owned(),
        },
        ValidationErrorKind::MinLength { limit } => {
            format!("must be at least {limit} character{} long", plural(*limit))
        }
        ValidationErrorKind::MaxLength { limit } => {
            format!("must be at most {limit} character{} long", plural(*limit))
        }
        ValidationErrorKind::Pattern { pattern } => format!("must match the pattern {pattern}"),
        ValidationErrorKind::Format { format } => format!("must be a valid {format}"),
        ValidationErrorKind::Minimum { limit } => format!("must be at least {limit}"),
        ValidationErrorKind::ExclusiveMinimum { limit } => format!("must be greater than {limit}"),
        ValidationErrorKind::Maximum { limit } => format!("must be at most {limit}"),
        ValidationErrorKind::ExclusiveMaximum { limit } => format!("must be less than {limit}"),
        ValidationErrorKind::MultipleOf { multiple_of } => {
            format!("must be a multiple of {multiple_of}")
        }
        ValidationErrorKind::MinItems { limit } => {
            format!("must have at least {limit} item{}", plural(*limit))
        }
        ValidationErrorKind::MaxItems { limit } => {
            format!("must have at most {limit} item{}", plural(*limit))
        }
        ValidationErrorKind::UniqueItems => "must not contain duplicate items".to_owned(),
        ValidationErrorKind::MinProperties { limit } => {
            format!("must have at least {limit} propert{}", plural_y(*limit))
        }
        ValidationErrorKind::MaxProperties { limit } => {
            format!("must have at most {limit} propert{}", plural_y(*limit))
        }
        ValidationErrorKind::Required { property } => match property.as_str() {
            Some(name) => format!("missing required property '{name}'"),
            None => "missing a required property".to_owned(),
        },
        // Reported per key by `rank_errors`.
        ValidationErrorKind::AdditionalProperties { .. }
        | ValidationErrorKind::UnevaluatedProperties { .. } => UNEXPECTED_PROPERTY.to_owned(),
        ValidationErrorKind::AnyOf { .. } | ValidationErrorKind::OneOfNotValid { .. } => {
            "must match one of the allowed forms".to_owned()
        }
        ValidationErrorKind::OneOfMultipleValid { .. } => {
            "must match exactly one of the allowed forms".to_owned()
        }
        ValidationErrorKind::Not { .. } => "must not match the excluded form".to_owned(),
        ValidationErrorKind::FalseSchema => "is not allowed".to_owned(),
        ValidationErrorKind::Contains => "must contain at least one matching item".to_owned(),
        ValidationErrorKind::PropertyNames { .. } => {
            "has a property name that is not allowed".to_owned()
        }
        ValidationErrorKind::AdditionalItems { limit } => {
            format!("must have at most {limit} item{}", plural(*limit as u64))
        }
        ValidationErrorKind::UnevaluatedItems { .. } => {
            "must have no items beyond those the schema allows".to_owned()
        }
        ValidationErrorKind::ContentEncoding { content_encoding } => {
            format!("must be encoded as {content_encoding}")
        }
        ValidationErrorKind::ContentMediaType { content_media_type } => {
            format!("must be valid {content_media_type} content")
        }
        ValidationErrorKind::FromUtf8 { .. } => "must decode to UTF-8 text".to_owned(),
        // The keyword's own message may quote the input; its name is the schema's.
        ValidationErrorKind::Custom { keyword, .. } => {
            format!("must satisfy the keyword {keyword}")
        }
        ValidationErrorKind::BacktrackLimitExceeded { .. }
        | ValidationErrorKind::RegexEngineFailure { .. } => {
            "could not be checked against the pattern".to_owned()
        }
        ValidationErrorKind::Referencing(_) => {
            "could not be checked: a reference of the schema does not resolve".to_owned()
        }
    }
}

fn with_article(type_name: &str) -> String {
    match type_name {
        "null" => "null".to_owned(),
        "array" | "integer" | "object" => format!("an {type_name}"),
        _ => format!("a {type_name}"),
    }
}

fn plural(count: u64) -> &'static str {
    if count == 1 { "" } else { "s" }
}

fn plural_y(count: u64) -> &'static str {
    if count == 1 { "y" } else { "ies" }
}

/// A value taken from the schema (never from the input), written compactly.
fn schema_value(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// A field error at `base` joined with the error's own instance path.
fn field_error(error: &ValidationError<'_>, base: &str) -> FieldError {
    let mut path = base.to_owned();
    path.push_str(error.instance_path().as_str());
    FieldError {
        path: display_path(&path).to_owned(),
        message: message(error.kind()),
    }
}

/// Every error of `value` under `validator`, expanded (one per unexpected key) and ranked, with
/// paths prefixed by `base`.
fn rank_errors(
    validator: &Validator,
    value: &Value,
    base: &str,
    ranked: &mut Vec<(Rank, FieldError)>,
) {
    for error in validator.iter_errors(value) {
        if let ValidationErrorKind::AdditionalProperties { unexpected }
        | ValidationErrorKind::UnevaluatedProperties { unexpected } = error.kind()
        {
            let object_path = format!("{base}{}", error.instance_path().as_str());
            for key in unexpected {
                let mut path = object_path.clone();
                push_pointer_segment(&mut path, key);
                ranked.push((
                    keyword_rank(error.kind()),
                    FieldError {
                        path,
                        message: UNEXPECTED_PROPERTY.to_owned(),
                    },
                ));
            }
            continue;
        }
        ranked.push((keyword_rank(error.kind()), field_error(&error, base)));
    }
}

/// Sorts ranked errors of a whole input into the documented order.
fn sort_ranked(input: &Value, ranked: &mut [(Rank, FieldError)]) {
    sort_ranked_at(input, 0, ranked);
}

/// Sorts ranked errors of the sub-tree `value` whose paths start with a prefix of
/// `prefix_length` bytes.
fn sort_ranked_at(value: &Value, prefix_length: usize, ranked: &mut [(Rank, FieldError)]) {
    let mut order = BTreeMap::new();
    number_preorder(value, &mut String::new(), &mut order);
    ranked.sort_by_key(|(rank, error)| {
        let relative = if error.path == "/" {
            ""
        } else {
            error.path.get(prefix_length..).unwrap_or("")
        };
        let position = order.get(relative).copied().unwrap_or(usize::MAX);
        (position, *rank)
    });
}

/// Numbers every value of `value` in pre-order, keyed by its JSON Pointer.
fn number_preorder(value: &Value, path: &mut String, order: &mut BTreeMap<String, usize>) {
    let position = order.len();
    order.insert(path.clone(), position);
    match value {
        Value::Object(members) => {
            for (key, member) in members {
                let length = path.len();
                push_pointer_segment(path, key);
                number_preorder(member, path, order);
                path.truncate(length);
            }
        }
        Value::Array(elements) => {
            for (index, element) in elements.iter().enumerate() {
                let length = path.len();
                let _ = write!(path, "/{index}");
                number_preorder(element, path, order);
                path.truncate(length);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn bars_schema() -> ToolSchema {
        ToolSchema::compile(&json!({
            "type": "object",
            "properties": {
                "symbol": {"type": "string", "minLength": 1},
                "period": {"type": "string", "enum": ["daily", "weekly"]},
                "limit": {"type": "integer", "minimum": 1, "maximum": 798},
                "tags": {"type": "array", "maxItems": 3, "items": {"type": "string"}}
            },
            "required": ["symbol", "period"],
            "additionalProperties": false
        }))
        .unwrap()
    }

    fn paths(errors: &[FieldError]) -> Vec<&str> {
        errors.iter().map(|error| error.path.as_str()).collect()
    }

    #[test]
    fn empty_text_means_an_empty_object() {
        for text in ["", "   ", "\n\t "] {
            assert_eq!(parse_arguments(text).unwrap(), json!({}));
        }
    }

    #[test]
    fn invalid_json_is_one_error_at_the_root_with_line_and_column() {
        let error = parse_arguments("{").unwrap_err();
        assert_eq!(error.path, "/");
        assert!(
            error.message.starts_with("is not valid JSON: "),
            "{}",
            error.message
        );
        assert!(
            error.message.contains("line 1, column 1"),
            "{}",
            error.message
        );
        let error = parse_arguments("{\"a\": 1} trailing").unwrap_err();
        assert_eq!(error.path, "/");
        assert!(error.message.contains("trailing"), "{}", error.message);
    }

    #[test]
    fn a_duplicate_key_is_refused_at_the_objects_path() {
        let error = parse_arguments(r#"{"anchors": [{"price": 1, "price": 2}]}"#).unwrap_err();
        assert_eq!(error.path, "/anchors/0");
        assert!(error.message.contains("repeats a key"), "{}", error.message);
        assert!(
            error.message.contains("line 1, column"),
            "{}",
            error.message
        );
        // A key containing pointer metacharacters is escaped in the path.
        let error = parse_arguments(r#"{"a/b~": {"x": 1, "x": 1}}"#).unwrap_err();
        assert_eq!(error.path, "/a~1b~0");
    }

    #[test]
    fn parser_messages_never_quote_the_input() {
        for text in [
            r#"{"k": "sk-secretvalue12345"#,
            r#"{"sk-secretvalue12345"}"#,
            "[1,,]",
        ] {
            let error = parse_arguments(text).unwrap_err();
            assert!(!error.message.contains("secretvalue"), "{}", error.message);
        }
    }

    #[test]
    fn a_valid_input_passes() {
        let schema = bars_schema();
        assert!(
            schema
                .validate(&json!({"symbol": "AAPL", "period": "daily"}))
                .is_ok()
        );
    }

    #[test]
    fn wrong_type_at_its_pointer_and_no_value_echoed() {
        let errors = bars_schema()
            .validate(&json!({"symbol": 1, "period": "daily"}))
            .unwrap_err();
        assert_eq!(
            errors,
            vec![FieldError {
                path: "/symbol".into(),
                message: "must be a string".into()
            }]
        );
    }

    #[test]
    fn missing_properties_at_the_parent_in_schema_order() {
        let errors = bars_schema().validate(&json!({})).unwrap_err();
        assert_eq!(paths(&errors), ["/", "/"]);
        assert_eq!(errors[0].message, "missing required property 'symbol'");
        assert_eq!(errors[1].message, "missing required property 'period'");
    }

    #[test]
    fn one_error_per_unexpected_key_in_key_order() {
        let errors = bars_schema()
            .validate(&json!({"symbol": "A", "zeta": 1, "period": "daily", "alpha": 2}))
            .unwrap_err();
        assert_eq!(paths(&errors), ["/alpha", "/zeta"]);
        assert!(
            errors
                .iter()
                .all(|error| error.message == UNEXPECTED_PROPERTY)
        );
    }

    #[test]
    fn four_wrong_fields_and_six_unexpected_keys_give_exactly_five_in_order() {
        let input = json!({
            "symbol": 7, "period": "hourly", "limit": 0, "tags": "x",
            "u1": 1, "u2": 2, "u3": 3, "u4": 4, "u5": 5, "u6": 6
        });
        let schema = bars_schema();
        let errors = schema.validate(&input).unwrap_err();
        assert_eq!(
            paths(&errors),
            ["/limit", "/period", "/symbol", "/tags", "/u1"]
        );
        assert_eq!(errors[0].message, "must be at least 1");
        assert_eq!(errors[1].message, "must be one of: daily, weekly");
        assert_eq!(errors[2].message, "must be a string");
        assert_eq!(errors[3].message, "must be an array");
        let all = schema.all_errors(&input);
        assert_eq!(all.len(), 10);
        assert_eq!(&all[..5], &errors[..]);
    }

    #[test]
    fn bounds_messages_state_the_rule() {
        let schema = bars_schema();
        let errors = schema
            .validate(
                &json!({"symbol": "", "period": "daily", "limit": 9999, "tags": ["a","b","c","d"]}),
            )
            .unwrap_err();
        let messages: Vec<String> = errors.iter().map(ToString::to_string).collect();
        assert_eq!(
            messages,
            [
                "/limit: must be at most 798",
                "/symbol: must be at least 1 character long",
                "/tags: must have at most 3 items",
            ]
        );
    }

    #[test]
    fn a_huge_invalid_array_reports_five_errors_matching_the_unbounded_baseline() {
        let schema = ToolSchema::compile(&json!({
            "type": "object",
            "properties": {"values": {"type": "array", "items": {"type": "number"}}}
        }))
        .unwrap();
        let values: Vec<Value> = (0..100_000)
            .map(|index| json!(format!("v{index}")))
            .collect();
        let input = json!({"values": values});
        let errors = schema.validate(&input).unwrap_err();
        assert_eq!(
            paths(&errors),
            [
                "/values/0",
                "/values/1",
                "/values/2",
                "/values/3",
                "/values/4"
            ]
        );
        let all = schema.all_errors(&input);
        assert_eq!(all.len(), 100_000);
        assert_eq!(&all[..5], &errors[..]);
    }

    #[test]
    fn a_non_object_root_is_a_type_error_at_the_root() {
        let errors = bars_schema().validate(&json!([1, 2])).unwrap_err();
        assert_eq!(
            errors,
            vec![FieldError {
                path: "/".into(),
                message: "must be an object".into()
            }]
        );
    }

    #[test]
    fn leaves_with_composite_keywords_still_report_in_order() {
        let schema = ToolSchema::compile(&json!({
            "type": "object",
            "properties": {
                "a": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
                "b": {"type": "string"}
            }
        }))
        .unwrap();
        let input = json!({"a": true, "b": 1});
        let errors = schema.validate(&input).unwrap_err();
        assert_eq!(paths(&errors), ["/a", "/b"]);
        assert_eq!(errors[0].message, "must match one of the allowed forms");
        assert_eq!(schema.all_errors(&input), errors);
    }

    #[test]
    fn schemas_that_do_not_compile_are_refused() {
        assert!(ToolSchema::compile(&json!({"type": "no-such-type"})).is_err());
        assert!(ToolSchema::compile(&json!({"properties": {"a": {"minLength": -1}}})).is_err());
    }

    fn messages(schema: &Value, input: &Value) -> Vec<String> {
        let schema = ToolSchema::compile(schema).expect("the schema compiles");
        let errors = schema.validate(input).expect_err("the input is invalid");
        errors.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn a_ref_inside_a_sub_schema_resolves_against_the_whole_document() {
        let schema = json!({
            "properties": {"foo": {"type": "integer"}, "bar": {"$ref": "#/properties/foo"}}
        });
        assert_eq!(
            messages(&schema, &json!({"bar": "x"})),
            ["/bar: must be an integer"]
        );
        // `#` is the root, not the sub-schema that holds the reference.
        let schema = json!({"properties": {"foo": {"$ref": "#"}}, "additionalProperties": false});
        assert_eq!(
            messages(&schema, &json!({"foo": {"bar": false}})),
            ["/foo/bar: is not an allowed property"]
        );
    }

    #[test]
    fn every_keyword_states_its_rule() {
        let unevaluated = json!({
            "properties": {"a": true}, "unevaluatedProperties": false,
            "prefixItems": [true], "unevaluatedItems": false
        });
        assert_eq!(
            messages(&unevaluated, &json!({"a": 1, "b": 2, "c": 3})),
            [
                "/b: is not an allowed property",
                "/c: is not an allowed property"
            ]
        );
        assert_eq!(
            messages(&unevaluated, &json!([1, 2])),
            ["/: must have no items beyond those the schema allows"]
        );
        let dependent = json!({"dependentRequired": {"a": ["b"]}});
        assert_eq!(
            messages(&dependent, &json!({"a": 1})),
            ["/: missing required property 'b'"]
        );
        let tuple = json!({"items": [{"type": "string"}], "additionalItems": false});
        let tuple = ToolSchema::compile_as(&tuple, Draft::Draft7).expect("draft 7 compiles");
        let errors = tuple
            .validate(&json!(["a", "b", "c"]))
            .expect_err("too many items");
        assert_eq!(errors[0].to_string(), "/: must have at most 1 item");
        assert_eq!(
            messages(&json!({"enum": []}), &json!(1)),
            ["/: is not allowed"]
        );
    }

    #[test]
    fn a_remote_document_is_refused_by_name() {
        let error = ToolSchema::compile(&json!({"$ref": "http://localhost:1234/integer.json"}))
            .expect_err("ward never fetches");
        assert!(
            error
                .reason
                .contains("'http://localhost:1234/integer.json'"),
            "{error}"
        );
        assert!(error.reason.contains("never fetches"), "{error}");
        let meta = "http://localhost:1234/draft2020-12/metaschema-no-validation.json";
        let error = ToolSchema::compile(&json!({"$schema": meta, "type": "integer"}))
            .expect_err("an unknown meta-schema");
        assert!(error.reason.contains(&format!("'{meta}'")), "{error}");
        assert!(error.reason.contains("never fetches"), "{error}");
    }
}

//! [`ToolSchema`]: a `parameters` schema compiled once (R2, R8a), its verdict (`jsonschema`'s
//! `is_valid` on the whole schema) and the bounded error walk (R6, R8) over the tree of
//! object and array sub-schemas, which skips every valid sub-tree and stops at the limit.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use jsonschema::error::ValidationErrorKind;
use jsonschema::{ReferencingError, ValidationError, Validator};
use serde_json::{Map, Value};

use super::messages::{
    Ranked, UNEXPECTED_PROPERTY, field_error, keyword_rank, rank_errors, sort_ranked_at,
};
use super::parse::push_pointer_segment;
use super::{Draft, FIELD_ERRORS_MAX, SchemaError};
use crate::envelope::FieldError;

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
        // The split mirrors the verdict: a sub-tree is split only over keywords that judge it
        // part by part, so an invalid input has an invalid part and the walk finds at least
        // one error (every schema and instance of the JSON Schema Test Suite, in this
        // module's tests and the simulator's R8a sweep). No unbounded fallback to
        // `iter_errors` on the whole input stands behind it: that would break R8, and would
        // hide a walk that finds nothing.
        debug_assert!(!walk.errors.is_empty(), "the walk found no error");
        Err(walk.errors)
    }

    /// Every error of `input`, in the documented order, from `iter_errors`. Unbounded: for
    /// tests and as the benchmark baseline, never on the call path.
    pub fn all_errors(&self, input: &Value) -> Vec<FieldError> {
        let mut ranked = Vec::new();
        rank_errors(&self.root.whole, input, "", &mut ranked);
        sort_ranked_at(input, 0, &mut ranked);
        ranked.into_iter().map(|ranked| ranked.error).collect()
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
            for ranked in ranked {
                walk.push(ranked.error);
            }
            return;
        };
        // A stable sort: missing properties keep the schema order `iter_errors` gives them.
        let mut own: Vec<Ranked> = local
            .iter_errors(value)
            .map(|error| Ranked {
                rank: keyword_rank(error.kind()),
                error: field_error(&error, path),
            })
            .collect();
        own.sort_by_key(|ranked| ranked.rank);
        for ranked in own {
            walk.push(ranked.error);
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

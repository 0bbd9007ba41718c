//! R8a: any schema a runtime developer registers, not only ward's own. The probe registers every schema of the official JSON Schema Test
//! Suite (draft 2020-12 and draft 7, vendored under `corpus/json-schema-test-suite/`; a draft-7
//! schema without `$schema` is given draft 7's) as the parameters of a read-only tool of its
//! own, and calls it through the registry's entry point with each of the suite's instances.
//! Tool parameters describe an object (R1). A schema that holds no reference and names no
//! resource (`$ref`, `$id`, `$anchor` and their kin, `$schema`) is therefore tried as the
//! member `value` of an object, `{"type": "object", "properties": {"value": <schema>},
//! "required": ["value"]}`, with every instance `{"value": <instance>}`: schemas and instances
//! of every type, boolean schemas too. One that does gains `"type": "object"` at its root
//! (one that names another type is passed over), and only the object instances whose verdict
//! that keeps are tried. A schema whose `$schema` names draft 2020-12, the registry's default,
//! is registered a second time without it, so that the core may split its root (R8). In all,
//! 2,469 instances, 1,026 of them invalid, 354 of those with an error list predicted exactly
//! (a unit test keeps the counts from falling). The suite's
//! verdict is the ground truth, and ward's own groups after the suite's ([`OWN`]) state theirs
//! the same way:
//!
//! - a valid instance reaches the body, and the result is the body's;
//! - an invalid one gets `TOOL_INPUT_INVALID` with 1 to 5 field errors listed in its message
//!   (R6), each path resolving in the instance, and each message the documented wording of its
//!   keyword: exactly the predicted list where [`crate::oracle::input_errors`] predicts one (the
//!   structural keywords), else a message of the wording tables there (R7: the rule, never a
//!   generic "does not match"), listed in the documented order.
//!
//! A schema registration refuses is passed over when it refers to a remote document (R5: no
//! fetching; the suite's remote documents live at `localhost:1234`); any other refusal is a
//! disagreement ([`super`]).

use std::sync::OnceLock;

use futures::FutureExt;
use serde_json::{Value, json};
use ward_core::chart::SharedChart;
use ward_core::envelope::{Outcome, ToolError};
use ward_core::guard::SecretGuard;
use ward_core::policy::RunPolicy;
use ward_core::registry::{Registry, RegistryBuilder, RegistryError};
use ward_core::tool::{ExecutionMode, Safety, ToolCall, ToolContext, ToolSpec};

use crate::catalogue::FIELD_ERRORS_MAX;
use crate::catalogue::Patterns;
use crate::oracle::input_errors;

/// The draft a suite file is written for.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Draft {
    Draft7,
    Draft202012,
}

/// Every file of the two drafts' suites but `refRemote.json` (remote documents only).
const FILES: &[(&str, Draft, &str)] = &[
    (
        "draft2020-12/additionalProperties.json",
        Draft::Draft202012,
        include_str!(
            "../../../corpus/json-schema-test-suite/tests/draft2020-12/additionalProperties.json"
        ),
    ),
    (
        "draft2020-12/allOf.json",
        Draft::Draft202012,
        include_str!("../../../corpus/json-schema-test-suite/tests/draft2020-12/allOf.json"),
    ),
    (
        "draft2020-12/anchor.json",
        Draft::Draft202012,
        include_str!("../../../corpus/json-schema-test-suite/tests/draft2020-12/anchor.json"),
    ),
    (
        "draft2020-12/anyOf.json",
        Draft::Draft202012,
        include_str!("../../../corpus/json-schema-test-suite/tests/draft2020-12/anyOf.json"),
    ),
    (
        "draft2020-12/boolean_schema.json",
        Draft::Draft202012,
        include_str!(
            "../../../corpus/json-schema-test-suite/tests/draft2020-12/boolean_schema.json"
        ),
    ),
    (
        "draft2020-12/const.json",
        Draft::Draft202012,
        include_str!("../../../corpus/json-schema-test-suite/tests/draft2020-12/const.json"),
    ),
    (
        "draft2020-12/contains.json",
        Draft::Draft202012,
        include_str!("../../../corpus/json-schema-test-suite/tests/draft2020-12/contains.json"),
    ),
    (
        "draft2020-12/content.json",
        Draft::Draft202012,
        include_str!("../../../corpus/json-schema-test-suite/tests/draft2020-12/content.json"),
    ),
    (
        "draft2020-12/default.json",
        Draft::Draft202012,
        include_str!("../../../corpus/json-schema-test-suite/tests/draft2020-12/default.json"),
    ),
    (
        "draft2020-12/defs.json",
        Draft::Draft202012,
        include_str!("../../../corpus/json-schema-test-suite/tests/draft2020-12/defs.json"),
    ),
    (
        "draft2020-12/dependentRequired.json",
        Draft::Draft202012,
        include_str!(
            "../../../corpus/json-schema-test-suite/tests/draft2020-12/dependentRequired.json"
        ),
    ),
    (
        "draft2020-12/dependentSchemas.json",
        Draft::Draft202012,
        include_str!(
            "../../../corpus/json-schema-test-suite/tests/draft2020-12/dependentSchemas.json"
        ),
    ),
    (
        "draft2020-12/dynamicRef.json",
        Draft::Draft202012,
        include_str!("../../../corpus/json-schema-test-suite/tests/draft2020-12/dynamicRef.json"),
    ),
    (
        "draft2020-12/enum.json",
        Draft::Draft202012,
        include_str!("../../../corpus/json-schema-test-suite/tests/draft2020-12/enum.json"),
    ),
    (
        "draft2020-12/exclusiveMaximum.json",
        Draft::Draft202012,
        include_str!(
            "../../../corpus/json-schema-test-suite/tests/draft2020-12/exclusiveMaximum.json"
        ),
    ),
    (
        "draft2020-12/exclusiveMinimum.json",
        Draft::Draft202012,
        include_str!(
            "../../../corpus/json-schema-test-suite/tests/draft2020-12/exclusiveMinimum.json"
        ),
    ),
    (
        "draft2020-12/format.json",
        Draft::Draft202012,
        include_str!("../../../corpus/json-schema-test-suite/tests/draft2020-12/format.json"),
    ),
    (
        "draft2020-12/if-then-else.json",
        Draft::Draft202012,
        include_str!("../../../corpus/json-schema-test-suite/tests/draft2020-12/if-then-else.json"),
    ),
    (
        "draft2020-12/infinite-loop-detection.json",
        Draft::Draft202012,
        include_str!(
            "../../../corpus/json-schema-test-suite/tests/draft2020-12/infinite-loop-detection.json"
        ),
    ),
    (
        "draft2020-12/items.json",
        Draft::Draft202012,
        include_str!("../../../corpus/json-schema-test-suite/tests/draft2020-12/items.json"),
    ),
    (
        "draft2020-12/maxContains.json",
        Draft::Draft202012,
        include_str!("../../../corpus/json-schema-test-suite/tests/draft2020-12/maxContains.json"),
    ),
    (
        "draft2020-12/maxItems.json",
        Draft::Draft202012,
        include_str!("../../../corpus/json-schema-test-suite/tests/draft2020-12/maxItems.json"),
    ),
    (
        "draft2020-12/maxLength.json",
        Draft::Draft202012,
        include_str!("../../../corpus/json-schema-test-suite/tests/draft2020-12/maxLength.json"),
    ),
    (
        "draft2020-12/maxProperties.json",
        Draft::Draft202012,
        include_str!(
            "../../../corpus/json-schema-test-suite/tests/draft2020-12/maxProperties.json"
        ),
    ),
    (
        "draft2020-12/maximum.json",
        Draft::Draft202012,
        include_str!("../../../corpus/json-schema-test-suite/tests/draft2020-12/maximum.json"),
    ),
    (
        "draft2020-12/minContains.json",
        Draft::Draft202012,
        include_str!("../../../corpus/json-schema-test-suite/tests/draft2020-12/minContains.json"),
    ),
    (
        "draft2020-12/minItems.json",
        Draft::Draft202012,
        include_str!("../../../corpus/json-schema-test-suite/tests/draft2020-12/minItems.json"),
    ),
    (
        "draft2020-12/minLength.json",
        Draft::Draft202012,
        include_str!("../../../corpus/json-schema-test-suite/tests/draft2020-12/minLength.json"),
    ),
    (
        "draft2020-12/minProperties.json",
        Draft::Draft202012,
        include_str!(
            "../../../corpus/json-schema-test-suite/tests/draft2020-12/minProperties.json"
        ),
    ),
    (
        "draft2020-12/minimum.json",
        Draft::Draft202012,
        include_str!("../../../corpus/json-schema-test-suite/tests/draft2020-12/minimum.json"),
    ),
    (
        "draft2020-12/multipleOf.json",
        Draft::Draft202012,
        include_str!("../../../corpus/json-schema-test-suite/tests/draft2020-12/multipleOf.json"),
    ),
    (
        "draft2020-12/not.json",
        Draft::Draft202012,
        include_str!("../../../corpus/json-schema-test-suite/tests/draft2020-12/not.json"),
    ),
    (
        "draft2020-12/oneOf.json",
        Draft::Draft202012,
        include_str!("../../../corpus/json-schema-test-suite/tests/draft2020-12/oneOf.json"),
    ),
    (
        "draft2020-12/pattern.json",
        Draft::Draft202012,
        include_str!("../../../corpus/json-schema-test-suite/tests/draft2020-12/pattern.json"),
    ),
    (
        "draft2020-12/patternProperties.json",
        Draft::Draft202012,
        include_str!(
            "../../../corpus/json-schema-test-suite/tests/draft2020-12/patternProperties.json"
        ),
    ),
    (
        "draft2020-12/prefixItems.json",
        Draft::Draft202012,
        include_str!("../../../corpus/json-schema-test-suite/tests/draft2020-12/prefixItems.json"),
    ),
    (
        "draft2020-12/properties.json",
        Draft::Draft202012,
        include_str!("../../../corpus/json-schema-test-suite/tests/draft2020-12/properties.json"),
    ),
    (
        "draft2020-12/propertyNames.json",
        Draft::Draft202012,
        include_str!(
            "../../../corpus/json-schema-test-suite/tests/draft2020-12/propertyNames.json"
        ),
    ),
    (
        "draft2020-12/ref.json",
        Draft::Draft202012,
        include_str!("../../../corpus/json-schema-test-suite/tests/draft2020-12/ref.json"),
    ),
    (
        "draft2020-12/required.json",
        Draft::Draft202012,
        include_str!("../../../corpus/json-schema-test-suite/tests/draft2020-12/required.json"),
    ),
    (
        "draft2020-12/type.json",
        Draft::Draft202012,
        include_str!("../../../corpus/json-schema-test-suite/tests/draft2020-12/type.json"),
    ),
    (
        "draft2020-12/unevaluatedItems.json",
        Draft::Draft202012,
        include_str!(
            "../../../corpus/json-schema-test-suite/tests/draft2020-12/unevaluatedItems.json"
        ),
    ),
    (
        "draft2020-12/unevaluatedProperties.json",
        Draft::Draft202012,
        include_str!(
            "../../../corpus/json-schema-test-suite/tests/draft2020-12/unevaluatedProperties.json"
        ),
    ),
    (
        "draft2020-12/uniqueItems.json",
        Draft::Draft202012,
        include_str!("../../../corpus/json-schema-test-suite/tests/draft2020-12/uniqueItems.json"),
    ),
    (
        "draft2020-12/vocabulary.json",
        Draft::Draft202012,
        include_str!("../../../corpus/json-schema-test-suite/tests/draft2020-12/vocabulary.json"),
    ),
    (
        "draft7/additionalItems.json",
        Draft::Draft7,
        include_str!("../../../corpus/json-schema-test-suite/tests/draft7/additionalItems.json"),
    ),
    (
        "draft7/additionalProperties.json",
        Draft::Draft7,
        include_str!(
            "../../../corpus/json-schema-test-suite/tests/draft7/additionalProperties.json"
        ),
    ),
    (
        "draft7/allOf.json",
        Draft::Draft7,
        include_str!("../../../corpus/json-schema-test-suite/tests/draft7/allOf.json"),
    ),
    (
        "draft7/anyOf.json",
        Draft::Draft7,
        include_str!("../../../corpus/json-schema-test-suite/tests/draft7/anyOf.json"),
    ),
    (
        "draft7/boolean_schema.json",
        Draft::Draft7,
        include_str!("../../../corpus/json-schema-test-suite/tests/draft7/boolean_schema.json"),
    ),
    (
        "draft7/const.json",
        Draft::Draft7,
        include_str!("../../../corpus/json-schema-test-suite/tests/draft7/const.json"),
    ),
    (
        "draft7/contains.json",
        Draft::Draft7,
        include_str!("../../../corpus/json-schema-test-suite/tests/draft7/contains.json"),
    ),
    (
        "draft7/default.json",
        Draft::Draft7,
        include_str!("../../../corpus/json-schema-test-suite/tests/draft7/default.json"),
    ),
    (
        "draft7/definitions.json",
        Draft::Draft7,
        include_str!("../../../corpus/json-schema-test-suite/tests/draft7/definitions.json"),
    ),
    (
        "draft7/dependencies.json",
        Draft::Draft7,
        include_str!("../../../corpus/json-schema-test-suite/tests/draft7/dependencies.json"),
    ),
    (
        "draft7/enum.json",
        Draft::Draft7,
        include_str!("../../../corpus/json-schema-test-suite/tests/draft7/enum.json"),
    ),
    (
        "draft7/exclusiveMaximum.json",
        Draft::Draft7,
        include_str!("../../../corpus/json-schema-test-suite/tests/draft7/exclusiveMaximum.json"),
    ),
    (
        "draft7/exclusiveMinimum.json",
        Draft::Draft7,
        include_str!("../../../corpus/json-schema-test-suite/tests/draft7/exclusiveMinimum.json"),
    ),
    (
        "draft7/format.json",
        Draft::Draft7,
        include_str!("../../../corpus/json-schema-test-suite/tests/draft7/format.json"),
    ),
    (
        "draft7/if-then-else.json",
        Draft::Draft7,
        include_str!("../../../corpus/json-schema-test-suite/tests/draft7/if-then-else.json"),
    ),
    (
        "draft7/infinite-loop-detection.json",
        Draft::Draft7,
        include_str!(
            "../../../corpus/json-schema-test-suite/tests/draft7/infinite-loop-detection.json"
        ),
    ),
    (
        "draft7/items.json",
        Draft::Draft7,
        include_str!("../../../corpus/json-schema-test-suite/tests/draft7/items.json"),
    ),
    (
        "draft7/maxItems.json",
        Draft::Draft7,
        include_str!("../../../corpus/json-schema-test-suite/tests/draft7/maxItems.json"),
    ),
    (
        "draft7/maxLength.json",
        Draft::Draft7,
        include_str!("../../../corpus/json-schema-test-suite/tests/draft7/maxLength.json"),
    ),
    (
        "draft7/maxProperties.json",
        Draft::Draft7,
        include_str!("../../../corpus/json-schema-test-suite/tests/draft7/maxProperties.json"),
    ),
    (
        "draft7/maximum.json",
        Draft::Draft7,
        include_str!("../../../corpus/json-schema-test-suite/tests/draft7/maximum.json"),
    ),
    (
        "draft7/minItems.json",
        Draft::Draft7,
        include_str!("../../../corpus/json-schema-test-suite/tests/draft7/minItems.json"),
    ),
    (
        "draft7/minLength.json",
        Draft::Draft7,
        include_str!("../../../corpus/json-schema-test-suite/tests/draft7/minLength.json"),
    ),
    (
        "draft7/minProperties.json",
        Draft::Draft7,
        include_str!("../../../corpus/json-schema-test-suite/tests/draft7/minProperties.json"),
    ),
    (
        "draft7/minimum.json",
        Draft::Draft7,
        include_str!("../../../corpus/json-schema-test-suite/tests/draft7/minimum.json"),
    ),
    (
        "draft7/multipleOf.json",
        Draft::Draft7,
        include_str!("../../../corpus/json-schema-test-suite/tests/draft7/multipleOf.json"),
    ),
    (
        "draft7/not.json",
        Draft::Draft7,
        include_str!("../../../corpus/json-schema-test-suite/tests/draft7/not.json"),
    ),
    (
        "draft7/oneOf.json",
        Draft::Draft7,
        include_str!("../../../corpus/json-schema-test-suite/tests/draft7/oneOf.json"),
    ),
    (
        "draft7/pattern.json",
        Draft::Draft7,
        include_str!("../../../corpus/json-schema-test-suite/tests/draft7/pattern.json"),
    ),
    (
        "draft7/patternProperties.json",
        Draft::Draft7,
        include_str!("../../../corpus/json-schema-test-suite/tests/draft7/patternProperties.json"),
    ),
    (
        "draft7/properties.json",
        Draft::Draft7,
        include_str!("../../../corpus/json-schema-test-suite/tests/draft7/properties.json"),
    ),
    (
        "draft7/propertyNames.json",
        Draft::Draft7,
        include_str!("../../../corpus/json-schema-test-suite/tests/draft7/propertyNames.json"),
    ),
    (
        "draft7/ref.json",
        Draft::Draft7,
        include_str!("../../../corpus/json-schema-test-suite/tests/draft7/ref.json"),
    ),
    (
        "draft7/required.json",
        Draft::Draft7,
        include_str!("../../../corpus/json-schema-test-suite/tests/draft7/required.json"),
    ),
    (
        "draft7/type.json",
        Draft::Draft7,
        include_str!("../../../corpus/json-schema-test-suite/tests/draft7/type.json"),
    ),
    (
        "draft7/uniqueItems.json",
        Draft::Draft7,
        include_str!("../../../corpus/json-schema-test-suite/tests/draft7/uniqueItems.json"),
    ),
];

const DRAFT7: &str = "http://json-schema.org/draft-07/schema#";

/// The meta-schema of draft 2020-12, the registry's default.
const DRAFT2020: &str = "https://json-schema.org/draft/2020-12/schema";

/// ward's own groups, in the suite's format, after the suite's: one value that breaks every
/// keyword of the first wording table its type has at once (bounds that contradict each other
/// included, which no instance can meet), so that the documented order of one value's own
/// errors and the cap of five are checked for every pair of them. The suite's schemas test
/// one keyword or two at a time, and `jsonschema` reports a value's errors `type` first, then
/// in its keywords' alphabetical order, which differs from the documented one for
/// `exclusiveMinimum` before `minimum`, `maxLength` before `minLength`, and the like. Then two
/// shapes the suite lacks: a list whose items' errors `jsonschema` reports out of the input's
/// order (`items` before `prefixItems`), and a structural root that a member refers back to
/// only through a list (`anyOf: [{"$ref": "#"}]`), as a tree of named nodes does.
const OWN: (&str, Draft, &str) = (
    "ward/own-groups.json",
    Draft::Draft202012,
    r##"[
        {
            "description": "number bounds",
            "schema": {"type": "integer", "const": 1, "enum": [1, 2], "minimum": 6,
                       "exclusiveMinimum": 5.5, "maximum": 5, "exclusiveMaximum": 5.5},
            "tests": [
                {"description": "all seven broken, five listed", "data": 5.5, "valid": false},
                {"description": "the bounds only", "data": 5, "valid": false},
                {"description": "two bounds", "data": 4, "valid": false}
            ]
        },
        {
            "description": "one side's bounds",
            "schema": {"minimum": 2, "exclusiveMinimum": 2, "maximum": 9, "exclusiveMaximum": 9},
            "tests": [
                {"description": "below both", "data": 1, "valid": false},
                {"description": "above both", "data": 10, "valid": false},
                {"description": "between", "data": 5, "valid": true}
            ]
        },
        {
            "description": "string bounds",
            "schema": {"type": "string", "const": "y", "enum": ["x", "y"], "minLength": 3,
                       "maxLength": 1, "pattern": "^a"},
            "tests": [
                {"description": "six broken, five listed", "data": "bb", "valid": false},
                {"description": "a number", "data": 12, "valid": false}
            ]
        },
        {
            "description": "array bounds",
            "schema": {"type": "array", "minItems": 3, "maxItems": 1, "uniqueItems": true,
                       "items": {"type": "string", "maxLength": 0}},
            "tests": [
                {"description": "three broken and the items", "data": ["a", "a"], "valid": false}
            ]
        },
        {
            "description": "enums of no value and of seventeen",
            "schema": {"type": "object",
                       "properties": {"none": {"enum": []},
                                      "many": {"enum": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12,
                                                        13, 14, 15, 16, 17]}}},
            "tests": [
                {"description": "both broken", "data": {"many": 0, "none": 0}, "valid": false},
                {"description": "one of seventeen", "data": {"many": 17}, "valid": true}
            ]
        },
        {
            "description": "object bounds",
            "schema": {"type": "object", "minProperties": 3, "maxProperties": 1,
                       "required": ["b", "a"], "properties": {"c": {"type": "string"}},
                       "additionalProperties": false},
            "tests": [
                {"description": "four broken and the members", "data": {"c": 1, "d": 2},
                 "valid": false}
            ]
        },
        {
            "description": "items the core does not split, whose errors come out of order",
            "schema": {"type": "array", "prefixItems": [{"type": "string"}],
                       "items": {"type": "integer"}},
            "tests": [
                {"description": "the first and the second broken", "data": [1, "x"],
                 "valid": false},
                {"description": "both kept", "data": ["x", 1], "valid": true}
            ]
        },
        {
            "description": "a tree whose nodes refer back to the root from a list",
            "schema": {"type": "object", "required": ["name"], "additionalProperties": false,
                       "properties": {"name": {"type": "string"},
                                      "children": {"type": "array",
                                                   "items": {"anyOf": [{"$ref": "#"}]}}}},
            "tests": [
                {"description": "two levels", "data": {"name": "a", "children": [{"name": "b"}]},
                 "valid": true},
                {"description": "a child without a name",
                 "data": {"name": "a", "children": [{"children": []}]}, "valid": false},
                {"description": "a grandchild with a key too many",
                 "data": {"name": "a", "children": [{"name": "b",
                          "children": [{"name": "c", "colour": "red"}]}]}, "valid": false}
            ]
        }
    ]"##,
);

/// The member a wrapped schema describes.
const MEMBER: &str = "value";

/// Keywords whose meaning depends on where a schema stands in its document.
const PLACED_KEYWORDS: &[&str] = &[
    "$ref",
    "$dynamicRef",
    "$recursiveRef",
    "$id",
    "$anchor",
    "$dynamicAnchor",
    "$recursiveAnchor",
    "$schema",
];

/// Whether `schema` holds a keyword of [`PLACED_KEYWORDS`] anywhere (a property of that name
/// counts too: such a schema is then tried at the root, never wrongly).
fn is_placed(schema: &Value) -> bool {
    match schema {
        Value::Object(object) => object
            .iter()
            .any(|(key, value)| PLACED_KEYWORDS.contains(&key.as_str()) || is_placed(value)),
        Value::Array(items) => items.iter().any(is_placed),
        _ => false,
    }
}

/// A suite schema as tool parameters, and whether it was wrapped as the member `value`; `None`
/// when it cannot describe an object.
fn as_parameters(schema: &Value, draft: Draft) -> Option<(Value, bool)> {
    let (mut parameters, wrapped) = if is_placed(schema) {
        let mut parameters = schema.as_object()?.clone();
        match parameters.get("type") {
            None => {
                parameters.insert("type".to_owned(), json!("object"));
            }
            Some(kind) if kind == "object" => {}
            Some(_) => return None,
        }
        (parameters, false)
    } else {
        let mut parameters = serde_json::Map::new();
        parameters.insert("type".to_owned(), json!("object"));
        parameters.insert("properties".to_owned(), json!({ MEMBER: schema }));
        parameters.insert("required".to_owned(), json!([MEMBER]));
        (parameters, true)
    };
    if draft == Draft::Draft7 && !parameters.contains_key("$schema") {
        parameters.insert("$schema".to_owned(), json!(DRAFT7));
    }
    Some((Value::Object(parameters), wrapped))
}

/// The body of every probe tool: it ran.
fn body(_context: &ToolContext, _input: Value) -> Result<Value, ToolError> {
    Ok(json!({"ran": true}))
}

/// A registry of one read-only probe tool, `name`, with `parameters`, whose body only says it
/// ran: how the oracle's once-per-process checks (this sweep, R8's cost) call the registry.
pub(super) fn probe(
    name: &str,
    description: &str,
    parameters: &Value,
) -> Result<Registry, RegistryError> {
    let mut builder = RegistryBuilder::new();
    builder.register(
        ToolSpec {
            name: name.to_owned(),
            label: "Probe".to_owned(),
            description: description.to_owned(),
            parameters: parameters.clone(),
            safety: Safety::ReadOnly,
            execution_mode: ExecutionMode::Parallel,
        },
        body,
    )?;
    Ok(builder.build())
}

/// The first way the runtime's validation differs from the suite and R6–R8a, computed once
/// per process.
pub fn disagreement() -> Option<String> {
    static FOUND: OnceLock<Option<String>> = OnceLock::new();
    FOUND
        .get_or_init(|| first_disagreement(&mut Tried::default()))
        .clone()
}

/// What the sweep tried.
#[derive(Debug, Default)]
struct Tried {
    /// Instances called.
    cases: usize,
    /// Of those, invalid ones.
    invalid: usize,
    /// Of those, the ones whose error list was predicted exactly.
    predicted: usize,
}

fn first_disagreement(tried: &mut Tried) -> Option<String> {
    for (file, draft, text) in FILES.iter().chain([&OWN]) {
        let Ok(Value::Array(groups)) = serde_json::from_str::<Value>(text) else {
            return Some(format!("the suite file {file} does not read as JSON"));
        };
        for group in &groups {
            let (Some(schema), Some(tests)) = (
                group.get("schema"),
                group.get("tests").and_then(Value::as_array),
            ) else {
                continue;
            };
            for (schema, wrapped) in variants(schema, *draft) {
                if let Some(differs) = try_group(file, group, tests, &schema, wrapped, tried) {
                    return Some(differs);
                }
            }
        }
    }
    None
}

/// The ways a suite schema is registered: as written, and, when its `$schema` names draft
/// 2020-12, once more without it. The registry reads a schema without `$schema` as draft
/// 2020-12 (R5), so both mean the same; only the second lets the core split a root that holds
/// a reference (`{"properties": {"foo": {"$ref": "#"}}}`): `$schema` is no structural keyword.
fn variants(schema: &Value, draft: Draft) -> Vec<(Value, bool)> {
    let mut variants: Vec<(Value, bool)> = as_parameters(schema, draft).into_iter().collect();
    if let Some(object) = schema.as_object()
        && object.get("$schema").and_then(Value::as_str) == Some(DRAFT2020)
    {
        let mut unnamed = object.clone();
        unnamed.remove("$schema");
        variants.extend(as_parameters(&Value::Object(unnamed), draft));
    }
    variants
}

/// The first disagreement of one group's instances with one registration of its schema.
fn try_group(
    file: &str,
    group: &Value,
    tests: &[Value],
    schema: &Value,
    wrapped: bool,
    tried: &mut Tried,
) -> Option<String> {
    let (chart, policy, guard) = (
        SharedChart::new(0),
        RunPolicy::default(),
        SecretGuard::default(),
    );
    // `jsonschema`'s verdict, for the root schemas' `"type": "object"` only.
    let verdict = (!wrapped)
        .then(|| jsonschema::validator_for(schema).ok())
        .flatten();
    let named = |what: &str| {
        let description = group["description"].as_str().unwrap_or("?");
        format!("R8a, {file}, \"{description}\": {what}")
    };
    let description = "Validates one instance of the JSON Schema Test Suite.";
    let registry = match probe("suite_probe", description, schema) {
        Ok(registry) => registry,
        Err(_) if schema.to_string().contains("localhost:1234") => return None,
        Err(error) => return Some(named(&format!("registration refused the schema ({error})"))),
    };
    let mut patterns = Patterns::default();
    patterns.add(schema);
    for (index, test) in tests.iter().enumerate() {
        let Some((data, valid)) = instance(test, wrapped, verdict.as_ref()) else {
            continue;
        };
        let data = &data;
        tried.cases += 1;
        tried.invalid += usize::from(!valid);
        let (id, name) = (format!("case_{index}"), "suite_probe".to_owned());
        let call = ToolCall {
            id,
            name,
            arguments: data.to_string(),
        };
        let Some(result) = registry
            .execute_standalone(&policy, &guard, &chart, &call)
            .now_or_never()
        else {
            return Some(named("the entry point did not finish at once"));
        };
        let case = Case {
            data,
            arguments: &call.arguments,
            valid,
            schema,
            patterns: &patterns,
        };
        if let Some(differs) = case.differs(&result.outcome, tried) {
            let description = test["description"].as_str().unwrap_or("?");
            return Some(named(&format!("\"{description}\": {differs}")));
        }
    }
    None
}

/// A test's instance as it is sent, and the suite's verdict: a wrapped instance keeps the
/// suite's verdict; one at the root is tried only when it is an object whose verdict
/// `"type": "object"` (the root's `verdict`) keeps.
fn instance(
    test: &Value,
    wrapped: bool,
    verdict: Option<&jsonschema::Validator>,
) -> Option<(Value, bool)> {
    let (data, valid) = (test.get("data")?, test["valid"].as_bool()?);
    if wrapped {
        return Some((json!({ MEMBER: data }), valid));
    }
    let kept = verdict.is_some_and(|verdict| data.is_object() && verdict.is_valid(data) == valid);
    kept.then(|| (data.clone(), valid))
}

/// One instance of a group, as sent.
struct Case<'c> {
    data: &'c Value,
    arguments: &'c str,
    valid: bool,
    schema: &'c Value,
    patterns: &'c Patterns,
}

impl Case<'_> {
    /// How the entry point's outcome differs from the suite's verdict and R6–R7, if it does.
    fn differs(&self, outcome: &Outcome, tried: &mut Tried) -> Option<String> {
        match (outcome, self.valid) {
            (Outcome::Success(_), true) => None,
            (Outcome::Failure(error), true) => Some(format!("a valid instance got {}", error.code)),
            (Outcome::Success(_), false) => Some("an invalid instance reached the body".to_owned()),
            (Outcome::Failure(error), false) => list_differs(
                error,
                self.data,
                self.arguments,
                self.schema,
                self.patterns,
                tried,
            ),
        }
    }
}

/// How the error list of an invalid instance differs from R6–R8a.
fn list_differs(
    error: &ToolError,
    data: &Value,
    arguments: &str,
    schema: &Value,
    patterns: &Patterns,
    tried: &mut Tried,
) -> Option<String> {
    if error.code != "TOOL_INPUT_INVALID" {
        return Some(format!("an invalid instance got {}", error.code));
    }
    let fields = error.fields.as_deref().unwrap_or_default();
    if fields.is_empty() || fields.len() > FIELD_ERRORS_MAX {
        return Some(format!(
            "{} field errors, not 1 to {FIELD_ERRORS_MAX}",
            fields.len()
        ));
    }
    let listed: Vec<String> = fields
        .iter()
        .map(|field| format!("{}: {}", field.path, field.message))
        .collect();
    if error.message != format!("The tool input is invalid: {}", listed.join("; ")) {
        return Some("the message is not the prefix and the `path: message` list".to_owned());
    }
    if let Some(field) = fields
        .iter()
        .find(|field| field.path != "/" && data.pointer(&field.path).is_none())
    {
        return Some(format!(
            "the path {:?} does not resolve in the instance",
            field.path
        ));
    }
    let listed_fields = fields
        .iter()
        .map(|field| (field.path.as_str(), field.message.as_str()));
    if let Some(out_of_order) = input_errors::out_of_order(data, listed_fields) {
        return Some(out_of_order);
    }
    match input_errors::predict(arguments, schema, patterns) {
        Some(mut expected) if !expected.is_empty() => {
            tried.predicted += 1;
            expected.truncate(FIELD_ERRORS_MAX);
            let same = expected.len() == fields.len()
                && expected
                    .iter()
                    .zip(fields)
                    .all(|(want, got)| want.path == got.path && want.message.matches(&got.message));
            (!same).then(|| {
                let want: Vec<String> = expected.iter().map(ToString::to_string).collect();
                format!(
                    "the errors are `{}`; R6 and R7 give `{}`",
                    listed.join("; "),
                    want.join("; ")
                )
            })
        }
        _ => fields
            .iter()
            .find(|field| !input_errors::is_documented(&field.message))
            .map(|field| format!("the message {:?} is no documented wording", field.message)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_core_agrees_with_the_suite_on_every_case_tried() {
        let mut tried = Tried::default();
        assert_eq!(first_disagreement(&mut tried), None);
        assert!(tried.cases > 2400 && tried.invalid > 1000, "{tried:?}");
        assert!(
            tried.predicted > 340 && tried.predicted < tried.invalid,
            "{tried:?}"
        );
    }

    #[test]
    fn a_generic_or_misplaced_message_is_a_disagreement() {
        let schema = json!({"type": "object", "anyOf": [{"required": ["a"]}]});
        let patterns = Patterns::default();
        let error = |path: &str, message: &str| ToolError {
            code: "TOOL_INPUT_INVALID".to_owned(),
            message: format!("The tool input is invalid: {path}: {message}"),
            retryable: true,
            recommended_action: String::new(),
            fields: Some(vec![ward_core::envelope::FieldError {
                path: path.to_owned(),
                message: message.to_owned(),
            }]),
        };
        let data = json!({"b": 1});
        let mut tried = Tried::default();
        let judge = |error: &ToolError, tried: &mut Tried| {
            list_differs(error, &data, &data.to_string(), &schema, &patterns, tried)
        };
        assert_eq!(
            judge(
                &error("/", "must match one of the allowed forms"),
                &mut tried
            ),
            None
        );
        assert!(judge(&error("/", "does not match"), &mut tried).is_some());
        assert!(
            judge(
                &error("/c", "must match one of the allowed forms"),
                &mut tried
            )
            .is_some()
        );
    }
}

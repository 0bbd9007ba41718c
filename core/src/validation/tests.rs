//! The validator's unit tests: parsing (R6), the verdict and the bounded walk (R6–R8), the
//! messages (R7), references and drafts (R8a).

use serde_json::Value;

use super::messages::UNEXPECTED_PROPERTY;
use super::*;
use crate::envelope::FieldError;
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
fn text_that_repeats_a_key_and_then_is_not_json_is_not_json() {
    // Cut short after the repeat: no object path points into text that is not JSON.
    let error = parse_arguments(r#"{"anchors":[{"price":1,"price":2}],"note":"cut"#).unwrap_err();
    assert_eq!(
        (error.path.as_str(), error.message.as_str()),
        (
            "/",
            "is not valid JSON: EOF while parsing a string (line 1, column 46)"
        )
    );
    let error = parse_arguments(r#"{"a":1,"a":2} trailing"#).unwrap_err();
    assert_eq!(error.path, "/");
    assert!(
        error.message.contains("trailing characters"),
        "{}",
        error.message
    );
    // A repeat in text that is JSON all through is still named where it stands.
    let error = parse_arguments(r#"{"a":1,"a":2}  "#).unwrap_err();
    assert_eq!(
        (error.path.as_str(), error.message.as_str()),
        ("/", "repeats a key (line 1, column 10)")
    );
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

/// The row of `keyword` in the wording table of this module's docs, with its placeholders
/// filled from `bound` (the schema's value for the keyword).
fn documented(keyword: &str, bound: &Value) -> String {
    let docs = include_str!("mod.rs");
    let table = &docs[docs.find("<!-- wording: begin -->").unwrap()..];
    let row = table
        .lines()
        .find(|line| line.contains(&format!("| `{keyword}` |")))
        .unwrap_or_else(|| panic!("no row for {keyword}"));
    // `//! | `keyword` | `message` … |`: the message is the first code span of the third cell.
    let cell = row.split(" | ").nth(2).unwrap();
    let template = cell.split('`').nth(1).unwrap();
    let written = |value: &Value| match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    };
    let count = bound.as_u64().unwrap_or(0);
    template
        .replace("{n}", &written(bound))
        .replace("{s}", if count == 1 { "" } else { "s" })
        .replace("{y}", if count == 1 { "y" } else { "ies" })
        .replace("{value}", &written(bound))
        .replace("{pattern}", &written(bound))
        .replace("{name}", &written(&bound[0]))
        .replace(
            "{values}",
            &bound
                .as_array()
                .map(|values| values.iter().map(written).collect::<Vec<_>>().join(", "))
                .unwrap_or_default(),
        )
}

fn bare_messages(schema: &Value, input: &Value) -> Vec<String> {
    let schema = ToolSchema::compile(schema).expect("the schema compiles");
    let errors = schema.validate(input).expect_err("the input is invalid");
    errors.into_iter().map(|error| error.message).collect()
}

#[test]
fn every_message_is_the_documented_wording() {
    // (keyword, its bound, an input that breaks it); the first row's message is the type's.
    let cases = [
        ("type", json!("integer"), json!("x")),
        ("const", json!("fixed"), json!(1)),
        ("enum", json!(["daily", 5]), json!(1)),
        ("minLength", json!(1), json!("")),
        ("minLength", json!(3), json!("ab")),
        ("maxLength", json!(1), json!("ab")),
        ("maxLength", json!(2), json!("abc")),
        ("pattern", json!("^[0-9]+$"), json!("a")),
        ("minimum", json!(1), json!(0)),
        ("exclusiveMinimum", json!(0), json!(0)),
        ("maximum", json!(1000000000.0), json!(2e9)),
        ("exclusiveMaximum", json!(5), json!(5)),
        ("minItems", json!(1), json!([])),
        ("maxItems", json!(2), json!([1, 2, 3])),
        ("uniqueItems", json!(true), json!([1, 1])),
        ("minProperties", json!(1), json!({})),
        ("maxProperties", json!(1), json!({"a": 1, "b": 2})),
        ("maxProperties", json!(2), json!({"a": 1, "b": 2, "c": 3})),
        ("required", json!(["symbol"]), json!({})),
    ];
    for (keyword, bound, input) in cases {
        let schema = json!({ keyword: bound.clone() });
        let got = bare_messages(&schema, &input);
        let want = if keyword == "type" {
            "must be an integer".to_owned()
        } else {
            documented(keyword, &bound)
        };
        assert_eq!(got, [want], "{keyword}");
    }
    let type_row = include_str!("mod.rs")
        .lines()
        .find(|line| line.contains("| `type` |"))
        .unwrap();
    for (kind, article) in [
        ("string", "a string"),
        ("number", "a number"),
        ("integer", "an integer"),
        ("boolean", "a boolean"),
        ("object", "an object"),
        ("array", "an array"),
        ("null", "null"),
    ] {
        assert!(type_row.contains(&format!("{article}`")), "{kind}");
        let input = if kind == "string" {
            json!(1)
        } else {
            json!("x")
        };
        let got = bare_messages(&json!({ "type": kind }), &input);
        assert_eq!(got, [format!("must be {article}")], "{kind}");
    }
    let got = bare_messages(&json!({"additionalProperties": false}), &json!({"k": 1}));
    assert_eq!(got, [documented("additionalProperties", &json!(false))]);
}

#[test]
fn the_documented_order_is_the_wording_tables() {
    let docs = include_str!("mod.rs");
    let table = &docs[docs.find("<!-- wording: begin -->").unwrap()
        ..docs.find("<!-- wording: end -->").unwrap()];
    let listed: Vec<&str> = table
        .lines()
        .filter_map(|line| line.split("| `").nth(1)?.split('`').next())
        .collect();
    let ranked: Vec<&str> = super::messages::DOCUMENTED_ORDER
        .iter()
        .copied()
        .filter(|keyword| !matches!(*keyword, "format" | "multipleOf"))
        .collect();
    assert_eq!(listed, ranked);
}

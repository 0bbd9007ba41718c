//! Property suite: input validation (R5–R8) for every tool of the catalogue.
//!
//! Each case draws one input per tool from that tool's own `parameters` schema (valid,
//! near-valid, or arbitrary JSON; see `strategies`) and checks:
//!
//! - `validate` accepts exactly what the published schema accepts, compiled here from the
//!   tool's published text: ward's verdict is `jsonschema`'s, so this checks which schema and
//!   draft ward compiles and that the bounded walk agrees with the verdict, not the crate;
//! - an invalid input gives 1–5 errors, exactly the first ones of the unbounded list
//!   (`all_errors`), which itself holds one error per error `jsonschema` reports (one per
//!   unexpected key) in the documented order: pre-order over the input, a value's own errors
//!   ranked by keyword, missing properties in the schema's `required` order;
//! - no message quotes a value or a key taken from the input (R7);
//! - every path points into the input: a missing property at its parent (which lacks it),
//!   an unexpected property at its key (which its parent holds), anything else at the value
//!   itself, the root written `/`;
//! - through the entry point, the envelope carries exactly those errors, in R6's message
//!   format, and changes nothing; a valid input is always understood by its tool;
//! - a repeated key is one error at its object's path.

mod strategies;
mod support;

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::sync::{Arc, LazyLock};
use support::code;

use futures::future::BoxFuture;
use jsonschema::error::ValidationErrorKind;
use proptest::prelude::*;
use proptest::sample::Index;
use serde_json::Value;
use strategies::{Segment, config, member_schema, near_valid, preorder, quotable, regressions};
use ward_core::chart::SharedChart;
use ward_core::chart::tools::{CatalogueOptions, register_tools};
use ward_core::envelope::{FieldError, Outcome, ToolError, ToolResult, codes};
use ward_core::fault::FaultSet;
use ward_core::guard::SecretGuard;
use ward_core::policy::RunPolicy;
use ward_core::registry::{CallIds, CallScope, Registry, RegistryBuilder, Tool};
use ward_core::tool::{ToolBody, ToolCall, ToolContext};
use ward_core::validation::{ARGUMENT_BYTES_MAX, FIELD_ERRORS_MAX, parse_arguments};

/// Every text a message may legitimately contain besides the schema's own: the templates
/// of ward's messages (R7).
const MESSAGE_TEMPLATES: &str = "must be a string; must be an integer; must be a number; \
must be a boolean; must be an object; must be an array; must be null; must be one of the \
types: ; must be one of: ; must be one of the allowed values; must be at least 1 character \
long; characters long; must be at most; must match the pattern; must be a valid; must be \
greater than; must be less than; must be a multiple of; must have at least; item; items; \
must have at most; must not contain duplicate items; property; properties; missing required \
property ''; missing a required property; is not an allowed property; must match one of the \
allowed forms; must match exactly one of the allowed forms; must not match the excluded \
form; is not allowed; must contain at least one matching item; has a property name that is \
not allowed; does not match the schema";

const UNEXPECTED_PROPERTY: &str = "is not an allowed property";
const MISSING_PROPERTY: &str = "missing required property '";

/// One tool with its independently compiled oracle.
struct Checked {
    name: String,
    parameters: Value,
    oracle: jsonschema::Validator,
    /// The schema's text and the message templates: what a message may quote.
    vocabulary: String,
}

struct Catalogue {
    registry: Registry,
    tools: Vec<Checked>,
}

thread_local! {
    /// The tool bodies that ran on this thread (each test runs on its own thread).
    static RAN: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
}

/// Records that its body ran, then runs it.
struct Recorded {
    inner: Arc<dyn ToolBody>,
    name: String,
}

impl ToolBody for Recorded {
    fn call<'a>(
        &'a self,
        context: &'a ToolContext,
        input: Value,
    ) -> BoxFuture<'a, Result<Value, ToolError>> {
        RAN.with_borrow_mut(|ran| ran.push(self.name.clone()));
        self.inner.call(context, input)
    }
}

static CATALOGUE: LazyLock<Catalogue> = LazyLock::new(|| {
    let mut builder = RegistryBuilder::new();
    register_tools(
        &mut builder,
        CatalogueOptions {
            code_interpreter: true,
        },
    )
    .expect("the catalogue registers");
    builder.wrap_bodies(|meta, inner| {
        Arc::new(Recorded {
            inner,
            name: meta.name().to_owned(),
        })
    });
    let registry = builder.build();
    let tools = registry
        .tools()
        .map(|tool| {
            let parameters = tool.meta().parameters().clone();
            Checked {
                name: tool.name().to_owned(),
                oracle: jsonschema::validator_for(&parameters).expect("published schemas compile"),
                vocabulary: vocabulary(&parameters),
                parameters,
            }
        })
        .collect();
    Catalogue { registry, tools }
});

/// What a message may quote: the schema's text, its allowed values listed as a message
/// lists them, and the message templates.
fn vocabulary(parameters: &Value) -> String {
    fn enums(schema: &Value, out: &mut Vec<String>) {
        match schema {
            Value::Object(members) => {
                if let Some(Value::Array(options)) = members.get("enum") {
                    let names: Vec<String> = options
                        .iter()
                        .map(|option| option.as_str().map_or(option.to_string(), str::to_owned))
                        .collect();
                    out.push(format!("must be one of: {}", names.join(", ")));
                }
                members.values().for_each(|member| enums(member, out));
            }
            Value::Array(items) => items.iter().for_each(|item| enums(item, out)),
            _ => {}
        }
    }
    let mut lists = Vec::new();
    enums(parameters, &mut lists);
    format!("{parameters} {} {MESSAGE_TEMPLATES}", lists.join(" "))
}

fn tool(checked: &Checked) -> &'static Tool {
    CATALOGUE.registry.get(&checked.name).expect("registered")
}

/// One input per tool, in registration order.
fn inputs() -> Vec<BoxedStrategy<Value>> {
    CATALOGUE
        .tools
        .iter()
        .map(|checked| near_valid(&checked.parameters))
        .collect()
}

/// How many errors `jsonschema` reports for `input`, one per unexpected key.
fn oracle_error_count(checked: &Checked, input: &Value) -> usize {
    checked
        .oracle
        .iter_errors(input)
        .map(|error| match error.kind() {
            ValidationErrorKind::AdditionalProperties { unexpected } => unexpected.len(),
            _ => 1,
        })
        .sum()
}

/// The keyword rank of a message, in the documented order.
fn rank(message: &str) -> u8 {
    let rules: [(&str, u8); 19] = [
        ("must be one of the types", 0),
        ("must be one of", 2),
        ("must be a valid ", 6),
        ("must be a multiple of", 11),
        ("must be greater than", 8),
        ("must be less than", 10),
        ("must match the pattern", 5),
        ("must not contain duplicate items", 14),
        (MISSING_PROPERTY, 17),
        (UNEXPECTED_PROPERTY, 18),
        ("must be a ", 0),
        ("must be an ", 0),
        ("must be null", 0),
        ("must be at least", 7),
        ("must be at most", 9),
        ("must have at least", 12),
        ("must have at most", 13),
        ("missing a required property", 17),
        ("", 19),
    ];
    let (_, rank) = rules
        .iter()
        .find(|(prefix, _)| message.starts_with(prefix))
        .expect("the empty prefix matches");
    match *rank {
        7 if message.ends_with(" long") => 3,
        9 if message.ends_with(" long") => 4,
        12 | 13 if message.contains(" propert") => rank + 3,
        _ => *rank,
    }
}

/// The pointer's segments, unescaped; `/` is the root.
fn segments(path: &str) -> Vec<String> {
    if path == "/" {
        return Vec::new();
    }
    path[1..]
        .split('/')
        .map(|segment| segment.replace("~1", "/").replace("~0", "~"))
        .collect()
}

/// The parent's pointer (as `Value::pointer` reads it) and the last key of `path`.
fn split_last(path: &str) -> (&str, String) {
    let at = path.rfind('/').expect("paths start with /");
    (
        &path[..at],
        path[at + 1..].replace("~1", "/").replace("~0", "~"),
    )
}

/// The sub-schema governing the value at `path` (an unexpected property has none).
fn schema_at(schema: &Value, input: &Value, path: &str) -> Option<Value> {
    let mut schema = schema.clone();
    let mut value = input;
    for segment in segments(path) {
        match value {
            Value::Object(members) => {
                value = members.get(&segment)?;
                schema = member_schema(&schema, &segment)?;
            }
            Value::Array(items) => {
                value = items.get(segment.parse::<usize>().ok()?)?;
                schema = schema.get("items")?.clone();
            }
            _ => return None,
        }
    }
    Some(schema)
}

/// Where an error stands in the documented order: its value's pre-order position, then its
/// keyword rank.
fn order_key(
    positions: &std::collections::BTreeMap<String, usize>,
    error: &FieldError,
) -> (usize, u8) {
    let pointer = if error.path == "/" && error.message != UNEXPECTED_PROPERTY {
        ""
    } else {
        error.path.as_str()
    };
    let position = positions.get(pointer).copied().unwrap_or(usize::MAX);
    (position, rank(&error.message))
}

/// The path of `error` points into `input` as R6 describes.
fn check_path(input: &Value, error: &FieldError) -> Result<(), TestCaseError> {
    prop_assert!(error.path.starts_with('/'), "{error}");
    if error.message == UNEXPECTED_PROPERTY {
        let (parent, key) = split_last(&error.path);
        let holds_key = input
            .pointer(parent)
            .and_then(Value::as_object)
            .is_some_and(|members| members.contains_key(&key));
        prop_assert!(holds_key, "{error}: no object in the input holds that key");
        return Ok(());
    }
    let target = if error.path == "/" {
        Some(input)
    } else {
        input.pointer(&error.path)
    };
    prop_assert!(target.is_some(), "{error}: the path is not in the input");
    if let Some(name) = error
        .message
        .strip_prefix(MISSING_PROPERTY)
        .and_then(|rest| rest.strip_suffix('\''))
    {
        let lacks = target
            .and_then(Value::as_object)
            .is_some_and(|members| !members.contains_key(name));
        prop_assert!(lacks, "{error}: the parent is not an object lacking it");
    }
    Ok(())
}

/// No message quotes a key or a value of the input that is not also schema or template
/// text (R7). Texts under 4 characters are too short to tell a quote from a word.
fn check_no_echo(
    checked: &Checked,
    input: &Value,
    errors: &[FieldError],
) -> Result<(), TestCaseError> {
    let mut texts = Vec::new();
    quotable(input, &mut texts);
    let texts: BTreeSet<String> = texts.into_iter().collect();
    let texts: Vec<&String> = texts
        .iter()
        .filter(|text| text.chars().count() >= 4 && !checked.vocabulary.contains(text.as_str()))
        .collect();
    for error in errors {
        for text in &texts {
            prop_assert!(
                !error.message.contains(text.as_str()),
                "{} quotes {text:?} from the input: {error}",
                checked.name
            );
        }
    }
    Ok(())
}

/// The unbounded list is in the documented order.
fn check_order(checked: &Checked, input: &Value, all: &[FieldError]) -> Result<(), TestCaseError> {
    let positions = preorder(input);
    for pair in all.windows(2) {
        let (first, second) = (
            order_key(&positions, &pair[0]),
            order_key(&positions, &pair[1]),
        );
        prop_assert!(
            first <= second,
            "{}: {} comes before {} against the documented order",
            checked.name,
            pair[0],
            pair[1]
        );
        let both_missing = first == second && first.1 == 17;
        if both_missing {
            let required: Vec<String> = schema_at(&checked.parameters, input, &pair[0].path)
                .and_then(|schema| schema.get("required").cloned())
                .and_then(|required| serde_json::from_value(required).ok())
                .unwrap_or_default();
            let index = |error: &FieldError| {
                required
                    .iter()
                    .position(|name| error.message == format!("{MISSING_PROPERTY}{name}'"))
            };
            prop_assert!(
                index(&pair[0]) < index(&pair[1]),
                "{}: missing properties out of the schema's order: {} then {}",
                checked.name,
                pair[0],
                pair[1]
            );
        }
    }
    Ok(())
}

fn check_validation(checked: &Checked, input: &Value) -> Result<(), TestCaseError> {
    let schema = tool(checked).schema();
    let verdict = checked.oracle.is_valid(input);
    let all = schema.all_errors(input);
    prop_assert_eq!(
        all.len(),
        oracle_error_count(checked, input),
        "{}: the unbounded list lost or invented errors",
        checked.name
    );
    match schema.validate(input) {
        Ok(()) => {
            prop_assert!(verdict, "{}: an invalid input passed", checked.name);
            prop_assert!(all.is_empty());
        }
        Err(errors) => {
            prop_assert!(!verdict, "{}: a valid input was refused", checked.name);
            prop_assert!(
                (1..=FIELD_ERRORS_MAX).contains(&errors.len()),
                "{}: {} errors",
                checked.name,
                errors.len()
            );
            let expected = &all[..all.len().min(FIELD_ERRORS_MAX)];
            prop_assert_eq!(&errors[..], expected, "{}", checked.name);
            check_order(checked, input, &all)?;
            for error in &errors {
                check_path(input, error)?;
            }
            check_no_echo(checked, input, &errors)?;
        }
    }
    Ok(())
}

/// Calls `name` through the entry point; also whether its body ran.
fn execute(
    chart: &SharedChart,
    name: &str,
    arguments: String,
    faults: FaultSet,
) -> (ToolResult, bool) {
    let policy = RunPolicy::normal();
    let guard = SecretGuard::default();
    let scope = CallScope {
        policy: &policy,
        offered: &[],
        guard: &guard,
        faults,
    };
    RAN.with_borrow_mut(Vec::clear);
    let call = ToolCall {
        id: "call-1".to_owned(),
        name: name.to_owned(),
        arguments,
    };
    let context = ToolContext::standalone(chart.clone(), &call);
    let result = futures::executor::block_on(CATALOGUE.registry.execute(
        &scope,
        &mut CallIds::default(),
        &call,
        &context,
    ));
    let ran = RAN.with_borrow(|ran| ran.iter().any(|ran| ran == name));
    (result, ran)
}

/// The entry point refuses exactly the inputs validation refuses, with exactly its errors,
/// before the body runs (I5).
fn check_envelope(
    chart: &SharedChart,
    checked: &Checked,
    text: String,
    faults: FaultSet,
) -> Result<(), TestCaseError> {
    let expected: Option<Vec<FieldError>> = if text.len() > ARGUMENT_BYTES_MAX {
        None
    } else {
        match parse_arguments(&text) {
            Err(error) => Some(vec![error]),
            Ok(parsed) => tool(checked).schema().validate(&parsed).err(),
        }
    };
    let oversized = text.len() > ARGUMENT_BYTES_MAX;
    let before = chart.snapshot();
    let (result, ran) = execute(chart, &checked.name, text, faults);
    if oversized {
        prop_assert_eq!(code(&result), codes::PAYLOAD_TOO_LARGE);
        prop_assert!(!ran);
        return Ok(());
    }
    match (expected, &result.outcome) {
        (Some(fields), Outcome::Failure(error)) => {
            prop_assert_eq!(&error.code, codes::TOOL_INPUT_INVALID, "{}", checked.name);
            let listed: Vec<String> = fields.iter().map(ToString::to_string).collect();
            prop_assert_eq!(
                &error.message,
                &format!("The tool input is invalid: {}", listed.join("; "))
            );
            prop_assert_eq!(error.fields.as_ref(), Some(&fields));
            prop_assert!(!ran, "{}: the body ran on an invalid input", checked.name);
            prop_assert!(!result.state_changed);
            prop_assert_eq!(
                chart.snapshot(),
                before,
                "a refused input changed the chart"
            );
        }
        (Some(_), Outcome::Success(_)) => {
            prop_assert!(false, "{}: an invalid input ran", checked.name);
        }
        (None, _) => {
            prop_assert!(
                ran,
                "{}: a valid input did not reach the body",
                checked.name
            );
            prop_assert_ne!(code(&result), codes::TOOL_INPUT_INVALID, "{}", checked.name);
            prop_assert_ne!(
                code(&result),
                "INPUT_NOT_UNDERSTOOD",
                "{}: a valid input could not be read by its tool",
                checked.name
            );
        }
    }
    Ok(())
}

/// `value` as JSON text, with the first member of the object at `target` written twice.
fn with_repeated_key(value: &Value, target: &[Segment], path: &mut Vec<Segment>) -> String {
    match value {
        Value::Object(members) => {
            let mut parts: Vec<String> = members
                .iter()
                .map(|(key, member)| {
                    path.push(Segment::Key(key.clone()));
                    let text = with_repeated_key(member, target, path);
                    path.pop();
                    format!("{}:{text}", Value::String(key.clone()))
                })
                .collect();
            if path == target
                && let Some(first) = parts.first().cloned()
            {
                parts.push(first);
            }
            format!("{{{}}}", parts.join(","))
        }
        Value::Array(items) => {
            let parts: Vec<String> = items
                .iter()
                .enumerate()
                .map(|(index, item)| {
                    path.push(Segment::Index(index));
                    let text = with_repeated_key(item, target, path);
                    path.pop();
                    text
                })
                .collect();
            format!("[{}]", parts.join(","))
        }
        scalar => scalar.to_string(),
    }
}

/// The non-empty objects of `value`, by path, in pre-order.
fn objects(value: &Value, path: &mut Vec<Segment>, out: &mut Vec<Vec<Segment>>) {
    match value {
        Value::Object(members) => {
            if !members.is_empty() {
                out.push(path.clone());
            }
            for (key, member) in members {
                path.push(Segment::Key(key.clone()));
                objects(member, path, out);
                path.pop();
            }
        }
        Value::Array(items) => {
            for (index, item) in items.iter().enumerate() {
                path.push(Segment::Index(index));
                objects(item, path, out);
                path.pop();
            }
        }
        _ => {}
    }
}

/// A tool and a valid input for it.
fn valid_call() -> impl Strategy<Value = (usize, Value)> {
    (0..CATALOGUE.tools.len()).prop_flat_map(|index| {
        strategies::valid(&CATALOGUE.tools[index].parameters).prop_map(move |value| (index, value))
    })
}

/// Every property of the suite over one input per tool.
fn check_inputs(inputs: &[Value]) -> Result<(), TestCaseError> {
    for (checked, input) in CATALOGUE.tools.iter().zip(inputs) {
        check_validation(checked, input)?;
    }
    Ok(())
}

/// The entry point's envelope for one input per tool, on one chart.
fn check_envelopes(inputs: Vec<Value>, faults: FaultSet) -> Result<(), TestCaseError> {
    let chart = SharedChart::new(7);
    for (checked, input) in CATALOGUE.tools.iter().zip(inputs) {
        check_envelope(&chart, checked, input.to_string(), faults)?;
    }
    Ok(())
}

proptest! {
    #![proptest_config(config(48, regressions!("prop_validation")))]

    /// R5–R8 for every tool: the verdict, the bound, the order, the paths, no echo.
    #[test]
    fn every_tool_accepts_what_its_published_schema_accepts_with_bounded_ordered_value_free_errors(
        inputs in inputs()
    ) {
        check_inputs(&inputs)?;
    }

    /// R3, R6, I5: the entry point reports exactly what parsing and validation found, in
    /// R6's format, before any body runs, and a refused input changes nothing.
    #[test]
    fn the_entry_point_reports_exactly_what_validation_finds(inputs in inputs()) {
        check_envelopes(inputs, FaultSet::EMPTY)?;
    }

    /// R6: an object that repeats a key is one error at that object's path, whatever else
    /// is wrong or right.
    #[test]
    fn a_repeated_key_is_one_error_at_its_object((index, value) in valid_call(), which in any::<Index>()) {
        let mut candidates = Vec::new();
        objects(&value, &mut Vec::new(), &mut candidates);
        prop_assume!(!candidates.is_empty());
        let target = &candidates[which.index(candidates.len())];
        let text = with_repeated_key(&value, target, &mut Vec::new());
        let error = parse_arguments(&text).expect_err("a repeated key is refused");
        prop_assert_eq!(&error.path, &strategies::pointer(target));
        prop_assert!(error.message.starts_with("repeats a key (line 1, column "), "{}", error);
        let checked = &CATALOGUE.tools[index];
        let (result, ran) = execute(&SharedChart::new(7), &checked.name, text, FaultSet::EMPTY);
        prop_assert!(!ran);
        let fields = result.error().and_then(|error| error.fields.clone());
        prop_assert_eq!(fields, Some(vec![error]));
    }
}

/// The suite catches the seeded bugs of I4 and I5 (SPEC §11).
#[cfg(not(feature = "fault-injection"))]
#[test]
#[ignore = "the seeded bugs compile only with `--features ward-core/fault-injection`"]
fn the_suite_catches_the_validation_bugs_of_the_catalogue() {}

/// The suite catches the seeded bugs of I4 and I5 (SPEC §11).
#[cfg(feature = "fault-injection")]
#[test]
fn the_suite_catches_the_validation_bugs_of_the_catalogue() {
    use strategies::fails_somewhere;
    use ward_core::fault::Fault;
    for fault in [
        Fault::ErrorLimitSix,
        Fault::ErrorEchoesValue,
        Fault::ValidateAfterDomain,
    ] {
        let faults = FaultSet::only(fault);
        assert!(
            fails_somewhere(32, inputs(), |inputs| check_envelopes(inputs, faults)),
            "{fault} went unnoticed"
        );
    }
}

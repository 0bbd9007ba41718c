//! The `validate` check: a tool of the catalogue and argument text, R6–R8 asserted.
//!
//! # Input
//!
//! One selector byte, then the argument text. The tool is the catalogue's (with
//! `code_interpreter`) tool number `selector % tools`, in registration order; the text is
//! read as UTF-8 with invalid bytes replaced by U+FFFD (a model's argument text is always a
//! Unicode string).
//!
//! The selector [`ANY_SCHEMA`] (`0xF5`, a byte no UTF-8 text holds) instead brings its own
//! schema: the schema's JSON text, a NUL byte, then the argument text. The committed corpus
//! seeds it with every schema of the JSON Schema Test Suite (`corpus/json-schema-test-suite/`),
//! so the fuzzer mutates inputs against schemas other than ward's own (R8a). A schema that
//! does not parse or compile is refused without a panic and checked no further.
//!
//! # Properties
//!
//! - Text that does not parse gives one error at a JSON Pointer, whose message names the
//!   parser's reason (or the repeated key) with line and column and quotes nothing (R6, R7).
//! - The verdict of [`ToolSchema::validate`] is the verdict of a `jsonschema` validator
//!   compiled here from the published schema, and of [`ToolSchema::is_valid`] (R5).
//! - An invalid input gets 1–5 errors, exactly the first ones of
//!   [`ToolSchema::all_errors`] (the documented order, and the bounded walk of R8 agrees with
//!   the unbounded baseline).
//! - Every path is `/` or a JSON Pointer that resolves in the input (R6); every message is
//!   a rule stated from the schema, so no value of the input is echoed (R7).

use std::sync::OnceLock;

use serde_json::Value;

use crate::CheckResult;
use crate::messages::{check_field_message, check_parse_message};
use ward_core::chart::tools::{CatalogueOptions, registry};
use ward_core::envelope::FieldError;
use ward_core::registry::Registry;
use ward_core::validation::{FIELD_ERRORS_MAX, ToolSchema, parse_arguments};

/// One tool as the check sees it: its name, published schema (as JSON text) and an
/// independent `jsonschema` validator compiled from that schema.
pub(crate) struct Subject {
    name: String,
    schema_text: String,
    reference: jsonschema::Validator,
}

/// The catalogue (with `code_interpreter`) and its subjects, built once per process.
struct Catalogue {
    registry: Registry,
    subjects: Vec<Subject>,
}

fn catalogue() -> Result<&'static Catalogue, String> {
    static CATALOGUE: OnceLock<Result<Catalogue, String>> = OnceLock::new();
    CATALOGUE
        .get_or_init(|| {
            let registry = registry(CatalogueOptions {
                code_interpreter: true,
            })
            .map_err(|error| format!("the catalogue does not register: {error}"))?;
            let mut subjects = Vec::new();
            for tool in registry.tools() {
                let parameters = tool.meta().parameters();
                let reference = jsonschema::validator_for(parameters).map_err(|error| {
                    format!("the schema of {} does not compile: {error}", tool.name())
                })?;
                subjects.push(Subject {
                    name: tool.name().to_owned(),
                    schema_text: parameters.to_string(),
                    reference,
                });
            }
            Ok(Catalogue { registry, subjects })
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// Runs one `validate` input (format in the module docs) and checks R6–R8.
///
/// ```
/// use ward_checks::check_validate;
///
/// // Tool 3 is `market_bars_query`.
/// assert_eq!(check_validate(b"\x03{\"symbol\": 1, \"period\": \"hourly\"}"), Ok(()));
/// assert_eq!(check_validate(b"\x03{\"symbol\": "), Ok(()));
/// ```
pub fn check_validate(data: &[u8]) -> CheckResult {
    let Some((&selector, text)) = data.split_first() else {
        return Ok(());
    };
    if selector == ANY_SCHEMA {
        return check_any_schema(text);
    }
    let catalogue = catalogue()?;
    let subject = &catalogue.subjects[usize::from(selector) % catalogue.subjects.len()];
    let tool = catalogue
        .registry
        .get(&subject.name)
        .ok_or_else(|| format!("tool {} vanished from the registry", subject.name))?;
    let text = String::from_utf8_lossy(text);
    let input = match parse_arguments(&text) {
        Ok(input) => input,
        Err(error) => return check_parse_error(&error),
    };
    check_input(subject, tool.schema(), &input)
}

/// R6: a parse error is one error at a pointer, with a message that quotes nothing.
fn check_parse_error(error: &FieldError) -> CheckResult {
    ensure!(
        error.path == "/" || is_pointer(&error.path),
        "R6: the parse error's path {:?} is not a JSON Pointer",
        error.path
    );
    check_parse_message(&error.message)
}

/// The selector of an input that brings its own schema (see the module docs).
pub const ANY_SCHEMA: u8 = 0xF5;

/// An [`ANY_SCHEMA`] input: schema text, NUL, argument text.
fn check_any_schema(data: &[u8]) -> CheckResult {
    let Some(nul) = data.iter().position(|&byte| byte == 0) else {
        return Ok(());
    };
    let Ok(schema) = serde_json::from_slice::<Value>(&data[..nul]) else {
        return Ok(());
    };
    let Ok(compiled) = ToolSchema::compile(&schema) else {
        return Ok(());
    };
    let text = String::from_utf8_lossy(&data[nul + 1..]);
    let input = match parse_arguments(&text) {
        Ok(input) => input,
        Err(error) => return check_parse_error(&error),
    };
    // The reference verdict: `jsonschema` on the whole document, as registered.
    let Ok(reference) = jsonschema::validator_for(&schema) else {
        return Err("R8a: ward compiles a schema jsonschema refuses".to_owned());
    };
    let expected = reference.is_valid(&input);
    check_schema_input(
        "the schema",
        &schema.to_string(),
        &compiled,
        &input,
        expected,
    )
}

/// R5–R8 for a parsed input.
fn check_input(subject: &Subject, schema: &ToolSchema, input: &Value) -> CheckResult {
    let expected = subject.reference.is_valid(input);
    check_schema_input(&subject.name, &subject.schema_text, schema, input, expected)
}

/// R5–R8a for `input` against `schema` (compiled from `schema_text`), whose verdict must be
/// `expected`: the same verdict from [`ToolSchema::is_valid`] and [`ToolSchema::validate`];
/// for an invalid input 1–5 errors at paths that resolve in the input, each message a rule
/// stated from the schema (never a generic one), exactly the first of
/// [`ToolSchema::all_errors`].
pub fn check_schema_input(
    name: &str,
    schema_text: &str,
    schema: &ToolSchema,
    input: &Value,
    expected: bool,
) -> CheckResult {
    ensure!(
        schema.is_valid(input) == expected,
        "R5: {name}: is_valid says {} but the verdict is {expected}",
        !expected
    );
    let errors = match schema.validate(input) {
        Ok(()) => {
            ensure!(expected, "R5: {name}: validate accepts an invalid input");
            return Ok(());
        }
        Err(errors) => errors,
    };
    ensure!(
        !expected,
        "R5: {name}: validate refuses a valid input ({errors:?})"
    );
    check_field_errors(name, schema_text, input, &errors)?;
    let all = schema.all_errors(input);
    let first = &all[..all.len().min(FIELD_ERRORS_MAX)];
    ensure!(
        errors == first,
        "R6/R8: {name}: the reported errors {errors:?} are not the first of every error {first:?}"
    );
    Ok(())
}

/// The field errors of an invalid input: 1–5, each at a path that resolves in the input,
/// each message a rule stated from the schema.
pub(crate) fn check_field_errors(
    tool: &str,
    schema_text: &str,
    input: &Value,
    errors: &[FieldError],
) -> CheckResult {
    ensure!(
        (1..=FIELD_ERRORS_MAX).contains(&errors.len()),
        "R6: {tool}: {} field errors, not 1 to {FIELD_ERRORS_MAX}",
        errors.len()
    );
    for error in errors {
        let pointer = if error.path == "/" {
            ""
        } else {
            error.path.as_str()
        };
        ensure!(
            error.path == "/" || is_pointer(&error.path),
            "R6: {tool}: the path {:?} is not a JSON Pointer",
            error.path
        );
        ensure!(
            input.pointer(pointer).is_some(),
            "R6: {tool}: the path {:?} does not resolve in the input",
            error.path
        );
        check_field_message(&error.message, schema_text)?;
    }
    Ok(())
}

/// A non-empty JSON Pointer (RFC 6901): segments after `/`, `~` only as `~0` or `~1`.
fn is_pointer(path: &str) -> bool {
    let Some(rest) = path.strip_prefix('/') else {
        return false;
    };
    let bytes = rest.as_bytes();
    bytes
        .iter()
        .enumerate()
        .all(|(index, &byte)| byte != b'~' || matches!(bytes.get(index + 1), Some(b'0' | b'1')))
}

/// The subjects for the tool-argument check, which shares the field-error checks.
pub(crate) fn subject(name: &str) -> Result<Option<(&'static Registry, &'static Subject)>, String> {
    let catalogue = catalogue()?;
    Ok(catalogue
        .subjects
        .iter()
        .find(|subject| subject.name == name)
        .map(|subject| (&catalogue.registry, subject)))
}

impl Subject {
    /// The published schema as JSON text.
    pub(crate) fn schema_text(&self) -> &str {
        &self.schema_text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pointers() {
        assert!(is_pointer("/a/0/b~1c~0"));
        assert!(!is_pointer("a"));
        assert!(!is_pointer("/a~"));
        assert!(!is_pointer("/a~2"));
    }

    #[test]
    fn a_wrong_count_or_path_is_reported() {
        let input = serde_json::json!({"a": 1});
        let error = |path: &str| FieldError {
            path: path.to_owned(),
            message: "must be a string".to_owned(),
        };
        assert!(check_field_errors("t", "{}", &input, &[error("/a")]).is_ok());
        assert!(check_field_errors("t", "{}", &input, &[]).is_err());
        assert!(check_field_errors("t", "{}", &input, &[error("/b")]).is_err());
        assert!(check_field_errors("t", "{}", &input, &vec![error("/"); 6]).is_err());
    }

    #[test]
    fn every_tool_is_reachable() {
        let catalogue = catalogue().unwrap();
        assert!(catalogue.subjects.len() <= 256);
        assert!(
            catalogue
                .subjects
                .iter()
                .any(|subject| subject.name == "code_interpreter")
        );
    }
}

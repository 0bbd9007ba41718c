//! JSON Schema checks of the files ward reads: scenario files (SPEC §10,
//! `sim/scenario.schema.json`) and campaign summaries (SPEC §12, `sim/summary.schema.json`).
//! A bad file is refused with the JSON Pointer of its first fault and a reason a person can
//! act on.

use std::sync::OnceLock;

/// Errors looked at to pick the one to report; a file with more has more than one typo.
const ERRORS_EXAMINED_MAX: usize = 16;

/// Where a value breaks its schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaFault {
    /// The JSON Pointer of the fault (`/` for the document itself).
    pub pointer: String,
    /// What is wrong.
    pub reason: String,
}

/// A schema compiled once per process; `schema` is the schema's text, `name` names it in the
/// message of a schema that does not compile (a build defect, reported as a fault at `/`).
pub fn compiled(
    cell: &'static OnceLock<Result<jsonschema::Validator, String>>,
    schema: &str,
    name: &str,
) -> Result<&'static jsonschema::Validator, SchemaFault> {
    let validator = cell.get_or_init(|| {
        let schema: serde_json::Value =
            serde_json::from_str(schema).map_err(|error| error.to_string())?;
        jsonschema::validator_for(&schema).map_err(|error| error.to_string())
    });
    validator.as_ref().map_err(|reason| SchemaFault {
        pointer: "/".to_owned(),
        reason: format!("the {name} schema does not compile: {reason}"),
    })
}

/// The first fault of `value` against the schema compiled once in `cell` (see [`compiled`]).
pub fn check(
    cell: &'static OnceLock<Result<jsonschema::Validator, String>>,
    schema: &str,
    name: &str,
    value: &serde_json::Value,
) -> Option<SchemaFault> {
    match compiled(cell, schema, name) {
        Ok(validator) => first_fault(validator, value),
        Err(fault) => Some(fault),
    }
}

/// The first fault of `value` against `validator`, if any.
///
/// A misspelled field breaks two rules of one object (the field is unknown, the real one
/// missing); the unknown field is named first, as it is the likelier cause. Only the first
/// few errors are looked at.
pub fn first_fault(
    validator: &jsonschema::Validator,
    value: &serde_json::Value,
) -> Option<SchemaFault> {
    let mut errors: Vec<jsonschema::ValidationError<'_>> = validator
        .iter_errors(value)
        .take(ERRORS_EXAMINED_MAX)
        .collect();
    let unknown_field = errors.first().and_then(|first| {
        errors.iter().position(|error| {
            error.instance_path() == first.instance_path()
                && matches!(
                    error.kind(),
                    jsonschema::error::ValidationErrorKind::AdditionalProperties { .. }
                )
        })
    });
    let first = match unknown_field {
        Some(index) => errors.swap_remove(index),
        None => errors.into_iter().next()?,
    };
    let pointer = first.instance_path().as_str();
    Some(SchemaFault {
        pointer: if pointer.is_empty() {
            "/".to_owned()
        } else {
            pointer.to_owned()
        },
        reason: reason(&first),
    })
}

/// A reason that names the rule; an unexpected property is named, since it is usually a typo.
fn reason(error: &jsonschema::ValidationError<'_>) -> String {
    use jsonschema::error::ValidationErrorKind;
    match error.kind() {
        ValidationErrorKind::AdditionalProperties { unexpected } => {
            format!("unknown field(s): {}", unexpected.join(", "))
        }
        _ => error.to_string(),
    }
}

//! I4. Every `TOOL_INPUT_INVALID` lists 1–5 errors `path: message` (root `/`), and no message
//! echoes an input value.
//!
//! R6 and R7: the message is `The tool input is invalid: ` followed by each field's
//! `path: message`, joined by `; `, exactly as listed in `error.fields`; a message states the
//! rule and never quotes a value taken from the input. The check is exact (SPEC §9): the
//! oracle predicts the whole error list from its own reading of the argument text and the
//! published schema ([`super::input_errors`], whose docs hold the documented order and
//! wording) and compares the runtime's list with its first five, element by element — which
//! errors, their paths (passed through R22's guard, [`super::guarded`]), their order and
//! their wording. Where it cannot predict (a schema outside its table), the rules every list
//! obeys are still checked, the documented order among them. Object keys taken from the input appear only in paths, never in a
//! field's message.

use std::borrow::Cow;

use serde_json::Value;
use ward_core::envelope::FieldError;

use super::input_errors::{self, Expected};
use super::{At, Breach, CallFacts, Findings, Invariant, RunCheck};
use crate::catalogue::FIELD_ERRORS_MAX;

pub(super) fn check(run: &RunCheck<'_>, findings: &mut Findings<'_>) {
    for (batch, index, fact) in run.calls() {
        if fact.registered() && !fact.valid_input {
            findings.arm(Invariant::I4);
        }
        let Some(result) = RunCheck::result_of(batch, index) else {
            continue;
        };
        let Some(error) = result
            .error()
            .filter(|error| error.code == "TOOL_INPUT_INVALID")
        else {
            continue;
        };
        findings.arm(Invariant::I4);
        if fact.registered() {
            findings.exact.input_errors += 1;
        }
        let call = &batch.calls[index];
        let at = At::Call(batch.turn, &call.id);
        let fields = error.fields.as_deref().unwrap_or_default();
        if let Some((breach, explanation)) = shape(&error.message, fields, &call.arguments, fact) {
            return findings.report(breach, at, explanation);
        }
        if fact.registered()
            && let Some(expected) = prediction(run, call, fact)
        {
            findings.exact.input_errors_predicted += 1;
            if let Some(explanation) = differs(&expected, fields) {
                return findings.report(Breach::FieldErrorsDiffer, at, explanation);
            }
            findings.exact.input_errors_matched += 1;
            // Every message is the documented wording: an input value it holds is one
            // the wording itself holds (a value such as "ust be gre" is in "must be
            // greater"), not an echo.
            continue;
        }
        if let Some(echoed) = echoed_value(
            fact.parsed.as_ref(),
            &call.arguments,
            fields.iter().map(|field| field.message.as_str()),
            run.schemas.published(&call.name),
        ) {
            let explanation = format!("a field message echoes the input value {echoed:?}");
            return findings.report(Breach::FieldErrorEchoesValue, at, explanation);
        }
    }
}

/// What every error list must be, predicted or not: 1 to 5 errors, listed in the message
/// after its prefix, each at a JSON Pointer that resolves in the input, in the documented
/// order. The breach and why, when the list is not.
fn shape(
    message: &str,
    fields: &[FieldError],
    arguments: &str,
    fact: &CallFacts,
) -> Option<(Breach, String)> {
    if fields.is_empty() || fields.len() > FIELD_ERRORS_MAX {
        let explanation = format!(
            "TOOL_INPUT_INVALID listed {} field errors, not 1 to {FIELD_ERRORS_MAX}",
            fields.len()
        );
        return Some((Breach::FieldErrorCount, explanation));
    }
    if !lists_fields(message, fields) || fields.iter().any(|field| !field.path.starts_with('/')) {
        let explanation =
            "the message is not `The tool input is invalid: ` and the `path: message` list";
        return Some((Breach::FieldErrorFormat, explanation.to_owned()));
    }
    if let Some(path) = fields
        .iter()
        .map(|field| field.path.as_str())
        .find(|path| !resolves(fact.parsed.as_ref(), arguments, path))
    {
        let explanation = format!("the error path {path:?} does not resolve in the input");
        return Some((Breach::FieldErrorFormat, explanation));
    }
    let input = fact.parsed.as_ref()?;
    let listed = (fields.iter()).map(|field| (field.path.as_str(), field.message.as_str()));
    let explanation = input_errors::out_of_order(input, listed)?;
    Some((Breach::FieldErrorsDiffer, explanation))
}

/// The first five errors the oracle predicts for `call`, their paths guarded, when it can
/// predict them and its prediction agrees with the verdict of its compiled schema.
fn prediction(
    run: &RunCheck<'_>,
    call: &ward_core::tool::ToolCall,
    fact: &CallFacts,
) -> Option<Vec<Expected>> {
    let schema = run.schemas.parsed(&call.name)?;
    let mut expected = input_errors::predict(&call.arguments, schema, run.schemas.patterns())?;
    // The prediction and `jsonschema`'s verdict must agree that the input is invalid.
    if expected.is_empty() || fact.valid_input {
        return None;
    }
    expected.truncate(FIELD_ERRORS_MAX);
    for error in &mut expected {
        error.path = run.guard.text(&error.path)?.into_owned();
    }
    Some(expected)
}

/// How `fields` differ from `expected`, element by element.
fn differs(expected: &[Expected], fields: &[FieldError]) -> Option<String> {
    for (position, (want, got)) in expected.iter().zip(fields).enumerate() {
        if want.path != got.path || !want.message.matches(&got.message) {
            return Some(format!(
                "error {} is `{}: {}`; R6 and R7 give `{want}`",
                position + 1,
                got.path,
                got.message
            ));
        }
    }
    if expected.len() != fields.len() {
        let listed: Vec<String> = expected.iter().map(ToString::to_string).collect();
        return Some(format!(
            "{} field errors where R6 gives {}: `{}`",
            fields.len(),
            expected.len(),
            listed.join("; ")
        ));
    }
    None
}

/// Whether `path`, a JSON Pointer with the root written `/`, names a value of the input (read
/// leniently when a repeated key made R6 refuse it; text that is not JSON has only `/`). A
/// path guarded by R22 names a key with a secret in it, which the oracle cannot resolve: it
/// passes.
fn resolves(parsed: Option<&Value>, arguments: &str, path: &str) -> bool {
    if path == "/" || path.contains(super::REDACTED) {
        return true;
    }
    let lenient;
    let value = match parsed {
        Some(value) => value,
        None => match serde_json::from_str::<Value>(arguments) {
            Ok(value) => {
                lenient = value;
                &lenient
            }
            Err(_) => return false,
        },
    };
    value.pointer(path).is_some()
}

/// Whether `message` is `The tool input is invalid: ` followed by the `path: message` of
/// each field, joined by `; `.
fn lists_fields(message: &str, fields: &[FieldError]) -> bool {
    let listed: Vec<String> = fields
        .iter()
        .map(|field| format!("{}: {}", field.path, field.message))
        .collect();
    message == format!("The tool input is invalid: {}", listed.join("; "))
}

/// A distinctive value or key of the input that one of `messages` quotes: a string or key of
/// at least 6 characters, or a number of at least 5, that the tool's published schema does
/// not contain (messages may name allowed values, bounds and properties, which come from the
/// schema).
fn echoed_value<'m>(
    parsed: Option<&Value>,
    arguments: &str,
    messages: impl Iterator<Item = &'m str> + Clone,
    schema: &str,
) -> Option<String> {
    // Input the strict reading refused (a repeated key) is still read, as a model would.
    let lenient;
    let value = match parsed {
        Some(value) => value,
        None => {
            lenient = serde_json::from_str::<Value>(arguments).ok()?;
            &lenient
        }
    };
    let mut candidates = Vec::new();
    collect_values(value, &mut candidates);
    candidates
        .into_iter()
        .find(|candidate| {
            messages
                .clone()
                .any(|message| message.contains(candidate.as_ref()))
                && !schema.contains(candidate.as_ref())
        })
        .map(Cow::into_owned)
}

fn collect_values<'v>(value: &'v Value, into: &mut Vec<Cow<'v, str>>) {
    match value {
        Value::String(text) if text.chars().count() >= 6 => into.push(Cow::Borrowed(text)),
        Value::Number(number) => {
            let text = number.to_string();
            if text.len() >= 5 {
                into.push(Cow::Owned(text));
            }
        }
        Value::Array(items) => items.iter().for_each(|item| collect_values(item, into)),
        Value::Object(members) => {
            for (key, member) in members {
                if key.chars().count() >= 6 {
                    into.push(Cow::Borrowed(key));
                }
                collect_values(member, into);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalogue::strict_parse;

    fn field(path: &str, message: &str) -> FieldError {
        FieldError {
            path: path.to_owned(),
            message: message.to_owned(),
        }
    }

    #[test]
    fn the_listed_fields_must_be_the_message_exactly() {
        let fields = [
            field("/a", "must be a string"),
            field("/b", "is not allowed"),
        ];
        let exact = "The tool input is invalid: /a: must be a string; /b: is not allowed";
        assert!(lists_fields(exact, &fields));
        for wrong in [
            "The tool input is invalid: /a: must be a string",
            "The tool input is invalid: /a: must be a string; /b: is not allowed; ",
            "The tool input is invalid: /a: must be a string, /b: is not allowed",
            "The tool input is invalid: /b: is not allowed; /a: must be a string",
            "tool input is invalid: /a: must be a string; /b: is not allowed",
        ] {
            assert!(!lists_fields(wrong, &fields), "{wrong}");
        }
    }

    #[test]
    fn an_echoed_value_is_found_in_strictly_and_leniently_read_input() {
        let messages = ["must be at most 798, not zqAB12cd"];
        let strict = strict_parse(r#"{"limit":"zqAB12cd"}"#);
        let found = echoed_value(strict.as_ref(), "", messages.iter().copied(), "{}");
        assert_eq!(found.as_deref(), Some("zqAB12cd"));
        // A repeated key: no strict reading, the lenient one still finds the value.
        let repeated = r#"{"limit":1,"limit":"zqAB12cd"}"#;
        assert!(strict_parse(repeated).is_none());
        let found = echoed_value(None, repeated, messages.iter().copied(), "{}");
        assert_eq!(found.as_deref(), Some("zqAB12cd"));
        // A key of the input is an echo too.
        let key = strict_parse(r#"{"zqAB12cd":1}"#);
        let found = echoed_value(key.as_ref(), "", messages.iter().copied(), "{}");
        assert_eq!(found.as_deref(), Some("zqAB12cd"));
        // A value the schema itself spells is not an echo.
        let schema = r#"{"enum":["zqAB12cd"]}"#;
        let found = echoed_value(strict.as_ref(), "", messages.iter().copied(), schema);
        assert_eq!(found, None);
    }
}

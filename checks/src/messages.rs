//! R7 as a grammar: every field error message is one of the forms ward writes, and every
//! part of it that is not fixed text is a number or text taken from the tool's schema. A
//! message that quoted a value from the input would not parse, whatever the value.

use crate::CheckResult;

/// Messages that take no parameter.
const FIXED: &[&str] = &[
    "must be a string",
    "must be a number",
    "must be an integer",
    "must be an object",
    "must be an array",
    "must be a boolean",
    "must be null",
    "must be one of the allowed values",
    "must not contain duplicate items",
    "missing a required property",
    "is not an allowed property",
    "must match one of the allowed forms",
    "must match exactly one of the allowed forms",
    "must not match the excluded form",
    "is not allowed",
    "must contain at least one matching item",
    "has a property name that is not allowed",
    "must have no items beyond those the schema allows",
    "must decode to UTF-8 text",
];

/// `(prefix, suffixes)`: a number follows the prefix, then one of the suffixes.
const NUMBERED: &[(&str, &[&str])] = &[
    (
        "must be at least ",
        &[" character long", " characters long", ""],
    ),
    (
        "must be at most ",
        &[" character long", " characters long", ""],
    ),
    ("must be greater than ", &[""]),
    ("must be less than ", &[""]),
    ("must be a multiple of ", &[""]),
    (
        "must have at least ",
        &[" item", " items", " property", " properties"],
    ),
    (
        "must have at most ",
        &[" item", " items", " property", " properties"],
    ),
];

/// The reasons serde_json gives for text that is not JSON (its syntax error codes); they
/// describe the grammar, never the input.
const PARSER_REASONS: &[&str] = &[
    "EOF while parsing a list",
    "EOF while parsing an object",
    "EOF while parsing a string",
    "EOF while parsing a value",
    "expected `:`",
    "expected `,` or `]`",
    "expected `,` or `}`",
    "expected ident",
    "expected value",
    "expected `\"`",
    "invalid escape",
    "invalid number",
    "number out of range",
    "invalid unicode code point",
    "control character (\\u0000-\\u001F) found while parsing a string",
    "key must be a string",
    "lone leading surrogate in hex escape",
    "trailing comma",
    "trailing characters",
    "unexpected end of hex escape",
    "recursion limit exceeded",
];

/// Checks one message of a field error found by validation against `schema_text` (the
/// tool's `parameters` as JSON text).
pub(crate) fn check_field_message(message: &str, schema_text: &str) -> CheckResult {
    ensure!(
        is_field_message(message, schema_text),
        "R7: the message {message:?} is not a rule stated from the schema (it may quote the input)"
    );
    Ok(())
}

fn is_field_message(message: &str, schema_text: &str) -> bool {
    if FIXED.contains(&message) {
        return true;
    }
    for (prefix, suffixes) in NUMBERED {
        if let Some(rest) = message.strip_prefix(prefix)
            && suffixes
                .iter()
                .any(|suffix| rest.strip_suffix(suffix).is_some_and(is_number))
        {
            return true;
        }
    }
    if let Some(types) = message.strip_prefix("must be one of the types: ") {
        return types.split(", ").all(is_type_name);
    }
    if let Some(options) = message.strip_prefix("must be one of: ") {
        return options
            .split(", ")
            .all(|option| from_schema(option, schema_text));
    }
    if let Some(name) = message
        .strip_prefix("missing required property '")
        .and_then(|rest| rest.strip_suffix('\''))
    {
        // A property name is a whole JSON string of the schema (the empty name too).
        let quoted = serde_json::to_string(name).unwrap_or_default();
        return schema_text.contains(&quoted);
    }
    if let Some(rest) = message
        .strip_prefix("must be valid ")
        .and_then(|rest| rest.strip_suffix(" content"))
    {
        return from_schema(rest, schema_text);
    }
    for prefix in [
        "must match the pattern ",
        "must be a valid ",
        "must be encoded as ",
        "must satisfy the keyword ",
        "must be ",
    ] {
        if let Some(rest) = message.strip_prefix(prefix)
            && from_schema(rest, schema_text)
        {
            return true;
        }
    }
    false
}

/// A number as ward writes schema limits.
fn is_number(text: &str) -> bool {
    !text.is_empty() && text.parse::<f64>().is_ok()
}

fn is_type_name(text: &str) -> bool {
    [
        "array", "boolean", "integer", "null", "number", "object", "string",
    ]
    .contains(&text)
}

/// Text that occurs in the schema, written as JSON (so a string is found with its escapes),
/// or a JSON value other than a string written compactly as the schema's text writes it.
fn from_schema(text: &str, schema_text: &str) -> bool {
    if text.is_empty() {
        return false;
    }
    let is_json_non_string =
        serde_json::from_str::<serde_json::Value>(text).is_ok_and(|value| !value.is_string());
    if is_json_non_string && schema_text.contains(text) {
        return true;
    }
    let escaped = serde_json::to_string(text).unwrap_or_default();
    let inner = escaped
        .strip_prefix('"')
        .and_then(|rest| rest.strip_suffix('"'))
        .unwrap_or(&escaped);
    schema_text.contains(inner)
}

/// Checks the message of argument text that does not parse (R6): a parser reason with
/// line and column, or a repeated key with line and column.
pub(crate) fn check_parse_message(message: &str) -> CheckResult {
    let Some((head, position)) = message.rsplit_once(" (line ") else {
        return Err(format!("R6: the parse error {message:?} gives no line"));
    };
    let position_ok = position
        .strip_suffix(')')
        .and_then(|rest| rest.split_once(", column "))
        .is_some_and(|(line, column)| {
            line.parse::<usize>().is_ok() && column.parse::<usize>().is_ok()
        });
    ensure!(
        position_ok,
        "R6: the parse error {message:?} does not end with (line L, column C)"
    );
    let reason_ok = head == "repeats a key"
        || head
            .strip_prefix("is not valid JSON: ")
            .is_some_and(|reason| PARSER_REASONS.contains(&reason));
    ensure!(
        reason_ok,
        "R6/R7: the parse error {message:?} is not a parser reason (it may quote the input)"
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCHEMA: &str = r#"{"properties":{"period":{"enum":["daily","weekly"]},"limit":{"maximum":798}},"required":["symbol"]}"#;

    #[test]
    fn rule_messages_parse() {
        for message in [
            "must be a string",
            "must be at most 798",
            "must be at least 1 character long",
            "must have at most 3 items",
            "must be one of: daily, weekly",
            "missing required property 'symbol'",
            "must be one of the types: string, null",
        ] {
            assert!(check_field_message(message, SCHEMA).is_ok(), "{message}");
        }
    }

    #[test]
    fn a_required_property_is_named_whole_even_when_empty() {
        let schema = r#"{"required":["__proto__",""]}"#;
        for name in ["__proto__", ""] {
            let message = format!("missing required property '{name}'");
            assert!(check_field_message(&message, schema).is_ok(), "{message}");
        }
        let message = "missing required property 'proto'";
        assert!(check_field_message(message, schema).is_err());
    }

    #[test]
    fn echoed_values_do_not_parse() {
        for message in [
            "\"sk-secretvalue\" must be a string",
            "must be one of: hourly",
            "missing required property 'sk-abc'",
            "missing required property 'symb'",
            "missing required property ''",
            "must be at most sk-abc",
            "must be sk-secretvalue",
        ] {
            assert!(check_field_message(message, SCHEMA).is_err(), "{message}");
        }
    }

    #[test]
    fn parse_messages_name_the_grammar_only() {
        assert!(
            check_parse_message("is not valid JSON: expected value (line 1, column 1)").is_ok()
        );
        assert!(check_parse_message("repeats a key (line 1, column 17)").is_ok());
        assert!(
            check_parse_message("is not valid JSON: unknown field `sk-abc` (line 1, column 1)")
                .is_err()
        );
        assert!(check_parse_message("is not valid JSON: expected value").is_err());
    }
}

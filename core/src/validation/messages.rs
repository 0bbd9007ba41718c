//! The documented order's keyword ranks and the messages (R7): every message is written from
//! the error kind and the schema, never from the input; the match over the validator's error
//! kinds is exhaustive, so a new kind cannot fall back to a generic message unnoticed.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use jsonschema::error::{TypeKind, ValidationErrorKind};
use jsonschema::{ValidationError, Validator};
use serde_json::Value;

use super::parse::{display_path, push_pointer_segment};
use crate::envelope::FieldError;

/// Position of an error among the errors of one value.
pub(super) type Rank = u8;

/// A field error with its keyword's rank, before the errors of a sub-tree are sorted.
pub(super) struct Ranked {
    /// The keyword's place among the errors of one value.
    pub(super) rank: Rank,
    /// The error itself.
    pub(super) error: FieldError,
}

pub(super) const UNEXPECTED_PROPERTY: &str = "is not an allowed property";

/// The documented order of the errors of one value, by keyword (the module docs' table, with
/// `format` and `multipleOf` in their places); `unevaluatedProperties` ranks with
/// `additionalProperties`, and every other keyword after them.
pub(super) const DOCUMENTED_ORDER: [&str; 19] = [
    "type",
    "const",
    "enum",
    "minLength",
    "maxLength",
    "pattern",
    "format",
    "minimum",
    "exclusiveMinimum",
    "maximum",
    "exclusiveMaximum",
    "multipleOf",
    "minItems",
    "maxItems",
    "uniqueItems",
    "minProperties",
    "maxProperties",
    "required",
    "additionalProperties",
];

/// Keyword rank of the documented order.
pub(super) fn keyword_rank(kind: &ValidationErrorKind) -> Rank {
    let keyword = match kind.keyword() {
        "unevaluatedProperties" => "additionalProperties",
        keyword => keyword,
    };
    let rank = DOCUMENTED_ORDER
        .iter()
        .position(|documented| *documented == keyword)
        .unwrap_or(DOCUMENTED_ORDER.len());
    Rank::try_from(rank).unwrap_or(Rank::MAX)
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
pub(super) fn field_error(error: &ValidationError<'_>, base: &str) -> FieldError {
    let mut path = base.to_owned();
    path.push_str(error.instance_path().as_str());
    FieldError {
        path: display_path(&path).to_owned(),
        message: message(error.kind()),
    }
}

/// Every error of `value` under `validator`, expanded (one per unexpected key) and ranked, with
/// paths prefixed by `base`.
pub(super) fn rank_errors(
    validator: &Validator,
    value: &Value,
    base: &str,
    ranked: &mut Vec<Ranked>,
) {
    for error in validator.iter_errors(value) {
        if let ValidationErrorKind::AdditionalProperties { unexpected }
        | ValidationErrorKind::UnevaluatedProperties { unexpected } = error.kind()
        {
            let object_path = format!("{base}{}", error.instance_path().as_str());
            for key in unexpected {
                let mut path = object_path.clone();
                push_pointer_segment(&mut path, key);
                ranked.push(Ranked {
                    rank: keyword_rank(error.kind()),
                    error: FieldError {
                        path,
                        message: UNEXPECTED_PROPERTY.to_owned(),
                    },
                });
            }
            continue;
        }
        ranked.push(Ranked {
            rank: keyword_rank(error.kind()),
            error: field_error(&error, base),
        });
    }
}

/// Sorts ranked errors of the sub-tree `value` whose paths start with a prefix of
/// `prefix_length` bytes.
pub(super) fn sort_ranked_at(value: &Value, prefix_length: usize, ranked: &mut [Ranked]) {
    let mut order = BTreeMap::new();
    number_preorder(value, &mut String::new(), &mut order);
    ranked.sort_by_key(|Ranked { rank, error }| {
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

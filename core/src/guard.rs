//! The exact-value guard (R22).
//!
//! Every record enters the transcript, the session store and the event stream through the
//! run's [`SecretGuard`]: a check against the run's configured secret values (the provider
//! key, the search key) that redacts any occurrence it finds. It covers what the pattern
//! rules of the prompt redactor do not: the assistant's own text and call arguments, call
//! ids, tool names, tool results (every string and every object key), error messages and
//! provider error messages. Each record is checked once, when it enters.
//!
//! The same guard refuses a call whose arguments carry a configured value
//! (`SECRET_IN_INPUT`): it checks the raw argument text and, once parsed, every decoded
//! string and key, so an escaped spelling (`\u0073k-…`) cannot smuggle a value past it.

use std::borrow::Cow;

use serde_json::{Map, Value};

use crate::envelope::{FieldError, Outcome, ToolError, ToolResult};
use crate::redact::{RedactError, Redactor};
use crate::session::Message;
use crate::tool::ToolCall;

/// The run's exact-value guard. Cheap to clone.
#[derive(Clone, Debug, Default)]
pub struct SecretGuard {
    /// `None` when the run configures no secret: every check is then free.
    redactor: Option<Redactor>,
}

impl SecretGuard {
    /// A guard for `secrets` (R24's rules for values apply: at least 8 characters, not inside
    /// a placeholder).
    pub fn new<I, S>(secrets: I) -> Result<SecretGuard, RedactError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let secrets: Vec<S> = secrets.into_iter().collect();
        if secrets.is_empty() {
            return Ok(SecretGuard::default());
        }
        Ok(SecretGuard {
            redactor: Some(Redactor::values_only(secrets)?),
        })
    }

    /// Whether the guard checks anything.
    pub fn is_active(&self) -> bool {
        self.redactor.is_some()
    }

    /// `text` with every configured value redacted; borrowed when it carries none.
    pub fn text<'a>(&self, text: &'a str) -> Cow<'a, str> {
        match &self.redactor {
            Some(redactor) => redactor.redact(text),
            None => Cow::Borrowed(text),
        }
    }

    /// An owned string, redacted in place when it carries a value.
    pub fn string(&self, text: String) -> String {
        match self.text(&text) {
            Cow::Borrowed(_) => text,
            Cow::Owned(redacted) => redacted,
        }
    }

    /// Whether `text` carries a configured value.
    pub fn finds_in(&self, text: &str) -> bool {
        matches!(self.text(text), Cow::Owned(_))
    }

    /// Whether any decoded string or object key of `value` carries a configured value.
    pub fn finds_in_value(&self, value: &Value) -> bool {
        if !self.is_active() {
            return false;
        }
        match value {
            Value::String(text) => self.finds_in(text),
            Value::Array(items) => items.iter().any(|item| self.finds_in_value(item)),
            Value::Object(members) => members
                .iter()
                .any(|(key, member)| self.finds_in(key) || self.finds_in_value(member)),
            Value::Null | Value::Bool(_) | Value::Number(_) => false,
        }
    }

    /// `value` with every string and key redacted. Two keys that redact to the same text
    /// stay distinct: the later one gets a ` (2)`, ` (3)`… suffix, so no member is lost.
    pub fn value(&self, value: Value) -> Value {
        // Most values carry no secret: look first, and rebuild only when something is found.
        if !self.finds_in_value(&value) {
            return value;
        }
        match value {
            Value::String(text) => Value::String(self.string(text)),
            Value::Array(items) => {
                Value::Array(items.into_iter().map(|item| self.value(item)).collect())
            }
            Value::Object(members) => {
                let mut guarded = Map::with_capacity(members.len());
                for (key, member) in members {
                    let mut key = self.string(key);
                    if guarded.contains_key(&key) {
                        let base = key.clone();
                        let mut ordinal = 2;
                        while guarded.contains_key(&key) {
                            key = format!("{base} ({ordinal})");
                            ordinal += 1;
                        }
                    }
                    guarded.insert(key, self.value(member));
                }
                Value::Object(guarded)
            }
            other => other,
        }
    }
}

impl SecretGuard {
    /// A call with its id, name and argument text guarded.
    pub fn call(&self, call: ToolCall) -> ToolCall {
        ToolCall {
            id: self.string(call.id),
            name: self.string(call.name),
            arguments: self.string(call.arguments),
        }
    }

    /// An error with every text guarded.
    pub fn error(&self, error: ToolError) -> ToolError {
        ToolError {
            code: self.string(error.code),
            message: self.string(error.message),
            retryable: error.retryable,
            recommended_action: self.string(error.recommended_action),
            fields: error.fields.map(|fields| {
                fields
                    .into_iter()
                    .map(|field| FieldError {
                        path: self.string(field.path),
                        message: self.string(field.message),
                    })
                    .collect()
            }),
        }
    }

    /// An envelope with its data or error guarded.
    pub fn result(&self, result: ToolResult) -> ToolResult {
        if !self.is_active() || !self.finds_in_result(&result) {
            return result;
        }
        let outcome = match result.outcome {
            Outcome::Success(data) => Outcome::Success(self.value(data)),
            Outcome::Failure(error) => Outcome::Failure(self.error(error)),
        };
        ToolResult {
            outcome,
            state_changed: result.state_changed,
        }
    }

    /// Whether any text of `result` carries a configured value.
    pub fn finds_in_result(&self, result: &ToolResult) -> bool {
        match &result.outcome {
            Outcome::Success(data) => self.finds_in_value(data),
            Outcome::Failure(error) => {
                let fields = error.fields.iter().flatten();
                [&error.code, &error.message, &error.recommended_action]
                    .into_iter()
                    .chain(fields.flat_map(|field| [&field.path, &field.message]))
                    .any(|text| self.finds_in(text))
            }
        }
    }

    /// A transcript message with every text guarded.
    pub fn message(&self, message: Message) -> Message {
        if !self.is_active() {
            return message;
        }
        match message {
            Message::User { text } => Message::User {
                text: self.string(text),
            },
            Message::Assistant { text, calls } => Message::Assistant {
                text: self.string(text),
                calls: calls.into_iter().map(|call| self.call(call)).collect(),
            },
            Message::Tool {
                call_id,
                name,
                result,
            } => Message::Tool {
                call_id: self.string(call_id),
                name: self.string(name),
                result: self.result(result),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const KEY: &str = "prov-KEY-9f8e7d6c5b4a";

    #[test]
    fn an_empty_guard_checks_nothing_and_allocates_nothing() {
        let guard = SecretGuard::new(Vec::<String>::new()).unwrap();
        assert!(!guard.is_active());
        assert!(matches!(guard.text("anything"), Cow::Borrowed(_)));
    }

    #[test]
    fn values_are_redacted_in_strings_keys_and_nested_data() {
        let guard = SecretGuard::new([KEY]).unwrap();
        let value = json!({"note": format!("key={KEY}!"), KEY: [KEY, 1], "[REDACTED]": true});
        assert!(guard.finds_in_value(&value));
        let guarded = guard.value(value);
        let text = guarded.to_string();
        assert!(!text.contains(KEY), "{text}");
        assert_eq!(guarded["note"], "key=[REDACTED]!");
        // Keys in order: the literal "[REDACTED]" first, then the secret key, renamed.
        assert_eq!(guarded["[REDACTED]"], json!(true));
        assert_eq!(guarded["[REDACTED] (2)"], json!(["[REDACTED]", 1]));
        assert!(!guard.finds_in_value(&guarded));
    }

    #[test]
    fn short_values_are_refused() {
        assert!(SecretGuard::new(["short"]).is_err());
    }
}

//! The exact-value guard (R22).
//!
//! Every record enters the transcript, the session store and the event stream through the
//! run's [`SecretGuard`]: a check against the run's configured secret values (the provider
//! key, the search key) that redacts any occurrence it finds. It covers what the pattern
//! rules of the prompt redactor do not: the assistant's own text and call arguments, call
//! ids, tool names, tool results (every string and every object key), error messages and
//! provider error messages. Each record is checked once, when it enters.
//!
//! Beyond whole values, the guard redacts any fragment of 8 or more characters of a
//! configured value (I8 allows none to leave): a model that echoes half a key, or spells it
//! with a JSON escape in its argument text (`\u0073k-…`), must not get the rest through.
//! Fragments are found by the `ward_fragments` scanner (each is the whole run of characters
//! the text shares with a value); the policy is the guard's own: ASCII text without a
//! fragment is cleared before the redactor runs, and fragments are widened to character
//! boundaries and merged into one `[REDACTED]` each.
//!
//! The same guard refuses a call whose arguments carry a whole configured value
//! (`SECRET_IN_INPUT`): it checks the raw argument text and, once parsed, every decoded
//! string and key, so an escaped spelling cannot smuggle a value past it.

use std::borrow::Cow;
use std::sync::Arc;

use serde_json::{Map, Value};
use ward_fragments::Fragments;

use crate::envelope::{FieldError, Outcome, ToolError, ToolResult};
use crate::redact::{RedactError, Redactor};
use crate::session::Message;
use crate::tool::ToolCall;

/// The run's exact-value guard. Cheap to clone.
#[derive(Clone, Debug, Default)]
pub struct SecretGuard {
    /// `None` when the run configures no secret: every check is then free.
    redactor: Option<Redactor>,
    fragments: Option<Arc<Fragments>>,
}

impl SecretGuard {
    /// A guard for `secrets` (R24's rules for values apply: at least 8 characters, not inside
    /// a placeholder).
    pub fn new<I, S>(secrets: I) -> Result<SecretGuard, RedactError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        Ok(SecretGuard::for_redactor(&Redactor::values_only(secrets)?))
    }

    /// The guard for the values `redactor` is configured with, sharing its compiled values (a
    /// run's prompt redactor and its guard search the same values).
    pub fn for_redactor(redactor: &Redactor) -> SecretGuard {
        if redactor.values().is_empty() {
            return SecretGuard::default();
        }
        SecretGuard {
            redactor: Some(redactor.values_only_of()),
            fragments: Some(Arc::new(fragments_of(redactor.values()))),
        }
    }

    /// `text` with every configured value, and every fragment of 8 or more characters of
    /// one, redacted; borrowed when it carries none. Occurrences and fragments are found on
    /// the text itself and joined where they overlap or touch, each joined stretch becoming
    /// one `[REDACTED]` (R29), so that a value beside a fragment of another leaves one
    /// placeholder and no stretch shorter than a fragment between two.
    pub fn text<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let (Some(redactor), Some(fragments)) = (&self.redactor, &self.fragments) else {
            return Cow::Borrowed(text);
        };
        if clears(fragments, text) {
            return Cow::Borrowed(text);
        }
        let mut spans: Vec<(usize, usize)> = redactor
            .redact_spans(text)
            .iter()
            .map(|span| (span.start, span.end))
            .collect();
        spans.extend(fragments.spans(text.as_bytes()));
        redact_spans(text, spans)
    }

    /// An owned string, redacted in place when it carries a value.
    pub fn string(&self, text: String) -> String {
        match self.text(&text) {
            Cow::Borrowed(_) => text,
            Cow::Owned(redacted) => redacted,
        }
    }

    /// Whether `text` carries a whole configured value (`SECRET_IN_INPUT`).
    pub fn finds_in(&self, text: &str) -> bool {
        let (Some(redactor), Some(fragments)) = (&self.redactor, &self.fragments) else {
            return false;
        };
        !clears(fragments, text) && matches!(redactor.redact(text), Cow::Owned(_))
    }

    /// Whether any decoded string or object key of `value` carries a whole configured value.
    pub fn finds_in_value(&self, value: &Value) -> bool {
        any_text(value, &|text| self.finds_in(text))
    }

    /// `text` redacted, when that changes it.
    fn changed_text(&self, text: &str) -> Option<String> {
        match self.text(text) {
            Cow::Borrowed(_) => None,
            Cow::Owned(redacted) => Some(redacted),
        }
    }

    /// `value` with every string and key redacted, when that changes it. One walk: nothing is
    /// built until the first string or key that changes, and then only the containers around
    /// it. Two keys that redact to the same text stay distinct: the later one (in key order)
    /// gets a ` (2)`, ` (3)`… suffix, so no member is lost.
    fn changed_value(&self, value: &Value) -> Option<Value> {
        match value {
            Value::Null | Value::Bool(_) | Value::Number(_) => None,
            Value::String(text) => self.changed_text(text).map(Value::String),
            Value::Array(items) => {
                let (first, changed) = items
                    .iter()
                    .enumerate()
                    .find_map(|(at, item)| Some((at, self.changed_value(item)?)))?;
                let mut guarded = Vec::with_capacity(items.len());
                guarded.extend_from_slice(&items[..first]);
                guarded.push(changed);
                guarded.extend(
                    items[first + 1..]
                        .iter()
                        .map(|item| self.changed_value(item).unwrap_or_else(|| item.clone())),
                );
                Some(Value::Array(guarded))
            }
            Value::Object(members) => {
                let first = members.iter().position(|(key, member)| {
                    !matches!(self.text(key), Cow::Borrowed(_))
                        || self.changed_value(member).is_some()
                })?;
                let mut guarded = Map::with_capacity(members.len());
                for (at, (key, member)) in members.iter().enumerate() {
                    if at < first {
                        guarded.insert(key.clone(), member.clone());
                        continue;
                    }
                    let mut key = self.changed_text(key).unwrap_or_else(|| key.clone());
                    if guarded.contains_key(&key) {
                        let base = key.clone();
                        let mut ordinal = 2;
                        while guarded.contains_key(&key) {
                            key = format!("{base} ({ordinal})");
                            ordinal += 1;
                        }
                    }
                    let member = self.changed_value(member).unwrap_or_else(|| member.clone());
                    guarded.insert(key, member);
                }
                Some(Value::Object(guarded))
            }
        }
    }
}

impl SecretGuard {
    /// A call with its id, name and argument text guarded, when that changes it.
    fn changed_call(&self, call: &ToolCall) -> Option<ToolCall> {
        let id = self.text(&call.id);
        let name = self.text(&call.name);
        let arguments = self.text(&call.arguments);
        if [&id, &name, &arguments]
            .iter()
            .all(|text| matches!(text, Cow::Borrowed(_)))
        {
            return None;
        }
        Some(ToolCall {
            id: id.into_owned(),
            name: name.into_owned(),
            arguments: arguments.into_owned(),
        })
    }

    /// An error with every text guarded.
    pub fn error(&self, error: ToolError) -> ToolError {
        self.changed_error(&error).unwrap_or(error)
    }

    /// `error` guarded, when that changes it.
    fn changed_error(&self, error: &ToolError) -> Option<ToolError> {
        let code = self.text(&error.code);
        let message = self.text(&error.message);
        let action = self.text(&error.recommended_action);
        let fields: Option<Vec<(Cow<'_, str>, Cow<'_, str>)>> =
            error.fields.as_ref().map(|fields| {
                fields
                    .iter()
                    .map(|field| (self.text(&field.path), self.text(&field.message)))
                    .collect()
            });
        let fields_texts = fields
            .iter()
            .flatten()
            .flat_map(|(path, message)| [path, message]);
        let changed = [&code, &message, &action]
            .into_iter()
            .chain(fields_texts)
            .any(|text| matches!(text, Cow::Owned(_)));
        if !changed {
            return None;
        }
        Some(ToolError {
            code: code.into_owned(),
            message: message.into_owned(),
            retryable: error.retryable,
            recommended_action: action.into_owned(),
            fields: fields.map(|fields| {
                fields
                    .into_iter()
                    .map(|(path, message)| FieldError {
                        path: path.into_owned(),
                        message: message.into_owned(),
                    })
                    .collect()
            }),
        })
    }

    /// An envelope with its data or error guarded.
    pub fn result(&self, result: ToolResult) -> ToolResult {
        self.changed_result(&result).unwrap_or(result)
    }

    /// `result` guarded, when that changes it.
    fn changed_result(&self, result: &ToolResult) -> Option<ToolResult> {
        let outcome = match &result.outcome {
            Outcome::Success(data) => Outcome::Success(Arc::new(self.changed_value(data)?)),
            Outcome::Failure(error) => Outcome::Failure(Arc::new(self.changed_error(error)?)),
        };
        Some(ToolResult {
            outcome,
            state_changed: result.state_changed,
        })
    }

    /// Calls with their ids, names and argument texts guarded: the very same calls when none
    /// carries anything to redact.
    pub fn calls(&self, calls: &Arc<[ToolCall]>) -> Arc<[ToolCall]> {
        self.changed_calls(calls)
            .unwrap_or_else(|| Arc::clone(calls))
    }

    fn changed_calls(&self, calls: &[ToolCall]) -> Option<Arc<[ToolCall]>> {
        let (first, changed) = calls
            .iter()
            .enumerate()
            .find_map(|(at, call)| Some((at, self.changed_call(call)?)))?;
        let mut guarded = Vec::with_capacity(calls.len());
        guarded.extend_from_slice(&calls[..first]);
        guarded.push(changed);
        guarded.extend(
            calls[first + 1..]
                .iter()
                .map(|call| self.changed_call(call).unwrap_or_else(|| call.clone())),
        );
        Some(guarded.into())
    }

    /// A shared transcript message with every text guarded: the very same message when it
    /// carries nothing to redact.
    pub fn shared_message(&self, message: Arc<Message>) -> Arc<Message> {
        match self.changed_message(&message) {
            Some(guarded) => Arc::new(guarded),
            None => message,
        }
    }

    /// `message` guarded, when that changes it.
    fn changed_message(&self, message: &Message) -> Option<Message> {
        match message {
            Message::User { text } => Some(Message::User {
                text: self.changed_text(text)?,
            }),
            Message::Assistant { text, calls } => {
                let guarded_text = self.changed_text(text);
                let guarded_calls = self.changed_calls(calls);
                if guarded_text.is_none() && guarded_calls.is_none() {
                    return None;
                }
                Some(Message::Assistant {
                    text: guarded_text.unwrap_or_else(|| text.clone()),
                    calls: guarded_calls.unwrap_or_else(|| Arc::clone(calls)),
                })
            }
            Message::Tool {
                call_id,
                name,
                result,
            } => {
                let guarded_id = self.changed_text(call_id);
                let guarded_name = self.changed_text(name);
                let guarded_result = self.changed_result(result);
                if guarded_id.is_none() && guarded_name.is_none() && guarded_result.is_none() {
                    return None;
                }
                Some(Message::Tool {
                    call_id: guarded_id.map_or_else(|| Arc::clone(call_id), Arc::from),
                    name: guarded_name.map_or_else(|| Arc::clone(name), Arc::from),
                    result: guarded_result.unwrap_or_else(|| result.clone()),
                })
            }
        }
    }
}

/// Whether any string or object key of `value` satisfies `test`.
fn any_text<F: Fn(&str) -> bool>(value: &Value, test: &F) -> bool {
    match value {
        Value::String(text) => test(text),
        Value::Array(items) => items.iter().any(|item| any_text_within(item, test)),
        Value::Object(members) => members
            .iter()
            .any(|(key, member)| test(key) || any_text_within(member, test)),
        Value::Null | Value::Bool(_) | Value::Number(_) => false,
    }
}

/// [`any_text`] of a member or an item, deciding leaves in place: result tables hold
/// thousands of numbers, and a call per number would cost more than its check.
#[inline(always)]
fn any_text_within<F: Fn(&str) -> bool>(value: &Value, test: &F) -> bool {
    match value {
        Value::Null | Value::Bool(_) | Value::Number(_) => false,
        Value::String(text) => test(text),
        Value::Array(_) | Value::Object(_) => any_text(value, test),
    }
}

/// The characters of the shortest fragment the guard redacts.
const WINDOW_CHARS: usize = 8;

/// The fragment scanner of `values` (given without their invisible format characters, as the
/// exact rule reads them): any run of 8 or more characters of a value counts.
fn fragments_of(values: &[String]) -> Fragments {
    Fragments::new(values.iter().map(|value| (value.as_bytes(), WINDOW_CHARS)))
}

/// Whether `text` certainly holds neither a value nor a fragment of one, decided without the
/// redactor. Every occurrence of a value is a run of 8 or more characters shared with it, and
/// ASCII text has no invisible character that could hide one: one pass of the scanner clears
/// most text, and anything shorter than 8 bytes is clear at once.
fn clears(fragments: &Fragments, text: &str) -> bool {
    text.len() < WINDOW_CHARS || (text.is_ascii() && fragments.find(text.as_bytes()).is_none())
}

/// `text` with each stretch of `spans` (byte ranges, in any order) replaced by one
/// `[REDACTED]`, after widening every span to the text's character boundaries (a fragment can
/// begin or end inside a character: the text and the value share a lead byte, then differ)
/// and joining those that overlap or touch.
fn redact_spans(text: &str, mut spans: Vec<(usize, usize)>) -> Cow<'_, str> {
    if spans.is_empty() {
        return Cow::Borrowed(text);
    }
    spans.sort_unstable();
    let mut output = String::with_capacity(text.len());
    let mut copied = 0;
    let mut open: Option<(usize, usize)> = None;
    let flush = |output: &mut String, copied: &mut usize, (start, end): (usize, usize)| {
        output.push_str(&text[*copied..start]);
        output.push_str(crate::redact::REDACTED);
        *copied = end;
    };
    for (start, end) in spans {
        let start = (0..=start)
            .rev()
            .find(|&at| text.is_char_boundary(at))
            .unwrap_or(0);
        let end = (end..=text.len())
            .find(|&at| text.is_char_boundary(at))
            .unwrap_or(text.len());
        open = match open {
            Some((first, last)) if start <= last => Some((first, last.max(end))),
            Some(stretch) => {
                flush(&mut output, &mut copied, stretch);
                Some((start, end))
            }
            None => Some((start, end)),
        };
    }
    if let Some(stretch) = open {
        flush(&mut output, &mut copied, stretch);
    }
    output.push_str(&text[copied..]);
    Cow::Owned(output)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const KEY: &str = "prov-KEY-9f8e7d6c5b4a";

    #[test]
    fn an_empty_guard_is_inactive_and_hands_text_back_borrowed() {
        let guard = SecretGuard::new(Vec::<String>::new()).unwrap();
        assert!(matches!(guard.text("anything"), Cow::Borrowed(_)));
    }

    #[test]
    fn shared_records_come_back_as_themselves_when_clean_and_redacted_otherwise() {
        let guard = SecretGuard::new([KEY]).unwrap();
        let call = |id: &str, arguments: &str| ToolCall {
            id: id.to_owned(),
            name: "web_search".to_owned(),
            arguments: arguments.to_owned(),
        };
        let clean: Arc<[ToolCall]> = vec![call("call_1", r#"{"query":"moutai"}"#)].into();
        assert!(Arc::ptr_eq(&guard.calls(&clean), &clean));
        let leaky: Arc<[ToolCall]> = vec![
            call("call_1", r#"{"query":"moutai"}"#),
            call(&format!("id-{KEY}"), &format!(r#"{{"query":"{KEY}"}}"#)),
        ]
        .into();
        let guarded = guard.calls(&leaky);
        assert!(!Arc::ptr_eq(&guarded, &leaky));
        assert_eq!(guarded[0], leaky[0]);
        assert_eq!(guarded[1].id, "id-[REDACTED]");
        assert_eq!(guarded[1].arguments, r#"{"query":"[REDACTED]"}"#);

        let name: Arc<str> = Arc::from("panes_list");

        let tool = |call_id: &str, data: Value| {
            Arc::new(Message::Tool {
                call_id: Arc::from(call_id),
                name: Arc::clone(&name),
                result: ToolResult::success(data, false),
            })
        };
        let kept = tool("call_1", json!({"rows": [["2025-06-02", 1.5]]}));
        assert!(Arc::ptr_eq(&guard.shared_message(Arc::clone(&kept)), &kept));
        for leaked in [
            tool(&format!("call-{KEY}"), json!({})),
            tool("call_1", json!({"note": KEY})),
            Arc::new(Message::Assistant {
                text: String::new(),
                calls: Arc::clone(&leaky),
            }),
            Arc::new(Message::User {
                text: format!("my key is {KEY}"),
            }),
        ] {
            let guarded = guard.shared_message(Arc::clone(&leaked));
            assert!(!Arc::ptr_eq(&guarded, &leaked));
            let text = serde_json::to_string(&*guarded).unwrap();
            assert!(!text.contains(KEY), "{text}");
        }
    }

    #[test]
    fn values_are_redacted_in_strings_keys_and_nested_data() {
        let guard = SecretGuard::new([KEY]).unwrap();
        let value = json!({"note": format!("key={KEY}!"), KEY: [KEY, 1], "[REDACTED]": true});
        assert!(guard.finds_in_value(&value));
        let guarded = guard.changed_value(&value).unwrap();
        let text = guarded.to_string();
        assert!(!text.contains(KEY), "{text}");
        assert_eq!(guarded["note"], "key=[REDACTED]!");
        // Keys in order: the literal "[REDACTED]" first, then the secret key, renamed.
        assert_eq!(guarded["[REDACTED]"], json!(true));
        assert_eq!(guarded["[REDACTED] (2)"], json!(["[REDACTED]", 1]));
        assert!(!guard.finds_in_value(&guarded));
    }

    #[test]
    fn fragments_of_eight_or_more_characters_are_redacted_whole() {
        let guard = SecretGuard::new([KEY]).unwrap();
        // KEY is "prov-KEY-9f8e7d6c5b4a": a 12-character tail, an escaped spelling, a window.
        assert_eq!(guard.text("tail: 9f8e7d6c5b4a."), "tail: [REDACTED].");
        assert_eq!(
            guard.text(r#"{"q":"\u0070rov-KEY-9f8e7d6c5b4a"}"#),
            r#"{"q":"\u0070[REDACTED]"}"#
        );
        assert_eq!(guard.text("KEY-9f8e"), "[REDACTED]");
        // Seven characters are not a fragment; neither is ordinary text.
        assert!(matches!(
            guard.text("KEY-9f8 and prov-KE"),
            Cow::Borrowed(_)
        ));
        // A whole value is still one placeholder, and refusing input needs a whole value.
        assert_eq!(guard.text(&format!("a {KEY} b")), "a [REDACTED] b");
        assert!(!guard.finds_in("9f8e7d6c5b4a"));
        assert!(guard.finds_in(KEY));
        // Long texts: fragments far apart are each found.
        let padding = "x".repeat(3000);
        let long = format!("{padding} 9f8e7d6c5b4a {padding} {KEY} {padding}");
        assert_eq!(
            guard.text(&long),
            format!("{padding} [REDACTED] {padding} [REDACTED] {padding}")
        );
        assert!(matches!(guard.text(&padding), Cow::Borrowed(_)));
    }

    #[test]
    fn a_value_touching_a_fragment_of_another_is_one_placeholder() {
        let guard = SecretGuard::new([KEY, "search-key-0123456789"]).unwrap();
        assert_eq!(guard.text(&format!("<{KEY}0123456789>")), "<[REDACTED]>");
        assert_eq!(guard.text(&format!("prov-KEY-9f8e{KEY}")), "[REDACTED]");
        assert_eq!(
            guard.text(&format!("<{KEY}>, <{KEY}>")),
            "<[REDACTED]>, <[REDACTED]>"
        );
    }

    #[test]
    fn a_guard_for_a_redactor_is_the_guard_of_its_values() {
        let secrets = [KEY, "search-key-0123456789", "pa\u{200B}ss-word-42"];
        let shared = SecretGuard::for_redactor(&Redactor::new(secrets).unwrap());
        let own = SecretGuard::new(secrets).unwrap();
        assert!(matches!(shared.text(KEY), Cow::Owned(_)));
        for text in [
            format!("a {KEY} b"),
            "tail: 9f8e7d6c5b4a, key-0123456 and pass-word-42".to_owned(),
            "search-key-0123456789search-key-0123456789".to_owned(),
            "nothing to see".to_owned(),
        ] {
            assert_eq!(shared.text(&text), own.text(&text), "{text}");
            assert_eq!(shared.finds_in(&text), own.finds_in(&text), "{text}");
        }
        assert_eq!(shared.text("x pass-word-42 y"), "x [REDACTED] y");
        let none = SecretGuard::for_redactor(&Redactor::new(Vec::<String>::new()).unwrap());
        assert!(matches!(none.text(KEY), Cow::Borrowed(_)));
    }

    #[test]
    fn short_values_are_refused() {
        assert!(SecretGuard::new(["short"]).is_err());
    }
}

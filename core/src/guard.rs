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

    /// Whether the guard checks anything.
    pub fn is_active(&self) -> bool {
        self.redactor.is_some()
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

    /// A shared string, redacted when it carries a value: the very same string when clean.
    pub fn shared(&self, text: Arc<str>) -> Arc<str> {
        match self.text(&text) {
            Cow::Borrowed(_) => text,
            Cow::Owned(redacted) => Arc::from(redacted),
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
        self.is_active() && any_text(value, &|text| self.finds_in(text))
    }

    /// Whether `text` has anything to redact: a value or a fragment of one. Most text is
    /// cleared without building anything.
    fn touches(&self, text: &str) -> bool {
        self.fragments
            .as_ref()
            .is_some_and(|fragments| !clears(fragments, text))
            && matches!(self.text(text), Cow::Owned(_))
    }

    /// `value` with every string and key redacted. Two keys that redact to the same text
    /// stay distinct: the later one gets a ` (2)`, ` (3)`… suffix, so no member is lost.
    pub fn value(&self, value: Value) -> Value {
        // Most values carry no secret: look first, and rebuild only when something is found.
        if !self.is_active() || !any_text(&value, &|text| self.touches(text)) {
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
        if !self.is_active() || !self.touches_result(&result) {
            return result;
        }
        let outcome = match result.outcome {
            Outcome::Success(data) => {
                Outcome::Success(Arc::new(self.value(Arc::unwrap_or_clone(data))))
            }
            Outcome::Failure(error) => {
                Outcome::Failure(Arc::new(self.error(Arc::unwrap_or_clone(error))))
            }
        };
        ToolResult {
            outcome,
            state_changed: result.state_changed,
        }
    }

    /// Whether any text of `result` has anything to redact.
    fn touches_result(&self, result: &ToolResult) -> bool {
        match &result.outcome {
            Outcome::Success(data) => any_text(data, &|text| self.touches(text)),
            Outcome::Failure(error) => {
                let fields = error.fields.iter().flatten();
                [&error.code, &error.message, &error.recommended_action]
                    .into_iter()
                    .chain(fields.flat_map(|field| [&field.path, &field.message]))
                    .any(|text| self.touches(text))
            }
        }
    }

    /// Calls with their ids, names and argument texts guarded: the very same calls when none
    /// carries anything to redact.
    pub fn calls(&self, calls: &Arc<[ToolCall]>) -> Arc<[ToolCall]> {
        if !self.is_active() || !calls.iter().any(|call| self.touches_call(call)) {
            return Arc::clone(calls);
        }
        calls.iter().cloned().map(|call| self.call(call)).collect()
    }

    /// Whether the id, name or argument text of `call` has anything to redact.
    fn touches_call(&self, call: &ToolCall) -> bool {
        [&call.id, &call.name, &call.arguments]
            .into_iter()
            .any(|text| self.touches(text))
    }

    /// A shared transcript message with every text guarded: the very same message when it
    /// carries nothing to redact.
    pub fn shared_message(&self, message: Arc<Message>) -> Arc<Message> {
        if !self.is_active() || !self.touches_message(&message) {
            return message;
        }
        Arc::new(self.message(Arc::unwrap_or_clone(message)))
    }

    /// Whether any text of `message` has anything to redact.
    fn touches_message(&self, message: &Message) -> bool {
        match message {
            Message::User { text } => self.touches(text),
            Message::Assistant { text, calls } => {
                self.touches(text) || calls.iter().any(|call| self.touches_call(call))
            }
            Message::Tool {
                call_id,
                name,
                result,
            } => self.touches(call_id) || self.touches(name) || self.touches_result(result),
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
                calls: self.calls(&calls),
            },
            Message::Tool {
                call_id,
                name,
                result,
            } => Message::Tool {
                call_id: self.shared(call_id),
                name: self.shared(name),
                result: self.result(result),
            },
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
        assert!(!guard.is_active());
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
        assert!(Arc::ptr_eq(&guard.shared(Arc::clone(&name)), &name));
        assert_eq!(&*guard.shared(Arc::from(KEY)), "[REDACTED]");

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
        assert!(shared.is_active());
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
        assert!(!none.is_active());
    }

    #[test]
    fn short_values_are_refused() {
        assert!(SecretGuard::new(["short"]).is_err());
    }
}

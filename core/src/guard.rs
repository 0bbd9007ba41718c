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
//! with a JSON escape in its argument text (`\u0073k-…`), must not get the rest through. A
//! fragment is found through one of its 8-character windows and grown to the whole run of
//! characters it shares with the value.
//!
//! The same guard refuses a call whose arguments carry a whole configured value
//! (`SECRET_IN_INPUT`): it checks the raw argument text and, once parsed, every decoded
//! string and key, so an escaped spelling cannot smuggle a value past it.

use std::borrow::Cow;
use std::sync::Arc;

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
            fragments: Some(Arc::new(Fragments::new(redactor.values().iter().cloned()))),
        }
    }

    /// Whether the guard checks anything.
    pub fn is_active(&self) -> bool {
        self.redactor.is_some()
    }

    /// `text` with every configured value, and every fragment of 8 or more characters of
    /// one, redacted; borrowed when it carries none.
    pub fn text<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let (Some(redactor), Some(fragments)) = (&self.redactor, &self.fragments) else {
            return Cow::Borrowed(text);
        };
        if fragments.clears(text) {
            return Cow::Borrowed(text);
        }
        match redactor.redact(text) {
            Cow::Borrowed(text) => fragments.redact(text),
            Cow::Owned(redacted) => match fragments.redact(&redacted) {
                Cow::Borrowed(_) => Cow::Owned(redacted),
                Cow::Owned(again) => Cow::Owned(again),
            },
        }
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
        !fragments.clears(text) && matches!(redactor.redact(text), Cow::Owned(_))
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
            .is_some_and(|fragments| !fragments.clears(text))
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

/// The characters of a window.
const WINDOW_CHARS: usize = 8;

/// Finds fragments of configured values: runs of 8 or more characters that the text shares
/// with a value.
///
/// A fragment is at least 8 bytes long, so it covers one of every 7 consecutive text
/// positions: only positions that are multiples of 7 are looked at, and the two bytes there
/// are looked up in a 65,536-bit table of the byte pairs the values hold. A hit leads, through
/// a chain per bucket of pairs, to where in which value the pair stands; from there the
/// shared run is grown both ways and kept when it reaches 8 characters. Cheap to build (the
/// guard is made per run: one place per byte of the values, chained in one pass, nothing
/// sorted) and about two instructions per text byte.
#[derive(Debug)]
struct Fragments {
    pairs: Box<PairTable>,
    /// The first place of each bucket of pairs (`NONE` for an empty bucket).
    heads: Vec<u32>,
    /// Every place a pair stands: (pair, value, byte offset in the value, next place of the
    /// bucket), each bucket's places chained in (value, offset) order.
    places: Vec<Place>,
    values: Vec<Vec<u8>>,
}

/// Where a byte pair stands in a value, and the next place of its bucket.
#[derive(Debug, Clone, Copy)]
struct Place {
    pair: u16,
    value: u32,
    offset: u32,
    next: u32,
}

/// The end of a bucket's chain.
const NONE: u32 = u32::MAX;

/// The bucket of a pair: the top byte of a multiplicative hash, so that pairs of like bytes
/// (`aa`, `bb`) and ASCII text spread over all 256 buckets.
fn bucket(pair: u16) -> usize {
    usize::from(pair.wrapping_mul(0x9E37) >> 8)
}

/// Text positions looked at: one in this many (a fragment has at least `STRIDE + 1` bytes).
const STRIDE: usize = WINDOW_CHARS - 1;

impl Fragments {
    /// The table of `values`, given without their invisible format characters (as the exact
    /// rule reads them).
    fn new(values: impl Iterator<Item = String>) -> Fragments {
        let values: Vec<Vec<u8>> = values.map(String::into_bytes).collect();
        // Indices and offsets are kept as `u32`: configured values are keys of at most a few
        // hundred bytes, far from the 4 GiB where a place would no longer be found.
        let pairs_count = values
            .iter()
            .map(|bytes| bytes.len().saturating_sub(1))
            .sum();
        let mut places: Vec<Place> = Vec::with_capacity(pairs_count);
        for (value, bytes) in values.iter().enumerate() {
            for (offset, pair) in bytes.windows(2).enumerate() {
                places.push(Place {
                    pair: u16::from_le_bytes([pair[0], pair[1]]),
                    value: u32::try_from(value).unwrap_or(u32::MAX),
                    offset: u32::try_from(offset).unwrap_or(u32::MAX),
                    next: NONE,
                });
            }
        }
        // Chained back to front, so that each chain runs in (value, offset) order.
        let mut heads = vec![NONE; 256];
        let mut pairs = empty_pair_table();
        for index in (0..places.len()).rev() {
            let pair = places[index].pair;
            pairs[usize::from(pair >> 6)] |= 1 << (pair & 63);
            places[index].next = heads[bucket(pair)];
            heads[bucket(pair)] = u32::try_from(index).unwrap_or(NONE);
        }
        Fragments {
            pairs,
            heads,
            places,
            values,
        }
    }

    /// The places of `pair`, in (value, offset) order.
    fn places(&self, pair: u16) -> impl Iterator<Item = (usize, usize)> + '_ {
        let mut next = self.heads[bucket(pair)];
        std::iter::from_fn(move || {
            while let Some(place) = self.places.get(next as usize) {
                next = place.next;
                if place.pair == pair {
                    return Some((place.value as usize, place.offset as usize));
                }
            }
            None
        })
    }

    /// Every fragment found through a looked-at position, in the order found (not merged;
    /// the same fragment can be found from several positions).
    fn raw_spans<'t>(&'t self, text: &'t [u8]) -> impl Iterator<Item = (usize, usize)> + 't {
        (0..text.len().saturating_sub(1))
            .step_by(STRIDE)
            .filter_map(move |position| {
                let pair = u16::from_le_bytes([text[position], text[position + 1]]);
                let held = (self.pairs[usize::from(pair >> 6)] >> (pair & 63)) & 1 != 0;
                held.then_some((position, pair))
            })
            .flat_map(move |(position, pair)| {
                self.places(pair).filter_map(move |(value, offset)| {
                    self.shared_run(text, position, value, offset)
                })
            })
    }

    /// The fragments of `text`, merged, in order.
    fn spans(&self, text: &[u8]) -> Vec<(usize, usize)> {
        let mut spans: Vec<(usize, usize)> = self.raw_spans(text).collect();
        spans.sort_unstable();
        let mut merged: Vec<(usize, usize)> = Vec::with_capacity(spans.len());
        for (start, end) in spans {
            match merged.last_mut() {
                Some(last) if start <= last.1 => last.1 = last.1.max(end),
                _ => merged.push((start, end)),
            }
        }
        merged
    }

    /// The run the text shares with `value` around text position `position` = value offset
    /// `offset`, when it holds at least 8 characters.
    fn shared_run(
        &self,
        text: &[u8],
        position: usize,
        value: usize,
        offset: usize,
    ) -> Option<(usize, usize)> {
        let value = &self.values[value];
        let before = text[..position]
            .iter()
            .rev()
            .zip(value[..offset].iter().rev())
            .take_while(|(a, b)| a == b)
            .count();
        let after = text[position..]
            .iter()
            .zip(&value[offset..])
            .take_while(|(a, b)| a == b)
            .count();
        let (start, end) = (position - before, position + after);
        // Characters: every byte that does not continue a UTF-8 sequence starts one.
        let characters = text[start..end]
            .iter()
            .filter(|&&byte| byte & 0xC0 != 0x80)
            .count();
        (characters >= WINDOW_CHARS).then_some((start, end))
    }

    /// Whether `text` holds any fragment.
    fn finds_in(&self, text: &[u8]) -> bool {
        self.raw_spans(text).next().is_some()
    }

    /// Whether `text` certainly holds neither a value nor a fragment of one, decided without
    /// the redactor. Every occurrence of a value is a run of 8 or more characters shared with
    /// it, and ASCII text has no invisible character that could hide one: one pass of the
    /// table clears most text, and anything shorter than 8 bytes is clear at once.
    fn clears(&self, text: &str) -> bool {
        text.len() < WINDOW_CHARS || (text.is_ascii() && !self.finds_in(text.as_bytes()))
    }

    /// `text` with every fragment replaced by `[REDACTED]` (touching fragments merged).
    fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let spans = self.spans(text.as_bytes());
        if spans.is_empty() {
            return Cow::Borrowed(text);
        }
        let mut output = String::with_capacity(text.len());
        let mut copied = 0;
        for (start, end) in spans {
            // Fragments start and end on character boundaries of the value; widen to the
            // text's boundaries should a match ever end inside a character.
            let start = (0..=start)
                .rev()
                .find(|&at| text.is_char_boundary(at))
                .unwrap_or(0);
            let end = (end..=text.len())
                .find(|&at| text.is_char_boundary(at))
                .unwrap_or(text.len());
            if start < copied {
                continue;
            }
            output.push_str(&text[copied..start]);
            output.push_str(crate::redact::REDACTED);
            copied = end;
        }
        output.push_str(&text[copied..]);
        Cow::Owned(output)
    }
}

/// One bit per byte pair (65,536 bits): a fixed size, so that looking a pair up needs no
/// bounds check.
type PairTable = [u64; 1024];

/// An empty [`PairTable`], allocated zeroed.
fn empty_pair_table() -> Box<PairTable> {
    let table: Box<[u64]> = vec![0u64; 1024].into_boxed_slice();
    table
        .try_into()
        .unwrap_or_else(|_| unreachable!("the table has 1024 words"))
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

//! R22's guarded record, as the oracle works it out: the record as it was produced, with
//! exactly the occurrences of the run's configured values and their fragments replaced.
//!
//! The oracle's own reading of R22, R24 and R29: every stretch of a text that shares 8 or
//! more consecutive characters with a configured value (a whole occurrence is one such
//! stretch) is covered; overlapping or touching stretches are joined (R29), each widened to
//! whole characters, and each joined stretch becomes one `[REDACTED]`; nothing else of the
//! text changes. A value is read without its invisible format characters (R28), as the
//! runtime reads it. In a record every string is guarded, and every object key; a JSON
//! number, boolean or null is left as it is.
//!
//! Two keys of one object that guard to the same text both survive, the later one in key
//! order as `<text> (2)` (then `(3)`…), as the core documents (the SPEC says only that no
//! member is lost). A text that holds an invisible format character is predicted unchanged
//! when, read without them, it shares no stretch with a value; otherwise it is not predicted
//! (the record is then checked only for leaks, by I8): R28 lets one stand inside an
//! occurrence, and where such a match begins and ends is the redactor's to decide.
//!
//! The stretches are found here, not by the `ward_fragments` scanner the runtime's guard uses:
//! a run of 8 or more characters holds 8 or more bytes, so it holds 4-byte grams of the value
//! starting at 5 consecutive positions of the text, one of them a multiple of 5. The text is
//! read once, 4 bytes at every fifth position; a position whose 4 bytes are a gram of a value
//! (one bit per hash of the grams, then their sorted list) is grown both ways as far as text
//! and value agree, and kept when that is 8 characters or more. A bug of the runtime's scanner
//! therefore shows as a record that differs from this prediction.
//!
//! What the reading costs, measured (release build, one job, alternating runs, medians):
//! against a `memchr` `memmem` search for each 8-byte window, a table of windows read 1.07×
//! the campaign's runs per second, and the 8-byte word rolled on byte by byte 1.08× more
//! (seeds 0..5000, 2026-12-04): most texts are short, and a finder per window cost more to
//! start than the text to read. A gram at every fifth position instead of a window at every
//! one: 1.10× the campaign's runs per second (seeds 0..20000, one job each, seven pairs run
//! side by side, the median; `HISTORY.md`, 2026-12-06), most of it on the 256 KiB argument
//! texts of R3's limit. Each text of a record read once, and a record borrowed rather than
//! copied wherever the guard leaves it as it is (the `Cow`s below), with the generator's
//! cheaper look for values shared with a planted part: 0.80× → 0.88× of 3baefad's runs per
//! second (seeds 0..20000, one job, seven alternating runs, 2026-12-06; 3.27 → 3.14 billion
//! instructions per 1,000 seeds).

use std::borrow::Cow;

use serde_json::{Map, Value};
use ward_core::envelope::{FieldError, ToolError};
use ward_core::tool::ToolCall;

use super::REDACTED;
use crate::catalogue::SECRET_RUN_CHARS_MIN;

/// R28's invisible format characters: zero-width space, non-joiner and joiner, word joiner,
/// byte order mark, soft hyphen.
const INVISIBLE: [char; 6] = [
    '\u{200B}', '\u{200C}', '\u{200D}', '\u{2060}', '\u{FEFF}', '\u{AD}',
];

/// The guard R22 describes, for one run's configured values.
pub(crate) struct Expected {
    /// The values, without invisible format characters, at least 8 characters long.
    values: Vec<Vec<u8>>,
    /// One bit per [`hash`] of a gram (every 4-byte gram of every value): a clear bit is no
    /// gram.
    filter: Box<[u64; FILTER_WORDS]>,
    /// Every gram: (its bytes read as a little-endian `u32`, value, offset), sorted.
    grams: Vec<(u32, usize, usize)>,
}

/// Bits of a [`hash`].
const HASH_BITS: u32 = 15;

/// Words of [`Expected::filter`].
const FILTER_WORDS: usize = (1 << HASH_BITS) / 64;

/// Where a gram read as a `u32` falls in [`Expected::filter`] (Fibonacci hashing).
#[inline]
fn hash(gram: u32) -> usize {
    (u64::from(gram).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - HASH_BITS)) as usize
}

/// The bytes of the shortest run that counts (a run of 8 characters has at least 8 bytes).
const WINDOW: usize = SECRET_RUN_CHARS_MIN;

/// The bytes of a gram.
const GRAM: usize = 4;

/// The positions a gram is read at: every `STRIDE`th. A run of `WINDOW` bytes or more holds
/// grams starting at `WINDOW - GRAM + 1` consecutive positions, so one of them is read.
const STRIDE: usize = WINDOW - GRAM + 1;

/// The gram of `text` at `at`, little-endian.
#[inline]
fn gram_at(text: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([text[at], text[at + 1], text[at + 2], text[at + 3]])
}

impl Expected {
    /// The guard for `configured`.
    pub fn new(configured: &[&str]) -> Expected {
        let values: Vec<Vec<u8>> = configured
            .iter()
            .map(|value| {
                value
                    .chars()
                    .filter(|c| !INVISIBLE.contains(c))
                    .collect::<String>()
            })
            .filter(|value| value.chars().count() >= SECRET_RUN_CHARS_MIN)
            .map(String::into_bytes)
            .collect();
        let mut grams: Vec<(u32, usize, usize)> = values
            .iter()
            .enumerate()
            .flat_map(|(index, value)| {
                (0..=value.len() - GRAM).map(move |offset| (gram_at(value, offset), index, offset))
            })
            .collect();
        grams.sort_unstable();
        let mut filter = Box::new([0_u64; FILTER_WORDS]);
        for &(gram, _, _) in &grams {
            let bit = hash(gram);
            filter[bit / 64] |= 1 << (bit % 64);
        }
        Expected {
            values,
            filter,
            grams,
        }
    }

    /// The stretches of `text` that share 8 or more characters with a value, sorted,
    /// overlapping and touching ones joined.
    pub(crate) fn stretches(&self, text: &[u8]) -> Vec<(usize, usize)> {
        let characters = |bytes: &[u8]| bytes.iter().filter(|&&byte| byte & 0xC0 != 0x80).count();
        let mut runs = Vec::new();
        if text.len() < WINDOW || self.grams.is_empty() {
            return runs;
        }
        let filter = &*self.filter;
        // Plain indexing and a `while` loop: the release profile's level of optimisation
        // leaves every iterator adapter a call of its own.
        let mut at = 0;
        while at + GRAM <= text.len() {
            let gram = gram_at(text, at);
            let bit = hash(gram);
            if (filter[bit / 64] >> (bit % 64)) & 1 == 0 {
                at += STRIDE;
                continue;
            }
            let first = self.grams.partition_point(|&(other, _, _)| other < gram);
            for &(_, index, offset) in self.grams[first..]
                .iter()
                .take_while(|&&(other, _, _)| other == gram)
            {
                let value = &self.values[index];
                let mut start = (at, offset);
                while start.0 > 0 && start.1 > 0 && text[start.0 - 1] == value[start.1 - 1] {
                    start = (start.0 - 1, start.1 - 1);
                }
                let mut end = (at + GRAM, offset + GRAM);
                while end.0 < text.len() && end.1 < value.len() && text[end.0] == value[end.1] {
                    end = (end.0 + 1, end.1 + 1);
                }
                if characters(&text[start.0..end.0]) >= SECRET_RUN_CHARS_MIN {
                    runs.push((start.0, end.0));
                }
            }
            at += STRIDE;
        }
        runs.sort_unstable();
        let mut joined: Vec<(usize, usize)> = Vec::with_capacity(runs.len());
        for (start, end) in runs {
            match joined.last_mut() {
                Some(last) if start <= last.1 => last.1 = last.1.max(end),
                _ => joined.push((start, end)),
            }
        }
        joined
    }

    /// `text` as the guard must let it through; `None` when not predicted.
    pub fn text<'t>(&self, text: &'t str) -> Option<Cow<'t, str>> {
        if !text.is_ascii() && text.contains(INVISIBLE) {
            // Unchanged when even without its invisible characters the text shares no
            // stretch with a value (R28 lets one stand inside an occurrence); otherwise not
            // predicted. Looking for them in every text that is not ASCII, not only in one
            // with a stretch, costs 1.6 % of the campaign's instructions (3.50 → 3.56
            // billion, seeds 0..1000); a `memchr3` search for their lead bytes would save
            // 0.7 % of it back, under the 5 % a speed change must earn.
            let visible: String = text.chars().filter(|c| !INVISIBLE.contains(c)).collect();
            return self
                .stretches(visible.as_bytes())
                .is_empty()
                .then_some(Cow::Borrowed(text));
        }
        let spans = self.stretches(text.as_bytes());
        if spans.is_empty() {
            return Some(Cow::Borrowed(text));
        }
        let mut joined: Vec<(usize, usize)> = Vec::with_capacity(spans.len());
        for (start, end) in spans {
            let start = (0..=start)
                .rev()
                .find(|&at| text.is_char_boundary(at))
                .unwrap_or(0);
            let end = (end..=text.len())
                .find(|&at| text.is_char_boundary(at))
                .unwrap_or(text.len());
            match joined.last_mut() {
                Some(last) if start <= last.1 => last.1 = last.1.max(end),
                _ => joined.push((start, end)),
            }
        }
        let mut guarded = String::with_capacity(text.len());
        let mut copied = 0;
        for (start, end) in joined {
            guarded.push_str(&text[copied..start]);
            guarded.push_str(REDACTED);
            copied = end;
        }
        guarded.push_str(&text[copied..]);
        Some(Cow::Owned(guarded))
    }

    fn string(&self, text: &str) -> Option<String> {
        self.text(text).map(Cow::into_owned)
    }

    /// A JSON value with every string and key guarded: borrowed when nothing in it changes
    /// (most results: each string is read once and nothing is copied).
    pub fn value<'v>(&self, value: &'v Value) -> Option<Cow<'v, Value>> {
        Some(match value {
            Value::String(text) => match self.text(text)? {
                Cow::Borrowed(_) => Cow::Borrowed(value),
                Cow::Owned(guarded) => Cow::Owned(Value::String(guarded)),
            },
            Value::Array(items) => match changed_copy(items, |item| self.value(item))? {
                None => Cow::Borrowed(value),
                Some(items) => Cow::Owned(Value::Array(items)),
            },
            Value::Object(members) => match self.members(members)? {
                None => Cow::Borrowed(value),
                Some(members) => Cow::Owned(Value::Object(members)),
            },
            Value::Null | Value::Bool(_) | Value::Number(_) => Cow::Borrowed(value),
        })
    }

    /// The members of an object guarded, keys included: `None` inside when none changes.
    fn members(&self, members: &Map<String, Value>) -> Option<Option<Map<String, Value>>> {
        let mut guarded: Option<Map<String, Value>> = None;
        for (position, (key, member)) in members.iter().enumerate() {
            let (key_guarded, member_guarded) = (self.text(key)?, self.value(member)?);
            let unchanged = matches!(
                (&key_guarded, &member_guarded),
                (Cow::Borrowed(_), Cow::Borrowed(_))
            );
            let guarded = match &mut guarded {
                None if unchanged => continue,
                None => guarded.insert(
                    members
                        .iter()
                        .take(position)
                        .map(|(key, member)| (key.clone(), member.clone()))
                        .collect(),
                ),
                Some(guarded) => guarded,
            };
            // Keys that guard to the same text: the core documents that the later one, in key
            // order, becomes `<text> (2)`, then `(3)`… (the SPEC keeps every member).
            let key = (1..)
                .map(|ordinal| match ordinal {
                    1 => key_guarded.to_string(),
                    _ => format!("{key_guarded} ({ordinal})"),
                })
                .find(|key| !guarded.contains_key(key))?;
            guarded.insert(key, member_guarded.into_owned());
        }
        Some(guarded)
    }

    /// A call with its id, name and argument text guarded: borrowed when none changes.
    pub fn call<'c>(&self, call: &'c ToolCall) -> Option<Cow<'c, ToolCall>> {
        let texts = [&call.id, &call.name, &call.arguments].map(|text| self.text(text));
        let [Some(id), Some(name), Some(arguments)] = texts else {
            return None;
        };
        Some(match (id, name, arguments) {
            (Cow::Borrowed(_), Cow::Borrowed(_), Cow::Borrowed(_)) => Cow::Borrowed(call),
            (id, name, arguments) => Cow::Owned(ToolCall {
                id: id.into_owned(),
                name: name.into_owned(),
                arguments: arguments.into_owned(),
            }),
        })
    }

    /// An error with every text guarded: borrowed when none changes.
    pub fn error<'e>(&self, error: &'e ToolError) -> Option<Cow<'e, ToolError>> {
        let fields = match &error.fields {
            Some(fields) => Some(
                fields
                    .iter()
                    .map(|field| {
                        Some(FieldError {
                            path: self.string(&field.path)?,
                            message: self.string(&field.message)?,
                        })
                    })
                    .collect::<Option<Vec<_>>>()?,
            ),
            None => None,
        };
        let guarded = ToolError {
            code: self.string(&error.code)?,
            message: self.string(&error.message)?,
            retryable: error.retryable,
            recommended_action: self.string(&error.recommended_action)?,
            fields,
        };
        // A body's error is short and rare: built whole, then compared.
        Some(match guarded == *error {
            true => Cow::Borrowed(error),
            false => Cow::Owned(guarded),
        })
    }

    /// An assistant message's text and calls guarded: each borrowed when it does not change.
    pub fn assistant<'r>(&self, text: &'r str, calls: &'r [ToolCall]) -> Option<Reply<'r>> {
        let text = self.text(text)?;
        let calls = match changed_copy(calls, |call| self.call(call))? {
            None => Cow::Borrowed(calls),
            Some(guarded) => Cow::Owned(guarded),
        };
        Some(Reply { text, calls })
    }
}

/// The items of a list, each guarded by `guard`: `None` inside when none changes, else a copy
/// of every item (made from the first that changes on). `None` when an item is not predicted.
fn changed_copy<'i, T: Clone>(
    items: &'i [T],
    guard: impl Fn(&'i T) -> Option<Cow<'i, T>>,
) -> Option<Option<Vec<T>>> {
    let mut copy: Option<Vec<T>> = None;
    for (position, item) in items.iter().enumerate() {
        match (guard(item)?, &mut copy) {
            (Cow::Borrowed(_), None) => {}
            (item, None) => {
                let mut items_before = Vec::with_capacity(items.len());
                items_before.extend_from_slice(&items[..position]);
                copy.insert(items_before).push(item.into_owned());
            }
            (item, Some(copy)) => copy.push(item.into_owned()),
        }
    }
    Some(copy)
}

/// An assistant message as the guard must let it through.
#[derive(Debug, PartialEq)]
pub(crate) struct Reply<'r> {
    /// The text.
    pub text: Cow<'r, str>,
    /// The calls, each with its id, name and argument text guarded.
    pub calls: Cow<'r, [ToolCall]>,
}

impl Reply<'_> {
    /// Whether a record of an assistant message holds exactly this text and these calls.
    pub fn is(&self, text: &str, calls: &[ToolCall]) -> bool {
        *self.text == *text && *self.calls == *calls
    }

    /// Whether the guard changed the reply this was made from (`text`, `calls`): a borrowed
    /// part is that part itself, and only a copy is compared (what the guard left alone is
    /// known from the `Cow`, not worked out again: 3.556 → 3.536 billion instructions for
    /// seeds 0..1000 with the same for results in `i8_no_secret_leaks.rs`).
    pub fn changes(&self, text: &str, calls: &[ToolCall]) -> bool {
        matches!(&self.text, Cow::Owned(guarded) if guarded != text)
            || matches!(&self.calls, Cow::Owned(guarded) if **guarded != *calls)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const KEY: &str = "prov-KEY-9f8e7d6c5b4a";
    const OTHER: &str = "search-key-0123456789";

    fn guarded(text: &str) -> Option<String> {
        Expected::new(&[KEY, OTHER]).string(text)
    }

    #[test]
    fn occurrences_and_fragments_become_one_placeholder_each() {
        assert_eq!(guarded("nothing here").as_deref(), Some("nothing here"));
        assert_eq!(
            guarded(&format!("a {KEY} b")).as_deref(),
            Some("a [REDACTED] b")
        );
        assert_eq!(
            guarded("tail 9f8e7d6c5b4a.").as_deref(),
            Some("tail [REDACTED].")
        );
        // Seven characters are no fragment.
        assert_eq!(guarded("tail 7d6c5b4a").as_deref(), Some("tail [REDACTED]"));
        assert_eq!(guarded("tail d6c5b4a!").as_deref(), Some("tail d6c5b4a!"));
        // A value touching a fragment of another, or itself twice: one stretch.
        assert_eq!(
            guarded(&format!("<{KEY}0123456789>")).as_deref(),
            Some("<[REDACTED]>")
        );
        assert_eq!(
            guarded(&format!("{KEY}{KEY}")).as_deref(),
            Some("[REDACTED]")
        );
        // Invisible characters near a value: not predicted.
        assert_eq!(guarded(&format!("\u{200B}{KEY}")), None);
        assert_eq!(guarded("\u{200B} clean").as_deref(), Some("\u{200B} clean"));
        // A fragment an invisible character splits is still one (R28): not predicted.
        assert_eq!(guarded("tail 7d6c\u{200B}5b4a"), None);
        assert_eq!(
            guarded("tail 7d6c\u{200B}5b4"),
            Some("tail 7d6c\u{200B}5b4".into())
        );
    }

    #[test]
    fn the_stretches_are_the_reference_scanners_runs_joined() {
        use rand_core::Rng;
        let values = [KEY, OTHER, "ééé-multi-byte-ñ"];
        let expected = Expected::new(&values);
        let mut rng = rand_pcg::Pcg64Mcg::new(7);
        let pieces = [
            "é",
            "x",
            "-",
            " ",
            "prov-KEY",
            "9f8e7d6c5b4a",
            "0123456789",
            "ñ",
        ];
        for _ in 0..3000 {
            let mut text = String::new();
            for _ in 0..(rng.next_u32() % 12) {
                match rng.next_u32() % 4 {
                    0 => {
                        let value = values[(rng.next_u32() % 3) as usize];
                        let from = (rng.next_u32() as usize) % value.len();
                        let to = from + (rng.next_u32() as usize) % (value.len() - from + 1);
                        if let Some(part) = value.get(from..to) {
                            text.push_str(part);
                        }
                    }
                    _ => text.push_str(pieces[(rng.next_u32() % 8) as usize]),
                }
            }
            let runs = ward_fragments::reference::runs(
                values
                    .iter()
                    .map(|value| (value.as_bytes(), SECRET_RUN_CHARS_MIN)),
                text.as_bytes(),
            );
            let mut joined: Vec<(usize, usize)> = Vec::new();
            for run in runs {
                match joined.last_mut() {
                    Some(last) if run.start <= last.1 => last.1 = last.1.max(run.end),
                    _ => joined.push((run.start, run.end)),
                }
            }
            assert_eq!(expected.stretches(text.as_bytes()), joined, "{text:?}");
        }
    }

    #[test]
    fn a_run_of_eight_bytes_is_found_at_every_offset_and_at_every_end() {
        let expected = Expected::new(&[KEY]);
        let run = &KEY[3..11];
        for before in 0..12 {
            for after in 0..12 {
                let text = format!("{}{run}{}", "~".repeat(before), "~".repeat(after));
                assert_eq!(
                    expected.stretches(text.as_bytes()),
                    vec![(before, before + run.len())],
                    "{text:?}"
                );
                let seven = format!("{}{}{}", "~".repeat(before), &run[1..], "~".repeat(after));
                assert_eq!(expected.stretches(seven.as_bytes()), vec![], "{seven:?}");
            }
        }
    }

    #[test]
    fn values_keep_everything_but_their_secrets() {
        // `Cow`'s equality ignores whether a value was copied: the variant is asserted apart.
        let owned = |guarded: Option<Cow<'_, Value>>| match guarded {
            Some(Cow::Owned(value)) => Some(value),
            _ => None,
        };
        let expected = Expected::new(&[KEY]);
        let value = json!({"debug": format!("key {KEY}"), "rows": [[1.5, "x"]], KEY: true});
        assert_eq!(
            owned(expected.value(&value)),
            Some(json!({"debug": "key [REDACTED]", "rows": [[1.5, "x"]], "[REDACTED]": true}))
        );
        let colliding = json!({ KEY: 1, "[REDACTED]": 2, "x9f8e7d6c5b4a": 3 });
        assert_eq!(
            owned(expected.value(&colliding)),
            Some(json!({"[REDACTED]": 2, "[REDACTED] (2)": 1, "x[REDACTED]": 3}))
        );
        assert!(matches!(
            Expected::new(&[]).value(&value),
            Some(Cow::Borrowed(_))
        ));
        let clean = json!({"rows": [[1.5, "x"]], "note": "nothing secret"});
        assert!(matches!(expected.value(&clean), Some(Cow::Borrowed(_))));
        let invisible = json!({"note": format!("\u{200B}{KEY}")});
        assert_eq!(expected.value(&invisible), None);
    }
}

//! The words both scenario builders use — the generator of this module's parent and the
//! structure-aware fuzz target's builder (`ward-checks`) — so that a scenario says the same
//! things whichever of them wrote it.

use crate::catalogue::CALL_ID_CHARS_MAX;

/// Sentences of ordinary prompts.
pub const PROMPT_SENTENCES: &[&str] = &[
    "Draw the recent support level and compare it with the index.",
    "Explain the basic concepts of this chart.",
    "Add an RSI pane and mark the last breakout.",
    "What changed on the chart since yesterday?",
    "Remove every drawing and reset the settings.",
];

/// Names no tool has: made up, misspelt, in the wrong case, empty, retired. (The order is
/// part of the structure-aware fuzz target's input format: its committed corpus picks names
/// by position.)
pub const UNKNOWN_TOOLS: &[&str] = &[
    "chart_delete_everything",
    "panes_lst",
    "Drawing_Create",
    "",
    "legacy_export",
];

/// The reply that ends a run: text and no calls.
pub const FINAL_REPLY: &str = "Here is what I found.";

/// The scripted user's answer.
pub const ANSWER: &str = "Yes";

/// The words of a prompt that give a configured secret value (a sentence without its full
/// stop, as plantings are).
pub fn gives_key(value: &str) -> String {
    format!("My key is {value}")
}

/// Call ids in the order a model numbers them: `call_9`, `call_10`, …, so that sorting calls
/// by id differs from their order.
#[derive(Clone, Debug)]
pub struct CallIds {
    next: u32,
}

impl Default for CallIds {
    fn default() -> Self {
        CallIds { next: 9 }
    }
}

impl CallIds {
    /// The next id.
    pub fn next_id(&mut self) -> String {
        self.next += 1;
        format!("call_{}", self.next - 1)
    }
}

/// A call id of exactly `chars` characters: `id`, then `-`, then `letter` repeated (a
/// two-byte letter such as `é` makes characters and bytes differ).
pub fn call_id_of(id: &str, chars: usize, letter: char) -> String {
    let mut long: String = id.chars().take(chars).collect();
    if long.chars().count() < chars {
        long.push('-');
    }
    let missing = chars.saturating_sub(long.chars().count());
    long.extend(std::iter::repeat_n(letter, missing));
    long
}

/// A call id one character longer than the runtime accepts (SPEC §4, 160 characters).
pub fn overlong_call_id() -> String {
    "x".repeat(CALL_ID_CHARS_MAX + 1)
}

/// The tool and argument text of a call that echoes a configured secret `value` into a
/// search query: as it is, or with its first character written as a JSON `\u` escape (the
/// decoded string carries the value; the raw text does not).
pub fn echo(value: &str, escaped: bool) -> (&'static str, String) {
    let text = format!(r#"{{"query":"login with {value}"}}"#);
    let text = if escaped {
        escape_first(&text, value)
    } else {
        text
    };
    (ECHO_TOOL, text)
}

/// The tool a model echoes a secret into: a search, whose one required field takes any text.
pub const ECHO_TOOL: &str = "web_search";

/// `text` with the first character of the first occurrence of `value` written as a JSON `\u`
/// escape (`text` when it does not hold `value`, or when that character is outside the Basic
/// Multilingual Plane and would need two escapes).
pub fn escape_first(text: &str, value: &str) -> String {
    let (Some(at), Some(first)) = (text.find(value), value.chars().next()) else {
        return text.to_owned();
    };
    if u32::from(first) > 0xFFFF {
        return text.to_owned();
    }
    let after = at + first.len_utf8();
    format!(
        "{}\\u{:04x}{}",
        &text[..at],
        u32::from(first),
        &text[after..]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_escaped_echo_decodes_to_the_value() {
        let (tool, arguments) = echo("cfgK7abcdefgh", true);
        assert_eq!(tool, "web_search");
        assert!(!arguments.contains("cfgK7abcdefgh"));
        let decoded: serde_json::Value = serde_json::from_str(&arguments).unwrap();
        assert_eq!(decoded["query"], "login with cfgK7abcdefgh");
        assert!(echo("cfgK7abcdefgh", false).1.contains("cfgK7abcdefgh"));
    }

    #[test]
    fn ids_count_up_from_nine() {
        let mut ids = CallIds::default();
        assert_eq!([ids.next_id(), ids.next_id()], ["call_9", "call_10"]);
        assert_eq!(overlong_call_id().chars().count(), CALL_ID_CHARS_MAX + 1);
        for chars in [
            CALL_ID_CHARS_MAX - 1,
            CALL_ID_CHARS_MAX,
            CALL_ID_CHARS_MAX + 1,
        ] {
            let id = call_id_of("call_12", chars, 'é');
            assert_eq!(id.chars().count(), chars);
            assert!(id.starts_with("call_12-é"));
        }
    }
}

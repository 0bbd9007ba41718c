//! Authorization values (R25).
//!
//! `Bearer` or `Basic` in any letter case, not preceded by a letter or digit, then white
//! space, then a credential that runs to the next white space, quote (`"`, `'`, `` ` ``, and
//! the typographic ‘ ’ “ ”), comma, semicolon or closing bracket (`)`, `]`, `}`, `>`). The
//! scheme word and the credential become one `[REDACTED]`; `Authorization: ` stays.
//!
//! - **With a header context** (a header or JSON key whose name ends in `authorization`,
//!   any case, an optional closing quote or `]`, `:` or `=`, an optional opening quote:
//!   `Authorization: Bearer …`, `"proxy-authorization": "Basic …"`,
//!   `headers['Authorization'] = 'Bearer …'`), any credential is redacted, and the white
//!   space after the scheme may hold one line break (`\r\n` counts as one).
//! - **Without one**, the white space is any Unicode white space but a line break (so
//!   "other than basic\n(i.e. digest)" stays), and the credential is redacted only when it
//!   looks like one: for `Basic`, it decodes as base64 (padding optional) to bytes holding a
//!   `:` (HTTP Basic is `user:password`), or it has at least 20 characters; for `Bearer`, it
//!   has at least 8 characters and a digit, or ends in `=` padding, or is JWT-shaped (three
//!   base64url segments joined by `.`), or has at least 20 characters. A word made only of
//!   letters joined by `-`, `/` or `.` is never a credential here ("a basic
//!   single-threaded loop", "basic mips/mipsel support"), up to [`PLAIN_WORD_LEN_MAX`]
//!   (1,024) bytes: a longer credential looks like one whatever its characters. Full stops
//!   that end the credential are the sentence's and are left out of the judgement
//!   ("Explain the basic concepts." stays; the span, when there is one, still includes
//!   them).
//! - **White space wider than [`SCHEME_GAP_MAX`]** (256 bytes): the scheme word, its white
//!   space and whatever credential follows are redacted, with or without a header context,
//!   up to a line break the white space may not hold. The seed reads any white space there
//!   (R29 (b)), and a verdict that waited for the credential however far would have no
//!   bound (see [`super::stream`]).
//! - **Another rule's span** in the white space or the credential: the credential is judged
//!   as the output would show it (its text up to that span, then the placeholder without its
//!   closing `]`). Deciding on the output's view keeps redaction idempotent (R29 (d)): a
//!   second pass sees exactly that text and decides the same way. Two cases are judged
//!   ahead of the output, so that no decision waits on another one after it: the next
//!   scheme word inside the credential counts as a span whatever its own decision (if this
//!   candidate is redacted, that scheme word goes with it; if not, a second pass judges the
//!   same text the same way), and a span of no secret rule, which may still merge with a
//!   secret one after it, is judged with either placeholder (redacted if either view looks
//!   like a credential; when neither does, neither does in a second pass).
//!
//! The last case needs every other span, so the driver keeps these candidates and decides
//! them at the end.

use super::context::Context;
use super::growth::{Growth, Tail};
use super::span::Span;
use super::text::{char_len_at, class, decode_at, is, starts_with_ignore_case, white_space_len_at};
use super::work::Work;

/// The shortest `Bearer` credential with a digit that looks like one.
const CREDENTIAL_CHARS_MIN: usize = 8;
/// The length from which any credential that is not a plain word looks like one.
const CREDENTIAL_CHARS_LONG: usize = 20;
/// White space skipped backwards when looking for a header context.
const HEADER_GAP_MAX: usize = 64;
/// The most white space, in bytes, after a scheme word whose redaction waits for the
/// credential: a scheme word followed by more is redacted with its white space and
/// whatever credential follows (possibly none), so that no verdict waits on a byte
/// arbitrarily far ahead. The seed (R29 (b)) reads any white space there.
pub(crate) const SCHEME_GAP_MAX: usize = 256;
/// The longest credential, in bytes and with its trailing full stops, that can be a plain
/// word: a longer one looks like a credential whatever its characters.
pub(crate) const PLAIN_WORD_LEN_MAX: usize = 1024;
/// The farthest [`header_context`] reads back from a scheme word: an opening quote, the
/// gap, `:` or `=`, the gap, a closing quote and `]`, and `authorization`.
pub(crate) const HEADER_LOOK_BEHIND_MAX: usize = 1 + HEADER_GAP_MAX + 1 + HEADER_GAP_MAX + 2 + 13;
/// How far past a scheme word's start [`candidate`] reads when it finds no candidate
/// before any white space: the word (at most 6 bytes) and one character after it (at
/// most 4). A line break refused in the white space reaches past that line break.
pub(crate) const FAILED_REACH_MAX: usize = 6 + 4;

/// A scheme word with its credential, waiting for the decision.
#[derive(Clone, Copy, Debug)]
pub(crate) struct AuthCandidate {
    /// The scheme word's first byte.
    pub(crate) start: usize,
    /// Whether the scheme is `Basic` (else `Bearer`).
    pub(crate) basic: bool,
    /// The white space after the scheme word.
    pub(crate) white_space_start: usize,
    /// The credential's first byte.
    pub(crate) credential_start: usize,
    /// The byte after the credential.
    pub(crate) credential_end: usize,
    /// Whether a header context precedes the scheme.
    pub(crate) header: bool,
    /// Whether the candidate is redacted whatever else is found: a credential, not empty,
    /// after a header context or that looks like one; or white space wider than
    /// [`SCHEME_GAP_MAX`].
    pub(crate) certain: bool,
    /// Where the white space after the last line break in it starts, and how many more line
    /// breaks it may hold there (for the streaming redactor: white space that runs to the
    /// end of the text is read on from there).
    pub(crate) gap_resume: (usize, usize),
}

fn ends_credential(text: &[u8], index: usize) -> bool {
    let byte = text[index];
    if byte < 0x80 {
        return is(byte, class::CREDENTIAL_END);
    }
    white_space_len_at(text, index) > 0
        || matches!(
            decode_at(text, index).0,
            Some('\u{2018}' | '\u{2019}' | '\u{201C}' | '\u{201D}')
        )
}

/// Where the credential that starts at `start` ends.
pub(crate) fn credential_end(text: &[u8], start: usize) -> usize {
    let mut index = start;
    while index < text.len() && !ends_credential(text, index) {
        index += char_len_at(text, index).max(1);
    }
    index
}

/// The length of a line break at `index` (`\r\n` is one), or 0.
fn line_break_len_at(text: &[u8], index: usize) -> usize {
    match text.get(index..) {
        Some([b'\r', b'\n', ..]) => 2,
        Some([b'\n' | b'\r' | 0x0B | 0x0C, ..]) => 1,
        Some([0xC2, 0x85, ..]) => 2,
        Some([0xE2, 0x80, 0xA8 | 0xA9, ..]) => 3,
        _ => 0,
    }
}

/// Whether `credential` (without header context) looks like one under `Basic` or `Bearer`.
fn looks_like_credential(basic: bool, credential: &[u8]) -> bool {
    if credential.len() > PLAIN_WORD_LEN_MAX {
        return true;
    }
    let credential = without_trailing_stops(credential);
    if credential.is_empty() || is_plain_word(credential) {
        return false;
    }
    let characters = character_count(credential);
    if characters >= CREDENTIAL_CHARS_LONG {
        return true;
    }
    if basic {
        return decodes_to_user_and_password(credential);
    }
    (characters >= CREDENTIAL_CHARS_MIN && credential.iter().any(u8::is_ascii_digit))
        || has_padding(credential)
        || is_jwt_shaped(credential)
}

/// `credential` without the full stops that end it (the sentence's, not the credential's).
fn without_trailing_stops(credential: &[u8]) -> &[u8] {
    let mut end = credential.len();
    while end > 0 && credential[end - 1] == b'.' {
        end -= 1;
    }
    &credential[..end]
}

/// The characters of `text` (bytes that are not UTF-8 count one each).
fn character_count(text: &[u8]) -> usize {
    text.iter().filter(|&&byte| byte & 0xC0 != 0x80).count()
}

/// Letters (any script) joined by single `-`, `/` or `.`: "single-threaded", "mips/mipsel".
fn is_plain_word(text: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(text) else {
        return false;
    };
    text.split(['-', '/', '.'])
        .all(|part| !part.is_empty() && part.chars().all(char::is_alphabetic))
}

fn is_base64_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || matches!(byte, b'+' | b'/' | b'-' | b'_')
}

/// Base64 (or base64url) characters, then one or two `=`.
fn has_padding(text: &[u8]) -> bool {
    let body = text.strip_suffix(b"==").or_else(|| text.strip_suffix(b"="));
    body.is_some_and(|body| !body.is_empty() && body.iter().all(|&byte| is_base64_byte(byte)))
}

/// Three base64url segments joined by `.`, the first two not empty.
fn is_jwt_shaped(text: &[u8]) -> bool {
    let mut segments = text.split(|&byte| byte == b'.');
    let (Some(header), Some(payload), Some(signature), None) = (
        segments.next(),
        segments.next(),
        segments.next(),
        segments.next(),
    ) else {
        return false;
    };
    let base64url = |segment: &[u8]| {
        segment
            .iter()
            .all(|&byte| byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_'))
    };
    !header.is_empty()
        && !payload.is_empty()
        && base64url(header)
        && base64url(payload)
        && base64url(signature)
}

/// Whether `text` is base64 (padding optional) of bytes that hold a `:`.
fn decodes_to_user_and_password(text: &[u8]) -> bool {
    let body = text
        .strip_suffix(b"==")
        .or_else(|| text.strip_suffix(b"="))
        .unwrap_or(text);
    if body.len() % 4 == 1 {
        return false;
    }
    let mut bits: u32 = 0;
    let mut held = 0;
    for &byte in body {
        let value = match byte {
            b'A'..=b'Z' => byte - b'A',
            b'a'..=b'z' => byte - b'a' + 26,
            b'0'..=b'9' => byte - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return false,
        };
        bits = (bits << 6) | u32::from(value);
        held += 6;
        if held >= 8 {
            held -= 8;
            if (bits >> held) & 0xFF == u32::from(b':') {
                return true;
            }
        }
    }
    false
}

/// A scheme word (`word`, lower case) at `start`, its white space and its credential; or,
/// when there is none, one past the last byte that decided so (for the streaming
/// redactor: at most [`FAILED_REACH_MAX`] past `start`, or past a refused line break).
pub(crate) fn candidate(
    context: &Context<'_>,
    work: &mut Work,
    start: usize,
    word: &[u8],
) -> Result<AuthCandidate, usize> {
    let text = context.text;
    let failed = start + FAILED_REACH_MAX;
    if !starts_with_ignore_case(text, start, word) || !context.boundary_before(start) {
        return Err(failed);
    }
    let white_space_start = start + word.len();
    let header = header_context(text, start);
    // A header context allows one line break in the white space; prose allows none.
    let gap = skip_gap(text, white_space_start, usize::from(header));
    let index = gap.end;
    let wide = index - white_space_start > SCHEME_GAP_MAX;
    if let Some(line_break_end) = gap.refused.filter(|_| !wide) {
        work.verified_bytes += (line_break_end - white_space_start) as u64;
        return Err(failed.max(line_break_end));
    }
    if index == white_space_start {
        return Err(failed);
    }
    let credential_end = credential_end(text, index);
    let basic = word == b"basic";
    let certain = wide
        || (credential_end > index
            && (header || looks_like_credential(basic, &text[index..credential_end])));
    // The credential is read twice: to find its end, and to judge it.
    work.verified_bytes += (2 * (credential_end - index) + (index - white_space_start)) as u64;
    // An empty credential (the scheme is followed by a quote) is kept as a candidate too:
    // if another span starts right there, the output would show a credential.
    Ok(AuthCandidate {
        start,
        basic,
        white_space_start,
        credential_start: index,
        credential_end,
        header,
        certain,
        gap_resume: gap.resume,
    })
}

/// How a certain candidate whose credential starts at `credential_start` and ends at
/// `credential_end`, the end of the text, grows: in its credential, or in its white space
/// when the credential has not started (`gap_resume` as in [`AuthCandidate::gap_resume`]).
pub(crate) fn growth(
    text: &[u8],
    credential_start: usize,
    credential_end: usize,
    gap_resume: (usize, usize),
) -> Growth {
    if credential_start == text.len() {
        let (run_start, line_breaks) = gap_resume;
        Growth::new(Tail::Gap(line_breaks > 0), run_start, credential_end)
    } else {
        Growth::new(Tail::Credential, credential_start, credential_end)
    }
}

/// Where the white space after a scheme word ends.
pub(crate) struct Gap {
    /// The credential's start, or a line break the white space may not hold.
    pub(crate) end: usize,
    /// When it ends at such a line break: the position after it.
    pub(crate) refused: Option<usize>,
    /// As in [`AuthCandidate::gap_resume`].
    pub(crate) resume: (usize, usize),
}

/// Reads white space after a scheme word from `from`, where it may hold `line_breaks`
/// more line breaks.
pub(crate) fn skip_gap(text: &[u8], from: usize, line_breaks: usize) -> Gap {
    let mut line_breaks_left = line_breaks;
    let mut resume = (from, line_breaks);
    let mut index = from;
    loop {
        let line_break = line_break_len_at(text, index);
        let length = if line_break > 0 {
            if line_breaks_left == 0 {
                return Gap {
                    end: index,
                    refused: Some(index + line_break),
                    resume,
                };
            }
            line_breaks_left -= 1;
            resume = (index + line_break, line_breaks_left);
            line_break
        } else {
            white_space_len_at(text, index)
        };
        if length == 0 {
            return Gap {
                end: index,
                refused: None,
                resume,
            };
        }
        index += length;
    }
}

/// Whether a certain candidate found on `text`, which may go on past its end, stays
/// certain however its credential continues (for the streaming redactor; `text` ends on a
/// whole character). Derived from [`looks_like_credential`]: as the credential grows, the
/// text it is judged on (without trailing full stops) only grows, keeping every character
/// it had. So
/// - a header context, read backwards only, stays;
/// - a character count only grows, and a digit stays;
/// - a credential that is not a plain word stays one unless its only flaw is a single `-`
///   or `/` at its end, which a letter after it would mend ("single-" before "threaded");
///   a digit, any other character that is no letter, or a separator at its start or next to
///   another separator stays a flaw;
/// - `=` padding, the JWT shape and base64 of `user:password` do not stay: a character
///   after them can break them.
///
/// So a candidate stays certain with a header context, or with a credential that stays
/// unlike a plain word and has at least 20 characters, or (`Bearer`) at least 8 and a digit.
pub(crate) fn stays_certain(text: &[u8], candidate: &AuthCandidate) -> bool {
    debug_assert!(
        candidate.certain,
        "only a certain candidate can stay certain"
    );
    let raw = &text[candidate.credential_start..candidate.credential_end];
    let wide = candidate.credential_start - candidate.white_space_start > SCHEME_GAP_MAX;
    if candidate.header || wide || raw.len() > PLAIN_WORD_LEN_MAX {
        return true;
    }
    let credential = without_trailing_stops(raw);
    if !stays_unlike_plain_word(credential) {
        return false;
    }
    let characters = character_count(credential);
    characters >= CREDENTIAL_CHARS_LONG
        || (!candidate.basic
            && characters >= CREDENTIAL_CHARS_MIN
            && credential.iter().any(u8::is_ascii_digit))
}

/// Whether no continuation of `text` (ending on a whole character) makes it a plain word.
fn stays_unlike_plain_word(text: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(text) else {
        // Bytes that are not UTF-8 stay so: a window never ends inside a character.
        return true;
    };
    if text
        .chars()
        .any(|character| !character.is_alphabetic() && !matches!(character, '-' | '/' | '.'))
    {
        return true;
    }
    // Only separators and letters: an empty part before the last stays empty.
    let mut parts = text.split(['-', '/', '.']).peekable();
    while let Some(part) = parts.next() {
        if part.is_empty() && parts.peek().is_some() {
            return true;
        }
    }
    false
}

/// Whether a header or key named `…authorization` sets the value that starts at `start`.
fn header_context(text: &[u8], start: usize) -> bool {
    let mut index = start;
    if index > 0 && matches!(text[index - 1], b'"' | b'\'') {
        index -= 1;
    }
    index = skip_gap_back(text, index);
    if index == 0 || !matches!(text[index - 1], b':' | b'=') {
        return false;
    }
    index = skip_gap_back(text, index - 1);
    if index > 0 && text[index - 1] == b']' {
        index -= 1;
    }
    if index > 0 && matches!(text[index - 1], b'"' | b'\'') {
        index -= 1;
    }
    index >= 13 && text[index - 13..index].eq_ignore_ascii_case(b"authorization")
}

fn skip_gap_back(text: &[u8], mut index: usize) -> usize {
    let lowest = index.saturating_sub(HEADER_GAP_MAX);
    while index > lowest && matches!(text[index - 1], b' ' | b'\t' | b'\r' | b'\n') {
        index -= 1;
    }
    index
}

/// Whether an uncertain candidate is redacted, given the first span (other rules, and the
/// next candidate, whatever its own decision) that ends after its white space starts and
/// starts no later than its credential ends.
pub(crate) fn accepts(text: &[u8], candidate: &AuthCandidate, first: Option<Span>) -> bool {
    if candidate.certain {
        return true;
    }
    let Some(span) = first else {
        return false;
    };
    if span.start < candidate.white_space_start {
        // The span eats into the scheme word: the output shows no scheme, so nothing here
        // can be found again.
        return false;
    }
    if candidate.header {
        return true;
    }
    // The credential as the output shows it: its text up to the span, then the
    // placeholder, which reads as a credential up to its closing bracket. A span of no
    // secret rule may still merge with a secret one after it (a credential whose scheme
    // word it covers), so either placeholder counts: no decision waits on that.
    let prefix = &text[candidate.credential_start..span.start.max(candidate.credential_start)];
    let looks_with = |placeholder: &[u8]| {
        looks_like_credential(candidate.basic, &[prefix, placeholder].concat())
    };
    looks_with(b"[REDACTED") || (!span.rules.has_secret() && looks_with(b"[LOCAL_PATH"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_without_header_context() {
        let bearer = |text: &str| looks_like_credential(false, text.as_bytes());
        let basic = |text: &str| looks_like_credential(true, text.as_bytes());
        // Plain words, however long, never.
        for word in [
            "concepts",
            "single-threaded",
            "mips/mipsel",
            "number.distributions",
            "extraordinarily-long-compound-words",
            "concepts.",
        ] {
            assert!(!bearer(word) && !basic(word), "{word}");
        }
        assert!(bearer("abc12345") && !bearer("abc1234"));
        assert!(bearer("dG9rZW4=") && bearer("eyJhbGc.eyJzdWI.sig_nat-ure"));
        assert!(bearer("x7_long_enough_for_any_rule"));
        // user:pass, with and without padding; 20 characters of anything but a plain word.
        assert!(basic("dXNlcjpwYXNzMQ==") && basic("dTpwMTI=") && basic("YWI6MQ"));
        // Base64 of `user:pass` made only of letters is a plain word: kept without a header.
        assert!(!basic("dXNlcjpwYXNz"));
        assert!(!basic("abc12345") && !basic("dG9rZW4="));
        assert!(basic("Zm9vYmFyYmF6cXV4MTIzNDU2"));
    }
}

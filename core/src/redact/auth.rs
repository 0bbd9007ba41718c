//! Authorization values (R25).
//!
//! `Bearer` or `Basic` in any letter case, not preceded by a letter or digit, then white
//! space (any Unicode white space), then a credential that runs to the next white space,
//! quote (`"`, `'`, `` ` ``, and the typographic ‘ ’ “ ”), comma, semicolon or closing
//! bracket (`)`, `]`, `}`, `>`). The scheme word and the credential become one
//! `[REDACTED]`; `Authorization: ` stays.
//!
//! The credential is redacted when
//! - a header context precedes the scheme: a header or JSON key whose name ends in
//!   `authorization` (any case), an optional closing quote or `]`, `:` or `=`, an optional
//!   opening quote (`Authorization: Bearer …`, `"proxy-authorization": "Basic …"`,
//!   `headers['Authorization'] = 'Bearer …'`); or
//! - it looks like a credential: at least 8 characters with a digit or one of `._~+/=-`,
//!   or at least 20 characters ("Explain the basic concepts" stays). Full stops that end
//!   the credential are the sentence's and count for neither ("Explain the basic
//!   concepts." stays too; the span, when there is one, still includes them); or
//! - another rule's span lies in the white space or the credential, and the credential as
//!   the output would show it (its text up to that span, then the placeholder without its
//!   closing `]`) looks like one. Deciding on the output's view keeps redaction idempotent
//!   (R29 (d)): a second pass sees exactly that text and decides the same way.
//!
//! The last condition needs every other span, so the driver keeps these candidates and
//! decides them at the end, right to left (a credential can hold a later scheme word).

use super::context::Context;
use super::span::Span;
use super::text::{char_len_at, class, decode_at, is, starts_with_ignore_case, white_space_len_at};
use super::work::Work;

/// The shortest credential that can look like one (with a digit or a marker).
const CREDENTIAL_CHARS_MIN: usize = 8;
/// The length from which any credential looks like one.
const CREDENTIAL_CHARS_LONG: usize = 20;
/// White space skipped backwards when looking for a header context.
const HEADER_GAP_MAX: usize = 64;
/// The farthest [`header_context`] reads back from a scheme word: an opening quote, the
/// gap, `:` or `=`, the gap, a closing quote and `]`, and `authorization`.
pub(crate) const HEADER_LOOK_BEHIND_MAX: usize = 1 + HEADER_GAP_MAX + 1 + HEADER_GAP_MAX + 2 + 13;
/// The farthest [`candidate`] reads past a scheme word's start when it finds no candidate:
/// the word (at most 6 bytes) and one character after it (at most 4).
pub(crate) const FAILED_REACH_MAX: usize = 6 + 4;

/// A scheme word with its credential, waiting for the decision.
#[derive(Clone, Copy, Debug)]
pub(crate) struct AuthCandidate {
    /// The scheme word's first byte.
    pub(crate) start: usize,
    /// The white space after the scheme word.
    pub(crate) white_space_start: usize,
    /// The credential's first byte.
    pub(crate) credential_start: usize,
    /// The byte after the credential.
    pub(crate) credential_end: usize,
    /// Whether a header context precedes the scheme.
    pub(crate) header: bool,
    /// Whether the credential is not empty and the candidate is redacted whatever else is
    /// found (header context, or a credential that looks like one).
    pub(crate) certain: bool,
}

/// The length and the "has a digit or marker" flag of a credential's text.
#[derive(Clone, Copy, Default)]
struct Shape {
    characters: usize,
    /// A digit or marker before the trailing full stops.
    marked: bool,
    /// Full stops at the end (sentence punctuation: "the basic concepts.").
    trailing_stops: usize,
}

impl Shape {
    /// Whether the whole credential looks like one. Full stops that end it are the
    /// sentence's, not the credential's, so "Explain the basic concepts." stays too.
    fn looks_like_credential(self) -> bool {
        let characters = self.characters - self.trailing_stops;
        (characters >= CREDENTIAL_CHARS_MIN && self.marked) || characters >= CREDENTIAL_CHARS_LONG
    }

    /// The shape of this text followed by more text (its full stops are inner ones).
    fn followed_by(self, characters: usize, marked: bool) -> Shape {
        Shape {
            characters: self.characters + characters,
            marked: self.marked || self.trailing_stops > 0 || marked,
            trailing_stops: 0,
        }
    }
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

/// The credential from `start`: where it ends and its shape.
fn credential(text: &[u8], start: usize, limit: usize) -> (usize, Shape) {
    let mut shape = Shape::default();
    let mut index = start;
    while index < limit {
        let byte = text[index];
        if byte < 0x80 {
            if is(byte, class::CREDENTIAL_END) {
                break;
            }
            if byte == b'.' {
                shape.trailing_stops += 1;
            } else {
                shape.marked |= shape.trailing_stops > 0 || is(byte, class::MARKER);
                shape.trailing_stops = 0;
            }
            index += 1;
        } else {
            if ends_credential(text, index) {
                break;
            }
            shape.marked |= shape.trailing_stops > 0;
            shape.trailing_stops = 0;
            index += char_len_at(text, index);
        }
        shape.characters += 1;
    }
    (index, shape)
}

/// A scheme word (`word`, lower case) at `start`, its white space and its credential.
pub(crate) fn candidate(
    context: &Context<'_>,
    work: &mut Work,
    start: usize,
    word: &[u8],
) -> Option<AuthCandidate> {
    let text = context.text;
    if !starts_with_ignore_case(text, start, word) || !context.boundary_before(start) {
        return None;
    }
    let white_space_start = start + word.len();
    let mut index = white_space_start;
    loop {
        let length = white_space_len_at(text, index);
        if length == 0 {
            break;
        }
        index += length;
    }
    if index == white_space_start {
        return None;
    }
    let (credential_end, shape) = credential(text, index, text.len());
    work.verified_bytes += (credential_end - white_space_start) as u64;
    // An empty credential (the scheme is followed by a quote) is kept as a candidate too:
    // if another span starts right there, the output would show a credential.
    let header = header_context(text, start);
    Some(AuthCandidate {
        start,
        white_space_start,
        credential_start: index,
        credential_end,
        header,
        certain: credential_end > index && (header || shape.looks_like_credential()),
    })
}

/// The end of the credential that starts at `start`, read as [`candidate`] reads it.
pub(crate) fn credential_end(text: &[u8], start: usize) -> usize {
    credential(text, start, text.len()).0
}

/// Whether a candidate found on text that may go on is redacted however its credential
/// continues (for the streaming redactor). A header context is read backwards only, and
/// "looks like a credential" only ever becomes true as a credential grows (more
/// characters, and a digit or marker once seen stays), so today every certain candidate
/// stays certain. A rule whose decision could turn back as the credential grows (a shape
/// that a later character breaks) must answer `false` here for such candidates.
pub(crate) fn stays_certain(candidate: &AuthCandidate) -> bool {
    candidate.certain
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

/// Whether an uncertain candidate is redacted, given the first span (other rules, and
/// candidates already accepted to its right) that ends after its white space starts and
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
    let prefix = if span.start <= candidate.credential_start {
        Shape::default()
    } else {
        credential(text, candidate.credential_start, span.start).1
    };
    if candidate.header {
        return true;
    }
    // The placeholder as a credential reads up to its closing bracket.
    let (characters, marked) = if span.rules.has_secret() {
        (9, false)
    } else {
        (11, true)
    };
    prefix
        .followed_by(characters, marked)
        .looks_like_credential()
}

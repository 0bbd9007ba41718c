//! The `redact` check: configured values and a text through the redactor, R29 asserted.
//!
//! # Input
//!
//! A selector byte, then the rest:
//!
//! - below `0xF0`: the configured values are list number `selector % lists` of
//!   [`VALUE_LISTS`] (none, the usual keys, overlapping values, values touching patterns,
//!   punctuation, invisible characters, non-ASCII, more than four values, a long value), and
//!   the rest is the text, any bytes. Building a redactor compiles its matchers, which costs
//!   far more than redacting a fuzz input, so most inputs pick a list built once;
//! - `0xF0` and above: the configured values come from the input: the bytes up to the
//!   first NUL byte, one value per line (empty lines skipped, at most [`VALUES_MAX`], read as
//!   UTF-8 with invalid bytes replaced); the text is what follows the NUL (empty without one).
//!
//! # Properties
//!
//! - R24: values the redactor refuses are refused with a message that never quotes them;
//!   the text is then redacted with no value configured.
//! - (e) the output is the input with each merged span replaced by its placeholder; spans
//!   are sorted, non-empty, inside the input and separated by at least one byte; text mode
//!   and bytes mode agree on UTF-8 input, and text-mode spans start and end on character
//!   boundaries.
//! - (a) every occurrence of a configured value, read as the redactor reads it (invisible
//!   format characters of R28 removed), is covered by one span: no character of it, and so
//!   no 8-character window of it, survives outside a placeholder. Fragments of a value that
//!   do not form a whole value are the exact-value guard's business (R22), not the
//!   redactor's.
//! - (c) the output is borrowed exactly when no span was found.
//! - (d) redacting the output again finds nothing and returns it borrowed.
//! - The values-only redactor (the guard's) finds nothing the full redactor leaves.
//! - (f) the work counter stays within a linear bound: [`WORK_PER_BYTE_MAX`] per input
//!   byte and value, plus a constant. Never a wall-clock assertion.
//! - Streaming writes exactly the whole text's output, with the same per-rule counts,
//!   through windows of [`STREAM_WINDOW_BYTES`]. The text is streamed after padding whose
//!   length comes from the text itself and is at most [`STREAM_PADDING_MAX`] (more than the
//!   step between two cuts), so a cut falls inside the text even when it is short, and a
//!   fuzzer moves it as it mutates; reads come in pieces whose sizes come from the text too.

use std::borrow::Cow;
use std::io::{self, Read};

use memchr::memmem;

use crate::CheckResult;
use ward_core::redact::{LOCAL_PATH, REDACTED, Redactor, Span, StreamOptions};

/// At most this many configured values are read from an input.
pub const VALUES_MAX: usize = 6;

/// The selector bytes from which the values come from the input.
pub const CUSTOM_VALUES_SELECTOR_MIN: u8 = 0xF0;

/// The fixed lists of configured values an input selects (all accepted by the redactor).
pub const VALUE_LISTS: &[&[&str]] = &[
    &[],
    &["provider-key-0123456789", "search-key-abcdefghij"],
    &["abcdefgh12", "gh12345678", "5678-tail"],
    &["zzzzzzzx"],
    &["\"abcdefgh", "/abcdefgh", "ab/cdefgh"],
    &["provider-key-01234\u{200B}56789"],
    &["tvly-0123456789abcdef", "sk-abcdefghijklmnop"],
    &["Bearer abcdefgh123"],
    &["C:\\Users\\alice", "/home/bobbybob"],
    &["aaaaaaaa"],
    &["résumé-clé-secrète", "市场市场市场市场"],
    &[
        "alpha-secret-1",
        "beta-secret-22",
        "gamma-secret-333",
        "delta-secret-4444",
        "epsilon-secret-5",
    ],
    &[
        "0123456789-0123456789-0123456789-0123456789-0123456789-0123456789-0123456789-0123456789-0123456789-0123456789-0123456789-0123456789-0123456789-0123456789-0123456789-0123456789-0123456789-0123456789-0123456789-0123456789-0123456789-0123456789-0123456789-0123456789-end",
    ],
];

/// The linear work bound of R29 (f): at most this many counted steps per input byte, plus
/// for each configured value [`WORK_PER_BYTE_PER_VALUE_MAX`] and its length in bytes per
/// input byte (a value can start a match at every position, and a candidate reads at most
/// the value's length: a constant of the redactor, not of the input), plus
/// [`WORK_CONSTANT_MAX`]. The redactor's own tests scale adversarial inputs by four; this
/// bound catches work that grows faster than the input for a given redactor.
pub const WORK_PER_BYTE_MAX: u64 = 24;
/// See [`WORK_PER_BYTE_MAX`].
pub const WORK_PER_BYTE_PER_VALUE_MAX: u64 = 4;
/// See [`WORK_PER_BYTE_MAX`].
pub const WORK_CONSTANT_MAX: u64 = 1_000;

/// The window of the streaming check: the smallest, for the most cuts.
pub const STREAM_WINDOW_BYTES: usize = ward_core::redact::WINDOW_BYTES_MIN;

/// The most padding put before (and after) the text in the streaming check. A window
/// settles nothing in its last few hundred bytes, so with the smallest window two cuts are
/// about 1.2 KiB apart and an input shorter than that would otherwise stream as one window.
pub const STREAM_PADDING_MAX: usize = 2048;

/// Runs one `redact` input (format in the module docs) and checks R24 and R29.
///
/// ```
/// use ward_checks::check_redact;
///
/// // Values from the input, then the text.
/// assert_eq!(check_redact(b"\xF0provider-key-0123456789\0use provider-key-0123456789 now"), Ok(()));
/// // No value (list 0), then the text.
/// assert_eq!(check_redact(b"\x00Authorization: Bearer abc$def;x"), Ok(()));
/// ```
pub fn check_redact(data: &[u8]) -> CheckResult {
    let (values, text) = split_input(data);
    let redactors = redactors(values)?;
    check_text(&redactors, text)
}

/// The redactors of one list of configured values: the full one (or, when the values are
/// refused, the full one without values) and the values-only one of the guard.
struct Redactors {
    values: Vec<String>,
    full: Redactor,
    guard: Option<Redactor>,
}

/// Redactors of the last few value lists. Building a redactor compiles its matchers, which
/// costs far more than redacting a fuzz input; mutations change the text far more often
/// than the values.
const REDACTORS_CACHED_MAX: usize = 128;

thread_local! {
    static CACHE: std::cell::RefCell<Vec<(Vec<String>, std::rc::Rc<Redactors>)>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

fn redactors(values: Vec<String>) -> Result<std::rc::Rc<Redactors>, String> {
    let cached = CACHE.with(|cache| {
        let mut cache = cache.borrow_mut();
        let position = cache.iter().position(|(key, _)| *key == values)?;
        let entry = cache.remove(position);
        let redactors = std::rc::Rc::clone(&entry.1);
        cache.insert(0, entry);
        Some(redactors)
    });
    if let Some(redactors) = cached {
        return Ok(redactors);
    }
    let redactors = std::rc::Rc::new(build_redactors(values.clone())?);
    CACHE.with(|cache| {
        let mut cache = cache.borrow_mut();
        cache.insert(0, (values, std::rc::Rc::clone(&redactors)));
        cache.truncate(REDACTORS_CACHED_MAX);
    });
    Ok(redactors)
}

/// R24: values the redactor refuses are refused with a message that quotes none of them.
fn build_redactors(values: Vec<String>) -> Result<Redactors, String> {
    let (redactor, values) = match Redactor::new(&values) {
        Ok(redactor) => (redactor, values),
        Err(error) => {
            let message = error.to_string();
            for value in &values {
                ensure!(
                    !quotes(&message, value),
                    "R24: the refusal {message:?} quotes a configured value"
                );
            }
            let redactor = Redactor::new(Vec::<String>::new())
                .map_err(|error| format!("a redactor without values is refused: {error}"))?;
            (redactor, Vec::new())
        }
    };
    let guard = if values.is_empty() {
        None
    } else {
        Some(Redactor::values_only(&values).map_err(|error| {
            format!("R24: the full redactor took values the guard refuses: {error}")
        })?)
    };
    Ok(Redactors {
        values,
        full: redactor,
        guard,
    })
}

/// What stands for a placeholder text in [`mask_placeholders`].
const MASK: char = '\u{0}';

/// `text` with each placeholder text replaced by [`MASK`].
fn mask_placeholders(text: &str) -> String {
    [REDACTED, LOCAL_PATH]
        .iter()
        .fold(text.to_owned(), |rest, placeholder| {
            rest.replace(placeholder, &MASK.to_string())
        })
}

/// Whether a refusal `message` quotes `value`. Refusals name the placeholders, so the
/// placeholder texts are masked on both sides: a value made of a placeholder's fragment
/// (`CAL_PATH] `) or of a whole placeholder and a few more characters (`[REDACTED] `) is not
/// quoted by a message that names the placeholder; a value needs 8 characters besides
/// placeholders to be told apart from the message's own words.
fn quotes(message: &str, value: &str) -> bool {
    let masked = mask_placeholders(value);
    masked.chars().filter(|&c| c != MASK).count() >= 8
        && !REDACTED.contains(value)
        && !LOCAL_PATH.contains(value)
        && mask_placeholders(message).contains(masked.as_str())
}

/// R29 for one text.
fn check_text(redactors: &Redactors, text: &[u8]) -> CheckResult {
    let (redactor, values) = (&redactors.full, &redactors.values);
    let report = redactor.redact_report(text);
    check_spans(text, &report.spans)?;
    let rebuilt = render(text, &report.spans);
    ensure!(
        *report.output == rebuilt[..],
        "R29 (e): the output is not the input with each span replaced by its placeholder"
    );
    ensure!(
        matches!(report.output, Cow::Borrowed(_)) == report.spans.is_empty(),
        "R29 (c): the output is borrowed {} but {} spans were found",
        matches!(report.output, Cow::Borrowed(_)),
        report.spans.len()
    );
    check_values_covered(text, values, &report.spans)?;
    if let Some(guard) = &redactors.guard {
        check_guard_is_covered(guard, text, &report.spans)?;
    }
    let per_byte = WORK_PER_BYTE_MAX
        + values
            .iter()
            .map(|value| WORK_PER_BYTE_PER_VALUE_MAX + value.len() as u64)
            .sum::<u64>();
    let bound = per_byte * text.len() as u64 + WORK_CONSTANT_MAX;
    ensure!(
        report.work.total() <= bound,
        "R29 (f): {} steps of work for {} bytes and {} values (bound {bound}): {:?}",
        report.work.total(),
        text.len(),
        values.len(),
        report.work
    );
    let again = redactor.redact_report(&report.output);
    ensure!(
        again.spans.is_empty() && matches!(again.output, Cow::Borrowed(_)),
        "R29 (d): redacting the output again replaces {} more spans, first {:?} of {:?}",
        again.spans.len(),
        again.spans.first().map(Span::range),
        String::from_utf8_lossy(&report.output)
    );
    check_stream(redactor, text)?;
    if let Ok(text) = std::str::from_utf8(text) {
        check_text_mode(redactor, text, &report.output, &report.spans)?;
    }
    Ok(())
}

/// Streaming writes what whole-text redaction writes, and counts the same, on the text
/// padded so that a cut falls inside it (module docs).
fn check_stream(redactor: &Redactor, text: &[u8]) -> CheckResult {
    let pad = text.iter().fold(text.len(), |sum, &byte| {
        sum.wrapping_mul(31) ^ usize::from(byte)
    }) % STREAM_PADDING_MAX;
    let text = &[&vec![b' '; pad][..], text, &[b' '; STREAM_PADDING_MAX]].concat();
    let whole = redactor.redact_report(text);
    let options = StreamOptions {
        window_bytes: STREAM_WINDOW_BYTES,
        count_rules: true,
    };
    let mut output = Vec::new();
    let pieces = Pieces {
        text,
        read: 0,
        turn: 0,
    };
    let report = redactor
        .redact_stream_with(pieces, &mut output, &options)
        .map_err(|error| format!("streaming: an in-memory stream failed: {error}"))?;
    ensure!(
        output == *whole.output,
        "streaming: the output differs from the whole text's from byte {}",
        output
            .iter()
            .zip(whole.output.iter())
            .position(|(streamed, whole)| streamed != whole)
            .unwrap_or(output.len().min(whole.output.len()))
    );
    ensure!(
        report.counts == whole.counts,
        "streaming: counts {:?} where the whole text counts {:?}",
        report.counts,
        whole.counts
    );
    Ok(())
}

/// A reader of `text` in pieces of 1 to 61 bytes, sizes taken from the text's own bytes.
struct Pieces<'a> {
    text: &'a [u8],
    read: usize,
    turn: usize,
}

impl Read for Pieces<'_> {
    fn read(&mut self, buffer: &mut [u8]) -> io::Result<usize> {
        let rest = &self.text[self.read..];
        let size = self
            .text
            .get(self.turn % self.text.len().max(1))
            .map_or(1, |&byte| 1 + usize::from(byte) % 61)
            .min(rest.len())
            .min(buffer.len());
        self.turn += 1;
        buffer[..size].copy_from_slice(&rest[..size]);
        self.read += size;
        Ok(size)
    }
}

/// The configured values and the text of an input.
fn split_input(data: &[u8]) -> (Vec<String>, &[u8]) {
    let Some((&selector, rest)) = data.split_first() else {
        return (Vec::new(), data);
    };
    if selector < CUSTOM_VALUES_SELECTOR_MIN {
        let list = VALUE_LISTS[usize::from(selector) % VALUE_LISTS.len()];
        return (list.iter().map(|value| (*value).to_owned()).collect(), rest);
    }
    let (values, text) = match memchr::memchr(0, rest) {
        Some(separator) => (&rest[..separator], &rest[separator + 1..]),
        None => (rest, &rest[rest.len()..]),
    };
    let values = values
        .split(|&byte| byte == b'\n')
        .filter(|line| !line.is_empty())
        .take(VALUES_MAX)
        .map(|line| String::from_utf8_lossy(line).into_owned())
        .collect();
    (values, text)
}

/// Spans are sorted, non-empty, inside the input, separated by at least one byte, and
/// formed by at least one rule.
fn check_spans(text: &[u8], spans: &[Span]) -> CheckResult {
    let mut previous_end = None;
    for span in spans {
        ensure!(
            span.start < span.end && span.end <= text.len(),
            "R29: span {:?} is empty or outside the {}-byte input",
            span.range(),
            text.len()
        );
        ensure!(
            previous_end.is_none_or(|end| end < span.start),
            "R29: span {:?} overlaps or touches the span before it (ending at {previous_end:?})",
            span.range()
        );
        ensure!(
            span.rules.iter().next().is_some(),
            "R29: span {:?} names no rule",
            span.range()
        );
        previous_end = Some(span.end);
    }
    Ok(())
}

/// The input with each span replaced by its placeholder, written independently of the
/// redactor's own rendering.
fn render(text: &[u8], spans: &[Span]) -> Vec<u8> {
    let mut output = Vec::with_capacity(text.len());
    let mut copied_until = 0;
    for span in spans {
        output.extend_from_slice(&text[copied_until..span.start]);
        output.extend_from_slice(span.placeholder().as_bytes());
        copied_until = span.end;
    }
    output.extend_from_slice(&text[copied_until..]);
    output
}

/// The length of the R28 invisible format character at `index`, or 0. The check carries its
/// own copy of the list the redactor documents (U+00AD, U+200B–U+200F, U+202A–U+202E,
/// U+2060–U+2064, U+2066–U+206F, U+FEFF).
fn invisible_len_at(text: &[u8], index: usize) -> usize {
    match text.get(index..).unwrap_or_default() {
        [0xC2, 0xAD, ..] => 2,
        [0xE2, 0x80, 0x8B..=0x8F | 0xAA..=0xAE, ..] => 3,
        [0xE2, 0x81, 0xA0..=0xA4 | 0xA6..=0xAF, ..] => 3,
        [0xEF, 0xBB, 0xBF, ..] => 3,
        _ => 0,
    }
}

/// `text` without invisible format characters, and for each byte kept its input position.
fn view(text: &[u8]) -> (Vec<u8>, Vec<usize>) {
    let mut kept = Vec::with_capacity(text.len());
    let mut positions = Vec::with_capacity(text.len());
    let mut index = 0;
    while index < text.len() {
        match invisible_len_at(text, index) {
            0 => {
                kept.push(text[index]);
                positions.push(index);
                index += 1;
            }
            length => index += length,
        }
    }
    (kept, positions)
}

/// R29 (a): every occurrence of every value (overlapping ones included) lies inside one span.
fn check_values_covered(text: &[u8], values: &[String], spans: &[Span]) -> CheckResult {
    if values.is_empty() {
        return Ok(());
    }
    let (view, positions) = view(text);
    for value in values {
        let (needle, _) = self::view(value.as_bytes());
        if needle.is_empty() {
            continue;
        }
        let finder = memmem::Finder::new(&needle);
        let mut from = 0;
        while let Some(found) = finder.find(&view[from..]) {
            let view_start = from + found;
            let start = positions[view_start];
            let end = positions[view_start + needle.len() - 1] + 1;
            ensure!(
                spans
                    .iter()
                    .any(|span| span.start <= start && end <= span.end),
                "R29 (a): configured value #{} occurs at bytes {start}..{end} outside any one span; spans {:?}",
                values.iter().position(|other| other == value).unwrap_or(0) + 1,
                spans.iter().map(Span::range).collect::<Vec<_>>()
            );
            from = view_start + 1;
        }
    }
    Ok(())
}

/// What the exact-value guard (the values-only redactor) replaces, the full redactor
/// replaces too.
fn check_guard_is_covered(guard: &Redactor, text: &[u8], spans: &[Span]) -> CheckResult {
    for span in guard.redact_report(text).spans {
        ensure!(
            spans
                .iter()
                .any(|full| full.start <= span.start && span.end <= full.end),
            "R24: the values-only redactor replaces {:?}, which the full redactor leaves",
            span.range()
        );
    }
    Ok(())
}

/// Text mode agrees with bytes mode, cuts only at character boundaries, and is idempotent.
fn check_text_mode(redactor: &Redactor, text: &str, output: &[u8], spans: &[Span]) -> CheckResult {
    let redacted = redactor.redact(text);
    ensure!(
        redacted.as_bytes() == output,
        "text mode and bytes mode disagree: {redacted:?} against {:?}",
        String::from_utf8_lossy(output)
    );
    ensure!(
        matches!(redacted, Cow::Borrowed(_)) == spans.is_empty(),
        "R29 (c): text mode borrowed {} with {} spans",
        matches!(redacted, Cow::Borrowed(_)),
        spans.len()
    );
    let text_spans = redactor.redact_spans(text);
    ensure!(
        text_spans == spans,
        "redact_spans {text_spans:?} differs from the report's {spans:?}"
    );
    for span in spans {
        ensure!(
            text.is_char_boundary(span.start) && text.is_char_boundary(span.end),
            "span {:?} cuts a character of UTF-8 text",
            span.range()
        );
    }
    ensure!(
        matches!(redactor.redact(&redacted), Cow::Borrowed(_)),
        "R29 (d): text mode changes its own output again"
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inputs_split_into_values_and_text() {
        let (values, text) =
            split_input(b"\xF0first-value-123\n\nsecond-value-456\0the text\0more");
        assert_eq!(values, ["first-value-123", "second-value-456"]);
        assert_eq!(text, b"the text\0more");
        let (values, text) = split_input(b"\x01the text");
        assert_eq!(values, VALUE_LISTS[1]);
        assert_eq!(text, b"the text");
        let (values, text) = split_input(b"\x00");
        assert!(values.is_empty() && text.is_empty());
    }

    #[test]
    fn every_value_list_is_accepted() {
        for list in VALUE_LISTS {
            assert!(Redactor::new(*list).is_ok(), "{list:?}");
        }
    }

    #[test]
    fn the_view_maps_back_to_input_positions() {
        let (view, positions) = view("a\u{200B}b".as_bytes());
        assert_eq!(view, b"ab");
        assert_eq!(positions, [0, 4]);
    }

    #[test]
    fn an_uncovered_occurrence_is_reported() {
        let spans = [Span::new(0, 4, ward_core::redact::Rule::SkKey)];
        let values = vec!["value-0123456789".to_owned()];
        assert!(check_values_covered(b"abcd value-0123456789", &values, &spans).is_err());
        assert!(check_values_covered(b"abcd value-0123456789", &[], &spans).is_ok());
    }

    #[test]
    fn a_quoted_value_is_told_from_a_named_placeholder() {
        let message = "secret #1 overlaps the placeholder text [LOCAL_PATH] (it begins …)";
        assert!(!quotes(message, "CAL_PATH] "));
        assert!(!quotes(message, "[LOCAL_PATH] "));
        assert!(quotes(
            "refused: [REDACTED]hunter22x",
            "[REDACTED]hunter22x"
        ));
        assert!(quotes("refused: provider-key-0123", "provider-key-0123"));
        assert!(!quotes("refused: secret #1", "provider-key-0123"));
    }

    #[test]
    fn a_wrong_rendering_is_told_apart() {
        let spans = [Span::new(2, 4, ward_core::redact::Rule::HomePath)];
        assert_eq!(render(b"abcdef", &spans), b"ab[LOCAL_PATH]ef");
        assert!(check_spans(b"abc", &[Span::new(1, 9, ward_core::redact::Rule::SkKey)]).is_err());
    }
}

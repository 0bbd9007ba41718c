//! Invisible format characters (R28).
//!
//! A zero-width character inside `Bearer`, inside an `sk-` prefix or inside a configured
//! value must not stop a match. Instead of teaching every rule to skip them, the redactor
//! reads a *view* of the input with these characters removed, runs every rule on the view
//! and maps the spans back to the input, where each span then also covers the invisible
//! characters inside it and right after it (the seed's `/Users/[^/\s]+` takes a trailing
//! zero-width space into the name too). Other invisible characters stay, so text with
//! nothing to redact still comes back byte-identical (R29 (c)). A run of more than
//! [`INVISIBLE_RUN_MAX`] (16) of them in a row stays in the view too: it reads as a
//! character that is neither a letter, a digit nor white space, so it ends a key or a
//! JWT segment but not a user name or a credential (ward's bound, not the SPEC's: without
//! it the view of a stretch of invisible characters, and so the streaming window, would
//! wait on its end however far).
//!
//! The characters removed are the invisible format characters a person cannot see in a
//! prompt: the soft hyphen U+00AD, the zero-width space, non-joiner and joiner and the
//! left-to-right and right-to-left marks U+200B–U+200F, the bidirectional embeddings and
//! overrides U+202A–U+202E, the word joiner and invisible operators U+2060–U+2064, the
//! bidirectional isolates and deprecated format characters U+2066–U+206F, and the byte
//! order mark U+FEFF. Their lead bytes (C2, E2, EF) also start ordinary typographic
//! punctuation, so the scan looks for the lead bytes with `memchr3` and checks the rest.
//!
//! Most input has none of them: the view is then the input itself (borrowed) and costs one
//! `is_ascii` pass (ASCII input) or one `memchr3` pass.

use std::borrow::Cow;

use memchr::memchr3_iter;

use super::span::Span;
use super::work::Work;

/// The length of the invisible format character at `index`, or 0.
#[inline]
pub(crate) fn invisible_len_at(text: &[u8], index: usize) -> usize {
    match text.get(index..).unwrap_or_default() {
        [0xC2, 0xAD, ..] => 2,
        [0xE2, 0x80, 0x8B..=0x8F | 0xAA..=0xAE, ..] => 3,
        [0xE2, 0x81, 0xA0..=0xA4 | 0xA6..=0xAF, ..] => 3,
        [0xEF, 0xBB, 0xBF, ..] => 3,
        _ => 0,
    }
}

/// The most invisible format characters in a row that the view removes. A longer run is
/// no character slipped into a word but a stretch of its own: it stays in the view, where
/// it reads as any other character that is not a letter, digit or white space. The bound
/// is ward's decision, not the SPEC's: it lets the streaming redactor decide a run from a
/// bounded window (a run's fate is known once it ends or grows past the bound), and it
/// caps how much wider than the view the input can be (49 bytes per byte of view), so the
/// rules' look-ahead bounds, counted in the view, stay bounded in the input. Measured
/// (`ward redact`, 12-02): a PEM header followed by 32 MiB of `M` and 16 zero-width spaces
/// after each, the widest stretch the rules wait on, peaks at 42 MB; with 64 in a row the
/// same shape peaked at 67 MB.
pub(crate) const INVISIBLE_RUN_MAX: usize = 16;

/// One maximal run of invisible format characters.
struct Run {
    start: usize,
    end: usize,
    characters: usize,
}

/// The maximal runs of invisible characters in `text` from `from` on (a run reaching
/// `from` from before it is cut there), one at a time: a window grown to hold a stretch
/// padded with them never holds them all in a list.
fn runs<'t>(text: &'t [u8], from: usize, work: &'t mut Work) -> impl Iterator<Item = Run> + 't {
    let rest = text.get(from..).unwrap_or_default();
    let mut characters = memchr3_iter(0xC2, 0xE2, 0xEF, rest)
        .map(move |offset| from + offset)
        .filter_map(move |index| {
            work.lead_bytes += 1;
            let length = invisible_len_at(text, index);
            (length > 0).then_some((index, length))
        })
        .peekable();
    std::iter::from_fn(move || {
        let (start, length) = characters.next()?;
        let mut run = Run {
            start,
            end: start + length,
            characters: 1,
        };
        while let Some(&(index, length)) = characters.peek() {
            if index != run.end {
                break;
            }
            run.end += length;
            run.characters += 1;
            characters.next();
        }
        Some(run)
    })
}

/// The length of the invisible format character that ends `text[..end]`, if it starts at
/// or after `from`; else 0.
fn invisible_len_before(text: &[u8], from: usize, end: usize) -> usize {
    (2..=3)
        .find(|&length| end >= from + length && invisible_len_at(text, end - length) == length)
        .unwrap_or(0)
}

/// Whether `text` ends with an invisible format character.
fn ends_with_invisible(text: &[u8]) -> bool {
    invisible_len_before(text, 0, text.len()) > 0
}

/// How much of a streaming window's `text` (whose first `folded` bytes are a view already)
/// can be read while more input follows: all of it, but for a run of invisible characters
/// at its end that may still grow past [`INVISIBLE_RUN_MAX`] (whether the view removes it
/// is not known yet), which is left for the next window.
pub(crate) fn decided_len(text: &[u8], folded: usize) -> usize {
    let mut start = text.len();
    let mut characters = 0;
    while characters <= INVISIBLE_RUN_MAX {
        let length = invisible_len_before(text, folded, start);
        if length == 0 {
            break;
        }
        start -= length;
        characters += 1;
    }
    let kept = characters > INVISIBLE_RUN_MAX
        || (characters > 0 && start == folded && ends_with_invisible(&text[..folded]));
    if kept { text.len() } else { start }
}

/// Removes invisible format characters from a string, as the view does (used for
/// configured values).
pub(crate) fn strip(value: &str) -> String {
    let bytes = value.as_bytes();
    let mut kept = Vec::with_capacity(bytes.len());
    let mut copied_until = 0;
    for run in runs(bytes, 0, &mut Work::default()) {
        if run.characters <= INVISIBLE_RUN_MAX {
            kept.extend_from_slice(&bytes[copied_until..run.start]);
            copied_until = run.end;
        }
    }
    kept.extend_from_slice(&bytes[copied_until..]);
    // Whole characters were removed from valid UTF-8, so the rest is valid UTF-8.
    String::from_utf8(kept)
        .unwrap_or_else(|error| String::from_utf8_lossy(error.as_bytes()).into_owned())
}

/// The input as the rules read it: without invisible format characters.
pub(crate) struct View<'a> {
    text: Cow<'a, [u8]>,
    /// One entry per removed run of characters: the view position where it was removed,
    /// and the total number of bytes removed up to and including it. Sorted by both
    /// fields.
    removals: Vec<(usize, usize)>,
}

impl<'a> View<'a> {
    /// Builds the view of `input`.
    pub(crate) fn new(input: &'a [u8], work: &mut Work) -> View<'a> {
        View::after(input, 0, work)
    }

    /// Builds the view of `input` whose first `folded` bytes are a view already (the
    /// streaming redactor's look-behind context): only the rest is searched. No invisible
    /// character may straddle `folded`.
    pub(crate) fn after(input: &'a [u8], folded: usize, work: &mut Work) -> View<'a> {
        let mut removals: Vec<(usize, usize)> = Vec::new();
        let rest = input.get(folded..).unwrap_or_default();
        // Every invisible character is non-ASCII, and `is_ascii` runs at several times the
        // speed of `memchr3` (62 against 37 GiB/s on the bench machine).
        if rest.is_ascii() {
            work.searched_bytes += rest.len() as u64;
            return View {
                text: Cow::Borrowed(input),
                removals,
            };
        }
        let mut folded_text: Vec<u8> = Vec::new();
        let mut copied_until = 0;
        let mut removed = 0;
        // A run that goes on from the look-behind is one the view kept (it holds no other
        // invisible characters): it is too long to remove.
        let continued = ends_with_invisible(&input[..folded]);
        for run in runs(input, folded, work) {
            if run.characters > INVISIBLE_RUN_MAX || (continued && run.start == folded) {
                continue;
            }
            if removals.is_empty() {
                folded_text.reserve(input.len());
            }
            folded_text.extend_from_slice(&input[copied_until..run.start]);
            // One entry per run: a run of 16 characters costs 16 bytes, not 256, in a
            // window grown to hold a stretch padded with them.
            removed += run.end - run.start;
            removals.push((folded_text.len(), removed));
            copied_until = run.end;
        }
        if removals.is_empty() {
            return View {
                text: Cow::Borrowed(input),
                removals,
            };
        }
        folded_text.extend_from_slice(&input[copied_until..]);
        View {
            text: Cow::Owned(folded_text),
            removals,
        }
    }

    /// The text the rules read.
    pub(crate) fn text(&self) -> &[u8] {
        &self.text
    }

    /// Whether the view differs from the input.
    pub(crate) fn is_folded(&self) -> bool {
        !self.removals.is_empty()
    }

    /// Bytes removed before the view position `position` (invisible characters that sit at
    /// `position` count when `inclusive`).
    fn removed_before(&self, position: usize, inclusive: bool) -> usize {
        let count = if inclusive {
            self.removals.partition_point(|&(at, _)| at <= position)
        } else {
            self.removals.partition_point(|&(at, _)| at < position)
        };
        match count {
            0 => 0,
            count => self.removals[count - 1].1,
        }
    }

    /// The input position of the view position `position`: after the invisible characters
    /// removed right before it (so where a span starting there starts, and where a span
    /// ending there ends).
    pub(crate) fn to_input_position(&self, position: usize) -> usize {
        position + self.removed_before(position, true)
    }

    /// The view position of the input position `position`, which is not inside an
    /// invisible character.
    pub(crate) fn to_view_position(&self, position: usize) -> usize {
        let passed = self
            .removals
            .partition_point(|&(at, removed)| at + removed <= position);
        match passed {
            0 => position,
            passed => position - self.removals[passed - 1].1,
        }
    }

    /// Maps a non-empty span of the view to the input: it starts at its first visible
    /// character and ends before the next visible character after its last one, so it
    /// covers every invisible character inside it and right after it.
    pub(crate) fn to_input(&self, span: Span) -> Span {
        if self.removals.is_empty() {
            return span;
        }
        Span {
            start: span.start + self.removed_before(span.start, true),
            end: span.end + self.removed_before(span.end, true),
            rules: span.rules,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::rule::Rule;
    use super::*;

    #[test]
    fn view_removes_only_invisible_characters() {
        let input = "Be\u{200B}arer \u{2014} \u{201C}x\u{201D} \u{AD}\u{FEFF}\u{2060}sk\u{202E}";
        let mut work = Work::default();
        let view = View::new(input.as_bytes(), &mut work);
        assert!(view.is_folded());
        assert_eq!(
            view.text(),
            "Bearer \u{2014} \u{201C}x\u{201D} sk".as_bytes()
        );
        let clean = View::new("plain \u{2014} text".as_bytes(), &mut work);
        assert!(!clean.is_folded());
    }

    #[test]
    fn spans_map_back_over_inner_invisible_characters_only() {
        let input = "a\u{200B}bc\u{200B}d\u{200B}e";
        let mut work = Work::default();
        let view = View::new(input.as_bytes(), &mut work);
        assert_eq!(view.text(), b"abcde");
        // "bcd" in the view is "b c ZWSP d ZWSP" in the input: the ZWSP before b stays.
        let span = view.to_input(Span::new(1, 4, Rule::ExactValue));
        assert_eq!(&input[span.range()], "bc\u{200B}d\u{200B}");
        let whole = view.to_input(Span::new(0, 5, Rule::ExactValue));
        assert_eq!(whole.range(), 0..input.len());
    }

    #[test]
    fn a_run_longer_than_the_bound_stays() {
        let mut work = Work::default();
        let run = |count: usize| "\u{200B}".repeat(count);
        let fits = format!("sk{}-x", run(INVISIBLE_RUN_MAX));
        assert_eq!(View::new(fits.as_bytes(), &mut work).text(), b"sk-x");
        let long = format!("sk{}-x", run(INVISIBLE_RUN_MAX + 1));
        assert_eq!(
            View::new(long.as_bytes(), &mut work).text(),
            long.as_bytes()
        );
        // Mixed characters make one run; runs apart are counted apart.
        let mixed = format!(
            "a{}\u{AD}b{}c",
            run(INVISIBLE_RUN_MAX),
            run(INVISIBLE_RUN_MAX)
        );
        assert_eq!(
            View::new(mixed.as_bytes(), &mut work).text(),
            format!("a{}\u{AD}bc", run(INVISIBLE_RUN_MAX)).as_bytes()
        );
        assert_eq!(strip(&fits), "sk-x");
        assert_eq!(strip(&long), long);
        // After a look-behind that ends inside a kept run, the rest of that run stays too.
        let after = format!("{}{}x", run(2), run(3));
        let view = View::after(after.as_bytes(), 6, &mut work);
        assert_eq!(view.text(), after.as_bytes());
        let fresh = format!("ab{}x", run(3));
        assert_eq!(View::after(fresh.as_bytes(), 2, &mut work).text(), b"abx");
    }

    #[test]
    fn strip_keeps_visible_text() {
        assert_eq!(strip("ab\u{200D}cd\u{AD}"), "abcd");
        assert_eq!(strip("\u{2014}"), "\u{2014}");
    }
}

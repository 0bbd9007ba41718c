//! Configured secret values (R24).
//!
//! Every occurrence of every configured value is found on the input itself (the view of
//! R28, never text that another rule already changed), *overlapping* occurrences included:
//! two values that overlap in the text, or one inside another, are each covered entirely.
//! The full redactor finds up to four values along its anchor search (`anchors`); this
//! module searches them otherwise: for [`super::Redactor::values_only`], up to four values
//! of at most 256 bytes with one SIMD `memmem` each, restarted one byte after each match;
//! more or longer values with one overlapping Aho-Corasick search. Both merge occurrences on
//! the fly, so memory stays proportional to the merged spans even when every byte starts a
//! match.
//!
//! Construction refuses, with an error that names the value by its position and never
//! prints it:
//! - a value shorter than 8 characters (invisible format characters not counted, since
//!   they are removed before matching);
//! - a value that occurs inside a placeholder text (`[REDACTED]`, `[LOCAL_PATH]`);
//! - beyond R24, a value that contains a placeholder or overlaps one (begins with the end of
//!   a placeholder or ends with its beginning, like `]abcdefgh`). Such a value could be
//!   formed again by a placeholder and the text beside it, so redacting twice would differ
//!   from redacting once (R29 (d)).

use std::ops::Range;
use std::sync::Arc;

use aho_corasick::{AhoCorasick, AhoCorasickKind, MatchKind};
use memchr::memmem::Finder;

use super::invisible;
use super::span::{Span, merge};
use super::work::Work;
use super::{LOCAL_PATH, REDACTED, RedactError, Rule};

/// The shortest accepted secret value, in characters (R24).
///
/// ```
/// use ward_core::redact::{Redactor, SECRET_CHARS_MIN};
///
/// assert!(Redactor::new(["x".repeat(SECRET_CHARS_MIN)]).is_ok());
/// assert!(Redactor::new(["x".repeat(SECRET_CHARS_MIN - 1)]).is_err());
/// ```
pub const SECRET_CHARS_MIN: usize = 8;

/// At most this many values are searched one `memmem` each (faster for the usual one or
/// two keys); more use one Aho-Corasick automaton, a contiguous NFA: a redactor is built
/// once per run, and a DFA costs tens of times more to build than the NFA for a search that
/// its prefilter mostly skips anyway.
const FINDERS_MAX: usize = 4;
/// Values longer than this are searched with the automaton, whose overlapping search costs
/// one step per byte whatever the values (a `memmem` restarted after each match start
/// re-reads up to a value's length).
const FINDER_VALUE_LEN_MAX: usize = 256;

/// The configured values and their matcher. Cloning shares them: a run's prompt redactor
/// and its guard search the same compiled values.
#[derive(Clone, Debug)]
pub(crate) struct ExactValues {
    /// The values (invisible characters removed), sorted and without duplicates.
    values: Arc<[String]>,
    matcher: Option<Arc<Matcher>>,
}

#[derive(Clone, Debug)]
enum Matcher {
    /// One SIMD substring search per value.
    Finders(Vec<Finder<'static>>),
    /// One automaton for every value, searched with overlapping matches.
    Automaton(AhoCorasick),
}

impl ExactValues {
    /// Checks and compiles the values.
    pub(crate) fn new<I, S>(secrets: I) -> Result<ExactValues, RedactError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut values: Vec<String> = Vec::new();
        for (position, secret) in secrets.into_iter().enumerate() {
            let index = position + 1;
            let value = invisible::strip(secret.as_ref());
            check(index, &value)?;
            values.push(value);
        }
        values.sort_unstable();
        values.dedup();
        if values.is_empty() {
            return Ok(ExactValues {
                values: values.into(),
                matcher: None,
            });
        }
        if values.len() <= FINDERS_MAX
            && values
                .iter()
                .all(|value| value.len() <= FINDER_VALUE_LEN_MAX)
        {
            let finders = values
                .iter()
                .map(|value| Finder::new(value.as_bytes()).into_owned())
                .collect();
            return Ok(ExactValues {
                matcher: Some(Arc::new(Matcher::Finders(finders))),
                values: values.into(),
            });
        }
        let automaton = AhoCorasick::builder()
            .match_kind(MatchKind::Standard)
            .kind(Some(AhoCorasickKind::ContiguousNFA))
            .build(&values)
            .map_err(|error| RedactError::Matcher {
                message: error.to_string(),
            })?;
        Ok(ExactValues {
            matcher: Some(Arc::new(Matcher::Automaton(automaton))),
            values: values.into(),
        })
    }

    /// The values, invisible characters removed, sorted, without duplicates.
    pub(crate) fn values(&self) -> &[String] {
        &self.values
    }

    /// Whether any value is configured.
    pub(crate) fn is_empty(&self) -> bool {
        self.matcher.is_none()
    }

    /// The length of the longest value, in bytes (0 without values).
    pub(crate) fn longest(&self) -> usize {
        self.values.iter().map(String::len).max().unwrap_or(0)
    }

    /// How many occurrences of the values (overlapping ones included) start in `starts`:
    /// the streaming redactor counts each window's share this way.
    pub(crate) fn count_starting_in(&self, text: &[u8], starts: Range<usize>) -> u64 {
        let limit = text.len().min(starts.end.saturating_add(self.longest()));
        let Some(haystack) = text.get(starts.start..limit) else {
            return 0;
        };
        let before = starts.end.saturating_sub(starts.start);
        match self.matcher.as_deref() {
            None => 0,
            Some(Matcher::Finders(finders)) => {
                let mut count = 0;
                for finder in finders {
                    let mut from = 0;
                    while let Some(offset) = haystack.get(from..).and_then(|rest| finder.find(rest))
                    {
                        let start = from + offset;
                        if start >= before {
                            break;
                        }
                        count += 1;
                        from = start + 1;
                    }
                }
                count
            }
            Some(Matcher::Automaton(automaton)) => {
                let mut count = 0;
                each_overlapping(automaton, haystack, |start, _| {
                    count += u64::from(start < before);
                });
                count
            }
        }
    }

    /// Every occurrence of every value in `text`, merged: sorted, disjoint, non-touching.
    pub(crate) fn find(&self, text: &[u8], work: &mut Work) -> Vec<Span> {
        match self.matcher.as_deref() {
            None => Vec::new(),
            Some(Matcher::Finders(finders)) => {
                let mut spans = Vec::new();
                for finder in finders {
                    find_one(finder, text, work, &mut spans);
                }
                if finders.len() > 1 {
                    spans = merge(spans);
                }
                spans
            }
            Some(Matcher::Automaton(automaton)) => find_all(automaton, text, work),
        }
    }
}

/// Every occurrence of one value, overlapping ones included, merged on the fly (for one
/// value, starts and ends both increase).
fn find_one(finder: &Finder<'_>, text: &[u8], work: &mut Work, spans: &mut Vec<Span>) {
    let length = finder.needle().len();
    let first = spans.len();
    let mut from = 0;
    while let Some(offset) = text.get(from..).and_then(|rest| finder.find(rest)) {
        let start = from + offset;
        let end = start + length;
        work.searched_bytes += (offset + length) as u64;
        work.value_matches += 1;
        let own = spans.len() > first;
        match spans.last_mut() {
            Some(last) if own && start <= last.end => last.end = end,
            _ => spans.push(Span::new(start, end, Rule::ExactValue)),
        }
        from = start + 1;
    }
    work.searched_bytes += text.len().saturating_sub(from) as u64;
}

/// Every occurrence of every value with one overlapping automaton search. Occurrences
/// arrive by increasing end; a stack merges them, so memory stays proportional to the
/// merged spans even when every byte ends a match.
fn find_all(automaton: &AhoCorasick, text: &[u8], work: &mut Work) -> Vec<Span> {
    work.searched_bytes += text.len() as u64;
    let mut merged: Vec<Span> = Vec::new();
    let mut push = |start: usize, end: usize, work: &mut Work| {
        work.value_matches += 1;
        let mut start = start;
        // Matches arrive by increasing end, so only the top of the stack can touch.
        while let Some(top) = merged.last() {
            if start > top.end {
                break;
            }
            start = start.min(top.start);
            merged.pop();
        }
        merged.push(Span::new(start, end, Rule::ExactValue));
    };
    each_overlapping(automaton, text, |start, end| push(start, end, work));
    merged
}

/// Calls `found(start, end)` for every occurrence of every value in `text`, overlapping ones
/// included, by increasing end.
fn each_overlapping(automaton: &AhoCorasick, text: &[u8], mut found: impl FnMut(usize, usize)) {
    match automaton.try_find_overlapping_iter(text) {
        Ok(occurrences) => {
            for occurrence in occurrences {
                found(occurrence.start(), occurrence.end());
            }
        }
        // Overlapping search is supported by every automaton built with Standard semantics;
        // should that ever change, restarting a search one byte after each match start
        // finds every occurrence all the same.
        Err(_) => {
            let mut from = 0;
            let mut found_all = Vec::new();
            while let Some(occurrence) =
                automaton.find(aho_corasick::Input::new(text).range(from..))
            {
                found_all.push((occurrence.start(), occurrence.end()));
                from = occurrence.start() + 1;
            }
            found_all.sort_unstable_by_key(|&(_, end)| end);
            for (start, end) in found_all {
                found(start, end);
            }
        }
    }
}

/// Checks one value (R24 and its extension above).
fn check(index: usize, value: &str) -> Result<(), RedactError> {
    let characters = value.chars().count();
    if characters < SECRET_CHARS_MIN {
        return Err(RedactError::SecretTooShort {
            index,
            characters,
            minimum: SECRET_CHARS_MIN,
        });
    }
    for placeholder in [REDACTED, LOCAL_PATH] {
        if placeholder.contains(value) {
            return Err(RedactError::SecretInsidePlaceholder { index, placeholder });
        }
        if value.contains(placeholder) || overlaps(value, placeholder) {
            return Err(RedactError::SecretOverlapsPlaceholder { index, placeholder });
        }
    }
    Ok(())
}

/// Whether a proper prefix of one string is a proper suffix of the other.
fn overlaps(value: &str, placeholder: &str) -> bool {
    let (value, placeholder) = (value.as_bytes(), placeholder.as_bytes());
    (1..placeholder.len().min(value.len())).any(|length| {
        value.ends_with(&placeholder[..length])
            || value.starts_with(&placeholder[placeholder.len() - length..])
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ranges(values: &[&str], text: &str) -> Vec<(usize, usize)> {
        let exact = ExactValues::new(values).expect("valid values");
        exact
            .find(text.as_bytes(), &mut Work::default())
            .iter()
            .map(|span| (span.start, span.end))
            .collect()
    }

    #[test]
    fn overlapping_values_are_covered_entirely() {
        assert_eq!(
            ranges(&["abcdefgh12", "gh12345678"], "xx abcdefgh12345678 yy"),
            [(3, 19)]
        );
        assert_eq!(
            ranges(&["aaaaaaaa"], "aaaaaaaaaaaa b aaaaaaaa"),
            [(0, 12), (15, 23)]
        );
        assert_eq!(ranges(&["12345678", "23456789"], "0123456789"), [(1, 10)]);
        assert_eq!(
            ranges(&["1234567890ab", "34567890"], "01234567890ab"),
            [(1, 13)]
        );
    }

    #[test]
    fn many_values_use_the_automaton_with_the_same_results() {
        let values = [
            "abcdefgh12",
            "gh12345678",
            "zzzzzzzz",
            "yyyyyyyy",
            "xxxxxxxx",
        ];
        assert!(matches!(
            ExactValues::new(values).expect("valid").matcher.as_deref(),
            Some(Matcher::Automaton(_))
        ));
        assert!(matches!(
            ExactValues::new(&values[..2])
                .expect("valid")
                .matcher
                .as_deref(),
            Some(Matcher::Finders(_))
        ));
        assert_eq!(
            ranges(&values, "xx abcdefgh12345678 zzzzzzzzz yy"),
            [(3, 19), (20, 29)]
        );
        assert_eq!(
            ranges(&values[..2], "xx abcdefgh12345678 zzzzzzzzz yy"),
            [(3, 19)]
        );
    }

    #[test]
    fn refusals_name_the_value_by_position() {
        let error = ExactValues::new(["long-enough-1", "abc"]).expect_err("short value");
        assert_eq!(
            error,
            RedactError::SecretTooShort {
                index: 2,
                characters: 3,
                minimum: 8
            }
        );
        assert!(!error.to_string().contains("abc"));
        // Invisible characters do not count toward the length.
        assert!(ExactValues::new(["abc\u{200B}defg"]).is_err());
        assert!(matches!(
            ExactValues::new(["REDACTED"]),
            Err(RedactError::SecretInsidePlaceholder { index: 1, .. })
        ));
        assert!(matches!(
            ExactValues::new(["LOCAL_PATH]"]),
            Err(RedactError::SecretInsidePlaceholder { .. })
        ));
        assert!(matches!(
            ExactValues::new(["x[REDACTED]x"]),
            Err(RedactError::SecretOverlapsPlaceholder { .. })
        ));
        assert!(matches!(
            ExactValues::new(["]abcdefgh"]),
            Err(RedactError::SecretOverlapsPlaceholder { .. })
        ));
        assert!(matches!(
            ExactValues::new(["abcdefgh[LOC"]),
            Err(RedactError::SecretOverlapsPlaceholder { .. })
        ));
        assert!(ExactValues::new(["abc]defgh", "ab[cdefgh", "ACTEDxyz1"]).is_ok());
        assert!(
            ExactValues::new(Vec::<String>::new())
                .expect("empty")
                .is_empty()
        );
    }
}

//! Redaction (SPEC §7, R24–R29).
//!
//! Exact configured values only, found with an overlapping multi-pattern search so that
//! values overlapping one another are both covered; the pattern rules (R25–R28) and the seed
//! baseline arrive with the full redactor.

use std::borrow::Cow;
use std::ops::Range;

use aho_corasick::{AhoCorasick, MatchKind};

/// Placeholder for a redacted secret.
pub const REDACTED: &str = "[REDACTED]";
/// Placeholder for a redacted home path.
pub const LOCAL_PATH: &str = "[LOCAL_PATH]";
/// Shortest configured value accepted (R24).
pub const SECRET_CHARS_MIN: usize = 8;

/// A configured value that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RedactError {
    /// Shorter than [`SECRET_CHARS_MIN`] characters.
    #[error("secret value {index} is {length} characters long; values must have at least 8")]
    SecretTooShort {
        /// Position in the list, from 0.
        index: usize,
        /// Its length in characters.
        length: usize,
    },
    /// Occurs inside a placeholder text, so redacted output would contain it.
    #[error("secret value {index} occurs inside a placeholder text")]
    SecretInPlaceholder {
        /// Position in the list, from 0.
        index: usize,
    },
}

/// One merged span the redactor replaces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Span {
    /// Byte range in the input.
    pub range: Range<usize>,
}

/// Redacts configured values.
#[derive(Clone, Debug)]
pub struct Redactor {
    values: Option<AhoCorasick>,
}

impl Redactor {
    /// Every rule.
    pub fn new<I, S>(secrets: I) -> Result<Redactor, RedactError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        Redactor::values_only(secrets)
    }

    /// Only the exact-value rule (R24).
    pub fn values_only<I, S>(secrets: I) -> Result<Redactor, RedactError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut values = Vec::new();
        for (index, secret) in secrets.into_iter().enumerate() {
            let secret = secret.as_ref();
            let length = secret.chars().count();
            if length < SECRET_CHARS_MIN {
                return Err(RedactError::SecretTooShort { index, length });
            }
            if REDACTED.contains(secret) || LOCAL_PATH.contains(secret) {
                return Err(RedactError::SecretInPlaceholder { index });
            }
            values.push(secret.to_owned());
        }
        if values.is_empty() {
            return Ok(Redactor { values: None });
        }
        let automaton = AhoCorasick::builder()
            .match_kind(MatchKind::Standard)
            .build(&values)
            .map_err(|_| RedactError::SecretInPlaceholder { index: 0 })?;
        Ok(Redactor {
            values: Some(automaton),
        })
    }

    /// The merged spans.
    pub fn redact_spans(&self, text: &str) -> Vec<Span> {
        let Some(automaton) = &self.values else {
            return Vec::new();
        };
        let mut found: Vec<Range<usize>> = automaton
            .find_overlapping_iter(text)
            .map(|found| found.start()..found.end())
            .collect();
        found.sort_by_key(|range| range.start);
        let mut spans: Vec<Span> = Vec::new();
        for range in found {
            match spans.last_mut() {
                Some(last) if range.start <= last.range.end => {
                    last.range.end = last.range.end.max(range.end);
                }
                _ => spans.push(Span { range }),
            }
        }
        spans
    }

    /// Redacts `text`; borrowed when nothing matched.
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let spans = self.redact_spans(text);
        if spans.is_empty() {
            return Cow::Borrowed(text);
        }
        let mut output = String::with_capacity(text.len());
        let mut copied = 0;
        for span in spans {
            output.push_str(&text[copied..span.range.start]);
            output.push_str(REDACTED);
            copied = span.range.end;
        }
        output.push_str(&text[copied..]);
        Cow::Owned(output)
    }
}

//! Spans and merging (R29).
//!
//! Every rule reports candidate spans on the same text; this module sorts them and merges
//! the ones that overlap or touch, so that each merged span becomes exactly one placeholder
//! and no fragment of any candidate survives between two placeholders.

use std::ops::Range;

use super::rule::{Rule, RuleSet};

/// A merged span of the input that the redactor replaces, with the rules that formed it.
///
/// ```
/// use ward_core::redact::{Redactor, Rule};
///
/// let redactor = Redactor::new(["hunter2-hunter2"])?;
/// let spans = redactor.redact_spans("pw=hunter2-hunter2 in /home/alice/x");
/// assert_eq!(spans.len(), 2);
/// assert_eq!(spans[0].range(), 3..18);
/// assert!(spans[0].rules.contains(Rule::ExactValue));
/// assert_eq!(spans[1].placeholder(), "[LOCAL_PATH]");
/// # Ok::<(), ward_core::redact::RedactError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Span {
    /// The first byte of the span.
    pub start: usize,
    /// The byte after the span.
    pub end: usize,
    /// The rules whose candidates formed the span.
    pub rules: RuleSet,
}

impl Span {
    /// A span found by one rule.
    pub const fn new(start: usize, end: usize, rule: Rule) -> Span {
        Span {
            start,
            end,
            rules: RuleSet::single(rule),
        }
    }

    /// The span's byte range.
    pub const fn range(&self) -> Range<usize> {
        self.start..self.end
    }

    /// The span's length in bytes.
    pub const fn len(&self) -> usize {
        self.end - self.start
    }

    /// Whether the span is empty (a merged span never is).
    pub const fn is_empty(&self) -> bool {
        self.start >= self.end
    }

    /// The placeholder that replaces the span: `[REDACTED]` if a secret rule took part.
    pub const fn placeholder(&self) -> &'static str {
        self.rules.placeholder()
    }
}

/// Sorts `spans` and merges every overlapping or touching pair; empty spans are dropped.
/// The result is sorted, disjoint and separated by at least one byte.
pub(crate) fn merge(mut spans: Vec<Span>) -> Vec<Span> {
    spans.retain(|span| !span.is_empty());
    // The input is a few sorted runs (configured values, then each rule's spans in order);
    // the stable sort merges runs in about linear time. The merge result does not depend
    // on the order of equal starts (union of rules, maximum of ends).
    if !spans.is_sorted_by_key(|span| span.start) {
        spans.sort_by_key(|span| span.start);
    }
    // Merge in place: `kept` spans stay at the front.
    let mut kept = 0;
    for index in 0..spans.len() {
        let span = spans[index];
        if kept > 0 && span.start <= spans[kept - 1].end {
            let last = &mut spans[kept - 1];
            last.end = last.end.max(span.end);
            last.rules = last.rules.union(span.rules);
        } else {
            spans[kept] = span;
            kept += 1;
        }
    }
    spans.truncate(kept);
    let merged = spans;
    debug_assert!(merged.windows(2).all(|pair| pair[0].end < pair[1].start));
    merged
}

/// The first span of a sorted, disjoint list whose end lies after `position`.
pub(crate) fn first_ending_after(spans: &[Span], position: usize) -> Option<&Span> {
    let index = spans.partition_point(|span| span.end <= position);
    spans.get(index)
}

/// Whether a sorted, disjoint list of spans covers `position`.
pub(crate) fn covers(spans: &[Span], position: usize) -> bool {
    first_ending_after(spans, position).is_some_and(|span| span.start <= position)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlapping_and_touching_spans_merge_with_their_rules() {
        let merged = merge(vec![
            Span::new(10, 14, Rule::SkKey),
            Span::new(0, 4, Rule::HomePath),
            Span::new(4, 6, Rule::ExactValue),
            Span::new(12, 20, Rule::Jwt),
            Span::new(22, 22, Rule::Jwt),
            Span::new(30, 31, Rule::HomePath),
        ]);
        assert_eq!(merged.len(), 3);
        assert_eq!(merged[0].range(), 0..6);
        assert_eq!(merged[0].placeholder(), "[REDACTED]");
        assert_eq!(merged[1].range(), 10..20);
        assert!(merged[1].rules.contains(Rule::Jwt) && merged[1].rules.contains(Rule::SkKey));
        assert_eq!(merged[2].placeholder(), "[LOCAL_PATH]");
        assert!(covers(&merged, 19) && !covers(&merged, 20) && !covers(&merged, 7));
    }
}

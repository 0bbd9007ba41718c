//! The home-path candidates (R27) that wait for the decisions at the end, and what the
//! pass reads of a home candidate: where it starts, how far its verdict reads, how its span
//! grows past a window's end, and which nameless root another root follows.

use crate::redact::growth::{Growth, Tail};
use crate::redact::home::{self, HomeCandidate};
use crate::redact::span::{Span, first_ending_after};

/// A home candidate whose `//` root was refused for the `:` before it (R27).
#[derive(Clone, Copy)]
pub(super) struct AfterColon {
    pub(super) colon: usize,
    pub(super) candidate: HomeCandidate,
    pub(super) anchor: usize,
    /// How its span grows if it is taken, when its name runs to the end of a window.
    pub(super) growth: Option<Growth>,
}

/// A home root without a user name (R27), decided at the end. Ordered by its start, then
/// its name's start, then its anchor.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct NamelessRoot {
    /// The root's first byte.
    pub(super) start: usize,
    /// Where a user name would start: the root's end.
    pub(super) name_start: usize,
    /// Where the home anchor was found.
    pub(super) anchor: usize,
}

/// A home path in a URL's path (R27), taken only if a span covers part of that URL's
/// `scheme://`.
pub(super) struct UrlHome {
    /// The scheme's first byte.
    pub(super) scheme_start: usize,
    /// The end of the `://`.
    pub(super) separator_end: usize,
    pub(super) span: Span,
    /// Where the home anchor was found.
    pub(super) anchor: usize,
    /// How its span grows if it is taken, when its name runs to the end of a window.
    pub(super) growth: Option<Growth>,
}

impl UrlHome {
    /// Whether a span of `spans` (sorted, disjoint) overlaps the URL's `scheme://`.
    pub(super) fn scheme_overlapped_by(&self, spans: &[Span]) -> bool {
        first_ending_after(spans, self.scheme_start)
            .is_some_and(|span| span.start < self.separator_end)
    }
}

/// The growth of a home span taken by a decision at the end: whole-text redaction reads
/// the anchors inside it (it was no span while the text was read), and so does the window
/// that reads it on.
pub(super) fn taken_at_the_end(growth: Growth) -> Growth {
    match growth.tail {
        Tail::UserName(ends, _) => Growth {
            tail: Tail::UserName(ends, false),
            ..growth
        },
        _ => growth,
    }
}

/// For the nameless root at `index` of `nameless` (sorted), the name start of a later root
/// whose own root covers its name start, if there is one.
pub(super) fn later_root(nameless: &[NamelessRoot], index: usize) -> Option<usize> {
    let name_start = nameless[index].name_start;
    nameless[index + 1..]
        .iter()
        .take_while(|later| later.start <= name_start)
        .map(|later| later.name_start)
        .find(|&later_name_start| name_start < later_name_start)
}

/// How a home candidate's span grows when its name's reach is past the end of `text`.
pub(super) fn home_growth(text: &[u8], candidate: &HomeCandidate) -> Option<Growth> {
    match *candidate {
        HomeCandidate::Found { span, name } if home::name_reach(text, span.end) > text.len() => {
            Some(Growth::new(
                Tail::UserName(name.ends, true),
                name.start,
                span.end,
            ))
        }
        _ => None,
    }
}

/// Where a home candidate starts.
pub(super) fn candidate_start(candidate: &HomeCandidate) -> usize {
    match candidate {
        HomeCandidate::Found { span, .. } => span.start,
        HomeCandidate::Nameless { start, .. } => *start,
    }
}

/// The reach of a home candidate's verdict.
pub(super) fn home_reach(text: &[u8], candidate: &HomeCandidate) -> usize {
    match candidate {
        HomeCandidate::Found { span, .. } => home::name_reach(text, span.end),
        HomeCandidate::Nameless { name_start, .. } => name_start + 1,
    }
}

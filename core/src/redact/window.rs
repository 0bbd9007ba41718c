//! What the rules tell the streaming redactor (R29 over a window): how far a verdict read,
//! and how a span that is already certain may still grow.
//!
//! The whole-text redactor never needs this; [`super::stream`] does. Run on a window that
//! stops before the input does, a rule reads "end of text" where the input goes on, so
//! its verdict is final only if it never read that far. Every rule therefore reports a
//! [`Verdict`]: its span, its *reach* (one past the last byte it read, `text.len() + 1`
//! when it read where the text ends) and, for a span that exists however the text goes
//! on but may still grow, its [`Growth`]. The engine sorts each candidate into one of
//! three classes (settled, growing, unsettled) from these alone.
//!
//! The vocabulary of those reports (`growth`: [`Verdict`], [`Growth`], [`Tail`]) is a leaf
//! the rules use; how a growing span is resumed in a later window ([`Tail::resume`]) reads
//! the rules themselves, so it lives here.
//!
//! The bounds the streaming redactor relies on are the rules' own constants, gathered
//! here: how far back from a candidate any rule reads ([`LOOK_BEHIND_MAX`]) and how far
//! back from the position where a candidate is found its span may start
//! ([`span_back_max`]).

use super::anchors::HIT_REACH_MAX;
use super::growth::{Growth, Tail, Verdict};
use super::span::Span;
use super::text::{class, run_end};
use super::work::Work;
use super::{Rule, auth, context, home, tokens};

/// The farthest any rule reads back from the position where its candidate is found, in
/// bytes of the R28 view: the header context of R25, the roots of R27 and the URL a root
/// may lie in (its path, `://` and scheme, and the spans covering that `scheme://`), and
/// the left boundary of R25/R26. Configured values (R24) add their own length (see
/// [`super::stream`]).
pub(crate) const LOOK_BEHIND_MAX: usize = max(
    max(auth::HEADER_LOOK_BEHIND_MAX, home::LOOK_BEHIND_MAX),
    max(home::URL_LOOK_BEHIND_MAX, context::BOUNDARY_LOOK_BEHIND),
);

/// How far back from the position where its candidate is found a rule's span may start:
/// a home path's root (R27) and a PEM block's leading dashes (R26).
pub(crate) const fn span_back_max(rule: Rule) -> usize {
    match rule {
        Rule::HomePath => home::ROOT_BACK_MAX,
        Rule::PemPrivateKey => tokens::PEM_ANCHOR_BACK,
        _ => 0,
    }
}

/// The longest [`span_back_max`].
pub(crate) const SPAN_BACK_MAX: usize = max(home::ROOT_BACK_MAX, tokens::PEM_ANCHOR_BACK);

/// Candidates found less than this far before the end of a window may be missed there (an
/// anchor is recognised only once all its bytes are in), or start a span up to
/// [`SPAN_BACK_MAX`] earlier.
pub(crate) const TAIL_PATTERNS: usize = HIT_REACH_MAX + SPAN_BACK_MAX;

const fn max(a: usize, b: usize) -> usize {
    if a > b { a } else { b }
}

impl Tail {
    /// The rest of the span from `from`, a position inside its run: the verdict on the span
    /// `from..end` and, if it still reaches the end of `text`, how it grows.
    pub(crate) fn resume(self, text: &[u8], from: usize, rule: Rule) -> Verdict {
        let (end, reach, growth) = match self {
            Tail::Class(mask) => {
                let end = run_end(text, from, mask);
                (end, end + 1, Some(Growth::new(self, from, end)))
            }
            Tail::Credential => {
                let end = auth::credential_end(text, from);
                (end, end + 1, Some(Growth::new(self, from, end)))
            }
            Tail::Gap(line_break) => {
                let gap = auth::skip_gap(text, from, usize::from(line_break));
                let end = match gap.refused {
                    Some(_) => gap.end,
                    None => auth::credential_end(text, gap.end),
                };
                (
                    end,
                    end + 1,
                    Some(auth::growth(text, gap.end, end, gap.resume)),
                )
            }
            Tail::JwtPayload => {
                let payload_end = run_end(text, from, class::KEY);
                let (end, reach, growth) = tokens::jwt_signature(text, from, payload_end);
                (end, reach, Some(growth))
            }
            Tail::JwtSignature => {
                let end = run_end(text, from, class::KEY);
                (end, end + 1, Some(Growth::new(self, from, end)))
            }
            Tail::PemBody => {
                let (end, reach) = tokens::body_end_from(text, from);
                (end, reach, Some(Growth::new(self, from, end)))
            }
            Tail::UserName(ends, _) => {
                let (end, reach) = home::name_end_from(text, from, ends);
                (end, reach, Some(Growth::new(self, from, end)))
            }
        };
        let span = (end > from).then(|| Span::new(from, end, rule));
        Verdict {
            span,
            reach,
            growth: growth.filter(|_| reach > text.len()),
        }
    }
}

/// What the streaming redactor tells the engine about one window: a buffer whose first
/// `from` bytes are the view of input already passed (look-behind only) and whose rest is
/// new input.
#[derive(Clone, Debug)]
pub(crate) struct Frame {
    /// Candidates found before this position were decided by earlier windows.
    pub(crate) from: usize,
    /// Whether the buffer ends the input.
    pub(crate) last: bool,
    /// The merged span still open at `from` (it began in an earlier window; its start is in
    /// the context, 0 when it began before it, and its end at or after `from`), with its
    /// rules so far.
    pub(crate) open: Option<Span>,
    /// Per rule, where the last span of a candidate found before `from` ends.
    pub(crate) covered_until: [usize; Rule::COUNT],
    /// The spans of configured values and of candidates found before `from` that need
    /// nothing else to decide (every rule's but those decided at the end), as far as they
    /// reach into the look-behind (merged, starts before it clipped to 0; ends at or after
    /// `from` in buffer positions, like `open`'s), and the homes taken before `from` by
    /// the engine's left-to-right sweep of homes in URL paths and roots after a `:`. R27's
    /// URL check reads them: whether one covers part of a URL's `scheme://` in the
    /// look-behind.
    pub(crate) carried: Vec<Span>,
    /// The spans still growing at `from`, each to be read on from there.
    pub(crate) resumes: Vec<Resume>,
    /// How many bytes of look-behind the next window needs.
    pub(crate) context_len: usize,
    /// Whether to count the candidates per rule.
    pub(crate) count: bool,
}

/// A span still growing where a window starts: read on from there by [`Tail::resume`].
#[derive(Clone, Copy, Debug)]
pub(crate) struct Resume {
    /// The rule of the span.
    pub(crate) rule: Rule,
    /// How the span goes on.
    pub(crate) tail: Tail,
}

/// What one window settled, in buffer positions.
#[derive(Clone, Debug)]
pub(crate) struct Settled {
    /// Everything that starts before this position is final: every candidate found before
    /// it, and every span starting before it (though the span touching it may still grow).
    pub(crate) until: usize,
    /// The merged spans starting before `until`, the open span included.
    pub(crate) spans: Vec<Span>,
    /// Per rule, where the last span of a candidate found before `until` ends.
    pub(crate) covered_until: [usize; Rule::COUNT],
    /// The spans still growing at `until`.
    pub(crate) resumes: Vec<Resume>,
    /// The candidates found in `from..until`, per rule (when counting).
    pub(crate) counts: [u64; Rule::COUNT],
    /// The view of the last `context_len` bytes (at most) before `until`: the next window's
    /// look-behind.
    pub(crate) context: Vec<u8>,
    /// Where in `context` the span touching `until` starts, when it starts inside it.
    pub(crate) open_start_in_context: Option<usize>,
    /// The next frame's [`Frame::carried`], in the next buffer's positions.
    pub(crate) carried: Vec<Span>,
    /// Whether `until` moved past `from`; if not, nothing else here is meaningful and the
    /// window must grow.
    pub(crate) progress: bool,
    /// The steps this window took.
    pub(crate) work: Work,
}

impl Settled {
    /// A window that settled nothing new.
    pub(crate) fn no_progress(frame: &Frame, work: Work) -> Settled {
        Settled {
            until: frame.from,
            spans: Vec::new(),
            covered_until: frame.covered_until,
            resumes: frame.resumes.clone(),
            counts: [0; Rule::COUNT],
            context: Vec::new(),
            open_start_in_context: None,
            carried: frame.carried.clone(),
            progress: false,
            work,
        }
    }
}

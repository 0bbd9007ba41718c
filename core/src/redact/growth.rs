//! What a rule reports about one candidate, for the streaming redactor (R29 over a window):
//! its [`Verdict`] (the span, how far the verdict read) and, for a span that exists however
//! the text goes on but may still grow, its [`Growth`] and the kind of run it ends in
//! ([`Tail`]). The rules use this vocabulary; the window logic that reads it is `window`.

use super::home::NameEnd;
use super::span::Span;

/// One rule's verdict on one candidate.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Verdict {
    /// The span, if the candidate is one.
    pub(crate) span: Option<Span>,
    /// One past the last byte the verdict depended on; `text.len() + 1` when it depended on
    /// where the text ends.
    pub(crate) reach: usize,
    /// When the span exists whatever follows the text but may grow past its end.
    pub(crate) growth: Option<Growth>,
}

impl Verdict {
    /// No span, decided by the bytes before `reach`.
    pub(crate) const fn none(reach: usize) -> Verdict {
        Verdict {
            span: None,
            reach,
            growth: None,
        }
    }

    /// A span decided by the bytes before `reach`.
    pub(crate) const fn found(span: Span, reach: usize) -> Verdict {
        Verdict {
            span: Some(span),
            reach,
            growth: None,
        }
    }

    /// A span or none, decided by the bytes before `reach`.
    pub(crate) const fn of(span: Option<Span>, reach: usize) -> Verdict {
        Verdict {
            span,
            reach,
            growth: None,
        }
    }

    /// The same verdict, growing as `growth` says when it read the end of `text`.
    pub(crate) fn growing_at_end(mut self, text: &[u8], growth: Growth) -> Verdict {
        if self.span.is_some() && self.reach > text.len() {
            self.growth = Some(growth);
        }
        self
    }
}

/// How a span that already exists may still grow: it covers at least everything up to
/// `certain_end`, and from any position in `run_start..=certain_end` its end is found again
/// by [`Tail::resume`], whatever came before that position.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Growth {
    /// The kind of run the span ends in.
    pub(crate) tail: Tail,
    /// Where that run starts.
    pub(crate) run_start: usize,
    /// The span covers at least the bytes before this position.
    pub(crate) certain_end: usize,
}

/// The run a growing span ends in, each read exactly as its rule reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Tail {
    /// A run of bytes of one class of [`super::text::CLASSES`] (R26 keys).
    Class(u8),
    /// An authorization credential (R25), certain whatever follows.
    Credential,
    /// White space wider than `auth::SCHEME_GAP_MAX` after a scheme word (R25), which may
    /// hold one more line break when `true`, then the credential.
    Gap(bool),
    /// A JWT payload, then perhaps `.` and a signature (R26).
    JwtPayload,
    /// A JWT signature (R26).
    JwtSignature,
    /// The base64 body lines of a PEM block (R26).
    PemBody,
    /// A user name, and the words that may join it (R27); `true` when its span was found
    /// while reading (anchors inside it are skipped, as for every span found so), `false`
    /// when it was taken by a decision at the end (anchors inside it are read).
    UserName(NameEnd, bool),
}

impl Growth {
    /// Growth in a run of `tail` from `run_start`, certain up to `certain_end`.
    pub(crate) const fn new(tail: Tail, run_start: usize, certain_end: usize) -> Growth {
        Growth {
            tail,
            run_start,
            certain_end,
        }
    }
}

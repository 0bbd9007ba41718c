//! What the decisions at the end record (R25, R27): every span taken so far, merged, and
//! in window mode what each decision depended on, so that the window knows how far it is
//! final.

use super::windowed::{Decision, Deferred};
use crate::redact::Rule;
use crate::redact::growth::Growth;
use crate::redact::span::{Span, merge};

/// The candidates decided at the end, as [`PatternPass::finish`] goes: the spans so far,
/// and in window mode what each decision depended on.
///
/// [`PatternPass::finish`]: super::pass::PatternPass::finish
pub(super) struct Decisions {
    /// Every span taken so far, merged.
    pub(super) merged: Vec<Span>,
    /// Window mode: the candidates taken.
    pub(super) decided: Vec<Decision>,
    /// Window mode: every candidate decided, taken or not.
    pub(super) deferred: Vec<Deferred>,
    /// Window mode: the spans taken whose name runs past the window.
    pub(super) growing: Vec<TakenGrowth>,
    windowed: bool,
}

impl Decisions {
    /// No candidate decided yet: `merged` are the spans that need nothing else to decide
    /// (with, in a window, the span open at its start).
    pub(super) fn new(merged: Vec<Span>, windowed: bool) -> Decisions {
        Decisions {
            merged,
            decided: Vec::new(),
            deferred: Vec::new(),
            growing: Vec::new(),
            windowed,
        }
    }

    /// A candidate starting at `start` was decided from the spans before `depends_until`.
    pub(super) fn defer(&mut self, start: usize, depends_until: usize) {
        if self.windowed {
            self.deferred.push(Deferred {
                start,
                depends_until,
            });
        }
    }

    /// A candidate of `rule` found at `anchor` was taken with `span`.
    pub(super) fn decide(&mut self, span: Span, anchor: usize, rule: Rule, depends_until: usize) {
        self.push(span, anchor, rule, depends_until, false);
    }

    /// A home of the left-to-right sweep found at `anchor` was taken with `span`.
    pub(super) fn decide_swept(&mut self, span: Span, anchor: usize, depends_until: usize) {
        self.push(span, anchor, Rule::HomePath, depends_until, true);
    }

    fn push(&mut self, span: Span, anchor: usize, rule: Rule, depends_until: usize, swept: bool) {
        if self.windowed {
            self.decided.push(Decision {
                span,
                anchor,
                rule,
                depends_until,
                swept,
            });
        }
    }

    /// A home taken from `anchor` grows as `growth` says, if it does.
    pub(super) fn grows(&mut self, anchor: usize, growth: Option<Growth>) {
        if let Some(growth) = growth.filter(|_| self.windowed) {
            self.growing.push(TakenGrowth { anchor, growth });
        }
    }

    /// Counts the spans taken for `rule` and merges them in.
    pub(super) fn take_all(
        &mut self,
        taken: Vec<Span>,
        rule: Rule,
        counts: &mut [u64; Rule::COUNT],
    ) {
        if taken.is_empty() {
            return;
        }
        counts[rule.index()] += taken.len() as u64;
        let merged = std::mem::take(&mut self.merged);
        self.merged = merge(merged.into_iter().chain(taken).collect());
    }
}

/// A span taken at the end whose name runs past the window: how it grows from its anchor.
pub(super) struct TakenGrowth {
    /// Where the home anchor was found.
    pub(super) anchor: usize,
    pub(super) growth: Growth,
}

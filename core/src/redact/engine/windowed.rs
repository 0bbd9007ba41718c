//! A window pass's bookkeeping (R29 over a window; `crate::redact::window` states the
//! contract): how each candidate's verdict stands in the window, the spans still growing,
//! the candidates decided at the end, and how far the window is final.

use crate::redact::Rule;
use crate::redact::growth::{Growth, Tail, Verdict};
use crate::redact::invisible::View;
use crate::redact::span::Span;
use crate::redact::text::char_start;
use crate::redact::window::{Frame, Resume, span_back_max};

/// A window pass's bookkeeping (window mode only).
pub(super) struct Window {
    /// Candidates starting before this view position were decided by earlier windows.
    pub(super) from: usize,
    pub(super) last: bool,
    /// The view's length.
    end: usize,
    /// Everything that may still change starts at or after this view position.
    pub(super) settled: usize,
    /// The span open at `from`, in view positions.
    pub(super) open: Option<Span>,
    /// The spans of rules that need nothing else to decide, found before `from`, that
    /// reach into the look-behind, in view positions (see [`Frame::carried`]).
    pub(super) carried: Vec<Span>,
    pub(super) growing: Vec<Growing>,
    /// The settled spans of pattern rules (for `covered_until`).
    pub(super) ends: Vec<SpanEnd>,
    /// The counted pattern candidates.
    tallies: Vec<Tally>,
    /// Spans that start after their anchor (a URL's password, after its `://`).
    late: Vec<LateStart>,
    count: bool,
}

/// Where the settled span of a pattern rule ends.
#[derive(Clone, Copy)]
pub(super) struct SpanEnd {
    /// Where its candidate was found.
    pub(super) anchor: usize,
    pub(super) rule: Rule,
    /// The span's end.
    pub(super) end: usize,
}

/// A counted pattern candidate.
#[derive(Clone, Copy)]
struct Tally {
    /// Where it was found.
    anchor: usize,
    rule: Rule,
}

/// A span that starts after the anchor its candidate was found at.
#[derive(Clone, Copy)]
struct LateStart {
    /// Where its candidate was found.
    anchor: usize,
    /// The span's start.
    start: usize,
    rule: Rule,
}

/// A span that exists whatever follows but may grow.
pub(super) struct Growing {
    pub(super) origin: Origin,
    pub(super) rule: Rule,
    pub(super) growth: Growth,
}

/// Where a growing span comes from.
#[derive(Clone, Copy)]
pub(super) enum Origin {
    /// Its candidate was found at this anchor.
    Found(usize),
    /// It was resumed from an earlier window with this tail (valid from the window's
    /// `from`).
    Resumed(Tail),
}

/// How a candidate's verdict stands in a window.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Standing {
    /// Final.
    Settled,
    /// A span that exists, and may grow.
    Growing,
    /// May change once more text is read: nothing of it is kept.
    Unsettled,
}

/// A candidate decided once every other span was known (R25 uncertain credentials, R27
/// nameless roots and roots after a `:`).
#[derive(Clone, Copy)]
pub(super) struct Deferred {
    pub(super) start: usize,
    /// The last position whose spans the decision depends on.
    pub(super) depends_until: usize,
}

/// A deferred candidate taken.
#[derive(Clone, Copy)]
pub(super) struct Decision {
    pub(super) span: Span,
    pub(super) anchor: usize,
    pub(super) rule: Rule,
    pub(super) depends_until: usize,
    /// Decided by the left-to-right sweep, so read by the URL checks after it.
    pub(super) swept: bool,
}

impl Decision {
    pub(super) fn settled_by(&self, until: usize) -> bool {
        self.depends_until < until && self.span.start < until
    }
}

impl Window {
    /// The bookkeeping of a window over `view`, whose last `tail` bytes may hold the start
    /// of an anchor or a value not yet whole.
    pub(super) fn new(frame: &Frame, view: &View<'_>, tail: usize) -> Window {
        let end = view.text().len();
        let to_view = |span: Span| Span {
            start: span.start,
            end: view.to_view_position(span.end),
            rules: span.rules,
        };
        Window {
            from: frame.from,
            last: frame.last,
            end,
            settled: if frame.last {
                end
            } else {
                end.saturating_sub(tail)
            },
            open: frame.open.map(to_view),
            carried: frame.carried.iter().copied().map(to_view).collect(),
            growing: Vec::new(),
            ends: Vec::new(),
            tallies: Vec::new(),
            late: Vec::new(),
            count: frame.count,
        }
    }

    /// The candidates found at or after `from` and settled before `bound`, per rule
    /// (configured values apart).
    pub(super) fn counts_before(&self, bound: usize, decided: &[Decision]) -> [u64; Rule::COUNT] {
        let mut counts = [0u64; Rule::COUNT];
        for &Tally { anchor, rule } in &self.tallies {
            if anchor < bound {
                counts[rule.index()] += 1;
            }
        }
        for decision in decided {
            if decision.settled_by(bound) && decision.anchor < bound {
                counts[decision.rule.index()] += 1;
            }
        }
        counts
    }

    /// Per rule, where its last span ends: the farthest of `covered_from` and the ends of
    /// the settled spans of candidates found before `bound`.
    pub(super) fn covered_before(
        &self,
        bound: usize,
        covered_from: [usize; Rule::COUNT],
    ) -> [usize; Rule::COUNT] {
        let mut covered_until = covered_from;
        for span_end in &self.ends {
            if span_end.anchor < bound {
                let covered = &mut covered_until[span_end.rule.index()];
                *covered = (*covered).max(span_end.end);
            }
        }
        covered_until
    }

    /// The growing spans the next window resumes at the cut `until`.
    pub(super) fn resumes_from(&self, until: usize) -> Vec<Resume> {
        self.growing
            .iter()
            .filter_map(|growing| {
                let tail = match growing.origin {
                    Origin::Found(anchor) if anchor >= until => return None,
                    // A span resumed here that went on into a run of another kind (a JWT's
                    // payload into its signature) is resumed as before when the cut falls
                    // before that run.
                    Origin::Resumed(tail) if growing.growth.run_start > until => tail,
                    _ => growing.growth.tail,
                };
                Some(Resume {
                    rule: growing.rule,
                    tail,
                })
            })
            .collect()
    }

    pub(super) fn stand(&mut self, anchor: usize, rule: Rule, verdict: &Verdict) -> Standing {
        if self.last || verdict.reach <= self.end {
            return Standing::Settled;
        }
        match (verdict.span, verdict.growth) {
            (Some(_), Some(growth)) => {
                self.settled = self.settled.min(growth.certain_end);
                self.growing.push(Growing {
                    origin: Origin::Found(anchor),
                    rule,
                    growth,
                });
                Standing::Growing
            }
            _ => {
                self.unsettle(anchor.saturating_sub(span_back_max(rule)));
                Standing::Unsettled
            }
        }
    }

    /// A span of `rule` found at `anchor` that needs nothing else to decide, standing as
    /// `standing`: counted, and kept for the cut when it starts after its anchor or is
    /// settled.
    pub(super) fn found(&mut self, anchor: usize, rule: Rule, span: Span, standing: Standing) {
        if self.count {
            self.tallies.push(Tally { anchor, rule });
        }
        if span.start > anchor {
            self.late.push(LateStart {
                anchor,
                start: span.start,
                rule,
            });
        }
        if standing == Standing::Settled {
            self.ends.push(SpanEnd {
                anchor,
                rule,
                end: span.end,
            });
        }
    }

    /// [`Window::stand`] for a candidate decided at the end: a span that may grow is kept
    /// for that decision, and its growth counts only if it is taken.
    pub(super) fn stand_deferred(
        &mut self,
        anchor: usize,
        rule: Rule,
        verdict: &Verdict,
    ) -> Standing {
        if self.last || verdict.reach <= self.end {
            return Standing::Settled;
        }
        if verdict.span.is_some() && verdict.growth.is_some() {
            return Standing::Growing;
        }
        self.unsettle(anchor.saturating_sub(span_back_max(rule)));
        Standing::Unsettled
    }

    /// A span decided at the end and taken, found at `anchor`, that grows past the window.
    pub(super) fn grow_taken(&mut self, anchor: usize, rule: Rule, growth: Growth) {
        self.settled = self.settled.min(growth.certain_end);
        self.growing.push(Growing {
            origin: Origin::Found(anchor),
            rule,
            growth,
        });
    }

    fn unsettle(&mut self, position: usize) {
        self.settled = self.settled.min(position);
    }

    /// Lowers `settled` until it holds: it is the start of a character of `text` (so the
    /// next window reads whole characters: a run of invisible characters R28 keeps, or
    /// white space after a scheme word, is read on from there as the whole text reads it),
    /// every deferred candidate before it depends only on spans before it, every growing
    /// span found before it can be resumed from it, and every span of a candidate found
    /// before it starts before it.
    pub(super) fn settle(&mut self, text: &[u8], mut ordered: Vec<Deferred>) -> usize {
        if self.last {
            return self.end;
        }
        ordered.sort_unstable_by_key(|candidate| std::cmp::Reverse(candidate.start));
        loop {
            self.settled = char_start(text, self.settled);
            let before = self.settled;
            for candidate in &ordered {
                if candidate.start < self.settled && candidate.depends_until >= self.settled {
                    self.settled = candidate.start;
                }
            }
            for growing in &self.growing {
                if let Origin::Found(anchor) = growing.origin
                    && anchor < self.settled
                    && growing.growth.run_start > self.settled
                {
                    self.settled = anchor.saturating_sub(span_back_max(growing.rule));
                }
            }
            // A candidate found before the cut whose span starts after it is found again
            // by the next window, which writes that span.
            for &LateStart {
                anchor,
                start,
                rule,
            } in &self.late
            {
                if anchor < self.settled && start >= self.settled {
                    self.settled = anchor.saturating_sub(span_back_max(rule));
                }
            }
            if self.settled == before {
                return self.settled;
            }
        }
    }
}

//! The left-to-right sweep of R27: homes in a URL's path and `//` roots after a `:`, each
//! decided from the spans before it, those the sweep took included.

use super::decisions::Decisions;
use super::homes::{AfterColon, NamelessRoot, UrlHome, candidate_start};
use super::pass::PatternPass;
use crate::redact::home::HomeCandidate;
use crate::redact::span::{Span, covers};
use crate::redact::work::Work;

/// What the sweep took.
pub(super) struct SweptHomes {
    /// The homes taken, in order of their start.
    pub(super) homes: Vec<Span>,
    /// The nameless roots after a `:` taken, to be decided with the other nameless roots.
    pub(super) nameless: Vec<NamelessRoot>,
}

impl PatternPass<'_, '_, '_> {
    /// Homes in a URL's path and `//` roots after a `:` (R27), from left to right; each
    /// reads the spans before it, those it takes included.
    ///
    /// - A home in a URL's path stays unless a span covers part of that URL's `scheme://`:
    ///   the output would then show no URL around it, and a second pass would take it for
    ///   a local path (R29 (d)). That span may be another home decided here, whose name runs
    ///   into the scheme (`/Users/hs://\\s\users\is:///Users/x`: the home in the first URL
    ///   has the name `is:`). A window reads the spans in the look-behind from what earlier
    ///   windows carried.
    /// - A `//` root refused for the `:` before it stands if that `:` is replaced, by a span
    ///   or by the root before it (`/Users/://h\Users\://k\Users\x`). Several anchors may
    ///   share one root (`//h\Users\Users\x`), and so one `:`. A nameless root taken here
    ///   is returned apart, to be decided with the other nameless roots.
    ///
    /// Both read only spans that start before their own candidate (a scheme precedes its
    /// path, a `:` its root), so one sweep in order of the candidates' starts decides them
    /// as the whole text reads.
    pub(super) fn decide_homes_left_to_right(
        &self,
        decisions: &mut Decisions,
        immediate: &[Span],
        work: &mut Work,
    ) -> SweptHomes {
        let mut sweep = Sweep::default();
        for InOrder { candidate, .. } in self.left_to_right() {
            work.verified_bytes += 1;
            match candidate {
                LeftToRight::UrlHome(index) => {
                    self.sweep_url_home(&self.url_homes[index], &mut sweep, decisions, immediate);
                }
                LeftToRight::AfterColon(index) => {
                    sweep.after_colon(self.after_colon_homes[index], decisions);
                }
            }
        }
        SweptHomes {
            homes: sweep.taken.spans,
            nameless: sweep.nameless,
        }
    }

    /// The candidates of the sweep in order of their starts; candidates sharing a start
    /// keep their order.
    fn left_to_right(&self) -> Vec<InOrder> {
        let mut order: Vec<InOrder> = self
            .url_homes
            .iter()
            .enumerate()
            .map(|(index, home)| InOrder {
                start: home.span.start,
                candidate: LeftToRight::UrlHome(index),
            })
            .chain(
                self.after_colon_homes
                    .iter()
                    .enumerate()
                    .map(|(index, after_colon)| InOrder {
                        start: candidate_start(&after_colon.candidate),
                        candidate: LeftToRight::AfterColon(index),
                    }),
            )
            .collect();
        order.sort_by_key(|in_order| in_order.start);
        order
    }

    /// A home in a URL's path: taken if a span covers part of its `scheme://`.
    fn sweep_url_home(
        &self,
        home: &UrlHome,
        sweep: &mut Sweep,
        decisions: &mut Decisions,
        immediate: &[Span],
    ) {
        decisions.defer(home.span.start, home.separator_end);
        if self.scheme_covered(home, &sweep.taken, immediate, &decisions.merged) {
            sweep.taken.push(home.span);
            decisions.decide_swept(home.span, home.anchor, home.separator_end);
            decisions.grows(home.anchor, home.growth);
        }
    }

    /// Whether a span covers part of `home`'s `scheme://`: a home the sweep `taken` before
    /// it, or a span that needs nothing else to decide (`merged` in whole text; in a window,
    /// `immediate` and what earlier windows carried into the look-behind).
    fn scheme_covered(
        &self,
        home: &UrlHome,
        taken: &TakenSoFar,
        immediate: &[Span],
        merged: &[Span],
    ) -> bool {
        taken.overlaps(home.scheme_start, home.separator_end)
            || match self.window.as_deref() {
                Some(window) => {
                    home.scheme_overlapped_by(immediate)
                        || home.scheme_overlapped_by(&window.carried)
                }
                None => home.scheme_overlapped_by(merged),
            }
    }
}

/// A candidate of [`PatternPass::decide_homes_left_to_right`], by its index in its list.
#[derive(Clone, Copy)]
enum LeftToRight {
    UrlHome(usize),
    AfterColon(usize),
}

/// A candidate of the sweep with where it starts.
#[derive(Clone, Copy)]
struct InOrder {
    start: usize,
    candidate: LeftToRight,
}

/// The sweep's state as it goes from left to right.
#[derive(Default)]
struct Sweep {
    taken: TakenSoFar,
    nameless: Vec<NamelessRoot>,
    /// The `:` of the last root after a `:` taken.
    last_taken_colon: Option<usize>,
}

impl Sweep {
    /// A `//` root refused for the `:` before it: it stands if that `:` is replaced, by a
    /// span or by the root before it.
    fn after_colon(&mut self, after_colon: AfterColon, decisions: &mut Decisions) {
        let AfterColon {
            colon,
            candidate,
            anchor,
            growth,
        } = after_colon;
        decisions.defer(candidate_start(&candidate), colon);
        let replaced = self.last_taken_colon == Some(colon)
            || self.taken.overlaps(colon, colon + 1)
            || covers(&decisions.merged, colon);
        if !replaced {
            return;
        }
        self.last_taken_colon = Some(colon);
        match candidate {
            HomeCandidate::Found { span, .. } => {
                self.taken.push(span);
                decisions.decide_swept(span, anchor, colon);
                decisions.grows(anchor, growth);
            }
            HomeCandidate::Nameless { start, name_start } => {
                self.nameless.push(NamelessRoot {
                    start,
                    name_start,
                    anchor,
                });
            }
        }
    }
}

/// The spans taken so far by a sweep from left to right, in order of their start, with
/// the farthest end among each prefix, so that whether one of them overlaps a range is a
/// binary search.
#[derive(Default)]
struct TakenSoFar {
    spans: Vec<Span>,
    /// `ends_max[i]`: the farthest end among `spans[..=i]`.
    ends_max: Vec<usize>,
}

impl TakenSoFar {
    /// Adds a span starting at or after every span added before.
    fn push(&mut self, span: Span) {
        debug_assert!(
            self.spans
                .last()
                .is_none_or(|last| last.start <= span.start)
        );
        let end_max = self
            .ends_max
            .last()
            .map_or(span.end, |&end| end.max(span.end));
        self.spans.push(span);
        self.ends_max.push(end_max);
    }

    /// Whether a span taken so far overlaps `start..end`.
    fn overlaps(&self, start: usize, end: usize) -> bool {
        let before_end = self.spans.partition_point(|span| span.start < end);
        before_end > 0 && self.ends_max[before_end - 1] > start
    }
}

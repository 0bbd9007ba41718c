//! The candidates decided once every other span is known, in the order their rules read
//! one another: homes in a URL's path and `//` roots after a `:` (R27) in one sweep from
//! left to right, nameless roots (R27), then uncertain authorization values (R25), which
//! read everything.

use super::homes::{AfterColon, NamelessRoot, UrlHome, candidate_start, later_root};
use super::pass::PatternPass;
use super::windowed::{Decision, Deferred};
use crate::redact::Rule;
use crate::redact::auth;
use crate::redact::growth::Growth;
use crate::redact::home::HomeCandidate;
use crate::redact::span::{Span, covers, first_ending_after, merge};
use crate::redact::work::Work;

/// What [`PatternPass::finish`] hands on.
pub(super) struct Finished {
    /// The merged spans (whole-text mode).
    pub(super) spans: Vec<Span>,
    /// Window mode: the spans of rules that need nothing else to decide (configured
    /// values, and every other rule's spans but those decided at the end), merged; the
    /// window's spans are these, the open span and the decisions settled before the cut.
    pub(super) immediate: Vec<Span>,
    pub(super) decided: Vec<Decision>,
    pub(super) deferred: Vec<Deferred>,
}

impl PatternPass<'_, '_, '_> {
    /// Merges every span and decides the candidates that depend on other spans, in the
    /// order their rules read one another: homes in a URL's path and roots after a `:` in
    /// one sweep from left to right, nameless roots from right to left, and credentials
    /// (R25), which read everything, last.
    pub(super) fn finish(mut self, counts: &mut [u64; Rule::COUNT], work: &mut Work) -> Finished {
        for (count, found) in counts.iter_mut().zip(self.counts) {
            *count += found;
        }
        self.push_values_before(usize::MAX);
        let mut spans = std::mem::take(&mut self.spans);
        spans.append(&mut self.values);
        // Nameless roots followed by another root are taken whatever else is found, so
        // R27's URL check reads them with the spans that need nothing else to decide (one
        // may cover a URL's `://`).
        spans.extend(self.roots_followed_by_roots());
        // The spans that need nothing else to decide: what R27's URL check reads.
        let immediate = merge(spans);
        let (merged, immediate) = match self.window.as_deref() {
            Some(window) => {
                let mut with_open = immediate.clone();
                with_open.extend(window.open);
                (merge(with_open), immediate)
            }
            None => (immediate, Vec::new()),
        };
        let mut decisions = Decisions {
            merged,
            decided: Vec::new(),
            deferred: Vec::new(),
            growing: Vec::new(),
            windowed: self.window.is_some(),
        };
        let (homes, nameless_after_colon) =
            self.decide_homes_left_to_right(&mut decisions, &immediate, work);
        decisions.take_all(homes, Rule::HomePath, counts);
        if let Some(window) = self.window.as_deref_mut() {
            for TakenGrowth { anchor, growth } in std::mem::take(&mut decisions.growing) {
                window.grow_taken(anchor, Rule::HomePath, growth);
            }
        }
        let nameless = self.decide_nameless_homes(&mut decisions, nameless_after_colon, work);
        decisions.take_all(nameless, Rule::HomePath, counts);
        let accepted = self.decide_authorizations(&mut decisions, work);
        decisions.take_all(accepted, Rule::AuthValue, counts);
        Finished {
            spans: decisions.merged,
            immediate,
            decided: decisions.decided,
            deferred: decisions.deferred,
        }
    }

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
    fn decide_homes_left_to_right(
        &self,
        decisions: &mut Decisions,
        immediate: &[Span],
        work: &mut Work,
    ) -> (Vec<Span>, Vec<NamelessRoot>) {
        // In order of the candidates' starts; candidates sharing a start keep their order.
        let mut order: Vec<(usize, LeftToRight)> = self
            .url_homes
            .iter()
            .enumerate()
            .map(|(index, home)| (home.span.start, LeftToRight::UrlHome(index)))
            .chain(
                self.after_colon_homes
                    .iter()
                    .enumerate()
                    .map(|(index, after_colon)| {
                        (
                            candidate_start(&after_colon.candidate),
                            LeftToRight::AfterColon(index),
                        )
                    }),
            )
            .collect();
        order.sort_by_key(|&(start, _)| start);
        let mut taken = TakenSoFar::default();
        let mut nameless = Vec::new();
        let mut last_taken_colon = None;
        for (_, candidate) in order {
            work.verified_bytes += 1;
            match candidate {
                LeftToRight::UrlHome(index) => {
                    let home = &self.url_homes[index];
                    decisions.defer(home.span.start, home.separator_end);
                    if self.scheme_covered(home, &taken, immediate, &decisions.merged) {
                        taken.push(home.span);
                        decisions.decide_swept(home.span, home.anchor, home.separator_end);
                        decisions.grows(home.anchor, home.growth);
                    }
                }
                LeftToRight::AfterColon(index) => {
                    let AfterColon {
                        colon,
                        candidate,
                        anchor,
                        growth,
                    } = self.after_colon_homes[index];
                    decisions.defer(candidate_start(&candidate), colon);
                    let replaced = last_taken_colon == Some(colon)
                        || taken.overlaps(colon, colon + 1)
                        || covers(&decisions.merged, colon);
                    if !replaced {
                        continue;
                    }
                    last_taken_colon = Some(colon);
                    match candidate {
                        HomeCandidate::Found { span, .. } => {
                            taken.push(span);
                            decisions.decide_swept(span, anchor, colon);
                            decisions.grows(anchor, growth);
                        }
                        HomeCandidate::Nameless { start, name_start } => {
                            nameless.push(NamelessRoot {
                                start,
                                name_start,
                                anchor,
                            });
                        }
                    }
                }
            }
        }
        (taken.spans, nameless)
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

    /// The nameless roots that another root follows, found whatever follows that root (or
    /// the text ends there: whole text, or a stream's last window).
    fn roots_followed_by_roots(&self) -> Vec<Span> {
        let mut nameless = self.nameless_homes.clone();
        nameless.sort_unstable();
        let ended = self.window.as_deref().is_none_or(|window| window.last);
        (0..nameless.len())
            .filter(|&index| {
                later_root(&nameless, index)
                    .is_some_and(|later| ended || later < self.context.text.len())
            })
            .map(|index| {
                let root = nameless[index];
                Span::new(root.start, root.name_start, Rule::HomePath)
            })
            .collect()
    }

    /// A root without a user name (R27) is taken when what follows it is replaced: by a
    /// span, or by the root of another candidate, whatever that candidate's own decision
    /// (`/Users//Users/x` is one span; in `/home//home/ x` the first root goes, and a
    /// second pass finds the same). So no decision waits on the next one, and a chain
    /// `/home//home//home/…` is decided root by root from a bounded stretch. `more` are the
    /// nameless roots after a `:` taken.
    fn decide_nameless_homes(
        &self,
        decisions: &mut Decisions,
        more: Vec<NamelessRoot>,
        work: &mut Work,
    ) -> Vec<Span> {
        let mut nameless = more;
        nameless.extend_from_slice(&self.nameless_homes);
        nameless.sort_unstable();
        let mut taken: Vec<Span> = Vec::new();
        for (index, root) in nameless.iter().enumerate() {
            let NamelessRoot {
                start,
                name_start,
                anchor,
            } = *root;
            work.verified_bytes += 1;
            let later_root = later_root(&nameless, index);
            let depends_until = match later_root {
                // Taken whatever any span is: the decision reads none.
                Some(later_name_start) if later_name_start < self.context.text.len() => start,
                _ => name_start,
            };
            decisions.defer(start, depends_until);
            if later_root.is_some() || covers(&decisions.merged, name_start) {
                let span = Span::new(start, name_start, Rule::HomePath);
                taken.push(span);
                decisions.decide(span, anchor, Rule::HomePath, depends_until);
            }
        }
        taken
    }

    /// Credentials judged on the output's view (R25). A credential can hold the next scheme
    /// word, which counts as redacted whatever its own decision (`auth::accepts`), so no
    /// decision waits on the one after it: a chain `Bearer x=bearer x=bearer …` is decided
    /// link by link, each from a bounded stretch.
    fn decide_authorizations(&self, decisions: &mut Decisions, work: &mut Work) -> Vec<Span> {
        let mut accepted = Vec::new();
        for (index, candidate) in self.authorizations.iter().enumerate() {
            work.verified_bytes += 1;
            let earlier =
                first_ending_after(&decisions.merged, candidate.white_space_start).copied();
            let next = self.authorizations.get(index + 1);
            let later =
                next.map(|next| Span::new(next.start, next.credential_end, Rule::AuthValue));
            let first = [earlier, later]
                .into_iter()
                .flatten()
                .filter(|span| {
                    span.end > candidate.white_space_start && span.start <= candidate.credential_end
                })
                .min_by_key(|span| span.start);
            // The decision reads the credential up to the first span, and whether that
            // span exists (whatever its placeholder: `auth::accepts`).
            let depends_until = match (first, next) {
                // The next scheme word, once its credential starts (it is one whatever
                // follows), is there: nothing from its start on counts.
                (Some(span), Some(next))
                    if span.start == next.start
                        && next.credential_start < self.context.text.len() =>
                {
                    span.start - 1
                }
                // A span found so far, which a decision still open may have made.
                (Some(span), _) => span.start,
                (None, _) => candidate.credential_end,
            };
            decisions.defer(candidate.start, depends_until);
            if auth::accepts(self.context.text, candidate, first) {
                let span = Span::new(candidate.start, candidate.credential_end, Rule::AuthValue);
                accepted.push(span);
                decisions.decide(span, candidate.start, Rule::AuthValue, depends_until);
            }
        }
        accepted
    }
}

/// A candidate of [`PatternPass::decide_homes_left_to_right`], by its index in its list.
#[derive(Clone, Copy)]
enum LeftToRight {
    UrlHome(usize),
    AfterColon(usize),
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

/// The candidates decided at the end, as [`PatternPass::finish`] goes: the spans so far,
/// and in window mode what each decision depended on.
struct Decisions {
    /// Every span taken so far, merged.
    merged: Vec<Span>,
    /// Window mode: the candidates taken.
    decided: Vec<Decision>,
    /// Window mode: every candidate decided, taken or not.
    deferred: Vec<Deferred>,
    /// Window mode: the spans taken whose name runs past the window.
    growing: Vec<TakenGrowth>,
    windowed: bool,
}

impl Decisions {
    /// A candidate starting at `start` was decided from the spans before `depends_until`.
    fn defer(&mut self, start: usize, depends_until: usize) {
        if self.windowed {
            self.deferred.push(Deferred {
                start,
                depends_until,
            });
        }
    }

    /// A candidate of `rule` found at `anchor` was taken with `span`.
    fn decide(&mut self, span: Span, anchor: usize, rule: Rule, depends_until: usize) {
        self.push(span, anchor, rule, depends_until, false);
    }

    /// A home of the left-to-right sweep found at `anchor` was taken with `span`.
    fn decide_swept(&mut self, span: Span, anchor: usize, depends_until: usize) {
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
    fn grows(&mut self, anchor: usize, growth: Option<Growth>) {
        if let Some(growth) = growth.filter(|_| self.windowed) {
            self.growing.push(TakenGrowth { anchor, growth });
        }
    }

    /// Counts the spans taken for `rule` and merges them in.
    fn take_all(&mut self, taken: Vec<Span>, rule: Rule, counts: &mut [u64; Rule::COUNT]) {
        if taken.is_empty() {
            return;
        }
        counts[rule.index()] += taken.len() as u64;
        let merged = std::mem::take(&mut self.merged);
        self.merged = merge(merged.into_iter().chain(taken).collect());
    }
}

/// A span taken at the end whose name runs past the window: how it grows from its anchor.
struct TakenGrowth {
    /// Where the home anchor was found.
    anchor: usize,
    growth: Growth,
}

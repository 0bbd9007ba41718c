//! The end of a pass: the candidates decided once every other span is known, in the order
//! their rules read one another: homes in a URL's path and `//` roots after a `:` (R27) in
//! one sweep from left to right (`super::sweep`), nameless roots (R27), then uncertain
//! authorization values (R25), which read everything.

use super::decisions::{Decisions, TakenGrowth};
use super::homes::{NamelessRoot, later_root};
use super::pass::PatternPass;
use super::windowed::{Decision, Deferred};
use crate::redact::Rule;
use crate::redact::auth;
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
        let mut decisions = Decisions::new(merged, self.window.is_some());
        let swept = self.decide_homes_left_to_right(&mut decisions, &immediate, work);
        decisions.take_all(swept.homes, Rule::HomePath, counts);
        if let Some(window) = self.window.as_deref_mut() {
            for TakenGrowth { anchor, growth } in std::mem::take(&mut decisions.growing) {
                window.grow_taken(anchor, Rule::HomePath, growth);
            }
        }
        let nameless = self.decide_nameless_homes(&mut decisions, swept.nameless, work);
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

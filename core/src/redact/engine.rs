//! One redaction pass (R29): find candidate spans of every rule on the same text, merge
//! them, and report them in input coordinates.
//!
//! 1. Build the R28 view of the input (invisible format characters removed).
//! 2. Find every occurrence of the configured values (R24), overlapping ones included:
//!    along the anchor search of step 3 when they fit there, else with their own search.
//! 3. Scan for anchors (one Teddy pass, one `memchr`); each anchor goes to its rule, which
//!    verifies it on the view with bounded or cached steps. A rule skips anchors inside its
//!    own previous span (`sk-sk-sk-…` is one span and one scan).
//! 4. Merge; then decide the candidates that depend on other spans: nameless home roots
//!    (R27), then uncertain authorization values right to left (R25). Merge again.
//! 5. Map the merged spans back to the input.
//!
//! Every step is linear in the input: the searchers read each byte a bounded number of
//! times, verification either stops after a bounded number of bytes or produces a span that
//! covers the anchors it read over, and the sort is over spans, not bytes.

use super::Rule;
use super::anchors::{Anchor, AnchorScanner};
use super::auth::{self, AuthCandidate};
use super::context::Context;
use super::exact::ExactValues;
use super::home::{self, HomeCandidate};
use super::invisible::View;
use super::keys;
use super::span::{Span, covers, first_ending_after, merge};
use super::text::starts_with;
use super::tokens::{self, PemEnds, RunCache};
use super::work::Work;
use crate::fault::FaultSet;

/// The merged spans of one input, with per-rule candidate counts and the work done.
pub(crate) struct Found {
    pub(crate) spans: Vec<Span>,
    pub(crate) counts: [u64; Rule::COUNT],
    pub(crate) work: Work,
}

/// Runs the rules over `input`.
pub(crate) fn find(
    values: &ExactValues,
    anchors: Option<&AnchorScanner>,
    input: &[u8],
    faults: FaultSet,
) -> Found {
    let mut work = Work::default();
    let mut counts = [0u64; Rule::COUNT];
    if values.is_empty() && anchors.is_none() {
        return Found {
            spans: Vec::new(),
            counts,
            work,
        };
    }
    let view = View::new(input, &mut work);
    let text = view.text();
    let spans = match anchors {
        Some(anchors) => {
            let upfront = if anchors.finds_values() {
                Vec::new()
            } else {
                let matches_before = work.value_matches;
                let upfront = values.find(text, &mut work);
                // Every occurrence counts, as when the anchor search finds them one by one.
                counts[Rule::ExactValue.index()] = work.value_matches - matches_before;
                upfront
            };
            let mut pass = PatternPass::new(text, anchors, &upfront, faults);
            anchors.scan(text, &mut work, |position, anchor, work| {
                pass.on_anchor(anchor, position, work)
            });
            pass.finish(&mut counts, &mut work)
        }
        None => {
            let spans = values.find(text, &mut work);
            counts[Rule::ExactValue.index()] = work.value_matches;
            spans
        }
    };
    work.candidates += counts.iter().sum::<u64>();
    let spans = if view.is_folded() {
        spans.into_iter().map(|span| view.to_input(span)).collect()
    } else {
        spans
    };
    Found {
        spans,
        counts,
        work,
    }
}

/// The state of the pattern rules during one scan.
struct PatternPass<'s, 't> {
    context: Context<'t>,
    anchors: &'s AnchorScanner,
    /// The seeded bugs of SPEC §11; empty outside the simulator.
    faults: FaultSet,
    /// The configured values' spans when they were found before the scan (sorted, merged).
    upfront: &'s [Span],
    /// How many of `upfront` are in `spans`.
    upfront_pushed: usize,
    /// The spans of every rule that needs nothing else to decide, about in order.
    spans: Vec<Span>,
    /// Candidates decided at the end.
    authorizations: Vec<AuthCandidate>,
    nameless_homes: Vec<(usize, usize)>,
    /// Home candidates whose `//` root follows a `:`: taken if another span covers it.
    after_colon_homes: Vec<(usize, HomeCandidate)>,
    /// Where each rule's last span ends: anchors before it are inside it.
    covered_until: [usize; Rule::COUNT],
    /// Spans found per rule.
    counts: [u64; Rule::COUNT],
    runs: RunCache,
    pem_ends: PemEnds,
}

impl<'s, 't> PatternPass<'s, 't> {
    fn new(
        text: &'t [u8],
        anchors: &'s AnchorScanner,
        upfront: &'s [Span],
        faults: FaultSet,
    ) -> PatternPass<'s, 't> {
        PatternPass {
            context: Context {
                text,
                values_end: 0,
            },
            anchors,
            faults,
            upfront,
            upfront_pushed: 0,
            spans: Vec::with_capacity(upfront.len()),
            authorizations: Vec::new(),
            nameless_homes: Vec::new(),
            after_colon_homes: Vec::new(),
            covered_until: [0; Rule::COUNT],
            counts: [0; Rule::COUNT],
            runs: RunCache::default(),
            pem_ends: PemEnds::default(),
        }
    }

    /// Adds a configured value's span (counted when it is one occurrence), and remembers how
    /// far values reach.
    fn push_value(&mut self, span: Span, counted: bool) {
        self.context.values_end = self.context.values_end.max(span.end);
        if counted {
            self.counts[Rule::ExactValue.index()] += 1;
        }
        self.spans.push(span);
    }

    /// Moves the upfront values that start before `position` into `spans`.
    fn push_values_before(&mut self, position: usize) {
        let upfront = self.upfront;
        let next = upfront[self.upfront_pushed..].partition_point(|span| span.start < position);
        for &span in &upfront[self.upfront_pushed..self.upfront_pushed + next] {
            self.push_value(span, false);
        }
        self.upfront_pushed += next;
    }

    fn on_anchor(&mut self, anchor: Anchor, position: usize, work: &mut Work) {
        self.push_values_before(position);
        if let Anchor::Value(index) = anchor {
            let value = self.anchors.value(index);
            work.verified_bytes += value.len() as u64;
            if starts_with(self.context.text, position, value) {
                self.push_value(
                    Span::new(position, position + value.len(), Rule::ExactValue),
                    true,
                );
            }
            return;
        }
        let rule = rule_of(anchor);
        // An anchor inside the rule's previous span starts a candidate that ends where that
        // span ends (a key run, a PEM block, a home name), so it is skipped. Authorization
        // values are the exception: a scheme word inside a credential (`Bearer x=bearer y`)
        // starts a credential of its own after the first one ends, and credentials, which
        // stop at white space, never overlap, so scanning each costs nothing twice.
        if rule != Rule::AuthValue && position < self.covered_until[rule.index()] {
            return;
        }
        let context = &self.context;
        let span = match anchor {
            Anchor::Bearer | Anchor::Basic => {
                let word: &[u8] = if anchor == Anchor::Bearer {
                    b"bearer"
                } else {
                    b"basic"
                };
                match auth::candidate(context, work, position, word) {
                    // Redacted whatever else is found: no need to wait for the other spans.
                    Some(candidate) if candidate.certain => Some(Span::new(
                        candidate.start,
                        candidate.credential_end,
                        Rule::AuthValue,
                    )),
                    Some(candidate) => {
                        self.authorizations.push(candidate);
                        None
                    }
                    None => None,
                }
            }
            Anchor::Sk => keys::sk_key(context, work, position),
            Anchor::GithubShort => keys::github_short(context, work, position),
            Anchor::GithubPat => keys::github_pat(context, work, position),
            Anchor::Aws => keys::aws_key_id(context, work, position),
            Anchor::Slack => keys::slack_token(context, work, position),
            Anchor::Jwt => tokens::jwt(context, work, &mut self.runs, position),
            Anchor::PemBegin => {
                tokens::pem_private_key(context, work, &mut self.pem_ends, position + 1)
            }
            Anchor::SchemeSeparator => tokens::url_password(context, work, position),
            // Handled above.
            Anchor::Value(_) => None,
            Anchor::UsersSegment | Anchor::Home => {
                let found = if anchor == Anchor::Home {
                    home::home(context.text, work, position)
                } else {
                    let segment = home::users_segment(context.text, work, position, self.faults);
                    self.after_colon_homes.extend(segment.after_colon);
                    segment.candidate
                };
                match found {
                    Some(HomeCandidate::Found(span)) => Some(span),
                    Some(HomeCandidate::Nameless { start, name_start }) => {
                        self.nameless_homes.push((start, name_start));
                        None
                    }
                    None => None,
                }
            }
        };
        if let Some(span) = span {
            let until = &mut self.covered_until[rule.index()];
            *until = (*until).max(span.end);
            self.counts[rule.index()] += 1;
            self.spans.push(span);
        }
    }

    /// Merges every span and decides the candidates that depend on other spans.
    fn finish(mut self, counts: &mut [u64; Rule::COUNT], work: &mut Work) -> Vec<Span> {
        for (count, found) in counts.iter_mut().zip(self.counts) {
            *count += found;
        }
        self.push_values_before(usize::MAX);
        let mut merged = merge(self.spans);
        // A `//` root refused for the `:` before it stands if that `:` is replaced, by a
        // span or by the root before it (`/Users/://h\Users\://h\Users\x`, left to right).
        // Several anchors may share one root (`//h\Users\Users\x`), and so one `:`.
        let mut after_colon: Vec<Span> = Vec::new();
        let mut last_taken_colon = None;
        for (colon, candidate) in self.after_colon_homes {
            work.verified_bytes += 1;
            let covered_by_root_before = last_taken_colon == Some(colon)
                || after_colon
                    .last()
                    .is_some_and(|span| span.start <= colon && colon < span.end);
            if !covered_by_root_before && !covers(&merged, colon) {
                continue;
            }
            last_taken_colon = Some(colon);
            match candidate {
                HomeCandidate::Found(span) => after_colon.push(span),
                HomeCandidate::Nameless { start, name_start } => {
                    self.nameless_homes.push((start, name_start));
                }
            }
        }
        if !after_colon.is_empty() {
            counts[Rule::HomePath.index()] += after_colon.len() as u64;
            merged = merge(merged.into_iter().chain(after_colon).collect());
        }
        self.nameless_homes.sort_unstable();
        let mut decided: Vec<Span> = Vec::new();
        // Right to left, so that a root followed by a root (`/Users//Users/x`) joins it.
        for &(start, name_start) in self.nameless_homes.iter().rev() {
            work.verified_bytes += 1;
            let joins_later = decided
                .last()
                .is_some_and(|span| span.start <= name_start && name_start < span.end);
            if joins_later || covers(&merged, name_start) {
                decided.push(Span::new(start, name_start, Rule::HomePath));
            }
        }
        counts[Rule::HomePath.index()] += decided.len() as u64;
        let merged = if decided.is_empty() {
            merged
        } else {
            merge(merged.into_iter().chain(decided).collect())
        };
        let mut accepted: Vec<Span> = Vec::new();
        for candidate in self.authorizations.iter().rev() {
            work.verified_bytes += 1;
            let earlier = first_ending_after(&merged, candidate.white_space_start).copied();
            let later = accepted
                .last()
                .copied()
                .filter(|span| span.end > candidate.white_space_start);
            let first = [earlier, later]
                .into_iter()
                .flatten()
                .filter(|span| span.start <= candidate.credential_end)
                .min_by_key(|span| span.start);
            if auth::accepts(self.context.text, candidate, first) {
                accepted.push(Span::new(
                    candidate.start,
                    candidate.credential_end,
                    Rule::AuthValue,
                ));
            }
        }
        counts[Rule::AuthValue.index()] += accepted.len() as u64;
        if accepted.is_empty() {
            merged
        } else {
            merge(merged.into_iter().chain(accepted).collect())
        }
    }
}

/// The rule an anchor starts.
fn rule_of(anchor: Anchor) -> Rule {
    match anchor {
        Anchor::Bearer | Anchor::Basic => Rule::AuthValue,
        Anchor::Sk => Rule::SkKey,
        Anchor::GithubShort | Anchor::GithubPat => Rule::GithubToken,
        Anchor::Aws => Rule::AwsKeyId,
        Anchor::Slack => Rule::SlackToken,
        Anchor::Jwt => Rule::Jwt,
        Anchor::PemBegin => Rule::PemPrivateKey,
        Anchor::SchemeSeparator => Rule::UrlPassword,
        Anchor::UsersSegment | Anchor::Home => Rule::HomePath,
        Anchor::Value(_) => Rule::ExactValue,
    }
}

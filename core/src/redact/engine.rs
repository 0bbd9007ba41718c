//! One redaction pass (R29): find candidate spans of every rule on the same text, merge
//! them, and report them in input coordinates.
//!
//! 1. Build the R28 view of the input (invisible format characters removed).
//! 2. Find every occurrence of the configured values (R24), overlapping search, merged.
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
use super::tokens::{self, PemEnds, RunCache};
use super::work::Work;

/// The merged spans of one input, with per-rule candidate counts and the work done.
pub(crate) struct Found {
    pub(crate) spans: Vec<Span>,
    pub(crate) counts: [u64; Rule::COUNT],
    pub(crate) work: Work,
}

/// Runs the rules over `input`.
pub(crate) fn find(values: &ExactValues, anchors: Option<&AnchorScanner>, input: &[u8]) -> Found {
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
    let value_spans = values.find(text, &mut work);
    counts[Rule::ExactValue.index()] = work.value_matches;
    let spans = match anchors {
        Some(anchors) => {
            let context = Context {
                text,
                values: &value_spans,
            };
            let mut pass = PatternPass::new(&context);
            anchors.scan(text, &mut work, |position, anchor, work| {
                pass.on_anchor(anchor, position, work)
            });
            pass.finish(&mut counts, &mut work)
        }
        None => value_spans,
    };
    work.candidates += counts.iter().sum::<u64>();
    let spans = spans.into_iter().map(|span| view.to_input(span)).collect();
    Found {
        spans,
        counts,
        work,
    }
}

/// The state of the pattern rules during one scan.
struct PatternPass<'c, 't> {
    context: &'c Context<'t>,
    /// The spans of rules that need nothing else to decide, with the configured values'
    /// spans woven in by position (so that the list is usually sorted already).
    spans: Vec<Span>,
    /// How many of the configured values' spans are in `spans`.
    values_pushed: usize,
    /// Spans found per rule.
    counts: [u64; Rule::COUNT],
    /// Candidates decided at the end.
    authorizations: Vec<AuthCandidate>,
    nameless_homes: Vec<(usize, usize)>,
    /// Where each rule's last span ends: anchors before it are inside it.
    covered_until: [usize; Rule::COUNT],
    runs: RunCache,
    pem_ends: PemEnds,
}

impl<'c, 't> PatternPass<'c, 't> {
    fn new(context: &'c Context<'t>) -> PatternPass<'c, 't> {
        PatternPass {
            context,
            spans: Vec::with_capacity(context.values.len()),
            values_pushed: 0,
            authorizations: Vec::new(),
            nameless_homes: Vec::new(),
            covered_until: [0; Rule::COUNT],
            counts: [0; Rule::COUNT],
            runs: RunCache::default(),
            pem_ends: PemEnds::default(),
        }
    }

    fn on_anchor(&mut self, anchor: Anchor, position: usize, work: &mut Work) {
        let rule = rule_of(anchor);
        // An anchor inside the rule's previous span starts a candidate that ends where that
        // span ends (a key run, a PEM block, a home name), so it is skipped. Authorization
        // values are the exception: a scheme word inside a credential (`Bearer x=bearer y`)
        // starts a credential of its own after the first one ends, and credentials, which
        // stop at white space, never overlap, so scanning each costs nothing twice.
        if rule != Rule::AuthValue && position < self.covered_until[rule.index()] {
            return;
        }
        let context = self.context;
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
            Anchor::UsersSegment | Anchor::Home => {
                let found = if anchor == Anchor::Home {
                    home::home(context.text, work, position)
                } else {
                    home::users_segment(context.text, work, position)
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
            self.push_values_before(span.start);
            self.spans.push(span);
        }
    }

    /// Merges every span and decides the candidates that depend on other spans.
    /// Moves the configured values' spans that start before `position` into `spans`.
    fn push_values_before(&mut self, position: usize) {
        let values = self.context.values;
        let next = values[self.values_pushed..].partition_point(|span| span.start < position);
        self.spans
            .extend_from_slice(&values[self.values_pushed..self.values_pushed + next]);
        self.values_pushed += next;
    }

    fn finish(mut self, counts: &mut [u64; Rule::COUNT], work: &mut Work) -> Vec<Span> {
        for (count, found) in counts.iter_mut().zip(self.counts) {
            *count += found;
        }
        self.push_values_before(usize::MAX);
        let merged = merge(self.spans);
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
    }
}

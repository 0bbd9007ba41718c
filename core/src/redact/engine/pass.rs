//! The pattern rules' state during one scan (R25–R27, with the configured values of R24):
//! each anchor goes to its rule, which verifies it on the view; a rule skips anchors inside
//! its own previous span; candidates that depend on other spans are kept for the end.

use super::homes::{AfterColon, NamelessRoot, UrlHome, home_growth, home_reach, taken_at_the_end};
use super::windowed::{Growing, Origin, SpanEnd, Standing, Window};
use crate::redact::Rule;
use crate::redact::anchors::{Anchor, AnchorScanner};
use crate::redact::auth::{self, AuthCandidate};
use crate::redact::context::Context;
use crate::redact::exact::ExactValues;
use crate::redact::growth::{Tail, Verdict};
use crate::redact::home::{self, HomeCandidate};
use crate::redact::keys;
use crate::redact::span::Span;
use crate::redact::text::starts_with;
use crate::redact::tokens::{self, PemEnds, RunCache};
use crate::redact::window::Resume;
use crate::redact::work::Work;

/// The state of the pattern rules during one scan.
pub(super) struct PatternPass<'s, 't, 'w> {
    pub(super) context: Context<'t>,
    anchors: &'s AnchorScanner,
    /// The configured values' spans when they were found before the scan (sorted, merged).
    upfront: Vec<Span>,
    /// How many of `upfront` are in `spans`.
    upfront_pushed: usize,
    /// The spans of every pattern rule that needs nothing else to decide, about in order.
    pub(super) spans: Vec<Span>,
    /// The configured values' spans, merged as they arrive (in order of their start), so
    /// that a value found at every byte costs one span, not one per byte.
    pub(super) values: Vec<Span>,
    /// Candidates decided at the end, with the anchor each was found at.
    pub(super) authorizations: Vec<AuthCandidate>,
    pub(super) nameless_homes: Vec<NamelessRoot>,
    /// Home candidates whose `//` root follows a `:`: taken if another span covers it.
    pub(super) after_colon_homes: Vec<AfterColon>,
    /// Where each rule's last span ends: anchors before it are inside it.
    pub(super) covered_until: [usize; Rule::COUNT],
    /// Spans found per rule.
    pub(super) counts: [u64; Rule::COUNT],
    runs: RunCache,
    pem_ends: PemEnds,
    /// Window mode only.
    pub(super) window: Option<&'w mut Window>,
    /// Candidates found before this position were decided by earlier windows.
    from: usize,
    /// The URL a home root may lie in (R27).
    url: home::UrlRun,
    /// Home paths in a URL's path, kept only if a span covers part of that URL's
    /// `scheme://`.
    pub(super) url_homes: Vec<UrlHome>,
}

impl<'s, 't, 'w> PatternPass<'s, 't, 'w> {
    pub(super) fn new(
        text: &'t [u8],
        anchors: &'s AnchorScanner,
        values: &ExactValues,
        window: Option<&'w mut Window>,
        work: &mut Work,
    ) -> PatternPass<'s, 't, 'w> {
        let mut counts = [0; Rule::COUNT];
        let upfront = if anchors.finds_values() {
            Vec::new()
        } else {
            let matches_before = work.value_matches;
            let upfront = values.find(text, work);
            // Every occurrence counts, as when the anchor search finds them one by one.
            counts[Rule::ExactValue.index()] = work.value_matches - matches_before;
            upfront
        };
        PatternPass {
            context: Context {
                text,
                values_end: 0,
            },
            anchors,
            spans: Vec::new(),
            values: Vec::with_capacity(upfront.len()),
            upfront,
            upfront_pushed: 0,
            authorizations: Vec::new(),
            nameless_homes: Vec::new(),
            after_colon_homes: Vec::new(),
            covered_until: [0; Rule::COUNT],
            counts,
            runs: RunCache::default(),
            pem_ends: PemEnds::default(),
            from: window.as_ref().map_or(0, |window| window.from),
            window,
            url: home::UrlRun::default(),
            url_homes: Vec::new(),
        }
    }

    /// Adds a configured value's span, and remembers how far values reach.
    fn push_value(&mut self, span: Span, counted: bool) {
        self.context.values_end = self.context.values_end.max(span.end);
        if counted {
            self.counts[Rule::ExactValue.index()] += 1;
        }
        match self.values.last_mut() {
            Some(last) if span.start <= last.end => last.end = last.end.max(span.end),
            _ => self.values.push(span),
        }
    }

    /// Moves the upfront values that start before `position` into `spans`.
    pub(super) fn push_values_before(&mut self, position: usize) {
        let next =
            self.upfront[self.upfront_pushed..].partition_point(|span| span.start < position);
        for index in self.upfront_pushed..self.upfront_pushed + next {
            let span = self.upfront[index];
            self.push_value(span, false);
        }
        self.upfront_pushed += next;
    }

    /// Window mode: carries on the spans still growing where the window's candidates start.
    pub(super) fn resume(&mut self, resumes: &[Resume], work: &mut Work) {
        let from = self.from;
        for &Resume { rule, tail } in resumes {
            let verdict = tail.resume(self.context.text, from, rule);
            work.verified_bytes += verdict.span.map_or(0, |span| span.len() as u64).max(1);
            // A home taken at the end was no span while whole text was read: the anchors
            // inside it are not skipped.
            let skips = !matches!(tail, Tail::UserName(_, false));
            if let Some(span) = verdict.span {
                if skips {
                    let until = &mut self.covered_until[rule.index()];
                    *until = (*until).max(span.end);
                }
                self.spans.push(span);
            }
            if let Some(window) = self.window.as_deref_mut() {
                match verdict.growth {
                    Some(growth) if !window.last => {
                        window.settled = window.settled.min(growth.certain_end);
                        window.growing.push(Growing {
                            origin: Origin::Resumed(tail),
                            rule,
                            growth,
                        });
                    }
                    _ => {
                        if let Some(span) = verdict.span.filter(|_| skips) {
                            window.ends.push(SpanEnd {
                                anchor: from.saturating_sub(1),
                                rule,
                                end: span.end,
                            });
                        }
                    }
                }
            }
        }
    }

    /// An anchor the scan found at `position`: a configured value's, or the start of a
    /// pattern rule's candidate, verified from the window's `from` on.
    pub(super) fn on_anchor(&mut self, anchor: Anchor, position: usize, work: &mut Work) {
        self.push_values_before(position);
        if let Anchor::Value(index) = anchor {
            self.on_value(index, position, work);
            return;
        }
        // Every `://` counts for R27, those before the window's new bytes too: a home root
        // there may lie in a URL that starts in the look-behind.
        if anchor == Anchor::SchemeSeparator {
            self.url.on_separator(self.context.text, work, position);
        }
        if position < self.from {
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
        let verdict = self.verify(anchor, position, work);
        self.on_verdict(rule, position, verdict, work);
    }

    /// The anchor of the configured value `index` at `position`: its span if the whole
    /// value is there.
    fn on_value(&mut self, index: usize, position: usize, work: &mut Work) {
        let value = self.anchors.value(index);
        work.verified_bytes += value.len() as u64;
        if starts_with(self.context.text, position, value) {
            self.push_value(
                Span::new(position, position + value.len(), Rule::ExactValue),
                true,
            );
        }
    }

    /// The verdict of the rule that `anchor`, found at `position`, starts.
    fn verify(&mut self, anchor: Anchor, position: usize, work: &mut Work) -> Verdict {
        let context = &self.context;
        match anchor {
            Anchor::Bearer | Anchor::Basic => self.authorization(anchor, position, work),
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
            Anchor::UsersSegment | Anchor::Home => self.home_path(anchor, position, work),
            // Handled by `on_anchor`.
            Anchor::Value(_) => Verdict::none(position),
        }
    }

    /// Keeps the span of a `rule` candidate found at `position` as its verdict stands in
    /// the window: a home inside a URL's path for the decisions at the end, any other span
    /// at once.
    fn on_verdict(&mut self, rule: Rule, position: usize, verdict: Verdict, work: &mut Work) {
        // A home inside a URL's path is decided at the end (R27), from what precedes it: its
        // span, if taken, grows from then on.
        let in_url = match verdict.span {
            Some(span) if rule == Rule::HomePath => {
                self.url.holding(self.context.text, work, span.start)
            }
            _ => None,
        };
        let standing = match self.window.as_deref_mut() {
            Some(window) if in_url.is_some() => window.stand_deferred(position, rule, &verdict),
            Some(window) => window.stand(position, rule, &verdict),
            None => Standing::Settled,
        };
        let Some(span) = verdict.span.filter(|_| standing != Standing::Unsettled) else {
            return;
        };
        if let Some((scheme_start, separator_end)) = in_url {
            self.url_homes.push(UrlHome {
                scheme_start,
                separator_end,
                span,
                anchor: position,
                growth: verdict
                    .growth
                    .filter(|_| standing == Standing::Growing)
                    .map(taken_at_the_end),
            });
            return;
        }
        let until = &mut self.covered_until[rule.index()];
        *until = (*until).max(span.end);
        self.counts[rule.index()] += 1;
        self.spans.push(span);
        if let Some(window) = self.window.as_deref_mut() {
            window.found(position, rule, span, standing);
        }
    }

    /// A scheme word at `position`: its span when redacted whatever else is found, else kept
    /// for the end.
    fn authorization(&mut self, anchor: Anchor, position: usize, work: &mut Work) -> Verdict {
        let word: &[u8] = if anchor == Anchor::Bearer {
            b"bearer"
        } else {
            b"basic"
        };
        let candidate = match auth::candidate(&self.context, work, position, word) {
            Ok(candidate) => candidate,
            Err(reach) => return Verdict::none(reach),
        };
        let reach = candidate.credential_end + 1;
        if !candidate.certain {
            self.authorizations.push(candidate);
            return Verdict::none(reach);
        }
        // Redacted whatever else is found: no need to wait for the other spans.
        let verdict = Verdict::found(
            Span::new(candidate.start, candidate.credential_end, Rule::AuthValue),
            reach,
        );
        // Only a credential that runs to the end of the text may still grow (a window's end;
        // whole-text redaction never asks).
        let at_end = candidate.credential_end == self.context.text.len();
        if at_end && auth::stays_certain(self.context.text, &candidate) {
            verdict.growing_at_end(
                self.context.text,
                auth::growth(
                    self.context.text,
                    candidate.credential_start,
                    candidate.credential_end,
                    candidate.gap_resume,
                ),
            )
        } else {
            verdict
        }
    }

    /// A home-path anchor at `position`. A span whose name runs to the end of a window
    /// grows; a candidate after a `:` is kept for the end with its growth, and its decision
    /// waits only for its name to start.
    fn home_path(&mut self, anchor: Anchor, position: usize, work: &mut Work) -> Verdict {
        let text = self.context.text;
        let (found, after_colon) = if anchor == Anchor::Home {
            (home::home(text, work, position), None)
        } else {
            let segment = home::users_segment(text, work, position);
            (segment.candidate, segment.after_colon)
        };
        let mut after_colon_reach = 0;
        if let Some((colon, candidate)) = after_colon {
            let growth = home_growth(text, &candidate).map(taken_at_the_end);
            after_colon_reach = match (growth, candidate) {
                (Some(_), HomeCandidate::Found { name, .. }) => name.start + 1,
                _ => home_reach(text, &candidate),
            };
            self.after_colon_homes.push(AfterColon {
                colon,
                candidate,
                anchor: position,
                growth,
            });
        }
        match found {
            Some(candidate @ HomeCandidate::Found { span, .. }) => {
                let verdict = Verdict::found(
                    span,
                    home::name_reach(text, span.end).max(after_colon_reach),
                );
                match home_growth(text, &candidate) {
                    // A candidate after a `:` still waiting keeps this one waiting too.
                    Some(growth) if after_colon_reach <= text.len() => {
                        verdict.growing_at_end(text, growth)
                    }
                    _ => verdict,
                }
            }
            Some(HomeCandidate::Nameless { start, name_start }) => {
                self.nameless_homes.push(NamelessRoot {
                    start,
                    name_start,
                    anchor: position,
                });
                Verdict::none((name_start + 1).max(after_colon_reach))
            }
            None => Verdict::none((position + home::FAILED_REACH_MAX).max(after_colon_reach)),
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

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
//!
//! [`find_window`] runs the same pass on one window of a stream (`super::stream`): it
//! starts from what earlier windows left (the open span, the spans still growing, where
//! each rule's last span ended), skips the candidates they decided, sorts every other
//! candidate by its [`Verdict`] into settled, growing and unsettled, and reports how far
//! everything is final (`window` describes the contract).

use super::Rule;
use super::anchors::{Anchor, AnchorScanner};
use super::auth::{self, AuthCandidate};
use super::context::Context;
use super::exact::ExactValues;
use super::growth::{Growth, Tail, Verdict};
use super::home::{self, HomeCandidate};
use super::invisible::View;
use super::keys;
use super::span::{Span, covers, first_ending_after, merge};
use super::text::{char_start, starts_with};
use super::tokens::{self, PemEnds, RunCache};
use super::window::{Frame, Settled, TAIL_PATTERNS, span_back_max};
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
    let spans = match anchors {
        Some(anchors) => {
            let mut pass = PatternPass::new(text, anchors, values, None, &mut work);
            anchors.scan(text, &mut work, |position, anchor, work| {
                pass.on_anchor(anchor, position, work)
            });
            pass.finish(&mut counts, &mut work).spans
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

/// Runs the rules over one window of a stream: `input` is the window (the look-behind
/// context, a view already, then the new bytes) and `frame` what earlier windows left.
pub(crate) fn find_window(
    values: &ExactValues,
    anchors: Option<&AnchorScanner>,
    input: &[u8],
    frame: &Frame,
) -> Settled {
    let mut work = Work::default();
    let view = View::after(input, frame.from, &mut work);
    let text = view.text();
    let mut window = Window::new(frame, &view, TAIL_PATTERNS.max(values.longest()));
    let mut pass_counts = [0u64; Rule::COUNT];
    let (immediate, decided, deferred, covered_from) = match anchors {
        Some(anchors) => {
            let mut pass = PatternPass::new(text, anchors, values, Some(&mut window), &mut work);
            for (index, until) in frame.covered_until.iter().enumerate() {
                pass.covered_until[index] = view.to_view_position(*until);
            }
            pass.resume(&frame.resumes, &mut work);
            anchors.scan(text, &mut work, |position, anchor, work| {
                pass.on_anchor(anchor, position, work)
            });
            let finished = pass.finish(&mut pass_counts, &mut work);
            (
                finished.immediate,
                finished.decided,
                finished.deferred,
                frame
                    .covered_until
                    .map(|until| view.to_view_position(until)),
            )
        }
        None => {
            let found = values.find(text, &mut work);
            (found, Vec::new(), Vec::new(), [0; Rule::COUNT])
        }
    };
    let until = window.settle(text, deferred);
    if until <= frame.from && !frame.last {
        return Settled::no_progress(frame, work);
    }
    let context_start = until.saturating_sub(frame.context_len);
    // What R27's URL check reads in the next look-behind: the spans that need nothing else
    // to decide, and the homes the left-to-right sweep took (a home's name may run into a
    // URL's scheme).
    let roots = decided
        .iter()
        .filter(|decision| decision.swept && decision.settled_by(until) && decision.anchor < until);
    let read_by_urls: Vec<Span> = immediate
        .iter()
        .copied()
        .chain(roots.map(|decision| decision.span))
        .collect();
    let carried = carried_to_next(&window, &read_by_urls, &view, until, context_start);
    // In the last window everything is final, spans reaching the end included.
    let bound = if frame.last { usize::MAX } else { until };
    let spans = merge(
        immediate
            .into_iter()
            .chain(window.open)
            .chain(
                decided
                    .iter()
                    .filter(|decision| decision.settled_by(bound))
                    .map(|decision| decision.span),
            )
            .filter(|span| span.start < bound)
            .collect(),
    );
    work.candidates += pass_counts.iter().sum::<u64>();
    let counts = if frame.count {
        let mut counts = window.counts_before(bound, &decided);
        counts[Rule::ExactValue.index()] = values.count_starting_in(text, frame.from..until);
        counts
    } else {
        [0; Rule::COUNT]
    };
    let mut covered_until = covered_from;
    for &(anchor, rule, span_end) in &window.ends {
        if anchor < bound {
            let covered = &mut covered_until[rule.index()];
            *covered = (*covered).max(span_end);
        }
    }
    let open = spans
        .iter()
        .find(|span| span.start < until && until <= span.end)
        .copied();
    Settled {
        until: view.to_input_position(until),
        spans: spans.into_iter().map(|span| view.to_input(span)).collect(),
        covered_until: covered_until.map(|covered| view.to_input_position(covered)),
        resumes: window.resumes_from(until),
        counts,
        context: text[context_start..until].to_vec(),
        open_start_in_context: open.and_then(|open| open.start.checked_sub(context_start)),
        carried,
        progress: true,
        work,
    }
}

/// The spans that need nothing else to decide and reach into the next look-behind
/// (`context_start..until`), in the next buffer's positions: the context is a view, the
/// input after it is not.
fn carried_to_next(
    window: &Window,
    immediate: &[Span],
    view: &View<'_>,
    until: usize,
    context_start: usize,
) -> Vec<Span> {
    let until_input = view.to_input_position(until);
    let to_next = |position: usize| {
        if position <= until {
            position.saturating_sub(context_start)
        } else {
            until - context_start + view.to_input_position(position) - until_input
        }
    };
    merge(
        window
            .carried
            .iter()
            .chain(immediate)
            .filter(|span| span.start < until && span.end > context_start)
            .map(|span| Span {
                start: to_next(span.start),
                end: to_next(span.end),
                rules: span.rules,
            })
            .collect(),
    )
}

/// A window pass's bookkeeping (window mode only).
struct Window {
    /// Candidates starting before this view position were decided by earlier windows.
    from: usize,
    last: bool,
    /// The view's length.
    end: usize,
    /// Everything that may still change starts at or after this view position.
    settled: usize,
    /// The span open at `from`, in view positions.
    open: Option<Span>,
    /// The spans of rules that need nothing else to decide, found before `from`, that
    /// reach into the look-behind, in view positions (see [`Frame::carried`]).
    carried: Vec<Span>,
    growing: Vec<Growing>,
    /// The settled spans of pattern rules: anchor, rule, end (for `covered_until`).
    ends: Vec<(usize, Rule, usize)>,
    /// The anchors of counted pattern candidates.
    tallies: Vec<(usize, Rule)>,
    /// Spans that start after their anchor (a URL's password, after its `://`): anchor,
    /// span start, rule.
    late: Vec<(usize, usize, Rule)>,
    count: bool,
}

/// A span that exists whatever follows but may grow.
struct Growing {
    origin: Origin,
    rule: Rule,
    growth: Growth,
}

/// Where a growing span comes from.
#[derive(Clone, Copy)]
enum Origin {
    /// Its candidate was found at this anchor.
    Found(usize),
    /// It was resumed from an earlier window with this tail (valid from the window's
    /// `from`).
    Resumed(Tail),
}

/// How a candidate's verdict stands in a window.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Standing {
    /// Final.
    Settled,
    /// A span that exists, and may grow.
    Growing,
    /// May change once more text is read: nothing of it is kept.
    Unsettled,
}

/// A home candidate whose `//` root was refused for the `:` before it (R27).
#[derive(Clone, Copy)]
struct AfterColon {
    colon: usize,
    candidate: HomeCandidate,
    anchor: usize,
    /// How its span grows if it is taken, when its name runs to the end of a window.
    growth: Option<Growth>,
}

/// A candidate decided once every other span was known (R25 uncertain credentials, R27
/// nameless roots and roots after a `:`).
#[derive(Clone, Copy)]
struct Deferred {
    start: usize,
    /// The last position whose spans the decision depends on.
    depends_until: usize,
}

/// A deferred candidate taken.
#[derive(Clone, Copy)]
struct Decision {
    span: Span,
    anchor: usize,
    rule: Rule,
    depends_until: usize,
    /// Decided by the left-to-right sweep, so read by the URL checks after it.
    swept: bool,
}

impl Decision {
    fn settled_by(&self, until: usize) -> bool {
        self.depends_until < until && self.span.start < until
    }
}

impl Window {
    /// The bookkeeping of a window over `view`, whose last `tail` bytes may hold the start
    /// of an anchor or a value not yet whole.
    fn new(frame: &Frame, view: &View<'_>, tail: usize) -> Window {
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
    fn counts_before(&self, bound: usize, decided: &[Decision]) -> [u64; Rule::COUNT] {
        let mut counts = [0u64; Rule::COUNT];
        for &(anchor, rule) in &self.tallies {
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

    /// The growing spans the next window resumes at the cut `until`.
    fn resumes_from(&self, until: usize) -> Vec<(Rule, Tail)> {
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
                Some((growing.rule, tail))
            })
            .collect()
    }

    fn stand(&mut self, anchor: usize, rule: Rule, verdict: &Verdict) -> Standing {
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

    /// [`Window::stand`] for a candidate decided at the end: a span that may grow is kept
    /// for that decision, and its growth counts only if it is taken.
    fn stand_deferred(&mut self, anchor: usize, rule: Rule, verdict: &Verdict) -> Standing {
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
    fn grow_taken(&mut self, anchor: usize, rule: Rule, growth: Growth) {
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
    fn settle(&mut self, text: &[u8], mut ordered: Vec<Deferred>) -> usize {
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
            for &(anchor, start, rule) in &self.late {
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

/// What [`PatternPass::finish`] hands on.
struct Finished {
    /// The merged spans (whole-text mode).
    spans: Vec<Span>,
    /// Window mode: the spans of rules that need nothing else to decide (configured
    /// values, and every other rule's spans but those decided at the end), merged; the
    /// window's spans are these, the open span and the decisions settled before the cut.
    immediate: Vec<Span>,
    decided: Vec<Decision>,
    deferred: Vec<Deferred>,
}

/// A home path in a URL's path (R27), taken only if a span covers part of that URL's
/// `scheme://`.
struct UrlHome {
    /// The scheme's first byte.
    scheme_start: usize,
    /// The end of the `://`.
    separator_end: usize,
    span: Span,
    /// Where the home anchor was found.
    anchor: usize,
    /// How its span grows if it is taken, when its name runs to the end of a window.
    growth: Option<Growth>,
}

impl UrlHome {
    /// Whether a span of `spans` (sorted, disjoint) overlaps the URL's `scheme://`.
    fn scheme_overlapped_by(&self, spans: &[Span]) -> bool {
        first_ending_after(spans, self.scheme_start)
            .is_some_and(|span| span.start < self.separator_end)
    }
}

/// The state of the pattern rules during one scan.
struct PatternPass<'s, 't, 'w> {
    context: Context<'t>,
    anchors: &'s AnchorScanner,
    /// The seeded bugs of SPEC §11; empty outside the simulator.
    /// The configured values' spans when they were found before the scan (sorted, merged).
    upfront: Vec<Span>,
    /// How many of `upfront` are in `spans`.
    upfront_pushed: usize,
    /// The spans of every pattern rule that needs nothing else to decide, about in order.
    spans: Vec<Span>,
    /// The configured values' spans, merged as they arrive (in order of their start), so
    /// that a value found at every byte costs one span, not one per byte.
    values: Vec<Span>,
    /// Candidates decided at the end, with the anchor each was found at.
    authorizations: Vec<AuthCandidate>,
    nameless_homes: Vec<(usize, usize, usize)>,
    /// Home candidates whose `//` root follows a `:`: taken if another span covers it.
    after_colon_homes: Vec<AfterColon>,
    /// Where each rule's last span ends: anchors before it are inside it.
    covered_until: [usize; Rule::COUNT],
    /// Spans found per rule.
    counts: [u64; Rule::COUNT],
    runs: RunCache,
    pem_ends: PemEnds,
    /// Window mode only.
    window: Option<&'w mut Window>,
    /// Candidates found before this position were decided by earlier windows.
    from: usize,
    /// The URL a home root may lie in (R27).
    url: home::UrlRun,
    /// Home paths in a URL's path, kept only if a span covers part of that URL's
    /// `scheme://`.
    url_homes: Vec<UrlHome>,
}

impl<'s, 't, 'w> PatternPass<'s, 't, 'w> {
    fn new(
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
    fn push_values_before(&mut self, position: usize) {
        let next =
            self.upfront[self.upfront_pushed..].partition_point(|span| span.start < position);
        for index in self.upfront_pushed..self.upfront_pushed + next {
            let span = self.upfront[index];
            self.push_value(span, false);
        }
        self.upfront_pushed += next;
    }

    /// Window mode: carries on the spans still growing where the window's candidates start.
    fn resume(&mut self, resumes: &[(Rule, Tail)], work: &mut Work) {
        let from = self.from;
        for &(rule, tail) in resumes {
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
                            window.ends.push((from.saturating_sub(1), rule, span.end));
                        }
                    }
                }
            }
        }
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
        let context = &self.context;
        let verdict = match anchor {
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
            // Handled above.
            Anchor::Value(_) => Verdict::none(position),
        };
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
            if window.count {
                window.tallies.push((position, rule));
            }
            if span.start > position {
                window.late.push((position, span.start, rule));
            }
            if standing == Standing::Settled {
                window.ends.push((position, rule, span.end));
            }
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
                self.nameless_homes.push((start, name_start, position));
                Verdict::none((name_start + 1).max(after_colon_reach))
            }
            None => Verdict::none((position + home::FAILED_REACH_MAX).max(after_colon_reach)),
        }
    }

    /// Merges every span and decides the candidates that depend on other spans, in the
    /// order their rules read one another: homes in a URL's path and roots after a `:` in
    /// one sweep from left to right, nameless roots from right to left, and credentials
    /// (R25), which read everything, last.
    fn finish(mut self, counts: &mut [u64; Rule::COUNT], work: &mut Work) -> Finished {
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
            for (anchor, growth) in std::mem::take(&mut decisions.growing) {
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
    ) -> (Vec<Span>, Vec<(usize, usize, usize)>) {
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
                            nameless.push((start, name_start, anchor));
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
            .map(|index| Span::new(nameless[index].0, nameless[index].1, Rule::HomePath))
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
        more: Vec<(usize, usize, usize)>,
        work: &mut Work,
    ) -> Vec<Span> {
        let mut nameless = more;
        nameless.extend_from_slice(&self.nameless_homes);
        nameless.sort_unstable();
        let mut taken: Vec<Span> = Vec::new();
        for (index, &(start, name_start, anchor)) in nameless.iter().enumerate() {
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
    /// Window mode: the spans taken whose name runs past the window, by their anchor.
    growing: Vec<(usize, Growth)>,
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
            self.growing.push((anchor, growth));
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

/// The growth of a home span taken by a decision at the end: whole-text redaction reads
/// the anchors inside it (it was no span while the text was read), and so does the window
/// that reads it on.
fn taken_at_the_end(growth: Growth) -> Growth {
    match growth.tail {
        Tail::UserName(ends, _) => Growth {
            tail: Tail::UserName(ends, false),
            ..growth
        },
        _ => growth,
    }
}

/// For the nameless root at `index` of `nameless` (sorted), the name start of a later root
/// whose own root covers its name start, if there is one.
fn later_root(nameless: &[(usize, usize, usize)], index: usize) -> Option<usize> {
    let name_start = nameless[index].1;
    nameless[index + 1..]
        .iter()
        .take_while(|&&(later_start, ..)| later_start <= name_start)
        .map(|&(_, later_name_start, _)| later_name_start)
        .find(|&later_name_start| name_start < later_name_start)
}

/// How a home candidate's span grows when its name's reach is past the end of `text`.
fn home_growth(text: &[u8], candidate: &HomeCandidate) -> Option<Growth> {
    match *candidate {
        HomeCandidate::Found { span, name } if home::name_reach(text, span.end) > text.len() => {
            Some(Growth::new(
                Tail::UserName(name.ends, true),
                name.start,
                span.end,
            ))
        }
        _ => None,
    }
}

/// Where a home candidate starts.
fn candidate_start(candidate: &HomeCandidate) -> usize {
    match candidate {
        HomeCandidate::Found { span, .. } => span.start,
        HomeCandidate::Nameless { start, .. } => *start,
    }
}

/// The reach of a home candidate's verdict.
fn home_reach(text: &[u8], candidate: &HomeCandidate) -> usize {
    match candidate {
        HomeCandidate::Found { span, .. } => home::name_reach(text, span.end),
        HomeCandidate::Nameless { name_start, .. } => name_start + 1,
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

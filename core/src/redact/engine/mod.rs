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
//!
//! The pass's parts: [`pass`] scans the anchors and verifies each with its rule (steps 2
//! and 3), [`decide`] decides the candidates that depend on other spans (step 4), the
//! homes of R27 first in the left-to-right [`sweep`]; [`decisions`] records what those
//! decisions took, [`homes`] holds the home candidates they read, and [`windowed`] the
//! bookkeeping of a window.
//!
//! [`Verdict`]: super::growth::Verdict

mod decide;
mod decisions;
mod homes;
mod pass;
mod sweep;
mod windowed;

use pass::PatternPass;
use windowed::{Decision, Deferred, Window};

use super::Rule;
use super::anchors::AnchorScanner;
use super::exact::ExactValues;
use super::invisible::View;
use super::span::{Span, merge};
use super::window::{Frame, Settled, TAIL_PATTERNS};
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
    let Scanned {
        immediate,
        decided,
        deferred,
        covered_from,
    } = match anchors {
        Some(anchors) => scan_window(
            anchors,
            values,
            &view,
            frame,
            &mut window,
            &mut pass_counts,
            &mut work,
        ),
        None => Scanned::values_only(values.find(text, &mut work)),
    };
    let until = window.settle(text, deferred);
    if until <= frame.from && !frame.last {
        return Settled::no_progress(frame, work);
    }
    let context_start = until.saturating_sub(frame.context_len);
    let read_by_urls = read_by_urls(&immediate, &decided, until);
    let carried = carried_to_next(&window, &read_by_urls, &view, until, context_start);
    // In the last window everything is final, spans reaching the end included.
    let bound = if frame.last { usize::MAX } else { until };
    let spans = spans_before(immediate, window.open, &decided, bound);
    work.candidates += pass_counts.iter().sum::<u64>();
    let counts = if frame.count {
        let mut counts = window.counts_before(bound, &decided);
        counts[Rule::ExactValue.index()] = values.count_starting_in(text, frame.from..until);
        counts
    } else {
        [0; Rule::COUNT]
    };
    let covered_until = window.covered_before(bound, covered_from);
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

/// What the scan of a window found, in view positions, before the window is cut.
struct Scanned {
    /// The spans of rules that need nothing else to decide, merged.
    immediate: Vec<Span>,
    /// The candidates decided at the end and taken.
    decided: Vec<Decision>,
    /// Every candidate decided at the end, taken or not.
    deferred: Vec<Deferred>,
    /// Per rule, where the last span of a candidate found before the window's `from` ends.
    covered_from: [usize; Rule::COUNT],
}

impl Scanned {
    /// A window without pattern rules: the configured values' spans (`found`) alone.
    fn values_only(found: Vec<Span>) -> Scanned {
        Scanned {
            immediate: found,
            decided: Vec::new(),
            deferred: Vec::new(),
            covered_from: [0; Rule::COUNT],
        }
    }
}

/// Scans a window with the pattern rules, from where earlier windows left them: the
/// anchors inside each rule's last span are skipped, and the spans still growing go on.
fn scan_window(
    anchors: &AnchorScanner,
    values: &ExactValues,
    view: &View<'_>,
    frame: &Frame,
    window: &mut Window,
    pass_counts: &mut [u64; Rule::COUNT],
    work: &mut Work,
) -> Scanned {
    let text = view.text();
    let mut pass = PatternPass::new(text, anchors, values, Some(window), work);
    for (index, until) in frame.covered_until.iter().enumerate() {
        pass.covered_until[index] = view.to_view_position(*until);
    }
    pass.resume(&frame.resumes, work);
    anchors.scan(text, work, |position, anchor, work| {
        pass.on_anchor(anchor, position, work)
    });
    let finished = pass.finish(pass_counts, work);
    Scanned {
        immediate: finished.immediate,
        decided: finished.decided,
        deferred: finished.deferred,
        covered_from: frame
            .covered_until
            .map(|until| view.to_view_position(until)),
    }
}

/// What R27's URL check reads in the next look-behind: the spans that need nothing else
/// to decide, and the homes the left-to-right sweep took (a home's name may run into a
/// URL's scheme).
fn read_by_urls(immediate: &[Span], decided: &[Decision], until: usize) -> Vec<Span> {
    let roots = decided
        .iter()
        .filter(|decision| decision.swept && decision.settled_by(until) && decision.anchor < until);
    immediate
        .iter()
        .copied()
        .chain(roots.map(|decision| decision.span))
        .collect()
}

/// The window's spans that start before `bound`, merged: those that need nothing else to
/// decide, the span open at the window's start and the decisions settled by `bound`.
fn spans_before(
    immediate: Vec<Span>,
    open: Option<Span>,
    decided: &[Decision],
    bound: usize,
) -> Vec<Span> {
    merge(
        immediate
            .into_iter()
            .chain(open)
            .chain(
                decided
                    .iter()
                    .filter(|decision| decision.settled_by(bound))
                    .map(|decision| decision.span),
            )
            .filter(|span| span.start < bound)
            .collect(),
    )
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

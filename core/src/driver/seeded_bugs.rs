//! The seeded bugs of the driver's steps (SPEC §11): the offer, the turn limit, the order of
//! `run.started`'s tools, the prompt's redaction, the transcript a request shows, the results
//! entered, and the journal: the prompt journaled, the chart's commit, and what a resumed run
//! keeps. Each takes the correct value and returns the broken one when its fault
//! is on in the run's options ([`RunOptions::faults`](super::RunOptions::faults)); each is
//! called on the one line of the driver that computes that value.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::sync::Arc;

use super::Cut;
use super::limits::TURNS_HARD_MAX;
use crate::envelope::codes;
use crate::fault::{Fault, FaultSet};
use crate::guard::SecretGuard;
use crate::policy::RunPolicy;
use crate::redact::{LOCAL_PATH, Redactor, Span};
use crate::schedule::CallResult;
use crate::session::{Message, Record};

/// `readonly-offers-writes` (I1): the offer is resolved as if the run could write, so a
/// read-only run's tool list includes destructive tools. Correct, it is the run's policy.
pub(super) fn offer_policy(faults: FaultSet, policy: &RunPolicy) -> Cow<'_, RunPolicy> {
    if !crate::fault!(faults, Fault::ReadonlyOffersWrites) {
        return Cow::Borrowed(policy);
    }
    Cow::Owned(RunPolicy {
        read_only: false,
        disabled: policy.disabled.clone(),
    })
}

/// `no-turn-limit` (I10): the run's `turns_max` is not enforced; only [`TURNS_HARD_MAX`]
/// stops it.
pub(super) fn turn_limit(faults: FaultSet, turns_max: u32) -> u32 {
    if crate::fault!(faults, Fault::NoTurnLimit) {
        return TURNS_HARD_MAX;
    }
    turns_max
}

/// `nondeterministic-order` (I11): the tool names of `run.started` go through a randomly
/// seeded `HashSet`, so their order changes from one run to the next.
pub(super) fn hash_order(faults: FaultSet, names: Vec<Arc<str>>) -> Vec<Arc<str>> {
    if !crate::fault!(faults, Fault::NondeterministicOrder) {
        return names;
    }
    let shuffled: HashSet<Arc<str>> = names.into_iter().collect();
    shuffled.into_iter().collect()
}

/// The prompt's redaction (R15), broken two ways. Takes the correctly redacted and guarded
/// prompt, the raw one, the run's redactor and its guard.
///
/// - `redact-patterns-before-values` (I8): the prompt is redacted in two passes, the pattern
///   rules first and the configured values on what they left, so a value that a pattern
///   span cut through survives in fragments; the guard does not look again.
/// - `redact-windows-case-sensitive` (I8): R27's `Users` segment counts only when spelled
///   `Users`, so every `[LOCAL_PATH]` span whose text has that segment in another case
///   (`c:\users\…`, `/mnt/c/USERS/…`) stays as it was.
pub(super) fn prompt_redaction(
    faults: FaultSet,
    redacted: String,
    prompt: &str,
    redactor: &Redactor,
    guard: &SecretGuard,
) -> String {
    if crate::fault!(faults, Fault::RedactPatternsBeforeValues) {
        // The run's redactor compiled the same pattern rules, so this cannot fail here.
        let Ok(patterns) = Redactor::new(Vec::<String>::new()) else {
            return redacted;
        };
        let patterns_first = patterns.redact(prompt);
        return redactor
            .values_only_of()
            .redact(&patterns_first)
            .into_owned();
    }
    if crate::fault!(faults, Fault::RedactWindowsCaseSensitive) {
        let spans = redactor.redact_spans(prompt);
        let kept = spans
            .into_iter()
            .filter(|span| !has_users_in_another_case(prompt, span));
        return guard.text(&render_spans(prompt, kept)).into_owned();
    }
    redacted
}

/// Whether `span` is a home path alone whose `Users` segment is spelled in another case.
fn has_users_in_another_case(text: &str, span: &Span) -> bool {
    let covered = text.as_bytes().get(span.range()).unwrap_or_default();
    span.placeholder() == LOCAL_PATH
        && covered
            .split(|&byte| byte == b'\\' || byte == b'/')
            .any(|segment| segment.eq_ignore_ascii_case(b"users") && segment != b"Users")
}

/// `text` with each of `spans` (in order, apart, on character boundaries) replaced by its
/// placeholder.
fn render_spans(text: &str, spans: impl Iterator<Item = Span>) -> String {
    let mut rendered = String::with_capacity(text.len());
    let mut written = 0;
    for span in spans {
        rendered.push_str(text.get(written..span.start).unwrap_or_default());
        rendered.push_str(span.placeholder());
        written = span.end;
    }
    rendered.push_str(text.get(written..).unwrap_or_default());
    rendered
}

/// `redact-first-turn-only` (I8): the transcript a request shows. The first turn shows the
/// redacted prompt; every later turn resends the raw prompt in place of the run's redacted
/// user message (the last one of the transcript). The store and the events keep the
/// redacted text.
pub(super) fn request_transcript<'t>(
    faults: FaultSet,
    transcript: &'t [Arc<Message>],
    prompt: &str,
    turn: u32,
) -> Cow<'t, [Arc<Message>]> {
    if turn == 0 || !crate::fault!(faults, Fault::RedactFirstTurnOnly) {
        return Cow::Borrowed(transcript);
    }
    let mut shown = transcript.to_vec();
    let user = shown
        .iter_mut()
        .rev()
        .find(|message| matches!(***message, Message::User { .. }));
    if let Some(user) = user {
        *user = Arc::new(Message::User {
            text: prompt.to_owned(),
        });
    }
    Cow::Owned(shown)
}

/// `drop-result-on-cancel`, `duplicate-id-overwrite` (I6): the results of a batch as they
/// enter the transcript, with some lost. Under the first, every `ABORTED` result is dropped,
/// so a cancelled call has none; under the second, results are keyed by call id, so a
/// repeated id's result replaces the first one in place and the repeat has none.
pub(super) fn results_entered(faults: FaultSet, results: Vec<CallResult>) -> Vec<CallResult> {
    let mut results = results;
    if crate::fault!(faults, Fault::DropResultOnCancel) {
        results.retain(|result| result.result.error_code() != Some(codes::ABORTED));
    }
    if crate::fault!(faults, Fault::DuplicateIdOverwrite) {
        let mut keyed: Vec<CallResult> = Vec::with_capacity(results.len());
        for result in results {
            match keyed.iter_mut().find(|kept| kept.call_id == result.call_id) {
                Some(kept) => *kept = result,
                None => keyed.push(result),
            }
        }
        results = keyed;
    }
    results
}

/// `raw-prompt-journaled` (I18): the run's start is journaled with the raw prompt, before its
/// redaction. Correct, it holds the prompt as redacted (R15, R30).
pub(super) fn journaled_prompt(faults: FaultSet, redacted: &str, raw: &str) -> String {
    if crate::fault!(faults, Fault::RawPromptJournaled) {
        return raw.to_owned();
    }
    redacted.to_owned()
}

/// `result-apart-from-write` (I15): a batch's chart change commits in a transaction of its
/// own, before the results that report it (R31 wants one).
pub(super) fn apart_from_write(faults: FaultSet) -> bool {
    crate::fault!(faults, Fault::ResultApartFromWrite)
}

/// `readonly-lost-on-resume` (I19): a resumed run forgets that it is read-only. Correct, it
/// keeps the policy journaled at its start (R34).
pub(super) fn resumed_read_only(faults: FaultSet, read_only: bool) -> bool {
    read_only && !crate::fault!(faults, Fault::ReadonlyLostOnResume)
}

/// `turns-reset-on-resume` (I19): a resumed run counts its batches from zero. Correct, it
/// keeps the count its journal shows (R34).
pub(super) fn resumed_batches(faults: FaultSet, batches: u32) -> u32 {
    if crate::fault!(faults, Fault::TurnsResetOnResume) {
        return 0;
    }
    batches
}

/// `write-replayed-on-resume` (I15): a run cut after a batch's results committed resumes
/// from the reply before them, as if they were not there, so the batch (its chart writes
/// too) runs again. Correct, it is the cut the journal shows.
pub(super) fn resumed_cut(faults: FaultSet, steps: &[Record], cut: Cut) -> Cut {
    if !crate::fault!(faults, Fault::WriteReplayedOnResume) || !matches!(cut, Cut::Ask) {
        return cut;
    }
    let last_reply = steps.iter().rev().find_map(|record| match record {
        Record::Message { message } => match &**message {
            Message::Assistant { calls, .. } if !calls.is_empty() => Some(Arc::clone(calls)),
            _ => None,
        },
        _ => None,
    });
    match last_reply {
        Some(calls) => Cut::Batch {
            calls,
            intents: BTreeSet::new(),
            refusals: BTreeMap::new(),
        },
        None => cut,
    }
}

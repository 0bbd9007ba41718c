//! I17. Every call still has exactly one result, in order, after any number of resumes; a
//! call of R32 cut by a crash gets `OUTCOME_UNKNOWN`, never a rerun, never no result.
//!
//! In the journal the session ends with, every reply with calls is followed by one result
//! per call, in the order sent, with the call's id and name (the reply past the turn limit
//! too). A call of `code_interpreter` whose intent a reopened store held with no result has
//! exactly `OUTCOME_UNKNOWN` (SPEC §4: its message, not retryable, its hint); no other call
//! has it. A call the guard changed whose batch a crash cut (`DurableCheck::cut_changed`)
//! has exactly `ABORTED`.

use ward_core::envelope::ToolResult;
use ward_core::session::{Message, Record};
use ward_core::tool::ToolCall;

use super::{DurableBreach, DurableCheck, runs};
use crate::oracle::Breach;

/// `OUTCOME_UNKNOWN` as SPEC §4 writes it: message, retryable, hint.
const OUTCOME_UNKNOWN: (&str, &str, bool, &str) = (
    "OUTCOME_UNKNOWN",
    "The tool may or may not have run before the runtime stopped.",
    false,
    "Check the outside world before calling the tool again.",
);

/// Checks I17: in every run of the journal, every reply's calls are followed by one result
/// each, in order, and a call a crash cut has the result R32 (or the guard's `ABORTED`) fixes.
pub fn check(check: &DurableCheck<'_>, breaches: &mut Vec<DurableBreach>) {
    if check.crashed.failure.is_some() {
        return;
    }
    for (run, records) in runs(&check.crashed.journal).into_iter().enumerate() {
        let run = u32::try_from(run).unwrap_or(u32::MAX);
        let messages: Vec<&Message> = records
            .iter()
            .filter_map(|record| match record {
                Record::Message { message } => Some(&**message),
                _ => None,
            })
            .collect();
        let mut at = 0;
        while at < messages.len() {
            let Message::Assistant { calls, .. } = messages[at] else {
                at += 1;
                continue;
            };
            let results = &messages[at + 1..];
            if let Some(found) = (calls.iter().enumerate())
                .find_map(|(index, call)| result_of(check, run, index, call, results.get(index)))
            {
                breaches.push(found);
                return;
            }
            at += 1 + calls.len();
        }
    }
}

/// What is wrong with the result of call `index` of a reply of `run`, if anything.
fn result_of(
    check: &DurableCheck<'_>,
    run: u32,
    index: usize,
    call: &ToolCall,
    stored: Option<&&Message>,
) -> Option<DurableBreach> {
    let breach = |breach: Breach, message: String| Some(DurableBreach { breach, message });
    let Some(Message::Tool {
        call_id,
        name,
        result,
    }) = stored.copied()
    else {
        let message = format!(
            "run {run}: call {index} ({}) of a reply has no result",
            call.id
        );
        return breach(Breach::NoResultAfterResume, message);
    };
    if **call_id != *call.id || **name != *call.name {
        let message = format!(
            "run {run}: the result at position {index} is for {call_id} ({name}), not for {} ({})",
            call.id, call.name
        );
        return breach(Breach::ResultOrderAfterResume, message);
    }
    let got = result.error_code().unwrap_or("a success");
    if check.cut_changed.contains(&(run, call.id.clone())) {
        if is_aborted(result) {
            return None;
        }
        let message = format!(
            "run {run}: call {} ({}), which the guard changed, was cut by a crash and got {got} instead of ABORTED",
            call.id, call.name,
        );
        return breach(Breach::GuardedCallNotAborted, message);
    }
    // Two checks, so that shrinking keeps the one that failed.
    match (
        check.cut_outside.contains(&(run, call.id.clone())),
        is_outcome_unknown(result),
    ) {
        (true, false) => breach(
            Breach::OutcomeUnknownMissing,
            format!(
                "run {run}: code_interpreter call {} was cut by a crash after its intent and got {got} instead of OUTCOME_UNKNOWN",
                call.id
            ),
        ),
        (false, true) => breach(
            Breach::OutcomeUnknownWithoutCut,
            format!(
                "run {run}: call {} ({}) got OUTCOME_UNKNOWN, though no crash cut it after an intent",
                call.id, call.name
            ),
        ),
        _ => None,
    }
}

/// `ABORTED` as SPEC §4 writes it.
fn is_aborted(result: &ToolResult) -> bool {
    result.error().is_some_and(|error| {
        error.code == "ABORTED"
            && error.message == "The run ended before this tool call finished."
            && error.retryable
            && error.recommended_action == "Start a new run."
    })
}

fn is_outcome_unknown(result: &ToolResult) -> bool {
    let (code, message, retryable, hint) = OUTCOME_UNKNOWN;
    result.error().is_some_and(|error| {
        error.code == code
            && error.message == message
            && error.retryable == retryable
            && error.recommended_action == hint
    })
}

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

use super::{DurableBreach, DurableCheck, runs};
use crate::oracle::Breach;

/// `OUTCOME_UNKNOWN` as SPEC §4 writes it: message, retryable, hint.
const OUTCOME_UNKNOWN: (&str, &str, bool, &str) = (
    "OUTCOME_UNKNOWN",
    "The tool may or may not have run before the runtime stopped.",
    false,
    "Check the outside world before calling the tool again.",
);

/// Checks I17.
pub fn check(check: &DurableCheck<'_>, breaches: &mut Vec<DurableBreach>) {
    if check.crashed.failure.is_some() {
        return;
    }
    let mut breach = |breach: Breach, message: String| {
        breaches.push(DurableBreach { breach, message });
    };
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
            for (index, call) in calls.iter().enumerate() {
                let Some(Message::Tool {
                    call_id,
                    name,
                    result,
                }) = messages.get(at + 1 + index)
                else {
                    breach(
                        Breach::NoResultAfterResume,
                        format!(
                            "run {run}: call {index} ({}) of a reply has no result",
                            call.id
                        ),
                    );
                    return;
                };
                if **call_id != *call.id || **name != *call.name {
                    breach(
                        Breach::ResultOrderAfterResume,
                        format!(
                            "run {run}: the result at position {index} is for {call_id} ({name}), not for {} ({})",
                            call.id, call.name
                        ),
                    );
                    return;
                }
                if check.cut_changed.contains(&(run, call.id.clone())) {
                    if !is_aborted(result) {
                        breach(
                            Breach::GuardedCallNotAborted,
                            format!(
                                "run {run}: call {} ({}), which the guard changed, was cut by a crash and got {} instead of ABORTED",
                                call.id,
                                call.name,
                                result.error_code().unwrap_or("a success"),
                            ),
                        );
                        return;
                    }
                    continue;
                }
                let cut = check.cut_outside.contains(&(run, call.id.clone()));
                if cut != is_outcome_unknown(result) {
                    // Two checks, so that shrinking keeps the one that failed.
                    if cut {
                        breach(
                            Breach::OutcomeUnknownMissing,
                            format!(
                                "run {run}: code_interpreter call {} was cut by a crash after its intent and got {} instead of OUTCOME_UNKNOWN",
                                call.id,
                                result.error_code().unwrap_or("a success"),
                            ),
                        );
                    } else {
                        breach(
                            Breach::OutcomeUnknownWithoutCut,
                            format!(
                                "run {run}: call {} ({}) got OUTCOME_UNKNOWN, though no crash cut it after an intent",
                                call.id, call.name
                            ),
                        );
                    }
                    return;
                }
            }
            at += 1 + calls.len();
        }
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

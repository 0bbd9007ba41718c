//! I17. Every call still has exactly one result, in order, after any number of resumes; a
//! call of R32 cut by a crash gets `OUTCOME_UNKNOWN`, never a rerun, never no result.
//!
//! In the messages a run kept (the story's: its last transcript and what it acknowledged
//! after it, over every process), every reply with calls is followed by one result per call, in the order sent, with the call's id and name
//! (the reply past the turn limit too), and no result stands anywhere else; only a run's
//! end that no transcript shows may stop short of its last batch's results (`Story::end_unseen`). A call of
//! `code_interpreter` whose body started in a process a crash then killed before its result
//! was delivered has exactly `OUTCOME_UNKNOWN` (SPEC §4: its message, not retryable, its
//! hint); no call but a cut call of R32 has it.

use ward_core::session::Message;
use ward_core::tool::ToolCall;

use super::{DurableBreach, DurableCheck, OUTSIDE_EFFECT_TOOLS, is_outcome_unknown};
use crate::oracle::Breach;

/// Checks I17: in every run, every reply's calls are followed by one result each, in order,
/// and a call a crash cut has the result R32 fixes.
pub fn check(check: &DurableCheck<'_>, breaches: &mut Vec<DurableBreach>) {
    if check.crashed.failure.is_some() {
        return;
    }
    let found = (check.after.kept.iter().enumerate()).find_map(|(run, kept)| {
        let messages: Vec<&Message> = kept.iter().map(|message| &**message).collect();
        in_order(check, run, &messages)
    });
    breaches.extend(found);
}

/// The first fault of `run`'s acknowledged messages.
fn in_order(check: &DurableCheck<'_>, run: usize, messages: &[&Message]) -> Option<DurableBreach> {
    let mut at = 0;
    while at < messages.len() {
        match messages[at] {
            Message::Assistant { calls, .. } => {
                let results = &messages[at + 1..];
                // A run's end no transcript shows: its last batch's results may be unseen.
                let unseen = check.after.end_unseen(run) && results.len() < calls.len();
                let found = (calls.iter().enumerate())
                    .take(if unseen { results.len() } else { calls.len() })
                    .find_map(|(index, call)| {
                        result_of(check, run, index, call, results.get(index))
                    });
                if found.is_some() {
                    return found;
                }
                at += 1 + calls.len();
            }
            Message::Tool { call_id, name, .. } => {
                return Some(DurableBreach {
                    breach: Breach::ResultWithoutCall,
                    message: format!(
                        "run {run}: message {at} is a result for {call_id} ({name}), where no call awaits one"
                    ),
                });
            }
            _ => at += 1,
        }
    }
    None
}

/// What is wrong with the result of call `index` of a reply of `run`, if anything.
fn result_of(
    check: &DurableCheck<'_>,
    run: usize,
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
    let cut = check
        .cut
        .get(call.id.as_str())
        .filter(|_| OUTSIDE_EFFECT_TOOLS.contains(&call.name.as_str()));
    let unknown = is_outcome_unknown(result);
    // Two checks, so that shrinking keeps the one that failed.
    if cut.is_some_and(|cut| cut.ran) && !unknown {
        let message = format!(
            "run {run}: code_interpreter call {} started, a crash cut it, and it got {got} instead of OUTCOME_UNKNOWN",
            call.id
        );
        return breach(Breach::OutcomeUnknownMissing, message);
    }
    if unknown && cut.is_none() {
        let message = format!(
            "run {run}: call {} ({}) got OUTCOME_UNKNOWN, though no crash cut it",
            call.id, call.name
        );
        return breach(Breach::OutcomeUnknownWithoutCut, message);
    }
    None
}

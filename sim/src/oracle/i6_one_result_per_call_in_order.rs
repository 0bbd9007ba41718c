//! I6. Each batch gets exactly one result per call, in the order sent, with matching ids —
//! also with failures, duplicate ids, provider errors, limits and cancellation.
//!
//! R17 and SPEC §4: the event stream carries one `tool.finished` per call, and the session
//! store follows each assistant message holding n calls with their n results, in call order,
//! with the same ids. So does every provider request that gives the model a batch's results:
//! "results go back in the order sent" is a promise about what the model reads, and a runtime
//! may store its records in one order and send them in another.
//!
//! A call's `tool.started`, when it has one, comes once and before its `tool.finished` (R23's
//! events of one call; PROTOCOL.md): a runtime that reports a call started after its result,
//! or twice, has its events out of turn (in the order of its events' sequence numbers, R23).
//!
//! A breach rests on R3, R16, R17 and R19, and on R20 (the stop) too unless the batch is one
//! of a run that ended `run.completed` ([`Invariant::rules_unstopped`]): a runtime that keeps
//! every rule but R20 is judged on the runs no stop touched.

use ward_core::events::EventKind;
use ward_core::session::Message;
use ward_core::tool::ToolCall;

use super::{At, Breach, Findings, Invariant, RunCheck};
use crate::view::{BatchView, RunView};

/// What is wrong with call `index`'s `tool.started` events, if anything: R23's events of a
/// call are at most one `tool.started`, before its one `tool.finished` (PROTOCOL.md: a call
/// never taken up has only its `tool.finished`).
fn start_out_of_turn(batch: &BatchView<'_>, index: usize) -> Option<String> {
    let mut starts = (batch.started.iter()).filter(|&&(_, started)| started == index);
    let finished = batch.finished_of(index).next()?.seq;
    let &(first, _) = starts.next()?;
    if let Some(&(second, _)) = starts.next() {
        return Some(format!(
            "call {index} of the batch has a second tool.started event (events {first} and {second})"
        ));
    }
    (first > finished).then(|| {
        format!(
            "call {index} of the batch has its tool.started (event {first}) after its tool.finished (event {finished})"
        )
    })
}

pub(super) fn check(run: &RunCheck<'_>, findings: &mut Findings<'_>) {
    let view = run.view;
    let rules_of = |calls: Option<&[ToolCall]>| rests_on(view, calls);
    for batch in &view.batches {
        if batch.calls.len() >= 2 || view.was_stopped() || view.hit_turn_limit() {
            findings.arm(Invariant::I6);
        }
        for (index, call) in batch.calls.iter().enumerate() {
            let count = batch.finished_of(index).count();
            if count != 1 {
                let explanation =
                    format!("call {index} of the batch has {count} tool.finished events, not 1");
                let at = At::Call(batch.turn, &call.id);
                let rules = rules_of(None);
                return findings.report_resting_on(Breach::ResultCount, at, explanation, rules);
            }
            if let Some(explanation) = start_out_of_turn(batch, index) {
                let at = At::Call(batch.turn, &call.id);
                let rules = rules_of(None);
                return findings.report_resting_on(Breach::StartOutOfTurn, at, explanation, rules);
            }
        }
    }
    if let Some((explanation, calls)) =
        results_mismatch(view.appends.iter().map(|message| &***message))
    {
        let breach = Breach::StoredResultsMismatch;
        let rules = rules_of(Some(calls));
        return findings.report_resting_on(breach, At::Run, explanation, rules);
    }
    for request in &view.requests {
        // A request's new messages: the batch the turn before entered, after the messages the
        // previous request already gave.
        let sent = request.appended.iter().map(|message| &**message);
        if let Some((explanation, calls)) = results_mismatch(sent) {
            let explanation = format!(
                "the request of turn {} attempt {}: {explanation}",
                request.turn, request.attempt
            );
            let (breach, at) = (Breach::SentResultsMismatch, At::Turn(request.turn));
            let rules = rules_of(Some(calls));
            return findings.report_resting_on(breach, at, explanation, rules);
        }
    }
}

/// The rules a breach rests on (P2): a batch of this run, which ended `run.completed`, rests
/// on no stop rule ([`Invariant::rules_unstopped`]); a batch of a run that a stop ended, or
/// of an earlier run of the session (the transcript a run starts with), on all of I6's.
fn rests_on(view: &RunView<'_>, calls: Option<&[ToolCall]>) -> &'static [&'static str] {
    let completed = matches!(
        view.terminal().map(|event| &event.kind),
        Some(EventKind::RunCompleted { .. })
    );
    let mine = calls.is_none_or(|calls| view.batches.iter().any(|batch| *batch.calls == *calls));
    if completed && mine {
        Invariant::I6.rules_unstopped()
    } else {
        Invariant::I6.rules()
    }
}

/// The first assistant message with calls in `messages` whose calls are not followed by one
/// result each, in call order, with the calls' ids: what is wrong, and those calls.
fn results_mismatch<'m>(
    messages: impl Iterator<Item = &'m Message>,
) -> Option<(String, &'m [ToolCall])> {
    let messages: Vec<&Message> = messages.collect();
    for (position, message) in messages.iter().enumerate() {
        let Message::Assistant { calls, .. } = message else {
            continue;
        };
        if calls.is_empty() {
            continue;
        }
        let results: Vec<&str> = messages[position + 1..]
            .iter()
            .map_while(|message| match message {
                Message::Tool { call_id, .. } => Some(&**call_id),
                _ => None,
            })
            .collect();
        let ids: Vec<&str> = calls.iter().map(|call| call.id.as_str()).collect();
        if results != ids {
            let explanation = format!(
                "the batch of {} calls got {} results, ids {:?} for calls {:?}",
                ids.len(),
                results.len(),
                abbreviate(&results),
                abbreviate(&ids)
            );
            return Some((explanation, calls));
        }
    }
    None
}

/// The first few ids, each cut to 24 bytes (an id may be 161 characters long).
fn abbreviate<'a>(ids: &[&'a str]) -> Vec<&'a str> {
    ids.iter()
        .take(6)
        .map(|id| id.get(..24).unwrap_or(id))
        .collect()
}

#[cfg(test)]
mod tests {
    use ward_core::envelope::{ToolError, ToolResult};
    use ward_core::events::{Event, EventKind};

    use crate::oracle::Breach;
    use crate::world::Record;

    /// The breaches of a batch of two calls whose events are `events`: (call, finished).
    fn judged(events: &[(usize, bool)]) -> Vec<Breach> {
        let (calls, reply) = crate::oracle::reply_calling(&["settings_get"; 2]);
        let mut records = vec![reply];
        for (seq, &(index, finished)) in (0u64..).zip(events) {
            let (call_id, name) = (calls[index].id.as_str().into(), "settings_get".into());
            let kind = match finished {
                false => EventKind::ToolStarted {
                    index,
                    call_id,
                    name,
                },
                true => EventKind::ToolFinished {
                    index,
                    call_id,
                    name,
                    result: ToolResult::failure(ToolError::too_many_calls(1)),
                },
            };
            let time_ms = 0;
            records.push(Record::Event(Event { seq, time_ms, kind }));
        }
        crate::oracle::breaches_of_run(records)
    }

    #[test]
    fn a_start_comes_at_most_once_and_before_the_result() {
        // The second call past the cap: only its `tool.finished`.
        let in_turn = judged(&[(0, false), (0, true), (1, true)]);
        assert!(!in_turn.contains(&Breach::StartOutOfTurn), "{in_turn:?}");
        let late = judged(&[(0, false), (0, true), (1, true), (1, false)]);
        assert!(late.contains(&Breach::StartOutOfTurn), "{late:?}");
        let twice = judged(&[(0, false), (0, false), (0, true), (1, true)]);
        assert!(twice.contains(&Breach::StartOutOfTurn), "{twice:?}");
    }
}

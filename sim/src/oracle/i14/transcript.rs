//! R15, R16, R22 and R23 as the store and the provider see them: the opening of the event
//! stream, the prompt, and the transcript the session store keeps and each request resends.

use ward_core::envelope::ToolResult;
use ward_core::events::EventKind;
use ward_core::session::Message;
use ward_core::tool::ToolCall;

use super::{Walk, Where, disagree};
use crate::oracle::{Breach, RunCheck};

/// R23 and R15 at the start of a run: the events are numbered from 0 without a gap and never
/// go back in time; the run opens with `run.started` and `user.message.created` at 0 ms; the
/// prompt that event announces (redacted) is the session store's first record of the run and
/// the last message of the provider's first request. Returns the prompt.
pub(super) fn start_events<'a>(run: &RunCheck<'a>) -> Walk<'a, &'a str> {
    let view = run.view;
    let events = &view.events;
    let numbered = events
        .iter()
        .enumerate()
        .all(|(index, event)| event.seq == index as u64);
    let in_time = events
        .windows(2)
        .all(|pair| pair[0].time_ms <= pair[1].time_ms);
    let opening = match (events.first(), events.get(1)) {
        (Some(first), Some(second)) if first.time_ms == 0 && second.time_ms == 0 => {
            match (&first.kind, &second.kind) {
                (EventKind::RunStarted { .. }, EventKind::UserMessageCreated { text }) => {
                    Some(text.as_str())
                }
                _ => None,
            }
        }
        _ => None,
    };
    let Some(prompt) = opening.filter(|_| numbered && in_time) else {
        let explanation = "the model expected events numbered from 0 in time order, opening with run.started and user.message.created at 0 ms".to_owned();
        return disagree(Breach::ModelEvents, Where::Run, explanation);
    };
    let is_prompt = |message: &Message| matches!(message, Message::User { text } if text == prompt);
    let stored = view
        .appends
        .first()
        .is_some_and(|message| is_prompt(message));
    let sent = view.requests.first().is_none_or(|request| {
        request
            .appended
            .last()
            .is_some_and(|message| is_prompt(message))
    });
    if !(stored && sent) {
        let explanation = format!(
            "the model expected the announced prompt to be stored first ({stored}) and to end the first request ({sent})"
        );
        return disagree(Breach::ModelEvents, Where::Run, explanation);
    }
    Ok(prompt)
}

/// R16, R22 and R23 for the transcript: the session store keeps, in order, the prompt, then
/// each reply the runtime took as its `assistant.message.completed` event announced it,
/// followed by its calls' results in the order sent as their `tool.finished` events carried
/// them; each request resends the previous request's transcript whole, a retry adds nothing,
/// and the first attempt of a turn adds exactly what the turn before entered.
pub(super) fn transcript<'a>(run: &RunCheck<'a>, prompt: &'a str) -> Walk<'a, ()> {
    let view = run.view;
    let (expected, turn_starts) = expected_transcript(run, prompt);
    let stored = &view.appends;
    let differs = (0..stored.len().max(expected.len())).find(|&at| {
        match (stored.get(at), expected.get(at)) {
            (Some(message), Some(expected)) => !expected.matches(message),
            _ => true,
        }
    });
    if let Some(at) = differs {
        let what = match (stored.get(at), expected.get(at)) {
            (Some(message), Some(expected)) => format!(
                "record {at} is {} where the model expected {}",
                describe(message),
                expected.describe()
            ),
            (Some(message), None) => format!("record {at}, {}, is one more", describe(message)),
            (None, Some(expected)) => format!("record {at}, {}, is missing", expected.describe()),
            (None, None) => String::new(),
        };
        let explanation = format!(
            "the session store holds {} records of the run, the model expected {} (the prompt, then each reply and its results in the order sent, as the events announced them): {what}",
            stored.len(),
            expected.len()
        );
        return disagree(Breach::ModelEvents, Where::Run, explanation);
    }
    resent(run, &expected, &turn_starts)
}

/// A stored record in a few words: its kind, and a reply's call ids or a result's call, tool
/// and code.
fn describe(message: &Message) -> String {
    match message {
        Message::User { .. } => "a user message".to_owned(),
        Message::Assistant { calls, .. } => reply(calls),
        Message::Tool {
            call_id,
            name,
            result,
        } => tool_result(call_id, name, result),
    }
}

fn reply(calls: &[ToolCall]) -> String {
    let ids: Vec<&str> = calls.iter().map(|call| call.id.as_str()).collect();
    format!("a reply with calls {ids:?}")
}

fn tool_result(call_id: &str, name: &str, result: &ToolResult) -> String {
    format!(
        "the result of call {call_id:?} ({name}, {})",
        result.error_code().unwrap_or("OK")
    )
}

/// The transcript the events announce: the prompt, then each reply followed by its calls'
/// results in the order sent; and where each turn's reply is in it.
fn expected_transcript<'a>(run: &RunCheck<'a>, prompt: &'a str) -> (Vec<Expected<'a>>, Vec<usize>) {
    let mut expected: Vec<Expected<'a>> = vec![Expected::User(prompt)];
    let mut turn_starts: Vec<usize> = Vec::new();
    let mut results: Vec<(usize, Expected<'a>)> = Vec::new();
    let enter = |expected: &mut Vec<Expected<'a>>, results: &mut Vec<(usize, Expected<'a>)>| {
        results.sort_by_key(|&(index, _)| index);
        expected.extend(results.drain(..).map(|(_, message)| message));
    };
    for event in &run.view.events {
        match &event.kind {
            EventKind::AssistantMessageCompleted { text, calls, .. } => {
                enter(&mut expected, &mut results);
                turn_starts.push(expected.len());
                expected.push(Expected::Assistant(text, calls));
            }
            EventKind::ToolFinished {
                index,
                call_id,
                name,
                result,
            } => results.push((*index, Expected::Tool(call_id, name, result))),
            _ => {}
        }
    }
    enter(&mut expected, &mut results);
    (expected, turn_starts)
}

/// Each request resends the previous request's transcript whole; a retry adds nothing, and
/// the first attempt of a turn adds exactly what the turn before entered (`expected` from
/// that turn's reply to the next one's, `turn_starts`).
fn resent<'a>(
    run: &RunCheck<'a>,
    expected: &[Expected<'a>],
    turn_starts: &[usize],
) -> Walk<'a, ()> {
    let mut previous_len: Option<usize> = None;
    for request in &run.view.requests {
        let added: &[Expected<'a>] = match (request.turn, request.attempt) {
            (0, 0) => &[],
            (_, attempt) if attempt > 0 => &[],
            (turn, _) => {
                let from = turn_starts.get(turn as usize - 1).copied();
                let to = turn_starts
                    .get(turn as usize)
                    .copied()
                    .unwrap_or(expected.len());
                from.map_or(&[][..], |from| &expected[from..to])
            }
        };
        let first = previous_len.is_none();
        let resends = previous_len.is_none_or(|length| request.kept == length);
        let adds = first
            || (request.appended.len() == added.len()
                && request
                    .appended
                    .iter()
                    .zip(added)
                    .all(|(message, expected)| expected.matches(message)));
        if !(resends && adds) {
            let explanation = format!(
                "the request of turn {} attempt {} keeps {} messages and adds {}; the model expected it to keep {} and add the {} the turn before entered",
                request.turn,
                request.attempt,
                request.kept,
                request.appended.len(),
                previous_len.unwrap_or(0),
                added.len()
            );
            return disagree(Breach::ModelEvents, Where::Turn(request.turn), explanation);
        }
        previous_len = Some(request.kept + request.appended.len());
    }
    Ok(())
}

/// A message the model expects in the transcript, borrowed from the event that announced it.
enum Expected<'a> {
    User(&'a str),
    Assistant(&'a str, &'a [ToolCall]),
    Tool(&'a str, &'a str, &'a ToolResult),
}

impl Expected<'_> {
    /// The record in a few words, as [`describe`] gives a stored one.
    fn describe(&self) -> String {
        match self {
            Expected::User(_) => "the prompt".to_owned(),
            Expected::Assistant(_, calls) => reply(calls),
            Expected::Tool(call_id, name, result) => tool_result(call_id, name, result),
        }
    }

    fn matches(&self, message: &Message) -> bool {
        match (self, message) {
            (Expected::User(expected), Message::User { text }) => text == expected,
            (Expected::Assistant(expected, expected_calls), Message::Assistant { text, calls }) => {
                text == expected && **calls == **expected_calls
            }
            (
                Expected::Tool(expected_id, expected_name, expected_result),
                Message::Tool {
                    call_id,
                    name,
                    result,
                },
            ) => {
                **call_id == **expected_id
                    && **name == **expected_name
                    && result == *expected_result
            }
            _ => false,
        }
    }
}

//! The scripted provider's memory and reactions: one script step per request, a reply without
//! calls once the script runs out ([`DONE`]), and calls decided only by what it received
//! (correct a refused input, obey an instruction injected through a tool result).

use std::sync::{Arc, LazyLock};

use serde_json::Value;
use ward_core::session::Message;
use ward_core::tool::ToolCall;

use super::body::find_injection;
use crate::scenario::{CallScript, Reaction, Turn};

/// What the provider remembers of a batch it sent: the calls and the fix of each.
pub(super) struct Sent {
    pub(super) calls: Arc<[ToolCall]>,
    pub(super) fixes: Vec<Option<String>>,
}

/// What the provider says once its script runs out.
pub(super) static DONE: LazyLock<Turn> = LazyLock::new(|| Turn {
    text: "Done.".to_owned(),
    ..Turn::default()
});

/// The calls a reaction adds, decided only by what the provider received.
pub(super) fn react(
    reaction: Reaction,
    transcript: &[Arc<Message>],
    sent: &[Sent],
) -> Vec<CallScript> {
    let last_results = transcript
        .iter()
        .map(|message| &**message)
        .rev()
        .take_while(|message| matches!(message, Message::Tool { .. }))
        .collect::<Vec<_>>();
    let mut calls = Vec::new();
    for message in last_results.into_iter().rev() {
        let Message::Tool {
            call_id,
            name,
            result,
        } = message
        else {
            continue;
        };
        match reaction {
            Reaction::RetryInvalid => {
                if result.error_code() != Some("TOOL_INPUT_INVALID") {
                    continue;
                }
                let fix = sent
                    .iter()
                    .rev()
                    .flat_map(|batch| batch.calls.iter().zip(&batch.fixes).rev())
                    .find(|(call, _)| *call.id == **call_id && *call.name == **name);
                if let Some(fix) = fix.and_then(|(_, fix)| fix.clone()) {
                    calls.push(CallScript {
                        id: format!("{call_id}-fix"),
                        name: name.to_string(),
                        arguments: fix,
                        fix: None,
                    });
                }
            }
            Reaction::FollowInjection => {
                if let Some((tool, arguments)) = result
                    .data()
                    .and_then(|data| find_in_strings(data, &find_injection))
                {
                    calls.push(CallScript {
                        id: format!("{call_id}-obey"),
                        name: tool,
                        arguments,
                        fix: None,
                    });
                }
            }
        }
    }
    calls
}

/// The first thing `find` finds in a string of a JSON value, depth first.
fn find_in_strings<T>(value: &Value, find: &impl Fn(&str) -> Option<T>) -> Option<T> {
    match value {
        Value::String(text) => find(text),
        Value::Array(items) => items.iter().find_map(|item| find_in_strings(item, find)),
        Value::Object(members) => members
            .values()
            .find_map(|member| find_in_strings(member, find)),
        _ => None,
    }
}

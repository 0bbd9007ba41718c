//! The simulated model provider: one script step per request, replies without calls once the
//! script runs out, and reactions decided only by what it received (correct a refused input,
//! obey an instruction injected through a tool result). It records every request it receives
//! and every reply it gives.

use std::collections::BTreeMap;
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::Value;
use ward_core::provider::{Provider, ProviderError, ProviderReply, ProviderRequest};
use ward_core::session::Message;
use ward_core::tool::ToolCall;

use super::body::find_injection;
use super::records::{Record, Recorder};
use crate::scenario::{CallScript, Reaction, Turn};

/// The provider of one scenario run.
pub(super) struct SimProvider<'s> {
    steps: std::slice::Iter<'s, Turn>,
    /// The planted secrets by label, for errors that leak one.
    secrets: &'s BTreeMap<String, String>,
    /// Every batch sent so far, with the fix of each call, to find the fixes of refused calls.
    sent: Vec<Sent>,
    recorder: Recorder,
    /// The previous request, to record each request as a change of it.
    last_system_prompt: String,
    last_tools: Vec<Arc<str>>,
    last_transcript: Vec<Arc<Message>>,
}

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

impl<'s> SimProvider<'s> {
    pub(super) fn new(
        turns: &'s [Turn],
        secrets: &'s BTreeMap<String, String>,
        recorder: Recorder,
    ) -> SimProvider<'s> {
        SimProvider {
            steps: turns.iter(),
            secrets,
            sent: Vec::new(),
            recorder,
            last_system_prompt: String::new(),
            last_tools: Vec::new(),
            last_transcript: Vec::new(),
        }
    }

    /// Records `request` as a change of the previous one, comparing values.
    fn record_request(&mut self, request: &ProviderRequest<'_>) {
        let system_prompt = (request.system_prompt != self.last_system_prompt)
            .then(|| request.system_prompt.to_owned());
        if let Some(text) = &system_prompt {
            text.clone_into(&mut self.last_system_prompt);
        }
        let same_tools = request.tools.len() == self.last_tools.len()
            && request
                .tools
                .iter()
                .zip(&self.last_tools)
                .all(|(meta, name)| meta.name() == &**name);
        let tools = (!same_tools).then(|| {
            request
                .tools
                .iter()
                .map(|meta| Arc::clone(meta.shared_name()))
                .collect::<Vec<_>>()
        });
        if let Some(names) = &tools {
            names.clone_into(&mut self.last_tools);
        }
        let kept = request
            .transcript
            .iter()
            .zip(&self.last_transcript)
            .take_while(|(sent, previous)| sent == previous)
            .count();
        let appended: Vec<Arc<Message>> = request.transcript[kept..].to_vec();
        self.last_transcript.truncate(kept);
        self.last_transcript.extend(appended.iter().cloned());
        self.recorder.record(Record::Request {
            at_ms: self.recorder.now_ms(),
            turn: request.turn,
            attempt: request.attempt,
            system_prompt,
            tools,
            kept,
            appended,
        });
    }
}

impl Provider for SimProvider<'_> {
    fn complete<'a>(
        &'a mut self,
        request: ProviderRequest<'a>,
    ) -> BoxFuture<'a, Result<ProviderReply, ProviderError>> {
        self.record_request(&request);
        let step = self.steps.next().unwrap_or(&DONE);
        let reacted: Vec<CallScript> = step
            .react
            .iter()
            .flat_map(|reaction| react(*reaction, request.transcript, &self.sent))
            .collect();
        let scripts = step.calls.iter().chain(&reacted);
        let mut fixes = Vec::with_capacity(step.calls.len() + reacted.len());
        let calls: Arc<[ToolCall]> = scripts
            .map(|call| {
                fixes.push(call.fix.clone());
                ToolCall {
                    id: call.id.clone(),
                    name: call.name.clone(),
                    arguments: call.arguments.clone(),
                }
            })
            .collect();
        self.sent.push(Sent {
            calls: Arc::clone(&calls),
            fixes,
        });
        let (turn, attempt) = (request.turn, request.attempt);
        let secrets = self.secrets;
        Box::pin(async move {
            if step.delay_ms > 0 {
                tokio::time::sleep(Duration::from_millis(step.delay_ms)).await;
            }
            let at_ms = self.recorder.now_ms();
            if let Some(failure) = &step.error {
                self.recorder.record(Record::Reply {
                    at_ms,
                    turn,
                    attempt,
                    text: String::new(),
                    calls: Arc::default(),
                    error: Some(failure.kind.to_core().code().to_owned()),
                });
                let message = match failure.leak.as_ref().and_then(|label| secrets.get(label)) {
                    Some(secret) => format!("The provider refused the key {secret}."),
                    None => "The provider refused the request.".to_owned(),
                };
                let mut error = ProviderError::new(failure.kind.to_core(), message);
                error.retry_after_ms = failure.retry_after_ms;
                return Err(error);
            }
            self.recorder.record(Record::Reply {
                at_ms,
                turn,
                attempt,
                text: step.text.clone(),
                calls: Arc::clone(&calls),
                error: None,
            });
            Ok(ProviderReply {
                text: step.text.clone(),
                calls,
            })
        })
    }
}

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

#[cfg(test)]
mod tests {
    use serde_json::json;
    use ward_core::envelope::ToolResult;

    use super::*;

    fn request<'a>(transcript: &'a [Arc<Message>]) -> ProviderRequest<'a> {
        ProviderRequest {
            system_prompt: "system",
            transcript,
            tools: &[],
            turn: 0,
            attempt: 0,
        }
    }

    /// Each message made anew: no two transcripts share a record.
    fn transcript(texts: &[&str]) -> Vec<Arc<Message>> {
        texts
            .iter()
            .map(|text| match text.strip_prefix("result:") {
                Some(data) => Arc::new(Message::Tool {
                    call_id: Arc::from("call_9"),
                    name: Arc::from("web_search"),
                    result: ToolResult::success(json!({"rows": [data, 1, 2]}), false),
                }),
                None => Arc::new(Message::User {
                    text: (*text).to_owned(),
                }),
            })
            .collect()
    }

    #[test]
    fn a_resent_transcript_is_recorded_by_its_values_whether_shared_or_copied() {
        let recorder = Recorder::new(0, 0);
        let secrets = BTreeMap::new();
        let mut provider = SimProvider::new(&[], &secrets, recorder.clone());
        let first = transcript(&["hello", "result:a"]);
        provider.record_request(&request(&first));
        // Equal copies of the first two, and one more: the two are kept.
        provider.record_request(&request(&transcript(&["hello", "result:a", "more"])));
        // The same records shared, and one more: kept as well.
        let mut shared = first.clone();
        shared.extend(transcript(&["more", "result:b"]));
        provider.record_request(&request(&shared));
        // An earlier message changed: what follows it is recorded again.
        provider.record_request(&request(&transcript(&["hello", "result:x", "more"])));
        let recorded: Vec<(usize, usize)> = recorder
            .take()
            .records
            .iter()
            .map(|record| match record {
                Record::Request { kept, appended, .. } => (*kept, appended.len()),
                other => panic!("unexpected record {other:?}"),
            })
            .collect();
        assert_eq!(recorded, [(0, 2), (2, 1), (3, 1), (1, 2)]);
    }
}

//! Test support: a scripted provider and a body recorder, observing the runtime only at its
//! boundaries (what the provider receives, what tool bodies see).
#![allow(dead_code)]

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::Value;
use tokio::time::Instant;
use ward_core::chart::SharedChart;
use ward_core::chart::tools::{CatalogueOptions, register_tools};
use ward_core::driver::{RunOptions, RunReport, Session, StartRunInput};
use ward_core::envelope::{ToolError, ToolResult};
use ward_core::events::{Event, EventKind};
use ward_core::provider::{Provider, ProviderError, ProviderReply, ProviderRequest};
use ward_core::registry::{Registry, RegistryBuilder};
use ward_core::session::{MemoryStore, Message};
use ward_core::tool::{ToolBody, ToolCall, ToolContext, ToolMeta};

/// A result's error code, or `OK` for a success.
pub fn code(result: &ToolResult) -> &str {
    result.error_code().unwrap_or("OK")
}

/// A call as a model would send it.
pub fn call(id: &str, name: &str, arguments: &str) -> ToolCall {
    ToolCall {
        id: id.to_owned(),
        name: name.to_owned(),
        arguments: arguments.to_owned(),
    }
}

/// One scripted provider turn.
#[derive(Clone, Debug)]
pub enum Step {
    Reply(ProviderReply),
    Fail(ProviderError),
    /// Waits, then takes the next step.
    Delay(u64),
}

pub fn reply(calls: Vec<ToolCall>) -> Step {
    Step::Reply(ProviderReply {
        text: String::new(),
        calls: calls.into(),
    })
}

pub fn say(text: &str) -> Step {
    Step::Reply(ProviderReply {
        text: text.to_owned(),
        calls: Arc::default(),
    })
}

/// What the provider received.
#[derive(Clone, Debug)]
pub struct Received {
    pub turn: u32,
    pub attempt: u32,
    pub at_ms: u64,
    pub system_prompt: String,
    pub tools: Vec<String>,
    pub transcript: Vec<Message>,
}

impl Received {
    /// Every text the request carries, as JSON.
    pub fn text(&self) -> String {
        format!(
            "{}\n{}\n{}",
            self.system_prompt,
            self.tools.join(","),
            serde_json::to_string(&self.transcript).unwrap()
        )
    }
}

/// Replies from a script; once it runs out, replies without calls.
pub struct ScriptedProvider {
    steps: VecDeque<Step>,
    epoch: Instant,
    pub received: Vec<Received>,
    /// Replies with these calls forever when set (an endless tool loop).
    pub endless: Option<Vec<ToolCall>>,
}

impl ScriptedProvider {
    pub fn new(steps: Vec<Step>) -> ScriptedProvider {
        ScriptedProvider {
            steps: steps.into(),
            epoch: Instant::now(),
            received: Vec::new(),
            endless: None,
        }
    }
}

impl Provider for ScriptedProvider {
    fn complete<'a>(
        &'a mut self,
        request: ProviderRequest<'a>,
    ) -> BoxFuture<'a, Result<ProviderReply, ProviderError>> {
        self.received.push(Received {
            turn: request.turn,
            attempt: request.attempt,
            at_ms: self.epoch.elapsed().as_millis() as u64,
            system_prompt: request.system_prompt.to_owned(),
            tools: request
                .tools
                .iter()
                .map(|meta| meta.name().to_owned())
                .collect(),
            transcript: request
                .transcript
                .iter()
                .map(|m| Message::clone(m))
                .collect(),
        });
        Box::pin(async move {
            loop {
                if let Some(calls) = &self.endless {
                    return Ok(ProviderReply {
                        text: String::new(),
                        calls: calls.as_slice().into(),
                    });
                }
                match self.steps.pop_front() {
                    None => {
                        return Ok(ProviderReply {
                            text: "done".to_owned(),
                            calls: Arc::default(),
                        });
                    }
                    Some(Step::Delay(ms)) => tokio::time::sleep(Duration::from_millis(ms)).await,
                    Some(Step::Reply(reply)) => return Ok(reply),
                    Some(Step::Fail(error)) => return Err(error),
                }
            }
        })
    }
}

/// One tool body execution, seen from outside.
#[derive(Clone, Debug, PartialEq)]
pub struct BodyRecord {
    pub tool: String,
    pub call_id: String,
    pub input: Value,
    pub start_ms: u64,
    pub end_ms: Option<u64>,
}

/// Behaviour planted into a tool body.
#[derive(Clone)]
pub enum Plant {
    /// Returns this data instead of running the body.
    Data(Value),
    /// Runs the body, then fails.
    FailAfter,
    /// Panics.
    Panic,
}

/// Wraps every body: records it, applies a latency, plants behaviour.
#[derive(Clone)]
pub struct Recorder {
    epoch: Instant,
    records: Arc<Mutex<Vec<BodyRecord>>>,
    latency_ms: Arc<BTreeMap<String, u64>>,
    plants: Arc<BTreeMap<String, Plant>>,
}

impl Recorder {
    pub fn new(latency_ms: &[(&str, u64)], plants: Vec<(&str, Plant)>) -> Recorder {
        Recorder {
            epoch: Instant::now(),
            records: Arc::default(),
            latency_ms: Arc::new(
                latency_ms
                    .iter()
                    .map(|(name, ms)| (name.to_string(), *ms))
                    .collect(),
            ),
            plants: Arc::new(
                plants
                    .into_iter()
                    .map(|(name, plant)| (name.to_owned(), plant))
                    .collect(),
            ),
        }
    }

    pub fn records(&self) -> Vec<BodyRecord> {
        self.records.lock().unwrap().clone()
    }

    pub fn ran(&self, tool: &str) -> bool {
        self.records().iter().any(|record| record.tool == tool)
    }

    fn elapsed_ms(&self) -> u64 {
        self.epoch.elapsed().as_millis() as u64
    }
}

struct Observed {
    inner: Arc<dyn ToolBody>,
    recorder: Recorder,
    tool: String,
}

impl ToolBody for Observed {
    fn call<'a>(
        &'a self,
        context: &'a ToolContext,
        input: Value,
    ) -> BoxFuture<'a, Result<Value, ToolError>> {
        Box::pin(async move {
            let index = {
                let mut records = self.recorder.records.lock().unwrap();
                records.push(BodyRecord {
                    tool: self.tool.clone(),
                    call_id: context.call_id().to_owned(),
                    input: input.clone(),
                    start_ms: self.recorder.elapsed_ms(),
                    end_ms: None,
                });
                records.len() - 1
            };
            if let Some(&latency) = self.recorder.latency_ms.get(&self.tool) {
                tokio::time::sleep(Duration::from_millis(latency)).await;
            }
            let result = match self.recorder.plants.get(&self.tool) {
                Some(Plant::Data(data)) => Ok(data.clone()),
                Some(Plant::Panic) => panic!("planted panic with payload sk-PANICPAYLOAD0001"),
                Some(Plant::FailAfter) => {
                    let _ = self.inner.call(context, input).await;
                    Err(ToolError::domain(
                        "PLANTED_FAILURE",
                        "The tool failed.",
                        "Retry.",
                    ))
                }
                None => self.inner.call(context, input).await,
            };
            self.recorder.records.lock().unwrap()[index].end_ms = Some(self.recorder.elapsed_ms());
            result
        })
    }
}

/// The chart registry with every body observed by `recorder`.
pub fn observed_registry(recorder: &Recorder) -> Registry {
    let mut builder = RegistryBuilder::new();
    register_tools(
        &mut builder,
        CatalogueOptions {
            code_interpreter: true,
        },
    )
    .unwrap();
    let recorder = recorder.clone();
    builder.wrap_bodies(|meta: &ToolMeta, inner| {
        Arc::new(Observed {
            inner,
            recorder: recorder.clone(),
            tool: meta.name().to_owned(),
        })
    });
    builder.build()
}

/// A session over a fresh chart.
pub fn session(recorder: &Recorder) -> Session<MemoryStore> {
    Session::new(
        "session-1",
        observed_registry(recorder),
        SharedChart::new(42),
        MemoryStore::new(),
    )
}

/// Runs one run and returns its report and events.
pub async fn run(
    session: &mut Session<MemoryStore>,
    input: StartRunInput,
    provider: &mut ScriptedProvider,
    options: RunOptions,
) -> (RunReport, Vec<Event>) {
    let mut events = Vec::new();
    let report = session
        .run(input, provider, &mut events, options)
        .await
        .expect("the run starts");
    check_event_stream(&events);
    (report, events)
}

/// R23: contiguous sequence numbers, times that never go back, exactly one terminal event,
/// and it is the last.
pub fn check_event_stream(events: &[Event]) {
    for (index, event) in events.iter().enumerate() {
        assert_eq!(event.seq, index as u64, "sequence numbers are contiguous");
    }
    assert!(
        events
            .windows(2)
            .all(|pair| pair[0].time_ms <= pair[1].time_ms),
        "time never goes back"
    );
    let terminals = events
        .iter()
        .filter(|event| event.kind.is_terminal())
        .count();
    assert_eq!(terminals, 1, "exactly one terminal event");
    assert!(
        events.last().unwrap().kind.is_terminal(),
        "the terminal event is last"
    );
    assert!(matches!(events[0].kind, EventKind::RunStarted { .. }));
}

/// The results of the tool messages that follow the assistant message of `turn`.
pub fn results_of_turn(messages: &[Arc<Message>], turn: usize) -> Vec<(String, ToolResult)> {
    let mut turns_seen = 0;
    let mut collecting = false;
    let mut results = Vec::new();
    for message in messages {
        match &**message {
            Message::Assistant { .. } => {
                collecting = turns_seen == turn;
                turns_seen += 1;
            }
            Message::Tool {
                call_id, result, ..
            } if collecting => results.push((call_id.to_string(), result.clone())),
            _ => {}
        }
    }
    results
}

/// The tool.finished events in emission order: (index, call id, code or "OK").
pub fn finished(events: &[Event]) -> Vec<(usize, String, String)> {
    events
        .iter()
        .filter_map(|event| match &event.kind {
            EventKind::ToolFinished {
                index,
                call_id,
                result,
                ..
            } => Some((
                *index,
                call_id.to_string(),
                result.error_code().unwrap_or("OK").to_owned(),
            )),
            _ => None,
        })
        .collect()
}

//! Every message of the protocol against its schema, both ways: what ward writes validates,
//! and reads back equal; what the schema refuses, ward's types refuse too.

use std::collections::BTreeSet;
use std::sync::Arc;

use serde_json::{Value, json};
use ward_core::envelope::{FieldError, ToolError, ToolResult};
use ward_core::events::{Event, EventKind};
use ward_core::session::Message;
use ward_core::tool::{ExecutionMode, Safety, ToolCall};

use super::*;

fn call(id: &str) -> ToolCall {
    ToolCall {
        id: id.to_owned(),
        name: "drawing_create".to_owned(),
        arguments: r#"{"paneId":"main"}"#.to_owned(),
    }
}

fn invalid() -> ToolError {
    ToolError::input_invalid(vec![FieldError {
        path: "/paneId".to_owned(),
        message: "must be a string".to_owned(),
    }])
}

fn to_adapter() -> Vec<ToAdapter> {
    vec![
        ToAdapter::Hello { protocol: VERSION },
        ToAdapter::Reset {
            seed: 7,
            tools: Some(Arc::from([ToolDescription {
                name: "drawings_list".to_owned(),
                label: "List drawings".to_owned(),
                description: "Lists the drawings of a pane.".to_owned(),
                parameters: json!({"type": "object", "properties": {}}),
                safety: Safety::ReadOnly,
                execution_mode: ExecutionMode::Parallel,
            }])),
            store_dir: None,
        },
        ToAdapter::Reset {
            seed: 8,
            tools: None,
            store_dir: Some("/tmp/ward-store-8".to_owned()),
        },
        ToAdapter::Crash,
        ToAdapter::Recover {
            secrets: vec!["sk-configured-value".to_owned()],
        },
        ToAdapter::StartRun(StartRun {
            session: "session-0".to_owned(),
            prompt: "Draw a line.".to_owned(),
            read_only: false,
            disabled_tools: vec!["panes_clear".to_owned()],
            secrets: vec!["sk-configured-value".to_owned()],
            limits: WireLimits {
                turns_max: 8,
                calls_per_batch_max: 32,
                provider_timeout_ms: 60_000,
                inactivity_timeout_ms: 120_000,
                provider_retries_max: 2,
            },
        }),
        ToAdapter::Advance { to_ms: 1_500 },
        ToAdapter::ModelReply {
            request_id: "r0".to_owned(),
            text: String::new(),
            calls: vec![call("call_9"), call("call_10")],
        },
        ToAdapter::ModelError {
            request_id: "r1".to_owned(),
            kind: ProviderFailure::RateLimited,
            message: "slow down".to_owned(),
            retry_after_ms: Some(2_000),
        },
        ToAdapter::ModelError {
            request_id: "r2".to_owned(),
            kind: ProviderFailure::ModelNotFound,
            message: "no such model".to_owned(),
            retry_after_ms: None,
        },
        ToAdapter::BodyResult {
            body_id: "b0".to_owned(),
            result: BodyOutcome::Data(json!({"drawing": {"id": "d-1"}})),
            changed: true,
        },
        ToAdapter::BodyResult {
            body_id: "b1".to_owned(),
            result: BodyOutcome::Data(Value::Null),
            changed: false,
        },
        ToAdapter::BodyResult {
            body_id: "b2".to_owned(),
            result: BodyOutcome::Error(ToolError::domain(
                "TOOL_FAILED",
                "The tool failed while running.",
                "Retry the call.",
            )),
            changed: true,
        },
        ToAdapter::BodyPanic {
            body_id: "b3".to_owned(),
        },
        ToAdapter::Answer {
            question_id: "q0".to_owned(),
            text: Some("Yes".to_owned()),
        },
        ToAdapter::Answer {
            question_id: "q1".to_owned(),
            text: None,
        },
        ToAdapter::Cancel,
    ]
}

fn event(seq: u64, kind: EventKind) -> FromAdapter {
    FromAdapter::Event {
        event: Event {
            seq,
            time_ms: 40,
            kind,
        },
    }
}

fn from_adapter() -> Vec<FromAdapter> {
    let calls: Arc<[ToolCall]> = vec![call("call_9")].into();
    let failed = ToolResult::failure(invalid());
    vec![
        FromAdapter::Ready {
            protocol: VERSION,
            runtime: RuntimeId {
                name: "ward-core".to_owned(),
                version: "0.1.0".to_owned(),
            },
            claims: vec!["R3".to_owned(), "R17".to_owned()],
            notes: [("R22".to_owned(), "no guard".to_owned())].into(),
            durable: None,
            catalogue_kept: true,
        },
        FromAdapter::Ready {
            protocol: VERSION,
            runtime: RuntimeId {
                name: "ward-core".to_owned(),
                version: "0.1.0".to_owned(),
            },
            claims: vec!["R30".to_owned()],
            notes: BTreeMap::new(),
            durable: Some(Durable {
                store: "a redb file".to_owned(),
                version: "redb 2.6.3".to_owned(),
                drop: "drops the database handle unflushed".to_owned(),
            }),
            catalogue_kept: false,
        },
        FromAdapter::ModelRequest {
            request_id: "r0".to_owned(),
            system_prompt: "You are the assistant.".to_owned(),
            transcript_kept: 2,
            transcript: vec![
                Message::User {
                    text: "Draw a line.".to_owned(),
                },
                Message::Assistant {
                    text: String::new(),
                    calls: Arc::clone(&calls),
                },
                Message::Tool {
                    call_id: "call_9".into(),
                    name: "drawing_create".into(),
                    result: failed.clone(),
                },
            ],
            tools: vec!["drawings_list".to_owned()],
        },
        FromAdapter::BodyStart {
            body_id: "b0".to_owned(),
            call_id: "call_9".to_owned(),
            index: 0,
            tool: "drawing_create".to_owned(),
            input: json!({"paneId": "main"}),
            idempotency_key: None,
        },
        FromAdapter::BodyStart {
            body_id: "b1".to_owned(),
            call_id: "call_10".to_owned(),
            index: 1,
            tool: "drawing_create".to_owned(),
            input: json!({"paneId": "main"}),
            idempotency_key: Some("session-0/0/call_10".to_owned()),
        },
        FromAdapter::ModelCancel {
            request_id: "r0".to_owned(),
        },
        FromAdapter::BodyCancel {
            body_id: "b1".to_owned(),
        },
        FromAdapter::Rollback {
            body_id: "b0".to_owned(),
        },
        FromAdapter::Question {
            question_id: "q0".to_owned(),
            body_id: "b4".to_owned(),
            question: "Which pane?".to_owned(),
            options: vec!["main".to_owned()],
        },
        event(
            0,
            EventKind::RunStarted {
                read_only: true,
                tools: vec!["drawings_list".into()],
            },
        ),
        event(
            1,
            EventKind::UserMessageCreated {
                text: "Draw a line.".to_owned(),
            },
        ),
        event(
            2,
            EventKind::AssistantMessageCompleted {
                turn: 0,
                text: String::new(),
                calls,
            },
        ),
        event(
            3,
            EventKind::ToolStarted {
                index: 0,
                call_id: "call_9".into(),
                name: "drawing_create".into(),
            },
        ),
        event(
            4,
            EventKind::ToolFinished {
                index: 0,
                call_id: "call_9".into(),
                name: "drawing_create".into(),
                result: ToolResult::success(json!({"ok": 1}), true),
            },
        ),
        event(
            5,
            EventKind::RunCompleted {
                text: "Done.".to_owned(),
            },
        ),
        event(6, EventKind::RunFailed { error: invalid() }),
        event(7, EventKind::RunCancelled),
        FromAdapter::Append {
            message: Message::Tool {
                call_id: "call_9".into(),
                name: "drawing_create".into(),
                result: failed,
            },
        },
        FromAdapter::RunEnd {
            outcome: RunEndOutcome::Failed,
            code: Some("TOOL_LOOP_LIMIT".to_owned()),
            batches: 8,
            calls: 12,
        },
        FromAdapter::StartError {
            message: "turns_max is 0".to_owned(),
        },
        FromAdapter::Idle {
            at_ms: 40,
            next_timer_ms: NextTimer::At(60_040),
        },
        FromAdapter::Idle {
            at_ms: 40,
            next_timer_ms: NextTimer::None,
        },
        FromAdapter::Idle {
            at_ms: 40,
            next_timer_ms: NextTimer::Unknown,
        },
    ]
}

fn errors(value: &Value) -> Vec<String> {
    schema()
        .iter_errors(value)
        .map(|error| format!("{}: {error}", error.instance_path()))
        .collect()
}

#[test]
fn every_message_ward_writes_validates_and_reads_back_equal() {
    for message in to_adapter() {
        let line = serde_json::to_string(&message).unwrap();
        let value: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(errors(&value), Vec::<String>::new(), "{line}");
        assert_eq!(serde_json::from_str::<ToAdapter>(&line).unwrap(), message);
    }
}

#[test]
fn every_message_an_adapter_writes_validates_and_reads_back_equal() {
    for message in from_adapter() {
        let line = serde_json::to_string(&message).unwrap();
        let value: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(errors(&value), Vec::<String>::new(), "{line}");
        assert_eq!(serde_json::from_str::<FromAdapter>(&line).unwrap(), message);
    }
}

#[test]
fn the_schema_and_the_types_refuse_the_same_broken_messages() {
    let broken = [
        json!({"type": "idle"}),
        json!({"type": "idle", "atMs": -1}),
        json!({"type": "idle", "atMs": 3, "nextTimer": 4}),
        json!({"type": "nap", "atMs": 3}),
        json!({"atMs": 3}),
        json!({"type": "bodyStart", "bodyId": "b", "callId": "c", "index": 0, "tool": "t"}),
        json!({"type": "ready", "protocol": 1, "runtime": {"name": "x"}, "claims": []}),
        json!({"type": "runEnd", "outcome": "run.done", "code": null, "batches": 0, "calls": 0}),
        json!({"type": "advance", "toMs": 1, "extra": true}),
        json!({"type": "bodyResult", "bodyId": "b", "result": {}, "changed": false}),
        json!({"type": "modelError", "requestId": "r", "kind": "sleepy", "message": ""}),
    ];
    for value in broken {
        assert!(!errors(&value).is_empty(), "the schema accepts {value}");
        let line = value.to_string();
        assert!(
            serde_json::from_str::<FromAdapter>(&line).is_err()
                && serde_json::from_str::<ToAdapter>(&line).is_err(),
            "the types accept {line}"
        );
    }
}

#[test]
fn the_schema_names_every_message_of_both_directions() {
    let document: Value = serde_json::from_str(SCHEMA).unwrap();
    let named = |direction: &str| -> BTreeSet<String> {
        document["$defs"][direction]["oneOf"]
            .as_array()
            .unwrap()
            .iter()
            .map(|entry| {
                entry["$ref"]
                    .as_str()
                    .unwrap()
                    .trim_start_matches("#/$defs/")
                    .to_owned()
            })
            .collect()
    };
    let written = |messages: Vec<Value>| -> BTreeSet<String> {
        messages
            .iter()
            .map(|message| message["type"].as_str().unwrap().to_owned())
            .collect()
    };
    let values = |messages: Vec<_>| -> Vec<Value> { messages };
    let to = values(
        to_adapter()
            .iter()
            .map(|m| serde_json::to_value(m).unwrap())
            .collect(),
    );
    let from = values(
        from_adapter()
            .iter()
            .map(|m| serde_json::to_value(m).unwrap())
            .collect(),
    );
    assert_eq!(named("toAdapter"), written(to));
    assert_eq!(named("fromAdapter"), written(from));
}

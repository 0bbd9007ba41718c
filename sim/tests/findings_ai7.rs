//! Every finding about the Vercel AI SDK's current major (`findings/ai-7.md`, `ai` 7.0.185,
//! installed as `ai7` beside `ai` 6) replays: its committed scenario file, run through
//! `ward replay --runtime` against `adapters/node/ai-sdk-7.js`, breaks the invariant the
//! finding names, with the explanation it quotes.
//!
//! The adapter needs Node and its packages (`npm ci --prefix adapters/node`, the README's
//! setup command). Without them each test says why it did not run and passes: ward's own
//! tests never depend on Node.

mod common;

use std::process::Command;

use common::replay::{Claim, adapter, names_a_body_by_its_guarded_call_id, replays};
use common::{folder, repository};

#[test]
fn ai7_invalid_input_reads_as_the_sdks_own_text() {
    replays(
        "ai7",
        "findings/ai-7/invalid-input-sdk-text.json",
        Claim::NotClaimed,
        "I4",
        "the message is not `The tool input is invalid: `",
    );
}

#[test]
fn ai7_text_that_is_not_json_gets_no_field_list() {
    replays(
        "ai7",
        "findings/ai-7/not-json-no-field-list.json",
        Claim::NotClaimed,
        "I4",
        "TOOL_INPUT_INVALID listed 0 field errors",
    );
}

#[test]
fn ai7_a_repeated_key_reaches_the_body() {
    replays(
        "ai7",
        "findings/ai-7/duplicate-key-reaches-body.json",
        Claim::Claimed,
        "I5",
        "the body of market_timeshare_range_query ran with input that R3 refuses before any body runs: the object at / repeats the key \"symbol\"",
    );
}

#[test]
fn ai7_results_of_a_repeated_id_are_sent_together() {
    replays(
        "ai7",
        "findings/ai-7/repeated-id-results-grouped.json",
        Claim::Claimed,
        "I6",
        r#"ids ["call_9", "call_9", "call_11"] for calls ["call_9", "call_11", "call_9"]"#,
    );
}

/// Finding 5: the model reads the thrown error's `toString()`, its class name before the
/// generic message the adapter recorded; the trace shows the very text.
#[test]
fn ai7_a_tools_exception_reaches_the_model_as_its_own_text() {
    let file = "findings/ai-7/thrown-error-text-reaches-model.json";
    replays(
        "ai7",
        file,
        Claim::NotClaimed,
        "I14",
        "the request of turn 1 attempt 0 keeps 1 messages and adds 2; the model expected it to keep 1 and add the 2 the turn before entered",
    );
    let command = match adapter("ai7") {
        Ok(command) => command,
        Err(why) => {
            eprintln!("skipped: the ai7 adapter cannot run here: {why}");
            return;
        }
    };
    let trace = folder("thrown-error-text").join("trace.jsonl");
    let trace_path = trace.to_str().expect("a UTF-8 path");
    let output = Command::new(env!("CARGO_BIN_EXE_ward"))
        .args(["replay", file, "--trace", trace_path, "--runtime", &command])
        .current_dir(repository())
        .output()
        .expect("ward runs");
    assert!(
        output.status.success(),
        "{file} against {command}:\n{}",
        String::from_utf8_lossy(&output.stdout)
    );
    let records = std::fs::read_to_string(&trace).expect("the trace is written");
    let request = records
        .lines()
        .find(|line| line.contains(r#""record":"request""#) && line.contains(r#""turn":1"#))
        .expect("a request at turn 1");
    assert!(
        request.contains(r#""message":"BodyPanic: The tool failed unexpectedly.""#),
        "the model read another text:\n{request}"
    );
}

/// The adapters' glue, not the SDK: a body's start names its call by its guarded id (R22).
#[test]
fn the_ai7_adapter_names_a_body_by_its_guarded_call_id() {
    names_a_body_by_its_guarded_call_id("ai7");
}

//! Every finding about LangGraph for Python (`findings/langgraph-python.md`, `langgraph`
//! 1.2.24 with `langchain-core` 1.8.3, durable on `langgraph-checkpoint-sqlite` 3.1.2)
//! replays: its committed scenario or crash plan file, run through `ward replay --runtime`
//! against `adapters/python/langgraph-agent.py`, breaks the invariant the finding names, with
//! the explanation it quotes.
//!
//! The adapter needs Python and its environment (`uv sync --project adapters/python
//! --frozen`, the README's setup command). Without them each test says why it did not run and
//! passes: ward's own tests never depend on Python.

mod common;

use common::replay::{Claim, names_a_body_by_its_guarded_call_id, replays, replays_crash};

/// Finding 1: a StructuredTool with a JSON Schema `args_schema` passes its input on unchecked.
#[test]
fn langgraph_python_a_json_schema_is_never_checked() {
    replays(
        "langgraph-python",
        "findings/langgraph-python/schema-not-checked.json",
        Claim::Claimed,
        "I5",
        "the body of market_bars_query ran with input that R3 refuses before any body runs: `maximum` fails at /limit (R5)",
    );
}

/// Finding 2: `json.loads` keeps a repeated key's last value, and the body runs with it.
#[test]
fn langgraph_python_a_repeated_key_reaches_the_body() {
    replays(
        "langgraph-python",
        "findings/langgraph-python/duplicate-key-reaches-body.json",
        Claim::Claimed,
        "I5",
        "the body of market_bars_query ran with input that R3 refuses before any body runs: the object at / repeats the key \"limit\"",
    );
}

/// Finding 3: a call in `invalid_tool_calls` is neither routed nor run by ToolNode.
#[test]
fn langgraph_python_text_that_is_not_json_gets_no_result() {
    replays(
        "langgraph-python",
        "findings/langgraph-python/not-json-gets-no-result.json",
        Claim::Claimed,
        "I6",
        r#"the batch of 2 calls got 1 results, ids ["call_10"] for calls ["call_9", "call_10"]"#,
    );
}

/// Finding 4: the step that reaches `recursion_limit` is followed by GraphRecursionError,
/// whatever it did; the final reply at the limit fails the run.
#[test]
fn langgraph_python_the_last_reply_at_the_turn_limit_fails_the_run() {
    let file = "findings/langgraph-python/last-reply-at-the-turn-limit.json";
    replays(
        "langgraph-python",
        file,
        Claim::Claimed,
        "I10",
        "the run failed TOOL_LOOP_LIMIT after 1 replies with calls, with turns_max 1: no further reply with calls came",
    );
    replays(
        "langgraph-python",
        file,
        Claim::Claimed,
        "I13",
        "the provider stopped calling tools but the run did not end run.completed",
    );
}

/// Findings 5 and 6: a body a crash cut runs again from its start on resume (no intent, no
/// key), and the checkpoint holds the prompt's planted credential.
#[test]
fn langgraph_python_an_outside_effect_runs_again_after_a_crash() {
    let file = "findings/langgraph-python/outside-effect-runs-again.crash.json";
    replays_crash(
        "langgraph-python",
        file,
        Claim::NotClaimed,
        "I15",
        "the body of code_interpreter call call_1 of run 0 started 2 times",
    );
    replays_crash(
        "langgraph-python",
        file,
        Claim::NotClaimed,
        "I17",
        "code_interpreter call call_1 started, a crash cut it, and it got a success instead of OUTCOME_UNKNOWN",
    );
    replays_crash(
        "langgraph-python",
        file,
        Claim::NotClaimed,
        "I18",
        "holds 8 characters of the planted credential",
    );
}

/// Finding 7: resumed with no step left, the final reply at the turn limit completes the run,
/// where the crash-free run is finding 4's TOOL_LOOP_LIMIT.
#[test]
fn langgraph_python_the_turn_limit_after_a_crash_is_kept_as_r19_says() {
    replays_crash(
        "langgraph-python",
        "findings/langgraph-python/turn-limit-after-a-crash.crash.json",
        Claim::Claimed,
        "I19",
        r#"run 0 ended with {"record":"report","outcome":"run.completed","code":null,"batches":1,"calls":1} after the crashes, {"record":"report","outcome":"run.failed","code":"TOOL_LOOP_LIMIT","batches":1,"calls":1} without them"#,
    );
}

/// The adapters' glue, not the SDK: a body's start names its call by its guarded id (R22).
#[test]
fn the_langgraph_python_adapter_names_a_body_by_its_guarded_call_id() {
    names_a_body_by_its_guarded_call_id("langgraph-python");
}

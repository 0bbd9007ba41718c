//! Every finding about PydanticAI (`findings/pydantic-ai.md`, `pydantic-ai-slim` 2.68.0)
//! replays: its committed scenario file, run through `ward replay --runtime` against
//! `adapters/python/pydantic-ai.py`, breaks the invariant the finding names, with the
//! explanation it quotes.
//!
//! The adapter needs Python and its environment (`uv sync --project adapters/python --frozen`,
//! the README's setup command). Without them each test says why it did not run and passes:
//! ward's own tests never depend on Python.

mod common;

use common::replay::{Claim, names_a_body_by_its_guarded_call_id, replays};

const RUNTIME: &str = "pydantic-ai";

#[test]
fn pydantic_ai_a_repeated_key_reaches_the_body() {
    replays(
        RUNTIME,
        "findings/pydantic-ai/duplicate-key-reaches-body.json",
        Claim::Claimed,
        "I5",
        "the body of market_bars_query ran with input that R3 refuses before any body runs: the object at / repeats the key \"limit\"",
    );
}

#[test]
fn pydantic_ai_blank_argument_text_never_reaches_the_body() {
    replays(
        RUNTIME,
        "findings/pydantic-ai/blank-arguments-never-run.json",
        Claim::Claimed,
        "I13",
        "a valid call to offered tool panes_list never reached its body: it got TOOL_INPUT_INVALID",
    );
}

#[test]
fn pydantic_ai_arguments_that_are_not_an_object_fail_the_run() {
    replays(
        RUNTIME,
        "findings/pydantic-ai/array-arguments-fail-the-run.json",
        Claim::Claimed,
        "I13",
        "a valid call to offered tool drawings_list never reached its body: it got ABORTED, but the run was neither stopped nor at its turn limit",
    );
}

#[test]
fn pydantic_ai_a_reused_call_id_fails_the_whole_reply() {
    replays(
        RUNTIME,
        "findings/pydantic-ai/reused-call-id-fails-the-reply.json",
        Claim::Claimed,
        "I13",
        "a valid call to offered tool panes_list never reached its body: it got ABORTED, but the run was neither stopped nor at its turn limit",
    );
}

#[test]
fn pydantic_ai_results_of_a_reused_id_are_sent_together_in_the_next_run() {
    replays(
        RUNTIME,
        "findings/pydantic-ai/reused-id-results-grouped-next-run.json",
        Claim::Claimed,
        "I6",
        r#"session 0 run 1 turn 0: the request of turn 0 attempt 0: the batch of 3 calls got 3 results, ids ["call_9", "call_9", "call_10"] for calls ["call_9", "call_10", "call_9"]"#,
    );
}

#[test]
fn pydantic_ai_a_sequential_tool_is_a_barrier_inside_its_batch() {
    replays(
        RUNTIME,
        "findings/pydantic-ai/sequential-tool-is-a-barrier.json",
        Claim::Claimed,
        "I7",
        "in a sequential batch call 2 started at 0 ms while call 1 ran until 2 ms",
    );
}

#[test]
fn pydantic_ai_a_sequential_tool_not_offered_leaves_its_batch_parallel() {
    replays(
        RUNTIME,
        "findings/pydantic-ai/sequential-tool-not-offered.json",
        Claim::Claimed,
        "I7",
        "in a sequential batch call 1 started at 0 ms while call 0 ran until 2 ms",
    );
}

#[test]
fn pydantic_ai_the_turn_limit_ends_the_run_before_the_last_reply() {
    replays(
        RUNTIME,
        "findings/pydantic-ai/turn-limit-before-the-last-reply.json",
        Claim::Claimed,
        "I10",
        "the run failed TOOL_LOOP_LIMIT after 1 replies with calls, with turns_max 1: no further reply with calls came",
    );
}

#[test]
fn pydantic_ai_text_that_is_not_json_gets_no_field_list() {
    replays(
        RUNTIME,
        "findings/pydantic-ai/not-json-quoted-back.json",
        Claim::NotClaimed,
        "I4",
        "TOOL_INPUT_INVALID listed 0 field errors",
    );
}

/// The adapter's glue, not the SDK: a body's start names its call by its guarded id (R22).
#[test]
fn the_pydantic_ai_adapter_names_a_body_by_its_guarded_call_id() {
    names_a_body_by_its_guarded_call_id(RUNTIME);
}

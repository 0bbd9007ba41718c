//! Every finding about a real runtime (`findings/<runtime>.md`) replays: its committed scenario
//! file, run through `ward replay --runtime` against the adapter of the pinned SDK version,
//! breaks the invariant the finding names, with the explanation it quotes.
//!
//! The adapters need Node and their packages (`npm ci --prefix adapters/node`, the README's
//! setup command). Without them each test says why it did not run and passes: ward's own
//! tests never depend on Node.

mod common;

use common::replay::{Claim, names_a_body_by_its_guarded_call_id, replays, replays_crash};

#[test]
fn ai_invalid_input_reads_as_the_sdks_own_text() {
    replays(
        "ai",
        "findings/ai/invalid-input-sdk-text.json",
        Claim::NotClaimed,
        "I4",
        "the message is not `The tool input is invalid: `",
    );
}

#[test]
fn ai_text_that_is_not_json_gets_no_field_list() {
    replays(
        "ai",
        "findings/ai/not-json-no-field-list.json",
        Claim::NotClaimed,
        "I4",
        "TOOL_INPUT_INVALID listed 0 field errors",
    );
}

#[test]
fn ai_a_repeated_key_reaches_the_body() {
    replays(
        "ai",
        "findings/ai/duplicate-key-reaches-body.json",
        Claim::Claimed,
        "I5",
        "the body of market_bars_query ran with input that R3 refuses before any body runs: the object at / repeats the key \"limit\"",
    );
}

#[test]
fn pi_a_type_is_coerced_into_validity() {
    replays(
        "pi",
        "findings/pi/type-coerced-into-validity.json",
        Claim::Claimed,
        "I5",
        "the body of drawing_delete ran with input that R3 refuses before any body runs: `type` fails at /drawingId (R5)",
    );
}

#[test]
fn pi_a_repeated_key_reaches_the_body() {
    replays(
        "pi",
        "findings/pi/duplicate-key-reaches-body.json",
        Claim::Claimed,
        "I5",
        "the body of market_bars_query ran with input that R3 refuses before any body runs: the object at / repeats the key \"limit\"",
    );
}

#[test]
fn pi_a_sequential_tool_not_offered_leaves_its_batch_parallel() {
    replays(
        "pi",
        "findings/pi/sequential-tool-not-offered.json",
        Claim::Claimed,
        "I7",
        "in a sequential batch call 1 started at 0 ms while call 0 ran until 2 ms",
    );
}

#[test]
fn pi_invalid_input_reads_as_pis_own_text() {
    replays(
        "pi",
        "findings/pi/invalid-input-pi-text.json",
        Claim::NotClaimed,
        "I4",
        "TOOL_INPUT_INVALID listed 0 field errors",
    );
}

#[test]
fn ai_results_of_a_repeated_id_are_sent_together() {
    replays(
        "ai",
        "findings/ai/repeated-id-results-grouped.json",
        Claim::Claimed,
        "I6",
        r#"ids ["call_9", "call_9", "call_10"] for calls ["call_9", "call_10", "call_9"]"#,
    );
}

#[test]
fn openai_agents_a_repeated_key_reaches_the_body() {
    replays(
        "openai-agents",
        "findings/openai-agents/duplicate-key-reaches-body.json",
        Claim::Claimed,
        "I5",
        "the body of market_bars_query ran with input that R3 refuses before any body runs: the object at / repeats the key \"limit\"",
    );
}

#[test]
fn openai_agents_an_empty_call_id_fails_the_whole_reply() {
    replays(
        "openai-agents",
        "findings/openai-agents/empty-call-id-fails-the-reply.json",
        Claim::Claimed,
        "I13",
        "a valid call to offered tool drawings_list never reached its body: it got ABORTED, but the run was neither stopped nor at its turn limit",
    );
}

#[test]
fn openai_agents_a_reused_call_id_fails_the_whole_reply() {
    replays(
        "openai-agents",
        "findings/openai-agents/reused-call-id-fails-the-reply.json",
        Claim::Claimed,
        "I13",
        "a valid call to offered tool panes_list never reached its body: it got ABORTED, but the run was neither stopped nor at its turn limit",
    );
}

#[test]
fn openai_agents_a_refused_calls_result_is_sent_last() {
    replays(
        "openai-agents",
        "findings/openai-agents/refused-call-result-sent-last.json",
        Claim::Claimed,
        "I6",
        r#"ids ["call_10", "call_9"] for calls ["call_9", "call_10"]"#,
    );
}

#[test]
fn openai_agents_the_turn_limit_ends_the_run_before_the_last_reply() {
    replays(
        "openai-agents",
        "findings/openai-agents/turn-limit-before-the-last-reply.json",
        Claim::Claimed,
        "I10",
        "the run failed TOOL_LOOP_LIMIT after 1 replies with calls, with turns_max 1",
    );
}

#[test]
fn openai_agents_retry_after_is_not_capped() {
    replays(
        "openai-agents",
        "findings/openai-agents/retry-after-not-capped.json",
        Claim::NotClaimed,
        "I14",
        "the model expected the provider to be asked at 60000 ms, it was asked at 90000 ms",
    );
}

#[test]
fn openai_agents_a_reused_call_id_rewrites_the_history() {
    replays(
        "openai-agents",
        "findings/openai-agents/reused-id-rewrites-the-history.json",
        Claim::Claimed,
        "I6",
        r#"the request of turn 1 attempt 0: the batch of 1 calls got 0 results, ids [] for calls ["call_9"]"#,
    );
}

#[test]
fn openai_agents_a_call_id_reused_in_a_later_turn_fails_the_run() {
    replays(
        "openai-agents",
        "findings/openai-agents/id-reused-next-turn-fails-the-run.json",
        Claim::Claimed,
        "I13",
        "a valid call to offered tool drawings_list never reached its body: it got ABORTED, but the run was neither stopped nor at its turn limit",
    );
}

#[test]
fn openai_agents_an_identical_call_reused_in_a_later_turn_is_skipped() {
    replays(
        "openai-agents",
        "findings/openai-agents/id-reused-next-turn-is-skipped.json",
        Claim::Claimed,
        "I13",
        "a valid call to offered tool panes_list never reached its body: it got ABORTED, but the run was neither stopped nor at its turn limit",
    );
}

#[test]
fn langgraph_an_outside_effect_runs_again_after_a_crash() {
    replays_crash(
        "langgraph",
        "findings/langgraph/outside-effect-runs-again.crash.json",
        Claim::NotClaimed,
        "I15",
        "the body of code_interpreter call call_1 of run 0 started 2 times",
    );
    replays_crash(
        "langgraph",
        "findings/langgraph/outside-effect-runs-again.crash.json",
        Claim::NotClaimed,
        "I17",
        "code_interpreter call call_1 started, a crash cut it, and it got a success instead of OUTCOME_UNKNOWN",
    );
}

#[test]
fn langgraph_a_call_that_is_not_json_gets_no_result() {
    replays(
        "langgraph",
        "findings/langgraph/not-json-gets-no-result.json",
        Claim::Claimed,
        "I6",
        r#"the batch of 2 calls got 1 results, ids ["call_10"] for calls ["call_9", "call_10"]"#,
    );
}

#[test]
fn langgraph_a_write_in_a_read_only_run_is_validated_before_it_is_refused() {
    replays(
        "langgraph",
        "findings/langgraph/read-only-write-validated-first.json",
        Claim::Claimed,
        "I2",
        "drawing_update in a read-only run got TOOL_INPUT_INVALID instead of TOOL_NOT_ALLOWED",
    );
}

#[test]
fn langgraph_a_repeated_key_reaches_the_body() {
    replays(
        "langgraph",
        "findings/langgraph/duplicate-key-reaches-body.json",
        Claim::Claimed,
        "I5",
        "the body of market_bars_query ran with input that R3 refuses before any body runs: the object at / repeats the key \"limit\"",
    );
}

#[test]
fn langgraph_a_last_reply_at_the_turn_limit_fails_the_run() {
    replays(
        "langgraph",
        "findings/langgraph/last-reply-at-the-turn-limit.json",
        Claim::Claimed,
        "I10",
        "the run failed TOOL_LOOP_LIMIT after 1 replies with calls, with turns_max 1: no further reply with calls came",
    );
    replays(
        "langgraph",
        "findings/langgraph/last-reply-at-the-turn-limit.json",
        Claim::Claimed,
        "I13",
        "the provider stopped calling tools but the run did not end run.completed",
    );
}

/// The adapters' glue, not an SDK: a body's start names its call by its guarded id (R22).
#[test]
fn every_adapter_names_a_body_by_its_guarded_call_id() {
    for runtime in ["ai", "openai-agents", "pi", "langgraph"] {
        names_a_body_by_its_guarded_call_id(runtime);
    }
}

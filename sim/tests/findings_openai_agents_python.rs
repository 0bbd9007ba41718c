//! Every finding about the OpenAI Agents SDK for Python (`findings/openai-agents-python.md`)
//! replays: its committed scenario file, run through `ward replay --runtime` against
//! `adapters/python/openai-agents.py` (`openai-agents` 0.24.0, pinned in
//! `adapters/python/uv.lock`), breaks the invariant the finding names, with the explanation it
//! quotes. Two more files hold where the adapter keeps a rule the SDK leaves to it: a repeated
//! key is refused before any body runs (R6), and a cancel lets a running write complete (R20).
//!
//! The scenarios are those of the JavaScript SDK's findings (`findings/openai-agents/`), so the
//! two SDKs are compared on the same input. The adapter needs Python and its environment
//! (`uv sync --project adapters/python --frozen`). Without them each test says why it did not
//! run and passes: ward's own tests never depend on Python.
//!
//! The tests take turns (`one_at_a_time`): each replay starts the adapter twice, importing the
//! SDK takes seconds of CPU, and a dozen starts at once on a small machine would slow every
//! one past ward's watchdogs.

mod common;

use std::sync::{Mutex, MutexGuard};

use common::replay::{Claim, names_a_body_by_its_guarded_call_id, replay_of, replays};

const RUNTIME: &str = "openai-agents-python";

/// One replay at a time in this file (a failed test leaves the lock usable).
fn one_at_a_time() -> MutexGuard<'static, ()> {
    static TURN: Mutex<()> = Mutex::new(());
    TURN.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[test]
fn openai_agents_python_an_empty_call_id_fails_the_whole_reply() {
    let _turn = one_at_a_time();
    replays(
        RUNTIME,
        "findings/openai-agents-python/empty-call-id-fails-the-reply.json",
        Claim::Claimed,
        "I13",
        "a valid call to offered tool drawings_list never reached its body: it got ABORTED, but the run was neither stopped nor at its turn limit",
    );
}

#[test]
fn openai_agents_python_a_reused_call_id_fails_the_whole_reply() {
    let _turn = one_at_a_time();
    replays(
        RUNTIME,
        "findings/openai-agents-python/reused-call-id-fails-the-reply.json",
        Claim::Claimed,
        "I13",
        "a valid call to offered tool panes_list never reached its body: it got ABORTED, but the run was neither stopped nor at its turn limit",
    );
}

#[test]
fn openai_agents_python_a_refused_calls_result_is_sent_last() {
    let _turn = one_at_a_time();
    replays(
        RUNTIME,
        "findings/openai-agents-python/refused-call-result-sent-last.json",
        Claim::Claimed,
        "I6",
        r#"the batch of 2 calls got 2 results, ids ["call_10", "call_9"] for calls ["call_9", "call_10"]"#,
    );
}

#[test]
fn openai_agents_python_a_reused_call_id_rewrites_the_history() {
    let _turn = one_at_a_time();
    replays(
        RUNTIME,
        "findings/openai-agents-python/reused-id-rewrites-the-history.json",
        Claim::Claimed,
        "I6",
        r#"the batch of 1 calls got 0 results, ids [] for calls ["call_9"]"#,
    );
}

#[test]
fn openai_agents_python_the_turn_limit_ends_the_run_before_the_last_reply() {
    let _turn = one_at_a_time();
    replays(
        RUNTIME,
        "findings/openai-agents-python/turn-limit-before-the-last-reply.json",
        Claim::Claimed,
        "I10",
        "the run failed TOOL_LOOP_LIMIT after 1 replies with calls, with turns_max 1: no further reply with calls came",
    );
}

#[test]
fn openai_agents_python_retry_after_is_not_capped() {
    let _turn = one_at_a_time();
    replays(
        RUNTIME,
        "findings/openai-agents-python/retry-after-not-capped.json",
        Claim::NotClaimed,
        "I14",
        "the model expected the provider to be asked at 60000 ms, it was asked at 90000 ms",
    );
}

#[test]
fn openai_agents_python_a_call_id_reused_in_a_later_turn_fails_the_run() {
    let _turn = one_at_a_time();
    replays(
        RUNTIME,
        "findings/openai-agents-python/id-reused-next-turn-fails-the-run.json",
        Claim::Claimed,
        "I13",
        "a valid call to offered tool drawings_list never reached its body: it got ABORTED, but the run was neither stopped nor at its turn limit",
    );
}

#[test]
fn openai_agents_python_an_identical_call_reused_in_a_later_turn_is_skipped() {
    let _turn = one_at_a_time();
    replays(
        RUNTIME,
        "findings/openai-agents-python/id-reused-next-turn-is-skipped.json",
        Claim::Claimed,
        "I13",
        "a valid call to offered tool panes_list never reached its body: it got ABORTED, but the run was neither stopped nor at its turn limit",
    );
}

/// Replays `file` against the adapter and checks that every invariant held (none violated, none
/// reported `not claimed` either), or says why the adapter cannot run here.
fn holds(file: &str) {
    let Some((stdout, stderr, success)) = replay_of(RUNTIME, file) else {
        return;
    };
    let held = stdout.lines().any(|line| line == "all invariants held");
    assert!(
        held && success,
        "{file} against {RUNTIME}:\n{stdout}\n{stderr}"
    );
}

/// The adapter's, not the SDK's: the Python SDK hands a FunctionTool built from a JSON Schema
/// the raw argument text, and the adapter's parser refuses a repeated key (R6) where the
/// JavaScript SDK's `JSON.parse` let it reach the body (`findings/openai-agents.md`, 1).
#[test]
fn openai_agents_python_a_repeated_key_is_refused_before_the_body() {
    let _turn = one_at_a_time();
    holds("findings/openai-agents-python/duplicate-key-refused.json");
}

/// The adapter's, not the SDK's: cancelling the run's task cancels every tool task, and the
/// adapter shields a running write from it, so the write completes and keeps its result while
/// the calls after it get `ABORTED` (R20).
#[test]
fn openai_agents_python_a_cancel_lets_the_running_write_complete() {
    let _turn = one_at_a_time();
    holds("findings/openai-agents-python/running-write-completes-on-cancel.json");
}

/// The adapter's glue, not the SDK: a body's start names its call by its guarded id (R22).
#[test]
fn openai_agents_python_names_a_body_by_its_guarded_call_id() {
    let _turn = one_at_a_time();
    names_a_body_by_its_guarded_call_id(RUNTIME);
}

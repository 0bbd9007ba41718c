//! Every finding about Workflow DevKit's durable agent (`findings/workflow-devkit.md`) replays:
//! its committed scenario or crash plan file, run through `ward replay --runtime` against
//! `adapters/node/workflow-devkit.js` (`@workflow/ai` 5.0.0 on `workflow` 4.8.9 and
//! `@workflow/world-local` 4.4.1), breaks the invariant the finding names, with the
//! explanation it quotes.
//!
//! The adapter needs Node and its packages (`npm ci --prefix adapters/node`). Without them each
//! test says why it did not run and passes: ward's own tests never depend on Node.

mod common;

use common::replay::{
    Claim, holds_crash, names_a_body_by_its_guarded_call_id, replays, replays_crash,
};

const RUNTIME: &str = "workflow-devkit";

#[test]
fn workflow_devkit_a_repeated_key_reaches_the_body() {
    replays(
        RUNTIME,
        "findings/workflow-devkit/duplicate-key-reaches-body.json",
        Claim::Claimed,
        "I5",
        "the body of market_timeshare_range_query ran with input that R3 refuses before any body runs: the object at / repeats the key \"symbol\"",
    );
}

#[test]
fn workflow_devkit_an_invalid_input_fails_the_whole_run() {
    replays(
        RUNTIME,
        "findings/workflow-devkit/invalid-input-fails-the-run.json",
        Claim::NotClaimed,
        "I14",
        "the model expected TOOL_INPUT_INVALID for market_timeshare_range_query; the call got ABORTED",
    );
}

#[test]
fn workflow_devkit_a_batchs_bodies_start_after_the_reply() {
    replays(
        RUNTIME,
        "findings/workflow-devkit/batch-starts-late.json",
        Claim::Claimed,
        "I12",
        "in a parallel batch starting at 0 ms, call 0 started at 40 ms",
    );
}

/// Finding 3 at a run's end: the final reply's step, too, returns only when its stream is
/// written through, and a cancel in between ends the run cancelled, not completed.
#[test]
fn workflow_devkit_a_run_ends_after_its_final_reply() {
    replays(
        RUNTIME,
        "findings/workflow-devkit/final-reply-ends-late.json",
        Claim::Claimed,
        "I13",
        "the provider stopped calling tools but the run did not end run.completed",
    );
}

/// Finding 4: core's step handler counts every start of a step as an attempt, a start that a
/// crash cut too; at the fifth start of the model's step the run fails (R33 claimed).
#[test]
fn workflow_devkit_a_step_cut_by_four_crashes_fails_the_run() {
    replays_crash(
        RUNTIME,
        "findings/workflow-devkit/step-fails-after-four-crashes.crash.json",
        Claim::Claimed,
        "I19",
        r#"run 0 ended with {"record":"report","outcome":"run.failed","code":"INTERNAL_ERROR","batches":0,"calls":0} after the crashes"#,
    );
}

/// Finding 5: a run DurableAgent fails (finding 2) still runs the steps it had queued, but
/// not after a crash: recovery takes up no failed run, so a write never runs.
#[test]
fn workflow_devkit_a_failed_runs_queued_steps_are_lost_in_a_crash() {
    replays_crash(
        RUNTIME,
        "findings/workflow-devkit/failed-run-loses-queued-steps.crash.json",
        Claim::Claimed,
        "I19",
        r#"run 2: message 3 it kept is {"role":"tool","callId":"call_16","name":"drawing_create","result":{"success":false,"error":{"code":"ABORTED""#,
    );
}

/// The adapter's part after a crash, fixed: a read body cut by a crash runs again (its step
/// keeps core's retries), a call whose step finished before the crash gets its journaled
/// result, and the next run's history keeps a result acknowledged under a guarded call id.
#[test]
fn workflow_devkit_resumes_as_without_a_crash_where_the_sdk_does() {
    for plan in [
        "read-body-cut-runs-again",
        "finished-step-after-a-crash",
        "guarded-call-id-after-a-crash",
    ] {
        holds_crash(
            RUNTIME,
            &format!("adapters/node/test/plans/{plan}.crash.json"),
        );
    }
}

/// The adapter's glue, not the SDK: a body's start names its call by its guarded id (R22).
#[test]
fn workflow_devkit_names_a_body_by_its_guarded_call_id() {
    names_a_body_by_its_guarded_call_id(RUNTIME);
}

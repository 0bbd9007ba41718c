//! Every finding about Workflow DevKit's durable agent (`findings/workflow-devkit.md`) replays:
//! its committed scenario or crash plan file, run through `ward replay --runtime` against
//! `adapters/node/workflow-devkit.js` (`@workflow/ai` 5.0.0 on `workflow` 4.8.9 and
//! `@workflow/world-local` 4.4.1), breaks the invariant the finding names, with the
//! explanation it quotes.
//!
//! The adapter needs Node and its packages (`npm ci --prefix adapters/node`). Without them each
//! test says why it did not run and passes: ward's own tests never depend on Node.

mod common;

use common::replay::{Claim, names_a_body_by_its_guarded_call_id, replays};

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

/// The adapter's glue, not the SDK: a body's start names its call by its guarded id (R22).
#[test]
fn workflow_devkit_names_a_body_by_its_guarded_call_id() {
    names_a_body_by_its_guarded_call_id(RUNTIME);
}

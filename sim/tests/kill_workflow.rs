//! Kill mode for real against Workflow DevKit's durable agent (SPEC §17 P9, I11): every plan of
//! a range of seeds, drawn against `adapters/node/workflow-devkit.js` and played in drop mode
//! (the adapter drops the world and the run in place and opens a new world on the same
//! directory), is played again with `SIGKILL` to the adapter's process group at the same
//! boundaries, on world-local's JSON files in a fresh store directory; the two executions give
//! the same digest (the trace and every byte of the store directory after each crash and at
//! the end) and the same durable verdict.
//!
//! The same check as `kill_langgraph.rs` makes for LangGraph, for the other durable adapter. It
//! needs Node and the adapters' packages (`npm ci --prefix adapters/node`); without them it
//! says why and passes. `WARD_KILL_WORKFLOW_SEEDS=A..B` widens the range (the default is kept
//! short: each kill starts a Node process that loads the SDK, about two seconds).

mod common;

use common::kill::kill_matches_drop;

#[test]
fn workflow_devkit_killed_at_every_drop_of_every_plan_gives_the_drop_modes_digest_and_verdict() {
    kill_matches_drop("workflow-devkit", "WARD_KILL_WORKFLOW_SEEDS", 0..3);
}

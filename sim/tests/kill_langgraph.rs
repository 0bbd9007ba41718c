//! Kill mode for real against LangGraph JS (SPEC §17 P9, I11): every plan of a range of seeds,
//! drawn against `adapters/node/langgraph.js` and played in drop mode, is played again with
//! `SIGKILL` to the adapter's process group at the same boundaries, on a real SQLite file in a
//! fresh store directory; the two executions give the same digest (the trace and every byte
//! of the store directory after each crash and at the end) and the same durable verdict.
//!
//! The campaign's own rerun plays one plan in twenty this way
//! (`ward_sim::explore::KILL_RERUN_EVERY`); this test plays every plan of its range. It needs
//! Node and the adapters' packages (`npm ci --prefix adapters/node`); without them it says why
//! and passes. `WARD_KILL_SEEDS=A..B` widens the range (the default is kept short: each plan
//! starts a Node process per execution and per kill).

mod common;

use common::kill::kill_matches_drop;

#[test]
fn langgraph_killed_at_every_drop_of_every_plan_gives_the_drop_modes_digest_and_verdict() {
    kill_matches_drop("langgraph", "WARD_KILL_SEEDS", 0..8);
}

//! Kill mode for real against LangGraph for Python (SPEC §17 P9, I11): every plan of a range of
//! seeds, drawn against `adapters/python/langgraph-agent.py` and played in drop mode, is played
//! again with `SIGKILL` to the adapter's process group at the same boundaries, on a real SQLite
//! file in a fresh store directory; the two executions give the same digest (the trace and
//! every byte of the store directory after each crash and at the end) and the same durable
//! verdict.
//!
//! The campaign's own rerun plays one plan in twenty this way; this test plays every plan of
//! its range. It needs Python and the adapters' environment (`uv sync --project
//! adapters/python --frozen`); without them it says why and passes.
//! `WARD_KILL_PYTHON_SEEDS=A..B` widens the range (the default is kept short: each plan starts
//! a Python process, LangGraph's imports and all, per execution and per kill).

mod common;

use common::kill::kill_matches_drop;

#[test]
fn langgraph_python_killed_at_every_drop_of_every_plan_gives_the_drop_modes_digest_and_verdict() {
    kill_matches_drop("langgraph-python", "WARD_KILL_PYTHON_SEEDS", 0..6);
}

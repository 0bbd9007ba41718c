//! The crash explorer (SPEC §16, §17): durable sessions of ward's core, crashed and resumed
//! through the protocol's seam, and checked for I15–I19 on what crossed the boundary.
//!
//! A [`Plan`] is one session of one or more runs over the real chart catalogue (with
//! `code_interpreter`, whose effect lives outside the store, R32), a provider script per turn,
//! configured secrets and a planted credential in every prompt. The world plays it as a
//! scenario ([`Plan::scenario`]) through [`Runtime`](crate::protocol::Runtime), the seam every
//! runtime answers, against ward's core with its sessions in a
//! [`DurableStore`](ward_core::durable::DurableStore) on a
//! [`SimulatedDisk`](crate::world::disk::SimulatedDisk). [`crate::explore`] executes a plan
//! twice:
//!
//! - the **reference**: no fault; it counts the storage calls a whole session makes;
//! - the **crashed** execution: a list of [`Crash`]es, each a storage call at which the
//!   process dies — the disk is cut there (every later call fails, and redb's commit may be
//!   torn part way), or one write or sync fails and the store stops (R35) — then the disk is
//!   what a crash or a power loss leaves
//!   ([`after_crash`](crate::world::disk::SimulatedDisk::after_crash),
//!   [`after_power_loss`](crate::world::disk::SimulatedDisk::after_power_loss)). The world
//!   records the crash, starts a fresh core on the disk, resets it and sends `recover`, as it
//!   does for any durable runtime (SPEC §17 P9). A crash at a storage call is also a crash at
//!   a step boundary: each step of a run ends with its commit (R30), so the last call of one
//!   commit and the first of the next sit on either side of one boundary.
//!
//! Everything the oracles see is the trace's (`crate::oracle::durable::story`): requests,
//! replies, body starts, the appends the store acknowledged, crashes and recoveries, reports,
//! ward's chart; and every byte written to each disk (the world's). A failing plan is shrunk
//! ([`crate::shrink::plan`]) while the same check fails, crashes and all, and written as a
//! crash plan file ([`file`]) that `ward replay FILE` explores again; `ward replay --crashes
//! SEED --trace F.jsonl` writes the crashed execution's trace.
//!
//! Any durable runtime, ward's core on real files or one behind its adapter (`ward run
//! --crashes --runtime CMD`), is crashed at lockstep boundaries instead ([`drop`]: a plan's
//! [`CrashKind::Drop`]s, drawn within the boundaries its reference passed), one plan in
//! twenty again in kill mode ([`kill`]), and judged by the same checks.
//!
//! What the seam cannot show is not judged: ward's chart is the world's (P10), so the chart
//! the core keeps in its store is a mirror, and a body the resumed core runs again carries
//! its idempotency key and changes nothing. A chart committed apart from its result
//! (`result-apart-from-write`) therefore leaves nothing on the wire; it is caught at the
//! core's own API, where the chart lives in the store (`core/tests/durable_driver.rs`).
//!
//! The explorer is deterministic: one [`SimRng`](crate::rng::SimRng) per plan (power loss
//! draws from it), virtual time, no wall clock. `ward run --crashes` explores each seed's plan
//! after the seed's scenario, drawing the plan's runs, calls and crashes (how many, where, of
//! which kind) from the seed.

pub mod drop;
mod execute;
pub mod file;
pub mod kill;
mod plan;

pub use execute::{Execution, Process, explore_once};

/// How the trace names a crash at a lockstep boundary: the same in kill and in drop mode, so
/// that the two modes leave the same trace (P9).
fn after_answer(boundary: u64) -> String {
    format!("crashed after answer {boundary}")
}
pub use plan::{CLOSING_PROMPT, Crash, CrashKind, Plan, RunPlan, generate};

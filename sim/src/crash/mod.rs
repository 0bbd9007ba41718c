//! The crash explorer (SPEC §16): durable sessions of ward's core, crashed and resumed, and
//! checked for I15–I19.
//!
//! A [`Plan`] is one session of one or more runs over the real chart catalogue (with
//! `code_interpreter`, whose effect lives outside the store, R32), a provider script per turn,
//! configured secrets and a planted credential in every prompt. [`crate::explore`] executes
//! it twice, each time with [`DurableStore`](ward_core::durable::DurableStore) on a [`SimulatedDisk`](crate::world::disk::SimulatedDisk) and the core's own driver:
//!
//! - the **reference**: no fault; it counts the storage calls a whole session makes;
//! - the **crashed** execution: a list of [`Crash`]es, each a storage call of one process's
//!   life at which the process dies — the disk is cut there (every later call fails, and
//!   redb's commit may be torn part way), or one write or sync fails and the store stops
//!   (R35) — then the disk is what a crash or a power loss leaves
//!   ([`after_crash`](crate::world::disk::SimulatedDisk::after_crash), [`after_power_loss`](crate::world::disk::SimulatedDisk::after_power_loss)), a new process
//!   reopens the store, restores the chart ([`Session::open`](ward_core::driver::Session::open)) and resumes the cut run
//!   ([`Session::resume`](ward_core::driver::Session::resume)) or starts the next one. A crash at a storage call is also a crash
//!   at every step boundary: each step of a run ends with its commit (R30), so the last call
//!   of one commit and the first of the next sit on either side of one boundary; a body that
//!   finished just before the crash, or a reply that arrived just before it, is one whose
//!   commit the crash cut.
//!
//! Everything the oracles see is at the boundaries: what the provider was asked and what it
//! answered, every body's start (by run and call id), every commit the store acknowledged
//! (through [`Observed`], a store wrapper that keeps what each `commit` that returned `Ok`
//! carried), the journal each reopened store recovers, the chart each process ends with,
//! and every byte written to each disk. The checks (one file each, `crate::oracle::durable::i15_…`
//! to `i19_…`) compare the crashed execution with the reference: crashes must change nothing
//! but what R32 fixes — a call whose outside effect was cut gets `OUTCOME_UNKNOWN` — and
//! must lose nothing acknowledged.
//!
//! Every step of an execution is noted in order ([`Step`], the trace of `ward replay
//! --crashes SEED --trace F.jsonl`): a crash and a resume are steps like a request or a commit.
//! A failing plan is shrunk ([`crate::shrink::plan`]) while the same check fails, crashes and
//! all, and written as a crash plan file ([`file`]) that `ward replay FILE` explores again.
//! This module executes; [`crate::explore`] judges what it saw (`crate::oracle::durable`).
//!
//! The explorer is its own harness beside the campaign's: `ward run --crashes` explores each
//! seed's plan after the seed's scenario, drawing the plan's runs, calls and crashes (how many,
//! where, of which kind) from the seed. It is deterministic: one [`SimRng`](crate::rng::SimRng) per plan, virtual
//! time, no wall clock.

mod execute;
pub mod file;
mod plan;

pub use execute::{
    Acknowledging, BodyStart, Ended, Execution, Observations, Observed, Process, Request, SESSION,
    Step, catalogue, explore_once, go_on,
};
pub use plan::{Crash, CrashKind, Plan, RunPlan, generate};

//! The crash explorer (SPEC §16): durable sessions of ward's core, crashed and resumed, and
//! checked for I15–I19.
//!
//! A [`Plan`] is one session of one or more runs over the real chart catalogue (with
//! `code_interpreter`, whose effect lives outside the store, R32), a provider script per turn,
//! configured secrets and a planted credential in every prompt. [`explore`] executes it
//! twice, each time with [`DurableStore`] on a [`SimulatedDisk`] and the core's own driver:
//!
//! - the **reference**: no fault; it counts the storage calls a whole session makes;
//! - the **crashed** execution: a list of [`Crash`]es, each a storage call of one process's
//!   life at which the process dies — the disk is cut there (every later call fails, and
//!   redb's commit may be torn part way), or one write or sync fails and the store stops
//!   (R35) — then the disk is what a crash or a power loss leaves
//!   ([`SimulatedDisk::after_crash`], [`SimulatedDisk::after_power_loss`]), a new process
//!   reopens the store, restores the chart ([`Session::open`]) and resumes the cut run
//!   ([`Session::resume`]) or starts the next one. A crash at a storage call is also a crash
//!   at every step boundary: each step of a run ends with its commit (R30), so the last call
//!   of one commit and the first of the next sit on either side of one boundary; a body that
//!   finished just before the crash, or a reply that arrived just before it, is one whose
//!   commit the crash cut.
//!
//! Everything the oracles see is at the boundaries: what the provider was asked and what it
//! answered, every body's start (by run and call id), every commit the store acknowledged
//! (through [`Observed`], a store wrapper that keeps what each `commit` that returned `Ok`
//! carried), the journal each reopened store recovers, the chart each process ends with,
//! and every byte written to each disk. The checks (one file each, `crate::oracle::i15_…`
//! to `i19_…`) compare the crashed execution with the reference: crashes must change nothing
//! but what R32 fixes — a call whose outside effect was cut gets `OUTCOME_UNKNOWN` — and
//! must lose nothing acknowledged.
//!
//! Every step of an execution is noted in order ([`Step`], the trace of `ward replay
//! --crashes SEED --trace F.jsonl`): a crash and a resume are steps like a request or a commit.
//! A failing plan is shrunk ([`shrink`]) while the same check fails, crashes and all, and
//! written as a crash plan file ([`file`]) that `ward replay FILE` explores again.
//!
//! The explorer is its own harness beside the campaign's: `ward run --crashes` explores each
//! seed's plan after the seed's scenario, drawing the plan's runs, calls and crashes (how many,
//! where, of which kind) from the seed. It is deterministic: one [`SimRng`] per plan, virtual
//! time, no wall clock.

mod execute;
pub mod file;
mod plan;
pub mod shrink;

pub use execute::{
    Acknowledging, BodyStart, Ended, Execution, Observations, Observed, Process, Request, SESSION,
    Step, catalogue, explore_once, go_on,
};
pub use plan::{Crash, CrashKind, Plan, RunPlan, generate};

use ward_core::fault::FaultSet;

use crate::oracle::durable::{self, DurableVerdict};
use crate::rng::SimRng;

/// What one plan came to: the reference, the crashed execution, and every breach found.
pub struct Exploration {
    /// The plan, with its crashes.
    pub plan: Plan,
    /// The execution without crashes.
    pub reference: Execution,
    /// The execution with the plan's crashes.
    pub crashed: Execution,
    /// What the checks of I15–I19 found.
    pub verdict: DurableVerdict,
}

impl Exploration {
    /// The digest of what the execution with crashes left: its journal, its chart and every
    /// byte it wrote, so that the same plan gives the same digest (I11's promise, kept by the
    /// explorer too).
    pub fn digest(&self) -> u64 {
        let mut hasher = xxhash_rust::xxh3::Xxh3::new();
        hasher.update(
            serde_json::to_string(&self.crashed.journal)
                .unwrap_or_default()
                .as_bytes(),
        );
        hasher.update(
            serde_json::to_string(&self.crashed.chart)
                .unwrap_or_default()
                .as_bytes(),
        );
        for bytes in &self.crashed.written {
            hasher.update(&(bytes.len() as u64).to_le_bytes());
            hasher.update(bytes);
        }
        hasher.digest()
    }

    /// The crashes the plan held (some may not happen: a session can end before one).
    pub fn planned(&self) -> usize {
        self.plan.crashes.len()
    }

    /// How many crashes of each kind of [`CrashKind::ALL`] happened.
    pub fn crashes(&self) -> [u64; 4] {
        let mut counts = [0; 4];
        for process in &self.crashed.processes {
            if let (true, Some(crash)) = (process.crashed, process.crash) {
                let kind = CrashKind::ALL.iter().position(|kind| *kind == crash.kind);
                if let Some(kind) = kind {
                    counts[kind] += 1;
                }
            }
        }
        counts
    }
}

/// Executes `plan` without and with its crashes, under `faults`, and checks I15–I19.
pub fn explore(plan: &Plan, faults: FaultSet) -> Exploration {
    let reference = explore_once(plan, faults, &[], &mut SimRng::new(plan.seed));
    let crashed = explore_once(plan, faults, &plan.crashes, &mut SimRng::new(plan.seed));
    let verdict = durable::check(plan, &reference, &crashed);
    Exploration {
        plan: plan.clone(),
        reference,
        crashed,
        verdict,
    }
}

/// The plan of `seed` with its crashes, drawn within the storage calls its reference makes
/// under `faults` (what [`explore_seed`] explores).
pub fn plan_of_seed(seed: u64, faults: FaultSet) -> Plan {
    drawn(seed, faults).0
}

/// The plan of `seed` with its crashes drawn, and its reference: the execution without them.
fn drawn(seed: u64, faults: FaultSet) -> (Plan, Execution) {
    let mut plan = generate(seed);
    let reference = explore_once(&plan, faults, &[], &mut SimRng::new(plan.seed));
    plan.draw_crashes(reference.storage_calls);
    (plan, reference)
}

/// Generates the plan of `seed`, with crashes drawn within the storage calls its reference
/// makes, and explores it.
pub fn explore_seed(seed: u64, faults: FaultSet) -> Exploration {
    let (plan, reference) = drawn(seed, faults);
    let crashed = explore_once(&plan, faults, &plan.crashes, &mut SimRng::new(plan.seed));
    let verdict = durable::check(&plan, &reference, &crashed);
    Exploration {
        plan,
        reference,
        crashed,
        verdict,
    }
}

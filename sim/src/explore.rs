//! One crash plan end to end (SPEC §16): executed without and with its crashes by the crash
//! explorer ([`crate::crash`]), and the two executions judged for I15–I19
//! ([`crate::oracle::durable`]), as [`crate::simulate`] does for a scenario.

use ward_core::fault::FaultSet;

use crate::crash::drop::execute_dropping;
use crate::crash::kill::execute_killing;
use crate::crash::{CrashKind, Execution, Plan, explore_once, generate};
use crate::oracle::Breach;
use crate::oracle::durable::{self, DurableBreach, DurableVerdict};
use crate::rng::SimRng;
use crate::trace;
use crate::world::store_dir::StoreDir;

/// What one plan came to: the reference, the crashed execution, and every breach found.
pub struct Exploration {
    /// The plan, with its crashes.
    pub plan: Plan,
    /// The execution without crashes.
    pub reference: Execution,
    /// The execution with the plan's crashes.
    pub crashed: Execution,
    /// What the checks of I15–I19 found, and I11's when the plan was also played in kill
    /// mode.
    pub verdict: DurableVerdict,
    /// Whether the plan was also played in kill mode ([`KILL_RERUN_EVERY`]).
    pub killed: bool,
}

/// One plan in this many (its seed a multiple) played against an adapter in drop mode is
/// played again in kill mode, `SIGKILL` at the same boundaries, and must give the same digest
/// (SPEC §17 P9, as I11 asks of a rerun).
pub const KILL_RERUN_EVERY: u64 = 20;

impl Exploration {
    /// The digest of the execution with crashes ([`Execution::digest`]).
    pub fn digest(&self) -> u64 {
        self.crashed.digest()
    }

    /// How many results the execution with crashes acknowledged as `OUTCOME_UNKNOWN`.
    pub fn outcome_unknown(&self) -> usize {
        (self.crashed.trace.runs.iter())
            .flat_map(|run| &run.records)
            .filter(|record| {
                matches!(record, crate::world::Record::Append { message }
                    if matches!(&**message, ward_core::session::Message::Tool { result, .. }
                        if result.error_code() == Some("OUTCOME_UNKNOWN")))
            })
            .count()
    }

    /// The crashes the plan held (some may not happen: a session can end before one).
    pub fn planned(&self) -> usize {
        self.plan.crashes.len()
    }

    /// How many crashes of each kind of [`CrashKind::ALL`] happened, and drops last.
    pub fn crashes(&self) -> [u64; 5] {
        let mut counts = [0; 5];
        for process in &self.crashed.processes {
            if let (true, Some(crash)) = (process.crashed, process.crash) {
                let kind = CrashKind::ALL.iter().position(|kind| *kind == crash.kind);
                counts[kind.unwrap_or(CrashKind::ALL.len())] += 1;
            }
        }
        counts
    }
}

/// Executes `plan` without and with its crashes, under `faults`, and checks I15–I19: on the
/// simulated disk when its crashes are storage faults, against ward's core on files when they
/// are drops ([`CrashKind::Drop`]).
pub fn explore(plan: &Plan, faults: FaultSet) -> Exploration {
    explore_on(plan, faults, None)
}

/// [`explore`], a plan of drops played against the runtime behind the adapter command
/// `runtime` when one is given (a plan of storage faults is ward's core's alone).
pub fn explore_on(plan: &Plan, faults: FaultSet, runtime: Option<&str>) -> Exploration {
    let (reference, crashed) = if plan.drops() || runtime.is_some() {
        let (reference, _) = execute_dropping(plan, faults, &[], runtime);
        let (crashed, _) = execute_dropping(plan, faults, &plan.crashes, runtime);
        (reference, crashed)
    } else {
        let reference = explore_once(plan, faults, &[], &mut SimRng::new(plan.seed));
        let crashed = explore_once(plan, faults, &plan.crashes, &mut SimRng::new(plan.seed));
        (reference, crashed)
    };
    judged(plan.clone(), reference, crashed, runtime)
}

/// The exploration of `plan` from its two executions: I15–I19 judged, and against an
/// adapter, one plan in [`KILL_RERUN_EVERY`] played again in kill mode (I11).
fn judged(
    plan: Plan,
    reference: Execution,
    crashed: Execution,
    runtime: Option<&str>,
) -> Exploration {
    let mut verdict = durable::check(&plan, &reference, &crashed);
    let rerun = runtime.filter(|_| plan.seed.is_multiple_of(KILL_RERUN_EVERY) && plan.drops());
    if let Some(command) = rerun
        && let Some(breach) = kill_differs(&plan, command, &crashed)
    {
        verdict.breaches.push(breach);
    }
    if let Some(claims) = &crashed.claims {
        verdict.apply_claims(claims);
    }
    Exploration {
        plan,
        reference,
        crashed,
        verdict,
        killed: rerun.is_some(),
    }
}

/// Plays `plan` against `command` in kill mode at the boundaries of its drops: a breach of
/// I11 when the digest differs from the drop mode's `dropped`.
fn kill_differs(plan: &Plan, command: &str, dropped: &Execution) -> Option<DurableBreach> {
    let kills: Vec<u64> = plan.crashes.iter().map(|crash| crash.at).collect();
    let message = match StoreDir::new() {
        Ok(store_dir) => {
            let (killed, _) = execute_killing(plan, command, store_dir.path(), &kills);
            if killed.digest() == dropped.digest() {
                return None;
            }
            let (a, b) = (trace::digest(&killed.trace), trace::digest(&dropped.trace));
            format!(
                "plan {} gave crash digest {:016x} in kill mode and {:016x} in drop mode (traces {a:016x} and {b:016x}{})",
                plan.seed,
                killed.digest(),
                dropped.digest(),
                match (&killed.failure, &dropped.failure) {
                    (Some(failure), _) | (None, Some(failure)) => format!("; {failure}"),
                    (None, None) => String::new(),
                }
            )
        }
        Err(error) => format!("no store directory for kill mode: {error}"),
    };
    Some(DurableBreach {
        breach: Breach::TraceDiffers,
        message,
    })
}

/// The plan of `seed` with its crashes, drawn within the storage calls its reference makes
/// under `faults` (what [`explore_seed`] explores), or within the boundaries it passes
/// against the runtime behind `runtime`.
pub fn plan_of_seed(seed: u64, faults: FaultSet, runtime: Option<&str>) -> Plan {
    drawn(seed, faults, runtime).0
}

/// The plan of `seed` with its crashes drawn, and its reference: the execution without them.
fn drawn(seed: u64, faults: FaultSet, runtime: Option<&str>) -> (Plan, Execution) {
    let mut plan = generate(seed);
    if runtime.is_some() {
        let (reference, boundaries) = execute_dropping(&plan, faults, &[], runtime);
        plan.draw_drops(boundaries);
        return (plan, reference);
    }
    let reference = explore_once(&plan, faults, &[], &mut SimRng::new(plan.seed));
    plan.draw_crashes(reference.storage_calls);
    (plan, reference)
}

/// Generates the plan of `seed`, with crashes drawn within the storage calls its reference
/// makes, and explores it; with `runtime`, drops drawn within the boundaries the runtime
/// behind that adapter command passes, played against it.
pub fn explore_seed(seed: u64, faults: FaultSet, runtime: Option<&str>) -> Exploration {
    let (plan, reference) = drawn(seed, faults, runtime);
    let crashed = if runtime.is_some() {
        execute_dropping(&plan, faults, &plan.crashes, runtime).0
    } else {
        explore_once(&plan, faults, &plan.crashes, &mut SimRng::new(plan.seed))
    };
    judged(plan, reference, crashed, runtime)
}

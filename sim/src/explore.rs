//! One crash plan end to end (SPEC §16): executed without and with its crashes by the crash
//! explorer ([`crate::crash`]), and the two executions judged for I15–I19
//! ([`crate::oracle::durable`]), as [`crate::simulate`] does for a scenario.

use ward_core::fault::FaultSet;

use crate::crash::drop::execute_dropping;
use crate::crash::{CrashKind, Execution, Plan, explore_once, generate};
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
    /// The digest of the execution with crashes: its trace, as I11's digest reads one (the
    /// crashes and recoveries among its records), and every byte it wrote, so that the same
    /// plan gives the same digest (I11's promise, kept by the explorer too).
    pub fn digest(&self) -> u64 {
        let mut hasher = xxhash_rust::xxh3::Xxh3::new();
        hasher.update(&crate::trace::digest(&self.crashed.trace).to_le_bytes());
        hasher.update(
            self.crashed
                .failure
                .as_deref()
                .unwrap_or_default()
                .as_bytes(),
        );
        for bytes in &self.crashed.written {
            hasher.update(&(bytes.len() as u64).to_le_bytes());
            hasher.update(bytes);
        }
        hasher.digest()
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
    let verdict = durable::check(plan, &reference, &crashed);
    Exploration {
        plan: plan.clone(),
        reference,
        crashed,
        verdict,
    }
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
    let verdict = durable::check(&plan, &reference, &crashed);
    Exploration {
        plan,
        reference,
        crashed,
        verdict,
    }
}

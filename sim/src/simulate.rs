//! One scenario or one seed, end to end: generate (for a seed), execute, check every
//! invariant, digest the trace. Generated and scripted scenarios take the same path.

use std::cell::RefCell;
use std::time::Duration;

use ward_core::events::EventKind;
use ward_core::fault::{Fault, FaultSet};

use crate::catalogue::Schemas;
use crate::generate::{self, Misbehaviour};
use crate::host::Host;
use crate::host::process::WATCHDOG;
use crate::oracle::{Invariant, Oracle, Verdict, i11_same_scenario_same_trace};
use crate::protocol::Ready;
use crate::scenario::Scenario;
use crate::trace;
use crate::world::{Record, Trace, World, lockstep};

/// What a worker keeps between scenarios: the registries and the bodies ward plays, the
/// oracle's schemas, the generation plan, and the runtime it checks (ward's own core in
/// process, or a runtime behind its adapter's process).
pub struct Engine {
    world: World,
    oracle: Oracle,
    plan: generate::Plan,
    host: RefCell<Host>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine").finish_non_exhaustive()
    }
}

impl Default for Engine {
    fn default() -> Self {
        Engine::new()
    }
}

/// The result of one scenario.
#[derive(Debug, Clone)]
pub struct Checked {
    /// Everything recorded.
    pub trace: Trace,
    /// What the invariants found.
    pub verdict: Verdict,
    /// The trace digest.
    pub digest: u64,
}

impl Checked {
    /// Runs executed.
    pub fn runs(&self) -> u32 {
        self.trace.runs.len() as u32
    }

    /// Calls that got a result.
    pub fn tool_calls(&self) -> u32 {
        self.count(|record| matches!(record, Record::Event(event) if matches!(event.kind, EventKind::ToolFinished { .. })))
    }

    /// Provider turns that replied.
    pub fn turns(&self) -> u32 {
        self.count(|record| matches!(record, Record::Reply { .. }))
    }

    fn count(&self, test: impl Fn(&Record) -> bool) -> u32 {
        self.trace
            .runs
            .iter()
            .flat_map(|run| &run.records)
            .filter(|record| test(record))
            .count() as u32
    }
}

/// The result of one seed of a campaign.
#[derive(Debug, Clone)]
pub struct SeedOutcome {
    /// The seed.
    pub seed: u64,
    /// The generated scenario.
    pub scenario: Scenario,
    /// Its check.
    pub checked: Checked,
    /// How often each misbehaviour was generated ([`Misbehaviour::ALL`] order).
    pub misbehaviours: Vec<u32>,
}

/// The bug a scenario file names, plus `extra`.
pub fn faults_of(scenario: &Scenario, extra: Option<Fault>) -> FaultSet {
    let named: FaultSet = scenario.fault().ok().flatten().into_iter().collect();
    extra.map_or(named, |fault| named.with(fault))
}

/// Whether `seed` is rerun to check determinism: a fixed 1 in `every` of the seeds, chosen by
/// a hash so that the chosen seeds spread over any range.
pub fn is_rerun(seed: u64, every: u64) -> bool {
    every > 0 && xxhash_rust::xxh3::xxh3_64(&seed.to_le_bytes()).is_multiple_of(every)
}

impl Engine {
    /// Builds the registries, compiles the oracle's schemas and plans generation; the
    /// runtime is ward's own core in process.
    pub fn new() -> Engine {
        Engine::with_host(Host::core())
    }

    /// An engine whose runtime is the adapter `command` starts (`ward run --runtime`): one
    /// process, started on first use and again after a violation.
    pub fn with_runtime(command: &str) -> Engine {
        Engine::with_runtime_watchdog(command, WATCHDOG)
    }

    /// As [`with_runtime`](Engine::with_runtime), waiting at most `watchdog` for each line.
    pub fn with_runtime_watchdog(command: &str, watchdog: Duration) -> Engine {
        Engine::with_host(Host::adapter(command, watchdog))
    }

    fn with_host(host: Host) -> Engine {
        let world = World::new();
        let oracle = Oracle::new(Schemas::compile(world.registry(true)));
        let plan = generate::Plan::new(world.registry(true));
        Engine {
            world,
            oracle,
            plan,
            host: RefCell::new(host),
        }
    }

    /// What the runtime's adapter said of it, once it has started (`None` in process).
    pub fn ready(&self) -> Option<Ready> {
        self.host.borrow().ready().cloned()
    }

    /// Runs `scenario` on the engine's runtime with `faults` on; a runtime that breaks the
    /// protocol leaves the trace of a violation, and the next scenario a fresh runtime.
    pub fn execute(&self, scenario: &Scenario, faults: FaultSet) -> Trace {
        let mut host = self.host.borrow_mut();
        let executed = host
            .runtime(faults)
            .and_then(|runtime| lockstep::execute(runtime, self.world.bodies(), scenario));
        executed.unwrap_or_else(|violation| {
            host.broke();
            lockstep::violated(&violation.to_string())
        })
    }

    /// The scenario of `seed`, generated against the world's tools.
    pub fn generate(&self, seed: u64, bug: Option<Fault>) -> generate::Generated {
        self.plan.generate(seed, bug)
    }

    /// Executes and checks `scenario` with `faults` on.
    pub fn check(&self, scenario: &Scenario, faults: FaultSet) -> Checked {
        self.judge(scenario, self.execute(scenario, faults))
    }

    /// Checks every invariant on a trace of `scenario` however it was executed (in process
    /// or behind the protocol), and digests it.
    pub fn judge(&self, scenario: &Scenario, trace: Trace) -> Checked {
        let mut verdict = self.oracle.check(scenario, &trace);
        if let Some(ready) = self.host.borrow().ready() {
            verdict.apply_claims(&ready.claims);
        }
        let digest = trace::digest(&trace);
        Checked {
            trace,
            verdict,
            digest,
        }
    }

    /// Executes `scenario` with the bug it names (and `extra`) switched on.
    pub fn check_file(&self, scenario: &Scenario, extra: Option<Fault>) -> Checked {
        self.check(scenario, faults_of(scenario, extra))
    }

    /// Generates, executes and checks `seed`; reruns it when `rerun` (I11).
    pub fn run_seed(&self, seed: u64, bug: Option<Fault>, rerun: bool) -> SeedOutcome {
        let generated = self.generate(seed, bug);
        let faults: FaultSet = bug.into_iter().collect();
        let mut checked = self.check(&generated.scenario, faults);
        if rerun {
            self.rerun(&generated.scenario, faults, &mut checked);
        }
        SeedOutcome {
            seed,
            scenario: generated.scenario,
            checked,
            misbehaviours: generated.misbehaviours,
        }
    }

    /// I11: executes `scenario` again and adds a violation to `checked` when the second trace
    /// differs from the first. Only the second digest matters: equal digests mean equal
    /// traces, hence the same verdict.
    pub fn rerun(&self, scenario: &Scenario, faults: FaultSet, checked: &mut Checked) {
        let again = trace::digest(&self.execute(scenario, faults));
        checked
            .verdict
            .violations
            .extend(i11_same_scenario_same_trace::compare(checked.digest, again));
        checked.verdict.armed[Invariant::I11.index()] += checked.runs();
    }

    /// The oracle.
    pub fn oracle(&self) -> &Oracle {
        &self.oracle
    }

    /// The registries.
    pub fn world(&self) -> &World {
        &self.world
    }
}

/// The names of the misbehaviours, in report order.
pub fn misbehaviour_names() -> impl Iterator<Item = &'static str> {
    Misbehaviour::ALL
        .iter()
        .map(|misbehaviour| misbehaviour.name())
}

//! Drop mode (SPEC §17 P9): a durable runtime crashed at lockstep boundaries — ward's own core
//! in process on real files, or any runtime behind its adapter — and started again on what
//! its store kept in the directory ward gives it (P8).
//!
//! A boundary is each answer the world reads, counted from 1 over the whole execution (the
//! answers to `reset` and `recover` among them), as in kill mode ([`super::kill`]). At a
//! planned one the world sends `crash`: the runtime discards every object and store handle
//! without closing or flushing them, as a kill leaves them, and answers `idle`; then the
//! world resets it with the same seed and directory and sends `recover`
//! ([`lockstep::execute_crashing`], as for any runtime that dies). ward's core in process
//! and `ward serve --store DIR` answer alike, so the same plan leaves the same trace and the
//! same bytes either way (P12).
//!
//! Each execution gets a directory of its own ([`StoreDir`]). The store's files are read after
//! every drop and at the end: I18 scans those bytes.

use std::cell::RefCell;

use ward_core::fault::FaultSet;

use super::execute::{Execution, Process};
use super::plan::{Crash, Plan};
use crate::host::core::CoreHost;
use crate::host::process::ProcessHost;
use crate::protocol::{Runtime, ToAdapter, Violation};
use crate::world::World;
use crate::world::lockstep::{self, Runtimes};
use crate::world::store_dir::StoreDir;

/// What a thread keeps between executions: ward's bodies, and the runtime (compiling a
/// catalogue, or starting an adapter, takes longer than an execution). A runtime is reset
/// before each execution; one that broke the protocol is not kept.
struct Kept {
    world: World,
    core: Option<CoreHost>,
    adapter: Option<(String, ProcessHost)>,
}

thread_local! {
    static KEPT: RefCell<Option<Kept>> = const { RefCell::new(None) };
}

/// A durable runtime dropped at planned boundaries.
struct Dropping<'r> {
    runtime: &'r mut dyn Runtime,
    store_dir: &'r StoreDir,
    crashes: &'r [Crash],
    boundaries: u64,
    processes: Vec<Process>,
    /// Why a drop could not be made: the runtime broke the protocol answering `crash`.
    broken: Option<Violation>,
    kept: Vec<Vec<u8>>,
}

impl Runtimes for Dropping<'_> {
    fn current(&mut self) -> &mut dyn Runtime {
        &mut *self.runtime
    }

    fn died(&mut self, answered: bool) -> Option<String> {
        if !answered {
            return None;
        }
        self.boundaries += 1;
        let process = self.processes.last_mut()?;
        let crash = process.crash?;
        // A process started past its boundary (a plan may repeat one) is dropped at its
        // first, as the simulated disk kills a process at its first call past its crash.
        if process.crashed || crash.at > self.boundaries {
            return None;
        }
        process.crashed = true;
        if let Err(violation) = self.runtime.exchange(ToAdapter::Crash) {
            self.broken = Some(Violation::new(format!(
                "in answer to crash: {}",
                violation.message
            )));
        }
        self.kept.push(self.store_dir.bytes());
        Some(super::after_answer(self.boundaries))
    }

    fn restart(&mut self) -> Result<(), Violation> {
        if let Some(violation) = self.broken.take() {
            return Err(violation);
        }
        let crash = self.crashes.get(self.processes.len()).copied();
        self.processes.push(Process {
            crash,
            crashed: false,
        });
        Ok(())
    }

    fn store_dir(&self) -> Option<String> {
        Some(self.store_dir.name())
    }
}

/// Executes `plan` under `faults` with `crashes` (drops, [`CrashKind::Drop`](super::CrashKind::Drop)) against ward's
/// core on files when `runtime` is `None`, else against the runtime behind the adapter
/// command `runtime` (which switches seeded bugs on itself): the execution, and the
/// boundaries it passed.
pub fn execute_dropping(
    plan: &Plan,
    faults: FaultSet,
    crashes: &[Crash],
    runtime: Option<&str>,
) -> (Execution, u64) {
    let mut execution = Execution::default();
    let store_dir = match StoreDir::new() {
        Ok(store_dir) => store_dir,
        Err(error) => {
            execution.failure = Some(error);
            return (execution, 0);
        }
    };
    let boundaries = KEPT.with(|cell| {
        let mut cell = cell.borrow_mut();
        let kept = cell.get_or_insert_with(|| Kept {
            world: World::new(),
            core: None,
            adapter: None,
        });
        let Kept {
            world,
            core,
            adapter,
        } = kept;
        let outcome = match runtime {
            None => core_on_files(core, faults).map(|core| core as &mut dyn Runtime),
            Some(command) => started(adapter, command).map(|host| host as &mut dyn Runtime),
        };
        let boundaries = match outcome {
            Ok(host) => play(plan, host, world, crashes, &store_dir, &mut execution),
            Err(violation) => {
                execution.failure = Some(violation.message);
                0
            }
        };
        if execution.failure.is_some() {
            *adapter = None;
        }
        boundaries
    });
    execution.written.push(store_dir.bytes());
    (execution, boundaries)
}

/// Plays `plan` against `runtime`, dropping it at `crashes`, its store in `store_dir`.
fn play(
    plan: &Plan,
    runtime: &mut dyn Runtime,
    world: &World,
    crashes: &[Crash],
    store_dir: &StoreDir,
    execution: &mut Execution,
) -> u64 {
    let mut dropping = Dropping {
        runtime,
        store_dir,
        crashes,
        boundaries: 0,
        processes: vec![Process {
            crash: crashes.first().copied(),
            crashed: false,
        }],
        broken: None,
        kept: Vec::new(),
    };
    match lockstep::execute_crashing(&mut dropping, world.bodies(), &plan.scenario()) {
        Ok(trace) => execution.trace = trace,
        Err(violation) => execution.failure = Some(violation.message),
    }
    execution.written = std::mem::take(&mut dropping.kept);
    execution.claims = (dropping.runtime.ready()).map(|ready| ready.claims.clone());
    execution.processes = dropping.processes;
    dropping.boundaries
}

/// ward's core durable on files, started once per thread and restarted for each execution.
fn core_on_files(
    core: &mut Option<CoreHost>,
    faults: FaultSet,
) -> Result<&mut CoreHost, Violation> {
    if core.is_none() {
        let base = std::env::temp_dir();
        let made = CoreHost::on_files(faults, base).map_err(|error| Violation::new(error.0))?;
        *core = Some(made);
    }
    let core = core.as_mut().expect("made above");
    core.restart();
    core.set_faults(faults);
    Ok(core)
}

/// The adapter process of `command`, started once per thread (again after one that broke the
/// protocol), which must declare a durable store.
fn started<'a>(
    adapter: &'a mut Option<(String, ProcessHost)>,
    command: &str,
) -> Result<&'a mut ProcessHost, Violation> {
    if adapter
        .as_ref()
        .is_none_or(|(started, _)| started != command)
    {
        *adapter = Some((command.to_owned(), ProcessHost::spawn(command)?));
    }
    let (_, host) = adapter.as_mut().expect("started above");
    if host
        .ready()
        .and_then(|ready| ready.durable.as_ref())
        .is_none()
    {
        return Err(Violation::new(format!(
            "`{command}` declares no durable store (ready.durable, SPEC §17 P7): a runtime without one is never crashed"
        )));
    }
    Ok(host)
}

//! One execution of a crash plan (SPEC §16, §17): the plan's scenario played by the world
//! through the protocol against ward's own core, durable on the simulated disk, which dies at
//! the plan's storage faults and is started again on what the disk kept.
//!
//! The world drives the core through the one seam every runtime answers ([`Runtime`]), as it
//! drives a runtime behind its adapter; only the storage faults are the simulated disk's (a
//! process killed, or the power lost, at a storage call; a write or a sync that fails, R35),
//! which a real file cannot be made to show deterministically. Everything the durable
//! invariants judge crosses the boundary ([`Execution::trace`]) or is the disk's own
//! ([`Execution::written`]).

use std::cell::RefCell;
use std::sync::{Arc, Mutex};

use ward_core::durable::{DurableStore, REDB_VERSION};
use ward_core::fault::FaultSet;

use super::plan::{Crash, CrashKind, Plan};
use crate::host::core::CoreHost;
use crate::protocol::{Durable, Runtime, Violation};
use crate::rng::SimRng;
use crate::world::disk::{Failure, SimulatedDisk};
use crate::world::lockstep::{self, Runtimes};
use crate::world::{Trace, World};

/// One process's life.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Process {
    /// The crash planned for it, if any.
    pub crash: Option<Crash>,
    /// Whether that crash happened (a planned write or sync failure on a call of another
    /// kind does nothing, and a process may finish before its crash).
    pub crashed: bool,
}

/// What one execution did.
#[derive(Clone, Debug, Default)]
pub struct Execution {
    /// Every boundary record, crashes and recoveries among them, as the world recorded them.
    pub trace: Trace,
    /// Why the execution stopped short of the session's end, if it did: the runtime broke the
    /// protocol, or its store would not reopen.
    pub failure: Option<String>,
    /// Each process, in order.
    pub processes: Vec<Process>,
    /// Storage calls over every process.
    pub storage_calls: u64,
    /// Every write's bytes on every disk, synced or not.
    pub written: Vec<Vec<u8>>,
    /// The rules the runtime claimed in its `ready` (P2); `None` for ward's core in process,
    /// which is not asked and claims every rule it keeps.
    pub claims: Option<Vec<String>>,
}

impl Execution {
    /// Its digest: the trace, as I11's digest reads one (the crashes and recoveries among
    /// its records), why it stopped short if it did, and every byte it wrote, so that the
    /// same plan gives the same digest (I11's promise, kept by the explorer too).
    pub fn digest(&self) -> u64 {
        let mut hasher = xxhash_rust::xxh3::Xxh3::new();
        hasher.update(&crate::trace::digest(&self.trace).to_le_bytes());
        hasher.update(self.failure.as_deref().unwrap_or_default().as_bytes());
        for bytes in &self.written {
            hasher.update(&(bytes.len() as u64).to_le_bytes());
            hasher.update(bytes);
        }
        hasher.digest()
    }
}

/// What one thread keeps from one execution to the next: compiling the catalogue's schemas
/// takes longer than a whole execution, so each thread builds ward's bodies and ward's core
/// once (`ward run --crashes --seeds 0..200 --jobs 1`: 7.1 s when each process of each
/// execution built its own core). Nothing of an execution is kept: the core is started again
/// before each ([`CoreHost::restart`]), and its store is opened on the disk `disk` holds.
struct Kit {
    world: World,
    host: CoreHost,
    disk: Arc<Mutex<SimulatedDisk>>,
}

thread_local! {
    static KIT: RefCell<Option<Kit>> = const { RefCell::new(None) };
}

/// Executes `plan` under `faults` with `crashes`, the first killing the first process, the
/// next the process after it, and so on.
pub fn explore_once(
    plan: &Plan,
    faults: FaultSet,
    crashes: &[Crash],
    rng: &mut SimRng,
) -> Execution {
    let mut execution = Execution::default();
    // The disk is formatted first, as a store is provisioned: a backend has no rename to make
    // a new database appear whole (a file does, `DurableStore::open`).
    let formatted = SimulatedDisk::new();
    if let Err(error) = DurableStore::open_on(formatted.clone()) {
        execution.failure = Some(format!("the store could not be made: {error}"));
        return execution;
    }
    let scenario = plan.scenario();
    KIT.with(|cell| {
        let mut cell = cell.borrow_mut();
        let kit = match &mut *cell {
            Some(kit) => kit,
            empty => match Kit::new() {
                Ok(kit) => empty.insert(kit),
                Err(violation) => {
                    execution.failure = Some(violation.message);
                    return;
                }
            },
        };
        let Kit { world, host, disk } = kit;
        host.restart();
        host.set_faults(faults);
        let mut processes = OnDisk::start(formatted.after_crash(), disk, host, crashes, rng);
        match lockstep::execute_crashing(&mut processes, world.bodies(), &scenario) {
            Ok(trace) => execution.trace = trace,
            Err(violation) => execution.failure = Some(violation.message),
        }
        processes.finish(&mut execution);
    });
    execution
}

impl Kit {
    fn new() -> Result<Kit, Violation> {
        let disk = Arc::new(Mutex::new(SimulatedDisk::new()));
        let opened = Arc::clone(&disk);
        let opener = Box::new(move |_: Option<&str>| {
            let disk = opened
                .lock()
                .map_err(|_| "the disk's lock is poisoned")?
                .clone();
            DurableStore::open_on(disk).map_err(|error| error.to_string())
        });
        let described = Durable {
            store: "a redb database on the simulated disk".to_owned(),
            version: format!("redb {REDB_VERSION}"),
            drop: "the world kills the core at a storage call and keeps what the disk kept"
                .to_owned(),
        };
        let host = CoreHost::durable(FaultSet::default(), opener, described)
            .map_err(|error| Violation::new(error.0))?;
        Ok(Kit {
            world: World::new(),
            host,
            disk,
        })
    }
}

/// ward's core, durable on the simulated disk, killed at the plan's storage faults.
struct OnDisk<'c> {
    disk: SimulatedDisk,
    /// The disk the core's store opens on, shared with its opener.
    opens_on: &'c Mutex<SimulatedDisk>,
    host: &'c mut CoreHost,
    crashes: &'c [Crash],
    rng: &'c mut SimRng,
    processes: Vec<Process>,
    /// Storage calls of the processes before the current one.
    calls_before: u64,
}

impl<'c> OnDisk<'c> {
    fn start(
        disk: SimulatedDisk,
        opens_on: &'c Mutex<SimulatedDisk>,
        host: &'c mut CoreHost,
        crashes: &'c [Crash],
        rng: &'c mut SimRng,
    ) -> OnDisk<'c> {
        let mut processes = OnDisk {
            disk,
            opens_on,
            host,
            crashes,
            rng,
            processes: Vec::new(),
            calls_before: 0,
        };
        processes.begin_process();
        processes
    }

    /// Plans the next crash on the current disk, and opens the core's store on it: a crash's
    /// call is counted over the whole execution, each process taking the calls after those
    /// made before it.
    fn begin_process(&mut self) {
        let crash = self.crashes.get(self.processes.len()).copied();
        self.disk.plan(crash.map(|crash| {
            failure_of(Crash {
                at: crash.at.saturating_sub(self.calls_before),
                ..crash
            })
        }));
        if let Ok(mut opens_on) = self.opens_on.lock() {
            *opens_on = self.disk.clone();
        }
        self.processes.push(Process {
            crash,
            crashed: false,
        });
    }

    fn finish(self, execution: &mut Execution) {
        execution.storage_calls = self.calls_before + self.disk.calls();
        // Each disk after a crash keeps the writes of the one before it.
        execution.written = self.disk.written();
        execution.processes = self.processes;
        let last_crashed = execution.processes.last().is_some_and(|last| last.crashed);
        if execution.failure.is_none() && last_crashed {
            execution.failure = Some("the last process crashed".to_owned());
        }
    }
}

impl Runtimes for OnDisk<'_> {
    fn current(&mut self) -> &mut dyn Runtime {
        &mut *self.host
    }

    fn died(&mut self, _answered: bool) -> Option<String> {
        if !self.disk.has_failed() {
            return None;
        }
        let process = self.processes.last_mut()?;
        if process.crashed {
            return None;
        }
        process.crashed = true;
        let crash = process.crash?;
        Some(format!(
            "{} at storage call {}",
            crash.kind.name(),
            crash.at
        ))
    }

    fn restart(&mut self) -> Result<(), Violation> {
        self.calls_before += self.disk.calls();
        let crash = self.processes.last().and_then(|process| process.crash);
        self.disk = match crash.map(|crash| crash.kind) {
            Some(CrashKind::PowerLoss | CrashKind::SyncError) => {
                self.disk.after_power_loss(self.rng)
            }
            _ => self.disk.after_crash(),
        };
        self.begin_process();
        self.host.restart();
        Ok(())
    }
}

fn failure_of(crash: Crash) -> Failure {
    match crash.kind {
        // A drop is made at a boundary, never here; in a plan of the disk it is a kill.
        CrashKind::Kill | CrashKind::PowerLoss | CrashKind::Drop => Failure::Cut(crash.at),
        CrashKind::WriteError => Failure::Write(crash.at),
        CrashKind::SyncError => Failure::Sync(crash.at),
    }
}

//! Kill mode (SPEC §17 P9): a durable runtime behind its adapter, a real process, killed with
//! `SIGKILL` at lockstep boundaries chosen from the seed, and started again on the store it
//! kept in the directory ward gives it (P8).
//!
//! A boundary is each answer the world reads (the runtime ended it with `idle`: nothing more
//! can run), counted over the whole execution, the answers to `reset` and `recover` among
//! them: killed there, the runtime dies before a request is answered, while a body runs,
//! after a result was given, or as it starts or recovers a run, wherever the answer left it.
//! A fresh process is started with the same command; the world shakes hands with it, resets
//! it with the same seed and store directory, and asks it to recover (what
//! [`lockstep::execute_crashing`] does for any runtime that dies).
//!
//! The store's files are read after every kill and at the end: I18 scans those bytes, as it
//! scans the simulated disk's writes.

use std::path::{Path, PathBuf};

use super::execute::Execution;
use super::plan::Plan;
use crate::host::process::ProcessHost;
use crate::protocol::{Runtime, Violation};
use crate::world::World;
use crate::world::lockstep::{self, Runtimes};
use crate::world::store_dir::bytes_under;

/// An adapter process killed at planned boundaries.
pub struct Killing {
    command: String,
    store_dir: PathBuf,
    host: ProcessHost,
    /// The boundary each process is killed at, ascending: the first process at the first,
    /// and so on; a process started past its boundary is killed at its first.
    kills: Vec<u64>,
    /// Boundaries passed so far.
    boundaries: u64,
    killed: usize,
    /// The store directory's bytes after each kill.
    kept: Vec<Vec<u8>>,
}

impl Killing {
    /// Starts `command`, whose store lives in `store_dir` (empty at the start), to be killed
    /// at each of `kills` (boundaries counted from 1), as drop mode drops a runtime
    /// ([`super::drop`]).
    pub fn start(command: &str, store_dir: &Path, kills: &[u64]) -> Result<Killing, Violation> {
        let mut kills = kills.to_vec();
        kills.sort_unstable();
        Ok(Killing {
            command: command.to_owned(),
            store_dir: store_dir.to_owned(),
            host: ProcessHost::spawn(command)?,
            kills,
            boundaries: 0,
            killed: 0,
            kept: Vec::new(),
        })
    }

    /// How many boundaries the execution passed.
    pub fn boundaries(&self) -> u64 {
        self.boundaries
    }
}

impl Runtimes for Killing {
    fn current(&mut self) -> &mut dyn Runtime {
        &mut self.host
    }

    fn died(&mut self, answered: bool) -> Option<String> {
        if !answered {
            return None;
        }
        self.boundaries += 1;
        if self
            .kills
            .get(self.killed)
            .is_none_or(|&at| at > self.boundaries)
        {
            return None;
        }
        self.killed += 1;
        self.host.kill();
        self.kept.push(bytes_under(&self.store_dir));
        Some(super::after_answer(self.boundaries))
    }

    fn restart(&mut self) -> Result<(), Violation> {
        self.host = ProcessHost::spawn(&self.command)?;
        Ok(())
    }

    fn store_dir(&self) -> Option<String> {
        Some(self.store_dir.to_string_lossy().into_owned())
    }
}

/// Plays `plan` against the adapter `command`, its store in the empty directory
/// `store_dir`, killing it at `kills`: the execution as the durable invariants read it, and
/// the boundaries it passed.
pub fn execute_killing(
    plan: &Plan,
    command: &str,
    store_dir: &Path,
    kills: &[u64],
) -> (Execution, u64) {
    let mut execution = Execution::default();
    let mut killing = match Killing::start(command, store_dir, kills) {
        Ok(killing) => killing,
        Err(violation) => {
            execution.failure = Some(violation.message);
            return (execution, 0);
        }
    };
    let world = World::new();
    match lockstep::execute_crashing(&mut killing, world.bodies(), &plan.scenario()) {
        Ok(trace) => execution.trace = trace,
        Err(violation) => execution.failure = Some(violation.message),
    }
    execution.written = std::mem::take(&mut killing.kept);
    execution.written.push(bytes_under(store_dir));
    (execution, killing.boundaries())
}

//! What answers ward's messages (SPEC §15): ward's own core in process ([`core`], the runtime
//! `ward serve` speaks for, P5) or a runtime behind its adapter's process ([`process`]). Both
//! are a [`Runtime`]; [`Host`] owns the one a worker checks, starts it on first use, and
//! starts it again after it broke the protocol, so that nothing of a broken scenario reaches
//! the next (P6). [`pin`] gives a campaign worker and its adapter one processor (`--pin`).

pub mod core;
pub mod pin;
pub mod process;
pub mod spin;

use std::time::Duration;

use ward_core::fault::FaultSet;

use crate::protocol::{Ready, Runtime, Violation};
use core::CoreHost;
use process::ProcessHost;

/// The runtime a worker checks, started on first use.
pub enum Host {
    /// ward's own core, in process.
    Core(Option<Box<CoreHost>>),
    /// The runtime behind an adapter's process.
    Adapter(Box<Adapter>),
}

/// The runtime behind the adapter `command` starts.
pub struct Adapter {
    /// The adapter command (run with `sh -c`).
    command: String,
    /// How long ward waits for each line of it.
    watchdog: Duration,
    /// The running process.
    process: Option<ProcessHost>,
    /// What it said of its runtime, once started.
    ready: Option<Ready>,
}

impl Host {
    /// ward's own core in process.
    pub fn core() -> Host {
        Host::Core(None)
    }

    /// The runtime behind the adapter `command` starts, waiting at most `watchdog` for each
    /// line.
    pub fn adapter(command: &str, watchdog: Duration) -> Host {
        Host::Adapter(Box::new(Adapter {
            command: command.to_owned(),
            watchdog,
            process: None,
            ready: None,
        }))
    }

    /// The runtime, started if it is not running, for a scenario with the seeded bugs
    /// `faults`: ward's core switches them on; an adapter's runtime is the one its command
    /// starts, bugs included (a bug given with `--bug` only steers generation there).
    pub fn runtime(&mut self, faults: FaultSet) -> Result<&mut dyn Runtime, Violation> {
        match self {
            Host::Core(core) => {
                let host = match core {
                    Some(host) => host,
                    None => {
                        let started =
                            CoreHost::new(faults).map_err(|error| Violation::new(error.0))?;
                        core.insert(Box::new(started))
                    }
                };
                host.set_faults(faults);
                Ok(host.as_mut())
            }
            Host::Adapter(adapter) => {
                if adapter.process.is_none() {
                    let started = ProcessHost::spawn_with(&adapter.command, adapter.watchdog)?;
                    adapter.ready = started.ready().cloned();
                    adapter.process = Some(started);
                }
                let host = adapter.process.as_mut().expect("started above");
                Ok(host)
            }
        }
    }

    /// The runtime broke the protocol: an adapter's process is dropped (killed), and the next
    /// scenario gets a fresh one (P6); ward's own core starts every scenario with `reset`.
    pub fn broke(&mut self) {
        if let Host::Adapter(adapter) = self {
            adapter.process = None;
        }
    }

    /// What the adapter said of its runtime, once started; `None` in process.
    pub fn ready(&self) -> Option<&Ready> {
        match self {
            Host::Core(_) => None,
            Host::Adapter(adapter) => adapter.ready.as_ref(),
        }
    }
}

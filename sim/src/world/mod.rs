//! Running a scenario against a runtime, deterministically (SPEC §10, §15), and recording
//! everything at the runtime's boundaries.
//!
//! Every runtime is reached the same way, through the lockstep protocol (`lockstep`), handed
//! to the world as a [`Runtime`](crate::protocol::Runtime): ward plays the provider, the tool
//! bodies over its own chart, the user, cancellation and virtual time, and the runtime answers
//! each message with what it did. ward's own core answers in process or from another process
//! (`ward serve`); a runtime ward did not write answers through its adapter
//! ([`crate::host`]). The same scenario leaves the same trace whichever way its runtime is
//! reached (P5).
//!
//! The simulator sees the runtime only where SPEC §9 allows:
//!
//! - the provider: every request it receives and every reply it gives (`provider` holds the
//!   scripted provider's reactions);
//! - every tool body's start, end, input and output: ward runs the bodies and plants the
//!   scenario's behaviours (latency, failure, panic, a leaked secret, an injected
//!   instruction; `body`);
//! - the session store's appends, the event stream, and the chart's public snapshot (taken
//!   when a call starts and finishes) and undo (run back at the end of every session).
//!
//! All of it lands in one [`Trace`] per run, in the order it happened (`records`).

mod body;
pub mod disk;
pub mod lockstep;
mod provider;
mod records;
pub mod store_dir;

use ward_core::registry::Registry;

pub use body::injection;
pub use records::{Record, RunTrace, Trace};

use lockstep::Bodies;

/// What a worker reuses for every scenario: the catalogue with and without
/// `code_interpreter` (its registries, schemas compiled once per worker, and the bodies ward
/// plays).
#[derive(Default)]
pub struct World {
    bodies: Bodies,
}

impl std::fmt::Debug for World {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("World").finish_non_exhaustive()
    }
}

impl World {
    /// Builds the chart catalogue twice (with and without `code_interpreter`).
    pub fn new() -> World {
        World::default()
    }

    /// The registry a scenario's runtime registers.
    pub fn registry(&self, code_interpreter: bool) -> &Registry {
        self.bodies.registry(code_interpreter)
    }

    /// The bodies ward plays.
    pub fn bodies(&self) -> &Bodies {
        &self.bodies
    }
}

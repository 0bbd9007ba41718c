//! The one seam between ward and every runtime it checks (SPEC §15): ward's own core in
//! process (`crate::host::core`) and a runtime behind its adapter's process
//! (`crate::host::process`) both answer ward's messages through [`Runtime`], and the world
//! (`crate::world`) drives either the same way, so the same scenario leaves the same trace
//! whichever answers (P5).

use std::collections::BTreeMap;

use super::{Durable, FromAdapter, RuntimeId, ToAdapter};

/// A runtime behind the protocol: one message in, everything it did in answer out (P3).
pub trait Runtime {
    /// Sends `message` and returns the runtime's answer, ending with `idle`.
    fn exchange(&mut self, message: ToAdapter) -> Result<Vec<FromAdapter>, Violation>;

    /// Sends the delivery `message` due at `at_ms`, after the runtime's clock (version 2,
    /// `super::at`): the runtime moves its clock there first, no timer of its being due
    /// before; returns its answer, ending with `idle`.
    fn exchange_at(
        &mut self,
        message: ToAdapter,
        at_ms: u64,
    ) -> Result<Vec<FromAdapter>, Violation>;

    /// What the runtime said of itself in `ready` (P2); `None` for ward's own core in process,
    /// which is not asked and claims every rule it keeps.
    fn ready(&self) -> Option<&Ready> {
        None
    }
}

/// A breach of the protocol (P6): what was sent and what came back.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("protocol violation: {message}")]
pub struct Violation {
    /// What went wrong.
    pub message: String,
}

impl Violation {
    /// A violation saying `message`.
    pub fn new(message: impl Into<String>) -> Violation {
        Violation {
            message: message.into(),
        }
    }
}

/// What an adapter said of its runtime in `ready` (P2).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ready {
    /// The protocol version it speaks.
    pub protocol: u64,
    /// The runtime, by name and exact version.
    pub runtime: RuntimeId,
    /// The rules it claims.
    pub claims: Vec<String>,
    /// Why each unclaimed rule is not claimed.
    pub notes: BTreeMap<String, String>,
    /// Where it keeps durable sessions (version 2, P7); `None`: it is never crashed.
    pub durable: Option<Durable>,
    /// Whether it keeps the catalogue of its last `reset` (version 2): `tools` is then left
    /// out of a `reset` whose catalogue is that one.
    pub catalogue_kept: bool,
}

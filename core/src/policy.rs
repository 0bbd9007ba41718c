//! Read-only runs and switched-off tools (SPEC §5, R11–R13).
//!
//! A [`RunPolicy`] is passed when a run starts and lives only as long as the run: read-only
//! is never part of the chart state, so it cannot leak from one run of a session to the
//! next (R11).
//!
//! Two independent checks enforce it (R12), written as two separate pure functions so that a
//! bug in one is still caught by the other:
//!
//! - [`offers`]: resolution. Decides which tools the model is shown.
//! - [`check_execution`]: execution. Decides, at the entry point, whether a named tool may
//!   run, whatever the model sent.
//!
//! Switched-off tools are a set of exact names (R13): "everything off" is the set of every
//! name, and a tool added later starts on because its name is not in the set.

use std::collections::BTreeSet;

use crate::envelope::ToolError;
use crate::tool::ToolMeta;

/// The permissions of one run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RunPolicy {
    /// Only read-only tools are offered and run.
    pub read_only: bool,
    /// Names of the tools the user switched off; matched exactly.
    pub disabled: BTreeSet<String>,
}

impl RunPolicy {
    /// A run that may change the chart, with every tool on.
    pub fn normal() -> RunPolicy {
        RunPolicy::default()
    }

    /// A read-only run with every tool on.
    pub fn read_only() -> RunPolicy {
        RunPolicy {
            read_only: true,
            disabled: BTreeSet::new(),
        }
    }

    /// Whether the user switched `name` off.
    pub fn is_disabled(&self, name: &str) -> bool {
        self.disabled.contains(name)
    }
}

/// Resolution (R4, R12 first check, R13): whether a run with `policy` offers `tool` to the
/// model. [`Registry::offered`](crate::registry::Registry::offered) applies it to every
/// tool, in registration order.
pub fn offers(tool: &ToolMeta, policy: &RunPolicy) -> bool {
    if policy.read_only && !tool.is_read_only() {
        return false;
    }
    !policy.is_disabled(tool.name())
}

/// Execution (R12 second check, R13): whether `tool` may run in a run with `policy`. Refuses
/// a destructive tool in a read-only run first, then a switched-off tool (R3's order).
pub fn check_execution(tool: &ToolMeta, policy: &RunPolicy) -> Result<(), ToolError> {
    if policy.read_only && !tool.is_read_only() {
        return Err(ToolError::not_allowed_read_only(tool.name()));
    }
    if policy.is_disabled(tool.name()) {
        return Err(ToolError::not_allowed_switched_off(tool.name()));
    }
    Ok(())
}

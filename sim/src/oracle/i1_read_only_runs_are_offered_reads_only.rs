//! I1. In a read-only run every tool list sent to the provider holds only read-only tools.
//!
//! The first of R12's two independent checks, seen from outside: the list the provider
//! receives. A list equal to the previous request's is not looked at again.

use super::{At, Breach, Findings, Invariant, RunCheck};
use crate::catalogue;

pub(super) fn check(run: &RunCheck<'_>, findings: &mut Findings<'_>) {
    if !run.script.read_only || run.view.requests.is_empty() {
        return;
    }
    findings.arm(Invariant::I1);
    for request in run.view.new_offers() {
        let writes: Vec<&str> = request
            .tools
            .iter()
            .map(|name| &**name)
            .filter(|name| catalogue::entry(name).is_none_or(|entry| !entry.read_only))
            .collect();
        if let Some(first) = writes.first() {
            let explanation = format!(
                "a read-only run was offered {} non-read-only tools, e.g. {first}",
                writes.len()
            );
            return findings.report(Breach::WriteOffered, At::Turn(request.turn), explanation);
        }
    }
}

//! I3. A switched-off tool is never offered and its body never runs.
//!
//! R13: the user's selection is a set of exact names; resolution hides them and the entry
//! point refuses them.

use std::collections::BTreeSet;

use super::{At, Breach, Findings, Invariant, RunCheck};

pub(super) fn check(run: &RunCheck<'_>, findings: &mut Findings<'_>) {
    let view = run.view;
    let disabled: BTreeSet<&str> = run
        .script
        .disabled_tools
        .iter()
        .map(String::as_str)
        .collect();
    if disabled.is_empty() || view.requests.is_empty() {
        return;
    }
    findings.arm(Invariant::I3);
    for request in view.new_offers() {
        if let Some(name) = request
            .tools
            .iter()
            .find(|name| disabled.contains(&***name))
        {
            let explanation = format!("switched-off tool {name} was offered");
            return findings.report(
                Breach::SwitchedOffOffered,
                At::Turn(request.turn),
                explanation,
            );
        }
    }
    if let Some(body) = view.bodies.iter().find(|body| disabled.contains(body.tool)) {
        let turn = view.batches[body.batch].turn;
        let explanation = format!("the body of switched-off tool {} ran", body.tool);
        findings.report(
            Breach::SwitchedOffRan,
            At::Call(turn, body.call_id),
            explanation,
        );
    }
}

//! I2. In a read-only run no destructive tool body runs; such calls get `TOOL_NOT_ALLOWED`,
//! `stateChanged: false`, and the state is unchanged.
//!
//! The second of R12's two independent checks: whatever the model sent, the entry point
//! refuses a write in a read-only run. A call refused earlier in R3's order (a bad or repeated
//! id, past the batch cap) or aborted by a stop keeps that code instead.

use super::{At, Breach, Findings, Invariant, RunCheck};

pub(super) fn check(run: &RunCheck<'_>, findings: &mut Findings<'_>) {
    if !run.script.read_only {
        return;
    }
    for (batch, index, fact) in run.calls() {
        if !fact.destructive() {
            continue;
        }
        findings.arm(Invariant::I2);
        let call = &batch.calls[index];
        let at = At::Call(batch.turn, &call.id);
        if run.view.body_ran(batch, index) {
            let explanation = format!(
                "the body of destructive tool {} ran in a read-only run",
                call.name
            );
            return findings.report(Breach::WriteRanInReadOnlyRun, at, explanation);
        }
        let Some(result) = RunCheck::result_of(batch, index) else {
            continue;
        };
        let refused_earlier = !fact.id_ok || !fact.within_cap;
        let code = result.error_code();
        if !refused_earlier && code != Some("ABORTED") && code != Some("TOOL_NOT_ALLOWED") {
            let explanation = format!(
                "{} in a read-only run got {} instead of TOOL_NOT_ALLOWED",
                call.name,
                code.unwrap_or("success")
            );
            return findings.report(Breach::WriteNotRefused, at, explanation);
        }
        if result.state_changed || run.state_moved(batch, index) {
            let explanation = format!("refused {} in a read-only run changed the chart", call.name);
            return findings.report(Breach::RefusedWriteChangedState, at, explanation);
        }
    }
}

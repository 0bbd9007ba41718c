//! I5. A call whose input is invalid never reaches its tool body; the state is unchanged.
//!
//! R3: parsing and validation come before the body. "Invalid" is decided by the oracle's own
//! reading of the argument text (R6) and its own compiled copy of the published schema.

use super::input_errors;
use super::{At, Breach, Findings, Invariant, RunCheck};

pub(super) fn check(run: &RunCheck<'_>, findings: &mut Findings<'_>) {
    for (batch, index, fact) in run.calls() {
        if !fact.registered() || fact.valid_input {
            continue;
        }
        findings.arm(Invariant::I5);
        let call = &batch.calls[index];
        let at = At::Call(batch.turn, &call.id);
        if run.view.body_ran(batch, index) {
            let why = input_errors::unread(&call.arguments)
                .or_else(|| {
                    let parsed = fact.parsed.as_ref()?;
                    run.schemas.refusal(&call.name, parsed)
                })
                .unwrap_or_else(|| "its schema refuses it".to_owned());
            let explanation = format!(
                "the body of {} ran with input that R3 refuses before any body runs: {why}",
                call.name
            );
            return findings.report(Breach::InvalidInputRan, at, explanation);
        }
        if run.state_moved(batch, index) {
            let explanation = format!(
                "a call to {} with invalid input changed the chart",
                call.name
            );
            return findings.report(Breach::InvalidInputChangedState, at, explanation);
        }
    }
}

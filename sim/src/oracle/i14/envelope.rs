//! Each call's result against the model's prediction: its code, whether its body ran,
//! `stateChanged`, and SPEC §4's table of the runtime's own codes (`retryable`, the
//! recommended action and the fixed messages).

use ward_core::envelope::ToolError;
use ward_core::events::EventKind;

use super::{Model, Outcome, Walk, Where, disagree};
use crate::catalogue::{self, CALL_ID_CHARS_MAX};
use crate::oracle::{Breach, REDACTED, RunCheck};
use crate::view::{BatchView, BodyView};

impl<'r, 'a> Model<'r, 'a> {
    /// Compares call `index`'s one result, and whether its body ran, with the prediction.
    pub(super) fn expect(
        &self,
        batch: &BatchView<'a>,
        index: usize,
        predicted: Outcome<'_>,
        body: Option<&BodyView<'_>>,
    ) -> Walk<'a, ()> {
        let view = self.run.view;
        let call = &batch.calls[index];
        let at = Where::Call(batch.turn, &call.id);
        let ran = view.body_ran(batch, index);
        if body.is_none() && ran {
            let explanation = format!(
                "the model expected {predicted} without running the body of {}; the body ran",
                call.name
            );
            return disagree(Breach::ModelCall, at, explanation);
        }
        let Some(result) = RunCheck::result_of(batch, index) else {
            let explanation = format!(
                "the model expected one result ({predicted}); the call got {}",
                batch.finished_of(index).count()
            );
            return disagree(Breach::ModelCall, at, explanation);
        };
        let observed = match result.error_code() {
            None => Outcome::Ok,
            Some(code) => Outcome::Code(code),
        };
        if observed != predicted {
            let explanation = format!(
                "the model expected {predicted} for {}; the call got {observed}",
                call.name
            );
            return disagree(Breach::ModelCall, at, explanation);
        }
        if let Some(error) = result.error() {
            self.compare_envelope(batch, index, observed, error)?;
        }
        let state_changed =
            predicted == Outcome::Ok && body.is_some() && self.run.state_moved(batch, index);
        if result.state_changed != state_changed {
            let explanation = format!(
                "the model expected stateChanged {state_changed} for {}; the result says {}",
                call.name, result.state_changed
            );
            return disagree(Breach::ModelCall, at, explanation);
        }
        Ok(())
    }

    /// Compares the envelope of call `index`'s failure, `outcome`, with SPEC §4's table.
    fn compare_envelope(
        &self,
        batch: &BatchView<'a>,
        index: usize,
        outcome: Outcome<'_>,
        error: &ToolError,
    ) -> Walk<'a, ()> {
        let call = &batch.calls[index];
        let Some((retryable, action, message)) = self.envelope(&call.name, outcome) else {
            return Ok(());
        };
        // R22's guard may redact a configured value out of any text; a redacted text is
        // compared no further.
        let differs =
            |observed: &str, expected: &str| observed != expected && !observed.contains(REDACTED);
        let message_differs = message.is_some_and(|message| differs(&error.message, &message));
        if error.retryable != retryable
            || differs(&error.recommended_action, &action)
            || message_differs
        {
            let explanation = format!(
                "the model expected {outcome} for {} to be retryable {retryable} with the action {action:?} (SPEC §4); it is retryable {} with {:?}, message {:?}",
                call.name, error.retryable, error.recommended_action, error.message
            );
            return disagree(
                Breach::ModelCall,
                Where::Call(batch.turn, &call.id),
                explanation,
            );
        }
        Ok(())
    }

    /// SPEC §4's table for the runtime's own codes: whether a failure with `outcome` is
    /// retryable, its recommended action, and its message where the table fixes it. `None`
    /// for a success and for a body's own codes.
    fn envelope(&self, name: &str, outcome: Outcome<'_>) -> Option<(bool, String, Option<String>)> {
        let Outcome::Code(code) = outcome else {
            return None;
        };
        let fixed = |retryable: bool, action: &str| Some((retryable, action.to_owned(), None));
        let read_only_refusal = self.run.script.read_only
            && catalogue::entry(name).is_some_and(|entry| {
                !entry.read_only && (!entry.opt_in || self.run.scenario.code_interpreter)
            });
        match code {
            "INVALID_CALL_ID" => fixed(
                true,
                &format!(
                    "Give every tool call a non-empty id of at most {CALL_ID_CHARS_MAX} characters."
                ),
            ),
            "DUPLICATE_CALL_ID" => fixed(true, "Give every tool call its own id."),
            "TOOL_NOT_FOUND" => {
                let offer = self.announced_offer().join(", ");
                let action = format!("Call one of the available tools: {offer}.");
                Some((true, action, None))
            }
            "TOOL_NOT_ALLOWED" if read_only_refusal => Some((
                false,
                "Use a read-only tool, or ask the user for a run that may change the chart."
                    .to_owned(),
                Some(format!("Tool '{name}' is not allowed in a read-only run.")),
            )),
            "TOOL_NOT_ALLOWED" => Some((
                false,
                "Use another tool, or ask the user to switch it on.".to_owned(),
                Some(format!(
                    "Tool '{name}' is switched off in the agent settings."
                )),
            )),
            "PAYLOAD_TOO_LARGE" => fixed(true, "Send a smaller input."),
            "SECRET_IN_INPUT" => fixed(false, "Never pass credentials to tools."),
            "TOOL_INPUT_INVALID" => fixed(true, "Correct the invalid field and retry the request."),
            "TOO_MANY_CALLS" => {
                let cap = self.run.limits.calls_per_batch_max;
                let action = format!("Send at most {cap} tool calls in one message.");
                Some((true, action, None))
            }
            "INTERNAL_ERROR" => fixed(
                false,
                "Do not retry with different input; report this tool failure.",
            ),
            "ABORTED" => fixed(true, "Start a new run."),
            _ => None,
        }
    }

    /// The tools `run.started` announced, in its order (I13 checks they are the allowed ones).
    fn announced_offer(&self) -> Vec<&'a str> {
        self.run
            .view
            .events
            .iter()
            .find_map(|event| match &event.kind {
                EventKind::RunStarted { tools, .. } => {
                    Some(tools.iter().map(|name| &**name).collect())
                }
                _ => None,
            })
            .unwrap_or_default()
    }
}

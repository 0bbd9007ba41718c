//! The run's end against the model's prediction (R16, R19, R20, R21): the terminal event, its
//! instant, the entry point's report, and the envelope of the failure that ends a run.

use ward_core::envelope::ToolError;
use ward_core::events::EventKind;

use super::clock::Cause;
use super::{End, Model, Walk, Where, disagree};
use crate::oracle::{Breach, REDACTED};

impl<'r, 'a> Model<'r, 'a> {
    /// Compares the run's terminal event with the predicted end.
    pub(super) fn compare_end(&self, end: &End) -> Walk<'a, ()> {
        let view = self.run.view;
        let (kind, code) = end.cause.terminal();
        let predicted = describe(kind, code, end.at_ms);
        let Some(terminal) = view.terminal() else {
            let explanation = format!("the model expected {predicted}; the run has no end");
            return disagree(Breach::ModelRunEnd, Where::Run, explanation);
        };
        let (observed_kind, observed_code) = match &terminal.kind {
            EventKind::RunCompleted { .. } => ("run.completed", None),
            EventKind::RunFailed { error } => ("run.failed", Some(error.code.as_str())),
            EventKind::RunCancelled => ("run.cancelled", None),
            _ => ("another event", None),
        };
        if (observed_kind, observed_code) != (kind, code) || terminal.time_ms != end.at_ms {
            let observed = describe(observed_kind, observed_code, terminal.time_ms);
            let explanation = format!("the model expected {predicted}; the run ended {observed}");
            return disagree(Breach::ModelRunEnd, Where::Run, explanation);
        }
        self.compare_report(observed_kind, observed_code)?;
        match &terminal.kind {
            EventKind::RunFailed { error } => self.compare_failure(end, &predicted, error),
            _ => Ok(()),
        }
    }

    /// What the entry point returned: the same end, the batches the model ran and a result
    /// for every call of every reply the runtime took.
    fn compare_report(&self, kind: &str, code: Option<&str>) -> Walk<'a, ()> {
        let view = self.run.view;
        let calls: usize = view.batches.iter().map(|batch| batch.calls.len()).sum();
        let reported = view.report.is_some_and(|report| {
            (report.outcome, report.code) == (kind, code)
                && report.batches == self.batches_run
                && report.calls as usize == calls
        });
        if !reported {
            let explanation = format!(
                "the model expected the run's report to say {kind}, {} batches and {calls} calls with a result; it says {:?}",
                self.batches_run, view.report
            );
            return disagree(Breach::ModelRunEnd, Where::Run, explanation);
        }
        Ok(())
    }

    /// R19 and R21: the envelope of the failure that ended the run, `predicted`.
    fn compare_failure(&self, end: &End, predicted: &str, error: &ToolError) -> Walk<'a, ()> {
        let turns_max = self.run.limits.turns_max;
        let (retryable, action, message) = match end.cause {
            Cause::TurnLimit => (
                true,
                Some("Refine the request and retry."),
                Some(format!("The agent stopped after {turns_max} tool turns.")),
            ),
            Cause::Deadline => (true, Some("Retry with a narrower request."), None),
            Cause::Provider(provider) => (provider.retryable, None, None),
            Cause::Completed | Cause::Cancelled => (error.retryable, None, None),
        };
        // R22's guard may redact a configured value out of any text; a redacted text is
        // compared no further.
        let text_differs =
            |observed: &str, expected: &str| observed != expected && !observed.contains(REDACTED);
        let differs = error.retryable != retryable
            || action.is_some_and(|action| text_differs(&error.recommended_action, action))
            || message
                .as_ref()
                .is_some_and(|message| text_differs(&error.message, message));
        if differs {
            let explanation = format!(
                "the model expected {predicted} to be retryable {retryable} with the action {action:?} and message {message:?}; it is retryable {} with {:?} and {:?}",
                error.retryable, error.recommended_action, error.message
            );
            return disagree(Breach::ModelRunEnd, Where::Run, explanation);
        }
        Ok(())
    }
}

/// A terminal event as the explanations name it: its type, its failure's code and its instant.
fn describe(kind: &str, code: Option<&str>, at_ms: u64) -> String {
    match code {
        Some(code) => format!("{kind} {code} at {at_ms} ms"),
        None => format!("{kind} at {at_ms} ms"),
    }
}

//! The model's clock (R19, R20): why a run ends, the stops that end it, and the virtual-time
//! bookkeeping of the inactivity deadline and the scenario's cancel.

use crate::catalogue::ProviderErrorCode;

/// Why a run ends (R16, R19, R20, R21).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Cause {
    /// A reply without calls.
    Completed,
    /// A reply with calls after `turns_max` batches.
    TurnLimit,
    /// The inactivity deadline.
    Deadline,
    /// The scenario cancelled the run.
    Cancelled,
    /// A provider error that is not retried, or the last retry's (R21, by the oracle's table).
    Provider(ProviderErrorCode),
}

impl Cause {
    /// The terminal event it gives: its type, and the failure's code.
    pub(super) fn terminal(self) -> (&'static str, Option<&'static str>) {
        match self {
            Cause::Completed => ("run.completed", None),
            Cause::TurnLimit => ("run.failed", Some("TOOL_LOOP_LIMIT")),
            Cause::Deadline => ("run.failed", Some("DEADLINE_EXCEEDED")),
            Cause::Cancelled => ("run.cancelled", None),
            Cause::Provider(error) => ("run.failed", Some(error.code)),
        }
    }
}

/// A stop of R20.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Stop {
    pub(super) at_ms: u64,
    pub(super) cause: Cause,
}

/// R19's inactivity deadline and the scenario's cancel, on virtual time.
pub(super) struct Clock {
    pub(super) cancel_at_ms: Option<u64>,
    pub(super) timeout_ms: u64,
    pub(super) last_activity_ms: u64,
    /// Whether, at one instant, the trace shows the cancel before the deadline.
    pub(super) cancel_first: bool,
}

impl Clock {
    /// When the deadline is due if nothing happens.
    fn deadline_ms(&self) -> u64 {
        self.last_activity_ms.saturating_add(self.timeout_ms)
    }

    /// A provider reply or a finished call at `at_ms`.
    pub(super) fn activity(&mut self, at_ms: u64) {
        self.last_activity_ms = at_ms;
    }

    /// The first stop due at or before `until_ms`, if any.
    pub(super) fn stop_by(&self, until_ms: u64) -> Option<Stop> {
        self.first_within(0, until_ms, until_ms)
    }

    /// The first stop due from `from_ms` on: the cancel until `until_ms`, the deadline until
    /// `deadline_until_ms`. At one instant, the one the trace shows first.
    pub(super) fn first_within(
        &self,
        from_ms: u64,
        until_ms: u64,
        deadline_until_ms: u64,
    ) -> Option<Stop> {
        let cancel = self
            .cancel_at_ms
            .filter(|at_ms| (from_ms..=until_ms).contains(at_ms))
            .map(|at_ms| Stop {
                at_ms,
                cause: Cause::Cancelled,
            });
        let deadline = Some(self.deadline_ms())
            .filter(|at_ms| (from_ms..=deadline_until_ms).contains(at_ms))
            .map(|at_ms| Stop {
                at_ms,
                cause: Cause::Deadline,
            });
        match (cancel, deadline) {
            (Some(cancel), Some(deadline)) if cancel.at_ms == deadline.at_ms => {
                Some(if self.cancel_first { cancel } else { deadline })
            }
            (Some(cancel), Some(deadline)) => Some(if cancel.at_ms < deadline.at_ms {
                cancel
            } else {
                deadline
            }),
            (stop, None) | (None, stop) => stop,
        }
    }
}

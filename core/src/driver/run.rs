//! The state of one run as it goes (R15, R22, R23, R30): the transcript, the event log, the
//! records entered and not yet committed; loading the history through the guard, entering the
//! redacted prompt and each message once, committing each step, and the terminal event.

#[allow(clippy::wildcard_imports)]
use super::*;

/// The mutable state of one run.
pub(super) struct Run<'r, S: SessionStore> {
    pub(super) session_id: &'r str,
    pub(super) store: &'r mut S,
    pub(super) log: EventLog<'r>,
    pub(super) transcript: Vec<Arc<Message>>,
    pub(super) guard: &'r SecretGuard,
    pub(super) faults: FaultSet,
    pub(super) batches: u32,
    pub(super) calls: u32,
    /// The run's number in its session.
    pub(super) run_number: u32,
    /// Records entered and not yet committed.
    pub(super) pending: Vec<Record>,
    pub(super) chart: &'r SharedChart,
    /// The chart as the store last committed it.
    pub(super) committed_chart: Arc<ChartState>,
}

impl<S: SessionStore> Run<'_, S> {
    /// Loads the session's history through the guard and announces `run.started` with the
    /// offered tools (R22, R23).
    pub(super) fn load(
        &mut self,
        history: Vec<Arc<Message>>,
        input: &StartRunInput,
        tools: &[&ToolMeta],
    ) {
        let guard = self.guard;
        self.transcript = (history.into_iter())
            .map(|message| guard.shared_message(message))
            .collect();
        self.log.emit(EventKind::RunStarted {
            read_only: input.read_only,
            tools: hash_order(self.faults, listed_names(tools)),
        });
    }

    /// The start (R15, R22, R30): the prompt, redacted with the full redactor, commits with
    /// the run's start (policy, limits) and enters the transcript and the events.
    pub(super) fn start(
        &mut self,
        input: &StartRunInput,
        redactor: &Redactor,
    ) -> Result<(), StoreError> {
        let guard = self.guard;
        // Every rule on the original prompt in one pass (R15, R29), then the guard, which also
        // catches a fragment of a configured value that no rule saw whole.
        let redacted = guard.text(&redactor.redact(&input.prompt)).into_owned();
        let redacted_prompt =
            prompt_redaction(self.faults, redacted, &input.prompt, redactor, guard);
        self.pending.push(Record::RunStarted {
            run: self.run_number,
            read_only: input.read_only,
            disabled: (input.disabled_tools.iter())
                .map(|name| guard.text(name).into_owned())
                .collect(),
            limits: StoredLimits::from(input.limits),
            prompt: journaled_prompt(self.faults, &redacted_prompt, &input.prompt),
        });
        self.enter(
            Message::User {
                text: redacted_prompt.clone(),
            },
            Vec::new(),
        )?;
        self.log.emit(EventKind::UserMessageCreated {
            text: redacted_prompt,
        });
        Ok(())
    }

    /// Appends an already guarded message to the transcript and commits it, with `beside`
    /// (R30).
    pub(super) fn enter(
        &mut self,
        message: Message,
        beside: Vec<Record>,
    ) -> Result<(), StoreError> {
        let message = Arc::new(message);
        self.pending.push(Record::Message {
            message: Arc::clone(&message),
        });
        self.pending.extend(beside);
        self.transcript.push(message);
        self.commit()
    }

    /// Commits what was entered, with the chart when it changed since the last commit (R30,
    /// R31): one transaction.
    pub(super) fn commit(&mut self) -> Result<(), StoreError> {
        let chart = self.chart.snapshot_shared();
        let changed =
            !Arc::ptr_eq(&chart, &self.committed_chart) && *chart != *self.committed_chart;
        if changed && apart_from_write(self.faults) {
            self.store.commit(self.session_id, &[], Some(&chart))?;
            self.store.commit(self.session_id, &self.pending, None)?;
        } else {
            self.store
                .commit(self.session_id, &self.pending, changed.then_some(&chart))?;
        }
        self.pending.clear();
        self.committed_chart = chart;
        Ok(())
    }

    /// Enters a batch's results; the caller commits them.
    pub(super) fn enter_results(&mut self, results: Vec<CallResult>) {
        self.calls += u32::try_from(results.len()).unwrap_or(u32::MAX);
        for result in results_entered(self.faults, results) {
            let message = Arc::new(Message::Tool {
                call_id: result.call_id,
                name: result.name,
                result: result.result,
            });
            self.pending.push(Record::Message {
                message: Arc::clone(&message),
            });
            self.transcript.push(message);
        }
    }

    /// Gives `ABORTED` to calls the run will never take up (past the turn limit); they commit
    /// with the run's end.
    pub(super) fn abort_unstarted(&mut self, calls: &[ToolCall]) {
        let results: Vec<CallResult> = calls
            .iter()
            .enumerate()
            .map(|(index, call)| {
                let result = CallResult {
                    index,
                    call_id: Arc::from(self.guard.text(&call.id)),
                    name: Arc::from(self.guard.text(&call.name)),
                    result: ToolResult::failure(ToolError::aborted()),
                };
                self.log.emit(EventKind::ToolFinished {
                    index,
                    call_id: result.call_id.clone(),
                    name: result.name.clone(),
                    result: result.result.clone(),
                });
                result
            })
            .collect();
        self.enter_results(results);
    }

    /// The end (R23, R30): the outcome, guarded (R22), commits with whatever was entered
    /// last, then becomes the run's one terminal event.
    pub(super) fn end(mut self, outcome: RunOutcome) -> Result<RunReport, StoreError> {
        let outcome = match outcome {
            RunOutcome::Failed { error } => RunOutcome::Failed {
                error: self.guard.error(error),
            },
            other => other,
        };
        self.pending.push(Record::RunEnded {
            run: self.run_number,
            outcome: match &outcome {
                RunOutcome::Completed { .. } => "completed".to_owned(),
                RunOutcome::Failed { error } => error.code.clone(),
                RunOutcome::Cancelled => "cancelled".to_owned(),
            },
        });
        self.commit()?;
        self.log.emit(match &outcome {
            RunOutcome::Completed { text } => EventKind::RunCompleted { text: text.clone() },
            RunOutcome::Failed { error } => EventKind::RunFailed {
                error: error.clone(),
            },
            RunOutcome::Cancelled => EventKind::RunCancelled,
        });
        Ok(RunReport {
            outcome,
            batches: self.batches,
            calls: self.calls,
        })
    }
}

//! The turns of a run (R14, R16–R21): what a run fixes before it starts (its limits, its
//! redactor and guard, its policy), then each provider turn — asking with timeout and retries
//! (R18, R21), running the reply's batch (R17, R19, R20) — and watching for a stop.

#[allow(clippy::wildcard_imports)]
use super::*;

/// What a run fixes before it starts (R14, R11): its limits are checked, its secret values
/// compiled into the prompt redactor and the exact-value guard, its policy set.
pub(super) struct Setup {
    pub(super) redactor: Redactor,
    pub(super) guard: SecretGuard,
    pub(super) policy: RunPolicy,
    pub(super) system_prompt: String,
}

impl Setup {
    /// Refuses limits outside their ranges and secret values the redactor refuses (R14).
    pub(super) fn new(input: &StartRunInput) -> Result<Setup, StartError> {
        input.limits.check()?;
        let redactor = Redactor::new(&input.secrets)?;
        let guard = SecretGuard::for_redactor(&redactor);
        let policy = RunPolicy {
            read_only: input.read_only,
            disabled: input.disabled_tools.clone(),
        };
        let mut system_prompt = SYSTEM_PROMPT.to_owned();
        if input.read_only {
            system_prompt.push_str(READ_ONLY_NOTE);
        }
        Ok(Setup {
            redactor,
            guard,
            policy,
            system_prompt,
        })
    }
}

/// The tool names for `run.started`, in registration order.
pub(super) fn listed_names(tools: &[&ToolMeta]) -> Vec<Arc<str>> {
    tools
        .iter()
        .map(|tool| tool.shared_name().clone())
        .collect()
}

/// What every turn of a run needs: the provider, what each request carries, the limits, and
/// the batch runner.
pub(super) struct Turns<'a, P: ?Sized> {
    pub(super) provider: &'a mut P,
    pub(super) system_prompt: &'a str,
    /// The resolved tool list (R4), sent with every request.
    pub(super) tools: &'a [&'a ToolMeta],
    /// The raw prompt; only a seeded bug ever sends it.
    pub(super) prompt: &'a str,
    pub(super) limits: Limits,
    /// The batches the run may take (R19).
    pub(super) turns_max: u32,
    pub(super) batch: BatchRun<'a>,
    pub(super) watch: Watch<'a>,
}

impl<P: Provider + ?Sized> Turns<'_, P> {
    /// Every turn of the run, from the first or from where a crash cut it (`resume`), until
    /// one ends the run; past [`TURNS_HARD_MAX`] the run fails with `TOOL_LOOP_LIMIT`.
    pub(super) async fn all<S: SessionStore>(
        &mut self,
        run: &mut Run<'_, S>,
        resume: Option<Resume>,
    ) -> Result<RunOutcome, RunError> {
        let mut first_turn = 0;
        if let Some(resume) = resume {
            run.batches = resume.batches;
            run.calls = resume.calls;
            first_turn = resume.turn;
            if let Some(outcome) = self.take_up(run, resume.cut).await? {
                return Ok(outcome);
            }
        }
        for turn in first_turn..=TURNS_HARD_MAX {
            if let Some(outcome) = self.turn(run, turn).await? {
                return Ok(outcome);
            }
        }
        Ok(RunOutcome::Failed {
            error: tool_loop_limit(self.limits.turns_max),
        })
    }

    /// One provider turn (R16, R19, R22): asks for a reply, guards it and commits it. A reply
    /// without calls ends the run `run.completed`; a reply with calls past the turn limit
    /// ends it `TOOL_LOOP_LIMIT`, its calls `ABORTED`; otherwise its calls run as one batch
    /// and their results are committed. `Some` when the run ends; `Err` when the store failed
    /// (R35).
    pub(super) async fn turn<S: SessionStore>(
        &mut self,
        run: &mut Run<'_, S>,
        turn: u32,
    ) -> Result<Option<RunOutcome>, StoreError> {
        let reply = match self.reply(run, turn).await {
            Ok(reply) => reply,
            Err(outcome) => return Ok(Some(outcome)),
        };
        self.batch.activity.reset();
        let text = self.batch.guard.string(reply.text);
        // The calls as the model sent them run the batch (the guard judges their raw
        // input); their guarded form, the same calls when clean, is entered and announced.
        let calls = reply.calls;
        let guarded_calls = self.batch.guard.calls(&calls);
        // A call the guard changed is journaled with the result a resumed batch, which only
        // has the guarded form, gives it (`Record::Settled`).
        let refusals = if Arc::ptr_eq(&calls, &guarded_calls) {
            Vec::new()
        } else {
            self.settled_of_changed(&calls, &guarded_calls)
        };
        run.enter(
            Message::Assistant {
                text: text.clone(),
                calls: Arc::clone(&guarded_calls),
            },
            refusals,
        )?;
        run.log.emit(EventKind::AssistantMessageCompleted {
            turn,
            text: text.clone(),
            calls: guarded_calls,
        });
        if calls.is_empty() {
            return Ok(Some(RunOutcome::Completed { text }));
        }
        if run.batches >= self.turns_max {
            run.abort_unstarted(&calls);
            return Ok(Some(RunOutcome::Failed {
                error: tool_loop_limit(self.limits.turns_max),
            }));
        }
        self.run_batch(run, &calls, &BTreeMap::new()).await
    }

    /// The settled result of each call whose guarded form differs from what the model sent:
    /// the R3 refusal it meets as sent; or, when it is admitted as sent, `ABORTED` if what
    /// its body would get differs (its arguments or its name were guarded) or its guarded id
    /// would not check as its id did. A call admitted as sent whose id alone was guarded,
    /// and checks the same, gets nothing: its body gets the same input and the same guarded
    /// id when its batch runs again.
    pub(super) fn settled_of_changed(
        &self,
        calls: &[ToolCall],
        guarded: &[ToolCall],
    ) -> Vec<Record> {
        let registry = self.batch.registry;
        let mut ids = crate::registry::CallIds::default();
        let mut guarded_ids = crate::registry::CallIds::default();
        let mut settled = Vec::new();
        let capped = calls
            .iter()
            .zip(guarded)
            .take(self.batch.calls_per_batch_max);
        for (index, (call, shown)) in capped.enumerate() {
            let id_checks_the_same = guarded_ids.check(&shown.id).is_ok();
            if call == shown {
                // Unchanged: only its id counts, for the calls after it (a repeated id).
                let _ = ids.check(&call.id);
                continue;
            }
            let verdict = registry.admit(&self.batch.scope, &mut ids, call);
            let error = match verdict {
                Err(error) => error,
                Ok(_)
                    if call.arguments == shown.arguments
                        && call.name == shown.name
                        && id_checks_the_same =>
                {
                    continue;
                }
                Ok(_) => ToolError::aborted(),
            };
            settled.push(Record::Settled {
                index: u32::try_from(index).unwrap_or(u32::MAX),
                error: self.batch.guard.error(error),
            });
        }
        settled
    }

    /// Takes up what a crash cut (R33, R34): a committed reply without calls ends the run;
    /// a cut batch runs again, its calls of R32 with a committed intent `OUTCOME_UNKNOWN`
    /// and its calls journaled with a refusal refused so again; a batch past the turn
    /// limit ends the run as it would have.
    pub(super) async fn take_up<S: SessionStore>(
        &mut self,
        run: &mut Run<'_, S>,
        cut: Cut,
    ) -> Result<Option<RunOutcome>, StoreError> {
        match cut {
            Cut::Ask => Ok(None),
            Cut::Completed { text } => Ok(Some(RunOutcome::Completed { text })),
            Cut::Batch {
                calls,
                intents,
                refusals,
            } => {
                if run.batches >= self.turns_max {
                    run.abort_unstarted(&calls);
                    return Ok(Some(RunOutcome::Failed {
                        error: tool_loop_limit(self.limits.turns_max),
                    }));
                }
                let mut settled: BTreeMap<usize, ToolError> = refusals;
                for index in intents {
                    settled.insert(index, ToolError::outcome_unknown());
                }
                self.run_batch(run, &calls, &settled).await
            }
        }
    }

    /// The provider's reply to the transcript (R16, R18, R21), unless the run is cancelled
    /// or its deadline passes first (R19, R20): `Err` is how the run ends.
    pub(super) async fn reply<S: SessionStore>(
        &mut self,
        run: &Run<'_, S>,
        turn: u32,
    ) -> Result<ProviderReply, RunOutcome> {
        let transcript = request_transcript(run.faults, &run.transcript, self.prompt, turn);
        let reply = tokio::select! {
            biased;
            stop = self.watch.stopped() => Err(stop),
            reply = ask(self.provider, self.system_prompt, &transcript, self.tools, turn, &self.limits) => Ok(reply),
        };
        match reply {
            Err(stop) => Err(stop.outcome(&self.limits)),
            Ok(Err(error)) => Err(RunOutcome::Failed {
                error: error.to_error(),
            }),
            Ok(Ok(reply)) => Ok(reply),
        }
    }

    /// Runs one batch (R17, R20) and commits its results, with the chart when a write changed
    /// it (R31). When the run is cancelled or its deadline passes meanwhile, the stop flag is
    /// raised, every call still gets its result, and then the run ends: `Some` is how, and
    /// the results commit with the run's end. `settled` holds the calls of a resumed batch
    /// that get a result without running.
    pub(super) async fn run_batch<S: SessionStore>(
        &self,
        run: &mut Run<'_, S>,
        calls: &[ToolCall],
        settled: &BTreeMap<usize, ToolError>,
    ) -> Result<Option<RunOutcome>, StoreError> {
        let (results, stopped) = {
            let session_id = run.session_id;
            let store = &mut *run.store;
            let mut intent = |index: usize, call_id: &str, tool: &str| {
                let record = Record::Intent {
                    index: u32::try_from(index).unwrap_or(u32::MAX),
                    call_id: call_id.to_owned(),
                    tool: tool.to_owned(),
                };
                store.commit(session_id, std::slice::from_ref(&record), None)
            };
            let batch = schedule::run_batch(&self.batch, calls, settled, &mut intent, &mut run.log);
            tokio::pin!(batch);
            tokio::select! {
                biased;
                results = &mut batch => (results?, None),
                stop = self.watch.stopped() => {
                    self.batch.stop.raise();
                    (batch.await?, Some(stop))
                }
            }
        };
        run.batches += 1;
        run.enter_results(results);
        match stopped {
            Some(stop) => Ok(Some(stop.outcome(&self.limits))),
            None => {
                run.commit()?;
                Ok(None)
            }
        }
    }
}

/// Waits for whatever stops a run first.
pub(super) struct Watch<'a> {
    pub(super) cancel: Option<&'a CancelToken>,
    pub(super) activity: &'a Activity,
}

impl Watch<'_> {
    pub(super) async fn stopped(&self) -> Stop {
        let cancelled = async {
            match self.cancel {
                Some(token) => token.cancelled().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            biased;
            () = cancelled => Stop::Cancelled,
            () = self.activity.expired() => Stop::Deadline,
        }
    }
}

/// One provider turn with timeouts and retries (R18, R19, R21).
pub(super) async fn ask<P: Provider + ?Sized>(
    provider: &mut P,
    system_prompt: &str,
    transcript: &[Arc<Message>],
    tools: &[&ToolMeta],
    turn: u32,
    limits: &Limits,
) -> Result<ProviderReply, ProviderError> {
    let timeout = Duration::from_millis(limits.provider_timeout_ms);
    let mut attempt = 0;
    loop {
        let request = ProviderRequest {
            system_prompt,
            transcript,
            tools,
            turn,
            attempt,
        };
        let outcome = match crate::timers::timeout(timeout, provider.complete(request)).await {
            Ok(outcome) => outcome,
            Err(_elapsed) => Err(ProviderError::new(
                ProviderErrorKind::Timeout,
                format!(
                    "The provider did not answer within {} s.",
                    limits.provider_timeout_ms / 1000
                ),
            )),
        };
        let error = match outcome {
            Ok(reply) => return Ok(reply),
            Err(error) => error,
        };
        if !error.kind.is_retryable() || attempt >= limits.provider_retries_max {
            return Err(error);
        }
        let backoff = BACKOFF_MS_FIRST << attempt.min(16);
        let wait = error.retry_after_ms.unwrap_or(backoff).min(BACKOFF_MS_MAX);
        crate::timers::sleep(Duration::from_millis(wait)).await;
        attempt += 1;
    }
}

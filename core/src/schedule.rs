//! Scheduling one batch of calls (R17, R19's batch cap, R20).
//!
//! [`is_sequential`] is the rule of R17 as a pure function of the batch as the model sent it:
//! if any call names a registered `sequential` tool, every call of the batch runs one at a
//! time in the order sent, each finishing before the next starts; otherwise all of them
//! start at the batch's start instant. Calls past `calls_per_batch_max` are not run
//! (`TOO_MANY_CALLS`), but they still count for the rule: it looks at the batch as sent.
//!
//! `run_batch` runs a batch inside the driver's task (no spawned tasks, so the simulator's
//! current-thread runtime decides every interleaving deterministically) and returns one
//! result per call in the order sent, whatever order they finished in.
//!
//! When the run's stop flag is raised (cancellation or the inactivity deadline, R20): no body
//! starts afterwards; a running write completes and keeps its result, because it has
//! committed; a running read is abandoned and gets `ABORTED`; calls not started get
//! `ABORTED`. The batch returns only when every call has its result.
//!
//! Durable sessions (R32): right before the body of a call to a tool with an effect outside
//! the store starts, its intent is committed through the batch's `intent` hook; a failed
//! commit is a crash (R35) and the batch stops there, with no more bodies and no results. A
//! resumed batch gives its `settled` calls (an intent committed and no result: R32's
//! `OUTCOME_UNKNOWN`; a refusal journaled with the reply) their result without admitting or
//! running them; each still counts for R17 and for the repeated-id check.

use std::any::Any;
use std::collections::BTreeMap;
use std::sync::Arc;

use futures::StreamExt;
use futures::stream::FuturesUnordered;

use crate::chart::SharedChart;
use crate::deadline::{Activity, StopFlag};
use crate::envelope::{ToolError, ToolResult};
use crate::events::{EventKind, EventLog};
use crate::fault::Fault;
use crate::guard::SecretGuard;
use crate::registry::{Admitted, CallIds, CallScope, Registry};
use crate::session::StoreError;
use crate::tool::{ToolCall, ToolContext, UserResponder};

/// R17: whether the batch, as sent, runs one call at a time.
///
/// ```
/// use ward_core::chart::tools::{CatalogueOptions, registry};
/// use ward_core::schedule::is_sequential;
/// use ward_core::tool::ToolCall;
/// let registry = registry(CatalogueOptions::default()).unwrap();
/// let call = |name: &str| ToolCall { id: name.into(), name: name.into(), arguments: "{}".into() };
/// assert!(!is_sequential(&[call("panes_list"), call("settings_get")], &registry));
/// assert!(is_sequential(&[call("panes_list"), call("panes_clear")], &registry));
/// ```
pub fn is_sequential(calls: &[ToolCall], registry: &Registry) -> bool {
    calls.iter().any(|call| names_sequential(call, registry))
}

/// Whether `call` names a registered `sequential` tool.
fn names_sequential(call: &ToolCall, registry: &Registry) -> bool {
    registry
        .get(&call.name)
        .is_some_and(|tool| tool.meta().is_sequential())
}

/// One call's result, with the id and name as they enter the transcript (guarded).
#[derive(Clone, Debug, PartialEq)]
pub struct CallResult {
    /// The call's position in its batch.
    pub index: usize,
    /// The call's id, guarded.
    pub call_id: Arc<str>,
    /// The tool it named, guarded.
    pub name: Arc<str>,
    /// The envelope, guarded.
    pub result: ToolResult,
}

/// Everything a batch needs from its run.
pub(crate) struct BatchRun<'a> {
    pub registry: &'a Registry,
    pub scope: CallScope<'a>,
    pub guard: &'a SecretGuard,
    pub calls_per_batch_max: usize,
    pub stop: &'a StopFlag,
    pub activity: &'a Activity,
    pub chart: &'a SharedChart,
    pub user: &'a Arc<dyn UserResponder>,
    pub extension: &'a Option<Arc<dyn Any + Send + Sync>>,
}

impl BatchRun<'_> {
    /// The guarded id and name of `call`, made once per call and shared by its events, its
    /// body's context and its result.
    fn label(&self, call: &ToolCall) -> Label {
        Label {
            id: Arc::from(self.guard.text(&call.id)),
            name: Arc::from(self.guard.text(&call.name)),
        }
    }

    /// The context of an admitted call: its guarded id, and the registered name it named.
    fn context(&self, index: usize, label: &Label, tool_name: &Arc<str>) -> ToolContext {
        ToolContext {
            chart: self.chart.clone(),
            user: Arc::clone(self.user),
            activity: self.activity.clone(),
            call_id: Arc::clone(&label.id),
            tool_name: Arc::clone(tool_name),
            call_index: index,
            extension: self.extension.clone(),
        }
    }

    fn finished(
        &self,
        log: &mut EventLog<'_>,
        index: usize,
        label: &Label,
        result: ToolResult,
    ) -> CallResult {
        let finished = CallResult {
            index,
            call_id: Arc::clone(&label.id),
            name: Arc::clone(&label.name),
            result: self.guard.result(result),
        };
        log.emit(EventKind::ToolFinished {
            index,
            call_id: finished.call_id.clone(),
            name: finished.name.clone(),
            result: finished.result.clone(),
        });
        finished
    }

    fn started(&self, log: &mut EventLog<'_>, index: usize, label: &Label) {
        log.emit(EventKind::ToolStarted {
            index,
            call_id: Arc::clone(&label.id),
            name: Arc::clone(&label.name),
        });
    }

    /// Runs an admitted call: a write always completes; a read is abandoned when the run
    /// stops (R20).
    async fn run_admitted(&self, admitted: Admitted<'_>, context: &ToolContext) -> ToolResult {
        let writes = !admitted.tool().meta().is_read_only();
        let body = self.registry.run(admitted, context);
        if writes {
            return body.await;
        }
        tokio::select! {
            biased;
            result = body => result,
            () = self.stop.raised() => ToolResult::failure(ToolError::aborted()),
        }
    }
}

/// A call's guarded id and tool name.
struct Label {
    id: Arc<str>,
    name: Arc<str>,
}

/// Commits the intent of the call at a batch position (its guarded id, its tool) before its
/// body starts (R32).
pub(crate) type IntentHook<'h> = dyn FnMut(usize, &str, &str) -> Result<(), StoreError> + 'h;

/// What one call of a batch comes to before its body: a result already, or an admitted
/// call to run.
enum Gate<'r> {
    Result(ToolResult),
    Admitted(Admitted<'r>),
}

impl BatchRun<'_> {
    /// R3's checks on one call, or its settled result; commits its intent when its body is to
    /// run and its effect lives outside the store (R32).
    fn gate<'r>(
        &'r self,
        ids: &mut CallIds,
        index: usize,
        call: &ToolCall,
        label: &Label,
        settled: &BTreeMap<usize, ToolError>,
        intent: &mut IntentHook<'_>,
    ) -> Result<Gate<'r>, StoreError> {
        if let Some(error) = settled.get(&index) {
            // It was admitted or refused as it came; its id still counts for the repeats.
            let _ = ids.check(&call.id);
            return Ok(Gate::Result(ToolResult::failure(error.clone())));
        }
        match self.registry.admit(&self.scope, ids, call) {
            Ok(admitted) => {
                let meta = admitted.tool().meta();
                if meta.has_outside_effect()
                    && !crate::fault!(self.scope.faults, Fault::IntentAfterStart)
                {
                    intent(index, &label.id, meta.name())?;
                }
                Ok(Gate::Admitted(admitted))
            }
            Err(error) => Ok(Gate::Result(ToolResult::failure(error))),
        }
    }
}

/// Runs one batch; returns one result per call, in the order sent (R17), or the store's
/// failure when an intent did not commit (R35).
pub(crate) async fn run_batch(
    run: &BatchRun<'_>,
    calls: &[ToolCall],
    settled: &BTreeMap<usize, ToolError>,
    intent: &mut IntentHook<'_>,
    log: &mut EventLog<'_>,
) -> Result<Vec<CallResult>, StoreError> {
    let labels: Vec<Label> = calls.iter().map(|call| run.label(call)).collect();
    // Results are collected as calls finish, then put back in the order sent.
    let mut results = if sequential_verdict(&run.scope, calls, run.registry) {
        run_sequential(run, calls, &labels, settled, intent, log).await?
    } else {
        run_parallel(run, calls, &labels, settled, intent, log).await?
    };
    debug_assert_eq!(
        results.len(),
        calls.len(),
        "every call has exactly one result"
    );
    // Results go back in the order sent, whatever order they finished in (R17).
    if !crate::fault!(run.scope.faults, Fault::ResultsCompletionOrder) {
        results.sort_by_key(|result| result.index);
        debug_assert!(
            (results.iter().enumerate()).all(|(position, result)| result.index == position),
            "one result per call, in the order sent"
        );
    }
    Ok(results)
}

/// A sequential batch: one call at a time in the order sent, each finishing before the next
/// starts; none starts once the run is stopped (R17, R20).
async fn run_sequential(
    run: &BatchRun<'_>,
    calls: &[ToolCall],
    labels: &[Label],
    settled: &BTreeMap<usize, ToolError>,
    intent: &mut IntentHook<'_>,
    log: &mut EventLog<'_>,
) -> Result<Vec<CallResult>, StoreError> {
    let mut results = Vec::with_capacity(calls.len());
    let mut ids = CallIds::default();
    for (index, call) in calls.iter().enumerate() {
        let after_intent = settled
            .get(&index)
            .filter(|error| error.code == crate::envelope::codes::OUTCOME_UNKNOWN);
        let result = if let Some(error) = after_intent {
            // Before the stop: a call after its intent is never `ABORTED` (R32).
            let _ = ids.check(&call.id);
            run.started(log, index, &labels[index]);
            ToolResult::failure(error.clone())
        } else if index >= run.calls_per_batch_max {
            ToolResult::failure(ToolError::too_many_calls(cap(run)))
        } else if run.stop.is_raised() && !crate::fault!(run.scope.faults, Fault::WriteAfterCancel)
        {
            ToolResult::failure(ToolError::aborted())
        } else {
            run.started(log, index, &labels[index]);
            let label = &labels[index];
            let result = match run.gate(&mut ids, index, call, label, settled, intent)? {
                Gate::Admitted(admitted) => {
                    let meta = admitted.tool().meta();
                    let late_intent = meta.has_outside_effect()
                        && crate::fault!(run.scope.faults, Fault::IntentAfterStart);
                    let name = Arc::clone(meta.shared_name());
                    let context = run.context(index, label, &name);
                    let result = run.run_admitted(admitted, &context).await;
                    if late_intent {
                        intent(index, &label.id, &name)?;
                    }
                    result
                }
                Gate::Result(result) => result,
            };
            run.activity.reset();
            result
        };
        results.push(run.finished(log, index, &labels[index], result));
    }
    Ok(results)
}

/// A parallel batch: every admitted call starts at the batch's start instant; the refused
/// ones finish first, then the others as they complete (R17).
async fn run_parallel(
    run: &BatchRun<'_>,
    calls: &[ToolCall],
    labels: &[Label],
    settled: &BTreeMap<usize, ToolError>,
    intent: &mut IntentHook<'_>,
    log: &mut EventLog<'_>,
) -> Result<Vec<CallResult>, StoreError> {
    let mut results = Vec::with_capacity(calls.len());
    let mut ids = CallIds::default();
    let mut refused = Vec::new();
    let mut running = FuturesUnordered::new();
    for (index, call) in calls.iter().enumerate() {
        if index >= run.calls_per_batch_max {
            refused.push((
                index,
                ToolResult::failure(ToolError::too_many_calls(cap(run))),
            ));
            continue;
        }
        run.started(log, index, &labels[index]);
        match run.gate(&mut ids, index, call, &labels[index], settled, intent)? {
            Gate::Admitted(admitted) => {
                let name = Arc::clone(admitted.tool().meta().shared_name());
                let context = run.context(index, &labels[index], &name);
                running.push(async move {
                    let result = run.run_admitted(admitted, &context).await;
                    (index, result)
                });
            }
            Gate::Result(result) => refused.push((index, result)),
        }
    }
    for (index, result) in refused {
        results.push(run.finished(log, index, &labels[index], result));
    }
    while let Some((index, result)) = running.next().await {
        run.activity.reset();
        results.push(run.finished(log, index, &labels[index], result));
    }
    Ok(results)
}

fn cap(run: &BatchRun<'_>) -> u32 {
    u32::try_from(run.calls_per_batch_max).unwrap_or(u32::MAX)
}

// ---------------------------------------------------------------------------------------------
// Seeded bugs (SPEC §11).

/// `always-sequential` (I12), `sequential-ignored` (I7), `sequential-first-call-only` (I7):
/// R17's verdict on a batch, broken three ways: every batch runs one call at a time; every
/// batch runs in parallel; a batch runs one call at a time only when its first call names a
/// sequential tool. Correct, it is [`is_sequential`].
fn sequential_verdict(scope: &CallScope<'_>, calls: &[ToolCall], registry: &Registry) -> bool {
    if crate::fault!(scope.faults, Fault::AlwaysSequential) {
        return true;
    }
    if crate::fault!(scope.faults, Fault::SequentialIgnored) {
        return false;
    }
    if crate::fault!(scope.faults, Fault::SequentialFirstCallOnly) {
        return calls
            .first()
            .is_some_and(|call| names_sequential(call, registry));
    }
    is_sequential(calls, registry)
}

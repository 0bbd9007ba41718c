//! Running a scenario against the reference core, deterministically (SPEC §10), and
//! recording everything at the runtime's boundaries.
//!
//! Each scenario runs on a tokio current-thread runtime whose clock is paused (one per
//! thread, reused from scenario to scenario; see [`execute`]), so time only moves when every
//! task waits (auto-advance), and every interleaving is decided by the code, not the
//! machine. The core's batches, the scripted user and the cancel timer are all futures of
//! the one task the runtime drives: a scenario spawns no task.
//!
//! The simulator sees the runtime only where SPEC §9 allows:
//!
//! - the provider: every request it receives and every reply it gives
//!   (`provider`);
//! - every tool body's start, end, input and output, through a wrapper registered with
//!   [`RegistryBuilder::wrap_bodies`], which also plants the scenario's behaviours
//!   (`body`);
//! - the session store's appends, the event stream, and the chart's public snapshot (taken
//!   when a call starts and finishes) and undo (run back at the end of every session).
//!
//! All of it lands in one [`Trace`] per run, in the order it happened (`records`).

mod body;
pub mod lockstep;
mod provider;
mod records;

use std::cell::RefCell;
use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use ward_core::chart::tools::{CatalogueOptions, register_tools};
use ward_core::chart::{ChartState, SharedChart};
use ward_core::deadline::CancelToken;
use ward_core::driver::{
    Limits, RunOptions, RunOutcome, RunReport, Session, StartError, StartRunInput,
};
use ward_core::events::{Event, EventKind, EventSink};
use ward_core::fault::FaultSet;
use ward_core::registry::{Registry, RegistryBuilder};
use ward_core::session::{Message, SessionStore};
use ward_core::tool::{ToolMeta, UserResponder};

pub use body::{PlantedPanic, injection};
pub use records::{Record, RunTrace, Trace};

use body::{ObservedBody, RunWorld};
use provider::SimProvider;
use records::{Recorder, lock};

use crate::scenario::{Answer, RunScript, Scenario};

/// The registries a worker reuses for every scenario: schemas are compiled once per worker,
/// not once per run.
#[derive(Clone, Debug)]
pub struct World {
    plain: Registry,
    with_code_interpreter: Registry,
}

impl World {
    /// Builds the chart catalogue twice (with and without `code_interpreter`), every body
    /// wrapped by the simulator.
    pub fn new() -> World {
        World {
            plain: observed_registry(false),
            with_code_interpreter: observed_registry(true),
        }
    }

    /// The registry a scenario runs against.
    pub fn registry(&self, code_interpreter: bool) -> &Registry {
        if code_interpreter {
            &self.with_code_interpreter
        } else {
            &self.plain
        }
    }
}

impl Default for World {
    fn default() -> Self {
        World::new()
    }
}

fn observed_registry(code_interpreter: bool) -> Registry {
    let mut builder = RegistryBuilder::new();
    // The catalogue is built into ward-core; failing to register it is a build defect that no
    // input can cause.
    register_tools(&mut builder, CatalogueOptions { code_interpreter })
        .expect("the built-in catalogue registers");
    builder.wrap_bodies(|meta: &ToolMeta, inner| {
        Arc::new(ObservedBody {
            inner,
            tool: Arc::clone(meta.shared_name()),
        })
    });
    builder.build()
}

/// Records events, and the chart's snapshot when a call starts and finishes.
struct SimEvents {
    recorder: Recorder,
    chart: SharedChart,
    /// The run's previous snapshot: a snapshot equal to it is recorded as unchanged.
    last_state: Option<Arc<ChartState>>,
}

impl EventSink for SimEvents {
    fn emit(&mut self, event: Event) {
        let snapshot = matches!(
            event.kind,
            EventKind::ToolStarted { .. } | EventKind::ToolFinished { .. }
        );
        let seq = event.seq;
        self.recorder.record(Record::Event(event));
        if snapshot {
            let state = self.chart.snapshot_shared();
            let changed = changed(self.last_state.as_deref(), &state);
            if changed {
                self.last_state = Some(Arc::clone(&state));
            }
            self.recorder.record(Record::Snapshot {
                seq,
                state: changed.then_some(state),
            });
        }
    }
}

/// Whether a snapshot must be recorded in full: it is the run's first, or its state differs
/// from the previous snapshot's (by value: an equal copy is unchanged).
fn changed(last: Option<&ChartState>, state: &ChartState) -> bool {
    last != Some(state)
}

/// The session store of a simulated session: keeps its messages and records every append.
struct SimStore {
    messages: Vec<Arc<Message>>,
    recorder: Option<Recorder>,
}

impl SessionStore for SimStore {
    fn load(&self, _session_id: &str) -> Vec<Arc<Message>> {
        self.messages.clone()
    }

    fn append(&mut self, _session_id: &str, message: &Arc<Message>) {
        if let Some(recorder) = &self.recorder {
            recorder.record(Record::Append {
                message: Arc::clone(message),
            });
        }
        self.messages.push(Arc::clone(message));
    }
}

/// The scripted user.
struct SimUser {
    answers: Mutex<VecDeque<Answer>>,
    recorder: Recorder,
}

impl UserResponder for SimUser {
    fn answer<'a>(
        &'a self,
        _question: &'a str,
        _options: &'a [String],
    ) -> BoxFuture<'a, Option<String>> {
        let next = lock(&self.answers).pop_front();
        Box::pin(async move {
            let answer = next?;
            if answer.delay_ms > 0 {
                tokio::time::sleep(Duration::from_millis(answer.delay_ms)).await;
            }
            self.recorder.record(Record::Answer {
                at_ms: self.recorder.now_ms(),
                answer: answer.text.clone(),
            });
            answer.text
        })
    }
}

/// Runs `scenario` against the core with `faults` on, deterministically.
///
/// Each thread keeps one runtime for the scenarios it runs, instead of building one per
/// scenario. Nothing carries over from one scenario to the next: a scenario spawns no task
/// and leaves no timer behind (its futures, and their sleeps, are dropped when it ends), and
/// every time it records is measured from its own start. The paused clock only ever
/// advances to a timer's deadline, in whole milliseconds from the runtime's start, so every
/// scenario starts on a millisecond boundary as it would on a fresh runtime.
pub fn execute(world: &World, scenario: &Scenario, faults: FaultSet) -> Trace {
    thread_local! {
        static RUNTIME: RefCell<Option<tokio::runtime::Runtime>> = const { RefCell::new(None) };
    }
    let runtime = RUNTIME.with(|cell| cell.borrow_mut().take()).or_else(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build()
            .ok()
    });
    let Some(runtime) = runtime else {
        return Trace::default();
    };
    let trace = runtime.block_on(execute_async(world, scenario, faults));
    RUNTIME.with(|cell| *cell.borrow_mut() = Some(runtime));
    trace
}

async fn execute_async(world: &World, scenario: &Scenario, faults: FaultSet) -> Trace {
    let registry = world.registry(scenario.code_interpreter);
    let secrets: Arc<BTreeMap<String, String>> = Arc::new(
        scenario
            .secrets
            .iter()
            .map(|secret| (secret.label.clone(), secret.value.clone()))
            .collect(),
    );
    let mut trace = Trace::default();
    for (session_index, session_script) in scenario.sessions.iter().enumerate() {
        let chart = SharedChart::new(scenario.chart_seed);
        let store = SimStore {
            messages: Vec::new(),
            recorder: None,
        };
        let mut session = Session::new(
            format!("session-{session_index}"),
            registry.clone(),
            chart.clone(),
            store,
        );
        for (run_index, run_script) in session_script.runs.iter().enumerate() {
            let recorder = Recorder::new(session_index, run_index);
            let run_trace = execute_run(&mut session, run_script, &secrets, faults, recorder).await;
            trace.runs.push(run_trace);
        }
        // Undo every change of the session, recording each restored state (I9).
        if let Some(last) = trace.runs.last_mut() {
            while chart.undo() {
                last.records.push(Record::Undo {
                    state: chart.snapshot_shared(),
                });
            }
        }
    }
    trace
}

async fn execute_run(
    session: &mut Session<SimStore>,
    script: &RunScript,
    secrets: &Arc<BTreeMap<String, String>>,
    faults: FaultSet,
    recorder: Recorder,
) -> RunTrace {
    session.store_mut().recorder = Some(recorder.clone());
    let input = start_input(script, secrets);
    let mut provider = SimProvider::new(&script.turns, secrets, recorder.clone());
    let mut events = SimEvents {
        recorder: recorder.clone(),
        chart: session.chart().clone(),
        last_state: None,
    };
    let cancel = CancelToken::new();
    let options = run_options(script, secrets, faults, &cancel, &recorder);
    let outcome = {
        let run = session.run(input, &mut provider, &mut events, options);
        tokio::pin!(run);
        match script.cancel_at_ms {
            None => run.await,
            Some(cancel_at_ms) => {
                let timer = tokio::time::sleep(Duration::from_millis(cancel_at_ms));
                tokio::select! {
                    biased;
                    outcome = &mut run => outcome,
                    () = timer => {
                        recorder.record(Record::Cancel { at_ms: recorder.now_ms() });
                        cancel.cancel();
                        run.await
                    }
                }
            }
        }
    };
    session.store_mut().recorder = None;
    finish_run(outcome, recorder)
}

/// What the script's run asks the runtime to start, its configured values looked up by label.
fn start_input(script: &RunScript, secrets: &BTreeMap<String, String>) -> StartRunInput {
    StartRunInput {
        prompt: script.prompt.clone(),
        read_only: script.read_only,
        disabled_tools: script.disabled_tools.iter().cloned().collect(),
        secrets: script
            .secrets
            .iter()
            .filter_map(|label| secrets.get(label).cloned())
            .collect(),
        // Missing limits take the runtime's defaults, as an embedder's would; the oracle
        // judges them against its own table of the SPEC's defaults.
        limits: script.limits.resolve(Limits::default()),
    }
}

/// The run's options: the faults, the cancel token, the scripted user and the tool
/// behaviours the body wrapper plays.
fn run_options(
    script: &RunScript,
    secrets: &Arc<BTreeMap<String, String>>,
    faults: FaultSet,
    cancel: &CancelToken,
    recorder: &Recorder,
) -> RunOptions {
    RunOptions {
        faults,
        cancel: Some(cancel.clone()),
        user: Arc::new(SimUser {
            answers: Mutex::new(script.answers.iter().cloned().collect()),
            recorder: recorder.clone(),
        }),
        extension: Some(Arc::new(RunWorld {
            recorder: recorder.clone(),
            behaviours: Arc::clone(&script.tools),
            secrets: Arc::clone(secrets),
        })),
    }
}

/// The run's trace, ended by what the runtime's entry point returned: a report, or the
/// error that kept the run from starting.
fn finish_run(outcome: Result<RunReport, StartError>, recorder: Recorder) -> RunTrace {
    match outcome {
        Ok(report) => {
            let (outcome, code) = match &report.outcome {
                RunOutcome::Completed { .. } => ("run.completed", None),
                RunOutcome::Failed { error } => ("run.failed", Some(error.code.clone())),
                RunOutcome::Cancelled => ("run.cancelled", None),
            };
            recorder.record(Record::Report {
                outcome,
                code,
                batches: report.batches,
                calls: report.calls,
            });
            recorder.take()
        }
        Err(error) => {
            let mut trace = recorder.take();
            trace.start_error = Some(error.to_string());
            trace
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_snapshot_is_recorded_when_its_value_changes_not_its_allocation() {
        let chart = SharedChart::new(42);
        let state = chart.snapshot_shared();
        let copy = Arc::new((*state).clone());
        assert!(changed(None, &state), "a run's first snapshot");
        assert!(!changed(Some(&state), &state));
        assert!(!changed(Some(&copy), &state), "an equal copy is unchanged");
        let mut moved = (*state).clone();
        moved.next_id += 1;
        assert!(changed(Some(&state), &moved));
    }
}

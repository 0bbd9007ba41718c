//! One execution of a crash plan (SPEC §16): processes that open the store on the simulated
//! disk, run or resume the session's runs with ward's core, and die at the plan's crashes;
//! and everything they did at the boundaries.

use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use futures::future::BoxFuture;
use serde_json::Value;
use ward_core::chart::tools::{CatalogueOptions, register_tools};
use ward_core::chart::{ChartState, SharedChart};
use ward_core::deadline::CancelToken;
use ward_core::driver::{Limits, RunError, RunOptions, Session, StartRunInput};
use ward_core::durable::DurableStore;
use ward_core::envelope::ToolError;
use ward_core::events::Event;
use ward_core::fault::FaultSet;
use ward_core::provider::{Provider, ProviderError, ProviderReply, ProviderRequest};
use ward_core::registry::{Registry, RegistryBuilder};
use ward_core::session::{Message, Record, SessionStore, StoreError};
use ward_core::tool::UserResponder;
use ward_core::tool::{ToolBody, ToolCall, ToolContext};

use super::plan::{Crash, CrashKind, Plan};
use crate::rng::SimRng;
use crate::world::disk::{Failure, SimulatedDisk};

/// The session's name in the store.
pub const SESSION: &str = "session";

/// One body start, as the body wrapper saw it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct BodyStart {
    /// The process it started in, from 0.
    pub process: usize,
    /// The run, from 0.
    pub run: u32,
    /// The call's id.
    pub call_id: String,
    /// The tool.
    pub tool: String,
}

/// One provider request.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Request {
    /// The process that asked, from 0.
    pub process: usize,
    /// The run, from 0.
    pub run: u32,
    /// The turn.
    pub turn: u32,
    /// The system prompt sent.
    pub system_prompt: String,
    /// The tools offered, in order.
    pub tools: Vec<String>,
    /// The transcript sent.
    pub transcript: Vec<Message>,
}

/// One step of an execution, in the order it happened: the crash explorer's trace (`ward
/// replay --crashes SEED --trace F.jsonl`). A crash and a resume are steps like the others.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(
    tag = "step",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum Step {
    /// A process opened the store and recovered its journal.
    Opened {
        /// The process, from 0.
        process: usize,
        /// The records the journal held.
        recovered: usize,
    },
    /// A run started.
    RunStarted {
        /// The process.
        process: usize,
        /// The run, from 0.
        run: u32,
    },
    /// A run a crash had cut was taken up (R33, R34).
    Resumed {
        /// The process.
        process: usize,
        /// The run.
        run: u32,
    },
    /// The provider was asked for a turn's reply.
    Request {
        /// The process.
        process: usize,
        /// The run.
        run: u32,
        /// The turn.
        turn: u32,
        /// The messages of the transcript sent.
        messages: usize,
    },
    /// A tool body started.
    BodyStarted {
        /// The process.
        process: usize,
        /// The run.
        run: u32,
        /// The call's id.
        call_id: String,
        /// The tool.
        tool: String,
    },
    /// The store acknowledged a commit.
    Committed {
        /// The process.
        process: usize,
        /// What the commit carried.
        records: Vec<Record>,
    },
    /// The process died at the plan's crash.
    Crashed {
        /// The process.
        process: usize,
        /// How it died.
        kind: &'static str,
        /// The storage call the crash was planned at, counted over the whole execution.
        at: u64,
    },
}

/// One process's life.
#[derive(Clone, Debug, Default)]
pub struct Process {
    /// The crash planned for it, if any.
    pub crash: Option<Crash>,
    /// Whether that crash happened (a planned write or sync failure on a call of another
    /// kind does nothing, and a process may finish before its crash).
    pub crashed: bool,
    /// The journal the store recovered when the process opened it; `None` when it died
    /// before it read one.
    pub recovered: Option<Vec<Record>>,
    /// Every record whose commit returned `Ok` in this process, in order.
    pub acknowledged: Vec<Record>,
}

/// What one execution did.
#[derive(Clone, Debug, Default)]
pub struct Execution {
    /// Storage calls over every process.
    pub storage_calls: u64,
    /// Each process, in order.
    pub processes: Vec<Process>,
    /// The journal at the end.
    pub journal: Vec<Record>,
    /// The chart at the end.
    pub chart: Option<ChartState>,
    /// Every body start.
    pub starts: Vec<BodyStart>,
    /// Every provider request.
    pub requests: Vec<Request>,
    /// Every write's bytes on every disk, synced or not.
    pub written: Vec<Vec<u8>>,
    /// Why the execution stopped short of the session's end, if it did: a store that would
    /// not reopen, a resume refused, more processes than crashes allow.
    pub failure: Option<String>,
    /// The journal and the chart a store reopened after the session's end and one more power
    /// loss holds.
    pub reopened: Option<(Vec<Record>, Option<ChartState>)>,
    /// Every step, in order. Kept for every execution, not only for `ward replay --trace`:
    /// it costs 0.06 % of a crash campaign's instructions (13.108 against 13.101 billion,
    /// `ward run --crashes --seeds 0..200`, 2026-12-06), less than a switch threaded through
    /// every exploration would be worth.
    pub log: Vec<Step>,
}

/// What the body wrappers and the provider saw, shared with the explorer: each body start
/// and each request, noted as it happens (and, when `echo` is set, printed at once to
/// standard output as a JSON line, `start {…}` or `request {…}`, for a process that may be
/// killed before it returns: the crash drill's child).
#[derive(Default)]
pub struct Observations {
    process: AtomicUsize,
    run: AtomicU32,
    starts: Mutex<Vec<BodyStart>>,
    requests: Mutex<Vec<Request>>,
    log: Mutex<Vec<Step>>,
    echo: bool,
}

impl Observations {
    /// Observations that also print each one as it happens.
    pub fn echoed() -> Observations {
        Observations {
            echo: true,
            ..Observations::default()
        }
    }

    /// The process the next observations belong to.
    pub fn set_process(&self, process: usize) {
        self.process.store(process, Ordering::SeqCst);
    }

    /// Every body start and every request so far, taken.
    pub fn take(&self) -> (Vec<BodyStart>, Vec<Request>) {
        (
            std::mem::take(&mut *lock(&self.starts)),
            std::mem::take(&mut *lock(&self.requests)),
        )
    }

    /// Every step so far, taken.
    pub fn take_log(&self) -> Vec<Step> {
        std::mem::take(&mut *lock(&self.log))
    }

    /// Notes a step.
    pub fn note(&self, step: Step) {
        lock(&self.log).push(step);
    }

    /// The process the observations belong to now.
    pub fn process(&self) -> usize {
        self.process.load(Ordering::SeqCst)
    }

    fn note_start(&self, start: BodyStart) {
        self.note(Step::BodyStarted {
            process: start.process,
            run: start.run,
            call_id: start.call_id.clone(),
            tool: start.tool.clone(),
        });
        if self.echo {
            println!(
                "start {}",
                serde_json::to_string(&start).unwrap_or_default()
            );
        }
        lock(&self.starts).push(start);
    }

    fn note_request(&self, request: Request) {
        self.note(Step::Request {
            process: request.process,
            run: request.run,
            turn: request.turn,
            messages: request.transcript.len(),
        });
        if self.echo {
            println!(
                "request {}",
                serde_json::to_string(&request).unwrap_or_default()
            );
        }
        lock(&self.requests).push(request);
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A store that keeps what every acknowledged commit carried, and notes each commit as a step.
pub struct Observed {
    store: DurableStore,
    acknowledged: Vec<Record>,
    shared: Arc<Observations>,
}

impl SessionStore for Observed {
    fn journal(&self, session_id: &str) -> Result<Vec<Record>, StoreError> {
        self.store.journal(session_id)
    }

    fn commit(
        &mut self,
        session_id: &str,
        records: &[Record],
        chart: Option<&Arc<ChartState>>,
    ) -> Result<(), StoreError> {
        self.store.commit(session_id, records, chart)?;
        self.acknowledged.extend_from_slice(records);
        self.shared.note(Step::Committed {
            process: self.shared.process(),
            records: records.to_vec(),
        });
        Ok(())
    }

    fn chart(&self, session_id: &str) -> Result<Option<ChartState>, StoreError> {
        SessionStore::chart(&self.store, session_id)
    }
}

/// Where a body notes its start: the observations of the execution under way.
type Slot = Arc<Mutex<Arc<Observations>>>;

/// A body that notes its start, then runs the catalogue's own.
struct Noted {
    inner: Arc<dyn ToolBody>,
    slot: Slot,
}

impl ToolBody for Noted {
    fn call<'a>(
        &'a self,
        context: &'a ToolContext,
        input: Value,
    ) -> BoxFuture<'a, Result<Value, ToolError>> {
        let shared = Arc::clone(&lock(&self.slot));
        shared.note_start(BodyStart {
            process: shared.process.load(Ordering::SeqCst),
            run: shared.run.load(Ordering::SeqCst),
            call_id: context.call_id().to_owned(),
            tool: context.tool_name().to_owned(),
        });
        self.inner.call(context, input)
    }
}

/// The user of `ask_user`: cancels the run, and never answers (R19, R20: the run stops
/// while the batch waits, the read is abandoned with `ABORTED`).
struct CancellingUser {
    cancel: CancelToken,
}

impl UserResponder for CancellingUser {
    fn answer<'a>(
        &'a self,
        _question: &'a str,
        _options: &'a [String],
    ) -> BoxFuture<'a, Option<String>> {
        self.cancel.cancel();
        Box::pin(std::future::pending())
    }
}

/// The provider: the plan's reply for each turn of the current run.
struct Script<'p> {
    plan: &'p Plan,
    shared: Arc<Observations>,
}

impl Provider for Script<'_> {
    fn complete<'a>(
        &'a mut self,
        request: ProviderRequest<'a>,
    ) -> BoxFuture<'a, Result<ProviderReply, ProviderError>> {
        let run = self.shared.run.load(Ordering::SeqCst);
        self.shared.note_request(Request {
            process: self.shared.process.load(Ordering::SeqCst),
            run,
            turn: request.turn,
            system_prompt: request.system_prompt.to_owned(),
            tools: (request.tools.iter())
                .map(|tool| tool.name().to_owned())
                .collect(),
            transcript: (request.transcript.iter())
                .map(|message| Message::clone(message))
                .collect(),
        });
        let calls: Vec<ToolCall> = (self.plan.runs.get(run as usize))
            .and_then(|script| script.replies.get(request.turn as usize))
            .cloned()
            .unwrap_or_default();
        let text = format!("Turn {} of run {run}.", request.turn);
        Box::pin(async move {
            Ok(ProviderReply {
                text,
                calls: calls.into(),
            })
        })
    }
}

/// The chart catalogue with `code_interpreter`, each body noting its start in `shared`.
pub fn catalogue(shared: &Arc<Observations>) -> Registry {
    noted_catalogue(Arc::new(Mutex::new(Arc::clone(shared))))
}

thread_local! {
    /// This thread's catalogue and the slot its bodies note in: compiling the catalogue's
    /// schemas takes longer than a whole execution (4.4 ms beside 2.4 ms), so each thread
    /// compiles it once.
    static CATALOGUE: std::cell::RefCell<Option<(Registry, Slot)>> = const { std::cell::RefCell::new(None) };
}

/// This thread's catalogue, its bodies noting in `shared` until the next call.
fn cached_catalogue(shared: &Arc<Observations>) -> Registry {
    CATALOGUE.with(|cell| {
        let mut cached = cell.borrow_mut();
        let (registry, slot) = cached.get_or_insert_with(|| {
            let slot: Slot = Arc::new(Mutex::new(Arc::clone(shared)));
            (noted_catalogue(Arc::clone(&slot)), slot)
        });
        *lock(slot) = Arc::clone(shared);
        registry.clone()
    })
}

fn noted_catalogue(slot: Slot) -> Registry {
    let mut builder = RegistryBuilder::new();
    register_tools(
        &mut builder,
        CatalogueOptions {
            code_interpreter: true,
        },
    )
    .expect("the built-in catalogue registers");
    builder.wrap_bodies(|_, inner| {
        Arc::new(Noted {
            inner,
            slot: Arc::clone(&slot),
        })
    });
    builder.build()
}

fn failure_of(crash: Crash) -> Failure {
    match crash.kind {
        CrashKind::Kill | CrashKind::PowerLoss => Failure::Cut(crash.at),
        CrashKind::WriteError => Failure::Write(crash.at),
        CrashKind::SyncError => Failure::Sync(crash.at),
    }
}

/// How a process ended.
pub enum Ended {
    /// Every run of the plan ended.
    Done,
    /// The store failed: the process dies.
    Crashed,
    /// Something the explorer cannot go on from.
    Failed(String),
}

/// Executes `plan` under `faults` with `crashes`, the first killing the first process, the
/// next the process after it, and so on.
pub fn explore_once(
    plan: &Plan,
    faults: FaultSet,
    crashes: &[Crash],
    rng: &mut SimRng,
) -> Execution {
    let runtime = paused_runtime();
    let shared = Arc::new(Observations::default());
    let registry = cached_catalogue(&shared);
    let mut execution = Execution::default();
    // The disk is formatted first, as a store is provisioned: a backend has no rename to make
    // a new database appear whole (a file does, `DurableStore::open`).
    let formatted = SimulatedDisk::new();
    if let Err(error) = DurableStore::open_on(formatted.clone()) {
        execution.failure = Some(format!("the store could not be made: {error}"));
        return execution;
    }
    let mut disk = formatted.after_crash();
    let world = World {
        plan,
        faults,
        registry: &registry,
        shared: &shared,
        runtime: &runtime,
    };
    // Every crash makes one more process; one more finishes the session. A crash's call is
    // counted over the whole execution: each process takes the calls after those made before.
    let mut calls_before = 0;
    for process in 0..=crashes.len() {
        shared.set_process(process);
        let crash = crashes.get(process).copied();
        disk.plan(crash.map(|crash| {
            failure_of(Crash {
                at: crash.at.saturating_sub(calls_before),
                ..crash
            })
        }));
        let (life, session, ended) = world.process(process, crash, &disk);
        execution.storage_calls += disk.calls();
        calls_before += disk.calls();
        if let Some(session) = &session {
            execution.chart = Some(session.chart().snapshot());
        }
        execution.processes.push(life);
        match ended {
            Ended::Done => {
                if let Some(session) = session {
                    let journal = session.store().journal(SESSION);
                    journal.map_or_else(
                        |error| execution.failure = Some(error.to_string()),
                        |journal| execution.journal = journal,
                    );
                }
                break;
            }
            Ended::Failed(why) => {
                execution.failure = Some(why);
                break;
            }
            Ended::Crashed => {
                drop(session);
                disk = after(&disk, crash, rng);
            }
        }
    }
    finish(&mut execution, &disk, rng, &shared);
    execution
}

/// A current-thread tokio runtime whose clock moves only when every task waits (SPEC §10).
fn paused_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("a tokio runtime")
}

/// What a crash leaves of `disk`: its synced writes after a power loss (or a failed sync,
/// R35), every write after a kill or a failed write.
fn after(disk: &SimulatedDisk, crash: Option<Crash>, rng: &mut SimRng) -> SimulatedDisk {
    match crash.map(|crash| crash.kind) {
        Some(CrashKind::PowerLoss | CrashKind::SyncError) => disk.after_power_loss(rng),
        _ => disk.after_crash(),
    }
}

/// What an execution adds once its last process ended: what the store holds after the power
/// is lost once more (every commit acknowledged, the chart of the last write: I15, I16), every
/// byte written (each disk after a crash keeps the writes of the one before it), and what
/// the bodies and the provider saw.
fn finish(
    execution: &mut Execution,
    disk: &SimulatedDisk,
    rng: &mut SimRng,
    shared: &Observations,
) {
    if execution.failure.is_none() {
        match reopened(disk, rng) {
            Ok(held) => execution.reopened = Some(held),
            Err(failure) => execution.failure = Some(failure),
        }
    }
    execution.written = disk.written();
    if execution.failure.is_none() && execution.processes.last().is_some_and(|last| last.crashed) {
        execution.failure = Some("the last process crashed".to_owned());
    }
    (execution.starts, execution.requests) = shared.take();
    execution.log = shared.take_log();
}

/// The journal and the chart the store on `disk` holds after one more power loss; why it did
/// not reopen, if it did not.
fn reopened(
    disk: &SimulatedDisk,
    rng: &mut SimRng,
) -> Result<(Vec<Record>, Option<ChartState>), String> {
    let store = DurableStore::open_on(disk.after_power_loss(rng))
        .map_err(|error| format!("the store did not reopen: {error}"))?;
    Ok((
        store.records(SESSION).unwrap_or_default(),
        store.chart(SESSION).ok().flatten(),
    ))
}

/// What every process of an execution runs against.
struct World<'w> {
    plan: &'w Plan,
    faults: FaultSet,
    registry: &'w Registry,
    shared: &'w Arc<Observations>,
    runtime: &'w tokio::runtime::Runtime,
}

impl World<'_> {
    /// Process number `process`'s life, with `crash` planned for it: what it did, its session
    /// (when it opened one) and how it ended; its crash, when it happened, noted as a step.
    fn process(
        &self,
        process: usize,
        crash: Option<Crash>,
        disk: &SimulatedDisk,
    ) -> (Process, Option<Session<Observed>>, Ended) {
        let mut life = Process {
            crash,
            ..Process::default()
        };
        let mut session = None;
        let ended = live(self, disk, &mut life, &mut session);
        life.crashed = matches!(ended, Ended::Crashed);
        if let (true, Some(crash)) = (life.crashed, crash) {
            self.shared.note(Step::Crashed {
                process,
                kind: crash.kind.name(),
                at: crash.at,
            });
        }
        (life, session, ended)
    }
}

/// One process: opens the store, then resumes the cut run or starts the next, until every
/// run ended or the store fails.
fn live(
    world: &World<'_>,
    disk: &SimulatedDisk,
    life: &mut Process,
    session: &mut Option<Session<Observed>>,
) -> Ended {
    let World {
        plan,
        faults,
        registry,
        shared,
        runtime,
    } = *world;
    // A store failing once the planned failure happened is that crash; any other failure is
    // a finding.
    let died = |error: &StoreError| {
        if disk.has_failed() {
            Ended::Crashed
        } else {
            Ended::Failed(format!("the store did not reopen: {error}"))
        }
    };
    let mut store = match DurableStore::open_on(disk.clone()) {
        Ok(store) => store,
        Err(error) => return died(&error),
    };
    store.set_faults(faults);
    match store.records(SESSION) {
        Ok(recovered) => life.recovered = Some(recovered),
        Err(error) => return died(&error),
    }
    shared.note(Step::Opened {
        process: shared.process(),
        recovered: life.recovered.as_ref().map_or(0, Vec::len),
    });
    let observed = Observed {
        store,
        acknowledged: Vec::new(),
        shared: Arc::clone(shared),
    };
    let opened = Session::open(SESSION, registry.clone(), SharedChart::new(0), observed);
    let current = match opened {
        Ok(opened) => session.insert(opened),
        Err(error) => return died(&error),
    };
    go_on(
        plan,
        faults,
        shared,
        runtime,
        current,
        &mut life.acknowledged,
        &|| disk.has_failed(),
    )
}

/// Runs the session on from what its store holds: resumes the run a crash cut, then starts
/// each run of `plan` not yet started, until every run ended (`Ended::Done`) or the store
/// fails (`Ended::Crashed`). `acknowledged` receives what each acknowledged commit carried,
/// when the store keeps it (`S::acknowledged`).
pub fn go_on<S: Acknowledging>(
    plan: &Plan,
    faults: FaultSet,
    shared: &Arc<Observations>,
    runtime: &tokio::runtime::Runtime,
    current: &mut Session<S>,
    acknowledged: &mut Vec<Record>,
    planned: &dyn Fn() -> bool,
) -> Ended {
    // A store failing once the planned failure happened is that crash; any other failure is
    // a finding.
    let died = |error: &dyn std::fmt::Display| {
        if planned() {
            Ended::Crashed
        } else {
            Ended::Failed(format!("the store failed with no failure planned: {error}"))
        }
    };
    // A process resumes at most one run and starts each of the others once: a store that
    // forgets what it committed must not keep the explorer going round.
    for _ in 0..=plan.runs.len() {
        let journal = match current.store().journal(SESSION) {
            Ok(journal) => journal,
            Err(error) => return died(&error),
        };
        let (started, cut) = progress(&journal);
        let mut provider = Script {
            plan,
            shared: Arc::clone(shared),
        };
        let mut events: Vec<Event> = Vec::new();
        let options = run_options(faults);
        let run = if cut { started - 1 } else { started };
        let number = u32::try_from(run).unwrap_or(0);
        shared.run.store(number, Ordering::SeqCst);
        let process = shared.process();
        let result = if cut {
            shared.note(Step::Resumed {
                process,
                run: number,
            });
            let resumed = current.resume(plan.secrets.clone(), &mut provider, &mut events, options);
            runtime.block_on(resumed)
        } else if let Some(run) = plan.runs.get(started) {
            shared.note(Step::RunStarted {
                process,
                run: number,
            });
            let input = start_input(plan, run);
            runtime.block_on(current.run(input, &mut provider, &mut events, options))
        } else {
            return Ended::Done;
        };
        acknowledged.extend(current.store_mut().take_acknowledged());
        match result {
            Ok(_) => {}
            Err(RunError::Store(error)) => return died(&error),
            Err(error) => return Ended::Failed(format!("the run did not go on: {error}")),
        }
    }
    Ended::Failed(format!(
        "the session's {} runs had not ended after as many runs and a resume",
        plan.runs.len()
    ))
}

/// A run's options: `faults` on, and a user whose question cancels the run (R19, R20).
fn run_options(faults: FaultSet) -> RunOptions {
    let cancel = CancelToken::new();
    RunOptions {
        faults,
        cancel: Some(cancel.clone()),
        user: Arc::new(CancellingUser { cancel }),
        ..RunOptions::default()
    }
}

/// How many runs `journal` records the start of, and whether the last of them was cut (it
/// has no end).
fn progress(journal: &[Record]) -> (usize, bool) {
    let started = journal
        .iter()
        .filter(|record| matches!(record, Record::RunStarted { .. }))
        .count();
    let last_start = journal
        .iter()
        .rposition(|record| matches!(record, Record::RunStarted { .. }));
    let cut = last_start.is_some_and(|start| {
        !journal[start..]
            .iter()
            .any(|record| matches!(record, Record::RunEnded { .. }))
    });
    (started, cut)
}

/// How the plan's `run` starts.
fn start_input(plan: &Plan, run: &super::plan::RunPlan) -> StartRunInput {
    StartRunInput {
        prompt: run.prompt.clone(),
        read_only: run.read_only,
        disabled_tools: run.disabled.iter().cloned().collect(),
        secrets: plan.secrets.clone(),
        limits: Limits {
            turns_max: run.turns_max,
            ..Limits::default()
        },
    }
}

/// A store that keeps, or reports, what each acknowledged commit carried.
pub trait Acknowledging: SessionStore {
    /// The records acknowledged since the last call, taken.
    fn take_acknowledged(&mut self) -> Vec<Record>;
}

impl Acknowledging for Observed {
    fn take_acknowledged(&mut self) -> Vec<Record> {
        std::mem::take(&mut self.acknowledged)
    }
}

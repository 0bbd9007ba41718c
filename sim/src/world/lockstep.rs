//! Running a scenario against a runtime behind the protocol (SPEC §15, P3): ward plays the
//! provider, the tool bodies over its own chart, the user, cancellation and time, and records
//! the same boundary records as in process ([`Record`]).
//!
//! ward keeps an agenda of what it has to deliver and when: a reply `delay_ms` after its
//! request, a body's result `latency_ms` after its start, an answer `delay_ms` after its
//! question, the cancel at `cancel_at_ms`. Between deliveries it moves the runtime's clock
//! with `advance`, which stops early at each of the runtime's own timers. Deliveries due at
//! the same instant go in the order they were scheduled, after the runtime's timers of that
//! instant.
//!
//! A body's work is done when its result is delivered, on ward's chart, inside a checkpoint
//! that the runtime's `rollback` restores and its `tool.finished` commits (R9: the runtime
//! undoes a failed write). A request the runtime gave up on (it asked again, or the run
//! ended) gets no reply, and a body whose call already has its result gets no end: the
//! runtime dropped them, as a body abandoned by a stop is dropped in process.

use std::borrow::Cow;
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use futures::FutureExt;
use serde_json::{Value, json};
use ward_core::chart::tools::{CatalogueOptions, register_tools};
use ward_core::chart::{ChartState, Checkpoint, SharedChart};
use ward_core::driver::Limits;
use ward_core::envelope::ToolError;
use ward_core::events::{Event, EventKind};
use ward_core::registry::{Registry, RegistryBuilder};
use ward_core::session::Message;
use ward_core::tool::{ToolBody, ToolCall, ToolContext};

use super::body::{PLAIN, injection};
use super::provider::{DONE, Sent, react};
use super::records::{Record, RunTrace, Trace};
use crate::catalogue;
use crate::protocol::{
    BodyOutcome, FromAdapter, NextTimer, ProviderFailure, RunEndOutcome, Runtime, StartRun,
    ToAdapter, ToolDescription, VERSION, Violation, WireLimits, at,
};
use crate::scenario::{
    Answer, CallScript, Effect, FailureKind, LeakAt, RunScript, Scenario, ToolBehaviour, Turn,
};
use crate::world::store_dir::StoreDir;

/// How long ward lets a run go without anything to deliver before it stops moving time:
/// past every limit a run may be given (R19's longest inactivity timeout, an hour).
pub const IDLE_HORIZON_MS: u64 = 3_600_000 + 1;

/// Advances in a row that may leave the runtime's clock where it was with nothing done (each
/// fires timers of one instant that set more at the same instant): one more is a runtime
/// that never lets virtual time move, a protocol violation rather than a hang.
const STILL_ADVANCES_MAX: u32 = 10_000;

/// The latest instant ward delivers at (about 70 years): a later delay of a hand-written or
/// fuzzed scenario is delivered then. It lies past the reference model's horizon, so the
/// model gives no verdict on a run that reaches it, and a runtime's clock is never asked to
/// move further than any timer of its own can reach.
pub const TIME_MAX_MS: u64 = 1 << 41;

/// The chart catalogue's bodies, which ward runs on its own chart, and its descriptions.
pub struct Bodies {
    plain: Catalogue,
    with_code_interpreter: Catalogue,
}

struct Catalogue {
    registry: Registry,
    tools: Arc<[ToolDescription]>,
    bodies: BTreeMap<String, Arc<dyn ToolBody>>,
}

impl Catalogue {
    fn new(code_interpreter: bool) -> Catalogue {
        let mut builder = RegistryBuilder::new();
        register_tools(&mut builder, CatalogueOptions { code_interpreter })
            .expect("the built-in catalogue registers");
        let mut bodies = BTreeMap::new();
        builder.wrap_bodies(|meta, inner| {
            bodies.insert(meta.name().to_owned(), Arc::clone(&inner));
            inner
        });
        let registry = builder.build();
        Catalogue {
            tools: registry
                .tools()
                .map(|tool| ToolDescription::of(tool.meta()))
                .collect(),
            registry,
            bodies,
        }
    }
}

impl Bodies {
    /// The catalogue with and without `code_interpreter`.
    pub fn new() -> Bodies {
        Bodies {
            plain: Catalogue::new(false),
            with_code_interpreter: Catalogue::new(true),
        }
    }

    /// The catalogue's registry, as the runtime registers it (schemas compiled once).
    pub fn registry(&self, code_interpreter: bool) -> &Registry {
        &self.catalogue(code_interpreter).registry
    }

    fn catalogue(&self, code_interpreter: bool) -> &Catalogue {
        if code_interpreter {
            &self.with_code_interpreter
        } else {
            &self.plain
        }
    }
}

impl Default for Bodies {
    fn default() -> Self {
        Bodies::new()
    }
}

/// The runtimes a scenario meets: one that never crashes, or a durable one the world crashes
/// and starts again (SPEC §16, §17 P9).
pub trait Runtimes {
    /// The runtime as it is now.
    fn current(&mut self) -> &mut dyn Runtime;

    /// Whether the runtime died during the last exchange, and how: a storage fault the world
    /// planned on its disk fired (R35: a failed write or sync is a crash), or the world
    /// crashes it at this boundary. `answered`: the exchange ended with `idle` (a crash at a
    /// boundary comes only after an answer; an exchange that failed is the runtime's
    /// violation unless its own store killed it). `None` for a runtime that lives on.
    fn died(&mut self, _answered: bool) -> Option<String> {
        None
    }

    /// Starts a fresh runtime on what the dead one's store kept (what the disk kept, after a
    /// kill or a power loss).
    fn restart(&mut self) -> Result<(), Violation> {
        Err(Violation::new("this runtime cannot be started again"))
    }

    /// The directory a durable runtime keeps its store in (`reset.storeDir`, P8).
    fn store_dir(&self) -> Option<String> {
        None
    }
}

/// One runtime that lives through the whole scenario; a durable one keeps its store in a
/// directory of the scenario's own (P8), so that nothing of another scenario is in it.
struct Living<'r>(&'r mut dyn Runtime, Option<StoreDir>);

impl Runtimes for Living<'_> {
    fn current(&mut self) -> &mut dyn Runtime {
        &mut *self.0
    }

    fn store_dir(&self) -> Option<String> {
        self.1.as_ref().map(StoreDir::name)
    }
}

/// Runs `scenario` against `runtime`.
pub fn execute(
    runtime: &mut dyn Runtime,
    bodies: &Bodies,
    scenario: &Scenario,
) -> Result<Trace, Violation> {
    let durable = runtime.ready().is_some_and(|ready| ready.durable.is_some());
    let store_dir = match durable {
        true => Some(StoreDir::new().map_err(Violation::new)?),
        false => None,
    };
    execute_crashing(&mut Living(runtime, store_dir), bodies, scenario)
}

/// Runs `scenario` against `runtimes`, crashing and starting the runtime again whenever it
/// dies: the world records the crash, drops what it had to deliver to the dead runtime (a
/// body's change to ward's chart stays, P10), sends the fresh one `reset` (the same seed and
/// store directory) and `recover` with the run's secret values, and goes on with what the
/// runtime then does. A run the fresh runtime does not take up (nothing answers `recover`
/// but `idle`) whose prompt the dead one had not acknowledged (no `append` of it) is started
/// again, as a user whose request was lost sends it again.
pub fn execute_crashing(
    runtimes: &mut dyn Runtimes,
    bodies: &Bodies,
    scenario: &Scenario,
) -> Result<Trace, Violation> {
    let catalogue = bodies.catalogue(scenario.code_interpreter);
    let mut crashes = Vec::new();
    let mut now = reset_living(runtimes, catalogue, scenario, &mut crashes)?;
    let secrets: BTreeMap<String, String> = scenario
        .secrets
        .iter()
        .map(|secret| (secret.label.clone(), secret.value.clone()))
        .collect();
    let mut keys = BTreeMap::new();
    let mut trace = Trace::default();
    for (session_index, session) in scenario.sessions.iter().enumerate() {
        let chart = SharedChart::new(scenario.chart_seed);
        for (run_index, script) in session.runs.iter().enumerate() {
            let mut run = RunDriver {
                runtimes: &mut *runtimes,
                scenario,
                catalogue,
                secrets: &secrets,
                keys: &mut keys,
                script,
                start: None,
                chart: chart.clone(),
                trace: RunTrace {
                    session: session_index,
                    run: run_index,
                    ..RunTrace::default()
                },
                base_ms: 0,
                start_ms: now,
                now_ms: now,
                clock_ms: now,
                next_timer: NextTimer::Unknown,
                last_transcript: Vec::new(),
                agenda: BTreeMap::new(),
                scheduled: 0,
                steps: script.turns.iter(),
                realign: false,
                sent: Vec::new(),
                last_request: LastRequest::default(),
                answers: script.answers.iter().cloned().collect(),
                answered: BTreeMap::new(),
                restarted: false,
                bodies: BTreeMap::new(),
                last_state: None,
                ended: false,
                delivering: None,
            };
            // Crashes before the first run (opening the store) are the first run's.
            for how in crashes.drain(..) {
                run.record(Record::Crash { at_ms: 0, how });
            }
            run.run(session_index)?;
            now = run.now_ms;
            trace.runs.push(run.trace);
        }
        if let Some(last) = trace.runs.last_mut() {
            while chart.undo() {
                last.records.push(Record::Undo {
                    state: chart.snapshot_shared(),
                });
            }
        }
    }
    Ok(trace)
}

/// How a failure names a runtime that did not start again on its store after a crash: a
/// fresh one could not be made, or it refused `reset` or `recover` (I16: what it had
/// acknowledged is lost).
pub const NOT_STARTED_AGAIN: &str = "after a crash the runtime did not start again on its store";

fn not_started_again(violation: Violation) -> Violation {
    if violation.message.starts_with(NOT_STARTED_AGAIN) {
        return violation;
    }
    Violation::new(format!("{NOT_STARTED_AGAIN}: {}", violation.message))
}

/// Sends the scenario's `reset` until a runtime lives through it (one may die opening its
/// store, R35, and is started again: `crashes` notes how): the instant its `idle` names.
fn reset_living(
    runtimes: &mut dyn Runtimes,
    catalogue: &Catalogue,
    scenario: &Scenario,
    crashes: &mut Vec<String>,
) -> Result<u64, Violation> {
    loop {
        match reset(runtimes, catalogue, scenario) {
            Ok(at) => match runtimes.died(true) {
                None => return Ok(at),
                Some(how) => crashes.push(how),
            },
            Err(violation) => {
                let Some(how) = runtimes.died(false) else {
                    return Err(violation);
                };
                crashes.push(how);
            }
        }
        runtimes.restart()?;
    }
}

/// Sends the scenario's `reset`: the instant its `idle` names.
fn reset(
    runtimes: &mut dyn Runtimes,
    catalogue: &Catalogue,
    scenario: &Scenario,
) -> Result<u64, Violation> {
    let store_dir = runtimes.store_dir();
    let answer = runtimes.current().exchange(ToAdapter::Reset {
        seed: scenario.seed.unwrap_or(scenario.chart_seed),
        tools: Some(Arc::clone(&catalogue.tools)),
        store_dir,
    })?;
    idle(&answer).map(|(at_ms, _)| at_ms)
}

/// The trace of a scenario whose runtime broke the protocol: one run that did not start,
/// named by the violation.
pub fn violated(message: &str) -> Trace {
    Trace {
        runs: vec![RunTrace {
            start_error: Some(message.to_owned()),
            ..RunTrace::default()
        }],
        protocol_violation: Some(message.to_owned()),
    }
}

fn idle(messages: &[FromAdapter]) -> Result<(u64, NextTimer), Violation> {
    match messages.last() {
        Some(FromAdapter::Idle {
            at_ms,
            next_timer_ms,
        }) => Ok((*at_ms, *next_timer_ms)),
        _ => Err(Violation::new("an answer that does not end with idle")),
    }
}

/// Something ward delivers at an instant.
enum Delivery {
    Reply {
        request_id: String,
        turn: u32,
        attempt: u32,
        step: Turn,
        calls: Arc<[ToolCall]>,
    },
    Body {
        body_id: String,
    },
    Answer {
        question_id: String,
        body_id: String,
        answer: Option<Answer>,
    },
    Cancel,
}

/// The request ward last received, to record the next as a change of it, and the turn and
/// attempt it was.
#[derive(Default)]
struct LastRequest {
    system_prompt: String,
    tools: Vec<Arc<str>>,
    transcript: Vec<Arc<Message>>,
    turn: Option<(u32, u32)>,
    /// Whether the last request got a reply (not an error, not dropped).
    replied: bool,
    pending: Option<String>,
}

/// A body ward is playing.
struct BodyState {
    call_id: String,
    index: u64,
    tool: String,
    input: Value,
    /// The key the runtime handed the body (P10).
    key: Option<String>,
    /// Set when the body's work is done, until its call's result commits or rolls it back.
    checkpoint: Option<Checkpoint>,
    /// Delivered: its end is recorded.
    ended: bool,
    /// `ask_user`'s: the runtime's own body, which ward does not play.
    asks: bool,
}

/// What bodies with an idempotency key returned, and whether they changed the chart, by key
/// (P10): a second body with a key already applied returns the first one's result and
/// changes nothing.
type Keys = BTreeMap<String, (BodyOutcome, bool)>;

struct RunDriver<'r, 'w> {
    runtimes: &'r mut dyn Runtimes,
    scenario: &'w Scenario,
    catalogue: &'w Catalogue,
    secrets: &'w BTreeMap<String, String>,
    keys: &'r mut Keys,
    script: &'w RunScript,
    /// The run's start, sent again when a runtime dies before it acknowledged the prompt.
    start: Option<StartRun>,
    chart: SharedChart,
    trace: RunTrace,
    /// The run's time before the runtime's clock last started again (a restart sets it to 0).
    base_ms: u64,
    start_ms: u64,
    now_ms: u64,
    /// The runtime's clock as its last `idle` named it: behind `now_ms` only while a
    /// delivery that carries its instant is on its way (`protocol::at`).
    clock_ms: u64,
    /// The runtime's next timer as its last `idle` named it.
    next_timer: NextTimer,
    /// The transcript of the runtime's last request in this run, whose head the next
    /// request may keep without sending it again.
    last_transcript: Vec<Arc<Message>>,
    agenda: BTreeMap<(u64, u64), Delivery>,
    scheduled: u64,
    steps: std::slice::Iter<'w, Turn>,
    /// After a restart: the next request's turn is read from its transcript, and the script
    /// goes on from that turn's step (a reply the dead runtime never committed is asked for
    /// again, R33).
    realign: bool,
    sent: Vec<Sent>,
    last_request: LastRequest,
    answers: VecDeque<Answer>,
    /// Each question's answer, by the asking call's id: after a crash the user answers a
    /// question asked again as the first time (the dead runtime may not have kept the
    /// answer, a cancel included).
    answered: BTreeMap<String, Option<Answer>>,
    /// Whether the runtime has been started again in this run.
    restarted: bool,
    bodies: BTreeMap<String, BodyState>,
    last_state: Option<Arc<ChartState>>,
    ended: bool,
    /// The reply or body end ward recorded for the delivery it is making, by request or
    /// body id: withdrawn if the runtime answers that delivery by giving up on it (the
    /// timer of a stop fell due at the same instant and won), as in process a reply or end
    /// that is never taken is never recorded.
    delivering: Option<(String, usize)>,
}

impl RunDriver<'_, '_> {
    fn at_ms(&self) -> u64 {
        self.base_ms + (self.now_ms - self.start_ms)
    }

    fn record(&mut self, record: Record) {
        self.trace.records.push(record);
    }

    fn schedule(&mut self, after_ms: u64, delivery: Delivery) {
        let at_ms = self
            .now_ms
            .saturating_add(after_ms)
            .min(TIME_MAX_MS.max(self.now_ms));
        let key = (at_ms, self.scheduled);
        self.scheduled += 1;
        self.agenda.insert(key, delivery);
    }

    fn run(&mut self, session_index: usize) -> Result<(), Violation> {
        let script = self.script;
        let limits = script.limits.resolve(Limits::default());
        let start = StartRun {
            session: format!("session-{session_index}"),
            prompt: script.prompt.clone(),
            read_only: script.read_only,
            disabled_tools: script.disabled_tools.clone(),
            secrets: script
                .secrets
                .iter()
                .filter_map(|label| self.secrets.get(label).cloned())
                .collect(),
            limits: WireLimits {
                turns_max: u64::from(limits.turns_max),
                calls_per_batch_max: u64::from(limits.calls_per_batch_max),
                provider_timeout_ms: limits.provider_timeout_ms,
                inactivity_timeout_ms: limits.inactivity_timeout_ms,
                provider_retries_max: u64::from(limits.provider_retries_max),
            },
        };
        if let Some(cancel_at_ms) = script.cancel_at_ms {
            self.schedule(cancel_at_ms, Delivery::Cancel);
        }
        self.start = Some(start.clone());
        self.send(ToAdapter::StartRun(start))?;
        let mut still = 0;
        while !self.ended {
            let next = self.agenda.first_key_value().map(|(&(at, _), _)| at);
            match next {
                Some(at) if at <= self.now_ms => {
                    let (_, delivery) = self.agenda.pop_first().expect("a first entry");
                    self.deliver(delivery)?;
                }
                Some(at) if self.carries(at) => {
                    // No timer of the runtime is due before: the delivery carries its instant.
                    let (_, delivery) = self.agenda.pop_first().expect("a first entry");
                    self.now_ms = at;
                    self.deliver(delivery)?;
                    // One with nothing left to send leaves the runtime's clock where it was.
                    if self.clock_ms < self.now_ms {
                        self.now_ms = self.clock_ms;
                    }
                }
                _ => {
                    let to_ms = next.unwrap_or(self.now_ms.saturating_add(IDLE_HORIZON_MS));
                    let before = (self.now_ms, self.trace.records.len());
                    self.send(ToAdapter::Advance { to_ms })?;
                    let moved = before != (self.now_ms, self.trace.records.len());
                    still = if moved { 0 } else { still + 1 };
                    if still == STILL_ADVANCES_MAX {
                        return Err(Violation::new(format!(
                            "{still} advances toward {to_ms} ms each answered idle at {} ms with nothing done: the runtime's clock stands still",
                            self.now_ms
                        )));
                    }
                    if next.is_none() && self.now_ms == to_ms && !self.ended {
                        // Nothing to deliver, and no timer of the runtime fired in an hour:
                        // the run never ends (I10 reports it).
                        break;
                    }
                }
            }
        }
        Ok(())
    }

    /// Whether a delivery due at `at_ms` may carry its instant instead of an `advance` going
    /// first: the runtime speaks version 2 and said no timer of its is due before then.
    fn carries(&mut self, at_ms: u64) -> bool {
        let protocol = self
            .runtimes
            .current()
            .ready()
            .map_or(VERSION, |ready| ready.protocol);
        at::may_carry(protocol, self.next_timer, at_ms)
    }

    fn send(&mut self, message: ToAdapter) -> Result<(), Violation> {
        self.send_or(message, |violation| violation)
    }

    /// Sends `message`; a runtime that answers it with an error (not a crash) ends the
    /// scenario with the violation `refused` makes of it.
    fn send_or(
        &mut self,
        message: ToAdapter,
        refused: fn(Violation) -> Violation,
    ) -> Result<(), Violation> {
        let ahead = (self.now_ms > self.clock_ms).then_some(self.now_ms);
        let runtime = self.runtimes.current();
        let answer = match ahead {
            Some(at_ms) => runtime.exchange_at(message, at_ms),
            None => runtime.exchange(message),
        };
        let answer = match answer {
            Ok(answer) => answer,
            // A runtime that died in the exchange (its store failed, R35) is crashed.
            Err(violation) => {
                return match self.runtimes.died(false) {
                    Some(how) => self.crashed(how),
                    None => Err(refused(violation)),
                };
            }
        };
        let (at, next_timer) = idle(&answer)?;
        if at < self.now_ms {
            return Err(Violation::new(format!(
                "idle at {at} ms, before {} ms",
                self.now_ms
            )));
        }
        (self.now_ms, self.clock_ms, self.next_timer) = (at, at, next_timer);
        for message in answer {
            self.observe(message)?;
        }
        match self.runtimes.died(true) {
            Some(how) => self.crashed(how),
            None => Ok(()),
        }
    }

    /// The runtime died during the last exchange: the crash is recorded, what ward had to
    /// deliver to it is dropped (a delivered body's change to ward's chart stays, P10), and a
    /// fresh runtime is reset and asked to recover. When it takes up nothing and no runtime
    /// had shown it held the run's start (acknowledged its prompt, or asked the model within
    /// the run), the run is started again, as a user whose request was lost sends it again (a
    /// run a runtime showed it held is never started twice: losing it is the runtime's, I16).
    fn crashed(&mut self, how: String) -> Result<(), Violation> {
        let said = how.clone();
        self.take_up_after(how).map_err(|violation| {
            // A runtime that did not start again is named with the crash it did not survive.
            let named = violation.message.contains("(the crash: ");
            match violation.message.starts_with(NOT_STARTED_AGAIN) && !named {
                true => Violation::new(format!("{} (the crash: {said})", violation.message)),
                false => violation,
            }
        })
    }

    /// Records the crash `how` and starts the runtime again (what [`RunDriver::crashed`] does).
    fn take_up_after(&mut self, how: String) -> Result<(), Violation> {
        let at_ms = self.at_ms();
        self.record(Record::Crash { at_ms, how });
        self.agenda.clear();
        for state in self.bodies.values_mut() {
            if let Some(checkpoint) = state.checkpoint.take() {
                self.chart.commit(checkpoint);
            }
        }
        self.bodies.clear();
        self.delivering = None;
        self.last_request.pending = None;
        self.runtimes.restart().map_err(not_started_again)?;
        let mut crashes = Vec::new();
        let started = reset_living(self.runtimes, self.catalogue, self.scenario, &mut crashes)
            .map_err(not_started_again)?;
        for how in crashes {
            self.record(Record::Crash { at_ms, how });
        }
        self.base_ms = at_ms;
        (self.start_ms, self.now_ms, self.clock_ms) = (started, started, started);
        self.next_timer = NextTimer::Unknown;
        self.last_transcript.clear();
        self.realign = true;
        self.restarted = true;
        // The runtime showed it holds the run's start: it acknowledged the prompt, or asked
        // the model within the run (one that recovered the run shows its start that way).
        let acknowledged = self.trace.records.iter().any(|record| match record {
            Record::Append { message } => matches!(**message, Message::User { .. }),
            Record::Request { .. } => true,
            _ => false,
        });
        let secrets = self.start.as_ref().map(|start| start.secrets.clone());
        let at_ms = self.at_ms();
        self.record(Record::Recover { at_ms });
        let recorded = self.trace.records.len();
        let recover = ToAdapter::Recover {
            secrets: secrets.unwrap_or_default(),
        };
        self.send_or(recover, not_started_again)?;
        // A run whose start the store never kept is not taken up: its user starts it again.
        let untouched = self.trace.records.len() == recorded;
        match self.start.clone() {
            Some(start) if untouched && !acknowledged => self.send(ToAdapter::StartRun(start)),
            _ => Ok(()),
        }
    }

    fn observe(&mut self, message: FromAdapter) -> Result<(), Violation> {
        match message {
            FromAdapter::Idle { .. } => {}
            FromAdapter::Ready { .. } => return Err(Violation::new("ready out of turn")),
            FromAdapter::ModelRequest {
                request_id,
                system_prompt,
                transcript_kept,
                transcript,
                tools,
            } => {
                let transcript = self.whole(transcript_kept, transcript)?;
                self.on_request(request_id, system_prompt, transcript, tools);
            }
            FromAdapter::BodyStart {
                body_id,
                call_id,
                index,
                tool,
                input,
                idempotency_key,
            } => {
                let started = (body_id, call_id, index, tool, input);
                self.on_body_start(started, idempotency_key)?;
            }
            FromAdapter::ModelCancel { request_id } => self.on_model_cancel(&request_id),
            FromAdapter::BodyCancel { body_id } => self.on_body_cancel(&body_id),
            FromAdapter::Rollback { body_id } => self.on_rollback(&body_id)?,
            FromAdapter::Question {
                question_id,
                body_id,
                ..
            } => self.on_question(question_id, body_id),
            FromAdapter::Event { event } => self.on_event(event),
            FromAdapter::Append { message } => self.record(Record::Append {
                message: Arc::new(message),
            }),
            FromAdapter::RunEnd {
                outcome,
                code,
                batches,
                calls,
            } => self.on_run_end(outcome, code, batches, calls),
            FromAdapter::StartError { message } => {
                self.trace.start_error = Some(message);
                self.end();
            }
        }
        Ok(())
    }

    /// The runtime gave up a request: it gets no reply.
    fn on_model_cancel(&mut self, request_id: &str) {
        self.withdraw(request_id);
        if self.last_request.pending.as_deref() == Some(request_id) {
            self.last_request.pending = None;
        }
        self.agenda.retain(|_, delivery| {
            !matches!(delivery, Delivery::Reply { request_id: id, .. } if id == request_id)
        });
    }

    /// The runtime abandoned a body: it gets no result, and its question no answer.
    fn on_body_cancel(&mut self, body_id: &str) {
        self.withdraw(body_id);
        if let Some(state) = self.bodies.get_mut(body_id) {
            state.ended = true;
        }
        self.agenda.retain(|_, delivery| match delivery {
            Delivery::Body { body_id: id } | Delivery::Answer { body_id: id, .. } => id != body_id,
            _ => true,
        });
    }

    /// The runtime undoes a failed body's work on ward's chart.
    fn on_rollback(&mut self, body_id: &str) -> Result<(), Violation> {
        let state = self.bodies.get_mut(body_id);
        match state.and_then(|state| state.checkpoint.take()) {
            Some(checkpoint) => {
                self.chart.rollback(checkpoint);
                Ok(())
            }
            None => Err(Violation::new(format!(
                "rollback of {body_id}, which changed nothing"
            ))),
        }
    }

    /// `ask_user` waits: the scripted user answers after its delay (or at once with none).
    fn on_question(&mut self, question_id: String, body_id: String) {
        let call_id = (self.bodies.get(&body_id)).map(|body| body.call_id.clone());
        let again = (call_id.as_ref())
            .filter(|_| self.restarted)
            .and_then(|call_id| self.answered.get(call_id));
        let answer = match again {
            Some(answer) => answer.clone(),
            None => self.answers.pop_front(),
        };
        if let Some(call_id) = call_id {
            self.answered.insert(call_id, answer.clone());
        }
        let delay = answer.as_ref().map_or(0, |answer| answer.delay_ms);
        self.schedule(
            delay,
            Delivery::Answer {
                question_id,
                body_id,
                answer,
            },
        );
    }

    /// The run's entry point returned.
    fn on_run_end(
        &mut self,
        outcome: RunEndOutcome,
        code: Option<String>,
        batches: u64,
        calls: u64,
    ) {
        let outcome = match outcome {
            RunEndOutcome::Completed => "run.completed",
            RunEndOutcome::Failed => "run.failed",
            RunEndOutcome::Cancelled => "run.cancelled",
        };
        self.record(Record::Report {
            outcome,
            code,
            batches: u32::try_from(batches).unwrap_or(u32::MAX),
            calls: u32::try_from(calls).unwrap_or(u32::MAX),
        });
        self.end();
    }

    /// Withdraws the record of the delivery being made to `id`, which the runtime gave up.
    fn withdraw(&mut self, id: &str) {
        if let Some((delivering, index)) = self.delivering.take() {
            if delivering == id {
                self.trace.records.remove(index);
            } else {
                self.delivering = Some((delivering, index));
            }
        }
    }

    /// Sends a delivery whose record ward just made (at `index`) for request or body `id`.
    fn send_delivery(
        &mut self,
        id: &str,
        index: usize,
        message: ToAdapter,
    ) -> Result<(), Violation> {
        self.delivering = Some((id.to_owned(), index));
        let sent = self.send(message);
        self.delivering = None;
        sent
    }

    /// The run is over: what ward still had to deliver is dropped, and every write still
    /// open commits.
    fn end(&mut self) {
        self.ended = true;
        self.agenda.clear();
        for state in self.bodies.values_mut() {
            if let Some(checkpoint) = state.checkpoint.take() {
                self.chart.commit(checkpoint);
            }
        }
    }

    /// A request's whole transcript: the `kept` head of the last one's, then `sent`.
    fn whole(&mut self, kept: u64, sent: Vec<Message>) -> Result<Vec<Arc<Message>>, Violation> {
        let last = &self.last_transcript;
        let head = usize::try_from(kept)
            .ok()
            .and_then(|kept| last.get(..kept))
            .ok_or_else(|| {
                Violation::new(format!(
                    "a request keeps {kept} messages of the last one's transcript, which held {}",
                    last.len()
                ))
            })?;
        let whole: Vec<Arc<Message>> = head
            .iter()
            .cloned()
            .chain(sent.into_iter().map(Arc::new))
            .collect();
        self.last_transcript.clone_from(&whole);
        Ok(whole)
    }

    fn on_request(
        &mut self,
        request_id: String,
        system_prompt: String,
        transcript: Vec<Arc<Message>>,
        tools: Vec<String>,
    ) {
        // A new request means the runtime gave up on an earlier one still unanswered.
        if let Some(pending) = self.last_request.pending.take() {
            self.agenda.retain(|_, delivery| {
                !matches!(delivery, Delivery::Reply { request_id, .. } if *request_id == pending)
            });
        }
        let (turn, attempt) = match self.last_request.turn {
            None => (0, 0),
            Some((turn, _)) if self.last_request.replied => (turn + 1, 0),
            Some((turn, attempt)) => (turn, attempt + 1),
        };
        self.last_request.turn = Some((turn, attempt));
        self.last_request.replied = false;
        self.last_request.pending = Some(request_id.clone());
        if std::mem::take(&mut self.realign) {
            // The turns this run took are the replies after its prompt, the last user message.
            let prompt = transcript
                .iter()
                .rposition(|message| matches!(**message, Message::User { .. }));
            let taken = transcript[prompt.map_or(0, |at| at + 1)..]
                .iter()
                .filter(|message| matches!(***message, Message::Assistant { .. }))
                .count();
            self.steps = self.script.turns.get(taken..).unwrap_or_default().iter();
        }
        self.record_request(&system_prompt, &tools, &transcript, turn, attempt);
        let step = self.steps.next().unwrap_or(&DONE).clone();
        let reacted: Vec<CallScript> = step
            .react
            .iter()
            .flat_map(|reaction| react(*reaction, &transcript, &self.sent))
            .collect();
        let mut fixes = Vec::with_capacity(step.calls.len() + reacted.len());
        let calls: Arc<[ToolCall]> = step
            .calls
            .iter()
            .chain(&reacted)
            .map(|call| {
                fixes.push(call.fix.clone());
                ToolCall {
                    id: call.id.clone(),
                    name: call.name.clone(),
                    arguments: call.arguments.clone(),
                }
            })
            .collect();
        self.sent.push(Sent {
            calls: Arc::clone(&calls),
            fixes,
        });
        let delay = step.delay_ms;
        self.schedule(
            delay,
            Delivery::Reply {
                request_id,
                turn,
                attempt,
                step,
                calls,
            },
        );
    }

    fn record_request(
        &mut self,
        system_prompt: &str,
        tools: &[String],
        transcript: &[Arc<Message>],
        turn: u32,
        attempt: u32,
    ) {
        let last = &mut self.last_request;
        let system_prompt = (system_prompt != last.system_prompt).then(|| system_prompt.to_owned());
        if let Some(text) = &system_prompt {
            text.clone_into(&mut last.system_prompt);
        }
        let same_tools = tools.len() == last.tools.len()
            && tools
                .iter()
                .zip(&last.tools)
                .all(|(name, last)| **name == **last);
        let tools = (!same_tools).then(|| {
            tools
                .iter()
                .map(|name| Arc::from(name.as_str()))
                .collect::<Vec<Arc<str>>>()
        });
        if let Some(names) = &tools {
            names.clone_into(&mut last.tools);
        }
        let kept = transcript
            .iter()
            .zip(&last.transcript)
            .take_while(|(sent, previous)| sent == previous)
            .count();
        let appended: Vec<Arc<Message>> = transcript[kept..].to_vec();
        last.transcript.truncate(kept);
        last.transcript.extend(appended.iter().cloned());
        let at_ms = self.at_ms();
        self.record(Record::Request {
            at_ms,
            turn,
            attempt,
            system_prompt,
            tools,
            kept,
            appended,
        });
    }

    fn on_body_start(
        &mut self,
        (body_id, call_id, index, tool, input): (String, String, u64, String, Value),
        key: Option<String>,
    ) -> Result<(), Violation> {
        if self.bodies.contains_key(&body_id) {
            return Err(Violation::new(format!("a second body named {body_id}")));
        }
        let at_ms = self.at_ms();
        self.record(Record::BodyStart {
            at_ms,
            index: usize::try_from(index).unwrap_or(usize::MAX),
            call_id: Arc::from(call_id.as_str()),
            tool: Arc::from(tool.as_str()),
            input: input.clone(),
        });
        let asks = tool == "ask_user";
        let latency = self
            .script
            .tools
            .get(tool.as_str())
            .unwrap_or(&PLAIN)
            .latency_ms;
        self.bodies.insert(
            body_id.clone(),
            BodyState {
                call_id,
                index,
                tool,
                input,
                key,
                checkpoint: None,
                ended: false,
                asks,
            },
        );
        // `ask_user` is the runtime's own body: it ends when the user answers.
        if !asks {
            self.schedule(latency, Delivery::Body { body_id });
        }
        Ok(())
    }

    fn on_event(&mut self, event: Event) {
        let snapshot = matches!(
            event.kind,
            EventKind::ToolStarted { .. } | EventKind::ToolFinished { .. }
        );
        if let EventKind::ToolFinished {
            index,
            call_id,
            result,
            ..
        } = &event.kind
        {
            self.end_asking_body(*index as u64, call_id, result.error_code());
            self.finish_call(*index as u64, call_id);
        }
        let seq = event.seq;
        self.record(Record::Event(event));
        if snapshot {
            let state = self.chart.snapshot_shared();
            let changed = self.last_state.as_deref() != Some(&*state);
            if changed {
                self.last_state = Some(Arc::clone(&state));
            }
            self.record(Record::Snapshot {
                seq,
                state: changed.then_some(state),
            });
        }
    }

    /// `ask_user`'s body is the runtime's own: it ends with the result its call gets.
    fn end_asking_body(&mut self, index: u64, call_id: &str, code: Option<&str>) {
        let asking = self.bodies.iter().find(|(_, state)| {
            state.index == index && state.call_id == call_id && state.asks && !state.ended
        });
        let Some((body_id, _)) = asking else {
            return;
        };
        let body_id = body_id.clone();
        let outcome = code.map_or(Cow::Borrowed("ok"), |code| Cow::Owned(code.to_owned()));
        self.end_body(&body_id, outcome, None);
    }

    /// A call has its result: its body's write commits, and a body still running for it was
    /// dropped by the runtime.
    fn finish_call(&mut self, index: u64, call_id: &str) {
        let mut dropped = Vec::new();
        for (body_id, state) in &mut self.bodies {
            if state.index != index || state.call_id != call_id {
                continue;
            }
            if let Some(checkpoint) = state.checkpoint.take() {
                self.chart.commit(checkpoint);
            }
            if !state.ended {
                state.ended = true;
                dropped.push(body_id.clone());
            }
        }
        self.agenda.retain(|_, delivery| {
            !matches!(delivery, Delivery::Body { body_id } if dropped.contains(body_id))
        });
    }

    fn deliver(&mut self, delivery: Delivery) -> Result<(), Violation> {
        match delivery {
            Delivery::Cancel => {
                let at_ms = self.at_ms();
                self.record(Record::Cancel { at_ms });
                self.send(ToAdapter::Cancel)
            }
            Delivery::Reply {
                request_id,
                turn,
                attempt,
                step,
                calls,
            } => self.deliver_reply(request_id, turn, attempt, &step, calls),
            Delivery::Answer {
                answer: Some(Answer { cancels: true, .. }),
                ..
            } => {
                let at_ms = self.at_ms();
                self.record(Record::Cancel { at_ms });
                self.send(ToAdapter::Cancel)
            }
            Delivery::Answer {
                question_id,
                answer,
                ..
            } => {
                let text = answer.and_then(|answer| {
                    let at_ms = self.at_ms();
                    self.record(Record::Answer {
                        at_ms,
                        answer: answer.text.clone(),
                    });
                    Some(answer.text).flatten()
                });
                self.send(ToAdapter::Answer { question_id, text })
            }
            Delivery::Body { body_id } => self.deliver_body(&body_id),
        }
    }

    fn deliver_reply(
        &mut self,
        request_id: String,
        turn: u32,
        attempt: u32,
        step: &Turn,
        calls: Arc<[ToolCall]>,
    ) -> Result<(), Violation> {
        self.last_request.pending = None;
        let at_ms = self.at_ms();
        if let Some(failure) = &step.error {
            self.record(Record::Reply {
                at_ms,
                turn,
                attempt,
                text: String::new(),
                calls: Arc::default(),
                error: Some(catalogue::provider_error(failure.kind).code.to_owned()),
            });
            let message = match failure
                .leak
                .as_ref()
                .and_then(|label| self.secrets.get(label))
            {
                Some(secret) => format!("The provider refused the key {secret}."),
                None => "The provider refused the request.".to_owned(),
            };
            let index = self.trace.records.len() - 1;
            return self.send_delivery(
                &request_id.clone(),
                index,
                ToAdapter::ModelError {
                    request_id,
                    kind: wire_kind(failure.kind),
                    message,
                    retry_after_ms: failure.retry_after_ms,
                },
            );
        }
        self.last_request.replied = true;
        self.record(Record::Reply {
            at_ms,
            turn,
            attempt,
            text: step.text.clone(),
            calls: Arc::clone(&calls),
            error: None,
        });
        let index = self.trace.records.len() - 1;
        self.send_delivery(
            &request_id.clone(),
            index,
            ToAdapter::ModelReply {
                request_id,
                text: step.text.clone(),
                calls: calls.to_vec(),
            },
        )
    }

    fn end_body(
        &mut self,
        body_id: &str,
        outcome: Cow<'static, str>,
        output: Option<Arc<Result<Value, ToolError>>>,
    ) {
        let at_ms = self.at_ms();
        let Some(state) = self.bodies.get_mut(body_id) else {
            return;
        };
        state.ended = true;
        let record = Record::BodyEnd {
            at_ms,
            index: usize::try_from(state.index).unwrap_or(usize::MAX),
            call_id: Arc::from(state.call_id.as_str()),
            tool: Arc::from(state.tool.as_str()),
            outcome,
            output,
        };
        self.record(record);
    }

    /// Delivers a body whose idempotency key was already applied: the first body's result
    /// as the first body reported it (its change included, so that the runtime reports the
    /// call's change as it would have), and no change to the chart (P10).
    fn deliver_keyed(
        &mut self,
        body_id: &str,
        (result, changed): (BodyOutcome, bool),
    ) -> Result<(), Violation> {
        self.deliver_result(body_id, result, changed, None)
    }

    /// Records a body's end (with its `output` when the oracle needs it) and delivers its
    /// result.
    fn deliver_result(
        &mut self,
        body_id: &str,
        result: BodyOutcome,
        changed: bool,
        output: Option<Arc<Result<Value, ToolError>>>,
    ) -> Result<(), Violation> {
        let outcome = match &result {
            BodyOutcome::Data(_) => Cow::Borrowed("ok"),
            BodyOutcome::Error(error) => Cow::Owned(error.code.clone()),
        };
        self.end_body(body_id, outcome, output);
        let index = self.trace.records.len() - 1;
        let message = ToAdapter::BodyResult {
            body_id: body_id.to_owned(),
            result,
            changed,
        };
        self.send_delivery(body_id, index, message)
    }

    /// Does a body's work on ward's chart, with the scenario's behaviour, and delivers it.
    fn deliver_body(&mut self, body_id: &str) -> Result<(), Violation> {
        let Some(state) = self.bodies.get(body_id) else {
            return Ok(());
        };
        let (script, catalogue) = (self.script, self.catalogue);
        let (call_id, tool, input) = (
            state.call_id.clone(),
            state.tool.clone(),
            state.input.clone(),
        );
        if let Some(first) = state.key.as_ref().and_then(|key| self.keys.get(key)) {
            let first = first.clone();
            return self.deliver_keyed(body_id, first);
        }
        let key = state.key.clone();
        let behaviour = script.tools.get(tool.as_str()).unwrap_or(&PLAIN);
        if matches!(behaviour.effect, Effect::Panic) {
            self.end_body(body_id, Cow::Borrowed("panic"), None);
            let index = self.trace.records.len() - 1;
            return self.send_delivery(
                body_id,
                index,
                ToAdapter::BodyPanic {
                    body_id: body_id.to_owned(),
                },
            );
        }
        let checkpoint = self.chart.begin();
        let before = self.chart.snapshot_shared();
        let call = ToolCall {
            id: call_id,
            name: tool,
            arguments: String::new(),
        };
        let result = work_on_the_chart(
            catalogue,
            &self.chart,
            &call,
            input,
            behaviour,
            self.secrets,
        );
        let changed = *self.chart.snapshot_shared() != *before;
        if let Some(state) = self.bodies.get_mut(body_id) {
            state.checkpoint = Some(checkpoint);
        }
        let output = (!self.script.secrets.is_empty()).then(|| Arc::new(result.clone()));
        let result = match result {
            Ok(data) => BodyOutcome::Data(data),
            Err(error) => BodyOutcome::Error(error),
        };
        if let Some(key) = key {
            self.keys.insert(key, (result.clone(), changed));
        }
        self.deliver_result(body_id, result, changed, output)
    }
}

/// The catalogue's body of `call` run on `chart` with `input`, and `behaviour`'s effect.
fn work_on_the_chart(
    catalogue: &Catalogue,
    chart: &SharedChart,
    call: &ToolCall,
    input: Value,
    behaviour: &ToolBehaviour,
    secrets: &BTreeMap<String, String>,
) -> Result<Value, ToolError> {
    let context = ToolContext::standalone(chart.clone(), call);
    let work = || -> Result<Value, ToolError> {
        let Some(body) = catalogue.bodies.get(call.name.as_str()) else {
            return Err(ToolError::internal());
        };
        body.call(&context, input.clone())
            .now_or_never()
            .unwrap_or_else(|| Err(ToolError::internal()))
    };
    with_effect(&behaviour.effect, work, secrets)
}

/// A body's result with the scenario's effect planted on its `work` (a panic is delivered
/// apart): a failure after the work is done, a configured value leaked in the data or the
/// error, an instruction injected into the data.
fn with_effect(
    effect: &Effect,
    work: impl FnOnce() -> Result<Value, ToolError>,
    secrets: &BTreeMap<String, String>,
) -> Result<Value, ToolError> {
    match effect {
        Effect::None | Effect::Panic => work(),
        Effect::Fail => {
            let _ = work();
            Err(failed("The tool failed while running."))
        }
        Effect::LeakSecret { label, fail, at } => {
            let result = work();
            let secret = secrets.get(label).cloned().unwrap_or_default();
            match at {
                LeakAt::Middle if *fail => Err(failed(&format!(
                    "The tool failed while connecting with key {secret}."
                ))),
                _ if *fail => Err(failed(&at.text(&secret))),
                // Beside keys that read as the placeholder: the guard must keep every member.
                LeakAt::Key => result.map(|data| {
                    json!({"result": data, secret: true, "[REDACTED]": false, "[REDACTED] (2)": 0})
                }),
                // The secret sorts before every other key ("0…" before letters).
                LeakAt::FirstKey => result.map(|data| {
                    json!({format!("0{secret}"): true, "debug": at.text(&secret), "result": data})
                }),
                LeakAt::Item => result
                    .map(|data| json!({"notes": ["ok", at.text(&secret), "done"], "result": data})),
                // Also the last item of a list, after one that carries nothing.
                _ => result.map(|data| {
                    json!({"debug": at.text(&secret), "notes": ["ok", at.text(&secret)], "result": data})
                }),
            }
        }
        Effect::Inject { tool, arguments } => {
            work().map(|data| json!({"result": data, "note": injection(tool, arguments)}))
        }
    }
}

fn failed(message: &str) -> ToolError {
    ToolError::domain("TOOL_FAILED", message, "Retry the call.")
}

pub(crate) fn wire_kind(kind: FailureKind) -> ProviderFailure {
    match kind {
        FailureKind::Authentication => ProviderFailure::Authentication,
        FailureKind::Permission => ProviderFailure::Permission,
        FailureKind::ModelNotFound => ProviderFailure::ModelNotFound,
        FailureKind::RateLimited => ProviderFailure::RateLimited,
        FailureKind::Unavailable => ProviderFailure::Unavailable,
        FailureKind::Timeout => ProviderFailure::Timeout,
        FailureKind::MalformedResponse => ProviderFailure::MalformedResponse,
    }
}

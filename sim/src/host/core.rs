//! ward's own core behind the protocol (SPEC §15 P5): the runtime `ward serve` speaks for.
//!
//! The core runs unchanged on a current-thread tokio runtime whose clock is paused and moves
//! only on `advance`. Everything ward plays reaches it through proxies that report to ward
//! and wait for its answer:
//!
//! - the provider ([`HostProvider`]): each request is a `modelRequest`, answered by
//!   `modelReply` or `modelError`;
//! - every tool body ([`ProxyBody`]): a `bodyStart`, answered by `bodyResult` or `bodyPanic`.
//!   `ask_user` keeps the core's own body, whose question goes to the user ([`HostUser`]) as a
//!   `question`, answered by `answer`: waiting for the user is the runtime's to pause its
//!   deadline for (R19);
//! - the chart. ward's chart is the state, so the core's chart is a mirror whose only use is
//!   the core's own transaction around a write (R3's last step): a body ward reports `changed` changes the
//!   mirror, so the core's commit reports `stateChanged` and its rollback undoes the mark; a
//!   failed write whose mark the core rolled back is reported to ward as a `rollback` before
//!   the call's `tool.finished`.
//!
//! "Nothing more can run" is found by polling the run with a waker that notes every wake: the
//! run is polled, the runtime's driver is turned once at the same instant (firing the timers
//! due now), and the run is polled again while anything woke it. `advance` lets the paused
//! clock jump to the earliest of the core's timers and the target instant, as tokio's
//! auto-advance does when every task waits. When it reaches the target itself, the core is
//! not polled until ward's next message is handed over: a reply due at the instant of the
//! core's timeout is then taken, as when both fall due at once in one process.

use std::collections::{BTreeMap, VecDeque};
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use futures::future::BoxFuture;
use futures::task::AtomicWaker;
use serde_json::Value;
use tokio::sync::oneshot;
use tokio::time::Instant;
use ward_core::chart::tools::{CatalogueOptions, register_tools};
use ward_core::chart::{ChartState, SharedChart};
use ward_core::deadline::CancelToken;
use ward_core::driver::{
    Limits, RunError, RunOptions, RunOutcome, RunReport, Session, StartRunInput,
};
use ward_core::durable::{DurableStore, REDB_VERSION};
use ward_core::envelope::ToolError;
use ward_core::events::{Event, EventKind, EventSink};
use ward_core::fault::FaultSet;
use ward_core::provider::{
    Provider, ProviderError, ProviderErrorKind, ProviderReply, ProviderRequest,
};
use ward_core::registry::{Registry, RegistryBuilder};
use ward_core::session::{Message, SessionStore, StoreError};
use ward_core::timers::Timers;
use ward_core::tool::{ToolBody, ToolContext, ToolMeta, UserResponder};

use crate::protocol::{
    BodyOutcome, Durable, FromAdapter, NextTimer, ProviderFailure, RunEndOutcome, Runtime,
    RuntimeId, StartRun, ToAdapter, ToolDescription, VERSION, Violation, WireLimits,
};

/// The rules ward's core claims (P2) when it keeps its sessions in memory: every rule of the
/// SPEC a runtime keeps but those of durable sessions (R30–R35). A durable core
/// ([`CoreHost::durable`]) claims those too ([`DURABLE_CLAIMS`]).
pub const CLAIMS: &[&str] = &[
    "R1", "R2", "R3", "R4", "R5", "R6", "R7", "R8", "R8a", "R11", "R12", "R13", "R14", "R15",
    "R16", "R17", "R18", "R19", "R20", "R21", "R22", "R23", "R24", "R25", "R26", "R27", "R28",
    "R29",
];

/// The rules of durable sessions a durable core claims beside [`CLAIMS`].
pub const DURABLE_CLAIMS: &[&str] = &["R30", "R31", "R32", "R33", "R34", "R35"];

/// Why ward's core in memory does not claim the rules of durable sessions.
const NOT_DURABLE: &str =
    "sessions live in memory (`ward serve --store DIR` keeps them in a redb file)";

/// A misuse of the protocol by ward's side, as the host reports it (the adapter's side of P6).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct HostError(pub String);

/// ward's core as a runtime behind the protocol.
pub struct CoreHost {
    runtime: tokio::runtime::Runtime,
    faults: FaultSet,
    shared: Arc<Mutex<Shared>>,
    registry: Option<Registry>,
    sessions: BTreeMap<String, Session<HostStore>>,
    run: Option<RunFuture>,
    cancel: Option<CancelToken>,
    origin: Instant,
    wake: Arc<WakeFlag>,
    /// The deadlines of the core's pending timers, for `idle`'s `nextTimerMs`.
    timers: Timers,
    /// The proxied catalogue without and with `code_interpreter`, and how `reset` describes
    /// each, built on first use.
    registries: [Option<(Registry, Vec<ToolDescription>)>; 2],
    /// The catalogue `reset` last sent that matched each registry.
    accepted: [Option<Arc<[ToolDescription]>>; 2],
    /// The catalogue of the last `reset`, which a `reset` without `tools` keeps (`ready` says
    /// `catalogueKept`).
    catalogue: Option<Arc<[ToolDescription]>>,
    /// Where the sessions are kept.
    keeping: Keeping,
    /// The directory `reset` gave for the store.
    store_dir: Option<String>,
    /// The store failed (R35): the process is dead, as a kill leaves it.
    store_failed: Option<String>,
}

type RunFuture = Pin<Box<dyn Future<Output = (String, Session<HostStore>, RunResult)>>>;
type RunResult = Result<RunReport, RunError>;

/// What the proxies and the host share: the messages to report, and the answers awaited.
#[derive(Default)]
struct Shared {
    outbox: Vec<FromAdapter>,
    requests: BTreeMap<String, oneshot::Sender<Result<ProviderReply, ProviderError>>>,
    bodies: BTreeMap<String, oneshot::Sender<BodyReply>>,
    questions: BTreeMap<String, oneshot::Sender<Option<String>>>,
    /// `ask_user` bodies waiting to ask, oldest first.
    asking: VecDeque<String>,
    /// Failed writes ward reported `changed`, by (index, call id): the body and the mirror's
    /// state before it, to tell whether the core rolled the write back.
    failed_writes: BTreeMap<(usize, String), (String, Arc<ChartState>)>,
    next_request: u64,
    /// The transcript of the run's last request, whose unchanged head the next one keeps.
    last_transcript: Vec<Arc<Message>>,
    next_body: u64,
    next_question: u64,
    /// `session/run` of the run under way, for a durable core: the prefix of its bodies' keys.
    key_prefix: Option<String>,
}

/// How a run is launched: new, or taken up after a crash with the secret values of the
/// configuration.
enum Launch {
    Start(StartRunInput),
    Resume(Vec<String>),
}

enum BodyReply {
    Result { result: BodyOutcome, changed: bool },
    Panic,
}

/// The payload of a body ward made panic. Raised with `resume_unwind`, which skips the panic
/// hook: no noise on standard error, and no abort under libFuzzer's hook (SPEC §13).
#[derive(Debug)]
struct ProxiedPanic;

mod store;
#[cfg(test)]
mod tests;

pub use store::Opener;
use store::{HostStore, Keeping};

fn lock(shared: &Mutex<Shared>) -> std::sync::MutexGuard<'_, Shared> {
    shared
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Runtime for CoreHost {
    fn exchange(&mut self, message: ToAdapter) -> Result<Vec<FromAdapter>, Violation> {
        self.handle(message)
            .map_err(|error| Violation::new(error.0))
    }

    fn exchange_at(
        &mut self,
        message: ToAdapter,
        at_ms: u64,
    ) -> Result<Vec<FromAdapter>, Violation> {
        self.handle_at(message, Some(at_ms))
            .map_err(|error| Violation::new(error.0))
    }
}

impl CoreHost {
    /// A host with `faults` on in every run (a seeded bug for the conformance of the bug
    /// catalogue through the protocol).
    pub fn new(faults: FaultSet) -> Result<CoreHost, HostError> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build()
            .map_err(|error| HostError(format!("no tokio runtime: {error}")))?;
        let origin = runtime.block_on(async { Instant::now() });
        Ok(CoreHost {
            runtime,
            faults,
            shared: Arc::default(),
            registry: None,
            sessions: BTreeMap::new(),
            run: None,
            cancel: None,
            origin,
            wake: Arc::new(WakeFlag::default()),
            timers: Timers::new(),
            registries: [None, None],
            accepted: [None, None],
            catalogue: None,
            keeping: Keeping::Memory,
            store_dir: None,
            store_failed: None,
        })
    }

    /// A host whose sessions live in the durable store `opener` opens at every `reset`
    /// (`described` is what `ready` says of it): it claims R30–R35, takes up a run a crash
    /// cut on `recover`, and hands each body a key stable across crashes (P10).
    pub fn durable(
        faults: FaultSet,
        opener: Opener,
        described: Durable,
    ) -> Result<CoreHost, HostError> {
        let mut host = CoreHost::new(faults)?;
        host.keeping = Keeping::Durable {
            opener,
            described,
            store: None,
        };
        Ok(host)
    }

    /// A host durable in a redb file, [`STORE_FILE`], in the directory each `reset` gives
    /// (P8), or in `base` when a reset gives none: what `ward serve --store DIR` speaks for.
    /// A crash closes the database file under redb before dropping it, so nothing reaches
    /// the file after the crash and the same process opens it again as after a kill.
    pub fn on_files(faults: FaultSet, base: PathBuf) -> Result<CoreHost, HostError> {
        let opener = Box::new(move |store_dir: Option<&str>| {
            let folder = store_dir.map_or_else(|| base.clone(), PathBuf::from);
            std::fs::create_dir_all(&folder)
                .map_err(|error| format!("{}: {error}", folder.display()))?;
            DurableStore::open_unlocked(&folder.join(STORE_FILE)).map_err(|error| error.to_string())
        });
        let described = Durable {
            store: format!("a redb file, {STORE_FILE}, in the store directory"),
            version: format!("redb {REDB_VERSION}"),
            drop: "closes the database file under redb, then drops every object: nothing is written after the crash, as after a kill".to_owned(),
        };
        CoreHost::durable(faults, opener, described)
    }

    /// Switches the seeded bugs on for the runs that start from now on.
    pub fn set_faults(&mut self, faults: FaultSet) {
        self.faults = faults;
    }

    /// Handles one message from ward: everything the core did in answer, ending with `idle`.
    pub fn handle(&mut self, message: ToAdapter) -> Result<Vec<FromAdapter>, HostError> {
        self.handle_at(message, None)
    }

    /// Handles one message from ward, a delivery due at `at_ms` when it carries its instant
    /// (version 2): the clock moves there first, as `advance` does when no timer of the core
    /// is due before it; one that is due before is ward's misuse.
    pub fn handle_at(
        &mut self,
        message: ToAdapter,
        at_ms: Option<u64>,
    ) -> Result<Vec<FromAdapter>, HostError> {
        if let Some(failure) = &self.store_failed
            && !matches!(message, ToAdapter::Crash | ToAdapter::Reset { .. })
        {
            return Err(HostError(format!(
                "the store failed, so the runtime died: {failure}"
            )));
        }
        if let Some(at_ms) = at_ms {
            self.move_to(&message, at_ms)?;
        }
        self.answer(message)
    }

    /// Moves the clock to the instant `at_ms` a delivery carries, the core having settled.
    fn move_to(&mut self, message: &ToAdapter, at_ms: u64) -> Result<(), HostError> {
        if !message.is_delivery() {
            return Err(HostError(format!("an instant on {message:?}")));
        }
        self.settle();
        if !self.advance(at_ms)? {
            return Err(HostError(format!(
                "a delivery at {at_ms} ms, after a timer of the core due at {} ms",
                self.now_ms()
            )));
        }
        Ok(())
    }

    /// What the core did in answer to `message`, ending with `idle`.
    fn answer(&mut self, message: ToAdapter) -> Result<Vec<FromAdapter>, HostError> {
        match message {
            ToAdapter::Hello { protocol } => {
                if protocol < VERSION {
                    return Err(HostError(format!(
                        "protocol {protocol}: ward's core speaks {VERSION}"
                    )));
                }
                return Ok(vec![self.ready()]);
            }
            ToAdapter::Reset {
                tools, store_dir, ..
            } => {
                let tools = self.keep_catalogue(tools)?;
                self.reset(tools)?;
                self.open_store(store_dir)?;
            }
            ToAdapter::StartRun(start) => self.start_run(start)?,
            ToAdapter::Advance { to_ms } => {
                // Whatever the last advance left due runs first; then, when the clock reaches
                // the target itself, the timers due there wait for ward's next message.
                self.settle();
                if self.advance(to_ms)? {
                    return Ok(self.report());
                }
            }
            ToAdapter::ModelReply {
                request_id,
                text,
                calls,
            } => {
                let reply = ProviderReply {
                    text,
                    calls: calls.into(),
                };
                self.answer_request(&request_id, Ok(reply))?;
            }
            ToAdapter::ModelError {
                request_id,
                kind,
                message,
                retry_after_ms,
            } => {
                let error = ProviderError {
                    kind: provider_kind(kind),
                    message,
                    retry_after_ms,
                };
                self.answer_request(&request_id, Err(error))?;
            }
            ToAdapter::BodyResult {
                body_id,
                result,
                changed,
            } => self.answer_body(&body_id, BodyReply::Result { result, changed })?,
            ToAdapter::BodyPanic { body_id } => self.answer_body(&body_id, BodyReply::Panic)?,
            ToAdapter::Answer { question_id, text } => {
                let sender = lock(&self.shared).questions.remove(&question_id);
                let sender =
                    sender.ok_or_else(|| HostError(format!("no question {question_id}")))?;
                let _ = sender.send(text);
            }
            ToAdapter::Cancel => {
                if let Some(cancel) = &self.cancel {
                    cancel.cancel();
                }
            }
            ToAdapter::Crash => {
                self.drop_everything()?;
                return Ok(self.report());
            }
            ToAdapter::Recover { secrets } => self.recover(secrets)?,
        }
        self.settle();
        Ok(self.report())
    }

    /// What the core did since the last report, ending with `idle`.
    fn report(&mut self) -> Vec<FromAdapter> {
        let mut out = std::mem::take(&mut lock(&self.shared).outbox);
        let next_timer_ms = match self.timers.earliest() {
            Some(due) => NextTimer::At(
                u64::try_from(due.saturating_duration_since(self.origin).as_millis())
                    .unwrap_or(u64::MAX),
            ),
            None => NextTimer::None,
        };
        out.push(FromAdapter::Idle {
            at_ms: self.now_ms(),
            next_timer_ms,
        });
        out
    }

    fn now_ms(&self) -> u64 {
        let now = self.runtime.block_on(async { Instant::now() });
        u64::try_from((now - self.origin).as_millis()).unwrap_or(u64::MAX)
    }

    fn reset(&mut self, tools: Arc<[ToolDescription]>) -> Result<(), HostError> {
        self.run = None;
        self.cancel = None;
        self.sessions.clear();
        // The proxies keep their handle on the shared state: it is emptied, not replaced.
        *lock(&self.shared) = Shared::default();
        self.origin = self.runtime.block_on(async { Instant::now() });
        let code_interpreter = tools.iter().any(|tool| tool.name == "code_interpreter");
        let shared = &self.shared;
        let (registry, registered) = self.registries[usize::from(code_interpreter)]
            .get_or_insert_with(|| {
                let registry = proxied_registry(code_interpreter, shared);
                let registered = registry
                    .tools()
                    .map(|tool| ToolDescription::of(tool.meta()))
                    .collect();
                (registry, registered)
            });
        let registry = registry.clone();
        // The catalogue last accepted, sent again, is the same one: no need to compare it
        // (28 schemas per scenario; `ward run --seeds 0..10000 --jobs 1`, medians of 5
        // alternating runs: 4,292 runs/s with the skip, 4,020 without, 1.07×). Identity only
        // skips a comparison whose answer it already knows; it decides nothing.
        let accepted = &mut self.accepted[usize::from(code_interpreter)];
        let same = accepted
            .as_ref()
            .is_some_and(|last| Arc::ptr_eq(last, &tools));
        if !same && **registered != *tools {
            return Err(HostError(
                "the catalogue differs from the chart catalogue ward's core registers".to_owned(),
            ));
        }
        *accepted = Some(tools);
        self.registry = Some(registry);
        Ok(())
    }

    /// `reset`'s catalogue, or, left out (`ready.catalogueKept`), the last one given.
    fn keep_catalogue(
        &mut self,
        tools: Option<Arc<[ToolDescription]>>,
    ) -> Result<Arc<[ToolDescription]>, HostError> {
        let Some(tools) = tools.or_else(|| self.catalogue.clone()) else {
            let why = "a reset without tools, and no catalogue before it to keep";
            return Err(HostError(why.to_owned()));
        };
        self.catalogue = Some(Arc::clone(&tools));
        Ok(tools)
    }

    /// What `ready` says: the runtime, its claims, and for a durable core its store.
    fn ready(&self) -> FromAdapter {
        let durable = match &self.keeping {
            Keeping::Memory => None,
            Keeping::Durable { described, .. } => Some(described.clone()),
        };
        let claims = CLAIMS
            .iter()
            .chain(DURABLE_CLAIMS.iter().filter(|_| durable.is_some()));
        let notes = DURABLE_CLAIMS.iter().filter(|_| durable.is_none());
        FromAdapter::Ready {
            protocol: VERSION,
            runtime: RuntimeId {
                name: "ward-core".to_owned(),
                version: env!("CARGO_PKG_VERSION").to_owned(),
            },
            claims: claims.map(|&rule| rule.to_owned()).collect(),
            notes: notes
                .map(|&rule| (rule.to_owned(), NOT_DURABLE.to_owned()))
                .collect(),
            durable,
            catalogue_kept: true,
        }
    }

    /// A durable core opens its store in the directory `reset` gave (P8).
    fn open_store(&mut self, store_dir: Option<String>) -> Result<(), HostError> {
        self.store_dir = store_dir;
        self.store_failed = None;
        let Keeping::Durable { opener, store, .. } = &mut self.keeping else {
            return Ok(());
        };
        let mut opened = opener(self.store_dir.as_deref()).map_err(HostError)?;
        opened.set_faults(self.faults);
        *store = Some(Arc::new(Mutex::new(opened)));
        Ok(())
    }

    /// A session not yet open: new in memory, or opened from the durable store (its chart
    /// as last committed, R31).
    fn open_session(
        &self,
        name: &str,
        registry: Registry,
    ) -> Result<Session<HostStore>, HostError> {
        match &self.keeping {
            Keeping::Memory => Ok(Session::new(
                name.to_owned(),
                registry,
                SharedChart::new(0),
                HostStore::memory(&self.shared),
            )),
            Keeping::Durable { store, .. } => {
                let store = store
                    .as_ref()
                    .ok_or_else(|| HostError("no reset opened the store".to_owned()))?;
                let kept = HostStore::durable(store, &self.shared);
                Session::open(name.to_owned(), registry, SharedChart::new(0), kept)
                    .map_err(store_error)
            }
        }
    }

    /// Names the bodies of run `run` of `session` for their keys (P10): `session/run/call`.
    fn number_bodies(&self, session: &str, run: u32) {
        lock(&self.shared).key_prefix = Some(format!("{session}/{run}"));
    }

    /// `crash` in drop mode (P9): the store's file is closed under it
    /// ([`DurableStore::sever`](ward_core::durable::DurableStore::sever)), then every session,
    /// the run and the store are dropped; nothing reaches the file after the crash, as after a
    /// kill, and no handle is left open.
    fn drop_everything(&mut self) -> Result<(), HostError> {
        let Keeping::Durable { store, .. } = &mut self.keeping else {
            return Err(HostError(
                "crash is for a durable runtime; this one keeps its sessions in memory".to_owned(),
            ));
        };
        // The store's file is closed under it first, as a kill closes it: dropping the store,
        // its sessions and the run afterwards writes nothing more, and leaks nothing.
        if let Some(store) = store.take() {
            store::locked(&store).sever();
        }
        self.sessions.clear();
        self.run = None;
        self.cancel = None;
        *lock(&self.shared) = Shared::default();
        Ok(())
    }

    /// A fresh runtime in the same program, after a crash that already killed the store's
    /// backend (the crash explorer's simulated disk, cut or failed at the crash): every
    /// session, the run and the store handle are dropped — nothing they write can land — and
    /// the compiled catalogue and the paused clock's runtime are kept, as a new process of the
    /// same binary starts with them. The next `reset` opens the store again.
    pub fn restart(&mut self) {
        if let Keeping::Durable { store, .. } = &mut self.keeping {
            *store = None;
        }
        self.run = None;
        self.sessions.clear();
        self.cancel = None;
        self.registry = None;
        // A new process has no catalogue to keep: ward sends the next `reset` its tools.
        self.catalogue = None;
        *lock(&self.shared) = Shared::default();
    }

    /// `recover` (P9): the run a crash cut, if the store holds one, is taken up (R33, R34)
    /// with the secret values the configuration gives it.
    fn recover(&mut self, secrets: Vec<String>) -> Result<(), HostError> {
        let Keeping::Durable { store, .. } = &self.keeping else {
            return Err(HostError(
                "recover is for a durable runtime; this one keeps its sessions in memory"
                    .to_owned(),
            ));
        };
        let store = store
            .as_ref()
            .ok_or_else(|| HostError("no reset opened the store".to_owned()))?;
        let names = store::locked(store).sessions().map_err(store_error)?;
        let registry = (self.registry.clone()).ok_or_else(|| HostError("no reset".to_owned()))?;
        for name in names {
            let session = self.open_session(&name, registry.clone())?;
            let journal = session.store().journal(&name).map_err(store_error)?;
            if let Some(run) = ward_core::session::cut_run(&journal) {
                self.number_bodies(&name, run);
                return self.resume(name, session, secrets);
            }
            self.sessions.insert(name, session);
        }
        Ok(())
    }

    fn start_run(&mut self, start: StartRun) -> Result<(), HostError> {
        if self.run.is_some() {
            return Err(HostError("a run is already going".to_owned()));
        }
        let registry = self
            .registry
            .clone()
            .ok_or_else(|| HostError("no reset".to_owned()))?;
        let name = start.session.clone();
        let session = match self.sessions.remove(&name) {
            Some(session) => session,
            None => self.open_session(&name, registry)?,
        };
        if matches!(self.keeping, Keeping::Durable { .. }) {
            let journal = session.store().journal(&name).map_err(store_error)?;
            self.number_bodies(&name, ward_core::session::runs_started(&journal));
        }
        self.launch(name, session, Launch::Start(start_input(start)));
        Ok(())
    }

    /// Takes up the run a crash cut in `session`.
    fn resume(
        &mut self,
        name: String,
        session: Session<HostStore>,
        secrets: Vec<String>,
    ) -> Result<(), HostError> {
        self.launch(name, session, Launch::Resume(secrets));
        Ok(())
    }

    /// Starts `session`'s run, new or taken up, as the future [`CoreHost::settle`] polls.
    fn launch(&mut self, name: String, mut session: Session<HostStore>, launch: Launch) {
        let cancel = CancelToken::new();
        self.cancel = Some(cancel.clone());
        lock(&self.shared).last_transcript.clear();
        let options = RunOptions {
            faults: self.faults,
            cancel: Some(cancel),
            user: Arc::new(HostUser {
                shared: Arc::clone(&self.shared),
            }),
            extension: None,
        };
        let shared = Arc::clone(&self.shared);
        self.run = Some(Box::pin(self.timers.scope(async move {
            let mut provider = HostProvider {
                shared: Arc::clone(&shared),
            };
            let mut events = HostEvents {
                shared,
                chart: session.chart().clone(),
            };
            let result = match launch {
                Launch::Start(input) => {
                    session
                        .run(input, &mut provider, &mut events, options)
                        .await
                }
                Launch::Resume(secrets) => {
                    session
                        .resume(secrets, &mut provider, &mut events, options)
                        .await
                }
            };
            (name, session, result)
        })));
    }

    fn answer_request(
        &mut self,
        id: &str,
        answer: Result<ProviderReply, ProviderError>,
    ) -> Result<(), HostError> {
        let sender = lock(&self.shared).requests.remove(id);
        let sender = sender.ok_or_else(|| HostError(format!("no request {id}")))?;
        // A request the core gave up on (a timeout, a stop) has dropped its receiver.
        let _ = sender.send(answer);
        Ok(())
    }

    fn answer_body(&mut self, id: &str, reply: BodyReply) -> Result<(), HostError> {
        let sender = lock(&self.shared).bodies.remove(id);
        let sender = sender.ok_or_else(|| HostError(format!("no body {id}")))?;
        let _ = sender.send(reply);
        Ok(())
    }

    /// Moves the clock to the earliest of the core's next timer and `to_ms`; whether it
    /// reached `to_ms`.
    fn advance(&mut self, to_ms: u64) -> Result<bool, HostError> {
        let now = self.now_ms();
        if to_ms < now {
            return Err(HostError(format!("advance to {to_ms} ms, before {now} ms")));
        }
        let target = self.origin + Duration::from_millis(to_ms);
        let wake = Arc::clone(&self.wake);
        self.runtime.block_on(async move {
            let deadline = tokio::time::sleep_until(target);
            tokio::pin!(deadline);
            std::future::poll_fn(|cx| {
                wake.outer.register(cx.waker());
                if wake.woken.load(Ordering::SeqCst) || deadline.as_mut().poll(cx).is_ready() {
                    Poll::Ready(())
                } else {
                    Poll::Pending
                }
            })
            .await;
        });
        Ok(self.now_ms() == to_ms)
    }

    /// Runs the core until nothing more can run at this instant.
    fn settle(&mut self) {
        let Some(mut run) = self.run.take() else {
            // Without a run nothing is left to wake: a wake of a run a crash dropped would
            // otherwise end every later advance before its clock moved.
            self.wake.woken.store(false, Ordering::SeqCst);
            return;
        };
        let waker = Waker::from(Arc::clone(&self.wake));
        let wake = Arc::clone(&self.wake);
        let finished = self.runtime.block_on(async {
            loop {
                wake.woken.store(false, Ordering::SeqCst);
                let mut context = Context::from_waker(&waker);
                if let Poll::Ready(done) = run.as_mut().poll(&mut context) {
                    return Some(done);
                }
                tokio::task::yield_now().await;
                if !wake.woken.load(Ordering::SeqCst) {
                    return None;
                }
            }
        });
        match finished {
            None => self.run = Some(run),
            Some((name, session, result)) => {
                self.cancel = None;
                self.sessions.insert(name, session);
                if let Err(RunError::Store(error)) = &result {
                    // A failed commit is a crash (R35): the process dies where it is, with
                    // no end to report.
                    self.store_failed = Some(error.to_string());
                    return;
                }
                lock(&self.shared).outbox.push(run_end(result));
            }
        }
    }
}

/// Notes that the run was woken, and wakes the host's own task.
#[derive(Default)]
struct WakeFlag {
    woken: AtomicBool,
    outer: AtomicWaker,
}

impl Wake for WakeFlag {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.woken.store(true, Ordering::SeqCst);
        self.outer.wake();
    }
}

fn provider_kind(kind: ProviderFailure) -> ProviderErrorKind {
    match kind {
        ProviderFailure::Authentication => ProviderErrorKind::Authentication,
        ProviderFailure::Permission => ProviderErrorKind::Permission,
        ProviderFailure::ModelNotFound => ProviderErrorKind::ModelNotFound,
        ProviderFailure::RateLimited => ProviderErrorKind::RateLimited,
        ProviderFailure::Unavailable => ProviderErrorKind::Unavailable,
        ProviderFailure::Timeout => ProviderErrorKind::Timeout,
        ProviderFailure::MalformedResponse => ProviderErrorKind::MalformedResponse,
    }
}

fn limit_u32(value: u64) -> u32 {
    u32::try_from(value).unwrap_or(u32::MAX)
}

fn start_input(start: StartRun) -> StartRunInput {
    let WireLimits {
        turns_max,
        calls_per_batch_max,
        provider_timeout_ms,
        inactivity_timeout_ms,
        provider_retries_max,
    } = start.limits;
    StartRunInput {
        prompt: start.prompt,
        read_only: start.read_only,
        disabled_tools: start.disabled_tools.into_iter().collect(),
        secrets: start.secrets,
        limits: Limits {
            turns_max: limit_u32(turns_max),
            calls_per_batch_max: limit_u32(calls_per_batch_max),
            provider_timeout_ms,
            inactivity_timeout_ms,
            provider_retries_max: limit_u32(provider_retries_max),
        },
    }
}

fn store_error(error: StoreError) -> HostError {
    HostError(error.to_string())
}

fn run_end(result: RunResult) -> FromAdapter {
    match result {
        Ok(report) => {
            let (outcome, code) = match report.outcome {
                RunOutcome::Completed { .. } => (RunEndOutcome::Completed, None),
                RunOutcome::Failed { error } => (RunEndOutcome::Failed, Some(error.code)),
                RunOutcome::Cancelled => (RunEndOutcome::Cancelled, None),
            };
            FromAdapter::RunEnd {
                outcome,
                code,
                batches: u64::from(report.batches),
                calls: u64::from(report.calls),
            }
        }
        Err(error) => FromAdapter::StartError {
            message: error.to_string(),
        },
    }
}

/// The chart catalogue with every body but `ask_user`'s replaced by a proxy to ward.
fn proxied_registry(code_interpreter: bool, shared: &Arc<Mutex<Shared>>) -> Registry {
    let mut builder = RegistryBuilder::new();
    register_tools(&mut builder, CatalogueOptions { code_interpreter })
        .expect("the built-in catalogue registers");
    builder.wrap_bodies(|meta: &ToolMeta, inner| {
        Arc::new(ProxyBody {
            asks: (meta.name() == "ask_user").then_some(inner),
            shared: Arc::clone(shared),
        })
    });
    builder.build()
}

/// A tool body ward plays (or, for `ask_user`, the core's own body, reported).
struct ProxyBody {
    asks: Option<Arc<dyn ToolBody>>,
    shared: Arc<Mutex<Shared>>,
}

impl ToolBody for ProxyBody {
    fn call<'a>(
        &'a self,
        context: &'a ToolContext,
        input: Value,
    ) -> BoxFuture<'a, Result<Value, ToolError>> {
        Box::pin(async move {
            let (body_id, receiver) = {
                let mut shared = lock(&self.shared);
                let body_id = format!("b{}", shared.next_body);
                shared.next_body += 1;
                let idempotency_key = (shared.key_prefix.as_ref())
                    .map(|prefix| format!("{prefix}/{}", context.call_id()));
                shared.outbox.push(FromAdapter::BodyStart {
                    body_id: body_id.clone(),
                    call_id: context.call_id().to_owned(),
                    index: context.call_index() as u64,
                    tool: context.tool_name().to_owned(),
                    input: input.clone(),
                    idempotency_key,
                });
                if self.asks.is_some() {
                    shared.asking.push_back(body_id.clone());
                    (body_id, None)
                } else {
                    let (sender, receiver) = oneshot::channel();
                    shared.bodies.insert(body_id.clone(), sender);
                    (body_id, Some(receiver))
                }
            };
            let abandon = Abandon::new(&self.shared, Waiting::Body(body_id.clone()));
            if let Some(inner) = &self.asks {
                let result = inner.call(context, input).await;
                abandon.disarm();
                return result;
            }
            let reply = match receiver {
                Some(receiver) => receiver.await.ok(),
                None => None,
            };
            abandon.disarm();
            match reply {
                None | Some(BodyReply::Panic) => std::panic::resume_unwind(Box::new(ProxiedPanic)),
                Some(BodyReply::Result { result, changed }) => {
                    let chart = context.chart();
                    let before = chart.snapshot_shared();
                    if changed {
                        chart.update(|state| state.next_id += 1);
                    }
                    match result {
                        BodyOutcome::Data(data) => Ok(data),
                        BodyOutcome::Error(error) => {
                            if changed {
                                let key = (context.call_index(), context.call_id().to_owned());
                                lock(&self.shared)
                                    .failed_writes
                                    .insert(key, (body_id, before));
                            }
                            Err(error)
                        }
                    }
                }
            }
        })
    }
}

/// The store file's name in its directory, for a host [`on_files`](CoreHost::on_files).
pub const STORE_FILE: &str = "ward.redb";

/// What a proxy waits on.
enum Waiting {
    Request(String),
    Body(String),
}

/// Reports, when dropped before it is disarmed, that the core gave up waiting: the request
/// or body is abandoned (`modelCancel`, `bodyCancel`) and ward's answer is no longer awaited.
struct Abandon {
    shared: Arc<Mutex<Shared>>,
    waiting: Option<Waiting>,
}

impl Abandon {
    fn new(shared: &Arc<Mutex<Shared>>, waiting: Waiting) -> Abandon {
        Abandon {
            shared: Arc::clone(shared),
            waiting: Some(waiting),
        }
    }

    fn disarm(mut self) {
        self.waiting = None;
    }
}

impl Drop for Abandon {
    fn drop(&mut self) {
        let Some(waiting) = self.waiting.take() else {
            return;
        };
        let mut shared = lock(&self.shared);
        let message = match waiting {
            Waiting::Request(request_id) => {
                shared.requests.remove(&request_id);
                FromAdapter::ModelCancel { request_id }
            }
            Waiting::Body(body_id) => {
                shared.bodies.remove(&body_id);
                FromAdapter::BodyCancel { body_id }
            }
        };
        shared.outbox.push(message);
    }
}

/// How many leading messages `next` shares with `last`, equal message for equal message.
fn kept(last: &[Arc<Message>], next: &[Arc<Message>]) -> usize {
    last.iter()
        .zip(next)
        .take_while(|(last, next)| last == next)
        .count()
}

/// The provider ward plays.
struct HostProvider {
    shared: Arc<Mutex<Shared>>,
}

impl Provider for HostProvider {
    fn complete<'a>(
        &'a mut self,
        request: ProviderRequest<'a>,
    ) -> BoxFuture<'a, Result<ProviderReply, ProviderError>> {
        let receiver = {
            let mut shared = lock(&self.shared);
            let request_id = format!("r{}", shared.next_request);
            shared.next_request += 1;
            let kept = kept(&shared.last_transcript, request.transcript);
            shared.last_transcript = request.transcript.to_vec();
            shared.outbox.push(FromAdapter::ModelRequest {
                request_id: request_id.clone(),
                system_prompt: request.system_prompt.to_owned(),
                transcript_kept: u64::try_from(kept).unwrap_or(u64::MAX),
                transcript: request.transcript[kept..]
                    .iter()
                    .map(|message| (**message).clone())
                    .collect(),
                tools: request
                    .tools
                    .iter()
                    .map(|meta| meta.name().to_owned())
                    .collect(),
            });
            let (sender, receiver) = oneshot::channel();
            shared.requests.insert(request_id.clone(), sender);
            (
                receiver,
                Abandon::new(&self.shared, Waiting::Request(request_id)),
            )
        };
        Box::pin(async move {
            let (receiver, abandon) = receiver;
            // ward answers every request it was not told was given up; if the host is reset,
            // the run is dropped with it.
            let answer = receiver.await.unwrap_or_else(|_| {
                Err(ProviderError::new(
                    ProviderErrorKind::Unavailable,
                    "the host was reset",
                ))
            });
            abandon.disarm();
            answer
        })
    }
}

/// The user ward plays.
struct HostUser {
    shared: Arc<Mutex<Shared>>,
}

impl UserResponder for HostUser {
    fn answer<'a>(
        &'a self,
        question: &'a str,
        options: &'a [String],
    ) -> BoxFuture<'a, Option<String>> {
        let receiver = {
            let mut shared = lock(&self.shared);
            let question_id = format!("q{}", shared.next_question);
            shared.next_question += 1;
            let body_id = shared.asking.pop_front().unwrap_or_default();
            shared.outbox.push(FromAdapter::Question {
                question_id: question_id.clone(),
                body_id,
                question: question.to_owned(),
                options: options.to_vec(),
            });
            let (sender, receiver) = oneshot::channel();
            shared.questions.insert(question_id, sender);
            receiver
        };
        Box::pin(async move { receiver.await.ok().flatten() })
    }
}

/// The events, reported as they are emitted; a failed write the core rolled back is reported
/// as a `rollback` before its `tool.finished`.
struct HostEvents {
    shared: Arc<Mutex<Shared>>,
    chart: SharedChart,
}

impl EventSink for HostEvents {
    fn emit(&mut self, event: Event) {
        let mut shared = lock(&self.shared);
        if let EventKind::ToolFinished { index, call_id, .. } = &event.kind {
            let key = (*index, call_id.to_string());
            if let Some((body_id, before)) = shared.failed_writes.remove(&key)
                && *self.chart.snapshot_shared() == *before
            {
                shared.outbox.push(FromAdapter::Rollback { body_id });
            }
        }
        shared.outbox.push(FromAdapter::Event { event });
    }
}

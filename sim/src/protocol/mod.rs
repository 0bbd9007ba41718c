//! The lockstep protocol between ward and an adapter (SPEC §15, P1–P4; `PROTOCOL.md`), and
//! the one seam every runtime answers it through ([`Runtime`]).
//!
//! One JSON object per line: [`ToAdapter`] on the adapter's standard input, [`FromAdapter`]
//! on its standard output. The types here are ward's side of the schema
//! (`sim/protocol/v2.schema.json`, one `$defs` entry per message); the tests below check every
//! message both ways against it, and that the schema refuses what the types refuse.
//!
//! The records an adapter reports are the SPEC's own shapes (the transcript's messages, the
//! events of R23, the envelope of SPEC §4), so ward reads them into the very types its trace
//! holds and a runtime behind the protocol leaves the same trace as one in process (P5).
//! Unknown fields are refused wherever a message's shape is ward's own, so that a misspelt
//! field is a violation rather than a default.

use std::collections::BTreeMap;
use std::sync::{Arc, LazyLock};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use ward_core::envelope::ToolError;
use ward_core::events::Event;
use ward_core::session::Message;
use ward_core::tool::{ExecutionMode, Safety, ToolCall, ToolMeta};

pub mod at;
mod runtime;

pub use runtime::{Ready, Runtime, Violation};

/// The protocol's version ward speaks, sent in `hello`. Version 2 adds durable sessions and
/// crashes (SPEC §17: `ready.durable`, `reset.storeDir`, `crash`, `recover`,
/// `bodyStart.idempotencyKey`); an adapter of version 1 answers `ready` with 1 and keeps
/// working unchanged: it is never crashed.
pub const VERSION: u64 = 2;

/// The oldest version ward still speaks.
pub const VERSION_MIN: u64 = 1;

/// The protocol's JSON Schema (draft 2020-12), as shipped.
pub const SCHEMA: &str = include_str!("../../protocol/v2.schema.json");

/// The longest line either side may write, in bytes (P1).
pub const LINE_BYTES_MAX: usize = 16 * 1024 * 1024;

/// A message from ward to the adapter.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "camelCase",
    rename_all_fields = "camelCase",
    deny_unknown_fields
)]
pub enum ToAdapter {
    /// The handshake (P2): the adapter answers [`FromAdapter::Ready`].
    Hello {
        /// [`VERSION`].
        protocol: u64,
    },
    /// A new scenario: forget every session, register `tools` in this order, set the clock to
    /// 0 and seed every source of randomness from `seed` (P4).
    Reset {
        /// The scenario's seed.
        seed: u64,
        /// The tool catalogue, in registration order (shared: ward sends the same catalogue
        /// for every scenario). `None` on the wire only (version 2): the catalogue of the last
        /// `reset` this process was sent, left out for an adapter whose `ready` says
        /// `catalogueKept` (P2).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tools: Option<Arc<[ToolDescription]>>,
        /// For a durable runtime (version 2): the directory its store lives in, empty at a
        /// seed's first reset and kept across that seed's crashes (P8).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        store_dir: Option<String>,
    },
    /// Start a run of `session` (R14).
    StartRun(StartRun),
    /// Move the clock forward to the first instant at or before `to_ms` at which a timer is
    /// due (or to `to_ms`), fire that instant's timers, and report (P3).
    Advance {
        /// Virtual ms since `reset`.
        to_ms: u64,
    },
    /// The model's reply to a request.
    ModelReply {
        /// The request it answers.
        request_id: String,
        /// The reply's text.
        text: String,
        /// Its calls, argument text raw.
        calls: Vec<ToolCall>,
    },
    /// The provider's error for a request (R21).
    ModelError {
        /// The request it answers.
        request_id: String,
        /// Which failure.
        kind: ProviderFailure,
        /// The provider's message.
        message: String,
        /// The provider's `retry-after`, in ms.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        retry_after_ms: Option<u64>,
    },
    /// A tool body returns.
    BodyResult {
        /// The body, as `bodyStart` named it.
        body_id: String,
        /// What it returned.
        result: BodyOutcome,
        /// Whether ward's chart differs from before the body started.
        changed: bool,
    },
    /// A tool body throws.
    BodyPanic {
        /// The body.
        body_id: String,
    },
    /// The user answers `ask_user`.
    Answer {
        /// The question, as `question` named it.
        question_id: String,
        /// The answer; `None` for no answer.
        text: Option<String>,
    },
    /// The run's cancel signal fires.
    Cancel,
    /// Drop mode (version 2, P9): discard every object of the runtime and its store handles
    /// without closing or flushing them, as a kill would leave them.
    Crash,
    /// After a crash (version 2, P9): open the store and resume what the runtime's own model
    /// resumes.
    Recover {
        /// The secret values the runtime's configuration holds for the run it takes up: never
        /// in its store (R30), so given again as a process would read them at its start.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        secrets: Vec<String>,
    },
}

/// What a run starts with (R14); every limit is given, in the SPEC's units.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StartRun {
    /// The session's name; a session's later runs load its earlier messages.
    pub session: String,
    /// The user's prompt, raw.
    pub prompt: String,
    /// Whether the run may only read.
    pub read_only: bool,
    /// Tools switched off, by exact name.
    pub disabled_tools: Vec<String>,
    /// The configured values that must never leave the runtime (R24).
    pub secrets: Vec<String>,
    /// The run's limits.
    pub limits: WireLimits,
}

/// The limits of a run (R14, R18, R19), named as the SPEC names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WireLimits {
    /// Model requests that may return tool calls.
    pub turns_max: u64,
    /// Calls one model message may carry.
    pub calls_per_batch_max: u64,
    /// How long one provider request may take, in ms.
    pub provider_timeout_ms: u64,
    /// How long a run may go without activity, in ms.
    pub inactivity_timeout_ms: u64,
    /// Retries of a retryable provider error.
    pub provider_retries_max: u64,
}

/// One tool of the catalogue as `reset` sends it (P2).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ToolDescription {
    /// The tool's name.
    pub name: String,
    /// Its label.
    pub label: String,
    /// Its description for the model.
    pub description: String,
    /// Its `parameters` JSON Schema.
    pub parameters: Value,
    /// `read-only` or `destructive`.
    pub safety: Safety,
    /// `parallel` or `sequential`.
    pub execution_mode: ExecutionMode,
}

impl ToolDescription {
    /// A registered tool as `reset` describes it.
    pub fn of(meta: &ToolMeta) -> ToolDescription {
        ToolDescription {
            name: meta.name().to_owned(),
            label: meta.label().to_owned(),
            description: meta.description().to_owned(),
            parameters: meta.parameters().clone(),
            safety: meta.safety(),
            execution_mode: meta.execution_mode(),
        }
    }
}

/// A provider failure of R21, as the protocol names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ProviderFailure {
    /// The key was refused.
    Authentication,
    /// The key may not use the model.
    Permission,
    /// The model does not exist.
    ModelNotFound,
    /// Too many requests.
    RateLimited,
    /// The provider is down or overloaded.
    Unavailable,
    /// The provider timed out on its side.
    Timeout,
    /// The reply could not be read.
    MalformedResponse,
}

/// What a body returned: its data, or a domain error.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub enum BodyOutcome {
    /// The body's data.
    Data(Value),
    /// The body's error.
    Error(ToolError),
}

/// A message from the adapter to ward.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "camelCase",
    rename_all_fields = "camelCase",
    deny_unknown_fields
)]
pub enum FromAdapter {
    /// The answer to `hello` (P2).
    Ready {
        /// The protocol version the adapter speaks.
        protocol: u64,
        /// The runtime under test.
        runtime: RuntimeId,
        /// The rules of the SPEC the runtime promises (`"R3"`, …).
        claims: Vec<String>,
        /// Why each rule it does not claim is not claimed.
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        notes: BTreeMap<String, String>,
        /// The durable store the runtime keeps its sessions in (version 2, P7); a runtime
        /// without one is never crashed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        durable: Option<Durable>,
        /// Whether the adapter keeps the catalogue of the last `reset` it was given (version
        /// 2): ward then leaves `tools` out of a `reset` whose catalogue is that one.
        #[serde(default, skip_serializing_if = "is_false")]
        catalogue_kept: bool,
    },
    /// The runtime asks the model.
    ModelRequest {
        /// Unique within the run.
        request_id: String,
        /// The system prompt.
        system_prompt: String,
        /// How many leading messages of the previous request's transcript in this run (from
        /// this process, since its last `reset`) this one keeps unchanged (version 2): they
        /// are not sent again, and `transcript` holds only the messages after them.
        #[serde(default, skip_serializing_if = "is_zero")]
        transcript_kept: u64,
        /// The transcript sent, after the kept messages.
        transcript: Vec<Message>,
        /// The offered tools, by name, in the order offered.
        tools: Vec<String>,
    },
    /// The runtime gives up on a request (its timeout, a stop).
    ModelCancel {
        /// The request.
        request_id: String,
    },
    /// A tool body starts.
    BodyStart {
        /// Unique within the run.
        body_id: String,
        /// The call's id.
        call_id: String,
        /// The call's position in its batch.
        index: u64,
        /// The tool.
        tool: String,
        /// The parsed input the body receives.
        input: Value,
        /// The key the runtime itself hands the tool (version 2, P10), stable across crashes.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        idempotency_key: Option<String>,
    },
    /// The runtime abandons a body (a stop).
    BodyCancel {
        /// The body.
        body_id: String,
    },
    /// The runtime undoes what a failed body changed.
    Rollback {
        /// The body.
        body_id: String,
    },
    /// `ask_user` waits for the user.
    Question {
        /// Unique within the run.
        question_id: String,
        /// The body that asks.
        body_id: String,
        /// The question.
        question: String,
        /// The options offered.
        options: Vec<String>,
    },
    /// An event of R23.
    Event {
        /// The event.
        event: Event,
    },
    /// A message appended to the session store.
    Append {
        /// The message.
        message: Message,
    },
    /// The run's entry point returned.
    RunEnd {
        /// `run.completed`, `run.failed` or `run.cancelled`.
        outcome: RunEndOutcome,
        /// The failure's code.
        code: Option<String>,
        /// Batches run.
        batches: u64,
        /// Calls that got a result.
        calls: u64,
    },
    /// The run was refused at start (R14).
    StartError {
        /// Why.
        message: String,
    },
    /// Nothing more can run (P3).
    Idle {
        /// The instant reached.
        at_ms: u64,
        /// The runtime's next timer: its instant, none at all (`null`), or unknown (absent).
        #[serde(
            default,
            skip_serializing_if = "NextTimer::is_unknown",
            with = "next_timer"
        )]
        next_timer_ms: NextTimer,
    },
}

/// What `idle` says of the runtime's next timer (P3). When it names one, or says there is
/// none, ward hands over a delivery due before that timer with its instant (`atMs`) rather
/// than sending `advance` first (version 2).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum NextTimer {
    /// The adapter does not say (`nextTimerMs` absent).
    #[default]
    Unknown,
    /// No timer of the runtime is set (`nextTimerMs: null`).
    None,
    /// The earliest timer of the runtime is due at this instant, in ms.
    At(u64),
}

impl NextTimer {
    /// Whether the adapter left it unsaid.
    pub fn is_unknown(&self) -> bool {
        matches!(self, NextTimer::Unknown)
    }

    /// Whether a delivery due at `at_ms` may carry its instant: no timer of the runtime is
    /// due before it (one due at that very instant fires after the delivery, P3).
    pub fn allows(self, at_ms: u64) -> bool {
        match self {
            NextTimer::Unknown => false,
            NextTimer::None => true,
            NextTimer::At(due) => due >= at_ms,
        }
    }
}

/// `nextTimerMs` on the wire: a number, `null` for no timer, absent when unknown.
mod next_timer {
    use serde::{Deserialize, Deserializer, Serializer};

    use super::NextTimer;

    pub fn serialize<S: Serializer>(timer: &NextTimer, serializer: S) -> Result<S::Ok, S::Error> {
        match timer {
            NextTimer::At(at_ms) => serializer.serialize_u64(*at_ms),
            NextTimer::None | NextTimer::Unknown => serializer.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<NextTimer, D::Error> {
        Ok(match Option::<u64>::deserialize(deserializer)? {
            Some(at_ms) => NextTimer::At(at_ms),
            None => NextTimer::None,
        })
    }
}

fn is_false(value: &bool) -> bool {
    !*value
}

fn is_zero(count: &u64) -> bool {
    *count == 0
}

/// Where a durable runtime keeps its sessions (P7).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Durable {
    /// What the store is, e.g. `a redb file`.
    pub store: String,
    /// The exact version of the package that writes it.
    pub version: String,
    /// How the adapter drops the runtime at `crash`.
    pub drop: String,
}

/// The runtime under test (P2): its name and exact version.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuntimeId {
    /// Its name, e.g. `ai`.
    pub name: String,
    /// Its exact version, e.g. `6.0.0`.
    pub version: String,
}

/// How a run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum RunEndOutcome {
    /// The model stopped calling tools.
    #[serde(rename = "run.completed")]
    Completed,
    /// The run failed.
    #[serde(rename = "run.failed")]
    Failed,
    /// The run was cancelled.
    #[serde(rename = "run.cancelled")]
    Cancelled,
}

/// The compiled schema, once per process.
pub fn schema() -> &'static jsonschema::Validator {
    static COMPILED: LazyLock<jsonschema::Validator> = LazyLock::new(|| {
        let document: Value =
            serde_json::from_str(SCHEMA).expect("the shipped protocol schema is JSON");
        jsonschema::validator_for(&document).expect("the shipped protocol schema compiles")
    });
    &COMPILED
}

#[cfg(test)]
mod tests;

//! The transcript, the journal and the session store (R15, R16, R22, R30).
//!
//! A session is a conversation of one or more runs over one chart. Its transcript is a list
//! of [`Message`]s; its journal (R30) is the list of [`Record`]s a run commits as it goes:
//! the run's start (policy, limits, redacted prompt), each model reply, each call's result,
//! the intent of each call whose effect lives outside the store (R32), and the run's end.
//! The transcript is the journal's messages.
//!
//! Every record enters the store through the run's exact-value guard, and the user's message
//! only after the full redactor (R15): the store never holds the raw prompt.
//!
//! The run driver commits a run in **steps**, each one call of [`SessionStore::commit`]: the
//! start and the prompt; a reply with calls; each intent; a batch's results (with the chart
//! when a write changed it, R31); the end, with whatever the run entered last (a reply
//! without calls, the `ABORTED` results past the turn limit, a stopped batch's results). A
//! store that keeps its records across a crash ([`crate::durable::DurableStore`]) lets
//! [`Session::resume`](crate::driver::Session::resume) take a cut run up again (R33, R34).
//! [`MemoryStore`] keeps them in memory, for tests and plain campaigns: it survives the loss
//! of a [`Session`](crate::driver::Session) but not of the process.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::chart::ChartState;
use crate::envelope::ToolResult;
use crate::tool::ToolCall;

/// One record of the transcript. Equality is total (`Eq`): two messages are equal exactly
/// when every field is.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "camelCase")]
pub enum Message {
    /// The user's prompt, redacted.
    User {
        /// The redacted text.
        text: String,
    },
    /// A model reply: text and the calls of one batch.
    Assistant {
        /// The reply's text.
        text: String,
        /// The calls, as sent (ids, names and argument text guarded); shared with the
        /// `assistant.message.completed` event that announced them.
        calls: Arc<[ToolCall]>,
    },
    /// The result of one call.
    #[serde(rename_all = "camelCase")]
    Tool {
        /// The call's id (shared with the `tool.finished` event).
        call_id: Arc<str>,
        /// The tool the call named (shared with the `tool.finished` event).
        name: Arc<str>,
        /// The envelope.
        result: ToolResult,
    },
}

/// The limits a run started with (R34 keeps them on resume), as journaled; converted from
/// and to the driver's `Limits`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StoredLimits {
    /// `turns_max`.
    pub turns_max: u32,
    /// `calls_per_batch_max`.
    pub calls_per_batch_max: u32,
    /// `provider_timeout_ms`.
    pub provider_timeout_ms: u64,
    /// `inactivity_timeout_ms`.
    pub inactivity_timeout_ms: u64,
    /// `provider_retries_max`.
    pub provider_retries_max: u32,
}

/// One record of a session's journal (R30).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "record", rename_all = "camelCase")]
pub enum Record {
    /// A run began: its policy, its limits and its prompt, redacted (R15).
    #[serde(rename_all = "camelCase")]
    RunStarted {
        /// The run's number in its session, from 0.
        run: u32,
        /// Whether the run is read-only (R11).
        read_only: bool,
        /// The tools switched off (R13), in order.
        disabled: Vec<String>,
        /// The run's limits (R19).
        limits: StoredLimits,
        /// The prompt, redacted.
        prompt: String,
    },
    /// A message entered the transcript: the prompt, a reply, or a call's result (guarded,
    /// R22).
    Message {
        /// The message.
        message: Arc<Message>,
    },
    /// The result a call of the reply before it gets if its batch runs again after a crash,
    /// journaled when the guard changed that call (R22): the journal holds only the guarded
    /// form, which is not what the model sent. A call refused as sent (R3) is refused so
    /// again; a call admitted as sent whose arguments or name were guarded gets `ABORTED`,
    /// since running its guarded form would run other input than the model's, and keeping
    /// the input as sent would put a secret's characters at rest (R30, I18). (A chart write
    /// so cut loses its change: R31 cannot run it again.)
    Settled {
        /// The call's position in its batch.
        index: u32,
        /// The result's error, guarded.
        error: crate::envelope::ToolError,
    },
    /// The body of a call whose effect lives outside the store is about to start (R32).
    #[serde(rename_all = "camelCase")]
    Intent {
        /// The call's position in its batch.
        index: u32,
        /// The call's id (guarded).
        call_id: String,
        /// The tool.
        tool: String,
    },
    /// The run ended.
    RunEnded {
        /// The run's number in its session.
        run: u32,
        /// How it ended: `completed`, `cancelled`, or the code of the error that ended it.
        outcome: String,
    },
}

/// Why a store refused or stopped (R35).
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum StoreError {
    /// The database could not be opened, or its committed data is damaged (R35).
    #[error("the session store cannot be opened: {0}")]
    Open(String),
    /// A stored record or chart is damaged (R35).
    #[error("the session store is damaged: {0}")]
    Damaged(String),
    /// A write, sync or commit failed: the store stopped (R35).
    #[error("the session store failed to commit: {0}")]
    Failed(String),
    /// An earlier failure stopped the store; nothing is acknowledged after it (R35).
    #[error("the session store stopped after an earlier failure: {0}")]
    Stopped(String),
}

/// Where sessions are kept between runs, and across crashes when the store is durable.
///
/// Messages are shared: the store keeps the very message a run enters into its transcript
/// and sends to the provider, so entering a message copies nothing. A message never changes
/// once entered. (A loaded message the guard has to redact for a later run reaches that
/// run's transcript as a redacted copy.)
pub trait SessionStore: Send {
    /// The journal of `session_id` so far (empty for a new session). A store whose data is
    /// damaged refuses it (R35).
    fn journal(&self, session_id: &str) -> Result<Vec<Record>, StoreError>;

    /// Commits `records` at the end of the journal of `session_id`, with the session's chart
    /// when `chart` is given, in one transaction (R30, R31): when this returns `Ok`, all of
    /// it is kept; when it fails, none of it is acknowledged, and the run stops as if it
    /// crashed (R35).
    fn commit(
        &mut self,
        session_id: &str,
        records: &[Record],
        chart: Option<&Arc<ChartState>>,
    ) -> Result<(), StoreError>;

    /// The chart of `session_id` as last committed, if the store keeps charts and a write
    /// committed one.
    fn chart(&self, session_id: &str) -> Result<Option<ChartState>, StoreError> {
        let _ = session_id;
        Ok(None)
    }
}

/// How many runs a journal records the start of: the next run's number.
pub fn runs_started(journal: &[Record]) -> u32 {
    let started = journal
        .iter()
        .filter(|record| matches!(record, Record::RunStarted { .. }))
        .count();
    u32::try_from(started).unwrap_or(u32::MAX)
}

/// The run a journal's last start began and no end closed, by its number from 0: the run a
/// crash cut, if any.
pub fn cut_run(journal: &[Record]) -> Option<u32> {
    let last = journal
        .iter()
        .rposition(|record| matches!(record, Record::RunStarted { .. }))?;
    let ended = journal[last..]
        .iter()
        .any(|record| matches!(record, Record::RunEnded { .. }));
    (!ended).then(|| runs_started(journal).saturating_sub(1))
}

/// The messages of a journal, in order: the transcript.
pub fn transcript(records: &[Record]) -> Vec<Arc<Message>> {
    records
        .iter()
        .filter_map(|record| match record {
            Record::Message { message } => Some(Arc::clone(message)),
            _ => None,
        })
        .collect()
}

/// A session store in memory: the journal, the transcript and the chart of every session.
#[derive(Clone, Debug, Default)]
pub struct MemoryStore {
    sessions: BTreeMap<String, Stored>,
}

#[derive(Clone, Debug, Default)]
struct Stored {
    records: Vec<Record>,
    messages: Vec<Arc<Message>>,
    chart: Option<Arc<ChartState>>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> MemoryStore {
        MemoryStore::default()
    }

    /// The messages of `session_id`.
    pub fn messages(&self, session_id: &str) -> &[Arc<Message>] {
        self.sessions
            .get(session_id)
            .map_or(&[], |stored| stored.messages.as_slice())
    }

    /// The journal of `session_id`.
    pub fn records(&self, session_id: &str) -> &[Record] {
        self.sessions
            .get(session_id)
            .map_or(&[], |stored| stored.records.as_slice())
    }
}

impl SessionStore for MemoryStore {
    fn journal(&self, session_id: &str) -> Result<Vec<Record>, StoreError> {
        Ok(self.records(session_id).to_vec())
    }

    fn commit(
        &mut self,
        session_id: &str,
        records: &[Record],
        chart: Option<&Arc<ChartState>>,
    ) -> Result<(), StoreError> {
        let stored = self.sessions.entry(session_id.to_owned()).or_default();
        for record in records {
            if let Record::Message { message } = record {
                stored.messages.push(Arc::clone(message));
            }
            stored.records.push(record.clone());
        }
        if let Some(chart) = chart {
            stored.chart = Some(Arc::clone(chart));
        }
        Ok(())
    }

    fn chart(&self, session_id: &str) -> Result<Option<ChartState>, StoreError> {
        Ok(self
            .sessions
            .get(session_id)
            .and_then(|stored| stored.chart.as_deref().cloned()))
    }
}

//! What the world records at the runtime's boundaries: one [`Record`] per observation, in
//! the order it happened, one [`RunTrace`] per run.
//!
//! Records hold values. Where a boundary repeats what it showed before (a provider request
//! resends the transcript; the chart looks the same after a read), the record holds only what
//! changed, decided by comparing values: a runtime that shares one record between places and
//! one that sends equal copies leave the same trace.

use std::borrow::Cow;
use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;
use ward_core::chart::ChartState;
use ward_core::envelope::ToolError;
use ward_core::events::Event;
use ward_core::session::Message;
use ward_core::tool::ToolCall;

/// One boundary observation.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "record", rename_all = "camelCase")]
pub enum Record {
    /// The provider received a request. To keep traces linear in the run's length, a
    /// request is recorded as a change of the previous request of the run: the transcript is
    /// the previous transcript's first `kept` messages followed by `appended` (`kept` counts
    /// the leading messages equal to the previous request's), and the system prompt and tool
    /// list are recorded only when they differ from the previous request's.
    #[serde(rename_all = "camelCase")]
    Request {
        /// Virtual ms since the run started.
        at_ms: u64,
        /// Turn, from 0.
        turn: u32,
        /// Attempt within the turn.
        attempt: u32,
        /// The system prompt, when it differs from the previous request's.
        #[serde(skip_serializing_if = "Option::is_none")]
        system_prompt: Option<String>,
        /// The offered tools, when they differ from the previous request's.
        #[serde(skip_serializing_if = "Option::is_none")]
        tools: Option<Vec<Arc<str>>>,
        /// How many messages of the previous request's transcript start this one.
        kept: usize,
        /// The messages that follow them.
        appended: Vec<Arc<Message>>,
    },
    /// The provider answered (a request dropped by a timeout or a stop has no reply).
    #[serde(rename_all = "camelCase")]
    Reply {
        /// Virtual ms.
        at_ms: u64,
        /// Turn.
        turn: u32,
        /// Attempt.
        attempt: u32,
        /// The reply's text.
        text: String,
        /// Its calls.
        calls: Arc<[ToolCall]>,
        /// The provider error instead, as a code.
        error: Option<String>,
    },
    /// A tool body started.
    #[serde(rename_all = "camelCase")]
    BodyStart {
        /// Virtual ms.
        at_ms: u64,
        /// The call's position in its batch.
        index: usize,
        /// The call id, as the body sees it.
        call_id: Arc<str>,
        /// The tool.
        tool: Arc<str>,
        /// The input the body received.
        input: Value,
    },
    /// A tool body ended (a body abandoned by a stop has no end).
    #[serde(rename_all = "camelCase")]
    BodyEnd {
        /// Virtual ms.
        at_ms: u64,
        /// The call's position in its batch.
        index: usize,
        /// The call id.
        call_id: Arc<str>,
        /// The tool.
        tool: Arc<str>,
        /// How the body ended: `ok`, the error code it returned, or `panic`. (Its data
        /// reaches the trace through `tool.finished`.)
        outcome: Cow<'static, str>,
        /// What the body returned, kept in runs with configured secret values, where R22's
        /// guard must hand it on with exactly those values replaced. The world's own product,
        /// fixed by the seed: neither in the trace file nor in its digest.
        #[serde(skip)]
        output: Option<Arc<Result<Value, ToolError>>>,
    },
    /// A runtime event.
    Event(Event),
    /// A message appended to the session store.
    Append {
        /// The message.
        message: Arc<Message>,
    },
    /// The chart's public snapshot, taken at the event with this sequence number.
    #[serde(rename_all = "camelCase")]
    Snapshot {
        /// The event's sequence number.
        seq: u64,
        /// The state; `None` when it equals the run's previous snapshot.
        #[serde(skip_serializing_if = "Option::is_none")]
        state: Option<Arc<ChartState>>,
    },
    /// The scripted user answered a question.
    #[serde(rename_all = "camelCase")]
    Answer {
        /// Virtual ms.
        at_ms: u64,
        /// The answer, or `None` for no answer.
        answer: Option<String>,
    },
    /// The run was cancelled by the scenario.
    #[serde(rename_all = "camelCase")]
    Cancel {
        /// Virtual ms.
        at_ms: u64,
    },
    /// What the runtime's entry point returned to its caller at the end of the run.
    #[serde(rename_all = "camelCase")]
    Report {
        /// How the run ended: `run.completed`, `run.failed` or `run.cancelled`.
        outcome: &'static str,
        /// The failure's code, for `run.failed`.
        code: Option<String>,
        /// Batches run, as reported.
        batches: u32,
        /// Calls that got a result, as reported.
        calls: u32,
    },
    /// The runtime died (SPEC §17 P9): a storage fault the world planned fired.
    #[serde(rename_all = "camelCase")]
    Crash {
        /// Virtual ms.
        at_ms: u64,
        /// How it died.
        how: String,
    },
    /// A fresh runtime was asked to recover the run.
    #[serde(rename_all = "camelCase")]
    Recover {
        /// Virtual ms.
        at_ms: u64,
    },
    /// Undo at the end of the session restored this state.
    Undo {
        /// The state after the undo.
        state: Arc<ChartState>,
    },
}

/// Everything seen of one run.
#[derive(Clone, Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunTrace {
    /// Session index.
    pub session: usize,
    /// Run index within the session.
    pub run: usize,
    /// The records, in the order they happened.
    pub records: Vec<Record>,
    /// Why the run did not start, if it did not.
    pub start_error: Option<String>,
}

/// Everything seen of a scenario.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Trace {
    /// The runs, in order.
    pub runs: Vec<RunTrace>,
    /// The breach of the protocol that ended the scenario (P6), if its runtime broke it: a
    /// finding whatever the runtime claims.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub protocol_violation: Option<String>,
}

//! The event stream (R23).
//!
//! Every event carries a run-wide sequence number (from 0) and the virtual time in
//! milliseconds since the run started. A run emits `run.started`,
//! `user.message.created`, then per turn `assistant.message.completed` and, per call,
//! `tool.started` (when the entry point takes the call up, in call order) and
//! `tool.finished` (with its result, in completion order), and ends with exactly one of
//! `run.completed`, `run.failed` or `run.cancelled`, after every call has its result.
//!
//! Calls that are never taken up — past the batch cap, past the turn limit, or after the
//! run was stopped — get a `tool.finished` without a `tool.started`.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use tokio::time::Instant;

use crate::envelope::{ToolError, ToolResult};
use crate::tool::ToolCall;

/// One event.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Event {
    /// Run-wide sequence number, from 0.
    pub seq: u64,
    /// Virtual milliseconds since the run started.
    pub time_ms: u64,
    /// What happened.
    #[serde(flatten)]
    pub kind: EventKind,
}

/// What happened.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum EventKind {
    /// The run started with this policy and tool list.
    #[serde(rename = "run.started", rename_all = "camelCase")]
    RunStarted {
        /// Whether the run is read-only.
        read_only: bool,
        /// The tools offered, in order (the registry's shared names).
        tools: Vec<Arc<str>>,
    },
    /// The user's message, redacted, entered the transcript.
    #[serde(rename = "user.message.created")]
    UserMessageCreated {
        /// The redacted prompt.
        text: String,
    },
    /// A model reply entered the transcript.
    #[serde(rename = "assistant.message.completed")]
    AssistantMessageCompleted {
        /// The turn, from 0.
        turn: u32,
        /// The reply's text.
        text: String,
        /// Its calls (shared with the transcript's message).
        calls: Arc<[ToolCall]>,
    },
    /// The entry point took a call up.
    #[serde(rename = "tool.started", rename_all = "camelCase")]
    ToolStarted {
        /// The call's position in its batch.
        index: usize,
        /// Its id.
        call_id: Arc<str>,
        /// The tool it names.
        name: Arc<str>,
    },
    /// A call has its result.
    #[serde(rename = "tool.finished", rename_all = "camelCase")]
    ToolFinished {
        /// The call's position in its batch.
        index: usize,
        /// Its id (shared with the transcript's message).
        call_id: Arc<str>,
        /// The tool it names (shared with the transcript's message).
        name: Arc<str>,
        /// The envelope.
        result: ToolResult,
    },
    /// The model stopped calling tools.
    #[serde(rename = "run.completed")]
    RunCompleted {
        /// The final reply's text.
        text: String,
    },
    /// The run failed.
    #[serde(rename = "run.failed")]
    RunFailed {
        /// Why.
        error: ToolError,
    },
    /// The run was cancelled.
    #[serde(rename = "run.cancelled")]
    RunCancelled,
}

impl EventKind {
    /// Whether this event ends a run.
    pub fn is_terminal(&self) -> bool {
        matches!(
            self,
            EventKind::RunCompleted { .. } | EventKind::RunFailed { .. } | EventKind::RunCancelled
        )
    }
}

/// Receives a run's events. The run builds each event for its sink and keeps no copy, so the
/// sink takes it by value.
pub trait EventSink: Send {
    /// One event.
    fn emit(&mut self, event: Event);
}

impl EventSink for Vec<Event> {
    fn emit(&mut self, event: Event) {
        self.push(event);
    }
}

/// Discards events.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoEvents;

impl EventSink for NoEvents {
    fn emit(&mut self, _event: Event) {}
}

/// Numbers and times events for one run.
pub(crate) struct EventLog<'s> {
    sink: &'s mut dyn EventSink,
    seq: u64,
    epoch: Instant,
}

impl<'s> EventLog<'s> {
    pub(crate) fn new(sink: &'s mut dyn EventSink) -> EventLog<'s> {
        EventLog {
            sink,
            seq: 0,
            epoch: Instant::now(),
        }
    }

    pub(crate) fn emit(&mut self, kind: EventKind) {
        let time_ms = u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX);
        let event = Event {
            seq: self.seq,
            time_ms,
            kind,
        };
        self.seq += 1;
        self.sink.emit(event);
    }
}

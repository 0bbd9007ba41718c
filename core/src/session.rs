//! The transcript and the session store (R15, R16, R22).
//!
//! A session is a conversation of one or more runs over one chart. Its transcript is a list
//! of [`Message`]s; the store keeps it between runs. Every message enters the store through
//! the run's exact-value guard, and the user's message only after the full redactor (R15):
//! the store never holds the raw prompt.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

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

/// Where sessions are kept between runs.
///
/// Messages are shared: the store keeps the very message a run enters into its transcript
/// and sends to the provider, so entering a message copies nothing. A message never changes
/// once entered. (A loaded message the guard has to redact for a later run reaches that
/// run's transcript as a redacted copy.)
pub trait SessionStore: Send {
    /// The transcript of `session_id` so far (empty for a new session).
    fn load(&self, session_id: &str) -> Vec<Arc<Message>>;
    /// Appends one message to `session_id`.
    fn append(&mut self, session_id: &str, message: &Arc<Message>);
}

/// A session store in memory.
#[derive(Clone, Debug, Default)]
pub struct MemoryStore {
    sessions: BTreeMap<String, Vec<Arc<Message>>>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> MemoryStore {
        MemoryStore::default()
    }

    /// The messages of `session_id`.
    pub fn messages(&self, session_id: &str) -> &[Arc<Message>] {
        self.sessions.get(session_id).map_or(&[], Vec::as_slice)
    }
}

impl SessionStore for MemoryStore {
    fn load(&self, session_id: &str) -> Vec<Arc<Message>> {
        self.messages(session_id).to_vec()
    }

    fn append(&mut self, session_id: &str, message: &Arc<Message>) {
        self.sessions
            .entry(session_id.to_owned())
            .or_default()
            .push(Arc::clone(message));
    }
}

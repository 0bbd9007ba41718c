//! The model provider (R16, R18, R21): what the driver sends and what comes back.
//!
//! A [`Provider`] receives the system prompt, the transcript and the offered tools, and
//! returns text and calls (with the raw argument text, exactly as the model wrote it) or a
//! typed [`ProviderError`]. The driver applies the request timeout, the retries of
//! retryable errors and the backoff; a provider only answers.

use std::sync::Arc;

use futures::future::BoxFuture;

use crate::envelope::ToolError;
use crate::session::Message;
use crate::tool::{ToolCall, ToolMeta};

/// One request to the model.
#[derive(Clone, Copy, Debug)]
pub struct ProviderRequest<'a> {
    /// The system prompt.
    pub system_prompt: &'a str,
    /// The transcript so far: redacted and guarded. Each message is the very one the run's
    /// transcript holds (shared, never copied per request): the session store's own, except
    /// a loaded message the guard had to redact for this run.
    pub transcript: &'a [Arc<Message>],
    /// The tools offered in this run, in registration order.
    pub tools: &'a [&'a ToolMeta],
    /// The turn, from 0.
    pub turn: u32,
    /// The attempt within the turn, from 0 (retries count up).
    pub attempt: u32,
}

/// A model reply.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProviderReply {
    /// The reply's text.
    pub text: String,
    /// The tool calls of one batch; none ends the run. Shared: the runtime keeps them as
    /// they are (the transcript holds their guarded form, the same calls when clean), so a
    /// provider that also keeps them copies nothing.
    pub calls: Arc<[ToolCall]>,
}

/// How a provider request failed (R21).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ProviderErrorKind {
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
    /// The request took longer than the provider timeout.
    Timeout,
    /// The reply could not be understood.
    MalformedResponse,
}

impl ProviderErrorKind {
    /// The error code, e.g. `PROVIDER_RATE_LIMITED`.
    pub fn code(self) -> &'static str {
        match self {
            ProviderErrorKind::Authentication => "PROVIDER_AUTHENTICATION",
            ProviderErrorKind::Permission => "PROVIDER_PERMISSION",
            ProviderErrorKind::ModelNotFound => "PROVIDER_MODEL_NOT_FOUND",
            ProviderErrorKind::RateLimited => "PROVIDER_RATE_LIMITED",
            ProviderErrorKind::Unavailable => "PROVIDER_UNAVAILABLE",
            ProviderErrorKind::Timeout => "PROVIDER_TIMEOUT",
            ProviderErrorKind::MalformedResponse => "PROVIDER_MALFORMED_RESPONSE",
        }
    }

    /// Whether the driver retries it (R18).
    pub fn is_retryable(self) -> bool {
        matches!(
            self,
            ProviderErrorKind::RateLimited
                | ProviderErrorKind::Unavailable
                | ProviderErrorKind::Timeout
                | ProviderErrorKind::MalformedResponse
        )
    }

    fn recommended_action(self) -> &'static str {
        match self {
            ProviderErrorKind::Authentication => {
                "Check the provider API key in the agent settings."
            }
            ProviderErrorKind::Permission => "Check that the API key may use this model.",
            ProviderErrorKind::ModelNotFound => "Choose a model the provider offers.",
            ProviderErrorKind::RateLimited => "Wait a moment, then retry.",
            ProviderErrorKind::Unavailable | ProviderErrorKind::Timeout => "Retry later.",
            ProviderErrorKind::MalformedResponse => "Retry the request.",
        }
    }

    /// Every kind.
    pub const ALL: [ProviderErrorKind; 7] = [
        ProviderErrorKind::Authentication,
        ProviderErrorKind::Permission,
        ProviderErrorKind::ModelNotFound,
        ProviderErrorKind::RateLimited,
        ProviderErrorKind::Unavailable,
        ProviderErrorKind::Timeout,
        ProviderErrorKind::MalformedResponse,
    ];
}

/// A failed provider request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProviderError {
    /// What failed.
    pub kind: ProviderErrorKind,
    /// The provider's words (guarded before they enter any record).
    pub message: String,
    /// The provider's `retry-after`, in milliseconds.
    pub retry_after_ms: Option<u64>,
}

impl ProviderError {
    /// An error of `kind` with `message`.
    pub fn new(kind: ProviderErrorKind, message: impl Into<String>) -> ProviderError {
        ProviderError {
            kind,
            message: message.into(),
            retry_after_ms: None,
        }
    }

    /// The error as the `error` of a `run.failed` event.
    pub fn to_error(&self) -> ToolError {
        ToolError {
            retryable: self.kind.is_retryable(),
            ..ToolError::domain(
                self.kind.code(),
                self.message.clone(),
                self.kind.recommended_action(),
            )
        }
    }
}

/// A model provider.
pub trait Provider: Send {
    /// Answers one request.
    fn complete<'a>(
        &'a mut self,
        request: ProviderRequest<'a>,
    ) -> BoxFuture<'a, Result<ProviderReply, ProviderError>>;
}

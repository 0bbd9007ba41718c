//! Tools (SPEC §2, R1): frozen metadata, the tool-body trait, and what a body sees.
//!
//! A tool is declared with a [`ToolSpec`] and registered with a body implementing
//! [`ToolBody`]. Registration (in [`registry`](crate::registry)) checks the spec (R2) and
//! freezes it into a [`ToolMeta`]: its fields are private and only readable, and its schema
//! is compiled once and shared.
//!
//! Bodies are trait objects so that a caller can wrap them
//! ([`RegistryBuilder::wrap_bodies`](crate::registry::RegistryBuilder::wrap_bodies)): the
//! simulator observes and perturbs every body (latency, failures, panics, planted results)
//! without reaching inside the runtime.

use std::any::Any;
use std::fmt;
use std::sync::Arc;

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::chart::SharedChart;
use crate::deadline::Activity;
use crate::envelope::ToolError;

/// Whether a tool changes anything (R1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Safety {
    /// Reads state or external data; changes nothing.
    ReadOnly,
    /// Changes the chart, its settings or the outside world.
    Destructive,
}

impl Safety {
    /// `read-only` or `destructive`.
    pub fn as_str(self) -> &'static str {
        match self {
            Safety::ReadOnly => "read-only",
            Safety::Destructive => "destructive",
        }
    }
}

/// How calls to a tool are scheduled within one model message (R17).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum ExecutionMode {
    /// May run concurrently with the other calls of its message (the default).
    #[default]
    Parallel,
    /// Makes its whole message run one call at a time, in order.
    Sequential,
}

impl ExecutionMode {
    /// `parallel` or `sequential`.
    pub fn as_str(self) -> &'static str {
        match self {
            ExecutionMode::Parallel => "parallel",
            ExecutionMode::Sequential => "sequential",
        }
    }
}

/// A tool as declared, before registration checks it.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolSpec {
    /// `[A-Za-z0-9_-]{1,64}`, unique in the registry.
    pub name: String,
    /// A short human label.
    pub label: String,
    /// What the tool does, for the model.
    pub description: String,
    /// A JSON Schema for the arguments object.
    pub parameters: Value,
    /// Read-only or destructive.
    pub safety: Safety,
    /// Parallel (default) or sequential. A destructive tool must be sequential (R2).
    pub execution_mode: ExecutionMode,
}

/// A registered tool's frozen metadata (R1). Nothing can change it once registered.
#[derive(Debug)]
pub struct ToolMeta {
    name: Arc<str>,
    label: String,
    description: String,
    parameters: Value,
    safety: Safety,
    execution_mode: ExecutionMode,
    outside_effect: bool,
}

impl ToolMeta {
    pub(crate) fn freeze(spec: ToolSpec, outside_effect: bool) -> ToolMeta {
        ToolMeta {
            name: Arc::from(spec.name),
            label: spec.label,
            description: spec.description,
            parameters: spec.parameters,
            safety: spec.safety,
            execution_mode: spec.execution_mode,
            outside_effect,
        }
    }

    /// Whether the tool changes the world outside the session store (R32): a destructive
    /// tool registered with
    /// [`register_outside_effect`](crate::registry::RegistryBuilder::register_outside_effect),
    /// such as `code_interpreter`. Its calls are at-most-once in a durable session; every
    /// other destructive tool's effect is the chart's, and exactly-once (R31).
    pub fn has_outside_effect(&self) -> bool {
        self.outside_effect
    }

    /// The tool's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The tool's name, shared: every run that lists the tool holds this one string.
    pub fn shared_name(&self) -> &Arc<str> {
        &self.name
    }

    /// The human label.
    pub fn label(&self) -> &str {
        &self.label
    }

    /// The description offered to the model.
    pub fn description(&self) -> &str {
        &self.description
    }

    /// The arguments schema, as published.
    pub fn parameters(&self) -> &Value {
        &self.parameters
    }

    /// Read-only or destructive.
    pub fn safety(&self) -> Safety {
        self.safety
    }

    /// Parallel or sequential.
    pub fn execution_mode(&self) -> ExecutionMode {
        self.execution_mode
    }

    /// Whether the tool only reads.
    pub fn is_read_only(&self) -> bool {
        self.safety == Safety::ReadOnly
    }

    /// Whether the tool makes its batch sequential.
    pub fn is_sequential(&self) -> bool {
        self.execution_mode == ExecutionMode::Sequential
    }
}

/// One tool call as the model sent it: the raw argument text is kept so that the entry point
/// sees exactly what the model wrote (R3, R6).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The model's id for the call.
    pub id: String,
    /// The tool it names.
    pub name: String,
    /// The raw argument text.
    pub arguments: String,
}

/// A tool's domain code: runs after every check of the entry point has passed, with input
/// that satisfies the tool's schema.
///
/// Bodies return data or a domain error; the registry turns a panic into `INTERNAL_ERROR` and
/// rolls back any change a failed write made.
pub trait ToolBody: Send + Sync {
    /// Runs the tool.
    fn call<'a>(
        &'a self,
        context: &'a ToolContext,
        input: Value,
    ) -> BoxFuture<'a, Result<Value, ToolError>>;
}

impl<F> ToolBody for F
where
    F: Fn(&ToolContext, Value) -> Result<Value, ToolError> + Send + Sync,
{
    fn call<'a>(
        &'a self,
        context: &'a ToolContext,
        input: Value,
    ) -> BoxFuture<'a, Result<Value, ToolError>> {
        let result = self(context, input);
        Box::pin(async move { result })
    }
}

/// Answers `ask_user` questions. The driver pauses the inactivity deadline while it waits.
pub trait UserResponder: Send + Sync {
    /// The user's answer, or `None` when no answer can come.
    fn answer<'a>(
        &'a self,
        question: &'a str,
        options: &'a [String],
    ) -> BoxFuture<'a, Option<String>>;
}

/// A run without a user at the keyboard (the `ward call` program): every question goes
/// unanswered.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoUser;

impl UserResponder for NoUser {
    fn answer<'a>(
        &'a self,
        _question: &'a str,
        _options: &'a [String],
    ) -> BoxFuture<'a, Option<String>> {
        Box::pin(async { None })
    }
}

/// What a tool body sees of its run: the chart, the user, the call, and an optional
/// extension value a caller attached to the run (the simulator's per-run behaviour table).
pub struct ToolContext {
    pub(crate) chart: SharedChart,
    pub(crate) user: Arc<dyn UserResponder>,
    pub(crate) activity: Activity,
    pub(crate) call_id: Arc<str>,
    pub(crate) tool_name: Arc<str>,
    pub(crate) call_index: usize,
    pub(crate) extension: Option<Arc<dyn Any + Send + Sync>>,
}

impl fmt::Debug for ToolContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolContext")
            .field("call_id", &self.call_id)
            .field("tool_name", &self.tool_name)
            .field("call_index", &self.call_index)
            .finish_non_exhaustive()
    }
}

impl ToolContext {
    /// A context for one call outside any run (the `ward call` program, tests, fuzzers): no
    /// user answers `ask_user`, and no deadline applies.
    pub fn standalone(chart: SharedChart, call: &ToolCall) -> ToolContext {
        ToolContext {
            chart,
            user: Arc::new(NoUser),
            activity: Activity::new(std::time::Duration::from_secs(86_400)),
            call_id: Arc::from(call.id.as_str()),
            tool_name: Arc::from(call.name.as_str()),
            call_index: 0,
            extension: None,
        }
    }

    /// The chart of the session.
    pub fn chart(&self) -> &SharedChart {
        &self.chart
    }

    /// The id of the call being run.
    pub fn call_id(&self) -> &str {
        &self.call_id
    }

    /// The id of the call being run, shared with the call's events and result.
    pub fn shared_call_id(&self) -> &Arc<str> {
        &self.call_id
    }

    /// The name of the tool being run.
    pub fn tool_name(&self) -> &str {
        &self.tool_name
    }

    /// The call's position in its model message, from 0.
    pub fn call_index(&self) -> usize {
        self.call_index
    }

    /// The extension value attached to the run, if it is a `T`.
    pub fn extension<T: Any + Send + Sync>(&self) -> Option<&T> {
        self.extension
            .as_deref()
            .and_then(|value| value.downcast_ref::<T>())
    }

    /// Asks the user and waits for the answer; the run's inactivity deadline is paused for
    /// as long as the question is open (R19).
    pub async fn ask_user(&self, question: &str, options: &[String]) -> Option<String> {
        let _pause = self.activity.pause();
        self.user.answer(question, options).await
    }
}

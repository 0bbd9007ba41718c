//! The tool registry and its single entry point (SPEC §2, R1–R4).
//!
//! Tools are registered on a [`RegistryBuilder`], which refuses everything R2 lists, each
//! refusal a typed [`RegistryError`]:
//!
//! - an empty (after trim) name, label or description;
//! - a name outside `[A-Za-z0-9_-]{1,64}`;
//! - a `parameters` schema that is not an object schema or does not compile;
//! - a duplicate name (`TOOL_NAME_CONFLICT`);
//! - a destructive tool declared `parallel`, so two writes can never overlap.
//!
//! [`RegistryBuilder::build`] freezes the registry: metadata and compiled schemas are shared
//! behind an `Arc` and nothing hands out `&mut` access to them again (R1).
//!
//! Every call goes through [`Registry::admit`] then [`Registry::run`] (or both at once,
//! [`Registry::execute`]), which apply R3's checks in R3's order and always produce the
//! envelope of SPEC §4:
//!
//! 1. the call id: `INVALID_CALL_ID`, `DUPLICATE_CALL_ID` (per model message, [`CallIds`]);
//! 2. the name: `TOOL_NOT_FOUND`, listing the tools offered in this run;
//! 3. read-only, then switched-off: `TOOL_NOT_ALLOWED` ([`policy::check_execution`]);
//! 4. the raw size: `PAYLOAD_TOO_LARGE` over 256 KiB;
//! 5. configured secrets in the raw text and in every decoded string: `SECRET_IN_INPUT`;
//! 6. parsing and validation: `TOOL_INPUT_INVALID`;
//! 7. the body. A panic becomes `INTERNAL_ERROR`; a failed write is rolled back; a write's
//!    `stateChanged` is true exactly when the chart differs afterwards, and such a change
//!    becomes one undo step.

use std::collections::{BTreeMap, BTreeSet};
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::FutureExt;
use serde_json::Value;

use crate::envelope::{CALL_ID_CHARS_MAX, FieldError, ToolError, ToolResult};
use crate::fault::{Fault, FaultSet};
use crate::guard::SecretGuard;
use crate::policy::{self, RunPolicy};
use crate::tool::{ExecutionMode, Safety, ToolBody, ToolCall, ToolContext, ToolMeta, ToolSpec};
use crate::validation::{ARGUMENT_BYTES_MAX, FIELD_ERRORS_MAX, ToolSchema, parse_arguments};

/// The longest tool name accepted (R2).
pub const TOOL_NAME_CHARS_MAX: usize = 64;

/// Why a tool cannot be registered (R2).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RegistryError {
    /// The name is empty after trimming.
    #[error("a tool name must not be empty")]
    EmptyName,
    /// The name uses characters outside `[A-Za-z0-9_-]` or is longer than 64.
    #[error("tool name '{name}' must match [A-Za-z0-9_-]{{1,64}}")]
    InvalidName {
        /// The refused name.
        name: String,
    },
    /// The label is empty after trimming.
    #[error("tool '{name}' has an empty label")]
    EmptyLabel {
        /// The tool.
        name: String,
    },
    /// The description is empty after trimming.
    #[error("tool '{name}' has an empty description")]
    EmptyDescription {
        /// The tool.
        name: String,
    },
    /// The parameters are not a JSON Schema for an object.
    #[error("tool '{name}': parameters must be a JSON Schema object with \"type\": \"object\"")]
    ParametersNotObject {
        /// The tool.
        name: String,
    },
    /// The parameters schema does not compile.
    #[error("tool '{name}': the parameters schema does not compile: {reason}")]
    SchemaDoesNotCompile {
        /// The tool.
        name: String,
        /// What the compiler said.
        reason: String,
    },
    /// `TOOL_NAME_CONFLICT`: the name is already registered.
    #[error("TOOL_NAME_CONFLICT: a tool named '{name}' is already registered")]
    NameConflict {
        /// The name.
        name: String,
    },
    /// A destructive tool was declared parallel; writes must be sequential.
    #[error("tool '{name}' is destructive and must be declared sequential, not parallel")]
    DestructiveParallel {
        /// The tool.
        name: String,
    },
    /// A read-only tool was declared to change the world outside the store (R32).
    #[error("tool '{name}' is read-only and cannot declare an effect outside the store")]
    OutsideEffectReadOnly {
        /// The tool.
        name: String,
    },
}

impl RegistryError {
    /// `TOOL_NAME_CONFLICT` for a duplicate, else `INVALID_TOOL_DEFINITION`.
    pub fn code(&self) -> &'static str {
        match self {
            RegistryError::NameConflict { .. } => "TOOL_NAME_CONFLICT",
            _ => "INVALID_TOOL_DEFINITION",
        }
    }
}

/// A registered tool: frozen metadata, compiled schema and body.
pub struct Tool {
    meta: ToolMeta,
    schema: ToolSchema,
    body: Arc<dyn ToolBody>,
}

impl std::fmt::Debug for Tool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tool")
            .field("meta", &self.meta)
            .finish_non_exhaustive()
    }
}

impl Tool {
    /// The frozen metadata.
    pub fn meta(&self) -> &ToolMeta {
        &self.meta
    }

    /// The compiled schema.
    pub fn schema(&self) -> &ToolSchema {
        &self.schema
    }

    /// The tool's name.
    pub fn name(&self) -> &str {
        self.meta.name()
    }
}

/// Collects tools, checks each (R2), and freezes them into a [`Registry`].
#[derive(Default)]
pub struct RegistryBuilder {
    tools: Vec<Tool>,
    by_name: BTreeMap<String, usize>,
}

impl RegistryBuilder {
    /// An empty builder.
    pub fn new() -> RegistryBuilder {
        RegistryBuilder::default()
    }

    /// Checks `spec` (R2), compiles its schema once and adds it with `body`.
    ///
    /// ```
    /// use serde_json::json;
    /// use ward_core::registry::{RegistryBuilder, RegistryError};
    /// use ward_core::tool::{ExecutionMode, Safety, ToolContext, ToolSpec};
    /// let spec = ToolSpec {
    ///     name: "clear_everything".into(),
    ///     label: "Clear".into(),
    ///     description: "Clears the chart.".into(),
    ///     parameters: json!({"type": "object"}),
    ///     safety: Safety::Destructive,
    ///     execution_mode: ExecutionMode::Parallel,
    /// };
    /// let body = |_: &ToolContext, _| Ok(json!(null));
    /// let refused = RegistryBuilder::new().register(spec, body).unwrap_err();
    /// assert!(matches!(refused, RegistryError::DestructiveParallel { .. }));
    /// ```
    pub fn register(
        &mut self,
        spec: ToolSpec,
        body: impl ToolBody + 'static,
    ) -> Result<(), RegistryError> {
        self.register_shared(spec, Arc::new(body))
    }

    /// [`register`](Self::register) with a body already behind an `Arc`.
    pub fn register_shared(
        &mut self,
        spec: ToolSpec,
        body: Arc<dyn ToolBody>,
    ) -> Result<(), RegistryError> {
        self.add(spec, body, false)
    }

    /// [`register`](Self::register) for a destructive tool whose effect lives outside the
    /// session store (R32: `code_interpreter`, a payment, an e-mail): in a durable session
    /// its intent is committed before its body starts, and a call cut by a crash after that
    /// is never run again. A read-only tool has no effect to declare: it is refused
    /// ([`RegistryError::OutsideEffectReadOnly`]).
    pub fn register_outside_effect(
        &mut self,
        spec: ToolSpec,
        body: impl ToolBody + 'static,
    ) -> Result<(), RegistryError> {
        if spec.safety == Safety::ReadOnly {
            return Err(RegistryError::OutsideEffectReadOnly { name: spec.name });
        }
        self.add(spec, Arc::new(body), true)
    }

    fn add(
        &mut self,
        spec: ToolSpec,
        body: Arc<dyn ToolBody>,
        outside_effect: bool,
    ) -> Result<(), RegistryError> {
        check_spec(&spec)?;
        if self.by_name.contains_key(&spec.name) {
            return Err(RegistryError::NameConflict { name: spec.name });
        }
        let schema = ToolSchema::compile(&spec.parameters).map_err(|error| {
            RegistryError::SchemaDoesNotCompile {
                name: spec.name.clone(),
                reason: error.reason,
            }
        })?;
        self.by_name.insert(spec.name.clone(), self.tools.len());
        self.tools.push(Tool {
            meta: ToolMeta::freeze(spec, outside_effect),
            schema,
            body,
        });
        Ok(())
    }

    /// Wraps every body registered so far: `wrap` receives the tool's metadata and its body
    /// and returns the body to use. The simulator observes and perturbs tools this way.
    pub fn wrap_bodies(
        &mut self,
        mut wrap: impl FnMut(&ToolMeta, Arc<dyn ToolBody>) -> Arc<dyn ToolBody>,
    ) {
        for tool in &mut self.tools {
            tool.body = wrap(&tool.meta, Arc::clone(&tool.body));
        }
    }

    /// Freezes the registry.
    pub fn build(self) -> Registry {
        Registry {
            inner: Arc::new(RegistryInner {
                tools: self.tools,
                by_name: self.by_name,
            }),
        }
    }
}

fn check_spec(spec: &ToolSpec) -> Result<(), RegistryError> {
    if spec.name.trim().is_empty() {
        return Err(RegistryError::EmptyName);
    }
    let name_is_valid = spec.name.len() <= TOOL_NAME_CHARS_MAX
        && spec
            .name
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'-');
    if !name_is_valid {
        return Err(RegistryError::InvalidName {
            name: spec.name.clone(),
        });
    }
    let name = || spec.name.clone();
    if spec.label.trim().is_empty() {
        return Err(RegistryError::EmptyLabel { name: name() });
    }
    if spec.description.trim().is_empty() {
        return Err(RegistryError::EmptyDescription { name: name() });
    }
    let declares_object = spec.parameters.get("type").and_then(Value::as_str) == Some("object");
    if !declares_object {
        return Err(RegistryError::ParametersNotObject { name: name() });
    }
    if spec.safety == Safety::Destructive && spec.execution_mode == ExecutionMode::Parallel {
        return Err(RegistryError::DestructiveParallel { name: name() });
    }
    Ok(())
}

/// The frozen registry. Cloning shares it.
#[derive(Clone, Debug)]
pub struct Registry {
    inner: Arc<RegistryInner>,
}

#[derive(Debug)]
struct RegistryInner {
    tools: Vec<Tool>,
    by_name: BTreeMap<String, usize>,
}

/// Per-message call id bookkeeping for `INVALID_CALL_ID` and `DUPLICATE_CALL_ID`.
#[derive(Debug, Default, Clone)]
pub struct CallIds {
    seen: BTreeSet<String>,
}

impl CallIds {
    /// Checks `id` against the earlier ids of the same message and remembers it.
    pub fn check(&mut self, id: &str) -> Result<(), ToolError> {
        if id.is_empty() || id.chars().count() > CALL_ID_CHARS_MAX {
            return Err(ToolError::invalid_call_id());
        }
        if !self.seen.insert(id.to_owned()) {
            return Err(ToolError::duplicate_call_id());
        }
        Ok(())
    }
}

/// What the entry point needs to know about the run a call belongs to.
#[derive(Debug, Clone, Copy)]
pub struct CallScope<'a> {
    /// The run's policy.
    pub policy: &'a RunPolicy,
    /// The names offered to the run, in order, for `TOOL_NOT_FOUND`'s hint.
    pub offered: &'a [&'a str],
    /// The run's exact-value guard.
    pub guard: &'a SecretGuard,
    /// The run's faults (SPEC §11); empty outside the simulator.
    pub faults: FaultSet,
}

/// A call that passed every check of R3 and may run.
#[derive(Debug)]
pub struct Admitted<'r> {
    tool: &'r Tool,
    input: Value,
    /// The faults of the run it was admitted in, for its body's step (SPEC §11).
    faults: FaultSet,
}

impl Admitted<'_> {
    /// The tool to run.
    pub fn tool(&self) -> &Tool {
        self.tool
    }

    /// The parsed input.
    pub fn input(&self) -> &Value {
        &self.input
    }
}

impl Registry {
    /// The tools, in registration order.
    pub fn tools(&self) -> impl Iterator<Item = &Tool> {
        self.inner.tools.iter()
    }

    /// The tools a run with `policy` offers, in registration order (R4): resolution, R12's
    /// first check and R13, by [`policy::offers`].
    ///
    /// ```
    /// use ward_core::chart::tools::{CatalogueOptions, registry};
    /// use ward_core::policy::RunPolicy;
    /// let registry = registry(CatalogueOptions::default()).unwrap();
    /// let offered = registry.offered(&RunPolicy::read_only());
    /// assert!(offered.iter().all(|tool| tool.meta().is_read_only()));
    /// assert!(offered.len() < registry.len());
    /// ```
    pub fn offered(&self, policy: &RunPolicy) -> Vec<&Tool> {
        self.tools()
            .filter(|tool| policy::offers(tool.meta(), policy))
            .collect()
    }

    /// The tool named `name`.
    pub fn get(&self, name: &str) -> Option<&Tool> {
        self.inner
            .by_name
            .get(name)
            .map(|&index| &self.inner.tools[index])
    }

    /// The number of tools.
    pub fn len(&self) -> usize {
        self.inner.tools.len()
    }

    /// Whether the registry is empty.
    pub fn is_empty(&self) -> bool {
        self.inner.tools.is_empty()
    }

    /// R3 checks 1–6, in order. `Err` is the failure to return for the call.
    pub fn admit<'r>(
        &'r self,
        scope: &CallScope<'_>,
        ids: &mut CallIds,
        call: &ToolCall,
    ) -> Result<Admitted<'r>, ToolError> {
        ids.check(&call.id)?;
        let tool = self
            .get(&call.name)
            .ok_or_else(|| ToolError::tool_not_found(scope.offered.iter().copied()))?;
        execution_verdict(
            scope,
            tool.meta(),
            policy::check_execution(tool.meta(), scope.policy),
        )?;
        if call.arguments.len() > ARGUMENT_BYTES_MAX {
            return Err(ToolError::payload_too_large(ARGUMENT_BYTES_MAX));
        }
        if scope.guard.finds_in(&call.arguments) {
            return Err(ToolError::secret_in_input());
        }
        let input = parse_arguments(&call.arguments)
            .map_err(|error| ToolError::input_invalid(vec![error]))?;
        if scope.guard.finds_in_value(&input) {
            return Err(ToolError::secret_in_input());
        }
        let verdict = tool
            .schema
            .validate_at_most(&input, field_errors_max(scope));
        let verdict = verdict.map_err(|errors| echo_values(scope, &input, errors));
        validation_verdict(scope, verdict).map_err(ToolError::input_invalid)?;
        Ok(Admitted {
            tool,
            input,
            faults: scope.faults,
        })
    }

    /// R3 step 7: runs an admitted call's body. Catches a panic as `INTERNAL_ERROR`, rolls a
    /// failed write back, and reports `stateChanged` truthfully.
    pub async fn run(&self, admitted: Admitted<'_>, context: &ToolContext) -> ToolResult {
        let Admitted {
            tool,
            input,
            faults,
        } = admitted;
        let checkpoint = (!tool.meta.is_read_only()).then(|| context.chart.begin());
        let caught = AssertUnwindSafe(tool.body.call(context, input))
            .catch_unwind()
            .await;
        let outcome = caught.unwrap_or_else(|_panic| Err(ToolError::internal()));
        match (outcome, checkpoint) {
            (Ok(data), Some(checkpoint)) => {
                ToolResult::success(data, context.chart.commit(checkpoint))
            }
            (Ok(data), None) => ToolResult::success(data, false),
            (Err(error), Some(checkpoint)) => {
                if !crate::fault!(faults, Fault::PartialWriteOnError) {
                    context.chart.rollback(checkpoint);
                }
                ToolResult::failure(error)
            }
            (Err(error), None) => ToolResult::failure(error),
        }
    }

    /// One call outside any run (the `ward call` program, tests, fuzzers): the entry point with
    /// `policy`'s offer, the guard of `secrets`, a fresh call id record and a context with no
    /// user and no deadline. Faults are off.
    pub async fn execute_standalone(
        &self,
        policy: &RunPolicy,
        guard: &SecretGuard,
        chart: &crate::chart::SharedChart,
        call: &ToolCall,
    ) -> ToolResult {
        let offered: Vec<&str> = (self.offered(policy).iter())
            .map(|tool| tool.name())
            .collect();
        let scope = CallScope {
            policy,
            offered: &offered,
            guard,
            faults: FaultSet::EMPTY,
        };
        let context = ToolContext::standalone(chart.clone(), call);
        self.execute(&scope, &mut CallIds::default(), call, &context)
            .await
    }

    /// The whole entry point: [`admit`](Self::admit), then [`run`](Self::run).
    pub async fn execute(
        &self,
        scope: &CallScope<'_>,
        ids: &mut CallIds,
        call: &ToolCall,
        context: &ToolContext,
    ) -> ToolResult {
        match self.admit(scope, ids, call) {
            Ok(admitted) => self.run(admitted, context).await,
            Err(error) => ToolResult::failure(error),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Seeded bugs (SPEC §11): each takes the correct value and returns the broken one when its
// fault is on in the call's scope.

/// `readonly-no-exec-check` (I2), `disabled-still-runs` (I3), `readonly-blocks-reads` (I13):
/// R3's third check, broken three ways: a read-only run does not refuse writes at execution
/// (only the list is filtered); switched-off tools run; a read-only run refuses every
/// sequential tool as if it wrote, so `ask_user`, which only reads, is refused. Takes the
/// correct verdict of [`policy::check_execution`].
fn execution_verdict(
    scope: &CallScope<'_>,
    tool: &ToolMeta,
    verdict: Result<(), ToolError>,
) -> Result<(), ToolError> {
    let policy = scope.policy;
    if crate::fault!(scope.faults, Fault::ReadonlyNoExecCheck) {
        let writable = RunPolicy {
            read_only: false,
            disabled: policy.disabled.clone(),
        };
        return policy::check_execution(tool, &writable);
    }
    if crate::fault!(scope.faults, Fault::DisabledStillRuns) {
        let all_on = RunPolicy {
            read_only: policy.read_only,
            disabled: BTreeSet::new(),
        };
        return policy::check_execution(tool, &all_on);
    }
    if crate::fault!(scope.faults, Fault::ReadonlyBlocksReads)
        && policy.read_only
        && tool.is_sequential()
    {
        return Err(ToolError::not_allowed_read_only(tool.name()));
    }
    verdict
}

/// `error-limit-six` (I4): one field error more than R6's limit is reported.
fn field_errors_max(scope: &CallScope<'_>) -> usize {
    if crate::fault!(scope.faults, Fault::ErrorLimitSix) {
        return FIELD_ERRORS_MAX + 1;
    }
    FIELD_ERRORS_MAX
}

/// `error-echoes-value` (I4): each field error's message starts with the input value at its
/// path (`"sk-…" must be a number`), quoting whatever the model sent.
fn echo_values(scope: &CallScope<'_>, input: &Value, errors: Vec<FieldError>) -> Vec<FieldError> {
    if !crate::fault!(scope.faults, Fault::ErrorEchoesValue) {
        return errors;
    }
    errors
        .into_iter()
        .map(|mut error| {
            let pointer = if error.path == "/" { "" } else { &error.path };
            let value = input.pointer(pointer).unwrap_or(input);
            error.message = format!("{value} {}", error.message);
            error
        })
        .collect()
}

/// `validate-after-domain` (I5): the validation verdict does not gate the body. Takes the
/// verdict and returns `Ok` when the fault is on, so the body runs on input its schema
/// refuses and its own result, whatever it is, goes back to the model.
fn validation_verdict<E>(scope: &CallScope<'_>, verdict: Result<(), E>) -> Result<(), E> {
    if crate::fault!(scope.faults, Fault::ValidateAfterDomain) {
        return Ok(());
    }
    verdict
}

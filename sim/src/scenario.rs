//! Scenarios (SPEC §10): everything one simulated execution needs, as versioned JSON.
//!
//! A scenario holds sessions of one or more runs; each run has its prompt, configured
//! secrets, read-only flag, switched-off tools and limits, the provider's script per turn,
//! the tool behaviours, the scripted user's answers and an optional cancel time. The planted
//! secrets are listed once, with labels, and the seeded bug (if any) is part of the file, so
//! a file alone replays a failure.
//!
//! Generated and scripted runs go through the same path: the generator writes a
//! [`Scenario`], and a shrunk generated run is just a smaller scenario file.
//!
//! Files are checked against the JSON Schema that ships with ward (`sim/scenario.schema.json`,
//! embedded as [`SCENARIO_SCHEMA`]) before they are read; a bad file is refused with the JSON
//! Pointer of the fault.
//!
//! # Example
//!
//! ```json
//! {
//!   "version": 1,
//!   "sessions": [{"runs": [{
//!     "prompt": "Remove every drawing.",
//!     "readOnly": true,
//!     "turns": [{"calls": [{"id": "call_1", "name": "drawings_clear", "arguments": "{}"}]}]
//!   }]}]
//! }
//! ```

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use serde::{Deserialize, Serialize};
use ward_core::driver::Limits;
use ward_core::fault::Fault;
use ward_core::provider::ProviderErrorKind;

/// The format version this build reads and writes.
pub const SCENARIO_VERSION: u32 = 1;

/// The scenario format's JSON Schema.
pub const SCENARIO_SCHEMA: &str = include_str!("../scenario.schema.json");

/// One simulated execution.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Scenario {
    /// Always [`SCENARIO_VERSION`].
    pub version: u32,
    /// The seed that generated it, if it was generated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// What the scenario shows, for hand-written files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The seeded bug to switch on, by catalogue name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bug: Option<String>,
    /// The seed of every session's chart market.
    #[serde(default = "default_chart_seed")]
    pub chart_seed: u64,
    /// Register the opt-in `code_interpreter`.
    #[serde(default, skip_serializing_if = "is_false")]
    pub code_interpreter: bool,
    /// Every planted secret, labelled. Runs configure some of them by label; prompts carry
    /// them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub secrets: Vec<PlantedSecret>,
    /// The sessions, each a conversation of runs over its own chart.
    pub sessions: Vec<SessionScript>,
    /// What a hand-written scenario expects (checked by `cargo test`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect: Option<Expectation>,
}

fn default_chart_seed() -> u64 {
    42
}

fn is_false(value: &bool) -> bool {
    !*value
}

fn is_zero(value: &u64) -> bool {
    *value == 0
}

/// The shape of a planted secret (SPEC §7 and §10).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SecretShape {
    /// A configured exact value (provider key, search key).
    Configured,
    /// The credential after `Bearer` or `Basic`.
    Credential,
    /// The body of an `sk-`/`sk_` key or another token family.
    KeyBody,
    /// A user name inside a home path.
    UserName,
    /// The password of URL userinfo.
    UrlPassword,
}

/// A labelled secret part.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PlantedSecret {
    /// A unique label, e.g. `provider-key` or `bearer-2`.
    pub label: String,
    /// The secret text; high-entropy, so ordinary text never contains it by chance.
    pub value: String,
    /// Its shape.
    pub shape: SecretShape,
}

/// A session: runs in order over one chart.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SessionScript {
    /// The runs.
    pub runs: Vec<RunScript>,
}

/// One run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RunScript {
    /// The user's prompt, raw.
    pub prompt: String,
    /// Whether the run is read-only.
    #[serde(default, skip_serializing_if = "is_false")]
    pub read_only: bool,
    /// Tools switched off.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub disabled_tools: Vec<String>,
    /// Labels of the planted secrets this run configures as exact values.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub secrets: Vec<String>,
    /// Limits; missing ones take their defaults.
    #[serde(default, skip_serializing_if = "LimitsScript::is_default")]
    pub limits: LimitsScript,
    /// Cancel the run this many virtual milliseconds after it starts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancel_at_ms: Option<u64>,
    /// The user's answers to `ask_user`, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub answers: Vec<Answer>,
    /// Behaviour of tool bodies, by tool name. Shared with the bodies of every execution of
    /// the run (a campaign executes a script more than once); edit it with `Arc::make_mut`.
    #[serde(default, skip_serializing_if = "no_behaviours")]
    pub tools: Arc<BTreeMap<Arc<str>, ToolBehaviour>>,
    /// The provider's script: one step per provider request.
    pub turns: Vec<Turn>,
}

fn no_behaviours(tools: &Arc<BTreeMap<Arc<str>, ToolBehaviour>>) -> bool {
    tools.is_empty()
}

/// Limits of a run; each missing one takes its default.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LimitsScript {
    /// `turns_max`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turns_max: Option<u32>,
    /// `calls_per_batch_max`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calls_per_batch_max: Option<u32>,
    /// `provider_timeout_ms`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_timeout_ms: Option<u64>,
    /// `inactivity_timeout_ms`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inactivity_timeout_ms: Option<u64>,
    /// `provider_retries_max`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_retries_max: Option<u32>,
}

impl LimitsScript {
    fn is_default(&self) -> bool {
        *self == LimitsScript::default()
    }

    /// The limits, each missing one taken from `defaults` (the runtime's, when a run is
    /// executed; the SPEC's, when it is judged).
    pub fn resolve(&self, defaults: Limits) -> Limits {
        Limits {
            turns_max: self.turns_max.unwrap_or(defaults.turns_max),
            calls_per_batch_max: self
                .calls_per_batch_max
                .unwrap_or(defaults.calls_per_batch_max),
            provider_timeout_ms: self
                .provider_timeout_ms
                .unwrap_or(defaults.provider_timeout_ms),
            inactivity_timeout_ms: self
                .inactivity_timeout_ms
                .unwrap_or(defaults.inactivity_timeout_ms),
            provider_retries_max: self
                .provider_retries_max
                .unwrap_or(defaults.provider_retries_max),
        }
    }
}

/// One answer of the scripted user.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Answer {
    /// The answer; `null` leaves the question unanswered.
    pub text: Option<String>,
    /// How long the user takes.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub delay_ms: u64,
    /// The user cancels the run instead of answering (R20: the batch stops there).
    #[serde(default, skip_serializing_if = "is_false")]
    pub cancels: bool,
}

/// What a tool body does besides its own work.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ToolBehaviour {
    /// Virtual milliseconds the body takes before it runs.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub latency_ms: u64,
    /// What it does then.
    #[serde(default, skip_serializing_if = "Effect::is_none")]
    pub effect: Effect,
}

/// The planted effect of a tool body.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "kind", deny_unknown_fields)]
pub enum Effect {
    /// The body runs normally.
    #[default]
    None,
    /// The body runs, then fails: a write that fails after part of its work.
    Fail,
    /// The body panics.
    Panic,
    /// The result carries the planted secret with this label: in its data, or, when `fail`,
    /// in the message of the error the body fails with.
    LeakSecret {
        /// The secret's label.
        label: String,
        /// Fail, with the secret in the error message.
        #[serde(default, skip_serializing_if = "is_false")]
        fail: bool,
        /// Where the secret stands in the text that carries it.
        #[serde(default, skip_serializing_if = "LeakAt::is_middle")]
        at: LeakAt,
    },
    /// The result carries an instruction to call a tool.
    Inject {
        /// The tool the instruction names.
        tool: String,
        /// The arguments it asks for (no backquote).
        arguments: String,
    },
}

/// Where a leaked secret stands in the text of a result (R22's guard must replace exactly it,
/// also at a text's start and end). Data placed at `Middle`, `Whole`, `Start`, `End` or
/// `Tail` carries the text twice: as the member `debug` and as the last item of the list
/// `notes`, after one that carries nothing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LeakAt {
    /// Inside a sentence: `connected with key <secret>`.
    #[default]
    Middle,
    /// The whole text.
    Whole,
    /// At the text's start.
    Start,
    /// At the text's end.
    End,
    /// All but its first character, at the text's end: a fragment of 7 or more characters.
    Tail,
    /// As an object key of the data, beside keys `[REDACTED]` and `[REDACTED] (2)` (for an
    /// error, as `Middle`).
    Key,
    /// As the first key of the data, another member carrying it at its end (for an error, as
    /// `End`).
    FirstKey,
    /// As an item of a list in the data, between two that carry nothing (for an error, as
    /// `Whole`).
    Item,
}

impl LeakAt {
    /// Every placement.
    pub const ALL: [LeakAt; 8] = [
        LeakAt::Middle,
        LeakAt::Whole,
        LeakAt::Start,
        LeakAt::End,
        LeakAt::Tail,
        LeakAt::Key,
        LeakAt::FirstKey,
        LeakAt::Item,
    ];

    fn is_middle(&self) -> bool {
        *self == LeakAt::Middle
    }

    /// The text that carries `secret` here.
    pub fn text(self, secret: &str) -> String {
        match self {
            LeakAt::Middle | LeakAt::Key => format!("connected with key {secret}"),
            LeakAt::Whole | LeakAt::Item => secret.to_owned(),
            LeakAt::Start => format!("{secret} was refused"),
            LeakAt::End | LeakAt::FirstKey => format!("key={secret}"),
            LeakAt::Tail => {
                let tail = secret
                    .char_indices()
                    .nth(1)
                    .map_or("", |(at, _)| &secret[at..]);
                format!("key=?{tail}")
            }
        }
    }
}

impl Effect {
    fn is_none(&self) -> bool {
        *self == Effect::None
    }
}

/// One provider step: a reply (text and calls) or an error, after an optional delay.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Turn {
    /// Virtual milliseconds before the provider answers.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub delay_ms: u64,
    /// Fail the request instead of replying.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ProviderFailure>,
    /// The reply's text.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub text: String,
    /// The reply's calls.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub calls: Vec<CallScript>,
    /// Calls decided by what the provider received.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub react: Vec<Reaction>,
}

/// A provider error.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ProviderFailure {
    /// What failed.
    pub kind: FailureKind,
    /// The provider's `retry-after`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_ms: Option<u64>,
    /// The label of a planted secret the error's message carries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leak: Option<String>,
}

/// The provider error kinds of R21.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[allow(missing_docs)]
pub enum FailureKind {
    Authentication,
    Permission,
    ModelNotFound,
    RateLimited,
    Unavailable,
    Timeout,
    MalformedResponse,
}

impl FailureKind {
    /// The core's kind.
    pub fn to_core(self) -> ProviderErrorKind {
        match self {
            FailureKind::Authentication => ProviderErrorKind::Authentication,
            FailureKind::Permission => ProviderErrorKind::Permission,
            FailureKind::ModelNotFound => ProviderErrorKind::ModelNotFound,
            FailureKind::RateLimited => ProviderErrorKind::RateLimited,
            FailureKind::Unavailable => ProviderErrorKind::Unavailable,
            FailureKind::Timeout => ProviderErrorKind::Timeout,
            FailureKind::MalformedResponse => ProviderErrorKind::MalformedResponse,
        }
    }
}

/// One call the provider sends.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CallScript {
    /// The call id.
    pub id: String,
    /// The tool name.
    pub name: String,
    /// The raw argument text.
    #[serde(default)]
    pub arguments: String,
    /// Corrected arguments, sent by a later `retry-invalid` reaction if this call's input is
    /// refused as invalid.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

/// A reaction to the results the provider received for its previous reply.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Reaction {
    /// Resend, corrected, every call whose input was refused as invalid (`<id>-fix`).
    RetryInvalid,
    /// Obey an instruction injected through a tool result.
    FollowInjection,
}

/// What a hand-written scenario expects of the correct core, and the bug it catches.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Expectation {
    /// Per session, per run: the terminal event and each batch's result codes (`OK` for a
    /// success).
    pub runs: Vec<Vec<ExpectedRun>>,
    /// The bug this scenario must catch, and the invariant that catches it.
    pub catches: Catch,
}

/// The expected end of one run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ExpectedRun {
    /// `run.completed`, `run.failed` or `run.cancelled`.
    pub terminal: String,
    /// The failure code, for `run.failed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// Result codes per batch, in call order.
    pub batches: Vec<Vec<String>>,
}

/// A bug and its invariant.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Catch {
    /// The catalogue name.
    pub bug: String,
    /// The invariant, e.g. `I2`.
    pub invariant: String,
}

/// Why a scenario file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    /// Not JSON.
    #[error("{path}: not valid JSON: {reason}")]
    Json {
        /// The file.
        path: String,
        /// The parser's reason, with line and column.
        reason: String,
    },
    /// Does not match the file's schema (the scenario schema, or a crash plan's).
    #[error("{path}: at {pointer}: {reason}")]
    Schema {
        /// The file.
        path: String,
        /// The JSON Pointer of the fault.
        pointer: String,
        /// What is wrong.
        reason: String,
    },
    /// Matches the schema but cannot be used.
    #[error("{path}: at {pointer}: {reason}")]
    Invalid {
        /// The file.
        path: String,
        /// The JSON Pointer of the fault.
        pointer: String,
        /// What is wrong.
        reason: String,
    },
}

impl Scenario {
    /// Reads a scenario from JSON text; `path` names the source in errors.
    pub fn from_json(text: &str, path: &str) -> Result<Scenario, ScenarioError> {
        static VALIDATOR: OnceLock<Result<jsonschema::Validator, String>> = OnceLock::new();
        let value = parse_json(text, path)?;
        let scenario: Scenario =
            read_checked(value, path, (&VALIDATOR, SCENARIO_SCHEMA, "scenario"))?;
        scenario.check(path)?;
        Ok(scenario)
    }

    /// The scenario as pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    /// The seeded bug, parsed.
    pub fn fault(&self) -> Result<Option<Fault>, String> {
        fault_named(self.bug.as_deref())
    }

    /// The planted secret labelled `label`.
    pub fn secret(&self, label: &str) -> Option<&PlantedSecret> {
        self.secrets.iter().find(|secret| secret.label == label)
    }

    /// Checks what the schema cannot: labels refer to planted secrets, the bug exists,
    /// limits are in range.
    fn check(&self, path: &str) -> Result<(), ScenarioError> {
        let invalid = |pointer: String, reason: String| ScenarioError::Invalid {
            path: path.to_owned(),
            pointer,
            reason,
        };
        if self.version != SCENARIO_VERSION {
            return Err(invalid(
                "/version".into(),
                format!(
                    "version {} is not supported; this ward reads {SCENARIO_VERSION}",
                    self.version
                ),
            ));
        }
        if let Err(reason) = self.fault() {
            return Err(invalid("/bug".into(), reason));
        }
        let mut labels = std::collections::BTreeSet::new();
        for (index, secret) in self.secrets.iter().enumerate() {
            if !labels.insert(secret.label.as_str()) {
                return Err(invalid(
                    format!("/secrets/{index}/label"),
                    "repeats an earlier label".into(),
                ));
            }
        }
        for (session_index, session) in self.sessions.iter().enumerate() {
            for (run_index, run) in session.runs.iter().enumerate() {
                let at = format!("/sessions/{session_index}/runs/{run_index}");
                for (index, label) in run.secrets.iter().enumerate() {
                    if self.secret(label).is_none() {
                        return Err(invalid(
                            format!("{at}/secrets/{index}"),
                            format!("no planted secret is labelled '{label}'"),
                        ));
                    }
                }
                for (tool, behaviour) in run.tools.iter() {
                    if let Effect::LeakSecret { label, .. } = &behaviour.effect
                        && self.secret(label).is_none()
                    {
                        return Err(invalid(
                            format!("{at}/tools/{tool}/effect/label"),
                            format!("no planted secret is labelled '{label}'"),
                        ));
                    }
                }
                for (index, turn) in run.turns.iter().enumerate() {
                    let leak = turn.error.as_ref().and_then(|error| error.leak.as_ref());
                    if let Some(label) = leak.filter(|label| self.secret(label).is_none()) {
                        return Err(invalid(
                            format!("{at}/turns/{index}/error/leak"),
                            format!("no planted secret is labelled '{label}'"),
                        ));
                    }
                }
            }
        }
        Ok(())
    }

    /// Sizes, for shrink reports: (sessions, runs, turns, calls).
    pub fn size(&self) -> ScenarioSize {
        let runs = self.sessions.iter().flat_map(|session| &session.runs);
        let mut size = ScenarioSize {
            sessions: self.sessions.len(),
            ..ScenarioSize::default()
        };
        for run in runs {
            size.runs += 1;
            size.turns += run.turns.len();
            size.calls += run.turns.iter().map(|turn| turn.calls.len()).sum::<usize>();
        }
        size
    }
}

/// The size of a scenario.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ScenarioSize {
    /// Sessions.
    pub sessions: usize,
    /// Runs.
    pub runs: usize,
    /// Provider steps.
    pub turns: usize,
    /// Scripted calls.
    pub calls: usize,
}

impl std::fmt::Display for ScenarioSize {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} sessions, {} runs, {} turns, {} calls",
            self.sessions, self.runs, self.turns, self.calls
        )
    }
}

/// The seeded bug a file names, parsed.
pub(crate) fn fault_named(bug: Option<&str>) -> Result<Option<Fault>, String> {
    bug.map(|name| name.parse::<Fault>().map_err(|error| error.to_string()))
        .transpose()
}

/// JSON text parsed, or the error that names `path` and the parser's line and column.
pub(crate) fn parse_json(text: &str, path: &str) -> Result<serde_json::Value, ScenarioError> {
    serde_json::from_str(text).map_err(|error| ScenarioError::Json {
        path: path.to_owned(),
        reason: error.to_string(),
    })
}

/// A file's schema: its compiled validator's slot, its text and what it describes.
pub(crate) type FileSchema = (
    &'static OnceLock<Result<jsonschema::Validator, String>>,
    &'static str,
    &'static str,
);

/// `value` read as a `T` after its schema has accepted it, so that a fault is named by its
/// JSON Pointer (SPEC §12); `path` names the file in errors.
pub(crate) fn read_checked<T: serde::de::DeserializeOwned>(
    value: serde_json::Value,
    path: &str,
    (validator, schema, what): FileSchema,
) -> Result<T, ScenarioError> {
    let schema_error = |pointer: String, reason: String| ScenarioError::Schema {
        path: path.to_owned(),
        pointer,
        reason,
    };
    if let Some(fault) = crate::schema::check(validator, schema, what, &value) {
        return Err(schema_error(fault.pointer, fault.reason));
    }
    serde_json::from_value(value).map_err(|error| schema_error("/".to_owned(), error.to_string()))
}

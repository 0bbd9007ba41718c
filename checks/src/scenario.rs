//! Check functions of the simulator's fuzz targets (SPEC §13), shared with the stable corpus
//! replay (`tests/scenario_corpus_replay.rs`).
//!
//! - [`check_scenario`] (target `scenario`, structure-aware): the input is decoded with
//!   `arbitrary` into a [`FuzzScenario`], a bounded description of a scenario made of
//!   choices (which tools, which misbehaviour, which secret shape, how long), turned into
//!   a valid [`Scenario`] and run through the simulator on the correct core; every
//!   invariant must hold. When the input also holds [`FuzzCrashes`], a durable session of
//!   the crash explorer is crashed at the storage calls it chooses and resumed, and I15–I19
//!   must hold.
//! - [`check_scenario_json`] (target `scenario_json`): the input is a scenario file; it is
//!   refused cleanly (a message with a JSON Pointer) or it runs, and every invariant holds.
//!
//! Both return `Err` with the violations and a replay hint; the fuzz targets turn that into
//! a crash. One [`Engine`] (the wrapped registries and the oracle) is kept per thread
//! (building one compiles every schema).
//!
//! # What a scenario must promise for its verdict to mean something
//!
//! The oracles take the planted secrets as ground truth (I8): text the user typed in a
//! shape the redactor must remove, which the model therefore never saw. A structure-aware
//! scenario plants them itself with the generator's plantings ([`ward_sim::generate::secrets`])
//! and keeps them out of everything the model or the world says: free text it draws for
//! call arguments, call ids, replies, answers or prompts is dropped if it carries a planted
//! value. A scenario *file* makes no such promise — its labels are the file's claim, and a
//! fuzzer copying a labelled value into a call's arguments would "leak" it through the
//! model — so [`check_scenario_json`] counts only configured values as ground truth (the
//! exact-value guard must remove those wherever they come from) and reads every other
//! planted part as configured-shaped, which no run configures unless it lists its label.
//! Configured values count only when they are distinctive
//! ([`configured_values_are_distinctive`]): a file may configure `pane_remove…`, whose
//! fragments every tool list carries.
//! The `bug` field of a file is ignored: the target checks the correct core
//! ([`FaultSet::EMPTY`]).
//!
//! # Planted panics
//!
//! A tool behaviour `panic` raises with `std::panic::resume_unwind`, which skips the panic
//! hook, so libFuzzer's hook (which aborts on any panic, caught or not) never sees a panic
//! the registry catches by design. The corpus keeps inputs that plant one, and the targets
//! are smoke-tested on them.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use arbitrary::{Arbitrary, Unstructured};
use serde_json::{Value, json};
use ward_core::fault::FaultSet;
use ward_core::registry::Registry;
use ward_sim::catalogue::{ARGUMENT_BYTES_MAX, DEFAULT_LIMITS, Limit, SECRET_RUN_CHARS_MIN, TABLE};
use ward_sim::generate::args;
use ward_sim::generate::secrets::{self, Labels};
use ward_sim::generate::vocabulary::{self, CallIds, PROMPT_SENTENCES, UNKNOWN_TOOLS};
use ward_sim::oracle::Invariant;
use ward_sim::rng::SimRng;
use ward_sim::simulate::{Checked, Engine};
use ward_sim::trace;

use crate::{CheckResult, is_invisible};
use ward_sim::scenario::{
    Answer, CallScript, Effect, FailureKind, LeakAt, LimitsScript, PlantedSecret, ProviderFailure,
    Reaction, RunScript, SCENARIO_VERSION, Scenario, SecretShape, SessionScript, ToolBehaviour,
    Turn,
};

/// Sessions per scenario at most.
pub const SESSIONS_MAX: usize = 2;
/// Runs per session at most.
pub const RUNS_MAX: usize = 3;
/// Provider steps per run at most.
pub const TURNS_MAX: usize = 5;
/// Calls per provider step at most.
pub const CALLS_MAX: usize = 6;
/// Pieces of a prompt at most.
pub const PROMPT_PIECES_MAX: usize = 5;
/// Tool behaviours, switched-off tools and user answers per run at most (each).
pub const RUN_LISTS_MAX: usize = 4;
/// Characters of free text at most.
pub const FREE_TEXT_CHARS_MAX: usize = 80;

/// Determinism (I11) is checked by running again one input in this many (chosen by a
/// hash of the input, so a replay makes the same choice).
pub const RERUN_EVERY: u64 = 8;

thread_local! {
    /// What a thread keeps between inputs: the wrapped registries and the oracle.
    static ENGINE: Engine = Engine::new();
}

// ---------------------------------------------------------------------------------------------
// The structure-aware scenario.

/// A scenario as choices. Every field is bounded when it is turned into a [`Scenario`]
/// ([`FuzzScenario::to_scenario`]), so any byte string decodes to a small, valid scenario.
#[derive(Arbitrary, Clone, Debug)]
pub struct FuzzScenario {
    /// Seeds the plantings and the valid arguments built from schemas.
    pub seed: u64,
    /// The chart market's seed (small: every seed is as good as another).
    pub chart_seed: u8,
    /// Register the opt-in `code_interpreter`.
    pub code_interpreter: bool,
    /// The sessions (at most [`SESSIONS_MAX`], at least one).
    pub sessions: Vec<FuzzSession>,
    /// A durable session of the crash explorer, crashed where the input says (SPEC §16).
    pub crashes: Option<FuzzCrashes>,
}

/// The crash explorer's plan of `seed` ([`ward_sim::crash::generate`]), crashed at the
/// storage calls the input chooses (at most [`CRASHES_MAX`]), each of the kind it chooses;
/// I15–I19 must hold.
#[derive(Arbitrary, Clone, Debug)]
pub struct FuzzCrashes {
    /// The plan's seed.
    pub seed: u16,
    /// Each crash: the storage call, counted over the whole execution (modulo
    /// [`STORAGE_CALLS_MAX`]), and its kind (modulo the four kinds).
    pub crashes: Vec<(u16, u8)>,
}

/// The most crashes a structure-aware input plans.
pub const CRASHES_MAX: usize = 4;

/// Crash positions are taken modulo this: a plan's session makes a few hundred storage calls.
pub const STORAGE_CALLS_MAX: u64 = 512;

impl FuzzCrashes {
    /// The plan, its crashes in order.
    pub fn plan(&self) -> ward_sim::crash::Plan {
        use ward_sim::crash::{Crash, CrashKind};
        let mut plan = ward_sim::crash::generate(u64::from(self.seed));
        let mut crashes: Vec<Crash> = (self.crashes.iter().take(CRASHES_MAX))
            .map(|&(at, kind)| Crash {
                at: u64::from(at) % STORAGE_CALLS_MAX,
                kind: CrashKind::ALL[usize::from(kind) % CrashKind::ALL.len()],
            })
            .collect();
        crashes.sort_by_key(|crash| crash.at);
        plan.crashes = crashes;
        plan
    }
}

/// A session of runs over one chart.
#[derive(Arbitrary, Clone, Debug)]
pub struct FuzzSession {
    /// The runs (at most [`RUNS_MAX`], at least one).
    pub runs: Vec<FuzzRun>,
}

/// One run.
#[derive(Arbitrary, Clone, Debug)]
pub struct FuzzRun {
    /// Whether the run is read-only.
    pub read_only: bool,
    /// Tools switched off.
    pub disabled: Vec<ToolPick>,
    /// The prompt, piece by piece; secrets are planted here.
    pub prompt: Vec<PromptPiece>,
    /// Limits.
    pub limits: FuzzLimits,
    /// Cancel this many virtual milliseconds after the start.
    pub cancel_at_ms: Option<u16>,
    /// The user's answers to `ask_user`.
    pub answers: Vec<FuzzAnswer>,
    /// Tool behaviours.
    pub tools: Vec<(ToolPick, FuzzBehaviour)>,
    /// The provider's script.
    pub turns: Vec<FuzzTurn>,
}

/// A tool by name: one of the catalogue table, or a name no tool has.
#[derive(Arbitrary, Clone, Copy, Debug)]
pub enum ToolPick {
    /// Row `n % rows` of the oracle's table (the opt-in `code_interpreter` included).
    Catalogue(u8),
    /// One of the vocabulary's [`UNKNOWN_TOOLS`].
    Unknown(u8),
}

impl ToolPick {
    fn name(self) -> &'static str {
        match self {
            ToolPick::Catalogue(index) => TABLE[usize::from(index) % TABLE.len()].name,
            ToolPick::Unknown(index) => UNKNOWN_TOOLS[usize::from(index) % UNKNOWN_TOOLS.len()],
        }
    }
}

/// One piece of a prompt. Pieces are joined with spaces; plantings end with a full stop, as
/// the generator writes them.
#[derive(Arbitrary, Clone, Debug)]
pub enum PromptPiece {
    /// A sentence of the vocabulary's [`PROMPT_SENTENCES`].
    Sentence(u8),
    /// Text that looks like a trigger but is none ([`PROMPT_NOISE`]).
    Noise(u8),
    /// Free text (dropped if it carries a planted value).
    Free(String),
    /// An authorization value (R25, R28).
    Credential,
    /// A key of one of R26's families.
    Key,
    /// A home path (R27).
    HomePath,
    /// A URL password (R26).
    UrlPassword,
    /// A configured value the run lists (R24).
    Configured,
    /// A configured value written against a key.
    ConfiguredTouchingKey,
    /// Two configured values overlapping in the text.
    OverlappingConfigured,
}

/// Text that starts a rule but completes none.
pub const PROMPT_NOISE: &[&str] = &[
    "sk-",
    "Bearer",
    "basic",
    "://",
    "-----BEGIN",
    "eyJ.",
    "/Users/",
    "/home/",
    "C:",
    "\\\\",
    "[REDACTED]",
    "[LOCAL_PATH]",
    "AKIA",
    "xoxb-",
    "ghp_",
    "Authorization:",
    "\u{200B}",
];

/// Limits, each mapped into its accepted range.
#[derive(Arbitrary, Clone, Copy, Debug)]
pub struct FuzzLimits {
    /// `turns_max`: 1–20.
    pub turns_max: Option<u8>,
    /// `calls_per_batch_max`: 1–8 (small, so batches go past the cap).
    pub calls_per_batch_max: Option<u8>,
    /// `provider_timeout_ms`: 1–120 s.
    pub provider_timeout_s: Option<u8>,
    /// `inactivity_timeout_ms`: 1–255 s.
    pub inactivity_timeout_s: Option<u8>,
    /// `provider_retries_max`: 0–5.
    pub provider_retries_max: Option<u8>,
}

/// An answer of the scripted user.
#[derive(Arbitrary, Clone, Debug)]
pub struct FuzzAnswer {
    /// `None` leaves the question unanswered.
    pub text: Option<AnswerText>,
    /// How long the user takes.
    pub delay: FuzzDelay,
}

/// The text of an answer.
#[derive(Arbitrary, Clone, Debug)]
pub enum AnswerText {
    /// "Yes".
    Yes,
    /// "No".
    No,
    /// Free text (dropped if it carries a planted value).
    Free(String),
}

/// A virtual delay.
#[derive(Arbitrary, Clone, Copy, Debug)]
pub enum FuzzDelay {
    /// None.
    None,
    /// `n` milliseconds.
    Milliseconds(u8),
    /// `n` seconds.
    Seconds(u8),
    /// Ten minutes: past every deadline.
    Long,
}

impl FuzzDelay {
    fn ms(self) -> u64 {
        match self {
            FuzzDelay::None => 0,
            FuzzDelay::Milliseconds(ms) => u64::from(ms),
            FuzzDelay::Seconds(seconds) => 1_000 * u64::from(seconds),
            FuzzDelay::Long => 600_000,
        }
    }
}

/// A tool body's behaviour.
#[derive(Arbitrary, Clone, Debug)]
pub struct FuzzBehaviour {
    /// Virtual latency.
    pub latency: FuzzDelay,
    /// The planted effect.
    pub effect: FuzzEffect,
}

/// The planted effect of a tool body.
#[derive(Arbitrary, Clone, Copy, Debug)]
pub enum FuzzEffect {
    /// None.
    None,
    /// Runs, then fails.
    Fail,
    /// Panics.
    Panic,
    /// Leaks configured value number `n` of the scenario (fails when there is none), at the
    /// placement its high four bits name ([`LeakAt::ALL`], cyclically).
    LeakConfigured(u8),
    /// Injects an instruction to call a tool with `{}`.
    Inject(ToolPick),
}

/// One provider step.
#[derive(Arbitrary, Clone, Debug)]
pub struct FuzzTurn {
    /// Delay before the answer; [`FuzzDelay::Long`] outlasts the provider timeout.
    pub delay: FuzzDelay,
    /// Fail the request instead.
    pub error: Option<FuzzFailure>,
    /// The reply's text.
    pub text: ReplyText,
    /// The calls (at most [`CALLS_MAX`]).
    pub calls: Vec<FuzzCall>,
    /// Resend corrected every refused invalid call.
    pub retry_invalid: bool,
    /// Obey an injected instruction.
    pub follow_injection: bool,
}

/// A provider error.
#[derive(Arbitrary, Clone, Copy, Debug)]
pub struct FuzzFailure {
    /// Kind number `n % 7` of R21.
    pub kind: u8,
    /// `retry-after` in seconds.
    pub retry_after_s: Option<u8>,
}

/// The text of a reply.
#[derive(Arbitrary, Clone, Debug)]
pub enum ReplyText {
    /// None.
    Empty,
    /// "Here is what I found."
    Done,
    /// Free text (dropped if it carries a planted value).
    Free(String),
}

/// One call.
#[derive(Arbitrary, Clone, Debug)]
pub struct FuzzCall {
    /// Its id.
    pub id: IdPick,
    /// Its tool.
    pub tool: ToolPick,
    /// Its arguments.
    pub arguments: ArgumentsPick,
}

/// A call id.
#[derive(Arbitrary, Clone, Debug)]
pub enum IdPick {
    /// The next of `call_9`, `call_10`, … (sorting by id differs from order).
    Next,
    /// Empty.
    Empty,
    /// 161 characters.
    Long,
    /// The previous call's id again.
    Repeat,
    /// Free text (dropped if it carries a planted value).
    Free(String),
}

/// A call's argument text.
#[derive(Arbitrary, Clone, Debug)]
pub enum ArgumentsPick {
    /// Valid for the tool's schema, with a fix for later.
    Valid,
    /// With `1 + n % 10` errors; the valid arguments are its fix.
    Invalid(u8),
    /// A repeated key.
    DuplicateKey,
    /// Not JSON.
    NotJson,
    /// Empty text (means `{}`).
    Empty,
    /// Configured value number `n` of the run in a `web_search` query; JSON-escaped when
    /// the flag is set.
    EchoConfigured(u8, bool),
    /// More than 256 KiB.
    Huge,
    /// Free text (dropped if it carries a planted value).
    Free(String),
}

impl FuzzScenario {
    /// Decodes a fuzz input; `None` when the bytes run out before a scenario is complete.
    pub fn decode(data: &[u8]) -> Option<FuzzScenario> {
        FuzzScenario::arbitrary(&mut Unstructured::new(data)).ok()
    }

    /// The scenario, bounded and valid, for the tools of `registry` (the registry with the
    /// opt-in tools).
    pub fn to_scenario(&self, registry: &Registry) -> Scenario {
        let mut builder = Builder {
            rng: SimRng::new(self.seed),
            labels: Labels::default(),
            secrets: Vec::new(),
            registry,
        };
        // Plant every secret first, so that free text anywhere can be checked against all
        // of them (a later run resends the transcript of an earlier one).
        let sessions: Vec<&[FuzzRun]> = self
            .sessions
            .iter()
            .take(SESSIONS_MAX)
            .map(|session| &session.runs[..session.runs.len().min(RUNS_MAX)])
            .filter(|runs| !runs.is_empty())
            .collect();
        let prompts: Vec<Vec<(Vec<PromptText>, Vec<String>)>> = sessions
            .iter()
            .map(|runs| runs.iter().map(|run| builder.prompt(run)).collect())
            .collect();
        let mut scripts: Vec<SessionScript> = sessions
            .iter()
            .zip(prompts)
            .map(|(runs, prompts)| SessionScript {
                runs: runs
                    .iter()
                    .zip(prompts)
                    .map(|(run, (prompt, configured))| builder.run(run, prompt, configured))
                    .collect(),
            })
            .collect();
        if scripts.is_empty() {
            scripts.push(SessionScript {
                runs: vec![RunScript {
                    prompt: PROMPT_SENTENCES[0].to_owned(),
                    read_only: false,
                    disabled_tools: Vec::new(),
                    secrets: Vec::new(),
                    limits: LimitsScript::default(),
                    cancel_at_ms: None,
                    answers: Vec::new(),
                    tools: Arc::default(),
                    turns: Vec::new(),
                }],
            });
        }
        Scenario {
            version: SCENARIO_VERSION,
            seed: None,
            description: Some("from the structure-aware fuzz target".to_owned()),
            bug: None,
            chart_seed: u64::from(self.chart_seed),
            code_interpreter: self.code_interpreter,
            secrets: builder.secrets,
            sessions: scripts,
            expect: None,
        }
    }
}

/// A piece of a prompt being built: fixed text, or free text still to be checked.
enum PromptText {
    Fixed(String),
    Free(String),
}

struct Builder<'r> {
    rng: SimRng,
    labels: Labels,
    secrets: Vec<PlantedSecret>,
    registry: &'r Registry,
}

impl Builder<'_> {
    /// The prompt and the labels of the values it configures.
    fn prompt(&mut self, run: &FuzzRun) -> (Vec<PromptText>, Vec<String>) {
        let mut texts: Vec<PromptText> = Vec::new();
        let mut configured = Vec::new();
        for piece in run.prompt.iter().take(PROMPT_PIECES_MAX) {
            let planting = match piece {
                PromptPiece::Sentence(index) => {
                    texts.push(PromptText::Fixed(pick(PROMPT_SENTENCES, *index).to_owned()));
                    continue;
                }
                PromptPiece::Noise(index) => {
                    texts.push(PromptText::Fixed(pick(PROMPT_NOISE, *index).to_owned()));
                    continue;
                }
                PromptPiece::Free(text) => {
                    // Checked against the planted values once all are known.
                    texts.push(PromptText::Free(text.clone()));
                    continue;
                }
                PromptPiece::Credential => secrets::credential(&mut self.rng, &mut self.labels),
                PromptPiece::Key => secrets::key(&mut self.rng, &mut self.labels),
                PromptPiece::HomePath => secrets::home_path(&mut self.rng, &mut self.labels),
                PromptPiece::UrlPassword => secrets::url_password(&mut self.rng, &mut self.labels),
                PromptPiece::Configured => {
                    let secret = secrets::configured(&mut self.rng, &mut self.labels);
                    texts.push(PromptText::Fixed(format!(
                        "{}.",
                        vocabulary::gives_key(&secret.value)
                    )));
                    configured.push(secret.label.clone());
                    self.secrets.push(secret);
                    continue;
                }
                PromptPiece::ConfiguredTouchingKey => {
                    let (secret, planting) =
                        secrets::configured_touching_a_key(&mut self.rng, &mut self.labels);
                    configured.push(secret.label.clone());
                    self.secrets.push(secret);
                    planting
                }
                PromptPiece::OverlappingConfigured => {
                    let (first, second, text) =
                        secrets::overlapping_configured(&mut self.rng, &mut self.labels);
                    texts.push(PromptText::Fixed(format!("{text}.")));
                    configured.push(first.label.clone());
                    configured.push(second.label.clone());
                    self.secrets.push(first);
                    self.secrets.push(second);
                    continue;
                }
            };
            texts.push(PromptText::Fixed(format!("{}.", planting.text)));
            self.secrets.extend(planting.parts);
        }
        if texts.is_empty() {
            texts.push(PromptText::Fixed(PROMPT_SENTENCES[0].to_owned()));
        }
        (texts, configured)
    }

    /// Free text, or nothing if it carries a planted value (the model and the world never
    /// saw one; see the module docs).
    fn free(&self, text: &str) -> String {
        let text = bounded(text);
        let stripped: String = text.chars().filter(|c| !is_invisible(*c)).collect();
        let carries = self.secrets.iter().any(|secret| {
            text.contains(secret.value.as_str()) || stripped.contains(secret.value.as_str())
        });
        if carries { String::new() } else { text }
    }

    fn run(
        &mut self,
        run: &FuzzRun,
        prompt: Vec<PromptText>,
        configured: Vec<String>,
    ) -> RunScript {
        // Free pieces are checked now that every secret is planted.
        let prompt = prompt
            .into_iter()
            .map(|piece| match piece {
                PromptText::Fixed(text) => text,
                PromptText::Free(text) => self.free(&text),
            })
            .collect::<Vec<_>>()
            .join(" ");
        let mut disabled: Vec<String> = run
            .disabled
            .iter()
            .take(RUN_LISTS_MAX)
            .map(|pick| pick.name().to_owned())
            .collect();
        disabled.sort();
        disabled.dedup();
        let limits = limits(&run.limits);
        let mut tools = BTreeMap::new();
        for (pick, behaviour) in run.tools.iter().take(RUN_LISTS_MAX) {
            let effect = self.effect(behaviour.effect);
            let latency_ms = match behaviour.latency {
                // Past the run's inactivity deadline, whatever it is.
                FuzzDelay::Long => limits.resolve(DEFAULT_LIMITS).inactivity_timeout_ms + 1,
                latency => latency.ms(),
            };
            // `ask_user`'s body is the runtime's own: ward gives it no behaviour.
            if pick.name() != "ask_user" {
                tools.insert(Arc::from(pick.name()), ToolBehaviour { latency_ms, effect });
            }
        }
        let answers = run
            .answers
            .iter()
            .take(RUN_LISTS_MAX)
            .map(|answer| Answer {
                text: answer.text.as_ref().map(|text| match text {
                    AnswerText::Yes => vocabulary::ANSWER.to_owned(),
                    AnswerText::No => "No".to_owned(),
                    AnswerText::Free(text) => self.free(text),
                }),
                delay_ms: answer.delay.ms(),
                cancels: false,
            })
            .collect();
        let mut ids = CallIds::default();
        let turns = run
            .turns
            .iter()
            .take(TURNS_MAX)
            .map(|turn| self.turn(turn, &configured, &limits, &mut ids))
            .collect();
        RunScript {
            prompt,
            read_only: run.read_only,
            disabled_tools: disabled,
            secrets: configured,
            limits,
            cancel_at_ms: run.cancel_at_ms.map(u64::from),
            answers,
            tools: Arc::new(tools),
            turns,
        }
    }

    fn effect(&self, effect: FuzzEffect) -> Effect {
        match effect {
            FuzzEffect::None => Effect::None,
            FuzzEffect::Fail => Effect::Fail,
            FuzzEffect::Panic => Effect::Panic,
            FuzzEffect::LeakConfigured(index) => {
                let configured: Vec<&PlantedSecret> = self
                    .secrets
                    .iter()
                    .filter(|secret| secret.shape == SecretShape::Configured)
                    .collect();
                match configured.get(usize::from(index) % configured.len().max(1)) {
                    Some(secret) => Effect::LeakSecret {
                        label: secret.label.clone(),
                        fail: false,
                        at: LeakAt::ALL[usize::from(index >> 4) % LeakAt::ALL.len()],
                    },
                    None => Effect::Fail,
                }
            }
            FuzzEffect::Inject(pick) => Effect::Inject {
                tool: pick.name().to_owned(),
                arguments: "{}".to_owned(),
            },
        }
    }

    fn turn(
        &mut self,
        turn: &FuzzTurn,
        configured: &[String],
        limits: &LimitsScript,
        ids: &mut CallIds,
    ) -> Turn {
        let delay_ms = match turn.delay {
            // Past the provider timeout, whatever it is.
            FuzzDelay::Long => limits.resolve(DEFAULT_LIMITS).provider_timeout_ms + 1,
            delay => delay.ms(),
        };
        let error = turn.error.map(|failure| ProviderFailure {
            kind: [
                FailureKind::Authentication,
                FailureKind::Permission,
                FailureKind::ModelNotFound,
                FailureKind::RateLimited,
                FailureKind::Unavailable,
                FailureKind::Timeout,
                FailureKind::MalformedResponse,
            ][usize::from(failure.kind) % 7],
            retry_after_ms: failure
                .retry_after_s
                .map(|seconds| 1_000 * u64::from(seconds)),
            leak: None,
        });
        let text = match &turn.text {
            ReplyText::Empty => String::new(),
            ReplyText::Done => vocabulary::FINAL_REPLY.to_owned(),
            ReplyText::Free(text) => self.free(text),
        };
        let mut calls: Vec<CallScript> = Vec::new();
        for call in turn.calls.iter().take(CALLS_MAX) {
            let id = match &call.id {
                IdPick::Next => ids.next_id(),
                IdPick::Empty => String::new(),
                IdPick::Long => vocabulary::overlong_call_id(),
                IdPick::Repeat => calls.last().map(|call| call.id.clone()).unwrap_or_default(),
                IdPick::Free(text) => self.free(text),
            };
            let (name, arguments, fix) = self.arguments(call, configured);
            calls.push(CallScript {
                id,
                name,
                arguments,
                fix,
            });
        }
        let mut react = Vec::new();
        if turn.retry_invalid {
            react.push(Reaction::RetryInvalid);
        }
        if turn.follow_injection {
            react.push(Reaction::FollowInjection);
        }
        Turn {
            delay_ms,
            error,
            text,
            calls,
            react,
        }
    }

    /// The tool name, argument text and fix of a call.
    fn arguments(
        &mut self,
        call: &FuzzCall,
        configured: &[String],
    ) -> (String, String, Option<String>) {
        let name = call.tool.name().to_owned();
        let schema = self
            .registry
            .get(&name)
            .map(|tool| tool.meta().parameters().clone());
        let valid = match &schema {
            Some(schema) => args::valid(&mut self.rng, &name, schema),
            None => json!({}),
        };
        let schema = schema.unwrap_or_else(|| json!({}));
        match &call.arguments {
            ArgumentsPick::Valid => (name, valid.to_string(), None),
            ArgumentsPick::Invalid(errors) => {
                let errors = 1 + usize::from(*errors) % 10;
                let invalid = args::invalid(&mut self.rng, &valid, &schema, errors);
                (name, invalid.to_string(), Some(valid.to_string()))
            }
            ArgumentsPick::DuplicateKey => (name, args::with_duplicate_key(&valid), None),
            ArgumentsPick::NotJson => {
                let text = args::not_json(&mut self.rng, &valid.to_string());
                (name, text, Some(valid.to_string()))
            }
            ArgumentsPick::Empty => (name, String::new(), None),
            ArgumentsPick::EchoConfigured(index, escaped) => {
                let value = configured
                    .get(usize::from(*index) % configured.len().max(1))
                    .and_then(|label| self.secrets.iter().find(|secret| &secret.label == label))
                    .map(|secret| secret.value.clone());
                let Some(value) = value else {
                    return (name, valid.to_string(), None);
                };
                let (tool, arguments) = vocabulary::echo(&value, *escaped);
                (tool.to_owned(), arguments, None)
            }
            ArgumentsPick::Huge => {
                let mut huge = valid.clone();
                if let Value::Object(members) = &mut huge {
                    members.insert("padding".to_owned(), json!("x".repeat(ARGUMENT_BYTES_MAX)));
                }
                (name, huge.to_string(), Some(valid.to_string()))
            }
            ArgumentsPick::Free(text) => (name, self.free(text), Some(valid.to_string())),
        }
    }
}

fn pick<T: Copy>(items: &[T], index: u8) -> T {
    items[usize::from(index) % items.len()]
}

fn bounded(text: &str) -> String {
    text.chars().take(FREE_TEXT_CHARS_MAX).collect()
}

/// The fuzzer's limits in their ranges: every turn limit and retry count of R14/R18; up to 8
/// calls per batch, a provider timeout up to 120 s and an inactivity timeout up to 256 s, so
/// that a run stays short.
fn limits(limits: &FuzzLimits) -> LimitsScript {
    let high = |limit: Limit| limit.range().high as u32;
    LimitsScript {
        turns_max: limits
            .turns_max
            .map(|turns| 1 + u32::from(turns) % high(Limit::TurnsMax)),
        calls_per_batch_max: limits
            .calls_per_batch_max
            .map(|calls| 1 + u32::from(calls) % 8),
        provider_timeout_ms: limits
            .provider_timeout_s
            .map(|seconds| 1_000 * (1 + u64::from(seconds) % 120)),
        inactivity_timeout_ms: limits
            .inactivity_timeout_s
            .map(|seconds| 1_000 * (1 + u64::from(seconds))),
        provider_retries_max: limits
            .provider_retries_max
            .map(|retries| u32::from(retries) % (high(Limit::ProviderRetriesMax) + 1)),
    }
}

// ---------------------------------------------------------------------------------------------
// The checks.

/// Decodes a `scenario` input, runs it on the correct core, and checks that every
/// invariant holds; the scenario must also be a valid scenario file that reads back equal
/// (checked for one input in [`RERUN_EVERY`]; the replay test checks every corpus input).
///
/// ```
/// use ward_checks::scenario::check_scenario;
///
/// assert_eq!(check_scenario(&[7; 64]), Ok(()));
/// ```
pub fn check_scenario(data: &[u8]) -> CheckResult {
    check_scenario_with(data, false)
}

/// [`check_scenario`] with the round trip and the determinism rerun on every input: what
/// the corpus replay runs.
pub fn check_scenario_thoroughly(data: &[u8]) -> CheckResult {
    check_scenario_with(data, true)
}

fn check_scenario_with(data: &[u8], thorough: bool) -> CheckResult {
    let Some(fuzz) = FuzzScenario::decode(data) else {
        return Ok(());
    };
    ENGINE.with(|engine| {
        let scenario = fuzz.to_scenario(engine.world().registry(true));
        // Writing and reading the file costs as much as running it: one input in
        // `RERUN_EVERY` (the others than those rerun for I11) checks the round trip.
        if thorough || xxhash_rust::xxh3::xxh3_64(data) % RERUN_EVERY == 1 {
            let text = scenario.to_json();
            match Scenario::from_json(&text, "scenario") {
                Ok(back) if back == scenario => {}
                Ok(_) => {
                    return Err("the structure-aware scenario does not read back equal".into());
                }
                Err(error) => {
                    return Err(format!(
                        "the structure-aware scenario is not a valid scenario file: {error}"
                    ));
                }
            }
        }
        check_run(engine, &scenario, &scenario, data, thorough, true)
    })?;
    if let Some(crashes) = &fuzz.crashes {
        let plan = crashes.plan();
        let exploration = ward_sim::explore::explore(&plan, FaultSet::EMPTY);
        if let Some(breach) = exploration.verdict.breaches.first() {
            return Err(format!(
                "crash plan {} with crashes {:?}: {breach}",
                plan.seed, plan.crashes
            ));
        }
    }
    Ok(())
}

/// Reads a `scenario_json` input as a scenario file: refused cleanly, or run on the correct
/// core with every invariant holding (ground truth as the module docs say).
///
/// ```
/// use ward_checks::scenario::check_scenario_json;
///
/// assert_eq!(check_scenario_json(b"{\"version\": 1}"), Ok(()));
/// let file = br#"{"version":1,"sessions":[{"runs":[{"prompt":"hi","turns":[]}]}]}"#;
/// assert_eq!(check_scenario_json(file), Ok(()));
/// ```
pub fn check_scenario_json(data: &[u8]) -> CheckResult {
    let Ok(text) = std::str::from_utf8(data) else {
        return Ok(());
    };
    let scenario = match Scenario::from_json(text, "input") {
        Ok(scenario) => scenario,
        Err(error) => return check_refusal(&error.to_string()),
    };
    let mut truth = scenario.clone();
    for secret in &mut truth.secrets {
        secret.shape = SecretShape::Configured;
    }
    truth.bug = None;
    let i8_applies = configured_values_are_distinctive(&scenario);
    ENGINE.with(|engine| check_run(engine, &scenario, &truth, data, false, i8_applies))
}

/// Whether every configured value of a scenario file can be told apart from anything the
/// runtime writes itself: each of its 8-character windows (I8's unit) holds an ASCII digit,
/// a lower-case and an upper-case letter, so no tool name, word, number, date or symbol of
/// the runtime's own text can hold one. A file whose configured values are not (say one
/// that contains `pane_remove`, which every tool list carries) is checked on every
/// invariant but I8.
pub fn configured_values_are_distinctive(scenario: &Scenario) -> bool {
    let labels: BTreeSet<&str> = scenario
        .sessions
        .iter()
        .flat_map(|session| &session.runs)
        .flat_map(|run| &run.secrets)
        .map(String::as_str)
        .collect();
    labels
        .into_iter()
        .filter_map(|label| scenario.secret(label))
        .all(|secret| {
            let characters: Vec<char> = secret
                .value
                .chars()
                .filter(|character| !is_invisible(*character))
                .collect();
            characters.windows(I8_WINDOW_CHARS).all(|window| {
                window.iter().any(char::is_ascii_digit)
                    && window.iter().any(char::is_ascii_lowercase)
                    && window.iter().any(char::is_ascii_uppercase)
            })
        })
}

/// The fragment length I8 looks for.
const I8_WINDOW_CHARS: usize = SECRET_RUN_CHARS_MIN;

/// Runs a scenario written from a `scenario` crasher (`corpus/scenarios/fuzz/`) as the
/// structure-aware target does: on the correct core, every planted secret ground truth.
pub fn check_scenario_file(scenario: &Scenario) -> CheckResult {
    let text = scenario.to_json();
    ENGINE.with(|engine| check_run(engine, scenario, scenario, text.as_bytes(), true, true))
}

/// A refusal names the file and a JSON Pointer (or the parser's line and column).
fn check_refusal(message: &str) -> CheckResult {
    let located = message.starts_with("input: at /")
        || (message.starts_with("input: not valid JSON: ") && message.contains(" line "));
    if located {
        Ok(())
    } else {
        Err(format!(
            "a refused scenario file is not located by a JSON Pointer: {message:?}"
        ))
    }
}

/// Runs `scenario` with no fault and checks it with `truth` (the same scripts; ground truth
/// as the caller decided); one input in [`RERUN_EVERY`] runs twice and must give the same
/// trace digest (I11). Without `i8_applies` the I8 verdict is dropped (see
/// [`configured_values_are_distinctive`]).
fn check_run(
    engine: &Engine,
    scenario: &Scenario,
    truth: &Scenario,
    data: &[u8],
    rerun: bool,
    i8_applies: bool,
) -> CheckResult {
    let faults = FaultSet::EMPTY;
    let trace = engine.execute(scenario, faults);
    let mut checked = Checked {
        verdict: engine.oracle().check(truth, &trace),
        digest: trace::digest(&trace),
        trace,
    };
    if rerun || xxhash_rust::xxh3::xxh3_64(data).is_multiple_of(RERUN_EVERY) {
        engine.rerun(scenario, faults, &mut checked);
    }
    let violations: Vec<String> = checked
        .verdict
        .violations
        .iter()
        .filter(|violation| i8_applies || violation.invariant != Invariant::I8)
        .map(ToString::to_string)
        .collect();
    if violations.is_empty() {
        return Ok(());
    }
    Err(format!(
        "{} invariant violations on the correct core:\n  {}\nscenario:\n{}",
        violations.len(),
        violations
            .iter()
            .take(4)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n  "),
        scenario.to_json()
    ))
}

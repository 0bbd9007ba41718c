//! Generated scenarios (SPEC §10): a plausible model that builds valid calls from the
//! offered schemas and reacts to results, mixed with every misbehaviour of the
//! specification, chosen per seed by swarm testing.
//!
//! **Swarm testing.** Each seed first draws which misbehaviours are on and how often (a rate
//! per decision point), so that some seeds hammer one failure mode and others mix many;
//! campaigns cover combinations that a fixed mix would make rare.
//!
//! **Reactions.** The provider's script is fixed when the scenario is generated, so a
//! generated run is an ordinary scenario file. Where the model must react to what it
//! received (correct a refused input, obey an injected instruction), the script holds a
//! reaction that the provider evaluates on the results it actually received.
//!
//! **Edges.** Each limit of the SPEC is also generated at limit − 1, the limit and limit + 1,
//! with a fixed probability per decision point ([`EDGE_PER_MILLE`]; less for the costly ones) rather than a swarm-drawn
//! one, so every seed range visits them: inputs with 4, 5 and 6 errors (the cap of 5), argument
//! text of 256 KiB ± 1 byte, call ids of 160 ± 1 characters (in ASCII or two-byte letters),
//! batches at the cap ± 1, runs that call tools for the turn limit ± 1 turns, tools that take
//! the inactivity timeout ± 1 ms from the run's start or from activity 1 ms before the
//! deadline would fire (a provider reply, a call of the same batch finishing), provider answers at the provider timeout ± 1 ms, and as many
//! retryable provider errors in a row as the retries allow, and one more, with `retry-after`
//! at the 60 s cap ± 1 ms, configured values of 8 characters and echoes of 7, 8 and 9
//! characters of one. Each is a misbehaviour named `edge-…`, counted like the others.
//!
//! Every random choice comes from one [`SimRng`] seeded with the seed.

pub mod args;
pub mod secrets;
pub mod vocabulary;

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Value, json};
use ward_core::fault::Fault;
use ward_core::registry::Registry;

use crate::catalogue::LIMIT_RANGES;
use crate::rng::SimRng;
use crate::scenario::{
    Answer, CallScript, Effect, FailureKind, LimitsScript, PlantedSecret, ProviderFailure,
    Reaction, RunScript, SCENARIO_VERSION, Scenario, SecretShape, SessionScript, ToolBehaviour,
    Turn,
};
use secrets::Labels;

/// The SPEC's limits the edges are generated around (SPEC §4, R6, R18, R19).
const FIELD_ERRORS_MAX: u64 = 5;
const ARGUMENT_BYTES_MAX: u64 = 256 * 1024;
const CALL_ID_CHARS_MAX: u64 = 160;
const PROVIDER_TIMEOUT_MS: u64 = 60_000;
const RETRIES_MAX: u64 = 2;
const RETRY_WAIT_MAX_MS: u64 = 60_000;
use vocabulary::{CallIds, PROMPT_SENTENCES, UNKNOWN_TOOLS};

macro_rules! misbehaviours {
    ($($variant:ident = $name:literal: $doc:literal;)*) => {
        /// A way the generated model (or its world) misbehaves.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Misbehaviour {
            $(#[doc = $doc] $variant,)*
        }

        impl Misbehaviour {
            /// Every misbehaviour.
            pub const ALL: &'static [Misbehaviour] = &[$(Misbehaviour::$variant),*];

            /// Its name in reports.
            pub fn name(self) -> &'static str {
                match self { $(Misbehaviour::$variant => $name,)* }
            }
        }
    };
}

misbehaviours! {
    NotOffered = "not-offered": "calls a tool not offered: a write in a read-only run, a switched-off tool, a made-up name";
    InvalidArgs = "invalid-args": "sends arguments its schema refuses (wrong types, missing, extra, out of range)";
    ManyErrors = "many-errors": "sends arguments with six or more errors at once";
    DuplicateKeys = "duplicate-keys": "repeats a key in the argument object";
    NotJson = "not-json": "sends argument text that is not JSON";
    HugeArgs = "huge-args": "sends more than 256 KiB of arguments";
    BadIds = "bad-ids": "sends empty, repeated or over-long call ids";
    MixedBatch = "mixed-batch": "mixes sequential and parallel tools in one batch";
    OverCap = "over-cap": "sends more calls than the batch cap";
    EndlessLoop = "endless-loop": "keeps calling tools past the turn limit";
    EchoSecret = "echo-secret": "puts a configured secret into arguments";
    FollowInjection = "follow-injection": "obeys an instruction injected through a tool result";
    ProviderErrors = "provider-errors": "fails requests with provider errors";
    ProviderTimeout = "provider-timeout": "answers after the provider timeout";
    Cancel = "cancel": "the user cancels the run at some moment";
    MultiRun = "multi-run": "several runs in one session, read-only and not";
    ToolFaults = "tool-faults": "tool bodies fail, panic or leak a configured secret";
    SlowTools = "slow-tools": "tool bodies outlast the inactivity deadline";
    AskUser = "ask-user": "asks the user, who answers late or never";
    NestedSecrets = "nested-secrets": "plants secrets inside and across one another (a key as a credential or URL password, a configured value in a key or a user name, a value across a span's end)";
    EdgeErrors = "edge-errors": "an input with 4, 5 or 6 errors (the cap of 5, ± 1), flat or nested in an array's objects";
    EdgePayload = "edge-payload": "argument text of 256 KiB − 1, 256 KiB or 256 KiB + 1 bytes";
    EdgeId = "edge-id": "a call id of 159, 160 or 161 characters";
    EdgeBatch = "edge-batch": "a batch of cap − 1, cap or cap + 1 calls";
    EdgeTurns = "edge-turns": "calls tools for the turn limit − 1, the limit or the limit + 1 turns";
    EdgeDeadline = "edge-deadline": "a tool that ends the inactivity timeout − 1, exactly or + 1 ms after the last activity, which may come 1 ms before the deadline";
    EdgeProviderTimeout = "edge-provider-timeout": "answers at the provider timeout − 1, exactly or + 1 ms";
    EdgeRetries = "edge-retries": "as many retryable errors in a row as retries allow, or one more; retry-after at 60 s ± 1 ms";
    EdgeSecrets = "edge-secrets": "a configured value of 7 or 8 characters (8 is the shortest); arguments echoing 7, 8 or 9 characters of one";
    EdgeKeys = "edge-keys": "a key of each R26 family at its rule's minimum length (12 after sk-)";
    EdgeLimits = "edge-limits": "a limit at its range's bound − 1, the bound or the bound + 1 (out of range: refused at start)";
}

/// How often, per thousand decision points, an `edge-…` misbehaviour fires: 5 %, but 1 % for
/// batches at the cap (each adds about 32 calls) and 0.1 % for 256 KiB payloads, which cost a
/// campaign most (at 1 % they halved its throughput: callgrind, seeds 0..500).
pub const EDGE_PER_MILLE: u64 = 50;

impl Misbehaviour {
    /// Whether it puts a limit at its edge (fired at a fixed rate, not drawn by the swarm).
    pub fn is_edge(self) -> bool {
        self.name().starts_with("edge-")
    }

    /// The fixed rate of an edge, per thousand decision points.
    fn edge_per_mille(self) -> u64 {
        match self {
            Misbehaviour::EdgePayload => 1,
            Misbehaviour::EdgeBatch => 10,
            _ => EDGE_PER_MILLE,
        }
    }
}

/// One of limit − 1, the limit and limit + 1.
fn around(rng: &mut SimRng, limit: u64) -> u64 {
    (limit + rng.range(0, 2)).saturating_sub(1)
}

/// Which misbehaviours a seed turns on, and how often each fires (percent per decision
/// point; 0 is off).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Swarm {
    /// Rate per misbehaviour, in [`Misbehaviour::ALL`] order.
    rates: Vec<u64>,
}

impl Swarm {
    fn draw(rng: &mut SimRng) -> Swarm {
        let rates = Misbehaviour::ALL
            .iter()
            .map(|misbehaviour| {
                if misbehaviour.is_edge() {
                    0
                } else if rng.percent(50) {
                    *rng.pick(&[8, 20, 40, 70])
                } else {
                    0
                }
            })
            .collect();
        Swarm { rates }
    }

    fn rate(&self, misbehaviour: Misbehaviour) -> u64 {
        self.rates[misbehaviour as usize]
    }
}

/// A generated scenario and how often each misbehaviour was applied.
#[derive(Clone, Debug)]
pub struct Generated {
    /// The scenario.
    pub scenario: Scenario,
    /// Count per misbehaviour, in [`Misbehaviour::ALL`] order.
    pub misbehaviours: Vec<u32>,
}

/// Appends `" {text}."` to `prompt`: one more sentence of a generated prompt.
fn push_sentence(prompt: &mut String, text: &str) {
    prompt.push(' ');
    prompt.push_str(text);
    prompt.push('.');
}

/// Generates the scenario of `seed` against the tools of `registry` (the registry with the
/// opt-in tools; a scenario may leave them out). Campaigns build the [`Plan`] once and call
/// [`Plan::generate`].
pub fn generate(seed: u64, registry: &Registry, bug: Option<Fault>) -> Generated {
    Plan::new(registry).generate(seed, bug)
}

/// What generation reads from a registry, worked out once rather than per seed: the tools
/// with whether each only reads (with and without the opt-in `code_interpreter`), and each
/// tool's published schema and argument plan.
#[derive(Clone, Debug)]
pub struct Plan {
    /// By whether the scenario registers `code_interpreter`.
    catalogues: [Catalogue; 2],
    /// Each tool's schema and argument plan, by name.
    arguments: BTreeMap<Arc<str>, (Value, args::Arguments)>,
}

/// The tools one kind of scenario registers.
#[derive(Clone, Debug)]
struct Catalogue {
    /// In name order, with whether each only reads.
    registered: Vec<(Arc<str>, bool)>,
    /// Their names: those that only read, and those that change something.
    reads: Vec<Arc<str>>,
    writes: Vec<Arc<str>>,
    /// The reads that run in parallel (every read but the sequential `ask_user`), in name
    /// order: the deadline edge's batches.
    parallel_reads: Vec<Arc<str>>,
}

impl Catalogue {
    fn new(registry: &Registry, code_interpreter: bool) -> Catalogue {
        let mut registered: Vec<(Arc<str>, bool)> = registry
            .tools()
            .filter(|tool| code_interpreter || tool.name() != "code_interpreter")
            .map(|tool| {
                (
                    Arc::clone(tool.meta().shared_name()),
                    tool.meta().is_read_only(),
                )
            })
            .collect();
        // In name order: a run's tool behaviours are drawn in this order into a map kept in
        // name order.
        registered.sort();
        let names = |reads: bool| {
            registered
                .iter()
                .filter(|(_, only_reads)| *only_reads == reads)
                .map(|(name, _)| Arc::clone(name))
                .collect()
        };
        let mut parallel_reads: Vec<Arc<str>> = registry
            .tools()
            .filter(|tool| tool.meta().is_read_only() && !tool.meta().is_sequential())
            .map(|tool| Arc::clone(tool.meta().shared_name()))
            .collect();
        parallel_reads.sort();
        Catalogue {
            reads: names(true),
            writes: names(false),
            parallel_reads,
            registered,
        }
    }
}

impl Plan {
    /// The plan of `registry` (the registry with the opt-in tools).
    pub fn new(registry: &Registry) -> Plan {
        Plan {
            catalogues: [
                Catalogue::new(registry, false),
                Catalogue::new(registry, true),
            ],
            arguments: registry
                .tools()
                .map(|tool| {
                    let schema = tool.meta().parameters();
                    (
                        Arc::clone(tool.meta().shared_name()),
                        (
                            schema.clone(),
                            args::Arguments::compile(tool.name(), schema),
                        ),
                    )
                })
                .collect(),
        }
    }

    /// Generates the scenario of `seed`.
    pub fn generate(&self, seed: u64, bug: Option<Fault>) -> Generated {
        let mut rng = SimRng::new(seed);
        let swarm = Swarm::draw(&mut rng);
        let code_interpreter = rng.percent(20);
        let catalogue: &Catalogue = &self.catalogues[usize::from(code_interpreter)];
        let mut generator = Generator {
            rng,
            swarm,
            counts: vec![0; Misbehaviour::ALL.len()],
            labels: Labels::default(),
            secrets: Vec::new(),
            plan: self,
            catalogue,
        };
        let sessions_count = if generator.rng.percent(15) { 2 } else { 1 };
        let sessions = (0..sessions_count).map(|_| generator.session()).collect();
        Generated {
            scenario: Scenario {
                version: SCENARIO_VERSION,
                seed: Some(seed),
                description: None,
                bug: bug.map(|fault| fault.name().to_owned()),
                chart_seed: seed % 1000,
                code_interpreter,
                secrets: generator.secrets,
                sessions,
                expect: None,
            },
            misbehaviours: generator.counts,
        }
    }
}

struct Generator<'p> {
    rng: SimRng,
    swarm: Swarm,
    counts: Vec<u32>,
    labels: Labels,
    secrets: Vec<PlantedSecret>,
    plan: &'p Plan,
    /// The tools the scenario registers.
    catalogue: &'p Catalogue,
}

/// The state of one run being generated.
struct RunPlan<'p> {
    read_only: bool,
    disabled: Vec<String>,
    configured: Vec<String>,
    /// The offered tools, with whether each only reads.
    offered: Vec<&'p (Arc<str>, bool)>,
    limits: LimitsScript,
    answers: Vec<Answer>,
    tools: BTreeMap<Arc<str>, ToolBehaviour>,
    ids: CallIds,
    /// A first batch the deadline edge scripts, in place of a drawn one.
    first_batch: Option<FirstBatch>,
}

/// The first batch of a run at the inactivity deadline's edge, with activity just before it.
#[derive(Debug)]
enum FirstBatch {
    /// The provider answers at `delay_ms` (the timeout − 1) with one call of `tool`.
    AfterReply { delay_ms: u64, tool: Arc<str> },
    /// Two parallel calls: `quick` finishes at the timeout − 1, resetting the deadline.
    Pair { quick: Arc<str>, slow: Arc<str> },
}

impl<'p> Generator<'p> {
    /// Whether `misbehaviour` fires at this decision point; counts it when it does.
    fn fire(&mut self, misbehaviour: Misbehaviour) -> bool {
        let fires = if misbehaviour.is_edge() {
            self.rng.below(1000) < misbehaviour.edge_per_mille()
        } else {
            let rate = self.swarm.rate(misbehaviour);
            rate > 0 && self.rng.percent(rate)
        };
        if fires {
            self.counts[misbehaviour as usize] += 1;
        }
        fires
    }

    fn session(&mut self) -> SessionScript {
        let runs_count = if self.fire(Misbehaviour::MultiRun) {
            self.rng.range_usize(2, 3)
        } else {
            1
        };
        let first_read_only = self.rng.percent(35);
        let runs = (0..runs_count)
            .map(|index| {
                let read_only = if runs_count > 1 {
                    (index % 2 == 0) == first_read_only
                } else {
                    first_read_only
                };
                self.run(read_only)
            })
            .collect();
        SessionScript { runs }
    }

    fn run(&mut self, read_only: bool) -> RunScript {
        let mut disabled = Vec::new();
        if self.rng.percent(20) || self.fire(Misbehaviour::NotOffered) {
            for _ in 0..self.rng.range(1, 2) {
                disabled.push(self.rng.pick(&self.catalogue.registered).0.to_string());
            }
            if self.rng.percent(20) {
                disabled.push((*self.rng.pick(UNKNOWN_TOOLS)).to_owned());
            }
            disabled.sort();
            disabled.dedup();
        }
        let catalogue: &'p Catalogue = self.catalogue;
        let offered: Vec<&'p (Arc<str>, bool)> = catalogue
            .registered
            .iter()
            .filter(|(name, reads)| {
                (!read_only || *reads) && !disabled.iter().any(|off| **off == **name)
            })
            .collect();
        let mut plan = RunPlan {
            read_only,
            disabled,
            configured: Vec::new(),
            offered,
            limits: LimitsScript::default(),
            answers: Vec::new(),
            tools: BTreeMap::new(),
            ids: CallIds::default(),
            first_batch: None,
        };
        let prompt = self.prompt(&mut plan);
        self.limits(&mut plan);
        self.behaviours(&mut plan);
        let turns = self.turns(&mut plan);
        let cancel_at_ms = if self.fire(Misbehaviour::Cancel) {
            Some(if self.rng.percent(70) {
                self.rng.range(0, 120)
            } else {
                self.rng.range(0, 5_000)
            })
        } else {
            None
        };
        RunScript {
            prompt,
            read_only,
            disabled_tools: plan.disabled,
            secrets: plan.configured,
            limits: plan.limits,
            cancel_at_ms,
            answers: plan.answers,
            tools: Arc::new(plan.tools),
            turns,
        }
    }

    /// The prompt, with planted secrets and the run's configured values in it.
    fn prompt(&mut self, plan: &mut RunPlan<'p>) -> String {
        let mut prompt = String::from(*self.rng.pick(PROMPT_SENTENCES));
        if self.rng.percent(55) {
            for _ in 0..self.rng.range(1, 2) {
                let secret = if self.fire(Misbehaviour::EdgeSecrets) {
                    let chars = if self.rng.percent(20) { 7 } else { 8 };
                    secrets::configured_of(&mut self.rng, &mut self.labels, chars)
                } else {
                    secrets::configured(&mut self.rng, &mut self.labels)
                };
                push_sentence(&mut prompt, &vocabulary::gives_key(&secret.value));
                plan.configured.push(secret.label.clone());
                self.secrets.push(secret);
            }
        }
        if self.rng.percent(25) {
            let (secret, planting) =
                secrets::configured_touching_a_key(&mut self.rng, &mut self.labels);
            push_sentence(&mut prompt, &planting.text);
            plan.configured.push(secret.label.clone());
            self.secrets.push(secret);
            self.secrets.extend(planting.parts);
        }
        if self.rng.percent(15) {
            let (first, second, text) =
                secrets::overlapping_configured(&mut self.rng, &mut self.labels);
            push_sentence(&mut prompt, &text);
            plan.configured.push(first.label.clone());
            plan.configured.push(second.label.clone());
            self.secrets.push(first);
            self.secrets.push(second);
        }
        if self.fire(Misbehaviour::NestedSecrets) {
            let planting = secrets::nested(&mut self.rng, &mut self.labels);
            push_sentence(&mut prompt, &planting.text);
            plan.configured.extend(
                (planting.parts.iter())
                    .filter(|part| part.shape == SecretShape::Configured)
                    .map(|part| part.label.clone()),
            );
            self.secrets.extend(planting.parts);
        }
        if self.rng.percent(60) {
            for _ in 0..self.rng.range(1, 3) {
                let planting = match self.rng.below(4) {
                    _ if self.fire(Misbehaviour::EdgeKeys) => {
                        secrets::shortest_key(&mut self.rng, &mut self.labels)
                    }
                    0 => secrets::credential(&mut self.rng, &mut self.labels),
                    1 => secrets::key(&mut self.rng, &mut self.labels),
                    2 => secrets::home_path(&mut self.rng, &mut self.labels),
                    _ => secrets::url_password(&mut self.rng, &mut self.labels),
                };
                push_sentence(&mut prompt, &planting.text);
                self.secrets.extend(planting.parts);
            }
        }
        prompt
    }

    fn limits(&mut self, plan: &mut RunPlan<'p>) {
        if self.fire(Misbehaviour::EdgeLimits) {
            let index = self.rng.range_usize(0, LIMIT_RANGES.len() - 1);
            let (_, low, high) = LIMIT_RANGES[index];
            let bound = if self.rng.percent(50) { low } else { high };
            let value = (bound + self.rng.range(0, 2)).checked_sub(1);
            let limits = &mut plan.limits;
            match (index, value) {
                (_, None) => {}
                (0, Some(value)) => limits.turns_max = Some(value as u32),
                (1, Some(value)) => limits.calls_per_batch_max = Some(value as u32),
                (2, Some(value)) => limits.provider_timeout_ms = Some(value),
                (3, Some(value)) => limits.inactivity_timeout_ms = Some(value),
                (_, Some(value)) => limits.provider_retries_max = Some(value as u32),
            }
            return;
        }
        if self.fire(Misbehaviour::EndlessLoop) {
            plan.limits.turns_max = Some(self.rng.range(1, 4) as u32);
        }
        if self.fire(Misbehaviour::OverCap) {
            plan.limits.calls_per_batch_max = Some(self.rng.range(1, 4) as u32);
        }
    }

    fn behaviours(&mut self, plan: &mut RunPlan<'p>) {
        let catalogue: &Catalogue = self.catalogue;
        debug_assert!(plan.tools.is_empty());
        plan.tools = catalogue
            .registered
            .iter()
            .filter_map(|(name, _)| {
                let behaviour = self.rng.percent(60).then(|| ToolBehaviour {
                    latency_ms: self.rng.range(1, 40),
                    effect: Effect::None,
                })?;
                Some((Arc::clone(name), behaviour))
            })
            .collect();
        if self.fire(Misbehaviour::ToolFaults) {
            for _ in 0..self.rng.range(1, 2) {
                let name = Arc::clone(&self.rng.pick(&self.catalogue.registered).0);
                let effect = match self.rng.below(3) {
                    0 => Effect::Fail,
                    1 => Effect::Panic,
                    _ => match plan.configured.first() {
                        Some(label) => Effect::LeakSecret {
                            label: label.clone(),
                            fail: self.rng.percent(50),
                        },
                        None => Effect::Fail,
                    },
                };
                plan.tools.entry(name).or_default().effect = effect;
            }
            // A write that fails after doing part of its work.
            if !plan.read_only {
                let write = self.rng.pick(&[
                    "drawings_copy",
                    "pane_replace_content",
                    "settings_update",
                    "drawing_create",
                ]);
                plan.tools.entry(Arc::from(*write)).or_default().effect = Effect::Fail;
            }
        }
        if self.fire(Misbehaviour::EdgeDeadline) {
            self.deadline_edge(plan);
        } else if self.fire(Misbehaviour::SlowTools) {
            let timeout = self.rng.range(1_000, 3_000);
            plan.limits.inactivity_timeout_ms = Some(timeout);
            let slow = Arc::clone(self.rng.pick(&self.catalogue.reads));
            plan.tools.entry(slow).or_default().latency_ms = timeout + self.rng.range(1, 2_000);
        }
        if self.fire(Misbehaviour::FollowInjection) {
            let carrier: Arc<str> =
                Arc::from(*self.rng.pick(&["web_search", "panes_list", "settings_get"]));
            let target = if plan.disabled.is_empty() || self.rng.percent(60) {
                (*self.rng.pick(&[
                    "drawings_clear",
                    "panes_clear",
                    "settings_reset",
                    "comparisons_clear",
                ]))
                .to_owned()
            } else {
                self.rng.pick(&plan.disabled).clone()
            };
            plan.tools.entry(carrier).or_default().effect = Effect::Inject {
                tool: target,
                arguments: "{}".to_owned(),
            };
        }
    }

    /// A tool that ends the inactivity timeout − 1, exactly or + 1 ms after the last activity
    /// (R19). That activity is the run's start, or, just before the timeout would fire, the
    /// provider's reply (it answers at timeout − 1 ms) or another call of the same parallel
    /// batch finishing (its body takes timeout − 1 ms); either resets the deadline, so the slow
    /// body ends at the new deadline ± 1 ms.
    fn deadline_edge(&mut self, plan: &mut RunPlan<'p>) {
        let timeout = self.rng.range(1_000, 3_000);
        plan.limits.inactivity_timeout_ms = Some(timeout);
        let latency = around(&mut self.rng, timeout);
        let parallel = &self.catalogue.parallel_reads;
        let slow = match self.rng.below(3) {
            0 => {
                let slow = Arc::clone(&self.rng.pick(&self.catalogue.registered).0);
                plan.tools.entry(slow).or_default().latency_ms = latency;
                return;
            }
            1 => {
                let slow = Arc::clone(self.rng.pick(parallel));
                plan.first_batch = Some(FirstBatch::AfterReply {
                    delay_ms: timeout - 1,
                    tool: Arc::clone(&slow),
                });
                plan.tools.entry(Arc::clone(&slow)).or_default().latency_ms = latency;
                slow
            }
            _ => {
                // Two different tools: the second is 1 to len − 1 places after the first.
                let first = self.rng.range_usize(0, parallel.len() - 1);
                let second = (first + self.rng.range_usize(1, parallel.len() - 1)) % parallel.len();
                let (quick, slow) = (Arc::clone(&parallel[first]), Arc::clone(&parallel[second]));
                plan.tools.entry(Arc::clone(&quick)).or_default().latency_ms = timeout - 1;
                plan.tools.entry(Arc::clone(&slow)).or_default().latency_ms = timeout - 1 + latency;
                plan.first_batch = Some(FirstBatch::Pair {
                    quick,
                    slow: Arc::clone(&slow),
                });
                slow
            }
        };
        // The slow body must do no other work the scenario drew for it.
        plan.tools.entry(slow).or_default().effect = Effect::None;
    }

    fn turns(&mut self, plan: &mut RunPlan<'p>) -> Vec<Turn> {
        let turns_max = plan.limits.turns_max.unwrap_or(8) as u64;
        let edge = self.fire(Misbehaviour::EdgeTurns);
        let call_turns = if edge {
            around(&mut self.rng, turns_max).max(1)
        } else if plan.limits.turns_max.is_some() {
            turns_max + self.rng.range(1, 2)
        } else {
            self.rng.range(1, 4)
        };
        let mut turns = Vec::new();
        let mut react_next = Vec::new();
        for _ in 0..call_turns {
            self.provider_trouble(plan, &mut turns);
            let (calls, reactions, delay_ms) = match plan.first_batch.take() {
                Some(FirstBatch::AfterReply { delay_ms, tool }) => {
                    (vec![self.call_to(plan, &tool)], Vec::new(), delay_ms)
                }
                Some(FirstBatch::Pair { quick, slow }) => {
                    let calls = vec![self.call_to(plan, &quick), self.call_to(plan, &slow)];
                    (calls, Vec::new(), 0)
                }
                None => {
                    let (calls, reactions) = self.batch(plan);
                    let delay_ms = if self.fire(Misbehaviour::EdgeProviderTimeout) {
                        around(&mut self.rng, PROVIDER_TIMEOUT_MS)
                    } else {
                        0
                    };
                    (calls, reactions, delay_ms)
                }
            };
            turns.push(Turn {
                delay_ms,
                calls,
                react: std::mem::take(&mut react_next),
                ..Turn::default()
            });
            react_next = reactions;
            if !edge && self.rng.percent(10) {
                break;
            }
        }
        self.provider_trouble(plan, &mut turns);
        turns.push(Turn {
            text: vocabulary::FINAL_REPLY.to_owned(),
            react: react_next,
            ..Turn::default()
        });
        turns
    }

    /// Provider errors and timeouts before a step. An error's message may carry one of the
    /// run's configured values (the runtime's guard must keep it out of `run.failed`).
    fn provider_trouble(&mut self, plan: &RunPlan<'p>, turns: &mut Vec<Turn>) {
        if self.fire(Misbehaviour::EdgeRetries) {
            let errors = RETRIES_MAX + self.rng.range(0, 1);
            for _ in 0..errors {
                let retry_after_ms = self
                    .rng
                    .percent(50)
                    .then(|| around(&mut self.rng, RETRY_WAIT_MAX_MS));
                let leak = self.leak(plan);
                turns.push(Turn {
                    error: Some(ProviderFailure {
                        kind: FailureKind::RateLimited,
                        retry_after_ms,
                        leak,
                    }),
                    ..Turn::default()
                });
            }
        }
        if self.fire(Misbehaviour::ProviderErrors) {
            let kind = if self.rng.percent(85) {
                *self.rng.pick(&[
                    FailureKind::RateLimited,
                    FailureKind::Unavailable,
                    FailureKind::MalformedResponse,
                ])
            } else {
                *self.rng.pick(&[
                    FailureKind::Authentication,
                    FailureKind::Permission,
                    FailureKind::ModelNotFound,
                ])
            };
            let retry_after_ms = (kind == FailureKind::RateLimited && self.rng.percent(50))
                .then(|| self.rng.range(100, 90_000));
            let leak = self.leak(plan);
            turns.push(Turn {
                error: Some(ProviderFailure {
                    kind,
                    retry_after_ms,
                    leak,
                }),
                ..Turn::default()
            });
        }
        if self.fire(Misbehaviour::ProviderTimeout) {
            turns.push(Turn {
                delay_ms: 60_001,
                text: "too late".to_owned(),
                ..Turn::default()
            });
        }
    }

    /// Now and then, the label of one of the run's configured values for an error to carry.
    fn leak(&mut self, plan: &RunPlan<'p>) -> Option<String> {
        if plan.configured.is_empty() || !self.rng.percent(30) {
            return None;
        }
        Some(self.rng.pick(&plan.configured).clone())
    }

    /// One batch of calls, and the reactions its results call for next turn.
    fn batch(&mut self, plan: &mut RunPlan<'p>) -> (Vec<CallScript>, Vec<Reaction>) {
        let size = match plan.limits.calls_per_batch_max {
            _ if self.fire(Misbehaviour::EdgeBatch) => {
                let cap = plan.limits.calls_per_batch_max.unwrap_or(32) as u64;
                around(&mut self.rng, cap).max(1)
            }
            Some(cap) if self.rng.percent(70) => cap as u64 + self.rng.range(1, 3),
            _ => self.rng.range(1, 4),
        };
        let mut calls = Vec::new();
        let mut reactions = Vec::new();
        for _ in 0..size {
            let call = self.call(plan, &mut reactions);
            calls.push(call);
        }
        if self.fire(Misbehaviour::MixedBatch) {
            let read = self.plausible(plan, true);
            calls.insert(0, read);
            if !plan.read_only || self.rng.percent(50) {
                let sequential = if self.rng.percent(70) {
                    self.rng.pick(&self.catalogue.writes).to_string()
                } else {
                    "ask_user".to_owned()
                };
                let call = self.call_to(plan, &sequential);
                calls.push(call);
            }
        }
        if self.fire(Misbehaviour::BadIds) && !calls.is_empty() {
            let position = self.rng.range_usize(0, calls.len() - 1);
            calls[position].id = match self.rng.below(3) {
                0 => String::new(),
                1 => vocabulary::overlong_call_id(),
                _ => calls[0].id.clone(),
            };
            if position == 0 && calls.len() > 1 {
                calls[1].id = calls[0].id.clone();
            }
        }
        if self.fire(Misbehaviour::EdgeId) {
            let position = self.rng.range_usize(0, calls.len() - 1);
            let chars = around(&mut self.rng, CALL_ID_CHARS_MAX) as usize;
            let letter = if self.rng.percent(50) { 'x' } else { 'é' };
            calls[position].id = vocabulary::call_id_of(&calls[position].id, chars, letter);
        }
        if plan
            .tools
            .values()
            .any(|behaviour| matches!(behaviour.effect, Effect::Inject { .. }))
        {
            reactions.push(Reaction::FollowInjection);
        }
        reactions.dedup();
        (calls, reactions)
    }

    /// A call to a tool offered in the run, with valid arguments.
    fn plausible(&mut self, plan: &mut RunPlan<'p>, reads_only: bool) -> CallScript {
        self.plausible_with_value(plan, reads_only).0
    }

    /// [`plausible`](Self::plausible), with its arguments as a value.
    fn plausible_with_value(
        &mut self,
        plan: &mut RunPlan<'p>,
        reads_only: bool,
    ) -> (CallScript, Value) {
        let candidates = plan
            .offered
            .iter()
            .filter(|(name, reads)| (!reads_only || *reads) && &**name != "ask_user")
            .map(|(name, _)| &**name);
        let name = self
            .rng
            .pick_from(candidates)
            .unwrap_or("panes_list")
            .to_owned();
        self.call_with_value(plan, &name)
    }

    fn call_to(&mut self, plan: &mut RunPlan<'p>, name: &str) -> CallScript {
        self.call_with_value(plan, name).0
    }

    fn call_with_value(&mut self, plan: &mut RunPlan<'p>, name: &str) -> (CallScript, Value) {
        let value = self.valid_value(name);
        if name == "ask_user" {
            let delay_ms = if self.rng.percent(20) {
                self.rng.range(1_000, 600_000)
            } else {
                self.rng.range(0, 500)
            };
            let text = (!self.rng.percent(10)).then(|| vocabulary::ANSWER.to_owned());
            plan.answers.push(Answer { text, delay_ms });
        }
        let call = CallScript {
            id: plan.ids.next_id(),
            name: name.to_owned(),
            arguments: args::text(&value),
            fix: None,
        };
        (call, value)
    }

    fn valid_value(&mut self, name: &str) -> Value {
        match self.plan.arguments.get(name) {
            Some((_, arguments)) => arguments.valid(&mut self.rng),
            None => json!({}),
        }
    }

    /// The published schema of `name` (an empty schema for an unknown name).
    fn schema(&self, name: &str) -> &'p Value {
        static EMPTY: Value = Value::Null;
        let plan: &'p Plan = self.plan;
        plan.arguments
            .get(name)
            .map_or(&EMPTY, |(schema, _)| schema)
    }

    /// One call: plausible, or misbehaving as the swarm decides.
    fn call(&mut self, plan: &mut RunPlan<'p>, reactions: &mut Vec<Reaction>) -> CallScript {
        if self.fire(Misbehaviour::NotOffered) {
            let name = match self.rng.below(3) {
                0 => self.rng.pick(&self.catalogue.writes).to_string(),
                1 if !plan.disabled.is_empty() => self.rng.pick(&plan.disabled).clone(),
                _ => (*self.rng.pick(UNKNOWN_TOOLS)).to_owned(),
            };
            return self.call_to(plan, &name);
        }
        let asks = self.rng.percent(8) || self.fire(Misbehaviour::AskUser);
        if asks && plan.offered.iter().any(|(name, _)| &**name == "ask_user") {
            return self.call_to(plan, "ask_user");
        }
        let reads_only = plan.read_only || self.rng.percent(45);
        let (mut call, valid) = self.plausible_with_value(plan, reads_only);
        let schema = self.schema(&call.name);
        if self.fire(Misbehaviour::EdgeErrors) {
            let errors = around(&mut self.rng, FIELD_ERRORS_MAX) as usize;
            let nested = self
                .rng
                .percent(50)
                .then(|| args::invalid_nested(&mut self.rng, &valid, errors))
                .flatten();
            let invalid =
                nested.unwrap_or_else(|| args::invalid(&mut self.rng, &valid, schema, errors));
            call.arguments = args::text(&invalid);
            call.fix = Some(args::text(&valid));
        } else if self.fire(Misbehaviour::EdgePayload) {
            let bytes = around(&mut self.rng, ARGUMENT_BYTES_MAX) as usize;
            call.arguments = args::padded(&call.arguments, bytes);
        } else if self.fire(Misbehaviour::InvalidArgs) {
            let errors = self.rng.range_usize(1, 3);
            call.arguments = args::text(&args::invalid(&mut self.rng, &valid, schema, errors));
            call.fix = Some(args::text(&valid));
            if self.rng.percent(70) {
                reactions.push(Reaction::RetryInvalid);
            }
        } else if self.fire(Misbehaviour::ManyErrors) {
            let errors = self.rng.range_usize(6, 10);
            call.arguments = args::text(&args::invalid(&mut self.rng, &valid, schema, errors));
            call.fix = Some(args::text(&valid));
        } else if self.fire(Misbehaviour::DuplicateKeys) {
            call.arguments = args::with_duplicate_key(&valid);
        } else if self.fire(Misbehaviour::NotJson) {
            call.arguments = args::not_json(&mut self.rng, &call.arguments);
        } else if self.swarm.rate(Misbehaviour::HugeArgs) > 0
            && self.rng.percent(3)
            && self.fire(Misbehaviour::HugeArgs)
        {
            call.arguments = args::oversized(&valid);
        } else if !plan.configured.is_empty() && self.fire(Misbehaviour::EdgeSecrets) {
            let label = self.rng.pick(&plan.configured).clone();
            let chars = around(&mut self.rng, 8) as usize;
            let fragment: String = self
                .secrets
                .iter()
                .find(|secret| secret.label == label)
                .map(|secret| secret.value.chars().take(chars).collect())
                .unwrap_or_default();
            let (tool, arguments) = vocabulary::echo(&fragment, false);
            call.name = tool.to_owned();
            call.arguments = arguments;
        } else if !plan.configured.is_empty() && self.fire(Misbehaviour::EchoSecret) {
            let label = self.rng.pick(&plan.configured).clone();
            let value = self
                .secrets
                .iter()
                .find(|secret| secret.label == label)
                .map(|secret| secret.value.clone())
                .unwrap_or_default();
            let (tool, arguments) = vocabulary::echo(&value, self.rng.percent(30));
            call.name = tool.to_owned();
            call.arguments = arguments;
        }
        call
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ward_core::chart::tools::{CatalogueOptions, registry};

    #[test]
    fn the_same_seed_generates_the_same_scenario() {
        let registry = registry(CatalogueOptions {
            code_interpreter: true,
        })
        .unwrap();
        for seed in 0..50 {
            let first = generate(seed, &registry, None);
            let second = generate(seed, &registry, None);
            assert_eq!(first.scenario, second.scenario);
            assert_eq!(first.misbehaviours, second.misbehaviours);
        }
        assert_ne!(
            generate(1, &registry, None).scenario,
            generate(2, &registry, None).scenario
        );
    }

    #[test]
    fn generated_scenarios_are_valid_scenario_files() {
        let registry = registry(CatalogueOptions {
            code_interpreter: true,
        })
        .unwrap();
        for seed in 0..100 {
            let scenario = generate(seed, &registry, Some(Fault::NoTurnLimit)).scenario;
            let text = scenario.to_json();
            let back = Scenario::from_json(&text, "generated")
                .unwrap_or_else(|error| panic!("seed {seed}: {error}"));
            assert_eq!(back, scenario);
        }
    }
}

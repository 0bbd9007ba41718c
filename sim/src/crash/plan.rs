//! A crash explorer's plan (SPEC §16): one session's runs, the provider's script per turn, the
//! secrets, and the crashes, all drawn from one seed.
//!
//! Calls are drawn from the chart catalogue: reads (`panes_list`, `drawings_list`,
//! `settings_get`), chart writes that are not idempotent (`drawing_create`: a second
//! application is a second drawing, so a write applied twice shows in the chart), the outside
//! effect of `code_interpreter` (R32), invalid input, and a configured secret in arguments
//! (`SECRET_IN_INPUT`, journaled with its refusal), and `ask_user`, whose user cancels the
//! run and never answers (R20: the batch stops there). Runs are read-only one time in three,
//! switch `drawing_create` off one time in four, and a script may hold more batches than the
//! run's turn limit. Call ids are unique in the
//! session, so that a body is named by its run and its id.

use ward_core::tool::ToolCall;

use crate::rng::SimRng;
use crate::scenario::{
    Answer, CallScript, LimitsScript, PlantedSecret, RunScript, SCENARIO_VERSION, Scenario,
    SecretShape, SessionScript, Turn,
};

/// How a process dies at a storage call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum CrashKind {
    /// The process is killed: the disk is cut at the call, the operating system keeps what
    /// was written.
    Kill,
    /// The power is lost at the call: unsynced writes are dropped, torn or kept.
    PowerLoss,
    /// The write at the call fails (the store stops, R35); then the process is killed.
    WriteError,
    /// The sync at the call fails (the store stops, R35); then the power is lost.
    SyncError,
    /// Not at a storage call but at a lockstep boundary (SPEC §17 P9): the runtime is
    /// dropped after the answer numbered `at` (counted from 1 over the whole execution), as
    /// a kill between two messages leaves it, and started again on the files its store kept.
    /// The crash of any durable runtime, ward's core on real files or one behind an adapter.
    Drop,
}

impl CrashKind {
    /// Every kind at a storage call of the simulated disk, in the order the summary counts
    /// them ([`CrashKind::Drop`] is counted after them).
    pub const ALL: [CrashKind; 4] = [
        CrashKind::Kill,
        CrashKind::PowerLoss,
        CrashKind::WriteError,
        CrashKind::SyncError,
    ];

    /// The kind's name.
    pub fn name(self) -> &'static str {
        match self {
            CrashKind::Kill => "kill",
            CrashKind::PowerLoss => "powerLoss",
            CrashKind::WriteError => "writeError",
            CrashKind::SyncError => "syncError",
            CrashKind::Drop => "drop",
        }
    }
}

/// One crash: at the storage call `at`, counted from 0 over the whole execution (each process
/// takes the calls after those of the processes before it), of `kind`. A process that makes
/// no call past it dies at its first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Crash {
    /// The storage call; for a drop, the answer after which the runtime is dropped.
    pub at: u64,
    /// How the process dies.
    pub kind: CrashKind,
}

/// One run of the session.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunPlan {
    /// The prompt, raw: it holds a configured secret and a planted credential.
    pub prompt: String,
    /// Whether the run is read-only.
    pub read_only: bool,
    /// The run's turn limit.
    pub turns_max: u32,
    /// The tools switched off (R13; R34 keeps them on resume).
    pub disabled: Vec<String>,
    /// The provider's reply per turn: its calls (empty: the reply that ends the run). Past
    /// the script, the provider replies without calls.
    pub replies: Vec<Vec<ToolCall>>,
}

/// One session to explore.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Plan {
    /// The seed everything was drawn from.
    pub seed: u64,
    /// The configured secrets of every run.
    pub secrets: Vec<String>,
    /// The planted credentials, one per prompt (they must never reach the disk, I18).
    pub planted: Vec<String>,
    /// The runs, in order.
    pub runs: Vec<RunPlan>,
    /// The crashes, in order: the first kills the first process, and so on.
    pub crashes: Vec<Crash>,
}

const ALPHABET: &[u8] = b"ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789";

fn token(rng: &mut SimRng, chars: usize) -> String {
    (0..chars)
        .map(|_| char::from(*rng.pick(ALPHABET)))
        .collect()
}

fn call(id: String, name: &str, arguments: String) -> ToolCall {
    ToolCall {
        id,
        name: name.to_owned(),
        arguments,
    }
}

/// The plan of `seed`, without crashes ([`Plan::draw_crashes`] adds them).
pub fn generate(seed: u64) -> Plan {
    let mut rng = SimRng::new(seed ^ 0xc7a5_4d1e_0b5e_ed11);
    let secret = format!("cfg{}", token(&mut rng, 21));
    let mut planted = Vec::new();
    let mut next_id = 0_u32;
    let runs = (0..rng.range(1, 3))
        .map(|_| {
            let credential = token(&mut rng, 28);
            planted.push(credential.clone());
            let prompt = format!(
                "Mark the last swing high. Authorization: Bearer {credential}\nMy key is {secret}, keep it safe."
            );
            let turns_max = u32::try_from(rng.range(1, 4)).unwrap_or(1);
            // Up to one batch more than the limit allows, and one more still: the reply past
            // the limit ends the run, so a run that miscounts its turns runs a batch too many.
            let batches = rng.range(0, u64::from(turns_max) + 2);
            let mut replies: Vec<Vec<ToolCall>> = (0..batches)
                .map(|_| {
                    (0..rng.range(1, 3))
                        .map(|_| {
                            next_id += 1;
                            // One call in twelve has 10 characters of the secret in its id:
                            // the guard changes it, and it runs as sent (R22).
                            let id = if rng.percent(8) {
                                format!("call_{next_id}_{}", &secret[3..13])
                            } else {
                                format!("call_{next_id}")
                            };
                            draw_call(&mut rng, id, &secret)
                        })
                        .collect()
                })
                .collect();
            replies.push(Vec::new());
            let disabled = if rng.percent(25) {
                vec!["drawing_create".to_owned()]
            } else {
                Vec::new()
            };
            RunPlan {
                prompt,
                read_only: rng.percent(33),
                turns_max,
                disabled,
                replies,
            }
        })
        .collect();
    Plan {
        seed,
        secrets: vec![secret],
        planted,
        runs,
        crashes: Vec::new(),
    }
}

fn draw_call(rng: &mut SimRng, id: String, secret: &str) -> ToolCall {
    match rng.below(11) {
        // 10 characters of the secret in free text: admitted as sent, changed by the guard.
        10 => call(
            id,
            "web_search",
            format!(r#"{{"query":"release notes {}"}}"#, &secret[3..13]),
        ),
        9 => call(
            id,
            "ask_user",
            r#"{"question":"Which swing high?","options":["the last","the highest"]}"#.to_owned(),
        ),
        0 => call(id, "panes_list", "{}".to_owned()),
        1 => call(id, "drawings_list", "{}".to_owned()),
        2 => call(id, "settings_get", "{}".to_owned()),
        3..=5 => {
            let price = rng.range(1, 100_000);
            call(
                id,
                "drawing_create",
                format!(
                    r#"{{"kind":"horizontal-line","paneId":"main","anchors":[{{"price":{price}}}]}}"#
                ),
            )
        }
        6 => call(
            id,
            "code_interpreter",
            r#"{"language":"python","code":"print(sum(range(10)))"}"#.to_owned(),
        ),
        7 => call(id, "drawing_create", r#"{"kind":"spiral"}"#.to_owned()),
        _ => call(id, "settings_get", format!(r#"{{"note":"{secret}"}}"#)),
    }
}

/// The prompt of the run that closes every plan's session ([`Plan::scenario`]).
pub const CLOSING_PROMPT: &str = "Say what the chart shows now.";

impl Plan {
    /// The plan as a scenario the world plays through the protocol: one session whose runs
    /// are the plan's (each reply a turn, `Turn t of run r.` its text), every `ask_user`
    /// answered by a user who cancels the run, the configured values (labelled
    /// `configured-N`) configured in every run, each planted credential (`planted-N`)
    /// labelled, and `code_interpreter` registered; then one closing read-only run
    /// ([`CLOSING_PROMPT`], answered without calls), whose first request shows the whole
    /// session as the runtime kept it: the end of the plan's last run, which a crash may
    /// have cut after the store kept it and before anything showed it, is seen there.
    pub fn scenario(&self) -> Scenario {
        let configured: Vec<String> = (0..self.secrets.len())
            .map(|index| format!("configured-{index}"))
            .collect();
        let secrets =
            (self.secrets.iter().zip(&configured))
                .map(|(value, label)| (label.clone(), value, SecretShape::Configured))
                .chain((self.planted.iter().enumerate()).map(|(index, value)| {
                    (format!("planted-{index}"), value, SecretShape::Credential)
                }))
                .map(|(label, value, shape)| PlantedSecret {
                    label,
                    value: value.clone(),
                    shape,
                })
                .collect();
        let mut runs: Vec<RunScript> = (self.runs.iter().enumerate())
            .map(|(number, run)| run.script(number, &configured))
            .collect();
        runs.push(RunScript {
            prompt: CLOSING_PROMPT.to_owned(),
            read_only: true,
            disabled_tools: Vec::new(),
            secrets: configured.clone(),
            limits: LimitsScript::default(),
            cancel_at_ms: None,
            answers: Vec::new(),
            tools: std::sync::Arc::default(),
            turns: Vec::new(),
        });
        Scenario {
            version: SCENARIO_VERSION,
            seed: Some(self.seed),
            description: None,
            bug: None,
            chart_seed: 0,
            code_interpreter: true,
            secrets,
            sessions: vec![SessionScript { runs }],
            expect: None,
        }
    }

    /// How many calls the plan's replies hold, in all runs.
    pub fn calls(&self) -> usize {
        (self.runs.iter())
            .flat_map(|run| &run.replies)
            .map(Vec::len)
            .sum()
    }

    /// Draws one to four crashes, each at a storage call below `storage_calls` (what the
    /// reference made in all) counted over the whole execution, in order, of a kind drawn
    /// evenly.
    pub fn draw_crashes(&mut self, storage_calls: u64) {
        let mut rng = SimRng::new(self.seed ^ 0x0c4a_54e5_9b1d_2f37);
        let count = rng.range(1, 4);
        let mut crashes: Vec<Crash> = (0..count)
            .map(|_| Crash {
                at: rng.below(storage_calls.max(1)),
                kind: *rng.pick(&CrashKind::ALL),
            })
            .collect();
        crashes.sort_by_key(|crash| crash.at);
        self.crashes = crashes;
    }

    /// Draws one to four drops of the runtime ([`CrashKind::Drop`]), each after an answer
    /// from 1 to `boundaries` (what the reference passed in all), in order.
    pub fn draw_drops(&mut self, boundaries: u64) {
        let mut rng = SimRng::new(self.seed ^ 0x0d50_9c1e_77a3_b40f);
        let count = rng.range(1, 4);
        let mut crashes: Vec<Crash> = (0..count)
            .map(|_| Crash {
                at: 1 + rng.below(boundaries.max(1)),
                kind: CrashKind::Drop,
            })
            .collect();
        crashes.sort_by_key(|crash| crash.at);
        self.crashes = crashes;
    }

    /// Whether the plan's crashes are drops at lockstep boundaries, which any durable runtime
    /// can be given, rather than faults of the simulated disk.
    pub fn drops(&self) -> bool {
        self.crashes
            .iter()
            .any(|crash| crash.kind == CrashKind::Drop)
    }
}

impl RunPlan {
    /// The run as a scenario's run, number `number` of its session.
    fn script(&self, number: usize, configured: &[String]) -> RunScript {
        let asks = (self.replies.iter().flatten())
            .filter(|call| call.name == "ask_user")
            .count();
        let cancelling = Answer {
            text: None,
            delay_ms: 0,
            cancels: true,
        };
        let turns = (self.replies.iter().enumerate())
            .map(|(turn, calls)| Turn {
                text: format!("Turn {turn} of run {number}."),
                calls: (calls.iter())
                    .map(|call| CallScript {
                        id: call.id.clone(),
                        name: call.name.clone(),
                        arguments: call.arguments.clone(),
                        fix: None,
                    })
                    .collect(),
                ..Turn::default()
            })
            .collect();
        RunScript {
            prompt: self.prompt.clone(),
            read_only: self.read_only,
            disabled_tools: self.disabled.clone(),
            secrets: configured.to_vec(),
            limits: LimitsScript {
                turns_max: Some(self.turns_max),
                ..LimitsScript::default()
            },
            cancel_at_ms: None,
            answers: vec![cancelling; asks],
            tools: std::sync::Arc::default(),
            turns,
        }
    }
}

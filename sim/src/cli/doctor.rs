//! `ward doctor --runtime CMD [--seeds A..B]`: checks an adapter before a campaign (SPEC §18,
//! P15), at its boundary only, and names each problem with what to fix.
//!
//! - **Handshake** (P1): `hello` answered by `ready` with a protocol version ward speaks.
//! - **Protocol** (P3, P6): every message of a few fixed scenarios from `corpus/scenarios/`
//!   (parallel reads, a sequential write batch, `ask_user`, cancels, a turn limit) and of the
//!   generated seeds is a message of the schema, in its place in the exchange.
//! - **Determinism** (P4, I11): each seed of `--seeds` run twice gives the same trace digest.
//! - **Clock** (P4): how far the runtime's clock is ward's. A reply ward delivers at virtual
//!   instant `t` is answered at once, so the reply's `assistant.message.completed` must say
//!   `timeMs` `t`; a runtime reading a clock ward does not move (`Date.now()`, `time.monotonic()`,
//!   a timer of the real event loop) says another instant. Scenarios and seeds hold some replies
//!   late by seconds or minutes of virtual time, which a real clock cannot match by chance.
//! - **Crashes** (P7–P9), of a durable runtime only: the crash plans of the first three seeds
//!   of `--seeds`, each played twice: every crash and `recover` answered, and the same crash
//!   digest both times.
//! - **Claims** (P2, P14): which invariants the adapter's claims switch on, and for each one
//!   left `not claimed` the rules it is missing; a rule neither claimed nor given a sentence
//!   in `ready.notes` is a problem.
//!
//! A fixed scenario's verdict on the invariants is not the doctor's business (that is a
//! campaign's): the doctor reports only what keeps a campaign from meaning anything.
//! Exit 0 when healthy, 1 with a problem, 2 on misuse.

use std::ops::Range;
use std::process::ExitCode;

use clap::Args;
use ward_core::events::EventKind;
use ward_core::fault::FaultSet;

use crate::oracle::{Invariant, Violation};
use crate::protocol::Ready;
use crate::scenario::Scenario;
use crate::simulate::{Checked, Engine};
use crate::world::{Record, Trace};

/// The fixed scenarios, by name: each situation an adapter must carry once.
const SCENARIOS: [(&str, &str); 7] = [
    (
        "parallel reads",
        include_str!("../../../corpus/scenarios/parallel-reads-start-together.json"),
    ),
    (
        "a mixed batch",
        include_str!("../../../corpus/scenarios/mixed-batch.json"),
    ),
    (
        "a sequential batch",
        include_str!("../../../corpus/scenarios/sequential-ignored.json"),
    ),
    (
        "results in call order",
        include_str!("../../../corpus/scenarios/results-in-call-order.json"),
    ),
    (
        "ask_user",
        include_str!("../../../corpus/scenarios/ask-user-in-read-only.json"),
    ),
    (
        "a cancel mid-batch",
        include_str!("../../../corpus/scenarios/cancel-mid-batch.json"),
    ),
    (
        "the turn limit",
        include_str!("../../../corpus/scenarios/endless-tool-loop.json"),
    ),
];

/// Arguments of `ward doctor`.
#[derive(Args, Debug, Clone)]
pub struct DoctorArgs {
    /// The adapter command to check (run with `sh -c`; PROTOCOL.md).
    #[arg(long)]
    pub runtime: String,
    /// Seeds run twice each for determinism: `A..B` or `N` (meaning `0..N`).
    #[arg(long, default_value = "0..10", value_parser = super::run::parse_seeds)]
    pub seeds: Range<u64>,
}

/// One problem: what is wrong, and what to fix.
struct Problem {
    check: &'static str,
    what: String,
    fix: &'static str,
}

/// Checks the adapter.
pub fn run(args: &DoctorArgs) -> ExitCode {
    let engine = Engine::with_runtime(&args.runtime);
    say!("ward doctor: {}", args.runtime);
    let mut problems = Vec::new();
    let mut traces = Vec::new();
    for (name, text) in SCENARIOS {
        let scenario = fixed(text);
        let checked = engine.check(&scenario, FaultSet::default());
        protocol(name, &checked, &mut problems);
        traces.push(checked.trace);
        if engine.ready().is_none() {
            break;
        }
    }
    let Some(ready) = engine.ready() else {
        let what = problems.first().map_or_else(
            || "the adapter did not answer `hello` with `ready`".to_owned(),
            |problem| problem.what.clone(),
        );
        say!("handshake: problem: {what}");
        say!("  fix: answer `hello` with one `ready` line (PROTOCOL.md, \"The exchange\")");
        return ExitCode::from(1);
    };
    handshake(&ready);
    for seed in args.seeds.clone() {
        let outcome = engine.run_seed(seed, None, true);
        protocol("a generated seed", &outcome.checked, &mut problems);
        determinism(seed, &outcome.checked, &mut problems);
        traces.push(outcome.checked.trace);
    }
    let checks = (SCENARIOS.len(), args.seeds.end - args.seeds.start);
    say!(
        "protocol and determinism: {} fixed scenarios, {} seeds twice each",
        checks.0,
        checks.1
    );
    clock(&traces, &mut problems);
    if ready.durable.is_some() {
        crashes(&args.runtime, args.seeds.clone(), &mut problems);
    }
    claims(&ready, &mut problems);
    report(&problems)
}

/// A fixed scenario as an adapter gets it: no seeded bug of ward's core, no expectation.
fn fixed(text: &str) -> Scenario {
    let mut scenario: Scenario =
        serde_json::from_str(text).expect("the corpus's scenarios are scenarios");
    scenario.bug = None;
    scenario.expect = None;
    scenario
}

fn handshake(ready: &Ready) {
    let durable = match &ready.durable {
        Some(durable) => format!("durable: {} ({})", durable.store, durable.version),
        None => "not durable (never crashed)".to_owned(),
    };
    say!(
        "handshake: ok: {} {}, protocol {}, {} rules claimed, {}",
        ready.runtime.name,
        ready.runtime.version,
        ready.protocol,
        ready.claims.len(),
        durable
    );
}

/// P6: a message off the schema or out of its place.
fn protocol(name: &str, checked: &Checked, problems: &mut Vec<Problem>) {
    let broken = (checked.verdict.violations.iter()).find(|v| v.invariant == Invariant::P6);
    if let Some(violation) = broken {
        problems.push(Problem {
            check: "protocol",
            what: format!("{name}: {}", violation.explanation),
            fix: "send only the messages of PROTOCOL.md, each valid against sim/protocol/v2.schema.json, in answer to the message before",
        });
    }
}

/// I11: the same seed twice, another trace.
fn determinism(seed: u64, checked: &Checked, problems: &mut Vec<Problem>) {
    let differs: Option<&Violation> =
        (checked.verdict.violations.iter()).find(|v| v.invariant == Invariant::I11);
    if let Some(violation) = differs {
        problems.push(Problem {
            check: "determinism",
            what: format!("seed {seed}: {}", violation.explanation),
            fix: "seed every random source from `reset.seed` (ids, Math.random/random, crypto) and read no clock ward does not move",
        });
    }
}

/// The clock: each reply's `assistant.message.completed` at the instant ward delivered it.
fn clock(traces: &[Trace], problems: &mut Vec<Problem>) {
    let (mut matched, mut seen, mut first) = (0, 0, None);
    for run in traces.iter().flat_map(|trace| &trace.runs) {
        let mut delivered = None;
        for record in &run.records {
            match record {
                Record::Reply { at_ms, error, .. } => {
                    delivered = error.is_none().then_some(*at_ms);
                }
                Record::Event(event) => {
                    if let (EventKind::AssistantMessageCompleted { .. }, Some(at_ms)) =
                        (&event.kind, delivered.take())
                    {
                        seen += 1;
                        if event.time_ms == at_ms {
                            matched += 1;
                        } else if first.is_none() {
                            first = Some((at_ms, event.time_ms));
                        }
                    }
                }
                _ => {}
            }
        }
    }
    say!("clock: {matched} of {seen} replies reported at the instant ward delivered them");
    if let Some((at_ms, said)) = first {
        problems.push(Problem {
            check: "clock",
            what: format!(
                "{} of {seen} replies reported at another instant; the first, delivered at {at_ms} ms of the run, said `timeMs` {said}",
                seen - matched
            ),
            fix: "take every time from ward's clock: fake Date, performance.now and the timers (Node), time.monotonic, time.time and the event loop's clock (Python), and move them only on `advance` and a delivery's `atMs`",
        });
    }
}

/// The crash plans of the first seeds, each explored twice: the runtime recovers at every
/// crash, and the same plan gives the same crash digest.
fn crashes(runtime: &str, seeds: Range<u64>, problems: &mut Vec<Problem>) {
    let (mut plans, mut drops) = (0, 0);
    for seed in seeds.take(3) {
        let plan = crate::explore::plan_of_seed(seed, FaultSet::default(), Some(runtime));
        let first = crate::explore::explore_on(&plan, FaultSet::default(), Some(runtime));
        let again = crate::explore::explore_on(&plan, FaultSet::default(), Some(runtime));
        plans += 1;
        drops += plan.crashes.len();
        if let Some(failure) = &first.crashed.failure {
            problems.push(Problem {
                check: "crashes",
                what: format!("seed {seed}'s crash plan: {failure}"),
                fix: "on `crash` drop the runtime and its store handles, answer `idle`; on `reset` open the store in `storeDir`; on `recover` take up what the store holds and answer `idle` (PROTOCOL.md, \"Durable runtimes and crashes\")",
            });
        }
        if first.digest() != again.digest() {
            problems.push(Problem {
                check: "determinism",
                what: format!(
                    "seed {seed}'s crash plan gave crash digests {:016x} and {:016x}",
                    first.digest(),
                    again.digest()
                ),
                fix: "after a crash seed the runtime's randomness from the seed and what the store holds, and write to the store nothing a clock or the operating system chose",
            });
        }
    }
    say!("crashes: {plans} crash plans, {drops} crashes planned, each plan played twice");
}

/// Which invariants the claims switch on, and what each one left `not claimed` is missing.
fn claims(ready: &Ready, problems: &mut Vec<Problem>) {
    let claimed = |rule: &&str| ready.claims.iter().any(|claim| claim == rule);
    let mut on = Vec::new();
    // I15–I19 are judged only of a durable runtime, which ward crashes.
    let judged = |invariant: &Invariant| ready.durable.is_some() || !invariant.is_durable();
    for invariant in Invariant::ALL.into_iter().filter(judged) {
        let missing: Vec<&str> = (invariant.rules().iter())
            .filter(|rule| !claimed(rule))
            .copied()
            .collect();
        let unstopped = invariant.rules_unstopped().iter().all(&claimed);
        if missing.is_empty() {
            on.push(invariant.id());
        } else if unstopped {
            on.push(invariant.id());
            say!(
                "claims: {} checked in runs no stop touched, not claimed in the others: missing {}",
                invariant.id(),
                missing.join(", ")
            );
        } else {
            say!(
                "claims: {} not claimed: missing {}",
                invariant.id(),
                missing.join(", ")
            );
        }
    }
    say!("claims: checked as violations: {}", on.join(" "));
    // P2: every rule a runtime keeps is claimed, or `ready.notes` says why not.
    let rules = crate::host::core::CLAIMS
        .iter()
        .chain(crate::host::core::DURABLE_CLAIMS);
    let silent: Vec<&str> = rules
        .filter(|rule| !claimed(rule) && !ready.notes.contains_key(**rule))
        .copied()
        .collect();
    if !silent.is_empty() {
        problems.push(Problem {
            check: "claims",
            what: format!("neither claimed nor noted: {}", silent.join(", ")),
            fix: "claim each rule the runtime keeps, and give each other one a sentence in `ready.notes` saying why not",
        });
    }
}

/// Each check's first problem with its fix, and how many more it found.
fn report(problems: &[Problem]) -> ExitCode {
    let mut reported: Vec<&str> = Vec::new();
    for problem in problems {
        if reported.contains(&problem.check) {
            continue;
        }
        reported.push(problem.check);
        say!("{}: problem: {}", problem.check, problem.what);
        let more = (problems.iter())
            .filter(|other| other.check == problem.check)
            .count()
            - 1;
        if more > 0 {
            say!(
                "  and {more} more scenario(s) or seed(s) with a {} problem",
                problem.check
            );
        }
        say!("  fix: {}", problem.fix);
    }
    if problems.is_empty() {
        say!("healthy");
        return ExitCode::SUCCESS;
    }
    say!("{} problem(s)", reported.len());
    ExitCode::from(1)
}

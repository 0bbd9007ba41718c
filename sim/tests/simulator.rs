//! The simulator's own promises: determinism (I11 and `--jobs`/`--shard` independence), a
//! digest that notices any change, shrinking, traces, and every seeded bug caught by the
//! invariant the catalogue names.

mod common;

use std::sync::Arc;

use common::repository;
use serde_json::Value;
use ward_core::envelope::{Outcome, ToolResult};
use ward_core::events::{Event, EventKind};
use ward_core::fault::{Fault, FaultSet};
use ward_core::session::Message;
use ward_core::tool::ToolCall;
use ward_sim::campaign::{self, CampaignConfig};
use ward_sim::catalogue::Schemas;
use ward_sim::oracle::{Breach, Invariant, Oracle, Verdict, Violation};
use ward_sim::scenario::Scenario;
use ward_sim::shrink;
use ward_sim::simulate::{Checked, Engine};
use ward_sim::trace;
use ward_sim::world::{Record, Trace};

fn config(seeds: std::ops::Range<u64>, jobs: usize) -> CampaignConfig {
    CampaignConfig {
        seeds,
        jobs,
        bug: None,
        shard: None,
        rerun_every: 10,
        runtime: None,
        crashes: false,
        stall_after: None,
        pin: false,
    }
}

#[test]
fn the_campaign_digest_does_not_depend_on_jobs_or_shards() {
    let one = campaign::run(&config(0..60, 1), &|_| {});
    let two = campaign::run(&config(0..60, 2), &|_| {});
    assert_eq!(one.trace_digest, two.trace_digest);
    assert_eq!((one.runs, one.tool_calls), (two.runs, two.tool_calls));
    let shards: Vec<u64> = (1..=3)
        .map(|shard| {
            campaign::run(
                &CampaignConfig {
                    shard: Some((shard, 3)),
                    ..config(0..60, 2)
                },
                &|_| {},
            )
            .trace_digest
        })
        .collect();
    assert_eq!(shards[0] ^ shards[1] ^ shards[2], one.trace_digest);
    assert_ne!(
        one.trace_digest,
        campaign::run(&config(0..61, 2), &|_| {}).trace_digest
    );
}

#[test]
fn the_same_scenario_gives_the_same_trace() {
    let engine = Engine::new();
    for seed in 0..30 {
        let first = engine.run_seed(seed, None, true);
        assert!(
            first.checked.verdict.first(Invariant::I11).is_none(),
            "seed {seed}"
        );
        let second = engine.run_seed(seed, None, false);
        assert_eq!(first.checked.digest, second.checked.digest, "seed {seed}");
    }
}

/// Every way to change one field of an event, each returning the changed event.
fn event_mutations(event: &Event) -> Vec<Event> {
    let mut variants = Vec::new();
    let mut with = |change: &dyn Fn(&mut Event)| {
        let mut changed = event.clone();
        change(&mut changed);
        variants.push(changed);
    };
    with(&|event| event.seq += 1);
    with(&|event| event.time_ms += 1);
    match &event.kind {
        EventKind::RunStarted { tools, .. } => {
            with(&|event| {
                if let EventKind::RunStarted { read_only, .. } = &mut event.kind {
                    *read_only = !*read_only
                }
            });
            if !tools.is_empty() {
                with(&|event| {
                    if let EventKind::RunStarted { tools, .. } = &mut event.kind {
                        tools[0] = format!("{}x", tools[0]).into()
                    }
                });
            }
        }
        EventKind::UserMessageCreated { .. } => {
            with(&|event| {
                if let EventKind::UserMessageCreated { text } = &mut event.kind {
                    text.push('x')
                }
            });
        }
        EventKind::AssistantMessageCompleted { calls, .. } => {
            with(&|event| {
                if let EventKind::AssistantMessageCompleted { turn, .. } = &mut event.kind {
                    *turn += 1
                }
            });
            with(&|event| {
                if let EventKind::AssistantMessageCompleted { text, .. } = &mut event.kind {
                    text.push('x')
                }
            });
            if !calls.is_empty() {
                with(&|event| {
                    if let EventKind::AssistantMessageCompleted { calls, .. } = &mut event.kind {
                        Arc::make_mut(calls)[0].id.push('x')
                    }
                });
                with(&|event| {
                    if let EventKind::AssistantMessageCompleted { calls, .. } = &mut event.kind {
                        Arc::make_mut(calls)[0].name.push('x')
                    }
                });
                with(&|event| {
                    if let EventKind::AssistantMessageCompleted { calls, .. } = &mut event.kind {
                        Arc::make_mut(calls)[0].arguments.push(' ')
                    }
                });
            }
        }
        EventKind::ToolStarted { .. } => {
            with(&|event| {
                if let EventKind::ToolStarted { index, .. } = &mut event.kind {
                    *index += 1
                }
            });
            with(&|event| {
                if let EventKind::ToolStarted { call_id, .. } = &mut event.kind {
                    *call_id = format!("{call_id}x").into()
                }
            });
            with(&|event| {
                if let EventKind::ToolStarted { name, .. } = &mut event.kind {
                    *name = format!("{name}x").into()
                }
            });
        }
        EventKind::ToolFinished { .. } => {
            with(&|event| {
                if let EventKind::ToolFinished { index, .. } = &mut event.kind {
                    *index += 1
                }
            });
            with(&|event| {
                if let EventKind::ToolFinished { call_id, .. } = &mut event.kind {
                    *call_id = format!("{call_id}x").into()
                }
            });
            with(&|event| {
                if let EventKind::ToolFinished { name, .. } = &mut event.kind {
                    *name = format!("{name}x").into()
                }
            });
            with(&|event| {
                if let EventKind::ToolFinished { result, .. } = &mut event.kind {
                    result.state_changed = !result.state_changed
                }
            });
            with(&|event| {
                if let EventKind::ToolFinished { result, .. } = &mut event.kind {
                    match &mut result.outcome {
                        ward_core::envelope::Outcome::Success(data) => {
                            *data = std::sync::Arc::new(Value::String(format!("{data}x")))
                        }
                        ward_core::envelope::Outcome::Failure(error) => {
                            Arc::make_mut(error).message.push('x')
                        }
                    }
                }
            });
        }
        EventKind::RunCompleted { .. } => {
            with(&|event| {
                if let EventKind::RunCompleted { text } = &mut event.kind {
                    text.push('x')
                }
            });
        }
        EventKind::RunFailed { .. } => {
            with(&|event| {
                if let EventKind::RunFailed { error } = &mut event.kind {
                    error.code.push('X')
                }
            });
            with(&|event| {
                if let EventKind::RunFailed { error } = &mut event.kind {
                    error.retryable = !error.retryable
                }
            });
        }
        EventKind::RunCancelled => with(&|event| {
            event.kind = EventKind::RunCompleted {
                text: String::new(),
            }
        }),
    }
    variants
}

#[test]
fn changing_any_one_field_of_any_event_changes_the_digest() {
    let engine = Engine::new();
    let mut checked_events = 0;
    for seed in 0..8 {
        let outcome = engine.run_seed(seed, None, false);
        let original = trace::digest(&outcome.checked.trace);
        for (run_index, run) in outcome.checked.trace.runs.iter().enumerate() {
            for (record_index, record) in run.records.iter().enumerate() {
                let Record::Event(event) = record else {
                    continue;
                };
                for changed in event_mutations(event) {
                    let mut trace: Trace = outcome.checked.trace.clone();
                    trace.runs[run_index].records[record_index] = Record::Event(changed.clone());
                    assert_ne!(
                        trace::digest(&trace),
                        original,
                        "seed {seed}: changing {changed:?} kept the digest"
                    );
                }
                checked_events += 1;
            }
        }
    }
    assert!(
        checked_events > 100,
        "only {checked_events} events were checked"
    );
}

/// Calls, result data, errors and messages copied into records of their own.
fn unshared_calls(calls: &Arc<[ToolCall]>) -> Arc<[ToolCall]> {
    calls.iter().cloned().collect()
}

fn unshared_result(result: &ToolResult) -> ToolResult {
    let outcome = match &result.outcome {
        Outcome::Success(data) => Outcome::Success(Arc::new((**data).clone())),
        Outcome::Failure(error) => Outcome::Failure(Arc::new((**error).clone())),
    };
    ToolResult {
        outcome,
        state_changed: result.state_changed,
    }
}

fn unshared_message(message: &Message) -> Arc<Message> {
    Arc::new(match message {
        Message::User { text } => Message::User { text: text.clone() },
        Message::Assistant { text, calls } => Message::Assistant {
            text: text.clone(),
            calls: unshared_calls(calls),
        },
        Message::Tool {
            call_id,
            name,
            result,
        } => Message::Tool {
            call_id: call_id.clone(),
            name: name.clone(),
            result: unshared_result(result),
        },
    })
}

/// `trace` with every record that several places may share copied into a record of its own.
fn unshared(trace: &Trace) -> (Trace, usize) {
    let mut trace = trace.clone();
    let mut copied = 0;
    for run in &mut trace.runs {
        for record in &mut run.records {
            match record {
                Record::Request { appended, .. } => {
                    for message in appended.iter_mut() {
                        *message = unshared_message(message);
                    }
                }
                Record::Reply { calls, .. } => *calls = unshared_calls(calls),
                Record::Append { message } => *message = unshared_message(message),
                Record::Snapshot {
                    state: Some(state), ..
                }
                | Record::Undo { state } => *state = Arc::new((**state).clone()),
                Record::BodyStart { call_id, tool, .. } | Record::BodyEnd { call_id, tool, .. } => {
                    *call_id = Arc::from(&**call_id);
                    *tool = Arc::from(&**tool);
                }
                Record::Event(event) => match &mut event.kind {
                    EventKind::AssistantMessageCompleted { calls, .. } => {
                        *calls = unshared_calls(calls);
                    }
                    EventKind::ToolFinished { result, .. } => *result = unshared_result(result),
                    _ => continue,
                },
                _ => continue,
            }
            copied += 1;
        }
    }
    (trace, copied)
}

/// Verdicts and digests come from values: copying every shared record of a trace before
/// checking and digesting it changes neither, on clean seeds and on seeds that break an
/// invariant (with a seeded bug).
#[test]
fn verdicts_and_digests_read_contents_not_which_records_are_shared() {
    let engine = Engine::new();
    let oracle = Oracle::new(Schemas::compile(engine.world().registry(true)));
    let mut copied = 0;
    let mut violations = 0;
    let bugs = [
        None,
        Some(Fault::RedactFirstTurnOnly),
        Some(Fault::PartialWriteOnError),
    ];
    for (seed, bug) in (0..24).zip(bugs.iter().cycle()) {
        let outcome = engine.run_seed(seed, *bug, false);
        let (copy, count) = unshared(&outcome.checked.trace);
        copied += count;
        assert_eq!(
            trace::digest(&copy),
            outcome.checked.digest,
            "seed {seed}: copying shared records changed the digest"
        );
        let verdict: Verdict = oracle.check(&outcome.scenario, &copy);
        assert_eq!(
            verdict.violations, outcome.checked.verdict.violations,
            "seed {seed}: copying shared records changed the verdict"
        );
        assert_eq!(verdict.armed, outcome.checked.verdict.armed, "seed {seed}");
        violations += verdict.violations.len();
    }
    assert!(copied > 300, "only {copied} records copied");
    assert!(violations > 0, "no seed broke an invariant");
}

#[test]
fn a_scenario_traces_the_same_whatever_its_thread_ran_before() {
    // Each thread reuses one runtime: a scenario run first on a fresh thread and one run
    // after nineteen others (in the opposite order) must give the same traces.
    let engine = Engine::new();
    let scenarios: Vec<Scenario> = (0..20)
        .map(|seed| engine.generate(seed, None).scenario)
        .collect();
    let forward: Vec<u64> = scenarios
        .iter()
        .map(|scenario| engine.check(scenario, FaultSet::EMPTY).digest)
        .collect();
    let backward: Vec<u64> = std::thread::spawn(move || {
        let engine = Engine::new();
        let mut digests: Vec<u64> = scenarios
            .iter()
            .rev()
            .map(|scenario| engine.check(scenario, FaultSet::EMPTY).digest)
            .collect();
        digests.reverse();
        digests
    })
    .join()
    .unwrap();
    assert_eq!(forward, backward);
}

/// Shrinking keeps the check, not only the invariant: with `readonly-no-exec-check` a run
/// fails because the body of a write ran in a read-only run, and its arguments could shrink
/// until they are invalid, which still breaks I2 but by the wrong code instead. Every seed of
/// the first 300 that fails so is shrunk.
#[test]
fn a_shrunk_failure_replays_as_the_same_check() {
    let engine = Engine::new();
    let bug = Fault::ReadonlyNoExecCheck;
    let mut shrunk_seeds = 0;
    for seed in 0..300 {
        let outcome = engine.run_seed(seed, Some(bug), false);
        let Some(first) = outcome.checked.verdict.first(Invariant::I2) else {
            continue;
        };
        if first.breach != Breach::WriteRanInReadOnlyRun {
            continue;
        }
        shrunk_seeds += 1;
        let shrunk = shrink::shrink(
            &engine,
            &outcome.scenario,
            first.breach,
            shrink::EXECUTIONS_MAX,
        );
        let replayed = engine.check_file(&shrunk.scenario, None);
        let again = replayed.verdict.first(Invariant::I2).expect("still I2");
        assert_eq!(
            again.breach,
            Breach::WriteRanInReadOnlyRun,
            "seed {seed}: {again}"
        );
        assert!(shrunk.after.calls <= 2, "seed {seed}: {}", shrunk.after);
    }
    assert!(
        shrunk_seeds >= 3,
        "{shrunk_seeds} seeds ran a write in a read-only run"
    );
}

#[test]
fn a_large_generated_failure_shrinks_to_a_handful_of_calls() {
    let engine = Engine::new();
    let bug = Fault::ReadonlyNoExecCheck;
    let (scenario, before) = (0..500)
        .map(|seed| engine.run_seed(seed, Some(bug), false))
        .filter(|outcome| outcome.checked.verdict.first(Invariant::I2).is_some())
        .map(|outcome| {
            let size = outcome.scenario.size();
            (outcome.scenario, size)
        })
        .find(|(_, size)| size.calls >= 8)
        .expect("a failing seed with at least 8 calls");
    let breach = engine
        .check_file(&scenario, None)
        .verdict
        .first(Invariant::I2)
        .expect("it fails")
        .breach;
    let shrunk = shrink::shrink(&engine, &scenario, breach, shrink::EXECUTIONS_MAX);
    assert_eq!(shrunk.before, before);
    assert!(
        shrunk.after.calls <= 2,
        "{} calls after shrinking from {}",
        shrunk.after.calls,
        before.calls
    );
    assert_eq!(shrunk.after.runs, 1);
    // The shrunk file replays to the same violation, the bug recorded in it.
    let text = shrunk.scenario.to_json();
    let replayed = Scenario::from_json(&text, "shrunk").unwrap();
    assert_eq!(replayed.bug.as_deref(), Some(bug.name()));
    assert!(
        engine
            .check_file(&replayed, None)
            .verdict
            .first(Invariant::I2)
            .is_some()
    );
    assert!(
        engine
            .check(&replayed, FaultSet::EMPTY)
            .verdict
            .violations
            .is_empty(),
        "the correct core holds"
    );
}

#[test]
fn the_chrome_trace_matches_the_recorded_intervals() {
    let engine = Engine::new();
    let outcome = (0..50)
        .map(|seed| engine.run_seed(seed, None, false))
        .find(|outcome| outcome.checked.tool_calls() >= 4)
        .expect("a seed with calls");
    let document = trace::chrome_trace(&outcome.checked.trace, &[]);
    let events = document["traceEvents"].as_array().unwrap();
    let slices: Vec<&Value> = events.iter().filter(|event| event["ph"] == "X").collect();
    assert!(!slices.is_empty());
    for event in events {
        assert!(["M", "X", "i"].contains(&event["ph"].as_str().unwrap()));
        assert!(event["tid"].is_u64() && event["pid"].is_u64());
        if event["ph"] == "X" {
            assert!(event["ts"].is_u64() && event["dur"].is_u64());
        }
    }
    // Each body interval appears as a call slice on its own track, in microseconds.
    let mut bodies = Vec::new();
    for run in &outcome.checked.trace.runs {
        let mut open = std::collections::BTreeMap::new();
        for record in &run.records {
            match record {
                Record::BodyStart { at_ms, index, .. } => {
                    open.insert(*index, *at_ms);
                }
                Record::BodyEnd {
                    at_ms, index, tool, ..
                } => {
                    if let Some(start) = open.remove(index) {
                        bodies.push((tool.clone(), start * 1000, (at_ms - start) * 1000));
                    }
                }
                _ => {}
            }
        }
    }
    assert!(!bodies.is_empty());
    for (tool, start, duration) in &bodies {
        assert!(
            slices.iter().any(|slice| slice["name"] == **tool
                && slice["ts"] == *start
                && slice["dur"] == *duration
                && slice["tid"].as_u64() > Some(0)),
            "no slice for {tool} at {start} µs lasting {duration} µs"
        );
    }
    let tracks: std::collections::BTreeSet<(u64, u64)> = slices
        .iter()
        .filter(|slice| slice["tid"].as_u64() > Some(0))
        .map(|slice| {
            (
                slice["pid"].as_u64().unwrap(),
                slice["tid"].as_u64().unwrap(),
            )
        })
        .collect();
    let call_slices = slices
        .iter()
        .filter(|slice| slice["tid"].as_u64() > Some(0))
        .count();
    assert_eq!(tracks.len(), call_slices, "every call is on its own track");
}

#[test]
fn generated_scenarios_round_trip_through_the_file_format() {
    let engine = Engine::new();
    for seed in 0..20 {
        let scenario = engine.generate(seed, None).scenario;
        let replayed = Scenario::from_json(&scenario.to_json(), "generated").unwrap();
        assert_eq!(
            engine.check_file(&replayed, None).digest,
            engine.check(&scenario, FaultSet::EMPTY).digest
        );
    }
}

#[test]
fn a_bad_scenario_file_is_refused_with_the_pointer_of_the_fault() {
    let misspelled = r#"{"version": 1, "sessions": [{"runs": [{"prompt": "x", "turns": [], "readOnyl": true}]}]}"#;
    let error = Scenario::from_json(misspelled, "bad.json")
        .unwrap_err()
        .to_string();
    assert!(error.contains("/sessions/0/runs/0"), "{error}");
    assert!(error.contains("readOnyl"), "{error}");
    // A misspelled required field: the unknown name is reported, not only the missing one.
    let misspelled_required =
        r#"{"version": 1, "sessions": [{"runs": [{"prompt": "x", "turnz": []}]}]}"#;
    let error = Scenario::from_json(misspelled_required, "bad.json")
        .unwrap_err()
        .to_string();
    assert!(error.contains("unknown field(s): turnz"), "{error}");
    let wrong_type = r#"{"version": 1, "sessions": [{"runs": [{"prompt": 5, "turns": []}]}]}"#;
    let error = Scenario::from_json(wrong_type, "bad.json")
        .unwrap_err()
        .to_string();
    assert!(error.contains("/sessions/0/runs/0/prompt"), "{error}");
    let unknown_label = r#"{"version": 1, "sessions": [{"runs": [{"prompt": "x", "turns": [], "secrets": ["nope"]}]}]}"#;
    let error = Scenario::from_json(unknown_label, "bad.json")
        .unwrap_err()
        .to_string();
    assert!(error.contains("/sessions/0/runs/0/secrets/0"), "{error}");
    let bad_bug = r#"{"version": 1, "bug": "no-such-bug", "sessions": [{"runs": [{"prompt": "x", "turns": []}]}]}"#;
    assert!(
        Scenario::from_json(bad_bug, "bad.json")
            .unwrap_err()
            .to_string()
            .contains("/bug")
    );
    let not_json = Scenario::from_json("{", "bad.json")
        .unwrap_err()
        .to_string();
    assert!(not_json.contains("line 1"), "{not_json}");
}

/// Seeds each bug may take before its invariant fires (the issue's bar is 5,000): the
/// default campaign's mix arms every invariant often enough that this budget is ample (`ward
/// run` prints how often each is armed).
const SEEDS_PER_BUG_MAX: u64 = 5_000;

/// Every seeded bug is caught by the invariant the catalogue names for it, and the failure it
/// shrinks to replays as the same check (the same [`Breach`]), so that the file a user gets
/// shows the failure they were told about.
#[test]
fn every_seeded_bug_is_caught_by_its_invariant_and_shrinks_to_the_same_check() {
    let engine = Engine::new();
    for &fault in Fault::ALL {
        // I15–I19 need crash faults, which the campaign does not inject yet: the crash
        // explorer catches those bugs (`tests/crash_explorer.rs`).
        let invariant = Invariant::catching(fault);
        if invariant.is_durable() {
            continue;
        }
        let caught = (0..SEEDS_PER_BUG_MAX).find_map(|seed| {
            let outcome = engine.run_seed(seed, Some(fault), invariant == Invariant::I11);
            let breach = outcome.checked.verdict.first(invariant)?.breach;
            Some((seed, outcome.scenario, breach))
        });
        let Some((seed, scenario, breach)) = caught else {
            panic!(
                "{} was not caught by {invariant} within {SEEDS_PER_BUG_MAX} seeds",
                fault.name()
            );
        };
        // I11 compares two executions; its shrinking is `ward run`'s, not this one's.
        if invariant == Invariant::I11 {
            continue;
        }
        let shrunk = shrink::shrink(&engine, &scenario, breach, shrink::EXECUTIONS_MAX / 8);
        let replayed = engine.check_file(&shrunk.scenario, Some(fault));
        let again = replayed
            .verdict
            .first(invariant)
            .map(|violation| violation.breach);
        assert_eq!(
            again,
            Some(breach),
            "{} (seed {seed}): the shrunk file fails another check",
            fault.name()
        );
    }
}

/// A corpus scenario that holds on the correct core: the scenario, its clean check, and an
/// oracle of its own to judge altered copies of its trace.
fn clean_corpus_run(file: &str) -> (Scenario, Checked, Oracle) {
    let path = repository().join("corpus/scenarios").join(file);
    let text = std::fs::read_to_string(&path).expect("the scenario file");
    let scenario =
        Scenario::from_json(&text, &path.display().to_string()).expect("a valid scenario");
    let engine = Engine::new();
    let checked = engine.check(&scenario, FaultSet::EMPTY);
    assert!(
        checked.verdict.violations.is_empty(),
        "{:?}",
        checked.verdict.violations
    );
    let oracle = Oracle::new(Schemas::compile(engine.world().registry(true)));
    (scenario, checked, oracle)
}

/// The first violation of `breach`'s invariant in the oracle's verdict on `trace`, which must
/// be that breach.
fn violation_of(oracle: &Oracle, scenario: &Scenario, trace: &Trace, breach: Breach) -> Violation {
    let verdict = oracle.check(scenario, trace);
    let invariant = breach.invariant();
    let violation = verdict
        .first(invariant)
        .unwrap_or_else(|| panic!("{invariant} misses the altered trace"))
        .clone();
    assert_eq!(violation.breach, breach, "{violation}");
    violation
}

/// I10's deadline: a write still running when the inactivity deadline passes completes
/// (R20), and the run may end when it does; a run that goes on after that is a violation.
#[test]
fn a_stopped_run_may_wait_for_its_running_write_and_nothing_else() {
    let (scenario, checked, oracle) = clean_corpus_run("fuzz/write-outlives-deadline.json");
    assert!(checked.verdict.armed[Invariant::I10.index()] > 0);

    let mut trace = checked.trace.clone();
    let records = &mut trace.runs[0].records;
    let last = records
        .iter()
        .rposition(|record| matches!(record, Record::Event(_)))
        .expect("a terminal event");
    if let Record::Event(event) = &mut records[last] {
        event.time_ms += 5;
    }
    // A run ending 5 ms after its write.
    let violation = violation_of(&oracle, &scenario, &trace, Breach::EndedLate);
    assert!(
        violation.explanation.contains("at 120000 ms"),
        "{violation}"
    );

    // The same run, completed as if no deadline had passed.
    let mut trace = checked.trace.clone();
    if let Record::Event(event) = &mut trace.runs[0].records[last] {
        event.kind = EventKind::RunCompleted {
            text: "Done.".to_owned(),
        };
    }
    violation_of(&oracle, &scenario, &trace, Breach::CompletedPastDeadline);
}

#[test]
fn a_stopped_run_that_asks_the_provider_again_violates_i10() {
    let (scenario, checked, oracle) = clean_corpus_run("fuzz/write-outlives-deadline.json");
    let mut trace = checked.trace.clone();
    let request = trace.runs[0]
        .records
        .iter()
        .rposition(|record| matches!(record, Record::Request { .. }))
        .expect("a provider request");
    if let Record::Request { at_ms, .. } = &mut trace.runs[0].records[request] {
        // The inactivity deadline passes at 120,000 ms; this request comes after it.
        *at_ms = 120_001;
    }
    let violation = violation_of(&oracle, &scenario, &trace, Breach::RequestAfterStop);
    assert!(
        violation.explanation.contains("at 120001 ms"),
        "{violation}"
    );
}

#[test]
fn a_write_offered_on_a_later_turn_of_a_read_only_run_is_caught() {
    // The checks of the offer look at each distinct tool list once; a list that changes on
    // a later turn is a new list and is checked.
    let (scenario, checked, oracle) = clean_corpus_run("write-in-read-only.json");
    let mut trace = checked.trace.clone();
    let records = &mut trace.runs[0].records;
    let first_tools = records
        .iter()
        .find_map(|record| match record {
            Record::Request {
                tools: Some(tools), ..
            } => Some(tools.clone()),
            _ => None,
        })
        .expect("the first request names its tools");
    let second = records
        .iter()
        .enumerate()
        .filter(|(_, record)| matches!(record, Record::Request { .. }))
        .nth(1)
        .map(|(index, _)| index)
        .expect("a second request");
    if let Record::Request { tools, turn, .. } = &mut records[second] {
        assert_eq!(*turn, 1);
        let mut widened = first_tools;
        widened.push(Arc::from("drawings_clear"));
        *tools = Some(widened);
    }
    let verdict = oracle.check(&scenario, &trace);
    for invariant in [Invariant::I1, Invariant::I13] {
        let violation = verdict
            .first(invariant)
            .unwrap_or_else(|| panic!("{invariant} misses a write offered on turn 1"));
        assert_eq!(violation.turn, Some(1), "{violation}");
    }
}

#[test]
fn a_message_sent_and_stored_is_still_scanned_for_secrets() {
    // I8 scans a record that reached several boundaries once (the first time it is seen):
    // a leak in a message both sent and stored must still be found.
    let (scenario, checked, oracle) = clean_corpus_run("secrets-resent-on-turn-3.json");
    let mut trace = checked.trace.clone();
    let records = &mut trace.runs[0].records;
    let stored: Vec<Arc<Message>> = records
        .iter()
        .filter_map(|record| match record {
            Record::Append { message } => Some(Arc::clone(message)),
            _ => None,
        })
        .collect();
    let sent_and_stored = records
        .iter()
        .filter_map(|record| match record {
            Record::Request { appended, .. } => Some(appended),
            _ => None,
        })
        .flatten()
        .find(|message| stored.contains(message))
        .cloned()
        .expect("a request message that the store also keeps");
    let leak = Arc::new(Message::User {
        text: "my key is prov-9Kx2LmQ7vZ4rT8wB".to_owned(),
    });
    for record in records.iter_mut() {
        match record {
            Record::Append { message } if *message == sent_and_stored => {
                *message = Arc::clone(&leak);
            }
            Record::Request { appended, .. } => {
                for message in appended.iter_mut().filter(|m| **m == sent_and_stored) {
                    *message = Arc::clone(&leak);
                }
            }
            _ => {}
        }
    }
    violation_of(&oracle, &scenario, &trace, Breach::SecretInRequest);
}

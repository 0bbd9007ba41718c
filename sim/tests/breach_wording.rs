//! Each breach names its cause: the record, event, key, keyword or instant that differs, and
//! what the SPEC wanted there. A runtime's developer reads these lines first; each test pins
//! one wording, on a trace of ward's core with a seeded bug or with one record taken out (as
//! a runtime that omits it would leave it).

mod common;

use common::repository;
use serde_json::json;
use ward_core::events::EventKind;
use ward_core::fault::{Fault, FaultSet};
use ward_sim::oracle::Invariant;
use ward_sim::scenario::Scenario;
use ward_sim::simulate::Engine;
use ward_sim::world::Record;

fn scenario(calls: serde_json::Value) -> Scenario {
    let file = json!({
        "version": 1,
        "sessions": [{"runs": [{"prompt": "Look at the chart.", "turns": [{"calls": calls}]}]}]
    });
    Scenario::from_json(&file.to_string(), "test").unwrap()
}

fn explanation(engine: &Engine, scenario: &Scenario, fault: Fault, invariant: Invariant) -> String {
    let checked = engine.check(scenario, FaultSet::only(fault));
    let violation = checked.verdict.first(invariant);
    violation
        .map(|violation| violation.explanation.clone())
        .unwrap_or_else(|| panic!("no {invariant}: {:?}", checked.verdict.violations))
}

#[test]
fn a_call_without_its_tool_finished_event_is_named_so() {
    // A cancel keeps the third write from starting: it gets `ABORTED`, in its tool.finished,
    // which a runtime that forgets it leaves out.
    let engine = Engine::new();
    let scenario = corpus("cancel-mid-batch.json");
    let mut trace = engine.execute(&scenario, FaultSet::EMPTY);
    trace.runs[0].records.retain(|record| {
        !matches!(record, Record::Event(event)
            if matches!(&event.kind, EventKind::ToolFinished { call_id, .. } if **call_id == *"call_11"))
    });
    let checked = engine.judge(&scenario, trace);
    let violation = checked
        .verdict
        .first(Invariant::I13)
        .unwrap_or_else(|| panic!("no I13: {:?}", checked.verdict.violations));
    assert_eq!(
        violation.explanation,
        "a valid call to offered tool settings_update never reached its body, and got no tool.finished event: R23 gives every call one, ABORTED when a stop keeps its body from running (R20)"
    );
}

fn corpus(name: &str) -> Scenario {
    let text = std::fs::read_to_string(repository().join("corpus/scenarios").join(name)).unwrap();
    Scenario::from_json(&text, name).unwrap()
}

#[test]
fn a_body_that_ran_with_refused_input_names_the_failing_keyword() {
    // (A repeated key or text that is not JSON is named too: `input_errors::unread`'s test.)
    let engine = Engine::new();
    let too_large = scenario(json!([{"id": "call_9", "name": "web_search",
        "arguments": r#"{"query":"a","limit":11}"#}]));
    assert_eq!(
        explanation(
            &engine,
            &too_large,
            Fault::ValidateAfterDomain,
            Invariant::I5
        ),
        "the body of web_search ran with input that R3 refuses before any body runs: `maximum` fails at /limit (R5)"
    );
}

#[test]
fn a_store_that_differs_names_the_record() {
    let engine = Engine::new();
    let scenario = corpus("cancel-mid-batch.json");
    assert_eq!(
        explanation(
            &engine,
            &scenario,
            Fault::DropResultOnCancel,
            Invariant::I14
        ),
        "the session store holds 4 records of the run, the model expected 5 (the prompt, then each reply and its results in the order sent, as the events announced them): record 4, the result of call \"call_11\" (settings_update, ABORTED), is missing"
    );
    let swapped = scenario_of_two_reads();
    let explained = explanation(
        &engine,
        &swapped,
        Fault::ResultsCompletionOrder,
        Invariant::I14,
    );
    assert!(
        explained.ends_with(
            "record 2 is the result of call \"call_10\" (settings_get, OK) where the model expected the result of call \"call_9\" (panes_list, OK)"
        ),
        "{explained}"
    );
}

/// Two parallel reads, the first slower: with results in completion order the second's comes
/// first.
fn scenario_of_two_reads() -> Scenario {
    let file = json!({
        "version": 1,
        "sessions": [{"runs": [{
            "prompt": "Look at the chart.",
            "tools": {"panes_list": {"latencyMs": 30}, "settings_get": {"latencyMs": 5}},
            "turns": [{"calls": [
                {"id": "call_9", "name": "panes_list", "arguments": "{}"},
                {"id": "call_10", "name": "settings_get", "arguments": "{}"}
            ]}]
        }]}]
    });
    Scenario::from_json(&file.to_string(), "test").unwrap()
}

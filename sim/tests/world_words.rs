//! I8 and what the world itself says: a configured value that runs into an `sk-` key shares
//! characters with the planted key body, so a model that says 7 characters of the value (one
//! fewer than R22's guard replaces) followed by the key's next letter says 8 characters of
//! the planted part. No rule asks a runtime to remove that, so the correct core must pass
//! wherever the world says it — a call's id at either end, its tool name, an argument key or
//! value, the reply's text, the user's answer, a body's result that hands on what the model
//! wrote — and I8 must still catch the prompt's key when a runtime leaks it (the seeded bug
//! `redact-first-turn-only` resends the raw prompt).

use serde_json::{Value, json};
use ward_core::fault::{Fault, FaultSet};
use ward_sim::oracle::Invariant;
use ward_sim::scenario::Scenario;
use ward_sim::simulate::Engine;

/// The configured value: a word, then the first 8 characters of the key (`sk-` and 5 more).
const VALUE: &str = "N92jqm9sz6vlV sk-Q8iuA9S7";
/// The planted key body; `8iuA9S7` ends the value, `8iuA9S7c` does not.
const KEY_BODY: &str = "Q8iuA9S7crTGJcOZxlGOrMbi";
/// What the world says: 7 characters of the value and the key's next letter.
const SAID: &str = "8iuA9S7c";

/// A one-run scenario whose prompt carries the value and the key, with `turns` as the
/// provider's script and `answers` as the user's.
fn scenario(turns: Value, answers: Value) -> Scenario {
    let file = json!({
        "version": 1,
        "secrets": [
            {"label": "configured", "value": VALUE, "shape": "configured"},
            {"label": "key", "value": KEY_BODY, "shape": "key-body"}
        ],
        "sessions": [{"runs": [{
            "prompt": format!("token N92jqm9sz6vlV sk-{KEY_BODY} end"),
            "secrets": ["configured"],
            "answers": answers,
            "turns": turns
        }]}]
    });
    Scenario::from_json(&file.to_string(), "test").unwrap()
}

fn one_call(id: &str, name: &str, arguments: &Value) -> Value {
    json!([{"calls": [{"id": id, "name": name, "arguments": arguments.to_string()}]}])
}

/// Each place the world says [`SAID`], named.
fn cases() -> Vec<(&'static str, Scenario)> {
    let none = json!([]);
    vec![
        (
            "call id, start",
            scenario(
                one_call(&format!("{SAID}all_9"), "panes_list", &json!({})),
                none.clone(),
            ),
        ),
        (
            "call id, end",
            scenario(
                one_call(&format!("call_{SAID}"), "panes_list", &json!({})),
                none.clone(),
            ),
        ),
        (
            "tool name",
            scenario(
                one_call("call_9", &format!("{SAID}_list"), &json!({})),
                none.clone(),
            ),
        ),
        (
            "argument key",
            scenario(
                one_call("call_9", "panes_list", &json!({ format!("{SAID}k"): 1 })),
                none.clone(),
            ),
        ),
        (
            "argument value",
            scenario(
                one_call(
                    "call_9",
                    "web_search",
                    &json!({"query": format!("login with {SAID}")}),
                ),
                none.clone(),
            ),
        ),
        (
            "reply text",
            scenario(
                json!([{"text": format!("{SAID}hecking the panes"),
                        "calls": [{"id": "call_9", "name": "panes_list", "arguments": "{}"}]}]),
                none.clone(),
            ),
        ),
        (
            "user answer",
            scenario(
                one_call(
                    "call_9",
                    "ask_user",
                    &json!({"question": "Which one?", "options": ["a"]}),
                ),
                json!([{"text": format!("use {SAID}"), "delayMs": 5}]),
            ),
        ),
        (
            "body result",
            scenario(
                json!([
                    {"calls": [{"id": "call_9", "name": "drawing_create", "arguments": json!({
                        "kind": "horizontal-line", "paneId": "main",
                        "anchors": [{"price": 1800}], "text": format!("note {SAID}")
                    }).to_string()}]},
                    {"calls": [{"id": "call_10", "name": "drawings_list", "arguments": "{}"}]}
                ]),
                none,
            ),
        ),
    ]
}

#[test]
fn what_the_world_says_of_a_planted_part_is_not_the_runtimes_leak() {
    let engine = Engine::new();
    for (place, scenario) in cases() {
        let checked = engine.check(&scenario, FaultSet::EMPTY);
        assert!(
            checked.verdict.violations.is_empty(),
            "{place}: {:?}",
            checked.verdict.violations
        );
        assert_eq!(checked.verdict.armed[Invariant::I8.index()], 1, "{place}");
    }
}

#[test]
fn the_prompts_planted_part_is_still_caught_beside_what_the_world_says() {
    let engine = Engine::new();
    for (place, mut scenario) in cases() {
        // Without the value configured, the raw prompt's first secret text is the key's.
        scenario.sessions[0].runs[0].secrets.clear();
        let checked = engine.check(&scenario, FaultSet::only(Fault::RedactFirstTurnOnly));
        let violation = checked.verdict.first(Invariant::I8);
        assert!(
            violation.is_some_and(|violation| violation.explanation.contains("starting \"Q8\"")),
            "{place}: {:?}",
            checked.verdict.violations
        );
    }
}

#[test]
fn a_stretch_the_world_said_only_in_part_is_a_leak() {
    // The world says `8iuA9S7c`; a record holding `Q8iuA9S7cr` holds windows it never said.
    let engine = Engine::new();
    let mut leaky = scenario(
        one_call(&format!("{SAID}all_9"), "panes_list", &json!({})),
        json!([]),
    );
    leaky.sessions[0].runs[0].prompt = format!("token N92jqm9sz6vlV [{KEY_BODY}] end");
    let checked = engine.check(&leaky, FaultSet::EMPTY);
    assert!(
        checked.verdict.first(Invariant::I8).is_some(),
        "{:?}",
        checked.verdict.violations
    );
}

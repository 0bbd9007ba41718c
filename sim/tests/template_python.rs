//! The Python kit's template (`adapters/python/template.py`, P13): a tiny hand-written
//! runtime behind ward in one file, run as the kit's README page runs it, from the kit's own
//! environment (`uv sync --project adapters/python`). `ward doctor` finds it healthy, and a
//! campaign finds exactly the one class of failure the page explains (I5: a repeated key
//! reaches the body through `json.loads`, which keeps the last value). Without Python or the
//! kit's environment the tests say why they did not run, and pass.

mod common;

use std::process::Command;

use common::{broken_invariants, repository, ward};

/// The kit environment's interpreter, relative to the repository's root.
const PYTHON: &str = "adapters/python/.venv/bin/python";

/// The template's adapter command, run from the repository's root, or `None` (said why) when
/// it cannot run here.
fn template() -> Option<String> {
    let root = repository();
    if !root.join(PYTHON).is_file() {
        eprintln!(
            "skipped: {PYTHON} is missing: run `uv sync --project adapters/python` (uv: `pip install uv`)"
        );
        return None;
    }
    // The environment must hold the template's one dependency, as `uv sync` installs it.
    let check = Command::new(root.join(PYTHON))
        .args([
            "-c",
            "import jsonschema, sys; assert sys.version_info >= (3, 11)",
        ])
        .current_dir(&root)
        .output();
    match check {
        Ok(output) if output.status.success() => {}
        Ok(output) => {
            let why = String::from_utf8_lossy(&output.stderr);
            eprintln!(
                "skipped: the kit's environment is incomplete ({why}): run `uv sync --project adapters/python`"
            );
            return None;
        }
        Err(error) => {
            eprintln!("skipped: {PYTHON} does not start: {error}");
            return None;
        }
    }
    Some(format!(
        "cd '{}' && {PYTHON} adapters/python/template.py",
        root.display()
    ))
}

#[test]
fn the_python_template_is_healthy() {
    let Some(command) = template() else { return };
    let output = ward(&["doctor", "--runtime", &command, "--seeds", "0..3"]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains("handshake: ok: ward-template-python 1.0.0"),
        "{stdout}"
    );
    assert!(stdout.contains("clock: "), "{stdout}");
}

#[test]
fn a_campaign_finds_the_repeated_key_and_nothing_else() {
    let Some(command) = template() else { return };
    assert_eq!(broken_invariants(&command, "0..80", "campaign"), ["I5"]);
}

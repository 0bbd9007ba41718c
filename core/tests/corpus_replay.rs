//! Replays every committed input of the core's fuzz targets (`corpus/<target>/`, SPEC §13)
//! through the same check function the target calls, on stable Rust: every corpus entry,
//! crashers included, is a regression test. One test per target.

use std::path::PathBuf;

use ward_core::checks::{CheckResult, check_redact, check_tool_args, check_validate};

/// Runs `check` on every file of `corpus/<target>/`, in sorted order, and reports every
/// failure at once.
fn replay(target: &str, check: fn(&[u8]) -> CheckResult) {
    let folder = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../corpus")
        .join(target);
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&folder)
        .unwrap_or_else(|error| panic!("{}: {error}", folder.display()))
        .map(|entry| entry.expect("a readable corpus entry").path())
        .filter(|path| path.is_file())
        .collect();
    paths.sort();
    assert!(
        !paths.is_empty(),
        "{} holds no input: the corpus must not be empty",
        folder.display()
    );
    let failures: Vec<String> = paths
        .iter()
        .filter_map(|path| {
            let data = std::fs::read(path).expect("a readable corpus file");
            check(&data)
                .err()
                .map(|failure| format!("{}: {failure}", path.display()))
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} inputs fail:\n{}",
        failures.len(),
        paths.len(),
        failures.join("\n")
    );
}

#[test]
fn replay_corpus_redact() {
    replay("redact", check_redact);
}

#[test]
fn replay_corpus_validate() {
    replay("validate", check_validate);
}

#[test]
fn replay_corpus_tool_args() {
    replay("tool_args", check_tool_args);
}

//! Replays every committed input of the core's fuzz targets (`corpus/<target>/`, SPEC §13)
//! through the same check function the target calls, on stable Rust: every corpus entry,
//! crashers included, is a regression test. One test per target.

use std::path::PathBuf;

use ward_checks::{CheckResult, check_redact, check_tool_args, check_validate, replay_folder};

/// Runs `check` on every file of `corpus/<target>/` ([`replay_folder`]).
fn replay(target: &str, check: fn(&[u8]) -> CheckResult) {
    let folder = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../corpus")
        .join(target);
    if let Err(failures) = replay_folder(&folder, check) {
        panic!("{failures}");
    }
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

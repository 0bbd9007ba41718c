//! Replays every committed input of the core's fuzz targets and of the protocol reader's
//! (`corpus/<target>/`, SPEC §13) through the same check function the target calls, on
//! stable Rust: every corpus entry, crashers included, is a regression test. One test per
//! target.

use std::path::PathBuf;

use ward_checks::{
    CheckResult, check_protocol_lines, check_redact, check_tool_args, check_validate, replay_folder,
};

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

#[test]
fn replay_corpus_protocol_lines() {
    replay("protocol_lines", check_protocol_lines);
}

/// The inputs of `protocol_lines` cut from real adapters' output (`real-*`) are whole
/// answers: ward reads them to their end without a violation.
#[test]
fn real_adapter_output_reads_whole() {
    use ward_sim::host::process::next_answer;

    let folder = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../corpus/protocol_lines");
    let mut files = 0;
    for entry in std::fs::read_dir(&folder).expect("the corpus folder") {
        let path = entry.expect("a corpus entry").path();
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        if !name.starts_with("real-") {
            continue;
        }
        let data = std::fs::read(&path).expect("a readable input");
        let mut output = &data[..];
        let mut answers = 0;
        while next_answer(&mut output)
            .unwrap_or_else(|broken| panic!("{}: {broken:?}", path.display()))
            .is_some()
        {
            answers += 1;
        }
        assert!(answers > 0, "{} holds no answer", path.display());
        files += 1;
    }
    assert!(
        files >= 20,
        "{files} inputs from real adapters, fewer than 20"
    );
}

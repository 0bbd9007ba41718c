//! ward-checks: the check functions of the fuzz targets (`fuzz/`, SPEC §13), shared with the
//! stable corpus replays of this crate's tests (`tests/corpus_replay.rs`,
//! `tests/scenario_corpus_replay.rs`). They live apart from `ward-core`, which ships only the
//! runtime, and from `ward-sim`, which ships the simulator.
//!
//! Each check takes the raw bytes of one fuzz input, runs it through the runtime, and
//! returns `Err` with a message a person can act on when a property of the specification
//! does not hold. A fuzz target is a thin shell that turns an `Err` into a crash; the
//! replay test runs every committed corpus file through the same function on stable Rust.
//! Nothing a check's input controls may panic the runtime: a panic is a finding too.
//!
//! | check | input | properties |
//! |---|---|---|
//! | [`check_redact`] | configured values, a NUL byte, then the text | R24, R29 (a), (c), (d), (e), linear work (f) |
//! | [`check_validate`] | a tool selector byte, then argument text (or [`ANY_SCHEMA`], a schema, NUL, argument text) | R6–R8: the verdict is `jsonschema`'s, 1–5 errors equal to the first of [`all_errors`](ward_core::validation::ToolSchema::all_errors), valid paths, no value echoed |
//! | [`check_tool_args`] | a tool selector byte, a flags byte, then argument text | R3 and SPEC §4 through the entry point: one well-formed envelope, the refusal R3's order calls for, no panic, a failure leaves the chart as it was, `stateChanged` truthful |
//! | [`scenario::check_scenario`] | bytes decoded with `arbitrary` into a [`scenario::FuzzScenario`] | a valid scenario file; on the correct core every invariant holds |
//! | [`scenario::check_scenario_json`] | a scenario file | refused with a JSON Pointer, or run with every invariant holding |
//! | [`check_protocol_lines`] | an adapter's standard output | P1, P3, P6 through ward's reader of it: answers ending with `idle`, line by line, or a violation naming what is wrong and the line; no panic, no hang |
//!
//! Input formats are chosen so that the committed corpus files stay readable and the
//! dictionaries in `corpus/dict/` apply to the text part. Each check documents its format.

#![forbid(unsafe_code)]
#![deny(missing_docs)]

/// Returns `Err(message)` from the enclosing check when `condition` is false.
macro_rules! ensure {
    ($condition:expr, $($message:tt)+) => {
        if !$condition {
            return Err(format!($($message)+));
        }
    };
}

mod messages;
mod protocol_lines;
mod redact;
pub mod scenario;
mod tool_args;
mod validate;

pub use protocol_lines::check_protocol_lines;
pub use redact::check_redact;
pub use tool_args::check_tool_args;
pub use validate::{ANY_SCHEMA, check_schema_input, check_validate};

/// Whether `character` is one of the invisible format characters of R28: the checks' own
/// copy of the list the redactor documents (U+00AD, U+200B–U+200F, U+202A–U+202E,
/// U+2060–U+2064, U+2066–U+206F, U+FEFF), so that they never judge the redactor by itself.
pub fn is_invisible(character: char) -> bool {
    matches!(character,
        '\u{AD}'
        | '\u{200B}'..='\u{200F}'
        | '\u{202A}'..='\u{202E}'
        | '\u{2060}'..='\u{2064}'
        | '\u{2066}'..='\u{206F}'
        | '\u{FEFF}')
}

/// What a check returns: `Err` names the property that failed and how.
pub type CheckResult = Result<(), String>;

/// Runs `check` on every file of `folder`, in sorted order (the stable replay of a fuzz
/// corpus, SPEC §13): `Ok` with the number of inputs, or `Err` naming every failing file
/// and property at once. A folder that cannot be read or holds no file is an error: a
/// corpus must not be empty.
pub fn replay_folder(
    folder: &std::path::Path,
    check: fn(&[u8]) -> CheckResult,
) -> Result<usize, String> {
    let entries =
        std::fs::read_dir(folder).map_err(|error| format!("{}: {error}", folder.display()))?;
    let mut paths = Vec::new();
    for entry in entries {
        let path = entry
            .map_err(|error| format!("{}: {error}", folder.display()))?
            .path();
        if path.is_file() {
            paths.push(path);
        }
    }
    paths.sort();
    if paths.is_empty() {
        return Err(format!(
            "{} holds no input: the corpus must not be empty",
            folder.display()
        ));
    }
    let mut failures = Vec::new();
    for path in &paths {
        let outcome = std::fs::read(path)
            .map_err(|error| error.to_string())
            .and_then(|data| check(&data));
        if let Err(failure) = outcome {
            failures.push(format!("{}: {failure}", path.display()));
        }
    }
    if failures.is_empty() {
        Ok(paths.len())
    } else {
        Err(format!(
            "{} of {} inputs fail:\n{}",
            failures.len(),
            paths.len(),
            failures.join("\n")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_replay_names_every_failing_file_and_refuses_an_empty_folder() {
        let folder = std::env::temp_dir().join(format!("ward-replay-{}", std::process::id()));
        std::fs::create_dir_all(&folder).expect("a scratch folder");
        assert!(replay_folder(&folder, |_| Ok(())).is_err());
        std::fs::write(folder.join("a"), b"good").expect("a file");
        std::fs::write(folder.join("b"), b"bad").expect("a file");
        let check: fn(&[u8]) -> CheckResult = |data| {
            if data == b"bad" {
                Err("it is bad".to_owned())
            } else {
                Ok(())
            }
        };
        let failure = replay_folder(&folder, check).expect_err("one input fails");
        assert!(failure.starts_with("1 of 2 inputs fail"), "{failure}");
        assert!(failure.contains("b: it is bad"), "{failure}");
        std::fs::remove_file(folder.join("b")).expect("removed");
        assert_eq!(replay_folder(&folder, check), Ok(1));
        std::fs::remove_dir_all(&folder).expect("removed");
    }
}

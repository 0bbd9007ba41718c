//! The real-text regressions of `corpus/redact-real/` (SPEC §13, R25–R27): text shaped like
//! the false positives the real-text audit found comes back unchanged, and secrets in the
//! places they really appear (stack traces, JSON configs, curl commands, `.env` lines) are
//! redacted exactly as recorded.

use std::borrow::Cow;
use std::fs;
use std::path::{Path, PathBuf};

use ward_core::redact::Redactor;

fn folder(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../corpus/redact-real")
        .join(name)
}

fn files(name: &str, extension: &str) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = fs::read_dir(folder(name))
        .expect("the corpus folder")
        .map(|entry| entry.expect("an entry").path())
        .filter(|path| path.extension().is_some_and(|found| found == extension))
        .collect();
    found.sort();
    assert!(!found.is_empty(), "no .{extension} file in {name}");
    found
}

#[test]
fn real_shaped_prose_comes_back_unchanged() {
    let redactor = Redactor::new(Vec::<String>::new()).expect("no values");
    for path in files("keep", "txt") {
        let text = fs::read_to_string(&path).expect("UTF-8 text");
        for (number, line) in text.lines().enumerate() {
            let output = redactor.redact(line);
            assert!(
                matches!(output, Cow::Borrowed(_)),
                "{}:{}: {line:?} became {output:?}",
                path.display(),
                number + 1
            );
        }
        // Whole, too: no span may cross a line break.
        assert!(
            matches!(redactor.redact(&text), Cow::Borrowed(_)),
            "{}",
            path.display()
        );
    }
}

#[test]
fn secrets_in_real_places_are_redacted_as_recorded() {
    let redactor = Redactor::new(Vec::<String>::new()).expect("no values");
    for input in files("redact", "in") {
        let text = fs::read_to_string(&input).expect("UTF-8 text");
        let expected = fs::read_to_string(input.with_extension("out")).expect("the .out file");
        assert_eq!(redactor.redact(&text), expected, "{}", input.display());
        assert_eq!(
            redactor.redact(&expected),
            expected,
            "{} twice",
            input.display()
        );
    }
}

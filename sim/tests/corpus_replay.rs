//! Replays every committed input of the simulator's fuzz targets (`corpus/scenario/`,
//! `corpus/scenario_json/`, SPEC §13) through the check function the target calls, on
//! stable Rust, and the crashers of the structure-aware target kept as scenario files
//! (`corpus/scenarios/fuzz/`). One test per target.

use std::path::{Path, PathBuf};

use ward_sim::fuzz::{
    CheckResult, check_scenario_file, check_scenario_json, check_scenario_thoroughly,
};
use ward_sim::scenario::Scenario;

fn corpus(folder: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../corpus")
        .join(folder)
}

/// The files of `folder`, sorted; the folder must hold at least one.
fn files(folder: &Path, extension: Option<&str>) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(folder)
        .unwrap_or_else(|error| panic!("{}: {error}", folder.display()))
        .map(|entry| entry.expect("a readable corpus entry").path())
        .filter(|path| path.is_file())
        .filter(|path| {
            extension
                .is_none_or(|extension| path.extension().is_some_and(|found| found == extension))
        })
        .collect();
    paths.sort();
    assert!(
        !paths.is_empty(),
        "{} holds no input: the corpus must not be empty",
        folder.display()
    );
    paths
}

/// Runs `check` on every file of `corpus/<target>/` and reports every failure at once.
fn replay(target: &str, check: fn(&[u8]) -> CheckResult) {
    let paths = files(&corpus(target), None);
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
fn replay_corpus_scenario() {
    replay("scenario", check_scenario_thoroughly);
}

#[test]
fn replay_corpus_scenario_json() {
    replay("scenario_json", check_scenario_json);
}

/// Crashers of the structure-aware target, written as scenario files (its binary corpus
/// goes stale when the `arbitrary` type changes; these do not).
#[test]
fn replay_scenario_crashers_as_files() {
    let folder = corpus("scenarios/fuzz");
    if !folder.is_dir() {
        return;
    }
    for path in files(&folder, Some("json")) {
        let text = std::fs::read_to_string(&path).expect("a readable scenario file");
        let scenario = Scenario::from_json(&text, &path.display().to_string())
            .unwrap_or_else(|error| panic!("{error}"));
        if let Err(failure) = check_scenario_file(&scenario) {
            panic!("{}: {failure}", path.display());
        }
    }
}
